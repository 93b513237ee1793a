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
 *              family's best as a share of cuBLASLt's best (the
 *              measurement is shared with --gen: gen_bench_shape.c). */
#include <stdio.h>
#include <stdlib.h>

#include "gen_bench_priv.h"
#include "gen_cuda.h"
#include "gen_mma.h"
#include "gt_util.h"

/* Compiles every kept config of the shapes into a fresh cache: kernels/s. */
static void compile_pass(gt_bk_ctx *ctx, const gt_problem *ps, int np, int fresh)
{
    char dir[] = "/tmp/gt-mma-bench.XXXXXX", err[512];
    gt_gen_dev d;
    if (gt_cuda_gen_device(ctx, &d, err, sizeof err) != 0) {
        printf("FAIL mma compile: %s\n", err);
        return;
    }
    if (fresh && mkdtemp(dir))
        setenv("GEMMTUNE_CACHE_DIR", dir, 1);
    gt_cu_cache_forget();
    gt_cu_cache_stats s0, s1;
    gt_cu_cache_stats_get(&s0);
    double t0 = gt_mono_ms();
    int n = 0, fails = 0, spills = 0;
    enum { MAXE = 2048 };
    gt_cu_entry **ents = calloc(MAXE, sizeof *ents);
    for (int i = 0; ents && i < np; i++) {
        gt_mma_space s;
        if (gt_mma_prune_kept(&ps[i], &d, GT_MMA_DEFAULT_CAP, &s) != 0)
            continue;
        for (int c = 0; c < s.nkeep && n < MAXE; c++) {
            char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
            const char *opts[GT_GEN_MAX_DEFS];
            int no = gt_mma_defines(&ps[i], &s.keep[c], defs);
            for (int o = 0; o < no; o++)
                opts[o] = defs[o];
            ents[n++] = gt_cu_cache_request(gt_mma_src_of(&s.keep[c]), "gt_mma", opts, no, gt_cuda_gen_mma_sm(ctx, &s.keep[c]),
                                            1, NULL);
        }
        gt_mma_space_free(&s);
    }
    for (int i = 0; i < n; i++) {
        const gt_cu_image *img;
        if (!ents[i] || gt_cu_cache_wait(ents[i], &img, err, sizeof err) != 0) {
            if (fails++ < 3)
                printf("     compile: %s\n", err);
            continue;
        }
        spills += img->spill_stores > 0;
    }
    double secs = (gt_mono_ms() - t0) / 1000;
    gt_cu_cache_stats_get(&s1);
    long comp = s1.compiles - s0.compiles;
    printf("%s mma compile cold: %d configs, %ld compiled in %.2f s = %.1f kernels/s on %d threads "
           "(%.0f ms NVRTC each), %d spilled\n",
           fails ? "FAIL" : "ok  ", n, comp, secs, secs > 0 ? comp / secs : 0.0, s1.threads + 1,
           comp ? (s1.compile_ms - s0.compile_ms) / comp : 0.0, spills);
    free(ents);
}

/* The family's side: mma configs against cuBLASLt's; the gemv family has
 * its own section (--gen). */
static int mma_side(int fam)
{
    if (fam == GT_FAM_MMA)
        return GT_ST_FAM;
    return fam == GT_FAM_CUBLASLT ? GT_ST_LT : GT_ST_SKIP;
}

/* The row: times, TFLOP/s of each, the family's best as a share of
 * cuBLASLt's best, the largest validated error. */
static void mma_row(const gt_st_row *r, void *arg)
{
    const gt_problem *p = r->p;
    double g = r->fam_us, lt_best = r->lt_best_us;
    (void)arg;
#define TF(us) (p->flops / ((us) * 1e-6) / 1e12)
    printf("%-14s %6lld %4lld %6lld %9.2f %9.2f %9.2f %7.1f %7.1f %7.1f %6.1f%% %5d/%-5d %8.2g\n", r->name,
           (long long)p->m, (long long)p->n, (long long)p->k, r->heur_us, lt_best, g, TF(r->heur_us),
           TF(lt_best), TF(g), 100.0 * lt_best / g, r->timed - r->wrong, r->all, r->worst);
#undef TF
}

int gt_st_mma_bench(const gt_backend *bk, gt_bk_ctx *ctx, const gt_st_opts *o)
{
    /* n = 16, 128, 2048, or any other --tokens */
    int tokens[3] = {16, 128, 2048}, nt = 3;
    if (o->tokens > 0 && o->tokens != 16 && o->tokens != 128 && o->tokens != 2048)
        tokens[0] = o->tokens, nt = 1;
    int failures = 0;
    gt_problem ps[GT_ST_MAX_SHAPES];
    char names[GT_ST_MAX_SHAPES][32];
    int np = gt_st_shapes(tokens, nt, o->tokens, ps, names);
    printf("\n== mma: the generated tensor-core family vs cuBLASLt, bf16 TN Llama-3-8B shapes ==\n");
    gt_cuda_set_exit_on_sticky(ctx, 0);
    compile_pass(ctx, ps, np, o->fresh_cache);
    printf("%-14s %6s %4s %6s %9s %9s %9s %7s %7s %7s %7s %11s %8s\n", "shape", "m", "n", "k", "heur_us",
           "lt_best", "mma_best", "heur_TF", "lt_TF", "mma_TF", "%lt", "mma_valid", "max_err");
    /* cuBLASLt: the heuristic's results first, then a sample of its
     * enumeration; 20 s of AlgoCheck at most per shape. Every kept mma
     * config must validate and time. */
    gt_st_family f = {
        .label = "mma", .check_s = 20, .side = mma_side, .need_all = 1, .print_row = mma_row};
    for (int i = 0; i < np; i++) {
        failures += gt_st_shape(bk, ctx, &f, names[i], &ps[i], o);
        fflush(stdout);
    }
    return failures;
}
