/* gt_caps.h: which GEMM problems each backend can run (module prefix
 * gt_caps_), at the level of the problem model: types, transposes,
 * alignment, epilogue. One home for these rules: the coordinator checks a
 * submission with them (a problem its run's backend cannot run is reported
 * in the POST answer, never queued to fail), and the backends check with
 * them again before they map a problem onto their library (the cpu
 * backend's codegen, cuda/cu_map.c's cuBLASLt mapping,
 * libgemmtune's cuBLASLt lookup). What only a device can say (an algorithm
 * for these sizes, memory) stays with the backends. */
#ifndef GT_CAPS_H
#define GT_CAPS_H

#include <stddef.h>
#include <stdint.h>

#include "gt_problem.h"

/* 0 when backend ("cpu", "cuda", "hip") can run p on some device it
 * supports; -1 with "backend: field=value: reason" in err otherwise (also
 * for an unknown backend). */
int gt_caps_check(const char *backend, const gt_problem *p, char *err, size_t errlen);

/* A problem of a log the run's backend cannot run, and why. */
typedef struct gt_caps_refusal {
    char label[96];   /* gt_problem_label */
    int64_t calls;    /* its calls in the log */
    char reason[256];
} gt_caps_refusal;

struct gt_log_result;
/* Removes from res the problems backend cannot run (keeping the order and
 * the others' weights: a weight stays the problem's share of the whole
 * log), writing the first max of them into out. Returns how many were
 * removed (also past max). */
size_t gt_caps_filter(const char *backend, struct gt_log_result *res, gt_caps_refusal *out,
                      size_t max);

/* ---- cuda (cuBLASLt) --------------------------------------------------- */

typedef enum { GT_CAPS_ACT_NONE = 0, GT_CAPS_ACT_RELU = 1, GT_CAPS_ACT_GELU = 2 } gt_caps_act;

/* How cuBLASLt runs a problem, in the problem model's terms (the cuda
 * backend turns each into its CUDA enum). */
typedef struct gt_caps_cuda {
    gt_dtype compute; /* F64, TF32 (f32 storage, tf32 math), F16, I32 or F32 */
    gt_dtype scale;   /* the one scale type cuBLASLt accepts with it */
    int fp8;          /* fp8 inputs: the A and B scale pointers are set */
    int d_scale;      /* fp8 D: the D scale pointer is set */
    gt_caps_act act;
    gt_dtype bias;    /* the bias's element type; GT_DT_INVALID without a bias */
} gt_caps_cuda;

/* Maps p for a device of compute capability sm (10 * major + minor), or
 * for any device when sm is 0 (the coordinator's check: the rules that
 * depend on the device are left out). 0, or -1 with "cuda: ..." in err. */
int gt_caps_cuda_map(const gt_problem *p, int sm, gt_caps_cuda *o, char *err, size_t errlen);
/* The element type cuBLASLt reads the bias in when BIAS_DATA_TYPE is
 * unset: D's type, except fp8 (bf16 with an f32 D, C's 16-bit type with an
 * fp8 D) and i8 output (the f32 scale type). */
gt_dtype gt_caps_cuda_default_bias(const gt_problem *p);

#endif
