/* mma_bench.c: the self-test's --mma section (gt-cuda-selftest --mma): the
 * generated "mma" kernels against cuBLASLt on the Llama-3-8B bf16 TN
 * projections at n = 16, 128 and 2048 tokens, through the backend's vtable
 * exactly as the worker runs candidates.
 *
 *   compile    every kept mma config of the shapes (deduplicated by what
 *              reaches the compiler) compiled on the pool into an empty cache
 *              directory: kernels/s on this node;
 *   shapes     per shape: every kept mma config built, validated against the
 *              reference (a wrong one is a failure) and quick-timed, and so
 *              are the cuBLASLt candidates of the enumeration (heuristic
 *              first, --max-cands); then the heuristic's top-1 (the
 *              baseline), cuBLASLt's fastest and the family's three fastest
 *              re-timed interleaved over rounds; TFLOP/s of each and the
 *              family's best as a share of cuBLASLt's best. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_bench.h"
#include "gen_cuda.h"
#include "gen_mma.h"
#include "gt_util.h"

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
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

static gt_problem shape(int64_t m, int64_t n, int64_t k)
{
    gt_problem p;
    gt_problem_init(&p, m, n, k);
    p.trans_a = 'T';
    p.trans_b = 'N';
    p.a_type = p.b_type = p.c_type = p.d_type = GT_DT_BF16;
    p.compute_type = p.scale_type = GT_DT_F32;
    gt_problem_default_ld(&p);
    gt_problem_finish(&p);
    return p;
}

static const struct {
    const char *name;
    int64_t m, k;
} k_layers[] = {{"qkv", 6144, 4096}, {"o", 4096, 4096}, {"gate_up", 28672, 4096},
                {"down", 4096, 14336}, {"lm_head", 128256, 4096}};

/* Compiles every kept config of the shapes into a fresh cache: kernels/s. */
static void compile_pass(gt_bk_ctx *ctx, const gt_problem *ps, int np, int fresh)
{
    char dir[] = "/tmp/gt-mma-bench.XXXXXX", err[512];
    gt_gen_dev d;
    if (gt_gen_device(ctx, &d, err, sizeof err) != 0) {
        printf("FAIL mma compile: %s\n", err);
        return;
    }
    if (fresh && mkdtemp(dir))
        setenv("GEMMTUNE_CACHE_DIR", dir, 1);
    gt_gen_cache_forget();
    gt_gen_stats s0, s1;
    gt_gen_stats_get(&s0);
    double t0 = gt_mono_ms();
    int n = 0, fails = 0, spills = 0;
    enum { MAXE = 2048 };
    gt_gen_entry **ents = calloc(MAXE, sizeof *ents);
    for (int i = 0; ents && i < np; i++) {
        gt_mma_space s;
        if (gt_mma_prune(&ps[i], &d, GT_MMA_DEFAULT_CAP, &s) != 0)
            continue;
        for (int c = 0; c < s.nkeep && n < MAXE; c++) {
            char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
            const char *opts[GT_GEN_MAX_DEFS];
            int no = gt_mma_defines(&ps[i], &s.keep[c], defs);
            for (int o = 0; o < no; o++)
                opts[o] = defs[o];
            ents[n++] = gt_gen_request(gt_gen_mma_src, "gt_mma", opts, no, ctx->sm, 1, NULL);
        }
        gt_mma_space_free(&s);
    }
    for (int i = 0; i < n; i++) {
        const gt_gen_image *img;
        if (!ents[i] || gt_gen_wait(ents[i], &img, err, sizeof err) != 0) {
            if (fails++ < 3)
                printf("     compile: %s\n", err);
            continue;
        }
        spills += img->spill_stores > 0;
    }
    double secs = (gt_mono_ms() - t0) / 1000;
    gt_gen_stats_get(&s1);
    long comp = s1.compiles - s0.compiles;
    printf("%s mma compile cold: %d configs, %ld compiled in %.2f s = %.1f kernels/s on %d threads "
           "(%.0f ms NVRTC each), %d spilled\n",
           fails ? "FAIL" : "ok  ", n, comp, secs, secs > 0 ? comp / secs : 0.0, s1.threads + 1,
           comp ? (s1.compile_ms - s0.compile_ms) / comp : 0.0, spills);
    free(ents);
}

/* One shape; returns the failures. */
static int shape_one(const gt_backend *bk, gt_bk_ctx *ctx, const char *name, gt_problem p,
                     const gt_gen_bench_opts *o)
{
    char err[512];
    cJSON *cands = NULL, *base = NULL;
    gt_bk_prob *pp = NULL;
    gt_bk_cand *re[5] = {0};
    int failures = 0, nre = 0, nlt = 0, nmma = 0, wrong = 0, runerr = 0, nall = 0;
    pick *lt = NULL, *mma = NULL;
    double tol = gt_bk_tolerance(&p), worst = 0;
    /* cuBLASLt: the heuristic's results first, then a sample of its
     * enumeration; 20 s of AlgoCheck at most per shape */
    gt_cuda_set_limits(ctx, o->max_cands, 20);
    if (bk->enumerate(ctx, &p, &cands, &base, err, sizeof err) != 0 ||
        bk->prepare(ctx, &p, &pp, err, sizeof err) != 0) {
        printf("FAIL %s: %s\n", name, err);
        failures++;
        goto out;
    }
    int n = cJSON_GetArraySize(cands);
    lt = calloc((size_t)n + 1, sizeof *lt);
    mma = calloc((size_t)n + 1, sizeof *mma);
    if (!lt || !mma)
        goto out;
    gt_timing_opts quick = {.min_time_ms = o->min_time_ms, .warmup = 1, .repeats = 3};
    for (int i = 0; i < n; i++) {
        const cJSON *cfg = cJSON_GetArrayItem(cands, i);
        int fam = gt_gen_family(cfg), ismma = fam == GT_FAM_MMA;
        gt_bk_cand *c = NULL;
        double e = NAN;
        gt_timing t;
        if (fam != GT_FAM_MMA && fam != GT_FAM_CUBLASLT)
            continue; /* the gemv family has its own section (--gen) */
        nall += ismma;
        if (bk->build(pp, cfg, &c, err, sizeof err) != 0) {
            if (ismma && runerr++ < 3)
                printf("     %s mma build: %s\n", name, err);
            continue;
        }
        int ok = bk->validate(pp, c, &e, err, sizeof err) == 0;
        if (ok && ismma && e > worst)
            worst = e;
        if (ok && !(e <= tol)) {
            wrong += ismma;
            if (ismma) {
                char *txt = cJSON_PrintUnformatted(cfg);
                printf("FAIL %s mma config wrong (rel err %.3g): %s\n", name, e, txt ? txt : "");
                free(txt);
            }
        } else if (ok && bk->time(pp, c, &quick, &t, err, sizeof err) == 0) {
            pick *v = ismma ? &mma[nmma++] : &lt[nlt++];
            v->index = i;
            v->us = t.median_us;
        } else if (ismma && runerr++ < 3) {
            printf("     %s mma run: %s\n", name, err);
        }
        bk->release(c);
        if (gt_cuda_alive(ctx, err, sizeof err) != 0) {
            printf("FAIL %s: %s\n", name, err);
            failures++;
            goto out;
        }
    }
    failures += wrong > 0 || nmma == 0 || nmma != nall;
    qsort(lt, (size_t)nlt, sizeof *lt, cmp_pick);
    qsort(mma, (size_t)nmma, sizeof *mma, cmp_pick);
    /* re-time interleaved: baseline, cuBLASLt's best, the family's top 3 */
    const cJSON *cfgs[5];
    cfgs[nre++] = base;
    if (nlt)
        cfgs[nre++] = cJSON_GetArrayItem(cands, lt[0].index);
    int m0 = nre;
    for (int i = 0; i < nmma && i < 3; i++)
        cfgs[nre++] = cJSON_GetArrayItem(cands, mma[i].index);
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
    int bm = m0;
    for (int i = 0; i < nre; i++) {
        qsort(res[i], (size_t)o->rounds, sizeof(double), cmp_dbl);
        med[i] = res[i][o->rounds / 2];
        if (i >= m0 && med[i] < med[bm])
            bm = i;
    }
    double lt_best = nlt ? fmin(med[0], med[1]) : med[0];
    double g = bm < nre ? med[bm] : NAN;
#define TF(us) (p.flops / ((us) * 1e-6) / 1e12)
    printf("%-14s %6lld %4lld %6lld %9.2f %9.2f %9.2f %7.1f %7.1f %7.1f %6.1f%% %5d/%-5d %8.2g\n", name,
           (long long)p.m, (long long)p.n, (long long)p.k, med[0], lt_best, g, TF(med[0]), TF(lt_best), TF(g),
           100.0 * lt_best / g, nmma - wrong, nall, worst);
    if (bm < nre) {
        char *txt = cJSON_PrintUnformatted(cfgs[bm]);
        cJSON *info = gt_gen_cand_info(re[bm]);
        char *it = info ? cJSON_PrintUnformatted(info) : NULL;
        printf("     best mma %s\n     %s\n", txt ? txt : "", it ? it : "");
        free(txt);
        free(it);
        cJSON_Delete(info);
    }
out:
    for (int i = 0; i < 5; i++)
        if (re[i])
            bk->release(re[i]);
    free(lt);
    free(mma);
    if (pp)
        bk->unprepare(pp);
    cJSON_Delete(cands);
    cJSON_Delete(base);
    return failures;
}

int gt_mma_bench(const gt_backend *bk, gt_bk_ctx *ctx, const gt_gen_bench_opts *o)
{
    static const int tokens[] = {16, 128, 2048};
    int failures = 0, np = 0;
    gt_problem ps[16];
    char names[16][32];
    for (int t = 0; t < 3; t++)
        for (size_t l = 0; l < sizeof k_layers / sizeof k_layers[0]; l++) {
            if (o->tokens && o->tokens != tokens[t])
                continue;
            ps[np] = shape(k_layers[l].m, tokens[t], k_layers[l].k);
            snprintf(names[np], sizeof names[np], "%s n=%d", k_layers[l].name, tokens[t]);
            np++;
        }
    printf("\n== mma: the generated tensor-core family vs cuBLASLt, bf16 TN Llama-3-8B shapes ==\n");
    gt_cuda_set_exit_on_sticky(ctx, 0);
    compile_pass(ctx, ps, np, o->fresh_cache);
    printf("%-14s %6s %4s %6s %9s %9s %9s %7s %7s %7s %7s %11s %8s\n", "shape", "m", "n", "k", "heur_us",
           "lt_best", "mma_best", "heur_TF", "lt_TF", "mma_TF", "%lt", "mma_valid", "max_err");
    for (int i = 0; i < np; i++) {
        failures += shape_one(bk, ctx, names[i], ps[i], o);
        fflush(stdout);
    }
    return failures;
}
