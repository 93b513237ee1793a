/* test_store_batch.c: group commit (gt_store_batch_begin/_end, what the
 * dispatcher serves a batch of worker requests in): inside a batch each store
 * transaction is a savepoint, so a failed one undoes only itself while the
 * others of the batch commit together; nothing is visible to another
 * connection (nothing durable) before the batch ends; a second batch cannot
 * open inside one. Unguarded (no savepoints, what results messages run in),
 * a call refused before it wrote leaves the batch whole, and one that fails
 * after writing breaks it, so that nothing of it commits. And the lease's order (store_lease.c next_job, by index
 * seeks since 007_lease_index.sql): runs share the workers (the run with the
 * fewest jobs leased first, the oldest on a tie), inside a run final, then
 * enumerate, then screen jobs, each by (shard > 0, id): every problem's
 * first screen job before any problem's others, which then go problem by
 * problem (009_screen_shard.sql), so each GEMM gets a first result early
 * and its screen still ends early; runs bound to another device model are
 * skipped. */
#include <cjson/cJSON.h>

#include "gt_log.h"
#include "gt_store.h"
#include "gt_test.h"
#include "gt_util.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
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
    CHECK_MSG(gt_store_batch_begin(s, GT_STORE_BATCH_GUARDED, err, sizeof err) == 0, "%s", err);
    /* a second batch inside the first is refused, the first stays open */
    CHECK(gt_store_batch_begin(s, GT_STORE_BATCH_GUARDED, err, sizeof err) == -1 && strstr(err, "already open"));
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
    CHECK_MSG(gt_store_batch_begin(s, GT_STORE_BATCH_GUARDED, err, sizeof err) == 0, "%s", err);
    worker_info(&c, "d");
    CHECK_MSG(gt_store_register_worker(s, &c, 5, &idc, err, sizeof err) == 0, "%s", err);
    gt_store_lock(s);
    CHECK(sqlite3_exec(gt_store_db(s), "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK);
    gt_store_unlock(s);
    CHECK(gt_store_batch_end(s, err, sizeof err) == -1);
    CHECK(committed_workers() == 3);
    /* and the store takes the next batch */
    CHECK_MSG(gt_store_batch_begin(s, GT_STORE_BATCH_GUARDED, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(gt_store_register_worker(s, &c, 6, &idc, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(gt_store_batch_end(s, err, sizeof err) == 0, "%s", err);
    CHECK(committed_workers() == 4);
    gt_store_close(s);
}

/* The id and kind of the next lease at time now, 0 when none. */
static long long lease_at(gt_store *s, int64_t wid, int64_t now, char kind[16])
{
    char err[512];
    gt_job job;
    int r = gt_store_lease(s, wid, now, 30000, &job, err, sizeof err);
    CHECK_MSG(r >= 0, "lease: %s", err);
    if (r <= 0)
        return 0;
    long long id = (long long)job.id;
    snprintf(kind, 16, "%s", job.kind);
    gt_job_free(&job);
    return id;
}

static long long lease_next(gt_store *s, int64_t wid, char kind[16])
{
    return lease_at(s, wid, 1000, kind);
}

static long long run_of(gt_store *s, long long job)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT run_id FROM jobs WHERE id = %lld", job);
    return gt_test_int(s, sql);
}

/* A results message for job with one result per time in us (configs
 * {"mc": 8 * i + base}), as JSON. */
static cJSON *results_msg(long long job, const double *us, int n, int base)
{
    cJSON *m = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(m, "results");
    cJSON_AddNumberToObject(m, "job_id", (double)job);
    for (int i = 0; arr && i < n; i++) {
        cJSON *x = cJSON_CreateObject(), *cfg = cJSON_AddObjectToObject(x, "config");
        cJSON_AddNumberToObject(cfg, "mc", 8 * i + base);
        cJSON_AddBoolToObject(x, "valid", 1);
        cJSON_AddNumberToObject(x, "time_us", us[i]);
        cJSON_AddNumberToObject(x, "rel_err", 0);
        cJSON_AddItemToArray(arr, x);
    }
    return m;
}

/* An UNGUARDED batch runs its calls without savepoints: a call refused
 * before it wrote (a heartbeat of an unknown worker, results for a job not
 * leased) leaves the batch whole, and it commits; a call that fails after
 * it wrote (a result refused by a trigger, a fault injected on the store's
 * connection, after the message's first result was inserted) breaks it:
 * it cannot commit, and gt_store_batch_abort rolls back everything of it,
 * the other calls' writes included. Served again GUARDED, the failing call
 * fails alone. */
static void test_batch_unguarded(void)
{
    char dir[64], err[512];
    if (gt_test_tmpdir(dir, sizeof dir, "unguarded"))
        return;
    static const char *const opts[][2] = {{"budget", "8"}, {"shard_size", "8"}};
    gt_store *s = gt_test_store_with_run(dir, "M,N,K\n64,64,64\n", opts, 2, NULL);
    if (!s)
        return;
    int64_t wid = gt_test_sim_worker(s, "h", 2), other = gt_test_sim_worker(s, "o", 2);
    char kind[16] = "";
    long long job = lease_next(s, wid, kind);
    CHECK(job > 0);
    CHECK(gt_test_store_sql(s, "CREATE TEMP TRIGGER inject BEFORE INSERT ON results"
                               " WHEN NEW.time_us = 666 BEGIN SELECT RAISE(ABORT, 'injected'); END") == 0);
    static const double good[] = {10, 11}, bad[] = {12, 666};
    /* the poison's first result is new (a duplicate would change nothing) */
    cJSON *ok = results_msg(job, good, 2, 8), *poison = results_msg(job, bad, 2, 64);
    int cancelled = 0;
    size_t acc = 0, rej = 0;
    long long results0 = gt_test_int(s, "SELECT COUNT(*) FROM results");

    /* refusals before any write: the batch stays whole and commits */
    CHECK_MSG(gt_store_batch_begin(s, GT_STORE_BATCH_UNGUARDED, err, sizeof err) == 0, "%s", err);
    CHECK(gt_store_heartbeat(s, 999, 0, 2, 1000, err, sizeof err) != 0);
    CHECK(gt_test_report(s, other, ok, 3, 30000, &cancelled, &acc, &rej, err, sizeof err) ==
          GT_STORE_E_NOT_LEASED);
    CHECK_MSG(gt_test_report(s, wid, ok, 4, 30000, &cancelled, &acc, &rej, err, sizeof err) == 0 &&
                  acc == 2, "%s", err);
    CHECK(!gt_store_batch_broken(s));
    CHECK_MSG(gt_store_batch_end(s, err, sizeof err) == 0, "%s", err);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM results") == results0 + 2);

    /* a call that fails after writing breaks the batch: nothing commits */
    gt_worker_info w;
    worker_info(&w, "new");
    int64_t idw = 0;
    CHECK_MSG(gt_store_batch_begin(s, GT_STORE_BATCH_UNGUARDED, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(gt_store_register_worker(s, &w, 5, &idw, err, sizeof err) == 0, "%s", err);
    CHECK(gt_test_report(s, wid, poison, 6, 30000, &cancelled, &acc, &rej, err, sizeof err) != 0 &&
          strstr(err, "injected"));
    CHECK(gt_store_batch_broken(s));
    CHECK(gt_store_batch_end(s, err, sizeof err) == -1 && strstr(err, "rolled back"));
    CHECK(!gt_store_batch_broken(s));
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM workers WHERE host = 'new'") == 0);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM results") == results0 + 2);

    /* the same calls: aborted, then served again guarded, the failing one
     * alone undone (its first result too) */
    CHECK_MSG(gt_store_batch_begin(s, GT_STORE_BATCH_UNGUARDED, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(gt_store_register_worker(s, &w, 7, &idw, err, sizeof err) == 0, "%s", err);
    CHECK(gt_test_report(s, wid, poison, 8, 30000, &cancelled, &acc, &rej, err, sizeof err) != 0);
    CHECK(gt_store_batch_broken(s));
    gt_store_batch_abort(s);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM workers WHERE host = 'new'") == 0);
    CHECK_MSG(gt_store_batch_begin(s, GT_STORE_BATCH_GUARDED, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(gt_store_register_worker(s, &w, 9, &idw, err, sizeof err) == 0, "%s", err);
    CHECK(gt_test_report(s, wid, poison, 10, 30000, &cancelled, &acc, &rej, err, sizeof err) != 0);
    CHECK(!gt_store_batch_broken(s));
    CHECK_MSG(gt_store_batch_end(s, err, sizeof err) == 0, "%s", err);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM workers WHERE host = 'new'") == 1);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM results") == results0 + 2);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM results WHERE time_us = 12") == 0);
    cJSON_Delete(ok);
    cJSON_Delete(poison);
    gt_store_close(s);
    gt_test_rmdir(dir);
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
     * inside run 1 they go first, in that order, whatever their ids */
    long long last = gt_test_int(s, "SELECT MAX(id) FROM jobs WHERE run_id = 1");
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE jobs SET kind = 'final' WHERE id = %lld;"
             " UPDATE jobs SET kind = 'enumerate' WHERE id = %lld", last, last - 1);
    CHECK(gt_test_store_sql(s, sql) == 0);
    int64_t wid = gt_test_sim_worker(s, "h", 2);
    char kind[16] = "";
    /* a tie (nothing leased) goes to the oldest run */
    CHECK(lease_next(s, wid, kind) == last && !strcmp(kind, "final"));
    long long leased[3] = {0, 1, 0}, prev[3] = {0, 0, 0}, prev_shard[3] = {0, 0, 0};
    int run1_seen = 1, fair = 1, order = 1;
    /* the runs share the worker: the one with fewer jobs leased goes next,
     * so their leased counts never differ by more than one while both have
     * work; inside a run final, enumerate, then screens by (shard > 0, id) */
    for (long long i = 1; i < n1 + n2; i++) {
        long long id = lease_next(s, wid, kind);
        long long run = id ? run_of(s, id) : 0;
        if (run != 1 && run != 2) {
            CHECK_MSG(0, "lease %lld: job %lld of run %lld", i, id, run);
            break;
        }
        leased[run]++;
        if (run == 1 && run1_seen++ == 1)
            order &= id == last - 1 && !strcmp(kind, "enumerate");
        else {
            snprintf(sql, sizeof sql, "SELECT shard FROM jobs WHERE id = %lld", id);
            long long shard = gt_test_int(s, sql);
            order &= !strcmp(kind, "screen") && ((shard > 0) > (prev_shard[run] > 0) ||
                                                 ((shard > 0) == (prev_shard[run] > 0) && id > prev[run]));
            prev[run] = id;
            prev_shard[run] = shard;
        }
        if (leased[1] < n1 && leased[2] < n2)
            fair &= llabs(leased[1] - leased[2]) <= 1;
    }
    CHECK_MSG(fair, "leased: run 1 %lld, run 2 %lld", leased[1], leased[2]);
    CHECK(order);
    CHECK(leased[1] == n1 && leased[2] == n2);
    CHECK(lease_next(s, wid, kind) == 0);
    gt_store_close(s);
    gt_test_rmdir(dir);
}

/* Two GEMMs of one run, A with 3 screen jobs and B with 2 (and a final
 * job): the final goes first, then the screens by (shard > 0, id), A0 B0 A1
 * A2 B1, so B's first result does not wait for all of A's shards, and A's
 * screen still ends before B's later shards. The shards
 * are the store's own (gt_store_insert_jobs), not set by the test. */
static void test_lease_shards(void)
{
    char dir[64], kind[16] = "";
    if (gt_test_tmpdir(dir, sizeof dir, "shards"))
        return;
    static const char *const opts[][2] = {{"budget", "6"}, {"shard_size", "2"}};
    gt_store *s = gt_test_store_with_run(dir, "M,N,K\n64,64,64\n32,32,32\n", opts, 2, NULL);
    if (!s)
        return;
    long long a = gt_test_int(s, "SELECT MIN(problem_id) FROM jobs"),
              b = gt_test_int(s, "SELECT MAX(problem_id) FROM jobs");
    char sql[256];
    /* as written: each problem's screen jobs in a row, shards 0, 1, 2 */
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM jobs j WHERE kind = 'screen' AND problem_id IN (%lld, %lld) AND shard ="
             " (SELECT COUNT(*) FROM jobs i WHERE i.problem_id = j.problem_id AND i.id < j.id)",
             a, b);
    CHECK_MSG(a != b && gt_test_int(s, sql) == 6 &&
                  gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE kind = 'screen'") == 6,
              "problems %lld %lld: %lld of %lld jobs with their shard", a, b, gt_test_int(s, sql),
              gt_test_int(s, "SELECT COUNT(*) FROM jobs"));
    /* B's third job becomes its final phase: B has 2 screen jobs, and a
     * final, which goes first whatever its shard and id */
    long long bf = gt_test_int(s, "SELECT MAX(id) FROM jobs");
    snprintf(sql, sizeof sql, "UPDATE jobs SET kind = 'final' WHERE id = %lld", bf);
    CHECK(gt_test_store_sql(s, sql) == 0);
    long long want[6][2] = {{b, -1}, {a, 0}, {b, 0}, {a, 1}, {a, 2}, {b, 1}}, got[6][2];
    int64_t wid = gt_test_sim_worker(s, "h", 2);
    for (int i = 0; i < 6; i++) {
        long long id = lease_next(s, wid, kind);
        snprintf(sql, sizeof sql, "SELECT problem_id FROM jobs WHERE id = %lld", id);
        got[i][0] = id ? gt_test_int(s, sql) : 0;
        snprintf(sql, sizeof sql, "SELECT shard FROM jobs WHERE id = %lld", id);
        got[i][1] = !strcmp(kind, "final") ? -1 : id ? gt_test_int(s, sql) : -2;
    }
    CHECK_MSG(!memcmp(got, want, sizeof want),
              "leased (problem, shard; -1 final): (%lld %lld) (%lld %lld) (%lld %lld) (%lld %lld)"
              " (%lld %lld) (%lld %lld)",
              got[0][0], got[0][1], got[1][0], got[1][1], got[2][0], got[2][1], got[3][0], got[3][1],
              got[4][0], got[4][1], got[5][0], got[5][1]);
    CHECK(lease_next(s, wid, kind) == 0);
    gt_store_close(s);
    gt_test_rmdir(dir);
}

/* A store in a new folder dir with nruns one-GEMM runs (ids 1..nruns, 4
 * screen jobs each); NULL after a failed check. */
static gt_store *runs_store(char dir[64], int nruns)
{
    static const char *const logs[] = {"M,N,K\n64,64,64\n", "M,N,K\n48,48,48\n", "M,N,K\n40,40,40\n"};
    static const char *const opts[][2] = {{"budget", "8"}, {"shard_size", "2"}};
    if (gt_test_tmpdir(dir, 64, "lease"))
        return NULL;
    gt_store *s = gt_test_store_with_run(dir, logs[0], opts, 2, NULL);
    for (int i = 1; s && i < nruns && i < 3; i++)
        CHECK(gt_test_add_run(s, logs[i], opts, 2, NULL) == 0);
    return s;
}

/* Three runs, two workers that finish their jobs: the runs take turns (a run
 * never leased before goes first among those with as few leased, then the
 * one whose last lease is the oldest), so the third run does not wait for
 * the first two. */
static void test_lease_turns(void)
{
    char dir[64], sql[128], kind[16] = "";
    gt_store *s = runs_store(dir, 3);
    if (!s)
        return;
    int64_t wa = gt_test_sim_worker(s, "a", 1), wb = gt_test_sim_worker(s, "b", 1);
    long long ja = lease_at(s, wa, 1, kind), jb = lease_at(s, wb, 2, kind);
    CHECK(run_of(s, ja) == 1 && run_of(s, jb) == 2);
    long long want[] = {3, 1, 2, 3, 1}, got[5] = {0};
    for (int i = 0; i < 5; i++) {
        /* the worker that leased longest ago finishes and leases again */
        int64_t w = i % 2 ? wb : wa;
        long long *j = i % 2 ? &jb : &ja;
        snprintf(sql, sizeof sql, "UPDATE jobs SET state = 'done' WHERE id = %lld", *j);
        CHECK(gt_test_store_sql(s, sql) == 0);
        *j = lease_at(s, w, 3 + i, kind);
        got[i] = *j ? run_of(s, *j) : 0;
    }
    CHECK_MSG(!memcmp(got, want, sizeof want), "runs leased: %lld %lld %lld %lld %lld", got[0], got[1],
              got[2], got[3], got[4]);
    gt_store_close(s);
    gt_test_rmdir(dir);
}

/* A run bound to another device model is skipped, however few it has leased. */
static void test_lease_model(void)
{
    char dir[64], kind[16] = "";
    gt_store *s = runs_store(dir, 2);
    if (!s)
        return;
    CHECK(gt_test_store_sql(s, "UPDATE runs SET device_model = 'another model' WHERE id = 2") == 0);
    int64_t wid = gt_test_sim_worker(s, "h", 2);
    long long id;
    int only1 = 1;
    while ((id = lease_next(s, wid, kind)) > 0)
        only1 &= run_of(s, id) == 1;
    CHECK(only1);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE run_id = 2 AND state = 'queued'") > 0);
    CHECK(gt_test_store_sql(s, "UPDATE runs SET device_model = NULL WHERE id = 2") == 0);
    id = lease_next(s, wid, kind);
    CHECK(id > 0 && run_of(s, id) == 2);
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
    RUN(test_batch_unguarded);
    RUN(test_lease_order);
    RUN(test_lease_shards);
    RUN(test_lease_turns);
    RUN(test_lease_model);
    return gt_test_done_rm(g_dir);
}
