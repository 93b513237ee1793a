/* dispatch_loop.c: the dispatcher's threads. A receiver takes requests
 * off the raw REP socket as they come into two queues; the store's writer
 * (loop) serves them in store transactions, leases ahead of results
 * messages; a sender answers what was committed, light requests' answers
 * first, and the leases served inside a results transaction at once.
 * dispatch.c serves each request (gt_dispatch_handle). */
#include <cjson/cJSON.h>
#include <nng/nng.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dispatch_priv.h"
#include "gt_proto.h"
#include "gt_util.h"

/* Requests served in one store transaction at most (gt_store_batch_begin). */
#define BATCH_MAX 64
/* A transaction of results messages runs at least this long before a
 * request that must be durable before its answer (a registration, a
 * heartbeat, a goodbye) ends it (serve): ~35 results, so that each commit
 * still carries many (a commit per message rewrites the same index pages
 * for a few results). */
#define HEAVY_MIN_MS 0.5
/* ... and at most this long whatever waits. Leases do not wait for it:
 * those that arrive during a results transaction are served inside it and
 * answered at once (serve_leases). What a lease can still wait for is a
 * commit in progress, and a commit's length grows with its transaction (a
 * 50 ms transaction's commit took 6 ms at p90, 20 at p99). Before leases
 * were served so, under 256 saturating workers no lease arrived during a
 * results transaction (every worker that would ask for one waited for its
 * own results' answer, in that transaction): transactions ran to BATCH_MAX
 * messages, 40-60 ms, then answered 64 workers at once, whose leases queued
 * together (p99 37-69 ms), and an 8 ms cap bought a p99 of 12-20 ms for
 * 5-7x as many commits. With leases answered inside (same bench, one day,
 * alternated): 8 ms 45.0-47.9k results/s, lease p99 past the first second
 * 10.9-11.5 ms; 16 ms 48.2-50.1k, 14.7-16.4 ms; 25 ms 47.8-49.0k,
 * 19.4-20.7 ms; the 8 ms cap without them 41.4-44.2k, 12.7-15.1 ms
 * (docs/coord_bench.md). */
#define HEAVY_MAX_MS 16.0
/* Requests received and waiting to be served; past it the receiver waits
 * (and nng holds the rest in its pipes). */
#define QUEUE_MAX 2048

/* A FIFO of received requests. */
typedef struct reqq {
    nng_msg *m[QUEUE_MAX];
    double t[QUEUE_MAX]; /* when each was received (gt_mono_ms) */
    int head, n;
} reqq;

static void reqq_push(reqq *q, nng_msg *m, double t)
{
    q->m[(q->head + q->n) % QUEUE_MAX] = m;
    q->t[(q->head + q->n) % QUEUE_MAX] = t;
    q->n++;
}

static nng_msg *reqq_pop(reqq *q, double *t)
{
    nng_msg *m = q->m[q->head];
    if (t)
        *t = q->t[q->head];
    q->head = (q->head + 1) % QUEUE_MAX;
    q->n--;
    return m;
}

/* The two queues between the receiver thread and the dispatcher: results
 * messages, and the rest (leases, registrations, heartbeats, goodbyes). */
typedef struct queues {
    pthread_mutex_t mu;
    pthread_cond_t ready; /* a request was queued, or the socket closed */
    pthread_cond_t room;  /* a request was taken */
    reqq light, heavy;
    atomic_int nlight;    /* light.n, read without the lock between messages */
    int closed;
} queues;

/* Answers waiting for the sender thread: each with its request (whose
 * header routes it back), when the request arrived and its queue. */
typedef struct answer {
    nng_msg *req;
    cJSON *reply;
    double arrived;
    int heavy;
} answer;

/* A FIFO of answers. */
typedef struct ansq {
    answer a[QUEUE_MAX];
    int head, n;
} ansq;

/* The answers waiting for the sender: those of light requests (leases,
 * registrations, heartbeats, goodbyes) go ahead of the acknowledgements of
 * results messages, whose round trip a worker does not wait on with an idle
 * GPU. Behind the 64 acknowledgements of a commit, still being sent, a
 * lease answered inside the next transaction (serve_leases) waited 10-30 ms
 * more. */
typedef struct outq {
    pthread_mutex_t mu;
    pthread_cond_t ready, room;
    ansq light, heavy; /* the light requests' answers; the results messages' */
    int stop; /* the dispatcher is done: send what is left and end */
} outq;

/* 1 when a request is a message of a type (GT_MSG_*), by its "type" (the
 * second key of every message gt_proto_new makes; looked for in its first
 * bytes only). Only the order of service depends on it: a message it
 * misreads is served all the same, in the other queue or at a commit. */
static int is_type(const nng_msg *m, const char *type)
{
    const char *b = nng_msg_body((nng_msg *)m);
    size_t len = nng_msg_len(m), lim = len < 96 ? len : 96, tl = strlen(type);
    static const char key[] = "\"type\"";
    for (size_t i = 0; i + sizeof key - 1 <= lim; i++) {
        if (memcmp(b + i, key, sizeof key - 1))
            continue;
        i += sizeof key - 1;
        while (i < len && (b[i] == ' ' || b[i] == ':'))
            i++;
        return i + tl + 2 <= len && b[i] == '"' && !memcmp(b + i + 1, type, tl) && b[i + 1 + tl] == '"';
    }
    return 0;
}

/* The receiver thread: takes requests off the socket as they come and
 * queues them. Draining the socket on a thread of its own keeps nng's pipes
 * moving while the dispatcher is inside a transaction, so a lease sent
 * behind results messages is seen at once, not after them. */
static void *receive(void *arg)
{
    gt_dispatch *d = arg;
    queues *q = d->q;
    while (!atomic_load(&d->stop)) {
        nng_msg *m;
        int rv = nng_recvmsg(d->sock, &m, 0);
        if (rv == NNG_ECLOSED)
            break;
        if (rv != 0) {
            if (rv != NNG_ETIMEDOUT)
                gt_warn("dispatch receive: %s", nng_strerror(rv));
            continue;
        }
        int heavy = is_type(m, GT_MSG_RESULTS);
        double t = gt_mono_ms();
        pthread_mutex_lock(&q->mu);
        while (q->light.n + q->heavy.n >= QUEUE_MAX && !atomic_load(&d->stop))
            pthread_cond_wait(&q->room, &q->mu);
        reqq_push(heavy ? &q->heavy : &q->light, m, t);
        atomic_store(&q->nlight, q->light.n);
        pthread_cond_signal(&q->ready);
        pthread_mutex_unlock(&q->mu);
    }
    pthread_mutex_lock(&q->mu);
    q->closed = 1;
    pthread_cond_signal(&q->ready);
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* The next request of one queue (NULL: none), for the dispatcher. */
static nng_msg *next_req(queues *q, int heavy, double *t)
{
    pthread_mutex_lock(&q->mu);
    reqq *r = heavy ? &q->heavy : &q->light;
    nng_msg *m = r->n > 0 ? reqq_pop(r, t) : NULL;
    atomic_store(&q->nlight, q->light.n);
    if (m)
        pthread_cond_signal(&q->room);
    pthread_mutex_unlock(&q->mu);
    return m;
}

/* Hands answers to the sender thread, in order: sending one took
 * 0.1-0.25 ms (nng's hand-off to its I/O thread), and a lease batch of ~50
 * then waited 5-14 ms for its own replies before the next transaction. */
static void hand_over(gt_dispatch *d, nng_msg *const *req, cJSON *const *reply,
                      const double *arrived, int n, int heavy)
{
    outq *o = d->out;
    ansq *q = heavy ? &o->heavy : &o->light;
    pthread_mutex_lock(&o->mu);
    for (int i = 0; i < n; i++) {
        while (q->n >= QUEUE_MAX)
            pthread_cond_wait(&o->room, &o->mu);
        q->a[(q->head + q->n) % QUEUE_MAX] = (answer){req[i], reply[i], arrived[i], heavy};
        q->n++;
    }
    pthread_cond_signal(&o->ready);
    pthread_mutex_unlock(&o->mu);
}

/* Serves one request inside the open batch, beginning one in mode first if
 * none is open (*batched as serve keeps it); what it counted in *t. */
static cJSON *handle(gt_dispatch *d, nng_msg *m, int *batched, gt_store_batch_mode mode,
                     gt_dispatch_tally *t)
{
    char err[256];
    if (*batched < 0)
        *batched = gt_store_batch_begin(d->store, mode, err, sizeof err) == 0;
    /* The connection the request came on: sessions are bound to it. */
    uint32_t pipe = (uint32_t)nng_pipe_id(nng_msg_get_pipe(m));
    return gt_dispatch_handle(d, nng_msg_body(m), nng_msg_len(m), pipe, t);
}

/* Serves the leases at the head of the light queue inside the open results
 * transaction, and answers each at once, before that transaction commits.
 * A lease is the one request a worker waits on with an idle GPU, and under
 * a saturating fleet it arrives while results are being written (its
 * worker's own results were just answered). A lease is soft state, so it
 * need not be durable first: lost in a crash, a failed commit or a batch
 * rolled back (serve), its job is pending again (or, if the same
 * transaction made it, gone), another worker takes it, and this worker's
 * heartbeats and results for it are refused as not leased
 * (GT_REFUSED_NOT_LEASED): the job is run twice, nothing in the store is
 * wrong. Everything else that changes the store is answered after its
 * commit. 1 when another kind of light request waits (to be served after
 * this transaction), 0 when none; stops at a lease that broke the batch. */
static int serve_leases(gt_dispatch *d, int *batched)
{
    queues *q = d->q;
    for (;;) {
        pthread_mutex_lock(&q->mu);
        if (q->light.n == 0 || !is_type(q->light.m[q->light.head], GT_MSG_LEASE)) {
            int other = q->light.n > 0;
            pthread_mutex_unlock(&q->mu);
            return other;
        }
        double t;
        nng_msg *m = reqq_pop(&q->light, &t);
        atomic_store(&q->nlight, q->light.n);
        pthread_cond_signal(&q->room);
        pthread_mutex_unlock(&q->mu);
        gt_dispatch_tally tally;
        cJSON *reply = handle(d, m, batched, GT_STORE_BATCH_UNGUARDED, &tally);
        gt_dispatch_tally_add(d, &tally);
        atomic_fetch_add(&d->requests, 1);
        atomic_fetch_add(&d->early_leases, 1);
        hand_over(d, &m, &reply, &t, 1, 0);
        if (*batched > 0 && gt_store_batch_broken(d->store))
            return 0;
    }
}

/* Serves requests of one queue in one store transaction, commits, then
 * hands their answers to the sender thread: light ones while any wait (at
 * most BATCH_MAX); results messages until BATCH_MAX, for HEAVY_MAX_MS at
 * most, or until a light request other than a lease waits and the
 * transaction has run HEAVY_MIN_MS; leases that arrive meanwhile are served
 * inside it and answered at once (serve_leases). Nothing else is answered
 * before it is durable: a batch that does not commit answers every request
 * of it with the error, and the workers send again (results are
 * idempotent).
 *
 * Light requests run in a savepoint each (GT_STORE_BATCH_GUARDED): they
 * change a few pages, and serving one again is not always the same (a
 * goodbye ends its session). Results transactions run without
 * (GT_STORE_BATCH_UNGUARDED: the savepoints' sub-journals were a sixth of
 * the coordinator's CPU per result). When a request fails there after it
 * wrote (a constraint, a full disk), the transaction cannot undo only that
 * request: it is rolled back whole and the results messages of it served
 * again, each in a savepoint of its own, so the failing one fails alone and
 * the others are stored (a worker gives up a job whose results were
 * refused). The leases answered inside it are lost as in a failed commit
 * (serve_leases). What each request counted is added once, after its last
 * serving. */
static void serve(gt_dispatch *d, int heavy)
{
    char err[256];
    nng_msg *req[BATCH_MAX];
    cJSON *reply[BATCH_MAX];
    double arrived[BATCH_MAX];
    gt_dispatch_tally tally[BATCH_MAX];
    int n = 0;
    gt_store_batch_mode mode = heavy ? GT_STORE_BATCH_UNGUARDED : GT_STORE_BATCH_GUARDED;
    /* Without a batch (the store refuses to begin one: lost files, a
     * full disk) each request runs in its own transaction and says why. */
    int batched = -1;
    double t0 = gt_mono_ms();
    while (n < BATCH_MAX) {
        if (heavy && n > 0 && atomic_load(&d->q->nlight) > 0 && serve_leases(d, &batched) &&
            gt_mono_ms() - t0 >= HEAVY_MIN_MS)
            break;
        if (heavy && n > 0 && gt_mono_ms() - t0 >= HEAVY_MAX_MS)
            break;
        if (batched > 0 && gt_store_batch_broken(d->store))
            break;
        nng_msg *m = next_req(d->q, heavy, &arrived[n]);
        if (!m)
            break;
        req[n] = m;
        reply[n] = handle(d, m, &batched, mode, &tally[n]);
        n++;
    }
    if (batched > 0 && gt_store_batch_broken(d->store)) {
        gt_store_batch_abort(d->store);
        atomic_fetch_add(&d->replays, 1);
        gt_warn("dispatch: a request failed after writing in a transaction of %d results messages:"
                " rolled back, each served again in a savepoint of its own", n);
        batched = -1;
        for (int i = 0; i < n; i++) {
            cJSON_Delete(reply[i]);
            reply[i] = handle(d, req[i], &batched, GT_STORE_BATCH_GUARDED, &tally[i]);
        }
    }
    if (batched > 0 && gt_store_batch_end(d->store, err, sizeof err)) {
        gt_err("dispatch: %d requests not committed, answered with the error: %s", n, err);
        for (int i = 0; i < n; i++) {
            cJSON_Delete(reply[i]);
            reply[i] = gt_proto_error("store: %s", err);
        }
    }
    for (int i = 0; i < n; i++)
        gt_dispatch_tally_add(d, &tally[i]);
    atomic_fetch_add(&d->requests, (uint64_t)n);
    hand_over(d, req, reply, arrived, n, heavy);
}

/* The sender thread: sends the answers the dispatcher hands over (those of
 * light requests first, each queue in its order), and times each from its
 * request's arrival
 * (gemmtune_worker_answer_seconds). Ends when the dispatcher is done and
 * nothing is left. */
static void *send_answers(void *arg)
{
    gt_dispatch *d = arg;
    outq *o = d->out;
    pthread_mutex_lock(&o->mu);
    for (;;) {
        while (o->light.n + o->heavy.n == 0 && !o->stop)
            pthread_cond_wait(&o->ready, &o->mu);
        if (o->light.n + o->heavy.n == 0)
            break;
        ansq *q = o->light.n > 0 ? &o->light : &o->heavy;
        answer a = q->a[q->head];
        q->head = (q->head + 1) % QUEUE_MAX;
        q->n--;
        pthread_cond_signal(&o->room);
        pthread_mutex_unlock(&o->mu);
        if (a.reply) {
            int rv = gt_proto_reply(d->sock, a.req, a.reply);
            if (rv != 0)
                gt_warn("dispatch send: %s", nng_strerror(rv));
            cJSON_Delete(a.reply);
        }
        nng_msg_free(a.req);
        double now = gt_mono_ms();
        pthread_mutex_lock(&d->hmu);
        gt_hist_observe(&d->answer[a.heavy ? GT_DISPATCH_Q_RESULTS : GT_DISPATCH_Q_LEASE], (now - a.arrived) / 1000);
        pthread_mutex_unlock(&d->hmu);
        pthread_mutex_lock(&o->mu);
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

/* The mutex and the two conditions of a queue between two threads
 * (queues, outq). 0, or -1 with nothing left initialised. */
static int sync_init(pthread_mutex_t *mu, pthread_cond_t *ready, pthread_cond_t *room)
{
    if (pthread_mutex_init(mu, NULL) != 0)
        return -1;
    if (pthread_cond_init(ready, NULL) != 0)
        goto fail_mu;
    if (pthread_cond_init(room, NULL) != 0)
        goto fail_ready;
    return 0;
fail_ready:
    pthread_cond_destroy(ready);
fail_mu:
    pthread_mutex_destroy(mu);
    return -1;
}

static void sync_destroy(pthread_mutex_t *mu, pthread_cond_t *ready, pthread_cond_t *room)
{
    pthread_cond_destroy(room);
    pthread_cond_destroy(ready);
    pthread_mutex_destroy(mu);
}

static outq *outq_new(void)
{
    outq *o = calloc(1, sizeof *o);
    if (o && sync_init(&o->mu, &o->ready, &o->room) != 0) {
        free(o);
        return NULL;
    }
    return o;
}

/* Frees what is left unsent (after the sender stopped). */
static void outq_free(outq *o)
{
    if (!o)
        return;
    ansq *qs[] = {&o->light, &o->heavy};
    for (int i = 0; i < 2; i++)
        for (ansq *q = qs[i]; q->n > 0; q->n--, q->head = (q->head + 1) % QUEUE_MAX) {
            cJSON_Delete(q->a[q->head].reply);
            nng_msg_free(q->a[q->head].req);
        }
    sync_destroy(&o->mu, &o->ready, &o->room);
    free(o);
}

/* Lets the sender send what is left, and waits for it. */
static void stop_sender(gt_dispatch *d)
{
    if (!d->sending)
        return;
    pthread_mutex_lock(&d->out->mu);
    d->out->stop = 1;
    pthread_cond_signal(&d->out->ready);
    pthread_mutex_unlock(&d->out->mu);
    pthread_join(d->sender, NULL);
    d->sending = 0;
}

/* The dispatcher: serves the requests the receiver queued. Each round
 * serves the light ones waiting (leases, registrations, heartbeats,
 * goodbyes: small and latency-bound, a worker waiting on a lease has an
 * idle GPU) in one store transaction, then results messages in another
 * (serve), committing each before answering it (but for the leases served
 * inside a results transaction: serve_leases). On a raw REP socket
 * requests from many workers are in flight at once and each answer finds
 * its way back by the request's header; one commit serves many workers
 * (under 256 simulated workers a commit per request, its WAL append and the
 * checkpoints they bring, was a quarter of the dispatcher's time). A worker
 * has one request in flight at a time, so its own requests are never
 * reordered; between workers, a lease no longer waits behind every results
 * message that arrived before it (at 256 saturating workers a lease took
 * 100 ms at the median, 175 at p99, most of it such a wait). Results
 * cannot starve: every round serves one transaction of them whatever else
 * waits. Three threads: the receiver, this one (the store's writer), and
 * the sender (send_answers), so that neither taking requests off the
 * socket nor sending answers waits for a transaction, or the other way
 * round. */
static void *loop(void *arg)
{
    gt_dispatch *d = arg;
    queues *q = d->q;
    double last_sweep = 0;
    char err[256];
    gt_dispatch_arena_open(); /* this thread's parse arena */
    while (!atomic_load(&d->stop)) {
        double now = gt_mono_ms();
        /* Sweep at a quarter of the lease time (at most every second), so an
         * expired lease waits at most that long to be requeued. */
        double every = (double)d->o.lease_ms / 4 < 1000 ? (double)d->o.lease_ms / 4 : 1000;
        if (now - last_sweep >= every) {
            last_sweep = now;
            if (gt_store_expire(d->store, gt_wall_ms(), d->o.max_attempts,
                                d->o.lease_ms > 10000 ? d->o.lease_ms : 10000, err, sizeof err) < 0)
                gt_err("lease sweep: %s", err);
        }
        /* wait for a request (at most 200 ms: the sweep's clock) */
        pthread_mutex_lock(&q->mu);
        if (q->light.n + q->heavy.n == 0 && !q->closed) {
            struct timespec until = gt_time_after_ms(CLOCK_REALTIME, 200);
            pthread_cond_timedwait(&q->ready, &q->mu, &until);
        }
        int closed = q->closed && q->light.n + q->heavy.n == 0;
        pthread_mutex_unlock(&q->mu);
        if (closed)
            break;
        serve(d, 0);
        serve(d, 1);
    }
    gt_dispatch_arena_close();
    return NULL;
}

/* Frees what the queues still hold (after both threads stopped). */
static void queues_free(queues *q)
{
    if (!q)
        return;
    while (q->light.n > 0)
        nng_msg_free(reqq_pop(&q->light, NULL));
    while (q->heavy.n > 0)
        nng_msg_free(reqq_pop(&q->heavy, NULL));
    sync_destroy(&q->mu, &q->ready, &q->room);
    free(q);
}

static queues *queues_new(void)
{
    queues *q = calloc(1, sizeof *q);
    if (q && sync_init(&q->mu, &q->ready, &q->room) != 0) {
        free(q);
        return NULL;
    }
    return q;
}

/* Stops the receiver thread (it sees d->stop within the socket's receive
 * timeout, or at once when it waits for room). */
static void stop_receiver(gt_dispatch *d)
{
    if (!d->receiving)
        return;
    atomic_store(&d->stop, 1);
    pthread_mutex_lock(&d->q->mu);
    pthread_cond_broadcast(&d->q->room);
    pthread_mutex_unlock(&d->q->mu);
    pthread_join(d->receiver, NULL);
    d->receiving = 0;
}

int gt_dispatch_threads_start(gt_dispatch *d, char *err, size_t errlen)
{
    if (!(d->q = queues_new()) || !(d->out = outq_new())) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (pthread_create(&d->receiver, NULL, receive, d) != 0) {
        snprintf(err, errlen, "cannot start the dispatcher's receiver thread");
        goto fail;
    }
    d->receiving = 1;
    if (pthread_create(&d->sender, NULL, send_answers, d) != 0) {
        snprintf(err, errlen, "cannot start the dispatcher's sender thread");
        goto fail;
    }
    d->sending = 1;
    if (pthread_create(&d->thread, NULL, loop, d) != 0) {
        snprintf(err, errlen, "cannot start the dispatcher thread");
        goto fail;
    }
    return 0;
fail:
    stop_receiver(d);
    stop_sender(d);
    queues_free(d->q);
    outq_free(d->out);
    d->q = NULL;
    d->out = NULL;
    return -1;
}

void gt_dispatch_threads_stop(gt_dispatch *d)
{
    atomic_store(&d->stop, 1);
    pthread_join(d->thread, NULL);
    stop_receiver(d);
    stop_sender(d);
    queues_free(d->q);
    d->q = NULL;
    outq_free(d->out);
    d->out = NULL;
}
