/* kernel_cuda.c: libgemmtune's generated kernels, CUDA side (CUDA builds):
 * a gt_db_kernel compiled for the current device, its module loaded and
 * launched (see gemmtune.h), with the worker's own code for each step
 * (cuda/: gt_cu_nvrtc_compile picks the target as the worker does, a cubin
 * for an arch this NVRTC knows, else PTX for the newest arch below it;
 * gt_cu_module_load, gt_cu_launch, gt_cu_tmap_encode).
 *
 * NVRTC is linked like cuBLASLt (libgemmtune's other CUDA library). The
 * driver is not: cuda/drv.c opens it at the first load, so the library
 * still loads on a machine without a driver. */
/* This file exists in CUDA builds only: declare their part of the API. */
#define GEMMTUNE_CUBLASLT 1
#include "gemmtune.h"
#include "gen_export.h"
#include "gt_lib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_cu.h"

void gt_db_kernel_cuda_unload(gt_db_module *m)
{
    char err[256];
    if (!m)
        return;
    const gt_cu_drv *d = m->module ? gt_cu_drv_get(err, sizeof err) : NULL;
    if (d)
        (void)d->module_unload((CUmodule)m->module); /* teardown: a failure leaves nothing to undo */
    memset(m, 0, sizeof *m);
}

int gt_db_kernel_cuda_load(const gt_db_kernel *k, gt_db_module *m, char *err, size_t errlen)
{
    const gt_cu_drv *d;
    CUmodule mod = NULL;
    CUfunction fns[2] = {NULL, NULL};
    gt_cu_image img;
    int sm = 0;
    if (!m || !k || !k->source || k->nlaunch < 1 || k->nlaunch > 2) {
        snprintf(err, errlen, "invalid argument");
        return -1;
    }
    memset(m, 0, sizeof *m);
    if (!(d = gt_cu_drv_get(err, errlen)) || gt_cu_current_sm(&sm, err, errlen) != 0)
        return -1;
    if (sm < k->min_sm) {
        snprintf(err, errlen, "device sm_%d: the %s kernel needs sm_%d or newer", sm, k->family,
                 k->min_sm);
        return -1;
    }
    if (k->arch_specific && sm != k->min_sm) {
        snprintf(err, errlen, "device sm_%d: the %s kernel runs on sm_%d only (sm_%da instructions)", sm,
                 k->family, k->min_sm, k->min_sm);
        return -1;
    }
    /* an arch-specific kernel: the cubin of sm_NNa or nothing */
    if (gt_cu_nvrtc_compile(k->source, k->program_name, k->arch_specific ? sm | GT_CU_SM_A : sm,
                            k->options, k->noptions, NULL, &img, err, errlen) != 0)
        return -1;
    snprintf(m->target, sizeof m->target, "%s", img.target);
    const char *names[2];
    size_t dyn[2];
    for (int i = 0; i < k->nlaunch; i++) {
        names[i] = k->launch[i].kernel;
        dyn[i] = k->launch[i].shared_bytes;
    }
    int rc = gt_cu_module_load(d, img.data, img.cubin, k->nlaunch, names, dyn, &mod, fns, err, errlen);
    free(img.data);
    if (rc != 0)
        return -1;
    for (int i = 0; i < k->nlaunch; i++)
        m->function[i] = (struct CUfunc_st *)fns[i];
    m->nfunction = k->nlaunch;
    m->module = (struct CUmod_st *)mod;
    return 0;
}

/* The compute capability a module was compiled for ("sm_90", "sm_90a",
 * "compute_120"), 0 when unknown. */
static int target_sm(const char *t)
{
    const char *u = strchr(t, '_');
    return u ? atoi(u + 1) : 0;
}

int gt_db_kernel_cuda_launch(const gt_db_kernel *k, const gt_db_module *m,
                             struct CUstream_st *stream, const void *a, const void *b,
                             const void *c, const void *bias, void *d, void *workspace, char *err,
                             size_t errlen)
{
    return gt_db_kernel_cuda_launch_ex(k, m, stream, a, b, c, bias, d, workspace, 0, err, errlen);
}

int gt_db_kernel_cuda_launch_ex(const gt_db_kernel *k, const gt_db_module *m,
                                struct CUstream_st *stream, const void *a, const void *b,
                                const void *c, const void *bias, void *d, void *workspace,
                                unsigned flags, char *err, size_t errlen)
{
    return gt_db_kernel_cuda_launch_scaled(k, m, stream, a, b, c, bias, d, NULL, NULL, workspace,
                                           flags, err, errlen);
}

int gt_db_kernel_cuda_launch_scaled(const gt_db_kernel *k, const gt_db_module *m,
                                    struct CUstream_st *stream, const void *a, const void *b,
                                    const void *c, const void *bias, void *d, const void *scale_a,
                                    const void *scale_b, void *workspace, unsigned flags, char *err,
                                    size_t errlen)
{
    /* 8 bytes per member of the struct; 8-aligned for the driver's copy */
    unsigned long long args[32];
    if (k && k->scales && (!scale_a || !scale_b)) {
        snprintf(err, errlen, "the %s kernel is fp8: it needs the device scales of A and B "
                 "(gt_db_kernel_cuda_launch_scaled)", k->family);
        return -1;
    }
    if (!k || !m || !m->module || m->nfunction != k->nlaunch || k->args_bytes > sizeof args ||
        gt_db_kernel_args_scaled(k, a, b, c, bias, d, scale_a, scale_b, workspace, args,
                                 sizeof args) != 0) {
        snprintf(err, errlen, "invalid argument (a kernel and its loaded module)");
        return -1;
    }
    if (k->workspace_bytes && !workspace) {
        snprintf(err, errlen, "the %s kernel needs a workspace of %zu bytes", k->family,
                 k->workspace_bytes);
        return -1;
    }
    const gt_cu_drv *drv = gt_cu_drv_get(err, errlen);
    if (!drv)
        return -1;
    /* wgmma: the tensor maps of this call's A and B (and D, where the
     * kernel writes it with TMA stores), after the struct of launch 1 */
    const gt_gen_kernel *g = gt_db_kernel_gen(k);
    CUtensorMap maps[GT_MMA_MAX_TMAPS];
    for (int i = 0; g && i < g->ntmaps && i < GT_MMA_MAX_TMAPS; i++)
        if (gt_cu_tmap_encode(drv, &g->tmaps[i], gt_mma_tmap_base(&g->tmaps[i], a, b, d), &maps[i],
                              err, errlen) != 0)
            return -1;
    for (int i = 0; i < k->nlaunch; i++) {
        const gt_db_launch *l = &k->launch[i];
        long long extra = l->extra_value;
        void *params[2 + GT_MMA_MAX_TMAPS] = {args, &extra};
        for (int t = 0; i == 0 && g && t < g->ntmaps && t < GT_MMA_MAX_TMAPS; t++)
            params[1 + t] = &maps[t];
        /* chained only where it can be: otherwise the flag launches plainly */
        int chained = i == 0 && (flags & GT_DB_LAUNCH_CHAINED) && k->chain_min_sm &&
                      drv->launch_kernel_ex && target_sm(m->target) >= k->chain_min_sm;
        if (gt_cu_launch(drv, (CUfunction)m->function[i], l->grid, l->block, (unsigned)l->shared_bytes,
                         (CUstream)stream, params, chained, l->kernel, err, errlen) != 0)
            return -1;
    }
    return 0;
}
