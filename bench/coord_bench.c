/* coord_bench.c: gt-coord-bench, a load generator for the coordinator's worker
 * endpoint. N simulated workers (threads, each with its own nng req socket,
 * exactly like gemmtune-worker's gt_client) register, lease jobs and report
 * fake but well-formed results as fast as the coordinator takes them: for
 * every job, a valid result for every candidate of the job (the real configs
 * from the job), in batches of B per "results" message, done=true with the
 * baseline timing at the end. Final jobs are answered the same way (baseline
 * result first, is_baseline=1).
 *
 * It measures, over a window of --duration seconds from the first lease:
 *   - results ingested per second from the store (COUNT(*) of the run's
 *     results rows, read through a separate read-only SQLite connection, WAL
 *     lets it read without taking the coordinator's lock) and from the
 *     workers' own counts (rows the acks say were accepted);
 *   - requests per second on the worker endpoint, and the round-trip latency
 *     of each request type as the workers see it (a cheap profile: with one
 *     dispatcher thread answering in arrival order, round trip = queueing +
 *     service time);
 * then keeps going until the run is done (or --max-time) and prints the run's
 * completion time from the store (runs.finished_ms - runs.started_ms).
 *
 * bench/coord_bench.sh starts gemmtuned, submits the workload, runs wrk on
 * the HTTP API next to this program and prints everything. */

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gt_client.h"
#include "gt_proto.h"

static volatile sig_atomic_t g_stop;
static atomic_int g_measuring; /* 1 while the measured window is open */
/* When the window opened (now_ms), and how long the start lasts: requests
 * sent later are counted again as the steady state (the registrations and
 * first leases of every worker at once are the start's queue). */
static _Atomic double g_t_open;
#define STEADY_AFTER_MS 1000.0

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(fmod(ms, 1000) * 1e6)};
    nanosleep(&ts, NULL);
}

enum { RQ_REGISTER, RQ_LEASE_JOB, RQ_LEASE_NONE, RQ_RESULTS, RQ_DONE, RQ_BYE, RQ_N };
static const char *rq_name[RQ_N] = {"register", "lease->job", "lease->none", "results",
                                    "results(done)", "bye"};

/* A growable array of latencies (ms), one per request of a type, taken only
 * inside the measured window. */
typedef struct lat {
    double *v;
    size_t n, cap;
} lat;

static void lat_add(lat *l, double x)
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

typedef struct wstat {
    /* all counted inside the measured window */
    uint64_t req[RQ_N];
    double req_ms[RQ_N];
    lat lat[RQ_N];
    lat steady[RQ_N]; /* those sent STEADY_AFTER_MS after the window opened */
    uint64_t sent, accepted, jobs_screen, jobs_final, errors;
    double encode_ms; /* building the messages (client side) */
    /* whole run */
    uint64_t all_sent, all_accepted, all_jobs, all_requests;
} wstat;

typedef struct worker {
    int idx;
    pthread_t th;
    const char *url;
    int batch;
    double rate;         /* results/s this worker produces at most (0: as fast as answered) */
    uint64_t rng;
    long long wid;
    char session[64];    /* the credential registration gave (PROTOCOL.md, Sessions) */
    gt_client c;
    wstat st;
} worker;

static double urand(worker *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return (double)(w->rng >> 11) / 9007199254740992.0;
}

/* Sends req; records its latency under type t; returns the reply. */
static cJSON *call(worker *w, const cJSON *req, int t, const char **type)
{
    char err[256];
    double t0 = now_ms();
    cJSON *r = gt_client_call(&w->c, req, type, 120000, err, sizeof err);
    double dt = now_ms() - t0;
    if (!r) {
        if (!g_stop)
            fprintf(stderr, "worker %d: request failed: %s\n", w->idx, err);
        w->st.errors++;
        return NULL;
    }
    if (t == RQ_LEASE_JOB && !strcmp(*type, GT_MSG_NONE))
        t = RQ_LEASE_NONE;
    w->st.all_requests++;
    if (atomic_load(&g_measuring)) {
        w->st.req[t]++;
        w->st.req_ms[t] += dt;
        lat_add(&w->st.lat[t], dt);
        if (t0 >= atomic_load(&g_t_open) + STEADY_AFTER_MS)
            lat_add(&w->st.steady[t], dt);
    }
    return r;
}

static int do_register(worker *w)
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
    const char *type = NULL;
    cJSON *r = call(w, m, RQ_REGISTER, &type);
    cJSON_Delete(m);
    if (!r)
        return -1;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "worker_id");
    const cJSON *sess = cJSON_GetObjectItemCaseSensitive(r, "session");
    int ok = !strcmp(type, GT_MSG_REGISTERED) && cJSON_IsNumber(id) && cJSON_IsString(sess) &&
             strlen(sess->valuestring) < sizeof w->session;
    if (ok) {
        w->wid = (long long)id->valuedouble;
        snprintf(w->session, sizeof w->session, "%s", sess->valuestring);
    }
    else
        fprintf(stderr, "worker %d: register refused\n", w->idx);
    cJSON_Delete(r);
    return ok ? 0 : -1;
}

/* A fake, valid measurement of cfg. */
static cJSON *fake_result(worker *w, const cJSON *cfg, int is_baseline, double flops, double *t_out)
{
    cJSON *o = cJSON_CreateObject();
    double t = flops / 50e9 * 1e6 * (0.5 + 1.5 * urand(w)); /* ~50 GFLOP/s +- */
    if (!(t > 0))
        t = 1 + urand(w);
    cJSON_AddItemToObject(o, "config", cJSON_Duplicate(cfg, 1));
    cJSON_AddBoolToObject(o, "baseline", is_baseline);
    cJSON_AddBoolToObject(o, "valid", 1);
    cJSON_AddNumberToObject(o, "time_us", t);
    cJSON_AddNumberToObject(o, "spread", 0.01 + 0.02 * urand(w));
    cJSON_AddNumberToObject(o, "tflops", flops / (t * 1e-6) / 1e12);
    cJSON_AddNumberToObject(o, "rel_err", 1e-7 * (1 + urand(w)));
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

/* Answers one job. 0, or -1 when the worker must register again / stop. */
static int do_job(worker *w, const cJSON *job)
{
    long long job_id = (long long)num(job, "id", -1);
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(job, "kind");
    const cJSON *prob = cJSON_GetObjectItemCaseSensitive(job, "problem");
    const cJSON *cands = cJSON_GetObjectItemCaseSensitive(job, "candidates");
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(job, "baseline");
    int final = cJSON_IsString(kind) && !strcmp(kind->valuestring, "final");
    double flops = 2 * num(prob, "m", 64) * num(prob, "n", 64) * num(prob, "k", 64) *
                   num(prob, "batch", 1);
    /* The list of what to report: final jobs start with the baseline. */
    int nc = cJSON_GetArraySize(cands), has_base = cJSON_IsObject(base);
    int n = nc + (final && has_base);
    double base_t = flops / 40e9 * 1e6;
    int i = 0, rc = 0;
    if (atomic_load(&g_measuring))
        final ? w->st.jobs_final++ : w->st.jobs_screen++;
    w->st.all_jobs++;
    const cJSON *cur = cands ? cands->child : NULL;
    do {
        double t0 = now_ms();
        cJSON *m = gt_proto_new(GT_MSG_RESULTS), *arr = cJSON_CreateArray();
        cJSON_AddNumberToObject(m, "worker_id", (double)w->wid);
        cJSON_AddStringToObject(m, "session", w->session);
        cJSON_AddNumberToObject(m, "job_id", (double)job_id);
        int k = 0;
        for (; k < w->batch && i < n; k++, i++) {
            if (final && has_base && i == 0) {
                cJSON_AddItemToArray(arr, fake_result(w, base, 1, flops, &base_t));
            } else {
                cJSON_AddItemToArray(arr, fake_result(w, cur, 0, flops, NULL));
                cur = cur->next;
            }
        }
        int done = i >= n;
        cJSON_AddBoolToObject(m, "done", done);
        cJSON_AddItemToObject(m, "results", arr);
        if (done && has_base) {
            cJSON *b = cJSON_CreateObject();
            cJSON_AddItemToObject(b, "config", cJSON_Duplicate(base, 1));
            cJSON_AddNumberToObject(b, "time_us", base_t);
            cJSON_AddNumberToObject(b, "spread", 0.01);
            cJSON_AddItemToObject(m, "baseline", b);
        }
        if (atomic_load(&g_measuring))
            w->st.encode_ms += now_ms() - t0;
        /* --rate: a real worker spends its time benchmarking the k
         * candidates before it reports them (an H100 about 2.6 ms each on
         * decode shapes); the coordinator's latency at a given offered load
         * is measured this way, its capacity with no pacing. */
        if (w->rate > 0) {
            double left = k * 1000.0 / w->rate - (now_ms() - t0);
            if (left > 0)
                sleep_ms(left);
        }
        const char *type = NULL;
        cJSON *r = call(w, m, done ? RQ_DONE : RQ_RESULTS, &type);
        cJSON_Delete(m);
        if (!r)
            return -1;
        w->st.all_sent += (uint64_t)k;
        if (atomic_load(&g_measuring))
            w->st.sent += (uint64_t)k;
        if (!strcmp(type, GT_MSG_ACK)) {
            uint64_t acc = (uint64_t)num(r, "accepted", 0);
            w->st.all_accepted += acc;
            if (atomic_load(&g_measuring))
                w->st.accepted += acc;
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "cancelled")))
                done = 1;
        } else {
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error");
            fprintf(stderr, "worker %d: job %lld: %s\n", w->idx, job_id,
                    cJSON_IsString(e) ? e->valuestring : type);
            w->st.errors++;
            rc = -1;
            done = 1;
        }
        cJSON_Delete(r);
        if (done)
            break;
    } while (!g_stop);
    return rc;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    char err[256];
    if (gt_client_open(&w->c, w->url, 60000, &g_stop, NULL, err, sizeof err)) {
        fprintf(stderr, "worker %d: %s\n", w->idx, err);
        return NULL;
    }
    while (!g_stop && do_register(w))
        sleep_ms(200);
    while (!g_stop) {
        cJSON *m = gt_proto_new(GT_MSG_LEASE);
        cJSON_AddNumberToObject(m, "worker_id", (double)w->wid);
        cJSON_AddStringToObject(m, "session", w->session);
        const char *type = NULL;
        cJSON *r = call(w, m, RQ_LEASE_JOB, &type);
        cJSON_Delete(m);
        if (!r)
            continue;
        if (!strcmp(type, GT_MSG_JOB)) {
            if (do_job(w, cJSON_GetObjectItemCaseSensitive(r, "job")))
                while (!g_stop && do_register(w))
                    sleep_ms(200);
        } else if (!strcmp(type, GT_MSG_NONE)) {
            sleep_ms(50); /* the real worker waits retry_ms (500); we poll faster */
        } else {
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "reregister")))
                while (!g_stop && do_register(w))
                    sleep_ms(200);
            else
                sleep_ms(100);
        }
        cJSON_Delete(r);
    }
    return NULL; /* main sends bye for every worker */
}

/* ----------------------------------------------------------- store probes */

typedef struct probe {
    sqlite3 *db;
    sqlite3_stmt *count, *run;
} probe;

static int probe_open(probe *p, const char *path, long long run_id)
{
    memset(p, 0, sizeof *p);
    if (sqlite3_open_v2(path, &p->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "cannot open %s: %s\n", path, sqlite3_errmsg(p->db));
        return -1;
    }
    sqlite3_busy_timeout(p->db, 2000);
    if (sqlite3_prepare_v2(p->db, "SELECT COUNT(*) FROM results WHERE run_id = ?", -1, &p->count,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(p->db,
                           "SELECT state, COALESCE(started_ms, created_ms), finished_ms, created_ms,"
                           " (SELECT COUNT(*) FROM jobs WHERE run_id = ?1),"
                           " (SELECT COUNT(*) FROM jobs WHERE run_id = ?1 AND kind = 'final')"
                           " FROM runs WHERE id = ?1",
                           -1, &p->run, NULL) != SQLITE_OK) {
        fprintf(stderr, "probe: %s\n", sqlite3_errmsg(p->db));
        return -1;
    }
    sqlite3_bind_int64(p->count, 1, run_id);
    sqlite3_bind_int64(p->run, 1, run_id);
    return 0;
}

static long long probe_count(probe *p)
{
    long long n = -1;
    sqlite3_reset(p->count);
    if (sqlite3_step(p->count) == SQLITE_ROW)
        n = sqlite3_column_int64(p->count, 0);
    sqlite3_reset(p->count);
    return n;
}

typedef struct runinfo {
    char state[16];
    long long started_ms, finished_ms, created_ms, jobs, final_jobs;
} runinfo;

static int probe_run(probe *p, runinfo *ri)
{
    memset(ri, 0, sizeof *ri);
    sqlite3_reset(p->run);
    int rc = sqlite3_step(p->run);
    if (rc == SQLITE_ROW) {
        snprintf(ri->state, sizeof ri->state, "%s", (const char *)sqlite3_column_text(p->run, 0));
        ri->started_ms = sqlite3_column_int64(p->run, 1);
        ri->finished_ms = sqlite3_column_int64(p->run, 2);
        ri->created_ms = sqlite3_column_int64(p->run, 3);
        ri->jobs = sqlite3_column_int64(p->run, 4);
        ri->final_jobs = sqlite3_column_int64(p->run, 5);
    }
    sqlite3_reset(p->run);
    return rc == SQLITE_ROW ? 0 : -1;
}

/* ---------------------------------------------------------------- report */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
    if (!n)
        return 0;
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: gt-coord-bench --server URL --db PATH [options]\n"
               "  --run ID          run to drive (default 1)\n"
               "  --workers N       simulated workers, one thread and req socket each (default 4)\n"
               "  --batch B         results per \"results\" message (default 16)\n"
               "  --duration S      measured window from the first lease (default 30)\n"
               "  --max-time S      stop after S even if the run is not done (default 150)\n"
               "  --seed N          random seed for the fake timings (default 1)\n"
               "  --rate R          each worker reports at most R results/s, as if it\n"
               "                    benchmarked them first (default 0: as fast as answered)\n");
}

int main(int argc, char **argv)
{
    const char *url = NULL, *dbpath = NULL;
    long long run_id = 1;
    int nworkers = 4, batch = 16;
    double duration_s = 30, max_s = 150, rate = 0;
    unsigned long long seed = 1;
    static const struct option opts[] = {
        {"server", required_argument, 0, 's'}, {"db", required_argument, 0, 'd'},
        {"run", required_argument, 0, 'r'},    {"workers", required_argument, 0, 'w'},
        {"batch", required_argument, 0, 'b'},  {"duration", required_argument, 0, 't'},
        {"max-time", required_argument, 0, 'm'}, {"seed", required_argument, 0, 'S'},
        {"rate", required_argument, 0, 'R'},   {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's': url = optarg; break;
        case 'd': dbpath = optarg; break;
        case 'r': run_id = atoll(optarg); break;
        case 'w': nworkers = atoi(optarg); break;
        case 'b': batch = atoi(optarg); break;
        case 't': duration_s = atof(optarg); break;
        case 'm': max_s = atof(optarg); break;
        case 'S': seed = strtoull(optarg, NULL, 10); break;
        case 'R': rate = atof(optarg); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!url || !dbpath || nworkers < 1 || nworkers > 1024 || batch < 1 || duration_s <= 0 ||
        !(rate >= 0)) {
        usage(stderr);
        return 2;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);

    probe pr;
    if (probe_open(&pr, dbpath, run_id))
        return 1;
    runinfo ri;
    if (probe_run(&pr, &ri)) {
        fprintf(stderr, "run %lld not found in %s\n", run_id, dbpath);
        return 1;
    }
    long long c_start = probe_count(&pr);

    worker *ws = calloc((size_t)nworkers, sizeof *ws);
    if (!ws)
        return 1;
    /* The window opens when the workers start; registration is a handful of
     * requests, so it is counted in. */
    double t_open = now_ms();
    atomic_store(&g_t_open, t_open);
    atomic_store(&g_measuring, 1);
    for (int i = 0; i < nworkers; i++) {
        ws[i].idx = i;
        ws[i].url = url;
        ws[i].batch = batch;
        ws[i].rate = rate;
        ws[i].rng = 0x9e3779b97f4a7c15ULL ^ (seed * 1000003ULL + (unsigned long long)i);
        if (pthread_create(&ws[i].th, NULL, worker_main, &ws[i])) {
            fprintf(stderr, "cannot start worker thread %d\n", i);
            return 1;
        }
    }
    /* Sample the store every second; close the window after duration_s. */
    long long c_close = -1, prev = c_start;
    double t_close = 0, peak = 0;
    printf("  t[s]  results_in_store  rate[/s]  run\n");
    for (int sec = 1;; sec++) {
        double target = t_open + sec * 1000.0;
        double left = target - now_ms();
        if (left > 0)
            sleep_ms(left);
        long long n = probe_count(&pr);
        probe_run(&pr, &ri);
        double rate = (double)(n - prev);
        prev = n;
        if (c_close < 0 && rate > peak)
            peak = rate;
        printf("  %4d  %16lld  %8.0f  %s%s\n", sec, n, rate, ri.state,
               c_close < 0 ? "" : "  (after the window)");
        fflush(stdout);
        if (c_close < 0 && now_ms() - t_open >= duration_s * 1000) {
            atomic_store(&g_measuring, 0);
            t_close = now_ms();
            c_close = n;
        }
        if (g_stop || strcmp(ri.state, "running") || now_ms() - t_open >= max_s * 1000)
            break;
    }
    if (c_close < 0) { /* the run ended inside the window */
        atomic_store(&g_measuring, 0);
        t_close = now_ms();
        c_close = probe_count(&pr);
    }
    g_stop = 1;
    for (int i = 0; i < nworkers; i++)
        pthread_join(ws[i].th, NULL);
    /* bye from every worker (fresh calls: g_stop only limits retries) */
    for (int i = 0; i < nworkers; i++) {
        cJSON *m = gt_proto_new(GT_MSG_BYE);
        cJSON_AddNumberToObject(m, "worker_id", (double)ws[i].wid);
        cJSON_AddStringToObject(m, "session", ws[i].session);
        const char *type;
        char err[256];
        cJSON *r = gt_client_call(&ws[i].c, m, &type, 2000, err, sizeof err);
        cJSON_Delete(m);
        cJSON_Delete(r);
        gt_client_close(&ws[i].c);
    }
    probe_run(&pr, &ri);
    long long c_end = probe_count(&pr);
    /* The per-second count above is too coarse to see a 10 % change (a run of
     * 261,000 results takes 6 or 7 whole seconds): the store's own timestamps
     * of the run's first and last result give the rate to the millisecond. */
    long long p_n = 0, p_first = 0, p_last = 0, p_distinct = 0;
    {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(pr.db,
                               "SELECT COUNT(*), MIN(created_ms), MAX(created_ms),"
                               " (SELECT COUNT(*) FROM (SELECT DISTINCT problem_id, backend,"
                               " config_hash, device_model, phase FROM results WHERE run_id = ?1))"
                               " FROM results WHERE run_id = ?1",
                               -1, &st, NULL) == SQLITE_OK &&
            sqlite3_bind_int64(st, 1, run_id) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
            p_n = sqlite3_column_int64(st, 0);
            p_first = sqlite3_column_int64(st, 1);
            p_last = sqlite3_column_int64(st, 2);
            p_distinct = sqlite3_column_int64(st, 3);
        } else {
            fprintf(stderr, "precise rate: %s\n", sqlite3_errmsg(pr.db));
        }
        sqlite3_finalize(st);
    }

    /* ------- aggregate */
    double win_s = (t_close - t_open) / 1000;
    wstat tot;
    memset(&tot, 0, sizeof tot);
    uint64_t all_req = 0, all_sent = 0, all_acc = 0;
    for (int i = 0; i < nworkers; i++) {
        wstat *s = &ws[i].st;
        for (int t = 0; t < RQ_N; t++) {
            tot.req[t] += s->req[t];
            tot.req_ms[t] += s->req_ms[t];
            for (size_t k = 0; k < s->lat[t].n; k++)
                lat_add(&tot.lat[t], s->lat[t].v[k]);
            for (size_t k = 0; k < s->steady[t].n; k++)
                lat_add(&tot.steady[t], s->steady[t].v[k]);
        }
        tot.sent += s->sent;
        tot.accepted += s->accepted;
        tot.jobs_screen += s->jobs_screen;
        tot.jobs_final += s->jobs_final;
        tot.errors += s->errors;
        tot.encode_ms += s->encode_ms;
        all_req += s->all_requests;
        all_sent += s->all_sent;
        all_acc += s->all_accepted;
    }
    uint64_t nreq = 0;
    double busy_ms = 0;
    for (int t = 0; t < RQ_N; t++) {
        nreq += tot.req[t];
        busy_ms += tot.req_ms[t];
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("\n== worker endpoint: %d simulated workers, batch %d, window %.1f s ==\n", nworkers, batch,
           win_s);
    printf("machine: %ld CPU cores online, shared by gemmtuned, the %d worker threads and wrk\n", ncpu,
           nworkers);
    printf("results ingested (store rows)   : %lld in %.1f s = %.0f results/s (best second %.0f/s)\n",
           c_close - c_start, win_s, (double)(c_close - c_start) / win_s, peak);
    printf("results ingested (precise)      : %lld rows (%lld distinct) from first to last created_ms"
           " %.3f s = %.0f results/s\n",
           p_n, p_distinct, (p_last - p_first) / 1000.0,
           p_last > p_first ? (double)p_n * 1000 / (double)(p_last - p_first) : 0.0);
    printf("results ingested (worker acks)  : %llu accepted of %llu sent = %.0f results/s\n",
           (unsigned long long)tot.accepted, (unsigned long long)tot.sent,
           (double)tot.accepted / win_s);
    printf("worker endpoint requests        : %llu = %.0f req/s (jobs: %llu screen, %llu final; "
           "errors %llu)\n",
           (unsigned long long)nreq, (double)nreq / win_s, (unsigned long long)tot.jobs_screen,
           (unsigned long long)tot.jobs_final, (unsigned long long)tot.errors);
    printf("round trip per request type (ms, as the workers see it; queueing included):\n");
    printf("  %-14s %8s %8s %8s %8s %8s %10s %16s\n", "type", "count", "mean", "p50", "p99", "max",
           "sum[s]", "after 1 s: p99");
    for (int t = 0; t < RQ_N; t++) {
        lat *l = &tot.lat[t];
        if (!l->n)
            continue;
        qsort(l->v, l->n, sizeof *l->v, cmp_d);
        lat *sl = &tot.steady[t];
        if (sl->n)
            qsort(sl->v, sl->n, sizeof *sl->v, cmp_d);
        printf("  %-14s %8zu %8.2f %8.2f %8.2f %8.2f %10.1f %8.2f (%zu)\n", rq_name[t], l->n,
               tot.req_ms[t] / (double)l->n, pct(l->v, l->n, .5), pct(l->v, l->n, .99),
               l->v[l->n - 1], tot.req_ms[t] / 1000, sl->n ? pct(sl->v, sl->n, .99) : NAN, sl->n);
    }
    /* With one dispatcher thread, the requests' service times cannot overlap:
     * N workers keep it saturated iff N * window >> sum of round trips. */
    printf("dispatcher: %.0f%% of the window the %d workers were waiting for an answer "
           "(%.2f ms per request on average; client-side encoding %.1f s in all)\n",
           100 * busy_ms / (win_s * 1000 * nworkers), nworkers, nreq ? busy_ms / (double)nreq : 0,
           tot.encode_ms / 1000);
    printf("\n== run %lld ==\n", run_id);
    printf("state %s, %lld jobs (%lld final), %lld results in the store (+%lld after the window), "
           "whole bench: %llu requests, %llu results sent, %llu accepted\n",
           ri.state, ri.jobs, ri.final_jobs, c_end, c_end - c_close, (unsigned long long)all_req,
           (unsigned long long)all_sent, (unsigned long long)all_acc);
    if (!strcmp(ri.state, "done") && ri.finished_ms > 0)
        printf("completion time: %.1f s from the first lease to done (%.1f s from submission)\n",
               (double)(ri.finished_ms - ri.started_ms) / 1000,
               (double)(ri.finished_ms - ri.created_ms) / 1000);
    else
        printf("completion time: not done after %.1f s\n", (now_ms() - t_open) / 1000);
    sqlite3_finalize(pr.count);
    sqlite3_finalize(pr.run);
    sqlite3_close(pr.db);
    for (int t = 0; t < RQ_N; t++)
        free(tot.lat[t].v), free(tot.steady[t].v);
    for (int i = 0; i < nworkers; i++)
        for (int t = 0; t < RQ_N; t++)
            free(ws[i].st.lat[t].v), free(ws[i].st.steady[t].v);
    free(ws);
    return 0;
}
