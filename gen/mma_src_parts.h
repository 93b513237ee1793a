/* mma_src_parts.h: the pieces of device-code text the "mma" family's
 * templates share (gen/mma_src.c: the mma.sync and HIP MFMA templates;
 * gen/mma_wg_src.c: the wgmma + TMA template): the argument block and index
 * math, the CTA's tile, split and panels, and the epilogue of one
 * accumulator with the split-K reductions. Each expects the names its
 * comment lists (g, tid, row0, col0, zb, sk, acc[i][j][e], ii, jj). */
#ifndef GEN_MMA_SRC_PARTS_H
#define GEN_MMA_SRC_PARTS_H

#include "gen_mma.h"
#include "src_common.h"

#define GT_STR_(...) #__VA_ARGS__
#define GT_XSTR(...) GT_STR_(__VA_ARGS__)

/* the argument block, the index math (gen_mma.h) and the bf16 conversions */
#define GT_MMA_SRC_ARGS                                                                                      \
    "struct gt_mma_args {\n"                                                                                 \
    "  const void *a, *b, *c, *bias; void *d; float *ws; u32 *cnt;\n"                                        \
    "  i64 m, n, k, lda, ldb, ldc, ldd, sa, sb, sc, sd, kper;\n"                                             \
    "  double alpha, beta;\n"                                                                                \
    "#if defined(GT_F8) && GT_F8\n"                                                                          \
    "  const float *scale_a, *scale_b;\n"                                                                    \
    "#endif\n"                                                                                               \
    "};\n"                                                                                                   \
    "#define GT_MMA_HD __device__ __forceinline__\n"                                                         \
    GT_XSTR(GT_MMA_INDEX_FNS) "\n"                                                                           \
    GT_GEN_SRC_BF16

/* the CTA's tile under the raster, its split of k and its operand panels */
#define GT_MMA_SRC_CTA                                                                 \
    "  const int wm = warp % GT_WGM, wn = warp / GT_WGM;\n"                            \
    "  const i64 zb = blockIdx.z / GT_SPLITK;\n"                                       \
    "  const int sk = blockIdx.z % GT_SPLITK;\n"                                       \
    "  const i64 npm = (g.m + GT_BM - 1) / GT_BM, npn = (g.n + GT_BN - 1) / GT_BN;\n"  \
    "  i64 pm, pn;\n"                                                                  \
    "  gt_mma_tile(blockIdx.x, npm, npn, GT_SWZ, &pm, &pn);\n"                         \
    "  const i64 row0 = pm * GT_BM, col0 = pn * GT_BN;\n"                              \
    "  const i64 kb = (i64)sk * g.kper, ke = kb + g.kper < g.k ? kb + g.kper : g.k;\n" \
    "  const int nk = ke > kb ? (int)((ke - kb + GT_BK - 1) / GT_BK) : 0;\n"           \
    "  const u16 *A = (const u16 *)g.a + zb * g.sa + row0 * g.lda;\n"                  \
    "  const u16 *B = (const u16 *)g.b + zb * g.sb + col0 * g.ldb;\n"                  \
    "  const i64 mleft = g.m - row0, nleft = g.n - col0;\n"

/* batches, for the "twopass" workspace slices */
#define GT_MMA_SRC_NBATCH                           \
    "#if GT_SPLITK > 1 && GT_RED == 2\n"            \
    "  const i64 nbatch = gridDim.z / GT_SPLITK;\n" \
    "#endif\n"

/* one accumulator (i, j, e) at D element (ii, jj): the epilogue, a split-K atomic or a workspace slice */
#define GT_MMA_SRC_OUT                                                                \
    "        if (ii >= g.m || jj >= g.n) continue;\n"                                 \
    "#if GT_SPLITK == 1\n"                                                            \
    "        gt_store(g, zb, ii, jj, gt_epi(g, zb, ii, jj, acc[i][j][e]));\n"         \
    "#elif GT_RED == 1\n"                                                             \
    "        atomicAdd(g.ws + (zb * g.n + jj) * g.m + ii, acc[i][j][e]);\n"           \
    "#else\n"                                                                         \
    "        g.ws[(((i64)sk * nbatch + zb) * g.n + jj) * g.m + ii] = acc[i][j][e];\n" \
    "#endif\n"                                                                        \
    "      }\n"

/* the end of gt_mma */
#define GT_MMA_SRC_LAST                                                         \
    /* atomic: the last CTA of the tile finishes it and clears the workspace */ \
    "#if GT_SPLITK > 1 && GT_RED == 1\n"                                        \
    "#ifndef GT_CSYNC\n"                                                        \
    "#define GT_CSYNC() __syncthreads()\n"                                      \
    "#endif\n"                                                                  \
    "  __shared__ int gt_last;\n"                                               \
    "  __threadfence();\n"                                                      \
    "  GT_CSYNC();\n"                                                           \
    "  const u64 tile = (u64)zb * gridDim.x + blockIdx.x;\n"                    \
    "  if (tid == 0) gt_last = atomicAdd(g.cnt + tile, 1u) == GT_SPLITK - 1;\n" \
    "  GT_CSYNC();\n"                                                           \
    "  if (gt_last) {\n"                                                        \
    "    __threadfence();\n"                                                    \
    "    for (int t = tid; t < GT_BM * GT_BN; t += GT_THREADS) {\n"             \
    "      const i64 i = row0 + t % GT_BM, j = col0 + t / GT_BM;\n"             \
    "      if (i < g.m && j < g.n) {\n"                                         \
    "        volatile float *p = g.ws + (zb * g.n + j) * g.m + i;\n"            \
    "        const float v = *p;\n"                                             \
    "        *p = 0.f;\n"                                                       \
    "        gt_store(g, zb, i, j, gt_epi(g, zb, i, j, v));\n"                  \
    "      }\n"                                                                 \
    "    }\n"                                                                   \
    "    if (tid == 0) g.cnt[tile] = 0u;\n"                                     \
    "  }\n"                                                                     \
    "#endif\n"                                                                  \
    "}\n"

#endif
