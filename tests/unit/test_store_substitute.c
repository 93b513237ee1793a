/* test_store_substitute.c: the substitute baseline (issue 18,
 * server/store_substitute.c), driven through the store calls the
 * dispatcher makes (register, lease, report) on a real SQLite file, with a
 * cpu run of three GEMMs:
 *   - problem 1: the default (OpenBLAS) fails in every screen job; the
 *     default blocking (gt_space_cpu_default) was screened, valid but not the
 *     fastest: it is the substitute all the same (the library-like choice),
 *     and the fastest candidate is a finalist;
 *   - problem 2: the default ran: the final keeps it;
 *   - problem 3: the default fails and the default blocking was not
 *     screened: the fastest valid candidate stands in.
 * Then the run view: baseline_kind, baseline_config, baseline_reason per
 * entry, the headline uplifts from problem 2 alone, the substitutes'
 * apart (the summary streamed to watchers alike); and the progress counts
 * candidates only. */
#include <cjson/cJSON.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "gt_config.h"
#include "gt_problem.h"
#include "gt_store.h"
#include "gt_store_stats.h"
#include "gt_test.h"
#include "gt_util.h"

#define WHY "build: openblas baseline: cannot load libopenblas"

static cJSON *result(const cJSON *cfg, int is_baseline, int valid, double us, const char *reason)
{
    cJSON *x = cJSON_CreateObject();
    cJSON_AddItemToObject(x, "config", cJSON_Duplicate(cfg, 1));
    cJSON_AddBoolToObject(x, "baseline", is_baseline);
    cJSON_AddBoolToObject(x, "valid", valid);
    cJSON_AddNumberToObject(x, "time_us", valid ? us : -1);
    if (valid)
        cJSON_AddNumberToObject(x, "rel_err", 1e-6);
    else
        cJSON_AddNullToObject(x, "rel_err");
    cJSON_AddStringToObject(x, "reason", reason);
    return x;
}

/* The default blocking of the job's problem for 1 core, or NULL. */
static cJSON *default_blocking(const gt_job *job)
{
    cJSON *spec = cJSON_Parse(job->problem);
    gt_problem p;
    char err[160];
    cJSON *d = spec && gt_problem_from_json(spec, &p, err, sizeof err) == 0 ? gt_space_cpu_default(&p, 1) : NULL;
    cJSON_Delete(spec);
    return d;
}

/* A screen job: problem 2's default timed at 60 us; the others' failed.
 * Candidates time 40 + i us (the first the fastest); problem 1 also gets
 * the default blocking at 45 us. */
static cJSON *screen_msg(const gt_job *job)
{
    cJSON *msg = cJSON_CreateObject(), *results = cJSON_CreateArray();
    cJSON *cands = cJSON_Parse(job->candidates), *base = cJSON_Parse(job->baseline);
    cJSON *def = default_blocking(job);
    const cJSON *c;
    int i = 0;
    cJSON_ArrayForEach(c, cands)
    {
        /* problem 3: the default blocking is no candidate */
        if (job->problem_id == 3 && gt_test_same_cfg(c, def))
            continue;
        cJSON_AddItemToArray(results, result(c, 0, 1, gt_test_same_cfg(c, def) ? 45 : 40 + i++, ""));
    }
    if (job->problem_id == 1 && def)
        cJSON_AddItemToArray(results, result(def, 0, 1, 45, ""));
    if (job->problem_id == 2) {
        gt_test_baseline(msg, base, 60);
    } else {
        cJSON_AddItemToArray(results, result(base, 1, 0, 0, WHY));
    }
    cJSON_AddItemToObject(msg, "results", results);
    cJSON_Delete(cands);
    cJSON_Delete(base);
    cJSON_Delete(def);
    return msg;
}

/* A final job: each finalist at 40 us; the baseline at 50 us, an uplift of
 * 1.25 in [1.2, 1.3], for the default (problem 2), at 80 us, 2 in
 * [1.9, 2.1], for a substitute: the headline figures tell them apart. */
static cJSON *final_msg(const gt_job *job)
{
    cJSON *msg = cJSON_CreateObject(), *results = cJSON_CreateArray();
    cJSON *cands = cJSON_Parse(job->candidates), *base = cJSON_Parse(job->baseline);
    int dflt = job->problem_id == 2;
    double bus = dflt ? 50 : 80, up = dflt ? 1.25 : 2;
    cJSON *b = result(base, 1, 1, bus, "");
    gt_test_paired(b, 20, 1, 1, 1);
    cJSON_AddItemToArray(results, b);
    const cJSON *c;
    cJSON_ArrayForEach(c, cands)
    {
        cJSON *x = result(c, 0, 1, 40, "");
        gt_test_paired(x, 20, up, up - 0.05, up + 0.05);
        cJSON_AddItemToArray(results, x);
    }
    gt_test_baseline(msg, base, bus);
    cJSON_AddItemToObject(msg, "results", results);
    cJSON_Delete(cands);
    cJSON_Delete(base);
    return msg;
}

static const cJSON *entry(const cJSON *run, double pid)
{
    const cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(run, "best"))
    {
        if (cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(b, "problem_id")) == pid)
            return b;
    }
    return NULL;
}

static const char *str(const cJSON *o, const char *name)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
    return v ? v : "(null)";
}

int main(void)
{
    char dir[64], err[512];
    if (gt_test_tmpdir(dir, sizeof dir, "substitute"))
        return 1;
    /* heaviest first: problem 1 is the biggest GEMM */
    static const char *const opts[][2] = {{"budget", "6"}, {"shard_size", "16"}, {"ncpu", "1"}};
    gt_store *s = gt_test_store_with_run(dir, "M,N,K\n96,64,64\n64,32,64\n32,16,32\n", opts, 3, NULL);
    if (!s)
        return gt_test_done();
    int64_t wid = gt_test_sim_worker(s, "sim", 1);
    cJSON *def1 = NULL, *fast1 = NULL, *fast3 = NULL;
    for (int step = 0; wid > 0 && step < 20; step++) {
        gt_job job;
        int r = gt_store_lease(s, wid, gt_wall_ms(), 30000, &job, err, sizeof err);
        CHECK_MSG(r >= 0, "lease: %s", err);
        if (r <= 0)
            break;
        int final = !strcmp(job.kind, "final");
        cJSON *msg = final ? final_msg(&job) : screen_msg(&job);
        if (!final && job.problem_id == 1 && !def1) {
            cJSON *cands = cJSON_Parse(job.candidates);
            def1 = default_blocking(&job);
            /* the first candidate that is not the default blocking: 40 us */
            const cJSON *c;
            cJSON_ArrayForEach(c, cands)
            {
                if (!fast1 && !gt_test_same_cfg(c, def1))
                    fast1 = cJSON_Duplicate(c, 1);
            }
            cJSON_Delete(cands);
        }
        if (!final && job.problem_id == 3 && !fast3) {
            cJSON *cands = cJSON_Parse(job.candidates), *d = default_blocking(&job);
            /* the first candidate that is not the default blocking: 40 us */
            const cJSON *c;
            cJSON_ArrayForEach(c, cands)
            {
                if (!gt_test_same_cfg(c, d)) {
                    fast3 = cJSON_Duplicate(c, 1);
                    break;
                }
            }
            cJSON_Delete(cands);
            cJSON_Delete(d);
        }
        if (final && job.problem_id == 1) {
            cJSON *b = cJSON_Parse(job.baseline), *cands = cJSON_Parse(job.candidates);
            CHECK_MSG(gt_test_same_cfg(b, def1), "problem 1's final baseline is %s", job.baseline);
            int has_fast = 0;
            const cJSON *c;
            cJSON_ArrayForEach(c, cands) has_fast |= gt_test_same_cfg(c, fast1);
            CHECK_MSG(has_fast, "problem 1's fastest candidate is a finalist: %s", job.candidates);
            cJSON_Delete(b);
            cJSON_Delete(cands);
        }
        if (final && job.problem_id == 2)
            CHECK_MSG(strstr(job.baseline, "\"lib\":\"openblas\"") != NULL, "problem 2: %s", job.baseline);
        if (final && job.problem_id == 3) {
            cJSON *b = cJSON_Parse(job.baseline);
            CHECK_MSG(gt_test_same_cfg(b, fast3), "problem 3's final baseline is %s", job.baseline);
            cJSON_Delete(b);
        }
        cJSON_AddNumberToObject(msg, "job_id", (double)job.id);
        cJSON_AddTrueToObject(msg, "done");
        int cancelled = 0;
        size_t acc = 0, rej = 0;
        CHECK_MSG(gt_test_report(s, wid, msg, gt_wall_ms(), 30000, &cancelled, &acc, &rej, err,
                                  sizeof err) == 0,
                  "report: %s", err);
        cJSON_Delete(msg);
        gt_job_free(&job);
    }
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE kind = 'final'") == 3);
    CHECK(gt_test_int(s, "SELECT state = 'done' FROM runs") == 1);

    int found = 0;
    cJSON *run = gt_store_run_json(s, 1, gt_wall_ms(), &found, err, sizeof err);
    CHECK_MSG(run != NULL && found, "run view: %s", err);
    const cJSON *e1 = entry(run, 1), *e2 = entry(run, 2), *e3 = entry(run, 3);
    CHECK(e1 && e2 && e3);
    CHECK_MSG(!strcmp(str(e1, "baseline_kind"), "substitute") && !strcmp(str(e3, "baseline_kind"), "substitute") &&
                  !strcmp(str(e2, "baseline_kind"), "default"),
              "kinds %s %s %s", str(e1, "baseline_kind"), str(e2, "baseline_kind"), str(e3, "baseline_kind"));
    CHECK(gt_test_same_cfg(cJSON_GetObjectItemCaseSensitive(e1, "baseline_config"), def1));
    CHECK(gt_test_same_cfg(cJSON_GetObjectItemCaseSensitive(e3, "baseline_config"), fast3));
    CHECK(strstr(str(cJSON_GetObjectItemCaseSensitive(e2, "baseline_config"), "lib"), "openblas"));
    CHECK(!strcmp(str(e1, "baseline_reason"), WHY) && !strcmp(str(e3, "baseline_reason"), WHY) &&
          cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(e2, "baseline_reason")));
    /* the headline is problem 2's alone (1.25), the substitutes' apart (2) */
    double fw = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(run, "flop_weighted_uplift"));
    double wu = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(run, "weighted_uplift"));
    double sfw = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(run, "substitute_flop_weighted_uplift"));
    CHECK_MSG(fabs(fw - 1.25) < 1e-9 && fabs(wu - 50.0 / 40.0) < 1e-9 && fabs(sfw - 2) < 1e-9,
              "uplifts %g %g %g", fw, wu, sfw);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(run, "substitute_baselines")) == 2);
    /* the failed defaults (two screen rows) are no candidates */
    const cJSON *cc = cJSON_GetObjectItemCaseSensitive(run, "candidates");
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM results WHERE phase = 'screen' AND is_baseline = 1") == 2);
    CHECK_MSG(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cc, "done")) ==
                  (double)gt_test_int(s, "SELECT COUNT(*) FROM results WHERE phase = 'screen' AND is_baseline = 0"),
              "candidates done %g", cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cc, "done")));
    cJSON_Delete(run);
    /* the summary streamed to watchers agrees: the default's GEMM alone */
    cJSON *sum = gt_store_run_summary(s, 1, gt_wall_ms(), &found, err, sizeof err);
    CHECK_MSG(sum != NULL && found, "summary: %s", err);
    fw = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sum, "flop_weighted_uplift"));
    wu = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sum, "weighted_uplift"));
    CHECK_MSG(fabs(fw - 1.25) < 1e-9 && fabs(wu - 50.0 / 40.0) < 1e-9, "summary uplifts %g %g", fw, wu);
    cJSON_Delete(sum);
    cJSON_Delete(def1);
    cJSON_Delete(fast1);
    cJSON_Delete(fast3);
    gt_store_close(s);
    return gt_test_done_rm(dir);
}
