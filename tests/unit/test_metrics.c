/* test_metrics.c: the Prometheus text helpers of server/metrics.c (label
 * and HELP escaping, UTF-8 repair, value formatting, sample lines,
 * cumulative histogram buckets), the /metrics page built from a real store
 * (hostile worker names, the incremental results tally and its recount),
 * and the HTTP server in-process: the read token, open /healthz and page
 * files, the dispatcher callback, the timeline and event routes' errors. */
#include "gt_http.h"
#include "gt_httpc.h"
#include "gt_metrics.h"
#include "gt_store_stats.h"
#include "gt_test.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Escapes v with f into a fresh string and compares with want. */
static int escaped_is(int (*f)(gt_str *, const char *), const char *v, const char *want)
{
    gt_str b;
    gt_str_init(&b);
    int rc = f(&b, v);
    const char *got = b.s ? b.s : ""; /* nothing appended: no buffer yet */
    int ok = rc == 0 && !strcmp(got, want);
    if (!ok)
        fprintf(stderr, "  escaped '%s' -> '%s', want '%s'\n", v, got, want);
    gt_str_free(&b);
    return ok;
}

static void test_escaping(void)
{
    CHECK(escaped_is(gt_metrics_escape_label, "plain", "plain"));
    CHECK(escaped_is(gt_metrics_escape_label, "a\\b", "a\\\\b"));
    CHECK(escaped_is(gt_metrics_escape_label, "say \"hi\"", "say \\\"hi\\\""));
    CHECK(escaped_is(gt_metrics_escape_label, "two\nlines", "two\\nlines"));
    CHECK(escaped_is(gt_metrics_escape_label, "", ""));
    /* Valid UTF-8 passes untouched (é, €, 😀); braces and '=' need nothing. */
    CHECK(escaped_is(gt_metrics_escape_label, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                     "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
    CHECK(escaped_is(gt_metrics_escape_label, "/v1/runs/{id}", "/v1/runs/{id}"));
    /* Invalid bytes, a truncated sequence, an overlong '/', a surrogate. */
    CHECK(escaped_is(gt_metrics_escape_label, "a\xff" "b", "a\xef\xbf\xbd" "b"));
    CHECK(escaped_is(gt_metrics_escape_label, "x\xe2\x82", "x\xef\xbf\xbd\xef\xbf\xbd"));
    CHECK(escaped_is(gt_metrics_escape_label, "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"));
    CHECK(escaped_is(gt_metrics_escape_label, "\xed\xa0\x80",
                     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"));
    /* HELP escapes backslash and line feed only: quotes stay. */
    CHECK(escaped_is(gt_metrics_escape_help, "a \"q\" \\ b\nc", "a \"q\" \\\\ b\\nc"));
}

static int value_is(double v, const char *want)
{
    char buf[64];
    gt_metrics_format_value(buf, sizeof buf, v);
    if (strcmp(buf, want))
        fprintf(stderr, "  value %.17g -> '%s', want '%s'\n", v, buf, want);
    return !strcmp(buf, want);
}

static void test_values(void)
{
    CHECK(value_is(0, "0"));
    CHECK(value_is(42, "42"));
    CHECK(value_is(-3, "-3"));
    CHECK(value_is(123456789012.0, "123456789012"));
    CHECK(value_is(0.5, "0.5"));
    CHECK(value_is(0.1, "0.1"));
    CHECK(value_is(2.647, "2.647"));
    CHECK(value_is(1.0 / 3.0, "0.3333333333333333"));
    CHECK(value_is(1e20, "1e+20"));
    CHECK(value_is(INFINITY, "+Inf"));
    CHECK(value_is(-INFINITY, "-Inf"));
    CHECK(value_is(NAN, "NaN"));
}

static void test_lines(void)
{
    gt_str b;
    gt_str_init(&b);
    gt_label l[2] = {{"route", "/v1/runs/{id}"}, {"code", "200"}};
    CHECK(gt_metrics_family(&b, "x_total", "counter", "Some\nhelp \\ text.") == 0);
    CHECK(gt_metrics_sample(&b, "x_total", l, 2, 7) == 0);
    CHECK(gt_metrics_sample(&b, "y", NULL, 0, 1.5) == 0);
    gt_label q = {"host", "a\"b"};
    CHECK(gt_metrics_sample(&b, "z", &q, 1, 0) == 0);
    CHECK(b.s && !strcmp(b.s, "# HELP x_total Some\\nhelp \\\\ text.\n"
                              "# TYPE x_total counter\n"
                              "x_total{route=\"/v1/runs/{id}\",code=\"200\"} 7\n"
                              "y 1.5\n"
                              "z{host=\"a\\\"b\"} 0\n"));
    gt_str_free(&b);
}

static void test_histogram(void)
{
    gt_hist h;
    memset(&h, 0, sizeof h);
    gt_hist_observe(&h, 0.0005); /* first bucket */
    gt_hist_observe(&h, 0.001);  /* le is inclusive: also the first */
    gt_hist_observe(&h, 0.003);  /* 0.005 */
    gt_hist_observe(&h, 0.7);    /* 1 */
    gt_hist_observe(&h, 7);      /* past 5: only +Inf */
    CHECK(h.count == 5);
    CHECK(fabs(h.sum - 7.7045) < 1e-12);
    gt_str b;
    gt_str_init(&b);
    gt_label l = {"route", "r"};
    CHECK(gt_metrics_histogram(&b, "d_seconds", &l, 1, &h) == 0);
    CHECK(b.s && strstr(b.s, "d_seconds_bucket{route=\"r\",le=\"0.001\"} 2\n"));
    CHECK(b.s && strstr(b.s, "d_seconds_bucket{route=\"r\",le=\"0.0025\"} 2\n"));
    CHECK(b.s && strstr(b.s, "d_seconds_bucket{route=\"r\",le=\"0.005\"} 3\n"));
    CHECK(b.s && strstr(b.s, "d_seconds_bucket{route=\"r\",le=\"0.5\"} 3\n"));
    CHECK(b.s && strstr(b.s, "d_seconds_bucket{route=\"r\",le=\"1\"} 4\n"));
    CHECK(b.s && strstr(b.s, "d_seconds_bucket{route=\"r\",le=\"5\"} 4\n"));
    CHECK(b.s && strstr(b.s, "d_seconds_bucket{route=\"r\",le=\"+Inf\"} 5\n"));
    CHECK(b.s && strstr(b.s, "d_seconds_sum{route=\"r\"} 7.704"));
    CHECK(b.s && strstr(b.s, "d_seconds_count{route=\"r\"} 5\n"));
    /* 12 bounds + Inf, sum, count; buckets never decrease. */
    int lines = 0;
    double prev = -1;
    int monotonic = 1;
    for (const char *p = b.s; p && (p = strstr(p, "_bucket{")); p++) {
        lines++;
        double v = atof(strchr(p, '}') + 1);
        monotonic &= v >= prev;
        prev = v;
    }
    CHECK(lines == GT_METRICS_NBUCKETS + 1);
    CHECK(monotonic);
    gt_str_free(&b);
}

/* ---- a store with a run, results and a worker with an awkward name ---- */

static char g_dir[64];

static gt_store *make_store(int64_t *run_id)
{
    char path[128], err[512];
    snprintf(path, sizeof path, "%s/m.db", g_dir);
    gt_store *s = gt_store_open(path, err, sizeof err);
    if (!s) {
        fprintf(stderr, "store: %s\n", err);
        return NULL;
    }
    gt_run_opts o;
    gt_run_opts_default(&o);
    o.budget = 4;
    o.ncpu = 1;
    const char *log = "M,N,K\n64,64,64\n32,16,64\n";
    gt_log_result res;
    gt_run_created cr;
    int rc = gt_log_parse(log, strlen(log), &o.log, &res);
    if (rc == 0)
        rc = gt_test_create_run(s, &o, &res, &cr, err, sizeof err);
    gt_log_result_free(&res);
    gt_run_opts_fini(&o);
    if (rc) {
        fprintf(stderr, "create run: %s\n", err);
        gt_store_close(s);
        return NULL;
    }
    *run_id = cr.id;
    gt_worker_info w;
    memset(&w, 0, sizeof w);
    snprintf(w.host, sizeof w.host, "%s", "node\"7\\a\nb\xff");
    snprintf(w.backend, sizeof w.backend, "cpu");
    snprintf(w.device_model, sizeof w.device_model, "Test CPU");
    int64_t wid;
    if (gt_store_register_worker(s, &w, gt_wall_ms() - 2500, &wid, err, sizeof err)) {
        fprintf(stderr, "register: %s\n", err);
        gt_store_close(s);
        return NULL;
    }
    return s;
}

/* Adds n results (every third invalid) to the run's first job, created now. */
static int add_results(gt_store *s, int64_t run_id, int n, int first)
{
    char sql[1024];
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE k(i) AS (SELECT %d UNION ALL SELECT i + 1 FROM k WHERE i < %d)"
             " INSERT INTO results(run_id, problem_id, job_id, backend, phase, config,"
             " config_hash, time_us, valid, device_model, created_ms)"
             " SELECT %lld, j.problem_id, j.id, 'cpu', 'screen', '{}', printf('h%%d', k.i),"
             " 10 + k.i, k.i %% 3 != 0, 'Test CPU', %lld"
             " FROM k, (SELECT id, problem_id FROM jobs WHERE run_id = %lld ORDER BY id LIMIT 1) j",
             first, first + n - 1, (long long)run_id, (long long)gt_wall_ms(), (long long)run_id);
    gt_store_lock(s);
    int rc = sqlite3_exec(gt_store_db(s), sql, NULL, NULL, NULL);
    gt_store_unlock(s);
    return rc == SQLITE_OK ? 0 : -1;
}

static uint64_t fake_dispatch(void *ctx) { return *(uint64_t *)ctx; }
static void fake_stats(void *ctx, gt_dispatch_stats *out)
{
    (void)ctx;
    memset(out, 0, sizeof *out);
    out->refused[GT_REFUSED_NO_SESSION] = 5;
    out->refused[GT_REFUSED_TOKEN] = 2;
    out->implausible = 3;
    out->sessions = 4;
    out->early_leases = 6;
    out->replays = 2;
    gt_hist_observe(&out->answer[GT_DISPATCH_Q_LEASE], 0.004);
    gt_hist_observe(&out->answer[GT_DISPATCH_Q_LEASE], 0.03);
    gt_hist_observe(&out->answer[GT_DISPATCH_Q_RESULTS], 0.2);
}

static char *render(gt_store *s, gt_results_tally *tally, gt_http_metrics *hm)
{
    char err[256];
    gt_str b;
    gt_str_init(&b);
    uint64_t n = 42;
    gt_metrics_inputs in = {.store = s, .tally = tally, .http = hm, .now_ms = gt_wall_ms(),
                            .start_time_s = 1.5e9, .dispatch_requests = fake_dispatch,
                            .dispatch_stats = fake_stats, .dispatch_ctx = &n, .sse_streams = 1,
                            .sse_max = 64};
    if (gt_metrics_render(&b, &in, err, sizeof err)) {
        fprintf(stderr, "render: %s\n", err);
        gt_str_free(&b);
        return NULL;
    }
    return b.s;
}

static void test_page(void)
{
    int64_t run;
    gt_store *s = make_store(&run);
    CHECK(s != NULL);
    if (!s)
        return;
    CHECK(add_results(s, run, 9, 1) == 0);
    gt_http_metrics *hm = gt_http_metrics_new();
    gt_http_metrics_observe(hm, GT_ROUTE_RUN, 200, 0.002);
    gt_http_metrics_observe(hm, GT_ROUTE_RUN, 404, 0.0001);
    gt_http_metrics_observe(hm, GT_ROUTE_COUNT + 3, 500, 9); /* out of range: "other" */
    gt_results_tally tally = {0, 0, 0};
    char *t = render(s, &tally, hm);
    CHECK(t != NULL);
    if (t) {
        CHECK(strstr(t, "# TYPE gemmtune_runs gauge\n"));
        CHECK(strstr(t, "gemmtune_runs{state=\"running\"} 1\n"));
        CHECK(strstr(t, "gemmtune_problems{state=\"screening\"} 2\n"));
        CHECK(strstr(t, "# TYPE gemmtune_results_total counter\n"));
        CHECK(strstr(t, "gemmtune_results_total{valid=\"true\"} 6\n"));
        CHECK(strstr(t, "gemmtune_results_total{valid=\"false\"} 3\n"));
        CHECK(strstr(t, "gemmtune_results_per_second 0.15\n"));
        CHECK(strstr(t, "gemmtune_workers{state=\"idle\"} 1\n"));
        CHECK(strstr(t, "gemmtune_worker_last_heartbeat_age_seconds{worker=\"1\","
                        "host=\"node\\\"7\\\\a\\nb\xef\xbf\xbd\",device_model=\"Test CPU\","
                        "backend=\"cpu\"} 2."));
        CHECK(strstr(t, "gemmtune_http_requests_total{route=\"/v1/runs/{id}\",code=\"404\"} 1\n"));
        CHECK(strstr(t, "gemmtune_http_requests_total{route=\"other\",code=\"500\"} 1\n"));
        CHECK(strstr(t, "gemmtune_http_request_duration_seconds_bucket{route=\"/v1/runs/{id}\","
                        "le=\"0.0025\"} 2\n"));
        CHECK(strstr(t, "gemmtune_http_request_duration_seconds_count{route=\"other\"} 1\n"));
        CHECK(strstr(t, "gemmtune_dispatch_requests_total 42\n"));
        CHECK(strstr(t, "gemmtune_worker_refused_total{reason=\"no_session\"} 5\n"));
        CHECK(strstr(t, "gemmtune_worker_refused_total{reason=\"bad_token\"} 2\n"));
        CHECK(strstr(t, "gemmtune_worker_refused_total{reason=\"not_leased\"} 0\n"));
        CHECK(strstr(t, "gemmtune_results_rejected_total 3\n"));
        CHECK(strstr(t, "gemmtune_worker_sessions 4\n"));
        CHECK(strstr(t, "# TYPE gemmtune_worker_leases_before_commit_total counter\n"));
        CHECK(strstr(t, "gemmtune_worker_leases_before_commit_total 6\n"));
        CHECK(strstr(t, "# TYPE gemmtune_worker_results_replays_total counter\n"));
        CHECK(strstr(t, "gemmtune_worker_results_replays_total 2\n"));
        /* the dispatcher's answer times per queue, cumulative buckets */
        CHECK(strstr(t, "# TYPE gemmtune_worker_answer_seconds histogram\n"));
        CHECK(strstr(t, "gemmtune_worker_answer_seconds_bucket{queue=\"lease\",le=\"0.005\"} 1\n"));
        CHECK(strstr(t, "gemmtune_worker_answer_seconds_bucket{queue=\"lease\",le=\"0.05\"} 2\n"));
        CHECK(strstr(t, "gemmtune_worker_answer_seconds_bucket{queue=\"results\",le=\"0.1\"} 0\n"));
        CHECK(strstr(t, "gemmtune_worker_answer_seconds_count{queue=\"results\"} 1\n"));
        CHECK(strstr(t, "gemmtune_sse_streams 1\n"));
        CHECK(strstr(t, "process_start_time_seconds 1500000000\n"));
        /* Every family has HELP then TYPE, and the text ends with a line feed. */
        int fam = 0, ok = 1;
        for (const char *p = t; (p = strstr(p, "# HELP ")); p++) {
            fam++;
            const char *nl = strchr(p, '\n');
            ok &= nl && !strncmp(nl + 1, "# TYPE ", 7);
        }
        CHECK(fam >= 14 && ok);
        CHECK(t[strlen(t) - 1] == '\n');
    }
    free(t);
    CHECK(tally.total == 9 && tally.valid == 6);
    /* New rows: only they are read; the totals follow. */
    CHECK(add_results(s, run, 3, 100) == 0);
    t = render(s, &tally, hm);
    CHECK(t && strstr(t, "gemmtune_results_total{valid=\"true\"} 8\n"));
    CHECK(t && strstr(t, "gemmtune_results_total{valid=\"false\"} 4\n"));
    free(t);
    /* A tally that disagrees with COUNT(*) (rows removed) is recounted. */
    gt_store_lock(s);
    CHECK(sqlite3_exec(gt_store_db(s), "DELETE FROM results WHERE config_hash = 'h2'", NULL, NULL,
                       NULL) == SQLITE_OK);
    gt_store_unlock(s);
    t = render(s, &tally, hm);
    CHECK(t && strstr(t, "gemmtune_results_total{valid=\"true\"} 7\n"));
    CHECK(tally.total == 11);
    free(t);
    /* The summary agrees with GET /v1/runs/{id}'s counts. */
    char err[256];
    int found = 0;
    cJSON *sum = gt_store_run_summary(s, run, gt_wall_ms(), &found, err, sizeof err);
    cJSON *full = gt_store_run_json(s, run, gt_wall_ms(), &found, err, sizeof err);
    CHECK(sum && full);
    if (sum && full) {
        char *a = cJSON_PrintUnformatted(cJSON_GetObjectItem(sum, "candidates"));
        char *b = cJSON_PrintUnformatted(cJSON_GetObjectItem(full, "candidates"));
        CHECK(a && b && !strcmp(a, b));
        free(a);
        free(b);
        CHECK(cJSON_GetObjectItem(sum, "progress")->valuedouble ==
              cJSON_GetObjectItem(full, "progress")->valuedouble);
    }
    cJSON_Delete(sum);
    cJSON_Delete(full);
    gt_store_run_summary(s, 999, gt_wall_ms(), &found, err, sizeof err);
    CHECK(found == 0);
    gt_http_metrics_free(hm);
    gt_store_close(s);
}

/* ---- the server in-process ---- */

static int get(const char *base, const char *method, const char *path, const char *token,
               gt_httpc_resp *r)
{
    char err[256];
    memset(r, 0, sizeof *r);
    if (gt_httpc_request(base, method, path, "text/plain", "64,64,64\n", 9, token, r, err,
                         sizeof err)) {
        fprintf(stderr, "  %s %s: %s\n", method, path, err);
        return -1;
    }
    return r->status;
}

static int status_of(const char *base, const char *method, const char *path, const char *token)
{
    gt_httpc_resp r;
    int st = get(base, method, path, token, &r);
    gt_httpc_resp_free(&r);
    return st;
}

static void test_server(void)
{
    char path[128], err[512];
    snprintf(path, sizeof path, "%s/h.db", g_dir);
    gt_store *s = gt_store_open(path, err, sizeof err);
    CHECK(s != NULL);
    if (!s)
        return;
    uint64_t n = 7;
    gt_http_opts o = {.addr = "127.0.0.1", .port = 0, .max_body = 1 << 20, .max_log_lines = 100,
                      .data_dir = g_dir, .token = "w-token", .read_token = "r-token",
                      .dispatch_requests = fake_dispatch, .dispatch_ctx = &n};
    gt_http *h = gt_http_start(s, &o, err, sizeof err);
    CHECK(h != NULL);
    if (!h) {
        gt_store_close(s);
        return;
    }
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%d", gt_http_port(h));
    CHECK(status_of(base, "GET", "/healthz", NULL) == 200);
    CHECK(status_of(base, "GET", "/v1/runs", NULL) == 401);
    CHECK(status_of(base, "GET", "/v1/runs", "nope") == 401);
    CHECK(status_of(base, "GET", "/v1/runs", "r-token") == 200);
    CHECK(status_of(base, "GET", "/v1/runs", "w-token") == 200);
    CHECK(status_of(base, "GET", "/v1/workers", NULL) == 401);
    CHECK(status_of(base, "GET", "/metrics", NULL) == 401);
    CHECK(status_of(base, "POST", "/v1/runs?budget=1&ncpu=1", "r-token") == 401);
    CHECK(status_of(base, "POST", "/v1/runs?budget=1&ncpu=1", "w-token") == 201);
    CHECK(status_of(base, "GET", "/v1/runs/1/timeline", NULL) == 401);
    CHECK(status_of(base, "GET", "/v1/runs/1/timeline", "r-token") == 200);
    CHECK(status_of(base, "GET", "/v1/runs/9/timeline", "r-token") == 404);
    CHECK(status_of(base, "GET", "/v1/runs/9/events", "r-token") == 404);
    CHECK(status_of(base, "POST", "/v1/runs/1/events", "w-token") == 405);
    CHECK(status_of(base, "GET", "/v1/runs/1/nothing", "r-token") == 404);
    /* The page's files hold no data: open, with their types. */
    gt_httpc_resp r;
    CHECK(get(base, "GET", "/", NULL, &r) == 200);
    CHECK(!strncmp(r.content_type, "text/html", 9) && strstr(r.body, "<title>gemmtune</title>"));
    gt_httpc_resp_free(&r);
    CHECK(get(base, "GET", "/app.js", NULL, &r) == 200);
    CHECK(!strncmp(r.content_type, "text/javascript", 15));
    gt_httpc_resp_free(&r);
    CHECK(get(base, "GET", "/style.css", NULL, &r) == 200);
    CHECK(!strncmp(r.content_type, "text/css", 8));
    gt_httpc_resp_free(&r);
    CHECK(status_of(base, "GET", "/index.html", NULL) == 200);
    CHECK(status_of(base, "GET", "/nope.js", NULL) == 401); /* not a page file: guarded */
    CHECK(status_of(base, "GET", "/nope.js", "r-token") == 404);
    CHECK(get(base, "GET", "/metrics", "r-token", &r) == 200);
    CHECK(!strncmp(r.content_type, "text/plain; version=0.0.4", 25));
    CHECK(strstr(r.body, "gemmtune_dispatch_requests_total 7\n"));
    CHECK(strstr(r.body, "gemmtune_http_requests_total{route=\"/v1/runs\",code=\"401\"} 3\n"));
    CHECK(strstr(r.body, "gemmtune_http_requests_total{route=\"/v1/runs\",code=\"201\"} 1\n"));
    CHECK(strstr(r.body, "gemmtune_http_requests_total{route=\"static\",code=\"200\"} 4\n"));
    CHECK(strstr(r.body, "gemmtune_runs{state=\"running\"} 1\n"));
    gt_httpc_resp_free(&r);
    gt_http_stop(h);
    gt_store_close(s);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/gt-metrics.XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_escaping);
    RUN(test_values);
    RUN(test_lines);
    RUN(test_histogram);
    RUN(test_page);
    RUN(test_server);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_dir);
    return gt_test_done();
}
