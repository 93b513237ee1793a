/* store_progress.c: a run's progress (store_priv.h): its problems, jobs and
 * candidates per state, the share of its work done, the ETA, and their
 * JSON. One definition for the run views of the HTTP API (store_query.c)
 * and the summary streamed to watchers (store_stats.c), so that the two
 * cannot disagree on how far a run is. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "store_priv.h"

/* Runs sql, its ?1 bound to run_id, for its one row of integers: the first
 * ncols columns go to cols (left as they are when there is no row; NULL
 * reads as 0). 0, or -1 with err. */
static int one_row(gt_store *s, const char *sql, int64_t run_id, long *cols, int ncols,
                   char *err, size_t errlen)
{
    sqlite3_stmt *st = gt_store_prep(s, sql, err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) == SQLITE_ROW)
        for (int i = 0; i < ncols; i++)
            cols[i] = sqlite3_column_int64(st, i);
    gt_store_finish(s, st);
    return 0;
}

int gt_store_run_counts(gt_store *s, int64_t run_id, gt_run_counts *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    long p[4] = {0}, j[7] = {0}, pending = 0, r[2] = {0};
    /* Failed and cancelled apart: a run cancelled before anything ran has
     * failed nothing. */
    if (one_row(s,
                "SELECT COUNT(*), SUM(state = 'done'), SUM(state = 'failed'),"
                " SUM(state = 'cancelled') FROM problems WHERE run_id = ?",
                run_id, p, 4, err, errlen) ||
        one_row(s,
                "SELECT COUNT(*), SUM(state = 'queued'), SUM(state = 'leased'),"
                " SUM(state = 'done'), SUM(state = 'failed'), SUM(state = 'cancelled'),"
                " SUM(CASE WHEN kind = 'screen' THEN ncandidates ELSE 0 END)"
                " FROM jobs WHERE run_id = ?",
                run_id, j, 7, err, errlen) ||
        /* An evolutionary search queues a generation at a time: count what
         * it has still to propose, or progress would near 1 after every
         * generation. */
        one_row(s, GT_STORE_EVO_PENDING_SQL, run_id, &pending, 1, err, errlen) ||
        /* kept on the run's row by the report transaction (schema 012): a
         * count over the run's results was O(results) per view */
        one_row(s, "SELECT screen_done, screen_valid FROM runs WHERE id = ?", run_id, r, 2, err,
                errlen))
        return -1;
    c->problems = p[0];
    c->problems_done = p[1];
    c->problems_failed = p[2];
    c->problems_cancelled = p[3];
    c->jobs = j[0];
    c->jobs_queued = j[1];
    c->jobs_leased = j[2];
    c->jobs_done = j[3];
    c->jobs_failed = j[4];
    c->jobs_cancelled = j[5];
    c->cands_total = j[6] + pending;
    c->cands_done = r[0];
    c->cands_valid = r[1];
    return 0;
}

double gt_store_run_progress(const gt_run_counts *c, const char *state)
{
    if (!strcmp(state, "done"))
        return 1.0;
    /* A failed problem will get no more work: it counts as finished. A
     * cancelled one was not worked off, so a cancelled run keeps the share
     * measured before its cancellation instead of jumping ahead. */
    double total = (double)c->cands_total + (double)c->problems;
    double done = (double)c->cands_done + (double)(c->problems_done + c->problems_failed);
    if (total <= 0)
        return 0;
    double p = done / total;
    return p > 1 ? 1 : p;
}

static int add_counts(cJSON *root, const char *name, const char *const *keys, const long *vals,
                      size_t n)
{
    cJSON *o = cJSON_AddObjectToObject(root, name);
    if (!o)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!cJSON_AddNumberToObject(o, keys[i], (double)vals[i]))
            return 0;
    return 1;
}

int gt_store_add_run_counts(cJSON *root, const gt_run_counts *c)
{
    static const char *const pk[] = {"total", "done", "failed", "cancelled"};
    static const char *const jk[] = {"total", "queued", "leased", "done", "failed", "cancelled"};
    static const char *const ck[] = {"total", "done", "valid", "invalid"};
    long pv[] = {c->problems, c->problems_done, c->problems_failed, c->problems_cancelled};
    long jv[] = {c->jobs,      c->jobs_queued, c->jobs_leased,
                 c->jobs_done, c->jobs_failed, c->jobs_cancelled};
    long cv[] = {c->cands_total, c->cands_done, c->cands_valid, c->cands_done - c->cands_valid};
    return add_counts(root, "problems", pk, pv, 4) && add_counts(root, "jobs", jk, jv, 6) &&
           add_counts(root, "candidates", ck, cv, 4);
}

int gt_store_add_eta(cJSON *o, int started, double elapsed_s, double progress, const char *state)
{
    if (started && progress > 0 && !strcmp(state, "running"))
        return cJSON_AddNumberToObject(o, "eta_s", elapsed_s * (1 - progress) / progress) != NULL;
    return cJSON_AddNullToObject(o, "eta_s") != NULL;
}
