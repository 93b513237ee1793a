/* test_runner_final.c: the final phase of worker/runner.c against a fake
 * backend whose timings the test scripts: the baseline and the candidates
 * are timed in paired, interleaved rounds, the medians reported with each
 * candidate's paired uplift, interval and rounds; the rounds stop at the
 * job's budget ("rounds") or once every interval is narrower than
 * "ci_width" (never before GT_PAIRED_MIN_ROUNDS); when the baseline's
 * median is more than GT_BASELINE_DRIFT_MAX away from the screen jobs'
 * (timing "baseline_ref_us"), the rounds run once more and the second set is
 * reported; never a third time; without a reference, or within it, once.
 * A backend that reads its device's state after each timing (state) has
 * the rounds' summary carried with every paired result (gpu_state); one
 * without it, or whose reads fail, reports none.
 * A screen job whose default cannot be built still times its candidates and
 * reports the default as an invalid baseline result with the reason.
 * The screen's early exit: each candidate is timed with prune_above_us set
 * to GT_SCREEN_PRUNE_RATIO x the job's best valid time so far (the default's
 * included) when that best is at least GT_SCREEN_PRUNE_MIN_US, else 0; a
 * candidate its backend stopped early is reported valid, with its
 * calibration time and a "pruned: ..." reason.
 * A plain final on a backend that times CUDA graphs (gt_backend.graphs) is
 * probed first: when an entry's plain call takes over GT_LAUNCH_BOUND_RATIO
 * its graph time, every round is timed as graphs, every result says so
 * ("launch": "graph"), no baseline timing goes out (it would join the
 * screens' plain ones) and the screens' reference does not count as drift;
 * otherwise, or when an entry cannot be timed as a graph, or on a backend
 * without graphs, the final is plain as before.
 * (On the H100 a disturbed final once timed cuBLASLt's default at 2x its
 * screen time: bench/results/h100_25_service_gen.txt.) */
#include "gen_test_util.h"
#include "gt_policy.h"
#include "gt_proto.h"
#include "gt_runner.h"
#include "gt_test.h"
#include "gt_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The fake device: config {"id":0} is the baseline (a config without an
 * id fails to build); a time call of the
 * baseline returns slow_us while slow_calls of them are left (with
 * alternate, every other call instead), else base_us; candidate i returns
 * 10 + i us. */
static struct {
    int base_calls, cand_calls, slow_calls, alternate;
    double base_us, slow_us;
    int state_calls;
    double cand_us[4];     /* > 0: candidate i's time instead of 10 + i */
    double prune_seen[4];  /* the prune_above_us candidate i was timed with */
    double graph_div;      /* > 0: a call timed as a graph takes its plain time / graph_div */
    int graph_fail_id;     /* > 0: that config cannot be timed as a graph */
    int graph_calls;       /* calls timed as graphs */
    int prepares, unprepares;
} g;

struct gt_bk_cand {
    int id;
};

static int fake_prepare(gt_bk_ctx *ctx, const gt_problem *p, gt_bk_prob **pp, char *err, size_t errlen)
{
    (void)ctx, (void)p, (void)err, (void)errlen;
    *pp = (gt_bk_prob *)&g; /* any non-NULL handle */
    g.prepares++;
    return 0;
}

static void fake_unprepare(gt_bk_prob *pp)
{
    (void)pp;
    g.unprepares++;
}

static int fake_build(gt_bk_prob *pp, const cJSON *cfg, gt_bk_cand **c, char *err, size_t errlen)
{
    (void)pp;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(cfg, "id");
    if (!cJSON_IsNumber(id) || !(*c = malloc(sizeof **c))) {
        snprintf(err, errlen, "no id");
        return -1;
    }
    (*c)->id = id->valueint;
    return 0;
}

static void fake_release(gt_bk_cand *c) { free(c); }

static int fake_validate(gt_bk_prob *pp, gt_bk_cand *c, double *rel_err, char *err, size_t errlen)
{
    (void)pp, (void)c, (void)err, (void)errlen;
    *rel_err = 1e-7;
    return 0;
}

static int fake_time(gt_bk_prob *pp, gt_bk_cand *c, const gt_timing_opts *o, gt_timing *t, char *err,
                     size_t errlen)
{
    (void)pp;
    double us;
    if (c->id == 0) {
        g.base_calls++;
        if (g.alternate)
            us = g.base_calls % 2 ? g.slow_us : g.base_us;
        else
            us = g.slow_calls > 0 ? (g.slow_calls--, g.slow_us) : g.base_us;
    } else {
        g.cand_calls++;
        us = c->id >= 0 && c->id < 4 && g.cand_us[c->id] > 0 ? g.cand_us[c->id] : 10 + c->id;
        if (c->id >= 0 && c->id < 4)
            g.prune_seen[c->id] = o ? o->prune_above_us : -1;
    }
    if (o && o->graph) {
        g.graph_calls++;
        if (g.graph_fail_id > 0 && c->id == g.graph_fail_id) {
            snprintf(err, errlen, "graph capture failed (test)");
            return -1;
        }
        us /= g.graph_div > 0 ? g.graph_div : 1;
    }
    memset(t, 0, sizeof *t);
    t->pruned = o && o->prune_above_us > 0 && us > o->prune_above_us;
    t->median_us = t->min_us = t->max_us = us;
    t->iters = 1;
    t->repeats = 1;
    return 0;
}

/* The device's state after timing k (0-based): SM clock 1000 + k MHz,
 * power 100 + k W, 60 C; readings 0 and 1 of every third round (9 readings:
 * 3 entries per round) carry the SW power cap, reading 5 only sync boost,
 * which is no cap. */
static int fake_state(gt_bk_prob *pp, gt_gpu_sample *s, char *err, size_t errlen)
{
    (void)pp, (void)err, (void)errlen;
    int k = g.state_calls++;
    s->sm_mhz = 1000 + k;
    s->power_w = 100 + k;
    s->temp_c = 60;
    s->reasons = k % 9 < 2 ? 0x4 : k % 9 == 5 ? 0x10 : 0x1;
    return 0;
}

static int fake_state_fails(gt_bk_prob *pp, gt_gpu_sample *s, char *err, size_t errlen)
{
    (void)pp, (void)s;
    g.state_calls++;
    snprintf(err, errlen, "nvml: libnvidia-ml.so.1 not loadable (test)");
    return -1;
}

static gt_backend k_fake = {
    .name = "fake",
    .prepare = fake_prepare,
    .unprepare = fake_unprepare,
    .build = fake_build,
    .release = fake_release,
    .validate = fake_validate,
    .time = fake_time,
};

/* What the runner emitted: the reported times by config id, the baseline
 * event's time, whether "done" came without an error. */
typedef struct seen {
    double time_of[4], baseline_us;
    double uplift_of[4], lo_of[4], hi_of[4];
    int rounds_of[4];
    gt_gpu_state gpu_of[4];
    int graph_of[4];
    char reason_of[4][256];
    int done_ok, results;
    int bad_baselines;     /* invalid results marked baseline */
    char bad_reason[256];  /* the last one's reason */
} seen;

static int collect(void *ctx, cJSON *ev)
{
    seen *s = ctx;
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "ev"));
    if (name && !strcmp(name, "result")) {
        gt_result r;
        char err[128];
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(ev, "result");
        if (gt_proto_result_from_json(o, &r, err, sizeof err) == 0 && !r.valid && r.is_baseline) {
            s->bad_baselines++;
            snprintf(s->bad_reason, sizeof s->bad_reason, "%s", r.reason);
        } else if (gt_proto_result_from_json(o, &r, err, sizeof err) == 0 && r.valid) {
            int id = cJSON_GetObjectItemCaseSensitive(r.config, "id")->valueint;
            if (id >= 0 && id < 4) {
                s->time_of[id] = r.time_us;
                s->uplift_of[id] = r.uplift;
                s->lo_of[id] = r.uplift_lo;
                s->hi_of[id] = r.uplift_hi;
                s->rounds_of[id] = r.rounds;
                s->gpu_of[id] = r.gpu;
                s->graph_of[id] = r.graph;
                snprintf(s->reason_of[id], sizeof s->reason_of[id], "%s", r.reason);
            }
            s->results++;
        }
    } else if (name && !strcmp(name, "baseline")) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(ev, "baseline");
        s->baseline_us = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(b, "time_us"));
    } else if (name && !strcmp(name, "done")) {
        s->done_ok = cJSON_GetObjectItemCaseSensitive(ev, "error") == NULL;
    }
    cJSON_Delete(ev);
    return 0;
}

/* The test problem (64x16x64 bf16) as job JSON text (cJSON_free), NULL
 * out of memory. */
static char *prob_text(void)
{
    gt_problem p = gen_test_prob(64, 16, 64, GT_DT_BF16, GT_DT_BF16);
    cJSON *pj = gt_problem_to_json(&p);
    char *t = pj ? cJSON_PrintUnformatted(pj) : NULL;
    cJSON_Delete(pj);
    return t;
}

/* Runs the job text through the runner on backend bk; what it sent. */
static seen run_job_on(const gt_backend *bk, const char *job)
{
    seen s;
    memset(&s, 0, sizeof s);
    cJSON *j = cJSON_Parse(job);
    CHECK(j != NULL);
    gt_runner r = {.bk = bk, .emit = collect, .emit_ctx = &s};
    CHECK(j && gt_runner_run(&r, j) == 0);
    gt_runner_fini(&r);
    cJSON_Delete(j);
    return s;
}

/* ... on the fake device */
static seen run_job(const char *job) { return run_job_on(&k_fake, job); }

/* Screen shards of one problem back to back share one prepare; a final job
 * of it prepares afresh (the winners validated on new inputs), and so does
 * another problem; every prepare is released by the end. */
static void test_kept_prepare(void)
{
    memset(&g, 0, sizeof g);
    g.base_us = 20;
    seen s;
    memset(&s, 0, sizeof s);
    gt_runner r = {.bk = &k_fake, .emit = collect, .emit_ctx = &s};
    char *ptxt = prob_text(), job[1024];
    gt_problem q = gen_test_prob(128, 16, 64, GT_DT_BF16, GT_DT_BF16);
    cJSON *qj = gt_problem_to_json(&q);
    char *qtxt = qj ? cJSON_PrintUnformatted(qj) : NULL;
    cJSON_Delete(qj);
    CHECK(ptxt && qtxt);
    static const char *const kinds[] = {"screen", "screen", "final", "screen", "screen"};
    static const int want_prepares[] = {1, 1, 2, 3, 4};
    for (int i = 0; ptxt && qtxt && i < 5; i++) {
        snprintf(job, sizeof job,
                 "{\"id\":%d,\"kind\":\"%s\",\"problem\":%s,\"candidates\":[{\"id\":1}],"
                 "\"baseline\":{\"id\":0},\"timing\":{\"min_time_ms\":1,\"repeats\":3,\"warmup\":1}}",
                 10 + i, kinds[i], i == 4 ? qtxt : ptxt);
        cJSON *j = cJSON_Parse(job);
        CHECK(j && gt_runner_run(&r, j) == 0);
        cJSON_Delete(j);
        CHECK_MSG(g.prepares == want_prepares[i], "job %d: %d prepares", i, g.prepares);
    }
    gt_runner_fini(&r);
    CHECK(g.prepares == 4 && g.unprepares == 4);
    cJSON_free(ptxt);
    cJSON_free(qtxt);
}

/* Runs a final job of the baseline and two candidates, `rounds` rounds
 * (ci_width 0: the whole budget; > 0: until every interval is that narrow),
 * with the reference ref_us (0: none); the fake's baseline takes base_us,
 * the first slow of its calls slow_us (alternate: every other call). */
static seen run_final_any(double ref_us, double base_us, int slow, double slow_us, int alternate, int rounds,
                          double ci_width)
{
    memset(&g, 0, sizeof g);
    g.base_us = base_us, g.slow_calls = slow, g.slow_us = slow_us, g.alternate = alternate;
    char job[1024], *ptxt = prob_text();
    char ref[64] = "";
    if (ref_us > 0)
        snprintf(ref, sizeof ref, ",\"baseline_ref_us\":%g", ref_us);
    snprintf(job, sizeof job,
             "{\"id\":5,\"kind\":\"final\",\"problem\":%s,\"candidates\":[{\"id\":1},{\"id\":2}],"
             "\"baseline\":{\"id\":0},\"timing\":{\"min_time_ms\":1,\"repeats\":9,\"warmup\":1,"
             "\"rounds\":%d,\"ci_width\":%g%s}}",
             ptxt ? ptxt : "null", rounds, ci_width, ref);
    cJSON_free(ptxt);
    return run_job(job);
}

static seen run_final_ci(double ref_us, double base_us, int slow, double slow_us, int rounds,
                         double ci_width)
{
    return run_final_any(ref_us, base_us, slow, slow_us, 0, rounds, ci_width);
}

/* A baseline alternating 35 and 20 us, the whole budget of rounds. */
static seen run_final_alt(int rounds) { return run_final_any(0, 20, 0, 35, 1, rounds, 0.02); }

static seen run_final(double ref_us, double base_us, int slow, double slow_us)
{
    return run_final_ci(ref_us, base_us, slow, slow_us, 9, 0);
}

static void test_steady(void)
{
    /* no reference: one set of rounds, medians reported */
    seen s = run_final(0, 20, 0, 0);
    CHECK(s.done_ok && s.results == 3 && g.base_calls == 9 && g.cand_calls == 18);
    CHECK(s.time_of[0] == 20 && s.time_of[1] == 11 && s.time_of[2] == 12 && s.baseline_us == 20);
    /* paired: every round's ratio is 20/11 (20/12), so is the interval */
    CHECK(s.rounds_of[1] == 9 && s.rounds_of[2] == 9 && s.rounds_of[0] == 9);
    CHECK(fabs(s.uplift_of[1] - 20.0 / 11) < 1e-12 && fabs(s.lo_of[1] - 20.0 / 11) < 1e-12 &&
          fabs(s.hi_of[1] - 20.0 / 11) < 1e-12 && fabs(s.uplift_of[2] - 20.0 / 12) < 1e-12);
    CHECK(s.uplift_of[0] == 1 && s.lo_of[0] == 1 && s.hi_of[0] == 1);
    /* within the reference's factor (20 against 17: 1.18x): once */
    s = run_final(17, 20, 0, 0);
    CHECK(s.done_ok && g.base_calls == 9 && s.baseline_us == 20);
    /* four slow rounds of nine do not move the median (no drift), but with
     * 9 rounds the median's interval spans them: unsettled, the rounds run
     * again and the steady second set is reported */
    s = run_final(20, 20, 4, 40);
    CHECK_MSG(s.done_ok && g.base_calls == 18 && s.time_of[0] == 20 && s.hi_of[1] == s.lo_of[1],
              "%d baseline calls", g.base_calls);
}

static void test_drift(void)
{
    /* the first set's baseline at 2x the screen's: the rounds run again, the
     * second set is reported, the candidates' times too */
    seen s = run_final(20, 20, 9, 40);
    CHECK_MSG(s.done_ok && g.base_calls == 18 && g.cand_calls == 36, "%d %d", g.base_calls, g.cand_calls);
    CHECK(s.time_of[0] == 20 && s.baseline_us == 20 && s.time_of[1] == 11 && s.results == 3);
    /* far below it: the same */
    s = run_final(20, 20, 9, 10);
    CHECK(s.done_ok && g.base_calls == 18 && s.baseline_us == 20);
    /* a drift that lasts: twice, never three times, the second set reported
     * (the coordinator then flags it baseline_suspect) */
    s = run_final(20, 20, 100, 40);
    CHECK(s.done_ok && g.base_calls == 18 && s.baseline_us == 40);
}

static void test_stop_rule(void)
{
    /* zero-width intervals from the first interval on: the rounds stop at
     * GT_PAIRED_MIN_ROUNDS, not at the budget of 40 */
    seen s = run_final_ci(0, 20, 0, 0, 40, 0.02);
    CHECK_MSG(s.done_ok && g.base_calls == GT_PAIRED_MIN_ROUNDS && s.rounds_of[1] == GT_PAIRED_MIN_ROUNDS,
              "%d rounds", g.base_calls);
    /* a baseline disturbed for part of the rounds (its first 7 calls at 35
     * us, later 20): the intervals stay wide while the slow rounds are inside
     * them and the budget ends the set unsettled (wider than
     * GT_FINAL_UNSETTLED_WIDTH): the rounds run again; the second set is
     * steady, stops at GT_PAIRED_MIN_ROUNDS and is reported */
    s = run_final_ci(0, 20, 7, 35, 12, 0.02);
    CHECK_MSG(s.done_ok && g.base_calls == 12 + GT_PAIRED_MIN_ROUNDS && s.rounds_of[1] == GT_PAIRED_MIN_ROUNDS,
              "%d baseline calls, %d rounds reported", g.base_calls, s.rounds_of[1]);
    CHECK(fabs(s.uplift_of[1] - 20.0 / 11) < 1e-12 && s.hi_of[1] == s.lo_of[1] && s.baseline_us == 20);
    /* a baseline bimodal all along (35 and 20 us in turn): both sets end
     * unsettled, never a third; the first is kept unless the second is
     * narrower, so what is reported is wide and says so */
    s = run_final_alt(12);
    CHECK_MSG(s.done_ok && g.base_calls == 24 && s.rounds_of[1] == 12, "%d baseline calls, %d rounds",
              g.base_calls, s.rounds_of[1]);
    CHECK(s.lo_of[1] <= s.uplift_of[1] && s.uplift_of[1] <= s.hi_of[1] &&
          (s.hi_of[1] - s.lo_of[1]) / s.uplift_of[1] > GT_FINAL_UNSETTLED_WIDTH);
    /* the same budget with every interval narrow at its end: one set */
    s = run_final_ci(0, 20, 0, 0, 12, 0);
    CHECK(s.done_ok && g.base_calls == 12);
}

static void test_gpu_state(void)
{
    /* without state(): nothing */
    seen s = run_final(0, 20, 0, 0);
    CHECK(s.done_ok && s.gpu_of[0].samples == 0 && s.gpu_of[1].samples == 0);
    /* 9 rounds of 3 timings, each followed by a reading */
    k_fake.state = fake_state;
    s = run_final(0, 20, 0, 0);
    CHECK(s.done_ok && g.state_calls == 27);
    for (int i = 0; i < 3; i++) {
        const gt_gpu_state *q = &s.gpu_of[i];
        CHECK_MSG(q->samples == 27 && q->rounds == 9, "entry %d: %d samples %d rounds", i, q->samples,
                  q->rounds);
        CHECK(q->sm_clock_min_mhz == 1000 && q->sm_clock_median_mhz == 1013 && q->power_max_w == 126 &&
              q->temp_max_c == 60);
        /* rounds 0, 3 and 6 capped (twice each, counted once); sync boost is no cap */
        CHECK_MSG(fabs(q->throttled_frac - 3.0 / 9) < 1e-12, "throttled %g", q->throttled_frac);
    }
    /* the drift's second set of rounds is what is reported, its readings only */
    s = run_final(20, 20, 9, 40);
    CHECK(s.done_ok && g.state_calls == 54 && s.gpu_of[1].samples == 27 && s.gpu_of[1].rounds == 9 &&
          s.gpu_of[1].sm_clock_min_mhz == 1027);
    /* reads that fail: asked once, nothing recorded, the rounds unharmed */
    k_fake.state = fake_state_fails;
    s = run_final(0, 20, 0, 0);
    CHECK(s.done_ok && g.state_calls == 1 && s.gpu_of[1].samples == 0 && s.rounds_of[1] == 9);
    k_fake.state = NULL;
}

/* A screen job whose default cannot be built (the fake builds only configs
 * with an id: OpenBLAS without sbgemm, cuBLASLt's heuristic refusing): the
 * candidates are still timed, and the default is reported as an invalid
 * baseline result with the reason, for the coordinator's substitute
 * (server/store_substitute.c); no baseline timing goes out. */
static void test_screen_failed_default(void)
{
    memset(&g, 0, sizeof g);
    char job[1024], *ptxt = prob_text();
    snprintf(job, sizeof job,
             "{\"id\":6,\"kind\":\"screen\",\"problem\":%s,\"candidates\":[{\"id\":1},{\"id\":2}],"
             "\"baseline\":{\"lib\":\"openblas\"},\"timing\":{\"min_time_ms\":1,\"repeats\":3,\"warmup\":1}}",
             ptxt ? ptxt : "null");
    cJSON_free(ptxt);
    seen s = run_job(job);
    CHECK_MSG(s.done_ok && s.results == 2 && s.time_of[1] == 11 && s.time_of[2] == 12, "%d results", s.results);
    CHECK_MSG(s.bad_baselines == 1 && !strcmp(s.bad_reason, "build: no id"), "%d: %s", s.bad_baselines,
              s.bad_reason);
    CHECK(s.baseline_us == 0 && g.base_calls == 0);
}

/* A screen job of the default and three candidates timed with the fake's
 * default at base_us, the candidates at 120, 400 and 90 us. */
static seen run_screen_prune(double base_us)
{
    memset(&g, 0, sizeof g);
    g.base_us = base_us;
    g.cand_us[1] = 120, g.cand_us[2] = 400, g.cand_us[3] = 90;
    char job[1024], *ptxt = prob_text();
    snprintf(job, sizeof job,
             "{\"id\":7,\"kind\":\"screen\",\"problem\":%s,\"candidates\":[{\"id\":1},{\"id\":2},"
             "{\"id\":3}],\"baseline\":{\"id\":0},\"timing\":{\"min_time_ms\":1,\"repeats\":3,\"warmup\":1}}",
             ptxt ? ptxt : "null");
    cJSON_free(ptxt);
    return run_job(job);
}

static void test_screen_prune(void)
{
    /* default at 100 us: every candidate may stop past 1.5x the best so far (the default's
     * 100 us: 120 does not beat it, 400 is pruned); the pruned one is still a valid result */
    seen s = run_screen_prune(100);
    CHECK_MSG(s.done_ok && s.results == 3 && s.baseline_us == 100, "%d results", s.results);
    for (int i = 1; i <= 3; i++)
        CHECK_MSG(g.prune_seen[i] == 100 * GT_SCREEN_PRUNE_RATIO, "candidate %d: %g", i, g.prune_seen[i]);
    CHECK(s.time_of[2] == 400 && !strncmp(s.reason_of[2], "pruned: 400 us in calibration", 29));
    CHECK_MSG(s.reason_of[1][0] == 0 && s.reason_of[3][0] == 0, "%s / %s", s.reason_of[1], s.reason_of[3]);
    CHECK(s.time_of[1] == 120 && s.time_of[3] == 90);
    /* default at 60 us, candidate 1 at 120: the best stays 60 (bound 90, so 120 and 400
     * are both pruned) */
    s = run_screen_prune(60);
    CHECK(g.prune_seen[3] == 60 * GT_SCREEN_PRUNE_RATIO && !strncmp(s.reason_of[2], "pruned:", 7) &&
          !strncmp(s.reason_of[1], "pruned:", 7));
    /* default at 20 us (under GT_SCREEN_PRUNE_MIN_US: one short call's time is mostly
     * launch latency): nothing is stopped early */
    s = run_screen_prune(20);
    for (int i = 1; i <= 3; i++)
        CHECK_MSG(g.prune_seen[i] == 0, "candidate %d: %g", i, g.prune_seen[i]);
    CHECK(s.results == 3 && s.reason_of[2][0] == 0 && s.time_of[2] == 400);
}

/* A final job of the baseline (20 us plain) and two candidates (11, 12 us)
 * with the screens' reference ref_us, on a backend that times graphs, whose
 * graph calls take the plain time / div (config fail_id: cannot be
 * captured). */
static seen run_final_graphs_as(double ref_us, double div, int fail_id, const char *final_launch)
{
    memset(&g, 0, sizeof g);
    g.base_us = 20, g.graph_div = div, g.graph_fail_id = fail_id;
    gt_backend bk = k_fake;
    bk.graphs = 1;
    char job[1024], *ptxt = prob_text();
    snprintf(job, sizeof job,
             "{\"id\":6,\"kind\":\"final\",\"problem\":%s,\"candidates\":[{\"id\":1},{\"id\":2}],"
             "\"baseline\":{\"id\":0},\"timing\":{\"min_time_ms\":1,\"repeats\":9,\"warmup\":1,"
             "\"rounds\":9,\"ci_width\":0,\"baseline_ref_us\":%g%s%s%s}}",
             ptxt ? ptxt : "null", ref_us, final_launch ? ",\"final_launch\":\"" : "",
             final_launch ? final_launch : "", final_launch ? "\"" : "");
    cJSON_free(ptxt);
    return run_job_on(&bk, job);
}

static seen run_final_graphs(double ref_us, double div, int fail_id)
{
    return run_final_graphs_as(ref_us, div, fail_id, NULL);
}

static void test_launch_bound(void)
{
    /* plain 2.5x the graph time: launch-bound. Each entry probed plain,
     * graph, plain, then 9 rounds of 3 entries as graphs; the times reported
     * are the graphs'; the screens' 20 us against the rounds' 8 us is no
     * drift: no second set */
    seen s = run_final_graphs(20, 2.5, 0);
    CHECK_MSG(s.done_ok && s.results == 3 && g.graph_calls == 3 + 27 && g.base_calls == 3 + 9,
              "%d graph calls, %d baseline calls", g.graph_calls, g.base_calls);
    CHECK(s.graph_of[0] && s.graph_of[1] && s.graph_of[2]);
    CHECK(s.time_of[0] == 8 && fabs(s.time_of[1] - 4.4) < 1e-12 && fabs(s.uplift_of[1] - 20.0 / 11) < 1e-12);
    CHECK_MSG(s.baseline_us == 0, "a graph-timed baseline went out as the job's baseline: %g", s.baseline_us);
    /* on the result's wire form too */
    gt_result r = {.config = cJSON_CreateObject(), .valid = 1, .time_us = 8, .rel_err = 0, .graph = 1}, back;
    cJSON *rj = gt_proto_result_to_json(&r);
    char err[128];
    CHECK(rj && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rj, "launch")), "graph"));
    CHECK(rj && gt_proto_result_from_json(rj, &back, err, sizeof err) == 0 && back.graph == 1);
    cJSON_ReplaceItemInObjectCaseSensitive(rj, "launch", cJSON_CreateString("plain"));
    CHECK_MSG(rj && gt_proto_result_from_json(rj, &back, err, sizeof err) == -1 && strstr(err, "launch"), "%s",
              err);
    cJSON_Delete(rj);
    cJSON_Delete(r.config);
    /* within the ratio (1.03 < 1.05): plain rounds, only the probes as graphs */
    s = run_final_graphs(20, 1.03, 0);
    CHECK_MSG(s.done_ok && g.graph_calls == 3 && !s.graph_of[0] && !s.graph_of[1] && s.time_of[0] == 20 &&
                  s.baseline_us == 20,
              "%d graph calls", g.graph_calls);
    /* launch-bound, but a candidate cannot be captured: every entry plain */
    s = run_final_graphs(20, 2.5, 2);
    CHECK(s.done_ok && !s.graph_of[0] && !s.graph_of[1] && s.time_of[0] == 20 && s.time_of[2] == 12);
    /* the first plain probe slow (a cold first call, 3x): the second plain
     * probe is the one compared, so not launch-bound */
    {
        char job[1024], *ptxt = prob_text();
        memset(&g, 0, sizeof g);
        g.base_us = 20, g.graph_div = 1.0, g.slow_calls = 1, g.slow_us = 60;
        gt_backend bk = k_fake;
        bk.graphs = 1;
        snprintf(job, sizeof job,
                 "{\"id\":7,\"kind\":\"final\",\"problem\":%s,\"candidates\":[{\"id\":1}],"
                 "\"baseline\":{\"id\":0},\"timing\":{\"min_time_ms\":1,\"repeats\":9,\"warmup\":1,"
                 "\"rounds\":9,\"ci_width\":0}}",
                 ptxt ? ptxt : "null");
        cJSON_free(ptxt);
        s = run_job_on(&bk, job);
        CHECK_MSG(s.done_ok && !s.graph_of[0] && !s.graph_of[1] && s.time_of[0] == 20 && g.graph_calls == 2,
                  "%d graph calls", g.graph_calls);
    }
    /* a default the screens timed at 200 us or more: not probed */
    s = run_final_graphs(250, 2.5, 0);
    CHECK(s.done_ok && g.graph_calls == 0 && !s.graph_of[0] && s.time_of[0] == 20);
    /* a verify run's final says how (final_launch): no probes. "plain" on
     * a launch-bound GEMM stays plain; "graph" on one that is not is timed
     * as graphs all the same, its results marked */
    s = run_final_graphs_as(20, 2.5, 0, "plain");
    CHECK(s.done_ok && g.graph_calls == 0 && !s.graph_of[0] && s.time_of[0] == 20);
    s = run_final_graphs_as(20, 1.0, 0, "graph");
    CHECK_MSG(s.done_ok && g.graph_calls == 27 && s.graph_of[0] && s.graph_of[1] && s.baseline_us == 0,
              "%d graph calls", g.graph_calls);
    /* a backend without graphs is never probed */
    s = run_final(0, 20, 0, 0);
    CHECK(s.done_ok && g.graph_calls == 0 && !s.graph_of[1]);
}

int main(void)
{
    gt_log_set_level(GT_LOG_ERR);
    RUN(test_launch_bound);
    RUN(test_screen_prune);
    RUN(test_kept_prepare);
    RUN(test_screen_failed_default);
    RUN(test_steady);
    RUN(test_gpu_state);
    RUN(test_stop_rule);
    RUN(test_drift);
    return gt_test_done();
}
