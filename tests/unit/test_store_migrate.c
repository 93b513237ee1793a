/* test_store_migrate.c: an existing coordinator database upgrades in place
 * (server/store.c applies schema/NNN_*.sql above PRAGMA user_version).
 * Proven here: a version-3 database (001..003 applied, as a coordinator
 * before 004 left it) with a registered worker opens as version 4; the
 * worker keeps its row, its gen_device is NULL (GET /v1/workers: null) and
 * a worker registering afterwards stores one; opening again applies
 * nothing more. A version-11 database with results gets each run's screen
 * counts (012). The run view's per-problem lookups seek 013's indexes. */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gt_store.h"
#include "gt_test.h"
#include "store_priv.h"

/* The embedded schema files (build/gt_schema_sql.c, cmake/embed_sql.cmake). */
struct gt_schema_file {
    const char *name;
    const char *sql;
};
extern const struct gt_schema_file gt_schema_files[];

static int user_version(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int v = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The first row of sql, its first ncol columns as text (NULL as ""): 0, or
 * -1 when the query fails or has no row. */
static int row_text(sqlite3 *db, const char *sql, char v[][128], int ncol)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        for (int i = 0; i < ncol; i++) {
            const unsigned char *t = sqlite3_column_text(st, i);
            snprintf(v[i], sizeof v[i], "%s", t ? (const char *)t : "");
        }
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

/* Opens path and applies the schema files 001..version, then sql: a
 * database as a coordinator of that version left it. 1 when all went. */
static int make_version(const char *path, int version, const char *sql)
{
    sqlite3 *db = NULL;
    int ok = sqlite3_open(path, &db) == SQLITE_OK;
    for (const struct gt_schema_file *f = gt_schema_files; ok && f->name; f++) {
        int n = atoi(f->name);
        if (n >= 1 && n <= version)
            ok = sqlite3_exec(db, f->sql, NULL, NULL, NULL) == SQLITE_OK;
    }
    ok = ok && sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK && user_version(db) == version;
    sqlite3_close(db);
    return ok;
}

/* A database as a coordinator of schema version 3 leaves it. */
static int make_v3(const char *path)
{
    return make_version(path, 3,
                        "PRAGMA user_version = 3;"
                        "INSERT INTO workers (host, pid, device_index, backend, device_model,"
                        " arch, mem_bytes, units, driver, version, state, registered_ms,"
                        " last_heartbeat_ms) VALUES ('old', 7, 0, 'cuda', 'H100', 'sm_90', 1,"
                        " 132, 'd', '0.0.9', 'idle', 1, 1);");
}

static void upgrades_v3(void)
{
    char dir[] = "/tmp/gt-migrate.XXXXXX", path[256], err[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/c.db", dir);
    CHECK(make_v3(path));
    gt_store *s = gt_store_open(path, err, sizeof err);
    CHECK_MSG(s, "%s", err);
    if (!s)
        return;
    CHECK(user_version(gt_store_db(s)) == 13);
    /* 011: results say how a launch-bound final was timed, and problem_best
     * carries the winner's */
    {
        char v[2][128];
        CHECK(row_text(gt_store_db(s),
                       "SELECT (SELECT COUNT(*) FROM pragma_table_info('results') WHERE name = 'launch'),"
                       " (SELECT COUNT(*) FROM pragma_table_info('problem_best') WHERE name = 'launch')",
                       v, 2) == 0 &&
              !strcmp(v[0], "1") && !strcmp(v[1], "1"));
    }
    /* 010: results keep three indexes besides the unique key: results_by_run
     * (a prefix of results_by_run_phase) and results_by_problem_time (the
     * timeline's) are gone; 013 adds a partial one that holds only the rows
     * of defaults that could not run, nothing a normal result writes */
    {
        char v[2][128];
        CHECK(row_text(gt_store_db(s),
                       "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master"
                       " WHERE type = 'index' AND tbl_name = 'results' AND sql IS NOT NULL ORDER BY name)",
                       v, 1) == 0 &&
              !strcmp(v[0], "results_by_problem,results_by_run_phase,results_failed_default"));
    }
    /* 009: jobs carry their shard, the lease's index orders by shard > 0 (an
     * expression: pragma_index_info gives it no name) before id */
    {
        char v[2][128];
        CHECK(row_text(gt_store_db(s),
                       "SELECT (SELECT COUNT(*) FROM pragma_table_info('jobs') WHERE name = 'shard'),"
                       " (SELECT group_concat(name, ',') FROM"
                       " (SELECT name FROM pragma_index_info('jobs_queue') ORDER BY seqno))",
                       v, 2) == 0 &&
              !strcmp(v[0], "1") && !strcmp(v[1], "run_id,state,kind,backend,id"));
    }
    /* 008: results carry the GPU's state of their final rounds */
    {
        sqlite3_stmt *col = NULL;
        CHECK(sqlite3_prepare_v2(gt_store_db(s),
                                 "SELECT COUNT(*) FROM pragma_table_info('results') WHERE name = 'gpu_state'",
                                 -1, &col, NULL) == SQLITE_OK &&
              sqlite3_step(col) == SQLITE_ROW && sqlite3_column_int(col, 0) == 1);
        sqlite3_finalize(col);
    }
    /* 007: the lease's indexes */
    {
        sqlite3_stmt *ix = NULL;
        CHECK(sqlite3_prepare_v2(gt_store_db(s),
                                 "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index'"
                                 " AND name IN ('jobs_queue', 'runs_by_state')",
                                 -1, &ix, NULL) == SQLITE_OK &&
              sqlite3_step(ix) == SQLITE_ROW && sqlite3_column_int(ix, 0) == 2);
        sqlite3_finalize(ix);
    }
    gt_worker_info w;
    memset(&w, 0, sizeof w);
    snprintf(w.host, sizeof w.host, "new");
    snprintf(w.backend, sizeof w.backend, "cuda");
    snprintf(w.device_model, sizeof w.device_model, "H100");
    snprintf(w.gen_device, sizeof w.gen_device, "{\"x\":1}"); /* the store keeps text as given */
    snprintf(w.session_digest, sizeof w.session_digest, "%064d", 7);
    int64_t id = 0, found = 0;
    CHECK(gt_store_register_worker(s, &w, 5, &id, err, sizeof err) == 0 && id == 2);
    /* 005: the new worker's session is found by its digest; the old one
     * (no session) by none, so it must register again */
    CHECK(gt_store_worker_by_session(s, w.session_digest, &found, err, sizeof err) == 0 && found == 2);
    CHECK(gt_store_worker_by_session(s, "", &found, err, sizeof err) == 1);
    cJSON *ws = gt_store_workers_json(s, 10, err, sizeof err);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(ws, "workers");
    const cJSON *old = cJSON_GetArrayItem(rows, 0), *neu = cJSON_GetArrayItem(rows, 1);
    CHECK(cJSON_GetArraySize(rows) == 2 &&
          !strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(old, "host")), "old") &&
          cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(old, "gen_device")) &&
          cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
              cJSON_GetObjectItemCaseSensitive(neu, "gen_device"), "x")) == 1);
    cJSON_Delete(ws);
    gt_store_close(s);
    /* opened again: nothing to apply, the rows stay */
    s = gt_store_open(path, err, sizeof err);
    CHECK_MSG(s, "%s", err);
    if (s) {
        CHECK(user_version(gt_store_db(s)) == 13);
        ws = gt_store_workers_json(s, 10, err, sizeof err);
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ws, "workers")) == 2);
        cJSON_Delete(ws);
        gt_store_close(s);
    }
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    CHECK(system(path) == 0);
}

/* 012: a version-11 database with results opens with each run's screen
 * progress counted onto its row: screen rows less the default that could
 * not run, and the valid ones; final rows and other runs' rows apart. */
static void backfills_run_counts(void)
{
    char dir[] = "/tmp/gt-migrate12.XXXXXX", path[256], err[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/c.db", dir);
    /* foreign keys are off on this raw connection: results need no job rows */
    static const char rows[] =
        "PRAGMA user_version = 11;"
        "INSERT INTO runs (id, name, source_format, backend, strategy, budget, options, state,"
        " created_ms) VALUES (1, 'a', 'csv', 'cpu', 'exhaustive', 4, '{}', 'running', 1),"
        " (2, 'b', 'csv', 'cpu', 'exhaustive', 4, '{}', 'done', 2), (3, 'c', 'csv', 'cpu',"
        " 'exhaustive', 4, '{}', 'running', 3);"
        "INSERT INTO results (run_id, problem_id, job_id, backend, phase, config, config_hash,"
        " is_baseline, valid, device_model, created_ms) VALUES"
        " (1, 1, 1, 'cpu', 'screen', '{}', 'h1', 0, 1, 'm', 1),"
        " (1, 1, 1, 'cpu', 'screen', '{}', 'h2', 0, 0, 'm', 1),"
        " (1, 1, 1, 'cpu', 'screen', '{}', 'h3', 1, 1, 'm', 1),"
        " (1, 2, 2, 'cpu', 'screen', '{}', 'h4', 1, 0, 'm', 1),"
        " (1, 1, 3, 'cpu', 'final', '{}', 'h1', 0, 1, 'm', 1),"
        " (2, 3, 4, 'cpu', 'screen', '{}', 'h1', 0, 1, 'm', 1);";
    int ok = make_version(path, 11, rows);
    CHECK_MSG(ok, "a version-11 database");
    gt_store *s = ok ? gt_store_open(path, err, sizeof err) : NULL;
    CHECK_MSG(s, "%s", err);
    if (s) {
        char v[1][128];
        CHECK(user_version(gt_store_db(s)) == 13);
        CHECK(row_text(gt_store_db(s),
                       "SELECT group_concat(id || ':' || screen_done || '/' || screen_valid, ' ')"
                       " FROM (SELECT * FROM runs ORDER BY id)",
                       v, 1) == 0 &&
              !strcmp(v[0], "1:3/2 2:1/1 3:0/0"));
        gt_store_close(s);
    }
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    CHECK(system(path) == 0);
}

/* The query plan of "SELECT <sub>" on db, its details joined: "" on error. */
static void plan_of(sqlite3 *db, const char *sub, char *out, size_t len)
{
    char sql[1024];
    sqlite3_stmt *st = NULL;
    out[0] = 0;
    snprintf(sql, sizeof sql, "EXPLAIN QUERY PLAN SELECT %s", sub);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return;
    size_t n = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n < len)
        n += (size_t)snprintf(out + n, len - n, "%s; ", (const char *)sqlite3_column_text(st, 3));
    sqlite3_finalize(st);
}

/* 013: the run view asks each problem whether its default failed and which
 * baselines its jobs timed; each is a seek of one of 013's indexes, never a
 * walk of the problem's results (28 of 72 ms of a 1000-problem view before)
 * or a sort of its jobs. */
static void view_lookups_seek_indexes(void)
{
    char dir[] = "/tmp/gt-migrate13.XXXXXX", path[256], err[512], plan[1024];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/c.db", dir);
    gt_store *s = gt_store_open(path, err, sizeof err);
    CHECK_MSG(s, "%s", err);
    if (s) {
        sqlite3 *db = gt_store_db(s);
        CHECK(user_version(db) == 13);
        plan_of(db, GT_STORE_DEFAULT_FAILED_SQL("1"), plan, sizeof plan);
        CHECK_MSG(strstr(plan, "USING INDEX results_failed_default") && !strstr(plan, "TEMP B-TREE"),
                  "default failed: %s", plan);
        plan_of(db, GT_STORE_FINAL_BASE_SQL("1"), plan, sizeof plan);
        CHECK_MSG(strstr(plan, "USING INDEX jobs_baseline") && !strstr(plan, "TEMP B-TREE"),
                  "final baseline: %s", plan);
        plan_of(db, GT_STORE_SCREEN_BASE_SQL("1"), plan, sizeof plan);
        CHECK_MSG(strstr(plan, "USING INDEX jobs_baseline") && !strstr(plan, "TEMP B-TREE"),
                  "screen baseline: %s", plan);
        gt_store_close(s);
    }
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    CHECK(system(path) == 0);
}

int main(void)
{
    RUN(upgrades_v3);
    RUN(backfills_run_counts);
    RUN(view_lookups_seek_indexes);
    return gt_test_done();
}
