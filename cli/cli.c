/* cli.c: what the gemmtune CLI's commands share (gt_cli.h): messages on
 * stderr, option parsing, reading the coordinator's JSON answers and the
 * calls to its HTTP API through gt_httpc. Kept apart from the commands so
 * that `report` and `export --tunableop` (report.c) parse and talk like the
 * others (main_gemmtune.c, cli_runs.c). */
#include "gt_cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"

/* ---- messages ---- */

static void verrorf(const char *fmt, va_list ap)
{
    fputs("gemmtune: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void gt_cli_errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrorf(fmt, ap);
    va_end(ap);
}

void gt_cli_usage_error(const gt_cli *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrorf(fmt, ap);
    va_end(ap);
    if (c->usage) {
        fputc('\n', stderr);
        fputs(c->usage, stderr);
    }
}

/* ---- options ---- */

int gt_cli_opt_val(const gt_cli *c, int argc, char **argv, int *i, const char *name,
                   const char **val)
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
        gt_cli_usage_error(c, "option %s needs a value", name);
        return -1;
    }
    *val = argv[++*i];
    return 1;
}

int gt_cli_global_opt(gt_cli *c, int argc, char **argv, int *i)
{
    int r = gt_cli_opt_val(c, argc, argv, i, "--server", &c->server);
    if (r != 0)
        return r;
    return gt_cli_opt_val(c, argc, argv, i, "--token", &c->token);
}

int gt_cli_is_option(const char *a)
{
    return a[0] == '-' && a[1] != '\0';
}

int gt_cli_run_id(const gt_cli *c, const char *s, int64_t *id)
{
    if (gt_parse_i64(s, id) != 0 || *id <= 0) {
        gt_cli_usage_error(c, "bad run id '%s' (a positive integer)", s);
        return -1;
    }
    return 0;
}

/* One option of cmd at argv[*i]: 1, 0 or -1 as opt_val. */
static int cmd_opt(const gt_cli *c, const gt_cli_cmd *cmd, int argc, char **argv, int *i)
{
    for (const gt_cli_opt *o = cmd->opts; o && o->name; o++) {
        if (o->val) {
            int r = gt_cli_opt_val(c, argc, argv, i, o->name, o->val);
            if (r != 0)
                return r;
        } else if (strcmp(argv[*i], o->name) == 0) {
            *o->flag = 1;
            return 1;
        }
    }
    return 0;
}

int gt_cli_parse(gt_cli *c, const gt_cli_cmd *cmd, int argc, char **argv, const char **words,
                 size_t *nwords)
{
    *nwords = 0;
    for (int i = 0; i < argc; i++) {
        int r = gt_cli_global_opt(c, argc, argv, &i);
        if (r == 0)
            r = cmd_opt(c, cmd, argc, argv, &i);
        if (r < 0)
            return -1;
        if (r > 0)
            continue;
        if (gt_cli_is_option(argv[i])) {
            gt_cli_usage_error(c, "%s: unknown option %s", cmd->name, argv[i]);
            return -1;
        }
        if (*nwords == cmd->max_words) {
            gt_cli_usage_error(c, "%s", cmd->too_many);
            return -1;
        }
        words[(*nwords)++] = argv[i];
    }
    return 0;
}

/* ---- the coordinator's JSON ---- */

const cJSON *gt_cli_jget(const cJSON *o, const char *name)
{
    return o ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
}

int gt_cli_jnum(const cJSON *o, const char *name, double *v)
{
    const cJSON *j = gt_cli_jget(o, name);
    if (!cJSON_IsNumber(j))
        return 0;
    *v = j->valuedouble;
    return 1;
}

double gt_cli_jnum_or(const cJSON *o, const char *name, double dflt)
{
    double v;
    return gt_cli_jnum(o, name, &v) ? v : dflt;
}

const char *gt_cli_jstr(const cJSON *o, const char *name, const char *dflt)
{
    const cJSON *j = gt_cli_jget(o, name);
    return cJSON_IsString(j) && j->valuestring ? j->valuestring : dflt;
}

const char *gt_cli_fnum(char *buf, size_t n, const cJSON *o, const char *name, const char *fmt,
                        double scale)
{
    double v;
    if (!gt_cli_jnum(o, name, &v))
        return "-";
    snprintf(buf, n, fmt, v * scale);
    return buf;
}

void gt_cli_fmt_dur(char *buf, size_t n, double s)
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

/* ---- the HTTP API ---- */

void gt_cli_print_server_error(const gt_httpc_resp *r)
{
    cJSON *j = cJSON_ParseWithLength(r->body, r->body_len);
    const char *e = gt_cli_jstr(j, "error", NULL);
    if (!e) {
        /* Not our JSON (a proxy page?): show the first line of it. */
        size_t n = strcspn(r->body, "\r\n");
        if (n > 200)
            n = 200;
        gt_cli_errorf("server answered HTTP %d%s%.*s", r->status, n ? ": " : "", (int)n, r->body);
        cJSON_Delete(j);
        return;
    }
    gt_cli_errorf("%s (HTTP %d)", e, r->status);
    const cJSON *d = gt_cli_jget(j, "details");
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
            const char *field = gt_cli_jstr(it, "field", NULL);
            const char *msg = gt_cli_jstr(it, "error", "?");
            const char *problem = gt_cli_jstr(it, "problem", NULL);
            if (problem) /* a GEMM the run's backend cannot run */
                fprintf(stderr, "  %s", problem);
            else if (gt_cli_jnum(it, "line", &line))
                fprintf(stderr, "  line %.0f", line);
            else
                fputs("  ", stderr);
            if (field)
                fprintf(stderr, "%s%s", gt_cli_jnum(it, "line", &line) ? ", " : "", field);
            fprintf(stderr, ": %s\n", msg);
        }
    }
    cJSON_Delete(j);
}

int gt_cli_api(const gt_cli *c, const char *method, const char *path, const char *body,
               size_t body_len, gt_httpc_resp *resp, cJSON **out)
{
    char err[512];
    if (out)
        *out = NULL;
    if (gt_httpc_request(c->server, method, path, body ? "application/json" : NULL, body, body_len,
                         c->token, resp, err, sizeof err) != 0) {
        gt_cli_errorf("%s", err); /* names host:port (or the bad URL) already */
        return GT_CLI_API_TRANSPORT;
    }
    if (resp->status < 200 || resp->status >= 300) {
        gt_cli_print_server_error(resp);
        gt_httpc_resp_free(resp);
        return -1;
    }
    if (out) {
        *out = cJSON_ParseWithLength(resp->body, resp->body_len);
        if (!*out) {
            gt_cli_errorf("%s %s: the server's answer is not JSON", method, path);
            gt_httpc_resp_free(resp);
            return -1;
        }
    }
    return 0;
}

int gt_cli_get_json(const gt_cli *c, const char *path, cJSON **out)
{
    gt_httpc_resp r;
    int rc = gt_cli_api(c, "GET", path, NULL, 0, &r, out);
    if (rc == 0)
        gt_httpc_resp_free(&r);
    return rc;
}

int gt_cli_get_stdout(const gt_cli *c, const char *path, const char *what)
{
    gt_httpc_resp r;
    if (gt_cli_api(c, "GET", path, NULL, 0, &r, NULL) != 0)
        return -1;
    int ok = fwrite(r.body, 1, r.body_len, stdout) == r.body_len && fflush(stdout) == 0;
    if (!ok)
        gt_cli_errorf("%s: %s", what, strerror(errno));
    gt_httpc_resp_free(&r);
    return ok ? 0 : -1;
}

int gt_cli_download(const gt_cli *c, const char *path, const char *out)
{
    char err[512];
    gt_httpc_resp r;
    uint64_t bytes = 0;
    if (gt_httpc_download(c->server, path, c->token, out, &r, &bytes, err, sizeof err) != 0) {
        gt_cli_errorf("%s", err);
        return -1;
    }
    if (r.status < 200 || r.status >= 300) {
        gt_cli_print_server_error(&r);
        gt_httpc_resp_free(&r);
        return -1;
    }
    gt_httpc_resp_free(&r);
    printf("%s: %" PRIu64 " bytes written\n", out, bytes);
    return 0;
}
