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
    char dir[64], err[512];
    if (gt_test_tmpdir(dir, sizeof dir, "bltrust"))
        return 1;
    static const char *const opts[][2] = {{"budget", "8"}, {"shard_size", "2"}};
    gt_run_created cr;
    gt_store *s = gt_test_store_with_run(dir, "M,N,K\n64,64,64\n", opts, 2, &cr);
    if (!s)
        return gt_test_done();
    CHECK_MSG(cr.jobs == 4, "%zu jobs", cr.jobs);
    int64_t wid[4];
    const char *hosts[4] = {"node0", "node1", "node2", "node3"};
    for (int i = 0; i < 4; i++)
        wid[i] = gt_test_sim_worker(s, hosts[i], 2);
    CHECK(screen(s, wid[0], 60) == 0);  /* the first has nothing to compare with */
    CHECK(screen(s, wid[1], 150) == 0); /* 2.5x the only other: in doubt, kept */
    CHECK(screen(s, wid[2], 66) == 0);  /* agrees with the first: kept */
    CHECK(screen(s, wid[3], 600) == 1); /* disagrees with all three: dropped */
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM baselines") == 3);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM baselines WHERE time_us = 600") == 0);
    /* the candidates of the dropped job still count (they were timed) */
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM results WHERE phase = 'screen' AND valid = 1") == 8);
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
