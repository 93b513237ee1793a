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
} gt_sup;

/* Starts the bench child and waits for its hello (device description).
 * 0, or -1 with err (e.g. the device cannot be opened). */
int gt_sup_start(gt_sup *s, char *err, size_t errlen);
/* Ends the child (closing its input lets it exit; killed after a grace time). */
void gt_sup_stop(gt_sup *s);

/* Runs a leased job through the child and reports its results to the
 * coordinator in batches of `batch`. Returns 0 when the job was reported
 * done, 1 when it was abandoned (run cancelled, or stop set: what was
 * measured is reported and the lease lapses or is handed back), -1 when the
 * coordinator could not be reached or the child cannot be restarted. */
int gt_sup_run_job(gt_sup *s, const struct cJSON *job, gt_client *cl, int64_t worker_id,
                   int batch, volatile sig_atomic_t *stop);

/* The bench child's main loop (gemmtune-worker --bench-child FD): opens the
 * backend's device, says hello, then runs every job read from fd. */
int gt_sup_child_main(int fd, const gt_backend *bk, int device);

#endif
