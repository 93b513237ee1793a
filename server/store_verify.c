/* store_verify.c: verify runs (issue 17: POST /v1/runs/{id}/verify), the
 * coordinator's `gemmtune verify`. A verify run re-times a finished run's
 * winners on the workers of its backend and device model: one problem per
 * GEMM whose best entry is a tuned config (the problem's row copied, so key,
 * label and spec are the same), and one final job whose candidates are
 * [that config] beside the baseline the run paired it with (the default, or
 * the substitute of store_substitute.c). The worker's final-job code times
 * the two in paired rounds as it timed them before (the run's options are
 * copied, so the lease gives the same "timing"); the result path records the
 * re-timed uplift and the problem ends done. No enumerate or screen job.
 *
 * The run is marked by its stored options: "verify": {"of": ID, "tolerance":
 * T} (gt_run_opts_from_stored ignores a field it does not know, so nothing
 * else reads it). Its view (gt_store_add_verify, from store_query.c) adds,
 * per best entry, the stored uplift of run ID's entry of the same key, the
 * re-timed uplift of the winner, their relative difference and the verdict
 * against the tolerance. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_policy.h"
#include "gt_util.h"
#include "store_priv.h"

/* One best entry of the run verified: its problem, winner and baseline
 * (canonical JSON texts). */
typedef struct verify_entry {
    int64_t pid;
    char *config, *baseline;
    int is_baseline;
} verify_entry;

static void entries_free(verify_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(e[i].config);
        free(e[i].baseline);
    }
    free(e);
}

/* The best entries of run src, as the run view picks them (add_best: the
 * final's eligible winner, else the fastest screen result), with the
 * baseline the entry is measured against. Read before anything is written,
 * so the inserts below do not run under this statement. */
static int load_entries(gt_store *s, int64_t src, verify_entry **out, size_t *nout, char *err,
                        size_t errlen)
{
    verify_entry *e = NULL;
    size_t n = 0, cap = 0;
    int rc = -1, r;
    sqlite3_stmt *st = gt_store_prep(
        s,
        "SELECT p.id, r.config, r.is_baseline,"
        " COALESCE(" GT_STORE_FINAL_BASE_SQL("p.id") ", " GT_STORE_SCREEN_BASE_SQL("p.id") ")"
        " FROM problems p JOIN results r ON r.id = " GT_STORE_BEST_SQL("p.id")
        " WHERE p.run_id = ? ORDER BY p.weight DESC, p.id",
        err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, src);
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            verify_entry *ne = realloc(e, nc * sizeof *ne);
            if (!ne)
                goto oom;
            e = ne;
            cap = nc;
        }
        verify_entry *x = &e[n];
        memset(x, 0, sizeof *x);
        n++;
        x->pid = sqlite3_column_int64(st, 0);
        x->is_baseline = sqlite3_column_int(st, 2);
        if (gt_store_col_dup(&x->config, st, 1))
            goto oom;
        if (sqlite3_column_type(st, 3) != SQLITE_NULL && gt_store_col_dup(&x->baseline, st, 3))
            goto oom;
    }
    if (r != SQLITE_DONE) {
        snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(s->db));
        goto fail;
    }
    gt_store_finish(s, st);
    *out = e;
    *nout = n;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    gt_store_finish(s, st);
    entries_free(e, n);
    return rc;
}

/* Whether an entry has a tuned winner to re-time: a config that is not the
 * baseline it was paired with (the default kept for "no significant gain"
 * has nothing to verify) and a known baseline. */
static int retimable(const verify_entry *x)
{
    if (!x->baseline || x->is_baseline)
        return 0;
    cJSON *a = cJSON_Parse(x->config), *b = cJSON_Parse(x->baseline);
    int same = !a || !b || cJSON_Compare(a, b, 1);
    cJSON_Delete(a);
    cJSON_Delete(b);
    return !same;
}

/* The verify run's options: run src's options, "verify" set. */
static char *verify_options(const char *src_opts, int64_t src, double tol)
{
    cJSON *o = src_opts && *src_opts ? cJSON_Parse(src_opts) : NULL;
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        o = cJSON_CreateObject();
    }
    char *txt = NULL;
    cJSON *v = cJSON_CreateObject();
    if (!o || !v || !cJSON_AddNumberToObject(v, "of", (double)src) ||
        !cJSON_AddNumberToObject(v, "tolerance", tol)) {
        cJSON_Delete(v);
        goto out;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(o, "verify");
    cJSON_AddItemToObject(o, "verify", v);
    txt = cJSON_PrintUnformatted(o);
out:
    cJSON_Delete(o);
    return txt;
}

static int create_verify_tx(gt_store *s, int64_t src, double tol, int64_t now,
                            gt_verify_created *out, char *err, size_t errlen)
{
    int rc = -1;
    char *opts = NULL, *backend = NULL, *cands = NULL;
    verify_entry *e = NULL;
    size_t n = 0;
    sqlite3_stmt *st = gt_store_prep(s, "SELECT state, backend, options FROM runs WHERE id = ?",
                                     err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, src);
    int r = sqlite3_step(st);
    if (r != SQLITE_ROW) {
        if (r == SQLITE_DONE)
            rc = GT_STORE_NO_RUN;
        else
            snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(s->db));
        gt_store_finish(s, st);
        return rc;
    }
    if (strcmp(gt_store_col_text(st, 0), "done")) {
        snprintf(err, errlen, "run %lld is %s, not done", (long long)src, gt_store_col_text(st, 0));
        gt_store_finish(s, st);
        return GT_STORE_VERIFY_NOT_DONE;
    }
    if (gt_store_col_dup(&backend, st, 1)) {
        gt_store_finish(s, st);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    opts = verify_options(gt_store_col_text(st, 2), src, tol);
    gt_store_finish(s, st);
    if (!opts) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (load_entries(s, src, &e, &n, err, errlen))
        goto out;
    out->skipped = 0;
    for (size_t i = 0; i < n; i++)
        if (!retimable(&e[i]))
            out->skipped++;
    if (out->skipped == n) {
        snprintf(err, errlen, "run %lld has no tuned winner to re-time (%zu best entries, each the"
                 " baseline itself or without a baseline)", (long long)src, n);
        rc = GT_STORE_VERIFY_NOTHING;
        goto out;
    }

    char name[64];
    snprintf(name, sizeof name, "verify of run %lld", (long long)src);
    st = gt_store_prep(s,
                       "INSERT INTO runs(name, source_format, backend, device_model, strategy, budget,"
                       " options, state, total_calls, total_flops, dropped, skipped, created_ms)"
                       " SELECT ?1, source_format, backend, device_model, strategy, budget, ?2,"
                       " 'running', total_calls, total_flops, 0, NULL, ?3 FROM runs WHERE id = ?4",
                       err, errlen);
    if (!st)
        goto out;
    if (gt_store_bind_text(st, 1, name) != SQLITE_OK || gt_store_bind_text(st, 2, opts) != SQLITE_OK ||
        sqlite3_bind_int64(st, 3, now) != SQLITE_OK || sqlite3_bind_int64(st, 4, src) != SQLITE_OK) {
        snprintf(err, errlen, "binding the verify run failed");
        gt_store_finish(s, st);
        goto out;
    }
    if (gt_store_step_done(s, st, err, errlen))
        goto out;
    out->id = sqlite3_last_insert_rowid(s->db);

    for (size_t i = 0; i < n; i++) {
        if (!retimable(&e[i]))
            continue;
        /* the problem as it was: key, label, spec, weight unchanged */
        st = gt_store_prep(
            s,
            "INSERT INTO problems(run_id, key, label, m, n, k, batch, trans_a, trans_b, lda, ldb, ldc,"
            " ldd, stride_a, stride_b, stride_c, stride_d, a_type, b_type, c_type, d_type,"
            " compute_type, scale_type, alpha, beta, bias, bias_type, activation, rotating_mb,"
            " call_count, flops, bytes, weight, spec, state)"
            " SELECT ?1, key, label, m, n, k, batch, trans_a, trans_b, lda, ldb, ldc,"
            " ldd, stride_a, stride_b, stride_c, stride_d, a_type, b_type, c_type, d_type,"
            " compute_type, scale_type, alpha, beta, bias, bias_type, activation, rotating_mb,"
            " call_count, flops, bytes, weight, spec, 'final' FROM problems WHERE id = ?2",
            err, errlen);
        if (!st)
            goto out;
        sqlite3_bind_int64(st, 1, out->id);
        sqlite3_bind_int64(st, 2, e[i].pid);
        if (gt_store_step_done(s, st, err, errlen))
            goto out;
        int64_t pid = sqlite3_last_insert_rowid(s->db);
        size_t len = strlen(e[i].config);
        free(cands);
        cands = malloc(len + 3);
        if (!cands) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        cands[0] = '[';
        memcpy(cands + 1, e[i].config, len);
        memcpy(cands + 1 + len, "]", 2);
        st = gt_store_prep(s,
                           "INSERT INTO jobs(run_id, problem_id, backend, kind, candidates, ncandidates,"
                           " baseline, state, created_ms, updated_ms)"
                           " VALUES (?1, ?2, ?3, 'final', ?4, 1, ?5, 'queued', ?6, ?6)",
                           err, errlen);
        if (!st)
            goto out;
        sqlite3_bind_int64(st, 1, out->id);
        sqlite3_bind_int64(st, 2, pid);
        if (gt_store_bind_text(st, 3, backend) != SQLITE_OK ||
            gt_store_bind_text(st, 4, cands) != SQLITE_OK ||
            gt_store_bind_text(st, 5, e[i].baseline) != SQLITE_OK) {
            snprintf(err, errlen, "binding a verify job failed");
            gt_store_finish(s, st);
            goto out;
        }
        sqlite3_bind_int64(st, 6, now);
        if (gt_store_step_done(s, st, err, errlen))
            goto out;
        out->problems++;
    }
    rc = 0;
out:
    entries_free(e, n);
    free(cands);
    free(backend);
    cJSON_free(opts);
    return rc;
}

int gt_store_create_verify(gt_store *s, int64_t src_run, double tolerance, gt_verify_created *out,
                           char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int64_t now = gt_wall_ms();
    char tmp[128];
    gt_store_lock(s);
    int rc = gt_store_exec(s, "BEGIN IMMEDIATE", err, errlen);
    if (rc == 0) {
        rc = create_verify_tx(s, src_run, tolerance, now, out, err, errlen);
        if (rc == 0)
            rc = gt_store_exec(s, "COMMIT", err, errlen);
        if (rc != 0) {
            gt_store_exec(s, "ROLLBACK", tmp, sizeof tmp);
            out->id = 0;
            out->problems = 0;
        }
    }
    gt_store_unlock(s);
    return rc;
}

/* ---------------------------------------------------------------- the view */

/* A number, or null when not finite. */
static int add_num_or_null(cJSON *o, const char *name, double v)
{
    return isfinite(v) ? cJSON_AddNumberToObject(o, name, v) != NULL
                       : cJSON_AddNullToObject(o, name) != NULL;
}

/* Replaces (or adds) o's field name with item (taken). 0, or -1. */
static int set_field(cJSON *o, const char *name, cJSON *item)
{
    if (!item)
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(o, name))
        return cJSON_ReplaceItemInObjectCaseSensitive(o, name, item) ? 0 : -1;
    return cJSON_AddItemToObject(o, name, item) ? 0 : -1;
}

static cJSON *entry_by_problem(const cJSON *arr, int64_t pid)
{
    cJSON *b;
    cJSON_ArrayForEach(b, arr)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "problem_id");
        if (cJSON_IsNumber(id) && (int64_t)id->valuedouble == pid)
            return b;
    }
    return NULL;
}

/* The winner's own re-timed final result in each entry: its config, time
 * and paired uplift (whether its interval lies above GT_MIN_GAIN or not: the view's
 * best entry is then the baseline itself, but what is verified is the
 * winner's gain), over the entry's. */
static int add_winners(gt_store *s, cJSON *best, int64_t run_id, char *err, size_t errlen)
{
    int rc = -1, r;
    sqlite3_stmt *st = gt_store_prep(
        s,
        "SELECT r.problem_id, r.config, r.time_us, r.uplift, r.uplift_lo, r.uplift_hi,"
        " (SELECT b.time_us FROM results b WHERE b.problem_id = r.problem_id AND b.phase = 'final'"
        "   AND b.is_baseline = 1 AND b.valid = 1 AND b.backend = r.backend"
        "   AND b.device_model = r.device_model)"
        " FROM results r WHERE r.run_id = ? AND r.phase = 'final' AND r.is_baseline = 0"
        " AND r.valid = 1 AND r.time_us > 0",
        err, errlen);
    if (!st)
        return -1;
    /* an entry whose winner was not re-timed (yet) has no re-timed uplift */
    cJSON *b;
    cJSON_ArrayForEach(b, best)
    {
        if (set_field(b, "uplift", cJSON_CreateNull()))
            goto oom;
    }
    sqlite3_bind_int64(st, 1, run_id);
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        b = entry_by_problem(best, sqlite3_column_int64(st, 0));
        if (!b)
            continue;
        double t = sqlite3_column_double(st, 2), bu = sqlite3_column_double(st, 6);
        double up = sqlite3_column_type(st, 3) != SQLITE_NULL ? sqlite3_column_double(st, 3)
                    : sqlite3_column_type(st, 6) != SQLITE_NULL && bu > 0 ? bu / t
                                                                           : NAN;
        cJSON *cfg = cJSON_Parse(gt_store_col_text(st, 1));
        if (!cfg || set_field(b, "config", cfg) || set_field(b, "time_us", cJSON_CreateNumber(t)) ||
            set_field(b, "uplift", isfinite(up) ? cJSON_CreateNumber(up) : cJSON_CreateNull()))
            goto oom;
        if (sqlite3_column_type(st, 4) != SQLITE_NULL &&
            (set_field(b, "uplift_lo", cJSON_CreateNumber(sqlite3_column_double(st, 4))) ||
             set_field(b, "uplift_hi", cJSON_CreateNumber(sqlite3_column_double(st, 5)))))
            goto oom;
    }
    if (r != SQLITE_DONE) {
        snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(s->db));
        goto out;
    }
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
out:
    gt_store_finish(s, st);
    return rc;
}

int gt_store_add_verify(gt_store *s, cJSON *root, int64_t run_id, const char *options, char *err,
                        size_t errlen)
{
    cJSON *opts = options && *options ? cJSON_Parse(options) : NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(opts, "verify");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(v, "of");
    const cJSON *tj = cJSON_GetObjectItemCaseSensitive(v, "tolerance");
    if (!cJSON_IsNumber(of)) {
        cJSON_Delete(opts);
        return 0; /* not a verify run */
    }
    int64_t src = (int64_t)of->valuedouble;
    double tol = cJSON_IsNumber(tj) ? tj->valuedouble : GT_VERIFY_TOLERANCE;
    cJSON_Delete(opts);

    int rc = -1, r;
    long passed = 0, failed = 0;
    sqlite3_stmt *st = NULL;
    cJSON *srcv = cJSON_CreateObject(), *sum = NULL;
    cJSON *best = cJSON_GetObjectItemCaseSensitive(root, "best");
    if (!srcv || !cJSON_IsArray(best))
        goto oom;
    /* run src's entries exactly as its own view shows them */
    if (gt_store_add_best(s, srcv, src, err, errlen))
        goto fail;
    const cJSON *sbest = cJSON_GetObjectItemCaseSensitive(srcv, "best");
    if (add_winners(s, best, run_id, err, errlen))
        goto fail;
    st = gt_store_prep(s,
                       "SELECT v.id, o.id, v.state IN ('done', 'failed', 'cancelled') FROM problems v"
                       " JOIN problems o ON o.run_id = ?2 AND o.key = v.key WHERE v.run_id = ?1",
                       err, errlen);
    if (!st)
        goto fail;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, src);
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        cJSON *b = entry_by_problem(best, sqlite3_column_int64(st, 0));
        const cJSON *sb = entry_by_problem(sbest, sqlite3_column_int64(st, 1));
        if (!b)
            continue;
        int finished = sqlite3_column_int(st, 2);
        const cJSON *su = cJSON_GetObjectItemCaseSensitive(sb, "uplift");
        const cJSON *ru = cJSON_GetObjectItemCaseSensitive(b, "uplift");
        double stored = cJSON_IsNumber(su) ? su->valuedouble : NAN;
        double re = cJSON_IsNumber(ru) ? ru->valuedouble : NAN;
        double diff = stored > 0 && isfinite(re) ? re / stored - 1 : NAN;
        /* null while not re-timed; a finished problem without a re-timed
         * uplift (the winner failed to build or validate) fails */
        const char *verdict = isfinite(diff) && finished ? (fabs(diff) <= tol ? "pass" : "fail")
                              : finished                 ? "fail"
                                                         : NULL;
        if (verdict && verdict[0] == 'p')
            passed++;
        else if (verdict)
            failed++;
        if (!add_num_or_null(b, "stored_uplift", stored) || !add_num_or_null(b, "diff", diff) ||
            !(verdict ? cJSON_AddStringToObject(b, "verify", verdict)
                      : cJSON_AddNullToObject(b, "verify")))
            goto oom;
    }
    if (r != SQLITE_DONE) {
        snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(s->db));
        goto fail;
    }
    sum = cJSON_CreateObject();
    if (!sum || !cJSON_AddNumberToObject(sum, "passed", (double)passed) ||
        !cJSON_AddNumberToObject(sum, "failed", (double)failed) ||
        !cJSON_AddNumberToObject(sum, "tolerance", tol) ||
        !cJSON_AddNumberToObject(root, "verifies", (double)src))
        goto oom;
    cJSON_AddItemToObject(root, "verify", sum);
    sum = NULL;
    rc = 0;
    goto fail;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    gt_store_finish(s, st);
    cJSON_Delete(sum);
    cJSON_Delete(srcv);
    return rc;
}
