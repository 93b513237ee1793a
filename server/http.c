/* http.c: the coordinator's HTTP API: the libmicrohttpd server, request
 * bodies collected up to a size limit, bearer-token checks, routing, the
 * request metrics and /metrics. Every answer is JSON (or CSV, an SQLite
 * file, an event stream, the status page, the metrics text where asked);
 * errors are {"error": ..., "details": ...} with the matching status code.
 * The /v1/runs routes are in http_runs.c, the event streams in events.c,
 * the status page in status_page.c. */
#include "gt_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_export.h"
#include "gt_log.h"
#include "gt_store.h"
#include "http_priv.h"

/* ------------------------------------------------------------ responses */

enum MHD_Result gt_http_queue(gt_req *q, unsigned status, struct MHD_Response *r)
{
    enum MHD_Result ret = MHD_queue_response(q->c, status, r);
    if (ret == MHD_YES)
        q->status = status;
    return ret;
}

enum MHD_Result gt_http_send_text(gt_req *q, unsigned status, const char *ctype, char *txt)
{
    if (!txt)
        return MHD_NO;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(txt), txt, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(txt);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"gemmtune\"");
    enum MHD_Result ret = gt_http_queue(q, status, r);
    MHD_destroy_response(r);
    return ret;
}

enum MHD_Result gt_http_send_json(gt_req *q, unsigned status, cJSON *j)
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
    return gt_http_send_text(q, status, "application/json", t2);
}

enum MHD_Result gt_http_send_error(gt_req *q, unsigned status, cJSON *details, const char *fmt,
                                   ...)
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
    return gt_http_send_json(q, status, j);
}

enum MHD_Result gt_http_send_no_problem(gt_req *q, int rc, int64_t run_id, const char *problem)
{
    if (rc == GT_STORE_NO_RUN)
        return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL, "run %lld not found", (long long)run_id);
    return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL,
                              "run %lld has no problem %s (a problem_id of GET /v1/runs/%lld, "
                              "or a problem key)",
                              (long long)run_id, problem, (long long)run_id);
}

/* ------------------------------------------------------------ authentication */

/* Compares in time independent of where the strings differ. */
static int token_eq(const char *want, const char *got)
{
    size_t n = strlen(want), m = strlen(got);
    unsigned char diff = (unsigned char)(n != m);
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(want[i] ^ (i < m ? got[i] : 0));
    return diff == 0;
}

static const char *bearer_of(struct MHD_Connection *c)
{
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!a || strncmp(a, "Bearer ", 7) != 0)
        return NULL;
    return a + 7;
}

/* Mutating requests need the main token (when one is set). */
static int write_ok(gt_http *h, struct MHD_Connection *c)
{
    if (!h->token[0])
        return 1;
    const char *got = bearer_of(c);
    return got && token_eq(h->token, got);
}

/* Reads need the read token or the main token, when a read token is set.
 * /healthz and /readyz stay open for probes and the page's static files hold
 * no data (a browser cannot add a header to a navigation); the page asks
 * for the token and sends it with its API calls. /metrics is guarded:
 * Prometheus sends a bearer token (authorization.credentials). */
static int read_ok(gt_http *h, struct MHD_Connection *c, const char *url)
{
    if (!h->read_token[0] || !strcmp(url, "/healthz") || !strcmp(url, "/readyz") ||
        gt_http_is_static(url))
        return 1;
    const char *got = bearer_of(c);
    return got && (token_eq(h->read_token, got) || (h->token[0] && token_eq(h->token, got)));
}

/* ------------------------------------------------------------ routes */

static enum MHD_Result get_metrics(gt_req *q)
{
    gt_http *h = q->h;
    char err[512];
    gt_str b;
    gt_str_init(&b);
    gt_metrics_inputs in = {
        .store = h->rstore,
        .writer = h->store,
        .tally = &h->tally,
        .http = h->metrics,
        .now_ms = gt_wall_ms(),
        .start_time_s = h->start_time_s,
        .dispatch_requests = h->o.dispatch_requests,
        .dispatch_stats = h->o.dispatch_stats,
        .dispatch_ctx = h->o.dispatch_ctx,
        .sse_streams = gt_events_active(h->events),
        .sse_max = gt_events_max(h->events),
    };
    if (gt_metrics_render(&b, &in, err, sizeof err)) {
        gt_str_free(&b);
        gt_err("metrics: %s", err);
        return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
    }
    if (!b.s) /* nothing appended cannot happen, but never hand NULL on */
        return MHD_NO;
    return gt_http_send_text(q, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", b.s);
}

/* Readiness, apart from /healthz (liveness: the process answers): 503 while
 * the store cannot write, i.e. its last write transaction failed (a full
 * disk, an I/O error) or its files were lost, so that a load balancer or
 * Kubernetes stops sending work the coordinator would refuse; 200 again once
 * a write commits. The reason holds no file path: the route is open. */
/* A query argument as a whole number in [lo, hi]: 0 (absent: *v unchanged), 1, or -1. */
static int arg_int(gt_req *q, const char *name, long long lo, long long hi, long long *v)
{
    const char *a = MHD_lookup_connection_value(q->c, MHD_GET_ARGUMENT_KIND, name);
    int64_t x;
    if (!a)
        return 0;
    if (gt_parse_i64(a, &x) != 0 || x < lo || x > hi)
        return -1;
    *v = x;
    return 1;
}

/* The query arguments GET /v1/runs takes; *cls gets the first other one. */
static const char *const k_runs_args[] = {"limit", "before", "state", "backend", "name"};

static enum MHD_Result first_unknown_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                         const char *value)
{
    (void)kind;
    (void)value;
    for (size_t i = 0; i < sizeof k_runs_args / sizeof k_runs_args[0]; i++)
        if (key && !strcmp(key, k_runs_args[i]))
            return MHD_YES;
    *(const char **)cls = key ? key : "";
    return MHD_NO;
}

/* GET /v1/runs: a page, newest first (limit, before = the previous page's next), filtered
 * by state, backend and name. Paged because the list grows with every run: 1,500 runs
 * answered 267 KB, and each run's counts cost a query. */
static enum MHD_Result get_runs(gt_req *q)
{
    static const char *const states[] = {"running", "done", "cancelled", "failed"};
    static const char *const backends[] = {"cpu", "cuda", "hip"};
    gt_runs_query rq = {.limit = GT_RUNS_LIMIT_DEFAULT};
    long long limit = rq.limit, before = 0;
    char err[256], key[48];
    /* a misspelt filter (?status=done) must not answer every run as if it
     * had been applied */
    const char *unknown = NULL;
    MHD_get_connection_values(q->c, MHD_GET_ARGUMENT_KIND, first_unknown_arg, &unknown);
    if (unknown)
        return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL,
                                  "%.64s: unknown argument (GET /v1/runs takes limit, before, state,"
                                  " backend and name)",
                                  unknown);
    if (arg_int(q, "limit", 1, GT_RUNS_LIMIT_MAX, &limit) < 0)
        return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL,
                                  "limit: expected a whole number from 1 to %d", GT_RUNS_LIMIT_MAX);
    if (arg_int(q, "before", 1, INT64_MAX, &before) < 0)
        return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL,
                                  "before: expected a run id (the previous page's \"next\")");
    rq.limit = (int)limit;
    rq.before = before;
    rq.state = MHD_lookup_connection_value(q->c, MHD_GET_ARGUMENT_KIND, "state");
    rq.backend = MHD_lookup_connection_value(q->c, MHD_GET_ARGUMENT_KIND, "backend");
    rq.name = MHD_lookup_connection_value(q->c, MHD_GET_ARGUMENT_KIND, "name");
    int ok = !rq.state;
    for (size_t i = 0; !ok && i < sizeof states / sizeof states[0]; i++)
        ok = !strcmp(rq.state, states[i]);
    if (!ok)
        return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL,
                                  "state: expected running, done, cancelled or failed");
    ok = !rq.backend;
    for (size_t i = 0; !ok && i < sizeof backends / sizeof backends[0]; i++)
        ok = !strcmp(rq.backend, backends[i]);
    if (!ok)
        return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL, "backend: expected cpu, cuda or hip");
    int cache = gt_http_runs_key(key, sizeof key, &rq) == 0;
    char *hit = cache ? gt_http_cache_get(&q->h->views, key, GT_HTTP_VIEW_TTL_MS) : NULL;
    if (hit)
        return gt_http_send_text(q, MHD_HTTP_OK, "application/json", hit);
    cJSON *j = gt_store_runs_json(q->h->rstore, &rq, err, sizeof err);
    if (!j)
        return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
    if (!cache) {
        char *txt = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        if (!txt)
            return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
        return gt_http_send_text(q, MHD_HTTP_OK, "application/json", txt);
    }
    return gt_http_send_view(q, key, j);
}

static enum MHD_Result get_readyz(gt_req *q)
{
    gt_store_health hl;
    gt_store_health_get(q->h->store, &hl);
    int ready = hl.writable && !hl.lost;
    char reason[320];
    snprintf(reason, sizeof reason, "%s: %s",
             hl.lost ? "store lost its files" : "store cannot write", hl.last_error);
    cJSON *j = cJSON_CreateObject();
    int ok = j && cJSON_AddStringToObject(j, "status", ready ? "ready" : "unavailable") &&
             cJSON_AddBoolToObject(j, "store_writable", ready) &&
             (hl.last_write_ms > 0 ? cJSON_AddNumberToObject(j, "last_write_ms",
                                                             (double)hl.last_write_ms) != NULL
                                   : cJSON_AddNullToObject(j, "last_write_ms") != NULL) &&
             (ready || (cJSON_AddStringToObject(j, "reason", reason) &&
                        cJSON_AddNumberToObject(j, "since_ms", (double)hl.last_error_ms)));
    if (!ok) {
        cJSON_Delete(j);
        return MHD_NO;
    }
    return gt_http_send_json(q, ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, j);
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

/* The route family of a URL, known before authentication so that refused
 * requests are counted where they were aimed. */
static gt_route route_of(const char *url)
{
    if (!strcmp(url, "/healthz"))
        return GT_ROUTE_HEALTHZ;
    if (!strcmp(url, "/readyz"))
        return GT_ROUTE_READYZ;
    if (!strcmp(url, "/metrics"))
        return GT_ROUTE_METRICS;
    if (!strcmp(url, "/v1/runs") || !strcmp(url, "/v1/runs/"))
        return GT_ROUTE_RUNS;
    if (!strcmp(url, "/v1/workers"))
        return GT_ROUTE_WORKERS;
    if (gt_http_is_static(url))
        return GT_ROUTE_STATIC;
    int64_t id;
    const char *sub;
    if (!strncmp(url, "/v1/runs/", 9) && !parse_run_path(url, &id, &sub)) {
        static const struct {
            const char *sub;
            gt_route r;
        } subs[] = {{"", GT_ROUTE_RUN},
                    {"results", GT_ROUTE_RESULTS},
                    {"export", GT_ROUTE_EXPORT},
                    {"cancel", GT_ROUTE_CANCEL},
                    {"events", GT_ROUTE_EVENTS},
                    {"timeline", GT_ROUTE_TIMELINE},
                    {"verify", GT_ROUTE_VERIFY}};
        for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
            if (!strcmp(sub, subs[i].sub))
                return subs[i].r;
    }
    return GT_ROUTE_OTHER;
}

static enum MHD_Result route(gt_req *q, const char *url, const char *method)
{
    gt_http *h = q->h;
    struct MHD_Connection *c = q->c;
    char err[512];
    int reading = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    q->route = route_of(url);
    if (!reading && !write_ok(h, c))
        return gt_http_send_error(q, MHD_HTTP_UNAUTHORIZED, NULL,
                                  "unauthorized: send Authorization: Bearer <token>");
    if (reading && !read_ok(h, c, url))
        return gt_http_send_error(q, MHD_HTTP_UNAUTHORIZED, NULL,
                                  "unauthorized: send Authorization: Bearer <read token or token>");
    if (!strcmp(url, "/healthz")) {
        cJSON *j = cJSON_CreateObject();
        if (j && (!cJSON_AddStringToObject(j, "status", "ok") ||
                  !cJSON_AddStringToObject(j, "version", GT_GEMMTUNE_VERSION))) {
            cJSON_Delete(j);
            return MHD_NO;
        }
        return gt_http_send_json(q, MHD_HTTP_OK, j);
    }
    if (!strcmp(url, "/readyz")) {
        if (!reading)
            return gt_http_send_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET");
        return get_readyz(q);
    }
    if (!strcmp(url, "/metrics")) {
        if (!reading)
            return gt_http_send_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET");
        return get_metrics(q);
    }
    if (!strcmp(url, "/v1/runs") || !strcmp(url, "/v1/runs/")) {
        if (!strcmp(method, "POST"))
            return gt_http_post_run(q);
        if (!strcmp(method, "GET"))
            return get_runs(q);
        return gt_http_send_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET or POST");
    }
    if (!strncmp(url, "/v1/runs/", 9)) {
        int64_t id;
        const char *sub;
        if (parse_run_path(url, &id, &sub))
            return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL,
                                      "bad run path %s: expected /v1/runs/<id>", url);
        return gt_http_run_routes(q, method, id, sub);
    }
    if (!strcmp(url, "/v1/workers")) {
        if (strcmp(method, "GET"))
            return gt_http_send_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET");
        cJSON *j = gt_store_workers_json(h->rstore, gt_wall_ms(), err, sizeof err);
        if (!j)
            return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
        return gt_http_send_json(q, MHD_HTTP_OK, j);
    }
    if (gt_http_is_static(url)) {
        if (!reading)
            return gt_http_send_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET");
        return gt_http_static(q, url);
    }
    return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL, "no such resource %s", url);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    gt_http *h = cls;
    (void)version;
    gt_req *q = *con_cls;
    if (!q) {
        /* First call: headers only. Set up the body buffer. */
        q = calloc(1, sizeof *q);
        if (!q)
            return MHD_NO;
        q->h = h;
        q->c = c;
        q->route = GT_ROUTE_OTHER;
        gt_str_init(&q->body);
        *con_cls = q;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!q->too_large && q->body.len + *upload_size > h->o.max_body) {
            q->too_large = 1; /* keep reading (and dropping) so we can answer */
            gt_str_free(&q->body);
        }
        if (!q->too_large && gt_str_append(&q->body, upload, *upload_size))
            q->too_large = 1;
        *upload_size = 0;
        return MHD_YES;
    }
    double t0 = gt_mono_ms();
    enum MHD_Result ret;
    if (q->too_large) {
        q->route = route_of(url);
        ret = gt_http_send_error(q, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
                                 "request body larger than the limit of %zu bytes", h->o.max_body);
    } else {
        ret = route(q, url, method);
    }
    double ms = gt_mono_ms() - t0;
    /* A handler that could not even queue an answer (out of memory) makes
     * MHD close the connection: there is no status to count. */
    if (q->status)
        gt_http_metrics_observe(h->metrics, q->route, q->status, ms / 1000.0);
    gt_debug("http %s %s %u %.1f ms", method, url, q->status, ms);
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    gt_req *q = *con_cls;
    if (q) {
        gt_str_free(&q->body);
        free(q);
        *con_cls = NULL;
    }
}

/* The cached views' keys, written here beside render_view, which reads them
 * back: "run/<id>" and "runs?<limit>&<before>&<state>&<backend>". */
void gt_http_run_key(char *key, size_t len, int64_t id)
{
    snprintf(key, len, "run/%lld", (long long)id);
}

int gt_http_runs_key(char *key, size_t len, const gt_runs_query *rq)
{
    /* a name filter is not cached (a key that does not fit is neither found nor kept) */
    if (rq->name)
        return -1;
    int n = snprintf(key, len, GT_HTTP_RUNS_KEY_PREFIX "%d&%lld&%s&%s", rq->limit, (long long)rq->before,
                     rq->state ? rq->state : "", rq->backend ? rq->backend : "");
    return n > 0 && (size_t)n < len ? 0 : -1;
}

void gt_http_renew_views(gt_http *h, int64_t id)
{
    char run[48], list[48];
    const char *also[2];
    size_t n = 0;
    gt_runs_query rq = {.limit = GT_RUNS_LIMIT_DEFAULT};
    if (id > 0) {
        gt_http_run_key(run, sizeof run, id);
        also[n++] = run;
    }
    if (gt_http_runs_key(list, sizeof list, &rq) == 0)
        also[n++] = list;
    gt_http_cache_renew(&h->views, also, n, GT_HTTP_RUNS_KEY_PREFIX);
}

/* The refresher's renderer (http_cache.c): a cached view again, from its key
 * alone (gt_http_run_key's or gt_http_runs_key's). */
static char *render_view(void *ctx, const char *key)
{
    gt_http *h = ctx;
    char err[256];
    long long id = 0, before = 0;
    int limit = 0, n = 0;
    if (sscanf(key, "run/%lld%n", &id, &n) == 1 && !key[n]) {
        int found = 0;
        return gt_http_view_text(gt_store_run_json(h->rstore, id, gt_wall_ms(), &found, err, sizeof err));
    }
    if (sscanf(key, GT_HTTP_RUNS_KEY_PREFIX "%d&%lld&%n", &limit, &before, &n) == 2 && n > 0) {
        char state[16] = "", backend[16] = "";
        const char *p = key + n, *amp = strchr(p, '&');
        if (!amp || (size_t)(amp - p) >= sizeof state || strlen(amp + 1) >= sizeof backend ||
            strchr(amp + 1, '&'))
            return NULL; /* not a key gt_http_runs_key writes */
        memcpy(state, p, (size_t)(amp - p));
        strcpy(backend, amp + 1);
        gt_runs_query rq = {.limit = limit, .before = before, .state = state[0] ? state : NULL,
                            .backend = backend[0] ? backend : NULL};
        return gt_http_view_text(gt_store_runs_json(h->rstore, &rq, err, sizeof err));
    }
    return NULL;
}

static void http_free(gt_http *h)
{
    gt_events_free(h->events);
    gt_http_cache_fini(&h->views);
    if (h->own_rstore)
        gt_store_close(h->rstore);
    gt_http_metrics_free(h->metrics);
    free(h);
}

gt_http *gt_http_start(gt_store *s, const gt_http_opts *o, char *err, size_t errlen)
{
    gt_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->store = s;
    if (gt_http_cache_init(&h->views)) {
        free(h);
        snprintf(err, errlen, "mutex init failed");
        return NULL;
    }
    h->rstore = gt_store_open_reader(s, err, errlen);
    if (h->rstore) {
        h->own_rstore = 1;
    } else if (err[0]) {
        gt_http_cache_fini(&h->views);
        free(h);
        return NULL;
    } else {
        h->rstore = s; /* in-memory database: one connection for all */
    }
    /* without the thread, a request renders an expired view itself, as before */
    if (gt_http_cache_start(&h->views, render_view, h))
        gt_warn("http: no view refresher thread; requests render expired views");
    h->o = *o;
    h->start_time_s = (double)gt_wall_ms() / 1000.0;
    snprintf(h->data_dir, sizeof h->data_dir, "%s", o->data_dir ? o->data_dir : ".");
    snprintf(h->token, sizeof h->token, "%s", o->token ? o->token : "");
    snprintf(h->read_token, sizeof h->read_token, "%s", o->read_token ? o->read_token : "");
    snprintf(h->source, sizeof h->source, "%s", o->source ? o->source : "gemmtuned");
    if (!h->o.max_body)
        h->o.max_body = 64u << 20;
    if (!(h->metrics = gt_http_metrics_new()) ||
        !(h->events = gt_events_new(h->rstore, GT_EVENTS_MAX_STREAMS))) {
        snprintf(err, errlen, "out of memory or threads");
        http_free(h);
        return NULL;
    }
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)o->port);
    if (inet_pton(AF_INET, o->addr ? o->addr : "127.0.0.1", &sa.sin_addr) != 1) {
        snprintf(err, errlen, "bad HTTP bind address %s (an IPv4 address is expected)", o->addr);
        http_free(h);
        return NULL;
    }
    /* Suspend/resume lets an event stream wait for news without holding one
     * of the pool's threads (events.c). */
    h->d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG |
            MHD_ALLOW_SUSPEND_RESUME,
        (uint16_t)o->port, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)(o->threads ? o->threads : 4), MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(o->max_conns ? o->max_conns : 256), MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)60, MHD_OPTION_END);
    if (!h->d) {
        snprintf(err, errlen, "cannot listen on http://%s:%d: %s", o->addr ? o->addr : "127.0.0.1",
                 o->port, strerror(errno));
        http_free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : o->port;
    gt_info("HTTP API on http://%s:%d (status page at /)", o->addr ? o->addr : "127.0.0.1",
            h->port);
    if (h->read_token[0])
        gt_info("read token on: GET requests (but /healthz, /readyz and the page files) need"
                " a token");
    if (h->read_token[0] && !h->token[0])
        gt_warn("a read token without a token leaves POST requests open");
    return h;
}

int gt_http_port(const gt_http *h) { return h->port; }

void gt_http_stop(gt_http *h)
{
    if (!h)
        return;
    /* Streams first: MHD must find no connection suspended when it stops. */
    gt_events_shutdown(h->events);
    MHD_stop_daemon(h->d);
    http_free(h);
}
