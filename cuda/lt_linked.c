/* lt_linked.c: the gt_cu_lt_api table of the cuBLASLt this binary links
 * (the worker, libgemmtune's public cuBLASLt functions, the tests). Apart
 * from lt_api.c so that the preload shim, which links no CUDA library and
 * fills the table from the application's libcublasLt, never references it. */
#include "gt_cu.h"

const gt_cu_lt_api gt_cu_lt_linked = {
    .layout_get = cublasLtMatrixLayoutGetAttribute,
    .desc_get = cublasLtMatmulDescGetAttribute,
    .pref_get = cublasLtMatmulPreferenceGetAttribute,
    .algo_init = cublasLtMatmulAlgoInit,
    .cfg_set = cublasLtMatmulAlgoConfigSetAttribute,
    .cfg_get = cublasLtMatmulAlgoConfigGetAttribute,
    .algo_check = cublasLtMatmulAlgoCheck,
    .cap_get = cublasLtMatmulAlgoCapGetAttribute,
    .status_name = cublasLtGetStatusName,
};

const char *gt_cu_status_name(cublasStatus_t s)
{
    return gt_cu_lt_status_name(&gt_cu_lt_linked, s);
}
