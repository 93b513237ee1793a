/* lookup_example.c: a real cublasLtMatmul with gemmtune's tuned algorithm.
 *
 *   gemmtune-lookup-example tuned.db [M N K]      (default 6144 1 4096)
 *
 * Runs D = A^T B in bf16 with f32 accumulation, BLAS column-major "TN"
 * (a Linear layer: M output features, N tokens, K input features), the way
 * PyTorch calls cuBLASLt. The algorithm comes from libgemmtune when the
 * export holds a tuned config for this GEMM on this GPU model, else from
 * cuBLASLt's heuristic (what an untuned program runs). When tuned, both
 * run on the same inputs: the example prints their times and the largest
 * difference between their outputs. Built with the library when CUDA is
 * found (build/lib/gemmtune-lookup-example); needs a GPU. */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmtune.h"

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CKB(x)                                                                                     \
    do {                                                                                           \
        cublasStatus_t s_ = (x);                                                                   \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            fprintf(stderr, "%s: %s\n", #x, cublasLtGetStatusName(s_));                            \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

typedef struct gemm {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
    void *A, *B, *D, *ws;
    size_t ws_size;
} gemm;

/* Median time (us) of one call of algo over 7 rounds of 20. */
static double time_algo(gemm *g, const cublasLtMatmulAlgo_t *algo, size_t ws)
{
    const float alpha = 1.0f, beta = 0.0f;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    double t[7];
    for (int r = -1; r < 7; r++) {
        CK(cudaEventRecord(e0, 0));
        for (int i = 0; i < 20; i++)
            CKB(cublasLtMatmul(g->lt, g->op, &alpha, g->A, g->a, g->B, g->b, &beta, g->D, g->d,
                               g->D, g->d, algo, g->ws, ws, 0));
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 0)
            t[r] = ms * 1000.0 / 20;
    }
    for (int i = 0; i < 7; i++) /* sort */
        for (int j = i + 1; j < 7; j++)
            if (t[j] < t[i]) {
                double x = t[i];
                t[i] = t[j];
                t[j] = x;
            }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return t[3];
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 5) {
        fprintf(stderr, "usage: %s tuned.db [M N K]\n", argv[0]);
        return 2;
    }
    int64_t m = argc == 5 ? atoll(argv[2]) : 6144, n = argc == 5 ? atoll(argv[3]) : 1,
            k = argc == 5 ? atoll(argv[4]) : 4096;
    char err[512];
    gt_db *db = gt_db_open(argv[1], err, sizeof err);
    if (!db) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));

    /* The GEMM as gemmtune describes it ... */
    gt_gemm_desc desc;
    gt_gemm_desc_init(&desc, m, n, k, "bf16");
    desc.transa = 'T';
    desc.compute_type = gt_db_cuda_compute(CUBLAS_COMPUTE_32F);
    char key[512];
    if (gt_db_key(&desc, key, sizeof key, err, sizeof err) < 0) {
        fprintf(stderr, "bad GEMM: %s\n", err);
        return 1;
    }
    printf("GEMM     %s\ndevice   %s\n", key, prop.name);

    /* ... and as cuBLASLt does. */
    gemm g;
    memset(&g, 0, sizeof g);
    CKB(cublasLtCreate(&g.lt));
    CKB(cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    int32_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CKB(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CKB(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    CKB(cublasLtMatrixLayoutCreate(&g.a, CUDA_R_16BF, (uint64_t)k, (uint64_t)m, k));
    CKB(cublasLtMatrixLayoutCreate(&g.b, CUDA_R_16BF, (uint64_t)k, (uint64_t)n, k));
    CKB(cublasLtMatrixLayoutCreate(&g.d, CUDA_R_16BF, (uint64_t)m, (uint64_t)n, m));
    g.ws_size = (size_t)32 << 20;

    cublasLtMatmulAlgo_t tuned;
    size_t tuned_ws = 0;
    int rc = gt_db_cublaslt_algo(db, g.lt, &desc, prop.name, &tuned, &tuned_ws);
    /* The same answer from our own descriptors (what the preload shim does). */
    cublasLtMatmulAlgo_t tuned2;
    size_t ws2 = 0;
    int rc2 = gt_db_cublaslt_algo_for(db, g.lt, prop.name, g.op, g.a, g.b, g.d, g.d, 1.0, 0.0,
                                      &tuned2, &ws2);
    printf("gemmtune %s (from our descriptors: %s)\n", gt_db_strerror(rc), gt_db_strerror(rc2));
    if (rc == GT_DB_OK) {
        gt_db_result r;
        gt_db_lookup(db, &desc, "cuda", prop.name, &r);
        printf("config   %s\ntuning   %.2f us tuned vs %.2f us default (%.3fx), workspace %zu\n",
               r.config, r.time_us, r.baseline_us, r.uplift, tuned_ws);
        if (tuned_ws > g.ws_size)
            rc = GT_DB_REJECTED;
    }

    /* The untuned choice: cuBLASLt's heuristic with a 32 MiB workspace. */
    cublasLtMatmulPreference_t pref;
    CKB(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t wsmax = g.ws_size;
    CKB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &wsmax, sizeof wsmax));
    cublasLtMatmulHeuristicResult_t heur;
    int nh = 0;
    CKB(cublasLtMatmulAlgoGetHeuristic(g.lt, g.op, g.a, g.b, g.d, g.d, pref, 1, &heur, &nh));
    if (nh < 1) {
        fprintf(stderr, "cuBLASLt has no algorithm for this GEMM\n");
        return 1;
    }

    size_t na = (size_t)(m * k), nb = (size_t)(k * n), nd = (size_t)(m * n);
    uint16_t *h = malloc((na > nb ? na : nb) * 2);
    CK(cudaMalloc(&g.A, na * 2));
    CK(cudaMalloc(&g.B, nb * 2));
    CK(cudaMalloc(&g.D, nd * 2));
    CK(cudaMalloc(&g.ws, g.ws_size));
    srand(1);
    for (size_t i = 0; i < na; i++)
        h[i] = to_bf16((float)(rand() % 255 - 127) / 256.0f);
    CK(cudaMemcpy(g.A, h, na * 2, cudaMemcpyHostToDevice));
    for (size_t i = 0; i < nb; i++)
        h[i] = to_bf16((float)(rand() % 255 - 127) / 256.0f);
    CK(cudaMemcpy(g.B, h, nb * 2, cudaMemcpyHostToDevice));
    free(h);

    uint16_t *out_h = malloc(nd * 2), *out_t = malloc(nd * 2);
    double t_h = time_algo(&g, &heur.algo, heur.workspaceSize);
    CK(cudaMemcpy(out_h, g.D, nd * 2, cudaMemcpyDeviceToHost));
    printf("heuristic %.2f us\n", t_h);
    if (rc == GT_DB_OK) {
        double t_t = time_algo(&g, &tuned, tuned_ws);
        CK(cudaMemcpy(out_t, g.D, nd * 2, cudaMemcpyDeviceToHost));
        double maxd = 0, maxv = 0;
        for (size_t i = 0; i < nd; i++) {
            double a = from_bf16(out_h[i]), b = from_bf16(out_t[i]);
            maxd = fmax(maxd, fabs(a - b));
            maxv = fmax(maxv, fabs(a));
        }
        printf("tuned     %.2f us (%.3fx), max |tuned - heuristic| / max |heuristic| = %.2e\n",
               t_t, t_h / t_t, maxv > 0 ? maxd / maxv : maxd);
    } else {
        printf("tuned     - (falling back to the heuristic)\n");
    }
    free(out_h);
    free(out_t);
    cudaFree(g.A);
    cudaFree(g.B);
    cudaFree(g.D);
    cudaFree(g.ws);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(g.a);
    cublasLtMatrixLayoutDestroy(g.b);
    cublasLtMatrixLayoutDestroy(g.d);
    cublasLtMatmulDescDestroy(g.op);
    cublasLtDestroy(g.lt);
    gt_db_close(db);
    return 0;
}
