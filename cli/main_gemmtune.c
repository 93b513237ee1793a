/* main_gemmtune.c: the gemmtune command-line client.
 *
 * Owns the user-facing commands: submit a workload log as a tuning run,
 * download a run's export or a generated winner's kernel source, merge
 * exports locally, list workers, and the command line itself (usage, global
 * options, dispatch). `status`, `results` and `verify-run` live in
 * cli_runs.c, `report`
 * and `export --tunableop` in report.c, what they share in cli.c. Everything
 * but merge goes through the coordinator's HTTP API (gt_httpc). Exit codes:
 * 0 success, 1 error, 2 usage error, and for `status` 2 also when the run
 * failed or was cancelled; `verify-run`: 0 all passed, 1 one failed, 2 any
 * error. */
#include "gt_cli.h"
#include "gt_export.h"
#include "gt_report.h"
#include "gt_util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_SERVER "http://127.0.0.1:8470"
#define MAX_LOG_BYTES ((size_t)512 << 20)

static const char k_usage[] =
    "usage: gemmtune [--server URL] [--token T] COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  submit LOG [--name N] [--format F] [--backend B] [--strategy S] [--budget N]\n"
    "         [--shard-size N] [--threshold X] [--final-k N] [--skip-invalid]\n"
    "         [--device-model M] [--launch plain|chained|graph] [--fp8-encoding ocp|fnuz]\n"
    "                                     submit a workload log (- for stdin) as a run;\n"
    "                                     --fp8-encoding: what hipBLASLt's f8_r/bf8_r mean\n"
    "                                     (ocp, default: NVIDIA, gfx950; fnuz: gfx942)\n"
    "  status [RUN] [--wait]              list runs (newest first; --limit N, default\n"
    "                                     100, --state S), or show one run's progress (a live\n"
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
    "  verify EXPORT.db [--tolerance F] [--rounds N] [--ci W] [--min-time-ms T]\n"
    "         [--device-model M] [--device N] [--launch plain|chained|graph] [--json]\n"
    "                                     re-time every best entry against its baseline\n"
    "                                     here (paired rounds, cpu entries); exit 1 when\n"
    "                                     one is off its stored uplift by > F (0.02)\n"
    "  verify-run RUN [--tolerance F]     the coordinator re-times a done run's winners\n"
    "                                     on its workers (a verify run, waited for as\n"
    "                                     status --wait does); per GEMM the stored and\n"
    "                                     re-timed uplift, pass when within F (0.02)\n"
    "  workers                            list workers\n"
    "  help, --help, --version\n"
    "\n"
    "global options (anywhere on the line):\n"
    "  --server URL   coordinator (default $GEMMTUNE_SERVER, else " DEFAULT_SERVER ")\n"
    "  --token T      API token, sent as Authorization: Bearer (default $GEMMTUNE_TOKEN)\n"
    "\n"
    "exit status: 0 ok, 1 error, 2 usage error; status: 2 when the run failed or was\n"
    "cancelled, 0 when it is done (or still running, for a single snapshot); verify:\n"
    "1 when an entry failed, was refused or could not be timed; verify-run: 0 all\n"
    "passed, 1 one failed, 2 an error (usage, HTTP, the verify run did not finish).\n";

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

static int add_int_opt(const gt_cli *c, cJSON *o, const char *opt, const char *field,
                       const char *v)
{
    int64_t x;
    if (gt_parse_i64(v, &x) != 0 || x < 0) {
        gt_cli_usage_error(c, "%s: '%s' is not a non-negative integer", opt, v);
        return -1;
    }
    if (!cJSON_AddNumberToObject(o, field, (double)x)) {
        gt_cli_errorf("out of memory");
        return -1;
    }
    return 0;
}

static int cmd_submit(gt_cli *c, int argc, char **argv)
{
    /* Option name -> JSON field; strings are passed through, the server validates. */
    static const char *const str_opts[][2] = {
        {"--name", "name"},         {"--format", "format"},           {"--backend", "backend"},
        {"--strategy", "strategy"}, {"--device-model", "device_model"}, {"--launch", "launch"},
        {"--fp8-encoding", "fp8_encoding"},
    };
    static const char *const int_opts[][2] = {
        {"--budget", "budget"}, {"--shard-size", "shard_size"}, {"--final-k", "final_k"},
    };
    const char *log_path = NULL;
    char *text = NULL, *json = NULL;
    cJSON *req = cJSON_CreateObject(), *resp_j = NULL;
    gt_httpc_resp resp;
    int ret = GT_CLI_EXIT_ERR, skip_invalid = 0;
    memset(&resp, 0, sizeof resp);
    if (!req) {
        gt_cli_errorf("out of memory");
        return GT_CLI_EXIT_ERR;
    }

    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        int r = gt_cli_global_opt(c, argc, argv, &i);
        if (r < 0)
            goto usage;
        if (r > 0)
            continue;
        int matched = 0;
        for (size_t k = 0; !matched && k < sizeof str_opts / sizeof str_opts[0]; k++) {
            r = gt_cli_opt_val(c, argc, argv, &i, str_opts[k][0], &v);
            if (r < 0)
                goto usage;
            if (r > 0) {
                matched = 1;
                cJSON_DeleteItemFromObjectCaseSensitive(req, str_opts[k][1]);
                if (!cJSON_AddStringToObject(req, str_opts[k][1], v)) {
                    gt_cli_errorf("out of memory");
                    goto out;
                }
            }
        }
        for (size_t k = 0; !matched && k < sizeof int_opts / sizeof int_opts[0]; k++) {
            r = gt_cli_opt_val(c, argc, argv, &i, int_opts[k][0], &v);
            if (r < 0)
                goto usage;
            if (r > 0) {
                matched = 1;
                cJSON_DeleteItemFromObjectCaseSensitive(req, int_opts[k][1]);
                if (add_int_opt(c, req, int_opts[k][0], int_opts[k][1], v) != 0)
                    goto usage;
            }
        }
        if (matched)
            continue;
        r = gt_cli_opt_val(c, argc, argv, &i, "--threshold", &v);
        if (r < 0)
            goto usage;
        if (r > 0) {
            char *end;
            errno = 0;
            double x = strtod(v, &end);
            if (errno || end == v || *end || !isfinite(x) || x < 0) {
                gt_cli_usage_error(c, "--threshold: '%s' is not a non-negative number", v);
                goto usage;
            }
            cJSON_DeleteItemFromObjectCaseSensitive(req, "threshold");
            if (!cJSON_AddNumberToObject(req, "threshold", x)) {
                gt_cli_errorf("out of memory");
                goto out;
            }
            continue;
        }
        if (strcmp(argv[i], "--skip-invalid") == 0) {
            skip_invalid = 1;
            continue;
        }
        if (gt_cli_is_option(argv[i])) {
            gt_cli_usage_error(c, "submit: unknown option %s", argv[i]);
            goto usage;
        }
        if (log_path) {
            gt_cli_usage_error(c, "submit: one LOG only (got '%s' and '%s')", log_path, argv[i]);
            goto usage;
        }
        log_path = argv[i];
    }
    if (!log_path) {
        gt_cli_usage_error(c, "submit: LOG missing (a file, or - for stdin)");
        goto usage;
    }
    if (skip_invalid && !cJSON_AddTrueToObject(req, "skip_invalid")) {
        gt_cli_errorf("out of memory");
        goto out;
    }

    size_t len = 0;
    text = strcmp(log_path, "-") == 0 ? read_stdin(&len) : gt_read_file(log_path, &len, MAX_LOG_BYTES);
    if (!text) {
        gt_cli_errorf("%s: %s", strcmp(log_path, "-") == 0 ? "stdin" : log_path,
                      errno == EFBIG ? "larger than 512 MiB" : strerror(errno));
        goto out;
    }
    if (memchr(text, '\0', len)) {
        gt_cli_errorf("%s: contains NUL bytes; a workload log is text", log_path);
        goto out;
    }
    if (!cJSON_AddStringToObject(req, "log", text) || !(json = cJSON_PrintUnformatted(req))) {
        gt_cli_errorf("out of memory");
        goto out;
    }
    free(text);
    text = NULL;

    int rc = gt_cli_api(c, "POST", "/v1/runs", json, strlen(json), &resp, &resp_j);
    if (rc != 0)
        goto out;
    double id = gt_cli_jnum_or(resp_j, "id", -1), problems = gt_cli_jnum_or(resp_j, "problems", 0),
           jobs = gt_cli_jnum_or(resp_j, "jobs", 0),
           cands = gt_cli_jnum_or(resp_j, "candidates", 0);
    printf("run %.0f: %.0f problems, %.0f jobs, %.0f candidates (format %s)\n", id, problems, jobs,
           cands, gt_cli_jstr(resp_j, "format", "?"));
    double dropped = gt_cli_jnum_or(resp_j, "dropped", 0);
    if (dropped > 0)
        printf("  dropped below the threshold: %.0f problem(s)\n", dropped);
    const cJSON *sk = gt_cli_jget(resp_j, "skipped"), *it;
    if (cJSON_IsArray(sk)) {
        cJSON_ArrayForEach(it, sk)
        {
            double line;
            if (gt_cli_jnum(it, "line", &line))
                printf("  skipped line %.0f", line);
            else
                fputs("  skipped", stdout);
            const char *field = gt_cli_jstr(it, "field", NULL);
            if (field)
                printf(" (%s)", field);
            printf(": %s\n", gt_cli_jstr(it, "error", "?"));
        }
    }
    const cJSON *us = gt_cli_jget(resp_j, "unsupported");
    if (cJSON_IsArray(us)) {
        cJSON_ArrayForEach(it, us)
        printf("  left out, the %s backend cannot run %s (%.0f calls): %s\n",
               gt_cli_jstr(resp_j, "backend", "?"), gt_cli_jstr(it, "problem", "?"),
               gt_cli_jnum_or(it, "calls", 0), gt_cli_jstr(it, "error", "?"));
    }
    ret = 0;
    goto out;
usage:
    ret = GT_CLI_EXIT_USAGE;
out:
    free(text);
    cJSON_free(json);
    cJSON_Delete(req);
    cJSON_Delete(resp_j);
    gt_httpc_resp_free(&resp);
    return ret;
}

/* ---- export / merge ---- */

static int cmd_export(gt_cli *c, int argc, char **argv)
{
    if (gt_report_wants_tunableop(argc, argv))
        return gt_report_export_tunableop(c->server, c->token, argc, argv);
    const char *run = NULL, *out = NULL;
    size_t nrun;
    const gt_cli_opt opts[] = {{"-o", &out, NULL}, {"--output", &out, NULL}, {NULL, NULL, NULL}};
    const gt_cli_cmd cmd = {"export", opts, 1, "export: one RUN only"};
    if (gt_cli_parse(c, &cmd, argc, argv, &run, &nrun) != 0)
        return GT_CLI_EXIT_USAGE;
    int64_t id;
    if (!run || !out) {
        gt_cli_usage_error(c, "export: RUN and -o FILE are required");
        return GT_CLI_EXIT_USAGE;
    }
    if (gt_cli_run_id(c, run, &id) != 0)
        return GT_CLI_EXIT_USAGE;
    char path[64];
    snprintf(path, sizeof path, "/v1/runs/%" PRId64 "/export", id);
    return gt_cli_download(c, path, out) == 0 ? 0 : GT_CLI_EXIT_ERR;
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

static int cmd_kernel(gt_cli *c, int argc, char **argv)
{
    const char *words[2] = {NULL, NULL}, *out = NULL, *hash = NULL, *arch = NULL;
    size_t nwords;
    const gt_cli_opt opts[] = {{"-o", &out, NULL},
                               {"--output", &out, NULL},
                               {"--config-hash", &hash, NULL},
                               {"--arch", &arch, NULL},
                               {NULL, NULL, NULL}};
    const gt_cli_cmd cmd = {"kernel", opts, 2, "kernel: one RUN and one PROBLEM only"};
    if (gt_cli_parse(c, &cmd, argc, argv, words, &nwords) != 0)
        return GT_CLI_EXIT_USAGE;
    const char *run = words[0], *problem = words[1];
    int64_t id;
    char seg[2048], path[2400];
    if (!run || !problem) {
        gt_cli_usage_error(c, "kernel: RUN and PROBLEM (an id or a problem key) are required");
        return GT_CLI_EXIT_USAGE;
    }
    if (gt_cli_run_id(c, run, &id) != 0)
        return GT_CLI_EXIT_USAGE;
    if (path_escape(problem, seg, sizeof seg) != 0) {
        gt_cli_usage_error(c, "kernel: PROBLEM is too long");
        return GT_CLI_EXIT_USAGE;
    }
    /* hash and arch go through escaped too: the server checks their form */
    char qh[64] = "", qa[64] = "";
    if ((hash && path_escape(hash, qh, sizeof qh) != 0) ||
        (arch && path_escape(arch, qa, sizeof qa) != 0)) {
        gt_cli_usage_error(c, "kernel: --config-hash or --arch too long");
        return GT_CLI_EXIT_USAGE;
    }
    /* fits: seg < 2048, each query value < 64 */
    int n = snprintf(path, sizeof path, "/v1/runs/%" PRId64 "/kernels/%s.cuh", id, seg);
    if (hash)
        n += snprintf(path + n, sizeof path - (size_t)n, "?config_hash=%s", qh);
    if (arch)
        snprintf(path + n, sizeof path - (size_t)n, "%carch=%s", hash ? '&' : '?', qa);
    int rc = !out || !strcmp(out, "-") ? gt_cli_get_stdout(c, path, "kernel: writing to stdout")
                                        : gt_cli_download(c, path, out);
    return rc == 0 ? 0 : GT_CLI_EXIT_ERR;
}

static int cmd_merge(gt_cli *c, int argc, char **argv)
{
    const char *out = NULL;
    const char **in = calloc((size_t)argc + 1, sizeof *in);
    size_t n = 0;
    int ret = GT_CLI_EXIT_USAGE;
    if (!in) {
        gt_cli_errorf("out of memory");
        return GT_CLI_EXIT_ERR;
    }
    const gt_cli_opt opts[] = {{"-o", &out, NULL}, {"--output", &out, NULL}, {NULL, NULL, NULL}};
    const gt_cli_cmd cmd = {"merge", opts, (size_t)argc, NULL};
    if (gt_cli_parse(c, &cmd, argc, argv, in, &n) != 0)
        goto done;
    if (n == 0 || !out) {
        gt_cli_usage_error(c, "merge: inputs and -o OUT.db are required");
        goto done;
    }
    char err[1024];
    if (gt_export_merge(in, n, out, err, sizeof err) != 0) {
        gt_cli_errorf("merge: %s", err);
        ret = GT_CLI_EXIT_ERR;
        goto done;
    }
    printf("%s: merged %zu export%s\n", out, n, n == 1 ? "" : "s");
    ret = 0;
done:
    free(in);
    return ret;
}

/* ---- workers ---- */

static int cmd_workers(gt_cli *c, int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        int r = gt_cli_global_opt(c, argc, argv, &i);
        if (r < 0)
            return GT_CLI_EXIT_USAGE;
        if (r == 0) {
            gt_cli_usage_error(c, "workers: unexpected argument %s", argv[i]);
            return GT_CLI_EXIT_USAGE;
        }
    }
    cJSON *j = NULL;
    if (gt_cli_get_json(c, "/v1/workers", &j) != 0)
        return GT_CLI_EXIT_ERR;
    static const char *const head[] = {"ID",    "HOST", "PID",   "DEV",       "BACKEND", "MODEL",
                                       "ARCH",  "UNITS", "MEM",  "STATE",     "SEEN",    "RESULTS"};
    gt_cli_table t = {.ncols = 12, .head = head, .align = "rlrrlllrrlrr"};
    const cJSON *ws = gt_cli_jget(j, "workers"), *w;
    cJSON_ArrayForEach(w, ws)
    {
        char age[32];
        double v;
        gt_cli_table_cell(&t, "%.0f", gt_cli_jnum_or(w, "id", 0));
        gt_cli_table_cell(&t, "%s", gt_cli_jstr(w, "host", "?"));
        gt_cli_table_cell(&t, "%.0f", gt_cli_jnum_or(w, "pid", 0));
        gt_cli_table_cell(&t, "%.0f", gt_cli_jnum_or(w, "device_index", 0));
        gt_cli_table_cell(&t, "%s", gt_cli_jstr(w, "backend", "?"));
        gt_cli_table_cell(&t, "%s", gt_cli_jstr(w, "device_model", "?"));
        gt_cli_table_cell(&t, "%s", gt_cli_jstr(w, "arch", "?"));
        gt_cli_table_cell(&t, "%.0f", gt_cli_jnum_or(w, "units", 0));
        gt_cli_table_cell(&t, "%.1f GiB",
                          gt_cli_jnum_or(w, "mem_bytes", 0) / (1024.0 * 1024 * 1024));
        gt_cli_table_cell(&t, "%s", gt_cli_jstr(w, "state", "?"));
        if (gt_cli_jnum(w, "heartbeat_age_s", &v)) {
            gt_cli_fmt_dur(age, sizeof age, v);
            gt_cli_table_cell(&t, "%s ago", age);
        } else {
            gt_cli_table_cell(&t, "-");
        }
        gt_cli_table_cell(&t, "%.0f", gt_cli_jnum_or(w, "results", 0));
    }
    int rc = gt_cli_table_print(&t);
    gt_cli_table_free(&t);
    cJSON_Delete(j);
    return rc == 0 ? 0 : GT_CLI_EXIT_ERR;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
    gt_cli c = {
        .server = getenv("GEMMTUNE_SERVER"), .token = getenv("GEMMTUNE_TOKEN"), .usage = k_usage};
    if (!c.server || !*c.server)
        c.server = DEFAULT_SERVER;
    int i = 1;
    /* Global options and --help/--version before the command word. */
    for (; i < argc; i++) {
        int r = gt_cli_global_opt(&c, argc, argv, &i);
        if (r < 0)
            return GT_CLI_EXIT_USAGE;
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
        if (gt_cli_is_option(argv[i])) {
            gt_cli_usage_error(&c, "unknown option %s", argv[i]);
            return GT_CLI_EXIT_USAGE;
        }
        break;
    }
    if (i >= argc) {
        gt_cli_usage_error(&c, "a command is required");
        return GT_CLI_EXIT_USAGE;
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
        return gt_cli_cmd_status(&c, sub_argc, sub_argv);
    if (strcmp(cmd, "results") == 0)
        return gt_cli_cmd_results(&c, sub_argc, sub_argv);
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
    if (strcmp(cmd, "verify") == 0)
        return gt_cli_cmd_verify(&c, sub_argc, sub_argv);
    if (strcmp(cmd, "verify-run") == 0)
        return gt_cli_cmd_verify_run(&c, sub_argc, sub_argv);
    gt_cli_usage_error(&c, "unknown command '%s'", cmd);
    return GT_CLI_EXIT_USAGE;
}

