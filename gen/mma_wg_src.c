/* mma_wg_src.c: the "mma" family's Hopper template (inst "wgmma", sm_90a
 * only), as source text NVRTC compiles at run time. It shares with the
 * mma.sync template (gen/mma_src.c) the argument block, the raster, the
 * split of k and the epilogue with its split-K reductions
 * (gen/mma_src_parts.h); what differs is how tiles reach the tensor cores.
 * Pure host C.
 *
 *   CTA      bm = 64 x warpgroups rows (warps_m = bm / 16 warps, 4 per
 *            warpgroup) by bn columns; warpgroup w computes rows 64w..64w+63
 *            of the tile with wgmma.mma_async m64 x bn x k16 (bf16, f16;
 *            k32 for OCP fp8, e4m3/e5m2 per operand), both operands
 *            read from shared memory through matrix descriptors, f32
 *            accumulators in registers (bn / 2 per thread); fp8's
 *            per-tensor scales multiply the product in the epilogue;
 *   loads    the Tensor Memory Accelerator: the producer (thread 0, or with
 *            bn <= 128 a warp of its own, GT_PW) issues one
 *            cp.async.bulk.tensor.3d per operand and k tile (one 128-byte
 *            row of k, 64 16-bit or 128 fp8 values, of bm rows of A, of bn
 *            columns of B) from tensor maps the host
 *            encodes (dims k x rows x batch, box bk x rows x 1, 128-byte
 *            swizzle, out-of-bounds elements zero-filled: m, n, k and batch
 *            edges need no code); each lands in a ring of `stages` slots
 *            whose "full" mbarrier counts its bytes;
 *   pipeline thread 0 keeps stages - 1 tiles in flight: at iteration t it
 *            refills the slot of tile t - 1 once every warpgroup has
 *            released it (an "empty" mbarrier, one arrival per warpgroup
 *            after wgmma.wait_group 1 shows its tile t - 1 math done), so
 *            the math of tile t overlaps the loads of t + 1 .. t + stages - 1
 *            and the wgmma of t - 1; a producer warp instead refills each
 *            slot as soon as it is released, all stages in flight;
 *   layout   a tile row is bk k values = 128 bytes; the TMA's 128-byte
 *            swizzle puts 16-byte chunk c of row r at chunk c ^ (r % 8), the
 *            pattern the descriptors' swizzle mode 1 reads (8-row groups
 *            1024 bytes apart, k step kk at +32 kk bytes: k16 of 16-bit
 *            values or k32 of fp8 ones); slots are
 *            1024-byte aligned;
 *   epilogue no split-K and D 16-byte aligned: each warpgroup's accumulators
 *            go through the epilogue into shared memory (the idle ring), the
 *            tile is written back column by column in 16-byte stores; else,
 *            and with split-K, element by element as the mma.sync template;
 *   persist  GT_PERSIST (config ctas, splitk 1): gridDim.x CTAs per batch,
 *            CTA b computing tiles b, b + gridDim.x, ... (the raster's
 *            order, so a wave still shares panels in L2). The ring's
 *            iterations run on across tiles (iteration G is k tile
 *            G % nk of the CTA's tile G / nk), so the producer loads the
 *            next tile while the consumers store this one: the pipeline
 *            fills once per CTA, not once per tile. The ring is not idle at
 *            a tile's end, so each warpgroup stages its rows 32 (f32: 16)
 *            columns at a time in a buffer of its own past the ring
 *            (GT_MMA_WG_EPI_BYTES) and syncs only itself (named barrier
 *            2 + warpgroup); with GT_TS (gt_mma_wg_tma_store: bn 256,
 *            16-bit D without bias or C) it stages 32 columns at a time in
 *            the TMA's swizzle, two buffers in turn, and one thread writes
 *            them with a TMA store through a third map (of D), so the
 *            warpgroup goes on to its next tile while D is written;
 *   cluster  GT_MC (config cluster 2, persistent only): clusters of two
 *            CTAs (__cluster_dims__) on pairs of tile rows of one tile
 *            column; each loads its A tile and half of the B tile into
 *            both rings (TMA multicast), so a slot's "full" barrier counts
 *            bytes from both CTAs and its "empty" barrier the warpgroups of
 *            both (each arrives here and at its peer); cluster barriers
 *            after the barriers' init and before exit keep every remote
 *            arrival and multicast within the peer's lifetime;
 *   pingpong GT_PP (config pingpong, persistent, GT_WGM 4): two consumer
 *            warpgroups, each a whole 64-row tile, take the CTA's tiles in
 *            turn (warpgroup w: tiles w, w + 2, ...; a slot's "empty"
 *            barrier then counts one warpgroup), so one stores its tile
 *            while the other computes; a producer warpgroup (GT_PW 2) loads,
 *            its registers handed to the consumers with setmaxnreg. A
 *            warpgroup starts a tile once the other has waited through the
 *            tile before ("mainloop done", an mbarrier per warpgroup): the
 *            parity waits on a slot tell only two phases apart.
 *
 * The kernel takes the argument block and the two tensor maps (three with
 * GT_TS: D's) by value (__grid_constant__: the TMA reads them from
 * parameter space). */
#include <stdio.h>
#include <string.h>

#include "gen_mma.h"
#include "mma_src_parts.h"
#include "src_common.h"

const char gt_gen_mma_wg_src[] =
    GT_GEN_SRC_TYPES
    /* GT_PP 1 (config pingpong, persistent only): two consumer warpgroups of
     * one tile's rows each (GT_WGM 4), taking the CTA's tiles in turn */
    "#ifndef GT_PP\n"
    "#define GT_PP 0\n"
    "#endif\n"
    "#define GT_THREADS (GT_WGM * 32 * (1 + GT_PP))\n" /* the consumers: GT_WGM / 4 warpgroups (x 2) */
    "#define GT_CWARPS (GT_THREADS / 32)\n"
    /* GT_PW 1: one more warp, the producer, issues every TMA load and
     * waits for free slots, so no consumer warp ever stalls on the ring;
     * the consumers then synchronise among themselves (named barrier 1) */
    "#ifndef GT_PW\n"
    "#define GT_PW 0\n"
    "#endif\n"
    /* GT_PW 2: a producer warpgroup instead (pingpong), which hands its
     * registers to the two consumer warpgroups (setmaxnreg: 40 for it, 232
     * for each consumer, where __launch_bounds__ of 384 threads allows 168:
     * an increase must fit the CTA's own allocation, 168 x 384) */
    "#define GT_LAUNCH (GT_THREADS + (GT_PW == 2 ? 128 : 32 * GT_PW))\n"
    "#if GT_PW == 2\n"
    "#if GT_THREADS != 256\n"
    "#error \"GT_PW 2 is sized for two consumer warpgroups\"\n"
    "#endif\n"
    "#define GT_REG_PRODUCER() asm volatile(\"setmaxnreg.dec.sync.aligned.u32 40;\" ::: \"memory\")\n"
    "#define GT_REG_CONSUMER() asm volatile(\"setmaxnreg.inc.sync.aligned.u32 232;\" ::: \"memory\")\n"
    "#else\n"
    "#define GT_REG_PRODUCER()\n"
    "#define GT_REG_CONSUMER()\n"
    "#endif\n"
    "#if GT_PP && (!GT_PERSIST || GT_WGM != 4 || GT_PW != 2)\n"
    "#error \"GT_PP needs GT_PERSIST, GT_WGM 4 and GT_PW 2\"\n"
    "#endif\n"
    "#ifndef GT_PERSIST\n"
    "#define GT_PERSIST 0\n"
    "#endif\n"
    /* the persistent epilogue's staging per warpgroup (gt_mma_wg_epi_bytes) */
    "#ifndef GT_EPB\n"
    "#define GT_EPB " GT_XSTR(GT_MMA_WG_EPI_BYTES) "\n"
    "#endif\n"
    /* GT_TS 1 (gt_mma_wg_tma_store): D leaves by TMA stores through a third
     * tensor map, from two swizzled buffers of 32 columns per warpgroup */
    "#ifndef GT_TS\n"
    "#define GT_TS 0\n"
    "#endif\n"
    "#if GT_TS && (!GT_PERSIST || GT_BN != 256 || GT_BETA != 0 || GT_BIASKT >= 0 || GT_DKT == 0 || GT_EPB < 16384 / 2)\n"
    "#error \"GT_TS needs a persistent bn 256 kernel of 16-bit D without bias or C, and its staging\"\n"
    "#endif\n"
    "#if GT_TS\n"
    "#define GT_TD_PARAM , const __grid_constant__ gt_tmap td\n"
    "#else\n"
    "#define GT_TD_PARAM\n"
    "#endif\n"
    /* GT_MC 1 (config cluster 2, persistent only): clusters of two CTAs on
     * vertically adjacent tiles, each loading its own A and one half of
     * the shared B tile into both (TMA multicast) */
    "#ifndef GT_MC\n"
    "#define GT_MC 0\n"
    "#endif\n"
    "#if GT_MC\n"
    "#define GT_CLUSTER __cluster_dims__(2, 1, 1)\n"
    "#define GT_CLSYNC() asm volatile(\"barrier.cluster.arrive.release;\\nbarrier.cluster.wait.acquire;\" ::: \"memory\")\n"
    "#else\n"
    "#define GT_CLUSTER\n"
    "#endif\n"
    "#if GT_PW\n"
    "#define GT_CSYNC() asm volatile(\"bar.sync 1, %0;\" :: \"n\"(GT_THREADS) : \"memory\")\n"
    "#else\n"
    "#define GT_CSYNC() __syncthreads()\n"
    "#endif\n"
    "#define GT_STG ((GT_BM + GT_BN) * 128)\n" /* bytes of one ring slot */
    /* the operand types: 16-bit (k16 per wgmma, one type) or OCP fp8 (k32,
     * A and B each e4m3 or e5m2; GT_BB, B's code, is given for fp8 only) */
    "#define GT_F8 (GT_AB >= 2)\n"
    "#ifndef GT_BB\n"
    "#define GT_BB GT_AB\n"
    "#endif\n"
    /* wgmma's name of a type code (src_common.h: 0 bf16, 1 f16, 2 e4m3,
     * 3 e5m2), for A's and B's */
    "#define GT_TN0 \"bf16\"\n"
    "#define GT_TN1 \"f16\"\n"
    "#define GT_TN2 \"e4m3\"\n"
    "#define GT_TN3 \"e5m2\"\n"
    "#define GT_TN_(c) GT_TN##c\n"
    "#define GT_TN(c) GT_TN_(c)\n"
    "#define GT_WTA GT_TN(GT_AB)\n"
    "#define GT_WTB GT_TN(GT_BB)\n"
    /* k per instruction; the transpose immediates only the 16-bit forms
     * take (fp8 operands must be K-major, as both are here) */
    "#if GT_F8\n"
    "#define GT_WK \"32\"\n"
    "#define GT_WTR \"\"\n"
    "#else\n"
    "#define GT_WK \"16\"\n"
    "#define GT_WTR \", 0, 0\"\n"
    "#endif\n"
    GT_MMA_SRC_ARGS
    GT_GEN_SRC_F16_CUDA
    GT_GEN_SRC_GET_PUT
    GT_GEN_SRC_EPI(gt_mma_args)
    "struct __align__(64) gt_tmap { u64 w[16]; };\n"
    "__device__ __forceinline__ u32 gt_saddr(const void *p) {\n"
    "  u64 a; asm(\"cvta.to.shared.u64 %0, %1;\" : \"=l\"(a) : \"l\"(p)); return (u32)a;\n"
    "}\n"
    "__device__ __forceinline__ void gt_bar_init(u32 b, u32 n) {\n"
    "  asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"(b), \"r\"(n) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void gt_bar_expect(u32 b, u32 bytes) {\n"
    "  asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: \"r\"(b), \"r\"(bytes) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void gt_bar_arrive(u32 b) {\n"
    "  asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\" :: \"r\"(b) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void gt_bar_wait(u32 b, u32 parity) {\n"
    "  u32 ok;\n"
    "  do {\n"
    "    asm volatile(\"{\\n.reg .pred p;\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n\"\n"
    "                 \"selp.u32 %0, 1, 0, p;\\n}\\n\" : \"=r\"(ok) : \"r\"(b), \"r\"(parity) : \"memory\");\n"
    "  } while (!ok);\n"
    "}\n"
    /* the same load into this CTA's and its cluster peers' shared memory
     * at dst (mask: the CTAs), each peer's mbarrier at bar counting it */
    "__device__ __forceinline__ void gt_tma_mc(u32 dst, const gt_tmap *map, int c0, int c1, int c2, u32 bar, unsigned short mask) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster\"\n"
    "               \" [%0], [%1, {%2, %3, %4}], [%5], %6;\"\n"
    "               :: \"r\"(dst), \"l\"((u64)map), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(bar), \"h\"(mask) : \"memory\");\n"
    "}\n"
    /* an arrival on the mbarrier at the same offset in cluster CTA cta */
    "__device__ __forceinline__ void gt_bar_arrive_peer(u32 b, u32 cta) {\n"
    "  asm volatile(\"{\\n.reg .b32 ra;\\nmapa.shared::cluster.u32 ra, %0, %1;\\n\"\n"
    "               \"mbarrier.arrive.shared::cluster.b64 _, [ra];\\n}\\n\" :: \"r\"(b), \"r\"(cta) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void gt_tma(u32 dst, const gt_tmap *map, int c0, int c1, int c2, u32 bar) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes\"\n"
    "               \" [%0], [%1, {%2, %3, %4}], [%5];\"\n"
    "               :: \"r\"(dst), \"l\"((u64)map), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(bar) : \"memory\");\n"
    "}\n"
    /* a box of shared memory at src out to the map's box at (c0, c1, c2),
     * committed as a bulk group of its own (the issuing thread's) */
    "__device__ __forceinline__ void gt_tma_store(const gt_tmap *map, u32 src, int c0, int c1, int c2) {\n"
    "  asm volatile(\"cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\"\n"
    "               :: \"l\"((u64)map), \"r\"(c0), \"r\"(c1), \"r\"(c2), \"r\"(src) : \"memory\");\n"
    "  asm volatile(\"cp.async.bulk.commit_group;\" ::: \"memory\");\n"
    "}\n"
    /* a K-major operand in shared memory, 128-byte swizzle: start >> 4,
     * leading offset unused (1), 8-row groups 1024 bytes apart, mode 1 */
    "__device__ __forceinline__ u64 gt_desc(u32 a) {\n"
    "  return (u64)((a & 0x3ffffu) >> 4) | ((u64)1 << 16) | ((u64)(1024 >> 4) << 32) | ((u64)1 << 62);\n"
    "}\n"
    /* keeps the compiler from moving accumulator reads or writes across
     * the asynchronous wgmma that owns the registers */
    "__device__ __forceinline__ void gt_fence_acc(float *d) {\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < GT_BN / 2; i++) asm volatile(\"\" : \"+f\"(d[i]) :: \"memory\");\n"
    "}\n"
    /* wgmma m64 x GT_BN x k16 and its bn / 2 accumulators: the operand numbers
     * in groups of 16 (GT_WR0..7), the constraints 16 at a time (GT_WC) */
    "#define GT_S_(x) #x\n"
    "#define GT_S(x) GT_S_(x)\n"
    "#define GT_WR0 \"%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15\"\n"
    "#define GT_WR1 \"%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31\"\n"
    "#define GT_WR2 \"%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47\"\n"
    "#define GT_WR3 \"%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63\"\n"
    "#define GT_WR4 \"%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79\"\n"
    "#define GT_WR5 \"%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95\"\n"
    "#define GT_WR6 \"%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111\"\n"
    "#define GT_WR7 \"%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127\"\n"
    "#define GT_WC(i) \"+f\"(d[(i) + 0]), \"+f\"(d[(i) + 1]), \"+f\"(d[(i) + 2]), \"+f\"(d[(i) + 3]), \"+f\"(d[(i) + 4]), \"+f\"(d[(i) + 5]), \"+f\"(d[(i) + 6]), \"+f\"(d[(i) + 7]), \"+f\"(d[(i) + 8]), \"+f\"(d[(i) + 9]), \"+f\"(d[(i) + 10]), \"+f\"(d[(i) + 11]), \"+f\"(d[(i) + 12]), \"+f\"(d[(i) + 13]), \"+f\"(d[(i) + 14]), \"+f\"(d[(i) + 15])\n"
    "#if GT_BN == 16\n"
    "#define GT_WREGS \"%0,%1,%2,%3,%4,%5,%6,%7\"\n"
    "#define GT_WOUT \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3]), \"+f\"(d[4]), \"+f\"(d[5]), \"+f\"(d[6]), \"+f\"(d[7])\n"
    "#define GT_WIN \"%8, %9\"\n"
    "#define GT_WP \"%10\"\n"
    "#elif GT_BN == 32\n"
    "#define GT_WREGS GT_WR0\n"
    "#define GT_WOUT GT_WC(0)\n"
    "#define GT_WIN \"%16, %17\"\n"
    "#define GT_WP \"%18\"\n"
    "#elif GT_BN == 64\n"
    "#define GT_WREGS GT_WR0 \",\" GT_WR1\n"
    "#define GT_WOUT GT_WC(0), GT_WC(16)\n"
    "#define GT_WIN \"%32, %33\"\n"
    "#define GT_WP \"%34\"\n"
    "#elif GT_BN == 128\n"
    "#define GT_WREGS GT_WR0 \",\" GT_WR1 \",\" GT_WR2 \",\" GT_WR3\n"
    "#define GT_WOUT GT_WC(0), GT_WC(16), GT_WC(32), GT_WC(48)\n"
    "#define GT_WIN \"%64, %65\"\n"
    "#define GT_WP \"%66\"\n"
    "#elif GT_BN == 256\n"
    "#define GT_WREGS GT_WR0 \",\" GT_WR1 \",\" GT_WR2 \",\" GT_WR3 \",\" GT_WR4 \",\" GT_WR5 \",\" GT_WR6 \",\" GT_WR7\n"
    "#define GT_WOUT GT_WC(0), GT_WC(16), GT_WC(32), GT_WC(48), GT_WC(64), GT_WC(80), GT_WC(96), GT_WC(112)\n"
    "#define GT_WIN \"%128, %129\"\n"
    "#define GT_WP \"%130\"\n"
    "#endif\n"
    "__device__ __forceinline__ void gt_wg_mma(float *d, u64 da, u64 db) {\n"
    "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, \" GT_WP \", 0;\\n\"\n"
    "               \"wgmma.mma_async.sync.aligned.m64n\" GT_S(GT_BN) \"k\" GT_WK \".f32.\" GT_WTA \".\" GT_WTB\n"
    "               \" {\" GT_WREGS \"}, \" GT_WIN \", p, 1, 1\" GT_WTR \";\\n}\\n\"\n"
    "               : GT_WOUT : \"l\"(da), \"l\"(db), \"r\"(1));\n"
    "}\n"
    /* a warp's 16 x 16 block of D (rows r0.., columns c0..; fragments f0
     * of columns c0..c0+7 and f1 of c0+8..c0+15, 4 accumulators each as
     * mma's m16n8 C) through the epilogue into column-major 16-bit staging
     * at s (columns ld elements apart), one instruction: four 8 x 8
     * matrices of bf16/f16 pairs, transposed (stmatrix .trans: lane l
     * names where column l % 8 of matrix l / 8 goes). For 16-bit D without
     * bias or C only: the epilogue then needs no indices, and rows or
     * columns past D are staged but never copied out. gt_pack16: the
     * block's values through the epilogue as the four registers of pairs;
     * gt_stmatrix: the instruction, lane l's address for its column */
    "__device__ __forceinline__ void gt_pack16(u32 *pr, const float *f0, const float *f1, float ab, const gt_mma_args &g) {\n"
    "#pragma unroll\n"
    "  for (int h = 0; h < 4; h++) {\n"
    "    const float *a = (h >> 1 ? f1 : f0) + 2 * (h & 1);\n"
    "    const float v0 = gt_epi_ab(g, 0, 0, 0, a[0], ab), v1 = gt_epi_ab(g, 0, 0, 0, a[1], ab);\n"
    "    pr[h] = GT_DKT == 2 ? (u32)gt_f2h(v0) | ((u32)gt_f2h(v1) << 16) : (u32)gt_f2bf(v0) | ((u32)gt_f2bf(v1) << 16);\n"
    "  }\n"
    "}\n"
    "__device__ __forceinline__ void gt_stmatrix(u32 addr, const u32 *pr) {\n"
    "  asm volatile(\"stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\"\n"
    "               :: \"r\"(addr), \"r\"(pr[0]), \"r\"(pr[1]), \"r\"(pr[2]), \"r\"(pr[3]) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void gt_stm16(unsigned char *s, int ld, int r0, int c0, const float *f0, const float *f1, float ab, const gt_mma_args &g) {\n"
    "  u32 pr[4];\n"
    "  gt_pack16(pr, f0, f1, ab, g);\n"
    "  const int lane = threadIdx.x & 31, mi = lane >> 3;\n"
    "  const int col = c0 + 8 * (mi >> 1) + (lane & 7), row = r0 + 8 * (mi & 1);\n"
    "  gt_stmatrix(gt_saddr(s + (col * ld + row) * 2), pr);\n"
    "}\n"
    /* the same block into a TMA store's staging (GT_TS): a column of the
     * warpgroup's 64 rows is one 128-byte row, its 16-byte chunk q at
     * q ^ (column % 8), the 128-byte swizzle the map of D reads with (the
     * buffer 1024-byte aligned); conflict-free for the eight columns of a
     * matrix */
    "__device__ __forceinline__ void gt_stm16s(u32 s, int r0, int c0, const float *f0, const float *f1, float ab, const gt_mma_args &g) {\n"
    "  u32 pr[4];\n"
    "  gt_pack16(pr, f0, f1, ab, g);\n"
    "  const int lane = threadIdx.x & 31, mi = lane >> 3;\n"
    "  const int col = c0 + 8 * (mi >> 1) + (lane & 7), q = (r0 >> 3) + (mi & 1);\n"
    "  gt_stmatrix(s + col * 128 + ((q ^ (col & 7)) << 4), pr);\n"
    "}\n"
    /* The coalesced epilogue's two halves, shared by the one-CTA-per-tile
     * kernel (the whole tile through the idle ring) and the persistent one
     * (a warpgroup's rows, a chunk of columns at a time, through its own
     * staging). D takes it when its pointer, columns and batches are
     * 16-byte aligned (gt_d_vec). gt_stage: a warp's 16 rows (staging rows
     * r0.., D rows ii0 + the staging row) of staging columns 0..NC-1 (D
     * columns jj0 + the column; fragments f[0..NC/8-1], 4 accumulators each
     * as mma's m16n8 C) through the epilogue into column-major staging at s
     * (columns ld elements apart, zeros past D): gt_stm16 where it applies,
     * else element by element. gt_unstage: those NR rows x NC columns out
     * to D in 16-byte chunks (the rows past the last whole chunk byte by
     * byte), by NT threads of which this is the t-th. */
    "__device__ __forceinline__ bool gt_d_vec(const gt_mma_args &g) {\n"
    "  const int ds = GT_DKT == 0 ? 4 : 2;\n"
    "  return ((u64)g.d & 15) == 0 && (g.ldd * ds) % 16 == 0 && (g.sd * ds) % 16 == 0;\n"
    "}\n"
    "template <int NC>\n"
    "__device__ __forceinline__ void gt_stage(unsigned char *s, int ld, int r0, const float (*f)[4], i64 ii0, i64 jj0,\n"
    "                                         float ab, const gt_mma_args &g, i64 zb) {\n"
    "#if GT_BETA == 0 && GT_BIASKT < 0 && GT_DKT != 0\n" /* gt_stm16 */
    "#pragma unroll\n"
    "  for (int jc = 0; jc < NC / 8; jc += 2) gt_stm16(s, ld, r0, 8 * jc, f[jc], f[jc + 1], ab, g);\n"
    "#else\n"
    "  const int lane = threadIdx.x & 31, gq = lane >> 2, t4 = lane & 3;\n"
    "#pragma unroll\n"
    "  for (int jc = 0; jc < NC / 8; jc++)\n"
    "#pragma unroll\n"
    "    for (int e = 0; e < 4; e++) {\n"
    "      const int r = r0 + gq + 8 * (e >> 1), c = 8 * jc + 2 * t4 + (e & 1);\n"
    "      const i64 ii = ii0 + r, jj = jj0 + c;\n"
    "      gt_put<GT_DKT>(s, (i64)c * ld + r, ii < g.m && jj < g.n ? gt_epi_ab(g, zb, ii, jj, f[jc][e], ab) : 0.f);\n"
    "    }\n"
    "#endif\n"
    "}\n"
    "template <int NR, int NC, int NT>\n"
    "__device__ __forceinline__ void gt_unstage(const unsigned char *s, int ld, int t, i64 ii0, i64 jj0, unsigned char *dz,\n"
    "                                           const gt_mma_args &g) {\n"
    "  const int ds = GT_DKT == 0 ? 4 : 2, ev = 16 / ds, cpc = NR / ev;\n" /* 16-byte chunks per column */
    "  for (int x = t; x < NC * cpc; x += NT) {\n"
    "    const int c = x / cpc, rc = x % cpc;\n"
    "    const i64 ii = ii0 + (i64)rc * ev, jj = jj0 + c;\n"
    "    if (jj >= g.n || ii >= g.m) continue;\n"
    "    const unsigned char *src = s + ((i64)c * ld + (i64)rc * ev) * ds;\n"
    "    unsigned char *dst = dz + (jj * g.ldd + ii) * ds;\n"
    "    if (ii + ev <= g.m) *(uint4 *)dst = *(const uint4 *)src;\n"
    "    else for (int e = 0; ii + e < g.m; e++)\n"
    "      for (int b = 0; b < ds; b++) dst[e * ds + b] = src[e * ds + b];\n"
    "  }\n"
    "}\n"
    /* one k tile (one ring slot at st) of warpgroup wg's rows: four wgmma
     * issued and committed as a group, then the wait for the group before
     * it, so this tile's math overlaps the next tile's wait */
    "__device__ __forceinline__ void gt_wg_ktile(float *d, u32 st, int wg) {\n"
    "  gt_fence_acc(d);\n"
    "  asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");\n"
    "#pragma unroll\n"
    "  for (int kk = 0; kk < 4; kk++)\n"
    "    gt_wg_mma(d, gt_desc(st + wg * 64 * 128 + kk * 32), gt_desc(st + GT_BM * 128 + kk * 32));\n"
    "  asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");\n"
    "  gt_fence_acc(d);\n"
    "  asm volatile(\"wgmma.wait_group.sync.aligned 1;\" ::: \"memory\");\n"
    "  gt_fence_acc(d);\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(GT_LAUNCH, 1) GT_CLUSTER\n"
    "gt_mma(gt_mma_args g, const __grid_constant__ gt_tmap ta, const __grid_constant__ gt_tmap tb GT_TD_PARAM) {\n"
    "  extern __shared__ __align__(128) unsigned char gt_dyn[];\n"
    "  __shared__ __align__(8) u64 gt_bars[2 * GT_ST + 2];\n"
    "  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = tid >> 7, wtid = tid & 127;\n"
    "  const u32 s0 = (gt_saddr(gt_dyn) + 1023u) & ~1023u;\n" /* the swizzle needs 1024-byte slots */
    "  const u32 full0 = gt_saddr(gt_bars), empty0 = full0 + 8 * GT_ST;\n"
    "  if (tid == 0) {\n"
    /* with multicast a slot is free once both CTAs' warpgroups released it
     * (the peer's half of B lands in both) */
    /* pingpong: one warpgroup per tile releases its slots; and each
     * warpgroup's "mainloop done" barrier (mdone0 + 8 wg) */
    "    for (int s = 0; s < GT_ST; s++) { gt_bar_init(full0 + 8 * s, 1); gt_bar_init(empty0 + 8 * s, (GT_PP ? 1 : GT_WGM / 4) * (1 + GT_MC)); }\n"
    "    gt_bar_init(empty0 + 8 * GT_ST, 1); gt_bar_init(empty0 + 8 * GT_ST + 8, 1);\n"
    "    asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n"
    "  }\n"
    "#if GT_MC\n"
    "  GT_CLSYNC();\n" /* the peer's barriers exist before any multicast or remote arrival */
    "#else\n"
    "  __syncthreads();\n"
    "#endif\n"
    "#if GT_PERSIST\n"
    "  const i64 zb = blockIdx.z, npm = (g.m + GT_BM - 1) / GT_BM, npn = (g.n + GT_BN - 1) / GT_BN;\n"
    "  const int nk = (int)((g.k + GT_BK - 1) / GT_BK);\n"
    /* this CTA's tiles (a cluster's: pairs of tile rows), and the ring
     * iterations over all of them */
    "#if GT_MC\n"
    "  u32 crank;\n"
    "  asm(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(crank));\n"
    "  const i64 unit = blockIdx.x / 2, units = gridDim.x / 2, npr = (npm + 1) / 2, per = npr * npn;\n"
    "#else\n"
    "  const i64 unit = blockIdx.x, units = gridDim.x, npr = npm, per = npm * npn;\n"
    "#endif\n"
    "  const int mine = per > unit ? (int)((per - 1 - unit) / units + 1) : 0;\n"
    "  const int total = mine * nk;\n"
    "  auto tile_of = [&](int q, i64 *r0, i64 *c0) {\n"
    "    i64 pm, pn;\n"
    "    gt_mma_tile(unit + (i64)q * units, npr, npn, GT_SWZ, &pm, &pn);\n"
    "#if GT_MC\n"
    "    pm = 2 * pm + crank;\n"
    "#endif\n"
    "    *r0 = pm * GT_BM; *c0 = pn * GT_BN;\n"
    "  };\n"
    /* the producer's cursor: iteration pG is k tile pkt of the CTA's tile
     * pq (at rows pr0, columns pc0), into slot pG % ST. It advances by one
     * per load and finds a tile's place once per tile: the raster's 64-bit
     * divisions per load would stall thread 0's warpgroup (and throttle a
     * producer warp) for hundreds of cycles a k tile */
    "  int pG = 0, pq = 0, pkt = 0;\n"
    "  i64 pr0 = 0, pc0 = 0;\n"
    "  tile_of(0, &pr0, &pc0);\n"
    "  auto issue_next = [&]() {\n"
    "    const int s = pG % GT_ST;\n"
    "    const u32 st = s0 + s * GT_STG, fb = full0 + 8 * s;\n"
    "    gt_bar_expect(fb, GT_STG);\n"
    "    gt_tma(st, &ta, pkt * GT_BK, (int)pr0, (int)zb, fb);\n"
    "#if GT_MC\n"
    "    gt_tma_mc(st + GT_BM * 128 + crank * (GT_BN / 2) * 128, &tb, pkt * GT_BK, (int)pc0 + (int)crank * (GT_BN / 2), (int)zb, fb, 3);\n"
    "#else\n"
    "    gt_tma(st + GT_BM * 128, &tb, pkt * GT_BK, (int)pc0, (int)zb, fb);\n"
    "#endif\n"
    "    pG++;\n"
    "    if (++pkt == nk) { pkt = 0; if (++pq < mine) tile_of(pq, &pr0, &pc0); }\n"
    "  };\n"
    "#if GT_PW\n"
    "  if (warp >= GT_CWARPS) {\n"
    "    GT_REG_PRODUCER();\n"
    "    if (warp == GT_CWARPS && lane == 0)\n"
    "      while (pG < total) {\n"
    "        if (pG >= GT_ST) gt_bar_wait(empty0 + 8 * (pG % GT_ST), ((pG / GT_ST) - 1) & 1);\n"
    "        issue_next();\n"
    "      }\n"
    "#if GT_MC\n"
    "    __syncwarp();\n"
    "    GT_CLSYNC();\n"
    "#endif\n"
    "    return;\n"
    "  }\n"
    "  GT_REG_CONSUMER();\n"
    "#else\n"
    "  if (tid == 0)\n"
    "    while (pG < GT_ST - 1 && pG < total) issue_next();\n"
    "#endif\n"
    "  float acc[1][GT_BN / 8][4];\n"
    "  float *d = &acc[0][0][0];\n"
    "  const int wi = warp & 3, gq = lane >> 2, t4 = lane & 3;\n"
    "  const int ds = GT_DKT == 0 ? 4 : 2, ev = 16 / ds, lds = 64 + ev;\n"
    "  const bool vec = gt_d_vec(g);\n"
    "  unsigned char *se = gt_dyn + (s0 - gt_saddr(gt_dyn)) + GT_ST * GT_STG + wg * GT_EPB;\n"
    "  unsigned char *dz = (unsigned char *)g.d + zb * g.sd * ds;\n"
    /* alpha (x fp8's scales) read once: loads from g.scale_a/_b cannot be
     * hoisted by the compiler past the stores to D */
    "  const float ab = gt_ab(g);\n"
    /* a warpgroup is done with a slot: here, and with multicast at the peer */
    "  auto release = [&](u32 b) {\n"
    "    gt_bar_arrive(b);\n"
    "#if GT_MC\n"
    "    gt_bar_arrive_peer(b, crank ^ 1u);\n"
    "#endif\n"
    "  };\n"
    "#if GT_PP\n"
    /* pingpong: warpgroup wg takes tiles wg, wg + 2, ... and its ring
     * iterations are theirs. It waits on a slot's "full" barrier by
     * parity, which tells only the last two phases apart: so it starts a
     * tile once the other warpgroup has waited through its tile before
     * (that one's "mainloop done"), by when no slot of this tile can be two
     * phases behind. That also orders the two mainloops, so each one's
     * epilogue runs under the other's math */
    "  const u32 mdone0 = empty0 + 8 * GT_ST;\n"
    "  for (int q = wg, myj = 0; q < mine; q += 2, myj++) {\n"
    "    int G = q * nk;\n"
    "    if (q > 0) gt_bar_wait(mdone0 + 8 * (wg ^ 1), (wg ? myj : myj - 1) & 1);\n"
    "#else\n"
    "  int G = 0;\n"
    "  for (int q = 0; q < mine; q++) {\n"
    "#endif\n"
    "    i64 row0, col0;\n"
    "    tile_of(q, &row0, &col0);\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < GT_BN / 2; i++) d[i] = 0.f;\n"
    "    for (int t = 0; t < nk; t++, G++) {\n"
    "      const int s = G % GT_ST;\n"
    "      gt_bar_wait(full0 + 8 * s, (G / GT_ST) & 1);\n"
    "#if GT_PP\n"
    "      if (t == nk - 1 && wtid == 0) gt_bar_arrive(mdone0 + 8 * wg);\n"
    "#endif\n"
    "      const u32 st = s0 + s * GT_STG;\n"
    "      gt_wg_ktile(d, st, GT_PP ? 0 : wg);\n"
    "      if (t >= 1 && wtid == 0) release(empty0 + 8 * ((G - 1) % GT_ST));\n"
    /* thread 0 as the producer (its cursor at G + ST - 1): the slot of
     * G - 1, released by every warpgroup in this iteration or at the end
     * of the previous tile */
    "      if (!GT_PW && tid == 0 && pG < total) {\n"
    "        if (G >= 1) gt_bar_wait(empty0 + 8 * ((G - 1) % GT_ST), ((G - 1) / GT_ST) & 1);\n"
    "        issue_next();\n"
    "      }\n"
    "    }\n"
    "    asm volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");\n"
    "    gt_fence_acc(d);\n"
    /* the tile's last slot, before the stores: the producer refills it now */
    "    if (wtid == 0) release(empty0 + 8 * ((G - 1) % GT_ST));\n"
    "    const i64 rw = row0 + (GT_PP ? 0 : wg) * 64;\n"
    "#if GT_TS\n"
    /* 32 columns at a time into the two buffers in turn (8 chunks a tile:
     * chunk c's buffer is c % 2 on every tile), one barrier a chunk: it
     * orders this chunk's staging (made visible to the TMA by the proxy
     * fence) before its store, which one thread issues, and that thread's
     * wait for the previous chunk's store to have read the other buffer
     * before anyone stages into it again. The map clips rows and columns
     * past D. */
    "    (void)vec;\n"
    "#pragma unroll\n"
    "    for (int cb = 0; cb < GT_BN; cb += 32) {\n"
    "      const u32 sh = gt_saddr(se) + ((cb / 32) & 1) * (GT_EPB / 2);\n"
    "#pragma unroll\n"
    "      for (int jc = 0; jc < 4; jc += 2) gt_stm16s(sh, wi * 16, 8 * jc, acc[0][cb / 8 + jc], acc[0][cb / 8 + jc + 1], ab, g);\n"
    "      asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
    "      if (wtid == 0) asm volatile(\"cp.async.bulk.wait_group.read 0;\" ::: \"memory\");\n"
    "      asm volatile(\"bar.sync %0, 128;\" :: \"r\"(2 + wg) : \"memory\");\n"
    "      if (wtid == 0) gt_tma_store(&td, sh, (int)rw, (int)(col0 + cb), (int)zb);\n"
    "    }\n"
    "#else\n"
    "    if (vec) {\n"
    "#define GT_CW0 (GT_DKT == 0 ? 16 : 32)\n"
    "#define GT_CW (GT_BN < GT_CW0 ? GT_BN : GT_CW0)\n"
    "#pragma unroll\n"
    "      for (int cb = 0; cb < GT_BN; cb += GT_CW) {\n"
    "        gt_stage<GT_CW>(se, lds, wi * 16, acc[0] + cb / 8, rw, col0 + cb, ab, g, zb);\n"
    "        asm volatile(\"bar.sync %0, 128;\" :: \"r\"(2 + wg) : \"memory\");\n"
    "        gt_unstage<64, GT_CW, 128>(se, lds, wtid, rw, col0 + cb, dz, g);\n"
    "        asm volatile(\"bar.sync %0, 128;\" :: \"r\"(2 + wg) : \"memory\");\n"
    "      }\n"
    "    } else {\n"
    "#pragma unroll\n"
    "      for (int j = 0; j < GT_BN / 8; j++)\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < 4; e++) {\n"
    "          const i64 ii = rw + wi * 16 + gq + 8 * (e >> 1), jj = col0 + 8 * j + 2 * t4 + (e & 1);\n"
    "          if (ii < g.m && jj < g.n) gt_store(g, zb, ii, jj, gt_epi_ab(g, zb, ii, jj, acc[0][j][e], ab));\n"
    "        }\n"
    "    }\n"
    "#endif\n" /* GT_TS */
    "  }\n"
    /* the last stores done before the CTA (and its shared memory) ends */
    "#if GT_TS\n"
    "  if (wtid == 0) asm volatile(\"cp.async.bulk.wait_group 0;\" ::: \"memory\");\n"
    "#endif\n"
    /* no CTA leaves while its peer may still arrive at its barriers or
     * multicast into its ring */
    "#if GT_MC\n"
    "  GT_CLSYNC();\n"
    "#endif\n"
    "#else\n"
    GT_MMA_SRC_CTA
    "  (void)wm; (void)wn; (void)A; (void)B; (void)mleft; (void)nleft;\n"
    /* tile t of this split into slot t % ST (thread 0) */
    "  const int ir = (int)row0, ic = (int)col0, iz = (int)zb;\n"
    "  auto issue = [&](int t) {\n"
    "    const int s = t % GT_ST, k0 = (int)(kb + (i64)t * GT_BK);\n"
    "    const u32 st = s0 + s * GT_STG, fb = full0 + 8 * s;\n"
    "    gt_bar_expect(fb, GT_STG);\n"
    "    gt_tma(st, &ta, k0, ir, iz, fb);\n"
    "    gt_tma(st + GT_BM * 128, &tb, k0, ic, iz, fb);\n"
    "  };\n"
    "#if GT_PW\n"
    /* the producer warp: tile t into slot t % ST once the consumers have
     * released the tile ST before it (the slot's (t / ST)-th release) */
    "  if (warp >= GT_CWARPS) {\n"
    "    if (lane == 0)\n"
    "      for (int t = 0; t < nk; t++) {\n"
    "        if (t >= GT_ST) gt_bar_wait(empty0 + 8 * (t % GT_ST), ((t / GT_ST) - 1) & 1);\n"
    "        issue(t);\n"
    "      }\n"
    "    return;\n"
    "  }\n"
    "#else\n"
    "  if (tid == 0)\n"
    "    for (int t = 0; t < GT_ST - 1 && t < nk; t++) issue(t);\n"
    "#endif\n"
    "  float acc[1][GT_BN / 8][4];\n"
    "  float *d = &acc[0][0][0];\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < GT_BN / 2; i++) d[i] = 0.f;\n"
    "  for (int t = 0; t < nk; t++) {\n"
    "    const int s = t % GT_ST;\n"
    "    gt_bar_wait(full0 + 8 * s, (t / GT_ST) & 1);\n"
    "    const u32 st = s0 + s * GT_STG;\n"
    "    gt_wg_ktile(d, st, wg);\n"
    /* this warpgroup is done with tile t - 1: its slot may be refilled */
    "    if (t >= 1 && wtid == 0) gt_bar_arrive(empty0 + 8 * ((t - 1) % GT_ST));\n"
    "    if (!GT_PW && tid == 0 && t + GT_ST - 1 < nk) {\n"
    "      if (t >= 1) gt_bar_wait(empty0 + 8 * ((t - 1) % GT_ST), ((t - 1) / GT_ST) & 1);\n"
    "      issue(t + GT_ST - 1);\n"
    "    }\n"
    "  }\n"
    "  asm volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");\n"
    "  gt_fence_acc(d);\n"
    "  const int wi = warp & 3, gq = lane >> 2, t4 = lane & 3;\n"
    "#if GT_SPLITK == 1\n"
    /* coalesced: through the ring (idle once every warpgroup waited for its
     * last wgmma), columns of bm elements padded by 16 bytes */
    "  {\n"
    "    const int ds = GT_DKT == 0 ? 4 : 2, lds = GT_BM + 16 / ds;\n"
    "    if (gt_d_vec(g)) {\n"
    "      unsigned char *sd = gt_dyn + (s0 - gt_saddr(gt_dyn));\n"
    "      GT_CSYNC();\n"
    "      gt_stage<GT_BN>(sd, lds, wg * 64 + wi * 16, acc[0], row0, col0, gt_ab(g), g, zb);\n"
    "      GT_CSYNC();\n"
    "      gt_unstage<GT_BM, GT_BN, GT_THREADS>(sd, lds, tid, row0, col0, (unsigned char *)g.d + zb * g.sd * ds, g);\n"
    "      return;\n"
    "    }\n"
    "  }\n"
    "#endif\n"
    GT_MMA_SRC_NBATCH
    /* accumulator (j, e) of thread t: row 64 wg + 16 wi + gq (+ 8 for e >= 2),
     * column 8 j + 2 t4 (+ 1 for odd e), as an m16n8 fragment per warp */
    "  {\n"
    "    const int i = 0;\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < GT_BN / 8; j++)\n"
    "#pragma unroll\n"
    "      for (int e = 0; e < 4; e++) {\n"
    "        const i64 ii = row0 + wg * 64 + wi * 16 + gq + 8 * (e >> 1);\n"
    "        const i64 jj = col0 + 8 * j + 2 * t4 + (e & 1);\n"
    GT_MMA_SRC_OUT
    "  }\n"
    "#endif\n" /* GT_PERSIST */
    GT_MMA_SRC_LAST
    GT_GEN_SRC_FIN(gt_mma_fin, gt_mma_args);
