/* lt_api.c: cuBLASLt through a gt_cu_lt_api table (gt_cu.h): reading a
 * matmul's descriptors into a tuple, a config's attributes on an algo, and
 * re-creating + checking a config's algo. The worker passes the linked
 * cuBLASLt (gt_cu_lt_linked), the preload shim the application's own
 * libcublasLt (gt_cu_lt_api_dlsym), so this file links no CUDA library. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gt_cu.h"

/* The mirrored enum values of gt_cu_host.h must be cuBLASLt's. */
_Static_assert((int)GT_CU_R_32F == (int)CUDA_R_32F, "cudaDataType_t drift");
_Static_assert((int)GT_CU_R_64F == (int)CUDA_R_64F, "cudaDataType_t drift");
_Static_assert((int)GT_CU_R_16F == (int)CUDA_R_16F, "cudaDataType_t drift");
_Static_assert((int)GT_CU_R_8I == (int)CUDA_R_8I, "cudaDataType_t drift");
_Static_assert((int)GT_CU_R_32I == (int)CUDA_R_32I, "cudaDataType_t drift");
_Static_assert((int)GT_CU_R_16BF == (int)CUDA_R_16BF, "cudaDataType_t drift");
_Static_assert((int)GT_CU_R_8F_E4M3 == (int)CUDA_R_8F_E4M3, "cudaDataType_t drift");
_Static_assert((int)GT_CU_R_8F_E5M2 == (int)CUDA_R_8F_E5M2, "cudaDataType_t drift");
_Static_assert((int)GT_CU_COMPUTE_16F == (int)CUBLAS_COMPUTE_16F, "cublasComputeType_t drift");
_Static_assert((int)GT_CU_COMPUTE_32F == (int)CUBLAS_COMPUTE_32F, "cublasComputeType_t drift");
_Static_assert((int)GT_CU_COMPUTE_64F == (int)CUBLAS_COMPUTE_64F, "cublasComputeType_t drift");
_Static_assert((int)GT_CU_COMPUTE_32I == (int)CUBLAS_COMPUTE_32I, "cublasComputeType_t drift");
_Static_assert((int)GT_CU_COMPUTE_32F_FAST_TF32 == (int)CUBLAS_COMPUTE_32F_FAST_TF32,
               "cublasComputeType_t drift");
_Static_assert((int)GT_CU_OP_N == (int)CUBLAS_OP_N && (int)GT_CU_OP_T == (int)CUBLAS_OP_T,
               "cublasOperation_t drift");
_Static_assert((int)GT_CU_ORDER_COL == (int)CUBLASLT_ORDER_COL, "cublasLtOrder_t drift");
_Static_assert((int)GT_CU_POINTER_HOST == (int)CUBLASLT_POINTER_MODE_HOST &&
                   (int)GT_CU_POINTER_DEVICE == (int)CUBLASLT_POINTER_MODE_DEVICE,
               "cublasLtPointerMode_t drift");
_Static_assert((int)GT_CU_FILL_FULL == (int)CUBLAS_FILL_MODE_FULL, "cublasFillMode_t drift");
_Static_assert((int)GT_CU_EPI_DEFAULT == (int)CUBLASLT_EPILOGUE_DEFAULT &&
                   (int)GT_CU_EPI_RELU == (int)CUBLASLT_EPILOGUE_RELU &&
                   (int)GT_CU_EPI_BIAS == (int)CUBLASLT_EPILOGUE_BIAS &&
                   (int)GT_CU_EPI_RELU_BIAS == (int)CUBLASLT_EPILOGUE_RELU_BIAS &&
                   (int)GT_CU_EPI_GELU == (int)CUBLASLT_EPILOGUE_GELU &&
                   (int)GT_CU_EPI_GELU_BIAS == (int)CUBLASLT_EPILOGUE_GELU_BIAS,
               "cublasLtEpilogue_t drift");

void gt_cu_lt_api_dlsym(void *h, gt_cu_lt_api *api)
{
    memset(api, 0, sizeof *api);
#define SYM(field, name) *(void **)&api->field = dlsym(h, name)
    SYM(layout_get, "cublasLtMatrixLayoutGetAttribute");
    SYM(desc_get, "cublasLtMatmulDescGetAttribute");
    SYM(pref_get, "cublasLtMatmulPreferenceGetAttribute");
    SYM(algo_init, "cublasLtMatmulAlgoInit");
    SYM(cfg_set, "cublasLtMatmulAlgoConfigSetAttribute");
    SYM(cfg_get, "cublasLtMatmulAlgoConfigGetAttribute");
    SYM(algo_check, "cublasLtMatmulAlgoCheck");
    SYM(cap_get, "cublasLtMatmulAlgoCapGetAttribute");
    SYM(status_name, "cublasLtGetStatusName");
#undef SYM
}

const char *gt_cu_lt_status_name(const gt_cu_lt_api *api, cublasStatus_t s)
{
    const char *n = api->status_name ? api->status_name(s) : NULL;
    return n ? n : "CUBLAS_STATUS_?";
}

/* ---- descriptors -> tuple ------------------------------------------------------------ */

/* Reads one attribute of exactly sizeof(*out) bytes; keeps *out (the
 * default) when the library does not know the attribute. */
#define LGET(l, attr, out)                                                                         \
    (api->layout_get((l), (attr), (out), sizeof *(out), &w) == CUBLAS_STATUS_SUCCESS)
#define DGET(attr, out) (api->desc_get(op, (attr), (out), sizeof *(out), &w) == CUBLAS_STATUS_SUCCESS)

static int read_layout(const gt_cu_lt_api *api, cublasLtMatrixLayout_t l, gt_cu_lt_layout *o)
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

int gt_cu_lt_describe(const gt_cu_lt_api *api, const gt_cu_desc *d, gt_cu_lt_tuple *out)
{
    cublasLtMatmulDesc_t op = d->op;
    memset(out, 0, sizeof *out);
    if (!op || read_layout(api, d->a, &out->l[0]) || read_layout(api, d->b, &out->l[1]) ||
        read_layout(api, d->c, &out->l[2]) || read_layout(api, d->d, &out->l[3]))
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
        {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, GT_CU_HAS_A_SCALE},
        {CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, GT_CU_HAS_B_SCALE},
        {CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, GT_CU_HAS_D_SCALE},
        {CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, GT_CU_HAS_AMAX},
        {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, GT_CU_HAS_AUX},
    };
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) {
        const void *p = NULL;
        if (DGET(ptrs[i].attr, &p) && p)
            out->ptr_flags |= ptrs[i].flag;
    }
    return 0;
}

gt_cu_lt_types gt_cu_lt_tuple_types(const gt_cu_lt_tuple *t)
{
    gt_cu_lt_types r = {(cublasComputeType_t)t->compute, (cudaDataType_t)t->scale,
                        (cudaDataType_t)t->l[0].type,    (cudaDataType_t)t->l[1].type,
                        (cudaDataType_t)t->l[2].type,    (cudaDataType_t)t->l[3].type};
    return r;
}

/* ---- config <-> algo ------------------------------------------------------------------ */

/* The nine attributes of a config on an algo, in the order they are set
 * (the id first: only cublasLtMatmulAlgoInit sets it). */
static const struct {
    cublasLtMatmulAlgoConfigAttributes_t attr;
    const char *name;
    size_t off, size;
} k_attrs[] = {
#define A(attr, field) {attr, #attr, offsetof(gt_cu_lt_cfg, field), sizeof(((gt_cu_lt_cfg *)0)->field)}
    A(CUBLASLT_ALGO_CONFIG_ID, algo_id),
    A(CUBLASLT_ALGO_CONFIG_TILE_ID, tile),
    A(CUBLASLT_ALGO_CONFIG_STAGES_ID, stages),
    A(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, splitk),
    A(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, reduction),
    A(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, swizzle),
    A(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, custom),
    A(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, cluster),
    A(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, inner_shape),
#undef A
};
#define NATTRS (sizeof k_attrs / sizeof k_attrs[0])

int gt_cu_lt_cfg_apply(const gt_cu_lt_api *api, const gt_cu_lt_cfg *c, cublasLtMatmulAlgo_t *algo,
                       char *err, size_t errlen)
{
    for (size_t i = 1; i < NATTRS; i++) {
        cublasStatus_t s = api->cfg_set(algo, k_attrs[i].attr, (const char *)c + k_attrs[i].off,
                                        k_attrs[i].size);
        if (s != CUBLAS_STATUS_SUCCESS) {
            snprintf(err, errlen, "cuda: set %s: %s", k_attrs[i].name, gt_cu_lt_status_name(api, s));
            return -1;
        }
    }
    return 0;
}

int gt_cu_lt_cfg_from_algo(const gt_cu_lt_api *api, const cublasLtMatmulAlgo_t *algo,
                           gt_cu_lt_cfg *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < NATTRS; i++) {
        size_t w = 0;
        cublasStatus_t s =
            api->cfg_get(algo, k_attrs[i].attr, (char *)c + k_attrs[i].off, k_attrs[i].size, &w);
        if (s != CUBLAS_STATUS_SUCCESS) {
            snprintf(err, errlen, "cuda: get %s: %s", k_attrs[i].name, gt_cu_lt_status_name(api, s));
            return -1;
        }
    }
    return 0;
}

int gt_cu_lt_algo_make(const gt_cu_lt_api *api, cublasLtHandle_t h, const gt_cu_lt_types *t,
                       const gt_cu_lt_cfg *c, const gt_cu_desc *d, gt_cu_lt_algo *out, char *err,
                       size_t errlen)
{
    memset(out, 0, sizeof *out);
    cublasStatus_t s =
        api->algo_init(h, t->compute, t->scale, t->a, t->b, t->c, t->d, c->algo_id, &out->algo);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cuda: cublasLtMatmulAlgoInit(algo_id=%d): %s", (int)c->algo_id,
                 gt_cu_lt_status_name(api, s));
        return -1;
    }
    if (gt_cu_lt_cfg_apply(api, c, &out->algo, err, errlen) != 0)
        return -1;
    cublasLtMatmulHeuristicResult_t r;
    memset(&r, 0, sizeof r);
    s = api->algo_check(h, d->op, d->a, d->b, d->c, d->d, &out->algo, &r);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cuda: cublasLtMatmulAlgoCheck rejected the config: %s",
                 gt_cu_lt_status_name(api, s));
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
