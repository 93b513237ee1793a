/* fuzz_log.c: libFuzzer target for every workload-log parser (common/gt_log.h).
 *
 * What it proves, for any byte string a client can POST as a log:
 *   - gt_log_parse, with the format detected or forced to each of hipblaslt,
 *     tunableop, cublaslt, csv and yaml, and with random skip_invalid /
 *     threshold / max_lines, never reads outside the input (the text is NOT
 *     NUL-terminated: ASan sees any over-read), never leaks, never hits UB;
 *   - its documented contract holds: accepted logs have >= 1 problem, every
 *     kept problem passes gt_problem_check, weights lie in [0,1] and sum to
 *     <= 1 (heaviest first), kept problems are distinct by key, the error list is
 *     bounded and its strings terminated, the forced format is reported;
 *   - an accepted problem survives the JSON round trip that ships it to a
 *     worker (gt_problem_to_json -> gt_problem_from_json, same key);
 *   - each line parser gt_log_line_* called directly on any single line
 *     returns -1, 0 or 1, fills an error message on -1, and yields a problem
 *     gt_problem_key / gt_problem_label can print on 1.
 *
 * Input layout: byte 0 selects the mode and options, the rest is the log.
 *   bits 0-2  0..5: gt_log_parse with format auto, hipblaslt, tunableop,
 *             cublaslt, csv, yaml;  6, 7: every line parser on every line
 *   bit  3    skip_invalid
 *   bits 4-5  threshold: 0, 0.5, 0.95, 1
 *   bits 6-7  max_lines: 0 (unlimited), 1, 3, 100
 * A violated contract calls abort(), which libFuzzer reports as a crash. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_log.h"
#include "gt_problem.h"
#include "gt_util.h"

#define FUZZ_REQUIRE(cond)                                                              \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "fuzz_log: contract violated at %s:%d: %s\n", __FILE__,     \
                    __LINE__, #cond);                                                   \
            abort();                                                                    \
        }                                                                               \
    } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* The parsers log nothing, but keep any future gt_info out of the way:
     * millions of stderr lines would dominate the run time. */
    gt_log_set_level(GT_LOG_ERR);
    return 0;
}

/* A string field must be terminated inside its array. */
static int terminated(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

/* Key and label must fit, terminate and be non-empty for any problem the
 * parsers produce, valid or not (errors quote them). */
static void print_problem(const gt_problem *p)
{
    char key[1024], label[256];
    int kn = gt_problem_key(p, key, sizeof key);
    int ln = gt_problem_label(p, label, sizeof label);
    FUZZ_REQUIRE(kn > 0 && terminated(key, sizeof key));
    FUZZ_REQUIRE(ln > 0 && terminated(label, sizeof label));
}

/* A problem the coordinator stored is sent to workers as JSON: the worker
 * must read back the same GEMM. */
static void round_trip(const gt_problem *p)
{
    cJSON *j = gt_problem_to_json(p);
    if (!j)
        return; /* out of memory is not a parser bug */
    gt_problem q;
    char err[256];
    int rc = gt_problem_from_json(j, &q, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "fuzz_log: round trip refused: %s\n", err);
    FUZZ_REQUIRE(rc == 0);
    char k1[1024], k2[1024];
    gt_problem_key(p, k1, sizeof k1);
    gt_problem_key(&q, k2, sizeof k2);
    if (strcmp(k1, k2))
        fprintf(stderr, "fuzz_log: round trip changed the key:\n  %s\n  %s\n", k1, k2);
    FUZZ_REQUIRE(strcmp(k1, k2) == 0);
    FUZZ_REQUIRE(q.call_count == p->call_count);
    cJSON_Delete(j);
}

static void check_result(const gt_log_result *res, int rc, const gt_log_opts *o)
{
    FUZZ_REQUIRE(rc == 0 || rc == -1);
    if (o->format != GT_LOG_AUTO)
        FUZZ_REQUIRE(res->format == o->format);
    FUZZ_REQUIRE(res->nproblems <= res->cap || res->nproblems == 0);
    FUZZ_REQUIRE(res->gemm_lines <= res->lines);
    if (o->max_lines)
        FUZZ_REQUIRE(res->lines <= o->max_lines);
    size_t kept = res->nerrors < GT_LOG_MAX_ERRORS ? res->nerrors : GT_LOG_MAX_ERRORS;
    for (size_t i = 0; i < kept; i++) {
        const gt_log_error *e = &res->errors[i];
        FUZZ_REQUIRE(terminated(e->field, sizeof e->field));
        FUZZ_REQUIRE(terminated(e->msg, sizeof e->msg));
        FUZZ_REQUIRE(e->msg[0] != '\0'); /* every error says something */
        FUZZ_REQUIRE(e->line >= 0);
    }
    if (rc == 0) {
        FUZZ_REQUIRE(res->nproblems >= 1);
        FUZZ_REQUIRE(o->skip_invalid || res->nerrors == 0);
    } else {
        FUZZ_REQUIRE(res->nerrors >= 1); /* a rejection always says why */
    }
    double wsum = 0, prev = INFINITY;
    for (size_t i = 0; i < res->nproblems; i++) {
        const gt_problem *p = &res->problems[i];
        char err[256];
        if (gt_problem_check(p, err, sizeof err))
            fprintf(stderr, "fuzz_log: kept problem %zu invalid: %s\n", i, err);
        FUZZ_REQUIRE(gt_problem_check(p, err, sizeof err) == 0);
        FUZZ_REQUIRE(p->call_count >= 1);
        FUZZ_REQUIRE(p->weight >= 0 && p->weight <= 1 + 1e-9);
        FUZZ_REQUIRE(p->weight <= prev); /* heaviest first */
        prev = p->weight;
        wsum += p->weight;
        print_problem(p);
        /* Every kept problem is distinct (identical GEMMs were merged).
         * Quadratic, so only on small results. */
        if (res->nproblems <= 64) {
            char a[1024], b[1024];
            gt_problem_key(p, a, sizeof a);
            for (size_t j = i + 1; j < res->nproblems; j++) {
                gt_problem_key(&res->problems[j], b, sizeof b);
                FUZZ_REQUIRE(strcmp(a, b) != 0);
            }
        }
        if (i < 8)
            round_trip(p);
    }
    FUZZ_REQUIRE(wsum <= 1 + 1e-6);
}

/* Mode 6/7: each line, NUL-terminated in a buffer of its exact size (so an
 * over-read past the terminator is caught), through every line parser. */
static void fuzz_lines(const char *text, size_t len)
{
    typedef int (*line_fn)(const char *, gt_problem *, gt_log_error *);
    static const line_fn fns[] = {gt_log_line_hipblaslt, gt_log_line_tunableop,
                                  gt_log_line_cublaslt, gt_log_line_csv, gt_log_line_yaml};
    size_t pos = 0;
    while (pos <= len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        char *line = malloc(n + 1);
        if (!line)
            return;
        memcpy(line, text + pos, n);
        line[n] = '\0';
        for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++) {
            gt_problem p;
            gt_log_error e;
            memset(&e, 0, sizeof e);
            int r = fns[f](line, &p, &e);
            FUZZ_REQUIRE(r == -1 || r == 0 || r == 1);
            if (r < 0) {
                FUZZ_REQUIRE(terminated(e.field, sizeof e.field));
                FUZZ_REQUIRE(terminated(e.msg, sizeof e.msg));
            } else if (r == 1) {
                char err[256];
                /* The driver checks each problem; here only that checking,
                 * keying and labelling any parser output is safe. */
                err[0] = '\0';
                if (gt_problem_check(&p, err, sizeof err))
                    FUZZ_REQUIRE(err[0] != '\0' && terminated(err, sizeof err));
                print_problem(&p);
            }
        }
        free(line);
        if (!nl)
            break;
        pos += n + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t b0 = data[0];
    /* libFuzzer's buffer is heap memory of exactly size bytes: the log text
     * runs to its very end, with no terminator after it. */
    const char *text = (const char *)data + 1;
    size_t len = size - 1;

    /* Detection alone must be safe on any text (also run by the driver). */
    gt_log_format d = gt_log_detect(text, len);
    FUZZ_REQUIRE(d >= GT_LOG_AUTO && d <= GT_LOG_YAML);

    unsigned mode = b0 & 7;
    if (mode >= 6) {
        fuzz_lines(text, len);
        return 0;
    }
    static const double thresholds[] = {0, 0.5, 0.95, 1.0};
    static const size_t max_lines[] = {0, 1, 3, 100};
    gt_log_opts o;
    memset(&o, 0, sizeof o);
    o.format = (gt_log_format)mode; /* 0..5 are AUTO, HIPBLASLT, ..., YAML */
    o.skip_invalid = (b0 >> 3) & 1;
    o.threshold = thresholds[(b0 >> 4) & 3];
    o.max_lines = max_lines[(b0 >> 6) & 3];

    gt_log_result res;
    int rc = gt_log_parse(text, len, &o, &res);
    check_result(&res, rc, &o);
    gt_log_result_free(&res);
    return 0;
}
