/* gt_lib.h: internals of libgemmtune and the LD_PRELOAD shim (module prefix
 * gt_lt_). Nothing here is exported from the shared libraries: every object
 * of lib/ is compiled with hidden visibility and only the gt_db_* functions of
 * gemmtune.h are marked for export.
 *
 *   gemmtune_kernel.c  generated kernels from the gen/ library (host only)
 *   kernel_cuda.c      (CUDA builds) NVRTC compile, load and launch of them
 *   ltmap.c   pure host code, no CUDA headers: the cuBLASLt descriptor tuple
 *             -> gemmtune problem mapping, the public gt_gemm_desc -> problem
 *             mapping, the cuda config decoder, the record-file line writer
 *   ltcuda.c  (CUDA builds) reading the tuple out of real cuBLASLt
 *             descriptors and re-creating + checking a tuned algo, all
 *             through a table of function pointers (gt_lt_api) so that the
 *             preload shim can use the application's own libcublasLt
 *
 * The enum values below mirror cudaDataType_t, cublasComputeType_t,
 * cublasOperation_t and cublasLtEpilogue_t; ltcuda.c checks each one against
 * the CUDA headers with _Static_assert, so a CUDA build fails to compile if
 * they ever drift. */
#ifndef GT_LIB_H
#define GT_LIB_H

#include <stddef.h>
#include <stdint.h>

#include "gt_problem.h"
#include "lt_cfg.h"

#if defined(__GNUC__)
#define GT_HIDDEN __attribute__((visibility("hidden")))
#else
#define GT_HIDDEN
#endif

/* cudaDataType_t */
enum {
    GT_LT_R_32F = 0,
    GT_LT_R_64F = 1,
    GT_LT_R_16F = 2,
    GT_LT_R_8I = 3,
    GT_LT_R_32I = 10,
    GT_LT_R_16BF = 14,
    GT_LT_R_8F_E4M3 = 28,
    GT_LT_R_8F_E5M2 = 29,
};
/* cublasComputeType_t */
enum {
    GT_LT_COMPUTE_16F = 64,
    GT_LT_COMPUTE_32F = 68,
    GT_LT_COMPUTE_64F = 70,
    GT_LT_COMPUTE_32I = 72,
    GT_LT_COMPUTE_32F_FAST_TF32 = 77,
};
/* cublasOperation_t, cublasLtOrder_t, cublasLtPointerMode_t */
enum { GT_LT_OP_N = 0, GT_LT_OP_T = 1 };
enum { GT_LT_ORDER_COL = 0 };
enum { GT_LT_POINTER_HOST = 0, GT_LT_POINTER_DEVICE = 1 };
enum { GT_LT_FILL_FULL = 2 };
/* cublasLtEpilogue_t */
enum {
    GT_LT_EPI_DEFAULT = 1,
    GT_LT_EPI_RELU = 2,
    GT_LT_EPI_BIAS = 4,
    GT_LT_EPI_RELU_BIAS = 6,
    GT_LT_EPI_GELU = 32,
    GT_LT_EPI_GELU_BIAS = 36,
};

/* One cuBLASLt matrix layout, as its attributes read. */
typedef struct gt_lt_layout {
    int32_t type;        /* cudaDataType_t */
    int32_t order;       /* cublasLtOrder_t */
    uint64_t rows, cols;
    int64_t ld;
    int32_t batch;       /* BATCH_COUNT, 1 when unset */
    int32_t pad_;
    int64_t stride;      /* STRIDED_BATCH_OFFSET */
    int64_t plane;       /* PLANE_OFFSET (complex planar only; must be 0) */
} gt_lt_layout;

/* Everything of a cublasLtMatmul call that decides which GEMM it is, except
 * alpha and beta (their values are only known at cublasLtMatmul time). Plain
 * data without holes: memset before filling, compare with memcmp, hash the
 * bytes. It is also the preload's cache key. */
typedef struct gt_lt_desc {
    gt_lt_layout l[4];   /* A, B, C, D */
    int32_t compute;     /* cublasComputeType_t */
    int32_t scale;       /* cudaDataType_t */
    int32_t transa, transb, transc;
    uint32_t epilogue;   /* cublasLtEpilogue_t */
    int32_t bias_type;   /* BIAS_DATA_TYPE, -1 unset (cuBLASLt's default) */
    int32_t pointer_mode;
    int32_t sm_count;    /* SM_COUNT_TARGET, 0 = all */
    int32_t fast_accum;  /* FAST_ACCUM (fp8) */
    int32_t a_scale_mode, b_scale_mode; /* scalar f32 = 0 */
    int32_t ptr_flags;   /* GT_LT_HAS_* */
    int32_t fill;        /* FILL_MODE, cublasFillMode_t: 2 = full */
} gt_lt_desc;

enum {
    GT_LT_HAS_A_SCALE = 1,
    GT_LT_HAS_B_SCALE = 2,
    GT_LT_HAS_D_SCALE = 4,
    GT_LT_HAS_AMAX = 8,
    GT_LT_HAS_AUX = 16,
};

/* Maps a descriptor tuple and the call's alpha/beta to the gemmtune problem
 * exactly as the cuda worker creates descriptors from a problem
 * (worker/cuda/cuda_map.c: gt_cuda_map_problem + gt_cuda_desc_create), i.e.
 * the inverse of that mapping. Returns 0, or -1 with the reason in err for a
 * call gemmtune never tunes (row-major layouts, complex, other epilogues, an
 * SM count target, fast accumulation, block-scaled fp8, ...). */
GT_HIDDEN int gt_lt_to_problem(const gt_lt_desc *d, double alpha, double beta, gt_problem *p,
                               char *err, size_t errlen);

/* The gemmtune type of a cudaDataType_t / cublasComputeType_t value;
 * GT_DT_INVALID when not modelled. */
GT_HIDDEN gt_dtype gt_lt_dtype(int32_t cuda_type);
GT_HIDDEN gt_dtype gt_lt_compute(int32_t compute);

/* One line of a hipBLASLt bench log (HIPBLASLT_LOG_MASK=32 format, the
 * format gemmtune ingests with every field: ld, strides, types, epilogue)
 * for p called `calls` times, with a trailing newline. Returns the length
 * like snprintf. */
GT_HIDDEN int gt_lt_hipblaslt_line(const gt_problem *p, int64_t calls, char *buf, size_t len);

/* A cuda config as stored text (worker/cuda/CONFIG.md), decoded by the
 * worker's own rules (gen/lt_cfg.h: gt_lt_cfg_from_json, gt_lt_cfg_text). */
GT_HIDDEN int gt_lt_cfg_parse(const char *json, gt_lt_cfg *c, char *err, size_t errlen);

/* gemmtune.c internals shared with gemmtune_cuda.c and preload.c. */
struct gt_db;
struct gt_gemm_desc;
/* The problem of a public GEMM description (defaults filled in, checked). */
GT_HIDDEN int gt_db_desc_problem(const struct gt_gemm_desc *d, gt_problem *p, char *err,
                                 size_t errlen);
/* The decoded cuda config tuned for key on model: GT_DB_OK, GT_DB_NOT_TUNED,
 * or GT_DB_REJECTED when the stored config does not decode. */
GT_HIDDEN int gt_db_cuda_cfg(const struct gt_db *db, const char *key, const char *model,
                             gt_lt_cfg *cfg);

/* The cuda entry tuned for key on model, for gemmtune_kernel.c: GT_DB_NOT_TUNED;
 * GT_DB_OK (a library configuration) with *res; GT_DB_GENERATED with *res
 * and *spec, the problem's JSON (owned by db). */
struct gt_db_result;
GT_HIDDEN int gt_db_gen_entry(const struct gt_db *db, const char *key, const char *model,
                              const char **spec, struct gt_db_result *res);

/* The exported-kernel description behind a gt_db_kernel (its tensor maps). */
struct gt_gen_kernel;
struct gt_db_kernel;
GT_HIDDEN const struct gt_gen_kernel *gt_db_kernel_gen(const struct gt_db_kernel *k);

#endif
