/* http_kernels.c: GET /v1/runs/{id}/kernels/{problem}[.cuh]: a problem's
 * winning generated kernel (or, with ?config_hash=, any measured generated
 * candidate) as a download: its complete source, NVRTC options, launch
 * geometry, workspace and argument layout (JSON), or a header file with the
 * launch parameters in a comment block (?format=cuh or the .cuh suffix).
 *
 * Workers never send source: a generated kernel is fully determined by
 * (problem, config, target), so it is re-created here from the pure-host
 * gen/ library, the same code the worker compiled and launched
 * (gen/gen_export.h). {problem} is the problem id of GET /v1/runs/{id}
 * (best[].problem_id) or its canonical key, percent-encoded.
 *
 * Status codes: 200; 400 bad query; 404 unknown run or problem, no valid
 * result yet, or no result with that config hash; 409 the result is a
 * library configuration (cuBLASLt, ...), which has no source: the export
 * database carries it; 422 a config that cannot be exported (unknown or
 * test-only family, not runnable for the problem, a non-CUDA backend). */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_export.h"
#include "gt_log.h"
#include "gen_dev.h"
#include "http_priv.h"

static int is_hash(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!isxdigit((unsigned char)s[n]))
            return 0;
    return n == 16;
}

static int add_num_or_null(cJSON *o, const char *name, double v)
{
    return (isfinite(v) ? cJSON_AddNumberToObject(o, name, v) : cJSON_AddNullToObject(o, name)) !=
           NULL;
}

/* Whether the worker timed the kernel with chained launches (gen_run.c's
 * gt_gen_chain_begin: a kernel that may launch chained, on sm_90+). */
static int timed_chained(const gt_kernel_row *r, const gt_gen_kernel *k)
{
    int sm = gt_gen_dev_sm_of(r->arch);
    return r->chained && k->chain_min_sm && sm >= k->chain_min_sm;
}

/* How time_us was measured: "graph" when the run said launch=graph (every
 * candidate replayed in a CUDA graph, cuda_bench.c), "chained" when it said
 * launch=chained and the kernel can be (gemv on sm_90+), else "plain". */
static const char *timed_how(const gt_kernel_row *r, const gt_gen_kernel *k)
{
    return r->graph ? "graph" : timed_chained(r, k) ? "chained" : "plain";
}

/* The kernel's JSON with where it came from and what it measured. */
static cJSON *kernel_json(int64_t run_id, const gt_kernel_row *r, const gt_gen_kernel *k)
{
    cJSON *j = gt_gen_kernel_json(k), *spec = cJSON_Parse(r->spec);
    double up = r->time_us > 0 && r->baseline_us > 0 ? r->baseline_us / r->time_us : NAN;
    if (!j || !spec || !cJSON_AddNumberToObject(j, "run_id", (double)run_id) ||
        !cJSON_AddNumberToObject(j, "problem_id", (double)r->problem_id) ||
        !cJSON_AddStringToObject(j, "problem_key", r->key) ||
        !cJSON_AddStringToObject(j, "label", r->label) || !cJSON_AddItemToObject(j, "problem", spec))
        goto fail;
    spec = NULL;
    if (!cJSON_AddStringToObject(j, "backend", r->backend) ||
        !cJSON_AddStringToObject(j, "device_model", r->device_model) ||
        !cJSON_AddStringToObject(j, "phase", r->phase) ||
        !cJSON_AddStringToObject(j, "config_hash", r->config_hash) ||
        !cJSON_AddBoolToObject(j, "winner", r->winner) ||
        !cJSON_AddBoolToObject(j, "valid", r->valid) || !add_num_or_null(j, "time_us", r->time_us) ||
        !add_num_or_null(j, "baseline_us", r->baseline_us) || !add_num_or_null(j, "uplift", up) ||
        !add_num_or_null(j, "rel_err", r->rel_err) ||
        !cJSON_AddStringToObject(j, "timed", timed_how(r, k)))
        goto fail;
    return j;
fail:
    cJSON_Delete(spec);
    cJSON_Delete(j);
    return NULL;
}

static enum MHD_Result send_cuh(gt_req *q, int64_t run_id, const gt_kernel_row *r,
                                const gt_gen_kernel *k, int by_hash)
{
    char about[2048], t[64] = "unknown", b[64] = "unknown", up[64] = "";
    if (isfinite(r->time_us))
        snprintf(t, sizeof t, "%.3f us per call", r->time_us);
    if (isfinite(r->baseline_us))
        snprintf(b, sizeof b, "%.3f us", r->baseline_us);
    if (r->time_us > 0 && r->baseline_us > 0)
        snprintf(up, sizeof up, ", uplift %.3fx", r->baseline_us / r->time_us);
    snprintf(about, sizeof about,
             "run %lld, problem %lld: %s\n"
             "key       %s\n"
             "device    %s (backend %s)\n"
             "measured  %s (%s phase%s%s%s), baseline %s%s\n"
             "rel_err   %.3g",
             (long long)run_id, (long long)r->problem_id, r->label, r->key, r->device_model,
             r->backend, t, r->phase, r->winner ? ", the winner" : ", not the winner",
             r->valid ? "" : ", INVALID",
             r->graph ? ", replayed in a CUDA graph" : timed_chained(r, k) ? ", launched chained" : "", b, up,
             r->rel_err);
    char *txt = gt_gen_kernel_cuh(k, about);
    if (!txt)
        return MHD_NO;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(txt), txt, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(txt);
        return MHD_NO;
    }
    char disp[160];
    snprintf(disp, sizeof disp, "attachment; filename=\"gemmtune-run%lld-problem%lld%s%s.cuh\"",
             (long long)run_id, (long long)r->problem_id, by_hash ? "-" : "",
             by_hash ? r->config_hash : "");
    enum MHD_Result ret = MHD_NO;
    if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8") ==
            MHD_YES &&
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp) == MHD_YES &&
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store") == MHD_YES)
        ret = gt_http_queue(q, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* What a library winner is called, for the 409. */
static const char *library_name(const char *backend)
{
    return !strcmp(backend, "cuda") ? "cuBLASLt" : !strcmp(backend, "hip") ? "hipBLASLt"
                                                                            : "CPU backend";
}

enum MHD_Result gt_http_kernel(gt_req *q, const char *method, int64_t run_id, const char *rest)
{
    gt_http *h = q->h;
    struct MHD_Connection *c = q->c;
    char err[512], problem[1024];
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return gt_http_send_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "use GET");
    size_t n = strlen(rest);
    int cuh = n > 4 && !strcmp(rest + n - 4, ".cuh");
    if (cuh)
        n -= 4;
    if (n == 0 || n >= sizeof problem)
        return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL,
                                  "expected /v1/runs/%lld/kernels/{problem id or key}",
                                  (long long)run_id);
    memcpy(problem, rest, n);
    problem[n] = '\0';
    const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
    const char *hash = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "config_hash");
    const char *arch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "arch");
    if (fmt && strcmp(fmt, "json") && strcmp(fmt, "cuh"))
        return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL, "format=%s: use json or cuh", fmt);
    if (fmt && !strcmp(fmt, "cuh"))
        cuh = 1;
    if (hash && !is_hash(hash))
        return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL,
                                  "config_hash=%s: 16 hex digits expected (results' config_hash)",
                                  hash);
    if (arch && !gt_gen_dev_sm_of(arch))
        return gt_http_send_error(q, MHD_HTTP_BAD_REQUEST, NULL,
                                  "arch=%s: a CUDA target like sm_90 expected", arch);

    gt_kernel_row r;
    int rc = gt_store_kernel_row(h->rstore, run_id, problem, hash, &r, err, sizeof err);
    if (rc == GT_STORE_NO_RUN || rc == GT_STORE_NO_PROBLEM)
        return gt_http_send_no_problem(q, rc, run_id, problem);
    if (rc == GT_STORE_NO_RESULT)
        return hash ? gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL,
                                         "problem %s of run %lld has no result with config_hash %s",
                                         problem, (long long)run_id, hash)
                    : gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL,
                                         "problem %s of run %lld has no valid result yet", problem,
                                         (long long)run_id);
    if (rc != 0) {
        gt_err("kernel download run %lld problem %s: %s", (long long)run_id, problem, err);
        return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
    }

    enum MHD_Result ret;
    gt_gen_kernel k;
    gt_problem p;
    memset(&k, 0, sizeof k);
    cJSON *spec = cJSON_Parse(r.spec), *cfg = cJSON_Parse(r.config);
    if (!spec || !cfg || gt_problem_from_json(spec, &p, err, sizeof err) != 0) {
        ret = gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                                 "stored problem or config of problem %lld does not parse%s%s",
                                 (long long)r.problem_id, spec && cfg ? ": " : "",
                                 spec && cfg ? err : "");
        goto out;
    }
    const char *what = r.winner ? "the winner" : "this result";
    int sm = gt_gen_dev_sm_of(arch ? arch : r.arch);
    rc = gt_gen_kernel_make(&p, cfg, sm, &k, err, sizeof err);
    if (rc == GT_GEN_EXPORT_LIBRARY) {
        cJSON *d = cJSON_CreateObject();
        if (d && (!cJSON_AddStringToObject(d, "backend", r.backend) ||
                  !cJSON_AddItemToObject(d, "config", cJSON_Duplicate(cfg, 1)))) {
            cJSON_Delete(d);
            d = NULL;
        }
        ret = gt_http_send_error(q, MHD_HTTP_CONFLICT, d,
                                 "%s is a %s configuration, not a generated kernel: there is no "
                                 "source; use the export database (GET /v1/runs/%lld/export)",
                                 what, gt_gen_family(cfg) == GT_FAM_CUTLASS ? "libgemmtune_cutlass"
                                                                            : library_name(r.backend),
                                 (long long)run_id);
        goto out;
    }
    if (rc == GT_GEN_EXPORT_OK && strcmp(r.backend, "cuda")) {
        snprintf(err, sizeof err, "backend %s: only the CUDA form of a generated kernel is exported",
                 r.backend);
        rc = GT_GEN_EXPORT_BAD;
    }
    if (rc == GT_GEN_EXPORT_BAD) {
        ret = gt_http_send_error(q, MHD_HTTP_UNPROCESSABLE_CONTENT, NULL,
                                 "%s (config %s) cannot be exported: %s", what, r.config_hash, err);
        goto out;
    }
    if (rc != GT_GEN_EXPORT_OK) {
        ret = gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s", err);
        goto out;
    }
    if (cuh) {
        ret = send_cuh(q, run_id, &r, &k, hash != NULL);
        goto out;
    }
    cJSON *j = kernel_json(run_id, &r, &k);
    ret = j ? gt_http_send_json(q, MHD_HTTP_OK, j) : MHD_NO;
out:
    gt_gen_kernel_free(&k);
    cJSON_Delete(spec);
    cJSON_Delete(cfg);
    gt_kernel_row_fini(&r);
    return ret;
}
