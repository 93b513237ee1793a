/* test_store_screen_fail.c: a problem whose screen produced nothing valid
 * fails with the screen's reason and gets no final job (it would only fail
 * again: 17 failed jobs for 10 failed problems before), while a problem
 * with one valid candidate in the same run goes on to its final phase; and a
 * cuda problem whose enumeration found no candidate fails with the device's
 * reason. Driven through the store calls the dispatcher makes (register,
 * lease, report) on a real SQLite file. */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_store.h"
#include "gt_test.h"
#include "gt_util.h"

/* cuda: an enumerate job answered with no candidate and the baseline
 * placeholder of a problem cuBLASLt's heuristic refused (worker/cuda:
 * gt_cuda_no_default_json) fails its problem with that reason at once, and
 * the run ends. */
static void test_enumerate_empty(const char *dir)
{
    char err[512], sub[96];
    snprintf(sub, sizeof sub, "%s/enum", dir);
    CHECK(gt_mkdirs(sub, 0700) == 0);
    static const char *const opts[][2] = {{"backend", "cuda"}, {"device_model", "Sim GPU"}};
    gt_store *s = gt_test_store_with_run(sub, "M,N,K,dtype\n32000,3,4096,bf16\n", opts, 2, NULL);
    if (!s)
        return;
    int64_t wid = gt_test_sim_gpu_worker(s, "sim", 4243);
    gt_job job;
    int r = gt_store_lease(s, wid, gt_wall_ms(), 30000, &job, err, sizeof err);
    CHECK_MSG(r == 1 && !strcmp(job.kind, "enumerate"), "lease: %d %s", r, err);
    if (r == 1) {
        char msg[512];
        snprintf(msg, sizeof msg,
                 "{\"job_id\":%lld,\"done\":true,\"results\":[],\"candidates\":[],"
                 "\"baseline_config\":{\"family\":\"cublaslt\",\"heuristic\":\"none\","
                 "\"reason\":\"cuBLASLt's heuristic: CUBLAS_STATUS_INVALID_VALUE\"}}",
                 (long long)job.id);
        cJSON *m = cJSON_Parse(msg);
        int cancelled = 0;
        size_t acc = 0, rej = 0;
        CHECK_MSG(m && gt_test_report(s, wid, m, gt_wall_ms(), 30000, &cancelled, &acc, &rej, err,
                                       sizeof err) == 0,
                  "report: %s", err);
        cJSON_Delete(m);
        gt_job_free(&job);
    }
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM problems WHERE state = 'failed' AND error ="
                         " 'enumerate: no candidate for this device: cuBLASLt''s heuristic:"
                         " CUBLAS_STATUS_INVALID_VALUE'") == 1);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE kind <> 'enumerate'") == 0);
    CHECK(gt_test_int(s, "SELECT state <> 'running' FROM runs") == 1);
    gt_store_close(s);
}

int main(void)
{
    char dir[64], err[512];
    if (gt_test_tmpdir(dir, sizeof dir, "screenfail"))
        return 1;
    test_enumerate_empty(dir);
    /* the bigger GEMM is problem 1 (heaviest first) */
    static const char *const opts[][2] = {{"budget", "4"}, {"shard_size", "8"}};
    gt_store *s = gt_test_store_with_run(dir, "M,N,K\n64,64,64\n16,16,16\n", opts, 2, NULL);
    if (!s)
        return gt_test_done();
    int64_t wid = gt_test_sim_worker(s, "sim", 2);
    int rc = wid > 0 ? 0 : -1;
    char *again = NULL; /* a screen report, sent twice */
    for (int step = 0; rc == 0 && step < 20; step++) {
        gt_job job;
        int r = gt_store_lease(s, wid, gt_wall_ms(), 30000, &job, err, sizeof err);
        CHECK_MSG(r >= 0, "lease: %s", err);
        if (r <= 0)
            break;
        cJSON *msg = cJSON_CreateObject(), *results = cJSON_CreateArray();
        cJSON *cands = cJSON_Parse(job.candidates);
        const cJSON *c;
        /* problem 1: every candidate valid; problem 2: every one wrong, the
         * baseline never timed */
        int good = job.problem_id == 1;
        cJSON_ArrayForEach(c, cands)
        {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddItemToObject(x, "config", cJSON_Duplicate(c, 1));
            cJSON_AddBoolToObject(x, "valid", good);
            cJSON_AddNumberToObject(x, "time_us", good ? 50 : -1);
            if (good)
                cJSON_AddNumberToObject(x, "rel_err", 1e-6);
            else
                cJSON_AddNullToObject(x, "rel_err");
            cJSON_AddStringToObject(x, "reason", good ? "" : "wrong result: rel_err 0.9");
            cJSON_AddItemToArray(results, x);
        }
        if (!good && job.baseline) {
            /* the default could not run either: its reason, as a row the
             * candidate counts leave out */
            cJSON *x = cJSON_CreateObject();
            cJSON_AddItemToObject(x, "config", cJSON_Parse(job.baseline));
            cJSON_AddTrueToObject(x, "baseline");
            cJSON_AddFalseToObject(x, "valid");
            cJSON_AddNumberToObject(x, "time_us", -1);
            cJSON_AddNullToObject(x, "rel_err");
            cJSON_AddStringToObject(x, "reason", "the default failed: wrong result");
            cJSON_AddItemToArray(results, x);
        }
        cJSON_AddNumberToObject(msg, "job_id", (double)job.id);
        cJSON_AddItemToObject(msg, "results", results);
        cJSON_AddTrueToObject(msg, "done");
        if (good && job.baseline) {
            cJSON *b = cJSON_CreateObject();
            cJSON_AddItemToObject(b, "config", cJSON_Parse(job.baseline));
            cJSON_AddNumberToObject(b, "time_us", 60);
            cJSON_AddItemToObject(msg, "baseline", b);
        }
        int cancelled = 0;
        size_t acc = 0, rej = 0;
        if (!again && !strcmp(job.kind, "screen"))
            again = cJSON_PrintUnformatted(msg);
        CHECK_MSG(gt_test_report(s, wid, msg, gt_wall_ms(), 30000, &cancelled, &acc, &rej, err,
                                  sizeof err) == 0,
                  "report: %s", err);
        cJSON_Delete(msg);
        cJSON_Delete(cands);
        gt_job_free(&job);
    }
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE problem_id = 2 AND kind = 'final'") == 0);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM problems WHERE id = 2 AND state = 'failed'"
                " AND error LIKE 'screen: nothing valid to re-time (wrong result%'") == 1);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE problem_id = 1 AND kind = 'final'") == 1);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM problems WHERE id = 1 AND state = 'done'") == 1);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE state = 'failed'") == 0);
    CHECK(gt_test_int(s, "SELECT state = 'done' FROM runs") == 1);
    /* The run's screen progress kept on its row (schema 012) is what the
     * results say, a default that could not run left out; a report sent
     * again (INSERT OR IGNORE) counts nothing twice. */
    cJSON *dup = again ? cJSON_Parse(again) : NULL;
    int cancelled = 0;
    size_t acc = 0, rej = 0;
    CHECK_MSG(dup && gt_test_report(s, wid, dup, gt_wall_ms(), 30000, &cancelled, &acc, &rej, err,
                                     sizeof err) == 0 && acc == 0,
              "report again: %s (accepted %zu)", err, acc);
    cJSON_Delete(dup);
    free(again);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM results WHERE phase = 'screen' AND valid = 0"
                         " AND is_baseline = 1") > 0);
    CHECK(gt_test_int(s, "SELECT screen_done = (SELECT COUNT(*) FROM results WHERE phase = 'screen'"
                         " AND NOT (valid = 0 AND is_baseline = 1)) AND screen_done > 0 FROM runs") == 1);
    CHECK(gt_test_int(s, "SELECT screen_valid = (SELECT COUNT(*) FROM results WHERE phase = 'screen'"
                         " AND valid = 1) AND screen_valid > 0 FROM runs") == 1);
    gt_store_close(s);
    return gt_test_done_rm(dir);
}
