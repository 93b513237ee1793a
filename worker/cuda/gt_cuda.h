/* gt_cuda.h: internals of the cuda (cuBLASLt) backend, shared by its files
 * and by the host unit test and the self-test (module prefix gt_cuda_).
 *
 *   cuda_map.c     problem -> cuBLASLt types, descriptors, scalars; host
 *                  element codecs; status names (pure host, no GPU needed)
 *   cuda_space.c   config <-> JSON <-> algo, enumeration of the space
 *   cuda_kernels.c NVRTC helper kernels (random fill, reference GEMM)
 *   cuda_bench.c   prepare / validate / time
 *   bk_cuda.c      open / close / build / release and the vtable
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
#include "gt_problem.h"

struct cJSON;

/* ---------------------------------------------------------------------------
 * Element type codes shared by the host codecs and the NVRTC kernels (the
 * kernels' source uses the same numbers). */
typedef enum gt_cuda_kt {
    GT_KT_F32 = 0,
    GT_KT_F64 = 1,
    GT_KT_F16 = 2,
    GT_KT_BF16 = 3,
    GT_KT_E4M3 = 4,
    GT_KT_E5M2 = 5,
    GT_KT_I8 = 6,
    GT_KT_I32 = 7,
} gt_cuda_kt;

/* Storage code of a problem type (tf32 is stored as f32); -1 when invalid. */
int gt_cuda_kt_of(gt_dtype t);
/* Decodes element i of a buffer of type kt to double (host). */
double gt_cuda_decode(int kt, const void *buf, size_t i);
/* The exactly representable value the fill kernel writes for the random
 * integer q of type kt (q in [-gt_cuda_fill_qmax(kt), +qmax]). */
double gt_cuda_fill_value(int kt, int64_t q);
int64_t gt_cuda_fill_qmax(int kt);
/* Encodes the value of q for type kt into out (host mirror of the kernel's
 * encoder, used by the unit test to prove both agree with the decoder). */
void gt_cuda_fill_encode(int kt, int64_t q, void *out);
/* float -> IEEE half bits, round to nearest even (for f16 alpha/beta). */
uint16_t gt_cuda_f32_to_f16(float f);

/* ---------------------------------------------------------------------------
 * Problem mapping (cuda_map.c, pure host). */
typedef enum { GT_ACT_NONE = 0, GT_ACT_RELU = 1, GT_ACT_GELU = 2 } gt_cuda_act;

typedef struct gt_cuda_map {
    cudaDataType_t a, b, c, d;       /* storage types */
    cublasComputeType_t compute;
    cudaDataType_t scale;
    cublasOperation_t opa, opb;
    cublasLtEpilogue_t epilogue;
    int act;                         /* gt_cuda_act */
    int has_bias;
    int bias_set;                    /* bias type given explicitly */
    cudaDataType_t bias;             /* valid when bias_set */
    int bias_kt;                     /* element code of the bias vector */
    int fp8;                         /* fp8 inputs: A/B scale pointers */
    int d_scale;                     /* fp8 output: D scale pointer too */
    int akt, bkt, ckt, dkt;          /* element codes of A, B, C, D */
    unsigned char alpha[8], beta[8]; /* host scalars in the scale type */
} gt_cuda_map;

/* Maps p for a device of compute capability sm (major*10+minor, e.g. 90).
 * Returns -1 with "cuda: ..." in err for anything cuBLASLt cannot run. */
int gt_cuda_map_problem(const gt_problem *p, int sm, gt_cuda_map *m, char *err, size_t errlen);
/* Storage cudaDataType_t of a problem type; -1 when it has none. */
int gt_cuda_dtype(gt_dtype t, cudaDataType_t *out);
const char *gt_cuda_dtype_name(cudaDataType_t t);      /* "CUDA_R_16BF" */
const char *gt_cuda_compute_name(cublasComputeType_t t); /* "CUBLAS_COMPUTE_32F" */
const char *gt_cuda_status_name(cublasStatus_t s);      /* "CUBLAS_STATUS_NOT_SUPPORTED" */

/* Device pointers that cuBLASLt reads besides A/B/C/D; enumeration passes
 * aligned placeholders (the heuristic only looks at their alignment). */
typedef struct gt_cuda_ptrs {
    const void *bias;
    const void *a_scale, *b_scale, *d_scale;
} gt_cuda_ptrs;

typedef struct gt_cuda_desc {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c, d;
} gt_cuda_desc;

/* Creates the matmul and layout descriptors of p (host only). */
int gt_cuda_desc_create(const gt_problem *p, const gt_cuda_map *m, const gt_cuda_ptrs *ptrs,
                        gt_cuda_desc *d, char *err, size_t errlen);
void gt_cuda_desc_destroy(gt_cuda_desc *d);

/* Elements spanned by an operand: (batch-1)*stride + ld*cols. */
int64_t gt_cuda_span(int64_t ld, int64_t cols, int64_t batch, int64_t stride);

/* ---------------------------------------------------------------------------
 * Configurations (cuda_space.c). See the comment block at its top and
 * worker/cuda/CONFIG.md for the meaning of each attribute. */
typedef struct gt_cuda_cfg {
    int32_t algo_id;
    uint32_t tile, stages;
    int32_t splitk;
    uint32_t reduction, swizzle, custom;
    uint16_t cluster, inner_shape;
} gt_cuda_cfg;

struct cJSON *gt_cuda_cfg_to_json(const gt_cuda_cfg *c);
int gt_cuda_cfg_from_json(const struct cJSON *j, gt_cuda_cfg *c, char *err, size_t errlen);
/* Canonical text (keys sorted, compact: equal to gt_cfg_canonical of the
 * JSON form). Returns the length like snprintf. */
int gt_cuda_cfg_text(const gt_cuda_cfg *c, char *buf, size_t len);
/* Reads the config attributes of an algo (e.g. a heuristic result). */
int gt_cuda_cfg_from_algo(const cublasLtMatmulAlgo_t *algo, gt_cuda_cfg *c, char *err,
                          size_t errlen);
/* Writes the settable attributes of c into an initialized algo. */
int gt_cuda_cfg_apply(const gt_cuda_cfg *c, cublasLtMatmulAlgo_t *algo, char *err, size_t errlen);

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

typedef struct gt_cuda_ref_args {
    const void *a, *b, *c, *bias;
    double *r;                        /* m x n per batch, dense */
    long long m, n, k, lda, ldb, ldc, sa, sb, sc;
    long long ta, tb, tc, tbias;      /* gt_cuda_kt codes */
    long long transa, transb, act, has_c, has_bias;
    long long y0, z0;                 /* grid offsets (set by gt_cuda_ref) */
    double alpha, beta;
} gt_cuda_ref_args;
/* Reference GEMM in double on the GPU for batch entries [0, batch). */
int gt_cuda_ref(gt_cuda_kernels *k, cudaStream_t s, const gt_cuda_ref_args *a, long long batch,
                char *err, size_t errlen);

/* ---------------------------------------------------------------------------
 * Device context (bk_cuda.c) and the parts other files use. */
typedef struct gt_cuda_enum_stats {
    int heuristic;            /* results the heuristic returned */
    int algo_ids;             /* algorithm ids cublasLtMatmulAlgoGetIds listed */
    long long checks;         /* cublasLtMatmulAlgoCheck calls */
    long long found;          /* distinct accepted configs, before the cap */
    int returned;             /* configs in the returned list */
    int capped;               /* 1 when the cap dropped configs */
    int truncated;            /* 1 when the check/time budget stopped early */
    int recreate_mismatch;    /* heuristic algos not reproduced bit-exactly from attributes */
    int cluster_blind;        /* tile/stages pairs that accepted every cluster shape (kept once) */
    double seconds;
} gt_cuda_enum_stats;

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
};

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
int gt_cuda_enumerate(gt_bk_ctx *ctx, const gt_problem *p, struct cJSON **cands,
                      struct cJSON **baseline, char *err, size_t errlen);
/* Stats of the last enumerate on ctx. */
void gt_cuda_enum_stats_get(const gt_bk_ctx *ctx, gt_cuda_enum_stats *st);
/* Overrides the enumeration limits (<= 0 keeps the current value). */
void gt_cuda_set_limits(gt_bk_ctx *ctx, int max_cands, double seconds);

/* Prepared problem and candidate (cuda_bench.c / bk_cuda.c). */
typedef struct gt_cuda_set {
    void *a, *b, *c, *d;
} gt_cuda_set;

struct gt_bk_prob {
    gt_bk_ctx *ctx;
    gt_problem p;
    gt_cuda_map map;
    gt_cuda_desc desc;
    int64_t a_n, b_n, c_n, d_n;      /* elements spanned */
    size_t a_sz, b_sz, c_sz, d_sz;   /* bytes spanned */
    size_t set_bytes;                /* one input set, aligned */
    void *base;                      /* set 0 (validation) + bias + scales */
    gt_cuda_set val;
    void *bias;
    float *scales;                   /* a, b, d scale, amax */
    void *rot;                       /* rotating sets 1..nrot */
    gt_cuda_set *sets;               /* nsets entries: set 0 = val */
    int nsets;
    int next;                        /* next set to use (rotation continues across candidates) */
    int c_inplace;                   /* C is D (beta == 0 and same layout), as PyTorch calls it */
    int rotate_c;                    /* C is read (beta != 0): each set has its own */
    int64_t rot_want;                /* rotating bytes the sets were sized for */
    double *ref;                     /* host reference, m*n per batch */
    void *hout;                      /* pinned host copy of D */
    uint64_t seed;
};

struct gt_bk_cand {
    gt_bk_prob *pp;
    gt_cuda_cfg cfg;
    cublasLtMatmulAlgo_t algo;
    size_t ws_need;
};

/* Re-creates an algo from a config and checks it for the prepared problem's
 * descriptors; -1 with the cuBLASLt status name when rejected. */
int gt_cuda_algo_make(gt_bk_ctx *ctx, const gt_cuda_map *m, const gt_cuda_desc *d,
                      const gt_cuda_cfg *c, cublasLtMatmulAlgo_t *algo, size_t *ws_need,
                      char *err, size_t errlen);

int gt_cuda_prepare(gt_bk_ctx *ctx, const gt_problem *p, gt_bk_prob **pp, char *err,
                    size_t errlen);
void gt_cuda_unprepare(gt_bk_prob *pp);
int gt_cuda_validate(gt_bk_prob *pp, gt_bk_cand *c, double *rel_err, char *err, size_t errlen);
int gt_cuda_time(gt_bk_prob *pp, gt_bk_cand *c, const gt_timing_opts *o, gt_timing *t, char *err,
                 size_t errlen);

/* Host comparison: ||out-ref||/||ref|| over the m x n x batch logical
 * elements of D (type dkt, leading dim ldd, batch stride sd) against a dense
 * double reference; NaN when any output element is not finite. */
double gt_cuda_rel_err(int dkt, const void *out, int64_t m, int64_t n, int64_t ldd, int64_t batch,
                       int64_t sd, const double *ref);

#endif
