/* gt_sup.h: the worker's supervisor side of crash isolation (module prefix
 * gt_sup_).
 *
 * The worker process never touches the device. It starts a bench child (the
 * same executable with --bench-child) that opens the device and runs jobs,
 * streaming one event per step over a socket pair (gt_runner.h lists them).
 * A child that crashes (a signal, a CUDA sticky error that ends it) or stays
 * silent longer than the per-candidate limit (a hung kernel) is killed and
 * restarted; the candidate in flight is reported failed with the reason and
 * the job goes on with the candidates after it. The coordinator connection,
 * the heartbeats and every result already measured live in the supervisor,
 * so a bad candidate costs one restart, nothing else. */
#ifndef GT_SUP_H
#define GT_SUP_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "gt_backend.h"
#include "gt_client.h"
#include "gt_util.h"

struct cJSON;

typedef struct gt_sup {
    char backend[16];
    int device;
    const char *log_level;          /* passed on to the child, may be NULL */
    double cand_timeout_s;          /* silence allowed while a candidate runs */
    double prep_timeout_s;          /* silence allowed before the first candidate */
    pid_t pid;                      /* the bench child, 0 when none */
    int fd;                         /* our end of the socket pair */
    gt_str in;                      /* bytes read, not yet a whole line */
    gt_bk_device dev;               /* filled from the child's hello */
    long restarts;                  /* children restarted after a failure */
    /* Fresh finals (cuda): a final job whose baseline the screens timed
     * under GT_FRESH_FINAL_MAX_US runs in a child that ran nothing before,
     * started ahead (the spare) while the screening child works, and
     * ended after the job; the screening child, warm, takes the next one.
     * A CUDA context that has loaded seven modules or more launches every
     * kernel 0.15-0.35 us slower from then on (cuBLASLt's calls more than
     * the generated kernels; unloading the modules did not reliably undo
     * it, a new process does), so a final in the child that
     * screened overstated the uplift of kernels of a few us by 2-4 %
     * against the process that re-times the export
     * (bench/results/h100_42_module_state.txt). No final, fresh or not,
     * runs while a spare starts or a used one ends: their GPU work (the
     * warm-up, a context's teardown) would share the GPU with its rounds
     * (a 448 us GEMM's uplift stored 2.5 % high when it did); the screens
     * may overlap them. None on a GPU that holds one context at a time
     * (gt_bk_device.one_context). 0 (GT_WORKER_FRESH_FINAL=0
     * or another backend): finals in the screening child; 2
     * (GT_WORKER_FRESH_FINAL=all): every final in a fresh child. */
    int fresh_finals;
    pid_t spare_pid;                /* the spare child, 0 when none */
    int spare_fd;
    gt_str spare_in;
    int spare_ready;                /* its hello read: warmed up, idle until its job */
    int spare_fails;                /* spares in a row that did not start (3: fresh finals off) */
    pid_t dying_pid;                /* a used spare that is ending, reaped later */
} gt_sup;

/* Starts the bench child and waits for its hello (device description).
 * 0, or -1 with err (e.g. the device cannot be opened). */
int gt_sup_start(gt_sup *s, char *err, size_t errlen);
/* Ends the child and the spare (closing its input lets a child exit;
 * killed after a grace time). */
void gt_sup_stop(gt_sup *s);

/* Between jobs (no job to lease): reaps a used fresh-final child that has
 * ended, so none waits as a zombie while the worker idles. */
void gt_sup_idle(gt_sup *s);

/* Runs a leased job through the child and reports its results to the
 * coordinator in batches of `batch`. Returns 0 when the job was reported
 * done, 1 when it was abandoned (run cancelled, or stop set: what was
 * measured is reported and the lease lapses or is handed back), -1 when the
 * coordinator could not be reached or the child cannot be restarted. */
int gt_sup_run_job(gt_sup *s, const struct cJSON *job, gt_client *cl, int64_t worker_id,
                   int batch, volatile sig_atomic_t *stop);

/* The bench child's main loop (gemmtune-worker --bench-child FD): opens the
 * backend's device, warms it up when warm (a spare: --bench-warm,
 * gt_backend.warm), says hello, then runs every job read from fd. */
int gt_sup_child_main(int fd, const gt_backend *bk, int device, int warm);

#endif
