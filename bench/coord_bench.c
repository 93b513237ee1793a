/* coord_bench.c: gt-coord-bench, a load generator for the coordinator's worker
 * endpoint. N simulated workers (bench/coord_bench_worker.c: each with its
 * own nng req socket, exactly like gemmtune-worker's gt_client) register,
 * lease jobs and report fake but well-formed results as fast as the
 * coordinator takes them: for every job, a valid result for every candidate
 * of the job (the real configs from the job), in batches of B per "results"
 * message, done=true with the baseline timing at the end. Final jobs are
 * answered the same way (baseline result first, is_baseline=1). The workers
 * run as a thread each (default), or, with --async, as state machines that
 * nng's completion callbacks step from a few threads
 * (bench/coord_bench_async.c).
 *
 * It measures, over a window of --duration seconds from the first lease:
 *   - results ingested per second from the store (COUNT(*) of the run's
 *     results rows, read through a separate read-only SQLite connection, WAL
 *     lets it read without taking the coordinator's lock) and from the
 *     workers' own counts (rows the acks say were accepted);
 *   - requests per second on the worker endpoint, and the round-trip latency
 *     of each request type as the workers see it (queueing included);
 * then keeps going until the run is done (or --max-time) and prints the run's
 * completion time from the store (runs.finished_ms - runs.started_ms).
 *
 * bench/coord_bench.sh starts gemmtuned, submits the workload, runs wrk on
 * the HTTP API next to this program and prints everything. */

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coord_bench.h"
#include "gt_proto.h"

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
               "  --workers N       simulated workers, a req socket each (default 4)\n"
               "  --async           drive the workers from nng's callbacks (a few threads)\n"
               "                    instead of a thread per worker\n"
               "  --trace FILE      every round trip of the window: type, worker, sent at (ms\n"
               "                    after the window opened), round trip (ms)\n"
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
    int nworkers = 4, batch = 16, async = 0;
    const char *trace = NULL;
    double duration_s = 30, max_s = 150, rate = 0;
    unsigned long long seed = 1;
    static const struct option opts[] = {
        {"server", required_argument, 0, 's'}, {"db", required_argument, 0, 'd'},
        {"run", required_argument, 0, 'r'},    {"workers", required_argument, 0, 'w'},
        {"batch", required_argument, 0, 'b'},  {"duration", required_argument, 0, 't'},
        {"max-time", required_argument, 0, 'm'}, {"seed", required_argument, 0, 'S'},
        {"rate", required_argument, 0, 'R'},   {"async", no_argument, 0, 'A'},
        {"trace", required_argument, 0, 'T'},
        {"help", no_argument, 0, 'h'},
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
        case 'A': async = 1; break;
        case 'T': trace = optarg; break;
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

    cb_worker *ws = calloc((size_t)nworkers, sizeof *ws);
    if (!ws)
        return 1;
    /* The window opens when the workers start; registration is a handful of
     * requests, so it is counted in. */
    double t_open = cb_now_ms();
    atomic_store(&g_t_open, t_open);
    atomic_store(&g_measuring, 1);
    for (int i = 0; i < nworkers; i++) {
        ws[i].idx = i;
        ws[i].url = url;
        ws[i].batch = batch;
        ws[i].rate = rate;
        ws[i].rng = 0x9e3779b97f4a7c15ULL ^ (seed * 1000003ULL + (unsigned long long)i);
    }
    if (async ? cb_async_start(ws, nworkers) : cb_thread_start(ws, nworkers))
        return 1;
    /* Sample the store every second; close the window after duration_s. */
    long long c_close = -1, prev = c_start;
    double t_close = 0, peak = 0;
    printf("  t[s]  results_in_store  rate[/s]  run\n");
    for (int sec = 1;; sec++) {
        double target = t_open + sec * 1000.0;
        double left = target - cb_now_ms();
        if (left > 0)
            cb_sleep_ms(left);
        long long n = probe_count(&pr);
        probe_run(&pr, &ri);
        double rate = (double)(n - prev);
        prev = n;
        if (c_close < 0 && rate > peak)
            peak = rate;
        printf("  %4d  %16lld  %8.0f  %s%s\n", sec, n, rate, ri.state,
               c_close < 0 ? "" : "  (after the window)");
        fflush(stdout);
        if (c_close < 0 && cb_now_ms() - t_open >= duration_s * 1000) {
            atomic_store(&g_measuring, 0);
            t_close = cb_now_ms();
            c_close = n;
        }
        if (g_stop || strcmp(ri.state, "running") || cb_now_ms() - t_open >= max_s * 1000)
            break;
    }
    if (c_close < 0) { /* the run ended inside the window */
        atomic_store(&g_measuring, 0);
        t_close = cb_now_ms();
        c_close = probe_count(&pr);
    }
    g_stop = 1;
    if (async)
        cb_async_stop(ws, nworkers, 5000);
    else
        cb_thread_stop(ws, nworkers);
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

    if (trace) {
        FILE *f = fopen(trace, "w");
        if (!f) {
            fprintf(stderr, "--trace %s: %s\n", trace, strerror(errno));
        } else {
            for (int i = 0; i < nworkers; i++)
                for (int t = 0; t < RQ_N; t++)
                    for (size_t k = 0; k < ws[i].st.lat[t].n && k < ws[i].st.sent_at[t].n; k++)
                        fprintf(f, "%s %d %.3f %.3f %lld %.3f\n", cb_rq_name[t], i,
                                ws[i].st.sent_at[t].v[k], ws[i].st.lat[t].v[k], ws[i].wid,
                                ws[i].st.sent_at[t].v[k] + t_open);
            if (fclose(f))
                fprintf(stderr, "--trace %s: %s\n", trace, strerror(errno));
        }
    }

    /* ------- aggregate */
    double win_s = (t_close - t_open) / 1000;
    cb_wstat tot;
    memset(&tot, 0, sizeof tot);
    uint64_t all_req = 0, all_sent = 0, all_acc = 0;
    for (int i = 0; i < nworkers; i++) {
        cb_wstat *s = &ws[i].st;
        for (int t = 0; t < RQ_N; t++) {
            tot.req[t] += s->req[t];
            tot.req_ms[t] += s->req_ms[t];
            for (size_t k = 0; k < s->lat[t].n; k++)
                cb_lat_add(&tot.lat[t], s->lat[t].v[k]);
            for (size_t k = 0; k < s->steady[t].n; k++)
                cb_lat_add(&tot.steady[t], s->steady[t].v[k]);
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
    if (async)
        printf("machine: %ld CPU cores online, shared by gemmtuned, the workers (driven by nng's"
               " callback threads) and wrk\n", ncpu);
    else
        printf("machine: %ld CPU cores online, shared by gemmtuned, the %d worker threads and wrk\n",
               ncpu, nworkers);
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
        cb_lat *l = &tot.lat[t];
        if (!l->n)
            continue;
        qsort(l->v, l->n, sizeof *l->v, cmp_d);
        cb_lat *sl = &tot.steady[t];
        if (sl->n)
            qsort(sl->v, sl->n, sizeof *sl->v, cmp_d);
        printf("  %-14s %8zu %8.2f %8.2f %8.2f %8.2f %10.1f %8.2f (%zu)\n", cb_rq_name[t], l->n,
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
        printf("completion time: not done after %.1f s\n", (cb_now_ms() - t_open) / 1000);
    sqlite3_finalize(pr.count);
    sqlite3_finalize(pr.run);
    sqlite3_close(pr.db);
    for (int t = 0; t < RQ_N; t++)
        free(tot.lat[t].v), free(tot.steady[t].v);
    for (int i = 0; i < nworkers; i++)
        for (int t = 0; t < RQ_N; t++)
            free(ws[i].st.lat[t].v), free(ws[i].st.steady[t].v), free(ws[i].st.sent_at[t].v);
    free(ws);
    return 0;
}
