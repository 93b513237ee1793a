/* cu_types.c: cuBLASLt's type, compute and epilogue codes against the
 * problem model, one table each that both directions read (the worker maps
 * a problem to descriptors, libgemmtune maps an application's descriptors
 * back), the element codecs, and host scalars (gt_cu_host.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gt_cu_host.h"

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return -1;                                                                                 \
    } while (0)

/* ---- the tables ------------------------------------------------------------------- */

static const struct {
    gt_dtype t;
    int32_t code;
    int kt;
    const char *name;
} k_types[] = {
    {GT_DT_F32, GT_CU_R_32F, GT_CU_KT_F32, "CUDA_R_32F"},
    {GT_DT_F64, GT_CU_R_64F, GT_CU_KT_F64, "CUDA_R_64F"},
    {GT_DT_F16, GT_CU_R_16F, GT_CU_KT_F16, "CUDA_R_16F"},
    {GT_DT_BF16, GT_CU_R_16BF, GT_CU_KT_BF16, "CUDA_R_16BF"},
    {GT_DT_F8E4M3, GT_CU_R_8F_E4M3, GT_CU_KT_E4M3, "CUDA_R_8F_E4M3"},
    {GT_DT_F8E5M2, GT_CU_R_8F_E5M2, GT_CU_KT_E5M2, "CUDA_R_8F_E5M2"},
    {GT_DT_I8, GT_CU_R_8I, GT_CU_KT_I8, "CUDA_R_8I"},
    {GT_DT_I32, GT_CU_R_32I, GT_CU_KT_I32, "CUDA_R_32I"},
};
#define NTYPES (sizeof k_types / sizeof k_types[0])

static const struct {
    gt_dtype t;
    int32_t code;
    const char *name;
} k_computes[] = {
    {GT_DT_F32, GT_CU_COMPUTE_32F, "CUBLAS_COMPUTE_32F"},
    {GT_DT_TF32, GT_CU_COMPUTE_32F_FAST_TF32, "CUBLAS_COMPUTE_32F_FAST_TF32"},
    {GT_DT_F16, GT_CU_COMPUTE_16F, "CUBLAS_COMPUTE_16F"},
    {GT_DT_F64, GT_CU_COMPUTE_64F, "CUBLAS_COMPUTE_64F"},
    {GT_DT_I32, GT_CU_COMPUTE_32I, "CUBLAS_COMPUTE_32I"},
};
#define NCOMPUTES (sizeof k_computes / sizeof k_computes[0])

static const struct {
    int bias;
    gt_caps_act act;
    uint32_t code;
} k_epilogues[] = {
    {0, GT_CAPS_ACT_NONE, GT_CU_EPI_DEFAULT}, {0, GT_CAPS_ACT_RELU, GT_CU_EPI_RELU},
    {0, GT_CAPS_ACT_GELU, GT_CU_EPI_GELU},    {1, GT_CAPS_ACT_NONE, GT_CU_EPI_BIAS},
    {1, GT_CAPS_ACT_RELU, GT_CU_EPI_RELU_BIAS}, {1, GT_CAPS_ACT_GELU, GT_CU_EPI_GELU_BIAS},
};
#define NEPILOGUES (sizeof k_epilogues / sizeof k_epilogues[0])

/* The table row of a problem type's storage; -1 when it has none. */
static int type_row(gt_dtype t)
{
    if (t == GT_DT_TF32)
        t = GT_DT_F32; /* tf32 is f32 storage with tf32 math */
    for (size_t i = 0; i < NTYPES; i++)
        if (k_types[i].t == t)
            return (int)i;
    return -1;
}

static int type_row_of_code(int32_t code)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (k_types[i].code == code)
            return (int)i;
    return -1;
}

int32_t gt_cu_type_code(gt_dtype t)
{
    int r = type_row(t);
    return r < 0 ? -1 : k_types[r].code;
}

gt_dtype gt_cu_type_of(int32_t code)
{
    int r = type_row_of_code(code);
    return r < 0 ? GT_DT_INVALID : k_types[r].t;
}

const char *gt_cu_type_name(int32_t code)
{
    int r = type_row_of_code(code);
    return r < 0 ? "CUDA_R_?" : k_types[r].name;
}

int gt_cu_kt_of(gt_dtype t)
{
    int r = type_row(t);
    return r < 0 ? -1 : k_types[r].kt;
}

size_t gt_cu_kt_size(int kt)
{
    static const size_t bytes[] = {
        [GT_CU_KT_F32] = 4, [GT_CU_KT_F64] = 8, [GT_CU_KT_F16] = 2, [GT_CU_KT_BF16] = 2,
        [GT_CU_KT_E4M3] = 1, [GT_CU_KT_E5M2] = 1, [GT_CU_KT_I8] = 1, [GT_CU_KT_I32] = 4,
    };
    return kt >= 0 && kt <= GT_CU_KT_I32 ? bytes[kt] : 0;
}

int32_t gt_cu_compute_code(gt_dtype compute)
{
    for (size_t i = 0; i < NCOMPUTES; i++)
        if (k_computes[i].t == compute)
            return k_computes[i].code;
    return -1;
}

gt_dtype gt_cu_compute_of(int32_t code)
{
    for (size_t i = 0; i < NCOMPUTES; i++)
        if (k_computes[i].code == code)
            return k_computes[i].t;
    return GT_DT_INVALID;
}

const char *gt_cu_compute_name(int32_t code)
{
    for (size_t i = 0; i < NCOMPUTES; i++)
        if (k_computes[i].code == code)
            return k_computes[i].name;
    return "CUBLAS_COMPUTE_?";
}

uint32_t gt_cu_epilogue_code(int bias, gt_caps_act act)
{
    for (size_t i = 0; i < NEPILOGUES; i++)
        if (k_epilogues[i].bias == (bias != 0) && k_epilogues[i].act == act)
            return k_epilogues[i].code;
    return GT_CU_EPI_DEFAULT; /* gt_caps_act has no other value */
}

int gt_cu_epilogue_of(uint32_t code, int *bias, gt_caps_act *act)
{
    for (size_t i = 0; i < NEPILOGUES; i++)
        if (k_epilogues[i].code == code) {
            *bias = k_epilogues[i].bias;
            *act = k_epilogues[i].act;
            return 0;
        }
    return -1;
}

/* ---- element codecs ----------------------------------------------------------------- */

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

double gt_cu_decode(int kt, const void *buf, size_t i)
{
    switch (kt) {
    case GT_CU_KT_F32: {
        float f;
        memcpy(&f, (const char *)buf + i * 4, 4);
        return f;
    }
    case GT_CU_KT_F64: {
        double d;
        memcpy(&d, (const char *)buf + i * 8, 8);
        return d;
    }
    case GT_CU_KT_F16: {
        uint16_t h;
        memcpy(&h, (const char *)buf + i * 2, 2);
        return dec_f16(h);
    }
    case GT_CU_KT_BF16: {
        uint16_t h;
        memcpy(&h, (const char *)buf + i * 2, 2);
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case GT_CU_KT_E4M3: return dec_e4m3(((const uint8_t *)buf)[i]);
    case GT_CU_KT_E5M2: return dec_f16((uint16_t)(((const uint8_t *)buf)[i] << 8));
    case GT_CU_KT_I8: return ((const int8_t *)buf)[i];
    case GT_CU_KT_I32: {
        int32_t v;
        memcpy(&v, (const char *)buf + i * 4, 4);
        return v;
    }
    default: return NAN;
    }
}

uint16_t gt_cu_f32_to_f16(float f)
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

/* ---- host scalars ------------------------------------------------------------------ */

int gt_cu_scalar_put(int32_t scale_type, double v, unsigned char out[8], const char *name, char *err,
                     size_t errlen)
{
    memset(out, 0, 8);
    switch (scale_type) {
    case GT_CU_R_32F: {
        float f = (float)v;
        memcpy(out, &f, 4);
        return 0;
    }
    case GT_CU_R_64F: memcpy(out, &v, 8); return 0;
    case GT_CU_R_16F: {
        uint16_t h = gt_cu_f32_to_f16((float)v);
        memcpy(out, &h, 2);
        return 0;
    }
    case GT_CU_R_32I: {
        if (v != floor(v) || fabs(v) > 2147483647.0)
            FAIL("cuda: %s=%g must be an integer with scale type i32", name, v);
        int32_t i = (int32_t)v;
        memcpy(out, &i, 4);
        return 0;
    }
    default: FAIL("cuda: scale type %s not supported", gt_cu_type_name(scale_type));
    }
}

double gt_cu_scalar_get(int32_t scale_type, const void *p)
{
    if (!p)
        return 0;
    switch (scale_type) {
    case GT_CU_R_32F:
    case GT_CU_R_64F:
    case GT_CU_R_16F:
    case GT_CU_R_32I: return gt_cu_decode(gt_cu_kt_of(gt_cu_type_of(scale_type)), p, 0);
    default: return 0; /* no other scale type is modelled */
    }
}
