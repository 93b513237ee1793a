/* runner.c: executes a leased job with a backend: compile -> run -> validate
 * -> time for every candidate, and reports results to the coordinator in
 * batches. A candidate that fails at any step is reported with the reason and
 * never timed: its time can never count. */
#include "gt_runner.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_proto.h"
#include "gt_util.h"

typedef struct jobctx {
    gt_runner *r;
    long long job_id;
    const char *kind;
    gt_problem prob;
    gt_timing_opts timing;
    double tol;
    gt_bk_prob *pp;
    cJSON *pending;          /* results not yet sent */
    cJSON *baseline_timing;  /* {"config","time_us","spread"} once measured */
    int cancelled;
} jobctx;

/* Sends a results message; extra (taken, may be NULL) adds fields. Returns 0
 * when acknowledged, 1 when the run was cancelled, -1 when unreachable. */
static int send_results(jobctx *j, int done, const char *error, cJSON *extra)
{
    char err[256];
    int rc = -1;
    cJSON *m = gt_proto_new(GT_MSG_RESULTS);
    if (!m)
        goto out;
    if (!cJSON_AddNumberToObject(m, "worker_id", (double)j->r->worker_id) ||
        !cJSON_AddNumberToObject(m, "job_id", (double)j->job_id) ||
        !cJSON_AddBoolToObject(m, "done", done))
        goto out;
    cJSON_AddItemToObject(m, "results", j->pending);
    j->pending = NULL;
    if (error && !cJSON_AddStringToObject(m, "error", error))
        goto out;
    if (done && j->baseline_timing) {
        cJSON_AddItemToObject(m, "baseline", j->baseline_timing);
        j->baseline_timing = NULL;
    }
    if (extra) {
        cJSON *it = extra->child;
        while (it) {
            cJSON *next = it->next;
            cJSON_AddItemToObject(m, it->string, cJSON_DetachItemViaPointer(extra, it));
            it = next;
        }
    }
    const char *type = NULL;
    cJSON *reply = gt_client_call(j->r->client, m, &type, 0, err, sizeof err);
    if (!reply) {
        gt_err("job %lld: results not delivered: %s", j->job_id, err);
        goto out;
    }
    if (!strcmp(type, GT_MSG_ACK)) {
        rc = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "cancelled")) ? 1 : 0;
    } else {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(reply, "error");
        gt_err("job %lld: coordinator refused results: %s", j->job_id,
               cJSON_IsString(e) ? e->valuestring : type);
    }
    cJSON_Delete(reply);
out:
    cJSON_Delete(m);
    cJSON_Delete(extra);
    if (!j->pending)
        j->pending = cJSON_CreateArray();
    if (rc == 1)
        j->cancelled = 1;
    return rc;
}

static int add_result(jobctx *j, const gt_result *res)
{
    cJSON *o = gt_proto_result_to_json(res);
    if (!o || !j->pending || !cJSON_AddItemToArray(j->pending, o)) {
        cJSON_Delete(o);
        return -1;
    }
    return 0;
}

/* Builds and validates one config; fills res (valid stays 0 on failure). On
 * success *cand holds the built candidate for timing. */
static void check_candidate(jobctx *j, const cJSON *cfg, gt_bk_cand **cand, gt_result *res)
{
    char err[256] = "";
    const gt_backend *bk = j->r->bk;
    *cand = NULL;
    if (bk->build(j->pp, cfg, cand, err, sizeof err)) {
        snprintf(res->reason, sizeof res->reason, "build: %.200s", err);
        *cand = NULL;
        return;
    }
    double rel = NAN;
    if (bk->validate(j->pp, *cand, &rel, err, sizeof err)) {
        snprintf(res->reason, sizeof res->reason, "run: %.200s", err);
        goto fail;
    }
    res->rel_err = rel;
    /* NaN compares false: an unwritten or NaN output never passes. */
    if (!(rel <= j->tol)) {
        snprintf(res->reason, sizeof res->reason, "wrong result: rel_err %.3g > tolerance %.3g", rel,
                 j->tol);
        goto fail;
    }
    return;
fail:
    bk->release(*cand);
    *cand = NULL;
}

static void init_result(gt_result *res, const cJSON *cfg, int is_baseline)
{
    memset(res, 0, sizeof *res);
    res->config = (cJSON *)cfg;
    res->is_baseline = is_baseline;
    res->time_us = -1;
    res->rel_err = NAN;
}

static void fill_timing(jobctx *j, gt_result *res, const gt_timing *t)
{
    res->time_us = t->median_us;
    res->spread = t->spread;
    res->tflops = j->prob.flops / (t->median_us * 1e-6) / 1e12;
    res->valid = 1;
}

/* Measures one config fully (screen phase). */
static void measure(jobctx *j, const cJSON *cfg, int is_baseline, gt_result *res)
{
    char err[256];
    gt_bk_cand *cand;
    init_result(res, cfg, is_baseline);
    check_candidate(j, cfg, &cand, res);
    if (!cand)
        return;
    gt_timing t;
    if (j->r->bk->time(j->pp, cand, &j->timing, &t, err, sizeof err))
        snprintf(res->reason, sizeof res->reason, "timing: %.200s", err);
    else if (!(t.median_us > 0) || !isfinite(t.median_us))
        snprintf(res->reason, sizeof res->reason, "timing: no valid time measured");
    else
        fill_timing(j, res, &t);
    j->r->bk->release(cand);
    j->r->candidates_run++;
}

static cJSON *baseline_timing_json(const cJSON *cfg, const gt_result *res)
{
    cJSON *b = cJSON_CreateObject();
    cJSON *c = cJSON_Duplicate(cfg, 1);
    if (!b || !c) {
        cJSON_Delete(b);
        cJSON_Delete(c);
        return NULL;
    }
    cJSON_AddItemToObject(b, "config", c);
    if (!cJSON_AddNumberToObject(b, "time_us", res->time_us) ||
        !cJSON_AddNumberToObject(b, "spread", res->spread)) {
        cJSON_Delete(b);
        return NULL;
    }
    return b;
}

static int run_screen(jobctx *j, const cJSON *cands, const cJSON *baseline)
{
    if (cJSON_IsObject(baseline)) {
        gt_result res;
        measure(j, baseline, 1, &res);
        if (res.valid)
            j->baseline_timing = baseline_timing_json(baseline, &res);
        else
            gt_warn("job %lld: baseline failed: %s", j->job_id, res.reason);
    }
    int n = 0;
    const cJSON *cfg;
    cJSON_ArrayForEach(cfg, cands)
    {
        if (*j->r->stop)
            return send_results(j, 0, NULL, NULL) < 0 ? -1 : 1;
        gt_result res;
        measure(j, cfg, 0, &res);
        if (add_result(j, &res))
            return -1;
        if (++n % j->r->batch == 0) {
            int rc = send_results(j, 0, NULL, NULL);
            if (rc)
                return rc;
        }
    }
    return send_results(j, 1, NULL, NULL);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Final phase: baseline and the top candidates, each validated, then timed
 * round-robin, one repeat per round. */
static int run_final(jobctx *j, const cJSON *cands, const cJSON *baseline)
{
    char err[256];
    int n = 1 + cJSON_GetArraySize(cands);
    const cJSON **cfgs = calloc((size_t)n, sizeof *cfgs);
    gt_bk_cand **built = calloc((size_t)n, sizeof *built);
    gt_result *res = calloc((size_t)n, sizeof *res);
    int rounds = j->timing.repeats > 0 ? j->timing.repeats : 9;
    double *times = calloc((size_t)n * (size_t)rounds, sizeof *times);
    int rc = -1;
    if (!cfgs || !built || !res || !times)
        goto out;
    cfgs[0] = baseline;
    for (int i = 1; i < n; i++)
        cfgs[i] = cJSON_GetArrayItem(cands, i - 1);
    for (int i = 0; i < n; i++) {
        init_result(&res[i], cfgs[i], i == 0);
        check_candidate(j, cfgs[i], &built[i], &res[i]);
    }
    gt_timing_opts one = j->timing;
    one.repeats = 1;
    for (int round = 0; round < rounds && !*j->r->stop; round++) {
        for (int i = 0; i < n; i++) {
            if (!built[i])
                continue;
            gt_timing t;
            if (j->r->bk->time(j->pp, built[i], &one, &t, err, sizeof err)) {
                snprintf(res[i].reason, sizeof res[i].reason, "timing: %.200s", err);
                j->r->bk->release(built[i]);
                built[i] = NULL;
                continue;
            }
            times[(size_t)i * (size_t)rounds + (size_t)round] = t.median_us;
        }
    }
    if (*j->r->stop) {
        rc = 1;
        goto out;
    }
    for (int i = 0; i < n; i++) {
        if (!built[i])
            continue;
        double *ti = times + (size_t)i * (size_t)rounds;
        qsort(ti, (size_t)rounds, sizeof *ti, cmp_double);
        gt_timing t = {.median_us = rounds % 2 ? ti[rounds / 2] : 0.5 * (ti[rounds / 2 - 1] + ti[rounds / 2]),
                       .min_us = ti[0], .max_us = ti[rounds - 1], .repeats = rounds};
        t.spread = t.median_us > 0 ? (ti[(3 * rounds) / 4] - ti[rounds / 4]) / t.median_us : 0;
        if (t.median_us > 0 && isfinite(t.median_us))
            fill_timing(j, &res[i], &t);
        else
            snprintf(res[i].reason, sizeof res[i].reason, "timing: no valid time measured");
        j->r->candidates_run++;
    }
    for (int i = 0; i < n; i++)
        if (add_result(j, &res[i]))
            goto out;
    if (res[0].valid)
        j->baseline_timing = baseline_timing_json(baseline, &res[0]);
    rc = send_results(j, 1, NULL, NULL);
out:
    if (built)
        for (int i = 0; i < n; i++)
            if (built[i])
                j->r->bk->release(built[i]);
    free(cfgs);
    free(built);
    free(res);
    free(times);
    return rc;
}

static int run_enumerate(jobctx *j)
{
    char err[256];
    if (!j->r->bk->enumerate)
        return send_results(j, 1, "backend cannot enumerate candidates", NULL);
    cJSON *cands = NULL, *base = NULL;
    if (j->r->bk->enumerate(j->r->ctx, &j->prob, &cands, &base, err, sizeof err)) {
        char msg[300];
        snprintf(msg, sizeof msg, "enumerate: %.200s", err);
        return send_results(j, 1, msg, NULL);
    }
    cJSON *extra = cJSON_CreateObject();
    if (!extra) {
        cJSON_Delete(cands);
        cJSON_Delete(base);
        return -1;
    }
    gt_info("job %lld: %d candidates enumerated", j->job_id, cJSON_GetArraySize(cands));
    cJSON_AddItemToObject(extra, "candidates", cands);
    cJSON_AddItemToObject(extra, "baseline_config", base);
    return send_results(j, 1, NULL, extra);
}

static double num_or(const cJSON *o, const char *name, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

int gt_runner_run(gt_runner *r, const cJSON *job)
{
    char err[256];
    jobctx j;
    memset(&j, 0, sizeof j);
    j.r = r;
    j.pending = cJSON_CreateArray();
    if (!j.pending)
        return -1;
    int rc = -1;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(job, "id");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(job, "kind");
    if (!cJSON_IsNumber(v) || !cJSON_IsString(kind)) {
        gt_err("malformed job from the coordinator");
        goto out;
    }
    j.job_id = (long long)v->valuedouble;
    j.kind = kind->valuestring;
    if (gt_problem_from_json(cJSON_GetObjectItemCaseSensitive(job, "problem"), &j.prob, err, sizeof err)) {
        char msg[300];
        snprintf(msg, sizeof msg, "bad problem: %.200s", err);
        rc = send_results(&j, 1, msg, NULL);
        goto out;
    }
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(job, "timing");
    j.timing.min_time_ms = num_or(t, "min_time_ms", 2);
    j.timing.repeats = (int)num_or(t, "repeats", 5);
    j.timing.warmup = (int)num_or(t, "warmup", 2);
    j.timing.rotating_bytes = j.prob.rotating_mb * (1 << 20);
    j.tol = gt_bk_tolerance(&j.prob);
    char label[128];
    gt_problem_label(&j.prob, label, sizeof label);
    const cJSON *cands = cJSON_GetObjectItemCaseSensitive(job, "candidates");
    const cJSON *baseline = cJSON_GetObjectItemCaseSensitive(job, "baseline");
    gt_info("job %lld: %s %s, %d candidates", j.job_id, j.kind, label, cJSON_GetArraySize(cands));
    double t0 = gt_mono_ms();
    if (r->bk->prepare(r->ctx, &j.prob, &j.pp, err, sizeof err)) {
        char msg[300];
        snprintf(msg, sizeof msg, "%s: %.200s", r->bk->name, err);
        gt_warn("job %lld: cannot run %s: %s", j.job_id, label, err);
        rc = send_results(&j, 1, msg, NULL);
        goto out;
    }
    if (!strcmp(j.kind, "enumerate"))
        rc = run_enumerate(&j);
    else if (!strcmp(j.kind, "final"))
        rc = run_final(&j, cands, baseline);
    else
        rc = run_screen(&j, cands, baseline);
    r->bk->unprepare(j.pp);
    gt_info("job %lld: %s in %.2f s%s", j.job_id, rc == 0 ? "done" : rc == 1 ? "abandoned" : "failed",
            (gt_mono_ms() - t0) / 1000, j.cancelled ? " (run cancelled)" : "");
out:
    cJSON_Delete(j.pending);
    cJSON_Delete(j.baseline_timing);
    return rc;
}
