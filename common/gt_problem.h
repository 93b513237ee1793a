/* gt_problem.h: the GEMM problem model shared by coordinator, worker and CLI.
 *
 * A problem is one GEMM call shape of a workload: D = alpha * op(A) op(B) + beta * C,
 * in BLAS column-major terms (op(A) is m x k, op(B) is k x n, C/D are m x n),
 * with its data types, leading dimensions, batch strides, epilogue and how often
 * the workload calls it. Everything that makes two calls "the same GEMM" is part
 * of the canonical key; call_count and weight are not. */
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
} gt_dtype;

/* Canonical short name ("f32", "bf16", ...); never NULL. */
const char *gt_dtype_name(gt_dtype t);
/* Parses canonical names and the spellings of the logs we ingest:
 * hipBLASLt "bf16_r"/"c_f32_r", cuBLASLt "R_16BF"/"COMPUTE_32F", TunableOp
 * "BFloat16"/"Half"/"Float". Returns GT_DT_INVALID when unknown. */
gt_dtype gt_dtype_parse(const char *s);
/* Storage size in bytes (tf32 counts as 4); 0 for invalid. */
size_t gt_dtype_size(gt_dtype t);

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
/* Sets tight leading dimensions (and batch strides) for the current sizes and
 * transposes, for logs that do not carry them. */
void gt_problem_default_ld(gt_problem *p);
/* Computes flops and bytes. */
void gt_problem_finish(gt_problem *p);

/* Checks the invariants a backend relies on. Returns 0 when valid, else -1 and
 * writes "field=value: reason" into err. */
int gt_problem_check(const gt_problem *p, char *err, size_t errlen);

/* Canonical key: a stable text that is equal for two problems exactly when they
 * are the same GEMM (call_count, weight and rotating excluded). Returns the
 * length written (truncated like snprintf). */
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
