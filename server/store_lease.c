/* store_lease.c: a worker leases its next job: which one (runs share the
 * workers; inside a run final phases, then enumerations, then screens), the
 * timing it is run with, and what of it was measured already. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_plan.h"
#include "gt_policy.h"
#include "gt_util.h"
#include "store_priv.h"

void gt_job_free(gt_job *j)
{
    free(j->problem);
    free(j->candidates);
    free(j->baseline);
    free(j->timing);
    memset(j, 0, sizeof *j);
}

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
    if (gt_store_tx_begin(s, err, errlen))
        return -1;
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
    rc = gt_store_tx_end(s, rc, err, errlen);
    if (rc != 1) {
        int retry = job->retry_ms;
        gt_job_free(job);
        if (rc == 0)
            job->retry_ms = retry;
    }
    return rc;
}
