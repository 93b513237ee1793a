/* http_space.c: GET /v1/runs/{id}/space/{problem}: the generated families'
 * space for one problem of a CUDA run, and why each pruned config was
 * pruned, or (?config=) the verdict on one config.
 *
 * The pruning rules run before anything is compiled, on the worker, with
 * the device's limits; they are pure host code (gen/), so the coordinator
 * runs the same code here (gt_space.h) for the run's device: the arch and
 * SM count of the most recent worker of the run's device model, unless the
 * query names them (?arch=sm_NN, ?sms=N: a what-if, or a run no worker has
 * served yet), else an H100 (sm_90, 132 SMs). The other limits are the
 * ones that worker registered with (gen_device: what its driver reports),
 * so the kept list is exactly what it enumerates; for a worker that sent
 * none (older workers) or a what-if on another arch, gt_gen_dev_default's
 * for the arch, which can keep a different list: the ranking model is
 * sensitive to the DRAM bandwidth (2 % more changes the kept set at the
 * cap of many shapes, mma's most). The caps are the worker's defaults. The
 * response says which device and where its arch, SM count and limits came
 * from (device.limits_from: "worker" or "default").
 *
 * {problem}: a problem id of GET /v1/runs/{id} (best[].problem_id) or the
 * problem's canonical key, percent-encoded (as for kernels/).
 * Query: family=gemv|mma (default both); rule=NAME (only that rule's
 * pruned examples: the reason's text before the first ':' or '=');
 * offset=, limit= (the examples' page; limit <= GT_SPACE_LIMIT_MAX);
 * config=<JSON> (the verdict on that config); arch=, sms=. An unknown
 * parameter is refused: a typo must not silently answer another question.
 *
 * Status codes: 200; 400 bad query; 404 unknown run or problem; 422 the
 * run's backend is not cuda (the rules and limits here are CUDA's). */
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_dev.h"
#include "gt_log.h"
#include "gt_space.h"
#include "gt_store_space.h"
#include "http_priv.h"

#define MAX_SMS 4096

typedef struct space_args {
    gt_spview_query sq;
    const char *config; /* JSON text or NULL */
    const char *arch;   /* or NULL */
    int sm, sms;        /* 0: not given */
    char err[256];
    int bad;
} space_args;

static int int_arg(const char *key, const char *v, int lo, int hi, int *out, char *err,
                   size_t errlen)
{
    int64_t x;
    if (gt_parse_i64(v, &x) != 0 || x < lo || x > hi) {
        snprintf(err, errlen, "%s=%.64s: an integer in %d..%d expected", key, v, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static enum MHD_Result one_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    (void)kind;
    space_args *a = cls;
    const char *v = value ? value : "";
    if (a->bad)
        return MHD_NO;
    if (!strcmp(key, "family")) {
        a->sq.families = !strcmp(v, "gemv") ? GT_SPACE_GEMV : !strcmp(v, "mma") ? GT_SPACE_MMA : 0;
        if (!a->sq.families) {
            snprintf(a->err, sizeof a->err, "family=%.64s: gemv or mma expected", v);
            a->bad = 1;
        }
    } else if (!strcmp(key, "rule")) {
        if (!*v || strlen(v) >= GT_SPACE_RULE_LEN) {
            snprintf(a->err, sizeof a->err, "rule=%.64s: a rule name (by_rule's keys) expected", v);
            a->bad = 1;
        }
        a->sq.rule = v;
    } else if (!strcmp(key, "offset")) {
        a->bad = int_arg(key, v, 0, 1 << 30, &a->sq.offset, a->err, sizeof a->err) != 0;
    } else if (!strcmp(key, "limit")) {
        a->bad = int_arg(key, v, 0, GT_SPACE_LIMIT_MAX, &a->sq.limit, a->err, sizeof a->err) != 0;
    } else if (!strcmp(key, "sms")) {
        a->bad = int_arg(key, v, 1, MAX_SMS, &a->sms, a->err, sizeof a->err) != 0;
    } else if (!strcmp(key, "arch")) {
        a->arch = v;
        if (!(a->sm = gt_gen_dev_sm_of(v))) {
            snprintf(a->err, sizeof a->err, "arch=%.64s: a CUDA target like sm_90 expected", v);
            a->bad = 1;
        }
    } else if (!strcmp(key, "config")) {
        a->config = v;
    } else {
        snprintf(a->err, sizeof a->err,
                 "unknown parameter '%.64s' (family, rule, offset, limit, config, arch, sms)", key);
        a->bad = 1;
    }
    return a->bad ? MHD_NO : MHD_YES;
}

/* Adds src (taken, deleted on failure) under name. 1 or 0. */
static int take(cJSON *o, const char *name, cJSON *src)
{
    if (src && cJSON_AddItemToObject(o, name, src))
        return 1;
    cJSON_Delete(src);
    return 0;
}

/* The device the rules see, and where its arch, SM count and limits came
 * from (gt_spview_device). */
static cJSON *device_json(const space_args *a, const gt_spview_target *t, gt_gen_dev *d)
{
    gt_spview_dev_in in = {.q_sm = a->sm,
                          .q_sms = a->sms,
                          .w_sm = t->worker_id ? gt_gen_dev_sm_of(t->arch) : 0,
                          .w_sms = t->worker_id && t->units > 0 ? t->units : 0,
                          .w_gen_device = t->gen_device};
    gt_spview_dev sd;
    gt_spview_device(&in, &sd);
    *d = sd.d;
    int worker = !strcmp(sd.limits_from, "worker");
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d", d->sm);
    cJSON *j = cJSON_CreateObject();
    if (!j || !cJSON_AddStringToObject(j, "arch", arch) || !cJSON_AddNumberToObject(j, "sm", d->sm) ||
        !cJSON_AddNumberToObject(j, "sms", d->sms) ||
        !cJSON_AddStringToObject(j, "arch_from", sd.arch_from) ||
        !cJSON_AddStringToObject(j, "sms_from", sd.sms_from) ||
        !cJSON_AddStringToObject(j, "limits_from", sd.limits_from) ||
        !(t->worker_id ? cJSON_AddNumberToObject(j, "worker_id", (double)t->worker_id)
                       : cJSON_AddNullToObject(j, "worker_id")) ||
        !take(j, "limits", gt_gen_dev_to_json(d)) ||
        (sd.ignored[0] && !cJSON_AddStringToObject(j, "limits_ignored", sd.ignored)) ||
        !cJSON_AddStringToObject(
            j, "note",
            worker ? "limits are the ones the worker registered with (gen_device): the kept "
                     "configs are what it enumerates; caps are the worker's defaults "
                     "(GT_CUDA_GEN_MAX, GT_CUDA_MMA_MAX unset)"
                   : "limits are gt_gen_dev_default's for the arch (H100-like from sm_90, "
                     "A100-like below) with these SMs: no worker limits apply (none "
                     "registered, an older worker, or another arch asked for); a worker reads "
                     "its own from the driver, and the model's ranking, hence the kept configs "
                     "under the cap, moves with dram_bw; caps are the worker's defaults "
                     "(GT_CUDA_GEN_MAX, GT_CUDA_MMA_MAX unset)")) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

static enum MHD_Result lookup_error(gt_req *q, int rc, int64_t run_id, const char *problem,
                                    const char *err)
{
    if (rc == GT_STORE_NO_RUN || rc == GT_STORE_NO_PROBLEM)
        return gt_http_send_no_problem(q, rc, run_id, problem);
    gt_err("space run %lld problem %s: %s", (long long)run_id, problem, err);
    return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
}

enum MHD_Result gt_http_space(gt_req *q, const char *method, int64_t run_id, const char *rest)
{
    gt_http *h = q->h;
    char err[512];
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return gt_http_send_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET");
    if (!*rest || strlen(rest) >= 1024)
        return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL,
                                  "expected /v1/runs/%lld/space/{problem id or key}",
                                  (long long)run_id);
    space_args a;
    memset(&a, 0, sizeof a);
    a.sq.families = GT_SPACE_ALL;
    a.sq.limit = GT_SPACE_LIMIT_DEFAULT;
    if (MHD_get_connection_values(q->c, MHD_GET_ARGUMENT_KIND, one_arg, &a) < 0 || a.bad)
        return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL, "%s",
                                  a.err[0] ? a.err : "bad query");

    gt_spview_target t;
    int rc = gt_store_space_target(h->rstore, run_id, rest, &t, err, sizeof err);
    if (rc != 0)
        return lookup_error(q, rc, run_id, rest, err);

    enum MHD_Result ret;
    cJSON *spec = NULL, *cfg = NULL, *j = NULL;
    gt_problem p;
    gt_gen_dev d;
    if (strcmp(t.backend, "cuda")) {
        ret = gt_http_send_error(q, MHD_HTTP_UNPROCESSABLE_CONTENT, NULL,
                                 "run %lld has backend %s: the generated families, their pruning "
                                 "rules and device limits here are the cuda backend's",
                                 (long long)run_id, t.backend);
        goto out;
    }
    if (a.config) {
        cfg = cJSON_Parse(a.config);
        int fam = cfg ? gt_gen_family(cfg) : GT_FAM_UNKNOWN;
        if (!cJSON_IsObject(cfg)) {
            ret = gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL,
                                     "config: a JSON config object expected (URL-encoded)");
            goto out;
        }
        if ((fam == GT_FAM_GEMV && !(a.sq.families & GT_SPACE_GEMV)) ||
            (fam == GT_FAM_MMA && !(a.sq.families & GT_SPACE_MMA))) {
            ret = gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL,
                                     "config is of family %s, not the family= asked for",
                                     fam == GT_FAM_GEMV ? "gemv" : "mma");
            goto out;
        }
    }
    if (!(spec = cJSON_Parse(t.spec)) || gt_problem_from_json(spec, &p, err, sizeof err) != 0) {
        ret = gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                                 "stored problem %lld does not parse%s%s", (long long)t.problem_id,
                                 spec ? ": " : "", spec ? err : "");
        goto out;
    }
    if (!(j = cJSON_CreateObject()) || !cJSON_AddNumberToObject(j, "run_id", (double)run_id) ||
        !cJSON_AddNumberToObject(j, "problem_id", (double)t.problem_id) ||
        !cJSON_AddStringToObject(j, "problem_key", t.key) ||
        !cJSON_AddStringToObject(j, "label", t.label)) {
        ret = MHD_NO; /* out of memory: drop the connection, as the other routes do */
        goto out;
    }
    int taken = take(j, "problem", spec);
    spec = NULL; /* take() added or deleted it */
    if (!taken || !cJSON_AddStringToObject(j, "backend", t.backend) ||
        !cJSON_AddStringToObject(j, "device_model", t.device_model) ||
        !take(j, "device", device_json(&a, &t, &d))) {
        ret = MHD_NO;
        goto out;
    }
    rc = cfg ? gt_spview_add_verdict(j, &p, &d, cfg, err, sizeof err)
             : gt_spview_add_families(j, &p, &d, &a.sq, err, sizeof err);
    if (rc == 1) {
        ret = gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL, "%s", err);
        goto out;
    }
    if (rc != 0) {
        ret = gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
        goto out;
    }
    ret = gt_http_send_json(q, MHD_HTTP_OK, j);
    j = NULL; /* taken */
out:
    cJSON_Delete(j);
    cJSON_Delete(cfg);
    cJSON_Delete(spec);
    gt_spview_target_fini(&t);
    return ret;
}
