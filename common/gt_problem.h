/* gt_problem.h: the GEMM problem model shared by coordinator, worker and CLI.
 *
 * A problem is one GEMM call shape of a workload: D = alpha * op(A) op(B) + beta * C,
 * in BLAS column-major terms (op(A) is m x k, op(B) is k x n, C/D are m x n),
 * with its data types, leading dimensions, batch strides, epilogue and how often
 * the workload calls it. Everything that makes two calls "the same GEMM" is part
 * of the canonical key; call_count and weight are not.
 *
 * common/ is the bottom layer (problem model, parsers, capabilities,
 * policy constants, utilities): it includes only libc and cJSON, and every
 * other folder may include it (ARCHITECTURE.md). */
#ifndef GT_PROBLEM_H
#define GT_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

typedef enum gt_dtype {
    GT_DT_INVALID = 0,
    GT_DT_F32,
    GT_DT_F64,
    GT_DT_F16,
    GT_DT_BF16,
    GT_DT_TF32,    /* compute type only: f32 storage, tf32 math */
    GT_DT_F8E4M3,
    GT_DT_F8E5M2,
    GT_DT_I8,
    GT_DT_I32,
    /* fp8 comes in two encodings that share bit widths but not values: OCP
     * (e4m3fn/e5m2, NVIDIA and AMD gfx950; the two above) and FNUZ (AMD
     * gfx942: exponent bias one higher, no negative zero, 0x80 the only
     * NaN, no infinities). The same bytes mean different numbers, so a
     * result tuned for one encoding says nothing about the other. Added at
     * the end so the numbers of the older types do not move. */
    GT_DT_F8E4M3FNUZ,
    GT_DT_F8E5M2FNUZ,
} gt_dtype;

/* Canonical short name ("f32", "bf16", ...); never NULL. */
const char *gt_dtype_name(gt_dtype t);
/* Parses canonical names and the spellings of the logs we ingest:
 * hipBLASLt "bf16_r"/"c_f32_r", cuBLASLt "R_16BF"/"COMPUTE_32F", TunableOp
 * "BFloat16"/"Half"/"Float". Returns GT_DT_INVALID when unknown. The fp8
 * names that do not say their encoding (hipBLASLt "f8_r"/"bf8_r", "fp8",
 * "bf8") read as OCP, what cuBLASLt and newer hipBLASLt mean by them; the
 * log parsers let a run say otherwise (gt_log_opts.fp8_encoding). */
gt_dtype gt_dtype_parse(const char *s);
/* Storage size in bytes (tf32 counts as 4); 0 for invalid. */
size_t gt_dtype_size(gt_dtype t);
/* Whether t is one of the four fp8 types (either encoding). */
int gt_dtype_is_f8(gt_dtype t);

/* How an operand is scaled before the product: A is read as scale_a * A.
 * GT_SCALE_AUTO (0, what a zeroed problem holds) means the type's usual
 * mode: one f32 scale per tensor for an fp8 operand (cuBLASLt's fp8 matmul
 * always takes one, the cuda backend always passes one, libgemmtune maps
 * only such calls), none otherwise. So problems that never heard of scales
 * keep their meaning and their key. Per-row, per-column (vector) and block
 * scales are not modelled: the parsers refuse them. */
typedef enum gt_scale_mode {
    GT_SCALE_AUTO = 0,
    GT_SCALE_NONE,                   /* no scale (hipBLASLt scaleA: 0) */
    GT_SCALE_SCALAR,                 /* one f32 per tensor (scaleA: 1, TunableOp rw_0) */
} gt_scale_mode;

/* "none", "scalar"; "auto" for GT_SCALE_AUTO, "invalid" otherwise. */
const char *gt_scale_name(gt_scale_mode m);

#define GT_ACT_LEN 16

typedef struct gt_problem {
    int64_t m, n, k;
    int64_t batch;                   /* >= 1 */
    char trans_a, trans_b;           /* 'N' or 'T' */
    int64_t lda, ldb, ldc, ldd;
    int64_t stride_a, stride_b, stride_c, stride_d; /* 0 when batch == 1 */
    gt_dtype a_type, b_type, c_type, d_type;
    gt_dtype compute_type, scale_type;
    double alpha, beta;
    int bias;                        /* bias vector in the epilogue */
    gt_dtype bias_type;              /* GT_DT_INVALID when no bias */
    gt_scale_mode scale_a, scale_b;  /* scales of A and B; GT_SCALE_AUTO: the type's usual */
    char activation[GT_ACT_LEN];     /* "none", "relu", "gelu" */
    int64_t rotating_mb;             /* rotating buffer size asked by the log, 0 = default */
    int64_t call_count;              /* calls in the workload, >= 1 */
    /* Derived, filled by gt_problem_finish(). */
    double flops;                    /* per call: 2*m*n*k*batch */
    double bytes;                    /* per call: A + B + D (+ C when beta != 0) once each */
    double weight;                   /* share of the workload's flops*calls, 0..1 */
} gt_problem;

/* Fills a problem with the defaults of a plain f32 NN GEMM of m x n x k with
 * tight leading dimensions; the parsers start from this. */
void gt_problem_init(gt_problem *p, int64_t m, int64_t n, int64_t k);
/* The decode layout of the benchmarks and warm-ups: TN (A stored k x m, B
 * k x n), A and B of type ab, C and D of type cd, f32 compute and scale,
 * tight leading dimensions, finished. */
void gt_problem_init_tn(gt_problem *p, int64_t m, int64_t n, int64_t k, gt_dtype ab, gt_dtype cd);
/* Sets tight leading dimensions (and batch strides) for the current sizes and
 * transposes, for logs that do not carry them. */
void gt_problem_default_ld(gt_problem *p);
/* Computes flops and bytes. */
void gt_problem_finish(gt_problem *p);

/* The scale mode of operand 'a' or 'b' with GT_SCALE_AUTO resolved:
 * GT_SCALE_NONE or GT_SCALE_SCALAR (an out-of-range value comes back as is,
 * for gt_problem_check to refuse). */
gt_scale_mode gt_problem_scale(const gt_problem *p, char operand);

/* Checks the invariants a backend relies on. Returns 0 when valid, else -1 and
 * writes "field=value: reason" into err. */
int gt_problem_check(const gt_problem *p, char *err, size_t errlen);

/* Canonical key: a stable text that is equal for two problems exactly when they
 * are the same GEMM (call_count, weight and rotating excluded). Scale modes
 * enter it only where they differ from the type's usual mode (",scale=A/B"
 * at the end), so keys of problems that say nothing about scales are the
 * ones stored databases and libgemmtune already hold. Returns the length
 * written (truncated like snprintf). */
int gt_problem_key(const gt_problem *p, char *buf, size_t len);

/* Short human label, e.g. "bf16 TN 6144x1x4096". */
int gt_problem_label(const gt_problem *p, char *buf, size_t len);

struct cJSON;
/* JSON round trip used by the protocol, the store and exports.
 * gt_problem_to_json returns a new object the caller owns (NULL on OOM). */
struct cJSON *gt_problem_to_json(const gt_problem *p);
/* Returns 0 on success, -1 with a message in err for a missing/bad field. */
int gt_problem_from_json(const struct cJSON *j, gt_problem *p, char *err, size_t errlen);

#endif
