/* nvrtc.c: NVRTC compiles (gt_cu.h): which target a device gets and one
 * compile, for every kernel gemmtune builds at run time (the worker's helper
 * and generated kernels through the compile cache, libgemmtune's generated
 * kernels in an application). NVRTC is linked: it comes with the toolkit's
 * redistributable libraries, not the driver, and needs no GPU. */
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_cu.h"

#define MAX_OPTS 64

int gt_cu_nvrtc_target(int sm, char *target, size_t len, int *cubin)
{
    int archs[64], na = 0, best = 0, a = (sm & GT_CU_SM_A) != 0;
    sm &= ~GT_CU_SM_A;
    if (nvrtcGetNumSupportedArchs(&na) != NVRTC_SUCCESS || na <= 0 || na > 64 ||
        nvrtcGetSupportedArchs(archs) != NVRTC_SUCCESS)
        return -1;
    for (int i = 0; i < na; i++)
        if (archs[i] <= sm && archs[i] > best)
            best = archs[i];
    if (!best || (a && best != sm))
        return -1;
    *cubin = best == sm;
    snprintf(target, len, "%s_%d%s", *cubin ? "sm" : "compute", best, a ? "a" : "");
    return 0;
}

/* "N bytes spill stores, M bytes spill loads" of `kernel` in a ptxas -v log. */
static void parse_spills(const char *log, const char *kernel, int *st, int *ld)
{
    char needle[64];
    *st = *ld = -1;
    snprintf(needle, sizeof needle, "Function properties for %s\n", kernel);
    const char *p = log ? strstr(log, needle) : NULL;
    const char *q = p ? strstr(p, "bytes spill stores") : NULL;
    if (!q)
        return;
    const char *b = q;
    while (b > p && b[-1] != ',')
        b--;
    *st = atoi(b);
    const char *r = strstr(q, "bytes spill loads");
    if (r) {
        const char *c = r;
        while (c > q && c[-1] != ',')
            c--;
        *ld = atoi(c);
    }
}

/* 1 when this NVRTC (12.9 or newer) has its own compile cache and the
 * --no-cache option that turns it off. */
static int nvrtc_caches(void)
{
    int maj = 0, min = 0;
    if (nvrtcVersion(&maj, &min) != NVRTC_SUCCESS)
        return 0;
    return maj > 12 || (maj == 12 && min >= 9);
}

int gt_cu_nvrtc_compile(const char *src, const char *name, int sm, const char *const *opts, int nopts,
                        const char *stats_kernel, gt_cu_image *img, char *err, size_t errlen)
{
    nvrtcProgram prog = NULL;
    char *log = NULL, arch[48];
    const char *all[MAX_OPTS + 3];
    int n = 0, cubin = 0, rc = -1;
    img->data = NULL;
    img->len = 0;
    img->spill_stores = img->spill_loads = -1;
    if (nopts < 0 || nopts > MAX_OPTS) {
        snprintf(err, errlen, "cuda: too many NVRTC options (%d)", nopts);
        return -1;
    }
    if (gt_cu_nvrtc_target(sm, img->target, sizeof img->target, &cubin) != 0) {
        snprintf(err, errlen, "cuda: nvrtc cannot target sm_%d%s", sm & ~GT_CU_SM_A,
                 sm & GT_CU_SM_A ? "a" : "");
        return -1;
    }
    img->cubin = cubin;
    snprintf(arch, sizeof arch, "--gpu-architecture=%s", img->target);
    all[n++] = arch;
    if (stats_kernel && cubin) {
        all[n++] = "--ptxas-options=-v";
        /* NVRTC 12.9+ keeps its own cache in the driver's compute cache
         * (through libcuda, so only where a driver is installed) and a hit
         * there prints no ptxas report: the spill counts would be lost for
         * a kernel compiled by an earlier process on the node. The worker's
         * cache (nvrtc_cache.c) already stores them with the cubin. */
        if (nvrtc_caches())
            all[n++] = "--no-cache";
    }
    for (int i = 0; i < nopts; i++)
        all[n++] = opts[i];
    nvrtcResult r = nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL);
    if (r == NVRTC_SUCCESS)
        r = nvrtcCompileProgram(prog, n, all);
    size_t ll = 0;
    if (prog && nvrtcGetProgramLogSize(prog, &ll) == NVRTC_SUCCESS && ll > 1 && (log = malloc(ll)) &&
        nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) {
        free(log);
        log = NULL;
    }
    if (r != NVRTC_SUCCESS) {
        const char *l = log ? strstr(log, "error") : NULL;
        snprintf(err, errlen, "cuda: nvrtc compile (%s): %s: %.200s", img->target,
                 nvrtcGetErrorString(r), l ? l : log ? log : "");
        goto out;
    }
    size_t sz = 0;
    r = cubin ? nvrtcGetCUBINSize(prog, &sz) : nvrtcGetPTXSize(prog, &sz);
    if (r != NVRTC_SUCCESS || !sz || !(img->data = malloc(sz + 1)) ||
        (cubin ? nvrtcGetCUBIN(prog, (char *)img->data) : nvrtcGetPTX(prog, (char *)img->data)) !=
            NVRTC_SUCCESS) {
        snprintf(err, errlen, "cuda: nvrtc: cannot fetch the %s", cubin ? "cubin" : "PTX");
        free(img->data);
        img->data = NULL;
        goto out;
    }
    img->data[sz] = 0;
    img->len = sz;
    if (stats_kernel)
        parse_spills(log, stats_kernel, &img->spill_stores, &img->spill_loads);
    rc = 0;
out:
    free(log);
    if (prog)
        (void)nvrtcDestroyProgram(&prog); /* nothing to do about a failure here */
    return rc;
}
