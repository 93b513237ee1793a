/* gt_dispatch.h: the worker endpoint of the coordinator (module prefix
 * gt_dispatch_): an nng rep socket that answers workers' register, heartbeat,
 * lease, results and bye requests against the store, and a periodic sweep
 * that requeues expired leases. */
#ifndef GT_DISPATCH_H
#define GT_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "gt_store.h"

typedef struct gt_dispatch_opts {
    const char *url;          /* listen URL, e.g. tcp://127.0.0.1:8471 */
    int64_t lease_ms;         /* a lease lives this long without news from its worker */
    int64_t heartbeat_ms;     /* what workers are told to use */
    int max_attempts;         /* leases of one job before it fails */
    const char *token;        /* shared secret workers must present; NULL = none */
    const char *tls_cert_key; /* PEM file with certificate and key, for tls+tcp:// URLs */
} gt_dispatch_opts;

typedef struct gt_dispatch gt_dispatch;

gt_dispatch *gt_dispatch_start(gt_store *s, const gt_dispatch_opts *o, char *err, size_t errlen);
/* Stops the thread and closes the socket. */
void gt_dispatch_stop(gt_dispatch *d);
/* Requests answered so far (for metrics and tests). */
uint64_t gt_dispatch_requests(const gt_dispatch *d);
/* The URL listened on, with the port the system chose when asked for 0. */
const char *gt_dispatch_url(const gt_dispatch *d);

#endif
