/* run_opts.c: a run's options (gt_run_opts.h): defaults, the accepted
 * values of each, the rules between them, and their stored form. Every
 * default is written here once: what reads a stored run's options reads
 * them back into the struct (gt_run_opts_from_stored) instead of restating
 * one. */
#include "gt_run_opts.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gt_policy.h"
#include "gt_util.h"

void gt_run_opts_default(gt_run_opts *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->backend, sizeof o->backend, "cpu");
    o->strategy = GT_STRAT_EXHAUSTIVE;
    o->budget = 32;
    o->shard_size = 8;
    o->final_k = 4;
    /* the best generated config of a prefill GEMM screens 1-10 % behind
     * cuBLASLt's best (the H200's Llama shapes, bench/results/
     * h200_47_family_finals.txt): 1.25 takes such a family into the final,
     * not one the screen found clearly slower */
    o->final_family_ratio = 1.25;
    o->final_rounds = GT_FINAL_ROUNDS;
    o->final_ci = GT_FINAL_CI_WIDTH;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    o->ncpu = n > 0 ? (int)n : 1;
    o->seed = 1;
    o->min_time_ms = 2.0;
    o->repeats = 5;
    o->warmup = 2;
    o->log.format = GT_LOG_AUTO;
    o->log.threshold = 0;
    o->log.skip_invalid = 0;
}

void gt_run_opts_fini(gt_run_opts *o)
{
    free(o->candidates);
    o->candidates = NULL;
}

static int parse_int_opt(const char *key, const char *v, long long lo, long long hi, long long *out,
                         char *err, size_t errlen)
{
    int64_t x;
    if (gt_parse_i64(v, &x) || x < lo || x > hi) {
        snprintf(err, errlen, "option %s=%s: must be an integer in [%lld, %lld]", key, v, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

static int parse_bool_opt(const char *key, const char *v, int *out, char *err, size_t errlen)
{
    if (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes")) {
        *out = 1;
        return 0;
    }
    if (!strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no")) {
        *out = 0;
        return 0;
    }
    snprintf(err, errlen, "option %s=%s: must be true or false", key, v);
    return -1;
}

int gt_run_opts_set(gt_run_opts *o, const char *key, const char *v, char *err, size_t errlen)
{
    long long x;
    /* The integer options: name, accepted range, field. */
    const struct {
        const char *name;
        long long lo, hi;
        int *dst;
    } ints[] = {
        {"budget", 0, 1000000, &o->budget}, {"shard_size", 1, 100000, &o->shard_size},
        {"final_k", 1, 64, &o->final_k},    {"ncpu", 1, 4096, &o->ncpu},
        /* at least the rounds a 95 % interval of a median needs */
        {"final_rounds", 6, GT_FINAL_ROUNDS_MAX, &o->final_rounds},
        {"repeats", 1, 1000, &o->repeats},  {"warmup", 0, 1000, &o->warmup},
        {"population", 0, 100000, &o->population}, {"generations", 0, 100000, &o->generations},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (strcmp(key, ints[i].name))
            continue;
        if (parse_int_opt(key, v, ints[i].lo, ints[i].hi, &x, err, errlen))
            return -1;
        *ints[i].dst = (int)x;
        return 0;
    }
    if (!strcmp(key, "name")) {
        if (strlen(v) >= sizeof o->name) {
            snprintf(err, errlen, "option name: longer than %zu characters", sizeof o->name - 1);
            return -1;
        }
        snprintf(o->name, sizeof o->name, "%s", v);
    } else if (!strcmp(key, "backend")) {
        if (strcmp(v, "cpu") && strcmp(v, "cuda") && strcmp(v, "hip")) {
            snprintf(err, errlen, "option backend=%s: must be cpu, cuda or hip", v);
            return -1;
        }
        snprintf(o->backend, sizeof o->backend, "%s", v);
    } else if (!strcmp(key, "device_model")) {
        if (strlen(v) >= sizeof o->device_model) {
            snprintf(err, errlen, "option device_model: too long");
            return -1;
        }
        snprintf(o->device_model, sizeof o->device_model, "%s", v);
    } else if (!strcmp(key, "strategy")) {
        if (gt_strategy_parse(v, &o->strategy)) {
            snprintf(err, errlen, "option strategy=%s: must be exhaustive, random or evolutionary",
                     v);
            return -1;
        }
    } else if (!strcmp(key, "format")) {
        if (gt_log_format_parse(v, &o->log.format)) {
            snprintf(err, errlen,
                     "option format=%s: must be auto, hipblaslt, tunableop, cublaslt, csv or yaml", v);
            return -1;
        }
    } else if (!strcmp(key, "seed")) {
        if (parse_int_opt(key, v, 0, INT64_MAX, &x, err, errlen))
            return -1;
        o->seed = (uint64_t)x;
    } else if (!strcmp(key, "launch")) {
        if (strcmp(v, "plain") && strcmp(v, "chained") && strcmp(v, "graph")) {
            snprintf(err, errlen, "option launch=%s: must be plain, chained or graph", v);
            return -1;
        }
        o->chained = !strcmp(v, "chained");
        o->graph = !strcmp(v, "graph");
    } else if (!strcmp(key, "skip_invalid")) {
        return parse_bool_opt(key, v, &o->log.skip_invalid, err, errlen);
    } else if (!strcmp(key, "final_ci")) {
        char *end;
        double d = strtod(v, &end);
        if (*v == '\0' || *end != '\0' || !isfinite(d) || d < 0 || d > 1) {
            snprintf(err, errlen, "option final_ci=%s: must be a number in [0, 1] (0: run final_rounds)",
                     v);
            return -1;
        }
        o->final_ci = d;
    } else if (!strcmp(key, "final_family_ratio")) {
        char *end;
        double d = strtod(v, &end);
        /* below 1 no family but the fastest's could qualify; past 10 the
         * screen's verdict is no bias but a real gap */
        if (*v == '\0' || *end != '\0' || !isfinite(d) || (d != 0 && (d < 1 || d > 10))) {
            snprintf(err, errlen,
                     "option final_family_ratio=%s: must be 0 (off) or a number in [1, 10]", v);
            return -1;
        }
        o->final_family_ratio = d;
    } else if (!strcmp(key, "threshold") || !strcmp(key, "min_time_ms")) {
        char *end;
        double d = strtod(v, &end);
        int bad = *v == '\0' || *end != '\0' || !isfinite(d);
        if (!strcmp(key, "threshold")) {
            if (bad || d < 0 || d > 1) {
                snprintf(err, errlen, "option threshold=%s: must be a number in [0, 1]", v);
                return -1;
            }
            o->log.threshold = d;
        } else {
            if (bad || d <= 0 || d > 10000) {
                snprintf(err, errlen, "option min_time_ms=%s: must be a number in (0, 10000]", v);
                return -1;
            }
            o->min_time_ms = d;
        }
    } else {
        snprintf(err, errlen, "unknown option %s", key);
        return -1;
    }
    return 0;
}

int gt_run_opts_check(const gt_run_opts *o, char *err, size_t errlen)
{
    if (o->chained && strcmp(o->backend, "cuda")) {
        snprintf(err, errlen, "option launch=chained: only backend cuda launches chained "
                              "(programmatic dependent launch, sm_90 or newer); this run's backend is %s",
                 o->backend);
        return -1;
    }
    if (o->graph && strcmp(o->backend, "cuda")) {
        snprintf(err, errlen, "option launch=graph: only backend cuda times in CUDA graphs; "
                              "this run's backend is %s",
                 o->backend);
        return -1;
    }
    return 0;
}

const char *gt_run_opts_launch(const gt_run_opts *o)
{
    return o->graph ? "graph" : o->chained ? "chained" : "plain";
}

/* A scalar JSON value as the text gt_run_opts_set reads. 0, or -1 with err
 * (not a scalar, too long). */
static int value_text(const cJSON *it, char *buf, size_t len, char *err, size_t errlen)
{
    if (cJSON_IsString(it)) {
        if (strlen(it->valuestring) >= len) {
            snprintf(err, errlen, "option %s: value too long", it->string);
            return -1;
        }
        snprintf(buf, len, "%s", it->valuestring);
    } else if (cJSON_IsBool(it)) {
        snprintf(buf, len, "%s", cJSON_IsTrue(it) ? "true" : "false");
    } else if (cJSON_IsNumber(it)) {
        if (it->valuedouble == floor(it->valuedouble) && fabs(it->valuedouble) < 9e15)
            snprintf(buf, len, "%lld", (long long)it->valuedouble);
        else
            snprintf(buf, len, "%.17g", it->valuedouble);
    } else {
        snprintf(err, errlen, "option %s: must be a string, number or boolean", it->string);
        return -1;
    }
    return 0;
}

/* Option "candidates": extra configs to try on every problem (e.g. a config
 * known from elsewhere); each must be an object, checked by the backend. */
static int set_candidates(gt_run_opts *o, const cJSON *it, char *err, size_t errlen)
{
    const cJSON *c;
    if (!cJSON_IsArray(it)) {
        snprintf(err, errlen, "option candidates: must be an array of config objects");
        return -1;
    }
    cJSON_ArrayForEach(c, it)
    {
        if (!cJSON_IsObject(c)) {
            snprintf(err, errlen, "option candidates: every entry must be an object");
            return -1;
        }
    }
    free(o->candidates);
    o->candidates = cJSON_PrintUnformatted(it);
    if (!o->candidates) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int gt_run_opts_from_json(gt_run_opts *o, const cJSON *j, char *err, size_t errlen)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, j)
    {
        if (!strcmp(it->string, "log"))
            continue;
        if (!strcmp(it->string, "candidates")) {
            if (set_candidates(o, it, err, errlen))
                return -1;
            continue;
        }
        char buf[256];
        if (value_text(it, buf, sizeof buf, err, errlen) ||
            gt_run_opts_set(o, it->string, buf, err, errlen))
            return -1;
    }
    return 0;
}

cJSON *gt_run_opts_to_stored(const gt_run_opts *o)
{
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    int ok = cJSON_AddNumberToObject(j, "shard_size", o->shard_size) &&
             cJSON_AddNumberToObject(j, "final_k", o->final_k) &&
             cJSON_AddNumberToObject(j, "final_family_ratio", o->final_family_ratio) &&
             cJSON_AddNumberToObject(j, "final_rounds", o->final_rounds) &&
             cJSON_AddNumberToObject(j, "final_ci", o->final_ci) &&
             cJSON_AddNumberToObject(j, "ncpu", o->ncpu) &&
             cJSON_AddNumberToObject(j, "seed", (double)o->seed) &&
             cJSON_AddNumberToObject(j, "min_time_ms", o->min_time_ms) &&
             cJSON_AddNumberToObject(j, "repeats", o->repeats) &&
             cJSON_AddNumberToObject(j, "warmup", o->warmup) &&
             cJSON_AddNumberToObject(j, "population", o->population) &&
             cJSON_AddNumberToObject(j, "generations", o->generations) &&
             cJSON_AddNumberToObject(j, "threshold", o->log.threshold) &&
             cJSON_AddBoolToObject(j, "skip_invalid", o->log.skip_invalid) &&
             cJSON_AddStringToObject(j, "launch", gt_run_opts_launch(o));
    if (ok && o->candidates) {
        cJSON *c = cJSON_Parse(o->candidates);
        ok = c != NULL;
        if (c)
            cJSON_AddItemToObject(j, "candidates", c);
    }
    if (!ok) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

int gt_run_opts_from_stored(gt_run_opts *o, const char *options)
{
    gt_run_opts_default(o);
    cJSON *j = options && *options ? cJSON_Parse(options) : NULL;
    const cJSON *it;
    int rc = 0;
    char err[256];
    cJSON_ArrayForEach(it, j)
    {
        if (!it->string)
            continue;
        if (!strcmp(it->string, "candidates")) {
            if (set_candidates(o, it, err, sizeof err) && !strcmp(err, "out of memory"))
                rc = -1;
            continue;
        }
        /* The seed is stored as a JSON number, exact up to 2^53 and read back
         * the same every time (all a seeded search needs), but it may be
         * any 64-bit value, which the text path's integer check refuses
         * above 9e15. */
        if (!strcmp(it->string, "seed")) {
            if (cJSON_IsNumber(it) && it->valuedouble >= 0 && it->valuedouble < 1.8e19)
                o->seed = (uint64_t)it->valuedouble;
            continue;
        }
        char buf[256];
        if (value_text(it, buf, sizeof buf, err, sizeof err) == 0)
            (void)gt_run_opts_set(o, it->string, buf, err, sizeof err); /* refused: default */
    }
    cJSON_Delete(j);
    if (rc) {
        gt_run_opts_fini(o);
        gt_run_opts_default(o);
    }
    return rc;
}
