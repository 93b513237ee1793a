/* gt_http.h: the coordinator's HTTP JSON API on libmicrohttpd (module prefix
 * gt_http_). Routes: POST/GET /v1/runs, GET /v1/runs/{id}, GET
 * /v1/runs/{id}/results, GET /v1/runs/{id}/export, POST
 * /v1/runs/{id}/cancel, GET /v1/workers, GET /healthz. README.md documents
 * each one. */
#ifndef GT_HTTP_H
#define GT_HTTP_H

#include <stddef.h>

#include "gt_store.h"

typedef struct gt_http_opts {
    const char *addr;         /* bind address, default 127.0.0.1 */
    int port;                 /* default 8470; 0 = any free port */
    size_t max_body;          /* request body limit in bytes */
    size_t max_log_lines;     /* line limit of a submitted log */
    const char *data_dir;     /* where exports are written before they are sent */
    const char *token;        /* bearer token for mutating requests; NULL/"" = none */
    const char *source;       /* name of this coordinator in exports ("host") */
    unsigned max_conns;       /* concurrent connections */
    unsigned threads;         /* worker threads of the server */
} gt_http_opts;

typedef struct gt_http gt_http;

gt_http *gt_http_start(gt_store *s, const gt_http_opts *o, char *err, size_t errlen);
/* The port actually bound (useful with port 0). */
int gt_http_port(const gt_http *h);
void gt_http_stop(gt_http *h);

#endif
