/* gemmtune_cuda.c: libgemmtune's cuBLASLt API (CUDA builds): a tuned cuda
 * config as a checked cublasLtMatmulAlgo_t. Linked against libcublasLt; the
 * preload shim does not contain this file (it reaches the application's
 * cuBLASLt through dlsym instead). */
#include <cublasLt.h>

#include "gemmtune.h"
#include "gt_ltcuda.h"

#include <stdio.h>
#include <string.h>

#define KEY_MAX 512

static const gt_lt_api k_api = {
    .layout_get = cublasLtMatrixLayoutGetAttribute,
    .desc_get = cublasLtMatmulDescGetAttribute,
    .pref_get = cublasLtMatmulPreferenceGetAttribute,
    .algo_init = cublasLtMatmulAlgoInit,
    .cfg_set = cublasLtMatmulAlgoConfigSetAttribute,
    .algo_check = cublasLtMatmulAlgoCheck,
    .cap_get = cublasLtMatmulAlgoCapGetAttribute,
};

/* Placeholder device pointers for descriptors used only by AlgoCheck, which
 * looks at their alignment (what the cuda worker's enumeration does). */
#define PLACEHOLDER ((const void *)(uintptr_t)4096)

typedef struct descs {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t l[4];
} descs;

static void descs_free(descs *d)
{
    for (int i = 0; i < 4; i++)
        if (d->l[i])
            (void)cublasLtMatrixLayoutDestroy(d->l[i]);
    if (d->op)
        (void)cublasLtMatmulDescDestroy(d->op);
    memset(d, 0, sizeof *d);
}

static int cuda_type(gt_dtype t, cudaDataType_t *out)
{
    static const int32_t codes[] = {GT_LT_R_32F,  GT_LT_R_64F,     GT_LT_R_16F,
                                    GT_LT_R_16BF, GT_LT_R_8F_E4M3, GT_LT_R_8F_E5M2,
                                    GT_LT_R_8I,   GT_LT_R_32I};
    if (t == GT_DT_TF32)
        t = GT_DT_F32;
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (gt_lt_dtype(codes[i]) == t) {
            *out = (cudaDataType_t)codes[i];
            return 0;
        }
    return -1;
}

static int layout(cublasLtMatrixLayout_t *l, cudaDataType_t t, int64_t rows, int64_t cols,
                  int64_t ld, int64_t batch, int64_t stride)
{
    if (cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld) !=
        CUBLAS_STATUS_SUCCESS)
        return -1;
    if (batch > 1) {
        int32_t bc = (int32_t)batch;
        if (cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc,
                                             sizeof bc) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                             &stride, sizeof stride) != CUBLAS_STATUS_SUCCESS)
            return -1;
    }
    return 0;
}

#define SETD(attr, v)                                                                              \
    (cublasLtMatmulDescSetAttribute(d->op, attr, &(v), sizeof(v)) == CUBLAS_STATUS_SUCCESS)

/* The descriptors the cuda worker creates for p (worker/cuda/cuda_map.c:
 * gt_cuda_desc_create), with placeholder pointers. */
static int descs_create(const gt_problem *p, descs *d)
{
    memset(d, 0, sizeof *d);
    cudaDataType_t t[4], scale;
    const gt_dtype pt[4] = {p->a_type, p->b_type, p->c_type, p->d_type};
    for (int i = 0; i < 4; i++)
        if (cuda_type(pt[i], &t[i]) != 0)
            return -1;
    if (cuda_type(p->scale_type, &scale) != 0)
        return -1;
    cublasComputeType_t ct;
    switch (p->compute_type) {
    case GT_DT_F32: ct = CUBLAS_COMPUTE_32F; break;
    case GT_DT_TF32: ct = CUBLAS_COMPUTE_32F_FAST_TF32; break;
    case GT_DT_F16: ct = CUBLAS_COMPUTE_16F; break;
    case GT_DT_F64: ct = CUBLAS_COMPUTE_64F; break;
    case GT_DT_I32: ct = CUBLAS_COMPUTE_32I; break;
    default: return -1;
    }
    if (cublasLtMatmulDescCreate(&d->op, ct, scale) != CUBLAS_STATUS_SUCCESS)
        goto fail;
    int32_t ta = p->trans_a == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
    int32_t tb = p->trans_b == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (!SETD(CUBLASLT_MATMUL_DESC_TRANSA, ta) || !SETD(CUBLASLT_MATMUL_DESC_TRANSB, tb))
        goto fail;
    int act = !strcmp(p->activation, "relu") ? 1 : !strcmp(p->activation, "gelu") ? 2 : 0;
    static const uint32_t epi[2][3] = {
        {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_RELU, CUBLASLT_EPILOGUE_GELU},
        {CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_RELU_BIAS, CUBLASLT_EPILOGUE_GELU_BIAS}};
    uint32_t e = epi[p->bias != 0][act];
    if (e != CUBLASLT_EPILOGUE_DEFAULT && !SETD(CUBLASLT_MATMUL_DESC_EPILOGUE, e))
        goto fail;
    if (p->bias) {
        const void *bp = PLACEHOLDER;
        cudaDataType_t bt;
        if (cuda_type(p->bias_type, &bt) != 0)
            goto fail;
        int32_t bt32 = bt;
        if (!SETD(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bp) ||
            !SETD(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bt32))
            goto fail;
    }
    int fp8 = p->a_type == GT_DT_F8E4M3 || p->a_type == GT_DT_F8E5M2;
    if (fp8) {
        const void *sp = PLACEHOLDER;
        if (!SETD(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, sp) ||
            !SETD(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, sp))
            goto fail;
        if ((p->d_type == GT_DT_F8E4M3 || p->d_type == GT_DT_F8E5M2) &&
            !SETD(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, sp))
            goto fail;
    }
    int an = p->trans_a == 'N', bn = p->trans_b == 'N';
    if (layout(&d->l[0], t[0], an ? p->m : p->k, an ? p->k : p->m, p->lda, p->batch,
               p->stride_a) ||
        layout(&d->l[1], t[1], bn ? p->k : p->n, bn ? p->n : p->k, p->ldb, p->batch,
               p->stride_b) ||
        layout(&d->l[2], t[2], p->m, p->n, p->ldc, p->batch, p->stride_c) ||
        layout(&d->l[3], t[3], p->m, p->n, p->ldd, p->batch, p->stride_d))
        goto fail;
    return 0;
fail:
    descs_free(d);
    return -1;
}

/* Looks key up and re-creates + checks its algo against the descriptors. */
static int make(const gt_db *db, cublasLtHandle_t h, const char *model, const char *key,
                cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, cublasLtMatmulAlgo_t *out,
                size_t *workspace)
{
    gt_lt_cfg cfg;
    int rc = gt_db_cuda_cfg(db, key, model, &cfg);
    if (rc != GT_DB_OK)
        return rc;
    gt_lt_desc t;
    if (gt_lt_describe(&k_api, op, a, b, c, d, &t) != 0)
        return GT_DB_EINVAL;
    gt_lt_algo al;
    char err[200];
    if (gt_lt_algo_make(&k_api, h, &t, &cfg, op, a, b, c, d, &al, err, sizeof err) != 0)
        return GT_DB_REJECTED;
    *out = al.algo;
    if (workspace)
        *workspace = al.workspace;
    return GT_DB_OK;
}

int gt_db_cublaslt_algo(const gt_db *db, cublasLtHandle_t handle, const gt_gemm_desc *gd,
                        const char *device_model, cublasLtMatmulAlgo_t *out, size_t *workspace)
{
    char key[KEY_MAX], err[200];
    gt_problem p;
    if (!db || !handle || !gd || !device_model || !out)
        return GT_DB_EINVAL;
    if (gt_db_desc_problem(gd, &p, err, sizeof err) != 0)
        return GT_DB_EINVAL;
    int n = gt_problem_key(&p, key, sizeof key);
    if (n < 0 || (size_t)n >= sizeof key)
        return GT_DB_EINVAL;
    gt_lt_cfg cfg;
    int rc = gt_db_cuda_cfg(db, key, device_model, &cfg);
    if (rc != GT_DB_OK)
        return rc;
    descs d;
    if (descs_create(&p, &d) != 0)
        return GT_DB_EINVAL;
    rc = make(db, handle, device_model, key, d.op, d.l[0], d.l[1], d.l[2], d.l[3], out,
              workspace);
    descs_free(&d);
    return rc;
}

int gt_db_cublaslt_algo_for(const gt_db *db, cublasLtHandle_t handle, const char *device_model,
                            cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                            cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                            cublasLtMatrixLayout_t d, double alpha, double beta,
                            cublasLtMatmulAlgo_t *out, size_t *workspace)
{
    char key[KEY_MAX], err[200];
    gt_lt_desc t;
    gt_problem p;
    if (!db || !handle || !device_model || !out)
        return GT_DB_EINVAL;
    if (gt_lt_describe(&k_api, op, a, b, c, d, &t) != 0 ||
        gt_lt_to_problem(&t, alpha, beta, &p, err, sizeof err) != 0)
        return GT_DB_EINVAL;
    int n = gt_problem_key(&p, key, sizeof key);
    if (n < 0 || (size_t)n >= sizeof key)
        return GT_DB_EINVAL;
    return make(db, handle, device_model, key, op, a, b, c, d, out, workspace);
}
