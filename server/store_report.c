/* store_report.c: a worker's results for its job, stored idempotently:
 * checked against the lease and the device's physical bound, counted on the
 * run's row, the baseline weighed against other workers', an enumeration's
 * answer planned into screen jobs, the job and its problem moved on. */
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
        if (gt_store_set_problem_state(s, j->problem_id, "failed", msg, err, errlen))
            return -1;
        return gt_store_finish_run_if_done(s, j->run_id, now_ms, err, errlen);
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
    return gt_store_set_problem_state(s, j->problem_id, "screening", NULL, err, errlen);
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
    if (gt_store_tx_begin(s, err, errlen))
        return -1;
    int rc = report_tx(s, worker_id, rep, now_ms, lease_ms, cancelled, accepted, rejected, err,
                       errlen);
    if (rc)
        *accepted = *rejected = 0;
    return gt_store_tx_end(s, rc, err, errlen);
}
