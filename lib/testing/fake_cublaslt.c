/* fake_cublaslt.c: a host-only stand-in for libcublasLt, built as
 * fakelt/libcublasLt.so, for testing libgemmtune-preload.so without a GPU.
 * It implements the cuBLASLt API the shim and tests/unit's driver program
 * (lt_user.c) touch, with cuBLASLt's own prototypes (<cublasLt.h>), so a
 * signature drift fails to compile:
 *   - descriptors store and return their attributes like cuBLASLt;
 *   - the heuristic returns algos whose data[0] is 111, 222, 333 ...;
 *   - AlgoInit writes data[0] = algo_id; AlgoCheck refuses algo_id 999 and
 *     asks 1 GiB of workspace for algo_id 777 (else 1 KiB);
 *   - cublasLtMatmul remembers data[0] of the algo it ran. */
#include <cublasLt.h>
#include <stdlib.h>
#include <string.h>

#define OK CUBLAS_STATUS_SUCCESS
#define BAD CUBLAS_STATUS_INVALID_VALUE

typedef struct lay {
    uint32_t type;
    int32_t order, batch;
    uint64_t rows, cols;
    int64_t ld, stride, plane;
} lay;

typedef struct md {
    int32_t compute, scale, pmode, ta, tb, tc, fill, bias_type, smc, asm_, bsm;
    uint32_t epi;
    const void *bias, *as, *bs, *ds, *amax, *aux;
    int8_t fast;
} md;

typedef struct pr {
    uint32_t search, red, al[4];
    uint64_t ws, impl;
    float waves;
} pr;

/* Copies between an attribute and the caller's buffer, cuBLASLt style. */
static cublasStatus_t put(void *field, size_t fsize, const void *buf, size_t size)
{
    if (size != fsize || !buf)
        return BAD;
    memcpy(field, buf, size);
    return OK;
}

static cublasStatus_t get(const void *field, size_t fsize, void *buf, size_t size,
                          size_t *written)
{
    if (written)
        *written = fsize;
    if (size == 0 && written)
        return OK;
    if (size < fsize || !buf)
        return BAD;
    memcpy(buf, field, fsize);
    return OK;
}

#define F(x) &(x), sizeof(x)

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
    static int dummy;
    *h = (cublasLtHandle_t)&dummy;
    return OK;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
    (void)h;
    return OK;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType t,
                                          uint64_t rows, uint64_t cols, int64_t ld)
{
    lay *x = calloc(1, sizeof *x);
    if (!x)
        return CUBLAS_STATUS_ALLOC_FAILED;
    x->type = (uint32_t)t;
    x->rows = rows;
    x->cols = cols;
    x->ld = ld;
    x->batch = 1;
    *l = (cublasLtMatrixLayout_t)x;
    return OK;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(const cublasLtMatrixLayout_t l)
{
    free(l);
    return OK;
}

#define LAYOUT_ATTRS(X)                                                                            \
    X(CUBLASLT_MATRIX_LAYOUT_TYPE, type)                                                           \
    X(CUBLASLT_MATRIX_LAYOUT_ORDER, order)                                                         \
    X(CUBLASLT_MATRIX_LAYOUT_ROWS, rows)                                                           \
    X(CUBLASLT_MATRIX_LAYOUT_COLS, cols)                                                           \
    X(CUBLASLT_MATRIX_LAYOUT_LD, ld)                                                               \
    X(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch)                                                   \
    X(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride)                                         \
    X(CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, plane)

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t a, const void *buf,
                                                size_t size)
{
    lay *x = (lay *)l;
#define X(attr, f)                                                                                 \
    case attr: return put(F(x->f), buf, size);
    switch (a) {
        LAYOUT_ATTRS(X)
    default: return BAD;
    }
#undef X
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t l,
                                                cublasLtMatrixLayoutAttribute_t a, void *buf,
                                                size_t size, size_t *written)
{
    lay *x = (lay *)l;
#define X(attr, f)                                                                                 \
    case attr: return get(F(x->f), buf, size, written);
    switch (a) {
        LAYOUT_ATTRS(X)
    default: return BAD;
    }
#undef X
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t c,
                                        cudaDataType_t s)
{
    md *x = calloc(1, sizeof *x);
    if (!x)
        return CUBLAS_STATUS_ALLOC_FAILED;
    x->compute = c;
    x->scale = s;
    x->fill = CUBLAS_FILL_MODE_FULL;
    x->epi = CUBLASLT_EPILOGUE_DEFAULT;
    x->bias_type = -1;
    *d = (cublasLtMatmulDesc_t)x;
    return OK;
}

cublasStatus_t cublasLtMatmulDescDestroy(const cublasLtMatmulDesc_t d)
{
    free(d);
    return OK;
}

#define DESC_ATTRS(X)                                                                              \
    X(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, compute)                                                  \
    X(CUBLASLT_MATMUL_DESC_SCALE_TYPE, scale)                                                      \
    X(CUBLASLT_MATMUL_DESC_POINTER_MODE, pmode)                                                    \
    X(CUBLASLT_MATMUL_DESC_TRANSA, ta)                                                             \
    X(CUBLASLT_MATMUL_DESC_TRANSB, tb)                                                             \
    X(CUBLASLT_MATMUL_DESC_TRANSC, tc)                                                             \
    X(CUBLASLT_MATMUL_DESC_FILL_MODE, fill)                                                        \
    X(CUBLASLT_MATMUL_DESC_EPILOGUE, epi)                                                          \
    X(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias)                                                     \
    X(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type)                                              \
    X(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, smc)                                                   \
    X(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, as)                                                    \
    X(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, bs)                                                    \
    X(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, ds)                                                    \
    X(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, amax)                                                   \
    X(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux)                                              \
    X(CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast)                                                       \
    X(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, asm_)                                                     \
    X(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, bsm)

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t a, const void *buf,
                                              size_t size)
{
    md *x = (md *)d;
#define X(attr, f)                                                                                 \
    case attr: return put(F(x->f), buf, size);
    switch (a) {
        DESC_ATTRS(X)
    default: return BAD;
    }
#undef X
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t a, void *buf,
                                              size_t size, size_t *written)
{
    md *x = (md *)d;
#define X(attr, f)                                                                                 \
    case attr: return get(F(x->f), buf, size, written);
    switch (a) {
        DESC_ATTRS(X)
    default: return BAD;
    }
#undef X
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
    pr *x = calloc(1, sizeof *x);
    if (!x)
        return CUBLAS_STATUS_ALLOC_FAILED;
    x->red = CUBLASLT_REDUCTION_SCHEME_MASK;
    for (int i = 0; i < 4; i++)
        x->al[i] = 256;
    x->impl = ~(uint64_t)0;
    *p = (cublasLtMatmulPreference_t)x;
    return OK;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(const cublasLtMatmulPreference_t p)
{
    free(p);
    return OK;
}

#define PREF_ATTRS(X)                                                                              \
    X(CUBLASLT_MATMUL_PREF_SEARCH_MODE, search)                                                    \
    X(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, ws)                                                \
    X(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, red)                                             \
    X(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, al[0])                                           \
    X(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, al[1])                                           \
    X(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, al[2])                                           \
    X(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, al[3])                                           \
    X(CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, waves)                                                 \
    X(CUBLASLT_MATMUL_PREF_IMPL_MASK, impl)

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t a,
                                                    const void *buf, size_t size)
{
    pr *x = (pr *)p;
#define X(attr, f)                                                                                 \
    case attr: return put(F(x->f), buf, size);
    switch (a) {
        PREF_ATTRS(X)
    default: return BAD;
    }
#undef X
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t a,
                                                    void *buf, size_t size, size_t *written)
{
    pr *x = (pr *)p;
#define X(attr, f)                                                                                 \
    case attr: return get(F(x->f), buf, size, written);
    switch (a) {
        PREF_ATTRS(X)
    default: return BAD;
    }
#undef X
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t h, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
    cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
    cublasLtMatmulPreference_t pref, int req, cublasLtMatmulHeuristicResult_t results[],
    int *ret)
{
    (void)h, (void)op, (void)a, (void)b, (void)c, (void)d, (void)pref;
    if (req < 1 || !results || !ret)
        return BAD;
    int n = req < 3 ? req : 3;
    for (int i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        results[i].algo.data[0] = 111u * (uint64_t)(i + 1);
        results[i].state = OK;
        results[i].wavesCount = 1.0f;
    }
    *ret = n;
    return OK;
}

cublasStatus_t cublasLtMatmulAlgoInit(cublasLtHandle_t h, cublasComputeType_t ct,
                                      cudaDataType_t st, cudaDataType_t at, cudaDataType_t bt,
                                      cudaDataType_t ctype, cudaDataType_t dt, int id,
                                      cublasLtMatmulAlgo_t *algo)
{
    (void)h, (void)ct, (void)st, (void)at, (void)bt, (void)ctype, (void)dt;
    memset(algo, 0, sizeof *algo);
    algo->data[0] = (uint64_t)id;
    return OK;
}

cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t *algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t a,
                                                    const void *buf, size_t size)
{
    uint64_t v = 0;
    if (!buf || size > sizeof v)
        return BAD;
    memcpy(&v, buf, size);
    algo->data[1 + (int)a % 7] = v;
    return OK;
}

cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t h, cublasLtMatmulDesc_t op,
                                       cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                       cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                       const cublasLtMatmulAlgo_t *algo,
                                       cublasLtMatmulHeuristicResult_t *r)
{
    (void)h, (void)op, (void)a, (void)b, (void)c, (void)d;
    if (algo->data[0] == 999)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    memset(r, 0, sizeof *r);
    r->algo = *algo;
    r->workspaceSize = algo->data[0] == 777 ? (size_t)1 << 30 : 1024;
    r->state = OK;
    r->wavesCount = 0.5f;
    return OK;
}

cublasStatus_t cublasLtMatmulAlgoCapGetAttribute(const cublasLtMatmulAlgo_t *algo,
                                                 cublasLtMatmulAlgoCapAttributes_t a, void *buf,
                                                 size_t size, size_t *written)
{
    (void)algo;
    uint32_t sixteen = 16;
    switch (a) {
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES: return get(F(sixteen), buf, size, written);
    default: return BAD;
    }
}

static uint64_t g_last;

/* data[0] of the algo the last cublasLtMatmul ran (not a cuBLASLt function). */
uint64_t fake_cublaslt_last_algo(void)
{
    return g_last;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t op, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t a, const void *B,
                              cublasLtMatrixLayout_t b, const void *beta, const void *C,
                              cublasLtMatrixLayout_t c, void *D, cublasLtMatrixLayout_t d,
                              const cublasLtMatmulAlgo_t *algo, void *ws, size_t wsbytes,
                              cudaStream_t stream)
{
    (void)h, (void)op, (void)alpha, (void)A, (void)a, (void)B, (void)b, (void)beta, (void)C;
    (void)c, (void)D, (void)d, (void)ws, (void)wsbytes, (void)stream;
    g_last = algo ? algo->data[0] : 0;
    return OK;
}
