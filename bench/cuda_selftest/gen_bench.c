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
 *              baseline and over cuBLASLt's best (the measurement is
 *              shared with --mma: gen_bench_shape.c). */
#include <stdio.h>
#include <stdlib.h>

#include "gen_bench_priv.h"
#include "gen_cuda.h"
#include "gt_util.h"

double gt_st_copy_bandwidth(gt_bk_ctx *ctx)
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
    qsort(t, 10, sizeof t[0], gt_st_cmp_dbl);
    bw = 2.0 * (double)sz / (0.5 * (t[4] + t[5]));
out:
    if (x)
        (void)cudaFree(x);
    if (y)
        (void)cudaFree(y);
    (void)cudaGetLastError();
    return bw;
}

/* Compile throughput and cache hit rates over every family config of the
 * shapes. */
static void compile_passes(gt_bk_ctx *ctx, const gt_problem *ps, int np, int fresh)
{
    char dir[] = "/tmp/gt-gen-bench.XXXXXX", err[512];
    gt_gen_dev d;
    if (gt_cuda_gen_device(ctx, &d, err, sizeof err) != 0) {
        printf("FAIL gen compile: %s\n", err);
        return;
    }
    if (fresh && mkdtemp(dir))
        setenv("GEMMTUNE_CACHE_DIR", dir, 1);
    char where[4096] = "";
    gt_cu_cache_dir(where, sizeof where);
    gt_cu_cache_forget();
    for (int pass = 0; pass < 3; pass++) {
        gt_cu_cache_stats s0, s1;
        if (pass == 2)
            gt_cu_cache_forget();
        gt_cu_cache_stats_get(&s0);
        double t0 = gt_mono_ms();
        int n = 0, fails = 0;
        gt_cu_entry *ents[1024];
        for (int i = 0; i < np; i++) {
            gt_gen_space s;
            if (gt_gen_prune_kept(&ps[i], &d, GT_GEN_DEFAULT_CAP, &s) != 0)
                continue;
            for (int c = 0; c < s.nkeep && n < 1024; c++) {
                char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
                const char *opts[GT_GEN_MAX_DEFS];
                int no = gt_gen_defines(&ps[i], &s.keep[c], 0, defs);
                for (int o = 0; o < no; o++)
                    opts[o] = defs[o];
                ents[n++] = gt_cu_cache_request(gt_gen_gemv_src, "gt_gemv", opts, no, ctx->sm, 1, NULL);
            }
            gt_gen_space_free(&s);
        }
        for (int i = 0; i < n; i++) {
            const gt_cu_image *img;
            fails += !ents[i] || gt_cu_cache_wait(ents[i], &img, err, sizeof err) != 0;
        }
        double secs = (gt_mono_ms() - t0) / 1000;
        gt_cu_cache_stats_get(&s1);
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

/* The family's side: both generated families (gemv, and mma when the
 * enumeration has it); everything else is a cuBLASLt config. */
static int gemv_side(int fam)
{
    return fam == GT_FAM_GEMV || fam == GT_FAM_MMA ? GT_ST_FAM : GT_ST_LT;
}

/* The row: times, GB/s and % of the copy bandwidth (*arg), uplifts. */
static void gemv_row(const gt_st_row *r, void *arg)
{
    double copy_bw = *(const double *)arg, g = r->fam_us, lt_best = r->lt_best_us;
    const gt_problem *p = r->p;
#define PCT(us) (copy_bw > 0 ? 100.0 * p->bytes / ((us) * 1e-6) / copy_bw : 0.0)
    printf("%-12s %6lld %3lld %6lld %9.2f %9.2f %9.2f %8.0f %6.1f %6.1f %+7.1f%% %+7.1f%% %4d/%-4d %9.2f %6.1f\n",
           r->name, (long long)p->m, (long long)p->n, (long long)p->k, r->heur_us, lt_best, g,
           p->bytes / (g * 1e-6) / 1e9, PCT(g), PCT(lt_best), (r->heur_us / g - 1) * 100,
           (lt_best / g - 1) * 100, r->timed, r->all, r->chain_us, PCT(r->chain_us));
#undef PCT
}

int gt_st_gemv_bench(const gt_backend *bk, gt_bk_ctx *ctx, const gt_st_opts *o)
{
    /* n = 1 and 16 (the targets), or any other --tokens: how the
     * family scales with the batch between and around them. */
    int tokens[2] = {1, 16}, nt = 2;
    if (o->tokens > 0 && o->tokens != 1 && o->tokens != 16)
        tokens[0] = o->tokens, nt = 1;
    int failures = 0;
    gt_problem ps[GT_ST_MAX_SHAPES];
    char names[GT_ST_MAX_SHAPES][32];
    int np = gt_st_shapes(tokens, nt, o->tokens, ps, names);
    printf("\n== gen: the generated gemv family vs cuBLASLt, bf16 TN Llama-3-8B decode shapes ==\n");
    gt_cuda_set_exit_on_sticky(ctx, 0);
    double bw = gt_cuda_alive(ctx, NULL, 0) == 0 ? gt_st_copy_bandwidth(ctx) : 0;
    printf("copy bandwidth %.3f TB/s (1 GiB device-to-device, read + written, median of 10)\n", bw / 1e12);
    compile_passes(ctx, ps, np, o->fresh_cache);
    printf("%-12s %6s %3s %6s %9s %9s %9s %8s %6s %6s %8s %8s %9s %9s %6s\n", "shape", "m", "n", "k", "heur_us",
           "lt_best", "gen_best", "gen_GB/s", "%copy", "%c_lt", "vs_heur", "vs_lt", "gen_valid", "chain_us", "%copy");
    gt_st_family f = {
        .label = "gen", .check_s = 120, .side = gemv_side, .chain = 1, .print_row = gemv_row, .arg = &bw};
    for (int i = 0; i < np; i++) {
        failures += gt_st_shape(bk, ctx, &f, names[i], &ps[i], o);
        fflush(stdout);
    }
    return failures;
}
