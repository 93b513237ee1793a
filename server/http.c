/* http.c: the coordinator's HTTP JSON API. Request bodies are collected per
 * connection up to a size limit; every answer is JSON (or CSV / an SQLite
 * file where asked), errors are {"error": ..., "details": ...} with the
 * matching status code. */
#include "gt_http.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gt_export.h"
#include "gt_log.h"
#include "gt_util.h"

struct gt_http {
    struct MHD_Daemon *d;
    gt_store *store;
    gt_http_opts o;
    char data_dir[1024];
    char token[256];
    char source[256];
    int port;
};

/* Per-request state: the body collected so far. */
typedef struct req_ctx {
    gt_str body;
    int too_large;
} req_ctx;

/* ------------------------------------------------------------ responses */

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, const char *ctype,
                                 char *txt /* malloc'd, taken */)
{
    if (!txt)
        return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(txt), txt, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(txt);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, cJSON *j /* taken */)
{
    if (!j)
        return MHD_NO;
    char *txt = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!txt)
        return MHD_NO;
    /* A trailing newline keeps curl output readable in a terminal. */
    size_t n = strlen(txt);
    char *t2 = realloc(txt, n + 2);
    if (!t2) {
        free(txt);
        return MHD_NO;
    }
    t2[n] = '\n';
    t2[n + 1] = '\0';
    return send_text(c, status, "application/json", t2);
}

/* details: NULL, or a cJSON value that is taken. */
static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, cJSON *details,
                                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, cJSON *details,
                                  const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *j = cJSON_CreateObject();
    if (!j || !cJSON_AddStringToObject(j, "error", msg)) {
        cJSON_Delete(j);
        cJSON_Delete(details);
        return MHD_NO;
    }
    if (details)
        cJSON_AddItemToObject(j, "details", details);
    return send_json(c, status, j);
}

/* ------------------------------------------------------------ handlers */

static int bearer_ok(gt_http *h, struct MHD_Connection *c)
{
    if (!h->token[0])
        return 1;
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!a || strncmp(a, "Bearer ", 7) != 0)
        return 0;
    const char *got = a + 7;
    size_t n = strlen(h->token), m = strlen(got);
    unsigned char diff = (unsigned char)(n != m);
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(h->token[i] ^ (i < m ? got[i] : 0));
    return diff == 0;
}

typedef struct query_opts {
    gt_run_opts *o;
    char err[256];
    int bad;
} query_opts;

static enum MHD_Result query_opt(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    query_opts *q = cls;
    if (q->bad)
        return MHD_NO;
    if (gt_run_opts_set(q->o, key, value ? value : "", q->err, sizeof q->err)) {
        q->bad = 1;
        return MHD_NO;
    }
    return MHD_YES;
}

static cJSON *errors_json(const gt_log_result *res)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return NULL;
    for (size_t i = 0; i < res->nerrors && i < GT_LOG_MAX_ERRORS; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(arr, e)) {
            cJSON_Delete(e);
            cJSON_Delete(arr);
            return NULL;
        }
        if (!cJSON_AddNumberToObject(e, "line", res->errors[i].line) ||
            !cJSON_AddStringToObject(e, "field", res->errors[i].field) ||
            !cJSON_AddStringToObject(e, "error", res->errors[i].msg)) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

static enum MHD_Result post_run(gt_http *h, struct MHD_Connection *c, req_ctx *rc)
{
    char err[512];
    gt_run_opts o;
    gt_run_opts_default(&o);
    o.log.max_lines = h->o.max_log_lines;
    const char *text = rc->body.s ? rc->body.s : "";
    size_t len = rc->body.len;
    cJSON *body = NULL;
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (ct && !strncmp(ct, "application/json", 16)) {
        body = cJSON_ParseWithLength(text, len);
        if (!cJSON_IsObject(body)) {
            cJSON_Delete(body);
            return send_error(c, MHD_HTTP_BAD_REQUEST, NULL,
                              "request body is not a JSON object (send the log as text/plain, or"
                              " JSON {\"log\": ..., options})");
        }
        const cJSON *log = cJSON_GetObjectItemCaseSensitive(body, "log");
        if (!cJSON_IsString(log)) {
            cJSON_Delete(body);
            return send_error(c, MHD_HTTP_BAD_REQUEST, NULL, "field log: missing or not a string");
        }
        if (gt_run_opts_from_json(&o, body, err, sizeof err)) {
            cJSON_Delete(body);
            gt_run_opts_fini(&o);
            return send_error(c, MHD_HTTP_BAD_REQUEST, NULL, "%s", err);
        }
        text = log->valuestring;
        len = strlen(text);
    } else {
        query_opts q = {.o = &o};
        MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_opt, &q);
        if (q.bad)
            return send_error(c, MHD_HTTP_BAD_REQUEST, NULL, "%s", q.err);
    }
    o.log.max_lines = h->o.max_log_lines;
    gt_log_result res;
    int prc = gt_log_parse(text, len, &o.log, &res);
    enum MHD_Result ret;
    if (prc != 0) {
        cJSON *details = errors_json(&res);
        ret = send_error(c, MHD_HTTP_UNPROCESSABLE_CONTENT, details,
                         "log rejected: %zu invalid line%s (format %s)%s", res.nerrors,
                         res.nerrors == 1 ? "" : "s", gt_log_format_name(res.format),
                         res.nerrors > GT_LOG_MAX_ERRORS ? "; the first 50 are listed" : "");
        goto out;
    }
    gt_run_created cr;
    if (gt_store_create_run(h->store, &o, &res, &cr, err, sizeof err)) {
        gt_err("create run: %s", err);
        ret = send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "cannot create the run: %s", err);
        goto out;
    }
    gt_info("run %lld created: %zu problems, %zu jobs, %zu candidates (%s, backend %s)",
            (long long)cr.id, cr.problems, cr.jobs, cr.candidates, gt_log_format_name(res.format),
            o.backend);
    cJSON *j = cJSON_CreateObject();
    cJSON *sk = errors_json(&res);
    if (!j || !sk || !cJSON_AddNumberToObject(j, "id", (double)cr.id) ||
        !cJSON_AddStringToObject(j, "format", gt_log_format_name(res.format)) ||
        !cJSON_AddStringToObject(j, "backend", o.backend) ||
        !cJSON_AddNumberToObject(j, "problems", (double)cr.problems) ||
        !cJSON_AddNumberToObject(j, "dropped", (double)res.dropped) ||
        !cJSON_AddNumberToObject(j, "jobs", (double)cr.jobs) ||
        !cJSON_AddNumberToObject(j, "candidates", (double)cr.candidates) ||
        !cJSON_AddNumberToObject(j, "gemm_lines", (double)res.gemm_lines)) {
        cJSON_Delete(j);
        cJSON_Delete(sk);
        ret = MHD_NO;
        goto out;
    }
    cJSON_AddItemToObject(j, "skipped", sk);
    ret = send_json(c, MHD_HTTP_CREATED, j);
out:
    gt_log_result_free(&res);
    cJSON_Delete(body);
    gt_run_opts_fini(&o);
    return ret;
}

static enum MHD_Result get_export(gt_http *h, struct MHD_Connection *c, int64_t id)
{
    char err[512], path[1200], source[400];
    int ex = gt_store_run_exists(h->store, id);
    if (ex == 0)
        return send_error(c, MHD_HTTP_NOT_FOUND, NULL, "run %lld not found", (long long)id);
    if (ex < 0)
        return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "database error");
    /* The file name is ours, never from the request: nothing a client sends
     * reaches the filesystem. */
    snprintf(path, sizeof path, "%s/export-run%lld-%d-%lld.db", h->data_dir, (long long)id,
             (int)getpid(), (long long)gt_wall_ms());
    snprintf(source, sizeof source, "%s/run/%lld", h->source, (long long)id);
    gt_store_lock(h->store);
    int rc = gt_export_run(gt_store_db(h->store), id, source, path, err, sizeof err);
    gt_store_unlock(h->store);
    if (rc) {
        gt_err("export run %lld: %s", (long long)id, err);
        return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "export failed: %s", err);
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    unlink(path); /* the open descriptor keeps the data until the response is sent */
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        if (fd >= 0)
            close(fd);
        return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "export file vanished");
    }
    struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)sb.st_size, fd);
    if (!r) {
        close(fd);
        return MHD_NO;
    }
    char disp[128];
    snprintf(disp, sizeof disp, "attachment; filename=\"gemmtune-run%lld.db\"", (long long)id);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/vnd.sqlite3");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result run_routes(gt_http *h, struct MHD_Connection *c, const char *method,
                                  int64_t id, const char *sub, req_ctx *rc)
{
    char err[512];
    int found = 0;
    (void)rc;
    if (!*sub) {
        if (strcmp(method, "GET"))
            return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET");
        cJSON *j = gt_store_run_json(h->store, id, gt_wall_ms(), &found, err, sizeof err);
        if (!found)
            return send_error(c, MHD_HTTP_NOT_FOUND, NULL, "run %lld not found", (long long)id);
        if (!j)
            return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
        return send_json(c, MHD_HTTP_OK, j);
    }
    if (!strcmp(sub, "results")) {
        if (strcmp(method, "GET"))
            return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET");
        const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
        if (fmt && !strcmp(fmt, "csv")) {
            char *csv = gt_store_results_csv(h->store, id, &found, err, sizeof err);
            if (!found)
                return send_error(c, MHD_HTTP_NOT_FOUND, NULL, "run %lld not found", (long long)id);
            if (!csv)
                return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
            return send_text(c, MHD_HTTP_OK, "text/csv", csv);
        }
        if (fmt && strcmp(fmt, "json"))
            return send_error(c, MHD_HTTP_BAD_REQUEST, NULL, "format=%s: use json or csv", fmt);
        cJSON *j = gt_store_results_json(h->store, id, &found, err, sizeof err);
        if (!found)
            return send_error(c, MHD_HTTP_NOT_FOUND, NULL, "run %lld not found", (long long)id);
        if (!j)
            return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
        return send_json(c, MHD_HTTP_OK, j);
    }
    if (!strcmp(sub, "export")) {
        if (strcmp(method, "GET"))
            return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET");
        return get_export(h, c, id);
    }
    if (!strcmp(sub, "cancel")) {
        if (strcmp(method, "POST"))
            return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use POST");
        int r = gt_store_cancel_run(h->store, id, err, sizeof err);
        if (r == 1)
            return send_error(c, MHD_HTTP_NOT_FOUND, NULL, "run %lld not found", (long long)id);
        if (r < 0)
            return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
        gt_info("run %lld cancelled", (long long)id);
        cJSON *j = gt_store_run_json(h->store, id, gt_wall_ms(), &found, err, sizeof err);
        if (!j)
            return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
        return send_json(c, MHD_HTTP_OK, j);
    }
    return send_error(c, MHD_HTTP_NOT_FOUND, NULL, "no such resource /v1/runs/%lld/%s",
                      (long long)id, sub);
}

/* Parses "/v1/runs/<digits>[/<sub>]"; returns 0 and the id and sub-path. */
static int parse_run_path(const char *url, int64_t *id, const char **sub)
{
    const char *p = url + strlen("/v1/runs/");
    if (*p < '0' || *p > '9')
        return -1;
    int64_t v = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
        if (++digits > 15)
            return -1;
        v = v * 10 + (*p++ - '0');
    }
    if (*p == '\0') {
        *sub = "";
    } else if (*p == '/') {
        *sub = p + 1;
    } else {
        return -1;
    }
    *id = v;
    return 0;
}

static enum MHD_Result route(gt_http *h, struct MHD_Connection *c, const char *url,
                             const char *method, req_ctx *rc)
{
    char err[512];
    int mutating = strcmp(method, "GET") && strcmp(method, "HEAD");
    if (mutating && !bearer_ok(h, c))
        return send_error(c, MHD_HTTP_UNAUTHORIZED, NULL,
                          "unauthorized: send Authorization: Bearer <token>");
    if (!strcmp(url, "/healthz")) {
        cJSON *j = cJSON_CreateObject();
        if (j && (!cJSON_AddStringToObject(j, "status", "ok") ||
                  !cJSON_AddStringToObject(j, "version", GT_GEMMTUNE_VERSION))) {
            cJSON_Delete(j);
            return MHD_NO;
        }
        return send_json(c, MHD_HTTP_OK, j);
    }
    if (!strcmp(url, "/v1/runs") || !strcmp(url, "/v1/runs/")) {
        if (!strcmp(method, "POST"))
            return post_run(h, c, rc);
        if (!strcmp(method, "GET")) {
            cJSON *j = gt_store_runs_json(h->store, err, sizeof err);
            if (!j)
                return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
            return send_json(c, MHD_HTTP_OK, j);
        }
        return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET or POST");
    }
    if (!strncmp(url, "/v1/runs/", 9)) {
        int64_t id;
        const char *sub;
        if (parse_run_path(url, &id, &sub))
            return send_error(c, MHD_HTTP_NOT_FOUND, NULL, "bad run path %s: expected /v1/runs/<id>",
                              url);
        return run_routes(h, c, method, id, sub, rc);
    }
    if (!strcmp(url, "/v1/workers")) {
        if (strcmp(method, "GET"))
            return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET");
        cJSON *j = gt_store_workers_json(h->store, gt_wall_ms(), err, sizeof err);
        if (!j)
            return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
        return send_json(c, MHD_HTTP_OK, j);
    }
    return send_error(c, MHD_HTTP_NOT_FOUND, NULL, "no such resource %s", url);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    gt_http *h = cls;
    (void)version;
    req_ctx *rc = *con_cls;
    if (!rc) {
        /* First call: headers only. Set up the body buffer. */
        rc = calloc(1, sizeof *rc);
        if (!rc)
            return MHD_NO;
        gt_str_init(&rc->body);
        *con_cls = rc;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!rc->too_large && rc->body.len + *upload_size > h->o.max_body) {
            rc->too_large = 1; /* keep reading (and dropping) so we can answer */
            gt_str_free(&rc->body);
        }
        if (!rc->too_large && gt_str_append(&rc->body, upload, *upload_size))
            rc->too_large = 1;
        *upload_size = 0;
        return MHD_YES;
    }
    if (rc->too_large)
        return send_error(c, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
                          "request body larger than the limit of %zu bytes", h->o.max_body);
    double t0 = gt_mono_ms();
    enum MHD_Result ret = route(h, c, url, method, rc);
    gt_debug("http %s %s %.1f ms", method, url, gt_mono_ms() - t0);
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    req_ctx *rc = *con_cls;
    if (rc) {
        gt_str_free(&rc->body);
        free(rc);
        *con_cls = NULL;
    }
}

gt_http *gt_http_start(gt_store *s, const gt_http_opts *o, char *err, size_t errlen)
{
    gt_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->store = s;
    h->o = *o;
    snprintf(h->data_dir, sizeof h->data_dir, "%s", o->data_dir ? o->data_dir : ".");
    snprintf(h->token, sizeof h->token, "%s", o->token ? o->token : "");
    snprintf(h->source, sizeof h->source, "%s", o->source ? o->source : "gemmtuned");
    if (!h->o.max_body)
        h->o.max_body = 64u << 20;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)o->port);
    if (inet_pton(AF_INET, o->addr ? o->addr : "127.0.0.1", &sa.sin_addr) != 1) {
        snprintf(err, errlen, "bad HTTP bind address %s (an IPv4 address is expected)", o->addr);
        free(h);
        return NULL;
    }
    h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG,
                            (uint16_t)o->port, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(o->threads ? o->threads : 4),
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)(o->max_conns ? o->max_conns : 256),
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_END);
    if (!h->d) {
        snprintf(err, errlen, "cannot listen on http://%s:%d: %s", o->addr ? o->addr : "127.0.0.1",
                 o->port, strerror(errno));
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : o->port;
    gt_info("HTTP API on http://%s:%d", o->addr ? o->addr : "127.0.0.1", h->port);
    return h;
}

int gt_http_port(const gt_http *h) { return h->port; }

void gt_http_stop(gt_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    free(h);
}
