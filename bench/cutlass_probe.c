/* gt-cutlass-probe: libgemmtune_cutlass's kernels (cutlass/gt_cutlass.h, opened through
 * cuda/gt_cu_cutlass.h as the worker will) against cuBLASLt's heuristic list, in one process
 * under the same clocks: the study behind issue 19's CUTLASS road
 * (bench/results/h100_39_cutlass_probe.txt).
 *
 *   gt-cutlass-probe [--lib PATH] [M N K]...     (default: the 15 Llama-3-8B shapes, n >= 128)
 *
 * Each GEMM is bf16 TN (A k x m, B k x n, both K-contiguous; D m x n column-major), f32
 * accumulation, random inputs in rotating sets (as many as fit 200 MB, at most 4, so a pass
 * over them leaves L2). cuBLASLt: every algo of its heuristic list (the first is the
 * default), the median of 5 CUDA-event blocks each; its best is the reference. CUTLASS: every
 * kernel at every swizzle (1, 2, 4, 8), raster order (M, N) and, for stream-K kernels, split
 * count 1-4. Every configuration is checked before it is timed: D NaN-poisoned, one run, 8
 * whole columns of D against cuBLASLt's (relative error < 1e-2, no NaN left); one that fails
 * is reported and not timed. Prints each kernel's best, then per shape the CUTLASS best
 * against cuBLASLt's best. Exit 0 when every shape ran. */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_bk_cpu.h"
#include "gt_cu_cutlass.h"

#define SETS_MAX 4
#define SAMPLE_COLS 8

typedef struct shape {
    int m, n, k;
} shape;

typedef struct bufs {
    int sets;
    void *a[SETS_MAX], *b[SETS_MAX], *d[SETS_MAX];
} bufs;

static int ck(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    fprintf(stderr, "gt-cutlass-probe: %s: %s\n", what, cudaGetErrorString(e));
    return -1;
}

/* n random bf16 values in [-1, 1] into device memory at p */
static int fill(void *p, size_t n, uint64_t seed)
{
    uint16_t *h = malloc(n * 2);
    if (!h)
        return -1;
    gt_cpu_fill_random(h, GT_DT_BF16, (int64_t)n, &seed);
    int rc = ck(cudaMemcpy(p, h, n * 2, cudaMemcpyHostToDevice), "copy inputs");
    free(h);
    return rc;
}

static void free_bufs(bufs *b)
{
    for (int i = 0; i < b->sets; i++)
        cudaFree(b->a[i]), cudaFree(b->b[i]), cudaFree(b->d[i]);
    b->sets = 0;
}

static int alloc_bufs(bufs *b, const shape *s)
{
    size_t na = (size_t)s->m * s->k, nb = (size_t)s->k * s->n, nd = (size_t)s->m * s->n;
    size_t one = (na + nb + nd) * 2;
    int sets = (int)((200u << 20) / one) + 1;
    memset(b, 0, sizeof *b);
    for (int i = 0; i < (sets < SETS_MAX ? sets : SETS_MAX); i++) {
        b->sets = i + 1; /* a set's pointers start NULL: free_bufs frees what it got */
        if (ck(cudaMalloc(&b->a[i], na * 2), "alloc A") || ck(cudaMalloc(&b->b[i], nb * 2), "alloc B") ||
            ck(cudaMalloc(&b->d[i], nd * 2), "alloc D") || fill(b->a[i], na, 1 + i) || fill(b->b[i], nb, 100 + i))
            goto fail;
    }
    return 0;
fail:
    free_bufs(b);
    return -1;
}

/* SAMPLE_COLS whole columns of D (m x n, column-major) into h (m * SAMPLE_COLS) */
static int sample(const void *d, const shape *s, uint16_t *h)
{
    for (int c = 0; c < SAMPLE_COLS; c++) {
        size_t col = (size_t)c * (size_t)(s->n - 1) / (SAMPLE_COLS - 1);
        if (ck(cudaMemcpy(h + (size_t)c * s->m, (const uint16_t *)d + col * s->m, (size_t)s->m * 2,
                          cudaMemcpyDeviceToHost),
               "copy D"))
            return -1;
    }
    return 0;
}

/* relative error of the sampled columns against the reference's (NAN when one stayed NaN) */
static double rel_err(const uint16_t *got, const uint16_t *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double g = gt_cpu_bf16_to_f32(got[i]), r = gt_cpu_bf16_to_f32(ref[i]);
        if (isnan(g))
            return NAN;
        num += (g - r) * (g - r), den += r * r;
    }
    return den > 0 ? sqrt(num / den) : NAN;
}

typedef int (*call_fn)(void *ctx, int set);

/* median over 5 blocks of reps calls (each on the next set) of us per call; -1 on error */
static double time_us(call_fn f, void *ctx, int sets, int reps)
{
    cudaEvent_t e0, e1;
    double t[5];
    if (ck(cudaEventCreate(&e0), "event") || ck(cudaEventCreate(&e1), "event"))
        return -1;
    for (int i = 0; i < 3; i++)
        if (f(ctx, i % sets))
            return -1;
    for (int r = 0; r < 5; r++) {
        float ms = 0;
        cudaEventRecord(e0, 0);
        for (int i = 0; i < reps; i++)
            if (f(ctx, i % sets))
                return -1;
        cudaEventRecord(e1, 0);
        if (ck(cudaEventSynchronize(e1), "timing") || ck(cudaEventElapsedTime(&ms, e0, e1), "timing"))
            return -1;
        t[r] = ms * 1e3 / reps;
    }
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    for (int i = 1; i < 5; i++) /* insertion sort of 5 */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1], t[j - 1] = x;
        }
    return t[2];
}

typedef struct lt_call {
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    const cublasLtMatmulAlgo_t *algo;
    void *ws;
    size_t ws_bytes;
    bufs *b;
} lt_call;

static int lt_run(void *v, int set)
{
    lt_call *c = v;
    float alpha = 1, beta = 0;
    return cublasLtMatmul(c->h, c->op, &alpha, c->b->a[set], c->la, c->b->b[set], c->lb, &beta, c->b->d[set],
                          c->ld, c->b->d[set], c->ld, c->algo, c->ws, c->ws_bytes, 0) != CUBLAS_STATUS_SUCCESS;
}

typedef struct cl_call {
    const gt_cu_cutlass *lib;
    int kernel;
    gt_cutlass_args args;
    void *ws;
    size_t ws_bytes;
    bufs *b;
} cl_call;

static int cl_run(void *v, int set)
{
    cl_call *c = v;
    char err[256];
    c->args.a = c->b->a[set], c->args.b = c->b->b[set], c->args.d = c->b->d[set];
    if (c->lib->run(c->kernel, &c->args, c->ws, c->ws_bytes, NULL, err, sizeof err)) {
        fprintf(stderr, "gt-cutlass-probe: %s\n", err);
        return -1;
    }
    return 0;
}

static int probe(const gt_cu_cutlass *lib, cublasLtHandle_t h, const shape *s, void *ws, size_t ws_bytes)
{
    bufs b;
    int rc = -1;
    uint16_t *ref = malloc((size_t)s->m * SAMPLE_COLS * 2), *got = malloc((size_t)s->m * SAMPLE_COLS * 2);
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, ld = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    if (!ref || !got || alloc_bufs(&b, s)) {
        free(ref), free(got);
        return -1;
    }
    double flop = 2.0 * s->m * s->n * s->k;
    int reps = (int)(2e12 / flop * 20);
    reps = reps < 3 ? 3 : reps > 50 ? 50 : reps;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasLtMatmulHeuristicResult_t hr[32];
    int nr = 0;
    if (cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F) ||
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) ||
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) ||
        cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, s->k, s->m, s->k) ||
        cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, s->k, s->n, s->k) ||
        cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, s->m, s->n, s->m) || cublasLtMatmulPreferenceCreate(&pref) ||
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                             sizeof ws_bytes) ||
        cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, ld, ld, pref, 32, hr, &nr) || nr < 1) {
        fprintf(stderr, "gt-cutlass-probe: %dx%dx%d: cuBLASLt has no algorithm\n", s->m, s->n, s->k);
        goto out;
    }
    lt_call lc = {h, op, la, lb, ld, NULL, ws, ws_bytes, &b};
    double lt_def = -1, lt_best = 1e30;
    int lt_bi = -1;
    for (int i = 0; i < nr; i++) {
        lc.algo = &hr[i].algo;
        double t = time_us(lt_run, &lc, b.sets, reps);
        (void)cudaGetLastError();
        if (t <= 0)
            continue;
        if (i == 0)
            lt_def = t;
        if (t < lt_best)
            lt_best = t, lt_bi = i;
    }
    if (lt_bi < 0)
        goto out;
    /* the reference: cuBLASLt's best on set 0 */
    lc.algo = &hr[lt_bi].algo;
    if (lt_run(&lc, 0) || ck(cudaDeviceSynchronize(), "reference") || sample(b.d[0], s, ref))
        goto out;
    /* the GEMM as the tuner sees it: its arguments come from the worker's own mapping */
    gt_problem prob;
    gt_problem_init(&prob, s->m, s->n, s->k);
    prob.trans_a = 'T', prob.trans_b = 'N';
    prob.a_type = prob.b_type = prob.c_type = prob.d_type = GT_DT_BF16;
    prob.beta = 0;
    gt_problem_default_ld(&prob);
    gt_problem_finish(&prob);
    double cl_best = 1e30;
    char best_name[64] = "-";
    int bsw = 0, bra = 0, bsp = 0, bad = 0;
    for (int kk = 0; kk < lib->count(); kk++) {
        const gt_cutlass_kernel *kd = lib->kernel_at(kk);
        int sk = !strcmp(kd->scheduler, "streamk");
        double kbest = 1e30;
        int ksw = 0, kra = 0, ksp = 0;
        for (int sw = 1; sw <= 8; sw *= 2)
            for (int ra = 1; ra <= 2; ra++)
                for (int sp = 1; sp <= (sk ? 4 : 1); sp++) {
                    cl_call cc = {lib, kk, {0}, ws, ws_bytes, &b};
                    gt_cu_cutlass_cfg cfg = {.swizzle = sw, .raster = ra, .splits = sp};
                    snprintf(cfg.kernel, sizeof cfg.kernel, "%s", kd->name);
                    size_t need = 0;
                    char err[256];
                    if (gt_cu_cutlass_args_for(&prob, &cfg, 0, &cc.args, err, sizeof err) ||
                        lib->check(kk, &cc.args, &need, err, sizeof err) || need > ws_bytes)
                        continue;
                    /* checked before timed: poisoned D, one run, the sampled columns */
                    if (ck(cudaMemset(b.d[0], 0xff, (size_t)s->m * s->n * 2), "poison") || cl_run(&cc, 0) ||
                        ck(cudaDeviceSynchronize(), kd->name) || sample(b.d[0], s, got))
                        goto out;
                    double e = rel_err(got, ref, (size_t)s->m * SAMPLE_COLS);
                    if (!(e < 1e-2)) {
                        printf("  %dx%dx%d %-22s swz %d ro %d sp %d: INVALID (rel err %g): not timed\n", s->m,
                               s->n, s->k, kd->name, sw, ra, sp, e);
                        bad++;
                        continue;
                    }
                    double t = time_us(cl_run, &cc, b.sets, reps);
                    if (t > 0 && t < kbest)
                        kbest = t, ksw = sw, kra = ra, ksp = sp;
                }
        if (kbest < 1e30)
            printf("  %dx%dx%d %-22s %9.1f us  %.3f of lt_best (swz %d ro %d sp %d)\n", s->m, s->n, s->k, kd->name,
                   kbest, lt_best / kbest, ksw, kra, ksp);
        if (kbest < cl_best) {
            cl_best = kbest, bsw = ksw, bra = kra, bsp = ksp;
            snprintf(best_name, sizeof best_name, "%s", kd->name);
        }
    }
    printf("SHAPE %dx%dx%d lt_default %.1f lt_best %.1f (algo %d of %d) cutlass_best %.1f %s swz %d ro %d sp %d"
           "  ratio %.3f  %.0f TFLOP/s  invalid %d\n",
           s->m, s->n, s->k, lt_def, lt_best, lt_bi, nr, cl_best, best_name, bsw, bra, bsp, lt_best / cl_best,
           flop / cl_best / 1e6, bad);
    fflush(stdout);
    rc = 0;
out:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (la)
        cublasLtMatrixLayoutDestroy(la);
    if (lb)
        cublasLtMatrixLayoutDestroy(lb);
    if (ld)
        cublasLtMatrixLayoutDestroy(ld);
    if (op)
        cublasLtMatmulDescDestroy(op);
    free_bufs(&b);
    free(ref), free(got);
    return rc;
}

int main(int argc, char **argv)
{
    static const shape llama[] = {{6144, 128, 4096},   {4096, 128, 4096},   {28672, 128, 4096},
                                  {4096, 128, 14336},  {128256, 128, 4096}, {6144, 2048, 4096},
                                  {4096, 2048, 4096},  {28672, 2048, 4096}, {4096, 2048, 14336},
                                  {128256, 2048, 4096}, {6144, 8192, 4096}, {4096, 8192, 4096},
                                  {28672, 8192, 4096}, {4096, 8192, 14336}, {128256, 8192, 4096}};
    const char *path = NULL;
    int i = 1, rc = 1, ns = 0;
    shape *shapes = NULL;
    if (argc > 2 && !strcmp(argv[1], "--lib"))
        path = argv[2], i = 3;
    if ((argc - i) % 3) {
        fprintf(stderr, "usage: gt-cutlass-probe [--lib PATH] [M N K]...\n");
        return 2;
    }
    ns = (argc - i) / 3;
    if (ns) {
        shapes = calloc((size_t)ns, sizeof *shapes);
        if (!shapes)
            return 1;
        for (int j = 0; j < ns; j++) {
            shapes[j] = (shape){atoi(argv[i + 3 * j]), atoi(argv[i + 3 * j + 1]), atoi(argv[i + 3 * j + 2])};
            if (shapes[j].m < 1 || shapes[j].n < 1 || shapes[j].k < 1) {
                fprintf(stderr, "gt-cutlass-probe: bad shape %d\n", j + 1);
                free(shapes);
                return 2;
            }
        }
    }
    gt_cu_cutlass lib;
    char err[512];
    cublasLtHandle_t h = NULL;
    void *ws = NULL;
    size_t ws_bytes = 256u << 20;
    if (gt_cu_cutlass_open(&lib, path, err, sizeof err)) {
        fprintf(stderr, "gt-cutlass-probe: %s\n", err);
        free(shapes);
        return 1;
    }
    if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "gt-cutlass-probe: cuBLASLt could not start (no GPU?)\n");
        goto out;
    }
    if (ck(cudaMalloc(&ws, ws_bytes), "workspace"))
        goto out;
    rc = 0;
    for (int j = 0; j < (ns ? ns : (int)(sizeof llama / sizeof llama[0])); j++)
        if (probe(&lib, h, ns ? &shapes[j] : &llama[j], ws, ws_bytes))
            rc = 1;
out:
    cudaFree(ws);
    if (h)
        cublasLtDestroy(h);
    gt_cu_cutlass_close(&lib);
    free(shapes);
    return rc;
}
