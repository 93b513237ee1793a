/* gt_cu_cutlass.h: libgemmtune_cutlass (cutlass/gt_cutlass.h) opened at run time, for the
 * worker and libgemmtune alike: neither links C++ or CUTLASS, and a machine without the
 * library has no such kernels instead of failing to start. No CUDA header needed. */
#ifndef GT_CU_CUTLASS_H
#define GT_CU_CUTLASS_H

#include <stddef.h>

#include "gt_cutlass.h"
#include "gt_problem.h"

struct cJSON;

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

/* Opens the library at path, else $GT_CUTLASS_LIB, else GT_CU_CUTLASS_SONAME in the folder
 * of the program or library that holds this loader (a build folder's programs, the Python
 * package's _lib), else GT_CU_CUTLASS_SONAME as dlopen finds it. 0; 1 when
 * there is none (err: where it looked, dlerror's words); -1 when one is there but not
 * usable (a symbol missing, another GT_CUTLASS_ABI): err says which. *c zeroed on failure. */
int gt_cu_cutlass_open(gt_cu_cutlass *c, const char *path, char *err, size_t errlen);
void gt_cu_cutlass_close(gt_cu_cutlass *c);
/* The index of the kernel called name, or -1. */
int gt_cu_cutlass_find(const gt_cu_cutlass *c, const char *name);

/* ---- the "cutlass" family's configs (cutlass_cfg.c): host only, for the worker's search
 * and libgemmtune's plan alike ---- */

/* One candidate: a kernel of the library by name and its tile scheduler's knobs
 * (gt_cutlass_args: swizzle 1/2/4/8, raster 0/1/2, splits 1..16 on stream-K kernels). */
typedef struct gt_cu_cutlass_cfg {
    char kernel[48];
    int swizzle, raster, splits;
} gt_cu_cutlass_cfg;

/* 0 when the family's kernels can run p at all (bf16 TN, f32 accumulation, beta 0, no
 * batch, bias, activation or scales); else -1 with "cutlass: why" in err. Alignment and
 * sizes are each kernel's check (gt_cutlass_check). */
int gt_cu_cutlass_fits(const gt_problem *p, char *err, size_t errlen);
/* A config as JSON ({"family":"cutlass","kernel",...,"raster","splits","swizzle"}); NULL out
 * of memory. */
struct cJSON *gt_cu_cutlass_cfg_to_json(const gt_cu_cutlass_cfg *c);
/* -1 with the field named when j is not such a config. */
int gt_cu_cutlass_cfg_from_json(const struct cJSON *j, gt_cu_cutlass_cfg *c, char *err, size_t errlen);
/* p with c's knobs as the library's arguments for a device of sms multiprocessors (pointers
 * left NULL: the caller's); -1 when the family cannot run p. */
int gt_cu_cutlass_args_for(const gt_problem *p, const gt_cu_cutlass_cfg *c, int sms, gt_cutlass_args *a,
                           char *err, size_t errlen);

#define GT_CU_CUTLASS_SPACE_MAX 256
/* problems with a smaller n get no cutlass configs (its tiles are 128 or 256 wide) */
#define GT_CU_CUTLASS_MIN_N 64
/* The family's configs for p, best guess first (a wave model ranks the kernels), each
 * accepted by its kernel's check for a device of sms multiprocessors; at most cap. why:
 * the reason when it is empty (no library, a problem the family cannot run) or the first
 * refusal. */
typedef struct gt_cu_cutlass_space {
    gt_cu_cutlass_cfg cfg[GT_CU_CUTLASS_SPACE_MAX];
    int n;
    int pruned;  /* configs of kernels the model ranked out */
    int refused; /* configs a kernel's check refused */
    char why[256];
} gt_cu_cutlass_space;
int gt_cu_cutlass_space_for(const gt_cu_cutlass *lib, const gt_problem *p, int sms, int cap,
                            gt_cu_cutlass_space *s);

#endif
