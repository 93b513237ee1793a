/* gen_test_util.h: helpers the generated-family tests share
 * (test_gen_kernels.c, test_gen_mma*.c): the problems they build, the
 * hipRTC skip rule, and the random operands and exact check of the host
 * emulations. Built into every unit test beside gt_test.c. */
#ifndef GEN_TEST_UTIL_H
#define GEN_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "gen_mma.h"
#include "gt_problem.h"

/* The families' layout: transA = T, transB = N, inputs `in`, C and D
 * `out`, f32 compute and scale, tight leading dimensions. */
gt_problem gen_test_prob(int64_t m, int64_t n, int64_t k, gt_dtype in, gt_dtype out);

/* An fp8 problem as cuBLASLt's fp8 matmul takes it: A `a`, B `b` (OCP
 * fp8), D `out`, per-tensor scales (the AUTO mode of fp8 inputs). */
gt_problem gen_test_prob_f8(int64_t m, int64_t n, int64_t k, gt_dtype a, gt_dtype b, gt_dtype out);

/* The Llama-3-8B projections: m = out features x k = in features. */
extern const int64_t gen_test_llama[5][2];

/* 1 when hipRTC can compile here; else 0 after checking the skip (it names
 * its reason, and GT_REQUIRE_HIP=1 makes a missing hipRTC a failure). why
 * holds the compiler's description or the reason. */
int gen_test_hiprtc_ready(char *why, size_t len);

/* rows x ld operand, k values per row: small random integers (exact in
 * double), garbage (1e9) in the padding past k that a kernel must not read. */
void gen_test_fill(double *x, long long rows, long long ld, long long k, uint64_t *seed);

/* Elements of the m x n column-major out that differ from A B^T (A m rows,
 * B n rows, k long; lda, ldb). */
long long gen_test_wrong(const double *out, const double *A, const double *B, long long m, long long n,
                         long long k, long long lda, long long ldb);

/* Checks that the mma rules prune c for p (finished here) on d, with a
 * reason containing needle. */
void gen_test_mma_pruned(gt_problem p, const gt_gen_dev *d, gt_mma_cfg c, const char *needle);

#endif
