/* gt_ltcuda.h: the cuBLASLt half of libgemmtune's internals (CUDA builds
 * only). Every cuBLASLt call goes through a gt_lt_api table: libgemmtune
 * fills it with the functions it links against, the preload shim with the
 * ones of the application's own libcublasLt (dlsym), so the shim never
 * drags a second cuBLASLt into the process. Host-only calls: none of these
 * need a GPU except where cuBLASLt itself asks the device (AlgoInit/Check). */
#ifndef GT_LTCUDA_H
#define GT_LTCUDA_H

#include <cublasLt.h>

#include "gt_lib.h"

typedef struct gt_lt_api {
    cublasStatus_t (*layout_get)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, void *,
                                 size_t, size_t *);
    cublasStatus_t (*desc_get)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, void *,
                               size_t, size_t *);
    cublasStatus_t (*pref_get)(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                               void *, size_t, size_t *);
    cublasStatus_t (*algo_init)(cublasLtHandle_t, cublasComputeType_t, cudaDataType_t,
                                cudaDataType_t, cudaDataType_t, cudaDataType_t, cudaDataType_t,
                                int, cublasLtMatmulAlgo_t *);
    cublasStatus_t (*cfg_set)(cublasLtMatmulAlgo_t *, cublasLtMatmulAlgoConfigAttributes_t,
                              const void *, size_t);
    cublasStatus_t (*algo_check)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                 cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                 cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *,
                                 cublasLtMatmulHeuristicResult_t *);
    cublasStatus_t (*cap_get)(const cublasLtMatmulAlgo_t *, cublasLtMatmulAlgoCapAttributes_t,
                              void *, size_t, size_t *);
} gt_lt_api;

/* Reads the tuple of a matmul (descriptor + the four layouts). 0, or -1
 * when a core attribute cannot be read. Attributes newer cuBLASLt versions
 * added (fast accumulation, scale modes, ...) read as their default when
 * the library does not know them. */
GT_HIDDEN int gt_lt_describe(const gt_lt_api *api, cublasLtMatmulDesc_t op,
                             cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                             cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, gt_lt_desc *out);

/* What a re-created algo needs, for the per-call preference checks. */
typedef struct gt_lt_algo {
    cublasLtMatmulAlgo_t algo;
    size_t workspace;          /* from cublasLtMatmulAlgoCheck */
    float waves;
    uint32_t align[4];         /* CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_{A,B,C,D}_BYTES, 0 unknown */
    int32_t splitk;
    uint32_t reduction;
} gt_lt_algo;

/* Re-creates a tuned config for the matmul described by t (the types of the
 * AlgoInit call) and checks it against the caller's descriptors:
 * cublasLtMatmulAlgoInit(algo_id) + the eight config attributes +
 * cublasLtMatmulAlgoCheck, exactly as the cuda worker builds a candidate.
 * 0, or -1 with the cuBLASLt status in err (the caller falls back). */
GT_HIDDEN int gt_lt_algo_make(const gt_lt_api *api, cublasLtHandle_t h, const gt_lt_desc *t,
                              const gt_lt_cfg *c, cublasLtMatmulDesc_t op,
                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                              cublasLtMatrixLayout_t cc, cublasLtMatrixLayout_t d, gt_lt_algo *out,
                              char *err, size_t errlen);

/* 1 when the algo fits a matmul preference: its workspace within
 * MAX_WORKSPACE_BYTES, its alignment needs within MIN_ALIGNMENT_*_BYTES and
 * its split-K reduction inside REDUCTION_SCHEME_MASK; else 0 with the reason
 * in why. A NULL preference means cuBLASLt's defaults (no workspace). */
GT_HIDDEN int gt_lt_algo_fits(const gt_lt_api *api, const gt_lt_algo *a,
                              cublasLtMatmulPreference_t pref, const char **why);

/* The value of a host alpha/beta scalar of the given scale type. */
GT_HIDDEN double gt_lt_scalar(int32_t scale_type, const void *p);

#endif
