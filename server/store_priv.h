/* store_priv.h: internals shared by the store's files (store.c: open,
 * migrations, writing a planned run, reading its options; store_workers.c,
 * store_lease.c, store_report.c, store_phases.c: workers, leases, results,
 * a problem's phases; store_evo.c: the evolutionary search's state;
 * store_query.c: JSON views; store_progress.c: a run's progress). Not part
 * of the public interface. */
#ifndef GT_STORE_PRIV_H
#define GT_STORE_PRIV_H

#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "gt_policy.h"
#include "gt_store.h"

/* A file the store writes, as it was when recorded: a path that names
 * another inode (or none) is a file removed or replaced under the store. */
typedef struct gt_store_file {
    char *path;         /* NULL: not checked (in-memory database) */
    int known;          /* dev and ino recorded */
    dev_t dev;
    ino_t ino;
} gt_store_file;

#define GT_STORE_STMT_CACHE 96

struct gt_store {
    sqlite3 *db;
    pthread_mutex_t mu;
    /* The one statement run per reported result, kept prepared here
     * rather than in the statement cache below: the dispatcher's hottest
     * path takes it without the cache's lock and text comparisons. */
    sqlite3_stmt *ins_result;
    /* The write transaction gt_store_exec opened (under mu): the rows
     * changed before it (one that changes none proves nothing about the
     * disk) and its first SQLite error, so that the attempt counts once, at
     * its end. */
    int in_tx;
    /* The open gt_store_batch_begin transaction's mode (0: none; under mu);
     * in an UNGUARDED one, the rows changed before the call in progress
     * began its transaction, and whether a call failed after writing. */
    int batch;
    int64_t batch_changes0;
    int batch_broken;
    int64_t tx_changes0;
    int tx_err;
    char tx_msg[200];
    /* Write health: its own lock, so /readyz and /metrics never wait for a
     * transaction. */
    pthread_mutex_t hmu;
    gt_store_health health;
    /* Durability: the database file and its WAL (store.c). */
    gt_store_file dbf, walf;
    atomic_int lost;
    char lost_why[PATH_MAX + 192]; /* with the path, for logs and refusals (under hmu) */
    gt_store_lost_fn on_lost;
    void *on_lost_ctx;
    /* Prepared statements kept for reuse (gt_store_prep checks one out,
     * gt_store_finish returns it reset): preparing was 15 % of the
     * dispatcher's time under 256 simulated workers. Own lock: HTTP
     * threads prepare too. */
    pthread_mutex_t cmu;
    struct gt_store_stmt {
        char *sql;          /* the text it was prepared from; NULL: free slot */
        sqlite3_stmt *st;   /* NULL while checked out */
    } cache[GT_STORE_STMT_CACHE];
};

/* Prepares sql on the store's connection (or takes a cached statement of
 * the same text); NULL with err set. Statements are prepared with bound
 * parameters only: no value ever becomes SQL text. Give it back with
 * gt_store_finish, not sqlite3_finalize. */
sqlite3_stmt *gt_store_prep(gt_store *s, const char *sql, char *err, size_t errlen);
/* Resets st, clears its bindings and keeps it for the next gt_store_prep of
 * its text (finalizes it when the cache is full or it is not this store's).
 * NULL is a no-op. A reset statement holds no read snapshot, so cached ones
 * never stop a checkpoint. */
void gt_store_finish(gt_store *s, sqlite3_stmt *st);
/* A write transaction of its own (BEGIN IMMEDIATE, inside a batch a part of
 * it: gt_store_batch_begin) under the store's lock: 0, or -1 with err and
 * the lock released. gt_store_tx_end ends it: commits when rc >= 0 (a
 * failed commit makes rc -1), else rolls back; releases the lock; returns
 * rc. */
int gt_store_tx_begin(gt_store *s, char *err, size_t errlen);
int gt_store_tx_end(gt_store *s, int rc, char *err, size_t errlen);
/* problems.state and .error of problem pid (store_phases.c); the caller's
 * transaction. 0 or -1 with err. */
int gt_store_set_problem_state(gt_store *s, int64_t pid, const char *state, const char *error,
                               char *err, size_t errlen);
/* Run run_id done (finished at now_ms) when no problem of it is still in
 * a phase (store_phases.c); the caller's transaction. 0 or -1 with err. */
int gt_store_finish_run_if_done(gt_store *s, int64_t run_id, int64_t now_ms, char *err,
                                size_t errlen);
/* Runs SQL without parameters (transactions, DDL). 0 or -1 with err. */
int gt_store_exec(gt_store *s, const char *sql, char *err, size_t errlen);
/* Steps a statement that returns no rows and finishes it. 0 or -1. */
int gt_store_step_done(gt_store *s, sqlite3_stmt *st, char *err, size_t errlen);
/* Prepares sql, binds the n integers v to ?1..?n and steps it like
 * gt_store_step_done: for the many statements whose parameters are all ids,
 * times and counts. 0 or -1 with err. */
int gt_store_exec_i64(gt_store *s, const char *sql, const int64_t *v, int n, char *err,
                      size_t errlen);
/* Binds text or NULL. */
int gt_store_bind_text(sqlite3_stmt *st, int i, const char *v);
/* Reads a column as text, "" when NULL. */
const char *gt_store_col_text(sqlite3_stmt *st, int i);
/* A malloc'd copy of gt_store_col_text in *out: 0, or -1 out of memory. */
int gt_store_col_dup(char **out, sqlite3_stmt *st, int i);

/* A scalar subquery: the median (store.c's median()) of the baseline's times
 * in the screen jobs of problem `pid` on `backend` and `model` (SQL
 * expressions): one disturbed screen job must not move it. What a final
 * phase's baseline is checked against (the lease's baseline_ref_us, the run
 * view's baseline_screen_us and baseline_drift). NULL before any. */
#define GT_STORE_SCREEN_BASELINE_SQL(pid, backend, model)                                        \
    "(SELECT median(bl.time_us) FROM baselines bl JOIN jobs jb ON jb.id = bl.job_id"                \
    " WHERE bl.problem_id = " pid " AND jb.kind = 'screen' AND bl.backend = " backend              \
    " AND bl.device_model = " model ")"

/* A scalar subquery: the id of problem `pid`'s best final-phase result
 * (NULL when none). A finalist paired with the baseline (rounds not NULL:
 * common/gt_paired.h) is eligible only when its uplift interval lies above
 * GT_MIN_GAIN (gt_policy.h); otherwise the final's baseline row, the default, is the entry ("no
 * significant gain"). Among eligible paired rows the largest paired uplift
 * wins (the baseline's is 1); unpaired rows (older finals) keep the fastest
 * time. schema/006_final_rounds.sql's problem_best view says the same. */
#define GT_STORE_BEST_FINAL_SQL(pid)                                                              \
    "(SELECT r2.id FROM results r2 WHERE r2.problem_id = " pid " AND r2.phase = 'final'"          \
    " AND r2.valid = 1 AND r2.time_us IS NOT NULL"                                                 \
    " AND (r2.rounds IS NULL OR r2.is_baseline = 1 OR r2.uplift_lo > " GT_MIN_GAIN_SQL ")"        \
    " ORDER BY r2.uplift DESC, r2.time_us, r2.id LIMIT 1)"

/* A scalar subquery: the id of problem `pid`'s best entry, the one the run
 * view, the kernel download and verify runs report: its best final-phase
 * result (GT_STORE_BEST_FINAL_SQL), else its fastest valid screen result
 * (NULL when it has neither). */
#define GT_STORE_BEST_SQL(pid)                                                                    \
    "COALESCE(" GT_STORE_BEST_FINAL_SQL(pid) ","                                                   \
    " (SELECT r2.id FROM results r2 WHERE r2.problem_id = " pid " AND r2.phase = 'screen'"        \
    " AND r2.valid = 1 AND r2.time_us IS NOT NULL ORDER BY r2.time_us, r2.id LIMIT 1))"

/* The run view's best entries (store_query.c): adds to root "best", one
 * entry per problem of run_id, and the workload summaries. Caller holds
 * the lock. 0, or -1 (err set when it is a database error). */
int gt_store_add_best(gt_store *s, struct cJSON *root, int64_t run_id, char *err, size_t errlen);
/* A verify run's view (store_verify.c): when options (the run's stored
 * options) mark it a verify run, adds "verifies", the "verify" summary and
 * per best entry stored_uplift, the winner's re-timed uplift, diff and
 * verify; nothing for other runs. Caller holds the lock. 0, or -1 with
 * err. */
int gt_store_add_verify(gt_store *s, struct cJSON *root, int64_t run_id, const char *options,
                        char *err, size_t errlen);

/* The options of run_id as submitted (gt_run_opts_from_stored over its
 * options and columns): what reads a run's options reads them here, so
 * every default comes from gt_run_opts_default. 0, or -1 with err (no such
 * run, out of memory); release with gt_run_opts_fini. */
int gt_store_run_opts(gt_store *s, int64_t run_id, gt_run_opts *o, char *err, size_t errlen);

/* After a job reached a final state: creates the problem's next job (final
 * phase) or closes the problem and the run. Runs inside the caller's
 * transaction. */
int gt_store_advance_problem(gt_store *s, int64_t problem_id, int64_t now_ms, char *err,
                             size_t errlen);
/* Writes the planned screen jobs of a problem, each beside baseline (JSON
 * object text), tagged with an evolutionary generation (< 0: none) and
 * with its index in jobs as its shard (the lease takes every problem's
 * shard 0 first: store_lease.c next_job). Caller's transaction. */
int gt_store_insert_jobs(gt_store *s, int64_t run_id, int64_t problem_id, const char *backend,
                         const gt_plan_job *jobs, size_t njobs, const char *baseline,
                         int generation, int64_t now_ms, char *err, size_t errlen);
/* Writes what a plan decided for a problem: its search (when it has one)
 * and its screen jobs. Caller's transaction. */
int gt_store_insert_plan(gt_store *s, int64_t run_id, int64_t problem_id, const char *backend,
                         const gt_plan_problem *pp, int64_t now_ms, char *err, size_t errlen);

/* strategy=evolutionary (store_evo.c), in the caller's transaction.
 * Records a problem's search as planned (gt_plan.h: its whole space, seed,
 * limits and generation 0's draw); the planned jobs are written by the
 * caller. */
int gt_store_evo_record(gt_store *s, int64_t run_id, int64_t problem_id,
                        const gt_plan_problem *pp, char *err, size_t errlen);
/* Configs the evolutionary searches of run ?1 have still to propose (one
 * row, one column): the progress views add them to the candidates total. */
#define GT_STORE_EVO_PENDING_SQL                                                                   \
    "SELECT COALESCE(SUM(s.budget - s.issued), 0) FROM spaces s"                                  \
    " JOIN problems p ON p.id = s.problem_id WHERE s.run_id = ?1 AND s.state = 'searching'"      \
    " AND p.state = 'screening' AND s.budget > s.issued"
/* A run's progress (store_progress.c), shared by the run views
 * (store_query.c) and the summary (store_stats.c). */
typedef struct gt_run_counts {
    long problems, problems_done, problems_failed, problems_cancelled;
    long jobs, jobs_queued, jobs_leased, jobs_done, jobs_failed, jobs_cancelled;
    long cands_total, cands_done, cands_valid;
} gt_run_counts;

/* The counters of run_id; the candidates total counts what evolutionary
 * searches have still to propose. 0, or -1 with err. */
int gt_store_run_counts(gt_store *s, int64_t run_id, gt_run_counts *c, char *err, size_t errlen);
/* Share of the run's work finished: screen candidates plus one final phase
 * per problem (problems still enumerating count as one unit each); 1 once
 * the run is done. A failed problem is finished work; a cancelled one is
 * not: a cancelled run's progress stays at the share done before. */
double gt_store_run_progress(const gt_run_counts *c, const char *state);
/* Adds the "problems", "jobs" and "candidates" objects of c. 1, or 0 when
 * out of memory. */
int gt_store_add_run_counts(struct cJSON *root, const gt_run_counts *c);
/* Adds "eta_s": the time left at the pace so far, null while it cannot be
 * told (not running, not started, nothing done yet). 1, or 0 when out of
 * memory. */
int gt_store_add_eta(struct cJSON *o, int started, double elapsed_s, double progress,
                     const char *state);

/* Called when a problem has no job left: for a problem whose search goes on,
 * queues the next generation (*queued = 1); otherwise (search over, or not
 * an evolutionary problem) *queued = 0 and the caller moves on to the final
 * phase. */
int gt_store_evo_step(gt_store *s, int64_t problem_id, int64_t now_ms, int *queued, char *err,
                      size_t errlen);

/* Scalar subqueries over problem `pid`, the one home of the substitute
 * baseline's SQL (the run view, the watchers' summary and the export read
 * it): the baseline config its final job pairs against (NULL before the
 * final phase); the default its screen jobs time; why the default could not
 * run (a screen's invalid baseline result, worker/runner.c); and 1 when the
 * final pairs against a substitute (its baseline is not the screens'
 * default: store_substitute.c), else 0. Configs are stored as cJSON's
 * unformatted text of integers and strings, so equal configs are equal JSON
 * text. */
#define GT_STORE_FINAL_BASE_SQL(pid)                                                               \
    "(SELECT f.baseline FROM jobs f WHERE f.problem_id = " pid " AND f.kind = 'final'"            \
    " AND f.baseline IS NOT NULL ORDER BY f.id DESC LIMIT 1)"
#define GT_STORE_SCREEN_BASE_SQL(pid)                                                              \
    "(SELECT sc.baseline FROM jobs sc WHERE sc.problem_id = " pid " AND sc.kind = 'screen'"       \
    " AND sc.baseline IS NOT NULL ORDER BY sc.id LIMIT 1)"
#define GT_STORE_DEFAULT_FAILED_SQL(pid)                                                           \
    "(SELECT x.reason FROM results x WHERE x.problem_id = " pid " AND x.is_baseline = 1"          \
    " AND x.valid = 0 AND x.reason IS NOT NULL ORDER BY x.id LIMIT 1)"
#define GT_STORE_SUBSTITUTE_SQL(pid)                                                               \
    GT_STORE_SUBSTITUTE_OF(GT_STORE_FINAL_BASE_SQL(pid), GT_STORE_SCREEN_BASE_SQL(pid))
/* The same rule over the two baselines already read (SQL expressions): a
 * view of many problems reads each once per problem (gt_store_add_best),
 * where GT_STORE_SUBSTITUTE_SQL's text runs the final's lookup three times. */
#define GT_STORE_SUBSTITUTE_OF(fb, sb)                                                             \
    "(" fb " IS NOT NULL AND json(" fb ") IS NOT json(COALESCE(" sb ", " fb ")))"

/* The substitute baseline of problem pid (store_substitute.c): when its
 * default failed in the screen (a screen job reported the baseline invalid)
 * and no screen timed it, *out is the fastest valid screen candidate that
 * is backend's library-default-like choice (cpu: the default blocking for
 * ncpu cores; cuda: a cuBLASLt config), else the fastest valid one: 1.
 * 0 (*out NULL) when the default ran or nothing valid is there; -1 with
 * err. */
int gt_store_pick_substitute(gt_store *s, int64_t pid, const char *backend, int ncpu,
                             struct cJSON **out, char *err, size_t errlen);

#endif
