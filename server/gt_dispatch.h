/* gt_dispatch.h: the worker endpoint of the coordinator (module prefix
 * gt_dispatch_): an nng rep socket that answers workers' register, heartbeat,
 * lease, results and bye requests against the store, and a periodic sweep
 * that requeues expired leases.
 *
 * The one layer of server/ that speaks the worker protocol: it includes
 * proto/gt_proto.h and the store (gt_store.h, below it), decodes messages
 * into the store's C types and never hands it JSON; nothing below it
 * includes this header, the HTTP API above reads its counters
 * (gt_dispatch_stats). server/'s layers: gt_store.h. */
#ifndef GT_DISPATCH_H
#define GT_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "gt_hist.h"
#include "gt_store.h"

struct cJSON;

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

/* Why a worker request was refused (gemmtune_worker_refused_total). */
typedef enum gt_dispatch_refusal {
    GT_REFUSED_TOKEN = 0,       /* register with a wrong or missing token */
    GT_REFUSED_NO_SESSION,      /* a request on a connection that never registered */
    GT_REFUSED_NO_CREDENTIAL,   /* a request without its session credential */
    GT_REFUSED_BAD_CREDENTIAL,  /* a credential that is not the connection's */
    GT_REFUSED_WRONG_WORKER,    /* worker_id naming another worker than the session's */
    GT_REFUSED_UNKNOWN_SESSION, /* attach with a session the store does not know */
    GT_REFUSED_NOT_LEASED,      /* results for a job never leased to the sender */
    GT_DISPATCH_REFUSALS
} gt_dispatch_refusal;
uint64_t gt_dispatch_refused(const gt_dispatch *d, gt_dispatch_refusal why);
const char *gt_dispatch_refusal_name(gt_dispatch_refusal why);
/* Results stored invalid, and baselines dropped, as physically impossible. */
uint64_t gt_dispatch_implausible(const gt_dispatch *d);
/* Connections bound to a session now. */
size_t gt_dispatch_sessions(const gt_dispatch *d);

/* A snapshot of the counters above, for /metrics. */
/* The dispatcher's queues: leases and the other small requests, served
 * ahead of results messages (dispatch.c, loop). */
typedef enum gt_dispatch_queue { GT_DISPATCH_Q_LEASE, GT_DISPATCH_Q_RESULTS, GT_DISPATCH_QUEUES } gt_dispatch_queue;
const char *gt_dispatch_queue_name(gt_dispatch_queue q);

typedef struct gt_dispatch_stats {
    uint64_t refused[GT_DISPATCH_REFUSALS];
    uint64_t implausible;
    /* leases served inside a results transaction and answered before it
     * committed (dispatch_loop.c, serve_leases) */
    uint64_t early_leases;
    /* results transactions in which a request failed after writing,
     * rolled back whole and served again, each request in a savepoint of
     * its own (dispatch_loop.c, serve) */
    uint64_t replays;
    size_t sessions;
    /* seconds from a request's arrival at the coordinator to its answer,
     * per queue: the wait, the store transaction and its commit (a
     * worker's round trip adds the network and its own side) */
    gt_hist answer[GT_DISPATCH_QUEUES];
} gt_dispatch_stats;
void gt_dispatch_stats_get(const gt_dispatch *d, gt_dispatch_stats *out);
/* The URL listened on, with the port the system chose when asked for 0. */
const char *gt_dispatch_url(const gt_dispatch *d);

/* Decodes a worker's "results" message (proto/PROTOCOL.md) into what the
 * store takes: job_id (required), done, error, each result (configs made
 * canonical), the baseline's timing and an enumeration's answer. 0, or -1
 * with err for a malformed message (gt_report_fini is done then); release
 * with gt_report_fini. */
int gt_dispatch_decode_report(const struct cJSON *msg, gt_report *r, char *err, size_t errlen);

#endif
