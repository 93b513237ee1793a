/* test_store_baseline_trust.c: a screen baseline that one worker reports
 * far from what two other workers timed for the same GEMM on the same
 * device model is not taken on trust (dropped and counted: every uplift of
 * the problem divides by it); one within GT_BASELINE_DRIFT_MAX of another
 * worker's is kept, and with a single other worker neither is dropped (no
 * majority). Workers lease the screen jobs of one problem through the store
 * calls the dispatcher makes, on a real SQLite file. */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "gt_store.h"
#include "gt_test.h"
#include "gt_util.h"

static long long q1(gt_store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    long long n = -1;
    if (sqlite3_prepare_v2(gt_store_db(s), sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* Worker wid leases a job and reports its candidates at 50 us and the
 * baseline at base_us; returns how many the store rejected. */
static size_t screen(gt_store *s, int64_t wid, double base_us)
{
    char err[512];
    gt_job job;
    int r = gt_store_lease(s, wid, gt_wall_ms(), 30000, &job, err, sizeof err);
    CHECK_MSG(r == 1, "lease: %s", err);
    if (r != 1)
        return 0;
    CHECK(!strcmp(job.kind, "screen"));
    cJSON *msg = cJSON_CreateObject(), *results = cJSON_CreateArray(), *cands = cJSON_Parse(job.candidates);
    const cJSON *c;
    cJSON_ArrayForEach(c, cands)
    {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddItemToObject(x, "config", cJSON_Duplicate(c, 1));
        cJSON_AddTrueToObject(x, "valid");
        cJSON_AddNumberToObject(x, "time_us", 50);
        cJSON_AddNumberToObject(x, "rel_err", 1e-6);
        cJSON_AddItemToArray(results, x);
    }
    cJSON_AddNumberToObject(msg, "job_id", (double)job.id);
    cJSON_AddItemToObject(msg, "results", results);
    cJSON_AddTrueToObject(msg, "done");
    cJSON *b = cJSON_CreateObject();
    cJSON_AddItemToObject(b, "config", cJSON_Parse(job.baseline));
    cJSON_AddNumberToObject(b, "time_us", base_us);
    cJSON_AddItemToObject(msg, "baseline", b);
    int cancelled = 0;
    size_t acc = 0, rej = 0;
    CHECK_MSG(gt_test_report(s, wid, msg, gt_wall_ms(), 30000, &cancelled, &acc, &rej, err, sizeof err) == 0,
              "report: %s", err);
    cJSON_Delete(msg);
    cJSON_Delete(cands);
    gt_job_free(&job);
    return rej;
}

int main(void)
{
    char dir[64], path[128], err[512];
    if (gt_test_tmpdir(dir, sizeof dir, "bltrust"))
        return 1;
    snprintf(path, sizeof path, "%s/c.db", dir);
    gt_store *s = gt_store_open(path, err, sizeof err);
    CHECK_MSG(s, "%s", err);
    if (!s)
        return gt_test_done();
    gt_run_opts o;
    gt_run_opts_default(&o);
    CHECK(gt_run_opts_set(&o, "backend", "cpu", err, sizeof err) == 0);
    CHECK(gt_run_opts_set(&o, "budget", "8", err, sizeof err) == 0);
    CHECK(gt_run_opts_set(&o, "shard_size", "2", err, sizeof err) == 0);
    const char *log = "M,N,K\n64,64,64\n";
    gt_log_result res;
    gt_run_created cr;
    int rc = gt_log_parse(log, strlen(log), &o.log, &res);
    if (rc == 0)
        rc = gt_test_create_run(s, &o, &res, &cr, err, sizeof err);
    CHECK_MSG(rc == 0 && cr.jobs == 4, "create run: %s (%zu jobs)", err, cr.jobs);
    gt_log_result_free(&res);
    gt_run_opts_fini(&o);
    int64_t wid[4] = {0};
    for (int i = 0; i < 4; i++) {
        gt_worker_info w;
        memset(&w, 0, sizeof w);
        snprintf(w.host, sizeof w.host, "node%d", i);
        snprintf(w.backend, sizeof w.backend, "cpu");
        snprintf(w.device_model, sizeof w.device_model, "Sim CPU");
        w.units = 2;
        CHECK(gt_store_register_worker(s, &w, gt_wall_ms(), &wid[i], err, sizeof err) == 0);
    }
    CHECK(screen(s, wid[0], 60) == 0);  /* the first has nothing to compare with */
    CHECK(screen(s, wid[1], 150) == 0); /* 2.5x the only other: in doubt, kept */
    CHECK(screen(s, wid[2], 66) == 0);  /* agrees with the first: kept */
    CHECK(screen(s, wid[3], 600) == 1); /* disagrees with all three: dropped */
    CHECK(q1(s, "SELECT COUNT(*) FROM baselines") == 3);
    CHECK(q1(s, "SELECT COUNT(*) FROM baselines WHERE time_us = 600") == 0);
    /* the candidates of the dropped job still count (they were timed) */
    CHECK(q1(s, "SELECT COUNT(*) FROM results WHERE phase = 'screen' AND valid = 1") == 8);
    /* The final job checks its baseline against the median of the screen
     * baselines kept (60, 66, 150: 66), not their mean (92): one disturbed
     * screen job must not flag a correct final baseline as drifting. */
    gt_job fin;
    int r = gt_store_lease(s, wid[0], gt_wall_ms(), 30000, &fin, err, sizeof err);
    CHECK_MSG(r == 1 && !strcmp(fin.kind, "final"), "lease: %s", err);
    if (r == 1) {
        cJSON *t = cJSON_Parse(fin.timing);
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(t, "baseline_ref_us");
        CHECK_MSG(cJSON_IsNumber(ref) && ref->valuedouble == 66, "baseline_ref_us %s", fin.timing);
        cJSON_Delete(t);
        gt_job_free(&fin);
    }
    gt_store_close(s);
    return gt_test_done_rm(dir);
}
