/* kernel_cuda.c: libgemmtune's generated kernels, CUDA side (CUDA builds):
 * NVRTC compile of a gt_db_kernel for the current device, module load and
 * launch (see gemmtune.h).
 *
 * NVRTC is linked like cuBLASLt (libgemmtune's other CUDA library). The
 * driver is not: libcuda.so.1 comes with the GPU driver, not the toolkit, so
 * a library that linked it could not even be loaded on a machine without a
 * driver (a build host, a CPU-only test); it is opened at the first load,
 * the way cuBLASLt and the CUDA runtime reach it, and its entry points are
 * taken with cuGetProcAddress at CUDA 12.0's ABI, as the worker's gen_run.c
 * takes them with cudaGetDriverEntryPointByVersion. The target is picked
 * like the worker's gen_nvrtc.c: a cubin for an arch this NVRTC knows,
 * else PTX for the newest arch below it (the driver JIT-compiles it). */
/* This file exists in CUDA builds only: declare their part of the API. */
#define GEMMTUNE_CUBLASLT 1
#include "gemmtune.h"
#include "gen_export.h"
#include "gt_lib.h"

#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CUresult(CUDAAPI *pfn_proc)(const char *, void **, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult *);
typedef CUresult(CUDAAPI *pfn_ctxdev)(CUdevice *);
typedef CUresult(CUDAAPI *pfn_devattr)(int *, CUdevice_attribute, CUdevice);
typedef CUresult(CUDAAPI *pfn_load)(CUmodule *, const void *);
typedef CUresult(CUDAAPI *pfn_unload)(CUmodule);
typedef CUresult(CUDAAPI *pfn_getfn)(CUfunction *, CUmodule, const char *);
typedef CUresult(CUDAAPI *pfn_setattr)(CUfunction, CUfunction_attribute, int);
typedef CUresult(CUDAAPI *pfn_launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, unsigned, CUstream, void **, void **);
typedef CUresult(CUDAAPI *pfn_launch_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult(CUDAAPI *pfn_errname)(CUresult, const char **);
typedef CUresult(CUDAAPI *pfn_tmap)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                    const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                                    CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                    CUtensorMapFloatOOBfill);

static struct drv {
    pthread_once_t once;
    char err[256];            /* why the driver is unusable; "" when it is */
    pfn_ctxdev ctx_device;
    pfn_devattr dev_attr;
    pfn_load load;
    pfn_unload unload;
    pfn_getfn getfn;
    pfn_setattr setattr;
    pfn_launch launch;
    pfn_launch_ex launch_ex;  /* cuLaunchKernelEx: chained launches; NULL: they launch plainly */
    pfn_errname errname;
    pfn_tmap tmap;            /* cuTensorMapEncodeTiled: the wgmma kernels' maps */
} g_drv = {.once = PTHREAD_ONCE_INIT};

static void drv_open(void)
{
    /* never closed: function pointers into it may be used until exit */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(g_drv.err, sizeof g_drv.err, "no CUDA driver: %s", dlerror());
        return;
    }
    pfn_proc proc = (pfn_proc)dlsym(h, "cuGetProcAddress_v2");
    if (!proc) {
        snprintf(g_drv.err, sizeof g_drv.err, "CUDA driver without cuGetProcAddress_v2 (older "
                                              "than CUDA 12)");
        return;
    }
    const struct {
        const char *name;
        void **fn;
    } t[] = {{"cuCtxGetDevice", (void **)&g_drv.ctx_device},
             {"cuDeviceGetAttribute", (void **)&g_drv.dev_attr},
             {"cuModuleLoadData", (void **)&g_drv.load},
             {"cuModuleUnload", (void **)&g_drv.unload},
             {"cuModuleGetFunction", (void **)&g_drv.getfn},
             {"cuFuncSetAttribute", (void **)&g_drv.setattr},
             {"cuLaunchKernel", (void **)&g_drv.launch},
             {"cuGetErrorName", (void **)&g_drv.errname},
             {"cuTensorMapEncodeTiled", (void **)&g_drv.tmap}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (proc(t[i].name, t[i].fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS ||
            q != CU_GET_PROC_ADDRESS_SUCCESS || !*t[i].fn) {
            snprintf(g_drv.err, sizeof g_drv.err, "CUDA driver entry point %s not found",
                     t[i].name);
            return;
        }
    }
    /* optional: without it chained launches launch plainly */
    CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (proc("cuLaunchKernelEx", (void **)&g_drv.launch_ex, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &q) !=
            CUDA_SUCCESS || q != CU_GET_PROC_ADDRESS_SUCCESS)
        g_drv.launch_ex = NULL;
}

static int drv_ready(char *err, size_t errlen)
{
    if (pthread_once(&g_drv.once, drv_open) != 0) {
        snprintf(err, errlen, "cannot initialise the CUDA driver table");
        return -1;
    }
    if (g_drv.err[0]) {
        snprintf(err, errlen, "%s", g_drv.err);
        return -1;
    }
    return 0;
}

static int drv_fail(CUresult r, const char *what, char *err, size_t errlen)
{
    const char *n = NULL;
    if (g_drv.errname(r, &n) != CUDA_SUCCESS || !n)
        n = "CUDA_ERROR_?";
    snprintf(err, errlen, "%s: %s (%d)", what, n, (int)r);
    return -1;
}

/* gen_nvrtc.c's pick_target: a cubin for an arch NVRTC knows, else PTX for
 * the newest arch below the device's. */
static int pick_target(int sm, char *target, size_t len, int *cubin)
{
    int archs[64], na = 0, best = 0;
    if (nvrtcGetNumSupportedArchs(&na) != NVRTC_SUCCESS || na <= 0 || na > 64 ||
        nvrtcGetSupportedArchs(archs) != NVRTC_SUCCESS)
        return -1;
    for (int i = 0; i < na; i++)
        if (archs[i] <= sm && archs[i] > best)
            best = archs[i];
    if (!best)
        return -1;
    *cubin = best == sm;
    snprintf(target, len, "%s_%d", *cubin ? "sm" : "compute", best);
    return 0;
}

/* Compiles k for target; the image (malloc'd) in *img. */
static int compile(const gt_db_kernel *k, const char *target, int cubin, char **img, char *err,
                   size_t errlen)
{
    nvrtcProgram prog = NULL;
    char arch[48], *log = NULL;
    const char *opts[16];
    int n = 0, rc = -1;
    *img = NULL;
    if (k->noptions > 15) {
        snprintf(err, errlen, "too many NVRTC options (%d)", k->noptions);
        return -1;
    }
    snprintf(arch, sizeof arch, "--gpu-architecture=%s", target);
    opts[n++] = arch;
    for (int i = 0; i < k->noptions; i++)
        opts[n++] = k->options[i];
    nvrtcResult r = nvrtcCreateProgram(&prog, k->source, k->program_name, 0, NULL, NULL);
    if (r == NVRTC_SUCCESS)
        r = nvrtcCompileProgram(prog, n, opts);
    if (r != NVRTC_SUCCESS) {
        size_t ll = 0;
        if (prog && nvrtcGetProgramLogSize(prog, &ll) == NVRTC_SUCCESS && ll > 1 &&
            (log = malloc(ll)) && nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) {
            free(log);
            log = NULL;
        }
        snprintf(err, errlen, "nvrtc (%s): %s: %.300s", target, nvrtcGetErrorString(r),
                 log ? log : "");
        goto out;
    }
    size_t sz = 0;
    r = cubin ? nvrtcGetCUBINSize(prog, &sz) : nvrtcGetPTXSize(prog, &sz);
    if (r != NVRTC_SUCCESS || !sz || !(*img = malloc(sz)) ||
        (cubin ? nvrtcGetCUBIN(prog, *img) : nvrtcGetPTX(prog, *img)) != NVRTC_SUCCESS) {
        snprintf(err, errlen, "nvrtc: cannot fetch the %s", cubin ? "cubin" : "PTX");
        free(*img);
        *img = NULL;
        goto out;
    }
    rc = 0;
out:
    free(log);
    if (prog)
        (void)nvrtcDestroyProgram(&prog); /* nothing to do about a failure here */
    return rc;
}

void gt_db_kernel_cuda_unload(gt_db_module *m)
{
    if (!m)
        return;
    if (m->module && !g_drv.err[0] && g_drv.unload)
        (void)g_drv.unload((CUmodule)m->module); /* teardown: a failure leaves nothing to undo */
    memset(m, 0, sizeof *m);
}

int gt_db_kernel_cuda_load(const gt_db_kernel *k, gt_db_module *m, char *err, size_t errlen)
{
    CUdevice dev;
    CUresult r;
    CUmodule mod = NULL;
    char *img = NULL;
    int major = 0, minor = 0, cubin = 0;
    if (!m || !k || !k->source || k->nlaunch < 1 || k->nlaunch > 2) {
        snprintf(err, errlen, "invalid argument");
        return -1;
    }
    memset(m, 0, sizeof *m);
    if (drv_ready(err, errlen) != 0)
        return -1;
    if ((r = g_drv.ctx_device(&dev)) != CUDA_SUCCESS)
        return drv_fail(r, "no current CUDA context (cuCtxGetDevice)", err, errlen);
    if ((r = g_drv.dev_attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)) !=
            CUDA_SUCCESS ||
        (r = g_drv.dev_attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)) !=
            CUDA_SUCCESS)
        return drv_fail(r, "cuDeviceGetAttribute(compute capability)", err, errlen);
    int sm = major * 10 + minor;
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
    if (pick_target(sm, m->target, sizeof m->target, &cubin) != 0 || (k->arch_specific && !cubin)) {
        snprintf(err, errlen, "this NVRTC cannot target sm_%d", sm);
        return -1;
    }
    if (k->arch_specific) /* the cubin of the arch-specific target */
        snprintf(m->target, sizeof m->target, "sm_%da", sm);
    if (compile(k, m->target, cubin, &img, err, errlen) != 0)
        goto fail;
    if ((r = g_drv.load(&mod, img)) != CUDA_SUCCESS) {
        drv_fail(r, cubin ? "cuModuleLoadData(cubin)" : "cuModuleLoadData(PTX)", err, errlen);
        goto fail;
    }
    for (int i = 0; i < k->nlaunch; i++) {
        CUfunction fn = NULL;
        if ((r = g_drv.getfn(&fn, mod, k->launch[i].kernel)) != CUDA_SUCCESS) {
            drv_fail(r, "cuModuleGetFunction", err, errlen);
            goto fail;
        }
        /* beyond 48 KiB a function must opt in to its dynamic shared memory */
        if (k->launch[i].shared_bytes > 48 * 1024 &&
            (r = g_drv.setattr(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               (int)k->launch[i].shared_bytes)) != CUDA_SUCCESS) {
            drv_fail(r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", err, errlen);
            goto fail;
        }
        m->function[i] = (struct CUfunc_st *)fn;
    }
    m->nfunction = k->nlaunch;
    m->module = (struct CUmod_st *)mod;
    free(img);
    return 0;
fail:
    if (mod)
        (void)g_drv.unload(mod); /* undoing a failed load: nothing more to report */
    free(img);
    memset(m->function, 0, sizeof m->function);
    return -1;
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
    /* 8 bytes per member of the struct; 8-aligned for the driver's copy */
    unsigned long long args[32];
    if (!k || !m || !m->module || m->nfunction != k->nlaunch || k->args_bytes > sizeof args ||
        gt_db_kernel_args(k, a, b, c, bias, d, workspace, args, sizeof args) != 0) {
        snprintf(err, errlen, "invalid argument (a kernel and its loaded module)");
        return -1;
    }
    if (k->workspace_bytes && !workspace) {
        snprintf(err, errlen, "the %s kernel needs a workspace of %zu bytes", k->family,
                 k->workspace_bytes);
        return -1;
    }
    /* wgmma: the tensor maps of this call's A and B, after the struct of launch 1 */
    const gt_gen_kernel *g = gt_db_kernel_gen(k);
    CUtensorMap maps[GT_MMA_MAX_TMAPS];
    for (int i = 0; g && i < g->ntmaps && i < GT_MMA_MAX_TMAPS; i++) {
        const gt_mma_tmap *t = &g->tmaps[i];
        const cuuint64_t dims[3] = {t->dims[0], t->dims[1], t->dims[2]}, str[2] = {t->strides[0], t->strides[1]};
        const cuuint32_t box[3] = {t->box[0], t->box[1], t->box[2]}, es[3] = {1, 1, 1};
        CUresult r = g_drv.tmap(&maps[i], t->f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                                3, (void *)(i ? b : a), dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (r != CUDA_SUCCESS)
            return drv_fail(r, i ? "cuTensorMapEncodeTiled(B)" : "cuTensorMapEncodeTiled(A)", err, errlen);
    }
    for (int i = 0; i < k->nlaunch; i++) {
        const gt_db_launch *l = &k->launch[i];
        long long extra = l->extra_value;
        void *params[4] = {args, &extra, NULL, NULL};
        if (i == 0 && g && g->ntmaps == 2) {
            params[1] = &maps[0];
            params[2] = &maps[1];
        }
        CUresult r;
        if (i == 0 && (flags & GT_DB_LAUNCH_CHAINED) && k->chain_min_sm && g_drv.launch_ex &&
            target_sm(m->target) >= k->chain_min_sm) {
            CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
            at.value.programmaticStreamSerializationAllowed = 1;
            CUlaunchConfig lc = {.gridDimX = l->grid[0], .gridDimY = l->grid[1], .gridDimZ = l->grid[2],
                                 .blockDimX = l->block[0], .blockDimY = l->block[1], .blockDimZ = l->block[2],
                                 .sharedMemBytes = (unsigned)l->shared_bytes, .hStream = (CUstream)stream,
                                 .attrs = &at, .numAttrs = 1};
            r = g_drv.launch_ex(&lc, (CUfunction)m->function[i], params, NULL);
        } else {
            r = g_drv.launch((CUfunction)m->function[i], l->grid[0], l->grid[1], l->grid[2], l->block[0],
                             l->block[1], l->block[2], (unsigned)l->shared_bytes, (CUstream)stream, params,
                             NULL);
        }
        if (r != CUDA_SUCCESS)
            return drv_fail(r, l->kernel, err, errlen);
    }
    return 0;
}
