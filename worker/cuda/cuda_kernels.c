/* cuda_kernels.c: the cuda backend's own small kernels, compiled at run time
 * with NVRTC (worker nodes have no nvcc) and launched through the driver
 * API, which cuda/drv.c opens at run time: the binaries never link
 * libcuda.so.1 directly, so they still start (and the backend reports "no
 * device") on machines without a driver.
 *
 *   gt_fill  seeded random values, each exactly representable in its type
 *            (q * 2^-s with q using the type's significand bits), so the
 *            inputs carry no rounding and host and device agree bit for bit;
 *   gt_ref   the reference GEMM: a plain shared-memory tiled loop that
 *            decodes every element to double and accumulates in double,
 *            then applies alpha/beta/bias/activation like the epilogue; it
 *            computes all columns of D or a listed subset (cuda_check.c);
 *   gt_cmp   sum (out-ref)^2 and sum ref^2 in double over the reference's
 *            elements, one partial per block;
 *   gt_scan  counts the non-finite / still-poisoned elements of ALL of D
 *            from the raw bits (16-byte loads when D is dense);
 *   gt_fin   one block adding the partials in a fixed order, so the result
 *            does not depend on scheduling; only these 32 bytes go back to
 *            the host.
 *
 * The reference shares no code with cuBLASLt, so a wrong candidate cannot
 * agree with it by construction; prepare also recomputes sampled elements of
 * it on the host (cuda_check.c) before trusting it. The compile, module and
 * launches are cuda/'s (gt_cu.h), as for every kernel gemmtune runs. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_cuda.h"

/* ---- the fill's values on the host ------------------------------------------------- */

/* The fill kernel draws an integer q in [-qmax, qmax] and stores q * 2^-s,
 * where qmax uses exactly the significand bits of the type: every value is
 * exactly representable, so host and device agree on the inputs bit for bit
 * and the reference sees no input rounding. Integers stay small so that i8
 * outputs do not saturate for moderate k. The kernel below has the same
 * table. */
static const struct {
    int64_t qmax;
    int shift;
} k_fill[] = {
    [GT_CU_KT_F32] = {(1LL << 23) - 1, 23}, [GT_CU_KT_F64] = {(1LL << 52) - 1, 52},
    [GT_CU_KT_F16] = {2047, 11},            [GT_CU_KT_BF16] = {255, 8},
    [GT_CU_KT_E4M3] = {15, 4},              [GT_CU_KT_E5M2] = {7, 3},
    [GT_CU_KT_I8] = {4, 0},                 [GT_CU_KT_I32] = {1000, 0},
};

int64_t gt_cuda_fill_qmax(int kt)
{
    return (kt >= 0 && kt <= GT_CU_KT_I32) ? k_fill[kt].qmax : 0;
}

double gt_cuda_fill_value(int kt, int64_t q)
{
    if (kt < 0 || kt > GT_CU_KT_I32)
        return NAN;
    return ldexp((double)q, -k_fill[kt].shift);
}

/* Small float formats: value a * 2^-s with a < 2^(mbits+1), always normal
 * (the kernel's gt_enc_small). */
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
    case GT_CU_KT_F32: {
        float f = (float)ldexp((double)q, -23);
        memcpy(out, &f, 4);
        break;
    }
    case GT_CU_KT_F64: {
        double d = ldexp((double)q, -52);
        memcpy(out, &d, 8);
        break;
    }
    case GT_CU_KT_F16: {
        uint16_t h = (uint16_t)enc_small(q, 11, 15, 10, 15);
        memcpy(out, &h, 2);
        break;
    }
    case GT_CU_KT_BF16: {
        uint16_t h = (uint16_t)enc_small(q, 8, 127, 7, 15);
        memcpy(out, &h, 2);
        break;
    }
    case GT_CU_KT_E4M3: *(uint8_t *)out = (uint8_t)enc_small(q, 4, 7, 3, 7); break;
    case GT_CU_KT_E5M2: *(uint8_t *)out = (uint8_t)enc_small(q, 3, 15, 2, 7); break;
    case GT_CU_KT_I8: *(int8_t *)out = (int8_t)q; break;
    case GT_CU_KT_I32: {
        int32_t v = (int32_t)q;
        memcpy(out, &v, 4);
        break;
    }
    default: break;
    }
}

/* ---- the kernels ---------------------------------------------------------------------- */

/* Type codes are gt_cu_kt; the fill ranges are k_fill's. */
const char gt_cuda_kernels_src[] =
    "typedef unsigned long long u64;\n"
    "typedef long long i64;\n"
    "__device__ u64 gt_mix(u64 x) {\n"
    "  x += 0x9E3779B97F4A7C15ULL;\n"
    "  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;\n"
    "  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;\n"
    "  return x ^ (x >> 31);\n"
    "}\n"
    "__device__ double gt_pow2(int e) {\n"
    "  union { u64 u; double d; } v; v.u = (u64)(e + 1023) << 52; return v.d;\n"
    "}\n"
    "__device__ double gt_nan() { union { u64 u; double d; } v; v.u = 0x7FF8000000000000ULL; return v.d; }\n"
    "__device__ unsigned gt_enc_small(i64 q, int s, int bias, int mbits, int sbit) {\n"
    "  if (q == 0) return 0;\n"
    "  unsigned sign = q < 0; unsigned a = (unsigned)(q < 0 ? -q : q);\n"
    "  int e = 0; while ((a >> (e + 1)) != 0) e++;\n"
    "  unsigned ex = (unsigned)(e - s + bias);\n"
    "  unsigned mant = (a << (mbits - e)) & ((1u << mbits) - 1);\n"
    "  return sign << sbit | ex << mbits | mant;\n"
    "}\n"
    "__device__ double gt_dec_f16(unsigned h) {\n"
    "  int e = (h >> 10) & 31, m = h & 1023; double v;\n"
    "  if (e == 0) v = m * gt_pow2(-24);\n"
    "  else if (e == 31) return gt_nan();\n"
    "  else v = (1024 + m) * gt_pow2(e - 25);\n"
    "  return (h & 0x8000) ? -v : v;\n"
    "}\n"
    "__device__ double gt_dec_e4m3(unsigned b) {\n"
    "  int e = (b >> 3) & 15, m = b & 7; double v;\n"
    "  if (e == 15 && m == 7) return gt_nan();\n"
    "  if (e == 0) v = m * gt_pow2(-9); else v = (8 + m) * gt_pow2(e - 10);\n"
    "  return (b & 0x80) ? -v : v;\n"
    "}\n"
    "__device__ double gt_dec(const void *p, i64 i, i64 kt) {\n"
    "  switch (kt) {\n"
    "  case 0: return ((const float *)p)[i];\n"
    "  case 1: return ((const double *)p)[i];\n"
    "  case 2: return gt_dec_f16(((const unsigned short *)p)[i]);\n"
    "  case 3: { union { unsigned u; float f; } v;\n"
    "            v.u = (unsigned)((const unsigned short *)p)[i] << 16; return v.f; }\n"
    "  case 4: return gt_dec_e4m3(((const unsigned char *)p)[i]);\n"
    "  case 5: return gt_dec_f16((unsigned)((const unsigned char *)p)[i] << 8);\n"
    "  case 6: return ((const signed char *)p)[i];\n"
    "  case 7: return ((const int *)p)[i];\n"
    "  }\n"
    "  return gt_nan();\n"
    "}\n"
    "extern \"C\" __global__ void gt_fill(void *p, u64 n, int kt, u64 seed) {\n"
    "  const i64 qmax[8] = {(1LL << 23) - 1, (1LL << 52) - 1, 2047, 255, 15, 7, 4, 1000};\n"
    "  if (kt < 0 || kt > 7) return;\n"
    "  u64 span = (u64)(2 * qmax[kt] + 1);\n"
    "  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "       i += (u64)gridDim.x * blockDim.x) {\n"
    "    i64 q = (i64)(gt_mix(seed ^ gt_mix(i)) % span) - qmax[kt];\n"
    "    switch (kt) {\n"
    "    case 0: ((float *)p)[i] = (float)q * (float)gt_pow2(-23); break;\n"
    "    case 1: ((double *)p)[i] = (double)q * gt_pow2(-52); break;\n"
    "    case 2: ((unsigned short *)p)[i] = (unsigned short)gt_enc_small(q, 11, 15, 10, 15); break;\n"
    "    case 3: ((unsigned short *)p)[i] = (unsigned short)gt_enc_small(q, 8, 127, 7, 15); break;\n"
    "    case 4: ((unsigned char *)p)[i] = (unsigned char)gt_enc_small(q, 4, 7, 3, 7); break;\n"
    "    case 5: ((unsigned char *)p)[i] = (unsigned char)gt_enc_small(q, 3, 15, 2, 7); break;\n"
    "    case 6: ((signed char *)p)[i] = (signed char)q; break;\n"
    "    case 7: ((int *)p)[i] = (int)q; break;\n"
    "    }\n"
    "  }\n"
    "}\n"
    "struct gt_ref_args {\n"
    "  const void *a, *b, *c, *bias; double *r; const i64 *cols;\n"
    "  i64 m, n, k, lda, ldb, ldc, sa, sb, sc;\n"
    "  i64 ns;\n"
    "  i64 ta, tb, tc, tbias;\n"
    "  i64 transa, transb, act, has_c, has_bias;\n"
    "  i64 y0, z0;\n"
    "  double alpha, beta;\n"
    "};\n"
    "#define GT_T 16\n"
    /* blockIdx.y walks reference columns c; column c is D's column cols[c]
     * (c itself when cols is NULL) of batch entry z */
    "extern \"C\" __global__ void gt_ref(struct gt_ref_args g) {\n"
    "  __shared__ double As[GT_T][GT_T + 1], Bs[GT_T][GT_T + 1];\n"
    "  int tx = threadIdx.x, ty = threadIdx.y;\n"
    "  i64 i0 = (i64)blockIdx.x * GT_T, c0 = ((i64)blockIdx.y + g.y0) * GT_T;\n"
    "  i64 bz = (i64)blockIdx.z + g.z0;\n"
    "  double acc = 0;\n"
    "  for (i64 k0 = 0; k0 < g.k; k0 += GT_T) {\n"
    /* each load makes threadIdx.x walk the contiguous dimension */
    "    { int il = g.transa ? ty : tx, kl = g.transa ? tx : ty;\n"
    "      i64 i = i0 + il, kk = k0 + kl; double v = 0;\n"
    "      if (i < g.m && kk < g.k)\n"
    "        v = gt_dec(g.a, bz * g.sa + (g.transa ? kk + i * g.lda : i + kk * g.lda), g.ta);\n"
    "      As[il][kl] = v; }\n"
    "    { int jl = g.transb ? tx : ty, kl = g.transb ? ty : tx;\n"
    "      i64 c = c0 + jl, kk = k0 + kl; double v = 0;\n"
    "      if (c < g.ns && kk < g.k) {\n"
    "        i64 j = g.cols ? g.cols[c] : c;\n"
    "        v = gt_dec(g.b, bz * g.sb + (g.transb ? j + kk * g.ldb : kk + j * g.ldb), g.tb); }\n"
    "      Bs[kl][jl] = v; }\n"
    "    __syncthreads();\n"
    "    for (int kl = 0; kl < GT_T; kl++) acc += As[tx][kl] * Bs[kl][ty];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  i64 i = i0 + tx, c = c0 + ty;\n"
    "  if (i < g.m && c < g.ns) {\n"
    "    i64 j = g.cols ? g.cols[c] : c;\n"
    "    double v = g.alpha * acc;\n"
    "    if (g.has_c) v += g.beta * gt_dec(g.c, bz * g.sc + i + j * g.ldc, g.tc);\n"
    "    if (g.has_bias) v += gt_dec(g.bias, i, g.tbias);\n"
    "    if (g.act == 1) v = v > 0 ? v : 0;\n"
    "    else if (g.act == 2) v = 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));\n"
    "    g.r[(bz * g.ns + c) * g.m + i] = v;\n"
    "  }\n"
    "}\n"
    "struct gt_chk_args {\n"
    "  const void *d; const double *r; const i64 *cols;\n"
    "  double *part; u64 *bad; double *out;\n"
    "  i64 m, n, ns, batch, ldd, sd, dkt;\n"
    "};\n"
    /* Non-finite or poison, from the raw bits (mirrored by gt_cuda_is_bad):
     * f32/f64/f16/bf16/e5m2 exponent all ones (inf or NaN; 0xff.. poison is
     * NaN); e4m3fn S.1111.111 (its only NaN, no inf); i8 0x80 and i32
     * 0x80808080 (the poison, which valid outputs never equal). */
    "__device__ int gt_bad16(unsigned h, i64 kt) {\n"
    "  return kt == 2 ? (h & 0x7c00u) == 0x7c00u : (h & 0x7f80u) == 0x7f80u;\n"
    "}\n"
    "__device__ int gt_bad8(unsigned b, i64 kt) {\n"
    "  return kt == 4 ? (b & 0x7fu) == 0x7fu : kt == 5 ? (b & 0x7cu) == 0x7cu : b == 0x80u;\n"
    "}\n"
    "__device__ int gt_bad32(unsigned u, i64 kt) {\n"
    "  return kt == 0 ? (u & 0x7f800000u) == 0x7f800000u : u == 0x80808080u;\n"
    "}\n"
    "__device__ int gt_bad_at(const void *p, i64 i, i64 kt) {\n"
    "  switch (kt) {\n"
    "  case 0: case 7: return gt_bad32(((const unsigned *)p)[i], kt);\n"
    "  case 1: return (((const u64 *)p)[i] & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL;\n"
    "  case 2: case 3: return gt_bad16(((const unsigned short *)p)[i], kt);\n"
    "  default: return gt_bad8(((const unsigned char *)p)[i], kt);\n"
    "  }\n"
    "}\n"
    /* bad elements in one aligned 32-bit word of a dense buffer */
    "__device__ int gt_bad_word(unsigned w, i64 kt) {\n"
    "  switch (kt) {\n"
    "  case 0: case 7: return gt_bad32(w, kt);\n"
    "  case 2: case 3: return gt_bad16(w & 0xffffu, kt) + gt_bad16(w >> 16, kt);\n"
    "  default: return gt_bad8(w & 0xffu, kt) + gt_bad8((w >> 8) & 0xffu, kt) +\n"
    "                  gt_bad8((w >> 16) & 0xffu, kt) + gt_bad8(w >> 24, kt);\n"
    "  }\n"
    "}\n"
    "__device__ double gt_bsum(double v, double *sh) {\n"
    "  int t = threadIdx.x; sh[t] = v; __syncthreads();\n"
    "  for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (t < s) sh[t] += sh[t + s]; __syncthreads(); }\n"
    "  double r = sh[0]; __syncthreads(); return r;\n"
    "}\n"
    /* grid (x: rows, y: reference columns); 256 threads */
    "extern \"C\" __global__ void gt_cmp(struct gt_chk_args g) {\n"
    "  __shared__ double sh[256];\n"
    "  double num = 0, den = 0;\n"
    "  i64 tot = g.ns * g.batch;\n"
    "  for (i64 c = blockIdx.y; c < tot; c += gridDim.y) {\n"
    "    i64 b = c / g.ns, cc = c - b * g.ns;\n"
    "    i64 j = g.cols ? g.cols[cc] : cc;\n"
    "    const double *r = g.r + c * g.m;\n"
    "    i64 o = b * g.sd + j * g.ldd;\n"
    "    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < g.m;\n"
    "         i += (i64)gridDim.x * blockDim.x) {\n"
    "      double ref = r[i], e = gt_dec(g.d, o + i, g.dkt) - ref;\n"
    "      num += e * e; den += ref * ref;\n"
    "    }\n"
    "  }\n"
    "  num = gt_bsum(num, sh); den = gt_bsum(den, sh);\n"
    "  if (threadIdx.x == 0) {\n"
    "    i64 blk = (i64)blockIdx.y * gridDim.x + blockIdx.x;\n"
    "    g.part[2 * blk] = num; g.part[2 * blk + 1] = den;\n"
    "  }\n"
    "}\n"
    /* dense D (ldd == m, batch entries back to back): 1-D grid over 16-byte
     * chunks, the tail by element; else grid (x: rows, y: columns) */
    "extern \"C\" __global__ void gt_scan(struct gt_chk_args g, i64 dense, i64 es) {\n"
    "  __shared__ double sh[256];\n"
    "  u64 cnt = 0;\n"
    "  if (dense) {\n"
    "    i64 total = g.m * g.n * g.batch, chunks = total * es / 16;\n"
    "    i64 tid = (i64)blockIdx.x * blockDim.x + threadIdx.x, step = (i64)gridDim.x * blockDim.x;\n"
    "    const uint4 *q = (const uint4 *)g.d;\n"
    "    for (i64 x = tid; x < chunks; x += step) {\n"
    "      uint4 w = q[x];\n"
    "      if (g.dkt == 1) {\n"
    "        u64 lo = ((u64)w.y << 32) | w.x, hi = ((u64)w.w << 32) | w.z;\n"
    "        cnt += (lo & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL;\n"
    "        cnt += (hi & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL;\n"
    "      } else {\n"
    "        cnt += gt_bad_word(w.x, g.dkt) + gt_bad_word(w.y, g.dkt) + gt_bad_word(w.z, g.dkt) +\n"
    "               gt_bad_word(w.w, g.dkt);\n"
    "      }\n"
    "    }\n"
    "    for (i64 e = chunks * 16 / es + tid; e < total; e += step) cnt += gt_bad_at(g.d, e, g.dkt);\n"
    "  } else {\n"
    "    i64 tot = g.n * g.batch;\n"
    "    for (i64 c = blockIdx.y; c < tot; c += gridDim.y) {\n"
    "      i64 b = c / g.n, j = c - b * g.n, o = b * g.sd + j * g.ldd;\n"
    "      for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < g.m;\n"
    "           i += (i64)gridDim.x * blockDim.x)\n"
    "        cnt += gt_bad_at(g.d, o + i, g.dkt);\n"
    "    }\n"
    "  }\n"
    /* counts stay far below 2^53: a double sum is exact */
    "  double t = gt_bsum((double)cnt, sh);\n"
    "  if (threadIdx.x == 0) g.bad[(i64)blockIdx.y * gridDim.x + blockIdx.x] = (u64)t;\n"
    "}\n"
    /* one block of 256: fixed-order sums of ncmp and nscan partials */
    "extern \"C\" __global__ void gt_fin(struct gt_chk_args g, i64 ncmp, i64 nscan) {\n"
    "  __shared__ double sh[256];\n"
    "  double num = 0, den = 0, bad = 0;\n"
    "  for (i64 x = threadIdx.x; x < ncmp; x += blockDim.x) { num += g.part[2 * x]; den += g.part[2 * x + 1]; }\n"
    "  for (i64 x = threadIdx.x; x < nscan; x += blockDim.x) bad += (double)g.bad[x];\n"
    "  num = gt_bsum(num, sh); den = gt_bsum(den, sh); bad = gt_bsum(bad, sh);\n"
    "  if (threadIdx.x == 0) {\n"
    "    g.out[0] = num; g.out[1] = den;\n"
    "    ((u64 *)g.out)[2] = (u64)bad; g.out[3] = 0;\n"
    "  }\n"
    "}\n";

int gt_cuda_kernels_compile(int sm, char **image, size_t *len, int *is_cubin, char *err,
                            size_t errlen)
{
    gt_cu_image img;
    *image = NULL;
    if (gt_cu_nvrtc_compile(gt_cuda_kernels_src, "gt_cuda_kernels.cu", sm, NULL, 0, NULL, &img, err,
                            errlen) != 0)
        return -1;
    *image = (char *)img.data;
    *len = img.len;
    *is_cubin = img.cubin;
    return 0;
}

enum { K_FILL, K_REF, K_CMP, K_SCAN, K_FIN, K_COUNT };

struct gt_cuda_kernels {
    const gt_cu_drv *drv;
    CUmodule mod;
    CUfunction fn[K_COUNT];
};

int gt_cuda_kernels_load(int sm, gt_cuda_kernels **out, char *err, size_t errlen)
{
    static const char *const names[K_COUNT] = {"gt_fill", "gt_ref", "gt_cmp", "gt_scan", "gt_fin"};
    char *img = NULL;
    size_t len = 0;
    int cubin = 0;
    gt_cuda_kernels *k = calloc(1, sizeof *k);
    if (!k) {
        snprintf(err, errlen, "cuda: out of host memory");
        return -1;
    }
    if (!(k->drv = gt_cu_drv_get(err, errlen)) ||
        gt_cuda_kernels_compile(sm, &img, &len, &cubin, err, errlen) != 0 ||
        gt_cu_module_load(k->drv, img, cubin, K_COUNT, names, NULL, &k->mod, k->fn, err, errlen) != 0)
        goto fail;
    free(img);
    *out = k;
    return 0;
fail:
    free(img);
    gt_cuda_kernels_unload(k);
    return -1;
}

void gt_cuda_kernels_unload(gt_cuda_kernels *k)
{
    if (!k)
        return;
    if (k->mod)
        (void)k->drv->module_unload(k->mod); /* nothing to do about a failure at teardown */
    free(k);
}

/* One launch of helper kernel f with blocks of (bx, by) threads. */
static int launch(const gt_cuda_kernels *k, int f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                  unsigned by, cudaStream_t s, void **args, const char *what, char *err,
                  size_t errlen)
{
    const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, 1};
    return gt_cu_launch(k->drv, k->fn[f], grid, block, 0, (CUstream)s, args, 0, what, err, errlen);
}

int gt_cuda_fill(gt_cuda_kernels *k, cudaStream_t s, void *p, int64_t n, int kt, uint64_t seed,
                 char *err, size_t errlen)
{
    if (n <= 0)
        return 0;
    unsigned long long nn = (unsigned long long)n, sd = seed;
    int t = kt;
    void *args[] = {&p, &nn, &t, &sd};
    int64_t blocks = (n + 255) / 256;
    if (blocks > 8192)
        blocks = 8192; /* grid-stride loop covers the rest */
    return launch(k, K_FILL, (unsigned)blocks, 1, 1, 256, 1, s, args, "launch gt_fill", err, errlen);
}

int gt_cuda_ref(gt_cuda_kernels *k, cudaStream_t s, const gt_cuda_ref_args *a, long long batch,
                char *err, size_t errlen)
{
    const long long T = 16, YMAX = 65535, ZMAX = 65535;
    long long gx = (a->m + T - 1) / T, gy = (a->ns + T - 1) / T;
    if (gx > 0x7fffffffLL) {
        snprintf(err, errlen, "cuda: reference grid too large (m=%lld)", a->m);
        return -1;
    }
    for (long long z0 = 0; z0 < batch; z0 += ZMAX) {
        for (long long y0 = 0; y0 < gy; y0 += YMAX) {
            gt_cuda_ref_args g = *a;
            g.y0 = y0;
            g.z0 = z0;
            long long ny = gy - y0 < YMAX ? gy - y0 : YMAX;
            long long nz = batch - z0 < ZMAX ? batch - z0 : ZMAX;
            void *args[] = {&g};
            if (launch(k, K_REF, (unsigned)gx, (unsigned)ny, (unsigned)nz, (unsigned)T, (unsigned)T, s,
                       args, "launch gt_ref", err, errlen) != 0)
                return -1;
        }
    }
    return 0;
}

/* A 2-D grid of at most GT_CUDA_PARTS blocks of 256 threads: x over the m
 * rows (each thread a few elements), y over `cols` columns. */
static void grid2(long long m, long long cols, unsigned *gx, unsigned *gy)
{
    long long x = (m + 1023) / 1024; /* ~4 rows per thread */
    if (x < 1)
        x = 1;
    if (x > GT_CUDA_PARTS)
        x = GT_CUDA_PARTS;
    long long y = GT_CUDA_PARTS / x;
    if (y > cols)
        y = cols;
    if (y < 1)
        y = 1;
    *gx = (unsigned)x;
    *gy = (unsigned)y;
}

int gt_cuda_check_launch(gt_cuda_kernels *k, cudaStream_t s, const gt_cuda_check_args *a,
                         char *err, size_t errlen)
{
    if (a->dkt < 0 || a->dkt > GT_CU_KT_I32 || a->m < 1 || a->n < 1 || a->ns < 1 || a->batch < 1) {
        snprintf(err, errlen, "cuda: bad comparison arguments");
        return -1;
    }
    gt_cuda_check_args g = *a;
    unsigned cx, cy, sx, sy;
    grid2(a->m, a->ns * a->batch, &cx, &cy);
    long long es = (long long)gt_cu_kt_size((int)a->dkt);
    long long dense = a->ldd == a->m && (a->batch == 1 || a->sd == a->m * a->n) &&
                      ((uintptr_t)a->d % 16) == 0;
    if (dense) {
        long long chunks = a->m * a->n * a->batch * es / 16, b = (chunks + 255) / 256;
        sx = (unsigned)(b < 1 ? 1 : b > GT_CUDA_PARTS ? GT_CUDA_PARTS : b);
        sy = 1;
    } else {
        grid2(a->m, a->n * a->batch, &sx, &sy);
    }
    long long ncmp = (long long)cx * cy, nscan = (long long)sx * sy;
    void *cargs[] = {&g};
    void *sargs[] = {&g, &dense, &es};
    void *fargs[] = {&g, &ncmp, &nscan};
    if (launch(k, K_CMP, cx, cy, 1, 256, 1, s, cargs, "launch gt_cmp", err, errlen) != 0 ||
        launch(k, K_SCAN, sx, sy, 1, 256, 1, s, sargs, "launch gt_scan", err, errlen) != 0)
        return -1;
    return launch(k, K_FIN, 1, 1, 1, 256, 1, s, fargs, "launch gt_fin", err, errlen);
}
