/* coord_bench_async.c: gt-coord-bench's event driver. Every simulated worker
 * keeps its own req socket (the coordinator binds a session to its
 * connection) and the same protocol as the thread driver, but no thread: one
 * nng aio per worker steps it (send, receive, sleep), its completion callback
 * building the next message on one of nng's few callback threads.
 *
 * Why: the coordinator's users are workers on other machines. A thread per
 * simulated worker puts 256 runnable threads on the coordinator's own cores,
 * and a lease's round trip then measures how long the coordinator's threads
 * and the client's wait for a core among them (docs/coord_bench.md). Driven
 * by events, the load is the same messages at the same rate from a handful
 * of threads. A round trip is timed from the send to the completion of the
 * receive, before the callback's own work. */
#include <cjson/cJSON.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <stdio.h>
#include <string.h>

#include "coord_bench.h"
#include "gt_proto.h"

static atomic_int g_active; /* workers with a step still to take */

static void go_idle(cb_worker *w)
{
    if (w->job.msg)
        cb_job_end(w);
    w->phase = AP_IDLE;
    atomic_fetch_sub(&g_active, 1);
}

/* Sends m (takes it) as a request of type rq now. */
static void send_now(cb_worker *w, cJSON *m, int rq)
{
    w->rq = rq;
    w->phase = AP_SEND;
    w->t_sent = cb_now_ms();
    int rv = gt_proto_send_ctx(w->ctx, w->aio, m);
    cJSON_Delete(m);
    if (rv != 0) { /* no message made: nothing was started on the aio */
        fprintf(stderr, "worker %d: encode: %s\n", w->idx, nng_strerror(rv));
        w->st.errors++;
        go_idle(w);
    }
}

/* The worker's next step: m (taken) sent as rq after delay_ms, or the
 * worker stops when the bench does. */
static void go(cb_worker *w, cJSON *m, int rq, double delay_ms)
{
    if (g_stop) {
        cJSON_Delete(m);
        go_idle(w);
        return;
    }
    if (delay_ms > 0) {
        w->pending = m;
        w->rq = rq;
        w->phase = AP_SLEEP;
        nng_sleep_aio((nng_duration)(delay_ms + 0.5), w->aio);
        return;
    }
    send_now(w, m, rq);
}

/* The worker asks anew, after delay_ms: to register (AS_REGISTER) or for a
 * job (AS_LEASE); the state says which message. */
static void ask(cb_worker *w, cb_astate state, double delay_ms)
{
    w->state = state;
    if (state == AS_REGISTER)
        go(w, cb_register_msg(w), RQ_REGISTER, delay_ms);
    else
        go(w, cb_lease_msg(w), RQ_LEASE_JOB, delay_ms);
}

static void next_results(cb_worker *w)
{
    double t0 = cb_now_ms();
    int done = 0;
    cJSON *m = cb_job_next(w, &done);
    w->done_after = done;
    go(w, m, done ? RQ_DONE : RQ_RESULTS, cb_pace_left_ms(w, w->job.last_k, t0));
}

/* A request got no answer: as the thread driver does after gt_client gave
 * up, a lease is asked again, a job's results are dropped and the worker
 * registers again (the job's lease expires on the coordinator). */
static void on_fail(cb_worker *w, int rv)
{
    if (!g_stop)
        fprintf(stderr, "worker %d: request failed: %s\n", w->idx, nng_strerror(rv));
    w->st.errors++;
    if (w->state == AS_LEASE) {
        ask(w, AS_LEASE, 200);
        return;
    }
    if (w->job.msg)
        cb_job_end(w);
    ask(w, AS_REGISTER, 200);
}

static void on_reply(cb_worker *w, cJSON *r, const char *type, double dt)
{
    switch (w->state) {
    case AS_REGISTER:
        cb_record(w, RQ_REGISTER, w->t_sent, dt);
        if (cb_on_registered(w, r, type) == 0)
            ask(w, AS_LEASE, 0);
        else
            ask(w, AS_REGISTER, 200);
        cJSON_Delete(r);
        return;
    case AS_LEASE:
        if (!strcmp(type, GT_MSG_JOB)) {
            cb_record(w, RQ_LEASE_JOB, w->t_sent, dt);
            cb_job_start(w, r);
            w->state = AS_RESULTS;
            next_results(w);
            return;
        }
        if (!strcmp(type, GT_MSG_NONE)) {
            cb_record(w, RQ_LEASE_NONE, w->t_sent, dt);
            ask(w, AS_LEASE, 50); /* as the thread driver polls */
        } else {
            cb_record(w, RQ_LEASE_JOB, w->t_sent, dt);
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "reregister")))
                ask(w, AS_REGISTER, 0);
            else
                ask(w, AS_LEASE, 100);
        }
        cJSON_Delete(r);
        return;
    case AS_RESULTS: {
        cb_record(w, w->done_after ? RQ_DONE : RQ_RESULTS, w->t_sent, dt);
        int st = cb_job_on_ack(w, r, type, w->done_after);
        cJSON_Delete(r);
        if (st == 0) {
            next_results(w);
            return;
        }
        cb_job_end(w);
        ask(w, st > 0 ? AS_LEASE : AS_REGISTER, 0);
        return;
    }
    }
}

/* The aio's completion: one at a time per worker (one operation in flight). */
static void on_aio(void *arg)
{
    cb_worker *w = arg;
    int rv = nng_aio_result(w->aio);
    switch (w->phase) {
    case AP_SLEEP: {
        cJSON *m = w->pending;
        w->pending = NULL;
        if (g_stop) {
            cJSON_Delete(m);
            go_idle(w);
        } else {
            send_now(w, m, w->rq);
        }
        return;
    }
    case AP_SEND:
        if (rv != 0) {
            nng_msg *msg = nng_aio_get_msg(w->aio);
            if (msg)
                nng_msg_free(msg);
            on_fail(w, rv);
            return;
        }
        w->phase = AP_RECV;
        nng_ctx_recv(w->ctx, w->aio);
        return;
    case AP_RECV: {
        double dt = cb_now_ms() - w->t_sent;
        if (rv != 0) {
            on_fail(w, rv);
            return;
        }
        nng_msg *msg = nng_aio_get_msg(w->aio);
        const char *type = NULL;
        char err[256];
        cJSON *r = gt_proto_decode(nng_msg_body(msg), nng_msg_len(msg), &type, err, sizeof err);
        nng_msg_free(msg);
        if (!r) {
            fprintf(stderr, "worker %d: bad reply: %s\n", w->idx, err);
            on_fail(w, NNG_EPROTO);
            return;
        }
        on_reply(w, r, type, dt);
        return;
    }
    case AP_IDLE:
        return;
    }
}

static int open_worker(cb_worker *w)
{
    int rv;
    nng_dialer d;
    if ((rv = nng_req0_open(&w->sock)) != 0) {
        fprintf(stderr, "worker %d: nng req socket: %s\n", w->idx, nng_strerror(rv));
        return -1;
    }
    /* as gt_client_open: no resend (results are sent once, answered once),
     * redial quickly, the protocol's message size */
    if ((rv = nng_setopt_ms(w->sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE)) != 0 ||
        (rv = nng_setopt_ms(w->sock, NNG_OPT_RECONNMINT, 100)) != 0 ||
        (rv = nng_setopt_ms(w->sock, NNG_OPT_RECONNMAXT, 5000)) != 0 ||
        (rv = nng_setopt_size(w->sock, NNG_OPT_RECVMAXSZ, GT_PROTO_MAX_MSG)) != 0 ||
        (rv = nng_dialer_create(&d, w->sock, w->url)) != 0 ||
        (rv = nng_dialer_start(d, NNG_FLAG_NONBLOCK)) != 0 ||
        (rv = nng_ctx_open(&w->ctx, w->sock)) != 0 ||
        (rv = nng_aio_alloc(&w->aio, on_aio, w)) != 0) {
        fprintf(stderr, "worker %d: %s: %s\n", w->idx, w->url, nng_strerror(rv));
        nng_close(w->sock);
        return -1;
    }
    nng_aio_set_timeout(w->aio, 120000);
    return 0;
}

int cb_async_start(cb_worker *ws, int n)
{
    for (int i = 0; i < n; i++)
        if (open_worker(&ws[i]))
            return -1;
    for (int i = 0; i < n; i++) {
        atomic_fetch_add(&g_active, 1);
        ask(&ws[i], AS_REGISTER, 0);
    }
    return 0;
}

/* A request answered before the bench ends (the goodbye), outside the
 * worker's own aio. */
static void call_sync(cb_worker *w, cJSON *m, int timeout_ms)
{
    nng_aio *a = NULL;
    if (nng_aio_alloc(&a, NULL, NULL) != 0)
        return;
    nng_aio_set_timeout(a, timeout_ms);
    if (gt_proto_send_ctx(w->ctx, a, m) == 0) {
        nng_aio_wait(a);
        if (nng_aio_result(a) != 0) {
            nng_msg *msg = nng_aio_get_msg(a);
            if (msg)
                nng_msg_free(msg);
        } else {
            nng_ctx_recv(w->ctx, a);
            nng_aio_wait(a);
            if (nng_aio_result(a) == 0)
                nng_msg_free(nng_aio_get_msg(a));
        }
    }
    nng_aio_free(a);
}

void cb_async_stop(cb_worker *ws, int n, int wait_ms)
{
    double until = cb_now_ms() + wait_ms;
    while (atomic_load(&g_active) > 0 && cb_now_ms() < until)
        cb_sleep_ms(5);
    if (atomic_load(&g_active) > 0)
        fprintf(stderr, "%d workers still waiting after %d ms: their requests are cancelled\n",
                atomic_load(&g_active), wait_ms);
    /* cancels what is left and waits for its callback (which, g_stop set,
     * takes no further step) */
    for (int i = 0; i < n; i++)
        nng_aio_stop(ws[i].aio);
    for (int i = 0; i < n; i++) {
        cb_worker *w = &ws[i];
        if (w->job.msg)
            cb_job_end(w);
        cJSON_Delete(w->pending);
        w->pending = NULL;
        cJSON *m = cb_bye_msg(w);
        call_sync(w, m, 2000);
        cJSON_Delete(m);
        nng_ctx_close(w->ctx);
        nng_close(w->sock);
        nng_aio_free(w->aio);
    }
}
