/* gt_cutlass.h: libgemmtune_cutlass, CUTLASS 3.x SM90 GEMM kernels instantiated by this
 * project, behind a C interface that the worker and libgemmtune load at run time (dlopen:
 * cuda/cutlass_lib.c), so neither links C++ or CUTLASS and a machine without the library
 * simply has no such kernels. Built only where CUTLASS's headers are found (the
 * nvidia-cutlass package on the Python package index: cutlass/CMakeLists.txt); nothing of
 * CUTLASS is in this repository.
 *
 * Why: a road to compute-bound (prefill) GEMMs beside the "mma" family. Measured on the H100
 * (Llama-3-8B shapes): 0.93-0.99 of cuBLASLt's best at n = 2048 and 8192 in a probe that
 * checked every output (bench/results/h100_40_cutlass_probe_checked.txt; the first probe's
 * 0.96-1.08 met slow cuBLASLt runs), and as the worker's "cutlass" family no win in four runs
 * of the 25 shapes (h100_40_service_strategies.txt): it is searched only where asked for
 * (GT_CUDA_CUTLASS_MAX).
 *
 * The GEMM, in BLAS terms "TN" (the Linear layers' shape): D (m x n, column-major, ldd) =
 * alpha * op(A) * B with op(A) = A^T, A stored k x m column-major (each of op(A)'s rows
 * K-contiguous, lda >= k), B stored k x n column-major (ldb >= k); f32 accumulation, beta 0.
 * A kernel's element types are its `types` ("bf16": A, B and D bf16). Pure C: no CUDA or
 * CUTLASS header is needed to use it. */
#ifndef GT_CUTLASS_H
#define GT_CUTLASS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* gt_cutlass_abi()'s value: a loader refuses a library of another version. */
#define GT_CUTLASS_ABI 1

typedef struct gt_cutlass_kernel {
    const char *name;      /* unique, stable: a tuned config names its kernel by it */
    const char *types;     /* "bf16" */
    int tile_m, tile_n, tile_k;
    int cluster_m, cluster_n;
    const char *schedule;  /* "cooperative" (two consumer warpgroups on one tile) or "pingpong" */
    const char *scheduler; /* "persistent" or "streamk" */
} gt_cutlass_kernel;

typedef struct gt_cutlass_args {
    int m, n, k;
    const void *a;
    long long lda;
    const void *b;
    long long ldb;
    void *d;
    long long ldd;
    float alpha;
    int swizzle; /* the persistent tile scheduler's swizzle: 1, 2, 4 or 8 */
    int raster;  /* 0: CUTLASS's heuristic, 1: along M, 2: along N */
    int splits;  /* "streamk" kernels: 1 (stream-K's own decomposition) or a split-K count */
    int sms;     /* the device's multiprocessors, which the tile schedulers size the grid and
                    workspace by; 0: the current device's (a check on a machine without one
                    then refuses) */
} gt_cutlass_args;

/* GT_CUTLASS_ABI of this library. */
int gt_cutlass_abi(void);
/* The kernels: 0 <= i < gt_cutlass_count(); NULL out of range. */
int gt_cutlass_count(void);
const gt_cutlass_kernel *gt_cutlass_kernel_at(int i);
/* Host only (no GPU needed when args->sms is given): 0 when kernel i runs args (sizes,
 * alignment, knobs), with the workspace it needs in *ws (bytes); else a nonzero code with a
 * reason in err. */
int gt_cutlass_check(int i, const gt_cutlass_args *a, size_t *ws, char *err, size_t errlen);
/* Enqueues kernel i on stream (a cudaStream_t) with ws (at least gt_cutlass_check's
 * bytes, untouched between runs is not required: it is re-initialised each time). 0, or a
 * nonzero code with a reason in err. */
int gt_cutlass_run(int i, const gt_cutlass_args *a, void *ws, size_t ws_bytes, void *stream, char *err,
                   size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
