/* gt_store_space.h: the store query behind GET /v1/runs/{id}/space/{problem}
 * (module prefix gt_store_space_): a problem of a run with the run's
 * backend and device model, and the arch and SM count of a worker of that
 * model, which the pruning rules need (server/http_space.c). */
#ifndef GT_STORE_SPACE_H
#define GT_STORE_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "gt_store.h"

typedef struct gt_spview_target {
    int64_t problem_id;
    char *key, *label, *spec;   /* problem key, label, JSON spec (owned) */
    char backend[16];
    char device_model[128];     /* "" while the run is not bound to a model */
    int64_t worker_id;          /* 0: no worker of that backend and model registered */
    char arch[64];              /* that worker's ("sm_90") */
    int units;                  /* its SMs (CUs on HIP) */
    char *gen_device;           /* its gen/gen_dev.h JSON text (owned), NULL when it sent none */
} gt_spview_target;

/* problem: the problem's id (decimal) or its canonical key, within the run.
 * The worker is the most recently seen one with the run's backend and
 * device model (any state: a gone worker still tells what the model is).
 * 0 with *t filled (release with gt_spview_target_fini), GT_STORE_NO_RUN,
 * GT_STORE_NO_PROBLEM, or -1 with err. */
int gt_store_space_target(gt_store *s, int64_t run_id, const char *problem, gt_spview_target *t,
                          char *err, size_t errlen);
void gt_spview_target_fini(gt_spview_target *t);

#endif
