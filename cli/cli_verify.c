/* cli_verify.c: `gemmtune verify EXPORT.db`: re-times every best entry of
 * an export against its baseline on this machine, in this fresh process,
 * with the paired, interleaved rounds the final phase used
 * (common/gt_paired.h through worker/gt_bk_paired.h: one implementation),
 * and says per GEMM whether the stored uplift holds within a tolerance.
 *
 * Each entry is timed by the worker's own backend of its name (library
 * gt_bk: cpu, and cuda in CUDA builds: the same kernel generator, NVRTC and
 * compiler caches, cuBLASLt mapping, validation and timer the tuning used),
 * the winner against the baseline configuration the final phase timed it
 * with (cuda: cuBLASLt's heuristic default). An entry this machine cannot
 * time (its backend not built in, no such device, another device model) is
 * refused with the reason. Exit status: 0 all passed, 1 any failed or
 * refused (or an error), 2 usage error.
 *
 * --against B.db compares two exports instead (e.g. the same workload tuned
 * twice, or on two machines of one model): each GEMM's winner in EXPORT.db
 * is timed in the same paired rounds as its winner in B.db, which takes the
 * baseline's place, and passes when their ratio (B's time / EXPORT's) is
 * within the tolerance of 1. Absolute times of long GEMMs move by more than
 * 10 % between processes on a power-capped H100; paired rounds in one
 * process put both winners under the same clocks. */
#include "gt_cli.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_bk_paired.h"
#include "gt_export.h"
#include "gt_paired.h"
#include "gt_policy.h"
#include "gt_problem.h"

int gt_cli_verify_pass(double stored, double retimed, double tolerance)
{
    return stored > 0 && retimed > 0 && isfinite(stored) && isfinite(retimed) &&
           fabs(retimed / stored - 1) <= tolerance * (1 + 1e-12);
}

/* "0.02", "2%": a fraction. 0, or -1 when not a number in [0, 1]. */
static int parse_fraction(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s)
        return -1;
    if (*end == '%') {
        v /= 100;
        end++;
    }
    if (*end || !isfinite(v) || v < 0 || v > 1)
        return -1;
    *out = v;
    return 0;
}

/* One best entry as read from the export. */
typedef struct ventry {
    char *label, *key, *spec, *backend, *model, *config, *base_config;
    double uplift, lo, hi; /* stored; NAN when absent */
    int rounds;
    int graph;             /* stored launch 'graph': a launch-bound final of a plain run,
                              timed as CUDA graphs (schema/EXPORT.md best.launch) */
    const char *missing;   /* --against: why it has no counterpart (refused), else NULL */
} ventry;

static void ventry_fini(ventry *e)
{
    free(e->label);
    free(e->key);
    free(e->spec);
    free(e->backend);
    free(e->model);
    free(e->config);
    free(e->base_config);
}

/* Frees n entries read by read_entries and the array. */
static void ventries_free(ventry *es, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ventry_fini(&es[i]);
    free(es);
}

static char *dup_col(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? strdup((const char *)t) : NULL;
}

static double num_col(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* Reads every best entry (with its baseline config: the final's baseline
 * row, else a screen's). 0, or -1 with err. */
static int read_entries(const char *path, const char *model, ventry **out, size_t *n, char *err,
                        size_t errlen)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, db ? sqlite3_errmsg(db) : "cannot open");
        sqlite3_close(db);
        return -1;
    }
    /* exports written before the paired rounds have no interval columns,
     * those before launch-bound finals no best.launch */
    int paired = gt_export_has_column(db, "main", "best", "uplift_lo") == 1;
    int has_launch = gt_export_has_column(db, "main", "best", "launch") == 1;
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT p.label, p.spec, b.backend, b.device_model, b.config, b.uplift, %s,"
             " (SELECT r.config FROM results r WHERE r.problem_id = b.problem_id"
             "   AND r.backend = b.backend AND r.device_model = b.device_model AND r.is_baseline = 1"
             "   ORDER BY r.phase = 'final' DESC, r.id LIMIT 1), p.key, %s"
             " FROM best b JOIN problems p ON p.id = b.problem_id"
             " WHERE ?1 IS NULL OR b.device_model = ?1 ORDER BY p.weight DESC, p.id, b.backend",
             paired ? "b.uplift_lo, b.uplift_hi, b.rounds" : "NULL, NULL, NULL",
             has_launch ? "b.launch IS 'graph'" : "0");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: not an export database (%s)", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return -1;
    }
    if (model)
        sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        ventry *v = realloc(*out, (*n + 1) * sizeof *v);
        if (!v)
            break;
        *out = v;
        ventry *e = &v[(*n)++];
        memset(e, 0, sizeof *e);
        e->label = dup_col(st, 0);
        e->spec = dup_col(st, 1);
        e->backend = dup_col(st, 2);
        e->model = dup_col(st, 3);
        e->config = dup_col(st, 4);
        e->uplift = num_col(st, 5);
        e->lo = num_col(st, 6);
        e->hi = num_col(st, 7);
        e->rounds = sqlite3_column_type(st, 8) == SQLITE_NULL ? 0 : sqlite3_column_int(st, 8);
        e->base_config = dup_col(st, 9);
        e->key = dup_col(st, 10);
        e->graph = sqlite3_column_int(st, 11);
        if (!e->label || !e->key || !e->spec || !e->backend || !e->model || !e->config)
            break;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "%s: reading best entries: %s", path,
                 rc == SQLITE_ROW ? "out of memory" : sqlite3_errstr(rc));
        return -1;
    }
    return 0;
}

/* The export's meta launch (how its run timed) into buf: 0, or -1 when the
 * file has none (exports from before it, merges) or cannot be read. */
static int read_launch(const char *path, char *buf, size_t len)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'launch'", -1, &st, NULL) != SQLITE_OK)
        goto out;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
        rc = 0;
    }
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

/* --against: each entry of es is to be timed against the winner B has for
 * the same problem (the export's canonical key, as gemmtune merge matches
 * them), backend and device model, which takes the baseline's place with an
 * expected ratio of 1; an entry B lacks is refused. 0, or -1 out of
 * memory. */
static int pair_with(ventry *es, size_t n, const ventry *eb, size_t nb)
{
    for (size_t i = 0; i < n; i++) {
        ventry *e = &es[i];
        e->missing = "no entry for it in the other export";
        for (size_t j = 0; j < nb; j++) {
            const ventry *b = &eb[j];
            if (strcmp(b->key, e->key) || strcmp(b->backend, e->backend) || strcmp(b->model, e->model))
                continue;
            char *cfg = strdup(b->config);
            if (!cfg)
                return -1;
            free(e->base_config);
            e->base_config = cfg;
            e->uplift = 1; /* the same speed is what agreement means */
            e->lo = e->hi = NAN;
            e->rounds = 0;
            e->missing = NULL;
            break;
        }
    }
    return 0;
}

/* What re-timing one entry found. */
typedef struct vresult {
    int status;            /* 0 pass, 1 fail, 2 refused, 3 error */
    char why[320];
    gt_paired_stat st;     /* of the best config against the baseline */
    double base_us, best_us;
    gt_gpu_state gpu;      /* the GPU's state over the rounds; samples 0: none read */
    const char *launch;    /* how it was re-timed: "plain", "chained" or "graph" */
} vresult;

/* One backend's device, opened on its first entry. */
typedef struct vdev {
    const gt_backend *bk;
    gt_bk_ctx *ctx;
    gt_bk_device dev;
    char open_err[256];    /* why it could not be opened ("" before the try) */
} vdev;

typedef struct vctx {
    vdev devs[4];          /* one per backend met, in order */
    int ndevs;
    int device;            /* --device: the index opened */
    gt_paired_opts po;
    gt_timing_opts timing;
    int launch_given;      /* --launch: every entry so; else each as its run timed it */
    int gpu_why_said;      /* why no GPU state is read, said once */
} vctx;

/* The opened device of e's backend; NULL with res refused when there is
 * none here. */
static vdev *device_for(vctx *v, const ventry *e, vresult *res)
{
    vdev *d = NULL;
    for (int i = 0; i < v->ndevs && !d; i++)
        if (!strcmp(v->devs[i].bk->name, e->backend))
            d = &v->devs[i];
    res->status = 2;
    if (!d) {
        const gt_backend *bk = gt_bk_find(e->backend);
        if (!bk) {
            snprintf(res->why, sizeof res->why, "backend %.32s is not built into this gemmtune%s",
                     e->backend, strcmp(e->backend, "cuda") ? "" : " (build with the CUDA toolkit)");
            return NULL;
        }
        if (v->ndevs == (int)(sizeof v->devs / sizeof v->devs[0])) {
            snprintf(res->why, sizeof res->why, "too many backends in one export");
            return NULL;
        }
        d = &v->devs[v->ndevs++];
        memset(d, 0, sizeof *d);
        d->bk = bk;
        char err[200] = "";
        if (bk->open(v->device, &d->ctx, &d->dev, err, sizeof err)) {
            d->ctx = NULL;
            snprintf(d->open_err, sizeof d->open_err, "%.16s device %d: %.200s", bk->name, v->device,
                     err[0] ? err : "cannot open");
        }
    }
    if (!d->ctx) {
        snprintf(res->why, sizeof res->why, "no %.16s device here to re-time it on (%.250s)", e->backend,
                 d->open_err);
        return NULL;
    }
    /* the same model or nothing: a time from another model proves nothing
     * about this one (--device-model picks the entries of one model) */
    if (strcmp(d->dev.model, e->model)) {
        snprintf(res->why, sizeof res->why, "tuned on %.120s, this %.16s device is %.120s", e->model,
                 e->backend, d->dev.model);
        return NULL;
    }
    res->status = 3;
    return d;
}

/* Builds and validates one config. NULL with why on failure. */
static gt_bk_cand *build_checked(const vdev *v, gt_bk_prob *pp, const gt_problem *p, const char *what,
                                 const char *cfg_txt, char *why, size_t whylen)
{
    char err[256];
    cJSON *cfg = cJSON_Parse(cfg_txt);
    gt_bk_cand *c = NULL;
    double rel = NAN;
    if (!cfg) {
        snprintf(why, whylen, "%s config is not JSON", what);
        return NULL;
    }
    if (v->bk->build(pp, cfg, &c, err, sizeof err)) {
        snprintf(why, whylen, "%s: build: %.200s", what, err);
        c = NULL;
    } else if (v->bk->validate(pp, c, &rel, err, sizeof err)) {
        snprintf(why, whylen, "%s: run: %.200s", what, err);
    } else if (!(rel <= gt_bk_tolerance(p))) {
        snprintf(why, whylen, "%s: wrong result: rel_err %.3g > tolerance %.3g", what, rel,
                 gt_bk_tolerance(p));
    } else {
        cJSON_Delete(cfg);
        return c;
    }
    if (c)
        v->bk->release(c);
    cJSON_Delete(cfg);
    return NULL;
}

static void verify_one(vctx *v, const ventry *e, double tol, vresult *res)
{
    char err[256];
    memset(res, 0, sizeof *res);
    if (e->missing) {
        res->status = 2;
        snprintf(res->why, sizeof res->why, "%s", e->missing);
        return;
    }
    /* as the entry was timed: an export's launch-bound finals were timed
     * as graphs in a plain run (best.launch), unless --launch says
     * otherwise for every entry */
    gt_timing_opts tm = v->timing;
    if (e->graph && !v->launch_given && !tm.chained)
        tm.graph = 1;
    res->launch = tm.graph ? "graph" : tm.chained ? "chained" : "plain";
    /* a CUDA graph is the cuda backend's: another backend would time its
     * entry plainly, which is not what was asked */
    if (tm.graph && strcmp(e->backend, "cuda")) {
        res->status = 2;
        snprintf(res->why, sizeof res->why,
                 "launch=graph: only the cuda backend times in CUDA graphs (this entry is %.32s)", e->backend);
        return;
    }
    vdev *d = device_for(v, e, res);
    if (!d)
        return;
    if (!e->base_config) {
        snprintf(res->why, sizeof res->why, "the export has no baseline configuration for it");
        return;
    }
    gt_problem p;
    cJSON *pj = cJSON_Parse(e->spec);
    int bad = !pj || gt_problem_from_json(pj, &p, err, sizeof err);
    cJSON_Delete(pj);
    if (bad) {
        snprintf(res->why, sizeof res->why, "problem spec: %.250s", pj ? err : "not JSON");
        return;
    }
    gt_bk_prob *pp = NULL;
    if (d->bk->prepare(d->ctx, &p, &pp, err, sizeof err)) {
        snprintf(res->why, sizeof res->why, "%.16s: %.230s", e->backend, err);
        return;
    }
    gt_bk_cand *c[2] = {NULL, NULL};
    char why[2][256] = {"", ""};
    int maxr = v->po.max_rounds;
    double *times = calloc((size_t)2 * (size_t)maxr, sizeof *times);
    gt_paired_stat st[2];
    int rounds = 0;
    if (!times) {
        snprintf(res->why, sizeof res->why, "out of memory");
        goto out;
    }
    c[0] = build_checked(d, pp, &p, "baseline", e->base_config, res->why, sizeof res->why);
    if (c[0])
        c[1] = build_checked(d, pp, &p, "tuned", e->config, res->why, sizeof res->why);
    if (!c[0] || !c[1])
        goto out;
    tm.rotating_bytes = p.rotating_mb * (1 << 20);
    gt_bk_paired bp = {.bk = d->bk, .pp = pp, .cands = c, .n = 2, .timing = tm, .why = why};
    if (gt_bk_paired_run(&bp, &v->po, times, &rounds, st)) {
        snprintf(res->why, sizeof res->why, "out of memory");
        goto out;
    }
    if (!c[0] || !c[1] || st[1].rounds == 0) {
        snprintf(res->why, sizeof res->why, "%.250s", why[0][0] ? why[0] : why[1]);
        goto out;
    }
    res->st = st[1];
    res->gpu = bp.gpu;
    if (bp.gpu_why[0] && !v->gpu_why_said) {
        v->gpu_why_said = 1;
        fprintf(stderr, "verify: no GPU state next to the timings: %s\n", bp.gpu_why);
    }
    res->base_us = gt_paired_median_time(times, maxr, 0, rounds);
    res->best_us = gt_paired_median_time(times, maxr, 1, rounds);
    if (!(e->uplift > 0)) {
        res->status = 1;
        snprintf(res->why, sizeof res->why, "the export stores no uplift to compare with");
    } else if (gt_cli_verify_pass(e->uplift, st[1].uplift, tol)) {
        res->status = 0;
    } else {
        res->status = 1;
        snprintf(res->why, sizeof res->why, "re-timed %.4fx is %+.1f%% from the stored %.4fx (tolerance %.1f%%)",
                 st[1].uplift, (st[1].uplift / e->uplift - 1) * 100, e->uplift, tol * 100);
    }
out:
    for (int i = 0; i < 2; i++)
        if (c[i])
            d->bk->release(c[i]);
    free(times);
    d->bk->unprepare(pp);
}

static const char *status_word(int s)
{
    return s == 0 ? "pass" : s == 1 ? "FAIL" : s == 2 ? "refused" : "error";
}

static const char *json_word(int s)
{
    return s == 0 ? "pass" : s == 1 ? "fail" : s == 2 ? "refused" : "error";
}

static cJSON *num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

/* The per-entry JSON object; NULL when out of memory. */
static cJSON *entry_json(const ventry *e, const vresult *r)
{
    cJSON *o = cJSON_CreateObject(), *s = cJSON_CreateObject(), *t = NULL;
    if (!o || !s)
        goto fail;
    cJSON_AddItemToObject(o, "stored", s);
    if (!cJSON_AddStringToObject(o, "label", e->label) || !cJSON_AddStringToObject(o, "backend", e->backend) ||
        !cJSON_AddItemToObject(o, "launch", r->launch ? cJSON_CreateString(r->launch) : cJSON_CreateNull()) ||
        !cJSON_AddItemToObject(s, "launch", e->graph ? cJSON_CreateString("graph") : cJSON_CreateNull()) ||
        !cJSON_AddStringToObject(o, "device_model", e->model) ||
        !cJSON_AddItemToObject(s, "uplift", num_or_null(e->uplift)) ||
        !cJSON_AddItemToObject(s, "uplift_lo", num_or_null(e->lo)) ||
        !cJSON_AddItemToObject(s, "uplift_hi", num_or_null(e->hi)) ||
        !cJSON_AddItemToObject(s, "rounds", e->rounds > 0 ? cJSON_CreateNumber(e->rounds) : cJSON_CreateNull()))
        goto fail;
    if (r->st.rounds > 0) {
        if (!(t = cJSON_CreateObject()))
            goto fail;
        cJSON_AddItemToObject(o, "retimed", t);
        if (!cJSON_AddNumberToObject(t, "uplift", r->st.uplift) ||
            !cJSON_AddItemToObject(t, "uplift_lo", r->st.ok ? cJSON_CreateNumber(r->st.lo) : cJSON_CreateNull()) ||
            !cJSON_AddItemToObject(t, "uplift_hi", r->st.ok ? cJSON_CreateNumber(r->st.hi) : cJSON_CreateNull()) ||
            !cJSON_AddNumberToObject(t, "rounds", r->st.rounds) ||
            !cJSON_AddNumberToObject(t, "baseline_us", r->base_us) ||
            !cJSON_AddNumberToObject(t, "time_us", r->best_us) ||
            !cJSON_AddItemToObject(o, "diff", num_or_null(e->uplift > 0 ? r->st.uplift / e->uplift - 1 : NAN)))
            goto fail;
    } else if (!cJSON_AddNullToObject(o, "retimed") || !cJSON_AddNullToObject(o, "diff")) {
        goto fail;
    }
    /* the GPU's state over the re-timing's rounds (null: none read) */
    if (!cJSON_AddItemToObject(o, "gpu_state", r->gpu.samples > 0 ? gt_gpu_state_to_json(&r->gpu)
                                                                   : cJSON_CreateNull()))
        goto fail;
    if (!cJSON_AddStringToObject(o, "result", json_word(r->status)) ||
        !cJSON_AddBoolToObject(o, "pass", r->status == 0) ||
        !(r->why[0] ? cJSON_AddStringToObject(o, "reason", r->why) : cJSON_AddNullToObject(o, "reason")))
        goto fail;
    return o;
fail:
    if (!o)
        cJSON_Delete(s);
    cJSON_Delete(o);
    return NULL;
}

static const char k_verify_usage[] =
    "usage: gemmtune verify EXPORT.db [--tolerance F] [--rounds N] [--ci W] [--min-time-ms T]\n"
    "                       [--device-model M] [--device N] [--launch plain|chained|graph] [--json]\n"
    "                       [--against OTHER.db]\n";

int gt_cli_cmd_verify(gt_cli *c0, int argc, char **argv)
{
    gt_cli c = *c0;
    c.usage = k_verify_usage;
    const char *tol_s = NULL, *rounds_s = NULL, *ci_s = NULL, *mt_s = NULL, *model = NULL, *path = NULL,
               *dev_s = NULL, *launch = NULL, *against = NULL;
    int json = 0;
    size_t nw = 0;
    const gt_cli_opt opts[] = {{"--tolerance", &tol_s, NULL}, {"--rounds", &rounds_s, NULL},
                               {"--ci", &ci_s, NULL},         {"--min-time-ms", &mt_s, NULL},
                               {"--device-model", &model, NULL}, {"--json", NULL, &json},
                               {"--device", &dev_s, NULL}, {"--launch", &launch, NULL},
                               {"--against", &against, NULL}, {NULL, NULL, NULL}};
    const gt_cli_cmd cmd = {"verify", opts, 1, "verify: one EXPORT.db only"};
    if (gt_cli_parse(&c, &cmd, argc, argv, &path, &nw) != 0)
        return GT_CLI_EXIT_USAGE;
    if (!path) {
        gt_cli_usage_error(&c, "verify: EXPORT.db is required");
        return GT_CLI_EXIT_USAGE;
    }
    double tol = GT_VERIFY_TOLERANCE, ci = GT_FINAL_CI_WIDTH, min_ms = 8;
    long rounds = GT_FINAL_ROUNDS;
    char *end = NULL;
    if (tol_s && parse_fraction(tol_s, &tol)) {
        gt_cli_usage_error(&c, "verify: --tolerance %s: a fraction (0.02) or a percentage (2%%)", tol_s);
        return GT_CLI_EXIT_USAGE;
    }
    if (ci_s && parse_fraction(ci_s, &ci)) {
        gt_cli_usage_error(&c, "verify: --ci %s: a relative width (0.02 or 2%%; 0: all rounds)", ci_s);
        return GT_CLI_EXIT_USAGE;
    }
    if (rounds_s && ((rounds = strtol(rounds_s, &end, 10)) < 6 || rounds > GT_FINAL_ROUNDS_MAX || *end)) {
        gt_cli_usage_error(&c, "verify: --rounds %s: an integer in [6, %d]", rounds_s, GT_FINAL_ROUNDS_MAX);
        return GT_CLI_EXIT_USAGE;
    }
    if (mt_s && (!((min_ms = strtod(mt_s, &end)) > 0) || min_ms > 60000 || *end)) {
        gt_cli_usage_error(&c, "verify: --min-time-ms %s: a number in (0, 60000]", mt_s);
        return GT_CLI_EXIT_USAGE;
    }
    long device = 0;
    if (dev_s && ((device = strtol(dev_s, &end, 10)) < 0 || device > 1023 || *end || end == dev_s)) {
        gt_cli_usage_error(&c, "verify: --device %s: a device index (0, 1, ...)", dev_s);
        return GT_CLI_EXIT_USAGE;
    }
    if (launch && strcmp(launch, "plain") && strcmp(launch, "chained") && strcmp(launch, "graph")) {
        gt_cli_usage_error(&c, "verify: --launch %s: plain, chained or graph (as the run's launch option)",
                           launch);
        return GT_CLI_EXIT_USAGE;
    }
    char err[1024];
    ventry *es = NULL, *eb = NULL;
    size_t n = 0, nb = 0;
    if (read_entries(path, model, &es, &n, err, sizeof err) ||
        (against && read_entries(against, model, &eb, &nb, err, sizeof err))) {
        gt_cli_errorf("verify: %s", err);
        ventries_free(es, n);
        return GT_CLI_EXIT_ERR;
    }
    int paired_ok = !against || pair_with(es, n, eb, nb) == 0;
    ventries_free(eb, nb);
    if (!paired_ok) {
        gt_cli_errorf("verify: out of memory");
        ventries_free(es, n);
        return GT_CLI_EXIT_ERR;
    }
    /* the export says how its run timed (meta launch): without --launch the
     * entries are re-timed the same way (a chained run's uplifts are chained
     * gemvs against a plain baseline, which plain re-timing cannot
     * reproduce); a re-check timed another way measures something else, so
     * say so */
    char run_launch[16] = "";
    int have_launch = read_launch(path, run_launch, sizeof run_launch) == 0 &&
                      (!strcmp(run_launch, "plain") || !strcmp(run_launch, "chained") ||
                       !strcmp(run_launch, "graph"));
    int launch_given = launch != NULL;
    if (!launch && have_launch)
        launch = run_launch;
    else if (have_launch && strcmp(run_launch, launch ? launch : "plain"))
        fprintf(stderr, "verify: %s was timed with launch=%s; re-timing with launch=%s (--launch %s to match)\n",
                path, run_launch, launch ? launch : "plain", run_launch);
    /* as the final phase times (server/store_lease.c: 4x the run's default
     * min_time_ms, 2 warm-up calls), one repeat per round */
    vctx v = {.device = (int)device,
              .launch_given = launch_given,
              .timing = {.min_time_ms = min_ms, .warmup = 2, .repeats = 1,
                         .chained = launch && !strcmp(launch, "chained"),
                         .graph = launch && !strcmp(launch, "graph")}};
    gt_paired_opts_init(&v.po, (int)rounds, ci);
    vresult *rs = calloc(n ? n : 1, sizeof *rs);
    int counts[4] = {0, 0, 0, 0}, rc = GT_CLI_EXIT_ERR;
    cJSON *root = NULL, *arr = NULL;
    if (!rs) {
        gt_cli_errorf("verify: out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        verify_one(&v, &es[i], tol, &rs[i]);
        counts[rs[i].status]++;
        if (!json)
            fprintf(stderr, "verify: %zu/%zu %s: %s\n", i + 1, n, es[i].label, status_word(rs[i].status));
    }
    /* the device(s) that timed: "this machine" when none could */
    char here[300] = "";
    for (int i = 0; i < v.ndevs; i++)
        if (v.devs[i].ctx)
            snprintf(here + strlen(here), sizeof here - strlen(here), "%s%s", here[0] ? ", " : "",
                     v.devs[i].dev.model);
    if (!here[0])
        snprintf(here, sizeof here, "this machine (no entry timed)");
    if (json) {
        root = cJSON_CreateObject();
        arr = root ? cJSON_AddArrayToObject(root, "entries") : NULL;
        int ok = arr && cJSON_AddStringToObject(root, "file", path) &&
                 cJSON_AddStringToObject(root, "device_model", here) &&
                 cJSON_AddItemToObject(root, "against", against ? cJSON_CreateString(against)
                                                                : cJSON_CreateNull()) &&
                 cJSON_AddNumberToObject(root, "tolerance", tol) &&
                 cJSON_AddNumberToObject(root, "entries_total", (double)n) &&
                 cJSON_AddNumberToObject(root, "passed", counts[0]) &&
                 cJSON_AddNumberToObject(root, "failed", counts[1]) &&
                 cJSON_AddNumberToObject(root, "refused", counts[2]) &&
                 cJSON_AddNumberToObject(root, "errors", counts[3]);
        for (size_t i = 0; ok && i < n; i++) {
            cJSON *o = entry_json(&es[i], &rs[i]);
            ok = o && cJSON_AddItemToArray(arr, o);
            if (!ok)
                cJSON_Delete(o);
        }
        char *txt = ok ? cJSON_Print(root) : NULL;
        if (!txt) {
            gt_cli_errorf("verify: out of memory");
            goto out;
        }
        puts(txt);
        cJSON_free(txt);
    } else {
        static const char *const head[] = {"PROBLEM", "BACKEND", "STORED", "STORED CI (ROUNDS)", "RETIMED",
                                           "RETIMED CI (ROUNDS)", "DIFF", "SM MHZ MIN/MED", "POWER MAX",
                                           "CAPPED", "RESULT"};
        /* --against: the "uplift" is the other export's winner's time over
         * this one's, expected 1 */
        static const char *const head_vs[] = {"PROBLEM", "BACKEND", "EXPECTED", "-", "OTHER/THIS",
                                              "CI (ROUNDS)", "DIFF", "SM MHZ MIN/MED", "POWER MAX",
                                              "CAPPED", "RESULT"};
        gt_cli_table t = {.ncols = 11, .head = against ? head_vs : head, .align = "llrlrlrrrrl"};
        if (against)
            printf("%s against %s: each GEMM's winner here timed in paired rounds with the other's winner\n"
                   "(OTHER/THIS: the other's time over this one's; 1 when both are as fast)\n",
                   path, against);
        for (size_t i = 0; i < n; i++) {
            const ventry *e = &es[i];
            const vresult *r = &rs[i];
            /* a launch-bound entry re-timed as graphs, as its final was */
            int g = e->graph && r->launch && !strcmp(r->launch, "graph");
            gt_cli_table_cell(&t, "%s%s", e->label, g ? " (graph)" : "");
            gt_cli_table_cell(&t, "%s", e->backend);
            if (isfinite(e->uplift))
                gt_cli_table_cell(&t, "%.3fx", e->uplift);
            else
                gt_cli_table_cell(&t, "-");
            if (isfinite(e->lo) && isfinite(e->hi))
                gt_cli_table_cell(&t, "%.3f-%.3f (%d)", e->lo, e->hi, e->rounds);
            else
                gt_cli_table_cell(&t, "-");
            if (r->st.rounds > 0) {
                gt_cli_table_cell(&t, "%.3fx", r->st.uplift);
                if (r->st.ok)
                    gt_cli_table_cell(&t, "%.3f-%.3f (%d)", r->st.lo, r->st.hi, r->st.rounds);
                else
                    gt_cli_table_cell(&t, "- (%d)", r->st.rounds);
                if (e->uplift > 0)
                    gt_cli_table_cell(&t, "%+.1f%%", (r->st.uplift / e->uplift - 1) * 100);
                else
                    gt_cli_table_cell(&t, "-");
            } else {
                gt_cli_table_cell(&t, "-");
                gt_cli_table_cell(&t, "-");
                gt_cli_table_cell(&t, "-");
            }
            /* the GPU's state while it was re-timed: capped rounds ran at
             * lower clocks, which the paired ratio cancels only in part */
            if (r->gpu.samples > 0) {
                gt_cli_table_cell(&t, "%.0f/%.0f", r->gpu.sm_clock_min_mhz, r->gpu.sm_clock_median_mhz);
                gt_cli_table_cell(&t, "%.0f W", r->gpu.power_max_w);
                gt_cli_table_cell(&t, "%.0f%%", r->gpu.throttled_frac * 100);
            } else {
                gt_cli_table_cell(&t, "-");
                gt_cli_table_cell(&t, "-");
                gt_cli_table_cell(&t, "-");
            }
            gt_cli_table_cell(&t, "%s%s%s", status_word(r->status), r->why[0] ? ": " : "", r->why);
        }
        if (gt_cli_table_print(&t) != 0) {
            gt_cli_table_free(&t);
            goto out;
        }
        gt_cli_table_free(&t);
        printf("verified %zu GEMM(s) on %s: %d passed, %d failed, %d refused, %d errors "
               "(tolerance %.1f%%)\n",
               n, here, counts[0], counts[1], counts[2], counts[3], tol * 100);
    }
    rc = n > 0 && counts[0] == (int)n ? 0 : GT_CLI_EXIT_ERR;
    if (n == 0)
        gt_cli_errorf("verify: %s has no best entries%s%s", path, model ? " for " : "", model ? model : "");
out:
    cJSON_Delete(root);
    for (int i = 0; i < v.ndevs; i++)
        if (v.devs[i].ctx)
            v.devs[i].bk->close(v.devs[i].ctx);
    ventries_free(es, n);
    free(rs);
    return rc;
}
