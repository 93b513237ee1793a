/* drv.c: the CUDA driver's entry points (gt_cu.h: gt_cu_drv), opened at the
 * first use with dlopen and taken with cuGetProcAddress at CUDA 12.0's ABI,
 * once per process: libgemmtune (which must load where no driver is
 * installed), the preload shim and the worker all reach the driver here. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "gt_cu.h"

typedef CUresult(CUDAAPI *pfn_proc)(const char *, void **, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult *);

static struct {
    pthread_once_t once;
    char err[256]; /* why the driver is unusable; "" when it is */
    gt_cu_drv d;
} g_drv = {.once = PTHREAD_ONCE_INIT};

/* Fills *fn; 0, or -1 when the driver does not have the function. */
static int proc_of(pfn_proc proc, const char *name, void **fn)
{
    CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (proc(name, fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS ||
        q != CU_GET_PROC_ADDRESS_SUCCESS || !*fn) {
        *fn = NULL;
        return -1;
    }
    return 0;
}

static void drv_open(void)
{
    /* never closed: function pointers into it may be used until exit */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(g_drv.err, sizeof g_drv.err, "cuda: no CUDA driver: %s", dlerror());
        return;
    }
    pfn_proc proc = (pfn_proc)dlsym(h, "cuGetProcAddress_v2");
    if (!proc) {
        snprintf(g_drv.err, sizeof g_drv.err,
                 "cuda: CUDA driver without cuGetProcAddress_v2 (older than CUDA 12)");
        return;
    }
    gt_cu_drv *d = &g_drv.d;
    const struct {
        const char *name;
        void **fn;
    } t[] = {{"cuCtxGetDevice", (void **)&d->ctx_get_device},
             {"cuCtxGetCurrent", (void **)&d->ctx_get_current},
             {"cuCtxSetCurrent", (void **)&d->ctx_set_current},
             {"cuStreamGetCtx", (void **)&d->stream_get_ctx},
             {"cuDeviceGet", (void **)&d->device_get},
             {"cuDevicePrimaryCtxRetain", (void **)&d->primary_ctx_retain},
             {"cuDeviceGetAttribute", (void **)&d->device_get_attribute},
             {"cuDeviceGetName", (void **)&d->device_get_name},
             {"cuModuleLoadData", (void **)&d->module_load_data},
             {"cuModuleUnload", (void **)&d->module_unload},
             {"cuModuleGetFunction", (void **)&d->module_get_function},
             {"cuFuncGetAttribute", (void **)&d->func_get_attribute},
             {"cuFuncSetAttribute", (void **)&d->func_set_attribute},
             {"cuLaunchKernel", (void **)&d->launch_kernel},
             {"cuGetErrorName", (void **)&d->get_error_name}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (proc_of(proc, t[i].name, t[i].fn) != 0) {
            snprintf(g_drv.err, sizeof g_drv.err, "cuda: CUDA driver entry point %s not found",
                     t[i].name);
            return;
        }
    }
    /* optional: their users refuse with the reason when they are missing */
    (void)proc_of(proc, "cuLaunchKernelEx", (void **)&d->launch_kernel_ex);
    (void)proc_of(proc, "cuTensorMapEncodeTiled", (void **)&d->tensor_map_encode_tiled);
}

const gt_cu_drv *gt_cu_drv_get(char *err, size_t errlen)
{
    if (pthread_once(&g_drv.once, drv_open) != 0) {
        snprintf(err, errlen, "cuda: cannot initialise the CUDA driver table");
        return NULL;
    }
    if (g_drv.err[0]) {
        snprintf(err, errlen, "%s", g_drv.err);
        return NULL;
    }
    return &g_drv.d;
}

void gt_cu_drv_err(const gt_cu_drv *d, CUresult r, const char *what, char *err, size_t errlen)
{
    const char *n = NULL;
    if (!d || !d->get_error_name || d->get_error_name(r, &n) != CUDA_SUCCESS || !n)
        n = "CUDA_ERROR_?";
    snprintf(err, errlen, "cuda: %s: %s (%d)", what, n, (int)r);
}

int gt_cu_current_sm(int *sm, char *err, size_t errlen)
{
    int ordinal, major = 0, minor = 0;
    CUresult r;
    const gt_cu_drv *d = gt_cu_drv_get(err, errlen);
    if (!d || gt_cu_current_device(&ordinal, err, errlen) != 0)
        return -1;
    if ((r = d->device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                     (CUdevice)ordinal)) != CUDA_SUCCESS ||
        (r = d->device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                     (CUdevice)ordinal)) != CUDA_SUCCESS) {
        gt_cu_drv_err(d, r, "cuDeviceGetAttribute(compute capability)", err, errlen);
        return -1;
    }
    *sm = major * 10 + minor;
    return 0;
}

/* The driver table and the calling thread's current context (NULL: none) in
 * *d and *ctx; 0, or -1 with err. */
static int current(const gt_cu_drv **d, CUcontext *ctx, char *err, size_t errlen)
{
    CUresult r;
    *ctx = NULL;
    if (!(*d = gt_cu_drv_get(err, errlen)))
        return -1;
    if ((r = (*d)->ctx_get_current(ctx)) != CUDA_SUCCESS) {
        gt_cu_drv_err(*d, r, "cuCtxGetCurrent", err, errlen);
        return -1;
    }
    return 0;
}

int gt_cu_bind_device(int ordinal, char *err, size_t errlen)
{
    CUcontext ctx;
    CUdevice dev;
    CUresult r;
    const gt_cu_drv *d;
    if (current(&d, &ctx, err, errlen) != 0)
        return -1;
    if (ctx)
        return 0;
    /* The retained reference is never released: the runtime keeps the
     * primary context for the process too, and a release here could destroy
     * it under the application's feet. */
    if ((r = d->device_get(&dev, ordinal)) != CUDA_SUCCESS ||
        (r = d->primary_ctx_retain(&ctx, dev)) != CUDA_SUCCESS ||
        (r = d->ctx_set_current(ctx)) != CUDA_SUCCESS) {
        gt_cu_drv_err(d, r, "binding the device's primary context", err, errlen);
        return -1;
    }
    return 0;
}

int gt_cu_current_device(int *ordinal, char *err, size_t errlen)
{
    CUdevice dev;
    CUresult r;
    const gt_cu_drv *d = gt_cu_drv_get(err, errlen);
    if (!d)
        return -1;
    if ((r = d->ctx_get_device(&dev)) != CUDA_SUCCESS) {
        gt_cu_drv_err(d, r, "no current CUDA context (cuCtxGetDevice)", err, errlen);
        return -1;
    }
    *ordinal = (int)dev; /* a CUdevice is its ordinal */
    return 0;
}

int gt_cu_current_ctx(CUcontext *ctx, int *ordinal, char *err, size_t errlen)
{
    CUcontext c;
    const gt_cu_drv *d;
    if (current(&d, &c, err, errlen) != 0)
        return -1;
    if (!c) {
        snprintf(err, errlen, "cuda: no current CUDA context");
        return -1;
    }
    *ctx = c;
    return gt_cu_current_device(ordinal, err, errlen);
}

int gt_cu_ctx_enter(CUcontext ctx, CUcontext *prev, char *err, size_t errlen)
{
    CUcontext cur;
    CUresult r;
    const gt_cu_drv *d;
    *prev = ctx;
    if (current(&d, &cur, err, errlen) != 0)
        return -1;
    if (cur == ctx)
        return 0; /* the common case: one driver call */
    if ((r = d->ctx_set_current(ctx)) != CUDA_SUCCESS) {
        gt_cu_drv_err(d, r, "making the plan's context current (cuCtxSetCurrent)", err, errlen);
        return -1;
    }
    /* a thread that had none keeps ctx, as the runtime would have bound one */
    if (cur)
        *prev = cur;
    return 0;
}

void gt_cu_ctx_leave(CUcontext ctx, CUcontext prev)
{
    char err[256];
    const gt_cu_drv *d = prev != ctx ? gt_cu_drv_get(err, sizeof err) : NULL;
    /* nothing to report: prev was current a moment ago, setting it back can
     * only fail with the driver itself gone */
    if (d)
        (void)d->ctx_set_current(prev);
}

int gt_cu_stream_in_ctx(CUstream stream, CUcontext ctx, int ordinal, char *err, size_t errlen)
{
    CUcontext s = NULL;
    /* NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD: the current context's */
    if ((uintptr_t)stream <= 2)
        return 0;
    char why[256];
    const gt_cu_drv *d = gt_cu_drv_get(why, sizeof why);
    if (!d || d->stream_get_ctx(stream, &s) != CUDA_SUCCESS || !s || s == ctx)
        return 0;
    snprintf(err, errlen,
             "cuda: the stream belongs to another CUDA context than this plan's (made on device %d): "
             "a stream of another GPU?",
             ordinal);
    return -1;
}
