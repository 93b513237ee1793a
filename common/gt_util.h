/* gt_util.h: small helpers shared by every binary: logging, clocks, growable
 * strings, whole-file reads and process spawning without a shell. */
#ifndef GT_UTIL_H
#define GT_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* ---- logging: one structured line per event on stderr ---- */
typedef enum { GT_LOG_DEBUG = 0, GT_LOG_INFO, GT_LOG_WARN, GT_LOG_ERR } gt_loglevel;
void gt_log_set_level(gt_loglevel l);
void gt_log_set_name(const char *prog);
void gt_logf(gt_loglevel l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define gt_debug(...) gt_logf(GT_LOG_DEBUG, __VA_ARGS__)
#define gt_info(...) gt_logf(GT_LOG_INFO, __VA_ARGS__)
#define gt_warn(...) gt_logf(GT_LOG_WARN, __VA_ARGS__)
#define gt_err(...) gt_logf(GT_LOG_ERR, __VA_ARGS__)

/* ---- clocks ---- */
double gt_mono_ms(void);        /* CLOCK_MONOTONIC in ms */
int64_t gt_wall_ms(void);       /* Unix time in ms */
/* The time ms milliseconds from now on clock (CLOCK_REALTIME for a
 * condition variable's default clock): a pthread_cond_timedwait deadline. */
struct timespec gt_time_after_ms(int clock, long ms);

/* ---- growable string ---- */
typedef struct gt_str {
    char *s;
    size_t len, cap;
    int oom;                    /* set once an append failed; s stays valid */
} gt_str;
void gt_str_init(gt_str *b);
void gt_str_free(gt_str *b);
int gt_str_append(gt_str *b, const char *data, size_t n);
int gt_str_printf(gt_str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reads a whole file; returns malloc'd NUL-terminated data (caller frees) and
 * its length, or NULL with errno set. max: refuse larger files (0: no limit). */
char *gt_read_file(const char *path, size_t *len, size_t max);
/* Writes data to path atomically (temp file + rename). 0 or -1. */
int gt_write_file(const char *path, const void *data, size_t len);
/* mkdir -p. 0 or -1. */
int gt_mkdirs(const char *path, int mode);
/* The directory of one of gemmtune's disk caches (sub: "cpu", "cuda"),
 * created: $GEMMTUNE_CACHE_DIR (itself when env_sub is NULL, else env_sub
 * below it), else $XDG_CACHE_HOME/gemmtune/<sub>, else
 * $HOME/.cache/gemmtune/<sub>, else /tmp/gemmtune-cache-<uid>/<sub>;
 * resolved at every call, so a test (or an operator) can move it with
 * setenv. 0, or -1 with errno (ENAMETOOLONG: it does not fit buf). */
int gt_cache_dir(const char *sub, const char *env_sub, char *buf, size_t len);

/* Runs argv[0] with argv (no shell), waits, collects up to outcap-1 bytes of
 * combined stdout/stderr into out. Returns the exit status (0..255), 128+sig
 * when killed by a signal, or -1 when it could not start. timeout_ms > 0 kills
 * the child when it runs longer. */
int gt_run_argv(char *const argv[], char *out, size_t outcap, int timeout_ms);

/* Parses a decimal int64 strictly (whole string, range checked). 0 or -1. */
int gt_parse_i64(const char *s, int64_t *out);

/* splitmix64: a seeded, reproducible stream (the searches' samples, the CPU
 * backend's test data); not for anything secret. */
uint64_t gt_rand_u64(uint64_t *state);
/* splitmix64's output for state x, as a hash of x (seeds, sampled
 * positions): gt_rand_u64's next value when *state is x. */
uint64_t gt_mix64(uint64_t x);
/* Unbiased integer in [0, n), n > 0 (rejection, no modulo bias). */
size_t gt_rand_below(uint64_t *state, size_t n);

#endif
