/* cli_runs.c: the CLI commands that read a run (gt_cli.h): `status` (the
 * runs, one run's snapshot, a live bar on a terminal, --wait polling through
 * coordinator restarts), `results` (the best configuration per problem,
 * every result as a table or as CSV; a verify run's stored uplifts and
 * verdicts too) and `verify-run` (POST /v1/runs/{id}/verify, waited for as
 * status --wait waits, then its verdicts). */
#include "gt_cli.h"
#include "gt_policy.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_RUN_FAILED 2   /* status: the run failed or was cancelled */
#define LIVE_INTERVAL_S 1   /* terminal progress bar refresh */
#define PIPE_INTERVAL_S 5   /* status --wait line interval when not on a terminal */
#define MAX_POLL_ERRORS 10  /* consecutive unreachable polls before giving up */
#define EXIT_VERIFY_ERROR 2 /* verify-run: an error (1 is a GEMM that failed) */

/* ---- status ---- */

/* The newest runs (the API's page: --limit, --state; the coordinator checks both). */
static int status_list(const gt_cli *c, const char *limit, const char *state)
{
    cJSON *j = NULL;
    char path[256];
    /* only digits and letters reach the URL; the coordinator checks the values */
    if ((limit && (!*limit || strspn(limit, "0123456789") != strlen(limit))) ||
        (state && (!*state || strspn(state, "abcdefghijklmnopqrstuvwxyz") != strlen(state)))) {
        gt_cli_usage_error(c, "status: --limit takes a number, --state a state name");
        return GT_CLI_EXIT_USAGE;
    }
    int n = snprintf(path, sizeof path, "/v1/runs?limit=%s%s%s", limit ? limit : "100",
                     state ? "&state=" : "", state ? state : "");
    if (n < 0 || (size_t)n >= sizeof path) {
        gt_cli_usage_error(c, "status: --limit or --state too long");
        return GT_CLI_EXIT_USAGE;
    }
    if (gt_cli_get_json(c, path, &j) != 0)
        return GT_CLI_EXIT_ERR;
    static const char *const head[] = {"ID", "NAME", "STATE", "PROGRESS", "PROBLEMS", "BACKEND",
                                       "DEVICE"};
    gt_cli_table t = {.ncols = 7, .head = head, .align = "rlllrll"};
    const cJSON *runs = gt_cli_jget(j, "runs"), *r;
    cJSON_ArrayForEach(r, runs)
    {
        char b[32];
        gt_cli_table_cell(&t, "%.0f", gt_cli_jnum_or(r, "id", 0));
        gt_cli_table_cell(&t, "%s", gt_cli_jstr(r, "name", ""));
        gt_cli_table_cell(&t, "%s", gt_cli_jstr(r, "state", "?"));
        gt_cli_table_cell(&t, "%s", gt_cli_fnum(b, sizeof b, r, "progress", "%.1f%%", 100.0));
        gt_cli_table_cell(&t, "%.0f/%.0f", gt_cli_jnum_or(r, "problems_done", 0),
                          gt_cli_jnum_or(r, "problems", 0));
        gt_cli_table_cell(&t, "%s", gt_cli_jstr(r, "backend", "-"));
        gt_cli_table_cell(&t, "%s", gt_cli_jstr(r, "device_model", "-"));
    }
    int rc = gt_cli_table_print(&t);
    gt_cli_table_free(&t);
    cJSON_Delete(j);
    return rc == 0 ? 0 : GT_CLI_EXIT_ERR;
}

static int state_final(const char *s)
{
    return strcmp(s, "done") == 0 || strcmp(s, "cancelled") == 0 || strcmp(s, "failed") == 0;
}

/* Numbers of a run snapshot shown by both the bar and the plain line. */
typedef struct snap {
    const char *state, *name;
    double progress;
    double cand_done, cand_total, prob_done, prob_total, prob_failed, prob_cancelled;
    char uplift[32], eta[32], elapsed[32];
} snap;

static void take_snap(const cJSON *j, snap *s)
{
    const cJSON *cands = gt_cli_jget(j, "candidates"), *probs = gt_cli_jget(j, "problems");
    s->state = gt_cli_jstr(j, "state", "?");
    s->name = gt_cli_jstr(j, "name", "");
    s->progress = gt_cli_jnum_or(j, "progress", 0);
    if (s->progress < 0)
        s->progress = 0;
    if (s->progress > 1)
        s->progress = 1;
    s->cand_done = gt_cli_jnum_or(cands, "done", 0);
    s->cand_total = gt_cli_jnum_or(cands, "total", 0);
    s->prob_done = gt_cli_jnum_or(probs, "done", 0);
    s->prob_total = gt_cli_jnum_or(probs, "total", 0);
    s->prob_failed = gt_cli_jnum_or(probs, "failed", 0);
    s->prob_cancelled = gt_cli_jnum_or(probs, "cancelled", 0);
    double v;
    if (gt_cli_jnum(j, "weighted_uplift", &v))
        snprintf(s->uplift, sizeof s->uplift, "%.3fx", v);
    else
        snprintf(s->uplift, sizeof s->uplift, "-");
    if (gt_cli_jnum(j, "eta_s", &v))
        gt_cli_fmt_dur(s->eta, sizeof s->eta, v);
    else
        snprintf(s->eta, sizeof s->eta, "?");
    if (gt_cli_jnum(j, "elapsed_s", &v))
        gt_cli_fmt_dur(s->elapsed, sizeof s->elapsed, v);
    else
        snprintf(s->elapsed, sizeof s->elapsed, "?");
}

static void print_line(int64_t id, const snap *s)
{
    printf("run %" PRId64 " (%s): %s %.1f%%, candidates %.0f/%.0f, problems %.0f/%.0f", id,
           s->name, s->state, s->progress * 100, s->cand_done, s->cand_total, s->prob_done,
           s->prob_total);
    if (s->prob_failed > 0 && s->prob_cancelled > 0)
        printf(" (%.0f failed, %.0f cancelled)", s->prob_failed, s->prob_cancelled);
    else if (s->prob_failed > 0)
        printf(" (%.0f failed)", s->prob_failed);
    else if (s->prob_cancelled > 0)
        printf(" (%.0f cancelled)", s->prob_cancelled);
    printf(", speed-up %s, elapsed %s", s->uplift, s->elapsed);
    if (!state_final(s->state))
        printf(", eta %s", s->eta);
    putchar('\n');
    fflush(stdout);
}

static void print_bar(const snap *s)
{
    enum { W = 30 };
    char bar[W + 1];
    int fill = (int)(s->progress * W + 0.5);
    for (int i = 0; i < W; i++)
        bar[i] = i < fill ? '#' : '-';
    bar[W] = '\0';
    /* \r rewrites the line in place; \033[K clears what a longer line left. */
    printf("\r[%s] %5.1f%%  cand %.0f/%.0f  prob %.0f/%.0f  speed-up %s  ETA %s  %s\033[K", bar,
           s->progress * 100, s->cand_done, s->cand_total, s->prob_done, s->prob_total, s->uplift,
           state_final(s->state) ? "-" : s->eta, s->state);
    fflush(stdout);
}

static void sleep_s(int s)
{
    struct timespec ts = {.tv_sec = s, .tv_nsec = 0};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int status_run(const gt_cli *c, int64_t id, int wait)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/runs/%" PRId64, id);
    int live = isatty(STDOUT_FILENO);
    int errors = 0, shown = 0;
    for (;;) {
        cJSON *j = NULL;
        int rc = gt_cli_get_json(c, path, &j);
        if (rc == GT_CLI_API_TRANSPORT && (live || wait) && shown && ++errors <= MAX_POLL_ERRORS) {
            /* A coordinator restart should not end a long wait. */
            if (live)
                putchar('\n');
            gt_cli_errorf("retrying (%d/%d)", errors, MAX_POLL_ERRORS);
            sleep_s(live ? LIVE_INTERVAL_S : PIPE_INTERVAL_S);
            continue;
        }
        if (rc != 0) {
            if (live && shown)
                putchar('\n');
            return GT_CLI_EXIT_ERR;
        }
        errors = 0;
        shown = 1;
        snap s;
        take_snap(j, &s);
        int fin = state_final(s.state);
        if (live) {
            print_bar(&s);
            if (fin) {
                putchar('\n');
                print_line(id, &s);
            }
        } else {
            print_line(id, &s);
        }
        int code = strcmp(s.state, "done") == 0 ? 0 : fin ? EXIT_RUN_FAILED : 0;
        const char *err = gt_cli_jstr(j, "error", NULL);
        if (fin && code && err)
            gt_cli_errorf("run %" PRId64 ": %s", id, err);
        cJSON_Delete(j);
        if (fin || (!live && !wait))
            return code;
        sleep_s(live ? LIVE_INTERVAL_S : PIPE_INTERVAL_S);
    }
}

int gt_cli_cmd_status(gt_cli *c, int argc, char **argv)
{
    const char *run = NULL;
    size_t nrun;
    int wait = 0;
    const char *limit = NULL, *state = NULL;
    const gt_cli_opt opts[] = {{"--wait", NULL, &wait},
                               {"--limit", &limit, NULL},
                               {"--state", &state, NULL},
                               {NULL, NULL, NULL}};
    const gt_cli_cmd cmd = {"status", opts, 1, "status: one RUN only"};
    if (gt_cli_parse(c, &cmd, argc, argv, &run, &nrun) != 0)
        return GT_CLI_EXIT_USAGE;
    if (!run) {
        if (wait) {
            gt_cli_usage_error(c, "status: --wait needs a RUN");
            return GT_CLI_EXIT_USAGE;
        }
        return status_list(c, limit, state);
    }
    if (limit || state) {
        gt_cli_usage_error(c, "status: --limit and --state list runs: give no RUN");
        return GT_CLI_EXIT_USAGE;
    }
    int64_t id;
    if (gt_cli_run_id(c, run, &id) != 0)
        return GT_CLI_EXIT_USAGE;
    return status_run(c, id, wait);
}

/* ---- results ---- */

static char *config_text(const cJSON *o)
{
    const cJSON *cfg = gt_cli_jget(o, "config");
    if (!cfg || cJSON_IsNull(cfg))
        return NULL;
    return cJSON_PrintUnformatted(cfg);
}

/* Entries with a tuned result but no baseline time (its build failed on
 * the worker, e.g. no OpenBLAS or no bf16 GEMM in it): their uplift is
 * unknown, and the reason is the failed baseline row of GET
 * /v1/runs/{id}/results. One line per such GEMM; nothing when none. */
static void print_missing_baselines(const gt_cli *c, int64_t id, const cJSON *best)
{
    const cJSON *b, *r;
    int n = 0;
    cJSON_ArrayForEach(b, best)
    {
        const cJSON *cfg = gt_cli_jget(b, "config");
        double bu;
        n += cfg && !cJSON_IsNull(cfg) && !gt_cli_jnum(b, "baseline_us", &bu);
    }
    if (!n)
        return;
    char path[64];
    cJSON *j = NULL;
    snprintf(path, sizeof path, "/v1/runs/%" PRId64 "/results", id);
    if (gt_cli_get_json(c, path, &j) != 0)
        return; /* the table is printed; the reasons are only a note */
    printf("%d GEMM(s) without a baseline time (uplift unknown):\n", n);
    cJSON_ArrayForEach(b, best)
    {
        const cJSON *cfg = gt_cli_jget(b, "config");
        double bu, pid, rp;
        if (!cfg || cJSON_IsNull(cfg) || gt_cli_jnum(b, "baseline_us", &bu) ||
            !gt_cli_jnum(b, "problem_id", &pid))
            continue;
        const char *why = NULL;
        /* the latest failed baseline row of this GEMM: the final phase's
         * when there is one (results are listed in the order they came) */
        cJSON_ArrayForEach(r, gt_cli_jget(j, "results"))
            if (gt_cli_jnum(r, "problem_id", &rp) && rp == pid &&
                cJSON_IsTrue(gt_cli_jget(r, "baseline")) && !cJSON_IsTrue(gt_cli_jget(r, "valid")))
                why = gt_cli_jstr(r, "reason", why);
        printf("  %s: %s\n", gt_cli_jstr(b, "label", "?"),
               why ? why : "the baseline was not timed (see the workers' logs)");
    }
    cJSON_Delete(j);
}

static int is_substitute(const cJSON *b)
{
    return !strcmp(gt_cli_jstr(b, "baseline_kind", ""), "substitute");
}

/* The footnote of the entries marked *: their uplift is against a
 * substitute baseline (the default could not run: the API's baseline_kind
 * "substitute"), left out of the headline figures; one line per GEMM names
 * the substitute and the default's reason. */
static void print_substitutes(const cJSON *run, int n)
{
    char f[32];
    printf("%d GEMM(s) marked *: uplift against a substitute baseline (the default could not run), "
           "left out of the two figures above; their FLOP-weighted uplift: %s\n",
           n, gt_cli_fnum(f, sizeof f, run, "substitute_flop_weighted_uplift", "%.3fx", 1.0));
    const cJSON *b;
    cJSON_ArrayForEach(b, gt_cli_jget(run, "best"))
    {
        if (!is_substitute(b))
            continue;
        const cJSON *bc = gt_cli_jget(b, "baseline_config");
        char *cfg = bc && !cJSON_IsNull(bc) ? cJSON_PrintUnformatted(bc) : NULL;
        printf("  * %s: substitute %s; default: %s\n", gt_cli_jstr(b, "label", "?"), cfg ? cfg : "?",
               gt_cli_jstr(b, "baseline_reason", "reason not reported"));
        cJSON_free(cfg);
    }
}

static int results_best(const gt_cli *c, int64_t id)
{
    char path[64];
    cJSON *j = NULL;
    snprintf(path, sizeof path, "/v1/runs/%" PRId64, id);
    if (gt_cli_get_json(c, path, &j) != 0)
        return GT_CLI_EXIT_ERR;
    static const char *const head[] = {"PROBLEM", "CALLS",   "WEIGHT%", "BASELINE_US", "TUNED_US",
                                       "UPLIFT",  "95% CI (ROUNDS)", "TFLOP/S", "CONFIG"};
    /* a verify run (POST /v1/runs/{id}/verify): UPLIFT is the re-timed one,
     * beside the verified run's and the verdict */
    static const char *const head_v[] = {"PROBLEM", "CALLS",  "WEIGHT%", "BASELINE_US", "TUNED_US",
                                         "UPLIFT",  "STORED", "DIFF",    "VERIFY",
                                         "95% CI (ROUNDS)",   "TFLOP/S", "CONFIG"};
    double verifies = 0;
    int is_verify = gt_cli_jnum(j, "verifies", &verifies);
    gt_cli_table t = {.ncols = is_verify ? 12 : 9, .head = is_verify ? head_v : head,
                      .align = is_verify ? "lrrrrrrrllrl" : "lrrrrrlrl"};
    const cJSON *best = gt_cli_jget(j, "best"), *b;
    int suspect = 0, nogain = 0, subst = 0, graphs = 0;
    cJSON_ArrayForEach(b, best)
    {
        char b1[32], b2[32], b3[32], b4[32], b5[32];
        int sus = cJSON_IsTrue(gt_cli_jget(b, "baseline_suspect"));
        suspect += sus;
        int sub = is_substitute(b);
        subst += sub;
        char *cfg = config_text(b);
        gt_cli_table_cell(&t, "%s", gt_cli_jstr(b, "label", "?"));
        gt_cli_table_cell(&t, "%.0f", gt_cli_jnum_or(b, "call_count", 0));
        gt_cli_table_cell(&t, "%s", gt_cli_fnum(b1, sizeof b1, b, "weight", "%.1f", 100.0));
        gt_cli_table_cell(&t, "%s", gt_cli_fnum(b2, sizeof b2, b, "baseline_us", "%.2f", 1.0));
        gt_cli_table_cell(&t, "%s", gt_cli_fnum(b3, sizeof b3, b, "time_us", "%.2f", 1.0));
        int none = cJSON_IsFalse(gt_cli_jget(b, "significant"));
        nogain += none;
        int graph = !strcmp(gt_cli_jstr(b, "launch", ""), "graph");
        graphs += graph;
        gt_cli_table_cell(&t, "%s%s%s%s%s", gt_cli_fnum(b4, sizeof b4, b, "uplift", "%.3fx", 1.0), sus ? "!" : "",
                          none ? "=" : "", sub ? "*" : "", graph ? "#" : "");
        if (is_verify) {
            char b6[32], b7[32];
            gt_cli_table_cell(&t, "%s", gt_cli_fnum(b6, sizeof b6, b, "stored_uplift", "%.3fx", 1.0));
            gt_cli_table_cell(&t, "%s", gt_cli_fnum(b7, sizeof b7, b, "diff", "%+.1f%%", 100.0));
            const char *v = gt_cli_jstr(b, "verify", NULL);
            gt_cli_table_cell(&t, "%s", !v ? "-" : strcmp(v, "pass") ? "FAIL" : "pass");
        }
        double lo, hi, rounds;
        if (gt_cli_jnum(b, "uplift_lo", &lo) && gt_cli_jnum(b, "uplift_hi", &hi) &&
            gt_cli_jnum(b, "rounds", &rounds))
            gt_cli_table_cell(&t, "%.3f-%.3f (%.0f)", lo, hi, rounds);
        else
            gt_cli_table_cell(&t, "-");
        gt_cli_table_cell(&t, "%s", gt_cli_fnum(b5, sizeof b5, b, "tflops", "%.2f", 1.0));
        if (cfg)
            gt_cli_table_cell(&t, "%s", cfg);
        else
            gt_cli_table_cell(&t, "- (%s)", gt_cli_jstr(b, "state", "pending"));
        cJSON_free(cfg);
    }
    int rc = gt_cli_table_print(&t);
    gt_cli_table_free(&t);
    char u[32], f[32];
    /* the API's weighted_uplift is the workload's speed-up (calls-weighted time), not a
     * FLOP-weighted mean: named as `gemmtune report` names both */
    printf("workload speed-up: %s (sum calls*default / sum calls*tuned)\n"
           "FLOP-weighted uplift: %s\n",
           gt_cli_fnum(u, sizeof u, j, "weighted_uplift", "%.3fx", 1.0),
           gt_cli_fnum(f, sizeof f, j, "flop_weighted_uplift", "%.3fx", 1.0));
    if (is_verify) {
        const cJSON *vs = gt_cli_jget(j, "verify");
        printf("verify of run %.0f: %.0f passed, %.0f failed (tolerance %g%%)\n", verifies,
               gt_cli_jnum_or(vs, "passed", 0), gt_cli_jnum_or(vs, "failed", 0),
               gt_cli_jnum_or(vs, "tolerance", 0) * 100);
    }
    if (nogain)
        printf("%d GEMM(s) marked =: no significant gain (no finalist's interval lay above %.2f): the default "
               "(or its substitute, *) stays\n",
               nogain, GT_MIN_GAIN);
    if (suspect)
        printf("%d GEMM(s) marked !: the final phase timed the baseline more than %.2fx away from its screen "
               "jobs (baseline_drift), also when re-timed: that uplift is not to be trusted; tune them again\n",
               suspect, GT_BASELINE_DRIFT_MAX);
    if (graphs)
        printf("%d GEMM(s) marked #: launch-bound (a plain call took over %.2fx its time in a CUDA graph): "
               "the final timed them as graphs, the kernels' own times; gemmtune verify does the same\n",
               graphs, GT_LAUNCH_BOUND_RATIO);
    if (subst)
        print_substitutes(j, subst);
    print_missing_baselines(c, id, best);
    cJSON_Delete(j);
    return rc == 0 ? 0 : GT_CLI_EXIT_ERR;
}

static int results_all(const gt_cli *c, int64_t id)
{
    char path[64];
    cJSON *j = NULL;
    snprintf(path, sizeof path, "/v1/runs/%" PRId64 "/results", id);
    if (gt_cli_get_json(c, path, &j) != 0)
        return GT_CLI_EXIT_ERR;
    static const char *const head[] = {"PROBLEM", "PHASE",  "BASE",   "TIME_US", "SPREAD%", "TFLOP/S",
                                       "REL_ERR", "VALID",  "DEVICE", "WORKER",  "CONFIG"};
    gt_cli_table t = {.ncols = 11, .head = head, .align = "lllrrrrllrl"};
    const cJSON *res = gt_cli_jget(j, "results"), *r;
    cJSON_ArrayForEach(r, res)
    {
        char b1[32], b2[32], b3[32], b4[32], b5[32];
        char *cfg = config_text(r);
        int valid = cJSON_IsTrue(gt_cli_jget(r, "valid"));
        const char *reason = gt_cli_jstr(r, "reason", NULL);
        gt_cli_table_cell(&t, "%s", gt_cli_jstr(r, "label", "?"));
        gt_cli_table_cell(&t, "%s", gt_cli_jstr(r, "phase", "?"));
        gt_cli_table_cell(&t, "%s", cJSON_IsTrue(gt_cli_jget(r, "baseline")) ? "yes" : "");
        gt_cli_table_cell(&t, "%s", gt_cli_fnum(b1, sizeof b1, r, "time_us", "%.2f", 1.0));
        gt_cli_table_cell(&t, "%s", gt_cli_fnum(b2, sizeof b2, r, "spread", "%.1f", 100.0));
        gt_cli_table_cell(&t, "%s", gt_cli_fnum(b3, sizeof b3, r, "tflops", "%.2f", 1.0));
        gt_cli_table_cell(&t, "%s", gt_cli_fnum(b4, sizeof b4, r, "rel_err", "%.1e", 1.0));
        if (valid)
            gt_cli_table_cell(&t, "yes");
        else
            gt_cli_table_cell(&t, "no: %s", reason ? reason : "?");
        gt_cli_table_cell(&t, "%s", gt_cli_jstr(r, "device_model", "-"));
        gt_cli_table_cell(&t, "%s", gt_cli_fnum(b5, sizeof b5, r, "worker_id", "%.0f", 1.0));
        gt_cli_table_cell(&t, "%s", cfg ? cfg : "-");
        cJSON_free(cfg);
    }
    int rc = gt_cli_table_print(&t);
    gt_cli_table_free(&t);
    cJSON_Delete(j);
    return rc == 0 ? 0 : GT_CLI_EXIT_ERR;
}

static int results_csv(const gt_cli *c, int64_t id)
{
    char path[80];
    snprintf(path, sizeof path, "/v1/runs/%" PRId64 "/results?format=csv", id);
    return gt_cli_get_stdout(c, path, "writing stdout") == 0 ? 0 : GT_CLI_EXIT_ERR;
}

int gt_cli_cmd_results(gt_cli *c, int argc, char **argv)
{
    const char *run = NULL;
    size_t nrun;
    int csv = 0, all = 0;
    const gt_cli_opt opts[] = {{"--csv", NULL, &csv}, {"--all", NULL, &all}, {NULL, NULL, NULL}};
    const gt_cli_cmd cmd = {"results", opts, 1, "results: one RUN only"};
    if (gt_cli_parse(c, &cmd, argc, argv, &run, &nrun) != 0)
        return GT_CLI_EXIT_USAGE;
    int64_t id;
    if (!run) {
        gt_cli_usage_error(c, "results: RUN missing");
        return GT_CLI_EXIT_USAGE;
    }
    if (gt_cli_run_id(c, run, &id) != 0)
        return GT_CLI_EXIT_USAGE;
    /* The CSV endpoint lists every result, so --csv --all is just --csv. */
    if (csv)
        return results_csv(c, id);
    return all ? results_all(c, id) : results_best(c, id);
}


/* ---- verify-run ---- */

/* The verdicts of a finished verify run: one line per GEMM and the
 * summary. 0 when every GEMM passed, 1 when one failed, EXIT_VERIFY_ERROR
 * when the run could not be read or has an entry without a verdict. */
static int verify_run_report(const gt_cli *c, int64_t id)
{
    char path[64];
    cJSON *j = NULL;
    snprintf(path, sizeof path, "/v1/runs/%" PRId64, id);
    if (gt_cli_get_json(c, path, &j) != 0)
        return EXIT_VERIFY_ERROR;
    static const char *const head[] = {"PROBLEM", "STORED", "RETIMED", "DIFF", "RESULT"};
    gt_cli_table t = {.ncols = 5, .head = head, .align = "lrrrl"};
    const cJSON *b;
    int n = 0, passed = 0, failed = 0;
    cJSON_ArrayForEach(b, gt_cli_jget(j, "best"))
    {
        char b1[32], b2[32], b3[32];
        const char *v = gt_cli_jstr(b, "verify", NULL);
        double u;
        n++;
        passed += v && !strcmp(v, "pass");
        failed += v && !strcmp(v, "fail");
        gt_cli_table_cell(&t, "%s", gt_cli_jstr(b, "label", "?"));
        gt_cli_table_cell(&t, "%s", gt_cli_fnum(b1, sizeof b1, b, "stored_uplift", "%.3fx", 1.0));
        gt_cli_table_cell(&t, "%s", gt_cli_fnum(b2, sizeof b2, b, "uplift", "%.3fx", 1.0));
        gt_cli_table_cell(&t, "%s", gt_cli_fnum(b3, sizeof b3, b, "diff", "%+.1f%%", 100.0));
        if (!v)
            gt_cli_table_cell(&t, "- (%s)", gt_cli_jstr(b, "state", "pending"));
        else if (!strcmp(v, "pass"))
            gt_cli_table_cell(&t, "pass");
        else if (gt_cli_jnum(b, "uplift", &u))
            gt_cli_table_cell(&t, "FAIL");
        else /* the winner failed to build or validate there */
            gt_cli_table_cell(&t, "FAIL: not re-timed (%s)", gt_cli_jstr(b, "state", "?"));
    }
    int rc = gt_cli_table_print(&t);
    gt_cli_table_free(&t);
    printf("verified %d GEMM(s): %d passed, %d failed (tolerance %g%%)\n", n, passed, failed,
           gt_cli_jnum_or(gt_cli_jget(j, "verify"), "tolerance", NAN) * 100);
    cJSON_Delete(j);
    if (rc != 0)
        return EXIT_VERIFY_ERROR;
    if (failed)
        return GT_CLI_EXIT_ERR;
    if (n == 0 || passed != n) {
        gt_cli_errorf("verify-run: run %" PRId64 ": %d GEMM(s) without a verdict", id, n - passed);
        return EXIT_VERIFY_ERROR;
    }
    return 0;
}

int gt_cli_cmd_verify_run(gt_cli *c, int argc, char **argv)
{
    const char *run = NULL, *tol_s = NULL;
    size_t nrun;
    const gt_cli_opt opts[] = {{"--tolerance", &tol_s, NULL}, {NULL, NULL, NULL}};
    const gt_cli_cmd cmd = {"verify-run", opts, 1, "verify-run: one RUN only"};
    if (gt_cli_parse(c, &cmd, argc, argv, &run, &nrun) != 0)
        return GT_CLI_EXIT_USAGE;
    int64_t id;
    if (!run) {
        gt_cli_usage_error(c, "verify-run: RUN missing");
        return GT_CLI_EXIT_USAGE;
    }
    if (gt_cli_run_id(c, run, &id) != 0)
        return GT_CLI_EXIT_USAGE;
    char body[64] = "";
    if (tol_s) {
        char *end;
        errno = 0;
        double x = strtod(tol_s, &end);
        if (errno || end == tol_s || *end || !isfinite(x) || x < 0) {
            gt_cli_usage_error(c, "--tolerance: '%s' is not a non-negative number (a fraction:"
                               " 0.02 is 2%%)", tol_s);
            return GT_CLI_EXIT_USAGE;
        }
        snprintf(body, sizeof body, "{\"tolerance\":%.17g}", x);
    }
    char path[64];
    snprintf(path, sizeof path, "/v1/runs/%" PRId64 "/verify", id);
    gt_httpc_resp resp;
    cJSON *a = NULL;
    if (gt_cli_api(c, "POST", path, body[0] ? body : NULL, strlen(body), &resp, &a) != 0)
        return EXIT_VERIFY_ERROR;
    gt_httpc_resp_free(&resp);
    double vid;
    if (!gt_cli_jnum(a, "id", &vid) || vid < 1) {
        gt_cli_errorf("verify-run: the server's answer names no run id");
        cJSON_Delete(a);
        return EXIT_VERIFY_ERROR;
    }
    printf("run %.0f: verify of run %" PRId64 ", %.0f GEMM(s) to re-time", vid, id,
           gt_cli_jnum_or(a, "problems", 0));
    double skipped = gt_cli_jnum_or(a, "skipped", 0);
    if (skipped > 0)
        printf(" (%.0f without a tuned winner skipped)", skipped);
    printf(", tolerance %g%%\n", gt_cli_jnum_or(a, "tolerance", NAN) * 100);
    fflush(stdout);
    cJSON_Delete(a);
    /* status --wait's loop: a bar on a terminal, a line every few seconds
     * otherwise, through coordinator restarts */
    if (status_run(c, (int64_t)vid, 1) != 0)
        return EXIT_VERIFY_ERROR;
    return verify_run_report(c, (int64_t)vid);
}
