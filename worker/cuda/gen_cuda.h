/* gen_cuda.h: the worker's cuda backend hooks for the generated-kernel
 * families (gen_run.c; module prefix gt_cuda_gen_): they enumerate, build,
 * run, validate and describe "gemv", "mma" and "fault" candidates. gen/
 * (gen_gemv.h, gen_mma.h) is their pure-host half; cuda/ (gt_cu.h) compiles
 * (through its cache), loads and launches them. */
#ifndef GEN_CUDA_H
#define GEN_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "gen_gemv.h"
#include "gen_mma.h"
#include "gt_cu_cutlass.h"
#include "gt_cuda.h"

struct cJSON;

/* ---- the "cutlass" family (cutlass_run.c): libgemmtune_cutlass's kernels, dispatched to
 * by the functions below like a family of their own ---- */
typedef struct gt_cuda_cutlass_cand gt_cuda_cutlass_cand;
void gt_cuda_cutlass_close(gt_bk_ctx *ctx);
/* The family's configs for p (cuda/cutlass_cfg.c's space on this device), at most cap;
 * empty with the reason in s->why where it has none (no library, not sm_90, a problem its
 * kernels cannot run). 0, or -1 out of memory. */
int gt_cuda_cutlass_space(gt_bk_ctx *ctx, const gt_problem *p, int cap, gt_cu_cutlass_space *s);
/* A config's kernel checked for the prepared problem, its workspace allocated. */
int gt_cuda_cutlass_build(gt_bk_prob *pp, const struct cJSON *cfg, gt_cuda_cutlass_cand **out, char *err,
                          size_t errlen);
void gt_cuda_cutlass_release(gt_cuda_cutlass_cand *c);
/* Enqueues one call on set s on the backend's stream. */
int gt_cuda_cutlass_run(gt_bk_prob *pp, gt_cuda_cutlass_cand *c, const gt_cuda_set *s, char *err,
                        size_t errlen);
/* Adds tile, cluster, schedule, scheduler and ws_bytes to a candidate's info object. */
void gt_cuda_cutlass_info(const gt_cuda_cutlass_cand *c, struct cJSON *j);

/* The target to request for an "mma" config: wgmma needs the arch-specific
 * sm_90a (ctx->sm | GT_CU_SM_A), mma.sync the device's sm. */
int gt_cuda_gen_mma_sm(const gt_bk_ctx *ctx, const gt_mma_cfg *c);

void gt_cuda_gen_close(gt_bk_ctx *ctx);
/* The device as the pruning rules see it (queried once per context). */
int gt_cuda_gen_device(gt_bk_ctx *ctx, gt_gen_dev *d, char *err, size_t errlen);
/* The families' kept configs for p on ctx's device as a new JSON array
 * (empty when none applies): "gemv", "mma" and "cutlass" alternate, each best
 * first; the generated ones' compiles start in the background. *pruned: how
 * many configs of the raw spaces were pruned or refused. Caps:
 * GT_CUDA_GEN_MAX for gemv (default GT_GEN_DEFAULT_CAP; 0 turns every family
 * off), GT_CUDA_MMA_MAX for mma (default GT_MMA_DEFAULT_CAP; 0 turns it off),
 * GT_CUDA_CUTLASS_MAX for cutlass (default 0: off until asked for). */
int gt_cuda_gen_enumerate(gt_bk_ctx *ctx, const gt_problem *p, struct cJSON **arr, int *pruned,
                          char *err, size_t errlen);
/* prepare: starts the compiles of the problem's family configs (never fails
 * the problem); unprepare frees the workspace. */
void gt_cuda_gen_prepare(gt_bk_prob *pp);
void gt_cuda_gen_unprepare(gt_bk_prob *pp);
/* A job's generated candidates among cands: their compiles go to the head
 * of the compile queue (GT_CU_URGENT), in the job's order, so the pool's
 * threads compile them side by side ahead of the builds that wait on them,
 * instead of each build compiling its own on the thread that feeds the GPU
 * while the queue holds other problems' precompiles. Configs a rule
 * refuses are skipped (their builds say why). */
void gt_cuda_gen_prefetch(gt_bk_prob *pp, const struct cJSON *cands);
/* build of a "gemv", "mma" or "fault" config (family as gt_gen_family); a
 * config a rule prunes for the problem fails with the rule's reason. */
int gt_cuda_gen_build(gt_bk_prob *pp, const struct cJSON *cfg, int family, gt_bk_cand *c,
                      char *err, size_t errlen);
void gt_cuda_gen_release(gt_bk_cand *c);
/* Enqueues one call of c on set s (no synchronization). */
int gt_cuda_gen_run(gt_bk_prob *pp, gt_bk_cand *c, const gt_cuda_set *s, char *err, size_t errlen);
/* validate, exactly as gt_cuda_validate: poison D, run on the validation
 * set, the GPU comparison (gt_cuda_check), one synchronization. */
int gt_cuda_gen_validate(gt_bk_prob *pp, gt_bk_cand *c, double *rel_err, char *err, size_t errlen);
/* Chained launch (programmatic dependent launch, sm_90+): while on, gemv
 * kernels launch with the programmatic-stream-serialization attribute, so a
 * call's launch and ramp overlap the end of the call before it, as in an
 * application whose kernels all launch that way. Off by default; refused
 * (-1 with the reason) below sm_90 or without cuLaunchKernelEx. err may be
 * NULL when turning it off. */
int gt_cuda_gen_set_chain(gt_bk_ctx *ctx, int on, char *err, size_t errlen);
/* The self-test's A/B of what chained-launch support costs a plain launch:
 * while on, gemv configs build without it (-DGT_NOCHAIN: no griddepcontrol,
 * B through the non-coherent path), a separate cache entry. Such a kernel
 * must never launch chained; the worker never turns this on. */
int gt_cuda_gen_set_nochain(gt_bk_ctx *ctx, int on);
/* validate of a gemv kernel launched chained after a kernel that writes B:
 * B poisoned, a producer that lets the gemv launch at once and restores B
 * 50 us later, the gemv chained, the GPU comparison. A kernel that read B
 * before its wait fails (NaN). Leaves chaining off. */
int gt_cuda_gen_validate_chained(gt_bk_prob *pp, gt_bk_cand *c, double *rel_err, char *err,
                                 size_t errlen);
/* A timing with launch=chained: 1 when c's calls launch chained until
 * gt_cuda_gen_chain_end (a gemv kernel on sm_90+ with cuLaunchKernelEx;
 * validated chained at its first such timing), 0 when c times plainly
 * (cuBLASLt, mma, older GPUs), -1 with the reason when its chained result is
 * wrong. */
int gt_cuda_gen_chain_begin(gt_bk_prob *pp, gt_bk_cand *c, char *err, size_t errlen);
void gt_cuda_gen_chain_end(gt_bk_ctx *ctx);
/* What building c cost and what it uses: {"family","compile_ms","cache",
 * "registers","spill_bytes","local_bytes","smem_bytes","grid","threads",
 * "ws_bytes"}; NULL for a cuBLASLt candidate. */
struct cJSON *gt_cuda_gen_cand_info(const gt_bk_cand *c);

#endif
