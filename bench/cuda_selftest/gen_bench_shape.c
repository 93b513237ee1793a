/* gen_bench_shape.c: the per-shape measurement the self-test's --gen and
 * --mma sections share (gen_bench_priv.h): their Llama-3-8B shapes, and
 * for each shape the quick screen of every candidate followed by the
 * interleaved re-timing of the baseline, cuBLASLt's best and the family's
 * top 3. The sections keep their own columns (gen_bench.c, mma_bench.c). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_bench_priv.h"
#include "gen_cuda.h"

int gt_st_cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double gt_st_mid(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, gt_st_cmp_dbl);
    return v[n / 2];
}

static gt_problem shape(int64_t m, int64_t n, int64_t k)
{
    gt_problem p;
    gt_problem_init_tn(&p, m, n, k, GT_DT_BF16, GT_DT_BF16);
    return p;
}

static const struct {
    const char *name;
    int64_t m, k;
} k_layers[] = {{"qkv", 6144, 4096}, {"o", 4096, 4096}, {"gate_up", 28672, 4096},
                {"down", 4096, 14336}, {"lm_head", 128256, 4096}};

int gt_st_shapes(const int *tokens, int ntokens, int only, gt_problem *ps,
                 char (*names)[32])
{
    int np = 0;
    for (int t = 0; t < ntokens; t++)
        for (size_t l = 0; l < sizeof k_layers / sizeof k_layers[0]; l++) {
            if (only && only != tokens[t])
                continue;
            if (np == GT_ST_MAX_SHAPES)
                return np;
            ps[np] = shape(k_layers[l].m, tokens[t], k_layers[l].k);
            snprintf(names[np], 32, "%s n=%d", k_layers[l].name, tokens[t]);
            np++;
        }
    return np;
}

typedef struct pick {
    int index;
    double us;
} pick;

static int cmp_pick(const void *a, const void *b)
{
    double x = ((const pick *)a)->us, y = ((const pick *)b)->us;
    return x < y ? -1 : x > y;
}

int gt_st_shape(const gt_backend *bk, gt_bk_ctx *ctx, const gt_st_family *f,
                const char *name, const gt_problem *p, const gt_st_opts *o)
{
    char err[512];
    cJSON *cands = NULL, *base = NULL;
    gt_bk_prob *pp = NULL;
    gt_bk_cand *re[5] = {0};
    int failures = 0, nre = 0, nlt = 0, nfam = 0, wrong = 0, runerr = 0, nall = 0;
    pick *lt = NULL, *fam = NULL;
    double tol = gt_bk_tolerance(p), worst = 0;
    gt_cuda_set_limits(ctx, o->max_cands, f->check_s);
    if (bk->enumerate(ctx, p, 0, &cands, &base, err, sizeof err) != 0 ||
        bk->prepare(ctx, p, &pp, err, sizeof err) != 0) {
        printf("FAIL %s: %s\n", name, err);
        failures++;
        goto out;
    }
    int n = cJSON_GetArraySize(cands);
    lt = calloc((size_t)n + 1, sizeof *lt);
    fam = calloc((size_t)n + 1, sizeof *fam);
    if (!lt || !fam)
        goto out;
    gt_timing_opts quick = {.min_time_ms = o->min_time_ms, .warmup = 1, .repeats = 3};
    for (int i = 0; i < n; i++) {
        const cJSON *cfg = cJSON_GetArrayItem(cands, i);
        int side = f->side(gt_gen_family(cfg));
        gt_bk_cand *c = NULL;
        double e = NAN;
        gt_timing t;
        if (side == GT_ST_SKIP)
            continue;
        int isfam = side == GT_ST_FAM;
        nall += isfam;
        if (bk->build(pp, cfg, &c, err, sizeof err) != 0) {
            if (isfam && runerr++ < 3)
                printf("     %s %s build: %s\n", name, f->label, err);
            continue;
        }
        int ok = bk->validate(pp, c, &e, err, sizeof err) == 0;
        if (ok && isfam && e > worst)
            worst = e;
        if (ok && !(e <= tol)) {
            wrong += isfam;
            if (isfam) {
                char *txt = cJSON_PrintUnformatted(cfg);
                printf("FAIL %s %s config wrong (rel err %.3g): %s\n", name, f->label, e,
                       txt ? txt : "");
                free(txt);
            }
        } else if (ok && bk->time(pp, c, &quick, &t, err, sizeof err) == 0) {
            pick *v = isfam ? &fam[nfam++] : &lt[nlt++];
            v->index = i;
            v->us = t.median_us;
        } else if (isfam && runerr++ < 3) {
            printf("     %s %s run: %s\n", name, f->label, err);
        }
        bk->release(c);
        if (gt_cuda_alive(ctx, err, sizeof err) != 0) {
            printf("FAIL %s: %s\n", name, err);
            failures++;
            goto out;
        }
    }
    failures += wrong > 0 || nfam == 0 || (f->need_all && nfam != nall);
    qsort(lt, (size_t)nlt, sizeof *lt, cmp_pick);
    qsort(fam, (size_t)nfam, sizeof *fam, cmp_pick);
    /* re-time interleaved: baseline, cuBLASLt's best, the family's top 3 */
    const cJSON *cfgs[5];
    cfgs[nre++] = base;
    if (nlt)
        cfgs[nre++] = cJSON_GetArrayItem(cands, lt[0].index);
    int fam0 = nre;
    for (int i = 0; i < nfam && i < 3; i++)
        cfgs[nre++] = cJSON_GetArrayItem(cands, fam[i].index);
    for (int i = 0; i < nre; i++) {
        double e = NAN;
        if (bk->build(pp, cfgs[i], &re[i], err, sizeof err) != 0 ||
            bk->validate(pp, re[i], &e, err, sizeof err) != 0 || !(e <= tol)) {
            printf("FAIL %s re-build %d: %s (rel err %.3g)\n", name, i, err, e);
            failures++;
            goto out;
        }
    }
    double res[5][32], med[5];
    gt_timing_opts full = {.min_time_ms = 5, .warmup = 3, .repeats = 5};
    for (int r = 0; r < o->rounds; r++)
        for (int i = 0; i < nre; i++) {
            gt_timing t;
            if (bk->time(pp, re[i], &full, &t, err, sizeof err) != 0) {
                printf("FAIL %s re-time: %s\n", name, err);
                failures++;
                goto out;
            }
            res[i][r] = t.median_us;
        }
    int best = fam0;
    for (int i = 0; i < nre; i++) {
        med[i] = gt_st_mid(res[i], o->rounds);
        if (i >= fam0 && med[i] < med[best])
            best = i;
    }
    /* chained: the re-timed gemv configs launched with programmatic
     * dependent launch, each first validated chained after a kernel that
     * writes B; interleaved like the rest, the fastest reported */
    double chain_us = NAN;
    if (f->chain && ctx->sm >= 90) {
        double cres[5][32];
        int chained[5] = {0};
        for (int i = fam0; i < nre; i++) {
            double e = NAN;
            if (gt_gen_family(cfgs[i]) != GT_FAM_GEMV)
                continue;
            snprintf(err, sizeof err, "result wrong");
            if (gt_cuda_gen_validate_chained(pp, re[i], &e, err, sizeof err) != 0 || !(e <= tol)) {
                char *txt = cJSON_PrintUnformatted(cfgs[i]);
                printf("FAIL %s chained validation: %s (rel err %.3g): %s\n", name, err, e, txt ? txt : "");
                free(txt);
                failures++;
                continue;
            }
            chained[i] = 1;
        }
        for (int r = 0; r < o->rounds; r++)
            for (int i = fam0; i < nre; i++) {
                gt_timing t;
                if (!chained[i])
                    continue;
                int bad = gt_cuda_gen_set_chain(ctx, 1, err, sizeof err) != 0 ||
                          bk->time(pp, re[i], &full, &t, err, sizeof err) != 0;
                (void)gt_cuda_gen_set_chain(ctx, 0, NULL, 0);
                if (bad) {
                    printf("FAIL %s chained re-time: %s\n", name, err);
                    failures++;
                    goto out;
                }
                cres[i][r] = t.median_us;
            }
        for (int i = fam0; i < nre; i++) {
            if (!chained[i])
                continue;
            double mid = gt_st_mid(cres[i], o->rounds);
            if (!(mid >= chain_us))
                chain_us = mid;
        }
    }
    /* A/B: what being built for chained launch (griddepcontrol, coherent B
     * loads) costs a plain launch: the best gemv config built again without
     * it (GT_NOCHAIN), both timed plainly, interleaved */
    double ab_us[2] = {NAN, NAN};
    if (f->chain && ctx->sm >= 90 && best < nre && gt_gen_family(cfgs[best]) == GT_FAM_GEMV) {
        gt_bk_cand *nc = NULL, *pair[2];
        double e = NAN, abr[2][32];
        int bad = gt_cuda_gen_set_nochain(ctx, 1) != 0 || bk->build(pp, cfgs[best], &nc, err, sizeof err) != 0;
        (void)gt_cuda_gen_set_nochain(ctx, 0);
        if (!bad && (bk->validate(pp, nc, &e, err, sizeof err) != 0 || !(e <= tol)))
            bad = 1;
        pair[0] = re[best], pair[1] = nc;
        for (int r = 0; r < o->rounds && !bad; r++)
            for (int i = 0; i < 2 && !bad; i++) {
                gt_timing t;
                bad = bk->time(pp, pair[i], &full, &t, err, sizeof err) != 0;
                if (!bad)
                    abr[i][r] = t.median_us;
            }
        if (nc)
            bk->release(nc);
        if (bad) {
            printf("FAIL %s A/B without chained launch: %s (rel err %.3g)\n", name, err, e);
            failures++;
            goto out;
        }
        for (int i = 0; i < 2; i++)
            ab_us[i] = gt_st_mid(abr[i], o->rounds);
    }
    gt_st_row row = {
        .chain_us = chain_us,
        .name = name,
        .p = p,
        .heur_us = med[0],
        .lt_best_us = nlt ? fmin(med[0], med[1]) : med[0],
        .fam_us = best < nre ? med[best] : NAN,
        .timed = nfam,
        .all = nall,
        .wrong = wrong,
        .worst = worst,
    };
    f->print_row(&row, f->arg);
    if (best < nre) {
        char *txt = cJSON_PrintUnformatted(cfgs[best]);
        cJSON *info = gt_cuda_gen_cand_info(re[best]);
        char *it = info ? cJSON_PrintUnformatted(info) : NULL;
        printf("     best %s %s\n     %s\n", f->label, txt ? txt : "", it ? it : "");
        if (!isnan(ab_us[0]))
            printf("     A/B, launched plainly: %.2f us built for chained launch, %.2f us without "
                   "(GT_NOCHAIN): %+.2f %%\n",
                   ab_us[0], ab_us[1], (ab_us[0] / ab_us[1] - 1) * 100);
        free(txt);
        free(it);
        cJSON_Delete(info);
    }
out:
    for (int i = 0; i < 5; i++)
        if (re[i])
            bk->release(re[i]);
    free(lt);
    free(fam);
    if (pp)
        bk->unprepare(pp);
    cJSON_Delete(cands);
    cJSON_Delete(base);
    return failures;
}
