/* test_store_health.c: the store's write health and durability check
 * (server/store.c). A write transaction that fails counts once under its
 * SQLite error class and makes the store unwritable until one that changes
 * rows commits (PRAGMA max_page_count stands in for a full disk; one that
 * changes nothing does not count); a rollback for the caller's own reasons
 * counts nothing; /metrics shows the counters. A WAL
 * removed, or a database file replaced, under an open store makes the next
 * commit fail with a message that says so, calls the on_lost callback once
 * and refuses every write after; what was committed before the removal
 * survives the store's close, and a replacement file is left untouched. */
#include "gt_metrics.h"
#include "gt_store.h"
#include "gt_test.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[64];

static int reg(gt_store *s, const char *host, char *err, size_t errlen)
{
    gt_worker_info w;
    memset(&w, 0, sizeof w);
    snprintf(w.host, sizeof w.host, "%s", host);
    snprintf(w.backend, sizeof w.backend, "cpu");
    snprintf(w.device_model, sizeof w.device_model, "Test CPU");
    int64_t id;
    return gt_store_register_worker(s, &w, gt_wall_ms(), &id, err, errlen);
}

/* A run of n distinct GEMMs: enough rows to need new pages. */
static int big_run(gt_store *s, int n, char *err, size_t errlen)
{
    gt_str log;
    gt_str_init(&log);
    int rc = gt_str_printf(&log, "M,N,K\n");
    for (int i = 0; i < n; i++)
        rc |= gt_str_printf(&log, "%d,%d,64\n", 16 + i, 32 + i);
    if (rc || !log.s) {
        gt_str_free(&log);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    gt_run_opts o;
    gt_run_opts_default(&o);
    o.budget = 4;
    o.ncpu = 1;
    gt_log_result res;
    gt_run_created cr;
    rc = gt_log_parse(log.s, log.len, &o.log, &res);
    if (rc == 0)
        rc = gt_test_create_run(s, &o, &res, &cr, err, errlen);
    else
        snprintf(err, errlen, "log did not parse");
    gt_log_result_free(&res);
    gt_run_opts_fini(&o);
    gt_str_free(&log);
    return rc;
}

static long count_rows(gt_store *s, const char *sql)
{
    long n = -1;
    gt_store_lock(s);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(gt_store_db(s), sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    gt_store_unlock(s);
    return n;
}

static char *render(gt_store *s)
{
    char err[256];
    gt_str b;
    gt_str_init(&b);
    gt_metrics_inputs in = {.store = s, .writer = s, .now_ms = gt_wall_ms(), .start_time_s = 1};
    if (gt_metrics_render(&b, &in, err, sizeof err)) {
        fprintf(stderr, "render: %s\n", err);
        gt_str_free(&b);
        return NULL;
    }
    return b.s;
}

static void test_errors(void)
{
    char path[128], err[512];
    snprintf(path, sizeof path, "%s/e.db", g_dir);
    gt_store *s = gt_store_open(path, err, sizeof err);
    CHECK_MSG(s != NULL, "%s", err);
    if (!s)
        return;
    gt_store_health h;
    gt_store_health_get(s, &h);
    CHECK(h.writable == 1 && h.lost == 0);
    for (int k = 0; k < GT_STORE_ERR_KINDS; k++)
        CHECK(h.errors[k] == 0);
    CHECK(!strcmp(gt_store_err_kind_name(GT_STORE_ERR_FULL), "full"));
    CHECK(!strcmp(gt_store_err_kind_name(GT_STORE_ERR_KINDS), "other"));

    int64_t t0 = gt_wall_ms();
    CHECK_MSG(reg(s, "a", err, sizeof err) == 0, "%s", err);
    gt_store_health_get(s, &h);
    CHECK(h.writable == 1 && h.last_write_ms >= t0);

    /* The database cannot grow: the insert fails inside the transaction,
     * which counts once, as "full", when it is rolled back. */
    CHECK(gt_test_store_sql(s, "PRAGMA max_page_count = 1") == 0);
    CHECK(big_run(s, 300, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "full") != NULL, "%s", err);
    gt_store_health_get(s, &h);
    CHECK(h.writable == 0);
    CHECK(h.errors[GT_STORE_ERR_FULL] == 1);
    CHECK(h.errors[GT_STORE_ERR_OTHER] == 0);
    CHECK_MSG(strstr(h.last_error, "full") != NULL, "%s", h.last_error);
    CHECK(h.last_error_ms >= t0);
    /* A transaction that changes nothing (the lease sweep, every second)
     * wrote no page: it proves nothing, the store stays unwritable. */
    CHECK_MSG(gt_store_expire(s, gt_wall_ms(), 3, 3600000, err, sizeof err) == 0, "%s", err);
    gt_store_health_get(s, &h);
    CHECK(h.writable == 0 && h.errors[GT_STORE_ERR_FULL] == 1);
    CHECK(big_run(s, 300, err, sizeof err) == -1);
    gt_store_health_get(s, &h);
    CHECK(h.errors[GT_STORE_ERR_FULL] == 2);
    char *t = render(s);
    CHECK(t && strstr(t, "# TYPE gemmtune_store_errors_total counter\n"));
    CHECK(t && strstr(t, "gemmtune_store_errors_total{kind=\"full\"} 2\n"));
    CHECK(t && strstr(t, "gemmtune_store_errors_total{kind=\"lost\"} 0\n"));
    CHECK(t && strstr(t, "gemmtune_store_writable 0\n"));
    CHECK(t && strstr(t, "gemmtune_store_last_write_timestamp_seconds 1"));
    free(t);

    /* Space again: the next write commits and the store is writable. */
    CHECK(gt_test_store_sql(s, "PRAGMA max_page_count = 1073741823") == 0);
    CHECK_MSG(big_run(s, 300, err, sizeof err) == 0, "%s", err);
    gt_store_health_get(s, &h);
    CHECK(h.writable == 1 && h.errors[GT_STORE_ERR_FULL] == 2);
    t = render(s);
    CHECK(t && strstr(t, "gemmtune_store_writable 1\n"));
    free(t);

    /* A rollback for the caller's reasons (no such run) is no store error. */
    CHECK(gt_store_cancel_run(s, 9999, err, sizeof err) == 1);
    gt_store_health_get(s, &h);
    CHECK(h.writable == 1);
    uint64_t sum = 0;
    for (int k = 0; k < GT_STORE_ERR_KINDS; k++)
        sum += h.errors[k];
    CHECK(sum == 2);
    gt_store_close(s);

    /* In memory: no file to check, writes as before. */
    s = gt_store_open(":memory:", err, sizeof err);
    CHECK_MSG(s != NULL, "%s", err);
    if (s) {
        CHECK(gt_store_check_files(s) == 0);
        CHECK(reg(s, "m", err, sizeof err) == 0);
        gt_store_close(s);
    }
}

static int g_lost_calls;
static char g_lost_why[1024];
static void on_lost(void *ctx, const char *why)
{
    (*(int *)ctx)++;
    snprintf(g_lost_why, sizeof g_lost_why, "%s", why);
}

static void test_wal_removed(void)
{
    char path[128], wal[160], err[512];
    snprintf(path, sizeof path, "%s/w.db", g_dir);
    snprintf(wal, sizeof wal, "%s-wal", path);
    gt_store *s = gt_store_open(path, err, sizeof err);
    CHECK_MSG(s != NULL, "%s", err);
    if (!s)
        return;
    g_lost_calls = 0;
    gt_store_on_lost(s, on_lost, &g_lost_calls);
    CHECK(reg(s, "before1", err, sizeof err) == 0);
    CHECK(reg(s, "before2", err, sizeof err) == 0);
    CHECK(gt_store_check_files(s) == 0);
    CHECK(g_lost_calls == 0);

    CHECK(unlink(wal) == 0);
    /* The commit is refused, and says why. */
    CHECK(reg(s, "after", err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "WAL file") && strstr(err, "was removed") && strstr(err, wal), "%s",
              err);
    CHECK(g_lost_calls == 1);
    CHECK(strstr(g_lost_why, wal) != NULL);
    gt_store_health h;
    gt_store_health_get(s, &h);
    CHECK(h.lost == 1 && h.writable == 0);
    CHECK(h.errors[GT_STORE_ERR_LOST] == 1);
    CHECK_MSG(strstr(h.last_error, "WAL file was removed") && !strstr(h.last_error, g_dir), "%s",
              h.last_error);
    /* Every later write is refused before it starts; the callback is not
     * called again. */
    CHECK(reg(s, "later", err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "refused"), "%s", err);
    gt_store_health_get(s, &h);
    CHECK(h.errors[GT_STORE_ERR_LOST] == 2 && h.writable == 0);
    CHECK(g_lost_calls == 1);
    CHECK(gt_store_check_files(s) == -1);
    char *t = render(s);
    CHECK(t && strstr(t, "gemmtune_store_errors_total{kind=\"lost\"} 2\n"));
    free(t);
    CHECK(count_rows(s, "SELECT COUNT(*) FROM workers") == 2);
    /* The checkpoint moves what the removed WAL held into the database. */
    CHECK(gt_store_checkpoint(s) == 0);
    gt_store_close(s);

    s = gt_store_open(path, err, sizeof err);
    CHECK_MSG(s != NULL, "%s", err);
    if (s) {
        CHECK(count_rows(s, "SELECT COUNT(*) FROM workers WHERE host LIKE 'before%'") == 2);
        CHECK(count_rows(s, "SELECT COUNT(*) FROM workers WHERE host IN ('after', 'later')") ==
              0);
        gt_store_health_get(s, &h);
        CHECK(h.lost == 0 && h.writable == 1);
        CHECK(reg(s, "reopened", err, sizeof err) == 0);
        gt_store_close(s);
    }
}

static void test_db_replaced(void)
{
    char path[128], other[128], err[512];
    snprintf(path, sizeof path, "%s/r.db", g_dir);
    snprintf(other, sizeof other, "%s/other.db", g_dir);
    gt_store *o = gt_store_open(other, err, sizeof err);
    CHECK_MSG(o != NULL, "%s", err);
    if (!o)
        return;
    CHECK(reg(o, "other", err, sizeof err) == 0);
    gt_store_close(o);

    gt_store *s = gt_store_open(path, err, sizeof err);
    CHECK_MSG(s != NULL, "%s", err);
    if (!s)
        return;
    g_lost_calls = 0;
    gt_store_on_lost(s, on_lost, &g_lost_calls);
    CHECK(reg(s, "mine", err, sizeof err) == 0);
    CHECK(rename(other, path) == 0);
    CHECK(reg(s, "mine2", err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "database file") && strstr(err, "was replaced"), "%s", err);
    CHECK(g_lost_calls == 1);
    gt_store_health h;
    gt_store_health_get(s, &h);
    CHECK(h.lost == 1 && h.errors[GT_STORE_ERR_LOST] == 1);
    gt_store_close(s);
    /* The file now at the path is the replacement, as it was put there. */
    s = gt_store_open(path, err, sizeof err);
    CHECK_MSG(s != NULL, "%s", err);
    if (s) {
        CHECK(count_rows(s, "SELECT COUNT(*) FROM workers") == 1);
        CHECK(count_rows(s, "SELECT COUNT(*) FROM workers WHERE host = 'other'") == 1);
        gt_store_close(s);
    }
}

int main(void)
{
    if (gt_test_tmpdir(g_dir, sizeof g_dir, "health"))
        return 1;
    RUN(test_errors);
    RUN(test_wal_removed);
    RUN(test_db_replaced);
    return gt_test_done_rm(g_dir);
}
