/* gen_gemv.h: the generated-kernel family "gemv" (module prefix gt_gen_):
 * memory-bound skinny GEMMs (n <= 32 tokens) as one kernel template whose
 * tunable parameters are config attributes. Pure host C: config encoding,
 * the family's space with its pruning rules (each pruned config carries its
 * reason), the kernel source and the compile-time definitions of a config,
 * the launch geometry. No CUDA header: the HIP port (worker/hip) and the
 * GPU-less unit tests use it as is. The CUDA side is cuda/ (NVRTC, cache,
 * module load and launch: gt_cu.h) and the worker's cuda backend
 * (worker/cuda/gen_cuda.h); worker/cuda/CONFIG.md documents the encoding.
 *
 * The kernel computes D[m x n] = alpha * op(A) op(B) + beta * C (+ bias,
 * relu/gelu) for transA = T, transB = N (the decode shapes of the logs:
 * A stored k x m with lda >= k, B k x n with ldb >= k, D m x n), bf16 or f16
 * inputs, f32 accumulation, D and C in f32, f16 or bf16:
 *
 *   CTA      rows_per_cta rows of D x n_tile columns; warps = (warps/kwarps)
 *            row groups x kwarps warps splitting the CTA's k range (their
 *            partial sums are added through shared memory);
 *   warp     rows_per_cta/(warps/kwarps) rows (16 or 32); streams those rows
 *            of A (contiguous along k) with vec-element loads (vec 8 = 16
 *            bytes), k_unroll loads per row in flight, B through L1/L2;
 *            CUDA: tensor-core mma.sync m16n8k16 (the k order inside a
 *            chunk is permuted identically for A and B so every lane loads
 *            whole 16-byte vectors straight into its fragments);
 *            HIP: f32 FMAs and a quad shuffle reduction (wave64);
 *   split-K  splitk CTAs along k per tile (grid z), reduced either by
 *            "atomic" (f32 atomicAdd into a workspace, the last CTA of a
 *            tile applies the epilogue and clears it: one kernel) or
 *            "twopass" (partials to workspace slices, a second kernel sums
 *            them in a fixed order: deterministic).
 *   a_load   cache policy of A's loads: "nc" (read-only path), "cs"
 *            (evict-first streaming), "na256" (no L1 allocation, 256-byte
 *            L2 prefetch);
 *   pipe     "reg": each lane issues k_unroll vector loads per row into
 *            registers, then the math (how many stay in flight is up to
 *            ptxas' scheduler); "async" (CUDA): each warp streams its rows
 *            through a ring of k_unroll chunks in shared memory with
 *            cp.async, so k_unroll chunks are always in flight; "dbuf":
 *            as "reg" with two register sets, the loads of the warp's next
 *            block issued before the math of this one, so every warp keeps
 *            a block in flight while it computes (twice the registers; on
 *            the H100 7-9 % faster than "reg" at n = 16, where a warp's
 *            loads, not the SM's warps, limit what is in flight).
 *   lanes    how a warp's lanes cover A: "quad" (the default, left out of
 *            the JSON and text): 4 lanes per row, 16 or 32 rows per warp,
 *            as the mma fragments want them; "warp": all lanes along one
 *            row (a warp load reads 32 x 16 contiguous bytes of a row, not
 *            64 bytes of 8 rows), 1, 2, 4 or 8 rows per warp, f32 FMAs and
 *            a shuffle reduction across the warp at the end, n_tile 1, 2,
 *            4 or 8: for n <= 8, where tensor cores buy nothing.
 *   f8       fp8 inputs on lanes "quad" (CUDA): "mma" (the default, left
 *            out of the JSON and text) multiplies the raw bytes with
 *            mma.sync m16n8k32 e4m3/e5m2 (sm_89+), "cvt" decodes every
 *            element of A and B to f16 first (cvt.rn.f16x2.e4m3x2) for the
 *            16-bit m16n8k16: what the family ran before, kept so the two
 *            can be timed side by side. At n = 16 a warp's B chunk is as
 *            large as its A chunk, so "cvt" converts B as often as A (the
 *            tuned fp8 4096x16x4096 ran 25 % slower than n = 1 on an H200,
 *            for nearly the same bytes). */
#ifndef GEN_GEMV_H
#define GEN_GEMV_H

#include <stddef.h>
#include <stdint.h>

#include "gt_problem.h"

struct cJSON;

/* ---- families ------------------------------------------------------------- */
typedef enum {
    GT_FAM_UNKNOWN = -1,
    GT_FAM_CUBLASLT = 0, /* no "family" key, or "family":"cublaslt" */
    GT_FAM_GEMV = 1,     /* "family":"gemv" */
    GT_FAM_FAULT = 2,    /* "family":"fault": test-only fault injection */
    GT_FAM_MMA = 3,      /* "family":"mma": tensor-core tiled GEMMs (gen_mma.h) */
    GT_FAM_CUTLASS = 4,  /* "family":"cutlass": a prebuilt kernel of libgemmtune_cutlass
                            (cuda/gt_cu_cutlass.h): no source here, nothing to generate */
} gt_gen_family_t;

/* Family of a config object; GT_FAM_UNKNOWN for a family name we do not know
 * or a non-string family value. */
int gt_gen_family(const struct cJSON *cfg);

/* ---- gemv configs ------------------------------------------------------------ */
enum { GT_GEN_RED_NONE = 0, GT_GEN_RED_ATOMIC = 1, GT_GEN_RED_TWOPASS = 2 };
enum { GT_GEN_LD_NC = 0, GT_GEN_LD_CS = 1, GT_GEN_LD_NA256 = 2 };
enum { GT_GEN_PIPE_REG = 0, GT_GEN_PIPE_ASYNC = 1, GT_GEN_PIPE_DBUF = 2 };
enum { GT_GEN_LANES_QUAD = 0, GT_GEN_LANES_WARP = 1 };
enum { GT_GEN_F8_MMA = 0, GT_GEN_F8_CVT = 1 };

typedef struct gt_gen_cfg {
    int rows_per_cta;   /* rows of D per CTA */
    int warps;          /* warps per CTA */
    int kwarps;         /* warps of a CTA that split its k range (divides warps) */
    int vec;            /* elements per load: 8 (16 bytes) or 4 (8 bytes) */
    int k_unroll;       /* vector loads per row in flight per lane */
    int splitk;         /* CTAs along k per tile */
    int reduction;      /* GT_GEN_RED_*: none iff splitk == 1 */
    int n_tile;         /* columns per CTA: 8, 16, 24 or 32 (lanes "warp": 1, 2, 4 or 8) */
    int a_load;         /* GT_GEN_LD_* */
    int pipe;           /* GT_GEN_PIPE_*: how loads are kept in flight */
    int lanes;          /* GT_GEN_LANES_*: how a warp's lanes cover A */
    int f8;             /* GT_GEN_F8_*: how fp8 inputs are multiplied (lanes "quad") */
} gt_gen_cfg;

/* Strict parse of {"family":"gemv", ...}: every attribute required, unknown or
 * repeated keys and out-of-range values refused with a reason. */
int gt_gen_cfg_from_json(const struct cJSON *j, gt_gen_cfg *c, char *err, size_t errlen);
struct cJSON *gt_gen_cfg_to_json(const gt_gen_cfg *c);
/* Canonical text (keys sorted, compact: equal to gt_cfg_canonical of the
 * JSON form). Returns the length like snprintf. */
int gt_gen_cfg_text(const gt_gen_cfg *c, char *buf, size_t len);
const char *gt_gen_red_name(int r);
const char *gt_gen_load_name(int l);
const char *gt_gen_pipe_name(int p);
const char *gt_gen_lanes_name(int l);
const char *gt_gen_f8_name(int f);

/* ---- fault configs (test-only, never enumerated) ----------------------------- */
enum { GT_FAULT_OOB = 1, GT_FAULT_HANG = 2 };
/* {"family":"fault","kind":"oob"|"hang"} -> GT_FAULT_*, or -1 with reason. */
int gt_gen_fault_from_json(const struct cJSON *j, int *kind, char *err, size_t errlen);

/* ---- the device, as the rules see it ------------------------------------------ */
typedef struct gt_gen_dev {
    int hip;                 /* 0: CUDA (mma.sync path), 1: HIP (FMA path) */
    int sm;                  /* CUDA compute capability major*10+minor (0 for HIP) */
    int sms;                 /* SMs / CUs */
    int warp_size;           /* 32, or 64 (AMD wavefront) */
    int max_threads_block;
    int smem_block;          /* static shared memory per block, bytes */
    int regs_sm;             /* 32-bit registers per SM */
    int max_regs_thread;
    int max_warps_sm;
    double dram_bw;          /* bytes/s, for the ranking model only */
    /* what the "mma" family's rules and model also look at */
    int smem_optin;          /* dynamic shared memory one block may opt in to, bytes */
    int smem_sm;             /* shared memory per SM, bytes */
    int64_t l2_bytes;        /* L2 cache size */
    double tc_flops;         /* reachable dense bf16 mma.sync flop/s (model only) */
} gt_gen_dev;

/* H100 SXM-like limits for sm >= 90, A100-like below; used by tests and as a
 * fallback when the device cannot be asked. */
void gt_gen_dev_default(gt_gen_dev *d, int sm, int sms);
/* MI200 (gfx90a) limits. */
void gt_gen_dev_hip(gt_gen_dev *d, int cus);

/* ---- applicability and pruning -------------------------------------------------- */
#define GT_GEN_MAX_N 32            /* the family's largest n */
#define GT_GEN_MAX_WS ((int64_t)256 << 20)
#define GT_GEN_DEFAULT_CAP 48      /* configs kept per problem (model rank) */
#define GT_GEN_REASON 176

/* 0 when the family can run p on d; else -1 and why (a problem-level reason:
 * transposes, types, n, epilogue, device). */
int gt_gen_applicable(const gt_problem *p, const gt_gen_dev *d, char *why, size_t len);
/* 0 when c is kept for p on d, else 1 with the first rule that prunes it
 * (into why, unless why is NULL). Does not look at applicability or the
 * rank cap. */
int gt_gen_check(const gt_problem *p, const gt_gen_dev *d, const gt_gen_cfg *c, char *why,
                 size_t len);
/* The "shape" rules alone, which need neither problem nor device (the
 * export's own check shares them): kwarps divides warps, the rows per warp
 * of the lanes layout, a reduction exactly when splitk > 1. 0, or 1 with the
 * reason (unless why is NULL). */
int gt_gen_check_shape(const gt_gen_cfg *c, char *why, size_t len);
/* The element-size rule (the export's own check shares it): vec x the
 * A/B element size (2 bytes, or 1 for fp8) must be a 16- or 8-byte load.
 * 0, or 1 with the reason (unless why is NULL). */
int gt_gen_check_vec(const gt_problem *p, const gt_gen_cfg *c, char *why, size_t len);
/* The ranking model's estimate of one call, in microseconds (lower first). */
double gt_gen_model_us(const gt_problem *p, const gt_gen_dev *d, const gt_gen_cfg *c);

typedef struct gt_gen_pruned {
    gt_gen_cfg cfg;
    char reason[GT_GEN_REASON];
} gt_gen_pruned;

typedef struct gt_gen_space {
    gt_gen_cfg *keep;        /* kept configs, best model estimate first */
    int nkeep;
    gt_gen_pruned *pruned;   /* every other config of the raw space, with its reason */
    int npruned;
    int raw;                 /* size of the raw space */
    char why[GT_GEN_REASON]; /* non-empty when the family does not apply to p */
} gt_gen_space;

/* The family's space for p on d: the raw cross product of the attribute
 * values, each config kept or pruned with a reason; of those that pass
 * every rule, the best `cap` by the model are kept (cap <= 0: all), the rest
 * pruned with their rank. Returns 0, or -1 out of memory. */
int gt_gen_prune(const gt_problem *p, const gt_gen_dev *d, int cap, gt_gen_space *s);
/* The same kept configs, without the pruned list (pruned NULL, npruned the
 * count): what enumeration needs, several times faster. */
int gt_gen_prune_kept(const gt_problem *p, const gt_gen_dev *d, int cap, gt_gen_space *s);
void gt_gen_space_free(gt_gen_space *s);

/* ---- source and build ------------------------------------------------------------ */
/* The kernel template (CUDA C++ that NVRTC and hipRTC both compile):
 * extern "C" gt_gemv (main), gt_gemv_fin (second pass of "twopass"). */
extern const char gt_gen_gemv_src[];
/* The fault kernels: gt_fault_oob, gt_fault_hang; and gt_chain_producer,
 * the chained-launch check's slow producer of B (test-only too). */
extern const char gt_gen_fault_src[];

#define GT_GEN_MAX_DEFS 24
#define GT_GEN_DEF_LEN 32
/* The -D definitions that instantiate the template for (p, c) on a CUDA
 * (hip = 0, mma path) or HIP (hip = 1, wave64 FMA path) target. Returns the
 * count, or -1 when p's types have no encoding. */
int gt_gen_defines(const gt_problem *p, const gt_gen_cfg *c, int hip,
                   char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN]);

/* Kernel arguments (the template's struct gt_gemv_args, by value; the "mma"
 * template's gt_mma_args has the same layout up to beta): 8-byte members
 * only, so host and device layouts agree. scale_a/scale_b (device f32
 * scalars, cuBLASLt's A/B scale pointers) are members of an fp8 kernel's
 * struct only: a 16-bit kernel's struct ends at beta, and the driver copies
 * no more than the kernel declares, so one host struct serves both. */
typedef struct gt_gen_args {
    const void *a, *b, *c, *bias;
    void *d;
    float *ws;
    unsigned *cnt;
    long long m, n, k, lda, ldb, ldc, ldd, sa, sb, sc, sd, kper;
    double alpha, beta;
    const float *scale_a, *scale_b;
} gt_gen_args;

typedef struct gt_gen_geom {
    unsigned gx, gy, gz, threads;   /* main kernel grid and block */
    unsigned fin_blocks;            /* "twopass" second kernel: blocks of 256 */
    long long kper;                 /* k per split (a multiple of 4*vec) */
    size_t ws_bytes;                /* f32 workspace (0 without split-K) */
    size_t cnt_bytes;               /* "atomic" tile counters */
    size_t smem_bytes;              /* static shared memory of the main kernel */
    int tail;                       /* gemv: some split's k range ends in a partial block of
                                       k_unroll chunks (the kernel's tail loop runs) */
} gt_gen_geom;

void gt_gen_geometry(const gt_problem *p, const gt_gen_cfg *c, int warp_size, gt_gen_geom *g);

#endif
