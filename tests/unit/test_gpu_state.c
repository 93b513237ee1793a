/* test_gpu_state.c: the GPU's state next to the final phase's timings
 * (common/gt_gpu_state.h) from the summary of readings to what the API
 * shows: the summary (min and median SM clock, highest power and
 * temperature, the share of rounds with a power or thermal cap, each round
 * counted once), its JSON and the checks on it, the protocol's result field
 * gpu_state (a bad one dropped, the result kept), and a simulated cuda-less
 * worker reporting it with its final results through the dispatcher's
 * decoding into a real store: GET /v1/runs/{id} shows it per GEMM and the
 * results listing per final result, screen results never carry it. */
#include "gt_gpu_state.h"
#include "gt_proto.h"
#include "gt_store.h"
#include "gt_test.h"
#include "gt_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dir[64];

static void test_summary(void)
{
    gt_gpu_acc a;
    gt_gpu_state s;
    gt_gpu_acc_init(&a);
    gt_gpu_acc_state(&a, &s);
    CHECK(s.samples == 0 && s.rounds == 0 && s.throttled_frac == 0);
    /* round 0: two readings, one at the SW power cap; round 1: HW thermal;
     * round 2: idle and sync boost only (no cap); a reading without a
     * clock is skipped */
    const struct {
        int round;
        gt_gpu_sample s;
    } in[] = {
        {0, {1980, 650, 60, 0x0}}, {0, {1290, 700, 62, 0x4}}, {1, {1500, 690, 85, 0x40}},
        {2, {1800, 300, 61, 0x1}}, {2, {1755, 310, 61, 0x10}}, {2, {0, 900, 99, 0x4}},
    };
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        CHECK(gt_gpu_acc_add(&a, in[i].round, &in[i].s) == 0);
    gt_gpu_acc_state(&a, &s);
    CHECK_MSG(s.samples == 5 && s.rounds == 3, "%d samples %d rounds", s.samples, s.rounds);
    CHECK(s.sm_clock_min_mhz == 1290 && s.sm_clock_median_mhz == 1755 && s.power_max_w == 700 &&
          s.temp_max_c == 85);
    CHECK(fabs(s.throttled_frac - 2.0 / 3) < 1e-12);
    /* an even count: the median between the middle two */
    gt_gpu_sample x = {1900, 100, 50, 0};
    CHECK(gt_gpu_acc_add(&a, 3, &x) == 0);
    gt_gpu_acc_state(&a, &s);
    CHECK(s.samples == 6 && s.rounds == 4 && s.sm_clock_median_mhz == (1755 + 1800) / 2.0 &&
          fabs(s.throttled_frac - 0.5) < 1e-12);
    gt_gpu_acc_free(&a);
}

static void test_json(void)
{
    char err[200];
    gt_gpu_state s = {.samples = 84, .rounds = 21, .sm_clock_min_mhz = 1290, .sm_clock_median_mhz = 1755,
                      .power_max_w = 699.5, .temp_max_c = 71, .throttled_frac = 0.625},
                 b;
    cJSON *j = gt_gpu_state_to_json(&s);
    CHECK(j && gt_gpu_state_from_json(j, &b, err, sizeof err) == 0 && !memcmp(&s, &b, sizeof s));
    cJSON_Delete(j);
    const char *bad[] = {
        "[]",
        "{\"samples\":84,\"rounds\":21,\"sm_clock_min_mhz\":1290,\"sm_clock_median_mhz\":1755,"
        "\"power_max_w\":699.5,\"temp_max_c\":71}", /* no throttled_frac */
        "{\"samples\":4,\"rounds\":21,\"sm_clock_min_mhz\":1290,\"sm_clock_median_mhz\":1755,"
        "\"power_max_w\":699.5,\"temp_max_c\":71,\"throttled_frac\":0.5}", /* rounds > samples */
        "{\"samples\":84,\"rounds\":21,\"sm_clock_min_mhz\":1800,\"sm_clock_median_mhz\":1755,"
        "\"power_max_w\":699.5,\"temp_max_c\":71,\"throttled_frac\":0.5}", /* min above median */
        "{\"samples\":84,\"rounds\":21,\"sm_clock_min_mhz\":0,\"sm_clock_median_mhz\":1755,"
        "\"power_max_w\":699.5,\"temp_max_c\":71,\"throttled_frac\":0.5}", /* no clock */
        "{\"samples\":84,\"rounds\":21,\"sm_clock_min_mhz\":1290,\"sm_clock_median_mhz\":1755,"
        "\"power_max_w\":699.5,\"temp_max_c\":71,\"throttled_frac\":1.5}",
        "{\"samples\":8.5,\"rounds\":2,\"sm_clock_min_mhz\":1290,\"sm_clock_median_mhz\":1755,"
        "\"power_max_w\":699.5,\"temp_max_c\":71,\"throttled_frac\":0.5}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *v = cJSON_Parse(bad[i]);
        err[0] = 0;
        CHECK_MSG(v && gt_gpu_state_from_json(v, &b, err, sizeof err) == -1 && err[0] && b.samples == 0,
                  "accepted %s", bad[i]);
        cJSON_Delete(v);
    }
}

static void test_proto(void)
{
    char err[200];
    cJSON *cfg = cJSON_Parse("{\"algo_id\":66}");
    gt_result r = {.config = cfg, .valid = 1, .time_us = 10, .rel_err = 1e-6, .rounds = 9, .uplift = 1.2,
                   .uplift_lo = 1.1, .uplift_hi = 1.3,
                   .gpu = {.samples = 27, .rounds = 9, .sm_clock_min_mhz = 1290, .sm_clock_median_mhz = 1500,
                           .power_max_w = 700, .temp_max_c = 70, .throttled_frac = 1.0 / 3}},
             b;
    cJSON *j = gt_proto_result_to_json(&r);
    CHECK(j && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "gpu_state")));
    CHECK(j && gt_proto_result_from_json(j, &b, err, sizeof err) == 0 && !memcmp(&b.gpu, &r.gpu, sizeof r.gpu));
    /* a bad gpu_state is dropped, the measurement kept */
    cJSON_ReplaceItemInObject(j, "gpu_state", cJSON_Parse("{\"samples\":1}"));
    CHECK(j && gt_proto_result_from_json(j, &b, err, sizeof err) == 0 && b.gpu.samples == 0 && b.valid &&
          b.rounds == 9);
    cJSON_Delete(j);
    /* none read: none sent */
    memset(&r.gpu, 0, sizeof r.gpu);
    j = gt_proto_result_to_json(&r);
    CHECK(j && !cJSON_GetObjectItemCaseSensitive(j, "gpu_state"));
    cJSON_Delete(j);
    cJSON_Delete(cfg);
}

static cJSON *result_json(const cJSON *cfg, int is_baseline, double t, int final, int bad_gpu)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "config", cJSON_Duplicate(cfg, 1));
    cJSON_AddBoolToObject(r, "baseline", is_baseline);
    cJSON_AddTrueToObject(r, "valid");
    cJSON_AddNumberToObject(r, "time_us", t);
    cJSON_AddNumberToObject(r, "spread", 0.01);
    cJSON_AddNumberToObject(r, "tflops", 1);
    cJSON_AddNumberToObject(r, "rel_err", 1e-6);
    cJSON_AddStringToObject(r, "reason", "");
    if (final) {
        double up = is_baseline ? 1 : 60 / t;
        cJSON_AddNumberToObject(r, "rounds", 9);
        cJSON_AddNumberToObject(r, "uplift", up);
        cJSON_AddNumberToObject(r, "uplift_lo", up);
        cJSON_AddNumberToObject(r, "uplift_hi", up);
    }
    /* screen results carry one too, which the store must not keep */
    gt_gpu_state g = {.samples = 27, .rounds = 9, .sm_clock_min_mhz = 1290, .sm_clock_median_mhz = 1755,
                      .power_max_w = 699.5, .temp_max_c = 71, .throttled_frac = 1.0 / 3};
    cJSON *gj = gt_gpu_state_to_json(&g);
    if (bad_gpu)
        cJSON_ReplaceItemInObject(gj, "throttled_frac", cJSON_CreateNumber(7));
    cJSON_AddItemToObject(r, "gpu_state", gj);
    return r;
}

static int num_is(const cJSON *o, const char *k, double v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(x) && fabs(x->valuedouble - v) < 1e-9;
}

/* A cpu run of two GEMMs driven to its end by a simulated worker whose
 * final results carry gpu_state (the first GEMM's a bad one). */
static void test_store(void)
{
    char err[512];
    const char *const opts[][2] = {{"budget", "6"}, {"ncpu", "2"}, {"shard_size", "3"}, {"final_k", "2"}};
    gt_run_created cr;
    gt_store *s = gt_test_store_with_run(g_dir, "M,N,K\n64,64,64\n48,32,96\n", opts, 4, &cr);
    if (!s)
        return;
    int64_t wid = gt_test_sim_worker(s, "sim", 2);
    int finals = 0;
    int64_t bad_problem = -1;
    for (int step = 0; wid && step < 100; step++) {
        gt_job job;
        int64_t now = gt_wall_ms();
        int r = gt_store_lease(s, wid, now, 30000, &job, err, sizeof err);
        CHECK_MSG(r >= 0, "lease: %s", err);
        if (r <= 0)
            break;
        int final = !strcmp(job.kind, "final");
        int bad = final && bad_problem < 0;
        if (bad)
            bad_problem = job.problem_id;
        finals += final;
        cJSON *msg = cJSON_CreateObject(), *results = cJSON_CreateArray();
        cJSON_AddNumberToObject(msg, "job_id", (double)job.id);
        cJSON_AddItemToObject(msg, "results", results);
        cJSON_AddTrueToObject(msg, "done");
        cJSON *cands = cJSON_Parse(job.candidates), *base = job.baseline ? cJSON_Parse(job.baseline) : NULL;
        const cJSON *c;
        if (final)
            cJSON_AddItemToArray(results, result_json(base, 1, 60, 1, bad));
        cJSON_ArrayForEach(c, cands) cJSON_AddItemToArray(results, result_json(c, 0, 50, final, bad));
        cJSON *b = cJSON_CreateObject();
        cJSON_AddItemToObject(b, "config", cJSON_Duplicate(base, 1));
        cJSON_AddNumberToObject(b, "time_us", 60);
        cJSON_AddNumberToObject(b, "spread", 0.01);
        cJSON_AddItemToObject(msg, "baseline", b);
        int cancelled = 0;
        size_t acc = 0, rejected = 0;
        r = gt_test_report(s, wid, msg, now, 30000, &cancelled, &acc, &rejected, err, sizeof err);
        CHECK_MSG(r == 0 && rejected == 0, "report: %s", err);
        cJSON_Delete(msg);
        cJSON_Delete(cands);
        cJSON_Delete(base);
        gt_job_free(&job);
    }
    CHECK_MSG(finals == 2, "%d final jobs", finals);
    int found = 0;
    cJSON *run = gt_store_run_json(s, cr.id, gt_wall_ms(), &found, err, sizeof err);
    CHECK_MSG(run && found, "%s", err);
    const cJSON *b;
    int with = 0, without = 0;
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(run, "best"))
    {
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(b, "gpu_state");
        int64_t pid = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(b, "problem_id"));
        if (pid == bad_problem) {
            CHECK_MSG(cJSON_IsNull(g), "problem %lld: a bad gpu_state was stored", (long long)pid);
            without++;
        } else {
            CHECK(num_is(g, "samples", 27) && num_is(g, "rounds", 9) && num_is(g, "sm_clock_min_mhz", 1290) &&
                  num_is(g, "sm_clock_median_mhz", 1755) && num_is(g, "power_max_w", 699.5) &&
                  num_is(g, "temp_max_c", 71) && num_is(g, "throttled_frac", 1.0 / 3));
            with++;
        }
    }
    CHECK(with == 1 && without == 1);
    cJSON_Delete(run);
    /* the listing: every final result of the good GEMM has it, no screen result */
    cJSON *res = gt_store_results_json(s, cr.id, &found, err, sizeof err);
    const cJSON *r;
    int final_with = 0, screen_with = 0;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(res, "results"))
    {
        const char *ph = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "phase"));
        int has = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(r, "gpu_state"));
        if (ph && !strcmp(ph, "final"))
            final_with += has;
        else
            screen_with += has;
    }
    CHECK_MSG(final_with >= 2 && screen_with == 0, "%d final, %d screen results with gpu_state", final_with,
              screen_with);
    cJSON_Delete(res);
    gt_store_close(s);
}

int main(void)
{
    if (gt_test_tmpdir(g_dir, sizeof g_dir, "gpustate") != 0)
        return 1;
    gt_log_set_level(GT_LOG_WARN);
    RUN(test_summary);
    RUN(test_json);
    RUN(test_proto);
    RUN(test_store);
    return gt_test_done_rm(g_dir);
}
