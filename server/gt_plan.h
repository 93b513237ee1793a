/* gt_plan.h: what a run measures (module prefix gt_plan_): for each
 * problem, which candidate configs, how they are cut into screen jobs, and
 * how an evolutionary search starts. The decisions only: no I/O, no clock,
 * no SQL. The store persists a plan in one transaction (gt_store_create_run
 * for a new run; an enumerate job's answer for a problem whose space a
 * worker listed on its device) and keeps none of these rules.
 *
 * Inputs are the run's options (gt_run_opts.h) and either the parsed log
 * (the CPU backend's space is built here, gt_space_cpu) or a device's
 * enumeration; the evolutionary search's generation 0 comes from
 * search_evo.c. The same inputs give the same plan.
 *
 * Below the store (server/'s layers: gt_store.h): it includes the run
 * options, the search and common/, never the store, dispatcher or HTTP
 * headers; the store includes it for the types it writes. */
#ifndef GT_PLAN_H
#define GT_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "gt_log.h"
#include "gt_problem.h"
#include "gt_run_opts.h"
#include "gt_search_evo.h"

struct cJSON;

/* One screen job: the configs it times next to the problem's baseline. */
typedef struct gt_plan_job {
    char *candidates;        /* JSON array text (malloc'd) */
    int ncandidates;
} gt_plan_job;

/* What to persist for one problem. */
typedef struct gt_plan_problem {
    const gt_problem *problem; /* gt_plan_run: the log's; NULL after an enumeration */
    int enumerate;           /* its space comes from a worker on the device: one
                                enumerate job now, the rest planned from its answer */
    char *baseline;          /* JSON object text the screen jobs time beside their
                                configs (malloc'd); NULL with enumerate */
    gt_plan_job *jobs;       /* the screen jobs, in order (none: the problem goes
                                straight on to its final phase) */
    size_t njobs;
    int generation;          /* the jobs' evolutionary generation (0), -1 none */
    /* strategy=evolutionary: the search to record beside the problem */
    int search;
    char *space;             /* JSON array text of the whole space (malloc'd) */
    size_t space_size;       /* its distinct members */
    uint64_t seed;           /* the problem's search seed (gt_evo_seed) */
    gt_evo_limits lim;
    long issued;             /* members generation 0 drew from the space */
    size_t ncandidates;      /* configs the problem will measure in all */
} gt_plan_problem;

typedef struct gt_plan {
    gt_plan_problem *problems; /* one per problem of the log, in its order */
    size_t nproblems;
} gt_plan;

/* Plans a new run of log's problems on o's backend: the CPU's space is
 * built here (o->strategy, budget, seed + the problem's index, ncpu, and
 * o->candidates on top), another backend's problems each get an
 * enumeration. 0, or -1 with err (nothing to free then); release with
 * gt_plan_free. */
int gt_plan_run(const gt_run_opts *o, const gt_log_result *log, gt_plan *out, char *err,
                size_t errlen);
void gt_plan_free(gt_plan *p);

/* How many of an enumeration's first entries gt_plan_enumerated can use
 * for a run with options o: the budget with the exhaustive strategy (it
 * takes the list's head), 0 (the whole list) with random (a sample of all)
 * and evolutionary (the whole list is the search's space), or without a
 * budget. The enumerate job carries it, so that a worker sends, and
 * enumerates, no more than that. */
int gt_plan_enum_keep(const gt_run_opts *o);

/* Plans a problem after a worker enumerated its space on the device:
 * candidates (JSON array text, the backend's picks first) and its default
 * config baseline (JSON object text). problem_id seeds the random
 * strategy's sample, key (the problem's canonical key) the evolutionary
 * search. 0, or -1 with err; release with gt_plan_problem_fini. */
int gt_plan_enumerated(const gt_run_opts *o, int64_t problem_id, const char *key,
                       const char *candidates, const char *baseline, gt_plan_problem *out,
                       char *err, size_t errlen);
void gt_plan_problem_fini(gt_plan_problem *p);

/* cands (a JSON array) cut into jobs of at most shard_size configs, in
 * order, the first of shard_size / GT_PLAN_FIRST_SHARD_DIV when shard_size
 * is at least GT_PLAN_FIRST_SHARD_MIN (each GEMM's first result early):
 * *jobs malloc'd (NULL when cands is empty), each job's text malloc'd. 0,
 * or -1 when out of memory (nothing to free then). */
#define GT_PLAN_FIRST_SHARD_MIN 20
#define GT_PLAN_FIRST_SHARD_DIV 5
int gt_plan_shard(const struct cJSON *cands, int shard_size, gt_plan_job **jobs, size_t *njobs);
void gt_plan_jobs_free(gt_plan_job *jobs, size_t njobs);

#endif
