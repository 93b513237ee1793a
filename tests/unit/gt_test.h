/* gt_test.h: a minimal test harness. Each CHECK counts; a failed CHECK prints
 * file:line and the expression and the test exits non-zero at the end. */
#ifndef GT_TEST_H
#define GT_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern int gt_test_failures;
extern int gt_test_checks;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        gt_test_checks++;                                                                          \
        if (!(cond)) {                                                                             \
            gt_test_failures++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);              \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        gt_test_checks++;                                                                          \
        if (!(cond)) {                                                                             \
            gt_test_failures++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);              \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* Runs one named test function and reports it. */
#define RUN(fn)                                                                                    \
    do {                                                                                           \
        int before_ = gt_test_failures;                                                            \
        fn();                                                                                      \
        fprintf(stderr, "%s %s\n", gt_test_failures == before_ ? "ok  " : "FAIL", #fn);            \
    } while (0)

/* Sections. A test with sections that need a GPU (or hipRTC) takes
 *   (none)  every section that can run here: on a GPU machine CPU and GPU
 *           sections, as it always did;
 *   --cpu   the CPU sections only (its plain ctest entry);
 *   --gpu   the GPU sections only (its <name>_gpu ctest entry), exiting
 *           GT_TEST_SKIP when one of them could not run here, so that a CPU
 *           machine reports the entry skipped instead of passed.
 * gt_test_mode parses argv (exits 2 on anything else); gt_test_cpu and
 * gt_test_gpu say whether this run does that kind of section; a GPU section
 * that cannot run calls gt_test_skip with its reason. */
#define GT_TEST_SKIP 77 /* ctest's SKIP_RETURN_CODE */
void gt_test_mode(int argc, char **argv);
int gt_test_cpu(void);
int gt_test_gpu(void);
void gt_test_skip(const char *section, const char *why);

/* Prints the summary; returns the process exit code. Fails when a check
 * failed or nothing was checked; with --gpu, GT_TEST_SKIP when a section
 * was skipped and none failed. */
int gt_test_done(void);
/* A fresh folder /tmp/gt-<tag>.XXXXXX in buf (len >= 32): 0, or -1 after
 * printing why. gt_test_rmdir removes it (0, or -1 after printing why);
 * gt_test_done_rm: gt_test_done, and the folder removed when every check
 * passed (kept to look at otherwise). */
int gt_test_tmpdir(char *buf, size_t len, const char *tag);
int gt_test_rmdir(const char *dir);
int gt_test_done_rm(const char *dir);
/* Path of a file in tests/data (GT_TEST_DATA), in a static buffer. */
const char *gt_test_data(const char *name);

struct sqlite3;
struct gt_store;
/* Runs SQL on db: 0, or -1 after printing the error and the statement's
 * start. The second form holds the store's lock around it (a live store). */
int gt_test_sql(struct sqlite3 *db, const char *sql);
int gt_test_store_sql(struct gt_store *s, const char *sql);

/* A run created the way POST /v1/runs does it: planned (gt_plan_run), then
 * written (gt_store_create_run). Returns what the failing step returned (0
 * when both succeeded), with err. */
struct gt_run_opts;
struct gt_log_result;
struct gt_run_created;
int gt_test_create_run(struct gt_store *s, const struct gt_run_opts *o,
                       const struct gt_log_result *log, struct gt_run_created *out, char *err,
                       size_t errlen);

/* One run of log (a size list) in s with the options given as name/value
 * pairs (backend cpu unless named), created as gt_test_create_run does;
 * *cr (may be NULL) gets what was created. 0, or -1 after a failed check.
 * gt_test_store_with_run: the same in a new store at dir/c.db (NULL after a
 * failed check). */
int gt_test_add_run(struct gt_store *s, const char *log, const char *const (*opts)[2], size_t nopts,
                    struct gt_run_created *cr);
struct gt_store *gt_test_store_with_run(const char *dir, const char *log, const char *const (*opts)[2],
                                        size_t nopts, struct gt_run_created *cr);
/* A simulated cpu worker ("Sim CPU", units cores) registered on host: its
 * id, or 0 after a failed check. */
int64_t gt_test_sim_worker(struct gt_store *s, const char *host, int units);
/* A simulated cuda worker ("Sim GPU", process pid) registered on host: its
 * id, or 0 after a failed check. */
int64_t gt_test_sim_gpu_worker(struct gt_store *s, const char *host, int pid);
/* The first column of the first row of sql as an integer, -1 when none. */
long long gt_test_int(struct gt_store *s, const char *sql);

/* A worker's "results" message reported the way the dispatcher does it
 * (gt_dispatch_decode_report, then gt_store_report): the store tests build
 * messages as JSON. Returns what gt_store_report returns, or -1 with err for
 * a message that does not decode. */
struct cJSON;
/* One valid result of a results message: cfg's config (copied), the baseline
 * flag, time_us us, rel_err 1e-6, an empty reason. */
struct cJSON *gt_test_result(const struct cJSON *cfg, int is_baseline, double us);
/* A paired final's figures on result x: rounds, uplift and its interval. */
void gt_test_paired(struct cJSON *x, int rounds, double up, double lo, double hi);
/* A results message's own timing of the baseline, base's config (copied) at
 * us, into msg. */
void gt_test_baseline(struct cJSON *msg, const struct cJSON *base, double us);
/* 1 when a and b are the same config (gt_cfg_hash). */
int gt_test_same_cfg(const struct cJSON *a, const struct cJSON *b);
int gt_test_report(struct gt_store *s, int64_t worker_id, const struct cJSON *msg, int64_t now_ms,
                   int64_t lease_ms, int *cancelled, size_t *accepted, size_t *rejected, char *err,
                   size_t errlen);

/* A raw worker connection to a dispatcher (tests of the worker endpoint):
 * an nng req socket dialled to url with 60 s timeouts (exits the test
 * when it cannot); a JSON text sent; the next reply parsed (NULL: none);
 * the two in one (the text from a printf format). */
#include <nng/nng.h>
nng_socket gt_test_dial(const char *url);
int gt_test_send(nng_socket s, const char *txt);
struct cJSON *gt_test_recv(nng_socket s);
struct cJSON *gt_test_req(nng_socket s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
