/* gt_cuda.h: internals of the worker's cuda backend (enumerate, prepare,
 * time, validate), shared by its files and by the host unit test and the
 * self-test (module prefix gt_cuda_). What libgemmtune needs as well (the
 * cuBLASLt mapping and configs, the driver, NVRTC, module load and launch)
 * is cuda/'s (gt_cu.h).
 *
 *   cuda_space.c   the enumeration of cuBLASLt's space for a problem
 *   cuda_kernels.c NVRTC helper kernels (random fill and its host mirror,
 *                  reference GEMM, output comparison and scan)
 *   cuda_check.c   the reference (full or sampled columns), its host
 *                  spot-check, validate, and the host emulation of the
 *                  GPU comparison
 *   cuda_bench.c   prepare (buffers, inputs, heuristic list) / time
 *   bk_cuda.c      open / close / build / release / state and the vtable
 *   cuda_nvml.c    the device's clocks, power, temperature, throttle
 *                  reasons through NVML, opened with dlopen (cuda_nvml.h)
 *   gen_run.c      generated-kernel candidates ("gemv", "mma", test-only
 *                  "fault"; gen_cuda.h): gen/gen_gemv.h and gen/gen_mma.h
 *                  are their pure-host half
 *
 * Everything that needs a GPU lives behind gt_bk_ctx; the rest is plain host
 * code that the GPU-less CI exercises. */
#ifndef GT_CUDA_H
#define GT_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cublasLt.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include "gt_backend.h"
#include "gt_cu.h"
#include "gt_problem.h"

struct cJSON;

/* The fill kernel's values (cuda_kernels.c): the exactly representable
 * value it writes for the random integer q of element type kt (gt_cu_kt; q
 * in [-gt_cuda_fill_qmax(kt), +qmax]). */
double gt_cuda_fill_value(int kt, int64_t q);
int64_t gt_cuda_fill_qmax(int kt);
/* Encodes the value of q for type kt into out (host mirror of the kernel's
 * encoder, used by the unit test to prove both agree with gt_cu_decode). */
void gt_cuda_fill_encode(int kt, int64_t q, void *out);

/* ---------------------------------------------------------------------------
 * Helper kernels (cuda_kernels.c). */
/* Compiles the helper kernels for sm with NVRTC (no GPU needed): a cubin
 * when NVRTC knows sm, else PTX for the newest arch it knows below it.
 * *image is malloc'd. */
int gt_cuda_kernels_compile(int sm, char **image, size_t *len, int *is_cubin, char *err,
                            size_t errlen);
/* The kernel source, for tests and offline checks. */
extern const char gt_cuda_kernels_src[];

typedef struct gt_cuda_kernels gt_cuda_kernels;
int gt_cuda_kernels_load(int sm, gt_cuda_kernels **k, char *err, size_t errlen);
void gt_cuda_kernels_unload(gt_cuda_kernels *k);
/* Fills n elements of type kt with seeded, exactly representable values. */
int gt_cuda_fill(gt_cuda_kernels *k, cudaStream_t s, void *p, int64_t n, int kt, uint64_t seed,
                 char *err, size_t errlen);

/* Kernel argument blocks are passed by value: 8-byte members only, so the
 * host and device layouts agree without padding rules. */
typedef struct gt_cuda_ref_args {
    const void *a, *b, *c, *bias;
    double *r;                        /* m x ns per batch, dense: r[(b*ns + c)*m + i] */
    const long long *cols;            /* ns sampled columns of each batch entry; NULL: all */
    long long m, n, k, lda, ldb, ldc, sa, sb, sc;
    long long ns;                     /* columns computed per batch entry */
    long long ta, tb, tc, tbias;      /* gt_cu_kt codes */
    long long transa, transb, act, has_c, has_bias;
    long long y0, z0;                 /* grid offsets (set by gt_cuda_ref) */
    double alpha, beta;
} gt_cuda_ref_args;
/* Reference GEMM in double on the GPU for batch entries [0, batch), only at
 * the columns listed in a->cols (all when NULL). */
int gt_cuda_ref(gt_cuda_kernels *k, cudaStream_t s, const gt_cuda_ref_args *a, long long batch,
                char *err, size_t errlen);

/* Blocks of the comparison and scan kernels; the partial sums have these
 * many slots each, reduced in a fixed order (the result is deterministic). */
#define GT_CUDA_PARTS 1024

typedef struct gt_cuda_check_args {
    const void *d;                    /* D, type dkt, leading dim ldd, batch stride sd */
    const double *r;                  /* the reference, laid out as gt_cuda_ref_args.r */
    const long long *cols;            /* as gt_cuda_ref_args.cols */
    double *part;                     /* 2 * GT_CUDA_PARTS: per block sum diff^2, sum ref^2 */
    unsigned long long *bad;          /* GT_CUDA_PARTS: per block non-finite/unwritten count */
    double *out;                      /* 4: sum diff^2, sum ref^2, bad count (as u64 bits), 0 */
    long long m, n, ns, batch, ldd, sd, dkt;
} gt_cuda_check_args;
/* Enqueues the comparison of D against the reference on the sampled
 * columns, the scan of ALL of D for non-finite / unwritten elements and the
 * final fixed-order reduction into a->out (no synchronization). */
int gt_cuda_check_launch(gt_cuda_kernels *k, cudaStream_t s, const gt_cuda_check_args *a,
                         char *err, size_t errlen);

/* ---------------------------------------------------------------------------
 * Validation semantics (cuda_check.c; the host parts need no GPU).
 *
 * The reference is exact double arithmetic on the exact inputs. It covers
 * every column of D when the problem is small (m*n*k*batch <= 2^32 MACs and
 * a dense m x n x batch double array within GT_CUDA_REF_BYTES); otherwise a
 * fixed set of columns of every batch entry, always the first and the last,
 * the others one per equal stratum of the rest, drawn from the prepare seed:
 * all m rows of those columns, so every row of A meets a spread of B's
 * columns. The relative error is sqrt(sum (out-ref)^2 / sum ref^2) over the
 * reference's elements (absolute when the reference is all zero); it is NaN
 * when ANY logical element of D (sampled or not) is non-finite or still
 * holds the poison written before the run, so a NaN never passes. */
#define GT_CUDA_FULL_REF_MACS 4294967296.0   /* 2^32 */
#define GT_CUDA_SAMPLE_MACS 68719476736.0    /* 2^36: sampled reference budget */
#define GT_CUDA_REF_BYTES ((int64_t)512 << 20)
#define GT_CUDA_MIN_COLS 64
#define GT_CUDA_MAX_COLS 256

/* Columns per batch entry the reference computes (n: all of them). */
int64_t gt_cuda_ref_columns(int64_t m, int64_t n, int64_t k, int64_t batch);
/* The ns (< n) sampled columns, ascending, first 0 and last n-1. */
void gt_cuda_sample_columns(uint64_t seed, int64_t n, int64_t ns, int64_t *cols);
/* 1 when element i of a D buffer of type kt is non-finite or the poison
 * (host mirror of the scan kernel's test on the raw bits). */
int gt_cuda_is_bad(int kt, const void *buf, size_t i);
/* The relative error from the reduced sums (shared by host and GPU paths). */
double gt_cuda_rel_from(double sum_diff2, double sum_ref2, uint64_t bad);
/* Host emulation of the GPU comparison: D (type dkt, ldd, batch stride sd)
 * against a reference laid out as gt_cuda_ref_args.r for the columns cols
 * (NULL: all n). */
double gt_cuda_rel_err(int dkt, const void *out, int64_t m, int64_t n, int64_t ldd, int64_t batch,
                       int64_t sd, const int64_t *cols, int64_t ns, const double *ref);

/* ---------------------------------------------------------------------------
 * Device context (bk_cuda.c) and the parts other files use. */
typedef struct gt_cuda_enum_stats {
    int heuristic;            /* results the heuristic returned */
    int algo_ids;             /* algorithm ids cublasLtMatmulAlgoGetIds listed */
    long long checks;         /* cublasLtMatmulAlgoCheck calls */
    long long pairs;          /* algo id x tile x stages pairs listed */
    long long live_pairs;     /* keep-limited: the pairs that exist for the problem */
    int sampled;              /* 1: a sample of the pairs was checked (enum_configs) */
    long long preferred;      /* a sample's configs drawn from the pairs of the heuristic's
                                 algo ids (three quarters of the room where they can fill it) */
    int no_splitk;            /* 1: keep-limited and the output tiles fill the GPU: no split-K */
    int small_tiles;          /* pairs left out then: more than MAX_WAVES_RATIO x the heuristic pick's waves */
    long long found;          /* distinct accepted configs, before the cap (sampled: in the sample) */
    int returned;             /* configs in the returned list */
    int capped;               /* 1 when the cap dropped configs */
    int truncated;            /* 1 when the check/time budget stopped early */
    int recreate_mismatch;    /* heuristic algos not reproduced bit-exactly from attributes */
    int cluster_blind;        /* tile/stages pairs that accepted every cluster shape (kept once) */
    int gen;                  /* generated-family ("gemv", "mma") configs in the returned list */
    int gen_pruned;           /* configs of the families' raw spaces pruned (rules and caps) */
    double seconds;
} gt_cuda_enum_stats;

typedef struct gt_cuda_gen_ctx gt_cuda_gen_ctx;   /* gen_run.c */
typedef struct gt_cuda_gen_cand gt_cuda_gen_cand; /* gen_run.c */

struct gt_bk_ctx {
    int dev;
    int sm;                   /* major*10 + minor */
    int sms;
    int cluster_launch;
    int64_t l2_bytes;
    cublasLtHandle_t lt;
    cudaStream_t stream;
    void *ws;
    size_t ws_size;
    cudaEvent_t *ev;
    int nev;
    gt_cuda_kernels *kern;    /* loaded at the first prepare */
    int max_cands;            /* enumeration cap */
    double enum_seconds;      /* enumeration time budget */
    long long max_checks;     /* enumeration check budget */
    gt_cuda_enum_stats last_enum;
    char dead[320];           /* sticky error: the context is unusable */
    int exit_on_sticky;       /* end the process at a sticky error (GT_CUDA_EXIT_ON_STICKY) */
    gt_cuda_gen_ctx *gen;     /* generated kernels: modules, device limits (lazy) */
    struct gt_cuda_cutlass_ctx *cutlass; /* libgemmtune_cutlass, opened at the first use
                                            (cutlass_run.c) */
    struct gt_cuda_nvml *nvml; /* the device's state through NVML (cuda_nvml.h); opened at
                                  the first state read, NULL when it cannot be */
    int nvml_tried;
    char nvml_why[200];       /* why there is no NVML */
    int warming;              /* cuda_warm's prepare: no generated-kernel compiles */
};

/* Exit status of a process ended by a sticky CUDA error (the bench child:
 * its supervisor records "crashed: ... exited with status 70" for the
 * candidate in flight and restarts it with a fresh context). */
#define GT_CUDA_STICKY_EXIT 70
/* Whether a sticky error ends the process (default: yes, GT_CUDA_EXIT_ON_STICKY=0
 * turns it off; the self-test turns it off to report instead). */
void gt_cuda_set_exit_on_sticky(gt_bk_ctx *ctx, int on);

/* Checks a CUDA result; on error writes "cuda: what: name (text)" and marks
 * the context dead when the error is sticky. Returns 0 / -1. */
int gt_cuda_ck(gt_bk_ctx *ctx, cudaError_t e, const char *what, char *err, size_t errlen);
/* Checks a cuBLASLt result, also looking for a CUDA error behind it. */
int gt_cuda_ckb(gt_bk_ctx *ctx, cublasStatus_t s, const char *what, char *err, size_t errlen);
/* -1 with the sticky reason when the context is dead; else makes the
 * context's device current for the calling thread. */
int gt_cuda_alive(gt_bk_ctx *ctx, char *err, size_t errlen);
/* Makes sure ctx->ev holds at least n events. */
int gt_cuda_events(gt_bk_ctx *ctx, int n, char *err, size_t errlen);

/* Enumeration (cuda_space.c). */
int gt_cuda_enumerate(gt_bk_ctx *ctx, const gt_problem *p, int keep, struct cJSON **cands,
                      struct cJSON **baseline, char *err, size_t errlen);
/* The baseline config of a problem cuBLASLt's heuristic refuses (issue 18):
 * {"family":"cublaslt","heuristic":"none","reason":why}. The problem's
 * other candidates (cuBLASLt configs AlgoCheck accepts, the generated
 * families) are still enumerated; this default fails to build, naming why,
 * and the coordinator pairs the finalists with a substitute
 * (server/store_substitute.c). NULL when out of memory. */
struct cJSON *gt_cuda_no_default_json(const char *why);
/* 1 with "cuda: ..." in err when cfg is that placeholder, else 0. */
int gt_cuda_no_default(const struct cJSON *cfg, char *err, size_t errlen);
/* Stats of the last enumerate on ctx. */
void gt_cuda_enum_stats_get(const gt_bk_ctx *ctx, gt_cuda_enum_stats *st);
/* Overrides the enumeration limits (<= 0 keeps the current value). */
void gt_cuda_set_limits(gt_bk_ctx *ctx, int max_cands, double seconds);

/* Prepared problem and candidate (cuda_bench.c / bk_cuda.c). */
typedef struct gt_cuda_set {
    void *a, *b, *c, *d;
} gt_cuda_set;

/* The fp8 scalars (A, B, D scale, D amax) each sit in their own 256-byte
 * slot: cuBLASLt reads them from device memory, and nothing documents that
 * 4-byte alignment suffices, while 256 is what every cudaMalloc'd scale
 * tensor (PyTorch, NVIDIA's samples) has. */
#define GT_CUDA_SCALE_SLOT 64
/* The A and B scales an fp8 problem is validated and timed with (written by
 * gt_cuda_reference over prepare's 1.0, which would let a kernel that
 * ignores a scale pass): dyadic, so their product (15/32) is exact in f32,
 * below 1 so an fp8 D stays in range, and leaving out either one, or using
 * one twice, moves D by 33 % or more, far beyond the fp8 tolerance. */
#define GT_CUDA_VAL_SCALE_A 0.75f
#define GT_CUDA_VAL_SCALE_B 0.625f

/* A heuristic result of the prepared descriptors: build runs these exact
 * algo bytes for a config equal to one of them (the baseline is then what
 * an untuned cublasLtMatmul caller runs, bit for bit). */
typedef struct gt_cuda_heur {
    gt_cu_lt_cfg cfg;
    cublasLtMatmulAlgo_t algo;
    size_t ws;
} gt_cuda_heur;

#define GT_CUDA_HEUR_MAX 32

struct gt_bk_prob {
    gt_bk_ctx *ctx;
    gt_problem p;
    gt_cu_map map;
    gt_cu_desc desc;
    int64_t a_n, b_n, c_n, d_n;      /* elements spanned */
    size_t a_sz, b_sz, c_sz, d_sz;   /* bytes spanned */
    size_t set_bytes;                /* one input set, aligned */
    void *base;                      /* set 0 (validation) + bias + scales */
    gt_cuda_set val;
    void *bias;
    float *scales;                   /* a, b, d scale, amax: GT_CUDA_SCALE_SLOT floats apart */
    void *rot;                       /* rotating sets 1..nrot */
    gt_cuda_set *sets;               /* nsets entries: set 0 = val */
    int nsets;
    int next;                        /* next set to use (rotation continues across candidates) */
    int c_inplace;                   /* C is D (beta == 0 and same layout), as PyTorch calls it */
    int rotate_c;                    /* C is read (beta != 0): each set has its own */
    int64_t rot_want;                /* rotating bytes the sets were sized for */
    unsigned sets_gen;               /* bumped whenever the rotating sets are freed: a
                                        candidate's cached graph names the old ones */
    /* validation (cuda_check.c) */
    int64_t ns;                      /* reference columns per batch entry (n: all) */
    int64_t *cols;                   /* host copy of the sampled columns; NULL when ns == n */
    void *vbuf;                      /* device: reference, columns, partial sums, result */
    double *ref;                     /* device reference, ns * m per batch entry */
    long long *dcols;                /* device columns; NULL when ns == n */
    double *part;                    /* 2 * GT_CUDA_PARTS */
    unsigned long long *bad;         /* GT_CUDA_PARTS */
    double *dout;                    /* 4 */
    double *hout;                    /* pinned host copy of dout */
    double ref_ms;                   /* wall time of the reference kernel */
    int val_n;                       /* validations run on this problem */
    double val_wall_ms, val_kernel_ms; /* their wall time, and the candidates' kernels' within it */
    double ref_alpha;                /* the reference's product multiplier: alpha, x scale_a x
                                        scale_b for fp8 (gt_cuda_reference sets both) */
    gt_cuda_heur heur[GT_CUDA_HEUR_MAX];
    int nheur;
    uint64_t seed;
    struct gt_cuda_gen_prob *gen;    /* generated kernels: split-K workspace */
};

struct gt_bk_cand {
    gt_bk_prob *pp;
    gt_cu_lt_cfg cfg;
    cublasLtMatmulAlgo_t algo;
    size_t ws_need;
    gt_cuda_gen_cand *gen;           /* non-NULL: a generated kernel, not cuBLASLt */
    double check_us;                 /* its validation run's kernel time (events), 0: none */
    /* launch=graph: its captured calls, instantiated once and replayed by
     * every later timing (a final times each entry in every round) while
     * the sets are the ones captured (gexec_gen == pp->sets_gen) */
    cudaGraphExec_t gexec;
    int gexec_calls;
    unsigned gexec_gen;
};

/* Re-creates an algo from a config and checks it for the prepared problem's
 * descriptors; -1 with the cuBLASLt status name when rejected. */
int gt_cuda_algo_make(gt_bk_ctx *ctx, const gt_cu_map *m, const gt_cu_desc *d,
                      const gt_cu_lt_cfg *c, cublasLtMatmulAlgo_t *algo, size_t *ws_need,
                      char *err, size_t errlen);

int gt_cuda_prepare(gt_bk_ctx *ctx, const gt_problem *p, gt_bk_prob **pp, char *err,
                    size_t errlen);
/* 0 when the device has the memory prepare would allocate for p (mapped
 * in m), else -1 with prepare's reason; allocates nothing. The enumeration
 * checks it instead of preparing: a problem that cannot run fails there,
 * once, and not in every screen job. */
int gt_cuda_fits(gt_bk_ctx *ctx, const gt_problem *p, const gt_cu_map *m, char *err, size_t errlen);
void gt_cuda_unprepare(gt_bk_prob *pp);
/* The heuristic's algo for c when c is one of its results (1), else 0. */
int gt_cuda_heur_find(const gt_bk_prob *pp, const gt_cu_lt_cfg *c, cublasLtMatmulAlgo_t *algo,
                      size_t *ws);
int gt_cuda_validate(gt_bk_prob *pp, gt_bk_cand *c, double *rel_err, char *err, size_t errlen);
/* Events around a validation run's candidate calls (end 0: before, 1:
 * after) and the kernel time between them in us (0 when none), kept as the
 * candidate's check_us. */
int gt_cuda_check_mark(gt_bk_prob *pp, int end, char *err, size_t errlen);
double gt_cuda_check_us(gt_bk_prob *pp);
/* Times c: calibration with plain calls, then o->repeats repeats of about
 * o->min_time_ms each, launched plainly (chained with o->chained), or with
 * o->graph as replays of one CUDA graph of the calls (a candidate whose
 * calls cannot be captured fails with the reason). */
/* Frees c's cached graph (launch=graph timings), if any. */
void gt_cuda_graph_drop(gt_bk_cand *c);
int gt_cuda_time(gt_bk_prob *pp, gt_bk_cand *c, const gt_timing_opts *o, gt_timing *t, char *err,
                 size_t errlen);

/* Validation internals (cuda_check.c), used by prepare and the self-test. */
/* Device bytes of the validation buffer for ns reference columns. */
size_t gt_cuda_vbuf_bytes(const gt_problem *p, int64_t ns);
/* Lays out pp->vbuf, uploads the columns, computes the reference and
 * spot-checks it on the host. */
int gt_cuda_reference(gt_bk_prob *pp, char *err, size_t errlen);
/* Compares the D now in set 0 (no poison, no run): the GPU half of
 * validate, for tests that alter D. */
int gt_cuda_check(gt_bk_prob *pp, double *rel_err, char *err, size_t errlen);

#endif
