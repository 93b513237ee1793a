/* gt_cu_cutlass.h: libgemmtune_cutlass (cutlass/gt_cutlass.h) opened at run time, for the
 * worker and libgemmtune alike: neither links C++ or CUTLASS, and a machine without the
 * library has no such kernels instead of failing to start. No CUDA header needed. */
#ifndef GT_CU_CUTLASS_H
#define GT_CU_CUTLASS_H

#include <stddef.h>

#include "gt_cutlass.h"

/* the library's file name, looked up as dlopen does (LD_LIBRARY_PATH, the caller's rpath)
 * when neither a path nor GT_CUTLASS_LIB names one */
#define GT_CU_CUTLASS_SONAME "libgemmtune_cutlass.so"

typedef struct gt_cu_cutlass {
    void *dl;
    int (*abi)(void);
    int (*count)(void);
    const gt_cutlass_kernel *(*kernel_at)(int);
    int (*check)(int, const gt_cutlass_args *, size_t *, char *, size_t);
    int (*run)(int, const gt_cutlass_args *, void *, size_t, void *, char *, size_t);
} gt_cu_cutlass;

/* Opens the library at path, else $GT_CUTLASS_LIB, else GT_CU_CUTLASS_SONAME. 0; 1 when
 * there is none (err: where it looked, dlerror's words); -1 when one is there but not
 * usable (a symbol missing, another GT_CUTLASS_ABI): err says which. *c zeroed on failure. */
int gt_cu_cutlass_open(gt_cu_cutlass *c, const char *path, char *err, size_t errlen);
void gt_cu_cutlass_close(gt_cu_cutlass *c);
/* The index of the kernel called name, or -1. */
int gt_cu_cutlass_find(const gt_cu_cutlass *c, const char *name);

#endif
