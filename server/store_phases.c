/* store_phases.c: a problem's phases in the store (enumerate -> screen ->
 * final -> done, or failed with the reason), the final job made from the
 * screen's best, a run done when its problems are, and expired leases back
 * to the queue (or failed past their attempts). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"
#include "store_priv.h"

int gt_store_set_problem_state(gt_store *s, int64_t pid, const char *state, const char *error,
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

/* The family a config without a "family" key belongs to: on cuda and hip
 * the vendor library's (gen/gen_gemv.h: no key means cuBLASLt; cuBLASLt
 * configs may also say "family":"cublaslt", one family either way), on cpu
 * the backend's one family. */
static const char *library_family(const char *backend)
{
    return !strcmp(backend, "cuda") ? "cublaslt" : !strcmp(backend, "hip") ? "hipblaslt" : backend;
}

/* The finalists: the top final_k valid screen candidates (screen time, then
 * id), then, when final_family_ratio is on, the fastest valid candidate of
 * each family that has none among the top final_k and whose time is within
 * that ratio of the fastest candidate's. Why: the screen ranks on one brief
 * timing per candidate, and a family with many near-equal configs (cuBLASLt's
 * 200) fills the top final_k on its own: on the H200's 25 Llama shapes 6 of
 * the 15 GEMMs with n >= 128 had only cuBLASLt configs in their top 5, so
 * their finals never timed the best generated kernel beside the best library
 * one in paired rounds, where a few % decide (bench/results/
 * h200_47_family_finals.txt). The baseline's config is no candidate (it is in
 * the final anyway).
 *
 * The rows come in screen order from results_by_problem (its entries end in
 * the rowid, so "ORDER BY time_us, id" is the index's own order: no sort),
 * and the walk stops at the first row past both the top final_k and the
 * ratio. One statement with window functions and json_extract over every
 * screen row did the same in 0.7-1.1 ms a problem (256 rows), a tenth of
 * the coordinator's CPU at 40k results/s (bench/results/
 * coord_bench_stop46.txt); this reads the rows it takes and one more. */
/* far more families than there are (gen/gen_gemv.h: gt_gen_family_t) */
#define FINAL_MAX_FAMILIES 32

/* The family of a stored (canonical JSON) config: its top-level "family"
 * string, else lib (the library's configs carry no key). Configs without
 * the text "family" anywhere, every cpu one, are not parsed; one that does
 * not parse counts as the library's (its take below then fails as OOM). */
static void config_family(const char *cfg, const char *lib, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s", lib);
    if (!strstr(cfg, "\"family\""))
        return;
    cJSON *c = cJSON_Parse(cfg);
    const char *f = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "family"));
    if (f)
        snprintf(out, outlen, "%s", f);
    cJSON_Delete(c);
}

/* Appends the finalists' configs (parsed) to cands. ratio 0: the top k only. */
static int load_finalists(gt_store *s, int64_t pid, const char *base_hash, int k, double ratio,
                          const char *lib, cJSON *cands, char *err, size_t errlen)
{
    char fams[FINAL_MAX_FAMILIES][48];
    int nfam = 0, pos = 0, r, rc = -1;
    double best = 0;
    sqlite3_stmt *st = gt_store_prep(s,
                       "SELECT config, time_us FROM results WHERE problem_id = ?1"
                       " AND phase = 'screen' AND valid = 1 AND is_baseline = 0"
                       " AND config_hash != ?2 ORDER BY time_us, id",
                       err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, pid);
    gt_store_bind_text(st, 2, base_hash);
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        const char *cfg = gt_store_col_text(st, 0);
        double t = sqlite3_column_double(st, 1);
        if (pos++ == 0)
            best = t;
        int top = pos <= k;
        if (!top && (ratio <= 0 || t > ratio * best))
            break; /* in screen order: every later row is slower still */
        int take = top;
        if (ratio > 0) {
            char fam[48];
            config_family(cfg, lib, fam, sizeof fam);
            int seen = 0;
            for (int i = 0; i < nfam && !seen; i++)
                seen = !strcmp(fams[i], fam);
            if (!seen && nfam < FINAL_MAX_FAMILIES) {
                snprintf(fams[nfam++], sizeof fams[0], "%s", fam);
                take = 1; /* a family's first row is its fastest */
            }
        }
        if (!take)
            continue;
        cJSON *c = cJSON_Parse(cfg);
        if (!c || !cJSON_AddItemToArray(cands, c)) {
            cJSON_Delete(c);
            goto oom;
        }
    }
    if (r != SQLITE_ROW && r != SQLITE_DONE) {
        /* a failed step must not queue a final with part of its finalists */
        snprintf(err, errlen, "sqlite: finalists: %s", sqlite3_errmsg(s->db));
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

/* Creates the final job: the finalists (load_finalists), re-timed in one
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
        rc = gt_store_set_problem_state(s, pid, "failed", "no baseline configuration known", err, errlen);
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
        rc = gt_store_set_problem_state(s, pid, "failed", why, err, errlen);
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
    if (load_finalists(s, pid, base_hash, o.final_k, o.final_family_ratio,
                       library_family(o.backend), cands, err, errlen))
        goto out;
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
    rc = gt_store_set_problem_state(s, pid, "final", NULL, err, errlen);
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

int gt_store_finish_run_if_done(gt_store *s, int64_t run_id, int64_t now_ms, char *err,
                                 size_t errlen)
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
        rc = gt_store_set_problem_state(s, pid, "done", NULL, err, errlen);
    else if (failed[FINAL])
        rc = gt_store_set_problem_state(s, pid, "failed", last_error[0] ? last_error : "final phase failed",
                               err, errlen);
    else if (failed[ENUM] && !done[SCREEN] && !failed[SCREEN])
        rc = gt_store_set_problem_state(s, pid, "failed", last_error[0] ? last_error : "enumeration failed",
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
    return gt_store_finish_run_if_done(s, run_id, now_ms, err, errlen);
}

int gt_store_expire(gt_store *s, int64_t now_ms, int max_attempts, int64_t lost_ms, char *err,
                    size_t errlen)
{
    if (gt_store_tx_begin(s, err, errlen))
        return -1;
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
    return gt_store_tx_end(s, rc, err, errlen);
}
