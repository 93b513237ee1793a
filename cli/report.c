/* report.c: `gemmtune report` and `gemmtune export --tunableop` (see
 * gt_report.h and docs/interop.md).
 *
 * TunableOp results files, as PyTorch reads them (aten/src/ATen/cuda/tunable:
 * Tunable.cpp ReadFile/ValidateAll, GemmCommon.h Signature, TunableGemm.h,
 * GemmCublaslt.h):
 *   Validator,<KEY>,<VALUE>        every key PyTorch registers, no other, each
 *                                  value equal to PyTorch's own, else the
 *                                  whole file is refused
 *   <op>,<params>,<solution>,<ms>  one per GEMM
 * op:      GemmTunableOp_<T>_<TA><TB>, GemmAndBiasTunableOp_<T>_<TA><TB>,
 *          GemmStridedBatchedTunableOp_<T>_<TA><TB>; T is BFloat16, Half,
 *          float, tf32 or double
 * params:  <ta><tb>_<m>_<n>_<k>_ld_<lda>_<ldb>_<ldc> (batched:
 *          <ta><tb>_<m>_<n>_<k>_B_<batch>_ld_<lda>_<ldb>_<ldc>), BLAS
 *          column-major like gemmtune's problems, transposes lower case
 * solution "Default", or (PyTorch builds whose CUDA TunableOp has cuBLASLt
 *          candidates) Gemm_Cublaslt_id_<algo_id>_tile_<tile>_stages_<stages>
 *          _splitk_<splitk>_red_<reduction>_swizzle_<swizzle>_custom_<custom>
 *          _inner_<inner_shape>_cluster_<cluster>: the nine attributes of a
 *          gemmtune cuda config, which PyTorch re-creates with
 *          cublasLtMatmulAlgoInit + the config attributes and checks with
 *          cublasLtMatmulAlgoCheck exactly like gemmtune's worker. */
#include "gt_report.h"

#include "gt_cli.h"
#include "gt_export.h"
#include "gt_httpc.h"
#include "gt_util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the report --------------------------------------------------------------- */

typedef struct rrow {
    char label[96];
    double calls, weight;
    double base_us, tuned_us;    /* NAN when unknown */
    char state[24];
    int subst;                   /* base_us is a substitute's: the default could not run */
    int graph;                   /* timed as CUDA graphs: a launch-bound final (launch "graph") */
    char why[200];               /* why the default could not run */
} rrow;

static int known(const rrow *r)
{
    return r->base_us > 0 && r->tuned_us > 0;
}

/* In the headline figures: a time against the default. A substitute's
 * uplift is against another yardstick: listed, marked *, never summed. */
static int counted(const rrow *r)
{
    return known(r) && !r->subst;
}

/* 812.3 us, 45.20 ms, 13.98 s */
static void fmt_us(char *buf, size_t n, double us)
{
    if (us >= 1e6)
        snprintf(buf, n, "%.2f s", us / 1e6);
    else if (us >= 1e3)
        snprintf(buf, n, "%.2f ms", us / 1e3);
    else
        snprintf(buf, n, "%.1f us", us);
}

static void print_report(FILE *out, const char *title, const rrow *r, size_t n)
{
    double pass_b = 0, pass_t = 0, wsum = 0, wup = 0, lsum = 0;
    size_t nk = 0, ns = 0, ng = 0;
    int lw = 7;
    for (size_t i = 0; i < n; i++) {
        int l = (int)strlen(r[i].label);
        lw = l > lw ? l : lw;
        ns += known(&r[i]) && r[i].subst;
        ng += known(&r[i]) && r[i].graph;
        if (!counted(&r[i]))
            continue;
        nk++;
        pass_b += r[i].calls * r[i].base_us;
        pass_t += r[i].calls * r[i].tuned_us;
        wsum += r[i].weight;
        wup += r[i].weight * r[i].base_us / r[i].tuned_us;
        lsum += log(r[i].base_us / r[i].tuned_us);
    }
    fprintf(out, "%s\n\n", title);
    fprintf(out, "%-*s  %10s  %7s  %11s  %10s  %8s  %7s\n", lw, "GEMM", "CALLS", "FLOP%",
            "DEFAULT_US", "TUNED_US", "UPLIFT", "SAVED%");
    for (size_t i = 0; i < n; i++) {
        const rrow *x = &r[i];
        if (!known(x)) {
            fprintf(out, "%-*s  %10.0f  %7.2f  %11s  %10s  %8s  %7s  (%s)\n", lw, x->label,
                    x->calls, 100 * x->weight, "-", "-", "-", "-", x->state);
            continue;
        }
        if (x->subst) {
            fprintf(out, "%-*s  %10.0f  %7.2f  %11.2f  %10.2f  %7.3fx* %7s\n", lw, x->label,
                    x->calls, 100 * x->weight, x->base_us, x->tuned_us, x->base_us / x->tuned_us, "-");
            continue;
        }
        double saved = pass_b > 0 ? 100 * x->calls * (x->base_us - x->tuned_us) / pass_b : 0;
        fprintf(out, "%-*s  %10.0f  %7.2f  %11.2f  %10.2f  %7.3fx%s %7.2f\n", lw, x->label,
                x->calls, 100 * x->weight, x->base_us, x->tuned_us, x->base_us / x->tuned_us,
                x->graph ? "#" : " ", saved);
    }
    if (ns) {
        fprintf(out, "\n* %zu GEMM(s): DEFAULT_US is a substitute baseline's (the default could not run); "
                     "left out of the figures below\n",
                ns);
        for (size_t i = 0; i < n; i++)
            if (known(&r[i]) && r[i].subst)
                fprintf(out, "  %s: %s\n", r[i].label, r[i].why[0] ? r[i].why : "reason not reported");
    }
    if (ng)
        fprintf(out, "\n# %zu GEMM(s): launch-bound, timed as CUDA graphs (the kernels' own times, default "
                     "and tuned alike)\n",
                ng);
    fprintf(out, "\nGEMMs tuned           %zu of %zu\n", nk, n);
    if (!nk) {
        fprintf(out, "no GEMM has both a default and a tuned time yet\n");
        return;
    }
    fprintf(out, "FLOP-weighted uplift  %.4fx  (sum weight*uplift / sum weight)\n", wup / wsum);
    fprintf(out, "workload speed-up     %.4fx  (sum calls*default / sum calls*tuned)\n",
            pass_b / pass_t);
    fprintf(out, "geomean uplift        %.4fx\n", exp(lsum / (double)nk));
    char tb[32], tt[32];
    fmt_us(tb, sizeof tb, pass_b);
    fmt_us(tt, sizeof tt, pass_t);
    fprintf(out, "GEMM time, all calls  %s -> %s (%.2f%% saved)\n", tb, tt,
            100 * (pass_b - pass_t) / pass_b);
}

static int report_run(const gt_cli *c, int64_t id)
{
    char path[64], err[512];
    snprintf(path, sizeof path, "/v1/runs/%" PRId64, id);
    gt_httpc_resp resp;
    if (gt_httpc_request(c->server, "GET", path, NULL, NULL, 0, c->token, &resp, err,
                         sizeof err) != 0) {
        gt_cli_errorf("%s", err);
        return GT_CLI_EXIT_ERR;
    }
    cJSON *j = cJSON_ParseWithLength(resp.body, resp.body_len);
    if (resp.status != 200 || !j) {
        gt_cli_errorf("GET %s: HTTP %d: %s", path, resp.status,
                      gt_cli_jstr(j, "error", j ? "unexpected answer" : "not JSON"));
        cJSON_Delete(j);
        gt_httpc_resp_free(&resp);
        return GT_CLI_EXIT_ERR;
    }
    gt_httpc_resp_free(&resp);
    const cJSON *best = cJSON_GetObjectItemCaseSensitive(j, "best"), *b;
    size_t n = (size_t)cJSON_GetArraySize(best), i = 0;
    rrow *r = calloc(n ? n : 1, sizeof *r);
    if (!r) {
        cJSON_Delete(j);
        gt_cli_errorf("out of memory");
        return GT_CLI_EXIT_ERR;
    }
    cJSON_ArrayForEach(b, best)
    {
        snprintf(r[i].label, sizeof r[i].label, "%s", gt_cli_jstr(b, "label", "?"));
        r[i].calls = gt_cli_jnum_or(b, "call_count", NAN);
        r[i].weight = gt_cli_jnum_or(b, "weight", NAN);
        r[i].base_us = gt_cli_jnum_or(b, "baseline_us", NAN);
        r[i].tuned_us = gt_cli_jnum_or(b, "time_us", NAN);
        snprintf(r[i].state, sizeof r[i].state, "%s", gt_cli_jstr(b, "state", "pending"));
        r[i].subst = !strcmp(gt_cli_jstr(b, "baseline_kind", ""), "substitute");
        r[i].graph = !strcmp(gt_cli_jstr(b, "launch", ""), "graph");
        snprintf(r[i].why, sizeof r[i].why, "%s", gt_cli_jstr(b, "baseline_reason", ""));
        i++;
    }
    char title[512];
    snprintf(title, sizeof title, "run %" PRId64 " '%s': backend %s, device %s, %s, %.0f%% done",
             id, gt_cli_jstr(j, "name", ""), gt_cli_jstr(j, "backend", "?"),
             gt_cli_jstr(j, "device_model", "-"), gt_cli_jstr(j, "state", "?"),
             100 * gt_cli_jnum_or(j, "progress", NAN));
    print_report(stdout, title, r, n);
    free(r);
    cJSON_Delete(j);
    return 0;
}

/* Prepares fmt (one %s) with cur, the columns of an export with the
 * substitute baseline's best columns, else with old, what an export from
 * before them reads as. 0, or -1 with err when neither prepares. */
static int prepare_either(sqlite3 *db, const char *fmt, const char *cur, const char *old, sqlite3_stmt **st,
                          const char *path, char *err, size_t errlen)
{
    char q[2048];
    *st = NULL;
    snprintf(q, sizeof q, fmt, cur);
    if (sqlite3_prepare_v2(db, q, -1, st, NULL) == SQLITE_OK)
        return 0;
    sqlite3_finalize(*st);
    *st = NULL;
    snprintf(q, sizeof q, fmt, old);
    if (sqlite3_prepare_v2(db, q, -1, st, NULL) == SQLITE_OK)
        return 0;
    snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(db));
    sqlite3_finalize(*st);
    *st = NULL;
    return -1;
}

/* The one (backend, device model) of an export's best table, or the given
 * model's backend. 0, or -1 with err. */
static int pick_device(sqlite3 *db, const char *want_backend, const char *model, char *backend,
                       size_t blen, char *dev, size_t dlen, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT DISTINCT backend, device_model FROM best"
                           " WHERE (?1 IS NULL OR backend = ?1) AND (?2 IS NULL OR device_model = ?2)"
                           " ORDER BY 1, 2",
                           -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "not a gemmtune export: %s", sqlite3_errmsg(db));
        return -1;
    }
    if (want_backend)
        sqlite3_bind_text(st, 1, want_backend, -1, SQLITE_STATIC);
    if (model)
        sqlite3_bind_text(st, 2, model, -1, SQLITE_STATIC);
    int n = 0;
    gt_str all;
    gt_str_init(&all);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *b = (const char *)sqlite3_column_text(st, 0);
        const char *d = (const char *)sqlite3_column_text(st, 1);
        if (n++ == 0) {
            snprintf(backend, blen, "%s", b ? b : "");
            snprintf(dev, dlen, "%s", d ? d : "");
        }
        gt_str_printf(&all, "%s'%s' (%s)", n > 1 ? ", " : "", d ? d : "", b ? b : "");
    }
    sqlite3_finalize(st);
    int rc = 0;
    if (n == 0) {
        snprintf(err, errlen, "no %s results%s%s in the export", want_backend ? want_backend : "",
                 model ? " for device model " : "", model ? model : "");
        rc = -1;
    } else if (n > 1) {
        snprintf(err, errlen, "the export holds several device models, pick one with "
                              "--device-model: %s", all.s ? all.s : "");
        rc = -1;
    }
    gt_str_free(&all);
    return rc;
}

static int check_export(sqlite3 *db, const char *path, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int ok = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'format_version'", -1, &st,
                                NULL) == SQLITE_OK &&
             sqlite3_step(st) == SQLITE_ROW;
    long v = ok ? atol((const char *)sqlite3_column_text(st, 0)) : 0;
    if (ok || st)
        sqlite3_finalize(st);
    if (!ok) {
        snprintf(err, errlen, "%s: not a gemmtune export (no meta.format_version)", path);
        return -1;
    }
    if (v != 1) {
        snprintf(err, errlen, "%s: export format_version %ld, this gemmtune reads 1", path, v);
        return -1;
    }
    return 0;
}

static sqlite3 *open_export(const char *path, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, db ? sqlite3_errmsg(db) : "cannot open");
        sqlite3_close(db);
        return NULL;
    }
    if (check_export(db, path, err, errlen) != 0) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

int gt_report_print_db(const char *path, const char *model, FILE *out, char *err, size_t errlen)
{
    sqlite3 *db = open_export(path, err, errlen);
    if (!db)
        return -1;
    char backend[32], dev[256];
    sqlite3_stmt *st = NULL;
    rrow *r = NULL;
    size_t n = 0, cap = 0;
    int rc = -1;
    if (pick_device(db, NULL, model, backend, sizeof backend, dev, sizeof dev, err, errlen) != 0)
        goto out;
    /* exports before the substitute baseline have no baseline_kind: read
     * as NULLs (every baseline the default) */
    /* nor best.launch, exports before launch-bound finals (their own check:
     * an export may have one without the other) */
    int has_launch = gt_export_has_column(db, "main", "best", "launch") == 1;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT p.label, p.call_count, p.weight, b.baseline_us, b.time_us, %%s, %s"
             " FROM problems p LEFT JOIN best b ON b.problem_id = p.id"
             " AND b.backend = ?1 AND b.device_model = ?2"
             " ORDER BY p.weight DESC, p.id",
             has_launch ? "b.launch IS 'graph'" : "0");
    if (prepare_either(db, sql, "b.baseline_kind, b.baseline_reason", "NULL, NULL", &st, path, err, errlen))
        goto out;
    sqlite3_bind_text(st, 1, backend, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, dev, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 32;
            rrow *nr = realloc(r, nc * sizeof *nr);
            if (!nr) {
                snprintf(err, errlen, "out of memory");
                goto out;
            }
            r = nr;
            cap = nc;
        }
        rrow *x = &r[n++];
        memset(x, 0, sizeof *x);
        snprintf(x->label, sizeof x->label, "%s", (const char *)sqlite3_column_text(st, 0));
        x->calls = sqlite3_column_double(st, 1);
        x->weight = sqlite3_column_double(st, 2);
        x->base_us = sqlite3_column_type(st, 3) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 3);
        x->tuned_us = sqlite3_column_type(st, 4) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 4);
        snprintf(x->state, sizeof x->state, "%s",
                 sqlite3_column_type(st, 4) == SQLITE_NULL ? "no result" : "no default time");
        const unsigned char *kind = sqlite3_column_text(st, 5), *why = sqlite3_column_text(st, 6);
        x->subst = kind && !strcmp((const char *)kind, "substitute");
        x->graph = sqlite3_column_int(st, 7);
        snprintf(x->why, sizeof x->why, "%s", why ? (const char *)why : "");
    }
    char title[600];
    snprintf(title, sizeof title, "%s: backend %s, device %s", path, backend, dev);
    print_report(out, title, r, n);
    rc = 0;
out:
    if (st)
        sqlite3_finalize(st);
    free(r);
    sqlite3_close(db);
    return rc;
}

int gt_report_main(const char *server, const char *token, int argc, char **argv)
{
    /* usage NULL: report's usage errors name the problem without the
     * CLI's whole usage text */
    gt_cli c = {.server = server, .token = token, .usage = NULL};
    const char *run = NULL, *dbp = NULL, *model = NULL;
    size_t nrun;
    const gt_cli_opt opts[] = {
        {"--db", &dbp, NULL}, {"--device-model", &model, NULL}, {NULL, NULL, NULL}};
    const gt_cli_cmd cmd = {"report", opts, 1, "report: one RUN only"};
    if (gt_cli_parse(&c, &cmd, argc, argv, &run, &nrun) != 0)
        return GT_CLI_EXIT_USAGE;
    if (!!run == !!dbp) {
        gt_cli_errorf("report: RUN or --db FILE.db (one of them)");
        return GT_CLI_EXIT_USAGE;
    }
    if (dbp) {
        char err[1024];
        if (gt_report_print_db(dbp, model, stdout, err, sizeof err) != 0) {
            gt_cli_errorf("report: %s", err);
            return GT_CLI_EXIT_ERR;
        }
        return 0;
    }
    int64_t id;
    if (gt_cli_run_id(&c, run, &id) != 0)
        return GT_CLI_EXIT_USAGE;
    return report_run(&c, id);
}

/* ---- TunableOp ---------------------------------------------------------------- */

/* PyTorch's TypeName<T> for a gemmtune problem's storage/compute types;
 * NULL when TunableOp has no operator for it. */
static const char *tunableop_type(const char *ab, const char *cd, const char *compute,
                                  const char *scale)
{
    if (strcmp(ab, cd) != 0)
        return NULL;
    if ((!strcmp(ab, "bf16") || !strcmp(ab, "f16")) && !strcmp(compute, "f32") &&
        !strcmp(scale, "f32"))
        return !strcmp(ab, "bf16") ? "BFloat16" : "Half";
    if (!strcmp(ab, "f32") && !strcmp(scale, "f32"))
        return !strcmp(compute, "f32") ? "float" : !strcmp(compute, "tf32") ? "tf32" : NULL;
    if (!strcmp(ab, "f64") && !strcmp(compute, "f64") && !strcmp(scale, "f64"))
        return "double";
    return NULL;
}

/* The cuBLASLt solution name of a cuda config (GemmCublaslt.h's
 * CublasltAlgoConfigName); -1 when the config is not a cuda config. */
static int cublaslt_name(const char *json, char *buf, size_t len)
{
    static const char *const keys[9] = {"algo_id", "tile",   "stages",      "splitk", "reduction",
                                        "swizzle", "custom", "inner_shape", "cluster"};
    /* Omitted keys take the defaults (worker/cuda/CONFIG.md); algo_id is required. */
    double v[9] = {0, 0, 0, 1, 0, 0, 0, 0, 0};
    cJSON *j = cJSON_Parse(json);
    int ok = cJSON_IsObject(j) && cJSON_GetObjectItemCaseSensitive(j, "algo_id");
    for (int i = 0; ok && i < 9; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, keys[i]);
        if (!x)
            continue;
        ok = cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble <= 4294967295.0 &&
             x->valuedouble == floor(x->valuedouble);
        v[i] = ok ? x->valuedouble : 0;
    }
    cJSON_Delete(j);
    if (!ok)
        return -1;
    snprintf(buf, len,
             "Gemm_Cublaslt_id_%.0f_tile_%.0f_stages_%.0f_splitk_%.0f_red_%.0f_swizzle_%.0f"
             "_custom_%.0f_inner_%.0f_cluster_%.0f",
             v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]);
    return 0;
}

/* Seen (op, params) signatures: a small list (runs have tens to hundreds). */
typedef struct sigset {
    char **s;
    size_t n, cap;
} sigset;

static int sig_add(sigset *set, const char *sig)
{
    for (size_t i = 0; i < set->n; i++)
        if (!strcmp(set->s[i], sig))
            return 0;
    if (set->n == set->cap) {
        size_t nc = set->cap ? set->cap * 2 : 64;
        char **ns = realloc(set->s, nc * sizeof *ns);
        if (!ns)
            return -1;
        set->s = ns;
        set->cap = nc;
    }
    if (!(set->s[set->n] = strdup(sig)))
        return -1;
    set->n++;
    return 1;
}

static void sig_free(sigset *set)
{
    for (size_t i = 0; i < set->n; i++)
        free(set->s[i]);
    free(set->s);
}

/* Validator lines: given verbatim, or built from the values. */
static int write_validators(const gt_tunableop_opts *o, FILE *out, char *err, size_t errlen)
{
    if (o->validators) {
        int pt = 0;
        const char *s = o->validators;
        while (*s) {
            size_t n = strcspn(s, "\n");
            size_t l = n;
            while (l && (s[l - 1] == '\r' || s[l - 1] == ' '))
                l--;
            if (l >= 10 && !strncmp(s, "Validator,", 10)) {
                fprintf(out, "%.*s\n", (int)l, s);
                pt |= l > 21 && !strncmp(s, "Validator,PT_VERSION,", 21);
            }
            s += n + (s[n] == '\n');
        }
        if (!pt) {
            snprintf(err, errlen, "the validators hold no Validator,PT_VERSION,<version> line");
            return -1;
        }
        return 0;
    }
    if (!o->pt_version || !*o->pt_version) {
        snprintf(err, errlen, "--pt-version (torch.__version__ of the PyTorch that reads the "
                              "file) or --validators FILE is required");
        return -1;
    }
    if (!o->default_only && (!o->cublaslt_version || !o->cuda_device)) {
        snprintf(err, errlen,
                 "cuBLASLt solutions are read only by PyTorch builds that also validate "
                 "CUBLASLT_VERSION and CUDA_DEVICE: give --cublaslt-version and --cuda-device "
                 "(or --validators FILE, or --default-only)");
        return -1;
    }
    fprintf(out, "Validator,PT_VERSION,%s\n", o->pt_version);
    if (o->cublaslt_version)
        fprintf(out, "Validator,CUBLASLT_VERSION,%s\n", o->cublaslt_version);
    if (o->cuda_device)
        fprintf(out, "Validator,CUDA_DEVICE,%s\n", o->cuda_device);
    return 0;
}

int gt_report_tunableop(const char *path, const gt_tunableop_opts *o, FILE *out, FILE *warn,
                        gt_tunableop_stats *stp, char *err, size_t errlen)
{
    gt_tunableop_stats st;
    memset(&st, 0, sizeof st);
    sqlite3 *db = open_export(path, err, errlen);
    if (!db)
        return -1;
    sqlite3_stmt *q = NULL;
    sigset seen = {0};
    int rc = -1;
    char backend[32], dev[256];
    if (pick_device(db, "cuda", o->device_model, backend, sizeof backend, dev, sizeof dev, err,
                    errlen) != 0)
        goto out;
    if (write_validators(o, out, err, errlen) != 0)
        goto out;
    /* A best row that is its final's baseline is PyTorch's default, unless
     * that baseline was a substitute (the default could not run): then it
     * is a configuration like any other. Exports before baseline_kind had
     * no substitutes. */
    static const char sql[] =
        "SELECT p.label, p.m, p.n, p.k, p.batch, p.trans_a, p.trans_b, p.lda, p.ldb, p.ldc,"
        " p.ldd, p.stride_c, p.stride_d, p.a_type, p.b_type, p.c_type, p.d_type,"
        " p.compute_type, p.scale_type, p.beta, p.bias, p.bias_type, p.activation,"
        " b.config, b.time_us, b.baseline_us,"
        " EXISTS (SELECT 1 FROM results r WHERE r.problem_id = p.id AND r.backend ="
        "  b.backend AND r.device_model = b.device_model AND r.is_baseline = 1 AND"
        "  r.config_hash = b.config_hash) AND %s"
        " FROM best b JOIN problems p ON p.id = b.problem_id"
        " WHERE b.backend = 'cuda' AND b.device_model = ?1"
        " ORDER BY p.weight DESC, p.id";
    if (prepare_either(db, sql, "b.baseline_kind IS NOT 'substitute'", "1", &q, path, err, errlen))
        goto out;
    sqlite3_bind_text(q, 1, dev, -1, SQLITE_STATIC);
#define TXT(i) ((const char *)sqlite3_column_text(q, (i)) ? (const char *)sqlite3_column_text(q, (i)) : "")
#define I64(i) ((long long)sqlite3_column_int64(q, (i)))
    while (sqlite3_step(q) == SQLITE_ROW) {
        const char *label = TXT(0);
        long long m = I64(1), n = I64(2), k = I64(3), batch = I64(4);
        char ta = TXT(5)[0], tb = TXT(6)[0];
        long long lda = I64(7), ldb = I64(8), ldc = I64(9), ldd = I64(10);
        long long sc = I64(11), sd = I64(12);
        double beta = sqlite3_column_double(q, 19);
        int bias = sqlite3_column_int(q, 20);
        const char *bias_type = TXT(21), *act = TXT(22);
        const char *why = NULL;
        const char *T = tunableop_type(TXT(13), TXT(15), TXT(17), TXT(18));
        if (strcmp(TXT(13), TXT(14)) || strcmp(TXT(15), TXT(16)))
            T = NULL;
        const char *op = NULL;
        if (!T)
            why = "types TunableOp has no GEMM operator for";
        else if (ldc != ldd)
            why = "ldc != ldd (TunableOp writes D over C)";
        else if (batch > 1 && (bias || strcmp(act, "none")))
            why = "batched GEMM with an epilogue";
        else if (batch > 1 && sc != sd)
            why = "stride_c != stride_d";
        else if (batch > 1)
            op = "GemmStridedBatchedTunableOp";
        else if (bias && (strcmp(bias_type, TXT(16)) || beta != 0))
            why = "bias of another type than D, or beta != 0 with a bias";
        else if (bias)
            op = "GemmAndBiasTunableOp";
        else if (strcmp(act, "none"))
            why = "activation without bias";
        else
            op = "GemmTunableOp";
        if (!op) {
            st.skipped++;
            if (warn)
                fprintf(warn, "gemmtune: tunableop: skipped %s: %s\n", label, why);
            continue;
        }
        char sig[512], params[256], sol[256];
        if (batch > 1)
            snprintf(params, sizeof params, "%c%c_%lld_%lld_%lld_B_%lld_ld_%lld_%lld_%lld",
                     ta == 'T' ? 't' : 'n', tb == 'T' ? 't' : 'n', m, n, k, batch, lda, ldb, ldc);
        else
            snprintf(params, sizeof params, "%c%c_%lld_%lld_%lld_ld_%lld_%lld_%lld",
                     ta == 'T' ? 't' : 'n', tb == 'T' ? 't' : 'n', m, n, k, lda, ldb, ldc);
        snprintf(sig, sizeof sig, "%s_%s_%c%c,%s", op, T, ta, tb, params);
        /* alpha, beta and the activation are not part of the signature:
         * the heaviest GEMM of a signature (first here) wins. */
        int added = sig_add(&seen, sig);
        if (added < 0) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        if (added == 0) {
            st.merged++;
            if (warn)
                fprintf(warn, "gemmtune: tunableop: %s shares its signature with a heavier GEMM\n",
                        label);
            continue;
        }
        int is_base = sqlite3_column_int(q, 26);
        double t_us = sqlite3_column_double(q, 24);
        if (o->default_only || is_base || cublaslt_name(TXT(23), sol, sizeof sol) != 0) {
            /* The default algorithm: its own time when it was measured. */
            snprintf(sol, sizeof sol, "Default");
            if (sqlite3_column_type(q, 25) != SQLITE_NULL)
                t_us = sqlite3_column_double(q, 25);
        } else {
            st.tuned++;
        }
        fprintf(out, "%s,%s,%.6g\n", sig, sol, t_us / 1000.0);
        st.rows++;
    }
#undef TXT
#undef I64
    rc = 0;
out:
    if (q)
        sqlite3_finalize(q);
    sig_free(&seen);
    sqlite3_close(db);
    if (stp)
        *stp = st;
    return rc;
}

int gt_report_wants_tunableop(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--tunableop"))
            return 1;
    return 0;
}

int gt_report_export_tunableop(const char *server, const char *token, int argc, char **argv)
{
    gt_cli c = {.server = server, .token = token, .usage = NULL}; /* as gt_report_main */
    const char *run = NULL, *out = NULL, *dbp = NULL, *vfile = NULL;
    size_t nrun;
    int tunableop = 0; /* the word that chose this command */
    gt_tunableop_opts o;
    memset(&o, 0, sizeof o);
    const gt_cli_opt opts[] = {{"-o", &out, NULL},
                               {"--output", &out, NULL},
                               {"--db", &dbp, NULL},
                               {"--validators", &vfile, NULL},
                               {"--pt-version", &o.pt_version, NULL},
                               {"--cublaslt-version", &o.cublaslt_version, NULL},
                               {"--cuda-device", &o.cuda_device, NULL},
                               {"--device-model", &o.device_model, NULL},
                               {"--tunableop", NULL, &tunableop},
                               {"--default-only", NULL, &o.default_only},
                               {NULL, NULL, NULL}};
    const gt_cli_cmd cmd = {"export --tunableop", opts, 1, "export: one RUN only"};
    if (gt_cli_parse(&c, &cmd, argc, argv, &run, &nrun) != 0)
        return GT_CLI_EXIT_USAGE;
    if (!out || !!run == !!dbp) {
        gt_cli_errorf("export --tunableop: RUN (or --db FILE.db) and -o FILE.csv are required");
        return GT_CLI_EXIT_USAGE;
    }
    int64_t id = 0;
    if (run && gt_cli_run_id(&c, run, &id) != 0)
        return GT_CLI_EXIT_USAGE;
    struct stat sb;
    if (stat(out, &sb) == 0) {
        gt_cli_errorf("%s exists; not overwriting it", out);
        return GT_CLI_EXIT_ERR;
    }
    char err[1024], tmpdir[] = "/tmp/gemmtune-tunableop-XXXXXX", dlpath[sizeof tmpdir + 16];
    char *vtext = NULL, *buf = NULL;
    size_t buflen = 0;
    int ret = GT_CLI_EXIT_ERR, have_tmp = 0;
    if (vfile) {
        size_t vl;
        if (!(vtext = gt_read_file(vfile, &vl, (size_t)1 << 20))) {
            gt_cli_errorf("--validators %s: %s", vfile, strerror(errno));
            return GT_CLI_EXIT_ERR;
        }
        o.validators = vtext;
    }
    if (run) {
        if (!mkdtemp(tmpdir)) {
            gt_cli_errorf("mkdtemp: %s", strerror(errno));
            goto done;
        }
        have_tmp = 1;
        snprintf(dlpath, sizeof dlpath, "%s/run.db", tmpdir);
        char path[64];
        snprintf(path, sizeof path, "/v1/runs/%" PRId64 "/export", id);
        gt_httpc_resp r;
        uint64_t bytes = 0;
        if (gt_httpc_download(c.server, path, c.token, dlpath, &r, &bytes, err, sizeof err) != 0) {
            gt_cli_errorf("%s", err);
            goto done;
        }
        if (r.status < 200 || r.status >= 300) {
            cJSON *j = cJSON_ParseWithLength(r.body, r.body_len);
            gt_cli_errorf("GET %s: HTTP %d: %s", path, r.status, gt_cli_jstr(j, "error", "error"));
            cJSON_Delete(j);
            gt_httpc_resp_free(&r);
            goto done;
        }
        gt_httpc_resp_free(&r);
        dbp = dlpath;
    }
    FILE *mem = open_memstream(&buf, &buflen);
    if (!mem) {
        gt_cli_errorf("out of memory");
        goto done;
    }
    gt_tunableop_stats st;
    int rc = gt_report_tunableop(dbp, &o, mem, stderr, &st, err, sizeof err);
    if (fclose(mem) != 0 || rc != 0) {
        gt_cli_errorf("export --tunableop: %s", rc ? err : "out of memory");
        goto done;
    }
    if (gt_write_file(out, buf, buflen) != 0) {
        gt_cli_errorf("%s: %s", out, strerror(errno));
        goto done;
    }
    printf("%s: %zu TunableOp results (%zu cuBLASLt configs, %zu Default), %zu GEMMs skipped, "
           "%zu merged\n",
           out, st.rows, st.tuned, st.rows - st.tuned, st.skipped, st.merged);
    ret = 0;
done:
    if (have_tmp) {
        unlink(dlpath);
        rmdir(tmpdir);
    }
    free(buf);
    free(vtext);
    return ret;
}
