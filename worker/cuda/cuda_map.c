/* cuda_map.c: the pure-host half of the cuda backend: gt_problem ->
 * cuBLASLt types, compute/scale types, epilogue, host scalars and
 * descriptors; the element codecs shared with the NVRTC kernels. Nothing
 * here touches a GPU, so the GPU-less CI tests all of it
 * (tests/unit/test_cuda_host.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

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

static int is16(gt_dtype t) { return t == GT_DT_F16 || t == GT_DT_BF16; }
static int isf8(gt_dtype t) { return t == GT_DT_F8E4M3 || t == GT_DT_F8E5M2; }
static int isf32(gt_dtype t) { return t == GT_DT_F32 || t == GT_DT_TF32; }

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

/* FP8, following the cuBLASLt documentation of cublasLtMatmul (its FP8
 * type table and "to use FP8 kernels" requirements). Compute
 * CUBLAS_COMPUTE_32F and scale type CUDA_R_32F only (map_compute):
 *
 *   A     B     C     D                   bias (the only one accepted)
 *   e4m3  e4m3  bf16  bf16 | e4m3         bf16
 *   e4m3  e4m3  f16   f16  | e4m3         f16
 *   e4m3  e4m3  f32   f32                 bf16
 *   e4m3  e5m2  bf16  bf16 | e4m3 | e5m2  bf16   (e5m2 x e4m3 alike)
 *   e4m3  e5m2  f16   f16  | e4m3 | e5m2  f16
 *   e4m3  e5m2  f32   f32                 bf16
 *
 * e5m2 x e5m2 is not supported, C is never fp8 (so no C scale), and an
 * fp8 D takes its 16-bit C's type for the bias. Layout: A transposed and
 * B not ("TN") on sm_89 (Ada), sm_90 (Hopper) and sm_12x (GeForce
 * Blackwell); any layout on sm_100 and sm_11x. Every matrix must meet the
 * Tensor Core alignment, which is a requirement for fp8: rows of each
 * stored operand ((opA == N ? m : k) for A, (opB == N ? k : n) for B, m
 * for C) and lda, ldb, ldc, ldd and the batch strides are multiples of 16
 * bytes; pointers are 16-byte aligned (prepare's are 256). The descriptor
 * gets A_SCALE_POINTER and B_SCALE_POINTER (device f32 1.0) always and
 * D_SCALE_POINTER when D is fp8; AMAX_D is optional and not requested.
 * This is the documented table, not yet confirmed row by row on a GPU. */
static int map_fp8(const gt_problem *p, int sm, char *err, size_t errlen)
{
    gt_dtype a = p->a_type, b = p->b_type, c = p->c_type, d = p->d_type;
    if (a == GT_DT_F8E5M2 && b == GT_DT_F8E5M2)
        FAIL("cuda: fp8 A and B cannot both be e5m2");
    if (sm < 89)
        FAIL("cuda: fp8 requires sm_89 or newer (device sm_%d)", sm);
    if ((sm < 100 || sm >= 120) && (p->trans_a != 'T' || p->trans_b != 'N'))
        FAIL("cuda: fp8 requires transA=T transB=N on sm_%d (got %c%c)", sm, p->trans_a,
             p->trans_b);
    int mixed = a != b;
    if (isf32(c) || isf32(d)) {
        if (c != GT_DT_F32 || d != GT_DT_F32)
            FAIL("cuda: fp8 with f32 output needs C and D both f32 (got %s/%s)", gt_dtype_name(c),
                 gt_dtype_name(d));
    } else if (!is16(c)) {
        FAIL("cuda: fp8 needs c_type bf16, f16 or f32 (got %s)", gt_dtype_name(c));
    } else if (d != c && d != GT_DT_F8E4M3 && !(mixed && d == GT_DT_F8E5M2)) {
        FAIL("cuda: fp8 %s x %s with c_type %s needs d_type %s or e4m3%s (got %s)",
             gt_dtype_name(a), gt_dtype_name(b), gt_dtype_name(c), gt_dtype_name(c),
             mixed ? " or e5m2" : "", gt_dtype_name(d));
    }
    if (p->bias && p->bias_type != GT_DT_INVALID) {
        gt_dtype want = d == GT_DT_F32 ? GT_DT_BF16 : c;
        if (p->bias_type != want)
            FAIL("cuda: fp8 with C %s / D %s needs bias_type %s (got %s)", gt_dtype_name(c),
                 gt_dtype_name(d), gt_dtype_name(want), gt_dtype_name(p->bias_type));
    }
    const struct {
        const char *what;
        int64_t v;
        gt_dtype t;
    } al[] = {
        {"rows of A", p->trans_a == 'N' ? p->m : p->k, a},
        {"rows of B", p->trans_b == 'N' ? p->k : p->n, b},
        {"m (rows of C)", p->m, c},
        {"lda", p->lda, a},
        {"ldb", p->ldb, b},
        {"ldc", p->ldc, c},
        {"ldd", p->ldd, d},
        {"stride_a", p->batch > 1 ? p->stride_a : 0, a},
        {"stride_b", p->batch > 1 ? p->stride_b : 0, b},
        {"stride_c", p->batch > 1 ? p->stride_c : 0, c},
        {"stride_d", p->batch > 1 ? p->stride_d : 0, d},
    };
    for (size_t i = 0; i < sizeof al / sizeof al[0]; i++)
        if ((al[i].v * (int64_t)gt_dtype_size(al[i].t)) % 16 != 0)
            FAIL("cuda: fp8 requires %s=%lld to be a multiple of 16 bytes (%s)", al[i].what,
                 (long long)al[i].v, gt_dtype_name(al[i].t));
    return 0;
}

/* Compute type and the one scale type cuBLASLt accepts with it. The rules
 * follow the cublasLtMatmul type tables (fp8 in full: map_fp8); finer
 * limits of the other types (alignment) are left to cuBLASLt itself, whose
 * refusal prepare reports with the status name. */
static int map_compute(const gt_problem *p, int sm, gt_cuda_map *m, gt_dtype *scale, char *err,
                       size_t errlen)
{
    gt_dtype a = p->a_type, b = p->b_type, c = p->c_type, d = p->d_type;
    const char *an = gt_dtype_name(a), *bn = gt_dtype_name(b);
    if (!isf8(a) || !isf8(b)) {
        if (gt_cuda_kt_of(a) != gt_cuda_kt_of(b))
            FAIL("cuda: a_type %s and b_type %s differ (mixed inputs only for fp8)", an, bn);
    }
    switch (p->compute_type) {
    case GT_DT_F64:
        if (a != GT_DT_F64 || c != GT_DT_F64 || d != GT_DT_F64)
            FAIL("cuda: compute f64 needs f64 A/B/C/D (got %s/%s/%s/%s)", an, bn,
                 gt_dtype_name(c), gt_dtype_name(d));
        m->compute = CUBLAS_COMPUTE_64F;
        *scale = GT_DT_F64;
        return 0;
    case GT_DT_TF32:
        if (!isf32(a) || !isf32(c) || !isf32(d))
            FAIL("cuda: compute tf32 needs f32 A/B/C/D (got %s/%s/%s/%s)", an, bn,
                 gt_dtype_name(c), gt_dtype_name(d));
        if (sm < 80)
            FAIL("cuda: tf32 requires sm_80 or newer (device sm_%d)", sm);
        m->compute = CUBLAS_COMPUTE_32F_FAST_TF32;
        *scale = GT_DT_F32;
        return 0;
    case GT_DT_F16:
        if (a != GT_DT_F16 || c != GT_DT_F16 || d != GT_DT_F16)
            FAIL("cuda: compute f16 needs f16 A/B/C/D (got %s/%s/%s/%s)", an, bn,
                 gt_dtype_name(c), gt_dtype_name(d));
        m->compute = CUBLAS_COMPUTE_16F;
        *scale = GT_DT_F16;
        return 0;
    case GT_DT_I32:
        if (a != GT_DT_I8)
            FAIL("cuda: compute i32 needs i8 A/B (got %s/%s)", an, bn);
        if (d == GT_DT_I32 && c == GT_DT_I32)
            *scale = GT_DT_I32;
        else if (d == GT_DT_I8 && c == GT_DT_I8)
            *scale = GT_DT_F32;
        else
            FAIL("cuda: i8 GEMM needs C/D both i32 or both i8 (got %s/%s)", gt_dtype_name(c),
                 gt_dtype_name(d));
        m->compute = CUBLAS_COMPUTE_32I;
        return 0;
    case GT_DT_F32:
        m->compute = CUBLAS_COMPUTE_32F;
        *scale = GT_DT_F32;
        if (isf32(a)) {
            if (!isf32(c) || !isf32(d))
                FAIL("cuda: f32 inputs need f32 C/D (got %s/%s)", gt_dtype_name(c),
                     gt_dtype_name(d));
        } else if (is16(a)) {
            if (a == GT_DT_BF16 && sm < 80)
                FAIL("cuda: bf16 requires sm_80 or newer (device sm_%d)", sm);
            if (c != d || (d != a && d != GT_DT_F32))
                FAIL("cuda: %s inputs need C/D both %s or both f32 (got %s/%s)", an, an,
                     gt_dtype_name(c), gt_dtype_name(d));
        } else if (isf8(a)) {
            if (map_fp8(p, sm, err, errlen) != 0)
                return -1;
            m->fp8 = 1;
            m->d_scale = isf8(d);
        } else if (a == GT_DT_I8) {
            if (!isf32(c) || !isf32(d))
                FAIL("cuda: i8 inputs with f32 compute need f32 C/D (got %s/%s)",
                     gt_dtype_name(c), gt_dtype_name(d));
        } else {
            FAIL("cuda: input type %s not supported with compute f32", an);
        }
        return 0;
    default:
        FAIL("cuda: compute type %s not supported (f32, tf32, f16, f64, i32)",
             gt_dtype_name(p->compute_type));
    }
}

/* The element type cuBLASLt reads the bias in when none is given: D's type,
 * except fp8 (bf16 with an f32 D, C's 16-bit type with an fp8 D: see
 * map_fp8) and i8 output (the f32 scale type). */
static gt_dtype default_bias(const gt_problem *p)
{
    if (isf8(p->a_type) && isf32(p->d_type))
        return GT_DT_BF16;
    if (isf8(p->a_type) && isf8(p->d_type))
        return p->c_type;
    if (p->d_type == GT_DT_I8)
        return GT_DT_F32;
    return p->d_type;
}

int gt_cuda_map_problem(const gt_problem *p, int sm, gt_cuda_map *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    if (gt_problem_check(p, err, errlen) != 0) {
        char why[200];
        snprintf(why, sizeof why, "%s", err);
        FAIL("cuda: bad problem: %s", why);
    }
    const struct {
        const char *name;
        gt_dtype t;
        cudaDataType_t *out;
        int *kt;
    } ops[] = {{"a_type", p->a_type, &m->a, &m->akt},
               {"b_type", p->b_type, &m->b, &m->bkt},
               {"c_type", p->c_type, &m->c, &m->ckt},
               {"d_type", p->d_type, &m->d, &m->dkt}};
    for (size_t i = 0; i < 4; i++) {
        if (gt_cuda_dtype(ops[i].t, ops[i].out) != 0)
            FAIL("cuda: %s %s has no cuBLASLt storage type", ops[i].name,
                 gt_dtype_name(ops[i].t));
        *ops[i].kt = gt_cuda_kt_of(ops[i].t);
    }
    gt_dtype scale = GT_DT_INVALID;
    if (map_compute(p, sm, m, &scale, err, errlen) != 0)
        return -1;
    if (p->scale_type != scale)
        FAIL("cuda: %s with %s inputs needs scale_type %s (got %s)",
             gt_cuda_compute_name(m->compute), gt_dtype_name(p->a_type), gt_dtype_name(scale),
             gt_dtype_name(p->scale_type));
    if (gt_cuda_dtype(scale, &m->scale) != 0)
        FAIL("cuda: scale type %s not supported", gt_dtype_name(scale));
    if (put_scalar(m->scale, p->alpha, m->alpha, "alpha", err, errlen) != 0 ||
        put_scalar(m->scale, p->beta, m->beta, "beta", err, errlen) != 0)
        return -1;
    m->opa = p->trans_a == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
    m->opb = p->trans_b == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;

    const char *act = p->activation;
    if (act[0] == 0 || strcmp(act, "none") == 0)
        m->act = GT_ACT_NONE;
    else if (strcmp(act, "relu") == 0)
        m->act = GT_ACT_RELU;
    else if (strcmp(act, "gelu") == 0 || strcmp(act, "gelu_tanh") == 0)
        m->act = GT_ACT_GELU; /* cuBLASLt's GELU is the tanh approximation */
    else
        FAIL("cuda: activation '%s' has no cuBLASLt epilogue (none, relu, gelu)", act);
    m->has_bias = p->bias != 0;
    static const cublasLtEpilogue_t epi[2][3] = {
        {CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_RELU, CUBLASLT_EPILOGUE_GELU},
        {CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_RELU_BIAS, CUBLASLT_EPILOGUE_GELU_BIAS}};
    m->epilogue = epi[m->has_bias][m->act];
    if (m->has_bias) {
        gt_dtype bt = p->bias_type != GT_DT_INVALID ? p->bias_type : default_bias(p);
        if (gt_cuda_dtype(bt, &m->bias) != 0 || bt == GT_DT_TF32)
            FAIL("cuda: bias_type %s not supported", gt_dtype_name(bt));
        m->bias_set = 1;
        m->bias_kt = gt_cuda_kt_of(bt);
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
