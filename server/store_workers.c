/* store_workers.c: workers in the store: a worker registers (replacing its
 * old entry on the same device), attaches another connection to its
 * session, heartbeats (keeping the lease of the job it says it works on)
 * and says goodbye (its leases back to the queue). */
#include <stdio.h>
#include <string.h>

#include "store_priv.h"

int gt_store_register_worker(gt_store *s, const gt_worker_info *w, int64_t now_ms, int64_t *worker_id,
                             char *err, size_t errlen)
{
    if (gt_store_tx_begin(s, err, errlen))
        return -1;
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
    return gt_store_tx_end(s, rc, err, errlen);
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
    if (gt_store_tx_begin(s, err, errlen))
        return -1;
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
    return gt_store_tx_end(s, rc, err, errlen);
}

int gt_store_worker_bye(gt_store *s, int64_t worker_id, int64_t now_ms, char *err, size_t errlen)
{
    if (gt_store_tx_begin(s, err, errlen))
        return -1;
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
    return gt_store_tx_end(s, rc, err, errlen);
}
