/* gen_bench.c: the self-test's --gen section (gt-cuda-selftest --gen), kept
 * with the family: the generated "gemv" kernels against cuBLASLt on the
 * Llama-3-8B decode shapes, through the backend's vtable exactly as the
 * worker runs candidates.
 *
 *   copy       the measured device-to-device copy bandwidth (1 GiB, bytes
 *              read + written, median of 10), the roofline of these shapes;
 *   compile    every family config of the shapes compiled on the pool into
 *              an empty cache directory (kernels/s on this node), asked
 *              again (in-process hits) and again after dropping the
 *              in-process cache (disk hits);
 *   shapes     per shape: every candidate (cuBLASLt's and the family's)
 *              built, validated and quick-timed; the heuristic's top-1 (the
 *              baseline), cuBLASLt's fastest and the family's three fastest
 *              re-timed interleaved over rounds; GB/s and % of the copy
 *              bandwidth of the best of each, the family's uplift over the
 *              baseline and over cuBLASLt's best. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_bench.h"
#include "gen_cuda.h"
#include "gt_util.h"

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double gt_gen_copy_bandwidth(gt_bk_ctx *ctx)
{
    const size_t sz = (size_t)1 << 30;
    void *x = NULL, *y = NULL;
    double t[10], bw = 0;
    if (cudaMalloc(&x, sz) != cudaSuccess || cudaMalloc(&y, sz) != cudaSuccess ||
        cudaMemset(x, 1, sz) != cudaSuccess)
        goto out;
    for (int i = 0; i < 13; i++) {
        float ms = 0;
        if (cudaEventRecord(ctx->ev[0], ctx->stream) != cudaSuccess ||
            cudaMemcpyAsync(y, x, sz, cudaMemcpyDeviceToDevice, ctx->stream) != cudaSuccess ||
            cudaEventRecord(ctx->ev[1], ctx->stream) != cudaSuccess ||
            cudaEventSynchronize(ctx->ev[1]) != cudaSuccess ||
            cudaEventElapsedTime(&ms, ctx->ev[0], ctx->ev[1]) != cudaSuccess)
            goto out;
        if (i >= 3)
            t[i - 3] = ms / 1e3;
    }
    qsort(t, 10, sizeof t[0], cmp_dbl);
    bw = 2.0 * (double)sz / (0.5 * (t[4] + t[5]));
out:
    if (x)
        (void)cudaFree(x);
    if (y)
        (void)cudaFree(y);
    (void)cudaGetLastError();
    return bw;
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

/* Compile throughput and cache hit rates over every family config of the
 * shapes. */
static void compile_passes(gt_bk_ctx *ctx, const gt_problem *ps, int np, int fresh)
{
    char dir[] = "/tmp/gt-gen-bench.XXXXXX", err[512];
    gt_gen_dev d;
    if (gt_gen_device(ctx, &d, err, sizeof err) != 0) {
        printf("FAIL gen compile: %s\n", err);
        return;
    }
    if (fresh && mkdtemp(dir))
        setenv("GEMMTUNE_CACHE_DIR", dir, 1);
    char where[4096] = "";
    gt_gen_cache_dir(where, sizeof where);
    gt_gen_cache_forget();
    for (int pass = 0; pass < 3; pass++) {
        gt_gen_stats s0, s1;
        if (pass == 2)
            gt_gen_cache_forget();
        gt_gen_stats_get(&s0);
        double t0 = gt_mono_ms();
        int n = 0, fails = 0;
        gt_gen_entry *ents[1024];
        for (int i = 0; i < np; i++) {
            gt_gen_space s;
            if (gt_gen_prune(&ps[i], &d, GT_GEN_DEFAULT_CAP, &s) != 0)
                continue;
            for (int c = 0; c < s.nkeep && n < 1024; c++) {
                char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
                const char *opts[GT_GEN_MAX_DEFS];
                int no = gt_gen_defines(&ps[i], &s.keep[c], 0, defs);
                for (int o = 0; o < no; o++)
                    opts[o] = defs[o];
                ents[n++] = gt_gen_request(gt_gen_gemv_src, "gt_gemv", opts, no, ctx->sm, 1, NULL);
            }
            gt_gen_space_free(&s);
        }
        for (int i = 0; i < n; i++) {
            const gt_gen_image *img;
            fails += !ents[i] || gt_gen_wait(ents[i], &img, err, sizeof err) != 0;
        }
        double secs = (gt_mono_ms() - t0) / 1000;
        gt_gen_stats_get(&s1);
        long req = s1.requests - s0.requests, mem = s1.mem_hits - s0.mem_hits;
        long disk = s1.disk_hits - s0.disk_hits, comp = s1.compiles - s0.compiles;
        static const char *const what[] = {"cold", "again (in-process cache)", "after dropping it (disk cache)"};
        printf("%s gen compile %-31s %4d configs, %4ld requests: %4ld memory %4ld disk %4ld compiled "
               "in %6.2f s%s",
               fails ? "FAIL" : "ok  ", what[pass], n, req, mem, disk, comp, secs,
               pass == 0 && comp > 0 ? "" : "\n");
        if (pass == 0 && comp > 0)
            printf(" = %.1f kernels/s on %d threads (%.0f ms NVRTC each)\n", comp / secs, s1.threads + 1,
                   (s1.compile_ms - s0.compile_ms) / comp);
        else if (pass > 0)
            printf("     hit rate %.1f %%\n", req ? 100.0 * (mem + disk) / req : 0.0);
    }
    printf("     cache directory %s%s\n", where, fresh ? " (fresh, left in place)" : "");
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

static int shape_one(const gt_backend *bk, gt_bk_ctx *ctx, const char *name, gt_problem p,
                     const gt_gen_bench_opts *o, double copy_bw)
{
    char err[512];
    cJSON *cands = NULL, *base = NULL;
    gt_bk_prob *pp = NULL;
    gt_bk_cand *re[5] = {0};
    int failures = 0, nre = 0;
    pick *lt = NULL, *gen = NULL;
    int nlt = 0, ngen = 0, wrong = 0, runerr = 0, ngen_all = 0;
    double tol = gt_bk_tolerance(&p);
    gt_cuda_set_limits(ctx, o->max_cands, 120);
    if (bk->enumerate(ctx, &p, &cands, &base, err, sizeof err) != 0 ||
        bk->prepare(ctx, &p, &pp, err, sizeof err) != 0) {
        printf("FAIL %s: %s\n", name, err);
        failures++;
        goto out;
    }
    int n = cJSON_GetArraySize(cands);
    lt = calloc((size_t)n + 1, sizeof *lt);
    gen = calloc((size_t)n + 1, sizeof *gen);
    if (!lt || !gen)
        goto out;
    gt_timing_opts quick = {.min_time_ms = o->min_time_ms, .warmup = 1, .repeats = 3};
    for (int i = 0; i < n; i++) {
        const cJSON *cfg = cJSON_GetArrayItem(cands, i);
        int fam = gt_gen_family(cfg);
        int isgen = fam == GT_FAM_GEMV || fam == GT_FAM_MMA; /* else a cuBLASLt config */
        gt_bk_cand *c = NULL;
        double e = NAN;
        gt_timing t;
        ngen_all += isgen;
        if (bk->build(pp, cfg, &c, err, sizeof err) != 0) {
            if (isgen && runerr++ < 3)
                printf("     %s gen build: %s\n", name, err);
            continue;
        }
        int ok = bk->validate(pp, c, &e, err, sizeof err) == 0;
        if (ok && !(e <= tol)) {
            wrong += isgen;
            if (isgen) {
                char *txt = cJSON_PrintUnformatted(cfg);
                printf("FAIL %s gen config wrong (rel err %.3g): %s\n", name, e, txt ? txt : "");
                free(txt);
            }
        } else if (ok && bk->time(pp, c, &quick, &t, err, sizeof err) == 0) {
            pick *v = isgen ? &gen[ngen++] : &lt[nlt++];
            v->index = i;
            v->us = t.median_us;
        } else if (isgen && runerr++ < 3) {
            printf("     %s gen run: %s\n", name, err);
        }
        bk->release(c);
        if (gt_cuda_alive(ctx, err, sizeof err) != 0) {
            printf("FAIL %s: %s\n", name, err);
            failures++;
            goto out;
        }
    }
    failures += wrong > 0 || ngen == 0;
    qsort(lt, (size_t)nlt, sizeof *lt, cmp_pick);
    qsort(gen, (size_t)ngen, sizeof *gen, cmp_pick);
    /* re-time interleaved: baseline, cuBLASLt's best, the family's top 3 */
    const cJSON *cfgs[5];
    cfgs[nre++] = base;
    if (nlt)
        cfgs[nre++] = cJSON_GetArrayItem(cands, lt[0].index);
    int gen0 = nre;
    for (int i = 0; i < ngen && i < 3; i++)
        cfgs[nre++] = cJSON_GetArrayItem(cands, gen[i].index);
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
    int bg = gen0;
    for (int i = 0; i < nre; i++) {
        qsort(res[i], (size_t)o->rounds, sizeof(double), cmp_dbl);
        med[i] = res[i][o->rounds / 2];
        if (i >= gen0 && med[i] < med[bg])
            bg = i;
    }
    double lt_best = nlt ? fmin(med[0], med[1]) : med[0];
    double g = bg < nre ? med[bg] : NAN;
#define PCT(us) (copy_bw > 0 ? 100.0 * p.bytes / ((us) * 1e-6) / copy_bw : 0.0)
    printf("%-12s %6lld %3lld %6lld %9.2f %9.2f %9.2f %8.0f %6.1f %6.1f %+7.1f%% %+7.1f%% %4d/%-4d\n", name,
           (long long)p.m, (long long)p.n, (long long)p.k, med[0], lt_best, g, p.bytes / (g * 1e-6) / 1e9,
           PCT(g), PCT(lt_best), (med[0] / g - 1) * 100, (lt_best / g - 1) * 100, ngen, ngen_all);
    if (bg < nre) {
        char *txt = cJSON_PrintUnformatted(cfgs[bg]);
        cJSON *info = gt_gen_cand_info(re[bg]);
        char *it = info ? cJSON_PrintUnformatted(info) : NULL;
        printf("     best gen %s\n     %s\n", txt ? txt : "", it ? it : "");
        free(txt);
        free(it);
        cJSON_Delete(info);
    }
out:
    for (int i = 0; i < 5; i++)
        if (re[i])
            bk->release(re[i]);
    free(lt);
    free(gen);
    bk->unprepare(pp);
    cJSON_Delete(cands);
    cJSON_Delete(base);
    return failures;
}

int gt_gen_bench(const gt_backend *bk, gt_bk_ctx *ctx, const gt_gen_bench_opts *o)
{
    int failures = 0;
    gt_problem ps[16];
    const char *names[16];
    char nbuf[16][32];
    int np = 0;
    for (int t = 1; t <= 16; t += 15)
        for (size_t l = 0; l < sizeof k_layers / sizeof k_layers[0]; l++) {
            if (o->tokens && o->tokens != t)
                continue;
            ps[np] = shape(k_layers[l].m, t, k_layers[l].k);
            snprintf(nbuf[np], sizeof nbuf[np], "%s n=%d", k_layers[l].name, t);
            names[np] = nbuf[np];
            np++;
        }
    printf("\n== gen: the generated gemv family vs cuBLASLt, bf16 TN Llama-3-8B decode shapes ==\n");
    gt_cuda_set_exit_on_sticky(ctx, 0);
    double bw = gt_cuda_alive(ctx, NULL, 0) == 0 ? gt_gen_copy_bandwidth(ctx) : 0;
    printf("copy bandwidth %.3f TB/s (1 GiB device-to-device, read + written, median of 10)\n", bw / 1e12);
    compile_passes(ctx, ps, np, o->fresh_cache);
    printf("%-12s %6s %3s %6s %9s %9s %9s %8s %6s %6s %8s %8s %9s\n", "shape", "m", "n", "k", "heur_us",
           "lt_best", "gen_best", "gen_GB/s", "%copy", "%c_lt", "vs_heur", "vs_lt", "gen_valid");
    for (int i = 0; i < np; i++) {
        failures += shape_one(bk, ctx, names[i], ps[i], o, bw);
        fflush(stdout);
    }
    return failures;
}
