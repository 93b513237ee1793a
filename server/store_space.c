/* store_space.c: what GET /v1/runs/{id}/space/{problem} reads from the
 * store: the problem, its run's backend and device model, and the worker
 * that says what that model's arch, SM count and (gen_device) limits are.
 * Read-only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_store_space.h"
#include "gt_util.h"
#include "store_priv.h"

void gt_spview_target_fini(gt_spview_target *t)
{
    free(t->key);
    free(t->label);
    free(t->spec);
    free(t->gen_device);
    memset(t, 0, sizeof *t);
}

/* One statement tells the three cases apart: no row, the run does not
 * exist; a row with a NULL problem, the run has no such problem. The
 * worker join is on the run's bound model only: an unbound run (NULL model)
 * matches none, rather than whichever worker happens to be newest. */
static const char k_target_sql[] =
    "SELECT r.backend, COALESCE(r.device_model, ''), p.id, p.key, p.label, p.spec,"
    " w.id, w.arch, w.units, w.gen_device"
    " FROM runs r"
    " LEFT JOIN problems p ON p.run_id = r.id AND (p.id = ?2 OR p.key = ?3)"
    " LEFT JOIN workers w ON w.id = (SELECT w2.id FROM workers w2 WHERE w2.backend = r.backend"
    "   AND w2.device_model = r.device_model ORDER BY w2.last_heartbeat_ms DESC, w2.id DESC"
    "   LIMIT 1)"
    " WHERE r.id = ?1 LIMIT 1";

int gt_store_space_target(gt_store *s, int64_t run_id, const char *problem, gt_spview_target *t,
                          char *err, size_t errlen)
{
    int64_t pid = -1;
    memset(t, 0, sizeof *t);
    if (gt_parse_i64(problem, &pid) != 0)
        pid = -1; /* not a number: a problem key */
    gt_store_lock(s);
    int rc = -1;
    sqlite3_stmt *st = gt_store_prep(s, k_target_sql, err, errlen);
    if (!st)
        goto out;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, pid);
    if (gt_store_bind_text(st, 3, problem) != SQLITE_OK) {
        snprintf(err, errlen, "database error: %s", sqlite3_errmsg(gt_store_db(s)));
        goto out;
    }
    int r = sqlite3_step(st);
    if (r == SQLITE_DONE) {
        rc = GT_STORE_NO_RUN;
        goto out;
    }
    if (r != SQLITE_ROW) {
        snprintf(err, errlen, "database error: %s", sqlite3_errmsg(gt_store_db(s)));
        goto out;
    }
    if (sqlite3_column_type(st, 2) == SQLITE_NULL) {
        rc = GT_STORE_NO_PROBLEM;
        goto out;
    }
    snprintf(t->backend, sizeof t->backend, "%s", gt_store_col_text(st, 0));
    snprintf(t->device_model, sizeof t->device_model, "%s", gt_store_col_text(st, 1));
    t->problem_id = sqlite3_column_int64(st, 2);
    if (sqlite3_column_type(st, 6) != SQLITE_NULL) {
        t->worker_id = sqlite3_column_int64(st, 6);
        snprintf(t->arch, sizeof t->arch, "%s", gt_store_col_text(st, 7));
        t->units = sqlite3_column_int(st, 8);
        if (sqlite3_column_type(st, 9) != SQLITE_NULL && gt_store_col_dup(&t->gen_device, st, 9) != 0) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
    }
    if (gt_store_col_dup(&t->key, st, 3) != 0 || gt_store_col_dup(&t->label, st, 4) != 0 ||
        gt_store_col_dup(&t->spec, st, 5) != 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    rc = 0;
out:
    gt_store_finish(s, st); /* NULL is a no-op */
    gt_store_unlock(s);
    if (rc != 0)
        gt_spview_target_fini(t);
    return rc;
}
