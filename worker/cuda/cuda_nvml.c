/* cuda_nvml.c: NVML through dlopen (cuda_nvml.h). Only the few entry
 * points and constants used are declared here, with NVML's ABI (nvml.h):
 * nothing of NVML is needed at build time either. */
#include "cuda_nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvml_ret;                      /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_dev_st *nvml_dev;      /* nvmlDevice_t */
#define NVML_CLOCK_SM 1                    /* nvmlClockType_t */
#define NVML_TEMPERATURE_GPU 0             /* nvmlTemperatureSensors_t */

struct gt_cuda_nvml {
    void *lib;
    nvml_dev dev;
    nvml_ret (*shutdown)(void);
    const char *(*error_string)(nvml_ret);
    nvml_ret (*clock_info)(nvml_dev, int, unsigned *);
    nvml_ret (*power_usage)(nvml_dev, unsigned *);
    nvml_ret (*temperature)(nvml_dev, int, unsigned *);
    nvml_ret (*reasons)(nvml_dev, unsigned long long *);
};

/* NVML's name of r, or its number when the library cannot say. */
static const char *ret_name(const gt_cuda_nvml *n, nvml_ret r, char *buf, size_t len)
{
    const char *s = n && n->error_string ? n->error_string(r) : NULL;
    if (s)
        return s;
    snprintf(buf, len, "error %d", r);
    return buf;
}

gt_cuda_nvml *gt_cuda_nvml_open(const char *pci_bus_id, char *why, size_t whylen)
{
    char num[32];
    gt_cuda_nvml *n = calloc(1, sizeof *n);
    nvml_ret (*init)(void) = NULL;
    nvml_ret (*by_bus)(const char *, nvml_dev *) = NULL;
    int inited = 0;
    if (!n) {
        snprintf(why, whylen, "nvml: out of memory");
        return NULL;
    }
    n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        const char *e = dlerror();
        snprintf(why, whylen, "nvml: libnvidia-ml.so.1 not loadable (%s)", e ? e : "dlopen failed");
        goto fail;
    }
    /* Casting dlsym's object pointer to a function pointer is what POSIX
     * requires to work. */
    *(void **)&init = dlsym(n->lib, "nvmlInit_v2");
    *(void **)&n->shutdown = dlsym(n->lib, "nvmlShutdown");
    *(void **)&n->error_string = dlsym(n->lib, "nvmlErrorString");
    *(void **)&by_bus = dlsym(n->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&n->clock_info = dlsym(n->lib, "nvmlDeviceGetClockInfo");
    *(void **)&n->power_usage = dlsym(n->lib, "nvmlDeviceGetPowerUsage");
    *(void **)&n->temperature = dlsym(n->lib, "nvmlDeviceGetTemperature");
    /* the reasons' newer name (driver 535+), else the older one */
    *(void **)&n->reasons = dlsym(n->lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!n->reasons)
        *(void **)&n->reasons = dlsym(n->lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (!init || !n->shutdown || !by_bus || !n->clock_info || !n->power_usage || !n->temperature ||
        !n->reasons) {
        snprintf(why, whylen, "nvml: libnvidia-ml.so.1 lacks an entry point this worker reads");
        goto fail;
    }
    nvml_ret r = init();
    if (r != 0) {
        snprintf(why, whylen, "nvml: nvmlInit: %s", ret_name(n, r, num, sizeof num));
        goto fail;
    }
    inited = 1;
    if ((r = by_bus(pci_bus_id, &n->dev)) != 0) {
        snprintf(why, whylen, "nvml: no device at PCI bus id %.32s: %s", pci_bus_id,
                 ret_name(n, r, num, sizeof num));
        goto fail;
    }
    return n;
fail:
    if (inited)
        (void)n->shutdown();
    if (n->lib)
        dlclose(n->lib);
    free(n);
    return NULL;
}

int gt_cuda_nvml_sample(gt_cuda_nvml *n, gt_gpu_sample *s, char *err, size_t errlen)
{
    unsigned clk = 0, mw = 0, temp = 0;
    unsigned long long reasons = 0;
    char num[32];
    nvml_ret r;
    const char *what = "nvmlDeviceGetClockInfo";
    memset(s, 0, sizeof *s);
    if ((r = n->clock_info(n->dev, NVML_CLOCK_SM, &clk)) != 0 ||
        (what = "nvmlDeviceGetPowerUsage", r = n->power_usage(n->dev, &mw)) != 0 ||
        (what = "nvmlDeviceGetTemperature", r = n->temperature(n->dev, NVML_TEMPERATURE_GPU, &temp)) != 0 ||
        (what = "nvmlDeviceGetCurrentClocksEventReasons", r = n->reasons(n->dev, &reasons)) != 0) {
        snprintf(err, errlen, "nvml: %s: %s", what, ret_name(n, r, num, sizeof num));
        return -1;
    }
    s->sm_mhz = clk;
    s->power_w = mw / 1000.0; /* NVML reports milliwatts */
    s->temp_c = temp;
    s->reasons = reasons;
    return 0;
}

void gt_cuda_nvml_close(gt_cuda_nvml *n)
{
    if (!n)
        return;
    (void)n->shutdown();
    dlclose(n->lib);
    free(n);
}
