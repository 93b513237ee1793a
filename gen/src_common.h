/* src_common.h: the device-code text the generated families' kernel
 * templates share (gen/gemv_src.c, gen/mma_src.c), as string-literal
 * pieces, and the -D encoding of a problem's types and epilogue; nothing
 * else. The templates concatenate the pieces at compile time, so each
 * template's text is the same, byte for byte, as when it spelled them out
 * (NVRTC's compile cache keys hash it). Not part of the public
 * gen_gemv.h / gen_mma.h interface. */
#ifndef GEN_SRC_COMMON_H
#define GEN_SRC_COMMON_H

#include "gt_problem.h"

/* the integer types */
#define GT_GEN_SRC_TYPES                \
    "typedef unsigned int u32;\n"       \
    "typedef unsigned short u16;\n"     \
    "typedef long long i64;\n"          \
    "typedef unsigned long long u64;\n"

/* f32 <-> bf16 (round to nearest even, NaNs kept quiet; one cvt on sm_80+,
 * which a D store of a memory-bound kernel notices) */
#define GT_GEN_SRC_BF16                                                                                      \
    "__device__ __forceinline__ float gt_u2f(u32 u) { union { u32 u; float f; } v; v.u = u; return v.f; }\n" \
    "__device__ __forceinline__ u32 gt_f2u(float f) { union { u32 u; float f; } v; v.f = f; return v.u; }\n" \
    "__device__ __forceinline__ float gt_bf2f(u32 h) { return gt_u2f(h << 16); }\n"                          \
    "__device__ __forceinline__ u16 gt_f2bf(float f) {\n"                                                    \
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n"                                                   \
    "  u16 h; asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h;\n"                          \
    "#else\n"                                                                                                \
    "  u32 u = gt_f2u(f);\n"                                                                                 \
    "  if ((u & 0x7fffffffu) > 0x7f800000u) return (u16)((u >> 16) | 0x40u);\n"                              \
    "  u += 0x7fffu + ((u >> 16) & 1u); return (u16)(u >> 16);\n"                                            \
    "#endif\n"                                                                                               \
    "}\n"

/* f32 <-> f16: HIP through _Float16, CUDA through PTX cvt */
#define GT_GEN_SRC_F16_HIP                                                                                                      \
    "__device__ __forceinline__ float gt_h2f(u32 h) { union { u16 u; _Float16 x; } v; v.u = (u16)h; return (float)v.x; }\n"   \
    "__device__ __forceinline__ u16 gt_f2h(float f) { union { u16 u; _Float16 x; } v; v.x = (_Float16)f; return v.u; }\n"
#define GT_GEN_SRC_F16_CUDA                                                                  \
    "__device__ __forceinline__ float gt_h2f(u32 h) {\n"                                     \
    "  float f; u16 x = (u16)h; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(x)); return f;\n" \
    "}\n"                                                                                    \
    "__device__ __forceinline__ u16 gt_f2h(float f) {\n"                                     \
    "  u16 h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h;\n"           \
    "}\n"

/* CUDA cp.async groups: close the group of copies issued so far; wait
 * until at most N groups are pending */
#define GT_GEN_SRC_CP_GROUPS                                                                                    \
    "__device__ __forceinline__ void gt_commit() { asm volatile(\"cp.async.commit_group;\" ::: \"memory\"); }\n" \
    "template <int N> __device__ __forceinline__ void gt_wait() {\n"                                            \
    "  asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(N) : \"memory\");\n"                                   \
    "}\n"

/* typed loads and stores of C, D and the bias (KT: 0 f32, 2 f16, 3 bf16) */
#define GT_GEN_SRC_GET_PUT                                                                  \
    "template <int KT> __device__ __forceinline__ float gt_get(const void *p, i64 i) {\n"   \
    "  if (KT == 0) return ((const float *)p)[i];\n"                                        \
    "  if (KT == 2) return gt_h2f(((const u16 *)p)[i]);\n"                                  \
    "  return gt_bf2f(((const u16 *)p)[i]);\n"                                              \
    "}\n"                                                                                   \
    "template <int KT> __device__ __forceinline__ void gt_put(void *p, i64 i, float v) {\n" \
    "  if (KT == 0) ((float *)p)[i] = v;\n"                                                 \
    "  else if (KT == 2) ((u16 *)p)[i] = gt_f2h(v);\n"                                      \
    "  else ((u16 *)p)[i] = gt_f2bf(v);\n"                                                  \
    "}\n"

/* the epilogue (alpha, fp8's scale_a x scale_b where the template defines
 * GT_F8 as cuBLASLt applies them: to the product only, beta * C, bias,
 * activation) and the store of one D element, for the template's argument
 * struct ARGS; GT_BETA 0 (beta == 0,
 * part of the problem) compiles out the read of C, whose mere possibility
 * cost the o projection's n = 16 kernel 3 % on the H100 */
#define GT_GEN_SRC_EPI(ARGS)                                                                      \
    "__device__ __forceinline__ float gt_ab(const " #ARGS " &g) {\n"                                \
    "#if defined(GT_F8) && GT_F8\n"                                                              \
    "  return (float)g.alpha * (*g.scale_a * *g.scale_b);\n"                                     \
    "#else\n"                                                                                    \
    "  return (float)g.alpha;\n"                                                                 \
    "#endif\n"                                                                                   \
    "}\n"                                                                                        \
    "__device__ __forceinline__ float gt_epi_ab(const " #ARGS " &g, i64 zb, i64 i, i64 j, float acc, float ab) {\n" \
    "  float v = ab * acc;\n"                                                                     \
    "#if GT_BETA\n"                                                                               \
    "  if (g.beta != 0.0) v += (float)g.beta * gt_get<GT_CKT>(g.c, zb * g.sc + i + j * g.ldc);\n" \
    "#endif\n"                                                                                    \
    "#if GT_BIASKT >= 0\n"                                                                        \
    "  v += gt_get<GT_BIASKT>(g.bias, i);\n"                                                      \
    "#endif\n"                                                                                    \
    "#if GT_ACT == 1\n"                                                                           \
    "  v = v > 0.f ? v : 0.f;\n"                                                                  \
    "#elif GT_ACT == 2\n"                                                                         \
    "  v = 0.5f * v * (1.f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));\n"              \
    "#endif\n"                                                                                    \
    "  return v;\n"                                                                               \
    "}\n"                                                                                         \
    "__device__ __forceinline__ float gt_epi(const " #ARGS " &g, i64 zb, i64 i, i64 j, float acc) {\n" \
    "  return gt_epi_ab(g, zb, i, j, acc, gt_ab(g));\n"                                           \
    "}\n"                                                                                         \
    "__device__ __forceinline__ void gt_store(const " #ARGS " &g, i64 zb, i64 i, i64 j, float v) {\n" \
    "  gt_put<GT_DKT>(g.d, zb * g.sd + i + j * g.ldd, v);\n"                                      \
    "}\n"

/* the "twopass" second kernel NAME: sums the split-K slices of the
 * workspace in a fixed order, then the epilogue */
#define GT_GEN_SRC_FIN(NAME, ARGS)                                                                              \
    "extern \"C\" __global__ void __launch_bounds__(256) " #NAME "(" #ARGS " g, i64 nbatch) {\n"              \
    "#if GT_SPLITK > 1 && GT_RED == 2\n"                                                                        \
    "  const i64 tot = nbatch * g.n * g.m;\n"                                                                   \
    "  for (i64 x = (i64)blockIdx.x * blockDim.x + threadIdx.x; x < tot; x += (i64)gridDim.x * blockDim.x) {\n" \
    "    float s = 0.f;\n"                                                                                      \
    "    for (int q = 0; q < GT_SPLITK; q++) s += g.ws[q * tot + x];\n"                                         \
    "    const i64 i = x % g.m, jz = x / g.m, j = jz % g.n, zb = jz / g.n;\n"                                   \
    "    gt_store(g, zb, i, j, gt_epi(g, zb, i, j, s));\n"                                                      \
    "  }\n"                                                                                                     \
    "#endif\n"                                                                                                  \
    "}\n"

/* The -D values both templates take from the problem: GT_AB (A's type: 0
 * bf16, 1 f16, 2 e4m3, 3 e5m2; the fp8 codes only in the "gemv" family,
 * whose rules alone admit fp8), bb (B's type, same codes: only fp8 A/B may
 * differ, and the gemv template takes it as GT_BB only then), GT_DKT,
 * GT_CKT, GT_BIASKT (0 f32, 2 f16, 3 bf16; bias -1 none), GT_ACT (0 none, 1
 * relu, 2 gelu), GT_BETA (0 when beta == 0: C is never read). */
typedef struct gt_gen_type_defs {
    int ab, bb, dkt, ckt, bkt, act, beta;
} gt_gen_type_defs;

/* 0, or -1 when p's types have no encoding (A/B: bf16 or f16 of one type,
 * or OCP fp8, e4m3/e5m2 in any mix). */
int gt_gen_type_defs_of(const gt_problem *p, gt_gen_type_defs *t);

/* Bytes of one A/B element the templates load: 1 for OCP fp8 inputs, else 2. */
int gt_gen_elem_size(const gt_problem *p);

#endif
