/* metrics.c: Prometheus text exposition 0.0.4 for GET /metrics: escaping and
 * sample helpers, the HTTP request registry (counts per route family and
 * status, duration histograms), and the page itself built from the store's
 * counts and write health. Every family gets its HELP and TYPE lines, also
 * when it has no sample yet, so dashboards see the same names from the first
 * scrape. */
#include "gt_metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_export.h" /* GT_GEMMTUNE_VERSION */
#include "gt_store_stats.h"

const double gt_metrics_buckets[GT_METRICS_NBUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                        0.1,   0.25,   0.5,   1,    2.5,   5};

void gt_hist_observe(gt_hist *h, double v)
{
    for (int i = 0; i < GT_METRICS_NBUCKETS; i++)
        if (v <= gt_metrics_buckets[i]) {
            h->in[i]++;
            break;
        }
    h->count++;
    h->sum += v;
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when it is not one
 * (overlong forms, surrogates and code points past U+10FFFF included). */
static size_t utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned min, cp;
    if ((c & 0xe0) == 0xc0) {
        n = 2, min = 0x80, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3, min = 0x800, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) /* also stops at the terminating NUL */
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

int gt_metrics_escape_label(gt_str *b, const char *v)
{
    const unsigned char *p = (const unsigned char *)v;
    int rc = 0;
    while (*p) {
        if (*p == '\\') {
            rc |= gt_str_append(b, "\\\\", 2);
            p++;
        } else if (*p == '"') {
            rc |= gt_str_append(b, "\\\"", 2);
            p++;
        } else if (*p == '\n') {
            rc |= gt_str_append(b, "\\n", 2);
            p++;
        } else {
            size_t n = utf8_len(p);
            if (n) {
                rc |= gt_str_append(b, (const char *)p, n);
                p += n;
            } else {
                rc |= gt_str_append(b, "\xef\xbf\xbd", 3); /* U+FFFD */
                p++;
            }
        }
    }
    return rc ? -1 : 0;
}

int gt_metrics_escape_help(gt_str *b, const char *v)
{
    int rc = 0;
    for (const char *p = v; *p; p++) {
        if (*p == '\\')
            rc |= gt_str_append(b, "\\\\", 2);
        else if (*p == '\n')
            rc |= gt_str_append(b, "\\n", 2);
        else
            rc |= gt_str_append(b, p, 1);
    }
    return rc ? -1 : 0;
}

void gt_metrics_format_value(char *buf, size_t n, double v)
{
    if (isnan(v))
        snprintf(buf, n, "NaN");
    else if (isinf(v))
        snprintf(buf, n, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, n, "%.0f", v); /* counts stay exact integers */
    else
        for (int prec = 6; prec <= 17; prec++) {
            snprintf(buf, n, "%.*g", prec, v);
            if (strtod(buf, NULL) == v)
                break;
        }
}

int gt_metrics_family(gt_str *b, const char *name, const char *type, const char *help)
{
    int rc = gt_str_printf(b, "# HELP %s ", name);
    rc |= gt_metrics_escape_help(b, help);
    rc |= gt_str_printf(b, "\n# TYPE %s %s\n", name, type);
    return rc ? -1 : 0;
}

int gt_metrics_sample(gt_str *b, const char *name, const gt_label *labels, size_t nlabels, double v)
{
    char num[64];
    int rc = gt_str_append(b, name, strlen(name));
    if (nlabels) {
        rc |= gt_str_append(b, "{", 1);
        for (size_t i = 0; i < nlabels; i++) {
            rc |= gt_str_printf(b, "%s%s=\"", i ? "," : "", labels[i].name);
            rc |= gt_metrics_escape_label(b, labels[i].value ? labels[i].value : "");
            rc |= gt_str_append(b, "\"", 1);
        }
        rc |= gt_str_append(b, "}", 1);
    }
    gt_metrics_format_value(num, sizeof num, v);
    rc |= gt_str_printf(b, " %s\n", num);
    return rc ? -1 : 0;
}

int gt_metrics_histogram(gt_str *b, const char *name, const gt_label *labels, size_t nlabels,
                         const gt_hist *h)
{
    gt_label l[8];
    char le[32], series[128];
    if (nlabels > 7)
        return -1;
    memcpy(l, labels, nlabels * sizeof *l);
    l[nlabels].name = "le";
    l[nlabels].value = le;
    snprintf(series, sizeof series, "%s_bucket", name);
    uint64_t cum = 0;
    int rc = 0;
    for (int i = 0; i < GT_METRICS_NBUCKETS; i++) {
        cum += h->in[i];
        snprintf(le, sizeof le, "%g", gt_metrics_buckets[i]);
        rc |= gt_metrics_sample(b, series, l, nlabels + 1, (double)cum);
    }
    snprintf(le, sizeof le, "+Inf");
    rc |= gt_metrics_sample(b, series, l, nlabels + 1, (double)h->count);
    snprintf(series, sizeof series, "%s_sum", name);
    rc |= gt_metrics_sample(b, series, labels, nlabels, h->sum);
    snprintf(series, sizeof series, "%s_count", name);
    rc |= gt_metrics_sample(b, series, labels, nlabels, (double)h->count);
    return rc ? -1 : 0;
}

/* ------------------------------------------------------------ registry */

static const char *const k_routes[GT_ROUTE_COUNT] = {
    "/healthz",          "/readyz",            "/metrics",           "/v1/runs",
    "/v1/runs/{id}",     "/v1/runs/{id}/results", "/v1/runs/{id}/export",
    "/v1/runs/{id}/cancel", "/v1/runs/{id}/events", "/v1/runs/{id}/timeline",
    "/v1/runs/{id}/verify",
    "/v1/workers",       "static",             "other"};

const char *gt_route_name(gt_route r)
{
    return (unsigned)r < GT_ROUTE_COUNT ? k_routes[r] : "other";
}

/* Distinct status codes kept per route; a client cannot make more appear
 * than the handlers answer, so a few slots are plenty. */
#define MAX_CODES 12

struct gt_http_metrics {
    pthread_mutex_t mu;
    struct {
        unsigned code[MAX_CODES];
        uint64_t n[MAX_CODES];
        gt_hist dur;
    } r[GT_ROUTE_COUNT];
};

gt_http_metrics *gt_http_metrics_new(void)
{
    gt_http_metrics *m = calloc(1, sizeof *m);
    if (m && pthread_mutex_init(&m->mu, NULL)) {
        free(m);
        return NULL;
    }
    return m;
}

void gt_http_metrics_free(gt_http_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void gt_http_metrics_observe(gt_http_metrics *m, gt_route r, unsigned code, double seconds)
{
    if (!m)
        return;
    if ((unsigned)r >= GT_ROUTE_COUNT)
        r = GT_ROUTE_OTHER;
    pthread_mutex_lock(&m->mu);
    gt_hist_observe(&m->r[r].dur, seconds);
    for (int i = 0; i < MAX_CODES; i++) {
        if (m->r[r].code[i] == code || m->r[r].code[i] == 0) {
            m->r[r].code[i] = code;
            m->r[r].n[i]++;
            break;
        }
    }
    pthread_mutex_unlock(&m->mu);
}

/* ------------------------------------------------------------ the page */

static int states_family(gt_str *b, const char *name, const char *help,
                         const char *const *states, const int64_t *counts, size_t n)
{
    int rc = gt_metrics_family(b, name, "gauge", help);
    for (size_t i = 0; i < n; i++) {
        gt_label l = {"state", states[i]};
        rc |= gt_metrics_sample(b, name, &l, 1, (double)counts[i]);
    }
    return rc;
}

static int render_store(gt_str *b, const gt_store_stats *st, int64_t now_ms)
{
    int rc = 0;
    rc |= states_family(b, "gemmtune_runs", "Runs by state.", gt_stats_run_states, st->runs,
                        GT_STATS_RUN_STATES);
    rc |= states_family(b, "gemmtune_jobs", "Jobs by state.", gt_stats_job_states, st->jobs,
                        GT_STATS_JOB_STATES);
    rc |= states_family(b, "gemmtune_problems", "Problems (GEMMs of runs) by state.",
                        gt_stats_problem_states, st->problems, GT_STATS_PROBLEM_STATES);
    rc |= gt_metrics_family(b, "gemmtune_results_total", "counter",
                            "Measured candidates stored, by validity (sum them for all).");
    gt_label lv = {"valid", "true"};
    rc |= gt_metrics_sample(b, "gemmtune_results_total", &lv, 1, (double)st->results_valid);
    lv.value = "false";
    rc |= gt_metrics_sample(b, "gemmtune_results_total", &lv, 1, (double)st->results_invalid);
    rc |= gt_metrics_family(b, "gemmtune_results_per_second", "gauge",
                            "Results stored per second over the last 60 s (results.created_ms).");
    rc |= gt_metrics_sample(b, "gemmtune_results_per_second", NULL, 0,
                            (double)st->results_window / 60.0);
    rc |= states_family(b, "gemmtune_workers", "Registered workers by state.",
                        gt_stats_worker_states, st->workers, GT_STATS_WORKER_STATES);
    rc |= gt_metrics_family(b, "gemmtune_worker_last_heartbeat_age_seconds", "gauge",
                            "Seconds since each worker's last heartbeat (workers not gone).");
    for (size_t i = 0; i < st->nw; i++) {
        char id[24];
        snprintf(id, sizeof id, "%lld", (long long)st->w[i].id);
        /* No state label: a label that changes makes a new series. */
        gt_label l[4] = {{"worker", id},
                         {"host", st->w[i].host},
                         {"device_model", st->w[i].device_model},
                         {"backend", st->w[i].backend}};
        double age = (double)(now_ms - st->w[i].last_heartbeat_ms) / 1000.0;
        rc |= gt_metrics_sample(b, "gemmtune_worker_last_heartbeat_age_seconds", l, 4,
                                age > 0 ? age : 0);
    }
    return rc;
}

static int render_http(gt_str *b, const gt_http_metrics *cm)
{
    gt_http_metrics *m = (gt_http_metrics *)cm; /* the lock is not part of the value */
    int rc = 0;
    rc |= gt_metrics_family(b, "gemmtune_http_requests_total", "counter",
                            "HTTP requests answered, by route family and status code.");
    pthread_mutex_lock(&m->mu);
    for (int r = 0; r < GT_ROUTE_COUNT; r++)
        for (int i = 0; i < MAX_CODES && m->r[r].code[i]; i++) {
            char code[16];
            snprintf(code, sizeof code, "%u", m->r[r].code[i]);
            gt_label l[2] = {{"route", k_routes[r]}, {"code", code}};
            rc |= gt_metrics_sample(b, "gemmtune_http_requests_total", l, 2, (double)m->r[r].n[i]);
        }
    rc |= gt_metrics_family(b, "gemmtune_http_request_duration_seconds", "histogram",
                            "Time from a complete request to its queued answer, by route family"
                            " (an event stream counts its set-up only).");
    for (int r = 0; r < GT_ROUTE_COUNT; r++) {
        gt_label l = {"route", k_routes[r]};
        rc |= gt_metrics_histogram(b, "gemmtune_http_request_duration_seconds", &l, 1,
                                   &m->r[r].dur);
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* The store's write health: what /readyz answers on, as series to alert on.
 * Every kind is written from the first scrape, so rate() sees it start at 0. */
static int render_store_health(gt_str *b, gt_store *w)
{
    gt_store_health h;
    gt_store_health_get(w, &h);
    int rc = gt_metrics_family(b, "gemmtune_store_errors_total", "counter",
                               "Failed write transactions of the store by SQLite error class: full"
                               " (database or disk full), io, busy, readonly, lost (refused: the"
                               " database or WAL file was removed or replaced), other.");
    for (int k = 0; k < GT_STORE_ERR_KINDS; k++) {
        gt_label l = {"kind", gt_store_err_kind_name(k)};
        rc |= gt_metrics_sample(b, "gemmtune_store_errors_total", &l, 1, (double)h.errors[k]);
    }
    rc |= gt_metrics_family(b, "gemmtune_store_writable", "gauge",
                            "0 from a failed write transaction of the store until one commits"
                            " changes again (GET /readyz answers 503 meanwhile), else 1.");
    rc |= gt_metrics_sample(b, "gemmtune_store_writable", NULL, 0, h.writable ? 1 : 0);
    rc |= gt_metrics_family(b, "gemmtune_store_last_write_timestamp_seconds", "gauge",
                            "Unix time of the store's last committed write transaction (no sample"
                            " before the first).");
    if (h.last_write_ms > 0)
        rc |= gt_metrics_sample(b, "gemmtune_store_last_write_timestamp_seconds", NULL, 0,
                                (double)h.last_write_ms / 1000.0);
    return rc;
}

/* The worker endpoint's security counters: every refused request by its
 * reason (PROTOCOL.md, Sessions), results the coordinator would not take
 * (below the device's physical bound, a baseline far from the other
 * workers'), and connections bound to sessions. */
static int render_dispatch(gt_str *b, const gt_metrics_inputs *in)
{
    gt_dispatch_stats ds;
    memset(&ds, 0, sizeof ds);
    in->dispatch_stats(in->dispatch_ctx, &ds);
    int rc = gt_metrics_family(b, "gemmtune_worker_refused_total", "counter",
                               "Worker requests refused: bad token, no session, a credential not"
                               " this connection's, another worker's id, results for a job not"
                               " leased to the sender.");
    for (int i = 0; i < GT_DISPATCH_REFUSALS; i++) {
        gt_label l = {"reason", gt_dispatch_refusal_name((gt_dispatch_refusal)i)};
        rc |= gt_metrics_sample(b, "gemmtune_worker_refused_total", &l, 1, (double)ds.refused[i]);
    }
    rc |= gt_metrics_family(b, "gemmtune_results_rejected_total", "counter",
                            "Results stored invalid or baselines dropped by the coordinator's"
                            " checks: times below the device's physical bound, screen baselines"
                            " far from other workers'.");
    rc |= gt_metrics_sample(b, "gemmtune_results_rejected_total", NULL, 0, (double)ds.implausible);
    rc |= gt_metrics_family(b, "gemmtune_worker_sessions", "gauge",
                            "Worker connections bound to an authenticated session.");
    rc |= gt_metrics_sample(b, "gemmtune_worker_sessions", NULL, 0, (double)ds.sessions);
    rc |= gt_metrics_family(b, "gemmtune_worker_leases_before_commit_total", "counter",
                            "Leases that arrived while results were being written, served in"
                            " that transaction and answered before its commit (a lease is soft"
                            " state: lost, its job is leased again).");
    rc |= gt_metrics_sample(b, "gemmtune_worker_leases_before_commit_total", NULL, 0, (double)ds.early_leases);
    rc |= gt_metrics_family(b, "gemmtune_worker_results_replays_total", "counter",
                            "Results transactions in which a message failed after writing:"
                            " rolled back whole and served again, each message in a savepoint"
                            " of its own (the leases answered inside them are lost).");
    rc |= gt_metrics_sample(b, "gemmtune_worker_results_replays_total", NULL, 0, (double)ds.replays);
    rc |= gt_metrics_family(b, "gemmtune_worker_answer_seconds", "histogram",
                            "Seconds from a worker request's arrival at the coordinator to its"
                            " answer (queueing, the store transaction, its commit), per queue:"
                            " lease (leases, registrations, heartbeats, goodbyes; served first)"
                            " and results.");
    for (int q = 0; q < GT_DISPATCH_QUEUES; q++) {
        gt_label l = {"queue", gt_dispatch_queue_name((gt_dispatch_queue)q)};
        rc |= gt_metrics_histogram(b, "gemmtune_worker_answer_seconds", &l, 1, &ds.answer[q]);
    }
    return rc;
}

int gt_metrics_render(gt_str *b, const gt_metrics_inputs *in, char *err, size_t errlen)
{
    gt_store_stats st;
    if (gt_store_stats_collect(in->store, in->now_ms, 60000, in->tally, &st, err, errlen))
        return -1;
    int rc = render_store(b, &st, in->now_ms);
    gt_store_stats_free(&st);
    rc |= render_store_health(b, in->writer ? in->writer : in->store);
    if (in->http)
        rc |= render_http(b, in->http);
    if (in->dispatch_requests) {
        rc |= gt_metrics_family(b, "gemmtune_dispatch_requests_total", "counter",
                                "Worker requests answered by the dispatcher (register, heartbeat,"
                                " lease, results, bye).");
        rc |= gt_metrics_sample(b, "gemmtune_dispatch_requests_total", NULL, 0,
                                (double)in->dispatch_requests(in->dispatch_ctx));
    }
    if (in->dispatch_stats)
        rc |= render_dispatch(b, in);
    rc |= gt_metrics_family(b, "gemmtune_sse_streams", "gauge",
                            "Open /v1/runs/{id}/events streams.");
    rc |= gt_metrics_sample(b, "gemmtune_sse_streams", NULL, 0, (double)in->sse_streams);
    rc |= gt_metrics_family(b, "gemmtune_sse_streams_max", "gauge",
                            "Limit of concurrent event streams (more get 503).");
    rc |= gt_metrics_sample(b, "gemmtune_sse_streams_max", NULL, 0, (double)in->sse_max);
    rc |= gt_metrics_family(b, "gemmtune_build_info", "gauge", "Version of this coordinator.");
    gt_label lv = {"version", GT_GEMMTUNE_VERSION};
    rc |= gt_metrics_sample(b, "gemmtune_build_info", &lv, 1, 1);
    rc |= gt_metrics_family(b, "process_start_time_seconds", "gauge",
                            "Start time of the process since the Unix epoch in seconds.");
    rc |= gt_metrics_sample(b, "process_start_time_seconds", NULL, 0, in->start_time_s);
    if (rc || b->oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}
