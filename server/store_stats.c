/* store_stats.c: read-only queries for observability: /metrics counts, the
 * change fingerprint and summary of a run (SSE), and best-time timelines.
 *
 * The run summary shares the run's counts, progress and ETA with
 * store_query.c (store_progress.c), but repeats its definitions of the best
 * per problem and the workload uplift on purpose with other queries: the
 * problem_best view ranks every result of the database before the join
 * (hundreds of ms at 100k results), while the per-problem MIN() lookups
 * below are index seeks on results_by_problem. A run is tuned for one
 * backend and device model, so per problem there is one ranking.
 * tests/integration/test_observability.sh checks both agree. */
#include "gt_store_stats.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_priv.h"

const char *const gt_stats_run_states[GT_STATS_RUN_STATES] = {"running", "done", "cancelled",
                                                              "failed"};
const char *const gt_stats_job_states[GT_STATS_JOB_STATES] = {"queued", "leased", "done", "failed",
                                                              "cancelled"};
const char *const gt_stats_problem_states[GT_STATS_PROBLEM_STATES] = {
    "enumerating", "screening", "final", "done", "failed", "cancelled"};
const char *const gt_stats_worker_states[GT_STATS_WORKER_STATES] = {"idle", "busy", "lost", "gone"};

/* Runs "SELECT state, COUNT(*) ... GROUP BY state" into counts indexed like
 * names; states the schema does not know are ignored. */
static int count_by_state(gt_store *s, const char *sql, const char *const *names, size_t n,
                          int64_t *counts, char *err, size_t errlen)
{
    sqlite3_stmt *st = gt_store_prep(s, sql, err, errlen);
    if (!st)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *state = gt_store_col_text(st, 0);
        for (size_t i = 0; i < n; i++)
            if (!strcmp(state, names[i]))
                counts[i] = sqlite3_column_int64(st, 1);
    }
    gt_store_finish(s, st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "database error: %s", sqlite3_errstr(rc));
        return -1;
    }
    return 0;
}

static int collect_workers(gt_store *s, gt_store_stats *out, char *err, size_t errlen)
{
    sqlite3_stmt *st = gt_store_prep(s,
                                     "SELECT id, host, device_model, backend, state,"
                                     " last_heartbeat_ms FROM workers WHERE state != 'gone'"
                                     " ORDER BY id",
                                     err, errlen);
    if (!st)
        return -1;
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->nw == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            gt_stats_worker *nw = realloc(out->w, ncap * sizeof *nw);
            if (!nw) {
                gt_store_finish(s, st);
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            out->w = nw;
            cap = ncap;
        }
        gt_stats_worker *w = &out->w[out->nw++];
        w->id = sqlite3_column_int64(st, 0);
        snprintf(w->host, sizeof w->host, "%s", gt_store_col_text(st, 1));
        snprintf(w->device_model, sizeof w->device_model, "%s", gt_store_col_text(st, 2));
        snprintf(w->backend, sizeof w->backend, "%s", gt_store_col_text(st, 3));
        snprintf(w->state, sizeof w->state, "%s", gt_store_col_text(st, 4));
        w->last_heartbeat_ms = sqlite3_column_int64(st, 5);
    }
    gt_store_finish(s, st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "database error: %s", sqlite3_errstr(rc));
        return -1;
    }
    return 0;
}

/* Results by validity. COUNT(*) alone is a b-tree count; SUM(valid) has to
 * visit every entry of an index, so it is only done for rows past the
 * tally's last id (rowid range) unless the tally is off. */
static int count_results(gt_store *s, gt_results_tally *tally, gt_store_stats *out, char *err,
                         size_t errlen)
{
    gt_results_tally local = {0, 0, 0};
    if (!tally)
        tally = &local;
    sqlite3_stmt *st = gt_store_prep(s, "SELECT COUNT(*) FROM results", err, errlen);
    if (!st)
        return -1;
    int64_t now_total = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    gt_store_finish(s, st);
    st = gt_store_prep(s,
                       "SELECT COUNT(*), COALESCE(SUM(valid), 0), MAX(id) FROM results"
                       " WHERE id > ?",
                       err, errlen);
    if (!st)
        return -1;
    for (int pass = 0; pass < 2; pass++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, tally->last_id);
        if (sqlite3_step(st) != SQLITE_ROW) {
            gt_store_finish(s, st);
            snprintf(err, errlen, "database error counting results");
            return -1;
        }
        int64_t n = sqlite3_column_int64(st, 0);
        if (tally->total + n == now_total || pass == 1) {
            tally->total += n;
            tally->valid += sqlite3_column_int64(st, 1);
            if (n)
                tally->last_id = sqlite3_column_int64(st, 2);
            break;
        }
        /* Rows went away or the file changed under us: count them all. */
        memset(tally, 0, sizeof *tally);
    }
    gt_store_finish(s, st);
    out->results_valid = tally->valid;
    out->results_invalid = tally->total - tally->valid;
    return 0;
}

/* Results created since `since`, newest first by rowid, stopping at the
 * first older one: rows are inserted with the coordinator's clock, so the
 * walk costs the rows of the window, not the table. (A wall clock stepped
 * back can hide a few rows for one window: a rate gauge tolerates that.) */
static int count_window(gt_store *s, int64_t since, int64_t *n, char *err, size_t errlen)
{
    sqlite3_stmt *st =
        gt_store_prep(s, "SELECT created_ms FROM results ORDER BY id DESC", err, errlen);
    if (!st)
        return -1;
    int rc;
    *n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && sqlite3_column_int64(st, 0) >= since)
        (*n)++;
    gt_store_finish(s, st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        snprintf(err, errlen, "database error: %s", sqlite3_errstr(rc));
        return -1;
    }
    return 0;
}

static int collect_locked(gt_store *s, int64_t now_ms, int64_t window_ms,
                          gt_results_tally *tally, gt_store_stats *out, char *err, size_t errlen)
{
    if (count_by_state(s, "SELECT state, COUNT(*) FROM runs GROUP BY state", gt_stats_run_states,
                       GT_STATS_RUN_STATES, out->runs, err, errlen) ||
        count_by_state(s, "SELECT state, COUNT(*) FROM jobs GROUP BY state", gt_stats_job_states,
                       GT_STATS_JOB_STATES, out->jobs, err, errlen) ||
        count_by_state(s, "SELECT state, COUNT(*) FROM problems GROUP BY state",
                       gt_stats_problem_states, GT_STATS_PROBLEM_STATES, out->problems, err,
                       errlen) ||
        count_by_state(s, "SELECT state, COUNT(*) FROM workers GROUP BY state",
                       gt_stats_worker_states, GT_STATS_WORKER_STATES, out->workers, err, errlen))
        return -1;
    if (count_results(s, tally, out, err, errlen) ||
        count_window(s, now_ms - window_ms, &out->results_window, err, errlen))
        return -1;
    return collect_workers(s, out, err, errlen);
}

int gt_store_stats_collect(gt_store *s, int64_t now_ms, int64_t window_ms,
                           gt_results_tally *tally, gt_store_stats *out, char *err,
                           size_t errlen)
{
    memset(out, 0, sizeof *out);
    gt_store_lock(s);
    int rc = collect_locked(s, now_ms, window_ms, tally, out, err, errlen);
    gt_store_unlock(s);
    if (rc)
        gt_store_stats_free(out);
    return rc;
}

void gt_store_stats_free(gt_store_stats *st)
{
    free(st->w);
    st->w = NULL;
    st->nw = 0;
}

int gt_store_run_fingerprint(gt_store *s, int64_t run_id, char *fp, size_t fplen)
{
    char err[256];
    /* The run's MAX(id) is one index seek per (phase, valid) of
     * results_by_run_phase (the CHECK on phase and the store's 0/1 valid are
     * all there is; 010_results_indexes.sql); the job and problem counts per
     * state change with every lease, report and phase change (heartbeats,
     * which only move lease deadlines, do not show). */
    gt_store_lock(s);
    sqlite3_stmt *st = gt_store_prep(
        s,
        "SELECT r.state,"
        " (SELECT MAX(m) FROM ("
        "   SELECT (SELECT MAX(x.id) FROM results x WHERE x.run_id = r.id AND x.phase = 'screen'"
        "     AND x.valid = 0) AS m"
        "   UNION ALL SELECT (SELECT MAX(x.id) FROM results x WHERE x.run_id = r.id"
        "     AND x.phase = 'screen' AND x.valid = 1)"
        "   UNION ALL SELECT (SELECT MAX(x.id) FROM results x WHERE x.run_id = r.id"
        "     AND x.phase = 'final' AND x.valid = 0)"
        "   UNION ALL SELECT (SELECT MAX(x.id) FROM results x WHERE x.run_id = r.id"
        "     AND x.phase = 'final' AND x.valid = 1))),"
        " (SELECT group_concat(n, ',') FROM (SELECT state || ':' || COUNT(*) AS n FROM jobs"
        "   WHERE run_id = r.id GROUP BY state)),"
        " (SELECT group_concat(n, ',') FROM (SELECT state || ':' || COUNT(*) AS n FROM problems"
        "   WHERE run_id = r.id GROUP BY state))"
        " FROM runs r WHERE r.id = ?",
        err, sizeof err);
    if (!st) {
        gt_store_unlock(s);
        return -1;
    }
    sqlite3_bind_int64(st, 1, run_id);
    int rc = sqlite3_step(st), found = 0;
    if (rc == SQLITE_ROW) {
        found = 1;
        snprintf(fp, fplen, "%s|%lld|%s|%s", gt_store_col_text(st, 0),
                 (long long)sqlite3_column_int64(st, 1), gt_store_col_text(st, 2),
                 gt_store_col_text(st, 3));
    } else if (rc != SQLITE_DONE) {
        found = -1;
    }
    gt_store_finish(s, st);
    gt_store_unlock(s);
    return found;
}

/* Per problem of a run: the tuned and baseline times the problem_best view
 * would pick (final phase first: its winner by GT_STORE_BEST_FINAL_SQL, a
 * finalist beyond the noise or the baseline itself; else screen against the
 * mean baseline). */
static const char k_best_cols[] =
    " (SELECT r.time_us FROM results r WHERE r.id = " GT_STORE_BEST_FINAL_SQL("p.id") "),"
    " (SELECT r.time_us FROM results r WHERE r.problem_id = p.id AND r.phase = 'final'"
    "   AND r.valid = 1 AND r.is_baseline = 1),"
    " (SELECT MIN(r.time_us) FROM results r WHERE r.problem_id = p.id AND r.phase = 'screen'"
    "   AND r.valid = 1),"
    " (SELECT AVG(bl.time_us) FROM baselines bl WHERE bl.problem_id = p.id),"
    /* the paired final's uplift (median of per-round ratios), NULL: unpaired */
    " (SELECT r.uplift FROM results r WHERE r.id = " GT_STORE_BEST_FINAL_SQL("p.id") "),"
    /* paired with a substitute baseline: kept out of the workload's uplift,
     * as the run view keeps it out of its headline figures */
    " " GT_STORE_SUBSTITUTE_SQL("p.id");

/* From the first five k_best_cols columns at i (the sixth, i + 5, says
 * whether the baseline is a substitute): 1 with the tuned and baseline
 * times when both are known and positive, and the uplift the run view
 * reports (the paired one when the final was paired, else their ratio). */
static int best_of(sqlite3_stmt *st, int i, double *tuned, double *base, double *up)
{
    int final = sqlite3_column_type(st, i) != SQLITE_NULL;
    int ti = final ? i : i + 2, bi = final ? i + 1 : i + 3;
    if (sqlite3_column_type(st, ti) == SQLITE_NULL || sqlite3_column_type(st, bi) == SQLITE_NULL)
        return 0;
    *tuned = sqlite3_column_double(st, ti);
    *base = sqlite3_column_double(st, bi);
    if (!(*tuned > 0 && *base > 0))
        return 0;
    *up = final && sqlite3_column_type(st, i + 4) != SQLITE_NULL ? sqlite3_column_double(st, i + 4)
                                                                 : *base / *tuned;
    return 1;
}

/* The workload's uplift over the problems with both a tuned and a baseline
 * time against the default (a substitute's uplift is against another
 * yardstick): base_sum / tuned_sum (calls-weighted), wup / wsum
 * (FLOP-weighted). */
typedef struct uplift_sums {
    double base_sum, tuned_sum, wsum, wup;
} uplift_sums;

static int summary_uplift(gt_store *s, int64_t run_id, uplift_sums *u, char *err, size_t errlen)
{
    char sql[4096];
    _Static_assert(sizeof k_best_cols < sizeof sql - 128, "k_best_cols outgrew the query buffer");
    snprintf(sql, sizeof sql, "SELECT p.call_count, p.weight,%s FROM problems p WHERE p.run_id = ?",
             k_best_cols);
    sqlite3_stmt *st = gt_store_prep(s, sql, err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        double t, bu, up, calls = sqlite3_column_double(st, 0), w = sqlite3_column_double(st, 1);
        if (best_of(st, 2, &t, &bu, &up) && !sqlite3_column_int(st, 7)) {
            u->base_sum += calls * bu;
            u->tuned_sum += calls * t;
            u->wsum += w;
            u->wup += w * up;
        }
    }
    gt_store_finish(s, st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "database error: %s", sqlite3_errstr(rc));
        return -1;
    }
    return 0;
}

static int add_num_or_null(cJSON *o, const char *name, int known, double v)
{
    return known ? cJSON_AddNumberToObject(o, name, v) != NULL
                 : cJSON_AddNullToObject(o, name) != NULL;
}

static cJSON *summary_locked(gt_store *s, int64_t run_id, int64_t now_ms, int *found, char *err,
                             size_t errlen)
{
    sqlite3_stmt *st = gt_store_prep(
        s, "SELECT name, state, started_ms, finished_ms FROM runs WHERE id = ?", err, errlen);
    if (!st)
        return NULL;
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        gt_store_finish(s, st);
        *found = 0;
        return NULL;
    }
    *found = 1;
    char name[128], state[16];
    snprintf(name, sizeof name, "%s", gt_store_col_text(st, 0));
    snprintf(state, sizeof state, "%s", gt_store_col_text(st, 1));
    int started = sqlite3_column_type(st, 2) != SQLITE_NULL;
    int64_t t0 = sqlite3_column_int64(st, 2);
    int64_t t1 = sqlite3_column_type(st, 3) != SQLITE_NULL ? sqlite3_column_int64(st, 3) : now_ms;
    gt_store_finish(s, st);
    gt_run_counts c;
    uplift_sums u = {0};
    if (gt_store_run_counts(s, run_id, &c, err, errlen) ||
        summary_uplift(s, run_id, &u, err, errlen))
        return NULL;
    double progress = gt_store_run_progress(&c, state);
    double elapsed = started ? (double)(t1 - t0) / 1000.0 : 0;
    cJSON *root = cJSON_CreateObject();
    if (!root || !cJSON_AddNumberToObject(root, "id", (double)run_id) ||
        !cJSON_AddStringToObject(root, "name", name) ||
        !cJSON_AddStringToObject(root, "state", state) ||
        !cJSON_AddNumberToObject(root, "progress", progress) ||
        !cJSON_AddNumberToObject(root, "elapsed_s", elapsed) ||
        !gt_store_add_eta(root, started, elapsed, progress, state) ||
        !gt_store_add_run_counts(root, &c) ||
        !add_num_or_null(root, "weighted_uplift", u.tuned_sum > 0,
                         u.base_sum / (u.tuned_sum > 0 ? u.tuned_sum : 1)) ||
        !add_num_or_null(root, "flop_weighted_uplift", u.wsum > 0,
                         u.wup / (u.wsum > 0 ? u.wsum : 1))) {
        cJSON_Delete(root);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return root;
}

cJSON *gt_store_run_summary(gt_store *s, int64_t run_id, int64_t now_ms, int *found, char *err,
                            size_t errlen)
{
    gt_store_lock(s);
    cJSON *j = summary_locked(s, run_id, now_ms, found, err, errlen);
    gt_store_unlock(s);
    return j;
}

/* Appends the points where the problem's best valid time improved. */
static int add_points(sqlite3_stmt *pts, int64_t problem_id, cJSON *arr)
{
    sqlite3_reset(pts);
    sqlite3_bind_int64(pts, 1, problem_id);
    double best = 0;
    int have = 0, rc;
    while ((rc = sqlite3_step(pts)) == SQLITE_ROW) {
        double t = sqlite3_column_double(pts, 1);
        if (have && t >= best)
            continue;
        best = t;
        have = 1;
        cJSON *pt = cJSON_CreateArray();
        if (!pt || !cJSON_AddItemToArray(arr, pt)) {
            cJSON_Delete(pt);
            return -1;
        }
        cJSON *a = cJSON_CreateNumber((double)sqlite3_column_int64(pts, 0));
        if (!a || !cJSON_AddItemToArray(pt, a)) {
            cJSON_Delete(a);
            return -1;
        }
        cJSON *b = cJSON_CreateNumber(t);
        if (!b || !cJSON_AddItemToArray(pt, b)) {
            cJSON_Delete(b);
            return -1;
        }
    }
    return rc == SQLITE_DONE ? 0 : -1;
}

static cJSON *timeline_locked(gt_store *s, int64_t run_id, int *found, char *err, size_t errlen)
{
    cJSON *root = NULL;
    sqlite3_stmt *pr = NULL, *pts = NULL;
    sqlite3_stmt *st = gt_store_prep(
        s, "SELECT state, created_ms, started_ms, finished_ms FROM runs WHERE id = ?", err, errlen);
    if (!st)
        return NULL;
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        gt_store_finish(s, st);
        *found = 0;
        return NULL;
    }
    *found = 1;
    root = cJSON_CreateObject();
    cJSON *arr = NULL;
    if (!root || !cJSON_AddNumberToObject(root, "run_id", (double)run_id) ||
        !cJSON_AddStringToObject(root, "state", gt_store_col_text(st, 0)))
        goto fail;
    static const char *const tcols[] = {"created_ms", "started_ms", "finished_ms"};
    for (int i = 0; i < 3; i++)
        if (!add_num_or_null(root, tcols[i], sqlite3_column_type(st, i + 1) != SQLITE_NULL,
                             (double)sqlite3_column_int64(st, i + 1)))
            goto fail;
    if (!(arr = cJSON_AddArrayToObject(root, "problems")))
        goto fail;
    char sql[4096];
    snprintf(sql, sizeof sql,
             "SELECT p.id, p.label, p.weight, p.call_count, p.state,%s FROM problems p"
             " WHERE p.run_id = ? ORDER BY p.weight DESC, p.id",
             k_best_cols);
    if (!(pr = gt_store_prep(s, sql, err, errlen)))
        goto fail;
    /* A problem's valid results through results_by_problem (both phases:
     * the CHECK on phase allows no other), sorted here: an index of its own
     * cost every result's insert more than this view is worth
     * (010_results_indexes.sql). */
    if (!(pts = gt_store_prep(s,
                              "SELECT created_ms, time_us FROM results WHERE problem_id = ?"
                              " AND phase IN ('screen', 'final') AND valid = 1"
                              " AND time_us IS NOT NULL ORDER BY created_ms, time_us",
                              err, errlen)))
        goto fail;
    sqlite3_bind_int64(pr, 1, run_id);
    int rc;
    while ((rc = sqlite3_step(pr)) == SQLITE_ROW) {
        cJSON *p = cJSON_CreateObject(), *points;
        if (!p || !cJSON_AddItemToArray(arr, p)) {
            cJSON_Delete(p);
            goto fail;
        }
        double t = 0, bu = 0, up = 0;
        int known = best_of(pr, 5, &t, &bu, &up);
        const char *phase = sqlite3_column_type(pr, 5) != SQLITE_NULL   ? "final"
                            : sqlite3_column_type(pr, 7) != SQLITE_NULL ? "screen"
                                                                         : NULL;
        if (!cJSON_AddNumberToObject(p, "problem_id", (double)sqlite3_column_int64(pr, 0)) ||
            !cJSON_AddStringToObject(p, "label", gt_store_col_text(pr, 1)) ||
            !cJSON_AddNumberToObject(p, "weight", sqlite3_column_double(pr, 2)) ||
            !cJSON_AddNumberToObject(p, "calls", sqlite3_column_double(pr, 3)) ||
            !cJSON_AddStringToObject(p, "state", gt_store_col_text(pr, 4)) ||
            !(phase ? cJSON_AddStringToObject(p, "phase", phase) != NULL
                    : cJSON_AddNullToObject(p, "phase") != NULL) ||
            !add_num_or_null(p, "time_us", known, t) ||
            !add_num_or_null(p, "baseline_us", known, bu) ||
            !add_num_or_null(p, "uplift", known, up) ||
            !(points = cJSON_AddArrayToObject(p, "points")) ||
            add_points(pts, sqlite3_column_int64(pr, 0), points))
            goto fail;
    }
    if (rc != SQLITE_DONE)
        goto fail;
    gt_store_finish(s, pts);
    gt_store_finish(s, pr);
    gt_store_finish(s, st);
    return root;
fail:
    if (!err[0])
        snprintf(err, errlen, "out of memory or database error");
    gt_store_finish(s, pts);
    gt_store_finish(s, pr);
    gt_store_finish(s, st);
    cJSON_Delete(root);
    return NULL;
}

cJSON *gt_store_run_timeline(gt_store *s, int64_t run_id, int *found, char *err, size_t errlen)
{
    if (errlen)
        err[0] = '\0';
    gt_store_lock(s);
    cJSON *j = timeline_locked(s, run_id, found, err, errlen);
    gt_store_unlock(s);
    return j;
}
