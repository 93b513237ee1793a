/* http_runs.c: the /v1/runs routes of the HTTP API: submitting a log,
 * a run's progress, results (JSON, CSV), export, cancellation, and the
 * observability views of one run: its best-time timeline and its event
 * stream (events.c); kernel downloads are http_kernels.c's, the generated
 * families' pruned spaces http_space.c's. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gt_caps.h"
#include "gt_export.h"
#include "gt_log.h"
#include "gt_plan.h"
#include "gt_policy.h"
#include "gt_store_stats.h"
#include "http_priv.h"

typedef struct query_opts {
    gt_run_opts *o;
    char err[256];
    int bad;
} query_opts;

/* fp8_encoding only says how the log parser reads f8_r/bf8_r (gt_log.h):
 * the problems' types carry the choice, so it is no stored run option and
 * is read here, before gt_run_opts_set sees the rest. 0, or -1 with err. */
static int fp8_opt(gt_run_opts *o, const char *v, char *err, size_t errlen)
{
    if (gt_log_fp8_parse(v, &o->log.fp8_encoding) == 0)
        return 0;
    snprintf(err, errlen, "option fp8_encoding=%s: must be ocp (NVIDIA, gfx950) or fnuz (gfx942)",
             v);
    return -1;
}

/* Takes every "fp8_encoding" out of a JSON body (the last one counts), so
 * that gt_run_opts_from_json, which refuses unknown fields, never sees it. */
static int fp8_opt_json(cJSON *body, gt_run_opts *o, char *err, size_t errlen)
{
    cJSON *v;
    while ((v = cJSON_DetachItemFromObjectCaseSensitive(body, "fp8_encoding"))) {
        int rc = -1;
        if (cJSON_IsString(v))
            rc = fp8_opt(o, v->valuestring, err, errlen);
        else
            snprintf(err, errlen, "option fp8_encoding: must be the string ocp or fnuz");
        cJSON_Delete(v);
        if (rc)
            return -1;
    }
    return 0;
}

static enum MHD_Result query_opt(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
    (void)kind;
    query_opts *q = cls;
    if (q->bad)
        return MHD_NO;
    if (!strcmp(key, "fp8_encoding")) {
        if (fp8_opt(q->o, value ? value : "", q->err, sizeof q->err)) {
            q->bad = 1;
            return MHD_NO;
        }
        return MHD_YES;
    }
    if (gt_run_opts_set(q->o, key, value ? value : "", q->err, sizeof q->err)) {
        q->bad = 1;
        return MHD_NO;
    }
    return MHD_YES;
}

static cJSON *errors_json(const gt_log_result *res)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return NULL;
    for (size_t i = 0; i < res->nerrors && i < GT_LOG_MAX_ERRORS; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(arr, e)) {
            cJSON_Delete(e);
            cJSON_Delete(arr);
            return NULL;
        }
        if (!cJSON_AddNumberToObject(e, "line", res->errors[i].line) ||
            !cJSON_AddStringToObject(e, "field", res->errors[i].field) ||
            !cJSON_AddStringToObject(e, "error", res->errors[i].msg)) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

/* The problems a backend refused: [{"problem": label, "calls": n, "error": why}]. */
static cJSON *unsupported_json(const gt_caps_refusal *u, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < n && i < GT_LOG_MAX_ERRORS; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(arr, e)) {
            cJSON_Delete(e);
            cJSON_Delete(arr);
            return NULL;
        }
        if (!cJSON_AddStringToObject(e, "problem", u[i].label) ||
            !cJSON_AddNumberToObject(e, "calls", (double)u[i].calls) ||
            !cJSON_AddStringToObject(e, "error", u[i].reason)) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

enum MHD_Result gt_http_post_run(gt_req *q)
{
    gt_http *h = q->h;
    struct MHD_Connection *c = q->c;
    char err[512];
    gt_run_opts o;
    gt_run_opts_default(&o);
    o.log.max_lines = h->o.max_log_lines;
    const char *text = q->body.s ? q->body.s : "";
    size_t len = q->body.len;
    cJSON *body = NULL;
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (ct && !strncmp(ct, "application/json", 16)) {
        body = cJSON_ParseWithLength(text, len);
        if (!cJSON_IsObject(body)) {
            cJSON_Delete(body);
            return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL,
                              "request body is not a JSON object (send the log as text/plain, or"
                              " JSON {\"log\": ..., options})");
        }
        const cJSON *log = cJSON_GetObjectItemCaseSensitive(body, "log");
        if (!cJSON_IsString(log)) {
            cJSON_Delete(body);
            return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL,
                                      "field log: missing or not a string");
        }
        if (fp8_opt_json(body, &o, err, sizeof err) ||
            gt_run_opts_from_json(&o, body, err, sizeof err)) {
            cJSON_Delete(body);
            gt_run_opts_fini(&o);
            return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL, "%s", err);
        }
        text = log->valuestring;
        len = strlen(text);
    } else {
        query_opts qo = {.o = &o};
        MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_opt, &qo);
        if (qo.bad)
            return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL, "%s", qo.err);
    }
    if (gt_run_opts_check(&o, err, sizeof err) != 0) {
        cJSON_Delete(body);
        gt_run_opts_fini(&o);
        return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL, "%s", err);
    }
    o.log.max_lines = h->o.max_log_lines;
    gt_log_result res;
    int prc = gt_log_parse(text, len, &o.log, &res);
    enum MHD_Result ret;
    if (prc != 0) {
        cJSON *details = errors_json(&res);
        ret = gt_http_send_error(q, MHD_HTTP_UNPROCESSABLE_CONTENT, details,
                         "log rejected: %zu invalid line%s (format %s)%s", res.nerrors,
                         res.nerrors == 1 ? "" : "s", gt_log_format_name(res.format),
                         res.nerrors > GT_LOG_MAX_ERRORS ? "; the first 50 are listed" : "");
        goto out;
    }
    /* Every problem goes to a backend that can run it, or into the answer:
     * a refused run lists them (like bad lines), a run with skip_invalid
     * leaves them out and says which under "unsupported". */
    gt_caps_refusal unsup[GT_LOG_MAX_ERRORS];
    size_t nunsup = gt_caps_filter(o.backend, &res, unsup, GT_LOG_MAX_ERRORS);
    if (nunsup && (!o.log.skip_invalid || res.nproblems == 0)) {
        cJSON *details = unsupported_json(unsup, nunsup);
        ret = gt_http_send_error(q, MHD_HTTP_UNPROCESSABLE_CONTENT, details,
                                 "%zu problem%s the %s backend cannot run%s%s", nunsup,
                                 nunsup == 1 ? "" : "s", o.backend,
                                 res.nproblems ? " (skip_invalid=1 tunes the others)" : "",
                                 nunsup > GT_LOG_MAX_ERRORS ? "; the first 50 are listed" : "");
        goto out;
    }
    /* What to measure is planned before the store's transaction (building
     * a CPU space takes a while); the store writes the plan in one. */
    gt_run_created cr;
    gt_plan plan;
    int created = gt_plan_run(&o, &res, &plan, err, sizeof err);
    if (created == 0) {
        created = gt_store_create_run(h->store, &o, &res, &plan, &cr, err, sizeof err);
        gt_plan_free(&plan);
    }
    if (created) {
        gt_http_cache_clear(&h->views);
        gt_err("create run: %s", err);
        ret = gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                                 "cannot create the run: %s", err);
        goto out;
    }
    /* the submitter's next GET sees the new run, rendered here rather than in that GET
     * (the run's workers may be registering by then) */
    gt_http_renew_views(h, cr.id);
    gt_info("run %lld created: %zu problems, %zu jobs, %zu candidates (%s, backend %s)",
            (long long)cr.id, cr.problems, cr.jobs, cr.candidates, gt_log_format_name(res.format),
            o.backend);
    cJSON *j = cJSON_CreateObject();
    cJSON *sk = errors_json(&res);
    if (!j || !sk || !cJSON_AddNumberToObject(j, "id", (double)cr.id) ||
        !cJSON_AddStringToObject(j, "format", gt_log_format_name(res.format)) ||
        !cJSON_AddStringToObject(j, "fp8_encoding", gt_log_fp8_name(o.log.fp8_encoding)) ||
        !cJSON_AddStringToObject(j, "backend", o.backend) ||
        !cJSON_AddNumberToObject(j, "problems", (double)cr.problems) ||
        !cJSON_AddNumberToObject(j, "dropped", (double)res.dropped) ||
        !cJSON_AddNumberToObject(j, "jobs", (double)cr.jobs) ||
        !cJSON_AddNumberToObject(j, "candidates", (double)cr.candidates) ||
        !cJSON_AddNumberToObject(j, "gemm_lines", (double)res.gemm_lines)) {
        cJSON_Delete(j);
        cJSON_Delete(sk);
        ret = MHD_NO;
        goto out;
    }
    cJSON_AddItemToObject(j, "skipped", sk);
    cJSON *us = unsupported_json(unsup, nunsup);
    if (!us) {
        cJSON_Delete(j);
        ret = MHD_NO;
        goto out;
    }
    cJSON_AddItemToObject(j, "unsupported", us);
    ret = gt_http_send_json(q, MHD_HTTP_CREATED, j);
out:
    gt_log_result_free(&res);
    cJSON_Delete(body);
    gt_run_opts_fini(&o);
    return ret;
}

static enum MHD_Result get_export(gt_req *q, int64_t id)
{
    gt_http *h = q->h;
    char err[512], path[1200], source[400];
    int ex = gt_store_run_exists(h->rstore, id);
    if (ex == 0)
        return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL, "run %lld not found",
                                      (long long)id);
    if (ex < 0)
        return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "database error");
    /* The file name is ours, never from the request: nothing a client sends
     * reaches the filesystem. */
    snprintf(path, sizeof path, "%s/export-run%lld-%d-%lld.db", h->data_dir, (long long)id,
             (int)getpid(), (long long)gt_wall_ms());
    snprintf(source, sizeof source, "%s/run/%lld", h->source, (long long)id);
    gt_store_lock(h->rstore);
    int rc = gt_export_run(gt_store_db(h->rstore), id, source, path, err, sizeof err);
    gt_store_unlock(h->rstore);
    if (rc) {
        gt_err("export run %lld: %s", (long long)id, err);
        return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "export failed: %s",
                                  err);
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    unlink(path); /* the open descriptor keeps the data until the response is sent */
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        if (fd >= 0)
            close(fd);
        return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "export file vanished");
    }
    struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)sb.st_size, fd);
    if (!r) {
        close(fd);
        return MHD_NO;
    }
    char disp[128];
    snprintf(disp, sizeof disp, "attachment; filename=\"gemmtune-run%lld.db\"", (long long)id);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/vnd.sqlite3");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
    enum MHD_Result ret = gt_http_queue(q, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result get_timeline(gt_req *q, int64_t id)
{
    char err[512];
    int found = 0;
    cJSON *j = gt_store_run_timeline(q->h->rstore, id, &found, err, sizeof err);
    if (!found)
        return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL, "run %lld not found",
                                      (long long)id);
    if (!j)
        return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
    return gt_http_send_json(q, MHD_HTTP_OK, j);
}

/* POST /v1/runs/{id}/verify: a verify run re-timing run id's winners
 * (gt_store_create_verify). Body: none, or {"tolerance": T} (default
 * GT_VERIFY_TOLERANCE). 201 {"id", "verifies", "problems", "skipped"}; 404
 * unknown run, 409 not done, 422 nothing to re-time, 400 a bad body. */
static enum MHD_Result post_verify(gt_req *q, int64_t id)
{
    gt_http *h = q->h;
    char err[512];
    double tol = GT_VERIFY_TOLERANCE;
    const char *text = q->body.s ? q->body.s : "";
    size_t len = q->body.len, i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
        i++;
    if (i < len) {
        cJSON *body = cJSON_ParseWithLength(text, len);
        if (!cJSON_IsObject(body)) {
            cJSON_Delete(body);
            return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL,
                                      "request body is not a JSON object (send none, or"
                                      " {\"tolerance\": %g})", GT_VERIFY_TOLERANCE);
        }
        const cJSON *it;
        cJSON_ArrayForEach(it, body)
        {
            if (strcmp(it->string, "tolerance")) {
                cJSON_Delete(body);
                return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL,
                                          "field %.64s: unknown (verify takes tolerance)",
                                          it->string);
            }
            if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < 0 ||
                it->valuedouble > 100) {
                cJSON_Delete(body);
                return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL,
                                          "field tolerance: must be a number in [0, 100] (the"
                                          " largest |re-timed / stored uplift - 1| that passes)");
            }
            tol = it->valuedouble;
        }
        cJSON_Delete(body);
    }
    gt_verify_created vc;
    int rc = gt_store_create_verify(h->store, id, tol, &vc, err, sizeof err);
    if (rc == 0)
        gt_http_renew_views(h, vc.id); /* the submitter's next GET sees the new run, rendered here */
    else
        gt_http_cache_clear(&h->views);
    if (rc == GT_STORE_NO_RUN)
        return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL, "run %lld not found", (long long)id);
    if (rc == GT_STORE_VERIFY_NOT_DONE)
        return gt_http_send_error(q, MHD_HTTP_CONFLICT, NULL, "%s: verify re-times a done run's"
                                  " winners", err);
    if (rc == GT_STORE_VERIFY_NOTHING)
        return gt_http_send_error(q, MHD_HTTP_UNPROCESSABLE_CONTENT, NULL, "%s", err);
    if (rc) {
        gt_err("verify run %lld: %s", (long long)id, err);
        return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                                  "cannot create the verify run: %s", err);
    }
    gt_info("run %lld created: verify of run %lld, %zu problems (%zu entries without a tuned"
            " winner skipped), tolerance %g", (long long)vc.id, (long long)id, vc.problems,
            vc.skipped, tol);
    cJSON *j = cJSON_CreateObject();
    if (!j || !cJSON_AddNumberToObject(j, "id", (double)vc.id) ||
        !cJSON_AddNumberToObject(j, "verifies", (double)id) ||
        !cJSON_AddNumberToObject(j, "problems", (double)vc.problems) ||
        !cJSON_AddNumberToObject(j, "skipped", (double)vc.skipped) ||
        !cJSON_AddNumberToObject(j, "tolerance", tol)) {
        cJSON_Delete(j);
        return MHD_NO;
    }
    return gt_http_send_json(q, MHD_HTTP_CREATED, j);
}

enum MHD_Result gt_http_run_routes(gt_req *q, const char *method, int64_t id, const char *sub)
{
    gt_http *h = q->h;
    struct MHD_Connection *c = q->c;
    char err[512];
    int found = 0;
    if (!*sub) {
        if (strcmp(method, "GET"))
            return gt_http_send_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET");
        char key[48];
        gt_http_run_key(key, sizeof key, id);
        char *hit = gt_http_cache_get(&h->views, key, GT_HTTP_VIEW_TTL_MS);
        if (hit)
            return gt_http_send_text(q, MHD_HTTP_OK, "application/json", hit);
        cJSON *j = gt_store_run_json(h->rstore, id, gt_wall_ms(), &found, err, sizeof err);
        if (!found)
            return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL, "run %lld not found",
                                      (long long)id);
        if (!j)
            return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
        return gt_http_send_view(q, key, j);
    }
    if (!strcmp(sub, "results")) {
        if (strcmp(method, "GET"))
            return gt_http_send_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET");
        const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
        if (fmt && !strcmp(fmt, "csv")) {
            char *csv = gt_store_results_csv(h->rstore, id, &found, err, sizeof err);
            if (!found)
                return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL, "run %lld not found",
                                      (long long)id);
            if (!csv)
                return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
            return gt_http_send_text(q, MHD_HTTP_OK, "text/csv", csv);
        }
        if (fmt && strcmp(fmt, "json"))
            return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL, "format=%s: use json or csv",
                                      fmt);
        cJSON *j = gt_store_results_json(h->rstore, id, &found, err, sizeof err);
        if (!found)
            return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL, "run %lld not found",
                                      (long long)id);
        if (!j)
            return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
        return gt_http_send_json(q, MHD_HTTP_OK, j);
    }
    if (!strcmp(sub, "export")) {
        if (strcmp(method, "GET"))
            return gt_http_send_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET");
        return get_export(q, id);
    }
    if (!strcmp(sub, "cancel")) {
        if (strcmp(method, "POST"))
            return gt_http_send_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use POST");
        int r = gt_store_cancel_run(h->store, id, err, sizeof err);
        if (r == 0)
            gt_http_renew_views(h, id);
        else
            gt_http_cache_clear(&h->views);
        if (r == 1)
            return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL, "run %lld not found",
                                      (long long)id);
        if (r < 0)
            return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
        gt_info("run %lld cancelled", (long long)id);
        cJSON *j = gt_store_run_json(h->store, id, gt_wall_ms(), &found, err, sizeof err);
        if (!j)
            return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
        return gt_http_send_json(q, MHD_HTTP_OK, j);
    }
    if (!strcmp(sub, "timeline") || !strcmp(sub, "events")) {
        int events = sub[0] == 'e';
        if (strcmp(method, "GET"))
            return gt_http_send_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET");
        return events ? gt_http_events(q, id) : get_timeline(q, id);
    }
    if (!strcmp(sub, "verify")) {
        if (strcmp(method, "POST"))
            return gt_http_send_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use POST");
        return post_verify(q, id);
    }
    if (!strncmp(sub, "kernels/", 8))
        return gt_http_kernel(q, method, id, sub + 8);
    if (!strncmp(sub, "space/", 6))
        return gt_http_space(q, method, id, sub + 6);
    return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL, "no such resource /v1/runs/%lld/%s",
                              (long long)id, sub);
}

