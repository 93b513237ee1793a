/* gen_cuda.h: the CUDA side of the generated-kernel families (module prefix
 * gt_gen_): NVRTC compiles through an in-process and an on-disk
 * content-addressed cache fed by a small thread pool (gen_nvrtc.c), and the
 * backend hooks that enumerate, build, run, validate and describe "gemv",
 * "mma" and "fault" candidates (gen_run.c). gen_gemv.h and gen_mma.h are
 * the pure-host half. */
#ifndef GEN_CUDA_H
#define GEN_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "gen_gemv.h"
#include "gt_cuda.h"

struct cJSON;

/* ---- compile cache (gen_nvrtc.c) ---------------------------------------------
 * Key: FNV-1a 64 of the source, every option, the target ("sm_90" cubin, or
 * "compute_NN" PTX when NVRTC does not know the device's arch), the NVRTC
 * version and the file format version. Disk: $GEMMTUNE_CACHE_DIR/cuda, else
 * $XDG_CACHE_HOME/gemmtune/cuda, else ~/.cache/gemmtune/cuda; one file per
 * key with a checked header, written to a unique temporary name and renamed
 * into place (workers sharing the directory never read a partial file; a
 * corrupt one is compiled again). In process: every key ever requested, so a
 * second request never compiles or reads the disk. */
enum { GT_GEN_FROM_COMPILE = 0, GT_GEN_FROM_DISK = 1 };

typedef struct gt_gen_image {
    unsigned char *data;
    size_t len;
    int cubin;               /* 1 cubin, 0 PTX (JIT-compiled by the driver at load) */
    char target[24];         /* "sm_90", "sm_90a" (GT_GEN_SM_A) or "compute_90" */
    double compile_ms;       /* NVRTC time when compiled (also kept on disk) */
    int origin;              /* GT_GEN_FROM_*: how this process got it */
    int spill_stores, spill_loads; /* ptxas -v of the first kernel named, -1 unknown */
} gt_gen_image;

typedef struct gt_gen_entry gt_gen_entry;

/* OR'ed into the sm of a request: the arch-specific target sm_NNa (cubin
 * only; wgmma and the TMA are sm_90a features no other arch runs). */
#define GT_GEN_SM_A 0x10000

/* Requests the image of src (a static string) compiled with opts for sm;
 * `kernel` names the function whose ptxas statistics are kept. async: queue
 * the compile on the pool and return at once; else compile on this thread
 * when nobody else is. *mem_hit (may be NULL): 1 when the key was already in
 * the in-process cache. Returns NULL only out of memory. */
gt_gen_entry *gt_gen_request(const char *src, const char *kernel, const char *const *opts,
                             int nopts, int sm, int async, int *mem_hit);
/* The target to request for an "mma" config: wgmma needs the arch-specific
 * sm_90a (ctx->sm | GT_GEN_SM_A), mma.sync the device's sm. */
struct gt_mma_cfg;
int gt_gen_mma_sm(const gt_bk_ctx *ctx, const struct gt_mma_cfg *c);
/* Waits until the entry is compiled; 0 with *img (valid for the process
 * lifetime, until gt_gen_cache_forget), or -1 with the compile error. */
int gt_gen_wait(gt_gen_entry *e, const gt_gen_image **img, char *err, size_t errlen);
uint64_t gt_gen_entry_key(const gt_gen_entry *e);

typedef struct gt_gen_stats {
    long requests;           /* gt_gen_request calls */
    long mem_hits;           /* answered from the in-process cache */
    long disk_hits;          /* read from the disk cache */
    long compiles;           /* NVRTC runs */
    long failures;           /* compiles that failed */
    double compile_ms;       /* summed NVRTC wall time (all threads) */
    int threads;             /* pool threads */
} gt_gen_stats;
void gt_gen_stats_get(gt_gen_stats *s);
/* Stops the pool (queued compiles fail with "stopped", running ones finish)
 * and joins its threads; the next async request starts it again. */
void gt_gen_pool_stop(void);
/* Stops the pool and drops the in-process cache (self-test: the next
 * requests read the disk). No image pointer may be in use. */
void gt_gen_cache_forget(void);
/* The directory the disk cache uses now (created). 0 or -1. */
int gt_gen_cache_dir(char *buf, size_t len);

/* ---- backend hooks (gen_run.c) ------------------------------------------------ */
void gt_gen_ctx_close(gt_bk_ctx *ctx);
/* The device as the pruning rules see it (queried once per context). */
int gt_gen_device(gt_bk_ctx *ctx, gt_gen_dev *d, char *err, size_t errlen);
/* The families' kept configs for p on ctx's device as a new JSON array
 * (empty when none applies): "gemv" and "mma" alternate, each best first;
 * their compiles start in the background. *pruned: how many configs of the
 * raw spaces were pruned. Caps: GT_CUDA_GEN_MAX for gemv (default
 * GT_GEN_DEFAULT_CAP; 0 turns every family off), GT_CUDA_MMA_MAX for mma
 * (default GT_MMA_DEFAULT_CAP; 0 turns it off). */
int gt_gen_enumerate(gt_bk_ctx *ctx, const gt_problem *p, struct cJSON **arr, int *pruned,
                     char *err, size_t errlen);
/* prepare: starts the compiles of the problem's family configs (never fails
 * the problem); unprepare frees the workspace. */
void gt_gen_prepare(gt_bk_prob *pp);
void gt_gen_unprepare(gt_bk_prob *pp);
/* build of a "gemv", "mma" or "fault" config (family as gt_gen_family); a
 * config a rule prunes for the problem fails with the rule's reason. */
int gt_gen_build(gt_bk_prob *pp, const struct cJSON *cfg, int family, gt_bk_cand *c, char *err,
                 size_t errlen);
void gt_gen_release(gt_bk_cand *c);
/* Enqueues one call of c on set s (no synchronization). */
int gt_gen_run(gt_bk_prob *pp, gt_bk_cand *c, const gt_cuda_set *s, char *err, size_t errlen);
/* validate, exactly as gt_cuda_validate: poison D, run on the validation
 * set, the GPU comparison (gt_cuda_check), one synchronization. */
int gt_gen_validate(gt_bk_prob *pp, gt_bk_cand *c, double *rel_err, char *err, size_t errlen);
/* Chained launch (programmatic dependent launch, sm_90+): while on, gemv
 * kernels launch with the programmatic-stream-serialization attribute, so a
 * call's launch and ramp overlap the end of the call before it, as in an
 * application whose kernels all launch that way. Off by default; refused
 * (-1 with the reason) below sm_90 or without cuLaunchKernelEx. err may be
 * NULL when turning it off. */
int gt_gen_set_chain(gt_bk_ctx *ctx, int on, char *err, size_t errlen);
/* The self-test's A/B of what chained-launch support costs a plain launch:
 * while on, gemv configs build without it (-DGT_NOCHAIN: no griddepcontrol,
 * B through the non-coherent path), a separate cache entry. Such a kernel
 * must never launch chained; the worker never turns this on. */
int gt_gen_set_nochain(gt_bk_ctx *ctx, int on);
/* validate of a gemv kernel launched chained after a kernel that writes B:
 * B poisoned, a producer that lets the gemv launch at once and restores B
 * 50 us later, the gemv chained, the GPU comparison. A kernel that read B
 * before its wait fails (NaN). Leaves chaining off. */
int gt_gen_validate_chained(gt_bk_prob *pp, gt_bk_cand *c, double *rel_err, char *err, size_t errlen);
/* A timing with launch=chained: 1 when c's calls launch chained until
 * gt_gen_chain_end (a gemv kernel on sm_90+ with cuLaunchKernelEx; validated
 * chained at its first such timing), 0 when c times plainly (cuBLASLt, mma,
 * older GPUs), -1 with the reason when its chained result is wrong. */
int gt_gen_chain_begin(gt_bk_prob *pp, gt_bk_cand *c, char *err, size_t errlen);
void gt_gen_chain_end(gt_bk_ctx *ctx);
/* What building c cost and what it uses: {"family","compile_ms","cache",
 * "registers","spill_bytes","local_bytes","smem_bytes","grid","threads",
 * "ws_bytes"}; NULL for a cuBLASLt candidate. */
struct cJSON *gt_gen_cand_info(const gt_bk_cand *c);

#endif
