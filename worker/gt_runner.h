/* gt_runner.h: runs one job through a backend inside the bench child
 * process, emitting an event for every step (module prefix gt_runner_).
 *
 * enumerate: the backend lists the candidate space on the device.
 * screen:    baseline first, then each candidate: build -> validate -> time.
 * final:     the top candidates and the baseline, validated, then timed in
 *            interleaved rounds so drift (clocks, temperature, neighbours)
 *            hits all of them alike; the median over rounds is reported.
 *
 * Events (JSON objects, "ev" names the kind), in order:
 *   {"ev":"start","i":N}       candidate N of the job's list is about to run
 *                              (-1: the baseline); the supervisor blames N
 *                              if the process dies or hangs now
 *   {"ev":"result","result":{...}}      one measured candidate (gt_result JSON)
 *   {"ev":"baseline","baseline":{config,time_us,spread}}
 *   {"ev":"enumerated","candidates":[...],"baseline_config":{...}}
 *   {"ev":"done"} or {"ev":"done","error":"..."}  (error: the job failed whole) */
#ifndef GT_RUNNER_H
#define GT_RUNNER_H

#include <signal.h>

#include "gt_backend.h"

struct cJSON;

/* Takes ownership of ev. Returns 0, or -1 when the event cannot be delivered
 * (the supervisor is gone): the runner then stops. */
typedef int (*gt_emit_fn)(void *ctx, struct cJSON *ev);

typedef struct gt_runner {
    const gt_backend *bk;
    gt_bk_ctx *ctx;
    gt_emit_fn emit;
    void *emit_ctx;
    /* The last screen job's prepared problem, kept for the next screen job
     * of the same problem (its shards often run back to back on one
     * worker): inputs, reference and rotating sets are made once, not once
     * per shard. A final job always prepares afresh, so the winners are
     * validated once more on inputs the screen never saw. */
    gt_bk_prob *kept;
    char *kept_problem; /* the job's "problem" object as text */
} gt_runner;

/* Runs a job (the "job" object of the protocol). Returns 0 when "done" was
 * emitted, -1 when an event could not be delivered. */
int gt_runner_run(gt_runner *r, const struct cJSON *job);
/* Releases what the runner keeps between jobs (before the backend's
 * context closes). */
void gt_runner_fini(gt_runner *r);

#endif
