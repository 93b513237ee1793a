/* lt_user.c: a cuBLASLt "application" (libgt_ltuser.so, linked against the
 * fake libcublasLt) whose GEMMs tests/unit/test_libgemmtune.c runs under
 * libgemmtune-preload.so. Each GEMM asks the heuristic, runs
 * cublasLtMatmul with its first answer and prints one line:
 *   G<i>.<rep> n=<results> algos=<data[0] of each> ran=<data[0] run>
 *
 *   G1 bf16 TN 6144x1x4096, tight ld, f32 compute        req 3, 3 reps
 *   G2 G1 with ldb 4160 (a padded view)                   req 3
 *   G3 f16 NN 256x128x64, GELU_BIAS f16 bias, alpha 0.5   req 3, 2 reps
 *   G4 f32/tf32 TN 128x64x32 batch 4 tight strides, beta 1, 2 reps
 *   G5 G1 with row-major layouts (not modelled)           req 3 */
#include <cublasLt.h>
#include <stdio.h>
#include <string.h>

uint64_t fake_cublaslt_last_algo(void);

typedef struct gemm {
    cudaDataType_t t, ct;          /* A/B type, C/D type */
    cublasComputeType_t compute;
    int ta, tb;
    uint64_t m, n, k;
    int64_t lda, ldb, ldc;
    int32_t batch;
    uint32_t epi;
    int32_t bias_type;
    float alpha, beta;
    int row_major;
    int reps;
} gemm;

static int layout(cublasLtMatrixLayout_t *l, cudaDataType_t t, uint64_t r, uint64_t c, int64_t ld,
                  int32_t batch, int row_major)
{
    if (cublasLtMatrixLayoutCreate(l, t, r, c, ld) != CUBLAS_STATUS_SUCCESS)
        return -1;
    if (batch > 1) {
        int64_t stride = ld * (int64_t)c;
        if (cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                             sizeof batch) ||
            cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                             &stride, sizeof stride))
            return -1;
    }
    if (row_major) {
        int32_t o = CUBLASLT_ORDER_ROW;
        if (cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_ORDER, &o, sizeof o))
            return -1;
    }
    return 0;
}

static int run(cublasLtHandle_t h, int id, const gemm *g)
{
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c, d;
    cublasLtMatmulPreference_t pref;
    if (cublasLtMatmulDescCreate(&op, g->compute, CUDA_R_32F))
        return -1;
    int32_t ta = g->ta, tb = g->tb;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    if (g->epi) {
        const void *bias = (const void *)(uintptr_t)4096;
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &g->epi, sizeof g->epi);
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &g->bias_type,
                                       sizeof g->bias_type);
    }
    int an = g->ta == CUBLAS_OP_N, bn = g->tb == CUBLAS_OP_N;
    if (layout(&a, g->t, an ? g->m : g->k, an ? g->k : g->m, g->lda, g->batch, g->row_major) ||
        layout(&b, g->t, bn ? g->k : g->n, bn ? g->n : g->k, g->ldb, g->batch, g->row_major) ||
        layout(&c, g->ct, g->m, g->n, g->ldc, g->batch, g->row_major) ||
        layout(&d, g->ct, g->m, g->n, g->ldc, g->batch, g->row_major))
        return -1;
    cublasLtMatmulPreferenceCreate(&pref);
    uint64_t ws = 32u << 20;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                         sizeof ws);
    for (int rep = 0; rep < g->reps; rep++) {
        cublasLtMatmulHeuristicResult_t res[3];
        int n = 0;
        if (cublasLtMatmulAlgoGetHeuristic(h, op, a, b, c, d, pref, 3, res, &n) ||
            n < 1)
            return -1;
        printf("G%d.%d n=%d algos=", id, rep + 1, n);
        for (int i = 0; i < n; i++)
            printf("%s%llu", i ? "," : "", (unsigned long long)res[i].algo.data[0]);
        /* Device pointers are never touched by the fake. */
        void *p = (void *)(uintptr_t)65536;
        if (cublasLtMatmul(h, op, &g->alpha, p, a, p, b, &g->beta, p, c, p, d, &res[0].algo, p,
                           res[0].workspaceSize, 0))
            return -1;
        printf(" ran=%llu\n", (unsigned long long)fake_cublaslt_last_algo());
    }
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(c);
    cublasLtMatrixLayoutDestroy(d);
    cublasLtMatmulDescDestroy(op);
    return 0;
}

int lt_user_run(void)
{
    const gemm g[] = {
        {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUBLAS_OP_T, CUBLAS_OP_N, 6144, 1, 4096,
         4096, 4096, 6144, 1, 0, -1, 1.0f, 0.0f, 0, 3},
        {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUBLAS_OP_T, CUBLAS_OP_N, 6144, 1, 4096,
         4096, 4160, 6144, 1, 0, -1, 1.0f, 0.0f, 0, 1},
        {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUBLAS_OP_N, CUBLAS_OP_N, 256, 128, 64, 256,
         64, 256, 1, CUBLASLT_EPILOGUE_GELU_BIAS, CUDA_R_16F, 0.5f, 0.0f, 0, 2},
        {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_OP_T, CUBLAS_OP_N, 128, 64,
         32, 32, 32, 128, 4, 0, -1, 1.0f, 1.0f, 0, 2},
        {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUBLAS_OP_T, CUBLAS_OP_N, 6144, 1, 4096,
         4096, 4096, 6144, 1, 0, -1, 1.0f, 0.0f, 1, 1},
    };
    cublasLtHandle_t h;
    if (cublasLtCreate(&h))
        return 1;
    for (int i = 0; i < (int)(sizeof g / sizeof g[0]); i++)
        if (run(h, i + 1, &g[i]) != 0) {
            printf("G%d failed\n", i + 1);
            return 1;
        }
    cublasLtDestroy(h);
    fflush(stdout);
    return 0;
}
