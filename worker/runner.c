/* runner.c: executes a leased job with a backend, inside the bench child:
 * compile -> run -> validate -> time for every candidate, one event per step
 * (the supervisor batches results to the coordinator). A candidate that fails
 * at any step is reported with the reason and never timed: its time can never
 * count. */
#include "gt_runner.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_bk_paired.h"
#include "gt_paired.h"
#include "gt_policy.h"
#include "gt_proto.h"
#include "gt_util.h"

typedef struct jobctx {
    gt_runner *r;
    long long job_id;
    const char *kind;
    gt_problem prob;
    gt_timing_opts timing;
    double baseline_ref_us;  /* final: the screen jobs' baseline (0: unknown) */
    int final_launch;        /* final: -1 probe (launch_bound), 0 plain, 1 graph: the
                                coordinator's say for a verify run, as the winner was timed */
    int final_rounds;        /* final: the round budget */
    double final_ci;         /* final: target relative width of the uplift intervals */
    double tol;
    gt_bk_prob *pp;
    int dead;                /* an event could not be delivered: stop */
    /* where the job's time went (ms), logged when it ends: tuning speed is
     * read from these (compile, reference check, timing, and candidates the
     * screen's early exit stopped), not guessed */
    double ms_prepare, ms_build, ms_check, ms_time;
    int nbuilt, npruned;
} jobctx;

/* Emits an event {"ev":name, ...the fields of extra (taken, may be NULL)}. */
static int emit(jobctx *j, const char *name, cJSON *extra)
{
    cJSON *ev = cJSON_CreateObject();
    if (!ev || !cJSON_AddStringToObject(ev, "ev", name)) {
        cJSON_Delete(ev);
        cJSON_Delete(extra);
        j->dead = 1;
        return -1;
    }
    if (extra) {
        cJSON *it = extra->child;
        while (it) {
            cJSON *next = it->next;
            cJSON_AddItemToObject(ev, it->string, cJSON_DetachItemViaPointer(extra, it));
            it = next;
        }
        cJSON_Delete(extra);
    }
    if (j->r->emit(j->r->emit_ctx, ev)) {
        j->dead = 1;
        return -1;
    }
    return 0;
}

static int emit_start(jobctx *j, int i)
{
    cJSON *x = cJSON_CreateObject();
    if (!x || !cJSON_AddNumberToObject(x, "i", i)) {
        cJSON_Delete(x);
        return -1;
    }
    return emit(j, "start", x);
}

static int emit_done(jobctx *j, const char *error)
{
    cJSON *x = NULL;
    if (error && (!(x = cJSON_CreateObject()) || !cJSON_AddStringToObject(x, "error", error))) {
        cJSON_Delete(x);
        return -1;
    }
    return emit(j, "done", x);
}

static int add_result(jobctx *j, const gt_result *res)
{
    cJSON *o = gt_proto_result_to_json(res), *x = cJSON_CreateObject();
    if (!o || !x) {
        cJSON_Delete(o);
        cJSON_Delete(x);
        return -1;
    }
    cJSON_AddItemToObject(x, "result", o);
    return emit(j, "result", x);
}

/* Builds and validates one config; fills res (valid stays 0 on failure). On
 * success *cand holds the built candidate for timing. */
static void check_candidate(jobctx *j, const cJSON *cfg, gt_bk_cand **cand, gt_result *res)
{
    char err[256] = "";
    const gt_backend *bk = j->r->bk;
    *cand = NULL;
    double t0 = gt_mono_ms();
    int brc = bk->build(j->pp, cfg, cand, err, sizeof err);
    double t1 = gt_mono_ms();
    j->ms_build += t1 - t0;
    j->nbuilt++;
    if (brc) {
        snprintf(res->reason, sizeof res->reason, "build: %.200s", err);
        *cand = NULL;
        return;
    }
    double rel = NAN;
    int vrc = bk->validate(j->pp, *cand, &rel, err, sizeof err);
    j->ms_check += gt_mono_ms() - t1;
    if (vrc) {
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

/* Measures one config (screen phase): fully, or, when best_us > 0 and its
 * calibration call already runs past GT_SCREEN_PRUNE_RATIO x best_us, only
 * that far (the screen's early exit, gt_policy.h), the result then valid
 * with the calibration time and a "pruned" reason. */
static void measure(jobctx *j, const cJSON *cfg, int is_baseline, double best_us, gt_result *res)
{
    char err[256];
    gt_bk_cand *cand;
    init_result(res, cfg, is_baseline);
    check_candidate(j, cfg, &cand, res);
    if (!cand)
        return;
    gt_timing t;
    gt_timing_opts o = j->timing;
    o.prune_above_us = best_us >= GT_SCREEN_PRUNE_MIN_US ? best_us * GT_SCREEN_PRUNE_RATIO : 0;
    memset(&t, 0, sizeof t);
    double t0 = gt_mono_ms();
    int trc = j->r->bk->time(j->pp, cand, &o, &t, err, sizeof err);
    j->ms_time += gt_mono_ms() - t0;
    j->npruned += !trc && t.pruned;
    if (trc)
        snprintf(res->reason, sizeof res->reason, "timing: %.200s", err);
    else if (!(t.median_us > 0) || !isfinite(t.median_us))
        snprintf(res->reason, sizeof res->reason, "timing: no valid time measured");
    else {
        fill_timing(j, res, &t);
        if (t.pruned)
            snprintf(res->reason, sizeof res->reason,
                     "pruned: %.4g us in calibration, over %.3gx the job's best %.4g us: not timed further",
                     t.median_us, GT_SCREEN_PRUNE_RATIO, best_us);
    }
    j->r->bk->release(cand);
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

static int emit_baseline(jobctx *j, const cJSON *cfg, const gt_result *res)
{
    cJSON *x = cJSON_CreateObject(), *b = baseline_timing_json(cfg, res);
    if (!x || !b) {
        cJSON_Delete(x);
        cJSON_Delete(b);
        return -1;
    }
    cJSON_AddItemToObject(x, "baseline", b);
    return emit(j, "baseline", x);
}

static int run_screen(jobctx *j, const cJSON *cands, const cJSON *baseline)
{
    double best = 0; /* the fastest valid time so far, the default's included */
    if (cJSON_IsObject(baseline)) {
        gt_result res;
        if (emit_start(j, -1))
            return -1;
        measure(j, baseline, 1, 0, &res);
        if (res.valid) {
            best = res.time_us;
            if (emit_baseline(j, baseline, &res))
                return -1;
        } else {
            /* Reported as a result, so the coordinator knows why the
             * default could not run and re-times the candidates against a
             * substitute instead (server/store_substitute.c); only a
             * valid baseline goes out as the job's baseline timing. */
            gt_warn("job %lld: baseline failed: %s", j->job_id, res.reason);
            if (add_result(j, &res))
                return -1;
        }
    }
    int i = 0;
    const cJSON *cfg;
    cJSON_ArrayForEach(cfg, cands)
    {
        gt_result res;
        if (emit_start(j, i++))
            return -1;
        measure(j, cfg, 0, best, &res);
        if (res.valid && (best <= 0 || res.time_us < best))
            best = res.time_us;
        if (add_result(j, &res))
            return -1;
    }
    return emit_done(j, NULL);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Entry i's per-call time over the rounds it ran in (median, range, spread). */
static int row_timing(const double *times, int stride, int i, int rounds, gt_timing *t)
{
    double v[GT_FINAL_ROUNDS_MAX];
    int n = 0;
    for (int r = 0; r < rounds && r < GT_FINAL_ROUNDS_MAX; r++) {
        double x = times[(size_t)i * (size_t)stride + (size_t)r];
        if (x > 0 && isfinite(x))
            v[n++] = x;
    }
    memset(t, 0, sizeof *t);
    if (n == 0)
        return -1;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    t->median_us = gt_paired_median_time(times, stride, i, rounds);
    t->min_us = v[0];
    t->max_us = v[n - 1];
    t->repeats = n;
    t->spread = t->median_us > 0 ? (v[(3 * n) / 4 < n ? (3 * n) / 4 : n - 1] - v[n / 4]) / t->median_us : 0;
    return 0;
}

/* The widest relative interval (hi - lo) / uplift of a set of rounds'
 * finalists (entries 1..n-1 with an interval). */
static double widest(const gt_paired_stat *st, int n)
{
    double w = 0;
    for (int i = 1; i < n; i++)
        if (st[i].ok && st[i].uplift > 0 && (st[i].hi - st[i].lo) / st[i].uplift > w)
            w = (st[i].hi - st[i].lo) / st[i].uplift;
    return w;
}

/* The supervisor blames the entry in flight: index i - 1 of the job (-1: baseline). */
static int before_timing(void *ctx, int i)
{
    return emit_start(ctx, i - 1);
}

#define LAUNCH_PROBE_MAX_US 200.0

/* Whether a plain final is launch-bound (gt_policy.h GT_LAUNCH_BOUND_RATIO):
 * short timings of each built entry, plain, as a CUDA graph, plain again,
 * and an entry whose faster plain call takes more than the ratio longer
 * than its graph call is launch-bound (a single plain probe, the entry's
 * first timing, once put a 94 us kernel at 151 us on the H100). 1 (the
 * first such entry's times in *plain_us, *graph_us) or 0; also 0 when an
 * entry cannot be timed as a graph, so that every entry of the rounds is
 * timed alike. A few ms per entry: each probe runs at most 2 ms. A verify
 * run's final says how instead (final_launch): no probes. */
static int launch_bound(jobctx *j, gt_bk_cand **built, int n, double *plain_us, double *graph_us)
{
    const gt_backend *bk = j->r->bk;
    if (!bk->graphs || j->timing.graph || j->timing.chained)
        return 0;
    if (j->final_launch >= 0)
        return j->final_launch;
    /* a default the screens timed at LAUNCH_PROBE_MAX_US or more is no
     * launch-bound GEMM (a launch costs 3-15 us): the probes' few ms per
     * entry are spared where they cannot tell */
    if (j->baseline_ref_us >= LAUNCH_PROBE_MAX_US)
        return 0;
    gt_timing_opts o = j->timing;
    o.repeats = 1;
    o.prune_above_us = 0;
    if (o.min_time_ms > 2)
        o.min_time_ms = 2;
    int bound = 0;
    double t0 = gt_mono_ms();
    for (int i = 0; i < n; i++) {
        if (!built[i])
            continue;
        gt_timing tp, tg, tp2;
        char err[256];
        o.graph = 0;
        if (bk->time(j->pp, built[i], &o, &tp, err, sizeof err))
            continue; /* the rounds say why */
        o.graph = 1;
        if (bk->time(j->pp, built[i], &o, &tg, err, sizeof err) || !(tg.median_us > 0)) {
            bound = 0;
            break;
        }
        o.graph = 0;
        if (bk->time(j->pp, built[i], &o, &tp2, err, sizeof err))
            continue;
        if (tp2.median_us < tp.median_us)
            tp = tp2;
        if (!bound && tp.median_us > GT_LAUNCH_BOUND_RATIO * tg.median_us) {
            bound = 1;
            *plain_us = tp.median_us;
            *graph_us = tg.median_us;
        }
    }
    j->ms_time += gt_mono_ms() - t0;
    return bound;
}

/* Final phase: baseline and the top candidates, each validated, then timed
 * in paired, interleaved rounds (common/gt_paired.h through
 * worker/gt_bk_paired.h) until every finalist's uplift interval is narrower
 * than the job's ci_width or its round budget is spent. Each result carries
 * its paired uplift, interval and rounds; the coordinator makes a finalist
 * the winner only when the interval lies above GT_MIN_GAIN. When the baseline's median
 * lands more than GT_BASELINE_DRIFT_MAX away from what the screen jobs
 * measured (timing baseline_ref_us), the machine was disturbed during the
 * rounds: they run once more and the second set is reported (the
 * coordinator flags a baseline that drifts again). Rounds that reach the
 * budget with an interval wider than GT_FINAL_UNSETTLED_WIDTH also run once
 * more, and the set whose widest interval is narrower is reported. */
static int run_final(jobctx *j, const cJSON *cands, const cJSON *baseline)
{
    int n = 1 + cJSON_GetArraySize(cands);
    int maxr = j->final_rounds;
    const cJSON **cfgs = calloc((size_t)n, sizeof *cfgs);
    gt_bk_cand **built = calloc((size_t)n, sizeof *built);
    gt_result *res = calloc((size_t)n, sizeof *res);
    char(*why)[256] = calloc((size_t)n, sizeof *why);
    double *times = calloc((size_t)n * (size_t)maxr, sizeof *times);
    gt_paired_stat *st = calloc((size_t)n, sizeof *st);
    double *times1 = NULL;      /* an unsettled first set of rounds, see below */
    gt_paired_stat *st1 = NULL;
    gt_gpu_state gpu1 = {0};
    int rc = -1, rounds = 0, rounds1 = 0;
    if (!cfgs || !built || !res || !why || !times || !st)
        goto out;
    cfgs[0] = baseline;
    for (int i = 1; i < n; i++)
        cfgs[i] = cJSON_GetArrayItem(cands, i - 1);
    for (int i = 0; i < n; i++) {
        init_result(&res[i], cfgs[i], i == 0);
        if (emit_start(j, i - 1))
            goto out;
        check_candidate(j, cfgs[i], &built[i], &res[i]);
    }
    gt_paired_opts po;
    gt_paired_opts_init(&po, maxr, j->final_ci);
    po.seed = (uint64_t)j->job_id;
    gt_bk_paired bp = {.bk = j->r->bk, .pp = j->pp, .cands = built, .n = n, .timing = j->timing,
                       .before = before_timing, .ctx = j, .why = why};
    /* a launch-bound plain final is timed as graphs (launch_bound); the
     * screens' baseline, timed plainly, is then no reference for the
     * drift check, which such a final goes without (the unsettled-interval
     * retry still applies) */
    double plain_us = 0, graph_us = 0, ref_us = j->baseline_ref_us;
    int graph = launch_bound(j, built, n, &plain_us, &graph_us);
    if (graph) {
        bp.timing.graph = 1;
        ref_us = 0;
        if (j->final_launch == 1)
            gt_info("job %lld: timed as CUDA graphs, as the winner it re-times was", j->job_id);
        else
            gt_info("job %lld: launch-bound (%.3g us per call in plain launches, %.3g us in a CUDA graph): "
                    "the final rounds are timed as graphs",
                    j->job_id, plain_us, graph_us);
    }
    /* the first set is kept while a second set of rounds runs: an unsettled
     * first set is replaced only by a second whose widest interval is
     * narrower (a drifting baseline's second set is reported as is) */
    for (int attempt = 0; attempt < 2; attempt++) {
        po.seed += (uint64_t)attempt;
        double t0 = gt_mono_ms();
        int prc = gt_bk_paired_run(&bp, &po, times, &rounds, st);
        j->ms_time += gt_mono_ms() - t0;
        if (prc || j->dead)
            goto out;
        if (attempt) {
            if (times1 && widest(st1, n) < widest(st, n)) {
                memcpy(times, times1, (size_t)n * (size_t)maxr * sizeof *times);
                memcpy(st, st1, (size_t)n * sizeof *st);
                rounds = rounds1;
                bp.gpu = gpu1; /* the GPU's state over the set reported */
                gt_info("job %lld: the second set of rounds was no narrower: the first is reported", j->job_id);
            }
            break;
        }
        double b = built[0] ? gt_paired_median_time(times, maxr, 0, rounds) : 0, ref = ref_us;
        int drift = b > 0 && ref > 0 && (b > ref * GT_BASELINE_DRIFT_MAX || b * GT_BASELINE_DRIFT_MAX < ref);
        double w = widest(st, n);
        int unsettled = !drift && rounds >= maxr && w > GT_FINAL_UNSETTLED_WIDTH;
        if (!drift && !unsettled)
            break;
        if (drift)
            gt_warn("job %lld: the baseline timed %.4g us in the final rounds against %.4g us in the screen "
                    "jobs: timing the rounds again",
                    j->job_id, b, ref);
        else {
            gt_warn("job %lld: after %d rounds an uplift interval is still %.0f %% wide: timing the rounds "
                    "again",
                    j->job_id, rounds, 100 * w);
            times1 = malloc((size_t)n * (size_t)maxr * sizeof *times1);
            st1 = malloc((size_t)n * sizeof *st1);
            if (!times1 || !st1)
                goto out;
            memcpy(times1, times, (size_t)n * (size_t)maxr * sizeof *times);
            memcpy(st1, st, (size_t)n * sizeof *st);
            rounds1 = rounds;
            gpu1 = bp.gpu;
        }
    }
    /* no device state (a cuda worker without NVML): said once per process,
     * not once per job */
    static int gpu_why_said;
    if (bp.gpu_why[0] && !gpu_why_said) {
        gpu_why_said = 1;
        gt_info("final rounds: no GPU state recorded next to the timings: %s", bp.gpu_why);
    }
    for (int i = 0; i < n; i++) {
        if (!built[i]) {
            if (why[i][0] && !res[i].reason[0])
                snprintf(res[i].reason, sizeof res[i].reason, "%s", why[i]);
            continue;
        }
        gt_timing t;
        res[i].graph = graph;
        if (row_timing(times, maxr, i, rounds, &t) == 0 && t.median_us > 0 && isfinite(t.median_us))
            fill_timing(j, &res[i], &t);
        else
            snprintf(res[i].reason, sizeof res[i].reason, "timing: no valid time measured");
        /* paired with a baseline that ran: the uplift and its interval */
        if (res[i].valid && built[0] && st[i].rounds > 0) {
            res[i].rounds = st[i].rounds;
            res[i].uplift = st[i].uplift;
            res[i].uplift_lo = st[i].lo;
            res[i].uplift_hi = st[i].hi;
            res[i].gpu = bp.gpu; /* the rounds' GPU state, the same for every entry */
        }
    }
    for (int i = 0; i < n; i++)
        if (add_result(j, &res[i]))
            goto out;
    /* the job's baseline timing feeds the screens' plain references
     * (baselines): a graph-timed one is not one of them */
    if (res[0].valid && !graph && emit_baseline(j, baseline, &res[0]))
        goto out;
    rc = emit_done(j, NULL);
out:
    if (built)
        for (int i = 0; i < n; i++)
            if (built[i])
                j->r->bk->release(built[i]);
    free(cfgs);
    free(built);
    free(res);
    free(why);
    free(times);
    free(st);
    free(times1);
    free(st1);
    return rc;
}

/* keep: how many of the list's first entries the coordinator can use (its
 * budget with the exhaustive strategy), 0: all of them. */
static int run_enumerate(jobctx *j, int keep)
{
    char err[256];
    if (!j->r->bk->enumerate)
        return emit_done(j, "backend cannot enumerate candidates");
    cJSON *cands = NULL, *base = NULL;
    if (emit_start(j, -1))
        return -1;
    if (j->r->bk->enumerate(j->r->ctx, &j->prob, keep, &cands, &base, err, sizeof err)) {
        char msg[300];
        snprintf(msg, sizeof msg, "enumerate: %.200s", err);
        return emit_done(j, msg);
    }
    cJSON *x = cJSON_CreateObject();
    if (!x) {
        cJSON_Delete(cands);
        cJSON_Delete(base);
        return -1;
    }
    gt_info("job %lld: %d candidates enumerated", j->job_id, cJSON_GetArraySize(cands));
    cJSON_AddItemToObject(x, "candidates", cands);
    cJSON_AddItemToObject(x, "baseline_config", base);
    if (emit(j, "enumerated", x))
        return -1;
    return emit_done(j, NULL);
}

static double num_or(const cJSON *o, const char *name, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

void gt_runner_fini(gt_runner *r)
{
    if (r->kept)
        r->bk->unprepare(r->kept);
    r->kept = NULL;
    free(r->kept_problem);
    r->kept_problem = NULL;
}

int gt_runner_run(gt_runner *r, const cJSON *job)
{
    char err[256];
    jobctx j;
    memset(&j, 0, sizeof j);
    j.r = r;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(job, "id");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(job, "kind");
    if (!cJSON_IsNumber(v) || !cJSON_IsString(kind))
        return emit_done(&j, "malformed job");
    j.job_id = gt_proto_int_or(job, "id", 0, (1LL << 53), 0);
    j.kind = kind->valuestring;
    if (gt_problem_from_json(cJSON_GetObjectItemCaseSensitive(job, "problem"), &j.prob, err, sizeof err)) {
        char msg[300];
        snprintf(msg, sizeof msg, "bad problem: %.200s", err);
        return emit_done(&j, msg);
    }
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(job, "timing");
    j.timing.min_time_ms = num_or(t, "min_time_ms", 2);
    if (!(j.timing.min_time_ms > 0 && j.timing.min_time_ms <= 60000))
        j.timing.min_time_ms = 2;
    j.timing.repeats = (int)gt_proto_int_or(t, "repeats", 1, 1000, 5);
    j.timing.warmup = (int)gt_proto_int_or(t, "warmup", 0, 1000, 2);
    j.timing.rotating_bytes = j.prob.rotating_mb * (1 << 20);
    j.timing.chained = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "chained"));
    j.timing.graph = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "graph"));
    /* a verify run's final is timed as the winner it re-times was: no probe */
    const char *fl = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "final_launch"));
    j.final_launch = !fl ? -1 : !strcmp(fl, "graph") ? 1 : 0;
    j.baseline_ref_us = num_or(t, "baseline_ref_us", 0);
    if (!(j.baseline_ref_us > 0 && isfinite(j.baseline_ref_us)))
        j.baseline_ref_us = 0;
    /* a coordinator before the paired rounds sends neither: the defaults */
    j.final_rounds = (int)gt_proto_int_or(t, "rounds", 1, GT_FINAL_ROUNDS_MAX, GT_FINAL_ROUNDS);
    j.final_ci = num_or(t, "ci_width", GT_FINAL_CI_WIDTH);
    if (!(j.final_ci >= 0 && j.final_ci <= 1))
        j.final_ci = GT_FINAL_CI_WIDTH;
    j.tol = gt_bk_tolerance(&j.prob);
    const cJSON *cands = cJSON_GetObjectItemCaseSensitive(job, "candidates");
    const cJSON *baseline = cJSON_GetObjectItemCaseSensitive(job, "baseline");
    double t0 = gt_mono_ms();
    int rc;
    if (!strcmp(j.kind, "enumerate")) {
        /* An enumeration lists configs and touches no buffer: no inputs,
         * reference or heuristic run to prepare (they cost the GPU 30 ms a
         * job, and more with several workers on one host); the backend
         * checks that the problem would fit. */
        rc = run_enumerate(&j, (int)gt_proto_int_or(job, "keep", 0, INT32_MAX, 0));
    } else {
        int screen = strcmp(j.kind, "final") != 0;
        /* a screen job's problem as text: what the next shard's is compared with */
        char *ptext = screen ? cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(job, "problem")) : NULL;
        if (r->kept && ptext && r->kept_problem && !strcmp(ptext, r->kept_problem)) {
            j.pp = r->kept; /* the previous shard's: see gt_runner */
            r->kept = NULL;
        } else {
            gt_runner_fini(r);
            int prc = r->bk->prepare(r->ctx, &j.prob, &j.pp, err, sizeof err);
            if (prc) {
                char msg[300];
                free(ptext);
                snprintf(msg, sizeof msg, "%s: %.200s", r->bk->name, err);
                return emit_done(&j, msg);
            }
        }
        j.ms_prepare = gt_mono_ms() - t0;
        if (r->bk->prefetch)
            r->bk->prefetch(j.pp, cands);
        if (!screen)
            rc = run_final(&j, cands, baseline);
        else
            rc = run_screen(&j, cands, baseline);
        if (ptext && rc == 0 && !j.dead) {
            r->kept = j.pp;
            free(r->kept_problem);
            r->kept_problem = ptext;
            ptext = NULL;
        } else {
            r->bk->unprepare(j.pp);
        }
        free(ptext);
    }
    /* one line per job: where a slow tuning run spends its time (bench/
     * cuda_service.py sums these lines from the worker's log) */
    double wall = gt_mono_ms() - t0;
    gt_info("job %lld cost: %s, %d built, wall %.0f ms: prepare %.0f, build %.0f, check %.0f, time %.0f, "
            "other %.0f ms; %d pruned",
            j.job_id, j.kind, j.nbuilt, wall, j.ms_prepare, j.ms_build, j.ms_check,
            j.ms_time, wall - j.ms_prepare - j.ms_build - j.ms_check - j.ms_time, j.npruned);
    return rc || j.dead ? -1 : 0;
}
