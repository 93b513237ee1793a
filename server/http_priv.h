/* http_priv.h: internals shared by the HTTP API's files (http.c: server,
 * authentication, routing, metrics; http_runs.c: the /v1/runs routes;
 * http_kernels.c: generated-kernel downloads; http_space.c: the generated
 * families' pruned spaces;
 * events.c: server-sent events; status_page.c: the embedded status page).
 * Not part of the public interface. */
#ifndef GT_HTTP_PRIV_H
#define GT_HTTP_PRIV_H

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stdint.h>

#include "gt_http.h"
#include "gt_metrics.h"
#include "gt_util.h"

typedef struct gt_events gt_events;

/* http_cache.c: rendered run views, reused for GT_HTTP_VIEW_TTL_MS; one
 * request re-renders an expired view while the others get the previous text
 * for up to GT_HTTP_VIEW_STALE_MS more. */
#define GT_HTTP_CACHE_SLOTS 16
#define GT_HTTP_VIEW_TTL_MS 250.0
#define GT_HTTP_VIEW_STALE_MS 1000.0
/* Renders the view of key again (the key says which view and its
 * arguments): a malloc'd text, or NULL when it cannot (the old text stays
 * until it is too old). */
typedef char *(*gt_http_render_fn)(void *ctx, const char *key);
typedef struct gt_http_cache {
    pthread_mutex_t mu;
    struct {
        char key[48];
        double at_ms;         /* when text was rendered */
        double refresh_ms;    /* when a re-render was asked for, 0: none */
        int queued;           /* the refresher is to render it */
        char *text;
    } e[GT_HTTP_CACHE_SLOTS];
    size_t next;
    /* the refresher (gt_http_cache_start): re-renders expired views on a
     * thread of its own, so no request waits for a render it did not need */
    gt_http_render_fn render;
    void *render_ctx;
    pthread_cond_t wake;
    pthread_t thread;
    int running, stop;
    unsigned long gen;        /* bumped by clear: a render begun before is dropped */
} gt_http_cache;

struct gt_http {
    struct MHD_Daemon *d;
    gt_store *store;            /* the writer: POST requests */
    gt_store *rstore;           /* GET requests: a reader connection of its own, so
                                   reads never hold up the worker dispatcher (WAL) */
    int own_rstore;
    gt_http_cache views;        /* GET /v1/runs and /v1/runs/{id}, briefly reused */
    gt_http_opts o;
    char data_dir[1024];
    char token[256];
    char read_token[256];
    char source[256];
    int port;
    double start_time_s;        /* Unix seconds, for process_start_time_seconds */
    gt_http_metrics *metrics;
    gt_results_tally tally;     /* /metrics results totals; the store's lock guards it */
    gt_events *events;
};

/* One request: its body so far, and what the metrics need to know about it
 * (route family, status queued). */
typedef struct gt_req {
    gt_http *h;
    struct MHD_Connection *c;
    gt_route route;
    unsigned status;            /* 0 until a response is queued */
    gt_str body;
    int too_large;
} gt_req;

/* Queues r (not destroyed here) and records the status. */
enum MHD_Result gt_http_queue(gt_req *q, unsigned status, struct MHD_Response *r);
/* txt is malloc'd and taken. */
enum MHD_Result gt_http_send_text(gt_req *q, unsigned status, const char *ctype, char *txt);
/* j is taken. */
enum MHD_Result gt_http_send_json(gt_req *q, unsigned status, cJSON *j);
/* details: NULL, or a cJSON value that is taken. */
enum MHD_Result gt_http_send_error(gt_req *q, unsigned status, cJSON *details, const char *fmt,
                                   ...) __attribute__((format(printf, 4, 5)));
/* 404 for a run's problem looked up by id or key: rc GT_STORE_NO_RUN (no
 * such run) or GT_STORE_NO_PROBLEM (no such problem in it). */
enum MHD_Result gt_http_send_no_problem(gt_req *q, int rc, int64_t run_id, const char *problem);

/* http_runs.c */
enum MHD_Result gt_http_post_run(gt_req *q);
enum MHD_Result gt_http_run_routes(gt_req *q, const char *method, int64_t id, const char *sub);
/* http.c: the cache keys of the run view and of a page of the run list (the
 * refresher renders a view again from its key alone). gt_http_runs_key: 0,
 * or -1 when the page is not cached (a name filter, a key too long). */
void gt_http_run_key(char *key, size_t len, int64_t id);
/* what every key of gt_http_runs_key begins with (the run lists a POST changes) */
#define GT_HTTP_RUNS_KEY_PREFIX "runs?"
int gt_http_runs_key(char *key, size_t len, const gt_runs_query *rq);

/* http_kernels.c: GET /v1/runs/{id}/kernels/{problem}[.cuh]; rest is what
 * follows "kernels/". */
enum MHD_Result gt_http_kernel(gt_req *q, const char *method, int64_t run_id, const char *rest);

/* http_space.c: GET /v1/runs/{id}/space/{problem}; rest is what follows
 * "space/". */
enum MHD_Result gt_http_space(gt_req *q, const char *method, int64_t run_id, const char *rest);

/* events.c: GET /v1/runs/{id}/events. */
#define GT_EVENTS_MAX_STREAMS 64
gt_events *gt_events_new(gt_store *s, unsigned max_streams);
/* Ends every stream (before MHD_stop_daemon, which must find none suspended). */
void gt_events_shutdown(gt_events *e);
void gt_events_free(gt_events *e);
unsigned gt_events_active(gt_events *e);
unsigned gt_events_max(const gt_events *e);
enum MHD_Result gt_http_events(gt_req *q, int64_t run_id);

/* status_page.c: the embedded web/ files ("/" is index.html). */
int gt_http_is_static(const char *url);
enum MHD_Result gt_http_static(gt_req *q, const char *url);

/* http_cache.c */
int gt_http_cache_init(gt_http_cache *c);
/* Starts the refresher: from then on an expired view is handed to it and
 * the request gets the previous text. 0, or -1 (no thread: requests render
 * as before). gt_http_cache_fini stops it. */
int gt_http_cache_start(gt_http_cache *c, gt_http_render_fn render, void *ctx);
void gt_http_cache_fini(gt_http_cache *c);
/* A malloc'd copy of key's text when younger than ttl_ms, or when older but
 * being re-rendered (by the refresher, or by another request without one:
 * stale-while-revalidate, bounded by GT_HTTP_VIEW_STALE_MS). NULL: the caller
 * renders and puts the view. */
char *gt_http_cache_get(gt_http_cache *c, const char *key, double ttl_ms);
void gt_http_cache_put(gt_http_cache *c, const char *key, const char *text);
void gt_http_cache_clear(gt_http_cache *c);
/* What a POST that changed the runs calls instead of clear: drops every view, then renders
 * again, in the caller's thread, the keys also[0..nalso) (at most GT_HTTP_RENEW_MAX: the
 * run the POST created or changed, which its client polls next, and the default page of
 * the run list) and the dropped views whose keys start with prefix (NULL: none; the run
 * lists clients poll), each put back unless another clear came meanwhile.
 * Without it the first GET of each rendered it in the request, under whatever the POST
 * started: with a new run's 256 workers registering at once on 2 cores, those were the
 * API's p99 (28-138 ms; 5-7 ms with the views rendered before; docs/coord_bench.md). Other
 * views are dropped as by clear (their next GET renders them). Needs the renderer
 * (gt_http_cache_start); without it, it is clear. */
#define GT_HTTP_RENEW_MAX 4
void gt_http_cache_renew(gt_http_cache *c, const char *const *also, size_t nalso, const char *prefix);
/* gt_http_cache_renew after a POST that created or changed run id (0: none): that run's
 * view, the run list's default page and every cached page of it (http.c). */
void gt_http_renew_views(gt_http *h, int64_t id);
/* j (taken) as a view's text: compact JSON and a newline; NULL when j is. */
char *gt_http_view_text(cJSON *j);
/* Sends j (taken) as 200 JSON and keeps its text under key. */
enum MHD_Result gt_http_send_view(gt_req *q, const char *key, cJSON *j);

#endif
