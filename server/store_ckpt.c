/* store_ckpt.c: the WAL's checkpoints on a thread of their own.
 *
 * With SQLite's automatic checkpoint, the commit that takes the WAL past
 * its threshold copies the WAL's pages into the database file inside that
 * commit: under 256 simulated workers the dispatcher stalled ~40 ms every
 * 0.4 s (wal_autocheckpoint 10000 pages), and every lease arriving then
 * waited as long: the tail of the lease round trip (docs/coord_bench.md).
 * Here the writer's WAL hook only wakes a thread, which runs a PASSIVE
 * checkpoint on a connection of its own while the writer goes on; a WAL
 * whose pages were all copied back starts over at the writer's next
 * transaction, so the file stays small. Should the thread fall behind (a
 * reader holding an old snapshot, a slow disk) the writer checkpoints
 * itself past CKPT_BEHIND pages, as the automatic checkpoint did. */
#include "gt_store.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gt_util.h"

/* WAL pages (of 4 KB) after which the thread checkpoints. */
#define CKPT_PAGES 4000
/* WAL pages after which the writer checkpoints itself (the thread is
 * behind). */
#define CKPT_BEHIND 100000
/* The thread also checkpoints this often while anything is in the WAL. */
#define CKPT_IDLE_MS 1000

struct gt_store_ckpt {
    gt_store *w;
    sqlite3 *db; /* the thread's own connection */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pages; /* the WAL's size at the writer's last commit (under mu) */
    int stop;  /* under mu */
    atomic_llong runs, copied, inline_runs;
};

/* The writer's WAL hook: runs after each commit, on the committing thread,
 * inside the writer connection's mutex. Returns SQLITE_OK. */
static int on_commit(void *arg, sqlite3 *db, const char *name, int pages)
{
    gt_store_ckpt *c = arg;
    if (pages >= CKPT_PAGES) {
        pthread_mutex_lock(&c->mu);
        c->pages = pages;
        pthread_cond_signal(&c->cv);
        pthread_mutex_unlock(&c->mu);
    }
    if (pages >= CKPT_BEHIND) {
        (void)sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        atomic_fetch_add(&c->inline_runs, 1);
    }
    return SQLITE_OK;
}

/* The writer's busy handler while the thread runs: the checkpoint holds
 * the WAL's locks for moments, and SQLite's own handler sleeps 1, 2, 5,
 * 10 ... 100 ms between tries. Retries every 100 us, for GT_STORE_BUSY_MS at most (the
 * store's busy timeout). */
static int on_busy(void *arg, int tries)
{
    (void)arg;
    if (tries >= GT_STORE_BUSY_MS * 10)
        return 0;
    struct timespec ts = {0, 100000L}; /* 100 us */
    nanosleep(&ts, NULL);
    return 1;
}

static void *run(void *arg)
{
    gt_store_ckpt *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        if (c->pages < CKPT_PAGES) {
            struct timespec until = gt_time_after_ms(CLOCK_REALTIME, CKPT_IDLE_MS);
            pthread_cond_timedwait(&c->cv, &c->mu, &until);
            if (c->stop)
                break;
        }
        c->pages = 0;
        pthread_mutex_unlock(&c->mu);
        int log = 0, done = 0;
        int rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
        if (rc == SQLITE_OK && log < 0) {
            gt_warn("store: background checkpoint: the database is not in WAL mode");
        } else if (rc == SQLITE_OK && log > 0) {
            atomic_fetch_add(&c->runs, 1);
            atomic_fetch_add(&c->copied, done);
        } else if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
            gt_warn("store: background checkpoint: %s", sqlite3_errmsg(c->db));
        }
        pthread_mutex_lock(&c->mu);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

gt_store_ckpt *gt_store_ckpt_start(gt_store *w, char *err, size_t errlen)
{
    sqlite3 *wdb = gt_store_db(w);
    const char *path = sqlite3_db_filename(wdb, "main");
    if (!path || !*path) {
        snprintf(err, errlen, "store: an in-memory database has no WAL to checkpoint");
        return NULL;
    }
    gt_store_ckpt *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->w = w;
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        snprintf(err, errlen, "store: checkpoint mutex");
        free(c);
        return NULL;
    }
    if (pthread_cond_init(&c->cv, NULL) != 0) {
        snprintf(err, errlen, "store: checkpoint condition variable");
        goto fail_mu;
    }
    int rc = sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "store: cannot open %s for checkpoints: %s", path,
                 c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        goto fail_db;
    }
    sqlite3_busy_handler(c->db, on_busy, NULL);
    /* A connection that has read nothing does not know the file is in WAL
     * mode: its checkpoints would do nothing (log -1). */
    if (sqlite3_exec(c->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "store: checkpoint connection: %s", sqlite3_errmsg(c->db));
        goto fail_db;
    }
    if (pthread_create(&c->th, NULL, run, c) != 0) {
        snprintf(err, errlen, "store: cannot start the checkpoint thread");
        goto fail_db;
    }
    /* Replaces the automatic checkpoint (itself a WAL hook). */
    gt_store_lock(w);
    sqlite3_busy_handler(wdb, on_busy, NULL);
    sqlite3_wal_hook(wdb, on_commit, c);
    gt_store_unlock(w);
    return c;
fail_db:
    sqlite3_close(c->db);
    pthread_cond_destroy(&c->cv);
fail_mu:
    pthread_mutex_destroy(&c->mu);
    free(c);
    return NULL;
}

void gt_store_ckpt_stats(const gt_store_ckpt *c, long long *runs, long long *copied, long long *inline_runs)
{
    *runs = atomic_load(&c->runs);
    *copied = atomic_load(&c->copied);
    *inline_runs = atomic_load(&c->inline_runs);
}

void gt_store_ckpt_stop(gt_store_ckpt *c)
{
    if (!c)
        return;
    /* the automatic checkpoint back first: no commit calls on_commit after */
    sqlite3 *wdb = gt_store_db(c->w);
    gt_store_lock(c->w);
    sqlite3_wal_autocheckpoint(wdb, GT_STORE_AUTOCHECKPOINT);
    sqlite3_busy_timeout(wdb, GT_STORE_BUSY_MS);
    gt_store_unlock(c->w);
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->th, NULL);
    sqlite3_close(c->db);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
