/* gt_runner.h: runs one leased job through a backend and reports its results
 * in batches (module prefix gt_runner_).
 *
 * enumerate: the backend lists the candidate space on the device.
 * screen:    baseline first, then each candidate: build -> validate -> time,
 *            a results message every `batch` candidates.
 * final:     the top candidates and the baseline, validated, then timed in
 *            interleaved rounds so drift (clocks, temperature, neighbours)
 *            hits all of them alike; the median over rounds is reported. */
#ifndef GT_RUNNER_H
#define GT_RUNNER_H

#include <signal.h>
#include <stdint.h>

#include "gt_backend.h"
#include "gt_client.h"

struct cJSON;

typedef struct gt_runner {
    const gt_backend *bk;
    gt_bk_ctx *ctx;
    gt_bk_device dev;
    gt_client *client;
    int64_t worker_id;
    int batch;                       /* results per message */
    volatile sig_atomic_t *stop;     /* finish the candidate in flight, report, return */
    long candidates_run;             /* statistics */
} gt_runner;

/* Returns 0 when the job was reported done, 1 when it was abandoned
 * (cancelled run, stop requested: its lease lapses or is handed back), -1
 * when the coordinator could not be reached. */
int gt_runner_run(gt_runner *r, const struct cJSON *job);

#endif
