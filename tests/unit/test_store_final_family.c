/* test_store_final_family.c: the final job's per-family finalists
 * (server/store_phases.c, run option final_family_ratio). Besides the top
 * final_k valid screen candidates, the final takes each other family's
 * fastest valid candidate when it screened within the ratio of the fastest:
 * cuBLASLt's many near-equal configs fill the top final_k by themselves, so
 * without them the final rarely timed the best of each side by side.
 * Driven through the store calls the dispatcher makes (register, lease, report) on a real SQLite file, with a
 * cuda run whose simulated worker enumerates cuBLASLt configs (no "family"
 * key, as cuda/lt_cfg.c writes them, and one with "family":"cublaslt", the
 * same family), "mma", "gemv" and "cutlass" configs, and screens each at a
 * time the test chooses:
 *   - ratio 1.25 (the default): cuBLASLt holds the top final_k, the best mma
 *     config (1.2x) is added, the second mma and the gemv one (1.3x) are
 *     not, nor the cuBLASLt config that names its family; the final's
 *     paired results then make the added mma config the GEMM's winner;
 *   - ratio 0: the top final_k alone;
 *   - a family already among the top final_k gets no extra slot; a time
 *     exactly at the ratio is in, one past it out;
 *   - a cpu run (configs without a family: one family) keeps final_k. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_store.h"
#include "gt_test.h"
#include "gt_util.h"

/* One enumerated config and its screen time (us). */
typedef struct cfg_time {
    const char *cfg;
    double us;
} cfg_time;

/* The baseline, cuBLASLt's heuristic top-1, is enumerated too (as the
 * worker does): the final never takes it as a candidate. */
#define BASE_CFG "{\"algo_id\":1}"

/* The screen time the table gives cfg, -1 when none. */
static double time_of(const cfg_time *tab, size_t n, const cJSON *cfg)
{
    for (size_t i = 0; i < n; i++) {
        cJSON *c = cJSON_Parse(tab[i].cfg);
        int same = gt_test_same_cfg(c, cfg);
        cJSON_Delete(c);
        if (same)
            return tab[i].us;
    }
    return -1;
}

static int report(gt_store *s, int64_t wid, cJSON *msg, int64_t job_id)
{
    char err[512];
    int cancelled = 0;
    size_t acc = 0, rej = 0;
    cJSON_AddNumberToObject(msg, "job_id", (double)job_id);
    cJSON_AddTrueToObject(msg, "done");
    int rc =
        gt_test_report(s, wid, msg, gt_wall_ms(), 30000, &cancelled, &acc, &rej, err, sizeof err);
    CHECK_MSG(rc == 0 && rej == 0, "report: %d %s (%zu rejected)", rc, err, rej);
    cJSON_Delete(msg);
    return rc;
}

/* The enumerate job's answer: every config of the table, the baseline
 * BASE_CFG. */
static cJSON *enumerate_msg(const cfg_time *tab, size_t n)
{
    cJSON *msg = cJSON_CreateObject(), *cands = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(cands, cJSON_Parse(tab[i].cfg));
    cJSON_AddItemToObject(msg, "results", cJSON_CreateArray());
    cJSON_AddItemToObject(msg, "candidates", cands);
    cJSON_AddItemToObject(msg, "baseline_config", cJSON_Parse(BASE_CFG));
    return msg;
}

/* The tail of every answer: the baseline's own timing (100 us) and the
 * results into msg; the job's parsed candidates and baseline freed. */
static cJSON *answer(cJSON *msg, cJSON *results, cJSON *cands, cJSON *base)
{
    gt_test_baseline(msg, base, 100);
    cJSON_AddItemToObject(msg, "results", results);
    cJSON_Delete(cands);
    cJSON_Delete(base);
    return msg;
}

/* A screen job's answer: each candidate at the table's time, the baseline
 * at 100 us. */
static cJSON *screen_msg(const gt_job *job, const cfg_time *tab, size_t n)
{
    cJSON *msg = cJSON_CreateObject(), *results = cJSON_CreateArray();
    cJSON *cands = cJSON_Parse(job->candidates), *base = cJSON_Parse(job->baseline);
    const cJSON *c;
    cJSON_ArrayForEach(c, cands)
    {
        double us = time_of(tab, n, c);
        CHECK_MSG(us > 0, "a candidate the table does not hold: %s", cJSON_PrintUnformatted(c));
        cJSON_AddItemToArray(results, gt_test_result(c, 0, us > 0 ? us : 500));
    }
    return answer(msg, results, cands, base);
}

/* A final job's answer: the baseline at 100 us; each finalist at 100 us, an
 * uplift of 1 in [0.99, 1.01] (no significant gain), but the mma one at
 * 90.9 us, 1.1 in [1.08, 1.12]. */
static cJSON *final_msg(const gt_job *job)
{
    cJSON *msg = cJSON_CreateObject(), *results = cJSON_CreateArray();
    cJSON *cands = cJSON_Parse(job->candidates), *base = cJSON_Parse(job->baseline);
    cJSON *b = gt_test_result(base, 1, 100);
    gt_test_paired(b, 20, 1, 1, 1);
    cJSON_AddItemToArray(results, b);
    const cJSON *c;
    cJSON_ArrayForEach(c, cands)
    {
        const char *fam = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "family"));
        double up = fam && !strcmp(fam, "mma") ? 1.1 : 1;
        cJSON *x = gt_test_result(c, 0, 100 / up);
        gt_test_paired(x, 20, up, up - 0.02, up + 0.02);
        cJSON_AddItemToArray(results, x);
    }
    return answer(msg, results, cands, base);
}

/* 1 when the JSON array text got holds exactly the configs of want, in
 * that order. */
static int same_list(const char *got, const char *const *want, size_t n)
{
    cJSON *g = cJSON_Parse(got);
    int ok = cJSON_IsArray(g) && (size_t)cJSON_GetArraySize(g) == n;
    for (size_t i = 0; ok && i < n; i++) {
        cJSON *w = cJSON_Parse(want[i]);
        ok = gt_test_same_cfg(cJSON_GetArrayItem(g, (int)i), w);
        cJSON_Delete(w);
    }
    cJSON_Delete(g);
    return ok;
}

/* A cuda run of one GEMM with final_k and (NULL: the default)
 * final_family_ratio over the table's configs: enumerated, screened, and
 * its final job's candidates compared with want. With finish, the final is
 * answered too (final_msg) and the GEMM's winner must be want_winner. */
static void run_case(const char *dir, const char *name, const char *final_k, const char *ratio,
                     const cfg_time *tab, size_t n, const char *const *want, size_t nwant,
                     const char *want_winner)
{
    char err[512], sub[128];
    snprintf(sub, sizeof sub, "%s/%s", dir, name);
    CHECK(gt_mkdirs(sub, 0700) == 0);
    /* without a ratio the option is not given: the default */
    const char *const opts[][2] = {{"backend", "cuda"},
                                   {"device_model", "Sim GPU"},
                                   {"budget", "0"},
                                   {"shard_size", "4"},
                                   {"final_k", final_k},
                                   {"final_family_ratio", ratio ? ratio : ""}};
    gt_store *s = gt_test_store_with_run(sub, "M,N,K,dtype\n4096,16,4096,bf16\n", opts,
                                         ratio ? 6 : 5, NULL);
    if (!s)
        return;
    int64_t wid = gt_test_sim_gpu_worker(s, "sim", 4245);
    int finals = 0;
    for (int step = 0; wid > 0 && step < 40; step++) {
        gt_job job;
        int r = gt_store_lease(s, wid, gt_wall_ms(), 30000, &job, err, sizeof err);
        CHECK_MSG(r >= 0, "%s: lease: %s", name, err);
        if (r <= 0)
            break;
        cJSON *msg;
        if (!strcmp(job.kind, "enumerate")) {
            msg = enumerate_msg(tab, n);
        } else if (!strcmp(job.kind, "screen")) {
            msg = screen_msg(&job, tab, n);
        } else {
            finals++;
            CHECK_MSG(same_list(job.candidates, want, nwant), "%s: the final's candidates %s", name,
                      job.candidates);
            CHECK_MSG(job.baseline && strstr(job.baseline, "\"algo_id\":1}"), "%s: baseline %s",
                      name, job.baseline);
            msg = want_winner ? final_msg(&job) : NULL;
        }
        int64_t id = job.id;
        gt_job_free(&job);
        if (!msg)
            break;
        if (report(s, wid, msg, id))
            break;
    }
    CHECK_MSG(finals == 1, "%s: %d final jobs leased", name, finals);
    /* the job row says as many as it holds (the worker times them all) */
    CHECK(gt_test_int(s, "SELECT ncandidates = json_array_length(candidates) FROM jobs"
                         " WHERE kind = 'final'") == 1);
    CHECK(gt_test_int(s, "SELECT ncandidates FROM jobs WHERE kind = 'final'") == (long long)nwant);
    if (want_winner) {
        CHECK(gt_test_int(s, "SELECT state = 'done' FROM runs") == 1);
        int found = 0;
        cJSON *run = gt_store_run_json(s, 1, gt_wall_ms(), &found, err, sizeof err);
        CHECK_MSG(run != NULL && found, "run view: %s", err);
        const cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(run, "best"), 0);
        cJSON *w = cJSON_Parse(want_winner);
        CHECK_MSG(gt_test_same_cfg(cJSON_GetObjectItemCaseSensitive(b, "config"), w), "%s: winner %s", name,
                  cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(b, "config")));
        double up = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(b, "uplift"));
        double lo = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(b, "uplift_lo"));
        CHECK_MSG(fabs(up - 1.1) < 1e-9 && fabs(lo - 1.08) < 1e-9, "%s: uplift %g [%g]", name, up,
                  lo);
        const cJSON *sig = cJSON_GetObjectItemCaseSensitive(b, "significant");
        CHECK(cJSON_IsTrue(sig));
        cJSON_Delete(w);
        cJSON_Delete(run);
    }
    gt_store_close(s);
}

#define MMA1 "{\"family\":\"mma\",\"bm\":64}"
#define MMA2 "{\"family\":\"mma\",\"bm\":128}"
#define GEMV1 "{\"family\":\"gemv\",\"vec\":4}"
#define GEMV2 "{\"family\":\"gemv\",\"vec\":8}"
#define CUTLASS1 "{\"family\":\"cutlass\",\"tile\":2}"

/* cuBLASLt holds the top 3; the best mma config is within 1.25x of the
 * fastest, gemv's is not. */
static const cfg_time k_lib_top[] = {
    {BASE_CFG, 90},                                /* the baseline: never a candidate */
    {"{\"algo_id\":10}", 100},
    {"{\"algo_id\":11}", 101},
    {"{\"algo_id\":12}", 102},
    {"{\"family\":\"cublaslt\",\"algo_id\":13}", 103}, /* cuBLASLt too: no extra slot */
    {MMA2, 122},                                   /* mma's second: not taken */
    {MMA1, 120},                                   /* 1.2x: taken */
    {GEMV1, 130},                                  /* 1.3x: out */
    {GEMV2, 140},
};

/* mma already among the top 3 (its second config is not added); gemv
 * exactly at 1.25x is in, cutlass just past it out. */
static const cfg_time k_mixed_top[] = {
    {BASE_CFG, 90},        {"{\"algo_id\":10}", 100}, {MMA1, 101},
    {"{\"algo_id\":11}", 102}, {MMA2, 103},           {"{\"algo_id\":12}", 104},
    {GEMV1, 125},          {GEMV2, 126},              {CUTLASS1, 125.5},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* A cpu run: its configs carry no family, one family, so the final keeps
 * its final_k candidates whatever the ratio. */
static void test_cpu_one_family(const char *dir)
{
    char err[512], sub[128];
    snprintf(sub, sizeof sub, "%s/cpu", dir);
    CHECK(gt_mkdirs(sub, 0700) == 0);
    static const char *const opts[][2] = {{"budget", "6"},  {"shard_size", "16"}, {"ncpu", "1"},
                                          {"final_k", "2"}, {"final_family_ratio", "10"}};
    gt_store *s = gt_test_store_with_run(sub, "M,N,K\n64,32,64\n", opts, 5, NULL);
    if (!s)
        return;
    int64_t wid = gt_test_sim_worker(s, "sim", 1);
    for (int step = 0; wid > 0 && step < 10; step++) {
        gt_job job;
        int r = gt_store_lease(s, wid, gt_wall_ms(), 30000, &job, err, sizeof err);
        CHECK_MSG(r >= 0, "cpu: lease: %s", err);
        if (r <= 0)
            break;
        int final = !strcmp(job.kind, "final");
        cJSON *msg = NULL;
        if (!final) {
            msg = cJSON_CreateObject();
            cJSON *results = cJSON_CreateArray(), *cands = cJSON_Parse(job.candidates);
            const cJSON *c;
            int i = 0;
            /* every candidate within 1.1x of the fastest */
            cJSON_ArrayForEach(c, cands)
            {
                cJSON_AddItemToArray(results, gt_test_result(c, 0, 40 + i++));
            }
            cJSON *base = cJSON_Parse(job.baseline);
            gt_test_baseline(msg, base, 60);
            cJSON_AddItemToObject(msg, "results", results);
            cJSON_Delete(cands);
            cJSON_Delete(base);
        }
        int64_t id = job.id;
        gt_job_free(&job);
        if (!msg)
            break;
        if (report(s, wid, msg, id))
            break;
    }
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM results WHERE phase = 'screen' AND valid = 1") >= 4);
    CHECK_MSG(gt_test_int(s, "SELECT ncandidates FROM jobs WHERE kind = 'final'") == 2,
              "cpu final: %lld candidates",
              gt_test_int(s, "SELECT ncandidates FROM jobs WHERE kind = 'final'"));
    gt_store_close(s);
}

int main(void)
{
    char dir[64];
    if (gt_test_tmpdir(dir, sizeof dir, "finalfam"))
        return 1;
    static const char *const lib_top[] = {"{\"algo_id\":10}", "{\"algo_id\":11}",
                                          "{\"algo_id\":12}", MMA1};
    /* the default ratio, and the final answered: the added mma config wins */
    run_case(dir, "default", "3", NULL, k_lib_top, N(k_lib_top), lib_top, 4, MMA1);
    run_case(dir, "explicit", "3", "1.25", k_lib_top, N(k_lib_top), lib_top, 4, NULL);
    /* off: the top final_k alone */
    run_case(dir, "off", "3", "0", k_lib_top, N(k_lib_top), lib_top, 3, NULL);
    /* a ratio wide enough for gemv's best too (1.3x): after mma's, in screen order */
    static const char *const wide[] = {"{\"algo_id\":10}", "{\"algo_id\":11}",
                                       "{\"algo_id\":12}", MMA1, GEMV1};
    run_case(dir, "wide", "3", "1.3", k_lib_top, N(k_lib_top), wide, 5, NULL);
    static const char *const mixed[] = {"{\"algo_id\":10}", MMA1, "{\"algo_id\":11}", GEMV1};
    run_case(dir, "mixed", "3", NULL, k_mixed_top, N(k_mixed_top), mixed, 4, NULL);
    test_cpu_one_family(dir);
    return gt_test_done_rm(dir);
}
