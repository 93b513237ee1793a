/* gt_run_opts.h: a run's options (module prefix gt_run_opts_): what a
 * submission may set, the one place their defaults and accepted ranges are
 * written down, and their stored form.
 *
 * Options arrive as a JSON body or a query string (POST /v1/runs), are
 * checked here, and are kept by the store: name, backend, device_model,
 * strategy and budget in columns of their own, the rest as the JSON text of
 * gt_run_opts_to_stored in runs.options. Whatever reads a run's options
 * later (the planner, the lease's timing, the final phase, the evolutionary
 * search, the kernel download) reads them back through
 * gt_run_opts_from_stored into this struct, so an option absent from an
 * older database gets the same default as a new submission. Pure: no I/O
 * (ncpu's default is this machine's core count). At the bottom of server/
 * (its layers: gt_store.h): it includes common/ only. */
#ifndef GT_RUN_OPTS_H
#define GT_RUN_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "gt_config.h"
#include "gt_log.h"

struct cJSON;

typedef struct gt_run_opts {
    char name[128];
    char backend[16];           /* "cpu" (default), "cuda", "hip" */
    char device_model[128];     /* "" = bound to the first worker that leases */
    gt_strategy strategy;
    int budget;                 /* max candidates per problem; 0 = all */
    int shard_size;             /* candidates per job */
    int final_k;                /* top configs re-timed next to the baseline */
    double final_family_ratio;  /* besides, each other family's best config within this
                                   ratio of the best screen time (store_phases.c);
                                   0: none, else 1..10 */
    int final_rounds;           /* the final phase's round budget (GT_FINAL_ROUNDS) */
    double final_ci;            /* the final's target relative width of an uplift's
                                   interval (GT_FINAL_CI_WIDTH); 0: run the budget */
    int ncpu;                   /* cpu backend: cores of the target machines */
    uint64_t seed;              /* seed of the random and evolutionary strategies */
    int population;             /* evolutionary: configs per generation; 0 = max(8, budget/5) */
    int generations;            /* evolutionary: max generations; 0 = budget/population */
    double min_time_ms;         /* timing: per repeat */
    int repeats;
    int warmup;
    int chained;                /* "launch": "chained": generated gemv kernels timed with
                                   programmatic dependent launch (cuda, sm_90+) */
    int graph;                  /* "launch": "graph": every candidate timed as replays of a
                                   CUDA graph of its calls (cuda); never with chained */
    gt_log_opts log;            /* format, skip_invalid, threshold */
    char *candidates;           /* JSON array of configs added to every problem's
                                   space ("candidates" in a JSON POST); owned */
} gt_run_opts;

void gt_run_opts_default(gt_run_opts *o);
void gt_run_opts_fini(gt_run_opts *o);
/* Reads run options from a JSON object (POST body fields). Unknown fields are
 * an error (a typo must not silently fall back to a default). */
int gt_run_opts_from_json(gt_run_opts *o, const struct cJSON *j, char *err, size_t errlen);
/* Same, from "key=value" pairs (query string of a text POST). */
int gt_run_opts_set(gt_run_opts *o, const char *key, const char *value, char *err, size_t errlen);
/* The rules between options, once all are read (launch=chained and
 * launch=graph need backend cuda). 0, or -1 with the reason. */
int gt_run_opts_check(const gt_run_opts *o, char *err, size_t errlen);
/* The option launch's value: "plain", "chained" or "graph". */
const char *gt_run_opts_launch(const gt_run_opts *o);

/* The stored form (runs.options): a new JSON object of every option that
 * has no column of its own, or NULL when out of memory. */
struct cJSON *gt_run_opts_to_stored(const gt_run_opts *o);
/* o from the defaults, then the stored form's text (NULL or "": none) on
 * top. Lenient where gt_run_opts_from_json is strict: a field this version
 * does not know, or a value it no longer accepts (a database written by
 * another version), keeps its default instead of making the run
 * unreadable. 0, or -1 out of memory (o is then the defaults). */
int gt_run_opts_from_stored(gt_run_opts *o, const char *options);

#endif
