/* test_store_batch.c: group commit (gt_store_batch_begin/_end, what the
 * dispatcher serves a batch of worker requests in): inside a batch each store
 * transaction is a savepoint, so a failed one undoes only itself while the
 * others of the batch commit together; nothing is visible to another
 * connection (nothing durable) before the batch ends; a second batch cannot
 * open inside one. And the lease's order (store_jobs.c next_job, by index
 * seeks since 007_lease_index.sql): oldest running run first, inside it
 * final, then enumerate, then screen jobs, each oldest first; runs bound to
 * another device model are skipped. */
#include "gt_log.h"
#include "gt_store.h"
#include "gt_test.h"
#include "gt_util.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

static char g_dir[64];
static char g_path[160];

static void worker_info(gt_worker_info *w, const char *host)
{
    memset(w, 0, sizeof *w);
    snprintf(w->host, sizeof w->host, "%s", host);
    snprintf(w->backend, sizeof w->backend, "cpu");
    snprintf(w->device_model, sizeof w->device_model, "test cpu");
}

/* Workers rows as another connection sees them (committed only). */
static int committed_workers(void)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int n = -1;
    if (sqlite3_open_v2(g_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM workers", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static void test_batch(void)
{
    char err[512];
    gt_store *s = gt_store_open(g_path, err, sizeof err);
    CHECK_MSG(s != NULL, "%s", err);
    if (!s)
        return;
    gt_worker_info a, b;
    worker_info(&a, "a");
    worker_info(&b, "b");
    int64_t ida = 0, idb = 0;
    CHECK_MSG(gt_store_batch_begin(s, err, sizeof err) == 0, "%s", err);
    /* a second batch inside the first is refused, the first stays open */
    CHECK(gt_store_batch_begin(s, err, sizeof err) == -1 && strstr(err, "already open"));
    CHECK_MSG(gt_store_register_worker(s, &a, 1, &ida, err, sizeof err) == 0 && ida > 0, "%s", err);
    /* a request that fails inside the batch: its savepoint is rolled back,
     * the batch goes on (a heartbeat of an unknown worker writes nothing) */
    CHECK(gt_store_heartbeat(s, 999, 0, 2, 1000, err, sizeof err) != 0);
    CHECK_MSG(gt_store_register_worker(s, &b, 3, &idb, err, sizeof err) == 0 && idb > ida, "%s", err);
    /* nothing is committed, so nothing may be answered yet */
    CHECK(committed_workers() == 0);
    CHECK_MSG(gt_store_batch_end(s, err, sizeof err) == 0, "%s", err);
    CHECK(committed_workers() == 2);
    /* outside a batch a store call commits by itself again */
    gt_worker_info c;
    worker_info(&c, "c");
    int64_t idc = 0;
    CHECK_MSG(gt_store_register_worker(s, &c, 4, &idc, err, sizeof err) == 0, "%s", err);
    CHECK(committed_workers() == 3);
    /* a batch whose commit fails rolls back everything it did: a batch
     * ended after its transaction was rolled back underneath */
    CHECK_MSG(gt_store_batch_begin(s, err, sizeof err) == 0, "%s", err);
    worker_info(&c, "d");
    CHECK_MSG(gt_store_register_worker(s, &c, 5, &idc, err, sizeof err) == 0, "%s", err);
    gt_store_lock(s);
    CHECK(sqlite3_exec(gt_store_db(s), "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK);
    gt_store_unlock(s);
    CHECK(gt_store_batch_end(s, err, sizeof err) == -1);
    CHECK(committed_workers() == 3);
    /* and the store takes the next batch */
    CHECK_MSG(gt_store_batch_begin(s, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(gt_store_register_worker(s, &c, 6, &idc, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(gt_store_batch_end(s, err, sizeof err) == 0, "%s", err);
    CHECK(committed_workers() == 4);
    gt_store_close(s);
}

/* The id and kind of the next lease, 0 when none. */
static long long lease_next(gt_store *s, int64_t wid, char kind[16])
{
    char err[512];
    gt_job job;
    int r = gt_store_lease(s, wid, 1000, 30000, &job, err, sizeof err);
    CHECK_MSG(r >= 0, "lease: %s", err);
    if (r <= 0)
        return 0;
    long long id = (long long)job.id;
    snprintf(kind, 16, "%s", job.kind);
    gt_job_free(&job);
    return id;
}

static void test_lease_order(void)
{
    char dir[64];
    if (gt_test_tmpdir(dir, sizeof dir, "lease"))
        return;
    static const char *const opts[][2] = {{"budget", "8"}, {"shard_size", "2"}};
    gt_store *s = gt_test_store_with_run(dir, "M,N,K\n64,64,64\n32,32,32\n", opts, 2, NULL);
    if (!s)
        return;
    CHECK(gt_test_add_run(s, "M,N,K\n48,48,48\n", opts, 2, NULL) == 0);
    long long n1 = gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE run_id = 1 AND state = 'queued'");
    long long n2 = gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE run_id = 2 AND state = 'queued'");
    CHECK_MSG(n1 >= 4 && n2 >= 2, "queued jobs: run 1 %lld, run 2 %lld", n1, n2);
    /* run 1's last job is a final phase, its second last an enumeration:
     * they go first, in that order, whatever their ids */
    long long last = gt_test_int(s, "SELECT MAX(id) FROM jobs WHERE run_id = 1");
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE jobs SET kind = 'final' WHERE id = %lld;"
             " UPDATE jobs SET kind = 'enumerate' WHERE id = %lld", last, last - 1);
    CHECK(gt_test_store_sql(s, sql) == 0);
    int64_t wid = gt_test_sim_worker(s, "h", 2);
    char kind[16] = "";
    CHECK(lease_next(s, wid, kind) == last && !strcmp(kind, "final"));
    CHECK(lease_next(s, wid, kind) == last - 1 && !strcmp(kind, "enumerate"));
    long long prev = 0, id;
    for (long long i = 0; i < n1 - 2; i++) {
        id = lease_next(s, wid, kind);
        CHECK_MSG(id > prev && !strcmp(kind, "screen"), "lease %lld of run 1: job %lld (%s)", i, id,
                  kind);
        snprintf(sql, sizeof sql, "SELECT run_id FROM jobs WHERE id = %lld", id);
        CHECK(gt_test_int(s, sql) == 1);
        prev = id;
    }
    /* run 1 has nothing queued: run 2 next, unless bound to another model */
    CHECK(gt_test_store_sql(s, "UPDATE runs SET device_model = 'another model' WHERE id = 2") == 0);
    CHECK(lease_next(s, wid, kind) == 0);
    CHECK(gt_test_store_sql(s, "UPDATE runs SET device_model = NULL WHERE id = 2") == 0);
    id = lease_next(s, wid, kind);
    snprintf(sql, sizeof sql, "SELECT run_id FROM jobs WHERE id = %lld", id);
    CHECK(id > 0 && gt_test_int(s, sql) == 2);
    gt_store_close(s);
    gt_test_rmdir(dir);
}

int main(void)
{
    if (gt_test_tmpdir(g_dir, sizeof g_dir, "batch") != 0)
        return 1;
    snprintf(g_path, sizeof g_path, "%s/b.db", g_dir);
    gt_log_set_level(GT_LOG_ERR);
    RUN(test_batch);
    RUN(test_lease_order);
    return gt_test_done_rm(g_dir);
}
