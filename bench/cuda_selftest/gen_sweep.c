/* gen_sweep.c: the self-test's --sweep section (gt-cuda-selftest --sweep N
 * [--csv FILE]): the measurements the generated families' ranking models
 * are calibrated on. For each decode shape (n = 1 and 16, or --tokens N:
 * 128 and 2048 add the prefill shapes, any other n sweeps that n alone) and
 * each family that applies ("gemv"; "mma" for n >= 8) it takes every
 * config the rules keep (no rank cap), a deterministic sample of N of them
 * spread over the model's ranking (always including the model's top 16),
 * and builds, validates and quick-times each through the backend's vtable,
 * as the worker does. It prints, per shape and family, the measured best,
 * where the model ranked it, and the best of the model's top 48 (gemv's
 * default cap); --csv writes one row per config: shape, m, n, k, model
 * rank, model us, measured us (empty when it failed), relative error,
 * config. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_bench_priv.h"
#include "gen_cuda.h"
#include "gen_mma.h"
#include "gt_util.h"

typedef struct row {
    int rank;
    double model, us, err;
} row;

static int cmp_us(const void *a, const void *b)
{
    double x = ((const row *)a)->us, y = ((const row *)b)->us;
    if (isnan(x) || isnan(y))
        return isnan(x) - isnan(y);
    return x < y ? -1 : x > y;
}

/* One family's kept space, whichever it is. */
typedef struct fam_space {
    int mma;
    gt_gen_space g;
    gt_mma_space m;
    int nkeep;
} fam_space;

static int space(const gt_problem *p, const gt_gen_dev *d, int mma, fam_space *s)
{
    memset(s, 0, sizeof *s);
    s->mma = mma;
    int rc = mma ? gt_mma_prune_kept(p, d, 0, &s->m) : gt_gen_prune_kept(p, d, 0, &s->g);
    s->nkeep = mma ? s->m.nkeep : s->g.nkeep;
    return rc;
}

static void space_free(fam_space *s)
{
    if (s->mma)
        gt_mma_space_free(&s->m);
    else
        gt_gen_space_free(&s->g);
}

static void text_of(const fam_space *s, int i, char *buf, size_t len)
{
    if (s->mma)
        gt_mma_cfg_text(&s->m.keep[i], buf, len);
    else
        gt_gen_cfg_text(&s->g.keep[i], buf, len);
}

static int sweep_shape(const gt_backend *bk, gt_bk_ctx *ctx, const char *name, const gt_problem *p,
                       int mma, int per_shape, FILE *csv)
{
    char err[512] = "", text[512];
    gt_gen_dev d;
    fam_space s = {0};
    gt_bk_prob *pp = NULL;
    row *rows = NULL;
    int *pick = NULL, np = 0, failures = 0, wrong = 0, failed = 0;
    if (gt_cuda_gen_device(ctx, &d, err, sizeof err) != 0 || space(p, &d, mma, &s) != 0 ||
        bk->prepare(ctx, p, &pp, err, sizeof err) != 0) {
        printf("FAIL sweep %s: %s\n", name, err);
        failures++;
        goto out;
    }
    if (s.nkeep == 0)
        goto out;
    rows = calloc((size_t)per_shape + 16, sizeof *rows);
    pick = calloc((size_t)per_shape + 16, sizeof *pick);
    if (!rows || !pick)
        goto out;
    /* the model's top 16, then evenly spaced over the rest of the ranking */
    for (int i = 0; i < s.nkeep && i < 16 && np < per_shape; i++)
        pick[np++] = i;
    int rest = per_shape - np, span = s.nkeep - 16;
    const char *fn = mma ? "gt_mma" : "gt_gemv";
    for (int j = 0; span > 0 && j < rest && j < span; j++)
        pick[np++] = 16 + (int)((long long)j * span / (rest < span ? rest : span));
    /* queue every compile first: the pool works while the GPU times */
    for (int i = 0; i < np; i++) {
        char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
        const char *opts[GT_GEN_MAX_DEFS];
        int no = mma ? gt_mma_defines(p, &s.m.keep[pick[i]], defs) : gt_gen_defines(p, &s.g.keep[pick[i]], 0, defs);
        for (int o = 0; o < no; o++)
            opts[o] = defs[o];
        if (no > 0)
            (void)gt_cu_cache_request(mma ? gt_mma_src_of(&s.m.keep[pick[i]]) : gt_gen_gemv_src, fn, opts, no,
                                      mma ? gt_cuda_gen_mma_sm(ctx, &s.m.keep[pick[i]]) : ctx->sm, 1, NULL);
    }
    gt_timing_opts quick = {.min_time_ms = 0.5, .warmup = 1, .repeats = 3};
    double tol = gt_bk_tolerance(p);
    for (int i = 0; i < np; i++) {
        row *r = &rows[i];
        gt_bk_cand *bc = NULL;
        gt_timing t;
        r->rank = pick[i];
        r->model = mma ? gt_mma_model_us(p, &d, &s.m.keep[pick[i]]) : gt_gen_model_us(p, &d, &s.g.keep[pick[i]]);
        r->us = r->err = NAN;
        cJSON *j = mma ? gt_mma_cfg_to_json(&s.m.keep[pick[i]]) : gt_gen_cfg_to_json(&s.g.keep[pick[i]]);
        /* a kept config that does not build or run is a bug, like a wrong one */
        if (!j || bk->build(pp, j, &bc, err, sizeof err) != 0) {
            if (failed++ < 3)
                printf("     %s: build: %s\n", name, err);
        } else {
            if (bk->validate(pp, bc, &r->err, err, sizeof err) != 0)
                failed++;
            else if (!(r->err <= tol))
                wrong++;
            else if (bk->time(pp, bc, &quick, &t, err, sizeof err) == 0)
                r->us = t.median_us;
            else
                failed++;
            bk->release(bc);
        }
        cJSON_Delete(j);
        if (gt_cuda_alive(ctx, err, sizeof err) != 0) {
            printf("FAIL sweep %s: %s\n", name, err);
            failures++;
            goto out;
        }
        if (csv) {
            text_of(&s, pick[i], text, sizeof text);
            fprintf(csv, "%s,%lld,%lld,%lld,%d,%.3f,", name, (long long)p->m, (long long)p->n,
                    (long long)p->k, r->rank + 1, r->model);
            if (!isnan(r->us))
                fprintf(csv, "%.3f", r->us);
            fprintf(csv, ",%.3g,\"", r->err);
            for (const char *q = text; *q; q++) /* CSV: a quote inside a field is doubled */
                fputs(*q == '"' ? "\"\"" : (char[2]){*q, 0}, csv);
            fputs("\"\n", csv);
        }
    }
    /* the best of the default cap, before sorting */
    double cap_best = INFINITY;
    for (int i = 0; i < np; i++)
        if (rows[i].rank < GT_GEN_DEFAULT_CAP && rows[i].us < cap_best)
            cap_best = rows[i].us;
    qsort(rows, (size_t)np, sizeof *rows, cmp_us);
    failures += wrong > 0 || failed > 0;
    text_of(&s, rows[0].rank, text, sizeof text);
    printf("%-12s %-4s kept %5d timed %4d wrong %d failed %d  best %8.2f us (model rank %4d)  best of top %d "
           "%8.2f us (%+.1f%%)\n     %s\n",
           name, mma ? "mma" : "gemv", s.nkeep, np, wrong, failed, rows[0].us, rows[0].rank + 1, GT_GEN_DEFAULT_CAP, cap_best,
           (cap_best / rows[0].us - 1) * 100, text);
out:
    free(rows);
    free(pick);
    if (pp)
        bk->unprepare(pp);
    space_free(&s);
    return failures;
}

int gt_st_sweep(const gt_backend *bk, gt_bk_ctx *ctx, int tokens, int per_shape, const char *csv_path)
{
    /* the decode shapes by default; --tokens 128 or 2048 also sweeps the
     * prefill shapes (the "mma" family alone applies there) */
    int toks[] = {1, 16, 128, 2048}, nt = tokens ? 4 : 2;
    if (tokens && tokens != 1 && tokens != 16 && tokens != 128 && tokens != 2048)
        toks[0] = tokens, nt = 1; /* any other --tokens: that n alone */
    gt_problem ps[GT_ST_MAX_SHAPES];
    char names[GT_ST_MAX_SHAPES][32];
    int np = gt_st_shapes(toks, nt, tokens, ps, names), failures = 0;
    FILE *csv = NULL;
    if (csv_path && !(csv = fopen(csv_path, "w"))) {
        printf("FAIL sweep: cannot write %s\n", csv_path);
        return 1;
    }
    if (csv)
        fprintf(csv, "shape,m,n,k,model_rank,model_us,us,rel_err,config\n");
    printf("\n== sweep: the generated families' kept configs, sampled %d per shape, quick-timed ==\n",
           per_shape);
    gt_cuda_set_exit_on_sticky(ctx, 0);
    for (int i = 0; i < np; i++)
        for (int mma = 0; mma < 2; mma++) {
            if (mma && ps[i].n < 8)
                continue;
            failures += sweep_shape(bk, ctx, names[i], &ps[i], mma, per_shape, csv);
            fflush(stdout);
        }
    if (csv && fclose(csv) != 0)
        failures++;
    return failures;
}
