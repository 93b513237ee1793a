/* gt_http.h: the coordinator's HTTP API on libmicrohttpd (module prefix
 * gt_http_). Routes: POST/GET /v1/runs, GET /v1/runs/{id}, GET
 * /v1/runs/{id}/results, GET /v1/runs/{id}/export, POST
 * /v1/runs/{id}/cancel, GET /v1/runs/{id}/events (server-sent events), GET
 * /v1/runs/{id}/timeline, GET /v1/workers, GET /healthz, GET /readyz, GET /metrics
 * (Prometheus), and the status page at / (/index.html, /app.js,
 * /style.css). README.md and docs/observability.md document them.
 *
 * The top layer of server/ (with events.c, status_page.c, metrics.c): it
 * may include the store (gt_store.h, gt_store_stats.h, gt_store_space.h),
 * the planner, the dispatcher's counters (gt_dispatch.h), the export files
 * and common/ and gen/; nothing of server/ but main_gemmtuned.c includes
 * it. server/'s layers: gt_store.h. */
#ifndef GT_HTTP_H
#define GT_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "gt_dispatch.h"
#include "gt_store.h"

typedef struct gt_http_opts {
    const char *addr;         /* bind address, default 127.0.0.1 */
    int port;                 /* default 8470; 0 = any free port */
    size_t max_body;          /* request body limit in bytes */
    size_t max_log_lines;     /* line limit of a submitted log */
    const char *data_dir;     /* where exports are written before they are sent */
    const char *token;        /* bearer token for mutating requests; NULL/"" = none */
    const char *read_token;   /* when set, GET/HEAD requests need it or token, except
                                 /healthz and the status page's static files */
    const char *source;       /* name of this coordinator in exports ("host") */
    unsigned max_conns;       /* concurrent connections */
    unsigned threads;         /* worker threads of the server */
    /* Optional: worker requests answered so far (gt_dispatch_requests), for
     * gemmtune_dispatch_requests_total on /metrics. */
    uint64_t (*dispatch_requests)(void *);
    /* Optional: the dispatcher's refusal and session counters
     * (gt_dispatch_stats_get), for gemmtune_worker_refused_total etc. */
    void (*dispatch_stats)(void *, gt_dispatch_stats *);
    void *dispatch_ctx;
} gt_http_opts;

typedef struct gt_http gt_http;

gt_http *gt_http_start(gt_store *s, const gt_http_opts *o, char *err, size_t errlen);
/* The port actually bound (useful with port 0). */
int gt_http_port(const gt_http *h);
void gt_http_stop(gt_http *h);

#endif
