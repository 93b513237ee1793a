/* store_jobs.c: the job life cycle in the store: workers register and
 * heartbeat, lease jobs, report results idempotently; expired leases go back
 * to the queue; a problem moves enumerate -> screen -> final -> done. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_plan.h"
#include "gt_plausible.h"
#include "gt_policy.h"
#include "gt_util.h"
#include "store_priv.h"

/* Wraps fn(s, ...) in BEGIN IMMEDIATE / COMMIT under the store mutex. */
#define TX_BEGIN(s, err, errlen)                                                                   \
    gt_store_lock(s);                                                                              \
    if (gt_store_exec(s, "BEGIN IMMEDIATE", err, errlen)) {                                        \
        gt_store_unlock(s);                                                                        \
        return -1;                                                                                 \
    }
static int tx_end(gt_store *s, int rc, char *err, size_t errlen)
{
    char tmp[128];
    if (rc >= 0 && gt_store_exec(s, "COMMIT", err, errlen))
        rc = -1;
    if (rc < 0)
        gt_store_exec(s, "ROLLBACK", tmp, sizeof tmp);
    gt_store_unlock(s);
    return rc;
}

void gt_job_free(gt_job *j)
{
    free(j->problem);
    free(j->candidates);
    free(j->baseline);
    free(j->timing);
    memset(j, 0, sizeof *j);
}

void gt_report_fini(gt_report *r)
{
    for (size_t i = 0; i < r->nresults; i++)
        free(r->results[i].config);
    free(r->results);
    free(r->error);
    free(r->baseline_config);
    free(r->enum_candidates);
    free(r->enum_baseline);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ workers */

int gt_store_register_worker(gt_store *s, const gt_worker_info *w, int64_t now_ms, int64_t *worker_id,
                             char *err, size_t errlen)
{
    TX_BEGIN(s, err, errlen);
    int rc = -1;
    /* A worker that restarts on the same device replaces its old entry: the
     * old one's leases go back to the queue right away instead of waiting
     * for their deadline. */
    sqlite3_stmt *st = gt_store_prep(
        s,
        "UPDATE jobs SET state = 'queued', lease_owner = NULL, updated_ms = ?4 WHERE state = 'leased'"
        " AND lease_owner IN (SELECT id FROM workers WHERE host = ?1 AND device_index = ?2"
        " AND backend = ?3 AND pid = ?5)",
        err, errlen);
    if (!st)
        goto out;
    gt_store_bind_text(st, 1, w->host);
    sqlite3_bind_int(st, 2, w->device_index);
    gt_store_bind_text(st, 3, w->backend);
    sqlite3_bind_int64(st, 4, now_ms);
    sqlite3_bind_int(st, 5, w->pid);
    if (gt_store_step_done(s, st, err, errlen))
        goto out;
    st = gt_store_prep(s,
                       "INSERT INTO workers(host, pid, device_index, backend, device_model, arch,"
                       " mem_bytes, units, driver, version, state, registered_ms, last_heartbeat_ms,"
                       " gen_device, session_digest)"
                       " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'idle', ?, ?, ?, ?)",
                       err, errlen);
    if (!st)
        goto out;
    gt_store_bind_text(st, 1, w->host);
    sqlite3_bind_int(st, 2, w->pid);
    sqlite3_bind_int(st, 3, w->device_index);
    gt_store_bind_text(st, 4, w->backend);
    gt_store_bind_text(st, 5, w->device_model);
    gt_store_bind_text(st, 6, w->arch);
    sqlite3_bind_int64(st, 7, w->mem_bytes);
    sqlite3_bind_int(st, 8, w->units);
    gt_store_bind_text(st, 9, w->driver);
    gt_store_bind_text(st, 10, w->version);
    sqlite3_bind_int64(st, 11, now_ms);
    sqlite3_bind_int64(st, 12, now_ms);
    gt_store_bind_text(st, 13, w->gen_device[0] ? w->gen_device : NULL);
    gt_store_bind_text(st, 14, w->session_digest[0] ? w->session_digest : NULL);
    if (gt_store_step_done(s, st, err, errlen))
        goto out;
    *worker_id = sqlite3_last_insert_rowid(s->db);
    rc = 0;
out:
    return tx_end(s, rc, err, errlen);
}

int gt_store_worker_by_session(gt_store *s, const char *digest, int64_t *worker_id, char *err,
                               size_t errlen)
{
    sqlite3_stmt *st = gt_store_prep(
        s, "SELECT id FROM workers WHERE session_digest = ? AND state != 'gone' ORDER BY id DESC",
        err, errlen);
    if (!st)
        return -1;
    gt_store_bind_text(st, 1, digest);
    int r = sqlite3_step(st), rc = 1;
    if (r == SQLITE_ROW) {
        *worker_id = sqlite3_column_int64(st, 0);
        rc = 0;
    } else if (r != SQLITE_DONE) {
        snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(s->db));
        rc = -1;
    }
    gt_store_finish(s, st);
    return rc;
}

int gt_store_heartbeat(gt_store *s, int64_t worker_id, int64_t job_id, int64_t now_ms,
                       int64_t lease_ms, char *err, size_t errlen)
{
    TX_BEGIN(s, err, errlen);
    int rc = -1;
    if (gt_store_exec_i64(s,
                          "UPDATE workers SET last_heartbeat_ms = ?2,"
                          " state = CASE WHEN state = 'lost' THEN 'idle' ELSE state END"
                          " WHERE id = ?1 AND state != 'gone'",
                          (int64_t[]){worker_id, now_ms}, 2, err, errlen))
        goto out;
    if (sqlite3_changes(s->db) == 0) {
        rc = GT_STORE_E_UNKNOWN_WORKER;
        goto out;
    }
    /* Only the job the worker says it works on stays leased: one it gave
     * up (its results were refused) must expire and go back to the queue.
     * job_id < 0: a worker that does not say (older), every lease of it. */
    if (gt_store_exec_i64(s,
                          "UPDATE jobs SET lease_deadline_ms = ?2 WHERE lease_owner = ?1"
                          " AND state = 'leased' AND (?3 < 0 OR id = ?3)",
                          (int64_t[]){worker_id, now_ms + lease_ms, job_id}, 3, err, errlen))
        goto out;
    rc = 0;
out:
    return tx_end(s, rc, err, errlen);
}

int gt_store_worker_bye(gt_store *s, int64_t worker_id, int64_t now_ms, char *err, size_t errlen)
{
    TX_BEGIN(s, err, errlen);
    int rc = -1;
    const char *sqls[] = {
        "UPDATE jobs SET state = 'queued', lease_owner = NULL, updated_ms = ?2"
        " WHERE lease_owner = ?1 AND state = 'leased'",
        "UPDATE workers SET state = 'gone', last_heartbeat_ms = ?2 WHERE id = ?1",
    };
    for (size_t i = 0; i < 2; i++)
        if (gt_store_exec_i64(s, sqls[i], (int64_t[]){worker_id, now_ms}, 2, err, errlen))
            goto out;
    rc = 0;
out:
    return tx_end(s, rc, err, errlen);
}

/* -------------------------------------------------------------------- lease */

/* Timing settings a job is run with (o: the run's options). The final
 * phase measures few configs precisely, so it gets longer repeats than the
 * screen, timed in paired rounds (common/gt_paired.h) up to final_rounds,
 * until every uplift's interval is narrower than final_ci; "repeats" is
 * what a worker from before the paired rounds takes as its round count. */
static char *timing_json(const gt_run_opts *o, const char *kind, double baseline_ref_us, int final_launch)
{
    cJSON *t = cJSON_CreateObject();
    char *txt = NULL;
    if (!t)
        return NULL;
    double min_ms = o->min_time_ms, repeats = o->repeats, warmup = o->warmup;
    if (!strcmp(kind, "final")) {
        min_ms *= 4;
        repeats = repeats * 2 < 9 ? 9 : repeats * 2;
    }
    if (cJSON_AddNumberToObject(t, "min_time_ms", min_ms) &&
        cJSON_AddNumberToObject(t, "repeats", repeats) &&
        cJSON_AddNumberToObject(t, "warmup", warmup) &&
        (!o->chained || cJSON_AddTrueToObject(t, "chained")) &&
        (!o->graph || cJSON_AddTrueToObject(t, "graph")) &&
        /* the paired rounds' budget and stopping width (common/gt_paired.h) */
        (strcmp(kind, "final") || (cJSON_AddNumberToObject(t, "rounds", o->final_rounds) &&
                                   cJSON_AddNumberToObject(t, "ci_width", o->final_ci))) &&
        (strcmp(kind, "final") || !(baseline_ref_us > 0) ||
         cJSON_AddNumberToObject(t, "baseline_ref_us", baseline_ref_us)) &&
        /* a verify run's final: timed as the winner it re-times was (the
         * worker does not decide launch-boundness again) */
        (final_launch < 0 || cJSON_AddStringToObject(t, "final_launch", final_launch ? "graph" : "plain")))
        txt = cJSON_PrintUnformatted(t);
    cJSON_Delete(t);
    return txt;
}

static char *dup_col(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return NULL;
    return strdup(gt_store_col_text(st, i));
}

/* A job leased again (its worker died, or was killed by a candidate that
 * crashed or hung it) resumes where it stopped: candidates that already have
 * a result for this problem and device model are not sent again. So a
 * candidate that crashed its worker's bench process, and was recorded as
 * such, is never dispatched a second time. */
static int drop_measured(gt_store *s, gt_job *job, const char *model, char *err, size_t errlen)
{
    cJSON *cands = cJSON_Parse(job->candidates);
    if (!cands) {
        snprintf(err, errlen, "job %lld: stored candidates are not JSON", (long long)job->id);
        return -1;
    }
    sqlite3_stmt *st = gt_store_prep(
        s,
        "SELECT 1 FROM results WHERE problem_id = ?1 AND backend = ?2 AND config_hash = ?3"
        " AND device_model = ?4 AND phase = 'screen'",
        err, errlen);
    if (!st) {
        cJSON_Delete(cands);
        return -1;
    }
    int dropped = 0;
    for (int i = cJSON_GetArraySize(cands) - 1; i >= 0; i--) {
        char h[17];
        if (gt_cfg_hash(cJSON_GetArrayItem(cands, i), h))
            continue;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, job->problem_id);
        gt_store_bind_text(st, 2, job->backend);
        gt_store_bind_text(st, 3, h);
        gt_store_bind_text(st, 4, model);
        if (sqlite3_step(st) == SQLITE_ROW) {
            cJSON_DeleteItemFromArray(cands, i);
            dropped++;
        }
    }
    gt_store_finish(s, st);
    int rc = 0;
    if (dropped) {
        char *txt = cJSON_PrintUnformatted(cands);
        if (!txt) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        } else {
            free(job->candidates);
            job->candidates = strdup(txt);
            cJSON_free(txt);
            if (!job->candidates) {
                snprintf(err, errlen, "out of memory");
                rc = -1;
            }
        }
        gt_info("job %lld: %d candidates already measured, not sent again", (long long)job->id,
                dropped);
    }
    cJSON_Delete(cands);
    return rc;
}

/* The next job a worker of (backend, model) leases, in *id (0: none).
 * Runs share the workers: the running run with the fewest jobs leased
 * right now goes first, and among those the one whose last lease is the
 * oldest (never leased first, then the oldest run), so runs submitted
 * together take turns, all get results early, and none waits for another
 * to drain its queue (the oldest run first, as before, let a long run hold
 * every GPU; the fewest leased alone let two runs take turns while a third
 * with fewer workers than runs waited). Inside a
 * run, final phases first (they finish problems), then enumerations (they
 * unlock work), then screens; each kind by (shard > 0, id). A screen job's
 * shard is its index among its problem's screen jobs (store.c
 * gt_store_insert_jobs; an evolutionary generation's count from 0), so
 * every GEMM's first screen job goes before any GEMM's others, and each
 * gets a first result early instead of waiting for every earlier GEMM's
 * shards; the others then go oldest first, GEMM by GEMM, so screens end and
 * finals start as early as before (009_screen_shard.sql); enumerate and
 * final jobs are all shard 0, oldest first. Index seeks on jobs_queue
 * (run_id, state, kind, backend, shard > 0, id): a count and one seek per
 * (run, kind), no sort; running runs are few. 0, or -1 with err. */
static int next_job(gt_store *s, const char *backend, const char *model, int64_t *id, char *err,
                    size_t errlen)
{
    static const char *const kinds[] = {"final", "enumerate", "screen"};
    *id = 0;
    /* The runs a worker of the model (?1) may lease from. */
#define LEASABLE_RUNS                                                                              \
    "SELECT r.id FROM runs r WHERE r.state = 'running'"                                            \
    " AND (r.device_model IS NULL OR r.device_model = ?1)"
    /* One running run (the usual case) has nothing to share: counting its
     * leased jobs on every lease cost 8 % of the dispatcher under 256
     * simulated workers. */
    sqlite3_stmt *few = gt_store_prep(s, "SELECT COUNT(*) FROM (" LEASABLE_RUNS " LIMIT 2)", err, errlen);
    if (!few)
        return -1;
    gt_store_bind_text(few, 1, model);
    int nruns = sqlite3_step(few) == SQLITE_ROW ? sqlite3_column_int(few, 0) : 2;
    gt_store_finish(s, few);
    sqlite3_stmt *runs = gt_store_prep(
        s,
        nruns <= 1 ? LEASABLE_RUNS
                   : LEASABLE_RUNS
                     " ORDER BY (SELECT COUNT(*) FROM jobs j WHERE j.run_id = r.id AND j.state = 'leased'),"
                     " r.last_lease_ms, r.id",
        err, errlen);
#undef LEASABLE_RUNS
    sqlite3_stmt *job = runs ? gt_store_prep(s,
                                             "SELECT id FROM jobs WHERE run_id = ?1 AND state = 'queued'"
                                             " AND kind = ?2 AND backend = ?3 ORDER BY shard > 0, id LIMIT 1",
                                             err, errlen)
                             : NULL;
    int rc = -1, r = SQLITE_DONE;
    if (!job)
        goto out;
    gt_store_bind_text(runs, 1, model);
    gt_store_bind_text(job, 3, backend);
    while (!*id && (r = sqlite3_step(runs)) == SQLITE_ROW) {
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0] && !*id; k++) {
            sqlite3_reset(job);
            sqlite3_bind_int64(job, 1, sqlite3_column_int64(runs, 0));
            gt_store_bind_text(job, 2, kinds[k]);
            int jr = sqlite3_step(job);
            if (jr == SQLITE_ROW)
                *id = sqlite3_column_int64(job, 0);
            else if (jr != SQLITE_DONE) {
                r = jr;
                break;
            }
        }
    }
    if (*id || r == SQLITE_DONE)
        rc = 0;
    else
        snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(s->db));
out:
    gt_store_finish(s, job);
    gt_store_finish(s, runs);
    return rc;
}

int gt_store_lease(gt_store *s, int64_t worker_id, int64_t now_ms, int64_t lease_ms, gt_job *job,
                   char *err, size_t errlen)
{
    memset(job, 0, sizeof *job);
    TX_BEGIN(s, err, errlen);
    int rc = -1;
    char backend[16] = "", model[128] = "";
    sqlite3_stmt *st = gt_store_prep(
        s, "SELECT backend, device_model FROM workers WHERE id = ? AND state != 'gone'", err, errlen);
    if (!st)
        goto out;
    sqlite3_bind_int64(st, 1, worker_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        gt_store_finish(s, st);
        snprintf(err, errlen, "unknown worker %lld: register first", (long long)worker_id);
        rc = GT_STORE_E_UNKNOWN_WORKER;
        goto out;
    }
    snprintf(backend, sizeof backend, "%s", gt_store_col_text(st, 0));
    snprintf(model, sizeof model, "%s", gt_store_col_text(st, 1));
    gt_store_finish(s, st);

    int64_t next = 0;
    if (next_job(s, backend, model, &next, err, errlen))
        goto out;
    if (!next) {
        /* No job now. While others are leased their answers queue new ones
         * (an enumeration its screens, a problem's last screen its final):
         * ask again soon, so a GPU does not idle half a second after work
         * appeared (issue 20: the gaps of 4 GPUs between jobs). With
         * nothing in flight nothing appears but a new run: poll slowly. */
        st = gt_store_prep(s, "SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'leased')", err, errlen);
        if (!st)
            goto out;
        job->retry_ms = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) ? GT_RETRY_BUSY_MS
                                                                                    : GT_RETRY_IDLE_MS;
        gt_store_finish(s, st);
        rc = 0;
        goto out;
    }
    st = gt_store_prep(
        s,
        "SELECT j.id, j.run_id, j.problem_id, j.kind, j.backend, j.attempts, p.spec, j.candidates,"
        " j.baseline, r.options, r.device_model IS NULL,"
        /* a final job's reference: the baseline as its screen jobs timed it */
        " CASE j.kind WHEN 'final' THEN " GT_STORE_SCREEN_BASELINE_SQL("j.problem_id", "j.backend", "?2")
        " END,"
        /* a verify run's final (store_verify.c): how the winner it re-times
         * was timed, 1 as CUDA graphs (launch 'graph'), 0 as the run said;
         * NULL for every other job */
        " CASE WHEN j.kind = 'final' AND json_extract(r.options, '$.verify.of') IS NOT NULL THEN"
        "  COALESCE((SELECT pb.launch IS 'graph' FROM problems op JOIN problem_best pb ON pb.problem_id = op.id"
        "   WHERE op.run_id = json_extract(r.options, '$.verify.of') AND op.key = p.key LIMIT 1), 0) END"
        " FROM jobs j JOIN runs r ON r.id = j.run_id JOIN problems p ON p.id = j.problem_id"
        " WHERE j.id = ?3",
        err, errlen);
    if (!st)
        goto out;
    sqlite3_bind_int64(st, 3, next);
    gt_store_bind_text(st, 2, model);
    int r = sqlite3_step(st);
    if (r != SQLITE_ROW) {
        snprintf(err, errlen, "sqlite: %s", r == SQLITE_DONE ? "the job picked vanished" : sqlite3_errmsg(s->db));
        gt_store_finish(s, st);
        goto out;
    }
    job->id = sqlite3_column_int64(st, 0);
    job->run_id = sqlite3_column_int64(st, 1);
    job->problem_id = sqlite3_column_int64(st, 2);
    snprintf(job->kind, sizeof job->kind, "%s", gt_store_col_text(st, 3));
    snprintf(job->backend, sizeof job->backend, "%s", gt_store_col_text(st, 4));
    job->attempts = sqlite3_column_int(st, 5) + 1;
    job->problem = dup_col(st, 6);
    job->candidates = dup_col(st, 7);
    job->baseline = dup_col(st, 8);
    gt_run_opts o;
    if (gt_run_opts_from_stored(&o, gt_store_col_text(st, 9)) == 0)
        job->timing = timing_json(&o, job->kind, sqlite3_column_double(st, 11),
                                  sqlite3_column_type(st, 12) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 12));
    gt_run_opts_fini(&o);
    int bind_model = sqlite3_column_int(st, 10);
    gt_store_finish(s, st);
    if (!job->problem || !job->candidates || !job->timing) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (!strcmp(job->kind, "enumerate")) {
        /* strategy and budget have columns of their own, not in options */
        gt_run_opts ro;
        if (gt_store_run_opts(s, job->run_id, &ro, err, errlen)) {
            gt_run_opts_fini(&ro);
            goto out;
        }
        job->keep = gt_plan_enum_keep(&ro);
        gt_run_opts_fini(&ro);
    }
    /* Only a job leased before can have results for its candidates: a
     * screen job's candidates are its problem's alone (shards of the
     * space are disjoint, an evolutionary generation never proposes a
     * measured config: store_evo.c). Hashing every candidate of every
     * first lease was 10 % of the dispatcher's time. */
    if (!strcmp(job->kind, "screen") && job->attempts > 1 &&
        drop_measured(s, job, model, err, errlen))
        goto out;
    const char *sqls[] = {
        ("UPDATE jobs SET state = 'leased', lease_owner = ?2, lease_deadline_ms = ?3 + ?4,"
         " attempts = attempts + 1, updated_ms = ?3 WHERE id = ?1"),
        "UPDATE runs SET started_ms = COALESCE(started_ms, ?3), last_lease_ms = ?3 WHERE id = ?5",
        "UPDATE workers SET state = 'busy', last_heartbeat_ms = ?3 WHERE id = ?2",
        /* Who held the job: only they may report results for it. */
        "INSERT OR IGNORE INTO job_leases(job_id, worker_id, leased_ms) VALUES (?1, ?2, ?3)",
        /* The run is tuned for the model of the first worker that takes a
         * job: results of different models are never mixed. */
        "UPDATE runs SET device_model = ?6 WHERE id = ?5 AND device_model IS NULL",
    };
    for (size_t i = 0; i < sizeof sqls / sizeof sqls[0]; i++) {
        if (i == 4 && !bind_model)
            break;
        st = gt_store_prep(s, sqls[i], err, errlen);
        if (!st)
            goto out;
        sqlite3_bind_int64(st, 1, job->id);
        sqlite3_bind_int64(st, 2, worker_id);
        sqlite3_bind_int64(st, 3, now_ms);
        sqlite3_bind_int64(st, 4, lease_ms);
        sqlite3_bind_int64(st, 5, job->run_id);
        gt_store_bind_text(st, 6, model);
        if (gt_store_step_done(s, st, err, errlen))
            goto out;
    }
    rc = 1;
out:
    rc = tx_end(s, rc, err, errlen);
    if (rc != 1) {
        int retry = job->retry_ms;
        gt_job_free(job);
        if (rc == 0)
            job->retry_ms = retry;
    }
    return rc;
}

/* ------------------------------------------------------------ problem phases */

static int set_problem_state(gt_store *s, int64_t pid, const char *state, const char *error,
                             char *err, size_t errlen)
{
    sqlite3_stmt *st = gt_store_prep(s, "UPDATE problems SET state = ?2, error = ?3 WHERE id = ?1",
                                     err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, pid);
    gt_store_bind_text(st, 2, state);
    gt_store_bind_text(st, 3, error);
    return gt_store_step_done(s, st, err, errlen);
}

/* Creates the final job: the top final_k valid screen configs, re-timed in one
 * job next to the baseline, so the reported uplift compares two numbers
 * measured side by side on the same worker. */
static int create_final_job(gt_store *s, int64_t pid, int64_t run_id, int64_t now_ms, char *err,
                            size_t errlen)
{
    int rc = -1;
    gt_run_opts o;
    cJSON *base = NULL, *cands = cJSON_CreateArray();
    char *cands_txt = NULL, *base_txt = NULL;
    if (gt_store_run_opts(s, run_id, &o, err, errlen)) {
        cJSON_Delete(cands);
        return -1;
    }
    if (!cands)
        goto oom;
    sqlite3_stmt *st = gt_store_prep(s,
                       "SELECT baseline FROM jobs WHERE problem_id = ? AND baseline IS NOT NULL"
                       " ORDER BY id LIMIT 1",
                       err, errlen);
    if (!st)
        goto out;
    sqlite3_bind_int64(st, 1, pid);
    if (sqlite3_step(st) == SQLITE_ROW)
        base = cJSON_Parse(gt_store_col_text(st, 0));
    gt_store_finish(s, st);
    if (!base) {
        rc = set_problem_state(s, pid, "failed", "no baseline configuration known", err, errlen);
        goto out;
    }
    /* A screen in which nothing ran (no valid candidate, no baseline
     * timed) leaves nothing to re-time: the problem fails with the screen's
     * reason instead of queueing a final job that would fail the same way. */
    st = gt_store_prep(s,
                       "SELECT (SELECT COUNT(*) FROM results WHERE problem_id = ?1 AND phase = 'screen'"
                       " AND valid = 1) + (SELECT COUNT(*) FROM baselines WHERE problem_id = ?1),"
                       " (SELECT reason FROM results WHERE problem_id = ?1 AND phase = 'screen'"
                       " AND valid = 0 AND reason IS NOT NULL ORDER BY is_baseline, id LIMIT 1),"
                       " (SELECT error FROM jobs WHERE problem_id = ?1 AND state = 'failed'"
                       " AND error IS NOT NULL ORDER BY id DESC LIMIT 1)",
                       err, errlen);
    if (!st)
        goto out;
    sqlite3_bind_int64(st, 1, pid);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 0) {
        char why[300];
        const char *jerr = (const char *)sqlite3_column_text(st, 2);
        const char *rerr = (const char *)sqlite3_column_text(st, 1);
        snprintf(why, sizeof why, "screen: nothing valid to re-time (%s)",
                 jerr ? jerr : rerr ? rerr : "no candidate passed validation");
        gt_store_finish(s, st);
        rc = set_problem_state(s, pid, "failed", why, err, errlen);
        goto out;
    }
    gt_store_finish(s, st);
    /* The default could not run anywhere: the finalists are paired with a
     * substitute instead of going unmeasured (store_substitute.c); the run
     * views see it as the final job's baseline differing from the screen's. */
    cJSON *sub = NULL;
    int subst = gt_store_pick_substitute(s, pid, o.backend, o.ncpu, &sub, err, errlen);
    if (subst < 0)
        goto out;
    if (subst) {
        cJSON_Delete(base);
        base = sub;
    }
    char base_hash[17];
    if (gt_cfg_hash(base, base_hash))
        goto oom;
    st = gt_store_prep(s,
                       "SELECT config FROM results WHERE problem_id = ?1 AND phase = 'screen'"
                       " AND valid = 1 AND is_baseline = 0 AND config_hash != ?2"
                       " ORDER BY time_us ASC, id ASC LIMIT ?3",
                       err, errlen);
    if (!st)
        goto out;
    sqlite3_bind_int64(st, 1, pid);
    gt_store_bind_text(st, 2, base_hash);
    sqlite3_bind_int(st, 3, o.final_k);
    while (sqlite3_step(st) == SQLITE_ROW) {
        cJSON *c = cJSON_Parse(gt_store_col_text(st, 0));
        if (!c || !cJSON_AddItemToArray(cands, c)) {
            cJSON_Delete(c);
            gt_store_finish(s, st);
            goto oom;
        }
    }
    gt_store_finish(s, st);
    cands_txt = cJSON_PrintUnformatted(cands);
    base_txt = cJSON_PrintUnformatted(base);
    if (!cands_txt || !base_txt)
        goto oom;
    st = gt_store_prep(s,
                       "INSERT INTO jobs(run_id, problem_id, backend, kind, candidates, ncandidates,"
                       " baseline, state, created_ms, updated_ms)"
                       " VALUES (?, ?, ?, 'final', ?, ?, ?, 'queued', ?, ?)",
                       err, errlen);
    if (!st)
        goto out;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, pid);
    gt_store_bind_text(st, 3, o.backend);
    gt_store_bind_text(st, 4, cands_txt);
    sqlite3_bind_int(st, 5, cJSON_GetArraySize(cands));
    gt_store_bind_text(st, 6, base_txt);
    sqlite3_bind_int64(st, 7, now_ms);
    sqlite3_bind_int64(st, 8, now_ms);
    if (gt_store_step_done(s, st, err, errlen))
        goto out;
    rc = set_problem_state(s, pid, "final", NULL, err, errlen);
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
out:
    gt_run_opts_fini(&o);
    cJSON_Delete(base);
    cJSON_Delete(cands);
    cJSON_free(cands_txt);
    cJSON_free(base_txt);
    return rc;
}

static int finish_run_if_done(gt_store *s, int64_t run_id, int64_t now_ms, char *err, size_t errlen)
{
    return gt_store_exec_i64(
        s,
        "UPDATE runs SET state = 'done', finished_ms = ?2 WHERE id = ?1 AND state = 'running'"
        " AND NOT EXISTS (SELECT 1 FROM problems WHERE run_id = ?1"
        " AND state IN ('enumerating', 'screening', 'final'))",
        (int64_t[]){run_id, now_ms}, 2, err, errlen);
}

int gt_store_advance_problem(gt_store *s, int64_t pid, int64_t now_ms, char *err, size_t errlen)
{
    sqlite3_stmt *st = gt_store_prep(s, "SELECT run_id, state FROM problems WHERE id = ?", err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, pid);
    if (sqlite3_step(st) != SQLITE_ROW) {
        gt_store_finish(s, st);
        snprintf(err, errlen, "unknown problem %lld", (long long)pid);
        return -1;
    }
    int64_t run_id = sqlite3_column_int64(st, 0);
    char state[16];
    snprintf(state, sizeof state, "%s", gt_store_col_text(st, 1));
    gt_store_finish(s, st);
    if (strcmp(state, "enumerating") && strcmp(state, "screening") && strcmp(state, "final"))
        return 0;

    /* counts[kind][pending|done|failed] */
    enum { ENUM, SCREEN, FINAL };
    int pending[3] = {0}, done[3] = {0}, failed[3] = {0};
    char last_error[256] = "";
    st = gt_store_prep(s, "SELECT kind, state, COUNT(*), MAX(error) FROM jobs WHERE problem_id = ?"
                          " GROUP BY kind, state",
                       err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, pid);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *kind = gt_store_col_text(st, 0), *js = gt_store_col_text(st, 1);
        int k = !strcmp(kind, "enumerate") ? ENUM : !strcmp(kind, "screen") ? SCREEN : FINAL;
        int n = sqlite3_column_int(st, 2);
        if (!strcmp(js, "queued") || !strcmp(js, "leased"))
            pending[k] += n;
        else if (!strcmp(js, "done"))
            done[k] += n;
        else if (!strcmp(js, "failed")) {
            failed[k] += n;
            snprintf(last_error, sizeof last_error, "%s", gt_store_col_text(st, 3));
        }
    }
    gt_store_finish(s, st);

    int rc = 0;
    if (pending[ENUM] || pending[SCREEN] || pending[FINAL])
        return 0;
    if (done[FINAL])
        rc = set_problem_state(s, pid, "done", NULL, err, errlen);
    else if (failed[FINAL])
        rc = set_problem_state(s, pid, "failed", last_error[0] ? last_error : "final phase failed",
                               err, errlen);
    else if (failed[ENUM] && !done[SCREEN] && !failed[SCREEN])
        rc = set_problem_state(s, pid, "failed", last_error[0] ? last_error : "enumeration failed",
                               err, errlen);
    else {
        /* Screening is over: an evolutionary search may breed another
         * generation instead (the problem stays in 'screening'). */
        int queued = 0;
        if (gt_store_evo_step(s, pid, now_ms, &queued, err, errlen))
            return -1;
        if (queued)
            return 0;
        rc = create_final_job(s, pid, run_id, now_ms, err, errlen);
    }
    if (rc)
        return -1;
    return finish_run_if_done(s, run_id, now_ms, err, errlen);
}

/* ------------------------------------------------------------------ results */

typedef struct job_row {
    int64_t run_id, problem_id, owner;
    char kind[16], state[16], backend[16], run_state[16];
} job_row;

static int load_job(gt_store *s, int64_t job_id, job_row *j, char *err, size_t errlen)
{
    sqlite3_stmt *st = gt_store_prep(
        s,
        "SELECT j.run_id, j.problem_id, COALESCE(j.lease_owner, 0), j.kind, j.state, j.backend,"
        " r.state FROM jobs j JOIN runs r ON r.id = j.run_id"
        " WHERE j.id = ?",
        err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, job_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        gt_store_finish(s, st);
        snprintf(err, errlen, "unknown job %lld", (long long)job_id);
        return -1;
    }
    j->run_id = sqlite3_column_int64(st, 0);
    j->problem_id = sqlite3_column_int64(st, 1);
    j->owner = sqlite3_column_int64(st, 2);
    snprintf(j->kind, sizeof j->kind, "%s", gt_store_col_text(st, 3));
    snprintf(j->state, sizeof j->state, "%s", gt_store_col_text(st, 4));
    snprintf(j->backend, sizeof j->backend, "%s", gt_store_col_text(st, 5));
    snprintf(j->run_state, sizeof j->run_state, "%s", gt_store_col_text(st, 6));
    gt_store_finish(s, st);
    return 0;
}

/* The phase a job's results are stored under: a final job's are "final",
 * every other kind's "screen" (what the run's screen counts add up). */
static int job_is_final(const job_row *j)
{
    return !strcmp(j->kind, "final");
}

static int insert_result(gt_store *s, const job_row *j, int64_t job_id, int64_t worker_id,
                         const char *model, const gt_report_result *r, int64_t now_ms, char *err,
                         size_t errlen)
{
    const char *phase = job_is_final(j) ? "final" : "screen";
    if (!s->ins_result)
        s->ins_result = gt_store_prep(
            s,
            "INSERT OR IGNORE INTO results(run_id, problem_id, job_id, backend, phase, config,"
            " config_hash, is_baseline, time_us, spread, tflops, rel_err, valid, reason, worker_id,"
            " device_model, created_ms, rounds, uplift, uplift_lo, uplift_hi, gpu_state, launch)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            err, errlen);
    sqlite3_stmt *st = s->ins_result;
    if (!st)
        return -1;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    sqlite3_bind_int64(st, 1, j->run_id);
    sqlite3_bind_int64(st, 2, j->problem_id);
    sqlite3_bind_int64(st, 3, job_id);
    gt_store_bind_text(st, 4, j->backend);
    gt_store_bind_text(st, 5, phase);
    gt_store_bind_text(st, 6, r->config);
    gt_store_bind_text(st, 7, r->config_hash);
    sqlite3_bind_int(st, 8, r->is_baseline);
    if (r->time_us > 0 && isfinite(r->time_us))
        sqlite3_bind_double(st, 9, r->time_us);
    else
        sqlite3_bind_null(st, 9);
    sqlite3_bind_double(st, 10, isfinite(r->spread) ? r->spread : 0);
    sqlite3_bind_double(st, 11, isfinite(r->tflops) ? r->tflops : 0);
    if (isfinite(r->rel_err))
        sqlite3_bind_double(st, 12, r->rel_err);
    else
        sqlite3_bind_null(st, 12);
    sqlite3_bind_int(st, 13, r->valid);
    gt_store_bind_text(st, 14, r->reason[0] ? r->reason : NULL);
    sqlite3_bind_int64(st, 15, worker_id);
    gt_store_bind_text(st, 16, model);
    sqlite3_bind_int64(st, 17, now_ms);
    /* paired statistics belong to a final phase's valid result only */
    if (r->rounds > 0 && r->valid && !strcmp(phase, "final")) {
        sqlite3_bind_int(st, 18, r->rounds);
        sqlite3_bind_double(st, 19, r->uplift);
        sqlite3_bind_double(st, 20, r->uplift_lo);
        sqlite3_bind_double(st, 21, r->uplift_hi);
    }
    /* the GPU's state over the final's rounds, as the JSON the API shows */
    char *gpu = NULL;
    if (r->gpu.samples > 0 && !strcmp(phase, "final")) {
        cJSON *g = gt_gpu_state_to_json(&r->gpu);
        gpu = g ? cJSON_PrintUnformatted(g) : NULL;
        cJSON_Delete(g);
        if (!gpu) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        sqlite3_bind_text(st, 22, gpu, -1, SQLITE_TRANSIENT);
    }
    cJSON_free(gpu);
    /* timed as graphs in a plain run: a final's own (schema 011) */
    if (r->graph && !strcmp(phase, "final"))
        sqlite3_bind_text(st, 23, "graph", -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) {
        snprintf(err, errlen, "sqlite step: %s", sqlite3_errmsg(s->db));
        sqlite3_reset(st);
        return -1;
    }
    sqlite3_reset(st);
    return 0;
}

/* A screen job's baseline that disagrees (beyond GT_BASELINE_DRIFT_MAX
 * either way) with what at least two other workers timed for the same GEMM
 * on the same device model, while agreeing with none of them, is not taken
 * on trust: every uplift of the problem divides by these. With one other
 * worker the two are only in doubt, and both stay (the final phase's
 * baseline_drift still tells). 1 when b is such an outlier (*others: the
 * first disagreeing worker's mean), 0 when not, -1 on a store error. */
static int baseline_outlier(gt_store *s, const job_row *j, int64_t worker_id, const char *model,
                            double t, double *others, char *err, size_t errlen)
{
    if (strcmp(j->kind, "screen") != 0)
        return 0; /* a final's baseline is checked against the screens' (baseline_drift) */
    sqlite3_stmt *st = gt_store_prep(
        s,
        "SELECT AVG(bl.time_us) FROM baselines bl JOIN jobs jb ON jb.id = bl.job_id"
        " WHERE bl.problem_id = ?1 AND jb.kind = 'screen' AND bl.backend = ?2"
        " AND bl.device_model = ?3 AND bl.worker_id != ?4 GROUP BY bl.worker_id",
        err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, j->problem_id);
    gt_store_bind_text(st, 2, j->backend);
    gt_store_bind_text(st, 3, model);
    sqlite3_bind_int64(st, 4, worker_id);
    int agree = 0, disagree = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        double o = sqlite3_column_double(st, 0);
        if (!(o > 0))
            continue;
        if (t > o * GT_BASELINE_DRIFT_MAX || t < o / GT_BASELINE_DRIFT_MAX) {
            if (!disagree++)
                *others = o;
        } else {
            agree++;
        }
    }
    gt_store_finish(s, st);
    return disagree >= 2 && agree == 0;
}

static int insert_baseline(gt_store *s, const job_row *j, int64_t job_id, int64_t worker_id,
                           const char *model, const gt_report *rep, int64_t now_ms,
                           size_t *rejected, char *err, size_t errlen)
{
    double t = rep->baseline_us;
    if (!rep->baseline_config || !(t > 0))
        return 0; /* the baseline did not run (its failure is in the results) */
    double others = 0;
    int out = baseline_outlier(s, j, worker_id, model, t, &others, err, errlen);
    if (out < 0)
        return -1;
    if (out) {
        gt_warn("worker %lld job %lld: baseline of %.4g us dropped: the other workers timed it "
                "beyond %.2fx away (e.g. %.4g us)", (long long)worker_id, (long long)job_id, t,
                GT_BASELINE_DRIFT_MAX, others);
        (*rejected)++;
        return 0;
    }
    sqlite3_stmt *st = gt_store_prep(
        s,
        "INSERT OR IGNORE INTO baselines(run_id, problem_id, job_id, backend, device_model, config,"
        " time_us, spread, worker_id, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, j->run_id);
    sqlite3_bind_int64(st, 2, j->problem_id);
    sqlite3_bind_int64(st, 3, job_id);
    gt_store_bind_text(st, 4, j->backend);
    gt_store_bind_text(st, 5, model);
    gt_store_bind_text(st, 6, rep->baseline_config);
    sqlite3_bind_double(st, 7, t);
    sqlite3_bind_double(st, 8, rep->baseline_spread);
    sqlite3_bind_int64(st, 9, worker_id);
    sqlite3_bind_int64(st, 10, now_ms);
    return gt_store_step_done(s, st, err, errlen);
}

/* 1 when the JSON text t is an empty array (the device's candidate list,
 * which may be long: not parsed twice). */
static int empty_array(const char *t)
{
    static const char ws[] = " \t\r\n"; /* JSON's whitespace */
    t += strspn(t, ws);
    if (*t++ != '[')
        return 0;
    return t[strspn(t, ws)] == ']';
}

/* An enumerate job's answer: the problem's screen jobs (and search) as the
 * planner decides them from the device's list, written here. */
static int finish_enumerate(gt_store *s, const job_row *j, const gt_report *rep, int64_t now_ms,
                            char *err, size_t errlen)
{
    if (!rep->enum_candidates || !rep->enum_baseline) {
        snprintf(err, errlen, "enumerate results need candidates[] and baseline_config{}");
        return -1;
    }
    /* Nothing to screen (cuBLASLt's heuristic refused the problem and no
     * other candidate applies): the problem fails now with the device's
     * reason, which the baseline placeholder carries, rather than later with
     * "no baseline configuration known". */
    if (empty_array(rep->enum_candidates)) {
        cJSON *b = cJSON_Parse(rep->enum_baseline);
        const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "reason"));
        char msg[400];
        snprintf(msg, sizeof msg, "enumerate: no candidate for this device%s%.300s", why ? ": " : "",
                 why ? why : "");
        cJSON_Delete(b);
        /* the problem leaves the states gt_store_advance_problem acts on:
         * the run may be done now */
        if (set_problem_state(s, j->problem_id, "failed", msg, err, errlen))
            return -1;
        return finish_run_if_done(s, j->run_id, now_ms, err, errlen);
    }
    char key[512] = "";
    sqlite3_stmt *st = gt_store_prep(s, "SELECT key FROM problems WHERE id = ?", err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, j->problem_id);
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW)
        snprintf(key, sizeof key, "%s", gt_store_col_text(st, 0));
    else
        snprintf(err, errlen, "problem %lld: %s", (long long)j->problem_id,
                 r == SQLITE_DONE ? "not found" : sqlite3_errmsg(s->db));
    gt_store_finish(s, st);
    if (r != SQLITE_ROW)
        return -1;
    gt_run_opts o;
    if (gt_store_run_opts(s, j->run_id, &o, err, errlen))
        return -1;
    gt_plan_problem pp;
    int rc = gt_plan_enumerated(&o, j->problem_id, key, rep->enum_candidates, rep->enum_baseline,
                                &pp, err, errlen);
    gt_run_opts_fini(&o);
    if (rc)
        return -1;
    rc = gt_store_insert_plan(s, j->run_id, j->problem_id, j->backend, &pp, now_ms, err, errlen);
    gt_plan_problem_fini(&pp);
    if (rc)
        return -1;
    return set_problem_state(s, j->problem_id, "screening", NULL, err, errlen);
}

static int report_tx(gt_store *s, int64_t worker_id, const gt_report *rep, int64_t now_ms,
                     int64_t lease_ms, int *cancelled, size_t *accepted, size_t *rejected, char *err,
                     size_t errlen)
{
    int rc = -1;
    job_row j = {0};
    long long job_id = (long long)rep->job_id;
    if (load_job(s, job_id, &j, err, errlen))
        goto out;
    char model[128] = "";
    gt_plausible_dev dev;
    sqlite3_stmt *st = gt_store_prep(
        s, "SELECT device_model, backend, units, gen_device FROM workers WHERE id = ?", err, errlen);
    if (!st)
        goto out;
    sqlite3_bind_int64(st, 1, worker_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        gt_store_finish(s, st);
        snprintf(err, errlen, "unknown worker %lld: register first", (long long)worker_id);
        rc = GT_STORE_E_UNKNOWN_WORKER;
        goto out;
    }
    snprintf(model, sizeof model, "%s", gt_store_col_text(st, 0));
    gt_plausible_dev_init(&dev, gt_store_col_text(st, 1), sqlite3_column_int(st, 2),
                          gt_store_col_text(st, 3));
    gt_store_finish(s, st);
    /* Only a worker the job was leased to may report for it: an
     * authenticated worker must not fill in another's job. */
    st = gt_store_prep(s,
                       "SELECT p.flops, p.bytes, p.a_type,"
                       " EXISTS (SELECT 1 FROM job_leases WHERE job_id = ?1 AND worker_id = ?2)"
                       " FROM jobs j JOIN problems p ON p.id = j.problem_id WHERE j.id = ?1",
                       err, errlen);
    if (!st)
        goto out;
    sqlite3_bind_int64(st, 1, job_id);
    sqlite3_bind_int64(st, 2, worker_id);
    if (sqlite3_step(st) != SQLITE_ROW || !sqlite3_column_int(st, 3)) {
        gt_store_finish(s, st);
        snprintf(err, errlen, "job %lld was not leased to worker %lld", job_id, (long long)worker_id);
        rc = GT_STORE_E_NOT_LEASED;
        goto out;
    }
    char why[160];
    double min_us = gt_plausible_min_time_us(&dev, sqlite3_column_double(st, 0),
                                             sqlite3_column_double(st, 1),
                                             gt_dtype_parse(gt_store_col_text(st, 2)), why, sizeof why);
    gt_store_finish(s, st);

    *cancelled = !strcmp(j.run_state, "cancelled") || !strcmp(j.state, "cancelled");
    /* the run's screen progress (runs.screen_done / screen_valid, schema 012):
     * the rows this message inserted, a duplicate (INSERT OR IGNORE) not */
    int64_t screen_done = 0, screen_valid = 0;
    int screen = !job_is_final(&j);
    for (size_t i = 0; i < rep->nresults; i++) {
        gt_report_result r = rep->results[i];
        if (r.valid && r.time_us > 0 && r.time_us < min_us) {
            /* Faster than the device can run it: stored, so the claim is
             * visible, but never a winner. */
            r.valid = 0;
            snprintf(r.reason, sizeof r.reason,
                     "implausible: %.4g us is below the physical bound %.4g us (%s)", r.time_us,
                     min_us, why);
            (*rejected)++;
            gt_warn("worker %lld job %lld: %s", (long long)worker_id, job_id, r.reason);
        }
        if (insert_result(s, &j, job_id, worker_id, model, &r, now_ms, err, errlen))
            goto out;
        int inserted = sqlite3_changes(s->db);
        *accepted += (size_t)inserted;
        if (screen && inserted == 1) {
            screen_done += !(r.valid == 0 && r.is_baseline);
            screen_valid += r.valid != 0;
        }
    }
    if ((screen_done || screen_valid) &&
        gt_store_exec_i64(s,
                          "UPDATE runs SET screen_done = screen_done + ?2,"
                          " screen_valid = screen_valid + ?3 WHERE id = ?1",
                          (int64_t[]){j.run_id, screen_done, screen_valid}, 3, err, errlen))
        goto out;
    double bt = rep->baseline_us;
    if (bt > 0 && bt < min_us) {
        /* An impossible baseline would inflate every uplift of the job. */
        gt_warn("worker %lld job %lld: baseline of %.4g us dropped, below the physical bound %.4g us "
                "(%s)", (long long)worker_id, job_id, bt, min_us, why);
        (*rejected)++;
    } else if (insert_baseline(s, &j, job_id, worker_id, model, rep, now_ms, rejected, err,
                               errlen)) {
        goto out;
    }
    if (gt_store_exec_i64(s,
                          "UPDATE workers SET results = results + ?2, last_heartbeat_ms = ?3,"
                          " state = CASE WHEN state = 'lost' THEN 'busy' ELSE state END"
                          " WHERE id = ?1",
                          (int64_t[]){worker_id, (int64_t)*accepted, now_ms}, 3, err, errlen))
        goto out;

    /* Only the lease holder moves the job on; a worker whose lease expired
     * (and whose job another worker now runs) still gets its measurements
     * stored, idempotently, but not its state change. A job back in the
     * queue may be finished by its old owner: that saves redoing it. */
    int owner = (!strcmp(j.state, "leased") && j.owner == worker_id) || !strcmp(j.state, "queued");
    const char *job_error = rep->error && rep->error[0] ? rep->error : NULL;
    if (owner && !*cancelled) {
        if (!rep->done) {
            if (gt_store_exec_i64(s,
                                  "UPDATE jobs SET lease_deadline_ms = ?2, updated_ms = ?3"
                                  " WHERE id = ?1",
                                  (int64_t[]){job_id, now_ms + lease_ms, now_ms}, 3, err, errlen))
                goto out;
        } else {
            if (!job_error && !strcmp(j.kind, "enumerate") &&
                finish_enumerate(s, &j, rep, now_ms, err, errlen))
                goto out;
            st = gt_store_prep(s,
                               "UPDATE jobs SET state = ?2, error = ?3, lease_owner = NULL,"
                               " updated_ms = ?4 WHERE id = ?1",
                               err, errlen);
            if (!st)
                goto out;
            sqlite3_bind_int64(st, 1, job_id);
            gt_store_bind_text(st, 2, job_error ? "failed" : "done");
            gt_store_bind_text(st, 3, job_error);
            sqlite3_bind_int64(st, 4, now_ms);
            if (gt_store_step_done(s, st, err, errlen))
                goto out;
            if (gt_store_exec_i64(s,
                                  "UPDATE workers SET state = 'idle' WHERE id = ? AND state = 'busy'",
                                  &worker_id, 1, err, errlen))
                goto out;
            if (gt_store_advance_problem(s, j.problem_id, now_ms, err, errlen))
                goto out;
        }
    }
    rc = 0;
out:
    return rc;
}

int gt_store_report(gt_store *s, int64_t worker_id, const gt_report *rep, int64_t now_ms,
                    int64_t lease_ms, int *cancelled, size_t *accepted, size_t *rejected, char *err,
                    size_t errlen)
{
    *cancelled = 0;
    *accepted = 0;
    *rejected = 0;
    TX_BEGIN(s, err, errlen);
    int rc = report_tx(s, worker_id, rep, now_ms, lease_ms, cancelled, accepted, rejected, err,
                       errlen);
    if (rc)
        *accepted = *rejected = 0;
    return tx_end(s, rc, err, errlen);
}

int gt_store_expire(gt_store *s, int64_t now_ms, int max_attempts, int64_t lost_ms, char *err,
                    size_t errlen)
{
    TX_BEGIN(s, err, errlen);
    int rc = -1, n = 0;
    int64_t *failed = NULL;
    size_t nfailed = 0;
    sqlite3_stmt *st = gt_store_prep(s,
                                     "SELECT id, problem_id, attempts FROM jobs WHERE state = 'leased'"
                                     " AND lease_deadline_ms < ?",
                                     err, errlen);
    if (!st)
        goto out;
    sqlite3_bind_int64(st, 1, now_ms);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), pid = sqlite3_column_int64(st, 1);
        int attempts = sqlite3_column_int(st, 2);
        int fail = attempts >= max_attempts;
        sqlite3_stmt *up = gt_store_prep(
            s,
            "UPDATE jobs SET state = ?2, lease_owner = NULL, updated_ms = ?3,"
            " error = CASE WHEN ?2 = 'failed' THEN 'lease expired ' || attempts || ' times' ELSE error END"
            " WHERE id = ?1",
            err, errlen);
        if (!up) {
            gt_store_finish(s, st);
            goto out;
        }
        sqlite3_bind_int64(up, 1, id);
        gt_store_bind_text(up, 2, fail ? "failed" : "queued");
        sqlite3_bind_int64(up, 3, now_ms);
        if (gt_store_step_done(s, up, err, errlen)) {
            gt_store_finish(s, st);
            goto out;
        }
        gt_warn("job %lld: lease expired (attempt %d), %s", (long long)id, attempts,
                fail ? "failed" : "requeued");
        n++;
        if (fail) {
            int64_t *f = realloc(failed, (nfailed + 1) * sizeof *f);
            if (!f) {
                gt_store_finish(s, st);
                snprintf(err, errlen, "out of memory");
                goto out;
            }
            failed = f;
            failed[nfailed++] = pid;
        }
    }
    gt_store_finish(s, st);
    for (size_t i = 0; i < nfailed; i++)
        if (gt_store_advance_problem(s, failed[i], now_ms, err, errlen))
            goto out;
    if (gt_store_exec_i64(s,
                          "UPDATE workers SET state = 'lost' WHERE state IN ('idle', 'busy')"
                          " AND last_heartbeat_ms < ?",
                          (int64_t[]){now_ms - lost_ms}, 1, err, errlen))
        goto out;
    rc = n;
out:
    free(failed);
    return tx_end(s, rc, err, errlen);
}
