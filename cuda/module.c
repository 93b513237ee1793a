/* module.c: loading a compiled image and launching its kernels through the
 * driver table (gt_cu.h), for every kernel gemmtune runs: the worker's
 * helper and generated kernels, and libgemmtune's generated kernels in an
 * application. */
#include <stdio.h>
#include <string.h>

#include "gt_cu.h"

int gt_cu_module_load(const gt_cu_drv *d, const void *image, int cubin, int n,
                      const char *const *names, const size_t *dyn, CUmodule *mod, CUfunction *fns,
                      char *err, size_t errlen)
{
    CUmodule m = NULL;
    CUresult r = d->module_load_data(&m, image);
    *mod = NULL;
    if (r != CUDA_SUCCESS) {
        gt_cu_drv_err(d, r, cubin ? "cuModuleLoadData(cubin)" : "cuModuleLoadData(ptx)", err, errlen);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if ((r = d->module_get_function(&fns[i], m, names[i])) != CUDA_SUCCESS) {
            gt_cu_drv_err(d, r, "cuModuleGetFunction", err, errlen);
            goto fail;
        }
        if (dyn && dyn[i] > 0 &&
            (r = d->func_set_attribute(fns[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       (int)dyn[i])) != CUDA_SUCCESS) {
            gt_cu_drv_err(d, r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", err, errlen);
            goto fail;
        }
    }
    *mod = m;
    return 0;
fail:
    (void)d->module_unload(m); /* undoing a failed load: nothing more to report */
    memset(fns, 0, (size_t)n * sizeof *fns);
    return -1;
}

int gt_cu_launch(const gt_cu_drv *d, CUfunction f, const unsigned grid[3], const unsigned block[3],
                 unsigned smem, CUstream s, void **params, int chained, const char *what, char *err,
                 size_t errlen)
{
    CUresult r;
    if (chained) {
        if (!d->launch_kernel_ex) {
            snprintf(err, errlen, "cuda: %s: a chained launch needs the driver's cuLaunchKernelEx", what);
            return -1;
        }
        CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
        at.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig lc = {.gridDimX = grid[0], .gridDimY = grid[1], .gridDimZ = grid[2],
                             .blockDimX = block[0], .blockDimY = block[1], .blockDimZ = block[2],
                             .sharedMemBytes = smem, .hStream = s, .attrs = &at, .numAttrs = 1};
        r = d->launch_kernel_ex(&lc, f, params, NULL);
    } else {
        r = d->launch_kernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem, s,
                             params, NULL);
    }
    if (r != CUDA_SUCCESS) {
        gt_cu_drv_err(d, r, what, err, errlen);
        return -1;
    }
    return 0;
}

int gt_cu_tmap_encode(const gt_cu_drv *d, const gt_mma_tmap *t, const void *base, CUtensorMap *out,
                      char *err, size_t errlen)
{
    char what[64];
    snprintf(what, sizeof what, "cuTensorMapEncodeTiled(%s)", t->operand);
    if (!d->tensor_map_encode_tiled) {
        snprintf(err, errlen, "cuda: %s: the driver has no cuTensorMapEncodeTiled (CUDA 12 or newer)",
                 what);
        return -1;
    }
    const cuuint64_t dims[3] = {t->dims[0], t->dims[1], t->dims[2]};
    const cuuint64_t str[2] = {t->strides[0], t->strides[1]};
    const cuuint32_t box[3] = {t->box[0], t->box[1], t->box[2]}, es[3] = {1, 1, 1};
    CUresult r = d->tensor_map_encode_tiled(
        out,
        t->dtype == GT_MMA_TMAP_U8    ? CU_TENSOR_MAP_DATA_TYPE_UINT8
        : t->dtype == GT_MMA_TMAP_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                      : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        3, (void *)base,
        dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        gt_cu_drv_err(d, r, what, err, errlen);
        return -1;
    }
    return 0;
}
