/* ltcuda.c: reading a matmul's tuple out of real cuBLASLt descriptors and
 * re-creating + checking a tuned algo, through a gt_lt_api table (see
 * gt_ltcuda.h). CUDA builds only. */
#include "gt_ltcuda.h"

#include <stdio.h>
#include <string.h>

/* The mirrored enum values of gt_lib.h must be cuBLASLt's. */
_Static_assert((int)GT_LT_R_32F == (int)CUDA_R_32F, "cudaDataType_t drift");
_Static_assert((int)GT_LT_R_64F == (int)CUDA_R_64F, "cudaDataType_t drift");
_Static_assert((int)GT_LT_R_16F == (int)CUDA_R_16F, "cudaDataType_t drift");
_Static_assert((int)GT_LT_R_8I == (int)CUDA_R_8I, "cudaDataType_t drift");
_Static_assert((int)GT_LT_R_32I == (int)CUDA_R_32I, "cudaDataType_t drift");
_Static_assert((int)GT_LT_R_16BF == (int)CUDA_R_16BF, "cudaDataType_t drift");
_Static_assert((int)GT_LT_R_8F_E4M3 == (int)CUDA_R_8F_E4M3, "cudaDataType_t drift");
_Static_assert((int)GT_LT_R_8F_E5M2 == (int)CUDA_R_8F_E5M2, "cudaDataType_t drift");
_Static_assert((int)GT_LT_COMPUTE_16F == (int)CUBLAS_COMPUTE_16F, "cublasComputeType_t drift");
_Static_assert((int)GT_LT_COMPUTE_32F == (int)CUBLAS_COMPUTE_32F, "cublasComputeType_t drift");
_Static_assert((int)GT_LT_COMPUTE_64F == (int)CUBLAS_COMPUTE_64F, "cublasComputeType_t drift");
_Static_assert((int)GT_LT_COMPUTE_32I == (int)CUBLAS_COMPUTE_32I, "cublasComputeType_t drift");
_Static_assert((int)GT_LT_COMPUTE_32F_FAST_TF32 == (int)CUBLAS_COMPUTE_32F_FAST_TF32,
               "cublasComputeType_t drift");
_Static_assert((int)GT_LT_OP_N == (int)CUBLAS_OP_N && (int)GT_LT_OP_T == (int)CUBLAS_OP_T,
               "cublasOperation_t drift");
_Static_assert((int)GT_LT_ORDER_COL == (int)CUBLASLT_ORDER_COL, "cublasLtOrder_t drift");
_Static_assert((int)GT_LT_POINTER_HOST == (int)CUBLASLT_POINTER_MODE_HOST &&
                   (int)GT_LT_POINTER_DEVICE == (int)CUBLASLT_POINTER_MODE_DEVICE,
               "cublasLtPointerMode_t drift");
_Static_assert((int)GT_LT_FILL_FULL == (int)CUBLAS_FILL_MODE_FULL, "cublasFillMode_t drift");
_Static_assert((int)GT_LT_EPI_DEFAULT == (int)CUBLASLT_EPILOGUE_DEFAULT &&
                   (int)GT_LT_EPI_RELU == (int)CUBLASLT_EPILOGUE_RELU &&
                   (int)GT_LT_EPI_BIAS == (int)CUBLASLT_EPILOGUE_BIAS &&
                   (int)GT_LT_EPI_RELU_BIAS == (int)CUBLASLT_EPILOGUE_RELU_BIAS &&
                   (int)GT_LT_EPI_GELU == (int)CUBLASLT_EPILOGUE_GELU &&
                   (int)GT_LT_EPI_GELU_BIAS == (int)CUBLASLT_EPILOGUE_GELU_BIAS,
               "cublasLtEpilogue_t drift");

/* Reads one attribute of exactly sizeof(*out) bytes; keeps *out (the
 * default) when the library does not know the attribute. */
#define LGET(l, attr, out)                                                                         \
    (api->layout_get((l), (attr), (out), sizeof *(out), &w) == CUBLAS_STATUS_SUCCESS)
#define DGET(attr, out) (api->desc_get(op, (attr), (out), sizeof *(out), &w) == CUBLAS_STATUS_SUCCESS)

static int read_layout(const gt_lt_api *api, cublasLtMatrixLayout_t l, gt_lt_layout *o)
{
    size_t w = 0;
    uint32_t type = 0;
    o->batch = 1;
    if (!l || !LGET(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &type) ||
        !LGET(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &o->rows) ||
        !LGET(l, CUBLASLT_MATRIX_LAYOUT_COLS, &o->cols) ||
        !LGET(l, CUBLASLT_MATRIX_LAYOUT_LD, &o->ld))
        return -1;
    o->type = (int32_t)type;
    (void)LGET(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &o->order);
    (void)LGET(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &o->batch);
    (void)LGET(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &o->stride);
    (void)LGET(l, CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, &o->plane);
    return 0;
}

int gt_lt_describe(const gt_lt_api *api, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                   cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                   gt_lt_desc *out)
{
    memset(out, 0, sizeof *out);
    if (!op || read_layout(api, a, &out->l[0]) || read_layout(api, b, &out->l[1]) ||
        read_layout(api, c, &out->l[2]) || read_layout(api, d, &out->l[3]))
        return -1;
    size_t w = 0;
    out->scale = -1;
    if (!DGET(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &out->compute) ||
        !DGET(CUBLASLT_MATMUL_DESC_SCALE_TYPE, &out->scale))
        return -1;
    out->transa = out->transb = out->transc = CUBLAS_OP_N;
    out->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    out->bias_type = -1;
    out->pointer_mode = CUBLASLT_POINTER_MODE_HOST;
    out->fill = CUBLAS_FILL_MODE_FULL;
    if (!DGET(CUBLASLT_MATMUL_DESC_TRANSA, &out->transa) ||
        !DGET(CUBLASLT_MATMUL_DESC_TRANSB, &out->transb))
        return -1;
    (void)DGET(CUBLASLT_MATMUL_DESC_TRANSC, &out->transc);
    (void)DGET(CUBLASLT_MATMUL_DESC_FILL_MODE, &out->fill);
    (void)DGET(CUBLASLT_MATMUL_DESC_POINTER_MODE, &out->pointer_mode);
    (void)DGET(CUBLASLT_MATMUL_DESC_EPILOGUE, &out->epilogue);
    (void)DGET(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &out->bias_type);
    (void)DGET(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &out->sm_count);
    int8_t fast = 0;
    (void)DGET(CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast);
    out->fast_accum = fast;
    (void)DGET(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &out->a_scale_mode);
    (void)DGET(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &out->b_scale_mode);
    static const struct {
        cublasLtMatmulDescAttributes_t attr;
        int flag;
    } ptrs[] = {
        {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, GT_LT_HAS_A_SCALE},
        {CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, GT_LT_HAS_B_SCALE},
        {CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, GT_LT_HAS_D_SCALE},
        {CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, GT_LT_HAS_AMAX},
        {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, GT_LT_HAS_AUX},
    };
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) {
        const void *p = NULL;
        if (DGET(ptrs[i].attr, &p) && p)
            out->ptr_flags |= ptrs[i].flag;
    }
    return 0;
}

#define SETA(attr, field)                                                                          \
    do {                                                                                           \
        cublasStatus_t s_ = api->cfg_set(&out->algo, attr, &(field), sizeof(field));               \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            snprintf(err, errlen, "set %s: status %d", #attr, (int)s_);                            \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

int gt_lt_algo_make(const gt_lt_api *api, cublasLtHandle_t h, const gt_lt_desc *t,
                    const gt_lt_cfg *c, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                    cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t cc, cublasLtMatrixLayout_t d,
                    gt_lt_algo *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    cublasStatus_t s = api->algo_init(
        h, (cublasComputeType_t)t->compute, (cudaDataType_t)t->scale, (cudaDataType_t)t->l[0].type,
        (cudaDataType_t)t->l[1].type, (cudaDataType_t)t->l[2].type, (cudaDataType_t)t->l[3].type,
        c->algo_id, &out->algo);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cublasLtMatmulAlgoInit(algo_id=%d): status %d", (int)c->algo_id,
                 (int)s);
        return -1;
    }
    /* Same attributes, sizes and order as gt_cuda_cfg_apply. */
    SETA(CUBLASLT_ALGO_CONFIG_TILE_ID, c->tile);
    SETA(CUBLASLT_ALGO_CONFIG_STAGES_ID, c->stages);
    SETA(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, c->splitk);
    SETA(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, c->reduction);
    SETA(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, c->swizzle);
    SETA(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, c->custom);
    SETA(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, c->cluster);
    SETA(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, c->inner_shape);
    cublasLtMatmulHeuristicResult_t r;
    memset(&r, 0, sizeof r);
    s = api->algo_check(h, op, a, b, cc, d, &out->algo, &r);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cublasLtMatmulAlgoCheck refused the config: status %d", (int)s);
        return -1;
    }
    out->workspace = r.workspaceSize;
    out->waves = r.wavesCount;
    out->splitk = c->splitk;
    out->reduction = c->reduction;
    static const cublasLtMatmulAlgoCapAttributes_t caps[4] = {
        CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++) {
        uint32_t v = 0;
        size_t w = 0;
        /* Unknown (older cuBLASLt): assume the strictest, 256 bytes. */
        out->align[i] = api->cap_get && api->cap_get(&out->algo, caps[i], &v, sizeof v, &w) ==
                                            CUBLAS_STATUS_SUCCESS
                            ? v
                            : 256;
    }
    return 0;
}

int gt_lt_algo_fits(const gt_lt_api *api, const gt_lt_algo *a, cublasLtMatmulPreference_t pref,
                    const char **why)
{
    uint64_t ws = 0, impl = ~(uint64_t)0;
    uint32_t mask = 0x7, al[4] = {256, 256, 256, 256}, search = 0;
    float waves = 0;
    if (pref) {
        size_t w = 0;
        (void)api->pref_get(pref, CUBLASLT_MATMUL_PREF_SEARCH_MODE, &search, sizeof search, &w);
        (void)api->pref_get(pref, CUBLASLT_MATMUL_PREF_IMPL_MASK, &impl, sizeof impl, &w);
        (void)api->pref_get(pref, CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, &waves, sizeof waves, &w);
        static const cublasLtMatmulPreferenceAttributes_t attrs[4] = {
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
        (void)api->pref_get(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws, &w);
        (void)api->pref_get(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof mask,
                            &w);
        for (int i = 0; i < 4; i++)
            (void)api->pref_get(pref, attrs[i], &al[i], sizeof al[i], &w);
    }
    /* A caller that restricts the search (by algo id, by numerical
     * implementation, by waves) gets exactly what it asked for. */
    if (search != CUBLASLT_SEARCH_BEST_FIT || impl != ~(uint64_t)0 ||
        (waves > 0 && a->waves > waves)) {
        *why = "search restricted";
        return 0;
    }
    if (a->workspace > ws) {
        *why = "workspace";
        return 0;
    }
    for (int i = 0; i < 4; i++)
        if (a->align[i] > al[i]) {
            *why = "alignment";
            return 0;
        }
    if (a->splitk > 1 && !(a->reduction & mask)) {
        *why = "reduction scheme";
        return 0;
    }
    return 1;
}

static float half_to_float(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 1023, u;
    if (e == 0) {
        if (m == 0) {
            u = s;
        } else { /* subnormal: normalise */
            e = 127 - 15 + 1;
            while (!(m & 1024)) {
                m <<= 1;
                e--;
            }
            u = s | e << 23 | (m & 1023) << 13;
        }
    } else if (e == 31) {
        u = s | 0x7f800000u | m << 13;
    } else {
        u = s | (e + 127 - 15) << 23 | m << 13;
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

double gt_lt_scalar(int32_t scale_type, const void *p)
{
    if (!p)
        return 0;
    switch (scale_type) {
    case CUDA_R_32F: {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    case CUDA_R_64F: {
        double x;
        memcpy(&x, p, 8);
        return x;
    }
    case CUDA_R_16F: {
        uint16_t h;
        memcpy(&h, p, 2);
        return half_to_float(h);
    }
    case CUDA_R_32I: {
        int32_t i;
        memcpy(&i, p, 4);
        return i;
    }
    default: return 0;
    }
}
