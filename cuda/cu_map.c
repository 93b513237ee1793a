/* cu_map.c: gt_problem -> cuBLASLt types, compute/scale types, epilogue,
 * host scalars and descriptors (gt_cu.h). The worker creates the
 * descriptors it tunes with here, and libgemmtune the ones it re-creates a
 * tuned algo for, so both see the same matmul. Descriptors are host objects:
 * nothing here needs a GPU, and the GPU-less CI tests all of it
 * (tests/unit/test_cuda_host.c, test_libgemmtune.c). */
#include <stdio.h>
#include <string.h>

#include "gt_caps.h"
#include "gt_cu.h"

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return -1;                                                                                 \
    } while (0)

int gt_cu_dtype(gt_dtype t, cudaDataType_t *out)
{
    int32_t c = gt_cu_type_code(t);
    if (c < 0)
        return -1;
    *out = (cudaDataType_t)c;
    return 0;
}

int gt_cu_map_problem(const gt_problem *p, int sm, gt_cu_map *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    gt_caps_cuda c;
    if (gt_caps_cuda_map(p, sm, &c, err, errlen) != 0)
        return -1;
    const struct {
        gt_dtype t;
        cudaDataType_t *out;
        int *kt;
    } ops[] = {{p->a_type, &m->a, &m->akt},
               {p->b_type, &m->b, &m->bkt},
               {p->c_type, &m->c, &m->ckt},
               {p->d_type, &m->d, &m->dkt}};
    for (size_t i = 0; i < 4; i++) {
        if (gt_cu_dtype(ops[i].t, ops[i].out) != 0)
            FAIL("cuda: %s has no cuBLASLt storage type", gt_dtype_name(ops[i].t));
        *ops[i].kt = gt_cu_kt_of(ops[i].t);
    }
    int32_t compute = gt_cu_compute_code(c.compute);
    if (compute < 0)
        FAIL("cuda: compute type %s has no cuBLASLt compute type", gt_dtype_name(c.compute));
    m->compute = (cublasComputeType_t)compute;
    m->fp8 = c.fp8;
    m->d_scale = c.d_scale;
    if (gt_cu_dtype(c.scale, &m->scale) != 0)
        FAIL("cuda: scale type %s not supported", gt_dtype_name(c.scale));
    if (gt_cu_scalar_put(m->scale, p->alpha, m->alpha, "alpha", err, errlen) != 0 ||
        gt_cu_scalar_put(m->scale, p->beta, m->beta, "beta", err, errlen) != 0)
        return -1;
    m->opa = p->trans_a == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
    m->opb = p->trans_b == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
    m->act = c.act;
    m->has_bias = p->bias != 0;
    m->epilogue = (cublasLtEpilogue_t)gt_cu_epilogue_code(m->has_bias, m->act);
    if (m->has_bias) {
        if (gt_cu_dtype(c.bias, &m->bias) != 0)
            FAIL("cuda: bias_type %s not supported", gt_dtype_name(c.bias));
        m->bias_set = 1;
        m->bias_kt = gt_cu_kt_of(c.bias);
    }
    return 0;
}

gt_cu_lt_types gt_cu_map_types(const gt_cu_map *m)
{
    gt_cu_lt_types t = {m->compute, m->scale, m->a, m->b, m->c, m->d};
    return t;
}

/* ---- descriptors ------------------------------------------------------------------- */

int64_t gt_cu_span(int64_t ld, int64_t cols, int64_t batch, int64_t stride)
{
    return (batch > 1 ? (batch - 1) * stride : 0) + ld * cols;
}

#define CKL(call, what)                                                                            \
    do {                                                                                           \
        cublasStatus_t st_ = (call);                                                               \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                        \
            snprintf(err, errlen, "cuda: %s: %s", what, gt_cu_status_name(st_));                   \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

static int layout(cublasLtMatrixLayout_t *l, cudaDataType_t t, int64_t rows, int64_t cols,
                  int64_t ld, int64_t batch, int64_t stride, const char *name, char *err,
                  size_t errlen)
{
    char what[64];
    snprintf(what, sizeof what, "layout %s", name);
    CKL(cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld), what);
    if (batch > 1) {
        int32_t bc = (int32_t)batch;
        CKL(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc,
                                             sizeof bc),
            what);
        CKL(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                             &stride, sizeof stride),
            what);
    }
    return 0;
fail:
    return -1;
}

int gt_cu_desc_create(const gt_problem *p, const gt_cu_map *m, const gt_cu_ptrs *ptrs, gt_cu_desc *d,
                      char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    CKL(cublasLtMatmulDescCreate(&d->op, m->compute, m->scale), "matmul desc");
    int32_t ta = m->opa, tb = m->opb;
    CKL(cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
        "TRANSA");
    CKL(cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
        "TRANSB");
    if (m->epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
        uint32_t e = m->epilogue;
        CKL(cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e),
            "EPILOGUE");
    }
    if (m->has_bias) {
        const void *bp = ptrs->bias;
        CKL(cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp,
                                           sizeof bp),
            "BIAS_POINTER");
        int32_t bt = m->bias;
        CKL(cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt,
                                           sizeof bt),
            "BIAS_DATA_TYPE");
    }
    if (m->fp8) {
        const void *as = ptrs->a_scale, *bs = ptrs->b_scale;
        CKL(cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &as,
                                           sizeof as),
            "A_SCALE_POINTER");
        CKL(cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &bs,
                                           sizeof bs),
            "B_SCALE_POINTER");
        if (m->d_scale) {
            const void *ds = ptrs->d_scale;
            CKL(cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &ds,
                                               sizeof ds),
                "D_SCALE_POINTER");
        }
    }
    int an = m->opa == CUBLAS_OP_N, bn = m->opb == CUBLAS_OP_N;
    if (layout(&d->a, m->a, an ? p->m : p->k, an ? p->k : p->m, p->lda, p->batch, p->stride_a,
               "A", err, errlen) ||
        layout(&d->b, m->b, bn ? p->k : p->n, bn ? p->n : p->k, p->ldb, p->batch, p->stride_b,
               "B", err, errlen) ||
        layout(&d->c, m->c, p->m, p->n, p->ldc, p->batch, p->stride_c, "C", err, errlen) ||
        layout(&d->d, m->d, p->m, p->n, p->ldd, p->batch, p->stride_d, "D", err, errlen))
        goto fail;
    return 0;
fail:
    gt_cu_desc_destroy(d);
    return -1;
}

void gt_cu_desc_destroy(gt_cu_desc *d)
{
    if (!d)
        return;
    /* Destroy results are ignored: nothing useful can be done on failure. */
    if (d->a)
        (void)cublasLtMatrixLayoutDestroy(d->a);
    if (d->b)
        (void)cublasLtMatrixLayoutDestroy(d->b);
    if (d->c)
        (void)cublasLtMatrixLayoutDestroy(d->c);
    if (d->d)
        (void)cublasLtMatrixLayoutDestroy(d->d);
    if (d->op)
        (void)cublasLtMatmulDescDestroy(d->op);
    memset(d, 0, sizeof *d);
}
