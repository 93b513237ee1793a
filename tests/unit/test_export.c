/* test_export.c: exported result databases (server/export.c) and the HTTP
 * client (cli/httpc.c).
 *
 * Builds a small coordinator database with plain SQL (two runs sharing a
 * problem key, screen and final results, baselines), exports and merges it
 * and checks the files with SQL; then drives gt_httpc against an in-test HTTP
 * server thread on 127.0.0.1 (Content-Length, chunked, read-until-close,
 * download, connect failure). */
#include "gt_export.h"
#include "gt_httpc.h"
#include "gt_test.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

struct gt_schema_file {
    const char *name;
    const char *sql;
};
extern const struct gt_schema_file gt_schema_files[];

static char g_dir[256];

static const char *tpath(const char *name)
{
    static char buf[8][512];
    static int next;
    char *b = buf[next++ % 8];
    snprintf(b, 512, "%s/%s", g_dir, name);
    return b;
}

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* Files in the temp dir whose name contains ".tmp-" (leftover temp files). */
static int count_temps(void)
{
    int n = 0;
    DIR *d = opendir(g_dir);
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp-"))
            n++;
    closedir(d);
    return n;
}

/* First column of the first row as double (NAN when none / NULL). */
static double q_num(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    double v = NAN;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "prepare failed: %s: %s\n", sqlite3_errmsg(db), sql);
        return NAN;
    }
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* First column of the first row as text into a static buffer ("" when none). */
static const char *q_str(sqlite3 *db, const char *sql)
{
    static char buf[4][512];
    static int next;
    char *b = buf[next++ % 4];
    b[0] = '\0';
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "prepare failed: %s: %s\n", sqlite3_errmsg(db), sql);
        return b;
    }
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(b, 512, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return b;
}

static int near(double a, double b)
{
    return fabs(a - b) < 1e-9 * (fabs(b) + 1);
}

static sqlite3 *open_ro(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

static const char k_problem_cols[] =
    "INSERT INTO problems (id, run_id, key, label, m, n, k, batch, trans_a, trans_b, "
    "lda, ldb, ldc, ldd, stride_a, stride_b, stride_c, stride_d, a_type, b_type, c_type, d_type, "
    "compute_type, scale_type, alpha, beta, bias, bias_type, activation, rotating_mb, "
    "call_count, flops, bytes, weight, spec, state) VALUES ";

/* The coordinator database: run 1 (problems K1, K2) and run 2 (K1 again,
 * faster, with a larger call count, and K3). */
static sqlite3 *make_coordinator(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK)
        goto fail;
    if (gt_test_sql(db, "PRAGMA foreign_keys = ON; PRAGMA journal_mode = WAL;") != 0 ||
        gt_test_sql(db, "BEGIN") != 0)
        goto fail;
    /* every migration, in order, as the store applies them (not export.sql) */
    for (const struct gt_schema_file *f = gt_schema_files; f->name; f++)
        if (f->name[0] >= '0' && f->name[0] <= '9' && gt_test_sql(db, f->sql) != 0)
            goto fail;
    if (gt_test_sql(db, "COMMIT") != 0)
        goto fail;

    char sql[8192];
#define PROBLEM(id, run, key, calls, weight)                                                       \
    snprintf(sql, sizeof sql,                                                                      \
             "%s(%d, %d, '%s', 'f32 NN 64x64x64', 64, 64, 64, 1, 'N', 'N', 64, 64, 64, 64, 0, 0, " \
             "0, 0, 'f32', 'f32', 'f32', 'f32', 'f32', 'f32', 1.0, 0.0, 0, 'none', 'none', 0, "     \
             "%d, 524288, 49152, %g, '{\"m\":64}', 'done')",                                      \
             k_problem_cols, id, run, key, calls, weight);                                         \
    if (gt_test_sql(db, sql) != 0)                                                                 \
        goto fail;

    if (gt_test_sql(db,
             "INSERT INTO runs (id, name, source_format, backend, device_model, strategy, budget, "
             "options, state, created_ms) VALUES "
             "(1, 'llama-a', 'hipblaslt', 'cpu', 'testcpu', 'exhaustive', 0, '{}', 'done', 1000),"
             "(2, 'llama-b', 'hipblaslt', 'cpu', 'testcpu', 'exhaustive', 0, '{}', 'done', 2000);"
             "INSERT INTO workers (id, host, pid, device_index, backend, device_model, arch, "
             "mem_bytes, units, driver, version, state, registered_ms, last_heartbeat_ms) VALUES "
             "(1, 'w1', 42, 0, 'cpu', 'testcpu', 'x86_64', 1024, 8, 'none', '0.1.0', 'idle', 1, 1);") !=
        0)
        goto fail;
    PROBLEM(1, 1, "K1", 100, 0.75)
    PROBLEM(2, 1, "K2", 10, 0.25)
    PROBLEM(3, 2, "K1", 300, 0.5)
    PROBLEM(4, 2, "K3", 5, 0.5)
#undef PROBLEM
    if (gt_test_sql(db,
             "INSERT INTO jobs (id, run_id, problem_id, backend, kind, candidates, ncandidates, "
             "baseline, state, created_ms, updated_ms) VALUES "
             "(1, 1, 1, 'cpu', 'screen', '[]', 3, '{}', 'done', 1, 1),"
             "(2, 1, 1, 'cpu', 'final',  '[]', 2, '{}', 'done', 1, 1),"
             "(3, 1, 2, 'cpu', 'screen', '[]', 2, '{}', 'done', 1, 1),"
             "(4, 1, 2, 'cpu', 'screen', '[]', 1, '{}', 'done', 1, 1),"
             "(5, 2, 3, 'cpu', 'final',  '[]', 1, '{}', 'done', 1, 1),"
             "(6, 2, 4, 'cpu', 'screen', '[]', 1, '{}', 'done', 1, 1);"
             /* run 1, K1: screen winner B (8.0) but the final phase decides: B 9.0 vs
              * baseline 12.0; the invalid C (5.0) never counts. */
             "INSERT INTO results (run_id, problem_id, job_id, backend, phase, config, config_hash, "
             "is_baseline, time_us, spread, tflops, rel_err, valid, reason, worker_id, "
             "device_model, created_ms) VALUES "
             "(1, 1, 1, 'cpu', 'screen', '{\"t\":\"A\"}', 'hA', 0, 10.0, 0.01, 0.05, 1e-6, 1, NULL, 1, 'testcpu', 10),"
             "(1, 1, 1, 'cpu', 'screen', '{\"t\":\"B\"}', 'hB', 0, 8.0, 0.01, 0.06, 1e-6, 1, NULL, 1, 'testcpu', 11),"
             "(1, 1, 1, 'cpu', 'screen', '{\"t\":\"C\"}', 'hC', 0, 5.0, 0.01, 0.10, 0.5, 0, 'rel_err', 1, 'testcpu', 12),"
             "(1, 1, 2, 'cpu', 'final', '{\"t\":\"B\"}', 'hB', 0, 9.0, 0.01, 0.058, 1e-6, 1, NULL, 1, 'testcpu', 20),"
             "(1, 1, 2, 'cpu', 'final', '{\"t\":\"A\"}', 'hA', 0, 9.5, 0.01, 0.055, 1e-6, 1, NULL, 1, 'testcpu', 21),"
             "(1, 1, 2, 'cpu', 'final', '{\"t\":\"base\"}', 'hBase', 1, 12.0, 0.01, 0.04, 1e-6, 1, NULL, 1, 'testcpu', 22),"
             /* run 1, K2: screen only, judged against the mean screen baseline (32). */
             "(1, 2, 3, 'cpu', 'screen', '{\"t\":\"D\"}', 'hD', 0, 20.0, 0.02, 0.03, 1e-6, 1, NULL, 1, 'testcpu', 30),"
             "(1, 2, 3, 'cpu', 'screen', '{\"t\":\"E\"}', 'hE', 0, 25.0, 0.02, 0.02, 1e-6, 1, NULL, 1, 'testcpu', 31),"
             "(1, 2, 4, 'cpu', 'screen', '{\"t\":\"F\"}', 'hF', 0, 22.0, 0.02, 0.02, 1e-6, 1, NULL, 1, 'testcpu', 32),"
             /* run 2, K1 faster (7.0 vs 11.0); K3 only here. */
             "(2, 3, 5, 'cpu', 'final', '{\"t\":\"G\"}', 'hG', 0, 7.0, 0.01, 0.07, 1e-6, 1, NULL, 1, 'testcpu', 40),"
             "(2, 3, 5, 'cpu', 'final', '{\"t\":\"base\"}', 'hBase', 1, 11.0, 0.01, 0.05, 1e-6, 1, NULL, 1, 'testcpu', 41),"
             "(2, 4, 6, 'cpu', 'screen', '{\"t\":\"H\"}', 'hH', 0, 3.0, 0.01, 0.01, 1e-6, 1, NULL, 1, 'testcpu', 42);"
             "INSERT INTO baselines (run_id, problem_id, job_id, backend, device_model, config, "
             "time_us, spread, worker_id, created_ms) VALUES "
             "(1, 1, 1, 'cpu', 'testcpu', '{}', 13.0, 0.01, 1, 10),"
             "(1, 1, 2, 'cpu', 'testcpu', '{}', 12.0, 0.01, 1, 20),"
             "(1, 2, 3, 'cpu', 'testcpu', '{}', 30.0, 0.01, 1, 30),"
             "(1, 2, 4, 'cpu', 'testcpu', '{}', 34.0, 0.01, 1, 31),"
             "(2, 4, 6, 'cpu', 'testcpu', '{}', 6.0, 0.01, 1, 42);"
             /* run 2's final was paired (006): G's median ratio 1.5 in [1.4, 1.6]
              * over 12 rounds, beyond the noise; the baseline's row 1 */
             "UPDATE results SET rounds = 12, uplift = 1.5, uplift_lo = 1.4, uplift_hi = 1.6"
             " WHERE problem_id = 3 AND config_hash = 'hG';"
             "UPDATE results SET rounds = 12, uplift = 1, uplift_lo = 1, uplift_hi = 1"
             " WHERE problem_id = 3 AND is_baseline = 1;"
             /* and launch-bound (011): its rounds timed as CUDA graphs */
             "UPDATE results SET launch = 'graph' WHERE problem_id = 3 AND phase = 'final';") != 0)
        goto fail;
    return db;
fail:
    CHECK_MSG(0, "building the coordinator database failed: %s", db ? sqlite3_errmsg(db) : "open");
    sqlite3_close(db);
    return NULL;
}

static void test_export_run(void)
{
    char err[512];
    sqlite3 *db = make_coordinator(tpath("coord.db"));
    if (!db)
        return;

    int rc = gt_export_run(db, 1, "hostA/run/1", tpath("e1.db"), err, sizeof err);
    CHECK_MSG(rc == 0, "export run 1: %s", err);
    rc = gt_export_run(db, 2, "hostA/run/2", tpath("e2.db"), err, sizeof err);
    CHECK_MSG(rc == 0, "export run 2: %s", err);
    /* The connection is back to its own database only. */
    CHECK(near(q_num(db, "SELECT count(*) FROM pragma_database_list WHERE name = 'gt_export'"), 0));
    CHECK(sqlite3_get_autocommit(db) == 1);

    /* An existing destination is never replaced. */
    rc = gt_export_run(db, 1, "hostA/run/1", tpath("e1.db"), err, sizeof err);
    CHECK(rc != 0);
    CHECK_MSG(strstr(err, "exists") != NULL, "err: %s", err);
    /* An unknown run fails and leaves nothing behind. */
    rc = gt_export_run(db, 99, "hostA/run/99", tpath("e99.db"), err, sizeof err);
    CHECK(rc != 0);
    CHECK_MSG(strstr(err, "99") != NULL && strstr(err, "not found") != NULL, "err: %s", err);
    CHECK(!exists(tpath("e99.db")));
    CHECK(count_temps() == 0);
    sqlite3_close(db);

    sqlite3 *e = open_ro(tpath("e1.db"));
    CHECK(e != NULL);
    if (!e)
        return;
    CHECK(strcmp(q_str(e, "SELECT value FROM meta WHERE key = 'format_version'"), "1") == 0);
    CHECK(strcmp(q_str(e, "SELECT value FROM meta WHERE key = 'source'"), "hostA/run/1") == 0);
    CHECK(strcmp(q_str(e, "SELECT value FROM meta WHERE key = 'run_id'"), "1") == 0);
    CHECK(strcmp(q_str(e, "SELECT value FROM meta WHERE key = 'run_name'"), "llama-a") == 0);
    CHECK(strcmp(q_str(e, "SELECT value FROM meta WHERE key = 'backend'"), "cpu") == 0);
    CHECK(strcmp(q_str(e, "SELECT value FROM meta WHERE key = 'device_model'"), "testcpu") == 0);
    CHECK(strcmp(q_str(e, "SELECT value FROM meta WHERE key = 'gemmtune_version'"), "0.1.0") == 0);
    CHECK(q_num(e, "SELECT value FROM meta WHERE key = 'created_ms'") > 0);
    CHECK(near(q_num(e, "SELECT count(*) FROM problems"), 2));
    CHECK(near(q_num(e, "SELECT call_count FROM problems WHERE key = 'K1'"), 100));
    CHECK(strcmp(q_str(e, "SELECT spec FROM problems WHERE key = 'K1'"), "{\"m\":64}") == 0);
    CHECK(near(q_num(e, "SELECT count(*) FROM results"), 9));
    CHECK(near(q_num(e, "SELECT count(*) FROM results WHERE source <> 'hostA/run/1'"), 0));
    CHECK(near(q_num(e, "SELECT count(*) FROM results WHERE valid = 0"), 1));
    CHECK(near(q_num(e, "SELECT count(*) FROM best"), 2));
    /* K1: the final-phase winner with the baseline timed next to it. */
    const char *k1 = "FROM best b JOIN problems p ON p.id = b.problem_id WHERE p.key = 'K1'";
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT b.config_hash %s", k1);
    CHECK(strcmp(q_str(e, sql), "hB") == 0);
    snprintf(sql, sizeof sql, "SELECT b.time_us %s", k1);
    CHECK(near(q_num(e, sql), 9.0));
    snprintf(sql, sizeof sql, "SELECT b.baseline_us %s", k1);
    CHECK(near(q_num(e, sql), 12.0));
    snprintf(sql, sizeof sql, "SELECT b.uplift %s", k1);
    CHECK(near(q_num(e, sql), 12.0 / 9.0));
    snprintf(sql, sizeof sql, "SELECT b.source %s", k1);
    CHECK(strcmp(q_str(e, sql), "hostA/run/1") == 0);
    /* measured before the paired rounds: no interval; timed as the run says */
    snprintf(sql, sizeof sql, "SELECT b.uplift_lo IS NULL AND b.rounds IS NULL AND b.launch IS NULL %s", k1);
    CHECK(near(q_num(e, sql), 1));
    CHECK(near(q_num(e, "SELECT count(*) FROM results WHERE launch IS NOT NULL"), 0));
    /* K2: screen only, against the mean of its screen baselines. */
    CHECK(near(q_num(e, "SELECT b.time_us FROM best b JOIN problems p ON p.id = b.problem_id "
                        "WHERE p.key = 'K2'"),
               20.0));
    CHECK(near(q_num(e, "SELECT b.uplift FROM best b JOIN problems p ON p.id = b.problem_id "
                        "WHERE p.key = 'K2'"),
               32.0 / 20.0));
    CHECK(strcmp(q_str(e, "PRAGMA integrity_check"), "ok") == 0);
    CHECK(strcmp(q_str(e, "PRAGMA journal_mode"), "delete") == 0);
    sqlite3_close(e);
    /* run 2's launch-bound final: its results and its best entry say graph */
    e = open_ro(tpath("e2.db"));
    CHECK(e != NULL);
    if (!e)
        return;
    snprintf(sql, sizeof sql, "SELECT b.launch %s", k1);
    CHECK(strcmp(q_str(e, sql), "graph") == 0);
    CHECK(near(q_num(e, "SELECT count(*) FROM results WHERE launch = 'graph' AND phase = 'final'"), 2));
    CHECK(near(q_num(e, "SELECT count(*) FROM results WHERE launch IS NOT NULL AND phase = 'screen'"), 0));
    sqlite3_close(e);
}

static void test_export_merge(void)
{
    char err[512];
    const char *in[] = {tpath("e1.db"), tpath("e2.db")};
    int rc = gt_export_merge(in, 2, tpath("m.db"), err, sizeof err);
    CHECK_MSG(rc == 0, "merge: %s", err);
    sqlite3 *m = open_ro(tpath("m.db"));
    CHECK(m != NULL);
    if (m) {
        CHECK(strcmp(q_str(m, "SELECT value FROM meta WHERE key = 'format_version'"), "1") == 0);
        CHECK(strcmp(q_str(m, "SELECT value FROM meta WHERE key = 'inputs'"), "2") == 0);
        CHECK(strcmp(q_str(m, "SELECT value FROM meta WHERE key = 'input.2.source'"),
                     "hostA/run/2") == 0);
        CHECK(near(q_num(m, "SELECT count(*) FROM problems"), 3));
        /* Same workload tuned twice: the larger call count, not the sum. */
        CHECK(near(q_num(m, "SELECT call_count FROM problems WHERE key = 'K1'"), 300));
        CHECK(near(q_num(m, "SELECT weight FROM problems WHERE key = 'K1'"), 0.75));
        CHECK(near(q_num(m, "SELECT count(*) FROM results"), 9 + 3));
        CHECK(near(q_num(m, "SELECT count(*) FROM best"), 3));
        const char *k1 = "FROM best b JOIN problems p ON p.id = b.problem_id WHERE p.key = 'K1'";
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT b.time_us %s", k1);
        CHECK(near(q_num(m, sql), 7.0));
        snprintf(sql, sizeof sql, "SELECT b.config_hash %s", k1);
        CHECK(strcmp(q_str(m, sql), "hG") == 0);
        snprintf(sql, sizeof sql, "SELECT b.baseline_us %s", k1);
        CHECK(near(q_num(m, sql), 11.0));
        /* a paired final's uplift is its median ratio, carried with its interval */
        snprintf(sql, sizeof sql, "SELECT b.uplift %s", k1);
        CHECK(near(q_num(m, sql), 1.5));
        snprintf(sql, sizeof sql, "SELECT b.uplift_lo + 10 * b.uplift_hi + 100 * b.rounds %s", k1);
        CHECK(near(q_num(m, sql), 1.4 + 16 + 1200));
        snprintf(sql, sizeof sql, "SELECT b.source %s", k1);
        CHECK(strcmp(q_str(m, sql), "hostA/run/2") == 0);
        /* how it was timed travels with it */
        snprintf(sql, sizeof sql, "SELECT b.launch %s", k1);
        CHECK(strcmp(q_str(m, sql), "graph") == 0);
        CHECK(near(q_num(m, "SELECT count(*) FROM results WHERE launch = 'graph'"), 2));
        /* Problems present in one input only are kept with their best. */
        CHECK(near(q_num(m, "SELECT b.time_us FROM best b JOIN problems p ON p.id = b.problem_id "
                            "WHERE p.key = 'K2'"),
                   20.0));
        CHECK(near(q_num(m, "SELECT b.time_us FROM best b JOIN problems p ON p.id = b.problem_id "
                            "WHERE p.key = 'K3'"),
                   3.0));
        /* Every result points at a merged problem of the same key. */
        CHECK(near(q_num(m, "SELECT count(*) FROM results r LEFT JOIN problems p ON p.id = "
                            "r.problem_id WHERE p.id IS NULL"),
                   0));
        CHECK(strcmp(q_str(m, "PRAGMA foreign_key_check"), "") == 0);
        sqlite3_close(m);
    }

    /* Merging in the other order gives the same winner. */
    const char *rev[] = {tpath("e2.db"), tpath("e1.db")};
    rc = gt_export_merge(rev, 2, tpath("m_rev.db"), err, sizeof err);
    CHECK_MSG(rc == 0, "merge reversed: %s", err);
    m = open_ro(tpath("m_rev.db"));
    if (m) {
        CHECK(near(q_num(m, "SELECT b.time_us FROM best b JOIN problems p ON p.id = b.problem_id "
                            "WHERE p.key = 'K1'"),
                   7.0));
        sqlite3_close(m);
    }

    /* The same export twice: identical rows collapse. */
    const char *twice[] = {tpath("e1.db"), tpath("e1.db")};
    rc = gt_export_merge(twice, 2, tpath("m_twice.db"), err, sizeof err);
    CHECK_MSG(rc == 0, "merge twice: %s", err);
    m = open_ro(tpath("m_twice.db"));
    if (m) {
        CHECK(near(q_num(m, "SELECT count(*) FROM results"), 9));
        CHECK(near(q_num(m, "SELECT count(*) FROM problems"), 2));
        sqlite3_close(m);
    }

    /* An export from before launch-bound finals (no launch columns) merges:
     * its entries as its run timed them (NULL) */
    {
        sqlite3 *o = NULL;
        char cp[600];
        snprintf(cp, sizeof cp, "cp '%s' '%s'", tpath("e1.db"), tpath("old.db"));
        CHECK(system(cp) == 0);
        CHECK(sqlite3_open(tpath("old.db"), &o) == SQLITE_OK &&
              sqlite3_exec(o, "ALTER TABLE results DROP COLUMN launch; ALTER TABLE best DROP COLUMN launch;",
                           NULL, NULL, NULL) == SQLITE_OK);
        sqlite3_close(o);
        const char *mixed[] = {tpath("old.db"), tpath("e2.db")};
        rc = gt_export_merge(mixed, 2, tpath("m_old.db"), err, sizeof err);
        CHECK_MSG(rc == 0, "merge with an old export: %s", err);
        m = open_ro(tpath("m_old.db"));
        if (m) {
            CHECK(near(q_num(m, "SELECT count(*) FROM best WHERE launch IS NULL"), 2)); /* K2, K3 */
            CHECK(strcmp(q_str(m, "SELECT b.launch FROM best b JOIN problems p ON p.id = b.problem_id "
                                  "WHERE p.key = 'K1'"),
                         "graph") == 0);
            sqlite3_close(m);
        }
    }

    /* The output must be new. */
    rc = gt_export_merge(in, 2, tpath("m.db"), err, sizeof err);
    CHECK(rc != 0);
    CHECK_MSG(strstr(err, "exists") != NULL, "err: %s", err);
}

static void test_merge_refuses(void)
{
    char err[512];
    /* Not a database at all. */
    FILE *f = fopen(tpath("notdb.txt"), "w");
    CHECK(f != NULL);
    if (f) {
        fputs("this is not a database, just some text that is long enough to have a header\n", f);
        fclose(f);
    }
    const char *in1[] = {tpath("e1.db"), tpath("notdb.txt")};
    int rc = gt_export_merge(in1, 2, tpath("bad1.db"), err, sizeof err);
    CHECK(rc != 0);
    CHECK_MSG(strstr(err, "notdb.txt") != NULL && strstr(err, "not an export") != NULL, "err: %s",
              err);
    CHECK(!exists(tpath("bad1.db")));

    /* A SQLite database that is not an export (the coordinator's). */
    const char *in2[] = {tpath("coord.db")};
    rc = gt_export_merge(in2, 1, tpath("bad2.db"), err, sizeof err);
    CHECK(rc != 0);
    CHECK_MSG(strstr(err, "coord.db") != NULL && strstr(err, "missing") != NULL, "err: %s", err);

    /* A newer format. */
    const char *in3[] = {tpath("e2.db")};
    rc = gt_export_merge(in3, 1, tpath("newer.db"), err, sizeof err);
    CHECK_MSG(rc == 0, "copy: %s", err);
    sqlite3 *db = NULL;
    if (sqlite3_open(tpath("newer.db"), &db) == SQLITE_OK)
        CHECK(gt_test_sql(db, "UPDATE meta SET value = '2' WHERE key = 'format_version'") == 0);
    sqlite3_close(db);
    const char *in4[] = {tpath("e1.db"), tpath("newer.db")};
    rc = gt_export_merge(in4, 2, tpath("bad3.db"), err, sizeof err);
    CHECK(rc != 0);
    CHECK_MSG(strstr(err, "newer.db") != NULL && strstr(err, "newer") != NULL, "err: %s", err);

    /* A missing file. */
    const char *in5[] = {tpath("nope.db")};
    rc = gt_export_merge(in5, 1, tpath("bad4.db"), err, sizeof err);
    CHECK(rc != 0);
    CHECK_MSG(strstr(err, "nope.db") != NULL, "err: %s", err);
    CHECK(!exists(tpath("nope.db")));
    CHECK(count_temps() == 0);
}

/* ---- httpc against an in-test server ---- */

typedef struct srv {
    int lfd;
    int port;
    int nconn;                 /* connections to serve */
    char last_head[4096];      /* head of the last request */
    size_t last_body_len;
} srv;

static void write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void write_str(int fd, const char *s)
{
    write_all(fd, s, strlen(s));
}

static void serve_one(srv *s, int fd)
{
    char buf[1 << 16];
    size_t len = 0;
    char *end = NULL;
    while (!end && len < sizeof buf - 1) {
        ssize_t r = recv(fd, buf + len, sizeof buf - 1 - len, 0);
        if (r <= 0)
            return;
        len += (size_t)r;
        buf[len] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    if (!end)
        return;
    size_t head_len = (size_t)(end - buf) + 4;
    snprintf(s->last_head, sizeof s->last_head, "%.*s", (int)head_len, buf);
    size_t clen = 0;
    const char *cl = strcasestr(s->last_head, "Content-Length:");
    if (cl)
        clen = strtoul(cl + 15, NULL, 10);
    size_t have = len - head_len;
    while (have < clen) {
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r <= 0)
            break;
        have += (size_t)r;
    }
    s->last_body_len = have;
    char path[256] = "";
    sscanf(s->last_head, "%*s %255s", path);

    if (strcmp(path, "/len") == 0) {
        write_str(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n");
        usleep(20000); /* the body arrives in a later read */
        write_str(fd, "{\"ok\":true}");
    } else if (strcmp(path, "/chunked") == 0) {
        write_str(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
        usleep(20000);
        write_str(fd, "7;ext=1\r\n, world\r\n1");
        usleep(20000);
        write_str(fd, "0\r\n0123456789abcdef\r\n0\r\nX-Trailer: t\r\n\r\n");
    } else if (strcmp(path, "/close") == 0) {
        write_str(fd, "HTTP/1.0 404 Not Found\r\nContent-Type: application/json\r\n\r\n"
                      "{\"error\":\"no such run\"}");
    } else if (strcmp(path, "/continue") == 0) {
        write_str(fd, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n"
                      "Content-Length: 2\r\n\r\nok");
    } else if (strcmp(path, "/short") == 0) {
        write_str(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this");
    } else if (strcmp(path, "/export") == 0) {
        static char blob[200000];
        for (size_t i = 0; i < sizeof blob; i++)
            blob[i] = (char)(i * 7);
        char h[128];
        snprintf(h, sizeof h, "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.sqlite3\r\n"
                              "Content-Length: %zu\r\n\r\n", sizeof blob);
        write_str(fd, h);
        write_all(fd, blob, sizeof blob);
    } else {
        write_str(fd, "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n");
    }
}

static void *srv_main(void *arg)
{
    srv *s = arg;
    for (int i = 0; i < s->nconn; i++) {
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0)
            break;
        serve_one(s, fd);
        close(fd);
    }
    return NULL;
}

static int srv_listen(srv *s)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t al = sizeof a;
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(s->lfd, 16) != 0 || getsockname(s->lfd, (struct sockaddr *)&a, &al) != 0)
        return -1;
    s->port = ntohs(a.sin_port);
    return 0;
}

static void test_httpc(void)
{
    static srv s;
    memset(&s, 0, sizeof s);
    s.nconn = 8;
    CHECK(srv_listen(&s) == 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, srv_main, &s) == 0);
    char base[64], err[512];
    snprintf(base, sizeof base, "http://127.0.0.1:%d", s.port);
    gt_httpc_resp r;

    /* 1: Content-Length, with a body and a token. */
    const char body[] = "{\"log\":\"x\"}";
    int rc = gt_httpc_request(base, "POST", "/len", "application/json", body, strlen(body),
                              "tok123", &r, err, sizeof err);
    CHECK_MSG(rc == 0, "len: %s", err);
    CHECK(r.status == 200);
    CHECK(strcmp(r.content_type, "application/json") == 0);
    CHECK(r.body_len == 11 && r.body && strcmp(r.body, "{\"ok\":true}") == 0);
    CHECK(strstr(s.last_head, "POST /len HTTP/1.1\r\n") != NULL);
    CHECK(strstr(s.last_head, "Authorization: Bearer tok123\r\n") != NULL);
    CHECK(strstr(s.last_head, "Connection: close\r\n") != NULL);
    CHECK(strstr(s.last_head, "Content-Length: 11\r\n") != NULL);
    CHECK(s.last_body_len == strlen(body));
    gt_httpc_resp_free(&r);

    /* 2: chunked, with an extension and a trailer, split across reads. */
    rc = gt_httpc_request(base, "GET", "/chunked", NULL, NULL, 0, NULL, &r, err, sizeof err);
    CHECK_MSG(rc == 0, "chunked: %s", err);
    CHECK(r.status == 200);
    CHECK_MSG(r.body && strcmp(r.body, "hello, world0123456789abcdef") == 0, "body '%s'",
              r.body ? r.body : "(null)");
    CHECK(strstr(s.last_head, "Authorization") == NULL);
    gt_httpc_resp_free(&r);

    /* 3: no length: read until close; an error status is still a response. */
    rc = gt_httpc_request(base, "GET", "/close", NULL, NULL, 0, NULL, &r, err, sizeof err);
    CHECK_MSG(rc == 0, "close: %s", err);
    CHECK(r.status == 404);
    CHECK(r.body && strcmp(r.body, "{\"error\":\"no such run\"}") == 0);
    gt_httpc_resp_free(&r);

    /* 4: an interim 100 Continue before the answer. */
    rc = gt_httpc_request(base, "POST", "/continue", NULL, NULL, 0, NULL, &r, err, sizeof err);
    CHECK_MSG(rc == 0, "continue: %s", err);
    CHECK(r.status == 201 && r.body && strcmp(r.body, "ok") == 0);
    CHECK(strstr(s.last_head, "Content-Length: 0\r\n") != NULL);
    gt_httpc_resp_free(&r);

    /* 5: a body cut short is an error. */
    rc = gt_httpc_request(base, "GET", "/short", NULL, NULL, 0, NULL, &r, err, sizeof err);
    CHECK(rc != 0);
    CHECK_MSG(strstr(err, "9 of 100") != NULL, "err: %s", err);

    /* 6: download to a file, atomically. */
    uint64_t written = 0;
    rc = gt_httpc_download(base, "/export", NULL, tpath("dl.db"), &r, &written, err, sizeof err);
    CHECK_MSG(rc == 0, "download: %s", err);
    CHECK(r.status == 200 && written == 200000);
    gt_httpc_resp_free(&r);
    size_t dl_len = 0;
    FILE *f = fopen(tpath("dl.db"), "rb");
    if (f) {
        unsigned char buf[4096];
        size_t n, ok = 1;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
            for (size_t i = 0; i < n; i++)
                ok &= buf[i] == (unsigned char)((dl_len + i) * 7);
            dl_len += n;
        }
        fclose(f);
        CHECK(ok);
    }
    CHECK(dl_len == 200000);
    /* 7: a download's error answer stays in memory and creates no file. */
    rc = gt_httpc_download(base, "/close", NULL, tpath("dl404.db"), &r, &written, err, sizeof err);
    CHECK_MSG(rc == 0, "download 404: %s", err);
    CHECK(r.status == 404 && r.body && strstr(r.body, "no such run") != NULL);
    CHECK(!exists(tpath("dl404.db")));
    gt_httpc_resp_free(&r);
    /* An existing file is refused before any request. */
    rc = gt_httpc_download(base, "/export", NULL, tpath("dl.db"), &r, &written, err, sizeof err);
    CHECK(rc != 0 && strstr(err, "exists") != NULL);

    /* 8: the response size cap. */
    gt_httpc_set_max_body(1000);
    rc = gt_httpc_request(base, "GET", "/export", NULL, NULL, 0, NULL, &r, err, sizeof err);
    CHECK(rc != 0);
    CHECK_MSG(strstr(err, "limit") != NULL, "err: %s", err);
    gt_httpc_set_max_body(0);
    CHECK(count_temps() == 0);

    /* Wakes the server's accept should a request above not have connected. */
    shutdown(s.lfd, SHUT_RDWR);
    pthread_join(th, NULL);
    close(s.lfd);

    /* Connect failure: a port nobody listens on (bound, never listening). */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
          getsockname(fd, (struct sockaddr *)&a, &al) == 0);
    snprintf(base, sizeof base, "http://127.0.0.1:%d", ntohs(a.sin_port));
    rc = gt_httpc_request(base, "GET", "/v1/runs", NULL, NULL, 0, NULL, &r, err, sizeof err);
    CHECK(rc != 0);
    char want[64];
    snprintf(want, sizeof want, "connect to 127.0.0.1:%d", ntohs(a.sin_port));
    CHECK_MSG(strstr(err, want) != NULL && strstr(err, "refused") != NULL, "err: %s", err);
    close(fd);

    /* URL errors. */
    rc = gt_httpc_request("https://127.0.0.1", "GET", "/", NULL, NULL, 0, NULL, &r, err, sizeof err);
    CHECK(rc != 0 && strstr(err, "https") != NULL);
    rc = gt_httpc_request("http://127.0.0.1:99999", "GET", "/", NULL, NULL, 0, NULL, &r, err,
                          sizeof err);
    CHECK(rc != 0 && strstr(err, "port") != NULL);
    rc = gt_httpc_request("http://127.0.0.1:1", "GET", "/x\r\nEvil: 1", NULL, NULL, 0, NULL, &r,
                          err, sizeof err);
    CHECK(rc != 0);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/gt_test_export_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_export_run);
    RUN(test_export_merge);
    RUN(test_merge_refuses);
    RUN(test_httpc);
    int rc = gt_test_done();
    if (rc == 0) {
        /* Keep the files of a failed run for inspection. */
        DIR *d = opendir(g_dir);
        struct dirent *e;
        while (d && (e = readdir(d)))
            if (e->d_name[0] != '.')
                unlink(tpath(e->d_name));
        if (d)
            closedir(d);
        rmdir(g_dir);
    } else {
        fprintf(stderr, "files kept in %s\n", g_dir);
    }
    return rc;
}
