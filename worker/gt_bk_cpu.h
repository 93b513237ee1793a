/* gt_bk_cpu.h: the CPU backend's internals shared by its files (module
 * prefix gt_cpu_) and its one public extra, the compile-cache counters.
 *
 *   bk_cpu.c       the gt_backend vtable: device, prepare/validate/time
 *   cpu_data.c     host buffers: type conversions, random inputs, reference
 *   cpu_codegen.c  config parsing and the C source of one candidate kernel
 *   cpu_cache.c    compiler discovery and the content-addressed .so cache
 *   cpu_blas.c     the baseline: OpenBLAS (dlopen'd) running the same problem
 *
 * A candidate is C source generated from the config and the problem's types
 * and transposes, compiled to a shared object that exports
 *   const int gt_cpu_abi;                                   == GT_CPU_ABI
 *   size_t gt_cpu_ws_bytes(int64_t m, int64_t n, int64_t k); workspace size
 *   int gt_cpu_gemm(const gt_cpu_args *g);                  0, or < 0 on bad args
 * Problem sizes are run-time arguments, so one object serves every problem
 * with the same config, types and transposes. */
#ifndef GT_BK_CPU_H
#define GT_BK_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "gt_problem.h"
#include "gt_util.h"

struct cJSON;

/* Compile-cache counters of this process (hits: a cached .so was loaded;
 * misses: the compiler ran). Returns 0. */
int gt_bk_cpu_cache_stats(long *hits, long *misses);

/* ---- kernel ABI (cpu_codegen.c emits the same struct text) ---- */
#define GT_CPU_ABI 1
typedef struct gt_cpu_args {
    int64_t abi;                         /* GT_CPU_ABI */
    int64_t m, n, k, batch;
    int64_t lda, ldb, ldc, ldd;
    int64_t stride_a, stride_b, stride_c, stride_d; /* elements; 0 = broadcast */
    double alpha, beta;
    const void *a, *b, *c;               /* c may be NULL when beta == 0 */
    void *d;
    void *ws;                            /* >= gt_cpu_ws_bytes(), 64-byte aligned */
    int64_t ws_bytes;
} gt_cpu_args;
typedef int (*gt_cpu_gemm_fn)(const gt_cpu_args *g);
typedef size_t (*gt_cpu_ws_fn)(int64_t m, int64_t n, int64_t k);

/* ---- cpu_codegen.c ---- */
typedef struct gt_cpu_cfg {
    int mc, nc, kc, mr, nr, unroll, threads;
    int bug; /* test hook, see cpu_codegen.c; 0 in every real config */
} gt_cpu_cfg;
/* Parses and range-checks a config object. -1 with a reason. */
int gt_cpu_cfg_parse(const struct cJSON *j, gt_cpu_cfg *c, char *err, size_t errlen);
/* Appends the kernel source for c and p's types/transposes to out. */
int gt_cpu_codegen(const gt_cpu_cfg *c, const gt_problem *p, gt_str *out, char *err,
                   size_t errlen);

/* ---- cpu_cache.c ---- */
typedef struct gt_cpu_tool {
    char cc_buf[512];
    char *cc_argv[8];     /* the compiler command, split on spaces, NULL-terminated */
    int cc_argc;
    char version[128];    /* first line of `cc --version` */
    uint64_t machine_key; /* CPU model + ISA flags: -march=native objects differ per CPU */
} gt_cpu_tool;
/* Finds the compiler (GEMMTUNE_CC, GT_CC, "cc") and its version. */
int gt_cpu_tool_init(gt_cpu_tool *t, char *err, size_t errlen);
/* Loads the object for src from the cache, compiling it on a miss.
 * *dl: a dlopen handle the caller dlcloses. -1 with the first compiler error. */
int gt_cpu_cache_load(const gt_cpu_tool *t, const char *src, size_t len, void **dl, char *err,
                      size_t errlen);

/* ---- cpu_blas.c ---- */
/* The baseline config {"lib":"openblas","threads":N}: OpenBLAS's CBLAS GEMM
 * for the problem on N threads, called with the kernel ABI's arguments. */
typedef struct gt_cpu_blas gt_cpu_blas;
/* Whether cfg names a library ("lib") instead of a kernel blocking. */
int gt_cpu_blas_is_cfg(const struct cJSON *cfg);
/* Opens OpenBLAS (once per process) and picks the routine for p. -1 with a
 * one-line reason: no library (naming the package), or what OpenBLAS lacks
 * for p (type, mixed types, epilogue, 32-bit sizes). */
int gt_cpu_blas_build(const gt_problem *p, const struct cJSON *cfg, gt_cpu_blas **out, char *err,
                      size_t errlen);
/* Runs the problem the build was for; g as for a kernel (ws unused). 0, or
 * -1 when g's sizes are not the problem's. */
int gt_cpu_blas_run(gt_cpu_blas *b, const gt_cpu_args *g);
void gt_cpu_blas_free(gt_cpu_blas *b);

/* ---- cpu_data.c ---- */
float gt_cpu_bf16_to_f32(uint16_t h);
uint16_t gt_cpu_f32_to_bf16(float f);   /* round to nearest even */
float gt_cpu_f16_to_f32(uint16_t h);
uint16_t gt_cpu_f32_to_f16(float f);    /* round to nearest even */
/* Element i of a buffer of type t (f32/f16/bf16), widened. */
double gt_cpu_get(const void *buf, gt_dtype t, int64_t i);
/* Elements spanned by a batch of rows x cols column-major matrices. */
int64_t gt_cpu_extent(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride);
/* Uniform values in [-1,1], never zero after rounding to t. */
void gt_cpu_fill_random(void *buf, gt_dtype t, int64_t n, uint64_t *state);
/* NaN in t's encoding, and whether element i still holds exactly that. */
void gt_cpu_poison(void *buf, gt_dtype t, int64_t n);
int gt_cpu_is_poison(const void *buf, gt_dtype t, int64_t i);
/* Double-precision reference of column j of batch bi of D into ref[0..m). */
int gt_cpu_ref_column(const gt_problem *p, const void *a, const void *b, const void *c,
                      int64_t bi, int64_t j, double *ref, double *tmp, double *bcol);

#endif
