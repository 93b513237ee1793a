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
                               (another cuBLASLt major version, workspace, alignment) */
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
    double baseline_us;            /* the untuned default, timed next to it */
    double uplift;                 /* baseline_us / time_us */
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

/* The tuned configuration of d on device_model for backend ("cuda", "cpu").
 * GT_DB_OK, GT_DB_NOT_TUNED, or GT_DB_EINVAL. */
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

#if defined(GEMMTUNE_CUBLASLT) && !defined(CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA)
#include <cublasLt.h>
#endif
#if defined(CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA) /* <cublasLt.h> was included */
/* The tuned cuda config of d on device_model as an algo for cublasLtMatmul:
 * cublasLtMatmulAlgoInit(algo_id) + the config attributes +
 * cublasLtMatmulAlgoCheck against descriptors built from d exactly as the
 * tuning built them (placeholder device pointers for bias/scales: only their
 * alignment is looked at). *workspace: the bytes it needs. GT_DB_OK,
 * GT_DB_NOT_TUNED, GT_DB_REJECTED or GT_DB_EINVAL. Defined only by a
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
