/* cpu_data.c: the CPU backend's host-side data: f16/bf16 conversions
 * (round to nearest even), operand extents, random inputs, NaN poison and
 * the double-precision reference GEMM the candidates are checked against. */
#include <math.h>
#include <string.h>

#include "gt_bk_cpu.h"
#include "gt_util.h"

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* bf16 is the top half of an f32. */
float gt_cpu_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t gt_cpu_f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* keep NaN a (quiet) NaN */
    x += 0x7fffu + ((x >> 16) & 1u);          /* ties to even; overflow carries to inf */
    return (uint16_t)(x >> 16);
}

float gt_cpu_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)
        return bits_f32(sign | 0x7f800000u | (m << 13));
    if (e)
        return bits_f32(sign | ((e + 112u) << 23) | (m << 13)); /* rebias 15 -> 127 */
    float v = (float)m * 0x1p-24f;                              /* subnormal, exact */
    return sign ? -v : v;
}

uint16_t gt_cpu_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u)
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) /* 65520 and up round to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* below 2^-14: f16 subnormal or zero */
        uint32_t e = ax >> 23;
        if (e < 102u) /* below 2^-25: rounds to zero */
            return (uint16_t)sign;
        uint32_t m = (ax & 0x7fffffu) | 0x800000u, sh = 126u - e;
        uint32_t q = m >> sh, rem = m & ((1u << sh) - 1u), half = 1u << (sh - 1u);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = ax - 0x38000000u; /* rebias 127 -> 15 */
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

double gt_cpu_get(const void *buf, gt_dtype t, int64_t i)
{
    switch (t) {
    case GT_DT_F32: return ((const float *)buf)[i];
    case GT_DT_F16: return gt_cpu_f16_to_f32(((const uint16_t *)buf)[i]);
    case GT_DT_BF16: return gt_cpu_bf16_to_f32(((const uint16_t *)buf)[i]);
    default: return NAN;
    }
}

/* n contiguous elements from buf[off] widened into dst: the type switch is
 * outside the loop, this is the reference's inner loop. */
static void widen(const void *buf, gt_dtype t, int64_t off, int64_t n, double *dst)
{
    switch (t) {
    case GT_DT_F32: {
        const float *s = (const float *)buf + off;
        for (int64_t i = 0; i < n; i++)
            dst[i] = s[i];
        break;
    }
    case GT_DT_F16: {
        const uint16_t *s = (const uint16_t *)buf + off;
        for (int64_t i = 0; i < n; i++)
            dst[i] = gt_cpu_f16_to_f32(s[i]);
        break;
    }
    case GT_DT_BF16: {
        const uint16_t *s = (const uint16_t *)buf + off;
        for (int64_t i = 0; i < n; i++)
            dst[i] = gt_cpu_bf16_to_f32(s[i]);
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++)
            dst[i] = NAN;
    }
}

int64_t gt_cpu_extent(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride)
{
    /* Last element of the last matrix, plus one; a stride of 0 broadcasts. */
    return (batch - 1) * stride + (cols - 1) * ld + rows;
}

void gt_cpu_fill_random(void *buf, gt_dtype t, int64_t n, uint64_t *state)
{
    for (int64_t i = 0; i < n; i++) {
        /* Uniform in [-1,1]; magnitudes below 1/256 are redrawn so no value
         * is zero (or subnormal) in any of the three types: a zero hides
         * kernels that skip work. */
        float v;
        do
            v = (float)((double)(gt_rand_u64(state) >> 11) * 0x1p-52 - 1.0);
        while (fabsf(v) < 1.0f / 256);
        switch (t) {
        case GT_DT_F32: ((float *)buf)[i] = v; break;
        case GT_DT_F16: ((uint16_t *)buf)[i] = gt_cpu_f32_to_f16(v); break;
        case GT_DT_BF16: ((uint16_t *)buf)[i] = gt_cpu_f32_to_bf16(v); break;
        default: break;
        }
    }
}

void gt_cpu_poison(void *buf, gt_dtype t, int64_t n)
{
    if (t == GT_DT_F32) {
        float nan = bits_f32(0x7fc00000u);
        for (int64_t i = 0; i < n; i++)
            ((float *)buf)[i] = nan;
        return;
    }
    uint16_t nan = t == GT_DT_F16 ? 0x7e00u : 0x7fc0u;
    for (int64_t i = 0; i < n; i++)
        ((uint16_t *)buf)[i] = nan;
}

int gt_cpu_is_poison(const void *buf, gt_dtype t, int64_t i)
{
    if (t == GT_DT_F32)
        return f32_bits(((const float *)buf)[i]) == 0x7fc00000u;
    return ((const uint16_t *)buf)[i] == (t == GT_DT_F16 ? 0x7e00u : 0x7fc0u);
}

/* ref[i] = alpha * sum_p op(A)[i,p] op(B)[p,j] + beta * C[i,j] for batch bi,
 * all in double from the stored (type-rounded) inputs. tmp: max(m, k)
 * doubles, bcol: k doubles of scratch. Loops follow the storage order. */
int gt_cpu_ref_column(const gt_problem *p, const void *a, const void *b, const void *c,
                      int64_t bi, int64_t j, double *ref, double *tmp, double *bcol)
{
    const int64_t m = p->m, k = p->k;
    const int64_t oa = bi * p->stride_a, ob = bi * p->stride_b;
    if (p->trans_b == 'N') {
        widen(b, p->b_type, ob + j * p->ldb, k, bcol);
    } else {
        for (int64_t q = 0; q < k; q++)
            bcol[q] = gt_cpu_get(b, p->b_type, ob + j + q * p->ldb);
    }
    if (p->trans_a == 'N') { /* column q of A is contiguous: axpy */
        for (int64_t i = 0; i < m; i++)
            ref[i] = 0;
        for (int64_t q = 0; q < k; q++) {
            widen(a, p->a_type, oa + q * p->lda, m, tmp);
            const double s = bcol[q];
            for (int64_t i = 0; i < m; i++)
                ref[i] += tmp[i] * s;
        }
    } else { /* row i of op(A) is contiguous: dot */
        for (int64_t i = 0; i < m; i++) {
            widen(a, p->a_type, oa + i * p->lda, k, tmp);
            double s = 0;
            for (int64_t q = 0; q < k; q++)
                s += tmp[q] * bcol[q];
            ref[i] = s;
        }
    }
    for (int64_t i = 0; i < m; i++) {
        double v = p->alpha * ref[i];
        if (p->beta != 0.0)
            v += p->beta * gt_cpu_get(c, p->c_type, bi * p->stride_c + i + j * p->ldc);
        ref[i] = v;
    }
    return 0;
}
