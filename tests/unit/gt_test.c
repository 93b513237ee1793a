/* gt_test.c: the harness's counters and helpers. */
#include "gt_test.h"

#include <cjson/cJSON.h>
#include <nng/protocol/reqrep0/req.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_config.h"
#include "gt_dispatch.h"
#include "gt_plan.h"
#include "gt_store.h"
#include "gt_util.h"

int gt_test_failures;
int gt_test_checks;

static int g_cpu = 1, g_gpu = 1; /* no argument: every section that can run */
static int g_skipped;

void gt_test_mode(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--cpu"))
        g_gpu = 0;
    else if (argc == 2 && !strcmp(argv[1], "--gpu"))
        g_cpu = 0;
    else if (argc != 1) {
        fprintf(stderr, "usage: %s [--cpu | --gpu]\n", argv[0]);
        exit(2);
    }
}

int gt_test_cpu(void)
{
    return g_cpu;
}

int gt_test_gpu(void)
{
    return g_gpu;
}

void gt_test_skip(const char *section, const char *why)
{
    fprintf(stderr, "     SKIP %s: %s\n", section, why);
    g_skipped++;
}

int gt_test_done(void)
{
    fprintf(stderr, "%d checks, %d failed%s\n", gt_test_checks, gt_test_failures,
            g_skipped ? ", sections skipped" : "");
    if (gt_test_failures)
        return 1; /* a failure shows even when a section was skipped */
    /* --gpu exists to say whether the GPU sections ran: a skipped one
     * makes the entry "skipped", never "passed". The plain run keeps its
     * old meaning (a GPU machine's full run) and passes. */
    if (!g_cpu && g_skipped)
        return GT_TEST_SKIP;
    if (gt_test_checks == 0)
        return 1; /* a test that asserts nothing is a failure */
    return 0;
}

int gt_test_tmpdir(char *buf, size_t len, const char *tag)
{
    if (snprintf(buf, len, "/tmp/gt-%s.XXXXXX", tag) >= (int)len || !mkdtemp(buf)) {
        perror("gt_test_tmpdir");
        return -1;
    }
    return 0;
}

int gt_test_rmdir(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", dir);
        return -1;
    }
    return 0;
}

int gt_test_done_rm(const char *dir)
{
    int rc = gt_test_done();
    if (rc == 0)
        (void)gt_test_rmdir(dir);
    return rc;
}

const char *gt_test_data(const char *name)
{
    static char buf[4096];
    const char *dir = getenv("GT_TEST_DATA");
    snprintf(buf, sizeof buf, "%s/%s", dir ? dir : "tests/data", name);
    return buf;
}

int gt_test_sql(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "sql failed: %s\n  in: %.300s\n", msg ? msg : "?", sql);
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

int gt_test_store_sql(gt_store *s, const char *sql)
{
    gt_store_lock(s);
    int rc = gt_test_sql(gt_store_db(s), sql);
    gt_store_unlock(s);
    return rc;
}

int gt_test_create_run(gt_store *s, const gt_run_opts *o, const gt_log_result *log,
                       gt_run_created *out, char *err, size_t errlen)
{
    gt_plan plan;
    int rc = gt_plan_run(o, log, &plan, err, errlen);
    if (rc)
        return rc;
    rc = gt_store_create_run(s, o, log, &plan, out, err, errlen);
    gt_plan_free(&plan);
    return rc;
}

cJSON *gt_test_result(const cJSON *cfg, int is_baseline, double us)
{
    cJSON *x = cJSON_CreateObject();
    cJSON_AddItemToObject(x, "config", cJSON_Duplicate(cfg, 1));
    cJSON_AddBoolToObject(x, "baseline", is_baseline);
    cJSON_AddBoolToObject(x, "valid", 1);
    cJSON_AddNumberToObject(x, "time_us", us);
    cJSON_AddNumberToObject(x, "rel_err", 1e-6);
    cJSON_AddStringToObject(x, "reason", "");
    return x;
}

void gt_test_paired(cJSON *x, int rounds, double up, double lo, double hi)
{
    cJSON_AddNumberToObject(x, "rounds", rounds);
    cJSON_AddNumberToObject(x, "uplift", up);
    cJSON_AddNumberToObject(x, "uplift_lo", lo);
    cJSON_AddNumberToObject(x, "uplift_hi", hi);
}

void gt_test_baseline(cJSON *msg, const cJSON *base, double us)
{
    cJSON *b = cJSON_CreateObject();
    cJSON_AddItemToObject(b, "config", cJSON_Duplicate(base, 1));
    cJSON_AddNumberToObject(b, "time_us", us);
    cJSON_AddItemToObject(msg, "baseline", b);
}

int gt_test_same_cfg(const cJSON *a, const cJSON *b)
{
    char ha[17], hb[17];
    return a && b && gt_cfg_hash(a, ha) == 0 && gt_cfg_hash(b, hb) == 0 && !strcmp(ha, hb);
}

int gt_test_report(gt_store *s, int64_t worker_id, const struct cJSON *msg, int64_t now_ms,
                   int64_t lease_ms, int *cancelled, size_t *accepted, size_t *rejected, char *err,
                   size_t errlen)
{
    gt_report rep;
    *cancelled = 0;
    *accepted = *rejected = 0;
    if (gt_dispatch_decode_report(msg, &rep, err, errlen))
        return -1;
    int rc = gt_store_report(s, worker_id, &rep, now_ms, lease_ms, cancelled, accepted, rejected,
                             err, errlen);
    gt_report_fini(&rep);
    return rc;
}

int gt_test_add_run(gt_store *s, const char *log, const char *const (*opts)[2], size_t nopts,
                    gt_run_created *cr)
{
    char err[512];
    gt_run_opts o;
    gt_run_opts_default(&o);
    int rc = gt_run_opts_set(&o, "backend", "cpu", err, sizeof err);
    for (size_t i = 0; rc == 0 && i < nopts; i++)
        rc = gt_run_opts_set(&o, opts[i][0], opts[i][1], err, sizeof err);
    gt_log_result res;
    gt_run_created created;
    memset(&res, 0, sizeof res);
    if (rc == 0)
        rc = gt_log_parse(log, strlen(log), &o.log, &res);
    if (rc == 0)
        rc = gt_test_create_run(s, &o, &res, cr ? cr : &created, err, sizeof err);
    else if (res.nerrors)
        snprintf(err, sizeof err, "%s", res.errors[0].msg);
    CHECK_MSG(rc == 0, "create run: %s", err);
    gt_log_result_free(&res);
    gt_run_opts_fini(&o);
    return rc == 0 ? 0 : -1;
}

gt_store *gt_test_store_with_run(const char *dir, const char *log, const char *const (*opts)[2],
                                 size_t nopts, gt_run_created *cr)
{
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/c.db", dir);
    gt_store *s = gt_store_open(path, err, sizeof err);
    CHECK_MSG(s != NULL, "%s", err);
    if (s && gt_test_add_run(s, log, opts, nopts, cr) != 0) {
        gt_store_close(s);
        s = NULL;
    }
    return s;
}

static int64_t sim_worker(gt_store *s, const char *host, const char *backend, const char *model, int units,
                          int pid)
{
    char err[512];
    gt_worker_info w;
    memset(&w, 0, sizeof w);
    snprintf(w.host, sizeof w.host, "%s", host);
    snprintf(w.backend, sizeof w.backend, "%s", backend);
    snprintf(w.device_model, sizeof w.device_model, "%s", model);
    w.units = units;
    w.pid = pid;
    int64_t id = 0;
    int rc = gt_store_register_worker(s, &w, gt_wall_ms(), &id, err, sizeof err);
    CHECK_MSG(rc == 0, "register: %s", err);
    return rc == 0 ? id : 0;
}

int64_t gt_test_sim_worker(gt_store *s, const char *host, int units)
{
    return sim_worker(s, host, "cpu", "Sim CPU", units, 0);
}

int64_t gt_test_sim_gpu_worker(gt_store *s, const char *host, int pid)
{
    return sim_worker(s, host, "cuda", "Sim GPU", 0, pid);
}

long long gt_test_int(gt_store *s, const char *sql)
{
    sqlite3_stmt *st = NULL;
    long long n = -1;
    gt_store_lock(s);
    if (sqlite3_prepare_v2(gt_store_db(s), sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    gt_store_unlock(s);
    return n;
}

nng_socket gt_test_dial(const char *url)
{
    nng_socket s;
    if (nng_req0_open(&s) != 0 || nng_setopt_ms(s, NNG_OPT_RECVTIMEO, 60000) != 0 ||
        nng_setopt_ms(s, NNG_OPT_SENDTIMEO, 60000) != 0 || nng_dial(s, url, NULL, 0) != 0) {
        fprintf(stderr, "cannot dial %s\n", url);
        exit(1);
    }
    return s;
}

int gt_test_send(nng_socket s, const char *txt) { return nng_send(s, (void *)txt, strlen(txt), 0); }

cJSON *gt_test_recv(nng_socket s)
{
    char *r = NULL;
    size_t len = 0;
    if (nng_recv(s, &r, &len, NNG_FLAG_ALLOC) != 0)
        return NULL;
    cJSON *j = cJSON_ParseWithLength(r, len);
    nng_free(r, len);
    return j;
}

cJSON *gt_test_req(nng_socket s, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return gt_test_send(s, buf) == 0 ? gt_test_recv(s) : NULL;
}
