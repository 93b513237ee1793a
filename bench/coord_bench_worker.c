/* coord_bench_worker.c: a simulated worker of gt-coord-bench: its messages
 * (register, lease, fake but well-formed results for every candidate of a
 * leased job, in batches, done=true with the baseline at the end; a final
 * job's baseline result first, is_baseline=1), the accounting of its round
 * trips, and the thread driver (one thread per worker, blocked in each
 * request like gemmtune-worker's gt_client). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coord_bench.h"
#include "gt_proto.h"

volatile sig_atomic_t g_stop;
atomic_int g_measuring;
_Atomic double g_t_open;

const char *const cb_rq_name[RQ_N] = {"register", "lease->job", "lease->none", "results",
                                      "results(done)", "bye"};

double cb_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void cb_sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(fmod(ms, 1000) * 1e6)};
    nanosleep(&ts, NULL);
}

void cb_lat_add(cb_lat *l, double x)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        double *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
}

double cb_urand(cb_worker *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return (double)(w->rng >> 11) / 9007199254740992.0;
}

void cb_record(cb_worker *w, int t, double t0, double dt)
{
    w->st.all_requests++;
    if (!atomic_load(&g_measuring))
        return;
    w->st.req[t]++;
    w->st.req_ms[t] += dt;
    cb_lat_add(&w->st.lat[t], dt);
    cb_lat_add(&w->st.sent_at[t], t0 - atomic_load(&g_t_open));
    if (t0 >= atomic_load(&g_t_open) + STEADY_AFTER_MS)
        cb_lat_add(&w->st.steady[t], dt);
}

cJSON *cb_register_msg(cb_worker *w)
{
    cJSON *m = gt_proto_new(GT_MSG_REGISTER);
    char host[64];
    snprintf(host, sizeof host, "coord-bench-%d", w->idx);
    cJSON_AddStringToObject(m, "host", host);
    cJSON_AddNumberToObject(m, "pid", (double)getpid());
    cJSON_AddNumberToObject(m, "device_index", w->idx);
    cJSON_AddStringToObject(m, "backend", "cpu");
    cJSON_AddStringToObject(m, "device_model", "coord-bench simulated CPU");
    cJSON_AddStringToObject(m, "arch", "x86_64-sim");
    cJSON_AddNumberToObject(m, "mem_bytes", 1 << 30);
    cJSON_AddNumberToObject(m, "units", 2);
    cJSON_AddStringToObject(m, "driver", "none");
    cJSON_AddStringToObject(m, "version", "coord-bench");
    return m;
}

int cb_on_registered(cb_worker *w, const cJSON *r, const char *type)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "worker_id");
    const cJSON *sess = cJSON_GetObjectItemCaseSensitive(r, "session");
    int ok = !strcmp(type, GT_MSG_REGISTERED) && cJSON_IsNumber(id) && cJSON_IsString(sess) &&
             strlen(sess->valuestring) < sizeof w->session;
    if (!ok) {
        fprintf(stderr, "worker %d: register refused\n", w->idx);
        return -1;
    }
    w->wid = (long long)id->valuedouble;
    snprintf(w->session, sizeof w->session, "%s", sess->valuestring);
    return 0;
}

cJSON *cb_lease_msg(cb_worker *w)
{
    cJSON *m = gt_proto_new(GT_MSG_LEASE);
    cJSON_AddNumberToObject(m, "worker_id", (double)w->wid);
    cJSON_AddStringToObject(m, "session", w->session);
    return m;
}

cJSON *cb_bye_msg(cb_worker *w)
{
    cJSON *m = gt_proto_new(GT_MSG_BYE);
    cJSON_AddNumberToObject(m, "worker_id", (double)w->wid);
    cJSON_AddStringToObject(m, "session", w->session);
    return m;
}

/* A fake, valid measurement of cfg. */
static cJSON *fake_result(cb_worker *w, const cJSON *cfg, int is_baseline, double flops,
                          double *t_out)
{
    cJSON *o = cJSON_CreateObject();
    double t = flops / 50e9 * 1e6 * (0.5 + 1.5 * cb_urand(w)); /* ~50 GFLOP/s +- */
    if (!(t > 0))
        t = 1 + cb_urand(w);
    cJSON_AddItemToObject(o, "config", cJSON_Duplicate(cfg, 1));
    cJSON_AddBoolToObject(o, "baseline", is_baseline);
    cJSON_AddBoolToObject(o, "valid", 1);
    cJSON_AddNumberToObject(o, "time_us", t);
    cJSON_AddNumberToObject(o, "spread", 0.01 + 0.02 * cb_urand(w));
    cJSON_AddNumberToObject(o, "tflops", flops / (t * 1e-6) / 1e12);
    cJSON_AddNumberToObject(o, "rel_err", 1e-7 * (1 + cb_urand(w)));
    cJSON_AddStringToObject(o, "reason", "");
    if (t_out)
        *t_out = t;
    return o;
}

static double num(const cJSON *o, const char *name, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

void cb_job_start(cb_worker *w, cJSON *r)
{
    cb_job *j = &w->job;
    const cJSON *job = cJSON_GetObjectItemCaseSensitive(r, "job");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(job, "kind");
    const cJSON *prob = cJSON_GetObjectItemCaseSensitive(job, "problem");
    const cJSON *cands = cJSON_GetObjectItemCaseSensitive(job, "candidates");
    memset(j, 0, sizeof *j);
    j->msg = r;
    j->id = (long long)num(job, "id", -1);
    j->base = cJSON_GetObjectItemCaseSensitive(job, "baseline");
    j->final = cJSON_IsString(kind) && !strcmp(kind->valuestring, "final");
    j->has_base = cJSON_IsObject(j->base);
    j->flops = 2 * num(prob, "m", 64) * num(prob, "n", 64) * num(prob, "k", 64) *
               num(prob, "batch", 1);
    /* The list of what to report: final jobs start with the baseline. */
    j->n = cJSON_GetArraySize(cands) + (j->final && j->has_base);
    j->base_t = j->flops / 40e9 * 1e6;
    j->cur = cands ? cands->child : NULL;
    if (atomic_load(&g_measuring))
        j->final ? w->st.jobs_final++ : w->st.jobs_screen++;
    w->st.all_jobs++;
}

cJSON *cb_job_next(cb_worker *w, int *done)
{
    cb_job *j = &w->job;
    double t0 = cb_now_ms();
    cJSON *m = gt_proto_new(GT_MSG_RESULTS), *arr = cJSON_CreateArray();
    cJSON_AddNumberToObject(m, "worker_id", (double)w->wid);
    cJSON_AddStringToObject(m, "session", w->session);
    cJSON_AddNumberToObject(m, "job_id", (double)j->id);
    int k = 0;
    for (; k < w->batch && j->i < j->n; k++, j->i++) {
        if (j->final && j->has_base && j->i == 0) {
            cJSON_AddItemToArray(arr, fake_result(w, j->base, 1, j->flops, &j->base_t));
        } else {
            cJSON_AddItemToArray(arr, fake_result(w, j->cur, 0, j->flops, NULL));
            j->cur = j->cur->next;
        }
    }
    *done = j->i >= j->n;
    cJSON_AddBoolToObject(m, "done", *done);
    cJSON_AddItemToObject(m, "results", arr);
    if (*done && j->has_base) {
        cJSON *b = cJSON_CreateObject();
        cJSON_AddItemToObject(b, "config", cJSON_Duplicate(j->base, 1));
        cJSON_AddNumberToObject(b, "time_us", j->base_t);
        cJSON_AddNumberToObject(b, "spread", 0.01);
        cJSON_AddItemToObject(m, "baseline", b);
    }
    if (atomic_load(&g_measuring))
        w->st.encode_ms += cb_now_ms() - t0;
    j->last_k = k;
    return m;
}

double cb_pace_left_ms(const cb_worker *w, int k, double t0)
{
    /* --rate: a real worker spends its time benchmarking the k candidates
     * before it reports them (an H100 about 2.6 ms each on decode shapes);
     * the coordinator's latency at a given offered load is measured this
     * way, its capacity with no pacing. */
    if (w->rate <= 0)
        return 0;
    return k * 1000.0 / w->rate - (cb_now_ms() - t0);
}

int cb_job_on_ack(cb_worker *w, const cJSON *r, const char *type, int done)
{
    /* sent: answered, whatever the answer */
    w->st.all_sent += (uint64_t)w->job.last_k;
    if (atomic_load(&g_measuring))
        w->st.sent += (uint64_t)w->job.last_k;
    if (!strcmp(type, GT_MSG_ACK)) {
        uint64_t acc = (uint64_t)num(r, "accepted", 0);
        w->st.all_accepted += acc;
        if (atomic_load(&g_measuring))
            w->st.accepted += acc;
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "cancelled")))
            done = 1;
        return done;
    }
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error");
    fprintf(stderr, "worker %d: job %lld: %s\n", w->idx, w->job.id,
            cJSON_IsString(e) ? e->valuestring : type);
    w->st.errors++;
    return -1;
}

void cb_job_end(cb_worker *w)
{
    cJSON_Delete(w->job.msg);
    memset(&w->job, 0, sizeof w->job);
}

/* ---------------------------------------------------------- thread driver */

/* Sends req; records its latency under type t; returns the reply. */
static cJSON *call(cb_worker *w, const cJSON *req, int t, const char **type)
{
    char err[256];
    double t0 = cb_now_ms();
    cJSON *r = gt_client_call(&w->c, req, type, 120000, err, sizeof err);
    double dt = cb_now_ms() - t0;
    if (!r) {
        if (!g_stop)
            fprintf(stderr, "worker %d: request failed: %s\n", w->idx, err);
        w->st.errors++;
        return NULL;
    }
    if (t == RQ_LEASE_JOB && !strcmp(*type, GT_MSG_NONE))
        t = RQ_LEASE_NONE;
    cb_record(w, t, t0, dt);
    return r;
}

static int do_register(cb_worker *w)
{
    cJSON *m = cb_register_msg(w);
    const char *type = NULL;
    cJSON *r = call(w, m, RQ_REGISTER, &type);
    cJSON_Delete(m);
    if (!r)
        return -1;
    int rc = cb_on_registered(w, r, type);
    cJSON_Delete(r);
    return rc;
}

/* Answers the job leased in r (takes r). 0, or -1 when the worker must
 * register again / stop. */
static int do_job(cb_worker *w, cJSON *r)
{
    int rc = 0;
    cb_job_start(w, r);
    while (!g_stop) {
        double t0 = cb_now_ms();
        int done = 0;
        cJSON *m = cb_job_next(w, &done);
        double left = cb_pace_left_ms(w, w->job.last_k, t0);
        if (left > 0)
            cb_sleep_ms(left);
        const char *type = NULL;
        cJSON *a = call(w, m, done ? RQ_DONE : RQ_RESULTS, &type);
        cJSON_Delete(m);
        if (!a) {
            rc = -1;
            break;
        }
        int st = cb_job_on_ack(w, a, type, done);
        cJSON_Delete(a);
        if (st) {
            rc = st < 0 ? -1 : 0;
            break;
        }
    }
    cb_job_end(w);
    return rc;
}

static void *thread_main(void *arg)
{
    cb_worker *w = arg;
    char err[256];
    if (gt_client_open(&w->c, w->url, 60000, &g_stop, NULL, err, sizeof err)) {
        fprintf(stderr, "worker %d: %s\n", w->idx, err);
        return NULL;
    }
    while (!g_stop && do_register(w))
        cb_sleep_ms(200);
    while (!g_stop) {
        cJSON *m = cb_lease_msg(w);
        const char *type = NULL;
        cJSON *r = call(w, m, RQ_LEASE_JOB, &type);
        cJSON_Delete(m);
        if (!r)
            continue;
        if (!strcmp(type, GT_MSG_JOB)) {
            if (do_job(w, r))
                while (!g_stop && do_register(w))
                    cb_sleep_ms(200);
            continue;
        }
        if (!strcmp(type, GT_MSG_NONE)) {
            cb_sleep_ms(50); /* the real worker waits retry_ms (500); we poll faster */
        } else {
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "reregister")))
                while (!g_stop && do_register(w))
                    cb_sleep_ms(200);
            else
                cb_sleep_ms(100);
        }
        cJSON_Delete(r);
    }
    return NULL; /* main sends bye for every worker */
}

int cb_thread_start(cb_worker *ws, int n)
{
    for (int i = 0; i < n; i++)
        if (pthread_create(&ws[i].th, NULL, thread_main, &ws[i])) {
            fprintf(stderr, "cannot start worker thread %d\n", i);
            return -1;
        }
    return 0;
}

void cb_thread_stop(cb_worker *ws, int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(ws[i].th, NULL);
    /* bye from every worker (fresh calls: g_stop only limits retries) */
    for (int i = 0; i < n; i++) {
        cJSON *m = cb_bye_msg(&ws[i]);
        const char *type;
        char err[256];
        cJSON *r = gt_client_call(&ws[i].c, m, &type, 2000, err, sizeof err);
        cJSON_Delete(m);
        cJSON_Delete(r);
        gt_client_close(&ws[i].c);
    }
}
