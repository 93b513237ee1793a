/* nvrtc_cache.c: the worker's NVRTC compiles through two caches (gt_cu.h
 * describes the key and the files) and a small pool of compile threads, one
 * per core of the worker's share of the host but one (pool_size), at low
 * priority, so the GPU's feeding thread keeps its core while a problem's
 * family compiles during enumerate/prepare.
 * Compile threads never touch the CUDA context: they produce images; the
 * worker loads them on the thread that runs the device. libgemmtune does not
 * use this cache (an application compiles a tuned kernel once). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <nvrtc.h>

#include "gen_export.h"
#include "gt_config.h"
#include "gt_cu.h"
#include "gt_util.h"

#define MAX_OPTS 40
#define OPT_LEN 48
#define NBUCKETS 4096
#define FILE_MAGIC "GTGEN01"

typedef struct file_hdr {
    char magic[8];
    uint64_t key, len, sum;
    int32_t cubin, spill_stores, spill_loads, pad;
    double compile_ms;
    char target[24];
} file_hdr;

enum { ST_QUEUED = 0, ST_RUNNING, ST_DONE, ST_FAILED };

struct gt_cu_entry {
    uint64_t key;
    const char *src;
    char kernel[32];
    char opts[MAX_OPTS][OPT_LEN];
    int nopts, sm, state;
    int inq;              /* in the pool's queue */
    gt_cu_image img;
    char err[320];
    gt_cu_entry *next;   /* bucket chain */
    gt_cu_entry *qnext;  /* pool queue */
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_work = PTHREAD_COND_INITIALIZER, g_done = PTHREAD_COND_INITIALIZER;
static gt_cu_entry *g_bucket[NBUCKETS];
static gt_cu_entry *g_qhead, *g_qtail;
static pthread_t *g_threads;
static int g_nthreads, g_stop;
static int g_share = 1; /* GPUs (one worker each) sharing the host's cores */
static gt_cu_cache_stats g_st;
static long g_seq;

/* ---- key ------------------------------------------------------------------------------ */

static uint64_t make_key(const gt_cu_entry *e, const char *target)
{
    int maj = 0, min = 0;
    (void)nvrtcVersion(&maj, &min);
    char ver[64];
    snprintf(ver, sizeof ver, "%s nvrtc %d.%d %s", FILE_MAGIC, maj, min, target);
    uint64_t h = gt_fnv1a64(e->src, strlen(e->src), GT_FNV_SEED);
    for (int i = 0; i < e->nopts; i++)
        h = gt_fnv1a64(e->opts[i], strlen(e->opts[i]) + 1, h);
    h = gt_fnv1a64(e->kernel, strlen(e->kernel) + 1, h);
    return gt_fnv1a64(ver, strlen(ver) + 1, h);
}

/* ---- disk -------------------------------------------------------------------------- */

int gt_cu_cache_dir(char *buf, size_t len)
{
    return gt_cache_dir("cuda", "cuda", buf, len);
}

/* <cache dir>/<key><ext>: the image (".gtk") or its compile lock (".lock"). */
static int key_path(uint64_t key, const char *ext, char *buf, size_t len)
{
    char dir[PATH_MAX - 64];
    if (gt_cu_cache_dir(dir, sizeof dir) != 0)
        return -1;
    snprintf(buf, len, "%s/%016llx%s", dir, (unsigned long long)key, ext);
    return 0;
}

static int disk_read(gt_cu_entry *e)
{
    char path[PATH_MAX];
    if (key_path(e->key, ".gtk", path, sizeof path) != 0)
        return -1;
    size_t n = 0;
    unsigned char *buf = (unsigned char *)gt_read_file(path, &n, (size_t)256 << 20);
    if (!buf)
        return -1;
    file_hdr h;
    if (n < sizeof h)
        goto bad;
    memcpy(&h, buf, sizeof h);
    if (memcmp(h.magic, FILE_MAGIC, 8) || h.key != e->key || h.len != n - sizeof h ||
        h.sum != gt_fnv1a64(buf + sizeof h, (size_t)h.len, GT_FNV_SEED) || !h.len)
        goto bad;
    e->img.data = malloc((size_t)h.len + 1);
    if (!e->img.data)
        goto bad;
    memcpy(e->img.data, buf + sizeof h, (size_t)h.len);
    e->img.data[h.len] = 0;
    e->img.len = (size_t)h.len;
    e->img.cubin = h.cubin;
    e->img.compile_ms = h.compile_ms;
    e->img.spill_stores = h.spill_stores;
    e->img.spill_loads = h.spill_loads;
    snprintf(e->img.target, sizeof e->img.target, "%.*s", (int)sizeof h.target - 1, h.target);
    e->img.origin = GT_CU_FROM_DISK;
    free(buf);
    return 0;
bad:
    free(buf);
    return -1; /* absent, foreign or corrupt: compile it again */
}

/* A unique temporary name per process, thread and write, then rename: two
 * writers of one key both succeed and the last rename wins (same bytes). */
static void disk_write(const gt_cu_entry *e)
{
    char path[PATH_MAX], tmp[PATH_MAX + 64];
    if (key_path(e->key, ".gtk", path, sizeof path) != 0)
        return;
    pthread_mutex_lock(&g_mu);
    long seq = ++g_seq;
    pthread_mutex_unlock(&g_mu);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%ld.%ld", path, (long)getpid(), (long)syscall(SYS_gettid), seq);
    file_hdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, FILE_MAGIC, 8);
    h.key = e->key;
    h.len = e->img.len;
    h.sum = gt_fnv1a64(e->img.data, e->img.len, GT_FNV_SEED);
    h.cubin = e->img.cubin;
    h.spill_stores = e->img.spill_stores;
    h.spill_loads = e->img.spill_loads;
    h.compile_ms = e->img.compile_ms;
    snprintf(h.target, sizeof h.target, "%s", e->img.target);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    int ok = write(fd, &h, sizeof h) == (ssize_t)sizeof h &&
             write(fd, e->img.data, e->img.len) == (ssize_t)e->img.len;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0)
        unlink(tmp); /* the cache is an optimization: a failed write is not an error */
}

/* ---- one compile per key across the host's workers ------------------------------------ */

/* Workers of one host share the disk cache, and at a run's start each
 * queues its problems' families: the same key was compiled by two or three
 * of them at once (4 workers: 1,274 compiles where one worker made 1,011).
 * The first to want a key holds <key>.lock (O_EXCL) while it compiles; the
 * others wait for its file. A lock is stale when its process is gone (a
 * bench process killed with its compiles) or after LOCK_STALE_S (another
 * pid namespace, a hung compile): then it is taken over. */
#define LOCK_STALE_S 60
#define LOCK_POLL_MS 20

static int lock_stale(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT ? 1 : 0; /* gone: try to take it */
    if (time(NULL) - st.st_mtime > LOCK_STALE_S)
        return 1;
    char buf[32] = "";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    long pid = n > 0 ? strtol(buf, NULL, 10) : 0;
    /* our own pid: left by an earlier process that had it (a container's
     * worker restarted), since this process locks a key once */
    if (pid == (long)getpid())
        return 1;
    return pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* 1: this thread holds e's lock (compile, then unlink it); 0: another
 * process compiled e meanwhile and it is read (e done); -1: no lock could
 * be made (the cache is an optimization: compile anyway). */
static int lock_or_wait(gt_cu_entry *e, char *path, size_t len)
{
    if (key_path(e->key, ".lock", path, len) != 0)
        return -1;
    for (;;) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) {
            char pid[32];
            int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
            int ok = write(fd, pid, (size_t)n) == n;
            close(fd);
            (void)ok; /* an empty lock file still excludes; it goes stale by age */
            return 1;
        }
        if (errno != EEXIST)
            return -1;
        /* another process compiles e: its file appears when it is done */
        for (;;) {
            struct timespec ts = {0, LOCK_POLL_MS * 1000000L};
            nanosleep(&ts, NULL);
            if (disk_read(e) == 0)
                return 0;
            if (lock_stale(path)) {
                (void)unlink(path); /* taken over, or already gone: race for it again */
                break;
            }
        }
    }
}

/* ---- compile ------------------------------------------------------------------------ */

static void compile_entry(gt_cu_entry *e)
{
    const char *opts[MAX_OPTS];
    double t0 = gt_mono_ms();
    for (int i = 0; i < e->nopts; i++)
        opts[i] = e->opts[i];
    if (gt_cu_nvrtc_compile(e->src, GT_GEN_PROGRAM_NAME, e->sm, opts, e->nopts, e->kernel, &e->img,
                            e->err, sizeof e->err) != 0) {
        e->state = ST_FAILED;
        return;
    }
    e->img.compile_ms = gt_mono_ms() - t0;
    e->img.origin = GT_CU_FROM_COMPILE;
    e->state = ST_DONE;
    disk_write(e);
}

/* Disk first (or another worker's compile of the key), then NVRTC; the
 * caller has marked e ST_RUNNING. */
static void produce(gt_cu_entry *e)
{
    int cubin = 0, locked = -1;
    char lock[PATH_MAX];
    if (gt_cu_nvrtc_target(e->sm, e->img.target, sizeof e->img.target, &cubin) == 0) {
        e->key = make_key(e, e->img.target);
        if (disk_read(e) == 0 || (locked = lock_or_wait(e, lock, sizeof lock)) == 0) {
            pthread_mutex_lock(&g_mu);
            g_st.disk_hits++;
            e->state = ST_DONE;
            pthread_cond_broadcast(&g_done);
            pthread_mutex_unlock(&g_mu);
            return;
        }
    }
    compile_entry(e);
    if (locked == 1)
        (void)unlink(lock); /* after the file's rename: a waiter reads it */
    pthread_mutex_lock(&g_mu);
    g_st.compiles++;
    g_st.compile_ms += e->img.compile_ms > 0 ? e->img.compile_ms : 0;
    if (e->state == ST_FAILED)
        g_st.failures++;
    pthread_cond_broadcast(&g_done);
    pthread_mutex_unlock(&g_mu);
}

/* ---- pool ----------------------------------------------------------------------------- */

static void *worker(void *arg)
{
    (void)arg;
    /* Below the thread that feeds the GPU: timing must not wait for a core. */
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
    pthread_mutex_lock(&g_mu);
    for (;;) {
        while (!g_qhead && !g_stop)
            pthread_cond_wait(&g_work, &g_mu);
        if (g_stop)
            break;
        gt_cu_entry *e = g_qhead;
        g_qhead = e->qnext;
        if (!g_qhead)
            g_qtail = NULL;
        e->inq = 0;
        if (e->state != ST_QUEUED)
            continue; /* taken synchronously by a waiter meanwhile */
        e->state = ST_RUNNING;
        pthread_mutex_unlock(&g_mu);
        produce(e);
        pthread_mutex_lock(&g_mu);
    }
    pthread_mutex_unlock(&g_mu);
    return NULL;
}

/* The pool's size: the cores this process may run on (its affinity mask:
 * a container's or numactl's share, not the host's), divided among the
 * workers of the host (one per GPU, gt_cu_cache_pool_share), less the one
 * that feeds this worker's GPU; at least 1, at most 64. GT_COMPILE_THREADS
 * sets it. Four workers of a 64-core host each starting 63 threads made 252
 * compile threads for 64 cores: the enumerations and the worker threads that
 * run between timed regions waited for cores (issue 20: enumerate jobs 1.6x
 * slower on 4 GPUs than on 1). */
static int pool_size(void)
{
    const char *env = getenv("GT_COMPILE_THREADS");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v >= 1 && v <= 256)
            return (int)v;
    }
    long nc = 0;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        nc = CPU_COUNT(&set);
    if (nc <= 0)
        nc = sysconf(_SC_NPROCESSORS_ONLN);
    long per = nc / (g_share > 0 ? g_share : 1);
    int n = per > 1 ? (int)(per - 1) : 1;
    return n > 64 ? 64 : n;
}

void gt_cu_cache_pool_share(int gpus)
{
    pthread_mutex_lock(&g_mu);
    g_share = gpus > 0 ? gpus : 1;
    pthread_mutex_unlock(&g_mu);
}

/* With g_mu held. */
static void pool_start(void)
{
    if (g_nthreads > 0)
        return;
    int n = pool_size();
    g_threads = calloc((size_t)n, sizeof *g_threads);
    if (!g_threads)
        return;
    g_stop = 0;
    for (int i = 0; i < n; i++) {
        if (pthread_create(&g_threads[g_nthreads], NULL, worker, NULL) != 0)
            break;
        g_nthreads++;
    }
    g_st.threads = g_nthreads;
}

void gt_cu_cache_pool_stop(void)
{
    pthread_mutex_lock(&g_mu);
    g_stop = 1;
    /* Queued entries stay queued: a waiter compiles them itself, a new
     * asynchronous request queues them again. */
    for (gt_cu_entry *e = g_qhead; e; e = e->qnext)
        e->inq = 0;
    g_qhead = g_qtail = NULL;
    pthread_cond_broadcast(&g_work);
    pthread_cond_broadcast(&g_done);
    int n = g_nthreads;
    pthread_t *th = g_threads;
    g_nthreads = 0;
    g_threads = NULL;
    g_st.threads = 0;
    pthread_mutex_unlock(&g_mu);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    free(th);
    pthread_mutex_lock(&g_mu);
    g_stop = 0;
    pthread_mutex_unlock(&g_mu);
}

/* With g_mu held: queues e for the pool (started when needed), at the
 * queue's head when urgent; 0 when no thread could be started. */
static int enqueue(gt_cu_entry *e, int urgent)
{
    pool_start();
    if (g_nthreads <= 0)
        return 0;
    e->state = ST_QUEUED;
    e->inq = 1;
    if (urgent) {
        e->qnext = g_qhead;
        g_qhead = e;
        if (!g_qtail)
            g_qtail = e;
    } else {
        e->qnext = NULL;
        if (g_qtail)
            g_qtail->qnext = e;
        else
            g_qhead = e;
        g_qtail = e;
    }
    pthread_cond_signal(&g_work);
    return 1;
}

/* With g_mu held: takes queued e out of the queue (to queue it again). */
static void dequeue(gt_cu_entry *e)
{
    gt_cu_entry *prev = NULL;
    for (gt_cu_entry *q = g_qhead; q; prev = q, q = q->qnext) {
        if (q != e)
            continue;
        if (prev)
            prev->qnext = q->qnext;
        else
            g_qhead = q->qnext;
        if (g_qtail == q)
            g_qtail = prev;
        e->inq = 0;
        e->qnext = NULL;
        return;
    }
}

/* ---- requests --------------------------------------------------------------------------- */

static uint64_t request_hash(const char *src, const char *kernel, const char *const *opts,
                             int nopts, int sm)
{
    uint64_t h = gt_fnv1a64(&src, sizeof src, GT_FNV_SEED); /* sources are static strings */
    h = gt_fnv1a64(kernel, strlen(kernel) + 1, h);
    for (int i = 0; i < nopts; i++)
        h = gt_fnv1a64(opts[i], strlen(opts[i]) + 1, h);
    return gt_fnv1a64(&sm, sizeof sm, h);
}

static int same(const gt_cu_entry *e, const char *src, const char *kernel,
                const char *const *opts, int nopts, int sm)
{
    if (e->src != src || e->nopts != nopts || e->sm != sm || strcmp(e->kernel, kernel))
        return 0;
    for (int i = 0; i < nopts; i++)
        if (strcmp(e->opts[i], opts[i]))
            return 0;
    return 1;
}

gt_cu_entry *gt_cu_cache_request(const char *src, const char *kernel, const char *const *opts,
                                 int nopts, int sm, int async, int *mem_hit)
{
    if (nopts > MAX_OPTS)
        return NULL;
    uint64_t h = request_hash(src, kernel, opts, nopts, sm);
    gt_cu_entry **b = &g_bucket[h % NBUCKETS], *e;
    pthread_mutex_lock(&g_mu);
    g_st.requests++;
    for (e = *b; e && !same(e, src, kernel, opts, nopts, sm); e = e->next)
        ;
    if (mem_hit)
        *mem_hit = e != NULL;
    if (e) {
        g_st.mem_hits++;
        if (async == GT_CU_URGENT && e->state == ST_QUEUED && e->inq)
            dequeue(e); /* queued behind others: to the head */
        if (async && e->state == ST_QUEUED && !e->inq)
            (void)enqueue(e, async == GT_CU_URGENT); /* (or dropped by a pool stop) */
        pthread_mutex_unlock(&g_mu);
        return e;
    }
    e = calloc(1, sizeof *e);
    if (!e) {
        pthread_mutex_unlock(&g_mu);
        return NULL;
    }
    e->src = src;
    snprintf(e->kernel, sizeof e->kernel, "%s", kernel);
    for (int i = 0; i < nopts; i++)
        snprintf(e->opts[i], OPT_LEN, "%s", opts[i]);
    e->nopts = nopts;
    e->sm = sm;
    e->img.spill_stores = e->img.spill_loads = -1;
    e->next = *b;
    *b = e;
    if (async && enqueue(e, async == GT_CU_URGENT)) {
        pthread_mutex_unlock(&g_mu);
        return e;
    }
    e->state = ST_RUNNING;
    pthread_mutex_unlock(&g_mu);
    produce(e);
    return e;
}

int gt_cu_cache_wait(gt_cu_entry *e, const gt_cu_image **img, char *err, size_t errlen)
{
    pthread_mutex_lock(&g_mu);
    if (e->state == ST_QUEUED) {
        /* Still queued: compile it here rather than wait behind the queue
         * (the pool skips entries that are no longer queued). */
        e->state = ST_RUNNING;
        pthread_mutex_unlock(&g_mu);
        produce(e);
        pthread_mutex_lock(&g_mu);
    }
    while (e->state == ST_RUNNING)
        pthread_cond_wait(&g_done, &g_mu);
    int ok = e->state == ST_DONE;
    pthread_mutex_unlock(&g_mu);
    if (!ok) {
        snprintf(err, errlen, "%s", e->err);
        return -1;
    }
    *img = &e->img;
    return 0;
}

uint64_t gt_cu_cache_key(const gt_cu_entry *e) { return e->key; }

void gt_cu_cache_stats_get(gt_cu_cache_stats *s)
{
    pthread_mutex_lock(&g_mu);
    *s = g_st;
    pthread_mutex_unlock(&g_mu);
}

void gt_cu_cache_forget(void)
{
    gt_cu_cache_pool_stop();
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < NBUCKETS; i++) {
        gt_cu_entry *e = g_bucket[i];
        while (e) {
            gt_cu_entry *n = e->next;
            free(e->img.data);
            free(e);
            e = n;
        }
        g_bucket[i] = NULL;
    }
    pthread_mutex_unlock(&g_mu);
}
