/* gemmtune_cuda.c: libgemmtune's cuBLASLt API (CUDA builds): a tuned cuda
 * config as a checked cublasLtMatmulAlgo_t, made from descriptors the way
 * the worker made them (cuda/: gt_cu_map_problem, gt_cu_desc_create,
 * gt_cu_lt_algo_make). Linked against libcublasLt; the preload shim does not
 * contain this file (it reaches the application's cuBLASLt through dlsym
 * instead). */
#include <cublasLt.h>

#include "gemmtune.h"
#include "gt_cu.h"
#include "gt_lib.h"

#include <stdio.h>
#include <string.h>

#define KEY_MAX 512

/* Placeholder device pointers for descriptors used only by AlgoCheck, which
 * looks at their alignment (what the cuda worker's enumeration does). */
#define PLACEHOLDER ((const void *)(uintptr_t)4096)

/* Looks key up and re-creates + checks its algo against the descriptors,
 * exactly as the worker built the candidate (cuda/: gt_cu_lt_algo_make). */
static int make(const gt_db *db, cublasLtHandle_t h, const char *model, const char *key,
                const gt_cu_desc *d, cublasLtMatmulAlgo_t *out, size_t *workspace)
{
    gt_cu_lt_cfg cfg;
    int rc = gt_db_cuda_cfg(db, key, model, &cfg);
    if (rc != GT_DB_OK)
        return rc;
    gt_cu_lt_tuple t;
    if (gt_cu_lt_describe(&gt_cu_lt_linked, d, &t) != 0)
        return GT_DB_EINVAL;
    gt_cu_lt_types types = gt_cu_lt_tuple_types(&t);
    gt_cu_lt_algo al;
    char err[200];
    if (gt_cu_lt_algo_make(&gt_cu_lt_linked, h, &types, &cfg, d, &al, err, sizeof err) != 0)
        return GT_DB_REJECTED;
    *out = al.algo;
    if (workspace)
        *workspace = al.workspace;
    return GT_DB_OK;
}

int gt_db_cublaslt_algo(const gt_db *db, cublasLtHandle_t handle, const gt_gemm_desc *gd,
                        const char *device_model, cublasLtMatmulAlgo_t *out, size_t *workspace)
{
    char key[KEY_MAX], err[200];
    gt_problem p;
    if (!db || !handle || !gd || !device_model || !out)
        return GT_DB_EINVAL;
    if (gt_db_desc_problem(gd, &p, err, sizeof err) != 0)
        return GT_DB_EINVAL;
    int n = gt_problem_key(&p, key, sizeof key);
    if (n < 0 || (size_t)n >= sizeof key)
        return GT_DB_EINVAL;
    gt_cu_lt_cfg cfg;
    int rc = gt_db_cuda_cfg(db, key, device_model, &cfg);
    if (rc != GT_DB_OK)
        return rc;
    /* The descriptors the cuda worker created for p, with placeholder
     * pointers; the device rules of the mapping were the tuning worker's. */
    gt_cu_map m;
    gt_cu_desc d;
    gt_cu_ptrs ptrs = {PLACEHOLDER, PLACEHOLDER, PLACEHOLDER, PLACEHOLDER};
    if (gt_cu_map_problem(&p, 0, &m, err, sizeof err) != 0 ||
        gt_cu_desc_create(&p, &m, &ptrs, &d, err, sizeof err) != 0)
        return GT_DB_EINVAL;
    rc = make(db, handle, device_model, key, &d, out, workspace);
    gt_cu_desc_destroy(&d);
    return rc;
}

int gt_db_cublaslt_algo_for(const gt_db *db, cublasLtHandle_t handle, const char *device_model,
                            cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                            cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                            cublasLtMatrixLayout_t d, double alpha, double beta,
                            cublasLtMatmulAlgo_t *out, size_t *workspace)
{
    char key[KEY_MAX], err[200];
    gt_cu_lt_tuple t;
    gt_problem p;
    const gt_cu_desc descs = {op, a, b, c, d};
    if (!db || !handle || !device_model || !out)
        return GT_DB_EINVAL;
    if (gt_cu_lt_describe(&gt_cu_lt_linked, &descs, &t) != 0 ||
        gt_cu_lt_to_problem(&t, alpha, beta, &p, err, sizeof err) != 0)
        return GT_DB_EINVAL;
    int n = gt_problem_key(&p, key, sizeof key);
    if (n < 0 || (size_t)n >= sizeof key)
        return GT_DB_EINVAL;
    return make(db, handle, device_model, key, &descs, out, workspace);
}
