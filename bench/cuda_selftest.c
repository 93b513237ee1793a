/* cuda_selftest.c: gt-cuda-selftest, the cuda backend's self-test on a real
 * GPU. It drives the backend through its vtable, as the worker's job runner
 * does (enumerate; prepare; per candidate build -> validate -> time ->
 * release; unprepare), in up to four parts:
 *
 *   coverage    small problems over every supported type/epilogue/layout
 *               family: the baseline and every candidate must run, the
 *               baseline must validate; fp8 NN must be refused with a reason
 *               on pre-Blackwell parts; an fp8 baseline that fails is probed
 *               (cuBLASLt called directly in variants) to show why;
 *   validation  the GPU comparison against its host emulation on the same
 *               D (sampled and full reference, dense and padded D), and
 *               NaN / Inf / unwritten elements anywhere in D giving NaN;
 *   big         (--big) prepare and validate cost on the largest benchmark
 *               shapes (sampled reference);
 *   shapes      bf16 TN Llama-3-8B projections (m = out features, n = tokens,
 *               k = in features): every enumerated candidate is validated and
 *               quick-timed (with the per-candidate cost of each phase), then
 *               the 5 fastest are re-timed interleaved with the baseline
 *               (cuBLASLt heuristic top-1);
 *   gen         (--gen, alone) the generated "gemv" family against cuBLASLt on
 *               the n = 1 and n = 16 shapes: copy bandwidth, compile throughput
 *               and cache hit rates, best of each, GB/s and % of copy
 *               bandwidth (cuda_selftest/gen_bench.c);
 *   mma         (--mma, alone) the generated tensor-core "mma" family against
 *               cuBLASLt on the n = 16, 128, 2048 shapes: compile throughput,
 *               every kept config validated, TFLOP/s and % of cuBLASLt's best
 *               (cuda_selftest/mma_bench.c);
 *   floor       (--floor, alone or before --gen) one streaming pass over each
 *               weight matrix of those shapes timed like a candidate: the
 *               ceiling of a memory-bound kernel at that size
 *               (cuda_selftest/floor_bench.c);
 *   sweep       (--sweep N [--csv FILE]) N kept gemv configs per decode
 *               shape, sampled over the model's ranking and quick-timed: what
 *               the ranking model is calibrated on (cuda_selftest/gen_sweep.c).
 *
 * Exit status 0 when everything that must work worked. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_bench.h"
#include "gt_backend.h"
#include "gt_cuda.h"
#include "gt_util.h"

typedef struct opts {
    int device;
    int quick;
    int coverage, validation, shapes, big, gen, mma, floor, keep_cache;
    int sweep;              /* --sweep N: configs per shape */
    const char *csv;
    int max_cands;
    double min_time_ms;
    int repeats;
    int top;
    int rounds;
    int tokens;             /* only the Llama shapes with this n (0: all) */
    const char *shape_list;
} opts;

static const gt_backend *bk = &gt_bk_cuda;
static int failures;

/* A candidate that cuBLASLt refuses at run time fails alone; a sticky CUDA
 * error ends the run (the worker would restart its process). */
static int dead(gt_bk_ctx *ctx)
{
    char why[512];
    return gt_cuda_alive(ctx, why, sizeof why) != 0;
}

static gt_problem make(int64_t m, int64_t n, int64_t k, char ta, char tb, gt_dtype in, gt_dtype out,
                       gt_dtype compute)
{
    gt_problem p;
    gt_problem_init(&p, m, n, k);
    p.trans_a = ta;
    p.trans_b = tb;
    p.a_type = p.b_type = in;
    p.c_type = p.d_type = out;
    p.compute_type = compute;
    p.scale_type = compute == GT_DT_TF32 ? GT_DT_F32 : compute;
    gt_problem_default_ld(&p);
    gt_problem_finish(&p);
    return p;
}

/* ---- fp8 probe --------------------------------------------------------------- */

/* Runs the heuristic's top algo for pp directly with cuBLASLt in variants
 * of the descriptor and prints each status, so one run on the GPU shows
 * which setting cuBLASLt refuses (CUBLASLT_LOG_LEVEL=2 adds its reason). */
static void fp8_probe(gt_bk_ctx *ctx, gt_bk_prob *pp)
{
    static const struct {
        const char *what;
        int sepc, noscale, packed, amax, fast, recreate;
    } var[] = {
        {"as prepared (heuristic algo)", 0, 0, 0, 0, 0, 0},
        {"scales packed 4 bytes apart", 0, 0, 1, 0, 0, 0},
        {"C apart from D", 1, 0, 0, 0, 0, 0},
        {"no A/B/D scale pointers", 0, 1, 0, 0, 0, 0},
        {"AMAX_D set", 0, 0, 0, 1, 0, 0},
        {"FAST_ACCUM=1", 0, 0, 0, 0, 1, 0},
        {"algo re-created from its config", 0, 0, 0, 0, 0, 1},
        {"re-created, no scale pointers", 0, 1, 0, 0, 0, 1},
    };
    const float packed_h[4] = {1, 1, 1, 0};
    float *packed = NULL;
    void *csep = NULL;
    if (cudaMalloc((void **)&packed, sizeof packed_h) != cudaSuccess ||
        cudaMemcpy(packed, packed_h, sizeof packed_h, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMalloc(&csep, pp->c_sz) != cudaSuccess || cudaMemset(csep, 0, pp->c_sz) != cudaSuccess) {
        printf("    fp8 probe: device memory\n");
        goto out;
    }
    for (size_t v = 0; v < sizeof var / sizeof var[0]; v++) {
        char err[256] = "";
        gt_cu_desc d;
        const float *sc = pp->scales;
        gt_cu_ptrs ptrs = {pp->bias, sc, sc + GT_CUDA_SCALE_SLOT, sc + 2 * GT_CUDA_SCALE_SLOT};
        if (var[v].packed)
            ptrs.a_scale = packed, ptrs.b_scale = packed + 1, ptrs.d_scale = packed + 2;
        if (var[v].noscale)
            ptrs.a_scale = ptrs.b_scale = ptrs.d_scale = NULL;
        if (gt_cu_desc_create(&pp->p, &pp->map, &ptrs, &d, err, sizeof err) != 0) {
            printf("    fp8 probe: %-34s desc: %s\n", var[v].what, err);
            continue;
        }
        const void *amax = sc + 3 * GT_CUDA_SCALE_SLOT;
        int8_t fast = 1;
        cublasStatus_t hs = CUBLAS_STATUS_SUCCESS, ms = CUBLAS_STATUS_NOT_INITIALIZED;
        if (var[v].amax)
            hs = cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &amax,
                                                sizeof amax);
        if (var[v].fast)
            hs = cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                                sizeof fast);
        cublasLtMatmulPreference_t pref = NULL;
        cublasLtMatmulHeuristicResult_t r;
        int nr = 0, same = -1;
        uint64_t ws = ctx->ws_size;
        if (hs == CUBLAS_STATUS_SUCCESS)
            hs = cublasLtMatmulPreferenceCreate(&pref);
        if (hs == CUBLAS_STATUS_SUCCESS)
            hs = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &ws, sizeof ws);
        if (hs == CUBLAS_STATUS_SUCCESS)
            hs = cublasLtMatmulAlgoGetHeuristic(ctx->lt, d.op, d.a, d.b, d.c, d.d, pref, 1, &r, &nr);
        if (pref)
            (void)cublasLtMatmulPreferenceDestroy(pref);
        if (hs == CUBLAS_STATUS_SUCCESS && nr > 0) {
            cublasLtMatmulAlgo_t algo = r.algo;
            gt_cu_lt_cfg cfg;
            size_t need;
            if (var[v].recreate) {
                if (gt_cu_lt_cfg_from_algo(&gt_cu_lt_linked, &r.algo, &cfg, err, sizeof err) != 0 ||
                    gt_cuda_algo_make(ctx, &pp->map, &d, &cfg, &algo, &need, err, sizeof err) != 0)
                    printf("    fp8 probe: %-34s %s\n", var[v].what, err);
                same = memcmp(algo.data, r.algo.data, sizeof algo.data) == 0;
            }
            ms = cublasLtMatmul(ctx->lt, d.op, pp->map.alpha, pp->val.a, d.a, pp->val.b, d.b,
                                pp->map.beta, var[v].sepc ? csep : pp->val.c, d.c, pp->val.d, d.d,
                                &algo, ctx->ws, ctx->ws_size, ctx->stream);
            cudaError_t e = cudaStreamSynchronize(ctx->stream);
            if (e != cudaSuccess)
                printf("    fp8 probe: %-34s sync: %s\n", var[v].what, cudaGetErrorName(e));
        }
        printf("    fp8 probe: %-34s heuristic %s (%d), matmul %s%s\n", var[v].what,
               gt_cu_status_name(hs), nr,
               hs == CUBLAS_STATUS_SUCCESS && nr > 0 ? gt_cu_status_name(ms) : "-",
               same < 0 ? "" : same ? " (bytes equal)" : " (bytes differ)");
        gt_cu_desc_destroy(&d);
        if (dead(ctx))
            break;
    }
out:
    if (packed)
        (void)cudaFree(packed);
    if (csep)
        (void)cudaFree(csep);
}

/* ---- validation ---------------------------------------------------------------- */

/* A value of a 16-bit output type, for altering D. */
static uint16_t enc16(int kt, double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return kt == GT_CU_KT_BF16 ? (uint16_t)(u >> 16) : gt_cu_f32_to_f16(f);
}

static int put16(gt_bk_ctx *ctx, gt_bk_prob *pp, uint16_t *host, int64_t at, uint16_t v)
{
    host[at] = v;
    return cudaMemcpyAsync((uint16_t *)pp->val.d + at, &host[at], 2, cudaMemcpyHostToDevice,
                           ctx->stream) == cudaSuccess;
}

/* The GPU comparison must equal its host emulation on the same D and
 * reference, and any non-finite or unwritten element of D, sampled or not,
 * must make the error NaN. 16-bit outputs only. */
static void validation_one(gt_bk_ctx *ctx, const char *name, gt_problem p)
{
    char err[512] = "";
    cJSON *cands = NULL, *base = NULL;
    gt_bk_prob *pp = NULL;
    gt_bk_cand *c = NULL;
    uint16_t *hd = NULL;
    double *hr = NULL;
    int bad = 0;
    gt_problem_finish(&p);
    if (bk->enumerate(ctx, &p, 0, &cands, &base, err, sizeof err) != 0 ||
        bk->prepare(ctx, &p, &pp, err, sizeof err) != 0 ||
        bk->build(pp, base, &c, err, sizeof err) != 0) {
        printf("FAIL %-28s %s\n", name, err);
        failures++;
        goto out;
    }
    const gt_problem *q = &pp->p;
    int kt = pp->map.dkt;
    int64_t sd = q->batch > 1 ? q->stride_d : 0, nref = q->m * pp->ns * q->batch;
    double e = NAN, g = NAN, h;
    hd = malloc(pp->d_sz);
    hr = malloc((size_t)nref * sizeof *hr);
    double t0 = gt_mono_ms();
    if (!hd || !hr || bk->validate(pp, c, &e, err, sizeof err) != 0) {
        printf("FAIL %-28s validate: %s\n", name, err);
        failures++;
        goto out;
    }
    double vms = gt_mono_ms() - t0;
    if (cudaMemcpy(hd, pp->val.d, pp->d_sz, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(hr, pp->ref, (size_t)nref * sizeof *hr, cudaMemcpyDeviceToHost) != cudaSuccess) {
        printf("FAIL %-28s copy back\n", name);
        failures++;
        goto out;
    }
#define EMU() gt_cuda_rel_err(kt, hd, q->m, q->n, q->ldd, q->batch, sd, pp->cols, pp->ns, hr)
#define GPU() (gt_cuda_check(pp, &g, err, sizeof err) == 0 ? g : (printf("     %s\n", err), -1.0))
    h = EMU();
    bad += !(e <= gt_bk_tolerance(q)) || !(fabs(GPU() - h) <= 1e-9 * h + 1e-300) || g != e;
    printf("     %-28s validate %.2f ms: gpu %.17g host %.17g\n", name, vms, e, h);
    /* A wrong finite value in a sampled column (last batch, middle row). */
    int64_t js = pp->cols ? pp->cols[pp->ns / 2] : q->n / 2, b = q->batch - 1;
    int64_t at = b * sd + js * q->ldd + q->m / 2;
    uint16_t keep = hd[at];
    bad += !put16(ctx, pp, hd, at, enc16(kt, gt_cu_decode(kt, hd, (size_t)at) + 1.0));
    h = EMU();
    bad += !(h > e) || !(fabs(GPU() - h) <= 1e-9 * h);
    bad += !put16(ctx, pp, hd, at, keep);
    /* NaN, +Inf, and poison (never written) in an unsampled column when
     * sampling (the scan covers all of D), and in the last element of D. */
    int64_t ju = 0; /* the first column the reference does not cover, if any */
    for (int64_t ci = 0; pp->cols && ci < pp->ns && pp->cols[ci] == ju; ci++)
        ju++;
    int64_t spots[2] = {ju * q->ldd + 1, (q->batch - 1) * sd + (q->n - 1) * q->ldd + q->m - 1};
    const uint16_t nan16 = kt == GT_CU_KT_BF16 ? 0x7fc0 : 0x7e00, inf16 = kt == GT_CU_KT_BF16 ? 0x7f80 : 0x7c00;
    const uint16_t vals[3] = {nan16, inf16, 0xffff};
    for (int si = 0; si < 2; si++)
        for (int vi = 0; vi < 3; vi++) {
            keep = hd[spots[si]];
            bad += !put16(ctx, pp, hd, spots[si], vals[vi]);
            bad += !isnan(EMU()) || !isnan(GPU());
            bad += !put16(ctx, pp, hd, spots[si], keep);
        }
    bad += GPU() != e; /* restored: the same result, bit for bit */
#undef EMU
#undef GPU
    printf("%s %-28s ref %s (%lld of %lld columns, %.1f ms), gpu == host emulation, NaN/Inf/unwritten "
           "caught%s\n", bad ? "FAIL" : "ok  ", name, pp->ns < q->n ? "sampled" : "full",
           (long long)pp->ns, (long long)q->n, pp->ref_ms, bad ? ": MISMATCH" : "");
    failures += bad != 0;
out:
    if (c)
        bk->release(c);
    free(hd);
    free(hr);
    bk->unprepare(pp);
    cJSON_Delete(cands);
    cJSON_Delete(base);
}

static void validation(gt_bk_ctx *ctx)
{
    printf("\n== validation: GPU comparison vs host emulation, non-finite detection ==\n");
    gt_cuda_set_limits(ctx, 8, 10);
    /* 4.6e9 MACs: sampled, 256 of 2048 columns; dense D (16-byte scan). */
    validation_one(ctx, "bf16 TN 2048x2048x1088", make(2048, 2048, 1088, 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32));
    /* full reference, padded batched D (ldd > m: the element scan). */
    gt_problem p = make(384, 96, 256, 'N', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32);
    p.batch = 3;
    gt_problem_default_ld(&p);
    p.ldc = p.ldd = 392;
    p.stride_c = p.stride_d = 392 * 96 + 64;
    validation_one(ctx, "bf16 NN batch 3 ldd 392", p);
    /* dense with a tail that is not a whole 16-byte chunk (600 bytes). */
    validation_one(ctx, "f16 TN 100x3x64", make(100, 3, 64, 'T', 'N', GT_DT_F16, GT_DT_F16, GT_DT_F32));
}

/* Prepare (reference) and validate cost on the largest benchmark shapes. */
static void big(gt_bk_ctx *ctx)
{
    static const int64_t shapes[][3] = {{128256, 8192, 4096}, {28672, 8192, 4096}, {4096, 8192, 14336}};
    printf("\n== big: bf16 TN, sampled reference and validation cost ==\n");
    gt_cuda_set_limits(ctx, 8, 20);
    for (int i = 0; i < 3; i++) {
        char err[512] = "", name[64];
        cJSON *cands = NULL, *base = NULL;
        gt_bk_prob *pp = NULL;
        gt_bk_cand *c = NULL;
        gt_problem p = make(shapes[i][0], shapes[i][1], shapes[i][2], 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32);
        snprintf(name, sizeof name, "%lldx%lldx%lld", (long long)p.m, (long long)p.n, (long long)p.k);
        double t0 = gt_mono_ms(), tp = 0, tv = 0, e = NAN;
        gt_timing t = {0};
        gt_timing_opts o = {.min_time_ms = 20, .warmup = 1, .repeats = 3};
        int ok = bk->enumerate(ctx, &p, 0, &cands, &base, err, sizeof err) == 0 &&
                 bk->prepare(ctx, &p, &pp, err, sizeof err) == 0 &&
                 bk->build(pp, base, &c, err, sizeof err) == 0;
        tp = gt_mono_ms() - t0;
        for (int r = 0; ok && r < 3; r++) { /* the first one includes the kernel's loading */
            t0 = gt_mono_ms();
            ok = bk->validate(pp, c, &e, err, sizeof err) == 0 && e <= gt_bk_tolerance(&p);
            tv = gt_mono_ms() - t0;
        }
        ok = ok && bk->time(pp, c, &o, &t, err, sizeof err) == 0;
        if (ok)
            printf("ok   %-20s ref %lld of %lld columns in %.0f ms (enumerate+prepare %.2f s); validate "
                   "%.2f ms = GEMM %.2f ms + %.2f ms poison/compare/scan; rel err %.2e\n",
                   name, (long long)pp->ns, (long long)p.n, pp->ref_ms, tp / 1000, tv,
                   t.median_us / 1000, tv - t.median_us / 1000, e);
        else
            printf("FAIL %-20s %s (rel err %.3g)\n", name, err, e);
        failures += !ok;
        if (c)
            bk->release(c);
        bk->unprepare(pp);
        cJSON_Delete(cands);
        cJSON_Delete(base);
    }
}

/* ---- coverage -------------------------------------------------------------- */

static void coverage_one(gt_bk_ctx *ctx, const char *name, gt_problem p)
{
    char err[512];
    cJSON *cands = NULL, *base = NULL;
    gt_bk_prob *pp = NULL;
    gt_problem_finish(&p);
    double tol = gt_bk_tolerance(&p);
    if (bk->enumerate(ctx, &p, 0, &cands, &base, err, sizeof err) != 0) {
        printf("FAIL %-28s enumerate: %s\n", name, err);
        failures++;
        return;
    }
    if (bk->prepare(ctx, &p, &pp, err, sizeof err) != 0) {
        printf("FAIL %-28s prepare: %s\n", name, err);
        failures++;
        goto out;
    }
    int n = cJSON_GetArraySize(cands), built = 0, valid = 0, runerr = 0;
    double base_err = NAN, base_us = NAN, worst_valid = 0;
    gt_timing_opts o = {.min_time_ms = 0.3, .warmup = 1, .repeats = 3};
    for (int i = -1; i < n; i++) {
        gt_bk_cand *c = NULL;
        double e = NAN;
        gt_timing t;
        if (bk->build(pp, i < 0 ? base : cJSON_GetArrayItem(cands, i), &c, err, sizeof err) != 0) {
            if (i < 0)
                printf("     %-28s baseline build: %s\n", name, err);
            continue;
        }
        built++;
        if (bk->validate(pp, c, &e, err, sizeof err) != 0 || bk->time(pp, c, &o, &t, err, sizeof err) != 0) {
            /* A failing baseline fails the problem, but the others still run:
             * whether any config works tells a descriptor problem from an
             * algo one. */
            if (i < 0 || dead(ctx) || runerr++ < 2)
                printf("%s %-28s candidate %d: %s\n", i < 0 || dead(ctx) ? "FAIL" : "    ", name, i, err);
            bk->release(c);
            if (i < 0 && pp->map.fp8)
                fp8_probe(ctx, pp);
            if (dead(ctx))
                break;
            continue;
        }
        if (e <= tol) {
            valid++;
            worst_valid = fmax(worst_valid, e);
        }
        if (i < 0) {
            base_err = e;
            base_us = t.median_us;
        }
        bk->release(c);
    }
    int ok = base_err <= tol && valid > 0;
    printf("%s %-28s %4d cands %4d built %4d valid  baseline err %.2e (tol %.0e) %8.2f us  worst valid %.2e  ref %s\n",
           ok ? "ok  " : "FAIL", name, n, built, valid, base_err, tol, base_us, worst_valid,
           pp->ns < pp->p.n ? "sampled" : "full");
    failures += !ok;
out:
    bk->unprepare(pp);
    cJSON_Delete(cands);
    cJSON_Delete(base);
}

static void coverage(gt_bk_ctx *ctx, int sm)
{
    printf("\n== coverage (at most 48 candidates, 10 s of enumeration per problem) ==\n");
    gt_cuda_set_limits(ctx, 48, 10);
    gt_problem p;
    coverage_one(ctx, "f32 NN 512^3", make(512, 512, 512, 'N', 'N', GT_DT_F32, GT_DT_F32, GT_DT_F32));
    coverage_one(ctx, "tf32 NT 1024x256x512",
                 make(1024, 256, 512, 'N', 'T', GT_DT_F32, GT_DT_F32, GT_DT_TF32));
    coverage_one(ctx, "f64 TT 256x128x192", make(256, 128, 192, 'T', 'T', GT_DT_F64, GT_DT_F64, GT_DT_F64));
    /* f16 accumulation: a short k keeps its rounding inside the f16
     * tolerance; the point is that the COMPUTE_16F path runs. */
    p = make(1024, 128, 64, 'T', 'N', GT_DT_F16, GT_DT_F16, GT_DT_F16);
    coverage_one(ctx, "f16 (f16 compute) TN k=64", p);
    p = make(768, 96, 640, 'N', 'N', GT_DT_F16, GT_DT_F16, GT_DT_F32);
    p.beta = 0.5;
    p.alpha = 0.75;
    coverage_one(ctx, "f16 NN alpha/beta", p);
    p = make(4096, 16, 4096, 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32);
    p.bias = 1;
    snprintf(p.activation, sizeof p.activation, "gelu");
    coverage_one(ctx, "bf16 TN bias+gelu", p);
    p = make(2048, 64, 1024, 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32);
    p.bias = 1;
    p.bias_type = GT_DT_BF16;
    snprintf(p.activation, sizeof p.activation, "relu");
    coverage_one(ctx, "bf16 TN bias+relu", p);
    p = make(256, 128, 64, 'N', 'N', GT_DT_BF16, GT_DT_F32, GT_DT_F32);
    p.c_type = p.d_type = GT_DT_F32;
    p.batch = 8;
    gt_problem_default_ld(&p);
    coverage_one(ctx, "bf16->f32 NN batch 8", p);
    p = make(128, 64, 256, 'T', 'N', GT_DT_I8, GT_DT_I32, GT_DT_I32);
    p.scale_type = GT_DT_I32;
    coverage_one(ctx, "i8 TN -> i32", p);
    if (sm >= 89) {
        p = make(4096, 128, 4096, 'T', 'N', GT_DT_F8E4M3, GT_DT_BF16, GT_DT_F32);
        coverage_one(ctx, "fp8 e4m3 TN -> bf16", p);
        p.b_type = GT_DT_F8E5M2;
        coverage_one(ctx, "fp8 e4m3 x e5m2 TN -> bf16", p);
        p = make(2048, 64, 2048, 'T', 'N', GT_DT_F8E4M3, GT_DT_BF16, GT_DT_F32);
        p.d_type = GT_DT_F8E4M3;
        coverage_one(ctx, "fp8 TN -> e4m3", p);
    }
    if (sm >= 89 && sm < 100) {
        /* Must be refused with the reason, never run or skipped silently. */
        char err[512] = "";
        gt_bk_prob *pp = NULL;
        p = make(1024, 64, 1024, 'N', 'N', GT_DT_F8E4M3, GT_DT_BF16, GT_DT_F32);
        int rc = bk->prepare(ctx, &p, &pp, err, sizeof err);
        int ok = rc != 0 && strstr(err, "transA=T transB=N") != NULL;
        printf("%s %-28s refused: %s\n", ok ? "ok  " : "FAIL", "fp8 NN", rc ? err : "(accepted)");
        failures += !ok;
        bk->unprepare(pp);
    }
}

/* ---- shapes ---------------------------------------------------------------- */

typedef struct shape {
    char name[72];
    int64_t m, n, k;
} shape;

typedef struct scored {
    int index;
    double us;
} scored;

static int cmp_scored(const void *a, const void *b)
{
    double x = ((const scored *)a)->us, y = ((const scored *)b)->us;
    return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void shape_one(gt_bk_ctx *ctx, const opts *o, const shape *s)
{
    char err[512];
    cJSON *cands = NULL, *base = NULL;
    gt_bk_prob *pp = NULL;
    scored *sc = NULL;
    gt_bk_cand *re[16] = {0};
    gt_problem p = make(s->m, s->n, s->k, 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32);
    double tol = gt_bk_tolerance(&p);
    gt_cuda_set_limits(ctx, o->max_cands, 120);
    if (bk->enumerate(ctx, &p, 0, &cands, &base, err, sizeof err) != 0) {
        printf("FAIL %s enumerate: %s\n", s->name, err);
        failures++;
        return;
    }
    gt_cuda_enum_stats st;
    gt_cuda_enum_stats_get(ctx, &st);
    if (bk->prepare(ctx, &p, &pp, err, sizeof err) != 0) {
        printf("FAIL %s prepare: %s\n", s->name, err);
        failures++;
        goto out;
    }
    int n = cJSON_GetArraySize(cands), valid = 0, bad = 0, nobuild = 0, timed = 0, runerr = 0;
    sc = malloc((size_t)(n > 0 ? n : 1) * sizeof *sc);
    if (!sc)
        goto out;
    gt_timing_opts quick = {.min_time_ms = o->min_time_ms, .warmup = 1, .repeats = o->repeats};
    double t0 = gt_mono_ms(), ph[3] = {0, 0, 0}, gpu_ms = 0; /* build, validate, time */
    for (int i = 0; i < n; i++) {
        gt_bk_cand *c = NULL;
        double e = NAN, ta = gt_mono_ms(), tb, tc;
        gt_timing t;
        int brc = bk->build(pp, cJSON_GetArrayItem(cands, i), &c, err, sizeof err);
        ph[0] += (tb = gt_mono_ms()) - ta;
        if (brc != 0) {
            nobuild++;
            continue;
        }
        int vrc = bk->validate(pp, c, &e, err, sizeof err);
        ph[1] += (tc = gt_mono_ms()) - tb;
        if (vrc != 0) {
            bk->release(c);
            if (dead(ctx)) {
                printf("FAIL %s candidate %d validate: %s\n", s->name, i, err);
                failures++;
                goto out;
            }
            if (runerr++ < 3)
                printf("    %s candidate %d refused at run time: %s\n", s->name, i, err);
            continue;
        }
        if (!(e <= tol)) {
            bad++;
            bk->release(c);
            continue;
        }
        int trc = bk->time(pp, c, &quick, &t, err, sizeof err);
        ph[2] += gt_mono_ms() - tc;
        if (trc != 0) {
            bk->release(c);
            if (dead(ctx)) {
                printf("FAIL %s candidate %d time: %s\n", s->name, i, err);
                failures++;
                goto out;
            }
            if (runerr++ < 3)
                printf("    %s candidate %d refused at run time: %s\n", s->name, i, err);
            continue;
        }
        timed++;
        gpu_ms += t.median_us * t.iters * t.repeats / 1000.0;
        sc[valid].index = i;
        sc[valid].us = t.median_us;
        valid++;
        bk->release(c);
    }
    double secs = (gt_mono_ms() - t0) / 1000.0;
    qsort(sc, (size_t)valid, sizeof *sc, cmp_scored);

    /* Re-time the baseline and the top candidates interleaved, so drift
     * (clocks, temperature) hits them all alike; median over rounds. */
    int top = valid < o->top ? valid : o->top, nre = 0;
    double base_err = NAN;
    if (bk->build(pp, base, &re[0], err, sizeof err) != 0 ||
        bk->validate(pp, re[0], &base_err, err, sizeof err) != 0 || !(base_err <= tol)) {
        printf("FAIL %s baseline: %s (rel err %.3g)\n", s->name, err, base_err);
        failures++;
        goto out;
    }
    nre = 1;
    for (int i = 0; i < top; i++) {
        if (bk->build(pp, cJSON_GetArrayItem(cands, sc[i].index), &re[nre], err, sizeof err) != 0) {
            printf("FAIL %s re-build of candidate %d: %s\n", s->name, sc[i].index, err);
            failures++;
            goto out;
        }
        nre++;
    }
    double res[16][32];
    gt_timing_opts full = {.min_time_ms = 5, .warmup = 3, .repeats = 5};
    for (int r = 0; r < o->rounds; r++)
        for (int i = 0; i < nre; i++) {
            gt_timing t;
            if (bk->time(pp, re[i], &full, &t, err, sizeof err) != 0) {
                printf("FAIL %s re-time: %s\n", s->name, err);
                failures++;
                goto out;
            }
            res[i][r] = t.median_us;
        }
    double med[16];
    int best = 0;
    for (int i = 0; i < nre; i++) {
        qsort(res[i], (size_t)o->rounds, sizeof(double), cmp_dbl);
        med[i] = res[i][o->rounds / 2];
        if (i > 0 && (best == 0 || med[i] < med[best]))
            best = i;
    }
    double best_us = best > 0 && med[best] < med[0] ? med[best] : med[0];
    double secs_best = best_us * 1e-6;
    printf("%-16.16s %6lld %5lld %6lld %5d %5lld %5d %5d %9.2f %9.2f %+7.1f%% %8.1f %8.0f %7.0f%s%s\n",
           s->name, (long long)s->m, (long long)s->n, (long long)s->k, n, st.found, valid, bad,
           med[0], best_us, (med[0] / best_us - 1.0) * 100.0, p.flops / secs_best / 1e12,
           p.bytes / secs_best / 1e9, secs > 0 ? timed / secs : 0.0, st.capped ? " capped" : "",
           st.truncated ? " truncated" : "");
    if (best > 0 && med[best] < med[0]) {
        char text[512];
        gt_cu_lt_cfg_text(&re[best]->cfg, text, sizeof text);
        printf("    best %s\n", text);
    }
    int nb = n - nobuild > 0 ? n - nobuild : 1;
    printf("    per candidate: build %.0f us, validate %.0f us, time %.0f us (of which %.0f us in "
           "the timed repeats) -> %.0f cand/s\n",
           ph[0] * 1000 / (n > 0 ? n : 1), ph[1] * 1000 / nb, ph[2] * 1000 / (timed > 0 ? timed : 1),
           gpu_ms * 1000 / (timed > 0 ? timed : 1), secs > 0 ? timed / secs : 0.0);
    printf("    enum: %d heuristic, %d algo ids, %lld checks in %.2fs, %d returned, %d heuristic "
           "algos not re-created bit-exactly, %d cluster-blind pairs; %d build failures, %d run "
           "errors\n",
           st.heuristic, st.algo_ids, st.checks, st.seconds, st.returned, st.recreate_mismatch,
           st.cluster_blind, nobuild, runerr);
out:
    for (int i = 0; i < 16; i++)
        if (re[i])
            bk->release(re[i]);
    free(sc);
    bk->unprepare(pp);
    cJSON_Delete(cands);
    cJSON_Delete(base);
}

static int default_shapes(shape *out, int quick, int only_tokens)
{
    static const struct {
        const char *name;
        int64_t m, k;
    } layers[] = {{"qkv", 6144, 4096},
                  {"o", 4096, 4096},
                  {"gate_up", 28672, 4096},
                  {"down", 4096, 14336},
                  {"lm_head", 128256, 4096}};
    static const int64_t tokens[] = {1, 16, 128};
    int n = 0;
    for (size_t t = 0; t < 3; t++)
        for (size_t l = 0; l < 5; l++) {
            if (only_tokens ? tokens[t] != only_tokens : quick && t > 0)
                continue;
            snprintf(out[n].name, sizeof out[n].name, "%s n=%lld", layers[l].name,
                     (long long)tokens[t]);
            out[n].m = layers[l].m;
            out[n].n = tokens[t];
            out[n].k = layers[l].k;
            n++;
        }
    return n;
}

/* "MxNxK,MxNxK,..." */
static int parse_shapes(const char *s, shape *out, int cap)
{
    int n = 0;
    while (*s && n < cap) {
        long long m, nn, k;
        int used = 0;
        if (sscanf(s, "%lldx%lldx%lld%n", &m, &nn, &k, &used) != 3 || m < 1 || nn < 1 || k < 1)
            return -1;
        snprintf(out[n].name, sizeof out[n].name, "%lldx%lldx%lld", m, nn, k);
        out[n].m = m, out[n].n = nn, out[n].k = k;
        n++;
        s += used;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: gt-cuda-selftest [--device N] [--quick] [--coverage-only | --no-coverage |\n"
            "         --validation-only] [--big]\n"
            "         [--shapes MxNxK,...] [--max-cands N] [--min-time MS] [--repeats N]\n"
            "         [--top N] [--rounds N] [--tokens 1|16|128|2048] [--floor] [--gen | --mma [--keep-cache]]\n"
            "         [--sweep N [--csv FILE]]\n"
            "  --quick        coverage + validation + the n=1 shapes, at most 500 candidates each\n"
            "  --coverage-only  coverage and validation, no shapes; --no-coverage: shapes only\n"
            "  --big          also prepare/validate cost on 128256x8192x4096 and two more\n"
            "  --gen          only the generated gemv family vs cuBLASLt (n = 1 and 16, or\n"
            "                 --tokens); compiles into a fresh cache unless --keep-cache\n"
            "  --floor        one streaming pass over each decode weight matrix, timed like a\n"
            "                 candidate (with --gen: before it); the memory-bound ceiling\n"
            "  --sweep N      N kept gemv configs per decode shape quick-timed (model calibration);\n"
            "                 --csv FILE writes them\n"
            "  --mma          only the generated mma family vs cuBLASLt (n = 16, 128, 2048, or --tokens)\n"
            "  --tokens N     only the Llama-3-8B shapes with n = N tokens (--gen, --mma: any N)\n"
            "  --shapes       bf16 TN shapes (BLAS m x n x k) instead of Llama-3-8B\n"
            "  --max-cands    enumeration cap per shape (default 4000)\n"
            "  --min-time     quick-screen ms per repeat (default 0.5), --repeats (default 3)\n"
            "  --top/--rounds re-timed candidates (default 5) and rounds (default 5)\n");
}

int main(int argc, char **argv)
{
    opts o = {.device = 0, .coverage = 1, .validation = 1, .shapes = 1, .max_cands = 4000, .min_time_ms = 0.5,
              .repeats = 3, .top = 5, .rounds = 5};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            o.quick = 1;
            o.max_cands = 500;
        } else if (strcmp(a, "--coverage-only") == 0) {
            o.shapes = 0;
        } else if (strcmp(a, "--no-coverage") == 0) {
            o.coverage = o.validation = 0;
        } else if (strcmp(a, "--validation-only") == 0) {
            o.coverage = o.shapes = 0;
        } else if (strcmp(a, "--big") == 0) {
            o.big = 1;
        } else if (strcmp(a, "--gen") == 0) {
            o.gen = 1;
            o.coverage = o.validation = o.shapes = 0;
        } else if (strcmp(a, "--floor") == 0) {
            o.floor = 1;
            o.coverage = o.validation = o.shapes = 0;
        } else if (strcmp(a, "--mma") == 0) {
            o.mma = 1;
            o.coverage = o.validation = o.shapes = 0;
        } else if (strcmp(a, "--keep-cache") == 0) {
            o.keep_cache = 1;
        } else if (v && strcmp(a, "--sweep") == 0) {
            o.sweep = atoi(v), i++;
            o.coverage = o.validation = o.shapes = 0;
        } else if (v && strcmp(a, "--csv") == 0) {
            o.csv = v, i++;
        } else if (v && strcmp(a, "--device") == 0) {
            o.device = atoi(v), i++;
        } else if (v && strcmp(a, "--shapes") == 0) {
            o.shape_list = v, i++;
        } else if (v && strcmp(a, "--max-cands") == 0) {
            o.max_cands = atoi(v), i++;
        } else if (v && strcmp(a, "--min-time") == 0) {
            o.min_time_ms = atof(v), i++;
        } else if (v && strcmp(a, "--repeats") == 0) {
            o.repeats = atoi(v), i++;
        } else if (v && strcmp(a, "--top") == 0) {
            o.top = atoi(v), i++;
        } else if (v && strcmp(a, "--tokens") == 0) {
            o.tokens = atoi(v), i++;
        } else if (v && strcmp(a, "--rounds") == 0) {
            o.rounds = atoi(v), i++;
        } else {
            usage();
            return 2;
        }
    }
    if (o.top < 0 || o.top > 15 || o.rounds < 1 || o.rounds > 32 || o.max_cands < 1 || o.repeats < 1) {
        usage();
        return 2;
    }
    char err[512];
    gt_bk_ctx *ctx = NULL;
    gt_bk_device dev;
    if (bk->open(o.device, &ctx, &dev, err, sizeof err) != 0) {
        fprintf(stderr, "gt-cuda-selftest: %s\n", err);
        return 1;
    }
    gt_cuda_set_exit_on_sticky(ctx, 0); /* report a sticky error, do not exit like the worker */
    printf("device %d: %s, %s, %d SMs, %.1f GiB, %s\n", dev.index, dev.model, dev.arch, dev.units,
           (double)dev.mem_bytes / (1 << 30), dev.driver);
    int sm = atoi(dev.arch + 3);
    if (o.coverage)
        coverage(ctx, sm);
    if (o.validation)
        validation(ctx);
    if (o.big)
        big(ctx);
    if (o.floor)
        failures += gt_st_floor_bench(ctx);
    if (o.sweep > 0)
        failures += gt_st_sweep(bk, ctx, o.tokens, o.sweep, o.csv);
    if (o.gen) {
        gt_st_opts go = {.tokens = o.tokens, .max_cands = o.quick ? 500 : o.max_cands,
                                .min_time_ms = o.min_time_ms, .rounds = o.rounds,
                                .fresh_cache = !o.keep_cache};
        failures += gt_st_gemv_bench(bk, ctx, &go);
    }
    if (o.mma) {
        gt_st_opts go = {.tokens = o.tokens, .max_cands = o.max_cands, .min_time_ms = o.min_time_ms,
                                .rounds = o.rounds, .fresh_cache = !o.keep_cache};
        failures += gt_st_mma_bench(bk, ctx, &go);
    }
    if (o.shapes) {
        shape shapes[64];
        int ns = o.shape_list ? parse_shapes(o.shape_list, shapes, 64) : default_shapes(shapes, o.quick, o.tokens);
        if (ns <= 0) {
            fprintf(stderr, "gt-cuda-selftest: no shapes selected (--shapes '%s', --tokens %d)\n",
                    o.shape_list ? o.shape_list : "", o.tokens);
            bk->close(ctx);
            return 2;
        }
        printf("\n== bf16 TN shapes: quick screen min_time %.2f ms x %d repeats; top %d re-timed "
               "with the baseline over %d interleaved rounds (5 ms x 5) ==\n",
               o.min_time_ms, o.repeats, o.top, o.rounds);
        printf("%-16s %6s %5s %6s %5s %5s %5s %5s %9s %9s %8s %8s %8s %7s\n", "shape", "m", "n", "k",
               "cands", "found", "valid", "wrong", "base_us", "best_us", "uplift", "TFLOP/s",
               "GB/s", "cand/s");
        for (int i = 0; i < ns; i++) {
            shape_one(ctx, &o, &shapes[i]);
            fflush(stdout);
        }
    }
    bk->close(ctx);
    printf("\n%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
}
