/* gemmtune.h: use gemmtune's tuned GEMM configurations from your program.
 *
 * libgemmtune reads an exported result database (`gemmtune export RUN -o
 * tuned.db`, schema/EXPORT.md) and answers, for one GEMM on one device model,
 * "which configuration did the tuning find fastest?":
 *
 *   gt_db *db = gt_db_open("tuned.db", err, sizeof err);
 *   gt_gemm_desc g;
 *   gt_gemm_desc_init(&g, 6144, 1, 4096, "bf16");     // D[m x n] = op(A) op(B)
 *   g.transa = 'T';
 *   g.lda = 4096;                                      // 0 = tight
 *   gt_db_result r;
 *   if (gt_db_lookup(db, &g, "cuda", "NVIDIA H100 80GB HBM3", &r) == GT_DB_OK)
 *       puts(r.config);                                // the tuned config, JSON
 *   gt_db_close(db);
 *
 * With CUDA, gt_db_cublaslt_algo() turns the tuned cuda config into a
 * cublasLtMatmulAlgo_t ready for cublasLtMatmul (include <cublasLt.h> before
 * this header, or define GEMMTUNE_CUBLASLT, to get its declaration).
 *
 * The winner may also be a kernel gemmtune generated (a family of
 * worker/cuda/CONFIG.md, e.g. "gemv" for skinny GEMMs) rather than a
 * cuBLASLt config: the lookups then return GT_DB_GENERATED, and
 * gt_db_kernel_get() gives the kernel's source, NVRTC options, launch
 * geometry and workspace; in CUDA builds gt_db_kernel_cuda_load() compiles
 * it with NVRTC for the current device and gt_db_kernel_cuda_launch() runs
 * it:
 *
 *   gt_db_kernel *k;
 *   if (gt_db_kernel_get(db, &g, "NVIDIA H100 80GB HBM3", &k) == GT_DB_OK) {
 *       gt_db_module mod;                              // once per context
 *       gt_db_kernel_cuda_load(k, &mod, err, sizeof err);
 *       // workspace: k->workspace_bytes, zeroed once when k->workspace_zero
 *       gt_db_kernel_cuda_launch(k, &mod, stream, A, B, C, bias, D, ws, err, sizeof err);
 *   }
 *
 * A GEMM is matched on its full canonical problem key (gt_problem_key of
 * gemmtune's common/problem.c, documented in schema/EXPORT.md): sizes,
 * transposes, leading dimensions, batch strides, every type, alpha/beta and
 * the epilogue. Anything that differs is a different GEMM and misses
 * (GT_DB_NOT_TUNED): use the library's own heuristic then.
 *
 * Sizes are BLAS column-major like cuBLAS/cuBLASLt: op(A) is m x k, op(B) is
 * k x n, C and D are m x n. A row-major caller computing Y[M x N] = X[M x K]
 * W[K x N] asks for the column-major D^T: m = N, n = M, swapped operands.
 *
 * Thread safety: a gt_db is read-only after gt_db_open; any number of
 * threads may look up concurrently. Lookups allocate nothing.
 * pkg-config: `pkg-config --cflags --libs gemmtune` (static: --static). */
#ifndef GEMMTUNE_H
#define GEMMTUNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GT_DB_API __attribute__((visibility("default")))
#else
#define GT_DB_API
#endif

#define GEMMTUNE_VERSION "0.1.0"

/* Return codes of the lookups. */
#define GT_DB_OK 0          /* tuned: the result is filled */
#define GT_DB_NOT_TUNED 1   /* no tuned configuration for this GEMM, backend and device model */
#define GT_DB_REJECTED 2    /* tuned, but cuBLASLt refused the config for these descriptors
                               (another cuBLASLt major version, workspace, alignment); for
                               gt_db_kernel_get: the winner is not a kernel this library
                               can build */
#define GT_DB_GENERATED 3   /* tuned, and the winner is a generated kernel, not a cuBLASLt
                               config: gt_db_kernel_get() (the result is filled) */
#define GT_DB_EINVAL (-1)   /* bad argument, or a GEMM gemmtune cannot describe */

typedef struct gt_db gt_db;

/* One GEMM. Types are names: gemmtune's ("f32", "f64", "f16", "bf16",
 * "tf32" (compute only), "f8e4m3", "f8e5m2", "i8", "i32") or the spellings
 * of the logs gemmtune reads ("bf16_r", "R_16BF", "CUDA_R_16BF",
 * "CUBLAS_COMPUTE_32F", "BFloat16", ...). Holding cudaDataType_t or
 * cublasComputeType_t values? gt_db_cuda_type()/gt_db_cuda_compute() name
 * them. */
typedef struct gt_gemm_desc {
    int64_t m, n, k;
    int64_t batch;                 /* >= 1 */
    char transa, transb;           /* 'N' or 'T' */
    int64_t lda, ldb, ldc, ldd;    /* <= 0: tight for the sizes and transposes */
    int64_t stride_a, stride_b, stride_c, stride_d; /* batch > 1 only; < 0: tight; 0: broadcast */
    const char *a_type, *b_type, *c_type, *d_type;
    const char *compute_type;      /* NULL: f64 for f64 inputs, i32 for i8, else f32 */
    const char *scale_type;        /* NULL: the one cuBLASLt takes with the compute type */
    double alpha, beta;
    int bias;                      /* epilogue adds a bias vector */
    const char *bias_type;         /* NULL: cuBLASLt's default for the types */
    const char *activation;        /* NULL or "none", "relu", "gelu" */
} gt_gemm_desc;

/* A tuned configuration. Strings belong to the gt_db and live until
 * gt_db_close. Times in microseconds per call; NAN when unknown. */
typedef struct gt_db_result {
    const char *backend;           /* "cuda", "cpu", ... */
    const char *device_model;      /* e.g. "NVIDIA H100 80GB HBM3" */
    const char *key;               /* canonical problem key */
    const char *config;            /* canonical JSON, backend-specific */
    double time_us;                /* tuned */
    double baseline_us;            /* the untuned default, timed next to it (NAN when the
                                      default could not run and the tuning paired it with
                                      a substitute: schema/EXPORT.md baseline_kind) */
    double uplift;                 /* baseline_us / time_us (NAN likewise) */
} gt_db_result;

/* Opens an export file (read-only) and loads its best table. NULL with a
 * message in err when it is not a readable gemmtune export or has a newer
 * format_version. */
GT_DB_API gt_db *gt_db_open(const char *export_path, char *err, size_t errlen);
GT_DB_API void gt_db_close(gt_db *db);
/* Tuned (problem, backend, device model) entries loaded. */
GT_DB_API size_t gt_db_size(const gt_db *db);

/* Defaults: batch 1, NN, tight leading dimensions, all four types `type`,
 * compute/scale implied, alpha 1, beta 0, no epilogue. */
GT_DB_API void gt_gemm_desc_init(gt_gemm_desc *d, int64_t m, int64_t n, int64_t k,
                                 const char *type);
/* The canonical problem key of d. Returns its length (like snprintf), or -1
 * with the reason in err when d is not a valid GEMM. */
GT_DB_API int gt_db_key(const gt_gemm_desc *d, char *key, size_t keylen, char *err,
                        size_t errlen);
/* The record line of d called `calls` times: one hipBLASLt bench line
 * (HIPBLASLT_LOG_MASK=32 format, with every field: sizes, leading
 * dimensions, batch strides, types, alpha/beta, epilogue, call_count), what
 * libgemmtune-preload.so's GEMMTUNE_RECORD writes and `gemmtune submit`
 * ingests; newline-terminated. Returns its length like snprintf, or -1 with
 * the reason in err when d is not a valid GEMM or has a type that line
 * cannot spell (FNUZ fp8). */
GT_DB_API int gt_db_record_line(const gt_gemm_desc *d, int64_t calls, char *line, size_t linelen,
                                char *err, size_t errlen);

/* The tuned configuration of d on device_model for backend ("cuda", "cpu").
 * GT_DB_OK, GT_DB_GENERATED (a generated kernel: config is its family's
 * JSON), GT_DB_NOT_TUNED, or GT_DB_EINVAL. */
GT_DB_API int gt_db_lookup(const gt_db *db, const gt_gemm_desc *d, const char *backend,
                           const char *device_model, gt_db_result *out);
/* The same by key (schema/EXPORT.md "The problem key"). */
GT_DB_API int gt_db_lookup_key(const gt_db *db, const char *key, const char *backend,
                               const char *device_model, gt_db_result *out);

/* A cuda config decoded (worker/cuda/CONFIG.md): the cuBLASLt algo config
 * attributes. Host only, no GPU needed. 0, or -1 with the reason in err. */
typedef struct gt_db_cuda_config {
    int32_t algo_id;               /* CUBLASLT_ALGO_CONFIG_ID */
    uint32_t tile;                 /* CUBLASLT_ALGO_CONFIG_TILE_ID */
    uint32_t stages;               /* CUBLASLT_ALGO_CONFIG_STAGES_ID */
    int32_t splitk;                /* CUBLASLT_ALGO_CONFIG_SPLITK_NUM */
    uint32_t reduction;            /* CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME */
    uint32_t swizzle;              /* CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING */
    uint32_t custom;               /* CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION */
    uint16_t cluster;              /* CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID */
    uint16_t inner_shape;          /* CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID */
} gt_db_cuda_config;
GT_DB_API int gt_db_cuda_config_parse(const char *json, gt_db_cuda_config *out, char *err,
                                      size_t errlen);

/* gemmtune's name of a cudaDataType_t / cublasComputeType_t value, NULL
 * when gemmtune does not model it (complex, pedantic, ...). */
GT_DB_API const char *gt_db_cuda_type(int cuda_data_type);
GT_DB_API const char *gt_db_cuda_compute(int cublas_compute_type);

/* A readable name of a return code. */
GT_DB_API const char *gt_db_strerror(int rc);

/* ---- generated kernels ------------------------------------------------------
 * A tuned winner that is a generated kernel, re-created from (problem,
 * config) by the same code gemmtune's worker compiled and timed (gen/), so
 * it is the kernel that was measured. Host only, no GPU needed. */

/* One launch: the argument struct by value, then, when extra_param is set,
 * one long long of value extra_value. */
typedef struct gt_db_launch {
    const char *kernel;            /* extern "C" function name in the module */
    unsigned grid[3], block[3];
    size_t shared_bytes;           /* dynamic shared memory to pass at launch */
    const char *extra_param;       /* NULL, or the name of the trailing long long */
    long long extra_value;
} gt_db_launch;

typedef struct gt_db_kernel {
    const char *family;            /* "gemv" or "mma" */
    const char *key, *device_model, *config; /* the tuned entry (config: canonical JSON) */
    double time_us, baseline_us, uplift;
    const char *source;            /* self-contained CUDA C++: compiles with NVRTC or nvcc */
    const char *program_name;      /* name to give nvrtcCreateProgram ("gt_gen.cu") */
    const char *const *options;    /* NVRTC options besides --gpu-architecture (may be none) */
    int noptions;
    int min_sm;                    /* oldest compute capability it compiles for (80 = sm_80) */
    int nlaunch;                   /* launches, in order on one stream */
    gt_db_launch launch[2];
    size_t args_bytes;             /* size of the argument struct (gt_db_kernel_args) */
    size_t workspace_bytes;        /* device workspace the launches need; 0: none */
    int workspace_zero;            /* 1: zero the workspace once before the first launch (the
                                      kernels leave it zero); 0: no initialisation. Launches
                                      sharing one workspace must not overlap (one stream). */
    int arch_specific;             /* 1: compile for sm_<min_sm>a and run there only (the Hopper
                                      "mma" kernels: wgmma, TMA) */
    int tensor_maps;               /* CUtensorMap parameters launch[0] takes after the struct
                                      (0; 2: A and B; 3: A, B and D, which the kernel writes
                                      with TMA stores, so D must be 16-byte aligned as A and B
                                      are); gt_db_kernel_cuda_launch encodes them, the export's
                                      "tensor_maps" says how */
    int chain_min_sm;              /* launch[0] may launch chained (programmatic dependent
                                      launch) when compiled for sm_<chain_min_sm> or newer:
                                      GT_DB_LAUNCH_CHAINED; 0: never (the "gemv" kernels: 90) */
    int chain_reads_a;             /* 1: chained, it reads A before it waits for the kernel
                                      before it, which must therefore not write A (weights) */
    int scales;                    /* 1: an fp8 kernel: every launch takes the device f32 scales
                                      of A and B (cuBLASLt's A/B scale pointers; D = alpha x
                                      scale_a x scale_b x A.B + ...): gt_db_kernel_args_scaled,
                                      gt_db_kernel_cuda_launch_scaled; the calls without them
                                      refuse it. Added last: older members keep their offsets */
} gt_db_kernel;

/* The generated kernel tuned for d (backend "cuda") on device_model, as a new
 * gt_db_kernel (gt_db_kernel_free). GT_DB_OK; GT_DB_NOT_TUNED; GT_DB_REJECTED
 * when the winner is not a generated kernel (a cuBLASLt config:
 * gt_db_cublaslt_algo) or one this library cannot build; GT_DB_EINVAL. Unlike
 * the lookups, this allocates. */
GT_DB_API int gt_db_kernel_get(const gt_db *db, const gt_gemm_desc *d, const char *device_model,
                               gt_db_kernel **out);
GT_DB_API int gt_db_kernel_get_key(const gt_db *db, const char *key, const char *device_model,
                                   gt_db_kernel **out);
GT_DB_API void gt_db_kernel_free(gt_db_kernel *k);
/* Writes k's argument struct (k->args_bytes bytes) for one call: the device
 * pointers of A, B, C (NULL when beta is 0), the bias (NULL without one),
 * D and the workspace (NULL when k->workspace_bytes is 0); the sizes, strides
 * and scalars are fixed by the tuned GEMM. 0, or -1 when len is too small. */
GT_DB_API int gt_db_kernel_args(const gt_db_kernel *k, const void *a, const void *b, const void *c,
                                const void *bias, void *d, void *workspace, void *out, size_t len);
/* gt_db_kernel_args with the scales of an fp8 kernel (k->scales): device
 * pointers to one f32 each for A and B, required when k->scales (-1 when
 * NULL: the kernel reads them), ignored otherwise. gt_db_kernel_args is this
 * with NULL scales. */
GT_DB_API int gt_db_kernel_args_scaled(const gt_db_kernel *k, const void *a, const void *b,
                                       const void *c, const void *bias, void *d, const void *scale_a,
                                       const void *scale_b, void *workspace, void *out, size_t len);

#if defined(GEMMTUNE_CUBLASLT)
/* A compiled generated kernel: CUDA builds of libgemmtune only (pkg-config's
 * Cflags then carry -DGEMMTUNE_CUBLASLT). The CUDA types are declared by
 * their struct tags, so <cuda.h> is not needed: module is a CUmodule,
 * function[i] the CUfunction of launch[i]. */
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
typedef struct gt_db_module {
    struct CUmod_st *module;
    struct CUfunc_st *function[2];
    int nfunction;
    char target[24];               /* "sm_90" (a cubin), or "compute_NN" (PTX for an arch newer
                                      than this NVRTC) */
} gt_db_module;
/* Compiles k->source with NVRTC (linked like cuBLASLt) for the device of the
 * calling thread's current CUDA context, exactly as gemmtune's worker does,
 * and loads it into that context through the driver (libcuda.so.1, opened
 * at the first call). 0, or -1 with the reason in err (no driver, no current
 * context, a device older than k->min_sm, the compile log). Functions using
 * more than 48 KiB of dynamic shared memory are opted in here. */
GT_DB_API int gt_db_kernel_cuda_load(const gt_db_kernel *k, gt_db_module *m, char *err,
                                     size_t errlen);
GT_DB_API void gt_db_kernel_cuda_unload(gt_db_module *m);
/* Enqueues k's launches on stream (a CUstream or cudaStream_t; NULL: the
 * default stream) with these device pointers, as gt_db_kernel_args
 * describes them. The context m was loaded in must be current on the
 * calling thread (in a multi-GPU program, its device's: cudaSetDevice); a
 * plan (gt_db_plan_run) makes its own current by itself. No
 * synchronisation. 0, or -1 with the driver's error. */
GT_DB_API int gt_db_kernel_cuda_launch(const gt_db_kernel *k, const gt_db_module *m,
                                       struct CUstream_st *stream, const void *a, const void *b,
                                       const void *c, const void *bias, void *d, void *workspace,
                                       char *err, size_t errlen);
/* flags of gt_db_kernel_cuda_launch_ex. CHAINED: launch[0] with programmatic
 * dependent launch (cudaLaunchAttributeProgrammaticStreamSerialization) when
 * k->chain_min_sm allows it for the module's target, else plainly (the result
 * is the same either way). A chained kernel may start before the kernel
 * before it on the stream ends, overlapping its launch with that kernel's
 * tail; it waits for it before it reads B, C or bias or writes (and, when
 * k->chain_reads_a, reads A first: the kernel before must not write A). The
 * gain needs the kernels before to launch early too, as in a decode step
 * whose kernels all launch chained. */
#define GT_DB_LAUNCH_CHAINED 1u
/* gt_db_kernel_cuda_launch with flags (GT_DB_LAUNCH_*; 0: the same). */
GT_DB_API int gt_db_kernel_cuda_launch_ex(const gt_db_kernel *k, const gt_db_module *m,
                                          struct CUstream_st *stream, const void *a, const void *b,
                                          const void *c, const void *bias, void *d, void *workspace,
                                          unsigned flags, char *err, size_t errlen);
/* gt_db_kernel_cuda_launch_ex with the scales of an fp8 kernel (k->scales:
 * device pointers to one f32 each, required; ignored otherwise). The two
 * calls above are this with NULL scales, which an fp8 kernel refuses. */
GT_DB_API int gt_db_kernel_cuda_launch_scaled(const gt_db_kernel *k, const gt_db_module *m,
                                              struct CUstream_st *stream, const void *a,
                                              const void *b, const void *c, const void *bias, void *d,
                                              const void *scale_a, const void *scale_b,
                                              void *workspace, unsigned flags, char *err,
                                              size_t errlen);
#endif

/* ---- plans: run the tuned winner, whichever kind it is -----------------------
 * A plan is everything needed to run one tuned GEMM on the current device:
 * for a cuBLASLt winner the matmul descriptor and layouts built from the GEMM
 * by the code the worker timed with (cuda/: gt_cu_map_problem,
 * gt_cu_desc_create), the config's algo re-created and checked against them
 * (gt_cu_lt_algo_make) and a cublasLt handle of its own (one per plan: they
 * are cheap next to a compile, and a plan needs no handle from its caller);
 * for a generated winner the kernel (gt_db_kernel_get) compiled with NVRTC
 * and loaded (gt_db_kernel_cuda_load). Plans are made in the calling
 * thread's current CUDA context (the device's primary context of a CUDA
 * runtime program, once the runtime has touched it) and run there:
 * gt_db_plan_run makes that context current for the call whichever one the
 * thread has (a multi-GPU program's other device, or none) and puts the
 * caller's back.
 * Builds without CUDA define these functions too: they return GT_DB_EINVAL
 * with "built without CUDA". */
typedef struct gt_db_plan gt_db_plan;
/* Looks d up for backend "cuda" on device_model and builds its plan in *out.
 * GT_DB_OK; GT_DB_NOT_TUNED (nothing is built: use the library's heuristic);
 * GT_DB_REJECTED (tuned, but cuBLASLt refused the config here, or the
 * generated kernel is not one this library can build); GT_DB_EINVAL with the
 * reason in err (a bad argument, no CUDA driver or current context, a
 * compile or cuBLASLt failure). */
GT_DB_API int gt_db_plan_create(gt_db *db, const gt_gemm_desc *d, const char *device_model,
                                gt_db_plan **out, char *err, size_t errlen);
/* The device workspace gt_db_plan_run needs (*bytes, 0: none) and whether it
 * must be zeroed once before its first run (*zero_once; the generated kernels
 * that need it leave it zero). Runs sharing one workspace must not overlap:
 * give each stream its own. Either pointer may be NULL. */
GT_DB_API void gt_db_plan_workspace(const gt_db_plan *p, size_t *bytes, int *zero_once);
/* Enqueues the GEMM on stream (a cudaStream_t/CUstream; NULL: the default
 * stream) with these device pointers: c NULL when beta is 0, bias only when
 * the GEMM has one, scale_a/scale_b (and scale_d for an fp8 output) for fp8
 * GEMMs (device f32 scalars), NULL otherwise; workspace as
 * gt_db_plan_workspace says. A, B, C and D must be aligned as the tuned algo
 * requires (checked here: an error, never a cuBLASLt fault). flags:
 * GT_DB_LAUNCH_* (1 = chained) for a generated kernel, ignored for cuBLASLt.
 * No synchronisation. The stream must be one of the plan's context (its
 * device's): another context's stream is refused (GT_DB_EINVAL). GT_DB_OK,
 * or GT_DB_EINVAL with the reason in err.
 * Thread safety: any number of threads may run one plan; the per-call
 * pointers written into the cuBLASLt descriptor are guarded by the plan's
 * mutex up to the enqueue. */
GT_DB_API int gt_db_plan_run(gt_db_plan *p, void *stream, const void *a, const void *b,
                             const void *c, const void *bias, void *d, const void *scale_a,
                             const void *scale_b, const void *scale_d, void *workspace, int flags,
                             char *err, size_t errlen);
/* Frees the plan (its module, handle and descriptors); NULL is a no-op. Its
 * context must still exist and no run of it may be pending on the GPU. */
GT_DB_API void gt_db_plan_free(gt_db_plan *p);
/* Makes CUDA device ordinal's primary context (the CUDA runtime's) current on
 * the calling thread when the thread has no current context, as the runtime
 * does lazily at a thread's first runtime call; a current context is left as
 * it is. Call it before gt_db_plan_create on a thread that may not have made
 * a runtime call yet (gt_db_plan_run binds its plan's device by itself).
 * GT_DB_OK, or GT_DB_EINVAL with err (no driver, no such device, or a build
 * without CUDA). */
GT_DB_API int gt_db_cuda_bind_device(int ordinal, char *err, size_t errlen);

#if defined(GEMMTUNE_CUBLASLT) && !defined(CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA)
#include <cublasLt.h>
#endif
#if defined(CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA) /* <cublasLt.h> was included */
/* The tuned cuda config of d on device_model as an algo for cublasLtMatmul:
 * cublasLtMatmulAlgoInit(algo_id) + the config attributes +
 * cublasLtMatmulAlgoCheck against descriptors built from d exactly as the
 * tuning built them (placeholder device pointers for bias/scales: only their
 * alignment is looked at). *workspace: the bytes it needs. GT_DB_OK,
 * GT_DB_NOT_TUNED, GT_DB_REJECTED, GT_DB_GENERATED (the winner is a generated
 * kernel: gt_db_kernel_get) or GT_DB_EINVAL. Defined only by a
 * libgemmtune built with CUDA (pkg-config's Cflags then carry
 * -DGEMMTUNE_CUBLASLT). */
GT_DB_API int gt_db_cublaslt_algo(const gt_db *db, cublasLtHandle_t handle,
                                  const gt_gemm_desc *d, const char *device_model,
                                  cublasLtMatmulAlgo_t *out, size_t *workspace);
/* The same from the caller's own descriptors: the GEMM is read from the
 * matmul descriptor and the four layouts (as the preload shim does), alpha
 * and beta are the values the call will pass, and the algo is checked
 * against these descriptors. */
GT_DB_API int gt_db_cublaslt_algo_for(const gt_db *db, cublasLtHandle_t handle,
                                      const char *device_model, cublasLtMatmulDesc_t op,
                                      cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                      cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                      double alpha, double beta, cublasLtMatmulAlgo_t *out,
                                      size_t *workspace);
#endif

#ifdef __cplusplus
}
#endif

#endif
