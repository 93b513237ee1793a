/* mma_src.c: the "mma" family's kernel templates, as source text NVRTC
 * (CUDA) and hipRTC (HIP, gt_gen_mma_hip_src, described before it below)
 * compile at run time, the -D definitions that instantiate them for a
 * config and the launch geometry (gen_mma.h describes the kernel). The two
 * templates share the text of what does not depend on the hardware (the
 * GT_MMA_SRC_* pieces here, the GT_GEN_SRC_* pieces of src_common.h that
 * the gemv template uses too); the CUDA text is the same, byte for byte, as before
 * the HIP port (NVRTC's cache keys hash it). Pure host C.
 *
 * Template parameters (all -D, integers):
 *   GT_AB                 A/B element type: 0 bf16, 1 f16
 *   GT_DKT GT_CKT         D and C types (0 f32, 2 f16, 3 bf16, as gemv)
 *   GT_BIASKT GT_ACT      bias type (-1 none), activation 0 none 1 relu 2 gelu
 *   GT_BETA               0: beta == 0, C is never read
 *   GT_BM GT_BN GT_BK     CTA tile
 *   GT_WGM GT_WGN         warps along m and n
 *   GT_ST                 pipeline stages
 *   GT_SPLITK GT_RED      splitk, reduction (0 none, 1 atomic, 2 twopass)
 *   GT_SWZ                raster group (1: m fastest)
 *   GT_HIP GT_WS          HIP only: 1, and the wave size (64)
 *
 * Shared memory: GT_ST stages, each the A tile (bm rows of bk k values)
 * then the B tile (bn rows of bk), rows contiguous along k, the 16-byte
 * chunks of a row permuted by gt_mma_soff's XOR so that neither the
 * cp.async writes nor the ldmatrix reads (8 rows of one chunk column per
 * phase) conflict on banks. Each k tile's 16-byte chunks are spread over
 * the CTA's threads; a chunk past m, n or k is zero-filled by cp.async's
 * src-size operand (the source address then stays the operand's base, which
 * is valid), so edges need no other code: zero rows and zero k values add
 * nothing, and only in-range elements of D are stored.
 *
 * Pipeline (one __syncthreads per k tile, as CUTLASS's multistage main
 * loop): the prologue issues tiles 0..ST-2, one commit group each (empty
 * groups past the split's end keep the count uniform), waits for tile 0
 * and loads its first fragments. Iteration t runs bk/16 steps of mma.sync
 * on slot t with the fragments double-buffered (step kk+1's ldmatrix.x4
 * issued before step kk's mma). At its first step it issues tile t+ST-1
 * into the slot of tile t-1, which every warp finished reading before the
 * previous barrier. At its last step it waits until at most ST-2 groups
 * are pending (tile t+1 has landed for this thread), synchronises (for
 * every thread) and loads tile t+1's first fragments before the last mma,
 * so no warp starts a tile waiting on shared memory. */
#include <stdio.h>
#include <string.h>

#include "gen_mma.h"
#include "mma_src_parts.h"
#include "src_common.h"

const char gt_gen_mma_src[] =
    GT_GEN_SRC_TYPES
    "#define GT_THREADS (GT_WGM * GT_WGN * 32)\n"
    "#define GT_WM (GT_BM / GT_WGM)\n"
    "#define GT_WN (GT_BN / GT_WGN)\n"
    "#define GT_MT (GT_WM / 16)\n"
    "#define GT_NT (GT_WN / 8)\n"
    "#define GT_KC (GT_BK / 8)\n"
    "#define GT_SA (GT_BM * GT_BK)\n"
    "#define GT_STG (GT_SA + GT_BN * GT_BK)\n"
    GT_MMA_SRC_ARGS
    GT_GEN_SRC_F16_CUDA
    GT_GEN_SRC_GET_PUT
    GT_GEN_SRC_EPI(gt_mma_args)
    "__device__ __forceinline__ u32 gt_saddr(const void *p) {\n"
    "  u64 a; asm(\"cvta.to.shared.u64 %0, %1;\" : \"=l\"(a) : \"l\"(p)); return (u32)a;\n"
    "}\n"
    "__device__ __forceinline__ void gt_cp16(u32 dst, const void *src, int bytes) {\n"
    "  asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"(dst), \"l\"(src), \"r\"(bytes) : \"memory\");\n"
    "}\n"
    GT_GEN_SRC_CP_GROUPS
    "__device__ __forceinline__ void gt_ldsm4(u32 a, u32 &r0, u32 &r1, u32 &r2, u32 &r3) {\n"
    "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\"\n"
    "      : \"=r\"(r0), \"=r\"(r1), \"=r\"(r2), \"=r\"(r3) : \"r\"(a) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void gt_mma(float *c, const u32 *a, u32 b0, u32 b1) {\n"
    "#if GT_AB == 0\n"
    "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 \"\n"
    "#else\n"
    "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 \"\n"
    "#endif\n"
    "      \"{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\"\n"
    "      : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
    "      : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b0), \"r\"(b1));\n"
    "}\n"
    /* ROWS rows of an operand tile (rows_left of them exist) at k0: this
     * thread's 16-byte chunks, ids tid, tid + THREADS, ...: chunk column
     * tid % KC of rows tid / KC + it * THREADS / KC (THREADS is a multiple of
     * KC), so one source pointer and one k test serve all of them; past the
     * rows or ke the copy zero-fills */
    "template <int ROWS> __device__ __forceinline__ void gt_tile(u32 dst, const u16 *src, i64 ld,\n"
    "                                                           i64 rows_left, i64 k0, i64 ke, int tid) {\n"
    "  const int c = tid % GT_KC, r0 = tid / GT_KC;\n"
    "  const i64 av = ke - (k0 + c * 8);\n"
    "  const int kbytes = av >= 8 ? 16 : av > 0 ? 2 * (int)av : 0;\n"
    "  const u16 *p = src + r0 * ld + k0 + c * 8;\n"
    "  const i64 step = (i64)(GT_THREADS / GT_KC) * ld;\n"
    /* up to 12 chunks per thread and stage (A and B): unrolled, the copies
     * issue back to back; more (few threads, big tiles): a loop, since
     * unrolled ptxas keeps a 64-bit address per chunk live across the k
     * loop and spills */
    "  if ((GT_BM + GT_BN) / (GT_THREADS / GT_KC) <= 12) {\n"
    "#pragma unroll\n"
    "    for (int it = 0; it < (ROWS + GT_THREADS / GT_KC - 1) / (GT_THREADS / GT_KC); it++) {\n"
    "      const int r = r0 + it * (GT_THREADS / GT_KC);\n"
    "      if (ROWS % (GT_THREADS / GT_KC) == 0 || r < ROWS) {\n"
    "        const int bytes = r < rows_left ? kbytes : 0;\n"
    "        gt_cp16(dst + 2 * gt_mma_soff(r, c, GT_KC), bytes ? p + it * step : src, bytes);\n"
    "      }\n"
    "    }\n"
    "  } else {\n"
    "#pragma unroll 1\n"
    "    for (int r = r0; r < ROWS; r += GT_THREADS / GT_KC, p += step) {\n"
    "      const int bytes = r < rows_left ? kbytes : 0;\n"
    "      gt_cp16(dst + 2 * gt_mma_soff(r, c, GT_KC), bytes ? p : src, bytes);\n"
    "    }\n"
    "  }\n"
    "}\n"
    /* the A and B fragments of k step kk of the stage at st (byte address) */
    "__device__ __forceinline__ void gt_frags(u32 st, u32 aoff, u32 boff, int kk, u32 (*af)[4], u32 (*bf)[2]) {\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < GT_MT; i++)\n"
    "    gt_ldsm4(st + (aoff ^ (kk << 5)) + i * 32 * GT_BK, af[i][0], af[i][1], af[i][2], af[i][3]);\n"
    "#pragma unroll\n"
    "  for (int j = 0; j < GT_NT / 2; j++)\n"
    "    gt_ldsm4(st + (boff ^ (kk << 5)) + j * 32 * GT_BK, bf[2 * j][0], bf[2 * j][1], bf[2 * j + 1][0],\n"
    "             bf[2 * j + 1][1]);\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(GT_THREADS) gt_mma(gt_mma_args g) {\n"
    "  extern __shared__ __align__(128) unsigned char gt_dyn[];\n"
    "  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;\n"
    GT_MMA_SRC_CTA
    "  const u32 s0 = gt_saddr(gt_dyn);\n"
    /* byte offsets of this lane's ldmatrix rows at k step 0 and fragment 0;
     * fragment i (16 rows further) and k step kk (chunk 2kk further) are
     * + i * 32 * BK and ^ (kk << 5): the XOR pattern depends on the row
     * mod 8 only, and the chunk bits lie below the row bits */
    "  int ar, ac, br, bc;\n"
    "  gt_mma_lda_lane(lane, &ar, &ac);\n"
    "  gt_mma_ldb_lane(lane, &br, &bc);\n"
    "  const u32 aoff = 2 * gt_mma_soff(wm * GT_WM + ar, ac, GT_KC);\n"
    "  const u32 boff = 2 * GT_SA + 2 * gt_mma_soff(wn * GT_WN + br, bc, GT_KC);\n"
    "  float acc[GT_MT][GT_NT][4];\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < GT_MT; i++)\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < GT_NT; j++)\n"
    "#pragma unroll\n"
    "      for (int e = 0; e < 4; e++) acc[i][j][e] = 0.f;\n"
    "#pragma unroll\n"
    "  for (int s = 0; s < GT_ST - 1; s++) {\n"
    "    if (s < nk) {\n"
    "      const u32 st = s0 + 2u * s * GT_STG;\n"
    "      gt_tile<GT_BM>(st, A, g.lda, mleft, kb + (i64)s * GT_BK, ke, tid);\n"
    "      gt_tile<GT_BN>(st + 2 * GT_SA, B, g.ldb, nleft, kb + (i64)s * GT_BK, ke, tid);\n"
    "    }\n"
    "    gt_commit();\n"
    "  }\n"
    /* wait for tile 0; its first fragments */
    "  gt_wait<GT_ST - 2>();\n"
    "  __syncthreads();\n"
    "  int rd = 0, wr = GT_ST - 1;\n" /* slots of tile t and of tile t + ST - 1 */
    "  u32 af[2][GT_MT][4], bf[2][GT_NT][2];\n"
    "  if (nk > 0) gt_frags(s0, aoff, boff, 0, af[0], bf[0]);\n"
    "  for (int t = 0; t < nk; t++) {\n"
    "    const u32 st = s0 + 2u * rd * GT_STG;\n"
    "#pragma unroll\n"
    "    for (int kk = 0; kk < GT_BK / 16; kk++) {\n"
    "      if (kk == 0) {\n"
    "        if (t + GT_ST - 1 < nk) {\n"
    "          const u32 sw = s0 + 2u * wr * GT_STG;\n"
    "          const i64 k0 = kb + (i64)(t + GT_ST - 1) * GT_BK;\n"
    "          gt_tile<GT_BM>(sw, A, g.lda, mleft, k0, ke, tid);\n"
    "          gt_tile<GT_BN>(sw + 2 * GT_SA, B, g.ldb, nleft, k0, ke, tid);\n"
    "        }\n"
    "        gt_commit();\n"
    "      }\n"
    "      if (kk + 1 < GT_BK / 16) {\n"
    "        gt_frags(st, aoff, boff, kk + 1, af[(kk + 1) & 1], bf[(kk + 1) & 1]);\n"
    "      } else {\n"
    "        gt_wait<GT_ST - 2>();\n"
    "        __syncthreads();\n"
    "        rd = rd + 1 == GT_ST ? 0 : rd + 1;\n"
    "        wr = wr + 1 == GT_ST ? 0 : wr + 1;\n"
    "        if (t + 1 < nk) gt_frags(s0 + 2u * rd * GT_STG, aoff, boff, 0, af[0], bf[0]);\n"
    "      }\n"
    "#pragma unroll\n"
    "      for (int i = 0; i < GT_MT; i++)\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < GT_NT; j++) gt_mma(acc[i][j], af[kk & 1][i], bf[kk & 1][j][0], bf[kk & 1][j][1]);\n"
    "    }\n"
    "  }\n"
    "  gt_wait<0>();\n"
    "  const int gq = lane >> 2, t4 = lane & 3;\n"
    GT_MMA_SRC_NBATCH
    /* C fragment: c0 c1 at (g, 2q), (g, 2q+1), c2 c3 eight rows below */
    "#pragma unroll\n"
    "  for (int i = 0; i < GT_MT; i++)\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < GT_NT; j++)\n"
    "#pragma unroll\n"
    "      for (int e = 0; e < 4; e++) {\n"
    "        const i64 ii = row0 + wm * GT_WM + 16 * i + gq + 8 * (e >> 1);\n"
    "        const i64 jj = col0 + wn * GT_WN + 8 * j + 2 * t4 + (e & 1);\n"
    GT_MMA_SRC_OUT
    GT_MMA_SRC_LAST
    GT_GEN_SRC_FIN(gt_mma_fin, gt_mma_args);

/* The HIP template (GT_HIP=1, GT_WS=64; gfx90a, gfx942): the CUDA template's
 * structure and, where the hardware does not differ, its text (the
 * GT_MMA_SRC_* pieces): the CTA tile bm x bn x bk, the warps_m x warps_n
 * grid of (now 64-lane) waves, the XOR-swizzled tile layout of gt_mma_soff,
 * the raster, the split-K reductions and the epilogue. What differs:
 *
 *   math     v_mfma_f32_16x16x16{bf16_1k,f16}: a wave's tile is MT x NT
 *            blocks of 16 x 16, four f32 accumulators per lane each (lane
 *            l holds D rows 4(l/16)..+3 of column l%16). A k32 step reads
 *            one 16-byte chunk per block and lane (ds_read_b128: row l%16,
 *            chunk l/16), whose low and high 8 bytes feed two MFMAs that
 *            take them as k 4(l/16)..+3: k is permuted inside the step
 *            alike for A and B, so every product is made exactly once (as
 *            gemv's k permutation on CUDA). The 8 lanes of one ds_read_b128
 *            phase read 8 rows of one chunk column: the swizzle puts them
 *            in 8 distinct 16-byte bank groups, as for ldmatrix.
 *   pipeline CDNA has no cp.async (and HIP 5.x no global_load_lds builtin):
 *            16-byte buffer loads go to registers, stores move them to
 *            LDS. `stages` keeps its meaning, tiles in flight ahead of the
 *            math (stages - 1), but the ring holds them in registers: the
 *            k loop is unrolled by stages - 1 so each ring slot is a fixed
 *            set of VGPRs; iteration i issues the loads of tile
 *            i + stages - 1 into the slot tile i has left, runs the math of
 *            tile i from LDS, stores tile i + 1 from its slot into the other
 *            half of a double-buffered LDS tile and synchronises once, on
 *            LDS only. The compiler's s_waitcnt vmcnt then waits for the
 *            oldest tile only (128x128x32 on 4 waves, 4 chunks a tile: the
 *            last store of a tile after vmcnt(4 (stages - 2)), checked with
 *            llvm-objdump). LDS holds 2 tiles: 2 x (bm + bn) x bk x 2 bytes.
 *   edges    a chunk past m, n or k is loaded from an offset past the
 *            buffer, which reads zeros (cp.async's zero-fill); k is a
 *            multiple of 8 (a HIP rule), so no chunk is partial.
 *   atomics  "atomic" split-K adds with global_atomic_add_f32: hipRTC gets
 *            -munsafe-fp-atomics (worker/hip/gen_hip.c), right for the
 *            workspace in device memory (hipMalloc, coarse-grained). */
const char gt_gen_mma_hip_src[] =
    GT_GEN_SRC_TYPES
    "#if GT_WS != 64\n"
    "#error the HIP mma template is written for wave64 (CDNA)\n"
    "#endif\n"
    "#define GT_THREADS (GT_WGM * GT_WGN * GT_WS)\n"
    "#define GT_WM (GT_BM / GT_WGM)\n"
    "#define GT_WN (GT_BN / GT_WGN)\n"
    "#define GT_MT (GT_WM / 16)\n"
    "#define GT_NT (GT_WN / 16)\n"
    "#define GT_KC (GT_BK / 8)\n"
    "#define GT_SA (GT_BM * GT_BK)\n"
    "#define GT_STG (GT_SA + GT_BN * GT_BK)\n"
    "#define GT_NPF (GT_ST - 1)\n"               /* tiles in flight (register ring slots) */
    "#define GT_RS (GT_THREADS / GT_KC)\n"       /* rows one pass of the threads copies */
    "#define GT_CA ((GT_BM + GT_RS - 1) / GT_RS)\n" /* 16-byte chunks per thread and tile */
    "#define GT_CB ((GT_BN + GT_RS - 1) / GT_RS)\n"
    GT_MMA_SRC_ARGS
    GT_GEN_SRC_F16_HIP
    GT_GEN_SRC_GET_PUT
    GT_GEN_SRC_EPI(gt_mma_args)
    "typedef u32 gt_v4 __attribute__((ext_vector_type(4)));\n"
    "typedef float gt_f4 __attribute__((ext_vector_type(4)));\n"
    "#if GT_AB == 0\n"
    "typedef short gt_e8 __attribute__((ext_vector_type(8)));\n"
    "#define GT_MFMA __builtin_amdgcn_mfma_f32_16x16x16bf16_1k\n"
    "#else\n"
    "typedef _Float16 gt_e8 __attribute__((ext_vector_type(8)));\n"
    "#define GT_MFMA __builtin_amdgcn_mfma_f32_16x16x16f16\n"
    "#endif\n"
    /* Global loads are raw buffer loads (the LLVM intrinsic, declared as
     * composable_kernel does): a buffer resource per operand panel (base in
     * SGPRs, 2 GiB of records) and 32-bit byte offsets; an offset past the
     * records reads zeros, no fault: cp.async's zero-fill. ROWS rows of an
     * operand tile (rows_left of them exist) at k0: this thread's 16-byte
     * chunks as the CUDA gt_tile spreads them (chunk column tid % KC of rows
     * tid / KC + it * RS); a chunk past the rows or ke (k is a multiple of
     * 8 on HIP, a rule: a chunk is whole or past ke) gets the offset 2^31.
     * Every thread issues the same loads every tile: no branch for the
     * compiler's vmcnt accounting to merge */
    "__device__ gt_v4 gt_buf_ld(gt_v4 rsrc, u32 voff, u32 soff, int aux) __asm(\"llvm.amdgcn.raw.buffer.load.v4i32\");\n"
    "__device__ __forceinline__ gt_v4 gt_rsrc(const void *base) {\n"
    "  const u64 a = (u64)base;\n" /* uniform: readfirstlane keeps it in SGPRs (no waterfall loop) */
    "  return gt_v4{(u32)__builtin_amdgcn_readfirstlane((int)(u32)a),\n"
    "               (u32)__builtin_amdgcn_readfirstlane((int)((u32)(a >> 32) & 0xffffu)), 0x7fffffffu, 0x00020000u};\n"
    "}\n"
    "template <int ROWS, int N> __device__ __forceinline__ void gt_fetch(gt_v4 *v, gt_v4 rs, i64 ld, i64 rows_left,\n"
    "                                                                   i64 k0, i64 ke, int tid) {\n"
    "  const int c = tid % GT_KC, r0 = tid / GT_KC;\n"
    "  const u32 o = (u32)((r0 * ld + k0 + c * 8) * 2);\n"
    "  const bool kin = k0 + c * 8 < ke;\n"
    "#pragma unroll\n"
    "  for (int it = 0; it < N; it++) {\n"
    "    const int r = r0 + it * GT_RS;\n"
    "    const bool ok = kin && (ROWS % GT_RS == 0 || r < ROWS) && r < rows_left;\n"
    "    v[it] = gt_buf_ld(rs, ok ? o + (u32)(it * GT_RS * ld * 2) : 0x80000000u, 0u, 0);\n"
    "  }\n"
    "}\n"
    /* ... and from registers into the LDS tile at byte offset dst */
    "template <int ROWS, int N> __device__ __forceinline__ void gt_stash(unsigned char *lds, u32 dst, const gt_v4 *v,\n"
    "                                                                   int tid) {\n"
    "  const int c = tid % GT_KC, r0 = tid / GT_KC;\n"
    "#pragma unroll\n"
    "  for (int it = 0; it < N; it++) {\n"
    "    const int r = r0 + it * GT_RS;\n"
    "    if (ROWS % GT_RS == 0 || r < ROWS) *(gt_v4 *)(lds + dst + 2 * gt_mma_soff(r, c, GT_KC)) = v[it];\n"
    "  }\n"
    "}\n"
    /* an LDS-only barrier (as composable_kernel's block_sync_lds):
     * __syncthreads() is also a workgroup release fence, s_waitcnt vmcnt(0),
     * which would drain the ring of loads in flight at every tile */
    "__device__ __forceinline__ void gt_bar() { asm volatile(\"s_waitcnt lgkmcnt(0)\\n s_barrier\" ::: \"memory\"); }\n"
    /* the k32 steps of the LDS tile at st: block i (16 rows further) and
     * step kk (chunk 4kk further) are + i * 32 * BK and ^ (kk << 6) from
     * the lane's offsets at block 0, step 0, as on CUDA */
    "__device__ __forceinline__ void gt_math(const unsigned char *lds, u32 st, u32 aoff, u32 boff,\n"
    "                                        gt_f4 (*acc)[GT_NT]) {\n"
    "#pragma unroll\n"
    "  for (int kk = 0; kk < GT_BK / 32; kk++) {\n"
    "    gt_e8 af[GT_MT], bf[GT_NT];\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < GT_MT; i++) af[i] = *(const gt_e8 *)(lds + st + (aoff ^ (kk << 6)) + i * 32 * GT_BK);\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < GT_NT; j++) bf[j] = *(const gt_e8 *)(lds + st + (boff ^ (kk << 6)) + j * 32 * GT_BK);\n"
    /* all low halves, then all high halves: no MFMA waits on the one before */
    "#pragma unroll\n"
    "    for (int i = 0; i < GT_MT; i++)\n"
    "#pragma unroll\n"
    "      for (int j = 0; j < GT_NT; j++) acc[i][j] = GT_MFMA(af[i].lo, bf[j].lo, acc[i][j], 0, 0, 0);\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < GT_MT; i++)\n"
    "#pragma unroll\n"
    "      for (int j = 0; j < GT_NT; j++) acc[i][j] = GT_MFMA(af[i].hi, bf[j].hi, acc[i][j], 0, 0, 0);\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(GT_THREADS) gt_mma(gt_mma_args g) {\n"
    "  extern __shared__ __attribute__((aligned(16))) unsigned char gt_dyn[];\n"
    "  const int tid = threadIdx.x, lane = tid & 63, warp = tid >> 6;\n"
    GT_MMA_SRC_CTA
    /* byte offsets of this lane's chunk (row l % 16, chunk l / 16) at block 0, step 0 */
    "  const int fr = lane & 15, fq = lane >> 4;\n"
    "  const u32 aoff = 2 * gt_mma_soff(wm * GT_WM + fr, fq, GT_KC);\n"
    "  const u32 boff = 2 * GT_SA + 2 * gt_mma_soff(wn * GT_WN + fr, fq, GT_KC);\n"
    "  gt_f4 acc[GT_MT][GT_NT];\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < GT_MT; i++)\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < GT_NT; j++) acc[i][j] = (gt_f4)(0.f);\n"
    /* the ring: tile x lives in slot x % NPF until it is stored to LDS;
     * tile 0 goes to LDS at once, tiles 1 .. NPF - 1 stay in flight */
    "  gt_v4 ra[GT_NPF][GT_CA], rb[GT_NPF][GT_CB];\n"
    "  const gt_v4 rsa = gt_rsrc(A), rsb = gt_rsrc(B);\n"
    "#pragma unroll\n"
    "  for (int s = 0; s < GT_NPF; s++) {\n"
    "    gt_fetch<GT_BM, GT_CA>(ra[s], rsa, g.lda, mleft, kb + (i64)s * GT_BK, ke, tid);\n"
    "    gt_fetch<GT_BN, GT_CB>(rb[s], rsb, g.ldb, nleft, kb + (i64)s * GT_BK, ke, tid);\n"
    "  }\n"
    "  gt_stash<GT_BM, GT_CA>(gt_dyn, 0, ra[0], tid);\n"
    "  gt_stash<GT_BN, GT_CB>(gt_dyn, 2 * GT_SA, rb[0], tid);\n"
    "  gt_bar();\n"
    /* iteration i (slot u = i % NPF): the loads of tile i + NPF into slot u
     * (a tile past the split's end loads nothing: zeros); an empty asm with
     * a memory clobber keeps the scheduler from sinking them below the
     * stores; the math of tile i; tile i + 1 from slot u + 1 into the LDS
     * half that tile i - 1 left before the barrier that ended iteration
     * i - 1; one barrier */
    "  auto step = [&](const int u, const int i) {\n"
    "    const i64 kf = kb + (i64)(i + GT_NPF) * GT_BK;\n"
    "    gt_fetch<GT_BM, GT_CA>(ra[u], rsa, g.lda, mleft, kf, ke, tid);\n"
    "    gt_fetch<GT_BN, GT_CB>(rb[u], rsb, g.ldb, nleft, kf, ke, tid);\n"
    "    asm volatile(\"\" ::: \"memory\");\n"
    "    gt_math(gt_dyn, (u32)(i & 1) * (2u * GT_STG), aoff, boff, acc);\n"
    "    const u32 sw = (u32)((i + 1) & 1) * (2u * GT_STG);\n"
    "    gt_stash<GT_BM, GT_CA>(gt_dyn, sw, ra[(u + 1) % GT_NPF], tid);\n"
    "    gt_stash<GT_BN, GT_CB>(gt_dyn, sw + 2 * GT_SA, rb[(u + 1) % GT_NPF], tid);\n"
    "    gt_bar();\n"
    "  };\n"
    /* unrolled by NPF so that each slot is a fixed set of registers; the
     * rest (< NPF tiles) after the loop, so that no MFMA in the loop is
     * conditional (that makes the compiler copy the accumulators between
     * AGPRs and VGPRs around it) */
    "  int t = 0;\n"
    "  for (; t + GT_NPF <= nk; t += GT_NPF) {\n"
    "#pragma unroll\n"
    "    for (int u = 0; u < GT_NPF; u++) step(u, t + u);\n"
    "  }\n"
    "#pragma unroll\n"
    "  for (int u = 0; u < GT_NPF - 1; u++)\n"
    "    if (t + u < nk) step(u, t + u);\n"
    GT_MMA_SRC_NBATCH
    /* D block (i, j): lane l holds rows 4 (l / 16) + e of column l % 16 */
    "#pragma unroll\n"
    "  for (int i = 0; i < GT_MT; i++)\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < GT_NT; j++)\n"
    "#pragma unroll\n"
    "      for (int e = 0; e < 4; e++) {\n"
    "        const i64 ii = row0 + wm * GT_WM + 16 * i + 4 * fq + e;\n"
    "        const i64 jj = col0 + wn * GT_WN + 16 * j + fr;\n"
    GT_MMA_SRC_OUT
    GT_MMA_SRC_LAST
    GT_GEN_SRC_FIN(gt_mma_fin, gt_mma_args);

int gt_mma_defines_for(const gt_problem *p, const gt_mma_cfg *c, int hip,
                       char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN])
{
    gt_gen_type_defs t;
    /* mma.sync and HIP: bf16, f16; wgmma also OCP fp8 (CUDA) */
    if (gt_gen_type_defs_of(p, &t) != 0 || (t.ab > 1 && (c->inst != GT_MMA_INST_WGMMA || hip)))
        return -1;
    const struct {
        const char *name;
        int v;
    } d[] = {
        {"GT_AB", t.ab},         {"GT_DKT", t.dkt},       {"GT_CKT", t.ckt},
        {"GT_BIASKT", t.bkt},    {"GT_ACT", t.act}, {"GT_BETA", t.beta},         {"GT_BM", c->bm},
        {"GT_BN", c->bn},        {"GT_BK", c->bk},        {"GT_WGM", c->warps_m},
        {"GT_WGN", c->warps_n},  {"GT_ST", c->stages},    {"GT_SPLITK", c->splitk},
        {"GT_RED", c->reduction}, {"GT_SWZ", c->swizzle},
    };
    int n = (int)(sizeof d / sizeof d[0]);
    for (int i = 0; i < n; i++)
        snprintf(defs[i], GT_GEN_DEF_LEN, "-D%s=%d", d[i].name, d[i].v);
    /* fp8: B's type (it may differ from A's), appended only then so that
     * the 16-bit lists (NVRTC's compile cache keys) stay as they were */
    if (t.ab > 1)
        snprintf(defs[n++], GT_GEN_DEF_LEN, "-DGT_BB=%d", t.bb);
    if (gt_mma_wg_pw(c))
        snprintf(defs[n++], GT_GEN_DEF_LEN, "-DGT_PW=%d", gt_mma_wg_pw(c));
    /* the grid's size is the launch's (gridDim.x), not the source's: one
     * kernel serves every ctas */
    if (c->ctas > 0)
        snprintf(defs[n++], GT_GEN_DEF_LEN, "-DGT_PERSIST=1");
    if (c->cluster == 2)
        snprintf(defs[n++], GT_GEN_DEF_LEN, "-DGT_MC=1");
    if (c->pingpong)
        snprintf(defs[n++], GT_GEN_DEF_LEN, "-DGT_PP=1");
    /* the persistent epilogue's staging per warpgroup, and D by TMA stores */
    if (c->inst == GT_MMA_INST_WGMMA && c->ctas > 0)
        snprintf(defs[n++], GT_GEN_DEF_LEN, "-DGT_EPB=%d", gt_mma_wg_epi_bytes(c));
    if (gt_mma_wg_tma_store(p, c))
        snprintf(defs[n++], GT_GEN_DEF_LEN, "-DGT_TS=1");
    /* HIP: the target and the wave size, appended so that the CUDA list (a
     * part of NVRTC's compile cache key) stays as it was */
    if (hip) {
        snprintf(defs[n++], GT_GEN_DEF_LEN, "-DGT_HIP=1");
        snprintf(defs[n++], GT_GEN_DEF_LEN, "-DGT_WS=64");
    }
    return n;
}

int gt_mma_defines(const gt_problem *p, const gt_mma_cfg *c, char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN])
{
    return gt_mma_defines_for(p, c, 0, defs);
}

void gt_mma_geometry_for(const gt_problem *p, const gt_mma_cfg *c, int hip, gt_gen_geom *g)
{
    memset(g, 0, sizeof *g);
    int64_t batch = p->batch > 0 ? p->batch : 1, sk = c->splitk > 0 ? c->splitk : 1;
    int64_t bk = c->bk > 0 ? c->bk : 32, tiles_k = (p->k + bk - 1) / bk;
    /* whole k tiles per split: only the last split ends inside a tile */
    g->kper = (tiles_k + sk - 1) / sk * bk;
    int64_t npm = (p->m + c->bm - 1) / (c->bm > 0 ? c->bm : 1);
    int64_t npn = (p->n + c->bn - 1) / (c->bn > 0 ? c->bn : 1);
    g->gx = (unsigned)(npm * npn);
    if (c->cluster == 2) /* persistent in pairs of tile rows, two CTAs a pair */
        g->gx = (unsigned)((npm + 1) / 2 * npn * 2);
    if (c->ctas > 0 && g->gx > (unsigned)c->ctas)
        g->gx = (unsigned)c->ctas; /* persistent: each CTA loops over tiles gx apart */
    g->gy = 1;
    g->gz = (unsigned)(batch * sk);
    g->threads = (unsigned)(gt_mma_consumer_warps(c) * (hip ? 64 : 32)) +
                 (unsigned)gt_mma_wg_producer_threads(c);
    size_t mn = (size_t)p->m * (size_t)p->n * (size_t)batch * sizeof(float);
    if (sk > 1 && c->reduction == GT_GEN_RED_ATOMIC) {
        g->ws_bytes = mn;
        g->cnt_bytes = (size_t)g->gx * (size_t)batch * sizeof(unsigned);
    } else if (sk > 1) {
        g->ws_bytes = mn * (size_t)sk;
        int64_t blocks = ((int64_t)(mn / sizeof(float)) + 255) / 256;
        g->fin_blocks = (unsigned)(blocks < 1 ? 1 : blocks > 4096 ? 4096 : blocks);
    }
    /* CUDA: the cp.async ring of `stages` tiles; HIP: tiles in flight are
     * in registers, LDS is double-buffered; wgmma: the TMA ring, 1024-byte
     * aligned slots (the 128-byte swizzle repeats every 8 rows) */
    g->smem_bytes = (size_t)(hip ? 2 : c->stages) * (size_t)(c->bm + c->bn) * (size_t)c->bk *
                    (size_t)gt_gen_elem_size(p);
    if (c->inst == GT_MMA_INST_WGMMA)
        g->smem_bytes += 1024;
    if (c->ctas > 0) /* the persistent epilogue's staging, one per (consumer) warpgroup */
        g->smem_bytes += (size_t)(gt_mma_consumer_warps(c) / 4) * (size_t)gt_mma_wg_epi_bytes(c);
}

/* The producer warp takes 32 more threads: nine warps put three on one of
 * the SM's four sub-partitions (16K registers each), so ptxas' limit under
 * __launch_bounds__(threads, 1) falls from 255 to 168, and the 128 f32
 * accumulators per thread of bn = 256 spill (fp8 configs on the H100 did)
 * or cost 17 % more instructions (CUDA 13's ptxas); so bn = 256 keeps
 * thread 0 as its producer. Where the producer warp applies it was never
 * slower on the H100 and up to 1.18x faster at n = 128
 * (bench/results/h100_31_producer_warp.txt). For bn = 256 a producer
 * warpgroup that hands its registers to the consumers (setmaxnreg) measured
 * no faster on the H200 (bench/results/h200_46_wgmma_producer_tiles.txt).
 * Pingpong needs a producer of its own (thread 0 would stop loading while
 * its warpgroup stores a tile, and starve the other): a warpgroup, whose
 * registers go to the two consumers. */
int gt_mma_wg_pw(const gt_mma_cfg *c)
{
    if (c->inst != GT_MMA_INST_WGMMA)
        return 0;
    if (c->pingpong)
        return 2;
    return c->bn <= 128;
}

int gt_mma_consumer_warps(const gt_mma_cfg *c)
{
    return c->warps_m * c->warps_n * (c->pingpong ? 2 : 1);
}

int gt_mma_wg_producer_threads(const gt_mma_cfg *c)
{
    int pw = gt_mma_wg_pw(c);
    return pw == 2 ? 128 : 32 * pw;
}

const char *gt_mma_src_of(const gt_mma_cfg *c)
{
    return c->inst == GT_MMA_INST_WGMMA ? gt_gen_mma_wg_src : gt_gen_mma_src;
}

int gt_mma_wg_epi_bytes(const gt_mma_cfg *c)
{
    return c->bn >= 256 ? GT_MMA_WG_TS_BYTES : GT_MMA_WG_EPI_BYTES;
}

int gt_mma_wg_tma_store(const gt_problem *p, const gt_mma_cfg *c)
{
    int64_t es = gt_dtype_size(p->d_type), batch = p->batch > 0 ? p->batch : 1;
    return c->inst == GT_MMA_INST_WGMMA && c->ctas > 0 && c->bn == 256 && c->splitk == 1 &&
           (p->d_type == GT_DT_BF16 || p->d_type == GT_DT_F16) && p->beta == 0.0 && !p->bias &&
           (p->ldd * es) % 16 == 0 && (batch == 1 || (p->stride_d * es) % 16 == 0) &&
           p->m < (1LL << 31) && p->n < (1LL << 31) && batch < (1LL << 31);
}

int gt_mma_tmaps(const gt_problem *p, const gt_mma_cfg *c, gt_mma_tmap t[GT_MMA_MAX_TMAPS])
{
    if (c->inst != GT_MMA_INST_WGMMA)
        return 0;
    int64_t batch = p->batch > 0 ? p->batch : 1, es = gt_gen_elem_size(p);
    for (int i = 0; i < 2; i++) {
        int64_t rows = i ? p->n : p->m, ld = i ? p->ldb : p->lda, st = i ? p->stride_b : p->stride_a;
        /* one batch: a stride past the matrix, which the map never steps */
        int64_t bstride = batch > 1 ? st : ld * rows;
        int dt = es == 1 ? GT_MMA_TMAP_U8 : p->a_type == GT_DT_F16 ? GT_MMA_TMAP_F16 : GT_MMA_TMAP_BF16;
        t[i] = (gt_mma_tmap){.operand = i ? "b" : "a", .dtype = dt,
                             .dims = {(unsigned long long)p->k, (unsigned long long)rows, (unsigned long long)batch},
                             .strides = {(unsigned long long)(ld * es), (unsigned long long)(bstride * es)},
                             /* a cluster of two loads half of B each */
                             .box = {(unsigned)(128 / es), (unsigned)(i ? c->bn / (c->cluster == 2 ? 2 : 1) : c->bm), 1}};
    }
    if (!gt_mma_wg_tma_store(p, c))
        return 2;
    /* D (16-bit): a warpgroup's 64 rows (128 bytes, the swizzle's row) by
     * 32 columns a store; one batch as for A and B */
    int64_t bd = batch > 1 ? p->stride_d : p->ldd * p->n;
    typedef unsigned long long ull;
    t[2] = (gt_mma_tmap){.operand = "d",
                         .dtype = p->d_type == GT_DT_F16 ? GT_MMA_TMAP_F16 : GT_MMA_TMAP_BF16,
                         .dims = {(ull)p->m, (ull)p->n, (ull)batch},
                         .strides = {(ull)(p->ldd * 2), (ull)(bd * 2)},
                         .box = {64, 32, 1}};
    return 3;
}

const void *gt_mma_tmap_base(const gt_mma_tmap *t, const void *a, const void *b, const void *d)
{
    return t->operand[0] == 'a' ? a : t->operand[0] == 'b' ? b : d;
}

const char *gt_mma_tmap_type_name(const gt_mma_tmap *t)
{
    return t->dtype == GT_MMA_TMAP_U8    ? "CU_TENSOR_MAP_DATA_TYPE_UINT8"
           : t->dtype == GT_MMA_TMAP_F16 ? "CU_TENSOR_MAP_DATA_TYPE_FLOAT16"
                                         : "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16";
}

void gt_mma_geometry(const gt_problem *p, const gt_mma_cfg *c, gt_gen_geom *g)
{
    gt_mma_geometry_for(p, c, 0, g);
}
