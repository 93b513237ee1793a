/* main_gemmtune.c: the gemmtune command-line client.
 *
 * Owns the user-facing commands: submit a workload log as a tuning run,
 * follow its progress, print its results, download its export or a generated
 * winner's kernel source, merge exports locally and list workers. Everything but merge goes through the
 * coordinator's HTTP API (gt_httpc). Exit codes: 0 success, 1 error, 2 usage
 * error, and for `status` 2 also when the run failed or was cancelled. */
#include "gt_export.h"
#include "gt_httpc.h"
#include "gt_report.h"
#include "gt_util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_SERVER "http://127.0.0.1:8470"
#define MAX_LOG_BYTES ((size_t)512 << 20)
#define EXIT_ERR 1
#define EXIT_USAGE 2
#define EXIT_RUN_FAILED 2
#define LIVE_INTERVAL_S 1   /* terminal progress bar refresh */
#define PIPE_INTERVAL_S 5   /* status --wait line interval when not on a terminal */
#define MAX_POLL_ERRORS 10  /* consecutive unreachable polls before giving up */

typedef struct cli {
    const char *server;
    const char *token;
} cli;

static const char k_usage[] =
    "usage: gemmtune [--server URL] [--token T] COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  submit LOG [--name N] [--format F] [--backend B] [--strategy S] [--budget N]\n"
    "         [--shard-size N] [--threshold X] [--final-k N] [--skip-invalid]\n"
    "         [--device-model M]          submit a workload log (- for stdin) as a run\n"
    "  status [RUN] [--wait]              list runs, or show one run's progress (a live\n"
    "                                     bar on a terminal; --wait polls until it ends)\n"
    "  results RUN [--csv] [--all]        best configuration per problem; --csv: every\n"
    "                                     result as CSV; --all: every result as a table\n"
    "  export RUN -o FILE                 download the run's result database\n"
    "  export RUN|--db F.db --tunableop -o F.csv [--validators F | --pt-version V\n"
    "         --cublaslt-version N --cuda-device D] [--default-only]  PyTorch TunableOp file\n"
    "  report RUN|--db F.db [--device-model M]  per-GEMM uplift and workload totals\n"
    "  kernel RUN PROBLEM [-o FILE] [--config-hash H] [--arch sm_NN]\n"
    "                                     a generated winner's source as a .cuh header\n"
    "                                     (PROBLEM: its id or key; stdout without -o)\n"
    "  merge A.db B.db ... -o OUT.db      combine exported result databases (local)\n"
    "  workers                            list workers\n"
    "  help, --help, --version\n"
    "\n"
    "global options (anywhere on the line):\n"
    "  --server URL   coordinator (default $GEMMTUNE_SERVER, else " DEFAULT_SERVER ")\n"
    "  --token T      API token, sent as Authorization: Bearer (default $GEMMTUNE_TOKEN)\n"
    "\n"
    "exit status: 0 ok, 1 error, 2 usage error; status: 2 when the run failed or was\n"
    "cancelled, 0 when it is done (or still running, for a single snapshot).\n";

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("gemmtune: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n\n", stderr);
    fputs(k_usage, stderr);
}

static void errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void errorf(const char *fmt, ...)
{
    va_list ap;
    fputs("gemmtune: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* ---- option parsing ---- */

/* Matches "--name VALUE" or "--name=VALUE" at argv[*i]. 1: matched, value in
 * *val and *i advanced past it; 0: another argument; -1: value missing. */
static int opt_val(int argc, char **argv, int *i, const char *name, const char **val)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (a[n] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        usage_error("option %s needs a value", name);
        return -1;
    }
    *val = argv[++*i];
    return 1;
}

/* Consumes --server/--token wherever they appear. 1, 0 or -1 as opt_val. */
static int global_opt(cli *c, int argc, char **argv, int *i)
{
    int r = opt_val(argc, argv, i, "--server", &c->server);
    if (r != 0)
        return r;
    return opt_val(argc, argv, i, "--token", &c->token);
}

static int is_option(const char *a)
{
    return a[0] == '-' && a[1] != '\0';
}

static int parse_run_id(const char *s, int64_t *id)
{
    if (gt_parse_i64(s, id) != 0 || *id <= 0) {
        usage_error("bad run id '%s' (a positive integer)", s);
        return -1;
    }
    return 0;
}

/* ---- JSON helpers ---- */

static const cJSON *jget(const cJSON *o, const char *name)
{
    return o ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
}

static int jnum(const cJSON *o, const char *name, double *v)
{
    const cJSON *j = jget(o, name);
    if (!cJSON_IsNumber(j))
        return 0;
    *v = j->valuedouble;
    return 1;
}

static double jnum_or(const cJSON *o, const char *name, double dflt)
{
    double v;
    return jnum(o, name, &v) ? v : dflt;
}

static const char *jstr(const cJSON *o, const char *name, const char *dflt)
{
    const cJSON *j = jget(o, name);
    return cJSON_IsString(j) && j->valuestring ? j->valuestring : dflt;
}

/* Formats a number field with fmt, or "-" when absent or null. */
static const char *fnum(char *buf, size_t n, const cJSON *o, const char *name, const char *fmt,
                        double scale)
{
    double v;
    if (!jnum(o, name, &v))
        return "-";
    snprintf(buf, n, fmt, v * scale);
    return buf;
}

/* Human duration: 45s, 2m10s, 1h02m. */
static void fmt_dur(char *buf, size_t n, double s)
{
    if (!(s >= 0) || !isfinite(s)) {
        snprintf(buf, n, "?");
        return;
    }
    long t = lround(s);
    if (t < 60)
        snprintf(buf, n, "%lds", t);
    else if (t < 3600)
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, n, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
}

/* ---- a plain text table ---- */

typedef struct table {
    int ncols;
    const char *const *head;
    const char *align;   /* per column: 'l' or 'r' */
    char **cells;
    size_t n, cap;
    int oom;
} table;

static void table_cell(table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void table_cell(table *t, const char *fmt, ...)
{
    if (t->oom)
        return;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **c = realloc(t->cells, cap * sizeof *c);
        if (!c) {
            t->oom = 1;
            return;
        }
        t->cells = c;
        t->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&t->cells[t->n], fmt, ap);
    va_end(ap);
    if (r < 0) {
        t->oom = 1;
        return;
    }
    t->n++;
}

/* Prints the table; the last column is never padded (configs run long). */
static int table_print(const table *t)
{
    if (t->oom) {
        errorf("out of memory");
        return -1;
    }
    size_t w[32] = {0};
    int nc = t->ncols < 32 ? t->ncols : 32;
    for (int c = 0; c < nc; c++)
        w[c] = strlen(t->head[c]);
    for (size_t i = 0; i < t->n; i++) {
        size_t l = strlen(t->cells[i]);
        if (l > w[i % (size_t)nc])
            w[i % (size_t)nc] = l;
    }
    for (size_t row = 0; row <= t->n / (size_t)nc; row++) {
        if (row > 0 && (row - 1) * (size_t)nc >= t->n)
            break;
        for (int c = 0; c < nc; c++) {
            const char *s = row == 0 ? t->head[c] : t->cells[(row - 1) * (size_t)nc + (size_t)c];
            int width = c == nc - 1 ? 0 : (int)w[c];
            if (t->align[c] == 'r')
                printf("%*s", width, s);
            else
                printf("%-*s", width, s);
            fputs(c == nc - 1 ? "\n" : "  ", stdout);
        }
    }
    return 0;
}

static void table_free(table *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->n = t->cap = 0;
}

/* ---- HTTP API ---- */

/* Prints the server's {"error", "details"} (or whatever came back). */
static void print_server_error(const gt_httpc_resp *r)
{
    cJSON *j = cJSON_ParseWithLength(r->body, r->body_len);
    const char *e = jstr(j, "error", NULL);
    if (!e) {
        /* Not our JSON (a proxy page?): show the first line of it. */
        size_t n = strcspn(r->body, "\r\n");
        if (n > 200)
            n = 200;
        errorf("server answered HTTP %d%s%.*s", r->status, n ? ": " : "", (int)n, r->body);
        cJSON_Delete(j);
        return;
    }
    errorf("%s (HTTP %d)", e, r->status);
    const cJSON *d = jget(j, "details");
    if (cJSON_IsString(d) && d->valuestring) {
        fprintf(stderr, "  %s\n", d->valuestring);
    } else if (cJSON_IsArray(d)) {
        const cJSON *it;
        cJSON_ArrayForEach(it, d)
        {
            if (cJSON_IsString(it)) {
                fprintf(stderr, "  %s\n", it->valuestring);
                continue;
            }
            double line;
            const char *field = jstr(it, "field", NULL);
            const char *msg = jstr(it, "error", "?");
            if (jnum(it, "line", &line))
                fprintf(stderr, "  line %.0f", line);
            else
                fputs("  ", stderr);
            if (field)
                fprintf(stderr, "%s%s", jnum(it, "line", &line) ? ", " : "", field);
            fprintf(stderr, ": %s\n", msg);
        }
    }
    cJSON_Delete(j);
}

#define API_TRANSPORT (-2)

/* Calls the API. 0 with the response in resp (2xx only) and, when out is
 * given, its JSON in *out; -1 after printing the server's error;
 * API_TRANSPORT when the server could not be reached (message printed). */
static int api(const cli *c, const char *method, const char *path, const char *body,
               size_t body_len, gt_httpc_resp *resp, cJSON **out)
{
    char err[512];
    if (out)
        *out = NULL;
    if (gt_httpc_request(c->server, method, path, body ? "application/json" : NULL, body, body_len,
                         c->token, resp, err, sizeof err) != 0) {
        errorf("%s", err); /* names host:port (or the bad URL) already */
        return API_TRANSPORT;
    }
    if (resp->status < 200 || resp->status >= 300) {
        print_server_error(resp);
        gt_httpc_resp_free(resp);
        return -1;
    }
    if (out) {
        *out = cJSON_ParseWithLength(resp->body, resp->body_len);
        if (!*out) {
            errorf("%s %s: the server's answer is not JSON", method, path);
            gt_httpc_resp_free(resp);
            return -1;
        }
    }
    return 0;
}

/* GET path as JSON; the response buffer is released. */
static int api_get_json(const cli *c, const char *path, cJSON **out)
{
    gt_httpc_resp r;
    int rc = api(c, "GET", path, NULL, 0, &r, out);
    if (rc == 0)
        gt_httpc_resp_free(&r);
    return rc;
}

/* ---- submit ---- */

static char *read_stdin(size_t *len)
{
    gt_str s;
    gt_str_init(&s);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) {
        if (s.len + n > MAX_LOG_BYTES) {
            errno = EFBIG;
            gt_str_free(&s);
            return NULL;
        }
        if (gt_str_append(&s, buf, n) != 0) {
            errno = ENOMEM;
            gt_str_free(&s);
            return NULL;
        }
    }
    if (ferror(stdin)) {
        gt_str_free(&s);
        return NULL;
    }
    if (!s.s && !(s.s = calloc(1, 1)))
        return NULL;
    *len = s.len;
    return s.s;
}

static int add_int_opt(cJSON *o, const char *opt, const char *field, const char *v)
{
    int64_t x;
    if (gt_parse_i64(v, &x) != 0 || x < 0) {
        usage_error("%s: '%s' is not a non-negative integer", opt, v);
        return -1;
    }
    if (!cJSON_AddNumberToObject(o, field, (double)x)) {
        errorf("out of memory");
        return -1;
    }
    return 0;
}

static int cmd_submit(cli *c, int argc, char **argv)
{
    /* Option name -> JSON field; strings are passed through, the server validates. */
    static const char *const str_opts[][2] = {
        {"--name", "name"},         {"--format", "format"},           {"--backend", "backend"},
        {"--strategy", "strategy"}, {"--device-model", "device_model"},
    };
    static const char *const int_opts[][2] = {
        {"--budget", "budget"}, {"--shard-size", "shard_size"}, {"--final-k", "final_k"},
    };
    const char *log_path = NULL;
    char *text = NULL, *json = NULL;
    cJSON *req = cJSON_CreateObject(), *resp_j = NULL;
    gt_httpc_resp resp;
    int ret = EXIT_ERR, skip_invalid = 0;
    memset(&resp, 0, sizeof resp);
    if (!req) {
        errorf("out of memory");
        return EXIT_ERR;
    }

    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        int r = global_opt(c, argc, argv, &i);
        if (r < 0)
            goto usage;
        if (r > 0)
            continue;
        int matched = 0;
        for (size_t k = 0; !matched && k < sizeof str_opts / sizeof str_opts[0]; k++) {
            r = opt_val(argc, argv, &i, str_opts[k][0], &v);
            if (r < 0)
                goto usage;
            if (r > 0) {
                matched = 1;
                cJSON_DeleteItemFromObjectCaseSensitive(req, str_opts[k][1]);
                if (!cJSON_AddStringToObject(req, str_opts[k][1], v)) {
                    errorf("out of memory");
                    goto out;
                }
            }
        }
        for (size_t k = 0; !matched && k < sizeof int_opts / sizeof int_opts[0]; k++) {
            r = opt_val(argc, argv, &i, int_opts[k][0], &v);
            if (r < 0)
                goto usage;
            if (r > 0) {
                matched = 1;
                cJSON_DeleteItemFromObjectCaseSensitive(req, int_opts[k][1]);
                if (add_int_opt(req, int_opts[k][0], int_opts[k][1], v) != 0)
                    goto usage;
            }
        }
        if (matched)
            continue;
        r = opt_val(argc, argv, &i, "--threshold", &v);
        if (r < 0)
            goto usage;
        if (r > 0) {
            char *end;
            errno = 0;
            double x = strtod(v, &end);
            if (errno || end == v || *end || !isfinite(x) || x < 0) {
                usage_error("--threshold: '%s' is not a non-negative number", v);
                goto usage;
            }
            cJSON_DeleteItemFromObjectCaseSensitive(req, "threshold");
            if (!cJSON_AddNumberToObject(req, "threshold", x)) {
                errorf("out of memory");
                goto out;
            }
            continue;
        }
        if (strcmp(argv[i], "--skip-invalid") == 0) {
            skip_invalid = 1;
            continue;
        }
        if (is_option(argv[i])) {
            usage_error("submit: unknown option %s", argv[i]);
            goto usage;
        }
        if (log_path) {
            usage_error("submit: one LOG only (got '%s' and '%s')", log_path, argv[i]);
            goto usage;
        }
        log_path = argv[i];
    }
    if (!log_path) {
        usage_error("submit: LOG missing (a file, or - for stdin)");
        goto usage;
    }
    if (skip_invalid && !cJSON_AddTrueToObject(req, "skip_invalid")) {
        errorf("out of memory");
        goto out;
    }

    size_t len = 0;
    text = strcmp(log_path, "-") == 0 ? read_stdin(&len) : gt_read_file(log_path, &len, MAX_LOG_BYTES);
    if (!text) {
        errorf("%s: %s", strcmp(log_path, "-") == 0 ? "stdin" : log_path,
               errno == EFBIG ? "larger than 512 MiB" : strerror(errno));
        goto out;
    }
    if (memchr(text, '\0', len)) {
        errorf("%s: contains NUL bytes; a workload log is text", log_path);
        goto out;
    }
    if (!cJSON_AddStringToObject(req, "log", text) || !(json = cJSON_PrintUnformatted(req))) {
        errorf("out of memory");
        goto out;
    }
    free(text);
    text = NULL;

    int rc = api(c, "POST", "/v1/runs", json, strlen(json), &resp, &resp_j);
    if (rc != 0)
        goto out;
    double id = jnum_or(resp_j, "id", -1), problems = jnum_or(resp_j, "problems", 0),
           jobs = jnum_or(resp_j, "jobs", 0), cands = jnum_or(resp_j, "candidates", 0);
    printf("run %.0f: %.0f problems, %.0f jobs, %.0f candidates (format %s)\n", id, problems, jobs,
           cands, jstr(resp_j, "format", "?"));
    double dropped = jnum_or(resp_j, "dropped", 0);
    if (dropped > 0)
        printf("  dropped below the threshold: %.0f problem(s)\n", dropped);
    const cJSON *sk = jget(resp_j, "skipped"), *it;
    if (cJSON_IsArray(sk)) {
        cJSON_ArrayForEach(it, sk)
        {
            double line;
            if (jnum(it, "line", &line))
                printf("  skipped line %.0f", line);
            else
                fputs("  skipped", stdout);
            const char *field = jstr(it, "field", NULL);
            if (field)
                printf(" (%s)", field);
            printf(": %s\n", jstr(it, "error", "?"));
        }
    }
    ret = 0;
    goto out;
usage:
    ret = EXIT_USAGE;
out:
    free(text);
    cJSON_free(json);
    cJSON_Delete(req);
    cJSON_Delete(resp_j);
    gt_httpc_resp_free(&resp);
    return ret;
}

/* ---- status ---- */

static int cmd_status_list(const cli *c)
{
    cJSON *j = NULL;
    if (api_get_json(c, "/v1/runs", &j) != 0)
        return EXIT_ERR;
    static const char *const head[] = {"ID", "NAME", "STATE", "PROGRESS", "PROBLEMS", "BACKEND",
                                       "DEVICE"};
    table t = {.ncols = 7, .head = head, .align = "rlllrll"};
    const cJSON *runs = jget(j, "runs"), *r;
    cJSON_ArrayForEach(r, runs)
    {
        char b[32];
        table_cell(&t, "%.0f", jnum_or(r, "id", 0));
        table_cell(&t, "%s", jstr(r, "name", ""));
        table_cell(&t, "%s", jstr(r, "state", "?"));
        table_cell(&t, "%s", fnum(b, sizeof b, r, "progress", "%.1f%%", 100.0));
        table_cell(&t, "%.0f/%.0f", jnum_or(r, "problems_done", 0), jnum_or(r, "problems", 0));
        table_cell(&t, "%s", jstr(r, "backend", "-"));
        table_cell(&t, "%s", jstr(r, "device_model", "-"));
    }
    int rc = table_print(&t);
    table_free(&t);
    cJSON_Delete(j);
    return rc == 0 ? 0 : EXIT_ERR;
}

static int state_final(const char *s)
{
    return strcmp(s, "done") == 0 || strcmp(s, "cancelled") == 0 || strcmp(s, "failed") == 0;
}

/* Numbers of a run snapshot shown by both the bar and the plain line. */
typedef struct snap {
    const char *state, *name;
    double progress;
    double cand_done, cand_total, prob_done, prob_total, prob_failed;
    char uplift[32], eta[32], elapsed[32];
} snap;

static void take_snap(const cJSON *j, snap *s)
{
    const cJSON *cands = jget(j, "candidates"), *probs = jget(j, "problems");
    s->state = jstr(j, "state", "?");
    s->name = jstr(j, "name", "");
    s->progress = jnum_or(j, "progress", 0);
    if (s->progress < 0)
        s->progress = 0;
    if (s->progress > 1)
        s->progress = 1;
    s->cand_done = jnum_or(cands, "done", 0);
    s->cand_total = jnum_or(cands, "total", 0);
    s->prob_done = jnum_or(probs, "done", 0);
    s->prob_total = jnum_or(probs, "total", 0);
    s->prob_failed = jnum_or(probs, "failed", 0);
    double v;
    if (jnum(j, "weighted_uplift", &v))
        snprintf(s->uplift, sizeof s->uplift, "%.3fx", v);
    else
        snprintf(s->uplift, sizeof s->uplift, "-");
    if (jnum(j, "eta_s", &v))
        fmt_dur(s->eta, sizeof s->eta, v);
    else
        snprintf(s->eta, sizeof s->eta, "?");
    if (jnum(j, "elapsed_s", &v))
        fmt_dur(s->elapsed, sizeof s->elapsed, v);
    else
        snprintf(s->elapsed, sizeof s->elapsed, "?");
}

static void print_line(int64_t id, const snap *s)
{
    printf("run %" PRId64 " (%s): %s %.1f%%, candidates %.0f/%.0f, problems %.0f/%.0f", id,
           s->name, s->state, s->progress * 100, s->cand_done, s->cand_total, s->prob_done,
           s->prob_total);
    if (s->prob_failed > 0)
        printf(" (%.0f failed)", s->prob_failed);
    printf(", uplift %s, elapsed %s", s->uplift, s->elapsed);
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
    printf("\r[%s] %5.1f%%  cand %.0f/%.0f  prob %.0f/%.0f  uplift %s  ETA %s  %s\033[K", bar,
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

static int cmd_status_run(const cli *c, int64_t id, int wait)
{
    char path[64];
    snprintf(path, sizeof path, "/v1/runs/%" PRId64, id);
    int live = isatty(STDOUT_FILENO);
    int errors = 0, shown = 0;
    for (;;) {
        cJSON *j = NULL;
        int rc = api_get_json(c, path, &j);
        if (rc == API_TRANSPORT && (live || wait) && shown && ++errors <= MAX_POLL_ERRORS) {
            /* A coordinator restart should not end a long wait. */
            if (live)
                putchar('\n');
            errorf("retrying (%d/%d)", errors, MAX_POLL_ERRORS);
            sleep_s(live ? LIVE_INTERVAL_S : PIPE_INTERVAL_S);
            continue;
        }
        if (rc != 0) {
            if (live && shown)
                putchar('\n');
            return EXIT_ERR;
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
        const char *err = jstr(j, "error", NULL);
        if (fin && code && err)
            errorf("run %" PRId64 ": %s", id, err);
        cJSON_Delete(j);
        if (fin || (!live && !wait))
            return code;
        sleep_s(live ? LIVE_INTERVAL_S : PIPE_INTERVAL_S);
    }
}

static int cmd_status(cli *c, int argc, char **argv)
{
    const char *run = NULL;
    int wait = 0;
    for (int i = 0; i < argc; i++) {
        int r = global_opt(c, argc, argv, &i);
        if (r < 0)
            return EXIT_USAGE;
        if (r > 0)
            continue;
        if (strcmp(argv[i], "--wait") == 0) {
            wait = 1;
        } else if (is_option(argv[i])) {
            usage_error("status: unknown option %s", argv[i]);
            return EXIT_USAGE;
        } else if (run) {
            usage_error("status: one RUN only");
            return EXIT_USAGE;
        } else {
            run = argv[i];
        }
    }
    if (!run) {
        if (wait) {
            usage_error("status: --wait needs a RUN");
            return EXIT_USAGE;
        }
        return cmd_status_list(c);
    }
    int64_t id;
    if (parse_run_id(run, &id) != 0)
        return EXIT_USAGE;
    return cmd_status_run(c, id, wait);
}

/* ---- results ---- */

static char *config_text(const cJSON *o)
{
    const cJSON *cfg = jget(o, "config");
    if (!cfg || cJSON_IsNull(cfg))
        return NULL;
    return cJSON_PrintUnformatted(cfg);
}

static int results_best(const cli *c, int64_t id)
{
    char path[64];
    cJSON *j = NULL;
    snprintf(path, sizeof path, "/v1/runs/%" PRId64, id);
    if (api_get_json(c, path, &j) != 0)
        return EXIT_ERR;
    static const char *const head[] = {"PROBLEM", "CALLS",  "WEIGHT%", "BASELINE_US", "TUNED_US",
                                       "UPLIFT",  "TFLOP/S", "CONFIG"};
    table t = {.ncols = 8, .head = head, .align = "lrrrrrrl"};
    const cJSON *best = jget(j, "best"), *b;
    cJSON_ArrayForEach(b, best)
    {
        char b1[32], b2[32], b3[32], b4[32], b5[32];
        char *cfg = config_text(b);
        table_cell(&t, "%s", jstr(b, "label", "?"));
        table_cell(&t, "%.0f", jnum_or(b, "call_count", 0));
        table_cell(&t, "%s", fnum(b1, sizeof b1, b, "weight", "%.1f", 100.0));
        table_cell(&t, "%s", fnum(b2, sizeof b2, b, "baseline_us", "%.2f", 1.0));
        table_cell(&t, "%s", fnum(b3, sizeof b3, b, "time_us", "%.2f", 1.0));
        table_cell(&t, "%s", fnum(b4, sizeof b4, b, "uplift", "%.3fx", 1.0));
        table_cell(&t, "%s", fnum(b5, sizeof b5, b, "tflops", "%.2f", 1.0));
        if (cfg)
            table_cell(&t, "%s", cfg);
        else
            table_cell(&t, "- (%s)", jstr(b, "state", "pending"));
        cJSON_free(cfg);
    }
    int rc = table_print(&t);
    table_free(&t);
    char u[32];
    printf("FLOP-weighted uplift: %s\n", fnum(u, sizeof u, j, "weighted_uplift", "%.3fx", 1.0));
    cJSON_Delete(j);
    return rc == 0 ? 0 : EXIT_ERR;
}

static int results_all(const cli *c, int64_t id)
{
    char path[64];
    cJSON *j = NULL;
    snprintf(path, sizeof path, "/v1/runs/%" PRId64 "/results", id);
    if (api_get_json(c, path, &j) != 0)
        return EXIT_ERR;
    static const char *const head[] = {"PROBLEM", "PHASE",  "BASE",   "TIME_US", "SPREAD%", "TFLOP/S",
                                       "REL_ERR", "VALID",  "DEVICE", "WORKER",  "CONFIG"};
    table t = {.ncols = 11, .head = head, .align = "lllrrrrllrl"};
    const cJSON *res = jget(j, "results"), *r;
    cJSON_ArrayForEach(r, res)
    {
        char b1[32], b2[32], b3[32], b4[32], b5[32];
        char *cfg = config_text(r);
        int valid = cJSON_IsTrue(jget(r, "valid"));
        const char *reason = jstr(r, "reason", NULL);
        table_cell(&t, "%s", jstr(r, "label", "?"));
        table_cell(&t, "%s", jstr(r, "phase", "?"));
        table_cell(&t, "%s", cJSON_IsTrue(jget(r, "baseline")) ? "yes" : "");
        table_cell(&t, "%s", fnum(b1, sizeof b1, r, "time_us", "%.2f", 1.0));
        table_cell(&t, "%s", fnum(b2, sizeof b2, r, "spread", "%.1f", 100.0));
        table_cell(&t, "%s", fnum(b3, sizeof b3, r, "tflops", "%.2f", 1.0));
        table_cell(&t, "%s", fnum(b4, sizeof b4, r, "rel_err", "%.1e", 1.0));
        if (valid)
            table_cell(&t, "yes");
        else
            table_cell(&t, "no: %s", reason ? reason : "?");
        table_cell(&t, "%s", jstr(r, "device_model", "-"));
        table_cell(&t, "%s", fnum(b5, sizeof b5, r, "worker_id", "%.0f", 1.0));
        table_cell(&t, "%s", cfg ? cfg : "-");
        cJSON_free(cfg);
    }
    int rc = table_print(&t);
    table_free(&t);
    cJSON_Delete(j);
    return rc == 0 ? 0 : EXIT_ERR;
}

static int results_csv(const cli *c, int64_t id)
{
    char path[80];
    gt_httpc_resp r;
    snprintf(path, sizeof path, "/v1/runs/%" PRId64 "/results?format=csv", id);
    if (api(c, "GET", path, NULL, 0, &r, NULL) != 0)
        return EXIT_ERR;
    int rc = fwrite(r.body, 1, r.body_len, stdout) == r.body_len && fflush(stdout) == 0 ? 0 : EXIT_ERR;
    if (rc)
        errorf("writing stdout: %s", strerror(errno));
    gt_httpc_resp_free(&r);
    return rc;
}

static int cmd_results(cli *c, int argc, char **argv)
{
    const char *run = NULL;
    int csv = 0, all = 0;
    for (int i = 0; i < argc; i++) {
        int r = global_opt(c, argc, argv, &i);
        if (r < 0)
            return EXIT_USAGE;
        if (r > 0)
            continue;
        if (strcmp(argv[i], "--csv") == 0)
            csv = 1;
        else if (strcmp(argv[i], "--all") == 0)
            all = 1;
        else if (is_option(argv[i])) {
            usage_error("results: unknown option %s", argv[i]);
            return EXIT_USAGE;
        } else if (run) {
            usage_error("results: one RUN only");
            return EXIT_USAGE;
        } else
            run = argv[i];
    }
    int64_t id;
    if (!run) {
        usage_error("results: RUN missing");
        return EXIT_USAGE;
    }
    if (parse_run_id(run, &id) != 0)
        return EXIT_USAGE;
    /* The CSV endpoint lists every result, so --csv --all is just --csv. */
    if (csv)
        return results_csv(c, id);
    return all ? results_all(c, id) : results_best(c, id);
}

/* ---- export / merge ---- */

static int cmd_export(cli *c, int argc, char **argv)
{
    if (gt_report_wants_tunableop(argc, argv))
        return gt_report_export_tunableop(c->server, c->token, argc, argv);
    const char *run = NULL, *out = NULL;
    for (int i = 0; i < argc; i++) {
        int r = global_opt(c, argc, argv, &i);
        if (r == 0)
            r = opt_val(argc, argv, &i, "-o", &out);
        if (r == 0)
            r = opt_val(argc, argv, &i, "--output", &out);
        if (r < 0)
            return EXIT_USAGE;
        if (r > 0)
            continue;
        if (is_option(argv[i])) {
            usage_error("export: unknown option %s", argv[i]);
            return EXIT_USAGE;
        }
        if (run) {
            usage_error("export: one RUN only");
            return EXIT_USAGE;
        }
        run = argv[i];
    }
    int64_t id;
    if (!run || !out) {
        usage_error("export: RUN and -o FILE are required");
        return EXIT_USAGE;
    }
    if (parse_run_id(run, &id) != 0)
        return EXIT_USAGE;
    char path[64], err[512];
    snprintf(path, sizeof path, "/v1/runs/%" PRId64 "/export", id);
    gt_httpc_resp r;
    uint64_t bytes = 0;
    if (gt_httpc_download(c->server, path, c->token, out, &r, &bytes, err, sizeof err) != 0) {
        errorf("%s", err);
        return EXIT_ERR;
    }
    if (r.status < 200 || r.status >= 300) {
        print_server_error(&r);
        gt_httpc_resp_free(&r);
        return EXIT_ERR;
    }
    gt_httpc_resp_free(&r);
    printf("%s: %" PRIu64 " bytes written\n", out, bytes);
    return 0;
}

/* ---- kernel ---- */

/* The path segment of a problem id or key: everything but RFC 3986's
 * unreserved characters percent-encoded (keys hold '/', '=' and ','). */
static int path_escape(const char *s, char *out, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        int plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || strchr("-._~", ch);
        if (n + (plain ? 1 : 3) >= len)
            return -1;
        if (plain) {
            out[n++] = (char)ch;
        } else {
            out[n++] = '%';
            out[n++] = hex[ch >> 4];
            out[n++] = hex[ch & 15];
        }
    }
    out[n] = '\0';
    return 0;
}

static int cmd_kernel(cli *c, int argc, char **argv)
{
    const char *run = NULL, *problem = NULL, *out = NULL, *hash = NULL, *arch = NULL;
    for (int i = 0; i < argc; i++) {
        int r = global_opt(c, argc, argv, &i);
        if (r == 0)
            r = opt_val(argc, argv, &i, "-o", &out);
        if (r == 0)
            r = opt_val(argc, argv, &i, "--output", &out);
        if (r == 0)
            r = opt_val(argc, argv, &i, "--config-hash", &hash);
        if (r == 0)
            r = opt_val(argc, argv, &i, "--arch", &arch);
        if (r < 0)
            return EXIT_USAGE;
        if (r > 0)
            continue;
        if (is_option(argv[i])) {
            usage_error("kernel: unknown option %s", argv[i]);
            return EXIT_USAGE;
        }
        if (run && problem) {
            usage_error("kernel: one RUN and one PROBLEM only");
            return EXIT_USAGE;
        }
        *(run ? &problem : &run) = argv[i];
    }
    int64_t id;
    char seg[2048], path[2400], err[512];
    if (!run || !problem) {
        usage_error("kernel: RUN and PROBLEM (an id or a problem key) are required");
        return EXIT_USAGE;
    }
    if (parse_run_id(run, &id) != 0)
        return EXIT_USAGE;
    if (path_escape(problem, seg, sizeof seg) != 0) {
        usage_error("kernel: PROBLEM is too long");
        return EXIT_USAGE;
    }
    /* hash and arch go through escaped too: the server checks their form */
    char qh[64] = "", qa[64] = "";
    if ((hash && path_escape(hash, qh, sizeof qh) != 0) ||
        (arch && path_escape(arch, qa, sizeof qa) != 0)) {
        usage_error("kernel: --config-hash or --arch too long");
        return EXIT_USAGE;
    }
    /* fits: seg < 2048, each query value < 64 */
    int n = snprintf(path, sizeof path, "/v1/runs/%" PRId64 "/kernels/%s.cuh", id, seg);
    if (hash)
        n += snprintf(path + n, sizeof path - (size_t)n, "?config_hash=%s", qh);
    if (arch)
        snprintf(path + n, sizeof path - (size_t)n, "%carch=%s", hash ? '&' : '?', qa);
    gt_httpc_resp r;
    if (!out || !strcmp(out, "-")) {
        if (api(c, "GET", path, NULL, 0, &r, NULL) != 0)
            return EXIT_ERR;
        int ok = fwrite(r.body, 1, r.body_len, stdout) == r.body_len && fflush(stdout) == 0;
        gt_httpc_resp_free(&r);
        if (!ok) {
            errorf("kernel: writing to stdout: %s", strerror(errno));
            return EXIT_ERR;
        }
        return 0;
    }
    uint64_t bytes = 0;
    if (gt_httpc_download(c->server, path, c->token, out, &r, &bytes, err, sizeof err) != 0) {
        errorf("%s", err);
        return EXIT_ERR;
    }
    if (r.status < 200 || r.status >= 300) {
        print_server_error(&r);
        gt_httpc_resp_free(&r);
        return EXIT_ERR;
    }
    gt_httpc_resp_free(&r);
    printf("%s: %" PRIu64 " bytes written\n", out, bytes);
    return 0;
}

static int cmd_merge(cli *c, int argc, char **argv)
{
    const char *out = NULL;
    const char **in = calloc((size_t)argc + 1, sizeof *in);
    size_t n = 0;
    int ret = EXIT_USAGE;
    if (!in) {
        errorf("out of memory");
        return EXIT_ERR;
    }
    for (int i = 0; i < argc; i++) {
        int r = global_opt(c, argc, argv, &i);
        if (r == 0)
            r = opt_val(argc, argv, &i, "-o", &out);
        if (r == 0)
            r = opt_val(argc, argv, &i, "--output", &out);
        if (r < 0)
            goto done;
        if (r > 0)
            continue;
        if (is_option(argv[i])) {
            usage_error("merge: unknown option %s", argv[i]);
            goto done;
        }
        in[n++] = argv[i];
    }
    if (n == 0 || !out) {
        usage_error("merge: inputs and -o OUT.db are required");
        goto done;
    }
    char err[1024];
    if (gt_export_merge(in, n, out, err, sizeof err) != 0) {
        errorf("merge: %s", err);
        ret = EXIT_ERR;
        goto done;
    }
    printf("%s: merged %zu export%s\n", out, n, n == 1 ? "" : "s");
    ret = 0;
done:
    free(in);
    return ret;
}

/* ---- workers ---- */

static int cmd_workers(cli *c, int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        int r = global_opt(c, argc, argv, &i);
        if (r < 0)
            return EXIT_USAGE;
        if (r == 0) {
            usage_error("workers: unexpected argument %s", argv[i]);
            return EXIT_USAGE;
        }
    }
    cJSON *j = NULL;
    if (api_get_json(c, "/v1/workers", &j) != 0)
        return EXIT_ERR;
    static const char *const head[] = {"ID",    "HOST", "PID",   "DEV",       "BACKEND", "MODEL",
                                       "ARCH",  "UNITS", "MEM",  "STATE",     "SEEN",    "RESULTS"};
    table t = {.ncols = 12, .head = head, .align = "rlrrlllrrlrr"};
    const cJSON *ws = jget(j, "workers"), *w;
    cJSON_ArrayForEach(w, ws)
    {
        char age[32];
        double v;
        table_cell(&t, "%.0f", jnum_or(w, "id", 0));
        table_cell(&t, "%s", jstr(w, "host", "?"));
        table_cell(&t, "%.0f", jnum_or(w, "pid", 0));
        table_cell(&t, "%.0f", jnum_or(w, "device_index", 0));
        table_cell(&t, "%s", jstr(w, "backend", "?"));
        table_cell(&t, "%s", jstr(w, "device_model", "?"));
        table_cell(&t, "%s", jstr(w, "arch", "?"));
        table_cell(&t, "%.0f", jnum_or(w, "units", 0));
        table_cell(&t, "%.1f GiB", jnum_or(w, "mem_bytes", 0) / (1024.0 * 1024 * 1024));
        table_cell(&t, "%s", jstr(w, "state", "?"));
        if (jnum(w, "heartbeat_age_s", &v)) {
            fmt_dur(age, sizeof age, v);
            table_cell(&t, "%s ago", age);
        } else {
            table_cell(&t, "-");
        }
        table_cell(&t, "%.0f", jnum_or(w, "results", 0));
    }
    int rc = table_print(&t);
    table_free(&t);
    cJSON_Delete(j);
    return rc == 0 ? 0 : EXIT_ERR;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
    cli c = {.server = getenv("GEMMTUNE_SERVER"), .token = getenv("GEMMTUNE_TOKEN")};
    if (!c.server || !*c.server)
        c.server = DEFAULT_SERVER;
    int i = 1;
    /* Global options and --help/--version before the command word. */
    for (; i < argc; i++) {
        int r = global_opt(&c, argc, argv, &i);
        if (r < 0)
            return EXIT_USAGE;
        if (r > 0)
            continue;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(k_usage, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("gemmtune %s\n", GT_GEMMTUNE_VERSION);
            return 0;
        }
        if (is_option(argv[i])) {
            usage_error("unknown option %s", argv[i]);
            return EXIT_USAGE;
        }
        break;
    }
    if (i >= argc) {
        usage_error("a command is required");
        return EXIT_USAGE;
    }
    const char *cmd = argv[i];
    int sub_argc = argc - i - 1;
    char **sub_argv = argv + i + 1;
    for (int k = 0; k < sub_argc; k++)
        if (strcmp(sub_argv[k], "--help") == 0 || strcmp(sub_argv[k], "-h") == 0) {
            fputs(k_usage, stdout);
            return 0;
        }
    if (strcmp(cmd, "help") == 0) {
        fputs(k_usage, stdout);
        return 0;
    }
    if (strcmp(cmd, "submit") == 0)
        return cmd_submit(&c, sub_argc, sub_argv);
    if (strcmp(cmd, "status") == 0)
        return cmd_status(&c, sub_argc, sub_argv);
    if (strcmp(cmd, "results") == 0)
        return cmd_results(&c, sub_argc, sub_argv);
    if (strcmp(cmd, "export") == 0)
        return cmd_export(&c, sub_argc, sub_argv);
    if (strcmp(cmd, "merge") == 0)
        return cmd_merge(&c, sub_argc, sub_argv);
    if (strcmp(cmd, "kernel") == 0)
        return cmd_kernel(&c, sub_argc, sub_argv);
    if (strcmp(cmd, "report") == 0)
        return gt_report_main(c.server, c.token, sub_argc, sub_argv);
    if (strcmp(cmd, "workers") == 0)
        return cmd_workers(&c, sub_argc, sub_argv);
    usage_error("unknown command '%s'", cmd);
    return EXIT_USAGE;
}
