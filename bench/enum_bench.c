/* enum_bench.c: gt-enum-bench, what the coordinator spends on one cuda
 * "enumerate" report (issue 20: with 4 workers enumerating at once the
 * single dispatcher thread serialized ~190 ms of them). It opens a fresh
 * store in a temporary directory, registers a cuda worker, creates a run of
 * N problems (budget 100, strategy exhaustive unless argv[2] names another),
 * and answers every enumerate job with a realistic candidate list: 4032
 * cuBLASLt configs plus generated mma and gemv configs, as a worker's
 * results message text. For each report it times, as the dispatcher runs
 * them (server/dispatch.c: gt_proto_decode, on_results):
 *   parse  - the wire text into cJSON (gt_proto_decode),
 *   decode - gt_dispatch_decode_report into a gt_report,
 *   store  - gt_store_report (plan, screen jobs, state changes),
 * and, outside the store's transaction, gt_plan_enumerated alone (plan),
 * and prints each one's median in ms.
 *
 * usage: gt-enum-bench [N problems (20)] [strategy (exhaustive)] [keep]
 * keep: the store is left in place (its path printed), to compare what was
 * stored before and after a change. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gt_dispatch.h"
#include "gt_log.h"
#include "gt_plan.h"
#include "gt_proto.h"
#include "gt_run_opts.h"
#include "gt_store.h"
#include "gt_util.h"

#define NCUBLASLT 4032
#define NMMA 360
#define NGEMV 240

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The results message a cuda worker sends for an enumerate job: varied
 * configs of the three kinds (cuBLASLt, mma/wgmma, gemv), seeded by job so
 * that problems differ, in the worker's key order. NULL out of memory. */
static char *enum_message(long long job_id, unsigned seed)
{
    gt_str b;
    gt_str_init(&b);
    static const char *const insts[] = {"wgmma", "mma"}, *const reds[] = {"none", "atomic"};
    static const char *const loads[] = {"cs", "ca", "cg"}, *const pipes[] = {"dbuf", "single"};
    int ok = gt_str_printf(&b, "{\"v\":%d,\"type\":\"results\",\"job_id\":%lld,\"done\":true,\"results\":[],"
                         "\"candidates\":[", GT_PROTO_VERSION, job_id) == 0;
    int first = 1;
    for (int i = 0; ok && i < NCUBLASLT; i++, first = 0) {
        unsigned x = (unsigned)i * 2654435761u + seed;
        ok = gt_str_printf(&b,
                     "%s{\"algo_id\": %u, \"cluster\": %u, \"custom\": %u, \"inner_shape\": %u,"
                     " \"reduction\": %u, \"splitk\": %u, \"stages\": %u, \"swizzle\": %u,"
                     " \"tile\": %d}",
                     first ? "" : ", ", 1 + (x >> 3) % 70, (x >> 9) % 8, (x >> 12) % 4,
                     (x >> 14) % 3, (x >> 16) % 3, 1 + (x >> 18) % 8, 1 + (x >> 21) % 40,
                     (x >> 27) % 2, i % 450) == 0;
    }
    for (int i = 0; ok && i < NMMA; i++) {
        unsigned x = (unsigned)i * 40503u + seed;
        ok = gt_str_printf(&b,
                     ", {\"bk\": %d, \"bm\": %d, \"bn\": %d, \"family\": \"mma\", \"inst\": \"%s\","
                     " \"reduction\": \"%s\", \"splitk\": %u, \"stages\": %u, \"swizzle\": %u,"
                     " \"warps_m\": %u, \"warps_n\": %u}",
                     32 << (i % 2), 64 << (i / 2 % 3), 64 << (i / 6 % 3), insts[x % 2],
                     reds[(x >> 3) % 2], 1 + (x >> 5) % 4, 2 + (x >> 7) % 4, 1u << ((x >> 9) % 5),
                     1 + (x >> 12) % 8, 1 + (x >> 15) % 2) == 0;
    }
    for (int i = 0; ok && i < NGEMV; i++) {
        unsigned x = (unsigned)i * 69069u + seed;
        ok = gt_str_printf(&b,
                     ", {\"a_load\": \"%s\", \"family\": \"gemv\", \"k_unroll\": %u, \"kwarps\": %u,"
                     " \"n_tile\": %d, \"pipe\": \"%s\", \"reduction\": \"%s\","
                     " \"rows_per_cta\": %d, \"splitk\": %u, \"vec\": %d, \"warps\": %u}",
                     loads[x % 3], 1 + (x >> 2) % 4, 1 + (x >> 4) % 4, 8 << (i % 3),
                     pipes[(x >> 6) % 2], reds[(x >> 7) % 2], 4 << (i / 3 % 4), 1 + (x >> 9) % 4,
                     4 << (i / 12 % 2), 1 + (x >> 11) % 8) == 0;
    }
    ok = ok && gt_str_printf(&b, "],\"baseline_config\":{\"algo_id\": 66, \"cluster\": 0, \"custom\": 0,"
                           " \"family\": \"cublaslt\", \"heuristic\": 0, \"inner_shape\": 0,"
                           " \"reduction\": 0, \"splitk\": 1, \"stages\": 35, \"swizzle\": 0,"
                           " \"tile\": 201}}") == 0;
    if (!ok) {
        gt_str_free(&b);
        return NULL;
    }
    return b.s;
}

/* 0 when txt is cJSON_PrintUnformatted's text of v (the report's texts must
 * stay cJSON's prints: the plan stores them). */
static int same_print(const cJSON *v, const char *txt)
{
    char *t = cJSON_PrintUnformatted(v);
    int rc = t && txt && !strcmp(t, txt) ? 0 : -1;
    cJSON_free(t);
    return rc;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20;
    const char *strategy = argc > 2 ? argv[2] : "exhaustive";
    int keep = argc > 3 && !strcmp(argv[3], "keep");
    char dir[] = "/tmp/gt-enum-bench.XXXXXX", path[512], err[512];
    int rc = 1, made = 0;
    gt_store *s = NULL;
    char *log = NULL;
    double *t_parse = calloc((size_t)n, sizeof(double)), *t_dec = calloc((size_t)n, sizeof(double));
    double *t_store = calloc((size_t)n, sizeof(double)), *t_plan = calloc((size_t)n, sizeof(double));
    gt_run_opts o;
    gt_log_result res;
    gt_plan plan;
    memset(&res, 0, sizeof res);
    memset(&plan, 0, sizeof plan);
    gt_run_opts_default(&o);
    gt_log_set_level(GT_LOG_WARN); /* no migration lines */
    if (n < 1 || !t_parse || !t_dec || !t_store || !t_plan || !mkdtemp(dir)) {
        fprintf(stderr, "enum-bench: bad N or out of memory\n");
        goto out;
    }
    made = 1;
    snprintf(path, sizeof path, "%s/c.db", dir);
    if (!(s = gt_store_open(path, err, sizeof err)))
        goto fail;
    /* N distinct bf16 GEMMs (problems merge on their key) */
    gt_str lb;
    gt_str_init(&lb);
    if (gt_str_printf(&lb, "M,N,K,dtype\n"))
        goto oom;
    for (int i = 0; i < n; i++)
        if (gt_str_printf(&lb, "%d,%d,4096,bf16\n", 1024 + 64 * i, 4096))
            goto oom;
    log = lb.s;
    if (gt_run_opts_set(&o, "backend", "cuda", err, sizeof err) ||
        gt_run_opts_set(&o, "device_model", "Sim GPU", err, sizeof err) ||
        gt_run_opts_set(&o, "budget", "100", err, sizeof err) ||
        gt_run_opts_set(&o, "strategy", strategy, err, sizeof err))
        goto fail;
    if (gt_log_parse(log, strlen(log), &o.log, &res)) {
        snprintf(err, sizeof err, "log: %s", res.nerrors ? res.errors[0].msg : "?");
        goto fail;
    }
    gt_run_created cr;
    if (gt_plan_run(&o, &res, &plan, err, sizeof err) ||
        gt_store_create_run(s, &o, &res, &plan, &cr, err, sizeof err))
        goto fail;
    gt_worker_info w;
    memset(&w, 0, sizeof w);
    snprintf(w.host, sizeof w.host, "bench");
    snprintf(w.backend, sizeof w.backend, "cuda");
    snprintf(w.device_model, sizeof w.device_model, "Sim GPU");
    w.units = 132;
    w.pid = 4242;
    int64_t wid = 0;
    if (gt_store_register_worker(s, &w, gt_wall_ms(), &wid, err, sizeof err))
        goto fail;
    size_t msg_bytes = 0;
    int done = 0;
    for (; done < n; done++) {
        gt_job job;
        int r = gt_store_lease(s, wid, gt_wall_ms(), 60000, &job, err, sizeof err);
        if (r != 1)
            goto fail;
        if (strcmp(job.kind, "enumerate")) {
            snprintf(err, sizeof err, "leased a %s job, not an enumerate one", job.kind);
            gt_job_free(&job);
            goto fail;
        }
        char *msg = enum_message((long long)job.id, (unsigned)job.problem_id * 7919u);
        if (!msg) {
            gt_job_free(&job);
            goto oom;
        }
        msg_bytes = strlen(msg);
        const char *type;
        double t0 = gt_mono_ms();
        cJSON *m = gt_proto_decode(msg, msg_bytes, &type, err, sizeof err);
        double t1 = gt_mono_ms();
        gt_report rep;
        int dr = m ? gt_dispatch_decode_report(m, &rep, err, sizeof err) : -1;
        double t2 = gt_mono_ms();
        if (m && !dr && (same_print(cJSON_GetObjectItemCaseSensitive(m, "candidates"),
                                    rep.enum_candidates) ||
                         same_print(cJSON_GetObjectItemCaseSensitive(m, "baseline_config"),
                                    rep.enum_baseline))) {
            snprintf(err, sizeof err, "decoded text differs from cJSON_PrintUnformatted's");
            gt_report_fini(&rep);
            dr = -1;
        }
        cJSON_Delete(m);
        free(msg);
        if (dr) {
            gt_job_free(&job);
            goto fail;
        }
        /* the planner alone, outside the store's transaction */
        gt_plan_problem pp;
        char key[64];
        snprintf(key, sizeof key, "bench-%lld", (long long)job.problem_id);
        double t3 = gt_mono_ms();
        int pr = gt_plan_enumerated(&o, job.problem_id, key, rep.enum_candidates, rep.enum_baseline,
                                    &pp, err, sizeof err);
        double t4 = gt_mono_ms();
        if (pr == 0)
            gt_plan_problem_fini(&pp);
        int cancelled = 0;
        size_t acc = 0, rej = 0;
        double t5 = gt_mono_ms();
        int sr = pr ? -1
                    : gt_store_report(s, wid, &rep, gt_wall_ms(), 60000, &cancelled, &acc, &rej,
                                      err, sizeof err);
        double t6 = gt_mono_ms();
        gt_report_fini(&rep);
        gt_job_free(&job);
        if (sr)
            goto fail;
        t_parse[done] = t1 - t0;
        t_dec[done] = t2 - t1;
        t_plan[done] = t4 - t3;
        t_store[done] = t6 - t5;
    }
    printf("gt-enum-bench: %d enumerate reports, strategy %s, budget 100, %d candidates (%zu bytes)\n",
           n, strategy, NCUBLASLT + NMMA + NGEMV, msg_bytes);
    printf("median ms per report: parse %.2f  decode %.2f  store %.2f  (of which plan %.2f)  "
           "decode+store %.2f\n",
           median(t_parse, n), median(t_dec, n), median(t_store, n), median(t_plan, n),
           median(t_dec, n) + median(t_store, n));
    rc = 0;
    goto out;
oom:
    snprintf(err, sizeof err, "out of memory");
fail:
    fprintf(stderr, "enum-bench: %s\n", err);
out:
    gt_plan_free(&plan);
    gt_log_result_free(&res);
    gt_run_opts_fini(&o);
    if (s)
        gt_store_close(s);
    free(log);
    free(t_parse);
    free(t_dec);
    free(t_store);
    free(t_plan);
    if (made && keep) {
        printf("store kept: %s/c.db\n", dir);
    } else if (made) {
        /* the store's files (WAL mode: the database, its -wal and -shm) */
        static const char *const sfx[] = {"", "-wal", "-shm"};
        for (size_t i = 0; i < sizeof sfx / sizeof *sfx; i++) {
            snprintf(path, sizeof path, "%s/c.db%s", dir, sfx[i]);
            (void)unlink(path); /* absent is fine */
        }
        if (rmdir(dir) != 0)
            fprintf(stderr, "enum-bench: could not remove %s\n", dir);
    }
    return rc;
}
