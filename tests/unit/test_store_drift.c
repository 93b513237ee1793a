/* test_store_drift.c: the final phase's baseline checked against the screen
 * jobs' (server/store_query.c add_drift), through the calls the dispatcher
 * makes (register, lease, report) on a real SQLite store.
 *
 * A simulated worker times the baseline at 60 us in every screen job and at
 * a chosen time in the final job, whose lease carries the screen jobs' mean
 * (timing baseline_ref_us, what the worker checks its final rounds by). At 63 us (a 5 % drift: machine noise) the
 * run reports baseline_drift 1.05 and nothing suspect; at 130 us (what a
 * disturbed H100 once measured: bench/results/h100_25_service_gen.txt) every
 * GEMM says baseline_suspect, the run counts them, and the uplift it shows
 * is the inflated one, so the flag is what tells the user. A final the
 * worker timed as CUDA graphs (launch-bound: every result "launch": "graph")
 * is not compared with the screens' plain baseline: no drift, nothing
 * suspect, each entry saying launch "graph". */
#include "gt_store.h"
#include "gt_test.h"
#include "gt_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[64];
static int g_graph; /* the final's results say "launch": "graph" */

static double num(const cJSON *c, const char *k, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static cJSON *result_json(const cJSON *cfg, int is_baseline, double t)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "config", cJSON_Duplicate(cfg, 1));
    cJSON_AddBoolToObject(r, "baseline", is_baseline);
    cJSON_AddTrueToObject(r, "valid");
    cJSON_AddNumberToObject(r, "time_us", t);
    cJSON_AddNumberToObject(r, "spread", 0.01);
    cJSON_AddNumberToObject(r, "tflops", 1);
    cJSON_AddNumberToObject(r, "rel_err", 1e-6);
    if (g_graph)
        cJSON_AddStringToObject(r, "launch", "graph");
    cJSON_AddStringToObject(r, "reason", "");
    return r;
}

/* One cpu run of two GEMMs driven to its end: candidates take 50 us, the
 * baseline 60 us in screen jobs and final_base_us in final ones. Returns the
 * run's JSON (GET /v1/runs/{id}) or NULL. */
static cJSON *run_with(const char *name, double final_base_us)
{
    char err[512], path[160];
    snprintf(path, sizeof path, "%s/%s.db", g_dir, name);
    gt_store *s = gt_store_open(path, err, sizeof err);
    cJSON *out = NULL;
    CHECK_MSG(s != NULL, "%s", err);
    if (!s)
        return NULL;
    gt_run_opts o;
    gt_run_opts_default(&o);
    const char *kv[][2] = {{"backend", "cpu"}, {"budget", "6"}, {"ncpu", "2"}, {"shard_size", "3"},
                           {"final_k", "2"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        CHECK(gt_run_opts_set(&o, kv[i][0], kv[i][1], err, sizeof err) == 0);
    const char *log = "M,N,K\n64,64,64\n48,32,96\n";
    gt_log_result res;
    gt_run_created cr;
    int rc = gt_log_parse(log, strlen(log), &o.log, &res);
    if (rc == 0)
        rc = gt_test_create_run(s, &o, &res, &cr, err, sizeof err);
    CHECK_MSG(rc == 0, "create run: %s", err);
    gt_log_result_free(&res);
    gt_run_opts_fini(&o);
    gt_worker_info w;
    memset(&w, 0, sizeof w);
    snprintf(w.host, sizeof w.host, "sim");
    w.pid = 4242;
    snprintf(w.backend, sizeof w.backend, "cpu");
    snprintf(w.device_model, sizeof w.device_model, "Sim CPU");
    int64_t wid = 0;
    if (rc == 0)
        rc = gt_store_register_worker(s, &w, gt_wall_ms(), &wid, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    int finals = 0;
    for (int step = 0; rc == 0 && step < 100; step++) {
        gt_job job;
        int64_t now = gt_wall_ms();
        int r = gt_store_lease(s, wid, now, 30000, &job, err, sizeof err);
        CHECK_MSG(r >= 0, "lease: %s", err);
        if (r <= 0)
            break;
        int final = !strcmp(job.kind, "final");
        finals += final;
        /* a final job carries the screen jobs' baseline as its reference
         * (the worker re-times the rounds once when its own drifts) */
        cJSON *timing = cJSON_Parse(job.timing);
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(timing, "baseline_ref_us");
        CHECK(final ? cJSON_IsNumber(ref) && fabs(ref->valuedouble - 60) < 1e-9 : ref == NULL);
        cJSON_Delete(timing);
        double base_us = final ? final_base_us : 60;
        cJSON *msg = cJSON_CreateObject(), *results = cJSON_CreateArray();
        cJSON_AddNumberToObject(msg, "job_id", (double)job.id);
        cJSON_AddItemToObject(msg, "results", results);
        cJSON_AddTrueToObject(msg, "done");
        cJSON *cands = cJSON_Parse(job.candidates), *base = job.baseline ? cJSON_Parse(job.baseline) : NULL;
        const cJSON *c;
        int graph = g_graph;
        g_graph = graph && final;
        if (final)
            cJSON_AddItemToArray(results, result_json(base, 1, base_us));
        cJSON_ArrayForEach(c, cands) cJSON_AddItemToArray(results, result_json(c, 0, 50));
        g_graph = graph;
        cJSON *b = cJSON_CreateObject();
        cJSON_AddItemToObject(b, "config", cJSON_Duplicate(base, 1));
        cJSON_AddNumberToObject(b, "time_us", base_us);
        cJSON_AddNumberToObject(b, "spread", 0.01);
        cJSON_AddItemToObject(msg, "baseline", b);
        int cancelled = 0;
        size_t acc = 0, rejected = 0;
        r = gt_test_report(s, wid, msg, now, 30000, &cancelled, &acc, &rejected, err, sizeof err);
        CHECK_MSG(r == 0, "report: %s", err);
        cJSON_Delete(msg);
        cJSON_Delete(cands);
        cJSON_Delete(base);
        gt_job_free(&job);
    }
    CHECK_MSG(finals == 2, "%d final jobs", finals);
    int found = 0;
    out = gt_store_run_json(s, cr.id, gt_wall_ms(), &found, err, sizeof err);
    CHECK_MSG(out && found, "%s", err);
    const cJSON *st = out ? cJSON_GetObjectItemCaseSensitive(out, "state") : NULL;
    CHECK(cJSON_IsString(st) && !strcmp(st->valuestring, "done"));
    gt_store_close(s);
    return out;
}

static void check_best(const cJSON *run, double final_base_us, int suspect)
{
    const cJSON *best = cJSON_GetObjectItemCaseSensitive(run, "best"), *b;
    int n = 0;
    cJSON_ArrayForEach(b, best)
    {
        n++;
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(b, "phase");
        CHECK(cJSON_IsString(ph) && !strcmp(ph->valuestring, "final"));
        CHECK(fabs(num(b, "baseline_us", 0) - final_base_us) < 1e-9);
        CHECK(fabs(num(b, "baseline_screen_us", 0) - 60) < 1e-9);
        CHECK_MSG(fabs(num(b, "baseline_drift", 0) - final_base_us / 60) < 1e-9, "drift %g",
                  num(b, "baseline_drift", 0));
        /* the baseline is a final candidate: below 50 us it is the winner */
        CHECK(fabs(num(b, "uplift", 0) - (final_base_us > 50 ? final_base_us / 50 : 1)) < 1e-9);
        CHECK(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(b, "baseline_suspect")) &&
              cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "baseline_suspect")) == suspect);
    }
    CHECK(n == 2);
    CHECK(num(run, "baseline_suspect", -1) == (suspect ? 2 : 0));
}

/* a launch-bound final timed as graphs: its baseline (40 us) is far from
 * the screens' plain 60 us, which is what graphs do, not a disturbance */
static void test_graph(void)
{
    g_graph = 1;
    cJSON *run = run_with("graph", 40);
    g_graph = 0;
    const cJSON *b;
    int n = 0;
    const cJSON *best = run ? cJSON_GetObjectItemCaseSensitive(run, "best") : NULL;
    cJSON_ArrayForEach(b, best)
    {
        n++;
        CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(b, "baseline_drift")) &&
              cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(b, "baseline_suspect")));
        CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "launch")), "graph"));
    }
    CHECK(n == 2 && num(run, "baseline_suspect", -1) == 0);
    cJSON_Delete(run);
}

static void test_noise(void)
{
    cJSON *run = run_with("noise", 63);
    if (run)
        check_best(run, 63, 0);
    cJSON_Delete(run);
}

static void test_disturbed(void)
{
    cJSON *run = run_with("disturbed", 130);
    if (run)
        check_best(run, 130, 1);
    cJSON_Delete(run);
    /* and the other way: a final baseline far below the screen's */
    run = run_with("fast", 40);
    if (run)
        check_best(run, 40, 1);
    cJSON_Delete(run);
}

int main(void)
{
    if (gt_test_tmpdir(g_dir, sizeof g_dir, "drift") != 0)
        return 1;
    gt_log_set_level(GT_LOG_WARN);
    RUN(test_noise);
    RUN(test_disturbed);
    RUN(test_graph);
    return gt_test_done_rm(g_dir);
}
