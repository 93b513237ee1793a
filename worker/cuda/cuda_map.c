/* cuda_map.c: the pure-host half of the cuda backend: gt_problem ->
 * cuBLASLt types, compute/scale types, epilogue, host scalars and
 * descriptors; the element codecs shared with the NVRTC kernels. Nothing
 * here touches a GPU, so the GPU-less CI tests all of it
 * (tests/unit/test_cuda_host.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gt_caps.h"
#include "gt_cuda.h"

/* ---- element codecs ------------------------------------------------------ */

int gt_cuda_kt_of(gt_dtype t)
{
    switch (t) {
    case GT_DT_F32:
    case GT_DT_TF32: return GT_KT_F32; /* tf32 is f32 storage with tf32 math */
    case GT_DT_F64: return GT_KT_F64;
    case GT_DT_F16: return GT_KT_F16;
    case GT_DT_BF16: return GT_KT_BF16;
    case GT_DT_F8E4M3: return GT_KT_E4M3;
    case GT_DT_F8E5M2: return GT_KT_E5M2;
    case GT_DT_I8: return GT_KT_I8;
    case GT_DT_I32: return GT_KT_I32;
    default: return -1;
    }
}

static double dec_f16(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0)
        v = ldexp((double)m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexp((double)(1024 + m), e - 25);
    return (h & 0x8000) ? -v : v;
}

static double dec_e4m3(uint8_t b)
{
    int e = (b >> 3) & 15, m = b & 7;
    double v;
    if (e == 15 && m == 7)
        return NAN; /* e4m3fn has no infinities, only this NaN */
    if (e == 0)
        v = ldexp((double)m, -9);
    else
        v = ldexp((double)(8 + m), e - 10);
    return (b & 0x80) ? -v : v;
}

double gt_cuda_decode(int kt, const void *buf, size_t i)
{
    switch (kt) {
    case GT_KT_F32: {
        float f;
        memcpy(&f, (const char *)buf + i * 4, 4);
        return f;
    }
    case GT_KT_F64: {
        double d;
        memcpy(&d, (const char *)buf + i * 8, 8);
        return d;
    }
    case GT_KT_F16: {
        uint16_t h;
        memcpy(&h, (const char *)buf + i * 2, 2);
        return dec_f16(h);
    }
    case GT_KT_BF16: {
        uint16_t h;
        memcpy(&h, (const char *)buf + i * 2, 2);
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case GT_KT_E4M3: return dec_e4m3(((const uint8_t *)buf)[i]);
    case GT_KT_E5M2: return dec_f16((uint16_t)(((const uint8_t *)buf)[i] << 8));
    case GT_KT_I8: return ((const int8_t *)buf)[i];
    case GT_KT_I32: {
        int32_t v;
        memcpy(&v, (const char *)buf + i * 4, 4);
        return v;
    }
    default: return NAN;
    }
}

/* The fill kernel draws an integer q in [-qmax, qmax] and stores q * 2^-s,
 * where qmax uses exactly the significand bits of the type: every value is
 * exactly representable, so host and device agree on the inputs bit for bit
 * and the reference sees no input rounding. Integers stay small so that i8
 * outputs do not saturate for moderate k. */
static const struct {
    int64_t qmax;
    int shift;
} k_fill[] = {
    [GT_KT_F32] = {(1LL << 23) - 1, 23}, [GT_KT_F64] = {(1LL << 52) - 1, 52},
    [GT_KT_F16] = {2047, 11},            [GT_KT_BF16] = {255, 8},
    [GT_KT_E4M3] = {15, 4},              [GT_KT_E5M2] = {7, 3},
    [GT_KT_I8] = {4, 0},                 [GT_KT_I32] = {1000, 0},
};

int64_t gt_cuda_fill_qmax(int kt)
{
    return (kt >= 0 && kt <= GT_KT_I32) ? k_fill[kt].qmax : 0;
}

double gt_cuda_fill_value(int kt, int64_t q)
{
    if (kt < 0 || kt > GT_KT_I32)
        return NAN;
    return ldexp((double)q, -k_fill[kt].shift);
}

/* Small float formats: value a * 2^-s with a < 2^(mbits+1), always normal. */
static uint32_t enc_small(int64_t q, int s, int bias, int mbits, int sign_bit)
{
    if (q == 0)
        return 0;
    uint32_t sign = q < 0;
    uint32_t a = (uint32_t)(q < 0 ? -q : q);
    int e = 0;
    while ((a >> (e + 1)) != 0)
        e++;
    uint32_t exp = (uint32_t)(e - s + bias);
    uint32_t mant = (a << (mbits - e)) & ((1u << mbits) - 1);
    return sign << sign_bit | exp << mbits | mant;
}

void gt_cuda_fill_encode(int kt, int64_t q, void *out)
{
    switch (kt) {
    case GT_KT_F32: {
        float f = (float)ldexp((double)q, -23);
        memcpy(out, &f, 4);
        break;
    }
    case GT_KT_F64: {
        double d = ldexp((double)q, -52);
        memcpy(out, &d, 8);
        break;
    }
    case GT_KT_F16: {
        uint16_t h = (uint16_t)enc_small(q, 11, 15, 10, 15);
        memcpy(out, &h, 2);
        break;
    }
    case GT_KT_BF16: {
        uint16_t h = (uint16_t)enc_small(q, 8, 127, 7, 15);
        memcpy(out, &h, 2);
        break;
    }
    case GT_KT_E4M3: *(uint8_t *)out = (uint8_t)enc_small(q, 4, 7, 3, 7); break;
    case GT_KT_E5M2: *(uint8_t *)out = (uint8_t)enc_small(q, 3, 15, 2, 7); break;
    case GT_KT_I8: *(int8_t *)out = (int8_t)q; break;
    case GT_KT_I32: {
        int32_t v = (int32_t)q;
        memcpy(out, &v, 4);
        break;
    }
    default: break;
    }
}

uint16_t gt_cuda_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    int32_t e = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t m = x & 0x7fffff;
    if (((x >> 23) & 0xff) == 0xff) /* inf / nan */
        return (uint16_t)(sign | 0x7c00 | (m ? 0x200 : 0));
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        m |= 0x800000;
        int shift = 14 - e;
        uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = (uint32_t)e << 10 | m >> 13, rem = m & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
        h++; /* may carry into the exponent: that is the correct rounding */
    return (uint16_t)(sign | h);
}

/* ---- names --------------------------------------------------------------- */

int gt_cuda_dtype(gt_dtype t, cudaDataType_t *out)
{
    switch (gt_cuda_kt_of(t)) {
    case GT_KT_F32: *out = CUDA_R_32F; return 0;
    case GT_KT_F64: *out = CUDA_R_64F; return 0;
    case GT_KT_F16: *out = CUDA_R_16F; return 0;
    case GT_KT_BF16: *out = CUDA_R_16BF; return 0;
    case GT_KT_E4M3: *out = CUDA_R_8F_E4M3; return 0;
    case GT_KT_E5M2: *out = CUDA_R_8F_E5M2; return 0;
    case GT_KT_I8: *out = CUDA_R_8I; return 0;
    case GT_KT_I32: *out = CUDA_R_32I; return 0;
    default: return -1;
    }
}

const char *gt_cuda_dtype_name(cudaDataType_t t)
{
    switch (t) {
    case CUDA_R_32F: return "CUDA_R_32F";
    case CUDA_R_64F: return "CUDA_R_64F";
    case CUDA_R_16F: return "CUDA_R_16F";
    case CUDA_R_16BF: return "CUDA_R_16BF";
    case CUDA_R_8F_E4M3: return "CUDA_R_8F_E4M3";
    case CUDA_R_8F_E5M2: return "CUDA_R_8F_E5M2";
    case CUDA_R_8I: return "CUDA_R_8I";
    case CUDA_R_32I: return "CUDA_R_32I";
    default: return "CUDA_R_?";
    }
}

const char *gt_cuda_compute_name(cublasComputeType_t t)
{
    switch (t) {
    case CUBLAS_COMPUTE_16F: return "CUBLAS_COMPUTE_16F";
    case CUBLAS_COMPUTE_32F: return "CUBLAS_COMPUTE_32F";
    case CUBLAS_COMPUTE_32F_FAST_TF32: return "CUBLAS_COMPUTE_32F_FAST_TF32";
    case CUBLAS_COMPUTE_64F: return "CUBLAS_COMPUTE_64F";
    case CUBLAS_COMPUTE_32I: return "CUBLAS_COMPUTE_32I";
    default: return "CUBLAS_COMPUTE_?";
    }
}

const char *gt_cuda_status_name(cublasStatus_t s)
{
    const char *n = cublasLtGetStatusName(s);
    return n ? n : "CUBLAS_STATUS_?";
}

/* ---- problem mapping ----------------------------------------------------- */

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return -1;                                                                                 \
    } while (0)

/* Writes v in the scale type; integer scale types need integral values. */
static int put_scalar(cudaDataType_t st, double v, unsigned char out[8], const char *name,
                      char *err, size_t errlen)
{
    memset(out, 0, 8);
    switch (st) {
    case CUDA_R_32F: {
        float f = (float)v;
        memcpy(out, &f, 4);
        return 0;
    }
    case CUDA_R_64F: memcpy(out, &v, 8); return 0;
    case CUDA_R_16F: {
        uint16_t h = gt_cuda_f32_to_f16((float)v);
        memcpy(out, &h, 2);
        return 0;
    }
    case CUDA_R_32I: {
        if (v != floor(v) || fabs(v) > 2147483647.0)
            FAIL("cuda: %s=%g must be an integer with scale type i32", name, v);
        int32_t i = (int32_t)v;
        memcpy(out, &i, 4);
        return 0;
    }
    default: FAIL("cuda: scale type %s not supported", gt_cuda_dtype_name(st));
    }
}

/* The type rules live in common/caps.c (gt_caps_cuda_map), which the
 * coordinator checks submissions with and libgemmtune reads too; this turns
 * its answer into cuBLASLt's enums and host scalars. */
int gt_cuda_map_problem(const gt_problem *p, int sm, gt_cuda_map *m, char *err, size_t errlen)
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
        if (gt_cuda_dtype(ops[i].t, ops[i].out) != 0)
            FAIL("cuda: %s has no cuBLASLt storage type", gt_dtype_name(ops[i].t));
        *ops[i].kt = gt_cuda_kt_of(ops[i].t);
    }
    switch (c.compute) {
    case GT_DT_F64: m->compute = CUBLAS_COMPUTE_64F; break;
    case GT_DT_TF32: m->compute = CUBLAS_COMPUTE_32F_FAST_TF32; break;
    case GT_DT_F16: m->compute = CUBLAS_COMPUTE_16F; break;
    case GT_DT_I32: m->compute = CUBLAS_COMPUTE_32I; break;
    default: m->compute = CUBLAS_COMPUTE_32F; break;
    }
    m->fp8 = c.fp8;
    m->d_scale = c.d_scale;
    if (gt_cuda_dtype(c.scale, &m->scale) != 0)
        FAIL("cuda: scale type %s not supported", gt_dtype_name(c.scale));
    if (put_scalar(m->scale, p->alpha, m->alpha, "alpha", err, errlen) != 0 ||
        put_scalar(m->scale, p->beta, m->beta, "beta", err, errlen) != 0)
        return -1;
    m->opa = p->trans_a == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
    m->opb = p->trans_b == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
    m->act = c.act == GT_CAPS_ACT_RELU ? GT_ACT_RELU : c.act == GT_CAPS_ACT_GELU ? GT_ACT_GELU : GT_ACT_NONE;
    m->has_bias = p->bias != 0;
    static const cublasLtEpilogue_t epi[2][3] = {
        {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_RELU, CUBLASLT_EPILOGUE_GELU},
        {CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_RELU_BIAS, CUBLASLT_EPILOGUE_GELU_BIAS}};
    m->epilogue = epi[m->has_bias][m->act];
    if (m->has_bias) {
        if (gt_cuda_dtype(c.bias, &m->bias) != 0)
            FAIL("cuda: bias_type %s not supported", gt_dtype_name(c.bias));
        m->bias_set = 1;
        m->bias_kt = gt_cuda_kt_of(c.bias);
    }
    return 0;
}

/* ---- descriptors --------------------------------------------------------- */

int64_t gt_cuda_span(int64_t ld, int64_t cols, int64_t batch, int64_t stride)
{
    return (batch > 1 ? (batch - 1) * stride : 0) + ld * cols;
}

#define CKL(call, what)                                                                            \
    do {                                                                                           \
        cublasStatus_t st_ = (call);                                                               \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                        \
            snprintf(err, errlen, "cuda: %s: %s", what, gt_cuda_status_name(st_));                 \
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

int gt_cuda_desc_create(const gt_problem *p, const gt_cuda_map *m, const gt_cuda_ptrs *ptrs,
                        gt_cuda_desc *d, char *err, size_t errlen)
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
    gt_cuda_desc_destroy(d);
    return -1;
}

void gt_cuda_desc_destroy(gt_cuda_desc *d)
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
