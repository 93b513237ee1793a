/* plan_nocuda.c: libgemmtune's plans in builds without CUDA. The functions
 * exist in every build, so a program (or the Python package) linked against
 * either finds them and learns why nothing can run. */
#include "gemmtune.h"

#include <stdio.h>

int gt_db_plan_create(gt_db *db, const gt_gemm_desc *d, const char *device_model,
                      gt_db_plan **out, char *err, size_t errlen)
{
    (void)db;
    (void)d;
    (void)device_model;
    if (out)
        *out = NULL;
    snprintf(err, errlen, "built without CUDA");
    return GT_DB_EINVAL;
}

void gt_db_plan_workspace(const gt_db_plan *p, size_t *bytes, int *zero_once)
{
    (void)p;
    if (bytes)
        *bytes = 0;
    if (zero_once)
        *zero_once = 0;
}

int gt_db_plan_run(gt_db_plan *p, void *stream, const void *a, const void *b, const void *c,
                   const void *bias, void *d, const void *scale_a, const void *scale_b,
                   const void *scale_d, void *workspace, int flags, char *err, size_t errlen)
{
    (void)p, (void)stream, (void)a, (void)b, (void)c, (void)bias, (void)d;
    (void)scale_a, (void)scale_b, (void)scale_d, (void)workspace, (void)flags;
    snprintf(err, errlen, "built without CUDA");
    return GT_DB_EINVAL;
}

void gt_db_plan_free(gt_db_plan *p)
{
    (void)p; /* never made by this build */
}

int gt_db_cuda_bind_device(int ordinal, char *err, size_t errlen)
{
    (void)ordinal;
    snprintf(err, errlen, "built without CUDA");
    return GT_DB_EINVAL;
}
