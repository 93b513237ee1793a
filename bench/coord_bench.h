/* coord_bench.h: what gt-coord-bench's parts share (bench/coord_bench.c:
 * main, the store probes and the report; coord_bench_worker.c: a simulated
 * worker's messages and the thread driver; coord_bench_async.c: the event
 * driver). A simulated worker is the same protocol client in both drivers;
 * they differ in who waits: a thread per worker blocked in its request, or
 * nng's completion callbacks stepping every worker from a few threads. */
#ifndef COORD_BENCH_H
#define COORD_BENCH_H

#include <nng/nng.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gt_client.h"

struct cJSON;

extern volatile sig_atomic_t g_stop;
extern atomic_int g_measuring; /* 1 while the measured window is open */
/* When the window opened (cb_now_ms), and how long the start lasts: requests
 * sent later are counted again as the steady state (the registrations and
 * first leases of every worker at once are the start's queue). */
extern _Atomic double g_t_open;
#define STEADY_AFTER_MS 1000.0

double cb_now_ms(void);
void cb_sleep_ms(double ms);

enum { RQ_REGISTER, RQ_LEASE_JOB, RQ_LEASE_NONE, RQ_RESULTS, RQ_DONE, RQ_BYE, RQ_N };
extern const char *const cb_rq_name[RQ_N];

/* A growable array of latencies (ms), one per request of a type, taken only
 * inside the measured window. */
typedef struct cb_lat {
    double *v;
    size_t n, cap;
} cb_lat;

void cb_lat_add(cb_lat *l, double x);

typedef struct cb_wstat {
    /* all counted inside the measured window */
    uint64_t req[RQ_N];
    double req_ms[RQ_N];
    cb_lat lat[RQ_N];
    cb_lat sent_at[RQ_N]; /* when each of lat was sent, ms after the window opened (--trace) */
    cb_lat steady[RQ_N]; /* those sent STEADY_AFTER_MS after the window opened */
    uint64_t sent, accepted, jobs_screen, jobs_final, errors;
    double encode_ms; /* building the messages (client side) */
    /* whole run */
    uint64_t all_sent, all_accepted, all_jobs, all_requests;
} cb_wstat;

/* The job a worker is answering: where it is in the job's list of results. */
typedef struct cb_job {
    struct cJSON *msg;            /* the lease reply that holds the job (owned) */
    long long id;
    const struct cJSON *base, *cur;
    int final, has_base, n, i;
    int last_k;                   /* results in the message last built */
    double flops, base_t;
} cb_job;

typedef enum { AS_REGISTER, AS_LEASE, AS_RESULTS } cb_astate;
typedef enum { AP_IDLE, AP_SEND, AP_RECV, AP_SLEEP } cb_aphase;

typedef struct cb_worker {
    int idx;
    const char *url;
    int batch;
    double rate;      /* results/s this worker produces at most (0: as fast as answered) */
    uint64_t rng;
    long long wid;
    char session[64]; /* the credential registration gave (PROTOCOL.md, Sessions) */
    cb_wstat st;
    cb_job job;
    /* thread driver */
    pthread_t th;
    gt_client c;
    /* event driver: one req socket and context, one aio stepping it */
    nng_socket sock;
    nng_ctx ctx;
    nng_aio *aio;
    cb_astate state;
    cb_aphase phase;
    int rq;               /* the request type in flight */
    int done_after;       /* the results message in flight ends the job */
    double t_sent;        /* when the request in flight was sent */
    struct cJSON *pending;/* the message to send after a sleep (owned) */
} cb_worker;

/* Messages and replies, the same for both drivers. */
double cb_urand(cb_worker *w);
struct cJSON *cb_register_msg(cb_worker *w);
/* 0 registered (wid and session set), -1 refused. */
int cb_on_registered(cb_worker *w, const struct cJSON *r, const char *type);
struct cJSON *cb_lease_msg(cb_worker *w);
struct cJSON *cb_bye_msg(cb_worker *w);
/* Starts answering the job of lease reply r (takes r). */
void cb_job_start(cb_worker *w, struct cJSON *r);
/* The next results message of the job; *done set when it is the last. */
struct cJSON *cb_job_next(cb_worker *w, int *done);
/* Seconds' worth of pacing left before sending a message of k results built
 * since t0 (--rate), in ms (<= 0: send now). */
double cb_pace_left_ms(const cb_worker *w, int k, double t0);
/* The answer to a results message: 1 the job is over (done, cancelled),
 * 0 go on, -1 refused (the worker registers again). */
int cb_job_on_ack(cb_worker *w, const struct cJSON *r, const char *type, int done);
void cb_job_end(cb_worker *w);
/* Counts a round trip of type t sent at t0 that took dt ms. */
void cb_record(cb_worker *w, int t, double t0, double dt);

/* Thread driver: one thread per worker, gt_client's blocking calls. Start:
 * 0 or -1 (a thread could not start); stop, after g_stop: joins them, says
 * goodbye and closes the sockets. */
int cb_thread_start(cb_worker *ws, int n);
void cb_thread_stop(cb_worker *ws, int n);

/* Event driver: every worker's socket opened and its first request sent;
 * the steps run in nng's completion callbacks. 0 or -1. */
int cb_async_start(cb_worker *ws, int n);
/* After g_stop: waits (at most wait_ms) for every worker to stop at its
 * next step, stops the rest, says goodbye and closes the sockets. */
void cb_async_stop(cb_worker *ws, int n, int wait_ms);

#endif
