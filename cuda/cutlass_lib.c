/* cutlass_lib.c: libgemmtune_cutlass opened with dlopen (gt_cu_cutlass.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gt_cu_cutlass.h"

/* GT_CU_CUTLASS_SONAME in the folder of the program or library this code is part of (the
 * worker and gemmtune in a build folder, libgemmtune in the Python package's _lib), when
 * there is one; else 0. */
static int beside_me(char *out, size_t len)
{
    Dl_info info;
    if (!dladdr((void *)beside_me, &info) || !info.dli_fname || !strchr(info.dli_fname, '/'))
        return 0;
    const char *slash = strrchr(info.dli_fname, '/');
    int n = snprintf(out, len, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname, GT_CU_CUTLASS_SONAME);
    return n > 0 && (size_t)n < len && access(out, R_OK) == 0;
}

int gt_cu_cutlass_open(gt_cu_cutlass *c, const char *path, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    const char *env = getenv("GT_CUTLASS_LIB");
    char near[4096];
    const char *p = path && *path  ? path
                    : env && *env  ? env
                    : beside_me(near, sizeof near) ? near
                                                   : GT_CU_CUTLASS_SONAME;
    /* RTLD_LOCAL: its C++ and CUTLASS symbols stay its own */
    void *dl = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *why = dlerror();
        snprintf(err, errlen, "no CUTLASS kernels: %s (%s)", p, why ? why : "not found");
        return 1;
    }
    c->dl = dl;
    struct {
        const char *name;
        void **slot;
    } syms[] = {{"gt_cutlass_abi", (void **)&c->abi},
                {"gt_cutlass_count", (void **)&c->count},
                {"gt_cutlass_kernel_at", (void **)&c->kernel_at},
                {"gt_cutlass_check", (void **)&c->check},
                {"gt_cutlass_run", (void **)&c->run}};
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = dlsym(dl, syms[i].name);
        if (!*syms[i].slot) {
            snprintf(err, errlen, "%s: no symbol %s: not a libgemmtune_cutlass", p, syms[i].name);
            goto fail;
        }
    }
    if (c->abi() != GT_CUTLASS_ABI) {
        snprintf(err, errlen, "%s: interface version %d, this program needs %d (rebuild one of them)", p,
                 c->abi(), GT_CUTLASS_ABI);
        goto fail;
    }
    return 0;
fail:
    dlclose(dl);
    memset(c, 0, sizeof *c);
    return -1;
}

void gt_cu_cutlass_close(gt_cu_cutlass *c)
{
    if (c->dl)
        dlclose(c->dl);
    memset(c, 0, sizeof *c);
}

int gt_cu_cutlass_find(const gt_cu_cutlass *c, const char *name)
{
    if (!c->dl || !name)
        return -1;
    int n = c->count();
    for (int i = 0; i < n; i++) {
        const gt_cutlass_kernel *k = c->kernel_at(i);
        if (k && k->name && !strcmp(k->name, name))
            return i;
    }
    return -1;
}
