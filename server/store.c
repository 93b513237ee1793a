/* store.c: opening the coordinator database, the statement helpers every
 * store file runs its SQL through (and so the one place where write
 * transactions begin and end: the write health of /readyz and /metrics is
 * kept there), the check that the database and WAL files are still the ones
 * written (before every commit), schema migrations, run creation (a
 * planned run, gt_plan.h, written in one transaction: run, problems, jobs)
 * and reading a run's options back. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gt_util.h"
#include "store_priv.h"

struct gt_schema_file {
    const char *name;
    const char *sql;
};
extern const struct gt_schema_file gt_schema_files[];

/* ------------------------------------------------------------ write health */

const char *gt_store_err_kind_name(int kind)
{
    static const char *const names[GT_STORE_ERR_KINDS] = {"full",     "io",   "busy",
                                                          "readonly", "lost", "other"};
    return kind >= 0 && kind < GT_STORE_ERR_KINDS ? names[kind] : "other";
}

/* The class of an (extended) SQLite result code. A commit the commit hook
 * refused is SQLITE_CONSTRAINT_COMMITHOOK: only lost files refuse one. */
static int err_kind(gt_store *s, int code)
{
    if (code == SQLITE_CONSTRAINT_COMMITHOOK && atomic_load(&s->lost))
        return GT_STORE_ERR_LOST;
    switch (code & 0xff) {
    case SQLITE_FULL:
        return GT_STORE_ERR_FULL;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return GT_STORE_ERR_IO;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return GT_STORE_ERR_BUSY;
    case SQLITE_READONLY:
    case SQLITE_PERM:
        return GT_STORE_ERR_READONLY;
    default:
        return GT_STORE_ERR_OTHER;
    }
}

/* One write attempt ended: kind < 0 committed, else failed with msg (NULL:
 * keep the message there, which store_lose wrote for a lost store). Only
 * the turns between writable and not are logged: a full disk fails every
 * lease and report until space returns. */
static void note_write(gt_store *s, int kind, const char *msg)
{
    int64_t now = gt_wall_ms();
    pthread_mutex_lock(&s->hmu);
    gt_store_health *h = &s->health;
    int was = h->writable;
    if (kind < 0) {
        h->last_write_ms = now;
        h->writable = !h->lost;
    } else {
        h->errors[kind]++;
        h->writable = 0;
        h->last_error_ms = now;
        if (msg)
            snprintf(h->last_error, sizeof h->last_error, "%s", msg);
    }
    int is = h->writable;
    pthread_mutex_unlock(&s->hmu);
    if (was && !is && kind >= 0 && msg)
        gt_err("store: writes fail (%s: %s); not ready until one succeeds",
               gt_store_err_kind_name(kind), msg);
    else if (!was && is)
        gt_info("store: writes succeed again");
}

/* A failed call on the connection. Inside gt_store_exec's write transaction
 * its first error is kept for the transaction's end, so that the attempt
 * counts once; outside one, a failed write statement (st not read-only) is
 * an attempt of its own. A read that fails outside a transaction is not. */
static void note_error(gt_store *s, sqlite3_stmt *st)
{
    int code = sqlite3_extended_errcode(s->db);
    if (s->in_tx) {
        if (!s->tx_err) {
            s->tx_err = code != SQLITE_OK ? code : SQLITE_ERROR;
            snprintf(s->tx_msg, sizeof s->tx_msg, "%s", sqlite3_errmsg(s->db));
        }
    } else if (st && !sqlite3_stmt_readonly(st)) {
        note_write(s, err_kind(s, code), sqlite3_errmsg(s->db));
    }
}

/* The transaction statements, which every store file runs through
 * gt_store_exec: the one place where write transactions start and end. */
enum { TX_NONE, TX_BEGIN, TX_COMMIT, TX_ROLLBACK };
static int tx_verb(const char *sql)
{
    if (!strncmp(sql, "BEGIN", 5))
        return TX_BEGIN;
    if (!strcmp(sql, "COMMIT"))
        return TX_COMMIT;
    if (!strcmp(sql, "ROLLBACK"))
        return TX_ROLLBACK;
    return TX_NONE;
}

/* Accounts for a transaction statement that ran (code: SQLITE_OK or its
 * failure). A failed BEGIN or COMMIT is a failed attempt; a ROLLBACK ends a
 * failed one only when an SQLite call inside failed (a rollback for the
 * caller's own reasons, a malformed message, is no store error), and the
 * ROLLBACK callers send after a failed COMMIT adds nothing. A commit is a
 * successful write only when the transaction changed rows: the lease sweep
 * commits every second with nothing to change and writes no page, which
 * would call a full disk writable again at once. */
static void tx_account(gt_store *s, int verb, int code, const char *msg)
{
    switch (verb) {
    case TX_BEGIN:
        if (code != SQLITE_OK) {
            note_write(s, err_kind(s, code), msg);
        } else {
            s->in_tx = 1;
            s->tx_changes0 = sqlite3_total_changes64(s->db);
            s->tx_err = 0;
        }
        break;
    case TX_COMMIT:
        if (code == SQLITE_OK) {
            if (sqlite3_total_changes64(s->db) != s->tx_changes0)
                note_write(s, -1, msg);
        } else if (err_kind(s, code) == GT_STORE_ERR_LOST)
            note_write(s, GT_STORE_ERR_LOST, NULL); /* not "constraint failed" */
        else
            note_write(s, err_kind(s, code), msg);
        s->in_tx = 0;
        break;
    case TX_ROLLBACK:
        if (s->in_tx && s->tx_err)
            note_write(s, err_kind(s, s->tx_err), s->tx_msg);
        s->in_tx = 0;
        break;
    default:
        break;
    }
}

/* The refusal of a lost store, path included (the log, the worker). */
static void lost_error(gt_store *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->hmu);
    snprintf(err, errlen, "store: %s: writes are refused and the coordinator stops", s->lost_why);
    pthread_mutex_unlock(&s->hmu);
}

void gt_store_health_get(gt_store *s, gt_store_health *h)
{
    pthread_mutex_lock(&s->hmu);
    *h = s->health;
    pthread_mutex_unlock(&s->hmu);
}

void gt_store_on_lost(gt_store *s, gt_store_lost_fn fn, void *ctx)
{
    pthread_mutex_lock(&s->hmu);
    s->on_lost = fn;
    s->on_lost_ctx = ctx;
    pthread_mutex_unlock(&s->hmu);
}

/* ------------------------------------------------------------- durability */

/* Records f's device and inode; f->known stays 0 while it is not there. */
static void file_record(gt_store_file *f)
{
    struct stat sb;
    if (f->path && stat(f->path, &sb) == 0) {
        f->dev = sb.st_dev;
        f->ino = sb.st_ino;
        f->known = 1;
    }
}

/* 0 when f's path still names the file recorded (or f is not checked);
 * else -1 with why (path included) and brief (no path, for /readyz). A stat
 * that fails for another reason than a missing file (EIO, EACCES) proves
 * nothing about the file: the write itself fails or not. */
static int file_same(gt_store_file *f, const char *what, char *why, size_t whylen, char *brief,
                     size_t brieflen)
{
    struct stat sb;
    if (!f->path)
        return 0;
    if (stat(f->path, &sb) != 0) {
        if (!f->known || (errno != ENOENT && errno != ENOTDIR))
            return 0;
        snprintf(why, whylen, "the %s %s was removed", what, f->path);
        snprintf(brief, brieflen, "the %s was removed", what);
        return -1;
    }
    if (!f->known) {
        /* Not there at open: this is the one the connection created since. */
        f->dev = sb.st_dev;
        f->ino = sb.st_ino;
        f->known = 1;
        return 0;
    }
    if (sb.st_dev == f->dev && sb.st_ino == f->ino)
        return 0;
    snprintf(why, whylen, "the %s %s was replaced (device:inode %llu:%llu, now %llu:%llu)", what,
             f->path, (unsigned long long)f->dev, (unsigned long long)f->ino,
             (unsigned long long)sb.st_dev, (unsigned long long)sb.st_ino);
    snprintf(brief, brieflen, "the %s was replaced", what);
    return -1;
}

/* The store lost its files: flag it (later writes are refused at BEGIN),
 * tell /readyz, log the path, call on_lost; once. */
static void store_lose(gt_store *s, const char *why, const char *brief)
{
    pthread_mutex_lock(&s->hmu);
    if (atomic_load(&s->lost)) {
        pthread_mutex_unlock(&s->hmu);
        return;
    }
    snprintf(s->lost_why, sizeof s->lost_why, "%s under the running coordinator", why);
    atomic_store(&s->lost, 1);
    s->health.lost = 1;
    s->health.writable = 0;
    s->health.last_error_ms = gt_wall_ms();
    snprintf(s->health.last_error, sizeof s->health.last_error,
             "%s under the running coordinator: writes refused", brief);
    gt_store_lost_fn fn = s->on_lost;
    void *ctx = s->on_lost_ctx;
    pthread_mutex_unlock(&s->hmu);
    gt_err("store: %s under the running coordinator: results acknowledged from now on would not"
           " survive a restart, so every write is refused",
           why);
    if (fn)
        fn(ctx, why);
}

int gt_store_check_files(gt_store *s)
{
    char why[PATH_MAX + 128], brief[96];
    if (atomic_load(&s->lost))
        return -1;
    if (file_same(&s->dbf, "database file", why, sizeof why, brief, sizeof brief) == 0 &&
        file_same(&s->walf, "WAL file", why, sizeof why, brief, sizeof brief) == 0)
        return 0;
    store_lose(s, why, brief);
    return -1;
}

/* SQLite's commit hook: runs before every commit of the writer connection,
 * explicit or autocommit, whichever file the transaction came from; non-zero
 * turns the commit into a rollback, so nothing is acknowledged into a file a
 * restart will not read. Two stat()s a transaction: microseconds next to
 * the commit's own write. */
static int commit_hook(void *arg)
{
    return gt_store_check_files(arg) ? 1 : 0;
}

/* Records the database file and its WAL (the connection has opened both by
 * now: the migrations read the database) and installs the commit hook. */
static int files_init(gt_store *s, char *err, size_t errlen)
{
    sqlite3_filename db = sqlite3_db_filename(s->db, "main");
    if (!db || !*db)
        return 0; /* in-memory: nothing on disk to lose */
    const char *wal = sqlite3_filename_wal(db);
    s->dbf.path = strdup(db);
    s->walf.path = wal && *wal ? strdup(wal) : NULL;
    if (!s->dbf.path || (wal && *wal && !s->walf.path)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    file_record(&s->dbf);
    file_record(&s->walf);
    sqlite3_commit_hook(s->db, commit_hook, s);
    return 0;
}

/* ---------------------------------------------------------------- helpers */

sqlite3_stmt *gt_store_prep(gt_store *s, const char *sql, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    pthread_mutex_lock(&s->cmu);
    for (int i = 0; i < GT_STORE_STMT_CACHE && !st; i++) {
        struct gt_store_stmt *c = &s->cache[i];
        if (c->st && !strcmp(c->sql, sql)) {
            st = c->st;
            c->st = NULL;
        }
    }
    pthread_mutex_unlock(&s->cmu);
    if (st)
        return st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "sqlite prepare: %s", sqlite3_errmsg(s->db));
        note_error(s, NULL);
        return NULL;
    }
    return st;
}

void gt_store_finish(gt_store *s, sqlite3_stmt *st)
{
    if (!st)
        return;
    const char *sql = sqlite3_sql(st);
    if (sqlite3_db_handle(st) != s->db || !sql) {
        sqlite3_finalize(st);
        return;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    struct gt_store_stmt *slot = NULL, *empty = NULL;
    pthread_mutex_lock(&s->cmu);
    for (int i = 0; i < GT_STORE_STMT_CACHE && !slot; i++) {
        struct gt_store_stmt *c = &s->cache[i];
        if (!c->sql)
            empty = empty ? empty : c;
        else if (!c->st && !strcmp(c->sql, sql))
            slot = c; /* its own slot, or a twin's free one */
    }
    if (!slot && empty && (empty->sql = strdup(sql)))
        slot = empty;
    if (slot)
        slot->st = st;
    pthread_mutex_unlock(&s->cmu);
    if (!slot)
        sqlite3_finalize(st);
}

int gt_store_exec(gt_store *s, const char *sql, char *err, size_t errlen)
{
    int verb = tx_verb(sql);
    if (verb == TX_BEGIN && atomic_load(&s->lost)) {
        lost_error(s, err, errlen);
        note_write(s, GT_STORE_ERR_LOST, NULL);
        return -1;
    }
    /* Inside a batch (gt_store_batch_begin) a transaction is part of the
     * batch's one transaction, and nothing is durable before the batch
     * commits; the batch accounts for the write (tx_account) at its own
     * BEGIN and COMMIT. UNGUARDED, it runs straight in it: a rollback that
     * would have to undo rows, or finds the transaction already ended by
     * SQLite (a full disk, an I/O error), breaks the batch instead. */
    if (s->batch == GT_STORE_BATCH_UNGUARDED && verb != TX_NONE) {
        if (verb == TX_BEGIN)
            s->batch_changes0 = sqlite3_total_changes64(s->db);
        else if (verb == TX_ROLLBACK && (sqlite3_total_changes64(s->db) != s->batch_changes0 ||
                                         sqlite3_get_autocommit(s->db)))
            s->batch_broken = 1;
        return 0;
    }
    /* GUARDED, it is a savepoint: its rollback undoes only itself. */
    if (s->batch && verb != TX_NONE) {
        static const char *const nested[] = {
            [TX_BEGIN] = "SAVEPOINT gt_tx",
            [TX_COMMIT] = "RELEASE gt_tx",
            [TX_ROLLBACK] = "ROLLBACK TO gt_tx; RELEASE gt_tx",
        };
        sql = nested[verb];
        verb = TX_NONE;
    }
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        int code = sqlite3_extended_errcode(s->db);
        if (verb == TX_COMMIT && err_kind(s, code) == GT_STORE_ERR_LOST)
            lost_error(s, err, errlen); /* says why, not "constraint failed" */
        else
            snprintf(err, errlen, "sqlite: %s", msg ? msg : sqlite3_errmsg(s->db));
        if (verb == TX_NONE)
            note_error(s, NULL);
        else
            tx_account(s, verb, code, msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return -1;
    }
    tx_account(s, verb, SQLITE_OK, "");
    return 0;
}

int gt_store_step_done(gt_store *s, sqlite3_stmt *st, char *err, size_t errlen)
{
    int64_t changes0 = sqlite3_total_changes64(s->db);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        snprintf(err, errlen, "sqlite step: %s", sqlite3_errmsg(s->db));
        note_error(s, st);
        gt_store_finish(s, st);
        return -1;
    }
    /* An autocommit write committed rows (a transaction's count at its
     * COMMIT). */
    if (!s->in_tx && !sqlite3_stmt_readonly(st) && sqlite3_total_changes64(s->db) != changes0)
        note_write(s, -1, "");
    gt_store_finish(s, st);
    return 0;
}

int gt_store_exec_i64(gt_store *s, const char *sql, const int64_t *v, int n, char *err,
                      size_t errlen)
{
    sqlite3_stmt *st = gt_store_prep(s, sql, err, errlen);
    if (!st)
        return -1;
    for (int i = 0; i < n; i++)
        sqlite3_bind_int64(st, i + 1, v[i]);
    return gt_store_step_done(s, st, err, errlen);
}

int gt_store_bind_text(sqlite3_stmt *st, int i, const char *v)
{
    if (!v)
        return sqlite3_bind_null(st, i);
    return sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
}

const char *gt_store_col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

int gt_store_col_dup(char **out, sqlite3_stmt *st, int i)
{
    *out = strdup(gt_store_col_text(st, i));
    return *out ? 0 : -1;
}

/* Applies every schema file named NNN_*.sql above the database's
 * user_version, each in its own transaction together with the version bump,
 * so a crash mid-migration leaves the previous version intact. */
static int migrate(gt_store *s, char *err, size_t errlen)
{
    int version = 0;
    sqlite3_stmt *st = gt_store_prep(s, "PRAGMA user_version", err, errlen);
    if (!st)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        version = sqlite3_column_int(st, 0);
    gt_store_finish(s, st);
    for (const struct gt_schema_file *f = gt_schema_files; f->name; f++) {
        int n = atoi(f->name);
        if (n <= 0 || n <= version)
            continue; /* not a migration (export.sql), or already applied */
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", n);
        if (gt_store_exec(s, "BEGIN IMMEDIATE", err, errlen))
            return -1;
        if (gt_store_exec(s, f->sql, err, errlen) || gt_store_exec(s, pragma, err, errlen)) {
            char tmp[64];
            gt_store_exec(s, "ROLLBACK", tmp, sizeof tmp);
            return -1;
        }
        if (gt_store_exec(s, "COMMIT", err, errlen))
            return -1;
        gt_info("store: applied migration %s", f->name);
        version = n;
    }
    return 0;
}

/* A store with its locks, before its connection opens; NULL with err. */
static gt_store *store_alloc(char *err, size_t errlen)
{
    gt_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    /* Recursive: a batch (gt_store_batch_begin) holds it while the
     * functions it wraps take it again. */
    pthread_mutexattr_t rec;
    int ok = pthread_mutexattr_init(&rec) == 0;
    ok = ok && pthread_mutexattr_settype(&rec, PTHREAD_MUTEX_RECURSIVE) == 0 &&
         pthread_mutex_init(&s->mu, &rec) == 0;
    pthread_mutexattr_destroy(&rec);
    if (!ok) {
        free(s);
        snprintf(err, errlen, "mutex init failed");
        return NULL;
    }
    if (pthread_mutex_init(&s->hmu, NULL) != 0) {
        pthread_mutex_destroy(&s->mu);
        free(s);
        snprintf(err, errlen, "mutex init failed");
        return NULL;
    }
    if (pthread_mutex_init(&s->cmu, NULL) != 0) {
        pthread_mutex_destroy(&s->hmu);
        pthread_mutex_destroy(&s->mu);
        free(s);
        snprintf(err, errlen, "mutex init failed");
        return NULL;
    }
    atomic_init(&s->lost, 0);
    s->health.writable = 1; /* nothing has failed yet */
    return s;
}

static void store_free(gt_store *s)
{
    for (int i = 0; i < GT_STORE_STMT_CACHE; i++) {
        sqlite3_finalize(s->cache[i].st);
        free(s->cache[i].sql);
    }
    if (s->db)
        sqlite3_close(s->db);
    free(s->dbf.path);
    free(s->walf.path);
    pthread_mutex_destroy(&s->cmu);
    pthread_mutex_destroy(&s->hmu);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* median(x): the middle of a group's non-NULL values (the mean of the two
 * middle ones for an even count), NULL for none. The reference a final
 * phase's baseline is checked against is the median of the problem's screen
 * baselines: one screen job timed while the GPU was disturbed (an H100 once
 * measured 282 us where four others measured 45) moves a mean by 2x and
 * flagged a correct final baseline as suspect; it does not move a median. */
typedef struct median_acc {
    double *v;
    size_t n, cap;
    int oom;
} median_acc;

static void median_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    median_acc *a = sqlite3_aggregate_context(ctx, sizeof *a);
    if (!a || sqlite3_value_type(argv[0]) == SQLITE_NULL || a->oom)
        return;
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 16;
        double *nv = sqlite3_realloc64(a->v, cap * sizeof *nv);
        if (!nv) {
            a->oom = 1;
            return;
        }
        a->v = nv;
        a->cap = cap;
    }
    a->v[a->n++] = sqlite3_value_double(argv[0]);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void median_final(sqlite3_context *ctx)
{
    median_acc *a = sqlite3_aggregate_context(ctx, 0);
    if (!a || a->n == 0) {
        sqlite3_result_null(ctx);
    } else if (a->oom) {
        sqlite3_result_error_nomem(ctx);
    } else {
        qsort(a->v, a->n, sizeof *a->v, cmp_double);
        size_t h = a->n / 2;
        sqlite3_result_double(ctx, a->n % 2 ? a->v[h] : (a->v[h - 1] + a->v[h]) / 2);
    }
    if (a)
        sqlite3_free(a->v);
}

static int add_functions(gt_store *s, char *err, size_t errlen)
{
    if (sqlite3_create_function_v2(s->db, "median", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                   NULL, median_step, median_final, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "sqlite: cannot add median(): %s", sqlite3_errmsg(s->db));
        return -1;
    }
    return 0;
}

/* SQLite's memory statistics (sqlite3_memory_used and the soft heap limit,
 * which gemmtune does not use) take a global mutex around every one of its
 * allocations: several per statement step, thousands per results message.
 * Off before the library initialises; SQLITE_MISUSE when it already has
 * (another store in the same process), then it stays as it was. */
static pthread_once_t g_sqlite_once = PTHREAD_ONCE_INIT;
static int g_sqlite_rc = SQLITE_OK;

/* sqlite3_config is not thread-safe: it runs once, at the first store the
 * process opens (before its threads use SQLite), never beside another call. */
static void config_sqlite_once(void)
{
    g_sqlite_rc = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

static int config_sqlite(char *err, size_t errlen)
{
    if (pthread_once(&g_sqlite_once, config_sqlite_once) != 0) {
        snprintf(err, errlen, "pthread_once failed");
        return -1;
    }
    if (g_sqlite_rc != SQLITE_OK && g_sqlite_rc != SQLITE_MISUSE) {
        snprintf(err, errlen, "sqlite3_config: %s", sqlite3_errstr(g_sqlite_rc));
        return -1;
    }
    return 0;
}

#define TXT_(x) #x
#define TXT(x) TXT_(x)
#define AUTOCKPT_TXT TXT(GT_STORE_AUTOCHECKPOINT)

gt_store *gt_store_open(const char *path, char *err, size_t errlen)
{
    if (config_sqlite(err, errlen))
        return NULL;
    gt_store *s = store_alloc(err, errlen);
    if (!s)
        return NULL;
    int rc = sqlite3_open_v2(path, &s->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "cannot open database %s: %s", path,
                 s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_busy_timeout(s->db, GT_STORE_BUSY_MS);
    if (add_functions(s, err, errlen))
        goto fail;
    /* WAL: readers never block the writer; synchronous=NORMAL is durable
     * across process crashes (kill -9), which is the failure we design for. */
    /* wal_autocheckpoint 10000 pages (~40 MB of WAL) instead of 1000: the
     * dispatcher runs the checkpoint (copy and fsync) inside its commit, and
     * a fleet's results dirty the same index pages again and again, which a
     * less frequent checkpoint copies once: +1 to +6 % results/s with 256
     * simulated workers, the CPU per result unchanged (bench/coord_bench.sh,
     * 4 runs each in turn). gemmtuned moves it off the commit altogether
     * (gt_store_ckpt_start). */
    if (gt_store_exec(s, "PRAGMA journal_mode=WAL", err, errlen) ||
        gt_store_exec(s, "PRAGMA synchronous=NORMAL", err, errlen) ||
        gt_store_exec(s, "PRAGMA wal_autocheckpoint=" AUTOCKPT_TXT, err, errlen) ||
        gt_store_exec(s, "PRAGMA foreign_keys=ON", err, errlen))
        goto fail;
    if (migrate(s, err, errlen))
        goto fail;
    if (files_init(s, err, errlen))
        goto fail;
    return s;
fail:
    store_free(s);
    return NULL;
}

/* bytes of the database file a reader maps (PRAGMA mmap_size): address
 * space, not memory; pages past it are read as before */
#define GT_STORE_READER_MMAP "1073741824"

gt_store *gt_store_open_reader(gt_store *w, char *err, size_t errlen)
{
    const char *path = sqlite3_db_filename(w->db, "main");
    if (err && errlen)
        err[0] = '\0';
    if (!path || !*path)
        return NULL;
    gt_store *s = store_alloc(err, errlen);
    if (!s)
        return NULL;
    int rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "cannot open a reader on %s: %s", path,
                 s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_busy_timeout(s->db, GT_STORE_BUSY_MS);
    if (add_functions(s, err, errlen))
        goto fail;
    /* The schema and WAL mode are the writer's business (already done), and
     * so are the files' checks: a reader acknowledges nothing. */
    if (gt_store_exec(s, "PRAGMA foreign_keys=ON", err, errlen))
        goto fail;
    /* The run views read thousands of pages per render, and this connection's
     * page cache starts empty after every commit of the writer (WAL): read
     * through pread, a fifth of a 1000-GEMM run view's 80-110 ms was the
     * kernel copying pages out of its cache (perf, bench/coord_bench.sh's
     * database). Mapped, the pages are read in place. */
    if (gt_store_exec(s, "PRAGMA mmap_size=" GT_STORE_READER_MMAP, err, errlen))
        goto fail;
    return s;
fail:
    store_free(s);
    return NULL;
}

void gt_store_close(gt_store *s)
{
    if (!s)
        return;
    sqlite3_finalize(s->ins_result);
    /* SQLite's close neither checkpoints into a database file that was moved
     * nor removes the WAL then: the WAL would stay beside the replacement,
     * and the next open would lay this database's pages over it. Emptied
     * here (checkpointed into the file the connection holds), it cannot;
     * with only the WAL removed the close's own checkpoint does the same. */
    if (atomic_load(&s->lost) &&
        sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL) != SQLITE_OK)
        gt_err("store: checkpoint of the lost store failed: %s", sqlite3_errmsg(s->db));
    store_free(s);
}

sqlite3 *gt_store_db(gt_store *s) { return s->db; }
void gt_store_lock(gt_store *s) { pthread_mutex_lock(&s->mu); }
void gt_store_unlock(gt_store *s) { pthread_mutex_unlock(&s->mu); }

int gt_store_tx_begin(gt_store *s, char *err, size_t errlen)
{
    gt_store_lock(s);
    if (gt_store_exec(s, "BEGIN IMMEDIATE", err, errlen)) {
        gt_store_unlock(s);
        return -1;
    }
    return 0;
}

int gt_store_tx_end(gt_store *s, int rc, char *err, size_t errlen)
{
    char tmp[128];
    if (rc >= 0 && gt_store_exec(s, "COMMIT", err, errlen))
        rc = -1;
    if (rc < 0)
        gt_store_exec(s, "ROLLBACK", tmp, sizeof tmp);
    gt_store_unlock(s);
    return rc;
}

int gt_store_batch_begin(gt_store *s, gt_store_batch_mode mode, char *err, size_t errlen)
{
    gt_store_lock(s);
    if (s->batch || gt_store_exec(s, "BEGIN IMMEDIATE", err, errlen)) {
        if (s->batch)
            snprintf(err, errlen, "store: a batch is already open");
        gt_store_unlock(s);
        return -1;
    }
    s->batch = mode == GT_STORE_BATCH_UNGUARDED ? GT_STORE_BATCH_UNGUARDED : GT_STORE_BATCH_GUARDED;
    s->batch_broken = 0;
    return 0;
}

int gt_store_batch_end(gt_store *s, char *err, size_t errlen)
{
    char tmp[128];
    int broken = s->batch_broken;
    s->batch = 0;
    s->batch_broken = 0;
    int rc = broken ? -1 : gt_store_exec(s, "COMMIT", err, errlen);
    if (broken)
        snprintf(err, errlen, "store: a transaction of the batch failed after writing: the batch is"
                              " rolled back");
    if (rc)
        gt_store_exec(s, "ROLLBACK", tmp, sizeof tmp);
    gt_store_unlock(s);
    return rc ? -1 : 0;
}

int gt_store_batch_broken(const gt_store *s) { return s->batch_broken; }

void gt_store_batch_abort(gt_store *s)
{
    char tmp[128];
    s->batch = 0;
    s->batch_broken = 0;
    /* fails harmlessly when SQLite already ended the transaction */
    gt_store_exec(s, "ROLLBACK", tmp, sizeof tmp);
    gt_store_unlock(s);
}

int gt_store_checkpoint(gt_store *s)
{
    /* Lost files are logged (once) and checkpointed all the same: see
     * gt_store.h. */
    if (gt_store_check_files(s))
        gt_warn("store: checkpointing into the files the coordinator still holds open");
    gt_store_lock(s);
    int rc = sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    gt_store_unlock(s);
    return rc == SQLITE_OK ? 0 : -1;
}

/* ------------------------------------------------------------- run creation */

int gt_store_insert_jobs(gt_store *s, int64_t run_id, int64_t problem_id, const char *backend,
                         const gt_plan_job *jobs, size_t njobs, const char *baseline,
                         int generation, int64_t now_ms, char *err, size_t errlen)
{
    for (size_t i = 0; i < njobs; i++) {
        sqlite3_stmt *st = gt_store_prep(
            s,
            "INSERT INTO jobs(run_id, problem_id, backend, kind, candidates, ncandidates, baseline,"
            " state, created_ms, updated_ms, generation, shard)"
            " VALUES (?, ?, ?, 'screen', ?, ?, ?, 'queued', ?, ?, ?, ?)",
            err, errlen);
        if (!st)
            return -1;
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int64(st, 2, problem_id);
        gt_store_bind_text(st, 3, backend);
        gt_store_bind_text(st, 4, jobs[i].candidates);
        sqlite3_bind_int(st, 5, jobs[i].ncandidates);
        gt_store_bind_text(st, 6, baseline);
        sqlite3_bind_int64(st, 7, now_ms);
        sqlite3_bind_int64(st, 8, now_ms);
        if (generation >= 0)
            sqlite3_bind_int(st, 9, generation);
        else
            sqlite3_bind_null(st, 9);
        /* its shard: the lease takes screen jobs by (shard > 0, id), every
         * problem's first before any problem's others (009_screen_shard.sql) */
        sqlite3_bind_int64(st, 10, (sqlite3_int64)i);
        if (gt_store_step_done(s, st, err, errlen))
            return -1;
    }
    return 0;
}

int gt_store_insert_plan(gt_store *s, int64_t run_id, int64_t problem_id, const char *backend,
                         const gt_plan_problem *pp, int64_t now_ms, char *err, size_t errlen)
{
    if (pp->search && gt_store_evo_record(s, run_id, problem_id, pp, err, errlen))
        return -1;
    return gt_store_insert_jobs(s, run_id, problem_id, backend, pp->jobs, pp->njobs, pp->baseline,
                                pp->generation, now_ms, err, errlen);
}

static int insert_problem(gt_store *s, int64_t run_id, const gt_problem *p, const char *state,
                          int64_t *pid, char *err, size_t errlen)
{
    char key[512], label[128];
    gt_problem_key(p, key, sizeof key);
    gt_problem_label(p, label, sizeof label);
    cJSON *spec = gt_problem_to_json(p);
    char *spec_txt = spec ? cJSON_PrintUnformatted(spec) : NULL;
    cJSON_Delete(spec);
    if (!spec_txt) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    sqlite3_stmt *st = gt_store_prep(
        s,
        "INSERT INTO problems(run_id, key, label, m, n, k, batch, trans_a, trans_b, lda, ldb, ldc,"
        " ldd, stride_a, stride_b, stride_c, stride_d, a_type, b_type, c_type, d_type,"
        " compute_type, scale_type, alpha, beta, bias, bias_type, activation, rotating_mb,"
        " call_count, flops, bytes, weight, spec, state)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
        " ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35)",
        err, errlen);
    if (!st) {
        cJSON_free(spec_txt);
        return -1;
    }
    char ta[2] = {p->trans_a, 0}, tb[2] = {p->trans_b, 0};
    sqlite3_bind_int64(st, 1, run_id);
    gt_store_bind_text(st, 2, key);
    gt_store_bind_text(st, 3, label);
    sqlite3_bind_int64(st, 4, p->m);
    sqlite3_bind_int64(st, 5, p->n);
    sqlite3_bind_int64(st, 6, p->k);
    sqlite3_bind_int64(st, 7, p->batch);
    gt_store_bind_text(st, 8, ta);
    gt_store_bind_text(st, 9, tb);
    sqlite3_bind_int64(st, 10, p->lda);
    sqlite3_bind_int64(st, 11, p->ldb);
    sqlite3_bind_int64(st, 12, p->ldc);
    sqlite3_bind_int64(st, 13, p->ldd);
    sqlite3_bind_int64(st, 14, p->stride_a);
    sqlite3_bind_int64(st, 15, p->stride_b);
    sqlite3_bind_int64(st, 16, p->stride_c);
    sqlite3_bind_int64(st, 17, p->stride_d);
    gt_store_bind_text(st, 18, gt_dtype_name(p->a_type));
    gt_store_bind_text(st, 19, gt_dtype_name(p->b_type));
    gt_store_bind_text(st, 20, gt_dtype_name(p->c_type));
    gt_store_bind_text(st, 21, gt_dtype_name(p->d_type));
    gt_store_bind_text(st, 22, gt_dtype_name(p->compute_type));
    gt_store_bind_text(st, 23, gt_dtype_name(p->scale_type));
    sqlite3_bind_double(st, 24, p->alpha);
    sqlite3_bind_double(st, 25, p->beta);
    sqlite3_bind_int(st, 26, p->bias);
    gt_store_bind_text(st, 27, p->bias ? gt_dtype_name(p->bias_type) : "none");
    gt_store_bind_text(st, 28, p->activation);
    sqlite3_bind_int64(st, 29, p->rotating_mb);
    sqlite3_bind_int64(st, 30, p->call_count);
    sqlite3_bind_double(st, 31, p->flops);
    sqlite3_bind_double(st, 32, p->bytes);
    sqlite3_bind_double(st, 33, p->weight);
    gt_store_bind_text(st, 34, spec_txt);
    gt_store_bind_text(st, 35, state);
    cJSON_free(spec_txt);
    if (gt_store_step_done(s, st, err, errlen))
        return -1;
    *pid = sqlite3_last_insert_rowid(s->db);
    return 0;
}

static int insert_enumerate_job(gt_store *s, int64_t run_id, int64_t pid, const char *backend,
                                int64_t now_ms, char *err, size_t errlen)
{
    sqlite3_stmt *st = gt_store_prep(
        s,
        "INSERT INTO jobs(run_id, problem_id, backend, kind, candidates, ncandidates, state,"
        " created_ms, updated_ms) VALUES (?, ?, ?, 'enumerate', '[]', 0, 'queued', ?, ?)",
        err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, pid);
    gt_store_bind_text(st, 3, backend);
    sqlite3_bind_int64(st, 4, now_ms);
    sqlite3_bind_int64(st, 5, now_ms);
    return gt_store_step_done(s, st, err, errlen);
}

static cJSON *skipped_json(const gt_log_result *log)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return NULL;
    for (size_t i = 0; i < log->nerrors && i < GT_LOG_MAX_ERRORS; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(arr, e)) {
            cJSON_Delete(e);
            cJSON_Delete(arr);
            return NULL;
        }
        if (!cJSON_AddNumberToObject(e, "line", log->errors[i].line) ||
            !cJSON_AddStringToObject(e, "field", log->errors[i].field) ||
            !cJSON_AddStringToObject(e, "error", log->errors[i].msg)) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

static int create_run_tx(gt_store *s, const gt_run_opts *o, const gt_log_result *log,
                         const gt_plan *plan, gt_run_created *out, int64_t now, char *err,
                         size_t errlen)
{
    int rc = -1;
    cJSON *oj = gt_run_opts_to_stored(o), *sk = skipped_json(log);
    char *opts_txt = oj ? cJSON_PrintUnformatted(oj) : NULL;
    char *sk_txt = sk ? cJSON_PrintUnformatted(sk) : NULL;
    if (!opts_txt || !sk_txt) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    char name[160];
    if (o->name[0])
        snprintf(name, sizeof name, "%s", o->name);
    else
        snprintf(name, sizeof name, "%s-%lld", gt_log_format_name(log->format), (long long)now);
    sqlite3_stmt *st = gt_store_prep(
        s,
        "INSERT INTO runs(name, source_format, backend, device_model, strategy, budget, options,"
        " state, total_calls, total_flops, dropped, skipped, created_ms)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)",
        err, errlen);
    if (!st)
        goto out;
    gt_store_bind_text(st, 1, name);
    gt_store_bind_text(st, 2, gt_log_format_name(log->format));
    gt_store_bind_text(st, 3, o->backend);
    gt_store_bind_text(st, 4, o->device_model[0] ? o->device_model : NULL);
    gt_store_bind_text(st, 5, gt_strategy_name(o->strategy));
    sqlite3_bind_int(st, 6, o->budget);
    gt_store_bind_text(st, 7, opts_txt);
    sqlite3_bind_int64(st, 8, log->total_calls);
    sqlite3_bind_double(st, 9, log->total_flops);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)log->dropped);
    gt_store_bind_text(st, 11, log->nerrors ? sk_txt : NULL);
    sqlite3_bind_int64(st, 12, now);
    if (gt_store_step_done(s, st, err, errlen))
        goto out;
    out->id = sqlite3_last_insert_rowid(s->db);
    for (size_t i = 0; i < plan->nproblems; i++) {
        const gt_plan_problem *pp = &plan->problems[i];
        int64_t pid;
        if (insert_problem(s, out->id, pp->problem, pp->enumerate ? "enumerating" : "screening",
                           &pid, err, errlen))
            goto out;
        out->problems++;
        if (pp->enumerate) {
            if (insert_enumerate_job(s, out->id, pid, o->backend, now, err, errlen))
                goto out;
            out->jobs++;
            continue;
        }
        if (gt_store_insert_plan(s, out->id, pid, o->backend, pp, now, err, errlen))
            goto out;
        out->candidates += pp->ncandidates;
        out->jobs += pp->njobs;
        /* A problem whose pruned space is empty goes straight to the final
         * phase, where the baseline alone is measured. */
        if (pp->njobs == 0 && gt_store_advance_problem(s, pid, now, err, errlen))
            goto out;
    }
    rc = 0;
out:
    cJSON_Delete(oj);
    cJSON_Delete(sk);
    cJSON_free(opts_txt);
    cJSON_free(sk_txt);
    return rc;
}

int gt_store_create_run(gt_store *s, const gt_run_opts *o, const gt_log_result *log,
                        const gt_plan *plan, gt_run_created *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int64_t now = gt_wall_ms();
    if (gt_store_tx_begin(s, err, errlen))
        return -1;
    return gt_store_tx_end(s, create_run_tx(s, o, log, plan, out, now, err, errlen), err, errlen);
}

int gt_store_run_opts(gt_store *s, int64_t run_id, gt_run_opts *o, char *err, size_t errlen)
{
    gt_run_opts_default(o);
    sqlite3_stmt *st = gt_store_prep(
        s, "SELECT options, name, backend, device_model, strategy, budget FROM runs WHERE id = ?",
        err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    int r = sqlite3_step(st);
    if (r != SQLITE_ROW) {
        snprintf(err, errlen, "run %lld: %s", (long long)run_id,
                 r == SQLITE_DONE ? "not found" : sqlite3_errmsg(s->db));
        gt_store_finish(s, st);
        return -1;
    }
    if (gt_run_opts_from_stored(o, gt_store_col_text(st, 0))) {
        gt_store_finish(s, st);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* What the run is, as written; the search's options through the same
     * checks as the rest (a value refused keeps its default, as in
     * gt_run_opts_from_stored). */
    snprintf(o->name, sizeof o->name, "%s", gt_store_col_text(st, 1));
    snprintf(o->backend, sizeof o->backend, "%s", gt_store_col_text(st, 2));
    snprintf(o->device_model, sizeof o->device_model, "%s", gt_store_col_text(st, 3));
    char tmp[160];
    (void)gt_run_opts_set(o, "strategy", gt_store_col_text(st, 4), tmp, sizeof tmp);
    (void)gt_run_opts_set(o, "budget", gt_store_col_text(st, 5), tmp, sizeof tmp);
    gt_store_finish(s, st);
    return 0;
}

int gt_store_cancel_run(gt_store *s, int64_t run_id, char *err, size_t errlen)
{
    int64_t now = gt_wall_ms();
    gt_store_lock(s);
    int rc = -1;
    char tmp[128];
    if (gt_store_exec(s, "BEGIN IMMEDIATE", err, errlen))
        goto out;
    sqlite3_stmt *st = gt_store_prep(s, "SELECT state FROM runs WHERE id = ?", err, errlen);
    if (!st)
        goto rollback;
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        gt_store_finish(s, st);
        gt_store_exec(s, "ROLLBACK", tmp, sizeof tmp);
        rc = 1;
        goto out;
    }
    int running = strcmp(gt_store_col_text(st, 0), "running") == 0;
    gt_store_finish(s, st);
    if (running) {
        const char *sqls[] = {
            "UPDATE runs SET state = 'cancelled', finished_ms = ?2 WHERE id = ?1",
            "UPDATE jobs SET state = 'cancelled', lease_owner = NULL, updated_ms = ?2"
            " WHERE run_id = ?1 AND state IN ('queued', 'leased')",
            "UPDATE problems SET state = 'cancelled' WHERE run_id = ?1"
            " AND state IN ('enumerating', 'screening', 'final')",
        };
        for (size_t i = 0; i < sizeof sqls / sizeof sqls[0]; i++) {
            st = gt_store_prep(s, sqls[i], err, errlen);
            if (!st)
                goto rollback;
            sqlite3_bind_int64(st, 1, run_id);
            sqlite3_bind_int64(st, 2, now);
            if (gt_store_step_done(s, st, err, errlen))
                goto rollback;
        }
    }
    if (gt_store_exec(s, "COMMIT", err, errlen))
        goto rollback;
    rc = 0;
    goto out;
rollback:
    gt_store_exec(s, "ROLLBACK", tmp, sizeof tmp);
out:
    gt_store_unlock(s);
    return rc;
}

int gt_store_run_exists(gt_store *s, int64_t run_id)
{
    char err[128];
    gt_store_lock(s);
    int rc = -1;
    sqlite3_stmt *st = gt_store_prep(s, "SELECT 1 FROM runs WHERE id = ?", err, sizeof err);
    if (st) {
        sqlite3_bind_int64(st, 1, run_id);
        int r = sqlite3_step(st);
        rc = r == SQLITE_ROW ? 1 : r == SQLITE_DONE ? 0 : -1;
        gt_store_finish(s, st);
    }
    gt_store_unlock(s);
    return rc;
}
