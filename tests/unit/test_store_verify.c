/* test_store_verify.c: verify runs (issue 17, server/store_verify.c),
 * driven through the store calls the dispatcher makes (register, lease,
 * report) on a real SQLite file. A cpu run of three GEMMs whose finals give
 *   - problem 1: a winner at uplift 1.25 [1.2, 1.3] (significant);
 *   - problem 2: finalists at 1.06 [1.01, 1.09]: an interval above 1 but
 *     not above GT_MIN_GAIN (1.02), so the default is the entry, nothing to
 *     re-time;
 *   - problem 3: a winner at 1.5 [1.4, 1.6].
 * Then gt_store_create_verify: refused while the run runs and for an
 * unknown run; once done, a run of two problems (copies of 1 and 3), each
 * one final job [winner] beside the baseline, timed like the run's finals;
 * re-timed at 1.3 (pass at 0.05) and 1.2 (fail), the view's stored_uplift,
 * diff, verify and summary. A run whose every entry is the default has
 * nothing to re-time. */
#include <cjson/cJSON.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "gt_config.h"
#include "gt_store.h"
#include "gt_test.h"
#include "gt_util.h"

/* each final job's timing text, by problem id (drain) */
static char g_timing[32][512];

/* the final's paired uplift per problem id (index), its interval +-0.05;
 * 0: 1.01 [0.98, 1.04] */
static double g_up[32];

/* A screen job: the default at 60 us, candidates at 40 + i us. A final
 * job: the baseline at 60 us, each finalist at g_up[problem]. */
static cJSON *job_msg(const gt_job *job)
{
    cJSON *msg = cJSON_CreateObject(), *results = cJSON_CreateArray();
    cJSON *cands = cJSON_Parse(job->candidates), *base = cJSON_Parse(job->baseline);
    int final = !strcmp(job->kind, "final");
    double up = job->problem_id < 32 && g_up[job->problem_id] > 0 ? g_up[job->problem_id] : 1.01;
    double lo = g_up[job->problem_id] > 0 ? up - 0.05 : 0.98, hi = up + 0.03;
    const cJSON *c;
    int i = 0;
    if (final) {
        cJSON *b = gt_test_result(base, 1, 60);
        gt_test_paired(b, 20, 1, 1, 1);
        cJSON_AddItemToArray(results, b);
    }
    cJSON_ArrayForEach(c, cands)
    {
        cJSON *x = gt_test_result(c, 0, final ? 60 / up : 40 + i++);
        if (final)
            gt_test_paired(x, 20, up, lo, hi);
        cJSON_AddItemToArray(results, x);
    }
    gt_test_baseline(msg, base, 60);
    cJSON_AddItemToObject(msg, "results", results);
    cJSON_AddNumberToObject(msg, "job_id", (double)job->id);
    cJSON_AddTrueToObject(msg, "done");
    cJSON_Delete(cands);
    cJSON_Delete(base);
    return msg;
}

/* Leases and reports every job there is; the timing text of the last
 * final job into timing (when not NULL). */
static void drain(gt_store *s, int64_t wid, char *timing, size_t tlen)
{
    char err[512];
    for (int step = 0; step < 50; step++) {
        gt_job job;
        int r = gt_store_lease(s, wid, gt_wall_ms(), 30000, &job, err, sizeof err);
        CHECK_MSG(r >= 0, "lease: %s", err);
        if (r <= 0)
            break;
        if (timing && !strcmp(job.kind, "final"))
            snprintf(timing, tlen, "%s", job.timing);
        if (!strcmp(job.kind, "final") && job.problem_id < 32)
            snprintf(g_timing[job.problem_id], sizeof g_timing[0], "%s", job.timing);
        cJSON *msg = job_msg(&job);
        int cancelled = 0;
        size_t acc = 0, rej = 0;
        CHECK_MSG(gt_test_report(s, wid, msg, gt_wall_ms(), 30000, &cancelled, &acc, &rej, err,
                                  sizeof err) == 0,
                  "report: %s", err);
        cJSON_Delete(msg);
        gt_job_free(&job);
    }
}

static const cJSON *entry_by_label(const cJSON *run, const char *label)
{
    const cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(run, "best"))
    {
        const char *l = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "label"));
        if (l && !strcmp(l, label))
            return b;
    }
    return NULL;
}

static double num(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *str(const cJSON *o, const char *name)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
    return v ? v : "(null)";
}

/* The "rounds" and "ci_width" of a job's timing text. */
static void final_timing(const char *timing, double *rounds, double *ci)
{
    cJSON *t = cJSON_Parse(timing);
    *rounds = num(t, "rounds");
    *ci = num(t, "ci_width");
    cJSON_Delete(t);
}

int main(void)
{
    char dir[64], err[512];
    if (gt_test_tmpdir(dir, sizeof dir, "verify"))
        return 1;
    static const char *const opts[][2] = {
        {"budget", "4"}, {"shard_size", "16"}, {"ncpu", "1"}, {"final_rounds", "40"}};
    gt_run_created cr;
    gt_store *s = gt_test_store_with_run(dir, "M,N,K\n96,64,64\n64,32,64\n32,16,32\n", opts, 4, &cr);
    if (!s)
        return gt_test_done();
    g_up[1] = 1.25;
    g_up[2] = 1.06;
    g_up[3] = 1.5;
    gt_verify_created vc;
    CHECK(gt_store_create_verify(s, 77, 0.05, &vc, err, sizeof err) == GT_STORE_NO_RUN);
    CHECK(gt_store_create_verify(s, cr.id, 0.05, &vc, err, sizeof err) == GT_STORE_VERIFY_NOT_DONE);
    CHECK_MSG(strstr(err, "running") != NULL, "%s", err);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM runs") == 1);

    int64_t wid = gt_test_sim_worker(s, "sim", 1);
    char src_timing[512] = "";
    drain(s, wid, src_timing, sizeof src_timing);
    CHECK(gt_test_int(s, "SELECT state = 'done' FROM runs WHERE id = 1") == 1);
    int found = 0;
    cJSON *src = gt_store_run_json(s, cr.id, gt_wall_ms(), &found, err, sizeof err);
    CHECK_MSG(src != NULL, "%s", err);

    /* problem 2's finalists (lo 1.01) did not clear GT_MIN_GAIN: the
     * default is its entry in the view and the run's JSON, no gain */
    CHECK(gt_test_int(s, "SELECT is_baseline FROM problem_best WHERE problem_id = 2") == 1);
    {
        int nogain = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(src, "best"))
            nogain += num(e, "uplift") == 1 && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(e, "significant"));
        CHECK_MSG(nogain == 1, "%d entries without a significant gain", nogain);
    }
    /* problem 1's final was launch-bound (its results timed as graphs) */
    CHECK(gt_test_store_sql(s, "UPDATE results SET launch = 'graph' WHERE problem_id = 1 AND phase = 'final'") == 0);
    int rc = gt_store_create_verify(s, cr.id, 0.05, &vc, err, sizeof err);
    CHECK_MSG(rc == 0, "create verify: %d %s", rc, err);
    CHECK(vc.id == 2 && vc.problems == 2 && vc.skipped == 1);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM runs WHERE id = 2 AND name = 'verify of run 1'"
                         " AND state = 'running' AND backend = 'cpu' AND device_model = 'Sim CPU'"
                         " AND json_extract(options, '$.verify.of') = 1"
                         " AND json_extract(options, '$.verify.tolerance') = 0.05"
                         " AND json_extract(options, '$.final_rounds') = 40") == 1);
    /* copies of problems 1 and 3: key, label and spec the same */
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM problems v JOIN problems o ON o.run_id = 1"
                         " AND o.key = v.key AND o.label = v.label AND o.spec = v.spec"
                         " AND o.weight = v.weight WHERE v.run_id = 2 AND v.state = 'final'"
                         " AND o.id IN (1, 3)") == 2);
    /* one final job each: [the winner] beside the run's final baseline */
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE run_id = 2") == 2);
    CHECK(gt_test_int(
              s, "SELECT COUNT(*) FROM jobs v JOIN problems vp ON vp.id = v.problem_id"
                 " JOIN problems op ON op.run_id = 1 AND op.key = vp.key"
                 " JOIN jobs f ON f.problem_id = op.id AND f.kind = 'final'"
                 " JOIN problem_best pb ON pb.problem_id = op.id"
                 " WHERE v.run_id = 2 AND v.kind = 'final' AND v.state = 'queued'"
                 " AND v.ncandidates = 1 AND v.candidates = '[' || pb.config || ']'"
                 " AND v.baseline = f.baseline AND pb.is_baseline = 0") == 2);

    /* not re-timed yet: no uplift, no verdict */
    g_up[4] = 1.3; /* copy of problem 1 */
    g_up[5] = 1.2; /* copy of problem 3 */
    cJSON *v = gt_store_run_json(s, vc.id, gt_wall_ms(), &found, err, sizeof err);
    CHECK_MSG(v != NULL, "%s", err);
    const cJSON *vs = cJSON_GetObjectItemCaseSensitive(v, "verify");
    CHECK(num(v, "verifies") == 1 && num(vs, "passed") == 0 && num(vs, "failed") == 0 &&
          num(vs, "tolerance") == 0.05);
    const cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(v, "best"))
    {
        CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(b, "verify")));
        CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(b, "uplift")));
    }
    cJSON_Delete(v);

    char v_timing[512] = "";
    drain(s, wid, v_timing, sizeof v_timing);
    double r0, c0, r1, c1;
    final_timing(src_timing, &r0, &c0);
    final_timing(v_timing, &r1, &c1);
    CHECK_MSG(r0 == 40 && r1 == r0 && c1 == c0, "timing: %s against %s", v_timing, src_timing);
    /* each verify final is timed as the winner it re-times was: problem 4
     * (a copy of 1) as graphs, 5 (of 3) plainly; the tuned run's own finals
     * leave it to the worker (no final_launch) */
    CHECK_MSG(strstr(g_timing[4], "\"final_launch\":\"graph\"") != NULL, "%s", g_timing[4]);
    CHECK_MSG(strstr(g_timing[5], "\"final_launch\":\"plain\"") != NULL, "%s", g_timing[5]);
    CHECK_MSG(g_timing[1][0] && !strstr(g_timing[1], "final_launch") && !strstr(g_timing[3], "final_launch"),
              "%s", g_timing[1]);
    CHECK(gt_test_int(s, "SELECT state = 'done' FROM runs WHERE id = 2") == 1);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE run_id = 2 AND kind != 'final'") == 0);

    v = gt_store_run_json(s, vc.id, gt_wall_ms(), &found, err, sizeof err);
    CHECK_MSG(v != NULL, "%s", err);
    vs = cJSON_GetObjectItemCaseSensitive(v, "verify");
    CHECK(num(vs, "passed") == 1 && num(vs, "failed") == 1 && num(vs, "tolerance") == 0.05);
    const cJSON *srcb;
    int n = 0;
    cJSON_ArrayForEach(srcb, cJSON_GetObjectItemCaseSensitive(src, "best"))
    {
        const char *label = str(srcb, "label");
        b = entry_by_label(v, label);
        if (num(srcb, "problem_id") == 2) {
            CHECK_MSG(b == NULL, "the default's entry is not re-timed: %s", label);
            continue;
        }
        n++;
        CHECK_MSG(b != NULL, "%s", label);
        double stored = num(srcb, "uplift");
        CHECK(num(b, "stored_uplift") == stored);
        double up = num(b, "uplift"), want = stored == 1.25 ? 1.3 : 1.2;
        CHECK_MSG(fabs(up - want) < 1e-9, "%s: re-timed %g, want %g", label, up, want);
        CHECK(fabs(num(b, "diff") - (up / stored - 1)) < 1e-9);
        CHECK(!strcmp(str(b, "verify"), stored == 1.25 ? "pass" : "fail"));
    }
    CHECK(n == 2);
    cJSON_Delete(v);
    cJSON_Delete(src);

    /* the verify run of the tuned run is no verify run itself */
    src = gt_store_run_json(s, cr.id, gt_wall_ms(), &found, err, sizeof err);
    CHECK(src && !cJSON_GetObjectItemCaseSensitive(src, "verifies") &&
          !cJSON_GetObjectItemCaseSensitive(src, "verify"));
    cJSON_Delete(src);

    /* a run whose every entry is the default: nothing to re-time, nothing written */
    gt_run_created cr2;
    static const char *const opts2[][2] = {{"budget", "4"}, {"ncpu", "1"}};
    CHECK(gt_test_add_run(s, "M,N,K\n48,16,16\n", opts2, 2, &cr2) == 0);
    drain(s, wid, NULL, 0);
    CHECK(gt_test_int(s, "SELECT state = 'done' FROM runs WHERE id = 3") == 1);
    CHECK(gt_store_create_verify(s, cr2.id, 0.02, &vc, err, sizeof err) == GT_STORE_VERIFY_NOTHING);
    CHECK_MSG(strstr(err, "no tuned winner") != NULL, "%s", err);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM runs") == 3);

    gt_store_close(s);
    return gt_test_done_rm(dir);
}
