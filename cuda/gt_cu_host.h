/* gt_cu_host.h: the half of cuda/ (module prefix gt_cu_, gt_cu.h says what
 * the folder owns) that needs no CUDA header, so that every build compiles
 * it: libgemmtune decodes cuda results and maps cuBLASLt descriptor tuples
 * without CUDA too, and the GPU-less CI tests all of it.
 *
 *   cu_types.c  cuBLASLt's type, compute and epilogue codes <-> the problem
 *               model (one table each, both directions), the element codes
 *               and decoder the NVRTC kernels share, host scalars
 *   lt_cfg.c    the cuBLASLt family's configuration as JSON
 *   lt_tuple.c  a cuBLASLt descriptor tuple -> the gemmtune problem (the
 *               inverse of gt_cu_map_problem + gt_cu_desc_create)
 *
 * The enum values below mirror cudaDataType_t, cublasComputeType_t,
 * cublasOperation_t, cublasLtOrder_t, cublasLtPointerMode_t,
 * cublasFillMode_t and cublasLtEpilogue_t; lt_api.c checks each one against
 * the CUDA headers with _Static_assert, so a CUDA build fails to compile if
 * they ever drift. */
#ifndef GT_CU_HOST_H
#define GT_CU_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "gt_caps.h"
#include "gt_problem.h"

struct cJSON;

/* ---- cuBLASLt's codes --------------------------------------------------------- */

/* cudaDataType_t */
enum {
    GT_CU_R_32F = 0,
    GT_CU_R_64F = 1,
    GT_CU_R_16F = 2,
    GT_CU_R_8I = 3,
    GT_CU_R_32I = 10,
    GT_CU_R_16BF = 14,
    GT_CU_R_8F_E4M3 = 28,
    GT_CU_R_8F_E5M2 = 29,
};
/* cublasComputeType_t */
enum {
    GT_CU_COMPUTE_16F = 64,
    GT_CU_COMPUTE_32F = 68,
    GT_CU_COMPUTE_64F = 70,
    GT_CU_COMPUTE_32I = 72,
    GT_CU_COMPUTE_32F_FAST_TF32 = 77,
};
/* cublasOperation_t, cublasLtOrder_t, cublasLtPointerMode_t, cublasFillMode_t */
enum { GT_CU_OP_N = 0, GT_CU_OP_T = 1 };
enum { GT_CU_ORDER_COL = 0 };
enum { GT_CU_POINTER_HOST = 0, GT_CU_POINTER_DEVICE = 1 };
enum { GT_CU_FILL_FULL = 2 };
/* cublasLtEpilogue_t */
enum {
    GT_CU_EPI_DEFAULT = 1,
    GT_CU_EPI_RELU = 2,
    GT_CU_EPI_BIAS = 4,
    GT_CU_EPI_RELU_BIAS = 6,
    GT_CU_EPI_GELU = 32,
    GT_CU_EPI_GELU_BIAS = 36,
};

/* The cudaDataType_t a problem type is stored in (tf32: f32 storage); -1
 * when it has none. */
int32_t gt_cu_type_code(gt_dtype t);
/* The problem type of a cudaDataType_t (storage: never tf32);
 * GT_DT_INVALID when not modelled. */
gt_dtype gt_cu_type_of(int32_t code);
/* "CUDA_R_16BF"; "CUDA_R_?" when not modelled. */
const char *gt_cu_type_name(int32_t code);
/* The cublasComputeType_t of a problem's compute type (as gt_caps_cuda_map
 * chose it); -1 when none. */
int32_t gt_cu_compute_code(gt_dtype compute);
/* The compute type of a cublasComputeType_t; GT_DT_INVALID for the pedantic
 * and fast-16F/16BF variants, which are not tuned. */
gt_dtype gt_cu_compute_of(int32_t code);
/* "CUBLAS_COMPUTE_32F"; "CUBLAS_COMPUTE_?" when not modelled. */
const char *gt_cu_compute_name(int32_t code);
/* The cublasLtEpilogue_t of a bias flag and an activation. */
uint32_t gt_cu_epilogue_code(int bias, gt_caps_act act);
/* The bias flag and activation of a cublasLtEpilogue_t; -1 when the
 * epilogue is not modelled. */
int gt_cu_epilogue_of(uint32_t code, int *bias, gt_caps_act *act);

/* ---- elements and scalars -------------------------------------------------------- */

/* Element type codes shared by the host codecs and the worker's NVRTC
 * kernels (the kernels' source uses the same numbers). */
typedef enum gt_cu_kt {
    GT_CU_KT_F32 = 0,
    GT_CU_KT_F64 = 1,
    GT_CU_KT_F16 = 2,
    GT_CU_KT_BF16 = 3,
    GT_CU_KT_E4M3 = 4,
    GT_CU_KT_E5M2 = 5,
    GT_CU_KT_I8 = 6,
    GT_CU_KT_I32 = 7,
} gt_cu_kt;

/* Storage code of a problem type (tf32 is stored as f32); -1 when invalid. */
int gt_cu_kt_of(gt_dtype t);
/* Bytes of one element of type kt; 0 when kt is not a code. */
size_t gt_cu_kt_size(int kt);
/* Decodes element i of a buffer of type kt to double (host). */
double gt_cu_decode(int kt, const void *buf, size_t i);
/* float -> IEEE half bits, round to nearest even (for f16 alpha/beta). */
uint16_t gt_cu_f32_to_f16(float f);

/* Writes v as a host scalar of the scale type (a cudaDataType_t code) into
 * out, zero-padded; integer scale types need integral values. 0, or -1 with
 * "cuda: <name>=...: ..." in err. */
int gt_cu_scalar_put(int32_t scale_type, double v, unsigned char out[8], const char *name, char *err,
                     size_t errlen);
/* The value of a host alpha/beta scalar of the scale type; 0 for NULL or a
 * type that is not modelled. */
double gt_cu_scalar_get(int32_t scale_type, const void *p);

/* ---- the cuBLASLt family's configuration (lt_cfg.c) --------------------------------
 * The nine cuBLASLt algo config attributes as a flat JSON object of integers
 * (worker/cuda/CONFIG.md). The worker and libgemmtune decode the same stored
 * text with the same rules; gt_cu.h writes and reads them on an algo. */
typedef struct gt_cu_lt_cfg {
    int32_t algo_id;
    uint32_t tile, stages;
    int32_t splitk;
    uint32_t reduction, swizzle, custom;
    uint16_t cluster, inner_shape;
} gt_cu_lt_cfg;

/* Strict decode: algo_id required, the other keys optional (splitk 1, the
 * rest 0), integers in range, no unknown or repeated key; "family":"cublaslt"
 * (what an absent family means, gen_gemv.h) is accepted and ignored. 0, or
 * -1 with the reason in err. */
int gt_cu_lt_cfg_from_json(const struct cJSON *j, gt_cu_lt_cfg *c, char *err, size_t errlen);
/* The same from stored text (NULL: refused). */
int gt_cu_lt_cfg_parse(const char *json, gt_cu_lt_cfg *c, char *err, size_t errlen);
/* All nine keys; NULL out of memory. */
struct cJSON *gt_cu_lt_cfg_to_json(const gt_cu_lt_cfg *c);
/* Canonical text (keys sorted, compact: equal to gt_cfg_canonical of the
 * JSON form). Returns the length like snprintf. */
int gt_cu_lt_cfg_text(const gt_cu_lt_cfg *c, char *buf, size_t len);
/* 1 when x and y are the same config (all nine attributes). */
int gt_cu_lt_cfg_equal(const gt_cu_lt_cfg *x, const gt_cu_lt_cfg *y);

/* ---- descriptor tuples (lt_tuple.c) ------------------------------------------------ */

/* One cuBLASLt matrix layout, as its attributes read. */
typedef struct gt_cu_lt_layout {
    int32_t type;        /* cudaDataType_t */
    int32_t order;       /* cublasLtOrder_t */
    uint64_t rows, cols;
    int64_t ld;
    int32_t batch;       /* BATCH_COUNT, 1 when unset */
    int32_t pad_;
    int64_t stride;      /* STRIDED_BATCH_OFFSET */
    int64_t plane;       /* PLANE_OFFSET (complex planar only; must be 0) */
} gt_cu_lt_layout;

/* Everything of a cublasLtMatmul call that decides which GEMM it is, except
 * alpha and beta (their values are only known at cublasLtMatmul time). Plain
 * data without holes: memset before filling, compare with memcmp, hash the
 * bytes. It is also the preload's cache key. */
typedef struct gt_cu_lt_tuple {
    gt_cu_lt_layout l[4]; /* A, B, C, D */
    int32_t compute;     /* cublasComputeType_t */
    int32_t scale;       /* cudaDataType_t */
    int32_t transa, transb, transc;
    uint32_t epilogue;   /* cublasLtEpilogue_t */
    int32_t bias_type;   /* BIAS_DATA_TYPE, -1 unset (cuBLASLt's default) */
    int32_t pointer_mode;
    int32_t sm_count;    /* SM_COUNT_TARGET, 0 = all */
    int32_t fast_accum;  /* FAST_ACCUM (fp8) */
    int32_t a_scale_mode, b_scale_mode; /* scalar f32 = 0 */
    int32_t ptr_flags;   /* GT_CU_HAS_* */
    int32_t fill;        /* FILL_MODE, cublasFillMode_t: 2 = full */
} gt_cu_lt_tuple;

enum {
    GT_CU_HAS_A_SCALE = 1,
    GT_CU_HAS_B_SCALE = 2,
    GT_CU_HAS_D_SCALE = 4,
    GT_CU_HAS_AMAX = 8,
    GT_CU_HAS_AUX = 16,
};

/* Maps a descriptor tuple and the call's alpha/beta to the gemmtune problem
 * exactly as gt_cu_map_problem + gt_cu_desc_create create descriptors from
 * a problem, i.e. the inverse of that mapping. Returns 0, or -1 with the
 * reason in err for a call gemmtune never tunes (row-major layouts, complex,
 * other epilogues, an SM count target, fast accumulation, block-scaled
 * fp8, ...). */
int gt_cu_lt_to_problem(const gt_cu_lt_tuple *d, double alpha, double beta, gt_problem *p, char *err,
                        size_t errlen);

#endif
