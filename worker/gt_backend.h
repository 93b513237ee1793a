/* gt_backend.h: the one small interface every worker backend implements
 * (module prefix gt_bk_). The job runner (worker/runner.c) drives it:
 *
 *   open(device) -> describe -> for each job:
 *       prepare(problem)                       inputs, reference, buffers
 *       for each candidate: build(config)      compile / load / algo check
 *                           validate           fresh inputs, poisoned output, rel. error
 *                           time               warm-up, rotating inputs, median of repeats
 *                           release
 *       unprepare
 *   close
 *
 * Backends never print; they return -1 with a one-line reason in err.
 *
 * worker/ owns gemmtune-worker: the client (sessions), the supervisor and
 * its bench child, the runner and the backends. It may include common/,
 * proto/, gen/ and cuda/, never server/, lib/ or cli/; self-test and sweep
 * code lives in bench/ (ARCHITECTURE.md). */
#ifndef GT_BACKEND_H
#define GT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "gen_gemv.h"
#include "gt_gpu_state.h"
#include "gt_problem.h"

struct cJSON;

typedef struct gt_bk_device {
    char backend[16];        /* "cpu", "cuda", "hip" */
    int index;               /* device index on the node */
    char model[128];         /* e.g. "NVIDIA H100 80GB HBM3", CPU model name */
    char arch[64];           /* "sm_90", "gfx90a", "x86_64" */
    int64_t mem_bytes;
    int units;               /* SMs / CUs / cores */
    char driver[128];        /* driver / library versions, clocks: free text */
    /* The device as the generated families' rules see it (gen/gen_dev.h),
     * sent at registration so the coordinator's space view prunes with the
     * limits this worker prunes with; has_gen 0 when the backend has none
     * (cpu) or could not read them. */
    int has_gen;
    gt_gen_dev gen;
    /* 1: the device holds one process's context at a time (a GPU in
     * exclusive-process or prohibited compute mode): the worker keeps no
     * spare bench process on it (gt_sup.h) */
    int one_context;
} gt_bk_device;

typedef struct gt_timing_opts {
    double min_time_ms;      /* each repeat runs at least this long */
    int warmup;              /* untimed calls first */
    int repeats;             /* timed repeats, median reported */
    int64_t rotating_bytes;  /* total size of rotating input sets, 0 = backend default */
    int chained;             /* cuda: generated gemv kernels launch chained (programmatic
                                dependent launch, sm_90+), after a chained validation */
    int graph;               /* cuda: each repeat replays a CUDA graph of the calls (captured
                                once per timing), as an application running its GEMMs in a
                                graph; a candidate that cannot be captured fails */
    double prune_above_us;   /* > 0: a candidate whose calibration call takes longer than this
                                is timed no further: t->pruned, its calibration time as the
                                median (the screen's early exit, GT_SCREEN_PRUNE_RATIO);
                                a backend may ignore it (then every candidate is timed) */
} gt_timing_opts;

typedef struct gt_timing {
    double median_us;        /* per call */
    double min_us, max_us;
    double spread;           /* (p75 - p25) / median */
    int iters;               /* calls per repeat */
    int repeats;
    int pruned;              /* 1: stopped after calibration (opts prune_above_us) */
} gt_timing;

typedef struct gt_bk_ctx gt_bk_ctx;          /* per device */
typedef struct gt_bk_prob gt_bk_prob;        /* per prepared problem */
typedef struct gt_bk_cand gt_bk_cand;        /* per built candidate */

typedef struct gt_backend {
    const char *name;
    /* 1: time() honours gt_timing_opts.graph (a plain final that is
     * launch-bound is then timed as graphs, worker/runner.c); 0: it does
     * not, and finals stay as the job says. */
    int graphs;
    /* Optional: devices of this backend on the node (NULL: one). Used by
     * `gemmtune-worker --device all`. Returns 0 when there is none. */
    int (*device_count)(void);
    /* Opens device `index`; fills dev. */
    int (*open)(int index, gt_bk_ctx **ctx, gt_bk_device *dev, char *err, size_t errlen);
    void (*close)(gt_bk_ctx *ctx);
    /* Optional (NULL when the coordinator builds the space): enumerates the
     * candidates for p on this device. keep > 0: the coordinator uses only
     * the list's first keep entries (its budget with the exhaustive
     * strategy), so the list need not be longer; 0: the whole list.
     * *cands: new JSON array, *baseline: new JSON object, both owned by the
     * caller. */
    int (*enumerate)(gt_bk_ctx *ctx, const gt_problem *p, int keep, struct cJSON **cands,
                     struct cJSON **baseline, char *err, size_t errlen);
    /* Returns -1 (with reason) when the backend cannot run p at all. */
    int (*prepare)(gt_bk_ctx *ctx, const gt_problem *p, gt_bk_prob **pp, char *err, size_t errlen);
    void (*unprepare)(gt_bk_prob *pp);
    /* Optional: run once in a process opened ahead of its first job (the
     * worker's spare, gt_sup.h), so that job does not pay the device's
     * first-use costs (modules, libraries, the first queries) inside it.
     * Loads no candidate; a failure is left to the job that meets it. */
    void (*warm)(gt_bk_ctx *ctx);
    /* Optional: the job's configs (JSON array) are about to be built in
     * order: start what their builds will wait for (compiles). */
    void (*prefetch)(gt_bk_prob *pp, const struct cJSON *cands);
    /* Compiles/loads one config. -1 with reason: the candidate fails. */
    int (*build)(gt_bk_prob *pp, const struct cJSON *cfg, gt_bk_cand **c, char *err, size_t errlen);
    void (*release)(gt_bk_cand *c);
    /* Runs c on fresh random inputs with a poisoned output and compares to a
     * higher-precision reference. *rel_err = ||out-ref||/||ref|| (NaN/inf
     * propagate); returns 0 when it ran (pass/fail is decided by the caller
     * against gt_bk_tolerance), -1 when it could not run. */
    int (*validate)(gt_bk_prob *pp, gt_bk_cand *c, double *rel_err, char *err, size_t errlen);
    int (*time)(gt_bk_prob *pp, gt_bk_cand *c, const gt_timing_opts *o, gt_timing *t,
                char *err, size_t errlen);
    /* Optional (NULL: the backend has no device state to report, cpu): the
     * device's state now (SM clock, power, temperature, clocks event
     * reasons), read right after each timing of the paired rounds. -1 with
     * the reason when it cannot be read (cuda without NVML): the caller
     * then records nothing for the job. */
    int (*state)(gt_bk_prob *pp, gt_gpu_sample *s, char *err, size_t errlen);
} gt_backend;

/* Relative-error tolerance for a problem's types (input and compute). */
double gt_bk_tolerance(const gt_problem *p);
/* Registered backends; NULL when the name is unknown or not built in. */
const gt_backend *gt_bk_find(const char *name);

extern const gt_backend gt_bk_cpu;
#ifdef GT_WITH_CUDA
extern const gt_backend gt_bk_cuda;
#endif

#endif
