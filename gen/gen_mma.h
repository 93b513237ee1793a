/* gen_mma.h: the generated-kernel family "mma" (module prefix gt_mma_):
 * a tensor-core tiled GEMM for every n (the prefill and training shapes the
 * skinny "gemv" family leaves out), in the style of the TVMGemmAsync and
 * Triton kernels: mma.sync.m16n8k16 fed by ldmatrix.x4 from an XOR-swizzled
 * shared memory that a cp.async multistage pipeline fills. Pure host C:
 * config encoding, the space and its pruning rules (each pruned config
 * carries its reason), the ranking model, the kernel source and its -D
 * definitions, the launch geometry. gen_gemv.h holds what both families
 * share (family ids, the device as the rules see it, the reduction names,
 * the kernel argument block, the launch geometry struct); cuda/ (gt_cu.h)
 * and worker/cuda/gen_cuda.h the CUDA side; worker/cuda/CONFIG.md documents
 * the encoding and the rules.
 *
 * The kernel computes D[m x n] = alpha * op(A) op(B) + beta * C (+ bias,
 * relu/gelu) in the cuBLAS column-major convention for transA = T,
 * transB = N (A stored k x m with lda >= k, B stored k x n with ldb >= k:
 * both operands contiguous along k, so both are loaded with plain, not
 * transposing, ldmatrix), bf16 or f16 inputs of one type, f32 accumulation,
 * C and D in f32, f16 or bf16, any batch with strides; on sm_90a also OCP
 * fp8 inputs (e4m3/e5m2, not both e5m2) through the wgmma template, whose
 * K-major operands are what wgmma's fp8 forms require, with cuBLASLt's
 * per-tensor A/B scales applied to the product in the epilogue:
 *
 *   CTA      bm x bn tile of D; warps_m x warps_n warps, each a
 *            (bm/warps_m) x (bn/warps_n) warp tile of m16n8 accumulators;
 *   k loop   k tiles of bk, `stages` of them in flight: a ring of
 *            dynamic shared memory that cp.async.cg (16 bytes, zero-filled
 *            past m, n and k) fills stages-1 tiles ahead of the math;
 *   split-K  splitk CTAs along k per tile, reduced by "atomic" (f32
 *            atomics into a zeroed workspace, the tile's last CTA applies
 *            the epilogue and re-zeroes it) or "twopass" (per-split slices
 *            summed in a fixed order by a second kernel), as in "gemv";
 *   swizzle  CTA raster: 1 = m fastest; g > 1 = Triton's grouped order
 *            (groups of g tile rows, n fastest within a group), so a wave
 *            of CTAs shares g row panels of A and a few column panels of B
 *            in L2 instead of streaming all of A once per column of tiles. */
#ifndef GEN_MMA_H
#define GEN_MMA_H

#include <stddef.h>
#include <stdint.h>

#include "gen_gemv.h"

struct cJSON;

/* inst: the tensor-core instruction and the template it selects */
enum { GT_MMA_INST_SYNC = 0, GT_MMA_INST_WGMMA = 1 };

typedef struct gt_mma_cfg {
    int bm, bn, bk;       /* CTA tile: rows of D, columns of D, k per stage (mma.sync 32
                             or 64; wgmma one 128-byte row: 64 16-bit or 128 fp8 values) */
    int warps_m, warps_n; /* warp grid of the CTA */
    int stages;           /* pipeline depth: cp.async 2..5; wgmma (TMA ring) 3..8 */
    int splitk;           /* CTAs along k per tile */
    int reduction;        /* GT_GEN_RED_*: none iff splitk == 1 */
    int swizzle;          /* raster group of tile rows: 1 (none), 4, 8, 16 */
    int inst;             /* GT_MMA_INST_*: "sync" (mma.sync, the JSON default) or "wgmma" */
    int ctas;             /* wgmma, splitk 1: a persistent grid of this many CTAs per batch, each
                             looping over tiles (the TMA ring runs on into the next tile while
                             the epilogue stores this one); 0 (the JSON default): a CTA per tile */
    int cluster;          /* persistent only: 2, clusters of two CTAs on vertically adjacent tiles,
                             each loading its A and half of their shared B tile into both (TMA
                             multicast: a third less L2 traffic at bm 128, bn 256); 0 (the JSON
                             default, also "cluster":1): none */
    int pingpong;         /* persistent, bm 64 (warps_m 4) only: 1, two consumer warpgroups
                             that take the CTA's tiles in turn (each its own 64 x bn tile), so
                             one's epilogue runs under the other's math; loads from a producer
                             warpgroup; 0 (the JSON default): the warpgroups share each tile */
} gt_mma_cfg;

/* Strict parse of {"family":"mma", ...}: every attribute required; unknown
 * or repeated keys and out-of-range values refused with a reason. */
int gt_mma_cfg_from_json(const struct cJSON *j, gt_mma_cfg *c, char *err, size_t errlen);
struct cJSON *gt_mma_cfg_to_json(const gt_mma_cfg *c);
/* Canonical text (equal to gt_cfg_canonical of the JSON form); like snprintf. */
int gt_mma_cfg_text(const gt_mma_cfg *c, char *buf, size_t len);

/* ---- applicability and pruning ------------------------------------------------ */
#define GT_MMA_DEFAULT_CAP 32   /* configs kept per problem (GT_CUDA_MMA_MAX) */
#define GT_MMA_MAX_WS GT_GEN_MAX_WS
#define GT_MMA_MAX_CTAS 4096 /* a persistent grid's CTAs (config ctas) */
/* A persistent wgmma kernel's epilogue staging per warpgroup, past the ring
 * (which keeps loading the next tile): 32 columns of 64 16-bit values or 16
 * of 64 f32 ones, each column padded by 16 bytes: (64 + 8) x 2 x 32 bytes;
 * where D leaves by TMA stores (gt_mma_wg_tma_store) two unpadded buffers
 * of 32 columns instead, GT_MMA_WG_TS_BYTES, filled in turn.
 * gt_mma_wg_epi_bytes: a warpgroup's, by the config (bn 256: the larger,
 * whatever the problem, so a config's shared memory is the config's). */
#define GT_MMA_WG_EPI_BYTES 4608
#define GT_MMA_WG_TS_BYTES (2 * 64 * 2 * 32)

/* 0 when the family can run p on d, else -1 and the problem-level reason. */
int gt_mma_applicable(const gt_problem *p, const gt_gen_dev *d, char *why, size_t len);
/* 0 when c is kept for p on d, else 1 with the first rule that prunes it
 * (into why, unless why is NULL; applicability and the rank cap are not
 * looked at). */
int gt_mma_check(const gt_problem *p, const gt_gen_dev *d, const gt_mma_cfg *c, char *why,
                 size_t len);
/* The rules the tensor maps of inst wgmma put on p (32-bit coordinates,
 * batch strides spanning whole matrices): 0, or 1 with the reason (into
 * why, unless NULL). gt_mma_check applies them; the export too. */
int gt_mma_tma_check(const gt_problem *p, char *why, size_t len);
/* The rules the element size puts on c (fp8 inputs only on inst wgmma; a
 * wgmma k tile is one 128-byte row: bk 64 of 16-bit values, 128 of fp8):
 * 0, or 1 with the reason (into why, unless NULL). gt_mma_check applies
 * them; the export too. */
int gt_mma_elem_check(const gt_problem *p, const gt_mma_cfg *c, char *why, size_t len);
/* The model's estimate of one call in microseconds (ranking only). */
double gt_mma_model_us(const gt_problem *p, const gt_gen_dev *d, const gt_mma_cfg *c);
/* Estimated registers per thread (the resource rule's number): CUDA; and
 * for CUDA (hip = 0) or HIP (hip = 1: VGPRs + AGPRs, which gfx90a/gfx942
 * allocate from one file of 512 per lane). */
int gt_mma_regs(const gt_mma_cfg *c);
int gt_mma_regs_for(const gt_mma_cfg *c, int hip);

typedef struct gt_mma_pruned {
    gt_mma_cfg cfg;
    char reason[GT_GEN_REASON];
} gt_mma_pruned;

typedef struct gt_mma_space {
    gt_mma_cfg *keep;        /* kept, best first */
    int nkeep;
    gt_mma_pruned *pruned;   /* the rest of the raw space, each with its reason */
    int npruned;
    int raw;
    char why[GT_GEN_REASON]; /* non-empty when the family does not apply */
} gt_mma_space;

/* The raw cross product of the attribute values for p on d, each config
 * kept or pruned with a reason; of those passing every rule the best `cap`
 * (<= 0: all) by the model are kept, in an order that interleaves the
 * promising tile shapes. 0, or -1 out of memory. */
int gt_mma_prune(const gt_problem *p, const gt_gen_dev *d, int cap, gt_mma_space *s);
/* The same kept configs, without the pruned list (pruned NULL, npruned the count). */
int gt_mma_prune_kept(const gt_problem *p, const gt_gen_dev *d, int cap, gt_mma_space *s);
void gt_mma_space_free(gt_mma_space *s);

/* ---- source and build ------------------------------------------------------------ */
/* The kernel templates: extern "C" gt_mma (main), gt_mma_fin ("twopass"
 * second pass). Their argument block is gt_gen_args (gen_gemv.h), by value.
 * gt_gen_mma_src is the CUDA one (NVRTC); gt_gen_mma_hip_src the HIP port
 * (hipRTC, gfx90a/gfx942: wave64, MFMA 16x16x16, global loads staged in a
 * ring of registers, LDS double-buffered; gen/mma_src.c describes it). */
extern const char gt_gen_mma_src[];
extern const char gt_gen_mma_hip_src[];
/* The Hopper template (inst "wgmma", sm_90a only; gen/mma_wg_src.c): the same
 * kernels and argument struct, the main kernel taking two tensor maps after
 * it, three with TMA stores of D (gt_mma_tmaps describes them). */
extern const char gt_gen_mma_wg_src[];
/* How c's kernel (inst wgmma) issues its TMA loads: 1, a producer warp
 * past the consumer warpgroups (bn <= 128); 2, a producer warpgroup that
 * gives its registers to the consumers (pingpong); 0, thread 0 of the
 * consumers. With a producer no consumer waits for a free slot.
 * gt_mma_wg_producer_threads: the threads it adds to the launch (32, 128
 * or 0). */
int gt_mma_wg_pw(const gt_mma_cfg *c);
int gt_mma_wg_producer_threads(const gt_mma_cfg *c);
/* The warps that compute: warps_m x warps_n, twice that with pingpong (two
 * warpgroups, each its own tile). */
int gt_mma_consumer_warps(const gt_mma_cfg *c);
int gt_mma_wg_epi_bytes(const gt_mma_cfg *c);
/* 1 when (p, c)'s kernel writes D with TMA stores (a third tensor map, of
 * D): a persistent wgmma config of bn 256 whose D is 16-bit without bias or
 * C (the epilogue's stmatrix path), its leading dimension and batch stride
 * multiples of 16 bytes. A warpgroup stages 32 columns of its 64 rows in
 * the TMA's 128-byte swizzle and one thread stores them (the tensor map
 * clips rows and columns past D), so the warpgroup goes on to its next
 * tile while the TMA writes; 16 store operations a 128 x 256 tile, where
 * a bulk copy per column (512) cost 15 % (h200_47_epilogue_bulk.txt). */
int gt_mma_wg_tma_store(const gt_problem *p, const gt_mma_cfg *c);
/* The template of c (by inst). */
const char *gt_mma_src_of(const gt_mma_cfg *c);

/* The tensor maps the wgmma kernel takes after its argument struct, as the
 * arguments of the driver's cuTensorMapEncodeTiled: rank 3, elements of 2
 * bytes (bf16, or f16) or 1 (fp8, mapped as UINT8: the TMA only moves
 * bytes), dims {k, rows, batch} (rows: m for A, n for B), byte strides of
 * dims 1 and 2, box {one 128-byte row of k (64 or 128 elements), bm or bn,
 * 1}, element strides 1, no interleave, 128-byte swizzle, L2 promotion 256
 * bytes, out-of-bounds elements read as zeros. The global address is the
 * operand's pointer (16-byte aligned). With TMA stores
 * (gt_mma_wg_tma_store) a third, of D: dims {m, n, batch}, strides of
 * ldd and the batch stride, box {64, 32, 1} (a warpgroup's rows, 32
 * columns), the same encoding otherwise. */
#define GT_MMA_MAX_TMAPS 3
enum { GT_MMA_TMAP_BF16 = 0, GT_MMA_TMAP_F16 = 1, GT_MMA_TMAP_U8 = 2 };
typedef struct gt_mma_tmap {
    const char *operand;           /* "a", "b" or "d": the argument it maps (static) */
    int dtype;                     /* GT_MMA_TMAP_*: the map's element type */
    unsigned long long dims[3];
    unsigned long long strides[2]; /* bytes: leading dimension, batch stride (x the element size) */
    unsigned box[3];
} gt_mma_tmap;
/* cuTensorMapEncodeTiled's name for a map's element type (t->dtype). */
const char *gt_mma_tmap_type_name(const gt_mma_tmap *t);
/* The maps of (p, c): 2 for inst wgmma (A then B), 3 with TMA stores (then
 * D), else 0. */
int gt_mma_tmaps(const gt_problem *p, const gt_mma_cfg *c, gt_mma_tmap t[GT_MMA_MAX_TMAPS]);
/* The global address map t encodes for a call: a, b or d by t->operand, so
 * the callers that encode (the worker, libgemmtune) need not know the order. */
const void *gt_mma_tmap_base(const gt_mma_tmap *t, const void *a, const void *b, const void *d);

/* The -D definitions of (p, c) (at most GT_GEN_MAX_DEFS) for CUDA (hip = 0)
 * or HIP (hip = 1: the CUDA list + GT_HIP=1, GT_WS=64); the count, or -1
 * when p's types have no encoding. gt_mma_defines is hip = 0. */
int gt_mma_defines_for(const gt_problem *p, const gt_mma_cfg *c, int hip,
                       char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN]);
int gt_mma_defines(const gt_problem *p, const gt_mma_cfg *c,
                   char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN]);

/* Launch geometry: gx = tiles of D (1-D, rastered by the kernel; a
 * persistent config's: at most ctas, each CTA looping over tiles), gz =
 * batch x splitk; threads = gt_mma_consumer_warps x the warp size (32, HIP
 * 64) + the wgmma producer's (gt_mma_wg_producer_threads); smem_bytes is
 * DYNAMIC shared memory (CUDA: stages x (bm + bn) x bk x the element size, wgmma
 * + 1024; HIP: 2 x (bm + bn) x bk x 2), fin_blocks the "twopass" second kernel's
 * blocks of 256. gt_mma_geometry is hip = 0. */
void gt_mma_geometry_for(const gt_problem *p, const gt_mma_cfg *c, int hip, gt_gen_geom *g);
void gt_mma_geometry(const gt_problem *p, const gt_mma_cfg *c, gt_gen_geom *g);

/* The kernel's index math, as one text that the kernel source embeds and
 * a host test compiles as C (define GT_MMA_HD first, e.g. `static inline`):
 *   gt_mma_tile      CTA id -> (tile row, tile column) under the raster;
 *   gt_mma_soff      shared-memory element offset of 16-byte chunk c of
 *                    row r in a tile whose rows hold kc chunks (XOR swizzle:
 *                    the 8 rows one ldmatrix phase reads hit 8 distinct
 *                    16-byte bank groups);
 *   gt_mma_lda_lane  the row and chunk lane l points ldmatrix.x4 at for a
 *                    16 x 16 A fragment (a0..a3 of mma.m16n8k16);
 *   gt_mma_ldb_lane  the same for two n8 x k16 B fragments (b0 b1 of n-tile
 *                    0, b0 b1 of n-tile 1). */
#define GT_MMA_INDEX_FNS                                                                           \
    GT_MMA_HD void gt_mma_tile(long long pid, long long npm, long long npn, int swz,               \
                               long long *pm, long long *pn)                                       \
    {                                                                                              \
        if (swz <= 1) {                                                                            \
            *pm = pid % npm;                                                                       \
            *pn = pid / npm;                                                                       \
            return;                                                                                \
        }                                                                                          \
        long long per = (long long)swz * npn, grp = pid / per, first = grp * swz;                  \
        long long gs = npm - first < swz ? npm - first : swz, r = pid - grp * per;                 \
        *pm = first + r % gs;                                                                      \
        *pn = r / gs;                                                                              \
    }                                                                                              \
    GT_MMA_HD int gt_mma_soff(int r, int c, int kc)                                                \
    {                                                                                              \
        int x = kc >= 8 ? (r & 7) : kc == 4 ? ((r >> 1) & 3) : ((r >> 2) & 1);                    \
        return r * kc * 8 + ((c ^ x) << 3);                                                        \
    }                                                                                              \
    GT_MMA_HD void gt_mma_lda_lane(int l, int *r, int *c)                                          \
    {                                                                                              \
        *r = l & 15;                                                                               \
        *c = l >> 4;                                                                               \
    }                                                                                              \
    GT_MMA_HD void gt_mma_ldb_lane(int l, int *r, int *c)                                          \
    {                                                                                              \
        *r = (l & 7) + ((l >> 4) << 3);                                                            \
        *c = (l >> 3) & 1;                                                                         \
    }

#endif
