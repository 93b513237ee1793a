/* log_internal.h: helpers shared by the workload log parsers (log_*.c) and
 * nothing else: error filling, strict number parsing and the one-line YAML
 * flow-map reader that hipBLASLt and tune_gemm lines both use. Not part of
 * the public gt_log.h interface. */
#ifndef GT_LOG_INTERNAL_H
#define GT_LOG_INTERNAL_H

#include "gt_log.h"

#include <stddef.h>
#include <stdint.h>

/* Sizes (M, N, K, leading dimensions, batch) must fit 32-bit BLAS APIs. */
#define GT_LOG_SIZE_MAX (((int64_t)1 << 31) - 1)
/* One line's call count; far above any real log, low enough that summing the
 * counts of millions of lines cannot overflow int64. */
#define GT_LOG_CALLS_MAX ((int64_t)1000000000000)
/* Key/value pairs one flow-map line may hold (hipBLASLt prints ~37). */
#define GT_LOG_MAX_KV 96

typedef struct gt_log_kv {
    const char *key;   /* not NUL-terminated; quotes already stripped */
    size_t klen;
    const char *val;   /* not NUL-terminated; quotes already stripped */
    size_t vlen;
} gt_log_kv;

/* Fills e->field and e->msg (the caller of the line parser sets e->line). */
void gt_log_seterr(gt_log_error *e, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Copies a value for display in a message: at most 60 bytes, "..." when cut. */
void gt_log_show(char *dst, size_t cap, const char *v, size_t vlen);

/* Exact / case-insensitive comparison of a counted string with a literal. */
int gt_log_eq(const char *s, size_t len, const char *lit);
int gt_log_ieq(const char *s, size_t len, const char *lit);

/* Strict non-negative decimal integer <= max ("field=value: reason" errors:
 * not an integer, negative, out of range). 0 or -1. */
int gt_log_int(const char *field, const char *v, size_t vlen, int64_t max, int64_t *out,
               gt_log_error *e);
/* Strict finite decimal floating point number. 0 or -1. */
int gt_log_double(const char *field, const char *v, size_t vlen, double *out, gt_log_error *e);
/* true/false (any case). 0 or -1. */
int gt_log_bool(const char *field, const char *v, size_t vlen, int *out, gt_log_error *e);
/* N/T (any case); C is an error because every supported type is real. */
int gt_log_trans(const char *field, const char *v, size_t vlen, char *out, gt_log_error *e);
/* gt_dtype_parse on a counted string, plus spellings problem.c lacks
 * (Triton "fp32"); the fp8 names that do not say their encoding (f8_r,
 * bf8_r, fp8, bf8) give the FNUZ type when fp8 is GT_LOG_FP8_FNUZ. */
gt_dtype gt_log_dtype(const char *v, size_t vlen, gt_log_fp8 fp8);
/* As gt_log_dtype; an unknown name is an error naming field and value. */
int gt_log_dtype_field(const char *field, const char *v, size_t vlen, gt_log_fp8 fp8,
                       gt_dtype *out, gt_log_error *e);

/* The line parsers whose formats spell fp8 ambiguously, with the run's
 * choice; gt_log.h's gt_log_line_* are these with GT_LOG_FP8_OCP. */
int gt_log_line_hipblaslt_fp8(const char *line, gt_log_fp8 fp8, gt_problem *p, gt_log_error *e);
int gt_log_line_csv_fp8(const char *line, gt_log_fp8 fp8, gt_problem *p, gt_log_error *e);
int gt_log_line_yaml_fp8(const char *line, gt_log_fp8 fp8, gt_problem *p, gt_log_error *e);

/* Reads a "- { key: value, ... }" line (keys and values optionally quoted,
 * a trailing "# comment" allowed). Fills up to cap pairs and *n.
 * Returns 0, or -1 with e set; on -1 *n still counts the pairs read before
 * the problem so that callers can look at the leading "function:". */
int gt_log_flowmap(const char *line, gt_log_kv *kv, size_t cap, size_t *n, gt_log_error *e);
/* First pair whose key equals key exactly, or NULL. */
const gt_log_kv *gt_log_kv_find(const gt_log_kv *kv, size_t n, const char *key);

/* Common compute/scale types for a storage type: f64 computes in f64, i8 in
 * i32, tf32 means f32 storage with tf32 math; everything else in f32. */
void gt_log_set_types(gt_problem *p, gt_dtype ab, gt_dtype cd);

#endif
