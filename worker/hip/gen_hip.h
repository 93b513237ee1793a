/* gen_hip.h: the HIP port of the generated kernel families (module prefix
 * gt_hip_), compiled with hipRTC for gfx90a (MI200) and gfx942 (MI300) when
 * the installed compiler knows it:
 *   "gemv"  the same template (gen/gemv_src.c) instantiated for AMD
 *           (GT_HIP=1: wave64, f32 FMAs and quad shuffles instead of
 *           mma.sync, plain or non-temporal vector loads instead of
 *           cp.async);
 *   "mma"   the HIP template of gen/mma_src.c (gt_gen_mma_hip_src): the CUDA
 *           template's tiling, raster, split-K and epilogue on MFMA
 *           16x16x16 bf16/f16, wave64, with buffer loads staged through a
 *           ring of registers instead of cp.async.
 *
 * hipRTC is loaded at run time (dlopen of libhiprtc / libamdhip64): nothing
 * links against ROCm, and a machine without it says why instead of failing.
 * Compiles run in forked children: HIP 5.x's code-object compiler aborts
 * the process on an arch it does not know, and children compile in parallel.
 * This is a compile check today: there is no HIP device backend yet. */
#ifndef GEN_HIP_H
#define GEN_HIP_H

#include <stddef.h>

#include "gen_gemv.h"
#include "gen_mma.h"

/* Configs the HIP port keeps per problem: hipRTC needs ~2 CPU seconds per
 * gemv kernel (its FMA path unrolls vec x n_tile x rows per lane), and the
 * port has no device to measure on yet. */
#define GT_HIP_GEN_CAP 12
/* The same for "mma" (its model ranks for an MI200; no device to measure
 * on yet): hipRTC needs ~0.5 CPU s per mma kernel (measured with HIP 5.2
 * for gfx90a), so the compile check of six Llama shapes with this cap
 * (~100 distinct configs) takes ~30 s on two cores. */
#define GT_HIP_MMA_CAP 24

/* What a compile reports besides success, from the code object's metadata
 * (the largest over its kernels). */
typedef struct gt_hip_code {
    size_t bytes;   /* code object */
    int vgprs;      /* VGPRs per lane (gfx90a and later: arch VGPRs + AGPRs) */
    int spills;     /* VGPRs + SGPRs spilled to scratch */
} gt_hip_code;

/* 1 when hipRTC can be loaded (why: the library and its version), else 0
 * with the reason. */
int gt_hip_rtc_available(char *why, size_t len);
/* 1 when hipRTC compiles a trivial kernel for arch (probed in a child
 * process), 0 with the reason. */
int gt_hip_arch_known(const char *arch, char *why, size_t len);
/* Compiles one config for (p, arch) in this process; 0 with the code object
 * size, or -1 with the compiler's message. */
int gt_hip_gen_compile(const char *arch, const gt_problem *p, const gt_gen_cfg *c,
                       size_t *code_bytes, char *err, size_t errlen);

/* The same for an "mma" config (gt_gen_mma_hip_src with
 * gt_mma_defines_for(hip = 1)); code receives the code object's numbers. */
int gt_hip_mma_compile(const char *arch, const gt_problem *p, const gt_mma_cfg *c, gt_hip_code *code,
                       char *err, size_t errlen);

typedef struct gt_hip_batch {
    int ok, failed;           /* configs compiled / not */
    int spilled;              /* compiled, but with spills */
    int vgprs_max;            /* the most VGPRs (+ AGPRs) of a compiled config */
    char first_err[320];      /* the first failure: config and message */
    double seconds;
} gt_hip_batch;
/* Compiles n configs for (p, arch) in `jobs` child processes; a crashing
 * child fails its remaining configs. 0, or -1 when no child could start or
 * out of memory. */
int gt_hip_gen_compile_all(const char *arch, const gt_problem *p, const gt_gen_cfg *cs, int n,
                           int jobs, gt_hip_batch *out);
int gt_hip_mma_compile_all(const char *arch, const gt_problem *p, const gt_mma_cfg *cs, int n,
                           int jobs, gt_hip_batch *out);

#endif
