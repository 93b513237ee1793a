/* dispatch_priv.h: what the dispatcher's two files share: the dispatcher
 * itself (dispatch.c: the protocol, each request decoded and served through
 * the store; start and stop of the endpoint) and its threads
 * (dispatch_loop.c: the receiver, the store's writer, the sender, and the
 * queues between them). */
#ifndef GT_DISPATCH_PRIV_H
#define GT_DISPATCH_PRIV_H

#include <cjson/cJSON.h>
#include <nng/nng.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "gt_dispatch.h"
#include "gt_session.h"

/* What serving one request counted: refusals by reason, results stored
 * invalid as physically impossible. Added to the dispatcher's counters
 * (gt_dispatch_tally_add) once the request's answer is final, so a request
 * served again after its batch was rolled back (dispatch_loop.c) counts
 * once. */
typedef struct gt_dispatch_tally {
    uint64_t refused[GT_DISPATCH_REFUSALS];
    uint64_t implausible;
} gt_dispatch_tally;

struct gt_dispatch {
    gt_store *store;
    gt_dispatch_opts o;
    char url[256];
    char token[256];
    nng_socket sock;
    pthread_t thread;
    atomic_int stop;
    atomic_uint_least64_t requests;
    gt_session_table *sessions;
    /* Refused requests by reason (gt_dispatch_refusal) and results stored
     * invalid or dropped as physically impossible. */
    atomic_uint_least64_t refused[GT_DISPATCH_REFUSALS];
    atomic_uint_least64_t implausible;
    atomic_uint_least64_t early_leases; /* answered before their commit (serve_leases) */
    atomic_uint_least64_t replays; /* results transactions rolled back and served again */
    gt_dispatch_tally *tally;   /* the request in gt_dispatch_handle counts here */
    atomic_int closed;          /* nng_close returned (gt_dispatch_stop) */
    struct queues *q;           /* between the receiver and the dispatcher (loop) */
    struct outq *out;           /* between the dispatcher and the sender */
    pthread_t sender;
    int sending;                /* the sender thread runs */
    pthread_mutex_t hmu;        /* answer */
    gt_hist answer[GT_DISPATCH_QUEUES];
    pthread_t receiver;
    int receiving;              /* the receiver thread runs */
};

/* One request served: decoded (in the calling thread's arena), checked
 * against its connection's session, run through the store; the answer
 * (never NULL). What it counted goes into *t (zeroed first), for
 * gt_dispatch_tally_add. */
cJSON *gt_dispatch_handle(gt_dispatch *d, const void *buf, size_t len, uint32_t pipe,
                          gt_dispatch_tally *t);
void gt_dispatch_tally_add(gt_dispatch *d, const gt_dispatch_tally *t);
/* The calling thread's parse arena for gt_dispatch_handle (without one it
 * parses into malloc'd nodes). */
void gt_dispatch_arena_open(void);
void gt_dispatch_arena_close(void);
/* The threads of a dispatcher whose socket listens: 0, or -1 with err and
 * nothing left running. Stop: d->stop set, every thread joined, the queues
 * freed (answers not yet sent are dropped; the workers ask again). */
int gt_dispatch_threads_start(gt_dispatch *d, char *err, size_t errlen);
void gt_dispatch_threads_stop(gt_dispatch *d);

#endif
