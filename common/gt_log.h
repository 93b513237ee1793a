/* gt_log.h: workload log ingestion (module prefix gt_log_).
 *
 * Turns the text of a GEMM workload log into a list of distinct, weighted
 * problems. Formats: hipBLASLt HIPBLASLT_LOG_MASK lines, PyTorch TunableOp
 * untuned files, cuBLASLt API logs (CUBLASLT_LOG_LEVEL=5 Trace lines), plain
 * CSV size lists and YAML size lists (Triton tune_gemm). Identical GEMMs merge
 * and their call counts add up. Errors name the line and the field. */
#ifndef GT_LOG_H
#define GT_LOG_H

#include "gt_problem.h"

typedef enum gt_log_format {
    GT_LOG_AUTO = 0,
    GT_LOG_HIPBLASLT,
    GT_LOG_TUNABLEOP,
    GT_LOG_CUBLASLT,
    GT_LOG_CSV,
    GT_LOG_YAML,
} gt_log_format;

const char *gt_log_format_name(gt_log_format f);     /* "hipblaslt", ... ; "auto" */
/* Returns 0 and sets *f for a known name ("auto" included), -1 otherwise. */
int gt_log_format_parse(const char *s, gt_log_format *f);
/* Guesses the format from the first meaningful lines; GT_LOG_AUTO when it
 * cannot tell (the caller reports that as an error). */
gt_log_format gt_log_detect(const char *text, size_t len);

/* How to read the fp8 type names that do not say their encoding:
 * hipBLASLt's f8_r/bf8_r (FNUZ in the logs of gfx942 and of hipBLASLt
 * releases that predate the OCP types, OCP on gfx950; newer releases print
 * FNUZ as f8_fnuz_r/bf8_fnuz_r) and "fp8"/"bf8" in the size lists. OCP is
 * the default: what NVIDIA GPUs and gfx950 use. Names that say it
 * (float8_e4m3fnuz, Float8_e4m3fn, R_8F_E4M3, ...) never change. */
typedef enum gt_log_fp8 {
    GT_LOG_FP8_OCP = 0,
    GT_LOG_FP8_FNUZ,
} gt_log_fp8;

const char *gt_log_fp8_name(gt_log_fp8 e);           /* "ocp", "fnuz" */
/* Returns 0 and sets *e for "ocp" or "fnuz" (any case), -1 otherwise. */
int gt_log_fp8_parse(const char *s, gt_log_fp8 *e);

#define GT_LOG_MAX_ERRORS 50     /* errors kept in full; the rest are only counted */
#define GT_LOG_MSG_LEN 256

typedef struct gt_log_error {
    int line;                    /* 1-based line number, 0 for whole-input errors */
    char field[32];              /* offending field name, "" when not a field */
    char msg[GT_LOG_MSG_LEN];    /* human readable, includes the value */
} gt_log_error;

typedef struct gt_log_opts {
    gt_log_format format;        /* GT_LOG_AUTO to detect */
    int skip_invalid;            /* accept the log, skipping bad lines */
    double threshold;            /* keep problems up to this cumulative flop share (0 or >= 1: keep all) */
    size_t max_lines;            /* 0 = unlimited */
    gt_log_fp8 fp8_encoding;     /* f8_r/bf8_r/fp8/bf8: OCP (default) or FNUZ */
} gt_log_opts;

typedef struct gt_log_result {
    gt_log_format format;        /* the format used */
    gt_problem *problems;        /* distinct problems, heaviest first */
    size_t nproblems;
    size_t cap;
    int64_t total_calls;         /* calls in the log (all problems, before threshold) */
    double total_flops;          /* sum of flops*calls (before threshold) */
    size_t dropped;              /* problems removed by the threshold */
    size_t lines;                /* lines read */
    size_t gemm_lines;           /* lines that described a GEMM */
    size_t nerrors;              /* all bad lines, also past GT_LOG_MAX_ERRORS */
    gt_log_error errors[GT_LOG_MAX_ERRORS];
} gt_log_result;

/* Parses a whole log. Returns 0 when the log is accepted (no bad line, or
 * skip_invalid set and at least one good GEMM), -1 when rejected: res->errors
 * then says why. res must be released with gt_log_result_free in both cases. */
int gt_log_parse(const char *text, size_t len, const gt_log_opts *opts, gt_log_result *res);
void gt_log_result_free(gt_log_result *res);

/* Internal to common/: one parser per format. Each is fed one line (without
 * the newline) and either returns 1 with *p filled (a GEMM), 0 for a line that
 * carries no GEMM (comments, other API lines), or -1 with an error filled in.
 * These read ambiguous fp8 names as OCP; gt_log_parse applies fp8_encoding. */
int gt_log_line_hipblaslt(const char *line, gt_problem *p, gt_log_error *e);
int gt_log_line_tunableop(const char *line, gt_problem *p, gt_log_error *e);
int gt_log_line_cublaslt(const char *line, gt_problem *p, gt_log_error *e);
int gt_log_line_csv(const char *line, gt_problem *p, gt_log_error *e);
int gt_log_line_yaml(const char *line, gt_problem *p, gt_log_error *e);

#endif
