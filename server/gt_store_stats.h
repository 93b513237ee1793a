/* gt_store_stats.h: read-only queries of the store for observability
 * (module prefix gt_store_stats_ / gt_store_run_): the counts behind
 * /metrics, a cheap change fingerprint and a compact summary of a run for the
 * /v1/runs/{id}/events stream, and the best-time timeline of a run's
 * problems for /v1/runs/{id}/timeline and the status page.
 *
 * Every query goes through an index (problem ids, run ids, job states), so
 * the answers stay in milliseconds on databases with 100k results. */
#ifndef GT_STORE_STATS_H
#define GT_STORE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "gt_store.h"

struct cJSON;

/* The states of the schema's CHECK constraints, in the order of the count
 * arrays below. */
#define GT_STATS_RUN_STATES 4
#define GT_STATS_JOB_STATES 5
#define GT_STATS_PROBLEM_STATES 6
#define GT_STATS_WORKER_STATES 4
extern const char *const gt_stats_run_states[GT_STATS_RUN_STATES];
extern const char *const gt_stats_job_states[GT_STATS_JOB_STATES];
extern const char *const gt_stats_problem_states[GT_STATS_PROBLEM_STATES];
extern const char *const gt_stats_worker_states[GT_STATS_WORKER_STATES];

typedef struct gt_stats_worker {
    int64_t id;
    char host[128];
    char device_model[128];
    char backend[16];
    char state[8];
    int64_t last_heartbeat_ms;
} gt_stats_worker;

typedef struct gt_store_stats {
    int64_t runs[GT_STATS_RUN_STATES];
    int64_t jobs[GT_STATS_JOB_STATES];
    int64_t problems[GT_STATS_PROBLEM_STATES];
    int64_t workers[GT_STATS_WORKER_STATES];
    int64_t results_valid, results_invalid;
    int64_t results_window;      /* results created in [now - window, now] */
    gt_stats_worker *w;          /* workers not 'gone' (malloc'd) */
    size_t nw;
} gt_store_stats;

/* Running totals of the results table kept between collections, so each
 * one reads only the rows added since (results are inserted, never updated
 * or deleted; a COUNT(*) that disagrees triggers a full recount). Zero it
 * before the first use; the store's lock guards it during a collection. */
typedef struct gt_results_tally {
    int64_t last_id, total, valid;
} gt_results_tally;

/* Fills out (zeroed first). tally: NULL, or the totals of the previous
 * call. 0, or -1 with err. Free with gt_store_stats_free. */
int gt_store_stats_collect(gt_store *s, int64_t now_ms, int64_t window_ms,
                           gt_results_tally *tally, gt_store_stats *out, char *err,
                           size_t errlen);
void gt_store_stats_free(gt_store_stats *st);

/* A short text that changes whenever the run's summary can change (state,
 * newest result, job counts per state, problems per state): polled often,
 * it costs a few index lookups. 1 found, 0 no such run, -1 error. */
int gt_store_run_fingerprint(gt_store *s, int64_t run_id, char *fp, size_t fplen);

/* The run's summary: id, name, state, progress, elapsed_s, eta_s, problems,
 * jobs and candidates counts, weighted_uplift and flop_weighted_uplift, the
 * same numbers and names as GET /v1/runs/{id} without the per-GEMM list
 * (computed with per-problem index lookups instead of the problem_best view,
 * which ranks every result of the database). *found = 0 when no such run. */
struct cJSON *gt_store_run_summary(gt_store *s, int64_t run_id, int64_t now_ms, int *found,
                                   char *err, size_t errlen);

/* Per problem of the run (heaviest first): problem_id, label, calls,
 * weight, state, and its best as GET /v1/runs/{id} reports it (phase,
 * time_us, baseline_us, uplift), and points [[created_ms, best_us], ...]:
 * the best valid time (screen or final) each time it improved. Also the
 * run's state, created_ms, started_ms and finished_ms. *found = 0 when no
 * such run. */
struct cJSON *gt_store_run_timeline(gt_store *s, int64_t run_id, int *found, char *err,
                                    size_t errlen);

#endif
