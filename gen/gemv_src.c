/* gemv_src.c: the "gemv" family's kernel template and the fault kernels,
 * as source text that NVRTC (CUDA) and hipRTC (HIP) compile at run time,
 * and the -D definitions that instantiate the template for a config
 * (gen_gemv.h describes the kernel). Pure host C.
 *
 * Template parameters (all -D, integers):
 *   GT_HIP GT_WS GT_MMA   target: HIP or CUDA, warp size, tensor-core path
 *   GT_AB                 A/B element type: 0 bf16, 1 f16, 2 e4m3, 3 e5m2
 *                         (OCP fp8, CUDA sm_89+ only)
 *   GT_BB                 fp8 only: B's type when it differs from A's (2
 *                         or 3; left out: GT_AB)
 *   GT_DKT GT_CKT         D and C types (gt_cu_kt: 0 f32, 2 f16, 3 bf16)
 *   GT_BIASKT GT_ACT      bias type (-1 none), activation 0 none 1 relu 2 gelu
 *   GT_BETA               0: beta == 0, C is never read
 *   GT_RPC GT_WARPS GT_KW rows_per_cta, warps, kwarps
 *   GT_VEC GT_U           vec, k_unroll
 *   GT_SPLITK GT_RED      splitk, reduction (0 none, 1 atomic, 2 twopass)
 *   GT_NTILE GT_ALD       n_tile, a_load (0 nc, 1 cs, 2 na256)
 *   GT_PIPE               pipe: 0 "reg" (k_unroll vector loads per row into
 *                         registers), 1 "async" (CUDA: a per-warp cp.async
 *                         ring of k_unroll chunks in shared memory), 2
 *                         "dbuf" (as reg, with the next block's loads issued
 *                         before this block's math: two register sets)
 *   GT_TAIL               1: some split's k range ends in a partial block
 *                         (the chunk-by-chunk tail loop is compiled in)
 *   GT_LAY                lanes: 0 "quad" (4 lanes per row: the mma
 *                         fragments on CUDA, quads of FMAs on HIP), 1 "warp"
 *                         (every lane of the warp along one row, FMAs, a
 *                         shuffle reduction across the warp; GT_MMA 0)
 *   GT_F8MMA              fp8 only, 1 (config f8 "mma", lanes "quad", CUDA):
 *                         the raw bytes multiplied by mma.sync m16n8k32;
 *                         left out (f8 "cvt"): decoded to f16 first
 *   GT_NOCHAIN            (the self-test's A/B only) compiled without chained
 *                         launch: no griddepcontrol, B through .nc
 *
 * The k order inside a chunk of 4*vec is permuted for the mma path: lane
 * (g = lane/4, t4 = lane%4) loads vec contiguous elements at t4*vec of row
 * g and g+8 (A) and of column g (B); the 32-bit word 2q of such a vector
 * feeds fragment registers a0/a1 (b0) and word 2q+1 feeds a2/a3 (b1) of
 * mma q. A dot product does not depend on the order of its terms, and A
 * and B are permuted alike, so each mma is exact and every element is used
 * exactly once.
 *
 * fp8 (GT_AB 2/3): a vector is vec one-byte elements (vec 16 = 16 bytes),
 * loaded and kept in flight as GT_LW = vec/4 raw words. GT_F8MMA: the raw
 * words are the fragments of mma.sync m16n8k32 (e4m3 or e5m2 per operand,
 * f32 accumulation): words 2q and 2q+1 of a vector feed a0/a1 (b0) and
 * a2/a3 (b1) of mma q, 8 bytes of the lane's row per register pair, the
 * same permutation argument as above with 4 bytes where the 16-bit path
 * has 2 elements. Otherwise each word is decoded just before the math by
 * cvt.rn.f16x2.e4m3x2 / e5m2x2 (exact: every e4m3 and e5m2 value is an
 * f16) into the GT_NV = vec/2 f16x2 words the 16-bit path has, word i
 * holding elements 2i and 2i+1 as there, and the math is the f16 path's.
 * The epilogue multiplies by alpha x scale_a x scale_b (device f32 scalars
 * read after the chained-launch wait) as cuBLASLt's fp8 matmul does, before
 * C, the bias and the activation. */
#include <stdio.h>
#include <string.h>

#include "gen_gemv.h"
#include "src_common.h"

const char gt_gen_gemv_src[] =
    GT_GEN_SRC_TYPES
    "#ifndef GT_BB\n"
    "#define GT_BB GT_AB\n"
    "#endif\n"
    "#define GT_F8 (GT_AB >= 2)\n"
    "#ifndef GT_F8MMA\n"
    "#define GT_F8MMA 0\n"
    "#endif\n"
    "#if GT_F8\n"
    "typedef unsigned char gt_e;\n"
    "#define GT_ES 1\n"
    "#else\n"
    "typedef u16 gt_e;\n"
    "#define GT_ES 2\n"
    "#endif\n"
    /* raw 32-bit words of one vector load (GT_NV: as 16-bit values) */
    "#define GT_LW (GT_VEC * GT_ES / 4)\n"
    "#define GT_WM (GT_WARPS / GT_KW)\n"
    "#define GT_RW (GT_RPC / GT_WM)\n"
    "#define GT_G (GT_WS / 4)\n"
    "#if GT_LAY\n"
    "#define GT_CH (GT_WS * GT_VEC)\n"
    "#define GT_LOFF (lane * GT_VEC)\n"
    "#else\n"
    "#define GT_CH (4 * GT_VEC)\n"
    "#define GT_LOFF (t4 * GT_VEC)\n"
    "#endif\n"
    "#define GT_WB (GT_U * GT_CH)\n"
    "#define GT_NV (GT_VEC / 2)\n"
    "#define GT_THREADS (GT_WARPS * GT_WS)\n"
    "#if GT_MMA\n"
    "#define GT_RT (GT_RW / 16)\n"
    "#define GT_NT8 (GT_NTILE / 8)\n"
    "#define GT_NAR (2 * GT_RT)\n"
    "#define GT_NBC GT_NT8\n"
    "#define GT_ACC (GT_RT * GT_NT8 * 4)\n"
    "#else\n"
    "#if GT_LAY\n"
    "#define GT_RL GT_RW\n"
    "#else\n"
    "#define GT_RL (GT_RW / GT_G)\n"
    "#endif\n"
    "#define GT_NAR GT_RL\n"
    "#define GT_NBC GT_NTILE\n"
    "#define GT_ACC (GT_RL * GT_NTILE)\n"
    "#endif\n"
    "struct gt_gemv_args {\n"
    "  const void *a, *b, *c, *bias; void *d; float *ws; u32 *cnt;\n"
    "  i64 m, n, k, lda, ldb, ldc, ldd, sa, sb, sc, sd, kper;\n"
    "  double alpha, beta;\n"
    "#if GT_F8\n"
    "  const float *scale_a, *scale_b;\n"
    "#endif\n"
    "};\n"
    GT_GEN_SRC_BF16
    "#if GT_HIP\n"
    GT_GEN_SRC_F16_HIP
    "#define GT_SHFL_XOR(v, m) __shfl_xor(v, m)\n"
    "typedef u32 gt_v4 __attribute__((ext_vector_type(4)));\n"
    "typedef u32 gt_v2 __attribute__((ext_vector_type(2)));\n"
    "#if GT_VEC * GT_ES == 16\n"
    "#define GT_VT gt_v4\n"
    "#else\n"
    "#define GT_VT gt_v2\n"
    "#endif\n"
    "__device__ __forceinline__ void gt_lda(const gt_e *p, u32 *w) {\n"
    "#if GT_ALD != 0\n"
    "  GT_VT v = __builtin_nontemporal_load((const GT_VT *)p);\n"
    "#else\n"
    "  GT_VT v = *(const GT_VT *)p;\n"
    "#endif\n"
    "  for (int i = 0; i < GT_LW; i++) w[i] = v[i];\n"
    "}\n"
    "__device__ __forceinline__ void gt_ldb(const gt_e *p, u32 *w) {\n"
    "  GT_VT v = *(const GT_VT *)p;\n"
    "  for (int i = 0; i < GT_LW; i++) w[i] = v[i];\n"
    "}\n"
    "#define gt_lda_first gt_lda\n"
    "#else\n"
    GT_GEN_SRC_F16_CUDA
    "#define GT_SHFL_XOR(v, m) __shfl_xor_sync(0xffffffffu, v, m)\n"
    /* dbuf: volatile keeps the front end from moving its loads past the
     * math they overlap (ptxas's own schedule is steered by GT_BOUNDS) */
    "#if GT_PIPE == 2\n"
    "#define GT_ASM asm volatile\n"
    "#else\n"
    "#define GT_ASM asm\n"
    "#endif\n"
    "#if GT_VEC * GT_ES == 16\n"
    "#define GT_LDV(op, p, w) GT_ASM(op \".v4.u32 {%0,%1,%2,%3}, [%4];\" \\\n"
    "    : \"=r\"(w[0]), \"=r\"(w[1]), \"=r\"(w[2]), \"=r\"(w[3]) : \"l\"(p))\n"
    "#else\n"
    "#define GT_LDV(op, p, w) GT_ASM(op \".v2.u32 {%0,%1}, [%2];\" : \"=r\"(w[0]), \"=r\"(w[1]) : \"l\"(p))\n"
    "#endif\n"
    "#if GT_ALD == 2\n"
    "#define GT_AOP \"ld.global.nc.L1::no_allocate.L2::256B\"\n"
    "#elif GT_ALD == 1\n"
    "#define GT_AOP \"ld.global.cs\"\n"
    "#else\n"
    "#define GT_AOP \"ld.global.nc\"\n"
    "#endif\n"
    "__device__ __forceinline__ void gt_lda(const gt_e *p, u32 *w) { GT_LDV(GT_AOP, p, w); }\n"
    /* reg's first block of A, issued before griddepcontrol.wait: volatile,
     * so that it stays above the (volatile) wait */
    "#if GT_VEC * GT_ES == 16\n"
    "__device__ __forceinline__ void gt_lda_first(const gt_e *p, u32 *w) {\n"
    "  asm volatile(GT_AOP \".v4.u32 {%0,%1,%2,%3}, [%4];\" : \"=r\"(w[0]), \"=r\"(w[1]), \"=r\"(w[2]), \"=r\"(w[3]) : \"l\"(p));\n"
    "}\n"
    "#else\n"
    "__device__ __forceinline__ void gt_lda_first(const gt_e *p, u32 *w) {\n"
    "  asm volatile(GT_AOP \".v2.u32 {%0,%1}, [%2];\" : \"=r\"(w[0]), \"=r\"(w[1]) : \"l\"(p));\n"
    "}\n"
    "#endif\n"
    /* B through the coherent path on sm_90+: a chained launch may start
     * while the kernel before it still writes B, and .nc promises data that
     * is read-only for the kernel's whole life (ptxas may then hoist the
     * load above griddepcontrol.wait; on the H100 it did) */
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(GT_NOCHAIN)\n"
    "__device__ __forceinline__ void gt_ldb(const gt_e *p, u32 *w) { GT_LDV(\"ld.global\", p, w); }\n"
    "#else\n"
    "__device__ __forceinline__ void gt_ldb(const gt_e *p, u32 *w) { GT_LDV(\"ld.global.nc\", p, w); }\n"
    "#endif\n"
    "#if GT_PIPE == 1\n"
    /* cp.async ring: bytes < size zero-fill the rest (tail, columns past n) */
    "#if GT_VEC * GT_ES == 16\n"
    "#define GT_CP(pf, d, s, n) asm volatile(\"cp.async.cg.shared.global\" pf \" [%0], [%1], 16, %2;\" \\\n"
    "    :: \"r\"(d), \"l\"(s), \"r\"(n) : \"memory\")\n"
    "#else\n"
    "#define GT_CP(pf, d, s, n) asm volatile(\"cp.async.ca.shared.global\" pf \" [%0], [%1], 8, %2;\" \\\n"
    "    :: \"r\"(d), \"l\"(s), \"r\"(n) : \"memory\")\n"
    "#endif\n"
    "#if GT_ALD == 2\n"
    "#define GT_APF \".L2::256B\"\n"
    "#else\n"
    "#define GT_APF \"\"\n"
    "#endif\n"
    "__device__ __forceinline__ u32 gt_smem(const void *p) {\n"
    "  u64 a; asm(\"cvta.to.shared.u64 %0, %1;\" : \"=l\"(a) : \"l\"(p)); return (u32)a;\n"
    "}\n"
    GT_GEN_SRC_CP_GROUPS
    "#endif\n"
    "#endif\n"
    /* a partial vector at the end of k: element loads, zeros past the end */
    "__device__ __forceinline__ void gt_ld_tail(const gt_e *p, i64 avail, u32 *w, int isa) {\n"
    "  if (avail >= GT_VEC) { if (isa) gt_lda(p, w); else gt_ldb(p, w); return; }\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < GT_LW; i++) {\n"
    "    u32 v = 0u;\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < 4 / GT_ES; e++)\n"
    "      if (i * (4 / GT_ES) + e < avail) v |= (u32)p[i * (4 / GT_ES) + e] << (8 * GT_ES * e);\n"
    "    w[i] = v;\n"
    "  }\n"
    "}\n"
    GT_GEN_SRC_GET_PUT
    GT_GEN_SRC_EPI(gt_gemv_args)
    "#if GT_MMA\n"
    "__device__ __forceinline__ void gt_mma(float *c, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {\n"
    "#if GT_AB == 0\n"
    "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 \"\n"
    "#else\n"
    "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 \"\n"
    "#endif\n"
    "      \"{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\"\n"
    "      : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
    "      : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n"
    "}\n"
    "#if GT_F8MMA\n"
    "#if GT_AB == 2\n"
    "#define GT_F8A \"e4m3\"\n"
    "#else\n"
    "#define GT_F8A \"e5m2\"\n"
    "#endif\n"
    "#if GT_BB == 2\n"
    "#define GT_F8B \"e4m3\"\n"
    "#else\n"
    "#define GT_F8B \"e5m2\"\n"
    "#endif\n"
    "__device__ __forceinline__ void gt_mma8(float *c, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1) {\n"
    "  asm volatile(\"mma.sync.aligned.m16n8k32.row.col.f32.\" GT_F8A \".\" GT_F8B \".f32 \"\n"
    "      \"{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\"\n"
    "      : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
    "      : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n"
    "}\n"
    "#endif\n"
    "#else\n"
    "__device__ __forceinline__ float gt_cvt(u32 h) {\n"
    "#if GT_AB == 0\n"
    "  return gt_bf2f(h);\n"
    "#else\n"
    "  return gt_h2f(h);\n"
    "#endif\n"
    "}\n"
    "#endif\n"
    "#if GT_PIPE == 1\n"
    /* stage st (this lane's slots): the vectors of A rows and B columns at kk */
    "__device__ __forceinline__ void gt_issue(u32 *st, i64 kk, i64 ke, const gt_e *const *ar,\n"
    "                                         const gt_e *const *bc, const bool *bok) {\n"
    "  const i64 avail = ke - kk;\n"
    "  const int n = avail >= GT_VEC ? GT_ES * GT_VEC : avail > 0 ? GT_ES * (int)avail : 0;\n"
    "  const i64 o = n ? kk : 0;\n"
    "#pragma unroll\n"
    "  for (int x = 0; x < GT_NAR; x++) GT_CP(GT_APF, gt_smem(st + x * GT_WS * GT_LW), ar[x] + o, n);\n"
    "#pragma unroll\n"
    "  for (int x = 0; x < GT_NBC; x++)\n"
    "    GT_CP(\"\", gt_smem(st + (GT_NAR + x) * GT_WS * GT_LW), bc[x] + (bok[x] ? o : 0), bok[x] ? n : 0);\n"
    "}\n"
    "__device__ __forceinline__ void gt_lds(const u32 *p, u32 *w) {\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < GT_LW; i++) w[i] = p[i];\n"
    "}\n"
    "#endif\n"
    /* reg: columns past n, which read column 0, zeroed before the math (their
     * sums are never stored; dbuf skips this: without the selects ptxas keeps
     * its loads ahead of the math) */
    "__device__ __forceinline__ void gt_mask(u32 (*bv)[GT_LW], const bool *bok) {\n"
    "#pragma unroll\n"
    "  for (int x = 0; x < GT_NBC; x++)\n"
    "#pragma unroll\n"
    "    for (int w = 0; w < GT_LW; w++) bv[x][w] = bok[x] ? bv[x][w] : 0u;\n"
    "}\n"
    /* one block: k_unroll chunks of every row of A and column of B at k0 */
    "__device__ __forceinline__ void gt_ldblk(const gt_e *const *ar, const gt_e *const *bc, i64 k0,\n"
    "                                         u32 (*av)[GT_NAR][GT_LW], u32 (*bv)[GT_NBC][GT_LW]) {\n"
    "#pragma unroll\n"
    "  for (int u = 0; u < GT_U; u++) {\n"
    "#pragma unroll\n"
    "    for (int x = 0; x < GT_NAR; x++) gt_lda(ar[x] + k0 + u * GT_CH, av[u][x]);\n"
    "#pragma unroll\n"
    "    for (int x = 0; x < GT_NBC; x++) gt_ldb(bc[x] + k0 + u * GT_CH, bv[u][x]);\n"
    "  }\n"
    "}\n"
    /* the same block's A or B alone (dbuf's first block straddles the wait) */
    "__device__ __forceinline__ void gt_ldblk_a(const gt_e *const *ar, i64 k0, u32 (*av)[GT_NAR][GT_LW]) {\n"
    "#pragma unroll\n"
    "  for (int u = 0; u < GT_U; u++)\n"
    "#pragma unroll\n"
    "    for (int x = 0; x < GT_NAR; x++) gt_lda(ar[x] + k0 + u * GT_CH, av[u][x]);\n"
    "}\n"
    "__device__ __forceinline__ void gt_ldblk_a_first(const gt_e *const *ar, i64 k0, u32 (*av)[GT_NAR][GT_LW]) {\n"
    "#pragma unroll\n"
    "  for (int u = 0; u < GT_U; u++)\n"
    "#pragma unroll\n"
    "    for (int x = 0; x < GT_NAR; x++) gt_lda_first(ar[x] + k0 + u * GT_CH, av[u][x]);\n"
    "}\n"
    "__device__ __forceinline__ void gt_ldblk_b(const gt_e *const *bc, i64 k0, u32 (*bv)[GT_NBC][GT_LW]) {\n"
    "#pragma unroll\n"
    "  for (int u = 0; u < GT_U; u++)\n"
    "#pragma unroll\n"
    "    for (int x = 0; x < GT_NBC; x++) gt_ldb(bc[x] + k0 + u * GT_CH, bv[u][x]);\n"
    "}\n"
    /* one chunk of 4*vec k values as 16-bit words: av[GT_NAR][GT_NV], bv[GT_NBC][GT_NV] */
    "__device__ __forceinline__ void gt_step16(float *acc, u32 (*av)[GT_NV], u32 (*bv)[GT_NV]) {\n"
    "#if GT_MMA\n"
    "#pragma unroll\n"
    "  for (int r = 0; r < GT_RT; r++)\n"
    "#pragma unroll\n"
    "    for (int t = 0; t < GT_NT8; t++)\n"
    "#pragma unroll\n"
    "      for (int q = 0; q < GT_NV / 2; q++)\n"
    "        gt_mma(acc + (r * GT_NT8 + t) * 4, av[2 * r][2 * q], av[2 * r + 1][2 * q],\n"
    "               av[2 * r][2 * q + 1], av[2 * r + 1][2 * q + 1], bv[t][2 * q], bv[t][2 * q + 1]);\n"
    "#else\n"
    "#pragma unroll\n"
    "  for (int e = 0; e < GT_VEC; e++) {\n"
    "    float a[GT_RL];\n"
    "#pragma unroll\n"
    "    for (int r = 0; r < GT_RL; r++) a[r] = gt_cvt((av[r][e >> 1] >> (16 * (e & 1))) & 0xffffu);\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < GT_NTILE; j++) {\n"
    "      float b = gt_cvt((bv[j][e >> 1] >> (16 * (e & 1))) & 0xffffu);\n"
    "#pragma unroll\n"
    "      for (int r = 0; r < GT_RL; r++) acc[r * GT_NTILE + j] += a[r] * b;\n"
    "    }\n"
    "  }\n"
    "#endif\n"
    "}\n"
    /* fp8: two elements (the low and high byte of h) to an f16x2 word, the
     * low byte to the low half; e4m3 and e5m2 are both exact in f16 */
    "#if GT_F8\n"
    "template <int T> __device__ __forceinline__ u32 gt_f8x2(u32 h) {\n"
    "  u32 r; u16 x = (u16)h;\n"
    "  if (T == 2) asm(\"cvt.rn.f16x2.e4m3x2 %0, %1;\" : \"=r\"(r) : \"h\"(x));\n"
    "  else asm(\"cvt.rn.f16x2.e5m2x2 %0, %1;\" : \"=r\"(r) : \"h\"(x));\n"
    "  return r;\n"
    "}\n"
    "template <int T> __device__ __forceinline__ void gt_dec(const u32 *w, u32 *h) {\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < GT_LW; i++) { h[2 * i] = gt_f8x2<T>(w[i]); h[2 * i + 1] = gt_f8x2<T>(w[i] >> 16); }\n"
    "}\n"
    "#endif\n"
    /* one chunk as loaded: av[GT_NAR][GT_LW], bv[GT_NBC][GT_LW] (fp8: decoded first) */
    "__device__ __forceinline__ void gt_step(float *acc, u32 (*av)[GT_LW], u32 (*bv)[GT_LW]) {\n"
    "#if GT_F8MMA\n"
    "#pragma unroll\n"
    "  for (int r = 0; r < GT_RT; r++)\n"
    "#pragma unroll\n"
    "    for (int t = 0; t < GT_NT8; t++)\n"
    "#pragma unroll\n"
    "      for (int q = 0; q < GT_LW / 2; q++)\n"
    "        gt_mma8(acc + (r * GT_NT8 + t) * 4, av[2 * r][2 * q], av[2 * r + 1][2 * q],\n"
    "                av[2 * r][2 * q + 1], av[2 * r + 1][2 * q + 1], bv[t][2 * q], bv[t][2 * q + 1]);\n"
    "#elif GT_F8\n"
    "  u32 ah[GT_NAR][GT_NV], bh[GT_NBC][GT_NV];\n"
    "#pragma unroll\n"
    "  for (int x = 0; x < GT_NAR; x++) gt_dec<GT_AB>(av[x], ah[x]);\n"
    "#pragma unroll\n"
    "  for (int x = 0; x < GT_NBC; x++) gt_dec<GT_BB>(bv[x], bh[x]);\n"
    "  gt_step16(acc, ah, bh);\n"
    "#else\n"
    "  gt_step16(acc, av, bv);\n"
    "#endif\n"
    "}\n"
    /* dbuf: an explicit minimum of one CTA per SM lets ptxas keep both
     * register sets and issue the next block's loads ahead of the math;
     * without it ptxas sank them below the mma (seen in the SASS) */
    "#if GT_PIPE == 2\n"
    "#define GT_BOUNDS __launch_bounds__(GT_THREADS, 1)\n"
    "#else\n"
    "#define GT_BOUNDS __launch_bounds__(GT_THREADS)\n"
    "#endif\n"
    /* programmatic dependent launch (sm_90+): the kernel lets the next one
     * launch at once, and waits for the one before it to finish (and its
     * writes to be visible) before it reads B, C or bias or writes anything.
     * dbuf and reg issue their first block of A before the wait: A is the
     * weights, which the kernel before does not write (the contract of a
     * chained launch, README "Chained launch"); a decode GEMV whose whole
     * row is one block then streams its weights while the kernel before
     * drains. Launched without the attribute both instructions return at
     * once. */
    "#if !GT_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(GT_NOCHAIN)\n"
    "#define GT_PDL_LAUNCH() asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\")\n"
    "#define GT_PDL_WAIT() asm volatile(\"griddepcontrol.wait;\" ::: \"memory\")\n"
    /* the loads of reg and async are not volatile asm: a pointer passed
     * through a volatile asm after the wait keeps them below it */
    "#define GT_PDL_FENCE(p) asm volatile(\"\" : \"+l\"(p))\n"
    "#else\n"
    "#define GT_PDL_LAUNCH()\n"
    "#define GT_PDL_WAIT()\n"
    "#define GT_PDL_FENCE(p)\n"
    "#endif\n"
    "extern \"C\" __global__ void GT_BOUNDS gt_gemv(gt_gemv_args g) {\n"
    "  GT_PDL_LAUNCH();\n"
    "#if GT_PIPE == 1\n"
    "  GT_PDL_WAIT();\n"
    "#endif\n"
    "  const int lane = threadIdx.x % GT_WS, warp = threadIdx.x / GT_WS;\n"
    "  const int wm = warp % GT_WM, wk = warp / GT_WM, gq = lane >> 2, t4 = lane & 3;\n"
    "  const i64 zb = blockIdx.z / GT_SPLITK;\n"
    "  const int sk = blockIdx.z % GT_SPLITK;\n"
    "  const i64 row0 = (i64)blockIdx.x * GT_RPC + wm * GT_RW, col0 = (i64)blockIdx.y * GT_NTILE;\n"
    "  const i64 kb = (i64)sk * g.kper, ke = kb + g.kper < g.k ? kb + g.kper : g.k;\n"
    "  const gt_e *A = (const gt_e *)g.a + zb * g.sa, *B = (const gt_e *)g.b + zb * g.sb;\n"
    "#if GT_PIPE == 1\n"
    "  GT_PDL_FENCE(A);\n"
    "  GT_PDL_FENCE(B);\n"
    "#endif\n"
    "  const gt_e *ar[GT_NAR], *bc[GT_NBC];\n"
    "  bool bok[GT_NBC];\n"
    "#pragma unroll\n"
    "  for (int x = 0; x < GT_NAR; x++) {\n"
    "#if GT_MMA\n"
    "    i64 i = row0 + 16 * (x >> 1) + gq + 8 * (x & 1);\n"
    "#elif GT_LAY\n"
    "    i64 i = row0 + x;\n"
    "#else\n"
    "    i64 i = row0 + gq + GT_G * x;\n"
    "#endif\n"
    "    ar[x] = A + (i < g.m ? i : g.m - 1) * g.lda;\n" /* rows past m: loaded, never stored */
    "  }\n"
    "#pragma unroll\n"
    "  for (int x = 0; x < GT_NBC; x++) {\n"
    "#if GT_MMA\n"
    "    i64 j = col0 + 8 * x + gq;\n"
    "#else\n"
    "    i64 j = col0 + x;\n"
    "#endif\n"
    "    bok[x] = j < g.n;\n"
    "    bc[x] = B + (bok[x] ? j : 0) * g.ldb;\n" /* columns past n: column 0 (same cache lines) */
    "  }\n"
    "  float acc[GT_ACC];\n"
    "#pragma unroll\n"
    "  for (int e = 0; e < GT_ACC; e++) acc[e] = 0.f;\n"
    "#if GT_PIPE == 1\n"
    /* each lane copies its own vectors into its warp's ring of k_unroll
     * chunks and reads back only those: no synchronisation but wait_group;
     * a stage is refilled after the mma consumed what was read from it */
    "  __shared__ __align__(16) u32 gt_ring[GT_WARPS * GT_U * (GT_NAR + GT_NBC) * GT_WS * GT_LW];\n"
    "  u32 *ring = gt_ring + warp * (GT_U * (GT_NAR + GT_NBC) * GT_WS * GT_LW) + lane * GT_LW;\n"
    "  const i64 nch = ke > kb ? (ke - kb + GT_CH - 1) / GT_CH : 0;\n"
    "  const i64 mine = nch > wk ? (nch - wk + GT_KW - 1) / GT_KW : 0;\n"
    "  for (int s = 0; s < GT_U; s++) {\n"
    "    if (s < mine) gt_issue(ring + s * (GT_NAR + GT_NBC) * GT_WS * GT_LW,\n"
    "                           kb + (wk + (i64)GT_KW * s) * GT_CH + GT_LOFF, ke, ar, bc, bok);\n"
    "    gt_commit();\n"
    "  }\n"
    "  int slot = 0;\n"
    "  for (i64 i = 0; i < mine; i++) {\n"
    "    gt_wait<GT_U - 1>();\n"
    "    u32 *st = ring + slot * (GT_NAR + GT_NBC) * GT_WS * GT_LW;\n"
    "    u32 av[GT_NAR][GT_LW], bv[GT_NBC][GT_LW];\n"
    "#pragma unroll\n"
    "    for (int x = 0; x < GT_NAR; x++) gt_lds(st + x * GT_WS * GT_LW, av[x]);\n"
    "#pragma unroll\n"
    "    for (int x = 0; x < GT_NBC; x++) gt_lds(st + (GT_NAR + x) * GT_WS * GT_LW, bv[x]);\n"
    "    gt_step(acc, av, bv);\n"
    "    if (i + GT_U < mine) gt_issue(st, kb + (wk + (i64)GT_KW * (i + GT_U)) * GT_CH + GT_LOFF, ke, ar, bc, bok);\n"
    "    gt_commit();\n"
    "    slot = slot + 1 == GT_U ? 0 : slot + 1;\n"
    "  }\n"
    "  gt_wait<0>();\n"
    "#else\n"
    /* whole blocks of k_unroll chunks, warps of the CTA interleaved */
    "  const i64 nb = ke > kb ? (ke - kb) / GT_WB : 0;\n"
    "#if GT_PIPE == 2\n"
    /* dbuf: the loads of the warp's next block are issued before the math
     * of this one, so a warp always has a block in flight; the last round
     * reloads its own block (an L2 hit, never used): no branch in the loop */
    "  u32 av[GT_U][GT_NAR][GT_LW], bv[GT_U][GT_NBC][GT_LW];\n"
    "  if (wk < nb) gt_ldblk_a(ar, kb + (i64)wk * GT_WB + GT_LOFF, av);\n"
    "  GT_PDL_WAIT();\n"
    "  if (wk < nb) gt_ldblk_b(bc, kb + (i64)wk * GT_WB + GT_LOFF, bv);\n"
    "  for (i64 blk = wk; blk < nb; blk += GT_KW) {\n"
    "    u32 an[GT_U][GT_NAR][GT_LW], bn[GT_U][GT_NBC][GT_LW];\n"
    "    gt_ldblk(ar, bc, kb + (blk + GT_KW < nb ? blk + GT_KW : blk) * GT_WB + GT_LOFF, an, bn);\n"
    "#pragma unroll\n"
    "    for (int u = 0; u < GT_U; u++) {\n"
    "      gt_step(acc, av[u], bv[u]);\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int u = 0; u < GT_U; u++) {\n"
    "#pragma unroll\n"
    "      for (int x = 0; x < GT_NAR; x++)\n"
    "#pragma unroll\n"
    "        for (int w = 0; w < GT_LW; w++) av[u][x][w] = an[u][x][w];\n"
    "#pragma unroll\n"
    "      for (int x = 0; x < GT_NBC; x++)\n"
    "#pragma unroll\n"
    "        for (int w = 0; w < GT_LW; w++) bv[u][x][w] = bn[u][x][w];\n"
    "    }\n"
    "  }\n"
    "#else\n"
    /* reg: the first block's A before the wait, its B after (each B
     * pointer passed through the fence, so no load of B moves above it) */
    "  i64 blk0 = wk;\n"
    "  {\n"
    "    u32 av[GT_U][GT_NAR][GT_LW], bv[GT_U][GT_NBC][GT_LW];\n"
    "    if (blk0 < nb) gt_ldblk_a_first(ar, kb + blk0 * GT_WB + GT_LOFF, av);\n"
    "    GT_PDL_WAIT();\n"
    "#pragma unroll\n"
    "    for (int x = 0; x < GT_NBC; x++) GT_PDL_FENCE(bc[x]);\n"
    "    if (blk0 < nb) {\n"
    "      gt_ldblk_b(bc, kb + blk0 * GT_WB + GT_LOFF, bv);\n"
    "#pragma unroll\n"
    "      for (int u = 0; u < GT_U; u++) {\n"
    "        gt_mask(bv[u], bok);\n"
    "        gt_step(acc, av[u], bv[u]);\n"
    "      }\n"
    "      blk0 += GT_KW;\n"
    "    }\n"
    "  }\n"
    "  for (i64 blk = blk0; blk < nb; blk += GT_KW) {\n"
    "    u32 av[GT_U][GT_NAR][GT_LW], bv[GT_U][GT_NBC][GT_LW];\n"
    "    gt_ldblk(ar, bc, kb + blk * GT_WB + GT_LOFF, av, bv);\n"
    "#pragma unroll\n"
    "    for (int u = 0; u < GT_U; u++) {\n"
    "      gt_mask(bv[u], bok);\n"
    "      gt_step(acc, av[u], bv[u]);\n"
    "    }\n"
    "  }\n"
    "#endif\n"
    /* the rest, chunk by chunk, loads guarded at the end of the split;
     * GT_TAIL 0: every split is whole blocks (compiled out: its mere
     * presence cost the qkv n = 16 dbuf kernel 0.7 % on the H100) */
    "#if GT_TAIL\n"
    "  for (i64 kc = kb + nb * GT_WB + (i64)wk * GT_CH; kc < ke; kc += (i64)GT_KW * GT_CH) {\n"
    "    const i64 kk = kc + GT_LOFF, avail = ke - kk;\n"
    "    u32 av[GT_NAR][GT_LW], bv[GT_NBC][GT_LW];\n"
    "#pragma unroll\n"
    "    for (int x = 0; x < GT_NAR; x++) gt_ld_tail(ar[x] + kk, avail, av[x], 1);\n"
    "#pragma unroll\n"
    "    for (int x = 0; x < GT_NBC; x++) gt_ld_tail(bc[x] + kk, avail, bv[x], 0);\n"
    "    gt_mask(bv, bok);\n"
    "    gt_step(acc, av, bv);\n"
    "  }\n"
    "#endif\n"
    "#endif\n"
    "#if GT_LAY\n"
    "#pragma unroll\n"
    "  for (int e = 0; e < GT_ACC; e++)\n"
    "#pragma unroll\n"
    "    for (int o = GT_WS / 2; o > 0; o >>= 1) acc[e] += GT_SHFL_XOR(acc[e], o);\n"
    "#elif !GT_MMA\n"
    "#pragma unroll\n"
    "  for (int e = 0; e < GT_ACC; e++) { acc[e] += GT_SHFL_XOR(acc[e], 1); acc[e] += GT_SHFL_XOR(acc[e], 2); }\n"
    "#endif\n"
    "#if GT_KW > 1\n"
    "  __shared__ float gt_red[(GT_KW - 1) * GT_WM * GT_ACC * GT_WS];\n"
    "  if (wk > 0) {\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < GT_ACC; e++) gt_red[(((wk - 1) * GT_WM + wm) * GT_ACC + e) * GT_WS + lane] = acc[e];\n"
    "  }\n"
    "  __syncthreads();\n"
    "  if (wk == 0) {\n"
    "    for (int w = 1; w < GT_KW; w++) {\n"
    "#pragma unroll\n"
    "      for (int e = 0; e < GT_ACC; e++) acc[e] += gt_red[(((w - 1) * GT_WM + wm) * GT_ACC + e) * GT_WS + lane];\n"
    "    }\n"
    "  }\n"
    "#endif\n"
    "  if (wk == 0) {\n"
    "#if GT_SPLITK > 1 && GT_RED == 2\n"
    "    const i64 nbatch = gridDim.z / GT_SPLITK;\n"
    "#endif\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < GT_ACC; e++) {\n"
    "#if GT_MMA\n"
    "      const int ri = 16 * (e / (GT_NT8 * 4)) + gq + 8 * ((e & 3) >> 1);\n"
    "      const int cj = 8 * ((e / 4) % GT_NT8) + 2 * t4 + (e & 1);\n"
    "#elif GT_LAY\n"
    "      if (e % GT_WS != lane) continue;\n" /* every lane holds the sums: they share the stores */
    "      const int ri = e / GT_NTILE, cj = e % GT_NTILE;\n"
    "#else\n"
    "      if (t4 != 0) continue;\n"
    "      const int ri = gq + GT_G * (e / GT_NTILE), cj = e % GT_NTILE;\n"
    "#endif\n"
    "      const i64 i = row0 + ri, j = col0 + cj;\n"
    "      if (i >= g.m || j >= g.n) continue;\n"
    "#if GT_SPLITK == 1\n"
    "      gt_store(g, zb, i, j, gt_epi(g, zb, i, j, acc[e]));\n"
    "#elif GT_RED == 1\n"
    "      atomicAdd(g.ws + (zb * g.n + j) * g.m + i, acc[e]);\n"
    "#else\n"
    "      g.ws[(((i64)sk * nbatch + zb) * g.n + j) * g.m + i] = acc[e];\n"
    "#endif\n"
    "    }\n"
    "  }\n"
    /* atomic: the last CTA of the tile finishes it and clears the workspace */
    "#if GT_SPLITK > 1 && GT_RED == 1\n"
    "  __shared__ int gt_last;\n"
    "  __threadfence();\n"
    "  __syncthreads();\n"
    "  const u64 tile = ((u64)zb * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;\n"
    "  if (threadIdx.x == 0) gt_last = atomicAdd(g.cnt + tile, 1u) == GT_SPLITK - 1;\n"
    "  __syncthreads();\n"
    "  if (gt_last) {\n"
    "    __threadfence();\n"
    "    for (int t = threadIdx.x; t < GT_RPC * GT_NTILE; t += GT_THREADS) {\n"
    "      const i64 i = (i64)blockIdx.x * GT_RPC + t % GT_RPC, j = col0 + t / GT_RPC;\n"
    "      if (i < g.m && j < g.n) {\n"
    "        volatile float *p = g.ws + (zb * g.n + j) * g.m + i;\n"
    "        const float v = *p;\n"
    "        *p = 0.f;\n"
    "        gt_store(g, zb, i, j, gt_epi(g, zb, i, j, v));\n"
    "      }\n"
    "    }\n"
    "    if (threadIdx.x == 0) g.cnt[tile] = 0u;\n"
    "  }\n"
    "#endif\n"
    "}\n"
    GT_GEN_SRC_FIN(gt_gemv_fin, gt_gemv_args);

/* Test-only fault kernels: a store 1 TiB past a device buffer (an illegal
 * address, a sticky error), and a loop on a flag nobody sets. */
const char gt_gen_fault_src[] =
    "extern \"C\" __global__ void gt_fault_oob(unsigned long long *p, long long off) {\n"
    "  volatile unsigned long long *q = p + off;\n"
    "  *q = 0xdeadbeefULL;\n"
    "}\n"
    "extern \"C\" __global__ void gt_fault_hang(volatile unsigned *flag) {\n"
    "  while (*flag == 0u) __nanosleep(1000);\n"
    "}\n"
    /* the chained-launch check's producer: lets its dependent launch at
     * once, then sleeps `ns` before it writes dst (what a kernel producing
     * B looks like to a chained gemv that did not wait) */
    "extern \"C\" __global__ void gt_chain_producer(unsigned *dst, const unsigned *src, long long n, long long ns) {\n"
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
    "  asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n"
    "#endif\n"
    "  unsigned long long t0, t;\n"
    "  asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t0));\n"
    "  do { __nanosleep(1000); asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t)); } while (t - t0 < (unsigned long long)ns);\n"
    "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)\n"
    "    dst[i] = src[i];\n"
    "}\n";

int gt_gen_defines(const gt_problem *p, const gt_gen_cfg *c, int hip,
                   char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN])
{
    gt_gen_type_defs t;
    if (gt_gen_type_defs_of(p, &t) != 0)
        return -1;
    gt_gen_geom g;
    gt_gen_geometry(p, c, hip ? 64 : 32, &g);
    const struct {
        const char *name;
        int v;
    } d[] = {
        {"GT_HIP", hip},          {"GT_WS", hip ? 64 : 32},      {"GT_MMA", hip || c->lanes ? 0 : 1},
        {"GT_AB", t.ab},          {"GT_DKT", t.dkt},             {"GT_CKT", t.ckt},
        {"GT_BIASKT", t.bkt},     {"GT_ACT", t.act}, {"GT_BETA", t.beta},               {"GT_RPC", c->rows_per_cta},
        {"GT_WARPS", c->warps},   {"GT_KW", c->kwarps},          {"GT_VEC", c->vec},
        {"GT_U", c->k_unroll},    {"GT_SPLITK", c->splitk},      {"GT_RED", c->reduction},
        {"GT_NTILE", c->n_tile},  {"GT_ALD", c->a_load},        {"GT_PIPE", c->pipe},
        {"GT_LAY", c->lanes},     {"GT_TAIL", g.tail},
    };
    int n = (int)(sizeof d / sizeof d[0]);
    for (int i = 0; i < n; i++)
        snprintf(defs[i], GT_GEN_DEF_LEN, "-D%s=%d", d[i].name, d[i].v);
    /* B's fp8 type only where it is fp8: the 16-bit kernels' options (and
     * so their cache keys and exported sources) stay what they were */
    if (t.ab >= 2)
        snprintf(defs[n++], GT_GEN_DEF_LEN, "-DGT_BB=%d", t.bb);
    /* and the raw-byte mma only where it runs: an f8 "cvt" config compiles
     * to the kernel the family had before it, cache key included */
    if (t.ab >= 2 && !hip && c->lanes == GT_GEN_LANES_QUAD && c->f8 == GT_GEN_F8_MMA)
        snprintf(defs[n++], GT_GEN_DEF_LEN, "-DGT_F8MMA=1");
    return n;
}

void gt_gen_geometry(const gt_problem *p, const gt_gen_cfg *c, int warp_size, gt_gen_geom *g)
{
    memset(g, 0, sizeof *g);
    int64_t batch = p->batch > 0 ? p->batch : 1;
    int lw = c->lanes == GT_GEN_LANES_WARP;
    int64_t ch = (lw ? warp_size : 4) * (int64_t)c->vec, sk = c->splitk > 0 ? c->splitk : 1;
    int64_t per = (p->k + sk - 1) / sk;
    g->kper = (per + ch - 1) / ch * ch;
    /* splits before the last hold kper (the rules leave none empty), the
     * last what remains; each is whole blocks of k_unroll chunks or not */
    int64_t wb = c->k_unroll * ch, last = p->k - (sk - 1) * g->kper;
    g->tail = wb <= 0 || last % wb != 0 || (sk > 1 && g->kper % wb != 0);
    g->gx = (unsigned)((p->m + c->rows_per_cta - 1) / c->rows_per_cta);
    g->gy = (unsigned)((p->n + c->n_tile - 1) / c->n_tile);
    g->gz = (unsigned)(batch * sk);
    g->threads = (unsigned)(c->warps * warp_size);
    size_t mn = (size_t)p->m * (size_t)p->n * (size_t)batch * sizeof(float);
    if (sk > 1 && c->reduction == GT_GEN_RED_ATOMIC) {
        g->ws_bytes = mn;
        g->cnt_bytes = (size_t)g->gx * g->gy * (size_t)batch * sizeof(unsigned);
    } else if (sk > 1) {
        g->ws_bytes = mn * (size_t)sk;
        int64_t blocks = ((int64_t)(mn / sizeof(float)) + 255) / 256;
        g->fin_blocks = (unsigned)(blocks < 1 ? 1 : blocks > 4096 ? 4096 : blocks);
    }
    /* the template's gt_red: (kwarps-1) * row groups * accumulators * lanes */
    int wm = c->warps / (c->kwarps > 0 ? c->kwarps : 1), rw = c->rows_per_cta / (wm > 0 ? wm : 1);
    int acc = lw ? rw * c->n_tile
                 : warp_size == 32 ? (rw / 16) * (c->n_tile / 8) * 4 : (rw / (warp_size / 4)) * c->n_tile;
    g->smem_bytes = (size_t)(c->kwarps - 1) * (size_t)wm * (size_t)acc * (size_t)warp_size * 4 +
                    (sk > 1 && c->reduction == GT_GEN_RED_ATOMIC ? 4 : 0);
    if (c->pipe == GT_GEN_PIPE_ASYNC) { /* the ring: per warp k_unroll stages of (rows + columns) vectors per lane */
        int nar = lw ? rw : warp_size == 32 ? 2 * (rw / 16) : rw / (warp_size / 4);
        int nbc = lw || warp_size != 32 ? c->n_tile : c->n_tile / 8;
        g->smem_bytes += (size_t)c->warps * (size_t)c->k_unroll * (size_t)(nar + nbc) *
                         (size_t)warp_size * (size_t)c->vec * (size_t)gt_gen_elem_size(p);
    }
}
