/* util.c: logging, clocks, strings, files and exec without a shell. */
#include "gt_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static gt_loglevel g_level = GT_LOG_INFO;
static char g_name[32] = "gemmtune";
static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;

void gt_log_set_level(gt_loglevel l) { g_level = l; }

void gt_log_set_name(const char *prog)
{
    snprintf(g_name, sizeof g_name, "%s", prog);
}

void gt_logf(gt_loglevel l, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    if (l < g_level)
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    /* One line per event, key=value prefix, so logs grep and parse cleanly. */
    pthread_mutex_lock(&g_log_mu);
    fprintf(stderr, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s prog=%s pid=%d msg=\"%s\"\n",
            tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
            ts.tv_nsec / 1000000, names[l], g_name, (int)getpid(), msg);
    pthread_mutex_unlock(&g_log_mu);
}

double gt_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

struct timespec gt_time_after_ms(int clock, long ms)
{
    struct timespec ts;
    clock_gettime((clockid_t)clock, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    return ts;
}

int64_t gt_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void gt_str_init(gt_str *b) { memset(b, 0, sizeof *b); }

void gt_str_free(gt_str *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

int gt_str_append(gt_str *b, const char *data, size_t n)
{
    if (b->oom)
        return -1;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return -1;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->len, data, n);
    b->len += n;
    b->s[b->len] = '\0';
    return 0;
}

int gt_str_printf(gt_str *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    if ((size_t)n < sizeof small)
        return gt_str_append(b, small, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = 1;
        return -1;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = gt_str_append(b, big, (size_t)n);
    free(big);
    return rc;
}

char *gt_read_file(const char *path, size_t *len, size_t max)
{
    char *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    gt_str s;
    gt_str_init(&s);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (max && s.len + n > max) {
            errno = EFBIG;
            goto fail;
        }
        if (gt_str_append(&s, chunk, n) != 0) {
            errno = ENOMEM;
            goto fail;
        }
    }
    if (ferror(f))
        goto fail;
    fclose(f);
    if (!s.s) { /* empty file */
        s.s = calloc(1, 1);
        if (!s.s)
            return NULL;
    }
    if (len)
        *len = s.len;
    buf = s.s;
    return buf;
fail:
    fclose(f);
    gt_str_free(&s);
    return NULL;
}

int gt_write_file(const char *path, const void *data, size_t len)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp)
        return -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            goto fail;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0)
        goto fail;
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return -1;
}

int gt_mkdirs(const char *path, int mode)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, (mode_t)mode) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    if (mkdir(buf, (mode_t)mode) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

int gt_cache_dir(const char *sub, const char *env_sub, char *buf, size_t len)
{
    const char *d = getenv("GEMMTUNE_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"),
               *home = getenv("HOME");
    int n;
    if (d && *d)
        n = snprintf(buf, len, "%s%s%s", d, env_sub ? "/" : "", env_sub ? env_sub : "");
    else if (x && *x)
        n = snprintf(buf, len, "%s/gemmtune/%s", x, sub);
    else if (home && *home)
        n = snprintf(buf, len, "%s/.cache/gemmtune/%s", home, sub);
    else
        n = snprintf(buf, len, "/tmp/gemmtune-cache-%ld/%s", (long)getuid(), sub);
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return gt_mkdirs(buf, 0755);
}

int gt_run_argv(char *const argv[], char *out, size_t outcap, int timeout_ms)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0)
        return -1;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        /* The command (a compiler) dies with the thread that waits for it,
         * so a bench process killed mid-compile leaves nothing behind
         * writing into the cache. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(126);
        dup2(pfd[1], 1);
        dup2(pfd[1], 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t used = 0;
    double t0 = gt_mono_ms();
    int killed = 0;
    for (;;) {
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        int wait_ms = 200;
        int pr = poll(&p, 1, wait_ms);
        if (pr < 0 && errno != EINTR)
            break;
        if (pr > 0) {
            char tmp[4096];
            ssize_t r = read(pfd[0], tmp, sizeof tmp);
            if (r <= 0)
                break;
            if (out && outcap > 1 && used < outcap - 1) {
                size_t c = (size_t)r;
                if (c > outcap - 1 - used)
                    c = outcap - 1 - used;
                memcpy(out + used, tmp, c);
                used += c;
            }
        }
        if (timeout_ms > 0 && gt_mono_ms() - t0 > timeout_ms) {
            kill(pid, SIGKILL);
            killed = 1;
            break;
        }
    }
    close(pfd[0]);
    if (out && outcap)
        out[used] = '\0';
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    if (killed)
        return 128 + SIGKILL;
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return -1;
}

int gt_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE || *end != '\0')
        return -1;
    *out = (int64_t)v;
    return 0;
}

uint64_t gt_mix64(uint64_t x)
{
    uint64_t z = x + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t gt_rand_u64(uint64_t *s)
{
    uint64_t x = *s;
    *s += 0x9e3779b97f4a7c15ULL;
    return gt_mix64(x);
}

size_t gt_rand_below(uint64_t *s, size_t n)
{
    uint64_t lim = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do
        r = gt_rand_u64(s);
    while (r >= lim);
    return (size_t)(r % n);
}
