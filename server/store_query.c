/* store_query.c: read-only views of the store for the HTTP API: run lists,
 * run progress with the best result per problem, all results (JSON and CSV),
 * and workers. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_policy.h"
#include "gt_util.h"
#include "store_priv.h"

/* Adds a number, or null when the column is NULL. */
static int add_num_col(cJSON *o, const char *name, sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return cJSON_AddNullToObject(o, name) != NULL;
    return cJSON_AddNumberToObject(o, name, sqlite3_column_double(st, i)) != NULL;
}

static int add_str_col(cJSON *o, const char *name, sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return cJSON_AddNullToObject(o, name) != NULL;
    return cJSON_AddStringToObject(o, name, gt_store_col_text(st, i)) != NULL;
}

/* Adds a JSON column parsed (configs are stored as canonical JSON text). */
static int add_json_col(cJSON *o, const char *name, sqlite3_stmt *st, int i)
{
    cJSON *v = sqlite3_column_type(st, i) == SQLITE_NULL ? cJSON_CreateNull()
                                                           : cJSON_Parse(gt_store_col_text(st, i));
    if (!v)
        v = cJSON_CreateNull();
    if (!v)
        return 0;
    cJSON_AddItemToObject(o, name, v);
    return 1;
}

/* Fills the object of one row of a view's statement: 0, or -1 with err. */
typedef int (*row_fill)(cJSON *o, sqlite3_stmt *st, gt_store *s, int64_t now_ms, char *err,
                        size_t errlen);

/* The list views: adds to root the array `name` with an object per row of
 * sql (its ?1 bound to *id when id is given), each filled by fill, under the
 * store lock. Returns root, or NULL with err (root deleted). */
static cJSON *add_rows(gt_store *s, cJSON *root, const char *name, const char *sql,
                       const int64_t *id, row_fill fill, int64_t now_ms, char *err, size_t errlen)
{
    cJSON *arr = root ? cJSON_AddArrayToObject(root, name) : NULL;
    if (!arr) {
        cJSON_Delete(root);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    gt_store_lock(s);
    sqlite3_stmt *st = gt_store_prep(s, sql, err, errlen);
    if (!st)
        goto fail;
    if (id)
        sqlite3_bind_int64(st, 1, *id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            snprintf(err, errlen, "out of memory");
            goto fail_st;
        }
        if (fill(o, st, s, now_ms, err, errlen) != 0)
            goto fail_st;
    }
    gt_store_finish(s, st);
    gt_store_unlock(s);
    return root;
fail_st:
    gt_store_finish(s, st);
fail:
    gt_store_unlock(s);
    cJSON_Delete(root);
    return NULL;
}

static int fill_run(cJSON *r, sqlite3_stmt *st, gt_store *s, int64_t now_ms, char *err,
                    size_t errlen)
{
    (void)now_ms;
    int64_t id = sqlite3_column_int64(st, 0);
    gt_run_counts c;
    if (gt_store_run_counts(s, id, &c, err, errlen))
        return -1;
    char state[16];
    snprintf(state, sizeof state, "%s", gt_store_col_text(st, 2));
    if (!cJSON_AddNumberToObject(r, "id", (double)id) || !add_str_col(r, "name", st, 1) ||
        !add_str_col(r, "state", st, 2) || !add_str_col(r, "backend", st, 3) ||
        !add_str_col(r, "device_model", st, 4) || !add_str_col(r, "format", st, 5) ||
        !add_num_col(r, "created_ms", st, 6) ||
        !cJSON_AddNumberToObject(r, "problems", (double)c.problems) ||
        !cJSON_AddNumberToObject(r, "problems_done", (double)c.problems_done) ||
        !cJSON_AddNumberToObject(r, "progress", gt_store_run_progress(&c, state))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* Newest first through the id (the rowid: a range scan from the cursor), one row
 * more than the page to know whether another page follows; each run's counts are
 * queried for the page's rows only, so a store with 100,000 runs answers a page as
 * fast as one with 100. */
cJSON *gt_store_runs_json(gt_store *s, const gt_runs_query *q, char *err, size_t errlen)
{
    cJSON *root = cJSON_CreateObject(), *arr = root ? cJSON_AddArrayToObject(root, "runs") : NULL;
    sqlite3_stmt *st = NULL;
    int64_t last = 0;
    int n = 0, more = 0;
    if (!arr) {
        snprintf(err, errlen, "out of memory");
        cJSON_Delete(root);
        return NULL;
    }
    if (q->limit < 1 || q->limit > GT_RUNS_LIMIT_MAX || q->before < 0) {
        snprintf(err, errlen, "invalid page");
        cJSON_Delete(root);
        return NULL;
    }
    gt_store_lock(s);
    st = gt_store_prep(s,
                       "SELECT id, name, state, backend, device_model, source_format, created_ms"
                       " FROM runs WHERE (?1 = 0 OR id < ?1) AND (?2 IS NULL OR state = ?2)"
                       " AND (?3 IS NULL OR backend = ?3) AND (?4 IS NULL OR name = ?4)"
                       " ORDER BY id DESC LIMIT ?5",
                       err, errlen);
    if (!st)
        goto fail;
    if (sqlite3_bind_int64(st, 1, q->before) != SQLITE_OK ||
        (q->state ? sqlite3_bind_text(st, 2, q->state, -1, SQLITE_TRANSIENT)
                  : sqlite3_bind_null(st, 2)) != SQLITE_OK ||
        (q->backend ? sqlite3_bind_text(st, 3, q->backend, -1, SQLITE_TRANSIENT)
                    : sqlite3_bind_null(st, 3)) != SQLITE_OK ||
        (q->name ? sqlite3_bind_text(st, 4, q->name, -1, SQLITE_TRANSIENT)
                 : sqlite3_bind_null(st, 4)) != SQLITE_OK ||
        sqlite3_bind_int(st, 5, q->limit + 1) != SQLITE_OK) {
        snprintf(err, errlen, "binding the run list's query failed");
        goto fail;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == q->limit) {
            more = 1;
            break;
        }
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        if (fill_run(o, st, s, 0, err, errlen) != 0)
            goto fail;
        last = sqlite3_column_int64(st, 0);
        n++;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        snprintf(err, errlen, "listing runs: %s", sqlite3_errstr(rc));
        goto fail;
    }
    gt_store_finish(s, st);
    gt_store_unlock(s);
    if (!(more ? cJSON_AddNumberToObject(root, "next", (double)last)
               : cJSON_AddNullToObject(root, "next"))) {
        snprintf(err, errlen, "out of memory");
        cJSON_Delete(root);
        return NULL;
    }
    return root;
fail:
    gt_store_finish(s, st);
    gt_store_unlock(s);
    cJSON_Delete(root);
    return NULL;
}

/* A final phase's uplift divides by the baseline it re-timed next to the
 * winner. On the H100 that baseline once measured twice what every screen
 * job of the same GEMM measured (16.8 against 33.6 us: a disturbed machine,
 * bench/results/h100_25_service_gen.txt), which doubled the GEMM's uplift.
 * baseline_drift = final baseline / the screen jobs' median; outside
 * [1/GT_BASELINE_DRIFT_MAX, GT_BASELINE_DRIFT_MAX] the entry says
 * baseline_suspect (the worker re-timed the rounds once already): its uplift
 * is not to be trusted, tune the GEMM again. A final timed as CUDA graphs
 * (launch 'graph', column 23: launch-bound) has no drift: the screens timed
 * the baseline plainly, host enqueue included. */

static int add_drift(cJSON *b, sqlite3_stmt *st, int *suspect_n)
{
    int final = sqlite3_column_type(st, 5) != SQLITE_NULL &&
                !strcmp((const char *)sqlite3_column_text(st, 5), "final") &&
                sqlite3_column_type(st, 23) == SQLITE_NULL;
    double fb = sqlite3_column_double(st, 8), sb = sqlite3_column_double(st, 13);
    if (!final || sqlite3_column_type(st, 8) == SQLITE_NULL || sqlite3_column_type(st, 13) == SQLITE_NULL ||
        !(fb > 0) || !(sb > 0))
        return cJSON_AddNullToObject(b, "baseline_drift") && cJSON_AddFalseToObject(b, "baseline_suspect")
                   ? 0
                   : -1;
    double d = fb / sb;
    int suspect = d > GT_BASELINE_DRIFT_MAX || d < 1 / GT_BASELINE_DRIFT_MAX;
    *suspect_n += suspect;
    return cJSON_AddNumberToObject(b, "baseline_drift", d) && cJSON_AddBoolToObject(b, "baseline_suspect", suspect)
               ? 0
               : -1;
}

/* A best entry's paired-rounds fields (columns 14..18 of add_best):
 * uplift_lo, uplift_hi, rounds, and the verdict. The final's baseline as
 * the entry means no finalist's interval lay above GT_MIN_GAIN: "no significant
 * gain", uplift 1. Unpaired entries (screen only, older finals): null. */
static int add_paired(cJSON *b, sqlite3_stmt *st, int paired)
{
    if (!paired)
        return cJSON_AddNullToObject(b, "uplift_lo") && cJSON_AddNullToObject(b, "uplift_hi") &&
                       cJSON_AddNullToObject(b, "rounds") && cJSON_AddNullToObject(b, "significant") &&
                       cJSON_AddNullToObject(b, "verdict")
                   ? 0
                   : -1;
    int sig = !sqlite3_column_int(st, 18) && sqlite3_column_double(st, 15) > GT_MIN_GAIN;
    return cJSON_AddNumberToObject(b, "uplift_lo", sqlite3_column_double(st, 15)) &&
                   cJSON_AddNumberToObject(b, "uplift_hi", sqlite3_column_double(st, 16)) &&
                   cJSON_AddNumberToObject(b, "rounds", sqlite3_column_int(st, 17)) &&
                   cJSON_AddBoolToObject(b, "significant", sig) &&
                   cJSON_AddStringToObject(b, "verdict", sig ? "significant gain" : "no significant gain")
               ? 0
               : -1;
}

/* Which baseline an entry's uplift is measured against (columns 20..22 of
 * add_best): "default" (the vendor library's choice timed), "substitute"
 * (the default could not run: the final paired the finalists with the
 * substitute of store_substitute.c, named in baseline_config) or null (no
 * baseline time at all). baseline_reason says why the default could not
 * run. 1 when the entry is a substitute's, 0 when not, -1 when out of
 * memory. */
static int add_baseline_kind(cJSON *b, sqlite3_stmt *st, int known)
{
    int subst = sqlite3_column_int(st, 21);
    const char *kind = subst ? "substitute" : known ? "default" : NULL;
    int ok = (kind ? cJSON_AddStringToObject(b, "baseline_kind", kind) != NULL
                   : cJSON_AddNullToObject(b, "baseline_kind") != NULL) &&
             add_json_col(b, "baseline_config", st, 20) &&
             /* the default ran: an older failure of it is no reason */
             (subst || !known ? add_str_col(b, "baseline_reason", st, 22)
                              : cJSON_AddNullToObject(b, "baseline_reason") != NULL);
    return ok ? subst : -1;
}

/* The best entry of every problem of a run, heaviest first, and the two
 * workload-level summaries: the speedup of the whole workload
 * (sum calls*baseline / sum calls*tuned) and the FLOP-weighted mean uplift.
 * Both are against the default only: an entry paired with a substitute
 * baseline (the default could not run) is left out of them and counted in
 * substitute_baselines, its FLOP-weighted uplift reported apart as
 * substitute_flop_weighted_uplift. */
int gt_store_add_best(gt_store *s, cJSON *root, int64_t run_id, char *err, size_t errlen)
{
    cJSON *arr = cJSON_AddArrayToObject(root, "best");
    if (!arr)
        return -1;
    sqlite3_stmt *st = gt_store_prep(
        s,
        /* The problem_best view, inlined so the problems of this run drive it
         * (one indexed lookup each) and problems without results stay in.
         * The CTE reads each problem's two baselines once (materialized: a
         * flattened one would run each lookup again wherever it is named). */
        "WITH pb AS MATERIALIZED (SELECT p.id, p.label, p.call_count, p.weight, p.state, p.error,"
        "  p.flops, " GT_STORE_FINAL_BASE_SQL("p.id") " AS fb, " GT_STORE_SCREEN_BASE_SQL("p.id") " AS sb"
        "  FROM problems p WHERE p.run_id = ?)"
        "SELECT p.id, p.label, p.call_count, p.weight, p.state, r.phase, r.config, r.time_us,"
        " CASE WHEN r.phase = 'final' THEN"
        "  (SELECT b.time_us FROM results b WHERE b.problem_id = p.id AND b.phase = 'final'"
        "    AND b.is_baseline = 1 AND b.valid = 1 AND b.backend = r.backend"
        "    AND b.device_model = r.device_model)"
        " ELSE (SELECT median(bl.time_us) FROM baselines bl WHERE bl.problem_id = p.id"
        "    AND bl.backend = r.backend AND bl.device_model = r.device_model) END,"
        " r.tflops, r.rel_err, p.error, p.flops,"
        /* the baseline as the screen jobs timed it, next to their candidates */
        " " GT_STORE_SCREEN_BASELINE_SQL("p.id", "r.backend", "r.device_model") ","
        /* the paired rounds' statistics (NULL: not paired) */
        " r.uplift, r.uplift_lo, r.uplift_hi, r.rounds, r.is_baseline,"
        /* the GPU's state over the final's rounds (NULL: none recorded) */
        " r.gpu_state,"
        /* what the uplift is against (the final's baseline, else the
         * screens' default), whether that is a substitute, and why the
         * default could not run (store_priv.h) */
        " COALESCE(p.fb, p.sb),"
        " " GT_STORE_SUBSTITUTE_OF("p.fb", "p.sb") ","
        " " GT_STORE_DEFAULT_FAILED_SQL("p.id") ","
        /* how the entry was timed when not as the run said (schema 011) */
        " r.launch"
        " FROM pb p LEFT JOIN results r ON r.id = " GT_STORE_BEST_SQL("p.id")
        " ORDER BY p.weight DESC, p.id",
        err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    double base_sum = 0, tuned_sum = 0, wsum = 0, wup = 0, sub_wsum = 0, sub_wup = 0;
    int suspect_n = 0, sub_n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        cJSON *b = cJSON_CreateObject();
        if (!b || !cJSON_AddItemToArray(arr, b)) {
            cJSON_Delete(b);
            gt_store_finish(s, st);
            return -1;
        }
        double t = sqlite3_column_double(st, 7), bu = sqlite3_column_double(st, 8);
        int known = sqlite3_column_type(st, 7) != SQLITE_NULL && sqlite3_column_type(st, 8) != SQLITE_NULL &&
                    t > 0 && bu > 0;
        double calls = sqlite3_column_double(st, 2), w = sqlite3_column_double(st, 3);
        /* a paired final's uplift is its median per-round ratio */
        int paired = known && sqlite3_column_type(st, 14) != SQLITE_NULL &&
                     sqlite3_column_type(st, 17) != SQLITE_NULL;
        double up = paired ? sqlite3_column_double(st, 14) : known ? bu / t : 0;
        if (!cJSON_AddNumberToObject(b, "problem_id", (double)sqlite3_column_int64(st, 0)) ||
            !add_str_col(b, "label", st, 1) || !add_num_col(b, "call_count", st, 2) ||
            !add_num_col(b, "weight", st, 3) || !add_str_col(b, "state", st, 4) ||
            !add_str_col(b, "phase", st, 5) || !add_json_col(b, "config", st, 6) ||
            !add_num_col(b, "time_us", st, 7) || !add_num_col(b, "baseline_us", st, 8) ||
            !(known ? cJSON_AddNumberToObject(b, "uplift", up) : cJSON_AddNullToObject(b, "uplift")) ||
            add_paired(b, st, paired) != 0 ||
            !add_num_col(b, "tflops", st, 9) || !add_num_col(b, "rel_err", st, 10) ||
            !add_str_col(b, "error", st, 11) || !add_num_col(b, "baseline_screen_us", st, 13) ||
            add_drift(b, st, &suspect_n) != 0 || !add_json_col(b, "gpu_state", st, 19) ||
            !add_str_col(b, "launch", st, 23)) {
            gt_store_finish(s, st);
            return -1;
        }
        int subst = add_baseline_kind(b, st, known);
        if (subst < 0) {
            gt_store_finish(s, st);
            return -1;
        }
        if (subst) {
            sub_n++;
            if (known) {
                sub_wsum += w;
                sub_wup += w * up;
            }
        } else if (known) {
            base_sum += calls * bu;
            tuned_sum += calls * t;
            wsum += w;
            wup += w * up;
        }
    }
    gt_store_finish(s, st);
    if (!(tuned_sum > 0 ? cJSON_AddNumberToObject(root, "weighted_uplift", base_sum / tuned_sum)
                        : cJSON_AddNullToObject(root, "weighted_uplift")) ||
        !(wsum > 0 ? cJSON_AddNumberToObject(root, "flop_weighted_uplift", wup / wsum)
                   : cJSON_AddNullToObject(root, "flop_weighted_uplift")) ||
        !cJSON_AddNumberToObject(root, "baseline_suspect", suspect_n) ||
        !cJSON_AddNumberToObject(root, "substitute_baselines", sub_n) ||
        !(sub_wsum > 0 ? cJSON_AddNumberToObject(root, "substitute_flop_weighted_uplift", sub_wup / sub_wsum)
                       : cJSON_AddNullToObject(root, "substitute_flop_weighted_uplift")))
        return -1;
    return 0;
}

static cJSON *run_json_locked(gt_store *s, int64_t run_id, int64_t now_ms, int *found, char *err,
                              size_t errlen)
{
    cJSON *root = NULL;
    sqlite3_stmt *st = gt_store_prep(
        s,
        "SELECT id, name, state, backend, device_model, strategy, source_format, created_ms,"
        " started_ms, finished_ms, budget, options, total_calls, total_flops, dropped, skipped"
        " FROM runs WHERE id = ?",
        err, errlen);
    if (!st)
        return NULL;
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        gt_store_finish(s, st);
        *found = 0;
        return NULL;
    }
    *found = 1;
    gt_run_counts c;
    if (gt_store_run_counts(s, run_id, &c, err, errlen)) {
        gt_store_finish(s, st);
        return NULL;
    }
    char state[16];
    snprintf(state, sizeof state, "%s", gt_store_col_text(st, 2));
    double progress = gt_store_run_progress(&c, state);
    int started = sqlite3_column_type(st, 8) != SQLITE_NULL;
    int64_t t0 = sqlite3_column_int64(st, 8);
    int64_t t1 = sqlite3_column_type(st, 9) != SQLITE_NULL ? sqlite3_column_int64(st, 9) : now_ms;
    double elapsed = started ? (double)(t1 - t0) / 1000.0 : 0;
    root = cJSON_CreateObject();
    if (!root)
        goto oom;
    int ok = cJSON_AddNumberToObject(root, "id", (double)run_id) && add_str_col(root, "name", st, 1) &&
             add_str_col(root, "state", st, 2) && add_str_col(root, "backend", st, 3) &&
             add_str_col(root, "device_model", st, 4) && add_str_col(root, "strategy", st, 5) &&
             add_str_col(root, "format", st, 6) && add_num_col(root, "created_ms", st, 7) &&
             add_num_col(root, "started_ms", st, 8) && add_num_col(root, "finished_ms", st, 9) &&
             add_num_col(root, "budget", st, 10) && add_json_col(root, "options", st, 11) &&
             add_num_col(root, "total_calls", st, 12) && add_num_col(root, "total_flops", st, 13) &&
             add_num_col(root, "dropped", st, 14) && add_json_col(root, "skipped", st, 15) &&
             cJSON_AddNumberToObject(root, "elapsed_s", elapsed) &&
             gt_store_add_eta(root, started, elapsed, progress, state) &&
             cJSON_AddNumberToObject(root, "progress", progress) &&
             gt_store_add_run_counts(root, &c);
    char *opts = NULL;
    if (ok && gt_store_col_dup(&opts, st, 11))
        ok = 0;
    gt_store_finish(s, st);
    if (!ok || gt_store_add_best(s, root, run_id, err, errlen) ||
        gt_store_add_verify(s, root, run_id, opts, err, errlen)) {
        free(opts);
        goto oom;
    }
    free(opts);
    return root;
oom:
    snprintf(err, errlen, "out of memory or database error");
    cJSON_Delete(root);
    return NULL;
}

cJSON *gt_store_run_json(gt_store *s, int64_t run_id, int64_t now_ms, int *found, char *err,
                         size_t errlen)
{
    gt_store_lock(s);
    cJSON *j = run_json_locked(s, run_id, now_ms, found, err, errlen);
    gt_store_unlock(s);
    return j;
}

static const char k_results_sql[] =
    "SELECT r.problem_id, p.label, r.backend, r.phase, r.config, r.config_hash, r.is_baseline,"
    " r.time_us, r.spread, r.tflops, r.rel_err, r.valid, r.reason, r.worker_id, r.device_model,"
    " r.created_ms, r.job_id, r.rounds, r.uplift, r.uplift_lo, r.uplift_hi, r.gpu_state, r.launch"
    " FROM results r JOIN problems p ON p.id = r.problem_id WHERE r.run_id = ?"
    " ORDER BY p.weight DESC, r.problem_id, r.phase, r.time_us IS NULL, r.time_us";

static int fill_result(cJSON *r, sqlite3_stmt *st, gt_store *s, int64_t now_ms, char *err,
                       size_t errlen)
{
    (void)s;
    (void)now_ms;
    if (!add_num_col(r, "problem_id", st, 0) || !add_str_col(r, "label", st, 1) ||
        !add_str_col(r, "backend", st, 2) || !add_str_col(r, "phase", st, 3) ||
        !add_json_col(r, "config", st, 4) || !add_str_col(r, "config_hash", st, 5) ||
        !cJSON_AddBoolToObject(r, "baseline", sqlite3_column_int(st, 6)) ||
        !add_num_col(r, "time_us", st, 7) || !add_num_col(r, "spread", st, 8) ||
        !add_num_col(r, "tflops", st, 9) || !add_num_col(r, "rel_err", st, 10) ||
        !cJSON_AddBoolToObject(r, "valid", sqlite3_column_int(st, 11)) ||
        !add_str_col(r, "reason", st, 12) || !add_num_col(r, "worker_id", st, 13) ||
        !add_str_col(r, "device_model", st, 14) || !add_num_col(r, "created_ms", st, 15) ||
        !add_num_col(r, "job_id", st, 16) || !add_num_col(r, "rounds", st, 17) ||
        !add_num_col(r, "uplift", st, 18) || !add_num_col(r, "uplift_lo", st, 19) ||
        !add_num_col(r, "uplift_hi", st, 20) || !add_json_col(r, "gpu_state", st, 21) ||
        !add_str_col(r, "launch", st, 22)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

cJSON *gt_store_results_json(gt_store *s, int64_t run_id, int *found, char *err, size_t errlen)
{
    *found = gt_store_run_exists(s, run_id) == 1;
    if (!*found)
        return NULL;
    cJSON *root = cJSON_CreateObject();
    if (root && !cJSON_AddNumberToObject(root, "run_id", (double)run_id)) {
        cJSON_Delete(root);
        root = NULL;
    }
    return add_rows(s, root, "results", k_results_sql, &run_id, fill_result, 0, err, errlen);
}

/* Quotes a CSV field when it needs it (RFC 4180). */
static int csv_field(gt_str *b, const char *v, int last)
{
    int quote = strpbrk(v, ",\"\n\r") != NULL;
    int rc = 0;
    if (quote) {
        rc |= gt_str_append(b, "\"", 1);
        for (const char *p = v; *p; p++)
            rc |= *p == '"' ? gt_str_append(b, "\"\"", 2) : gt_str_append(b, p, 1);
        rc |= gt_str_append(b, "\"", 1);
    } else {
        rc |= gt_str_append(b, v, strlen(v));
    }
    rc |= gt_str_append(b, last ? "\n" : ",", 1);
    return rc;
}

char *gt_store_results_csv(gt_store *s, int64_t run_id, int *found, char *err, size_t errlen)
{
    *found = gt_store_run_exists(s, run_id) == 1;
    if (!*found)
        return NULL;
    static const char *cols[] = {"problem_id", "label", "backend", "phase", "config",
                                 "config_hash", "baseline", "time_us", "spread", "tflops",
                                 "rel_err", "valid", "reason", "worker_id", "device_model",
                                 "created_ms", "job_id", "rounds", "uplift", "uplift_lo",
                                 "uplift_hi"};
    const int ncols = (int)(sizeof cols / sizeof cols[0]);
    gt_str b;
    gt_str_init(&b);
    for (int i = 0; i < ncols; i++)
        csv_field(&b, cols[i], i == ncols - 1);
    gt_store_lock(s);
    sqlite3_stmt *st = gt_store_prep(s, k_results_sql, err, errlen);
    if (!st) {
        gt_store_unlock(s);
        gt_str_free(&b);
        return NULL;
    }
    sqlite3_bind_int64(st, 1, run_id);
    while (sqlite3_step(st) == SQLITE_ROW)
        for (int i = 0; i < ncols; i++)
            csv_field(&b, gt_store_col_text(st, i), i == ncols - 1);
    gt_store_finish(s, st);
    gt_store_unlock(s);
    if (b.oom) {
        gt_str_free(&b);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return b.s;
}

static int fill_worker(cJSON *w, sqlite3_stmt *st, gt_store *s, int64_t now_ms, char *err,
                       size_t errlen)
{
    (void)s;
    double age = (double)(now_ms - sqlite3_column_int64(st, 10)) / 1000.0;
    if (!add_num_col(w, "id", st, 0) || !add_str_col(w, "host", st, 1) ||
        !add_num_col(w, "pid", st, 2) || !add_num_col(w, "device_index", st, 3) ||
        !add_str_col(w, "backend", st, 4) || !add_str_col(w, "device_model", st, 5) ||
        !add_str_col(w, "arch", st, 6) || !add_num_col(w, "units", st, 7) ||
        !add_num_col(w, "mem_bytes", st, 8) || !add_str_col(w, "state", st, 9) ||
        !add_num_col(w, "last_heartbeat_ms", st, 10) ||
        !cJSON_AddNumberToObject(w, "heartbeat_age_s", age) || !add_num_col(w, "results", st, 11) ||
        !add_str_col(w, "driver", st, 12) || !add_num_col(w, "registered_ms", st, 13) ||
        !add_json_col(w, "gen_device", st, 14)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

cJSON *gt_store_workers_json(gt_store *s, int64_t now_ms, char *err, size_t errlen)
{
    return add_rows(s, cJSON_CreateObject(), "workers",
                    "SELECT id, host, pid, device_index, backend, device_model, arch, units,"
                    " mem_bytes, state, last_heartbeat_ms, results, driver, registered_ms, gen_device"
                    " FROM workers ORDER BY id",
                    NULL, fill_worker, now_ms, err, errlen);
}

/* ---- the result a kernel download is made from ----------------------------------- */

void gt_kernel_row_fini(gt_kernel_row *r)
{
    free(r->key);
    free(r->label);
    free(r->spec);
    free(r->config);
    memset(r, 0, sizeof *r);
}

static double col_num(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* The winner is problem_best's: the best final result (GT_STORE_BEST_FINAL_SQL:
 * a finalist beyond the noise, else the final's baseline), else the
 * fastest valid screen result; its baseline as add_best computes it. A
 * config_hash picks that candidate instead (valid or not, the final phase's
 * row first). The target arch is the measuring worker's, else that of the
 * most recently seen worker of the same backend and device model. */
static const char k_kernel_sql[] =
    "WITH best(id) AS (SELECT " GT_STORE_BEST_SQL("?1") ")"
    " SELECT r.config, r.config_hash, r.backend, r.device_model, r.phase, r.valid, r.time_us,"
    " r.rel_err,"
    " CASE WHEN r.phase = 'final' THEN"
    "  (SELECT b.time_us FROM results b WHERE b.problem_id = r.problem_id AND b.phase = 'final'"
    "    AND b.is_baseline = 1 AND b.valid = 1 AND b.backend = r.backend"
    "    AND b.device_model = r.device_model)"
    " ELSE (SELECT median(bl.time_us) FROM baselines bl WHERE bl.problem_id = r.problem_id"
    "    AND bl.backend = r.backend AND bl.device_model = r.device_model) END,"
    " COALESCE(w.arch, (SELECT w2.arch FROM workers w2 WHERE w2.backend = r.backend"
    "    AND w2.device_model = r.device_model ORDER BY w2.last_heartbeat_ms DESC LIMIT 1)),"
    " r.id = (SELECT id FROM best)"
    " FROM results r LEFT JOIN workers w ON w.id = r.worker_id"
    " WHERE r.problem_id = ?1 AND ((?2 IS NULL AND r.id = (SELECT id FROM best))"
    "   OR r.config_hash = ?2)"
    " ORDER BY r.phase = 'final' DESC, r.valid DESC, r.time_us IS NULL, r.time_us, r.id LIMIT 1";

static int kernel_row_locked(gt_store *s, int64_t run_id, const char *problem,
                             const char *config_hash, gt_kernel_row *r, char *err, size_t errlen)
{
    int64_t pid = -1;
    if (gt_parse_i64(problem, &pid) != 0)
        pid = -1; /* not a number: a problem key */
    sqlite3_stmt *st = gt_store_prep(
        s, "SELECT id, key, label, spec FROM problems WHERE run_id = ?1 AND (id = ?2 OR key = ?3)",
        err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, pid);
    gt_store_bind_text(st, 3, problem);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        gt_store_finish(s, st);
        if (rc == SQLITE_DONE)
            return GT_STORE_NO_PROBLEM;
        snprintf(err, errlen, "database error: %s", sqlite3_errmsg(gt_store_db(s)));
        return -1;
    }
    r->problem_id = sqlite3_column_int64(st, 0);
    int ok = gt_store_col_dup(&r->key, st, 1) == 0 && gt_store_col_dup(&r->label, st, 2) == 0 &&
             gt_store_col_dup(&r->spec, st, 3) == 0;
    gt_store_finish(s, st);
    if (!ok)
        goto nomem;
    if (!(st = gt_store_prep(s, k_kernel_sql, err, errlen)))
        return -1;
    sqlite3_bind_int64(st, 1, r->problem_id);
    gt_store_bind_text(st, 2, config_hash);
    rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        gt_store_finish(s, st);
        if (rc == SQLITE_DONE)
            return GT_STORE_NO_RESULT;
        snprintf(err, errlen, "database error: %s", sqlite3_errmsg(gt_store_db(s)));
        return -1;
    }
    snprintf(r->config_hash, sizeof r->config_hash, "%s", gt_store_col_text(st, 1));
    snprintf(r->backend, sizeof r->backend, "%s", gt_store_col_text(st, 2));
    snprintf(r->device_model, sizeof r->device_model, "%s", gt_store_col_text(st, 3));
    snprintf(r->phase, sizeof r->phase, "%s", gt_store_col_text(st, 4));
    snprintf(r->arch, sizeof r->arch, "%s", gt_store_col_text(st, 9));
    r->valid = sqlite3_column_int(st, 5);
    r->time_us = col_num(st, 6);
    r->rel_err = col_num(st, 7);
    r->baseline_us = col_num(st, 8);
    r->winner = sqlite3_column_int(st, 10);
    ok = gt_store_col_dup(&r->config, st, 0) == 0;
    gt_store_finish(s, st);
    if (!ok)
        goto nomem;
    /* how the run timed its candidates (option launch; older runs: the
     * default, plain) */
    gt_run_opts o;
    if (gt_store_run_opts(s, run_id, &o, err, errlen))
        return -1;
    r->chained = o.chained;
    r->graph = o.graph;
    gt_run_opts_fini(&o);
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    return -1;
}

int gt_store_kernel_row(gt_store *s, int64_t run_id, const char *problem, const char *config_hash,
                        gt_kernel_row *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    int ex = gt_store_run_exists(s, run_id);
    if (ex <= 0) {
        snprintf(err, errlen, "database error");
        return ex == 0 ? GT_STORE_NO_RUN : -1;
    }
    gt_store_lock(s);
    int rc = kernel_row_locked(s, run_id, problem, config_hash, r, err, errlen);
    gt_store_unlock(s);
    if (rc != 0)
        gt_kernel_row_fini(r);
    return rc;
}
