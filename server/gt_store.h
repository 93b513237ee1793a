/* gt_store.h: the coordinator's durable state in SQLite (module prefix gt_store_).
 *
 * One database file in WAL mode holds runs, problems, jobs, results,
 * baselines and workers (schema/001_init.sql). Every state change happens in
 * one transaction, so a coordinator killed at any moment restarts on the same
 * file with no finished result lost and no job stuck: leases carry a
 * deadline and expire back to the queue.
 *
 * Thread safety: a gt_store serialises its calls with an internal mutex; the
 * HTTP threads and the worker dispatcher share one.
 *
 * server/ owns gemmtuned: this store (store*.c), the run options and the
 * planner (run_opts.c, plan.c, search_evo.c), the worker dispatcher
 * (dispatch.c, session.c, plausible.c), the HTTP API and its views (http*.c,
 * events.c, status_page.c, metrics.c, space_view.c) and the export files
 * (export.c, a library of its own that the CLI links too). Across folders
 * it sits above common/, proto/, gen/ and cuda/ and may include their
 * headers, never worker/, lib/ or cli/'s (common <- proto, gen, cuda <-
 * server, worker, lib <- cli, python, bench). Inside it the dependencies
 * run one way: run options, planner, search <- store <- dispatcher <- HTTP
 * API, events, status page, metrics <- main_gemmtuned.c. The store sits
 * below everything that speaks a wire format: it includes no protocol,
 * dispatcher or HTTP header (the dispatcher decodes worker messages into
 * the C values below, gt_worker_info and gt_report, and switches on
 * gt_store_error). */
#ifndef GT_STORE_H
#define GT_STORE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "gt_config.h"
#include "gt_gpu_state.h"
#include "gt_log.h"
#include "gt_plan.h"
#include "gt_run_opts.h"

struct cJSON;
typedef struct gt_store gt_store;

/* Opens (creating if needed) the database at path and applies pending
 * migrations. NULL with err set on failure. */
gt_store *gt_store_open(const char *path, char *err, size_t errlen);
void gt_store_close(gt_store *s);
/* A second connection to the same database file, for read-only traffic (the
 * HTTP API's GET requests): in WAL mode its readers and the writer of the
 * first connection never wait for each other, and each connection has its
 * own mutex. NULL with err set; NULL and err "" when the database has no
 * file (in-memory): the caller then shares the first connection. */
gt_store *gt_store_open_reader(gt_store *s, char *err, size_t errlen);
/* The raw connection, for exports (hold gt_store_lock around its use). */
sqlite3 *gt_store_db(gt_store *s);
void gt_store_lock(gt_store *s);
void gt_store_unlock(gt_store *s);
/* Checkpoints the WAL into the main file (graceful shutdown). Checks the
 * files first (gt_store_check_files) and checkpoints even when they were
 * removed: it writes only into the files the connection holds open, and
 * with a removed WAL it is what moves the work acknowledged before into the
 * database file a restart reads. */
int gt_store_checkpoint(gt_store *s);
/* The WAL's checkpoints on a thread of their own (store_ckpt.c): the
 * writer's commits only wake it, where the automatic checkpoint
 * (wal_autocheckpoint GT_STORE_AUTOCHECKPOINT pages, what gt_store_open
 * sets) copies inside the commit that crosses the threshold. Start after
 * gt_store_open, stop before gt_store_checkpoint and gt_store_close (it
 * puts the automatic checkpoint back). NULL with err (the store then keeps
 * the automatic checkpoint). Stats: checkpoints run by the thread, WAL
 * frames they copied, checkpoints the writer ran itself because the thread
 * was behind. */
#define GT_STORE_AUTOCHECKPOINT 10000
#define GT_STORE_BUSY_MS 5000
typedef struct gt_store_ckpt gt_store_ckpt;
gt_store_ckpt *gt_store_ckpt_start(gt_store *s, char *err, size_t errlen);
void gt_store_ckpt_stats(const gt_store_ckpt *c, long long *runs, long long *copied, long long *inline_runs);
void gt_store_ckpt_stop(gt_store_ckpt *c);
/* Group commit: between gt_store_batch_begin and gt_store_batch_end every
 * store call of this thread runs inside one transaction, and nothing is
 * durable before gt_store_batch_end commits: answer the requests a batch
 * served only after it returned 0. The store's lock is held in between;
 * other threads' store calls wait. One commit (WAL append, fsync at
 * checkpoints) for many workers' messages instead of one each.
 *
 * GUARDED: each of the calls' own transactions is a savepoint, so a failed
 * one undoes only itself and the others of the batch commit together.
 * UNGUARDED: they run straight in the batch's transaction. A savepoint
 * keeps the first image of every page it changes in a sub-journal, which
 * SQLite spills to a temporary file past 64 KiB, and a results message's
 * savepoint always did (12k page writes in 2 s against the WAL's 8.7k):
 * without them the dispatcher ingests 14-25 % more at 14-22 % less CPU per
 * result (docs/coord_bench.md).
 * A call that fails there having changed nothing (a refusal: unknown
 * worker, job not leased) leaves the batch as it was; one that fails after
 * it changed rows, or whose failure ended the transaction, cannot undo only
 * itself: it breaks the batch (gt_store_batch_broken). A broken batch
 * commits nothing: end it with gt_store_batch_abort, which rolls all of it
 * back, and serve its requests again in a GUARDED batch.
 *
 * 0, or -1 with err (batch_end: the batch's writes are rolled back). */
typedef enum {
    GT_STORE_BATCH_GUARDED = 1,
    GT_STORE_BATCH_UNGUARDED = 2,
} gt_store_batch_mode;
int gt_store_batch_begin(gt_store *s, gt_store_batch_mode mode, char *err, size_t errlen);
int gt_store_batch_end(gt_store *s, char *err, size_t errlen);
/* 1 when a call of the open UNGUARDED batch failed after writing. */
int gt_store_batch_broken(const gt_store *s);
/* Rolls the open batch back whole and ends it. */
void gt_store_batch_abort(gt_store *s);

/* ---- write health (/readyz, gemmtune_store_* on /metrics) ----
 *
 * Every write transaction of the store (BEGIN ... COMMIT/ROLLBACK, all of
 * them run through one helper) is one write attempt: it fails with the kind
 * of its first SQLite error, and succeeds when its COMMIT does and it
 * changed rows (one that changed none wrote nothing, so it proves nothing).
 * A transaction rolled back for a reason of the caller's (a malformed
 * message) is neither. */
enum {
    GT_STORE_ERR_FULL,     /* SQLITE_FULL: database or disk is full */
    GT_STORE_ERR_IO,       /* SQLITE_IOERR, CANTOPEN, CORRUPT, NOTADB */
    GT_STORE_ERR_BUSY,     /* SQLITE_BUSY, LOCKED: another process holds the file */
    GT_STORE_ERR_READONLY, /* SQLITE_READONLY, PERM */
    GT_STORE_ERR_LOST,     /* refused: the database or WAL file was removed or replaced */
    GT_STORE_ERR_OTHER,
    GT_STORE_ERR_KINDS
};
/* The kind's label value: full, io, busy, readonly, lost, other. */
const char *gt_store_err_kind_name(int kind);

typedef struct gt_store_health {
    uint64_t errors[GT_STORE_ERR_KINDS]; /* failed write attempts since open, by kind */
    int writable;          /* 1 until a write attempt fails, again after one succeeds;
                              0 for good once lost */
    int lost;              /* the files were removed or replaced: writes refused */
    int64_t last_write_ms; /* wall time of the last successful write; 0 none yet */
    int64_t last_error_ms; /* wall time of the last failed attempt; 0 none */
    char last_error[256];  /* its message, no file paths (/readyz is open) */
} gt_store_health;
/* A consistent copy; never waits for a transaction in progress. */
void gt_store_health_get(gt_store *s, gt_store_health *h);

/* Called once, from the thread whose commit noticed it, when the database
 * file or its WAL was removed or replaced under the store: every write from
 * then on is refused (the refused commit included), since what would be
 * acknowledged could not survive a restart. fn must only flag and wake (it
 * runs inside SQLite's commit, with the store's lock held). */
typedef void (*gt_store_lost_fn)(void *ctx, const char *why);
void gt_store_on_lost(gt_store *s, gt_store_lost_fn fn, void *ctx);
/* stat()s the database file and its WAL against the device and inode
 * recorded at open: 0 when both are still the ones the connection writes,
 * -1 when not (the store is then lost, see above). Runs before every commit
 * and checkpoint; a file-less (in-memory) store always passes. */
int gt_store_check_files(gt_store *s);

/* ---- runs ---- */
typedef struct gt_run_created {
    int64_t id;
    size_t problems, jobs, candidates;
} gt_run_created;

/* Writes a run planned from a parsed log (gt_plan_run of o and log): run,
 * problems, their jobs and searches in one transaction; nothing is written
 * when it fails. */
int gt_store_create_run(gt_store *s, const gt_run_opts *o, const gt_log_result *log,
                        const gt_plan *plan, gt_run_created *out, char *err, size_t errlen);
/* A verify run (POST /v1/runs/{id}/verify, server/store_verify.c): a new
 * run "verify of run ID" of src_run's backend, device model and options
 * (marked "verify": {"of": ID, "tolerance": T} in its stored options) that
 * re-times src_run's winners: per GEMM whose best entry is a tuned config,
 * a copy of the problem (same key, label, spec) and one final job of
 * candidates [that config] beside the baseline it was paired with, timed
 * as src_run's finals were. Its view (GET /v1/runs/{id}) then says
 * "verifies", per entry stored_uplift, the re-timed uplift, diff and
 * verify (pass/fail against the tolerance), and a "verify" summary. */
typedef struct gt_verify_created {
    int64_t id;
    size_t problems;    /* GEMMs re-timed */
    size_t skipped;     /* best entries with nothing to re-time (the baseline kept) */
} gt_verify_created;
enum { GT_STORE_VERIFY_NOT_DONE = 4, GT_STORE_VERIFY_NOTHING = 5 };
/* 0 with *out filled, GT_STORE_NO_RUN (no such run), GT_STORE_VERIFY_NOT_DONE
 * (the run is not done), GT_STORE_VERIFY_NOTHING (no entry to re-time: err
 * says why), or -1 with err; nothing is written unless 0. */
int gt_store_create_verify(gt_store *s, int64_t src_run, double tolerance, gt_verify_created *out,
                           char *err, size_t errlen);
/* Cancels a run: its queued and leased jobs are cancelled. 0, 1 when the run
 * does not exist, -1 on error. */
int gt_store_cancel_run(gt_store *s, int64_t run_id, char *err, size_t errlen);

/* ---- workers and jobs ---- */

/* Why a worker's request failed, as far as its caller answers differently
 * (the dispatcher tells an unknown worker to register again and refuses a
 * report for a job the sender never held): a code, never the error's text.
 * Negative, like every store error; err says the rest. */
typedef enum gt_store_error {
    GT_STORE_E_FAILED = -1,         /* a store error (SQLite, memory), or a report the store
                                       cannot take (unknown job, a bad enumeration) */
    GT_STORE_E_UNKNOWN_WORKER = -2, /* no such worker, or it left: it must register again */
    GT_STORE_E_NOT_LEASED = -3,     /* results for a job never leased to the sender */
} gt_store_error;

typedef struct gt_worker_info {
    char host[128];
    int pid;
    int device_index;
    char backend[16];
    char device_model[128];
    char arch[64];
    int64_t mem_bytes;
    int units;
    char driver[128];
    char version[32];
    /* gen/gen_dev.h's JSON text of the limits the worker's generated
     * families prune with (checked by the caller); "" when it sent none. */
    char gen_device[512];
    /* gt_session_digest of the credential the worker is given (never the
     * credential itself). */
    char session_digest[65];
} gt_worker_info;

int gt_store_register_worker(gt_store *s, const gt_worker_info *w, int64_t now_ms,
                             int64_t *worker_id, char *err, size_t errlen);
/* The worker whose session has this digest (and has not left): 0 with its
 * id, 1 when none, -1 on a store error. */
int gt_store_worker_by_session(gt_store *s, const char *digest, int64_t *worker_id, char *err,
                               size_t errlen);
/* Records a heartbeat and extends the lease of the job the worker works on
 * (job_id; 0: none, < 0: every job it holds, for workers that do not say)
 * to now + lease_ms. Returns 0, GT_STORE_E_UNKNOWN_WORKER when the worker is
 * unknown or gone (it must register again), or GT_STORE_E_FAILED with err. */
int gt_store_heartbeat(gt_store *s, int64_t worker_id, int64_t job_id, int64_t now_ms,
                       int64_t lease_ms, char *err, size_t errlen);
/* A worker leaves: its leased jobs go back to the queue. */
int gt_store_worker_bye(gt_store *s, int64_t worker_id, int64_t now_ms, char *err, size_t errlen);

/* A worker that got no job asks again after GT_RETRY_BUSY_MS while other
 * jobs are leased (their answers queue more), else GT_RETRY_IDLE_MS. */
#define GT_RETRY_BUSY_MS 100
#define GT_RETRY_IDLE_MS 500

typedef struct gt_job {
    int64_t id, run_id, problem_id;
    char kind[16];              /* enumerate, screen, final */
    char backend[16];
    int attempts;
    char *problem;              /* JSON text (owned) */
    char *candidates;           /* JSON array text (owned) */
    char *baseline;             /* JSON object text or NULL (owned) */
    char *timing;               /* JSON object text: min_time_ms, repeats, warmup (owned) */
    int keep;                   /* enumerate: gt_plan_enum_keep of the run, 0: all */
    int retry_ms;               /* no job leased: ask again after this long */
} gt_job;
void gt_job_free(gt_job *j);

/* Leases the next queued job this worker can run (its backend and, once a run
 * is bound, its device model). Returns 1 with *job filled, 0 when none
 * (job->retry_ms set), GT_STORE_E_UNKNOWN_WORKER, or GT_STORE_E_FAILED with
 * err. */
int gt_store_lease(gt_store *s, int64_t worker_id, int64_t now_ms, int64_t lease_ms,
                   gt_job *job, char *err, size_t errlen);

/* One measured config of a report. */
typedef struct gt_report_result {
    char *config;            /* canonical JSON text (gt_cfg_canonical), malloc'd */
    char config_hash[17];    /* gt_cfg_hash of it */
    int is_baseline;
    int valid;               /* only with a finite positive time_us and a finite rel_err */
    double time_us;          /* <= 0 or not finite: not timed */
    double spread;
    double tflops;
    double rel_err;          /* NaN: invalid */
    char reason[256];        /* why an invalid config failed; "" none */
    /* final phase, paired with the baseline: rounds > 0 with the median
     * uplift baseline / this and its interval; 0: not paired */
    int rounds;
    double uplift, uplift_lo, uplift_hi;
    gt_gpu_state gpu;        /* final phase: the GPU's state over its rounds; samples 0: none */
    int graph;               /* final phase: timed as CUDA graphs, not as the run's plain
                                launch (results.launch 'graph', schema 011) */
} gt_report_result;

/* What a worker reports about a job (a "results" message of the protocol,
 * decoded by the dispatcher: gt_dispatch_decode_report): the store reads C
 * values and texts, never the wire format. Strings are malloc'd;
 * gt_report_fini frees them. */
typedef struct gt_report {
    int64_t job_id;
    int done;                /* the job's last report: it moves the job on */
    char *error;             /* with done: the job failed with this reason; NULL: not */
    gt_report_result *results;
    size_t nresults;
    /* The untuned default as this job timed it: NULL config, or a time_us
     * not > 0 (NaN when not sent), when it did not run. */
    char *baseline_config;   /* canonical JSON text */
    double baseline_us;
    double baseline_spread;
    /* An enumerate job's answer (with done): the candidate space, a JSON
     * array text, and the default config, a JSON object text; NULL when
     * not sent. */
    char *enum_candidates;
    char *enum_baseline;
} gt_report;
void gt_report_fini(gt_report *r);

/* A batch of results for a job, idempotent (re-sent batches add nothing).
 * Only a worker the job was leased to may report for it. A time below what
 * the worker's registered device can physically reach (gt_plausible.h) is
 * stored invalid with the reason, an impossible baseline dropped; *rejected
 * counts both. Sets *cancelled when the job's run was cancelled (the worker
 * drops it). Returns 0, GT_STORE_E_UNKNOWN_WORKER, GT_STORE_E_NOT_LEASED
 * (a job the worker never held), or GT_STORE_E_FAILED with err (an unknown
 * job, an enumeration without its answer, a store error). */
int gt_store_report(gt_store *s, int64_t worker_id, const gt_report *rep, int64_t now_ms,
                    int64_t lease_ms, int *cancelled, size_t *accepted, size_t *rejected, char *err,
                    size_t errlen);

/* Requeues jobs whose lease deadline passed (failing those that reached
 * max_attempts) and marks workers silent for lost_ms as lost. Returns the
 * number of jobs requeued or failed, -1 on error. */
int gt_store_expire(gt_store *s, int64_t now_ms, int max_attempts, int64_t lost_ms, char *err,
                    size_t errlen);

/* ---- queries for the HTTP API (new JSON the caller owns; NULL + err) ---- */
/* One page of GET /v1/runs, newest first. */
#define GT_RUNS_LIMIT_DEFAULT 100
#define GT_RUNS_LIMIT_MAX 1000
typedef struct gt_runs_query {
    int limit;           /* runs in the page: 1..GT_RUNS_LIMIT_MAX */
    int64_t before;      /* only runs with id < before (the previous page's "next"); 0: none */
    const char *state;   /* filters, NULL: any */
    const char *backend;
    const char *name;    /* the submission's name */
} gt_runs_query;
/* {"runs": [...], "next": the id to pass as before for the next page, null on the last} */
struct cJSON *gt_store_runs_json(gt_store *s, const gt_runs_query *q, char *err, size_t errlen);
/* *found = 0 when the run does not exist. */
struct cJSON *gt_store_run_json(gt_store *s, int64_t run_id, int64_t now_ms, int *found,
                                char *err, size_t errlen);
struct cJSON *gt_store_results_json(gt_store *s, int64_t run_id, int *found, char *err,
                                    size_t errlen);
/* CSV of all results of a run into a new malloc'd string. */
char *gt_store_results_csv(gt_store *s, int64_t run_id, int *found, char *err, size_t errlen);
struct cJSON *gt_store_workers_json(gt_store *s, int64_t now_ms, char *err, size_t errlen);
/* Whether a run exists: 1, 0, -1 on error. */
int gt_store_run_exists(gt_store *s, int64_t run_id);

/* One measured config of a problem with what a kernel download needs
 * (GET /v1/runs/{id}/kernels/{problem}, server/http_kernels.c). */
typedef struct gt_kernel_row {
    int64_t problem_id;
    char *key, *label, *spec;   /* problem key, label, JSON spec (owned) */
    char *config;               /* canonical JSON (owned) */
    char config_hash[17];
    char backend[16];
    char device_model[128];
    char phase[8];              /* screen, final */
    char arch[64];              /* the measuring worker's ("sm_90"), "" unknown */
    int valid, winner;          /* winner: the problem's best valid result */
    int chained;                /* the run's option launch=chained */
    int graph;                  /* the run's option launch=graph */
    double time_us, baseline_us, rel_err; /* NAN when unknown */
} gt_kernel_row;
enum { GT_STORE_NO_RUN = 1, GT_STORE_NO_PROBLEM = 2, GT_STORE_NO_RESULT = 3 };
/* problem: the problem's id (decimal) or its canonical key, within the run;
 * config_hash NULL: the best valid result (problem_best's ranking), else
 * that candidate's result. 0 with *r filled (release with
 * gt_kernel_row_fini), GT_STORE_NO_RUN / _NO_PROBLEM / _NO_RESULT, or -1
 * with err. */
int gt_store_kernel_row(gt_store *s, int64_t run_id, const char *problem, const char *config_hash,
                        gt_kernel_row *r, char *err, size_t errlen);
void gt_kernel_row_fini(gt_kernel_row *r);

#endif
