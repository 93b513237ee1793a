/* fuzz_proto.c: libFuzzer target for the coordinator <-> worker protocol
 * decoder and every JSON reader behind it (proto/gt_proto.h,
 * common/gt_problem.h, common/gt_config.h, server/gt_run_opts.h,
 * server/gt_dispatch.h).
 *
 * What it proves, for any bytes a peer can send on the nng socket (the
 * buffer is exactly the message: not NUL-terminated, ASan sees over-reads):
 *   - gt_proto_decode never crashes, leaks or hits UB; on success the message
 *     is an object with v == 1 and a string type, on failure err says why;
 *   - gt_proto_result_from_json on every element of a "results" array (and
 *     on the "baseline" of a results message): never trusts the valid flag
 *     alone (valid implies finite positive time_us and finite rel_err), and
 *     r->config points to an object;
 *   - gt_problem_from_json on every object of the message (a job's
 *     "problem", but also anything else a peer puts there): on success the
 *     problem passes gt_problem_check, can be keyed and labelled, and
 *     survives gt_problem_to_json -> gt_problem_from_json with the same key;
 *   - gt_cfg_canonical / gt_cfg_hash on every object (configs, candidates,
 *     baseline_config): the canonical text is valid JSON, is a fixed point
 *     (canonicalising it again gives the same text), is the same after the
 *     print/parse trip a config makes between coordinator and worker, and
 *     the hash is FNV-1a 64 of that text as 16 hex digits;
 *   - gt_run_opts_from_json on every object (the POST /v1/runs JSON body):
 *     accepted options stay inside their documented ranges, and their
 *     stored form reads back the same (gt_run_opts_from_stored);
 *   - gt_dispatch_decode_report on a "results" message (what the store is
 *     handed): canonical configs with their hashes, valid only when timed;
 *   - gt_gen_dev_from_json on every object (a register message's
 *     "gen_device"): an accepted device is inside gen_dev.c's ranges and
 *     survives gt_gen_dev_to_json -> gt_gen_dev_from_json unchanged.
 * The walk covers objects the decoder rejects too (no "v", other types), so
 * the readers are fuzzed even where the envelope is wrong. A violated
 * contract calls abort(), which libFuzzer reports as a crash. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_dev.h"
#include "gt_config.h"
#include "gt_dispatch.h"
#include "gt_problem.h"
#include "gt_proto.h"
#include "gt_store.h"
#include "gt_util.h"

#define FUZZ_REQUIRE(cond)                                                              \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "fuzz_proto: contract violated at %s:%d: %s\n", __FILE__,   \
                    __LINE__, #cond);                                                   \
            abort();                                                                    \
        }                                                                               \
    } while (0)

/* Objects examined per input: a 4 KiB input holds ~2000 "{}"; every reader
 * runs on each, which keeps the target fast without missing structure. */
#define MAX_OBJECTS 4096

static int skip_known; /* GT_FUZZ_SKIP_KNOWN=1: see hits_default_ld_overflow */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    gt_log_set_level(GT_LOG_ERR);
    const char *k = getenv("GT_FUZZ_SKIP_KNOWN");
    skip_known = k && !strcmp(k, "1");
    if (skip_known)
        fprintf(stderr, "fuzz_proto: GT_FUZZ_SKIP_KNOWN=1: known bugs of tests/fuzz/crashes/proto are skipped\n");
    return 0;
}

static int terminated(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

/* Known bugs, reported with a reproducer in tests/fuzz/crashes/proto/: with
 * GT_FUZZ_SKIP_KNOWN=1 in the environment the inputs that hit them are kept
 * away from the reader, so a long campaign can look past them for others.
 * Off by default: until the bug is fixed, CI must keep failing on it.
 * (skip_known is set in LLVMFuzzerInitialize.) */

/* crashes/proto/ub-problem-default-ld-overflow.json: gt_problem_from_json
 * accepts sizes up to 9e15 and calls gt_problem_default_ld before
 * gt_problem_check, which multiplies them (common/problem.c:102-105) when
 * batch > 1: signed overflow once |m|, |n| or |k| reach 2^31. */
static int hits_default_ld_overflow(const cJSON *obj)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(obj, "batch");
    if (!cJSON_IsNumber(b) || !(b->valuedouble > 1))
        return 0;
    static const char *const dims[] = {"m", "n", "k"};
    for (size_t i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, dims[i]);
        if (cJSON_IsNumber(v) && fabs(v->valuedouble) >= 2147483648.0)
            return 1;
    }
    return 0;
}

static void fuzz_problem(const cJSON *obj)
{
    if (skip_known && cJSON_IsObject(obj) && hits_default_ld_overflow(obj))
        return;
    gt_problem p;
    char err[256];
    err[0] = '\0';
    if (gt_problem_from_json(obj, &p, err, sizeof err) != 0) {
        FUZZ_REQUIRE(err[0] != '\0' && terminated(err, sizeof err));
        return;
    }
    char chk[256];
    FUZZ_REQUIRE(gt_problem_check(&p, chk, sizeof chk) == 0);
    char key[1024], label[256];
    FUZZ_REQUIRE(gt_problem_key(&p, key, sizeof key) > 0);
    FUZZ_REQUIRE(gt_problem_label(&p, label, sizeof label) > 0);
    FUZZ_REQUIRE(terminated(p.activation, sizeof p.activation));
    /* The coordinator stores what it read and sends it on to workers. */
    cJSON *j = gt_problem_to_json(&p);
    if (!j)
        return;
    gt_problem q;
    int rc = gt_problem_from_json(j, &q, err, sizeof err);
    if (rc)
        fprintf(stderr, "fuzz_proto: problem round trip refused: %s\n", err);
    FUZZ_REQUIRE(rc == 0);
    char key2[1024];
    gt_problem_key(&q, key2, sizeof key2);
    if (strcmp(key, key2))
        fprintf(stderr, "fuzz_proto: problem round trip changed the key:\n  %s\n  %s\n", key, key2);
    FUZZ_REQUIRE(strcmp(key, key2) == 0);
    cJSON_Delete(j);
}

static char *canonical_of_text(const char *txt)
{
    cJSON *j = cJSON_Parse(txt);
    if (!j)
        return NULL;
    char *c = gt_cfg_canonical(j);
    cJSON_Delete(j);
    return c;
}

static void fuzz_config(const cJSON *obj)
{
    char hash[17];
    memset(hash, 'x', sizeof hash);
    int hrc = gt_cfg_hash(obj, hash);
    char *canon = gt_cfg_canonical(obj);
    /* Both fail together: the hash is defined on the canonical text. */
    FUZZ_REQUIRE((hrc == 0) == (canon != NULL));
    if (!canon) {
        FUZZ_REQUIRE(hash[0] == '\0');
        return;
    }
    char want[17];
    snprintf(want, sizeof want, "%016" PRIx64, gt_fnv1a64(canon, strlen(canon), GT_FNV_SEED));
    FUZZ_REQUIRE(strcmp(hash, want) == 0);

    /* Canonical text is JSON, and canonicalising it again changes nothing. */
    char *again = canonical_of_text(canon);
    if (!again || strcmp(canon, again))
        fprintf(stderr, "fuzz_proto: canonical text not a fixed point:\n  %s\n  %s\n", canon,
                again ? again : "(did not parse)");
    FUZZ_REQUIRE(again && strcmp(canon, again) == 0);
    free(again);

    /* A config travels as cJSON_PrintUnformatted text (job message, store
     * column) and is canonicalised at the other end: same text, same hash. */
    char *sent = cJSON_PrintUnformatted(obj);
    if (sent) {
        char *recv = canonical_of_text(sent);
        if (recv && strcmp(canon, recv))
            fprintf(stderr, "fuzz_proto: canonical text changed in transit:\n  %s\n  %s\n", canon,
                    recv);
        FUZZ_REQUIRE(!recv || strcmp(canon, recv) == 0);
        free(recv);
        cJSON_free(sent);
    }
    free(canon);
}

static void fuzz_result(const cJSON *obj)
{
    gt_result r;
    char err[256];
    err[0] = '\0';
    if (gt_proto_result_from_json(obj, &r, err, sizeof err) != 0) {
        FUZZ_REQUIRE(err[0] != '\0' && terminated(err, sizeof err));
        return;
    }
    FUZZ_REQUIRE(cJSON_IsObject(r.config));
    FUZZ_REQUIRE(terminated(r.reason, sizeof r.reason));
    FUZZ_REQUIRE(r.valid == 0 || r.valid == 1);
    /* The coordinator ranks by time: a valid result must be a measurement. */
    if (r.valid)
        FUZZ_REQUIRE(isfinite(r.time_us) && r.time_us > 0 && isfinite(r.rel_err));
    cJSON *back = gt_proto_result_to_json(&r);
    cJSON_Delete(back);
}

static void fuzz_run_opts(const cJSON *obj)
{
    gt_run_opts o;
    gt_run_opts_default(&o);
    char err[256];
    err[0] = '\0';
    if (gt_run_opts_from_json(&o, obj, err, sizeof err) != 0) {
        FUZZ_REQUIRE(err[0] != '\0' && terminated(err, sizeof err));
        /* A "candidates" array read before the bad option stays owned by
         * o, exactly as in server/http_runs.c. */
        gt_run_opts_fini(&o);
        return;
    }
    /* The ranges of README.md's run options (server/run_opts.c enforces them). */
    FUZZ_REQUIRE(terminated(o.name, sizeof o.name));
    FUZZ_REQUIRE(terminated(o.backend, sizeof o.backend));
    FUZZ_REQUIRE(terminated(o.device_model, sizeof o.device_model));
    FUZZ_REQUIRE(!strcmp(o.backend, "cpu") || !strcmp(o.backend, "cuda") ||
                 !strcmp(o.backend, "hip"));
    FUZZ_REQUIRE(o.budget >= 0 && o.shard_size >= 1 && o.final_k >= 1 && o.ncpu >= 1);
    FUZZ_REQUIRE(o.repeats >= 1 && o.warmup >= 0);
    FUZZ_REQUIRE(o.strategy == GT_STRAT_EXHAUSTIVE || o.strategy == GT_STRAT_RANDOM ||
                 o.strategy == GT_STRAT_EVOLUTIONARY);
    FUZZ_REQUIRE(o.log.format >= GT_LOG_AUTO && o.log.format <= GT_LOG_YAML);
    FUZZ_REQUIRE(isfinite(o.min_time_ms) && o.min_time_ms >= 0);
    FUZZ_REQUIRE(isfinite(o.log.threshold) && o.log.threshold >= 0 && o.log.threshold <= 1);
    FUZZ_REQUIRE(o.final_family_ratio == 0 ||
                 (o.final_family_ratio >= 1 && o.final_family_ratio <= 10));
    /* candidates, when given, is the JSON array text of config objects. */
    if (o.candidates) {
        cJSON *c = cJSON_Parse(o.candidates);
        FUZZ_REQUIRE(cJSON_IsArray(c));
        cJSON_Delete(c);
    }
    /* What the store keeps reads back as the same options (every later
     * reader of the run reads them through gt_run_opts_from_stored). */
    cJSON *st = gt_run_opts_to_stored(&o);
    char *txt = st ? cJSON_PrintUnformatted(st) : NULL;
    gt_run_opts b;
    if (txt && gt_run_opts_from_stored(&b, txt) == 0) {
        FUZZ_REQUIRE(b.shard_size == o.shard_size && b.final_k == o.final_k && b.ncpu == o.ncpu);
        FUZZ_REQUIRE(b.repeats == o.repeats && b.warmup == o.warmup);
        FUZZ_REQUIRE(b.population == o.population && b.generations == o.generations);
        FUZZ_REQUIRE(b.min_time_ms == o.min_time_ms && b.log.threshold == o.log.threshold);
        FUZZ_REQUIRE(b.final_family_ratio == o.final_family_ratio);
        FUZZ_REQUIRE(b.log.skip_invalid == o.log.skip_invalid && b.chained == o.chained &&
                     b.graph == o.graph);
        FUZZ_REQUIRE(o.seed >= (1ULL << 53) || b.seed == o.seed);
        FUZZ_REQUIRE(!o.candidates == !b.candidates);
        FUZZ_REQUIRE(!o.candidates || !strcmp(o.candidates, b.candidates));
        gt_run_opts_fini(&b);
    }
    cJSON_free(txt);
    cJSON_Delete(st);
    gt_run_opts_fini(&o);
}

/* A register message's "gen_device" (gen/gen_dev.h): an accepted device is
 * inside the documented ranges (the rules and the ranking model divide by
 * several of them), and writing it back and reading that again gives the
 * same device, bit for bit (the coordinator stores the re-written text). */
static void fuzz_gen_dev(const cJSON *obj)
{
    gt_gen_dev d, e;
    char err[256];
    err[0] = '\0';
    if (gt_gen_dev_from_json(obj, &d, err, sizeof err) != 0) {
        FUZZ_REQUIRE(err[0] != '\0' && terminated(err, sizeof err));
        return;
    }
    FUZZ_REQUIRE((d.hip == 0 && d.sm >= 10 && d.sm <= 1000 && d.warp_size == 32) ||
                 (d.hip == 1 && d.sm == 0 && (d.warp_size == 32 || d.warp_size == 64)));
    FUZZ_REQUIRE(d.sms >= 1 && d.sms <= 4096 && d.max_threads_block >= 32 &&
                 d.max_threads_block <= 65536 && d.max_regs_thread >= 1 &&
                 d.max_regs_thread <= 4096 && d.max_warps_sm >= 1 && d.max_warps_sm <= 4096);
    FUZZ_REQUIRE(d.smem_block >= 1 && d.smem_block <= (1 << 24) && d.smem_optin >= 1 &&
                 d.smem_optin <= (1 << 24) && d.smem_sm >= 1 && d.smem_sm <= (1 << 24) &&
                 d.regs_sm >= 1 && d.regs_sm <= (1 << 24));
    FUZZ_REQUIRE(d.l2_bytes >= 0 && d.l2_bytes <= ((int64_t)1 << 40));
    FUZZ_REQUIRE(isfinite(d.dram_bw) && d.dram_bw >= 1e6 && d.dram_bw <= 1e16);
    FUZZ_REQUIRE(isfinite(d.tc_flops) && d.tc_flops >= 1e6 && d.tc_flops <= 1e18);
    cJSON *j = gt_gen_dev_to_json(&d);
    char *txt = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON *back = txt ? cJSON_Parse(txt) : NULL;
    if (back) {
        FUZZ_REQUIRE(gt_gen_dev_from_json(back, &e, err, sizeof err) == 0);
        FUZZ_REQUIRE(gt_gen_dev_equal(&d, &e));
    }
    cJSON_Delete(back);
    cJSON_free(txt);
    cJSON_Delete(j);
}

/* Runs every object-level reader on obj and recurses into its children. */
static void walk(const cJSON *it, size_t *budget)
{
    for (; it; it = it->next) {
        if (cJSON_IsObject(it)) {
            if (*budget == 0)
                return;
            (*budget)--;
            fuzz_problem(it);
            fuzz_config(it);
            fuzz_result(it);
            fuzz_run_opts(it);
            fuzz_gen_dev(it);
        }
        if (cJSON_IsObject(it) || cJSON_IsArray(it))
            walk(it->child, budget);
    }
}

/* A "results" message decoded the way the dispatcher hands it to the store
 * (gt_dispatch_decode_report): every result's config canonical with its
 * hash, valid only with a finite positive time and a finite error. */
static void fuzz_report(const cJSON *msg)
{
    char err[256];
    err[0] = '\0';
    gt_report rep;
    if (gt_dispatch_decode_report(msg, &rep, err, sizeof err) != 0) {
        FUZZ_REQUIRE(err[0] != '\0' && terminated(err, sizeof err));
        return;
    }
    for (size_t i = 0; i < rep.nresults; i++) {
        const gt_report_result *r = &rep.results[i];
        FUZZ_REQUIRE(r->config && r->config[0] == '{');
        FUZZ_REQUIRE(strlen(r->config_hash) == 16 && terminated(r->reason, sizeof r->reason));
        FUZZ_REQUIRE(!r->valid || (isfinite(r->time_us) && r->time_us > 0 && isfinite(r->rel_err)));
    }
    FUZZ_REQUIRE(!rep.baseline_config || rep.baseline_config[0] == '{');
    FUZZ_REQUIRE(!rep.enum_candidates || rep.enum_candidates[0] == '[');
    FUZZ_REQUIRE(!rep.enum_baseline || rep.enum_baseline[0] == '{');
    gt_report_fini(&rep);
}

/* What the coordinator does with a decoded message (server/dispatch.c):
 * read the fixed fields, each result, the baseline. */
static void fuzz_message(const cJSON *msg, const char *type)
{
    char err[256];
    long long id;
    double d;
    (void)gt_proto_get_int(msg, "worker_id", &id, err, sizeof err);
    (void)gt_proto_get_int(msg, "job_id", &id, err, sizeof err);
    (void)gt_proto_get_num(msg, "retry_ms", &d, err, sizeof err);
    (void)gt_proto_get_str(msg, "token", err, sizeof err);
    if (strcmp(type, GT_MSG_RESULTS) == 0) {
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(msg, "results");
        const cJSON *r;
        cJSON_ArrayForEach(r, res) fuzz_result(r);
        fuzz_result(cJSON_GetObjectItemCaseSensitive(msg, "baseline"));
        fuzz_report(msg);
    }
    const cJSON *job = cJSON_GetObjectItemCaseSensitive(msg, "job");
    if (cJSON_IsObject(job)) {
        fuzz_problem(cJSON_GetObjectItemCaseSensitive(job, "problem"));
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(job, "candidates")) fuzz_config(c);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *type = NULL;
    char err[256];
    err[0] = '\0';
    cJSON *msg = gt_proto_decode(data, size, &type, err, sizeof err);
    if (msg) {
        FUZZ_REQUIRE(cJSON_IsObject(msg) && type != NULL);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(msg, "v");
        FUZZ_REQUIRE(cJSON_IsNumber(v) && v->valueint == GT_PROTO_VERSION);
        fuzz_message(msg, type);
        cJSON_Delete(msg);
    } else {
        FUZZ_REQUIRE(err[0] != '\0' && terminated(err, sizeof err));
    }
    /* Independently of the envelope: every object of the text, through
     * every reader. */
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    if (j) {
        size_t budget = MAX_OBJECTS;
        walk(j, &budget);
        cJSON_Delete(j);
    }
    return 0;
}
