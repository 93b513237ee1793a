/* test_log_http.c: what POST /v1/runs makes of the ingest options and bad
 * lines (server/http_runs.c over common/log_*.c), with the server in-process:
 *   - fp8_encoding, in the query string or a JSON body: the default ocp
 *     keeps hipBLASLt's f8_r apart from f8_fnuz_r; fnuz merges them; the
 *     answer says which was used; a bad value or type is a 400 naming the
 *     option, and JSON bodies still refuse unknown options;
 *   - a matmul entry with a comma missing: 422 with its line and field,
 *     or with skip_invalid a run whose "skipped" lists it;
 *   - a cuda run takes a mixed hipBLASLt log (types, batches, transposes,
 *     bias + GELU) whole. */
#include "gt_http.h"
#include "gt_httpc.h"
#include "gt_store.h"
#include "gt_test.h"
#include "gt_util.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dir[64];
static char g_base[64];

/* POSTs body with the content type; the parsed answer (NULL when it is no
 * JSON) and its status in *status. */
static cJSON *post(const char *path, const char *type, const char *body, int *status)
{
    char err[256];
    gt_httpc_resp r;
    memset(&r, 0, sizeof r);
    *status = -1;
    if (gt_httpc_request(g_base, "POST", path, type, body, strlen(body), NULL, &r, err,
                         sizeof err)) {
        fprintf(stderr, "  POST %s: %s\n", path, err);
        return NULL;
    }
    *status = r.status;
    cJSON *j = cJSON_Parse(r.body);
    if (!j)
        fprintf(stderr, "  POST %s: %d, not JSON: %s\n", path, r.status, r.body);
    gt_httpc_resp_free(&r);
    return j;
}

static const char *jstr(const cJSON *j, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double jnum(const cJSON *j, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* How many GEMMs of run id have a label that starts with prefix. */
static int labels(int64_t id, const char *prefix)
{
    char path[64], err[256];
    gt_httpc_resp r;
    memset(&r, 0, sizeof r);
    snprintf(path, sizeof path, "/v1/runs/%lld", (long long)id);
    if (gt_httpc_request(g_base, "GET", path, NULL, NULL, 0, NULL, &r, err, sizeof err)) {
        fprintf(stderr, "  GET %s: %s\n", path, err);
        return -1;
    }
    cJSON *j = cJSON_Parse(r.body);
    gt_httpc_resp_free(&r);
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "best"))
    {
        n += !strncmp(jstr(it, "label"), prefix, strlen(prefix));
    }
    cJSON_Delete(j);
    return n;
}

/* Runs the coordinator holds (GET /v1/runs). */
static long long count_runs(void)
{
    char err[256];
    gt_httpc_resp r;
    memset(&r, 0, sizeof r);
    if (gt_httpc_request(g_base, "GET", "/v1/runs", NULL, NULL, 0, NULL, &r, err, sizeof err))
        return -1;
    cJSON *j = cJSON_Parse(r.body);
    gt_httpc_resp_free(&r);
    long long n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "runs"));
    cJSON_Delete(j);
    return n;
}

static char *fp8_log(void)
{
    size_t len;
    char *t = gt_read_file(gt_test_data("hipblaslt_fp8.log"), &len, 0);
    CHECK_MSG(t != NULL, "cannot read hipblaslt_fp8.log");
    return t;
}

static void test_fp8_encoding(void)
{
    char *log = fp8_log();
    if (!log)
        return;
    int st;
    /* Default: OCP; f8_r and f8_fnuz_r lines stay apart (4 GEMMs). The
     * hip backend takes both encodings (gfx942 computes in FNUZ, gfx950 in
     * OCP); cuda's refusal of FNUZ is test_unsupported's. */
    cJSON *j = post("/v1/runs?backend=hip&budget=1", "text/plain", log, &st);
    CHECK_MSG(st == 201, "status %d", st);
    CHECK(!strcmp(jstr(j, "fp8_encoding"), "ocp") && jnum(j, "problems") == 4);
    int64_t id = (int64_t)jnum(j, "id");
    cJSON_Delete(j);
    CHECK(labels(id, "f8e4m3fnuz ") == 1 && labels(id, "f8e4m3 ") == 3);

    /* fnuz: every f8_r reads as FNUZ, the first line joins the f8_fnuz_r GEMM. */
    j = post("/v1/runs?backend=hip&budget=1&fp8_encoding=fnuz", "text/plain", log, &st);
    CHECK_MSG(st == 201, "status %d", st);
    CHECK(!strcmp(jstr(j, "fp8_encoding"), "fnuz") && jnum(j, "problems") == 3);
    id = (int64_t)jnum(j, "id");
    cJSON_Delete(j);
    CHECK(labels(id, "f8e4m3fnuz ") == 3);

    /* The same in a JSON body. */
    cJSON *req = cJSON_CreateObject();
    CHECK(req && cJSON_AddStringToObject(req, "log", log) &&
          cJSON_AddStringToObject(req, "backend", "hip") &&
          cJSON_AddStringToObject(req, "fp8_encoding", "fnuz"));
    char *body = cJSON_PrintUnformatted(req);
    CHECK(body != NULL);
    j = body ? post("/v1/runs", "application/json", body, &st) : NULL;
    CHECK_MSG(st == 201, "status %d", st);
    CHECK(!strcmp(jstr(j, "fp8_encoding"), "fnuz") && jnum(j, "problems") == 3);
    cJSON_Delete(j);
    free(body);

    /* Bad values are 400s naming the option; other unknown options still are. */
    cJSON_ReplaceItemInObjectCaseSensitive(req, "fp8_encoding", cJSON_CreateNumber(1));
    body = cJSON_PrintUnformatted(req);
    j = body ? post("/v1/runs", "application/json", body, &st) : NULL;
    CHECK(st == 400 && strstr(jstr(j, "error"), "fp8_encoding"));
    cJSON_Delete(j);
    free(body);
    cJSON_ReplaceItemInObjectCaseSensitive(req, "fp8_encoding", cJSON_CreateString("e4m3"));
    CHECK(cJSON_AddStringToObject(req, "fp8_encodings", "ocp") != NULL);
    body = cJSON_PrintUnformatted(req);
    j = body ? post("/v1/runs", "application/json", body, &st) : NULL;
    CHECK(st == 400 && strstr(jstr(j, "error"), "fp8_encoding=e4m3: must be ocp"));
    cJSON_Delete(j);
    free(body);
    cJSON_DeleteItemFromObjectCaseSensitive(req, "fp8_encoding");
    body = cJSON_PrintUnformatted(req);
    j = body ? post("/v1/runs", "application/json", body, &st) : NULL;
    CHECK(st == 400 && strstr(jstr(j, "error"), "unknown option fp8_encodings"));
    cJSON_Delete(j);
    free(body);
    cJSON_Delete(req);
    j = post("/v1/runs?fp8_encoding=FNUZ8", "text/plain", log, &st);
    CHECK(st == 400 && strstr(jstr(j, "error"), "fp8_encoding=FNUZ8"));
    cJSON_Delete(j);
    free(log);
}

static void test_missing_comma(void)
{
    const char *log = "- {function: matmul, M: 64, N: 64, K: 64}\n"
                      "- {function: matmul M: 64, N: 64, K: 64}\n";
    int st;
    cJSON *j = post("/v1/runs?budget=1&ncpu=1", "text/plain", log, &st);
    CHECK_MSG(st == 422, "status %d", st);
    const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "details"), 0);
    CHECK(jnum(d, "line") == 2 && !strcmp(jstr(d, "field"), "function") &&
          strstr(jstr(d, "error"), "function=matmul M: 64"));
    cJSON_Delete(j);
    j = post("/v1/runs?budget=1&ncpu=1&skip_invalid=true", "text/plain", log, &st);
    CHECK_MSG(st == 201, "status %d", st);
    d = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "skipped"), 0);
    CHECK(jnum(j, "problems") == 1 && jnum(j, "gemm_lines") == 1);
    CHECK(jnum(d, "line") == 2 && !strcmp(jstr(d, "field"), "function"));
    cJSON_Delete(j);
}

/* Problems the run's backend cannot run are reported in the POST answer,
 * never queued to fail: the run is refused with the list (like bad lines),
 * or with skip_invalid created without them and the list under
 * "unsupported"; a log with nothing runnable is refused either way. */
static void test_unsupported(void)
{
    char *log = fp8_log();
    if (!log)
        return;
    int st;
    long long runs = count_runs();
    cJSON *j = post("/v1/runs?backend=cuda&budget=1", "text/plain", log, &st);
    CHECK_MSG(st == 422, "status %d", st);
    CHECK(strstr(jstr(j, "error"), "1 problem the cuda backend cannot run"));
    const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "details"), 0);
    CHECK(strstr(jstr(d, "problem"), "f8e4m3fnuz") && jnum(d, "calls") == 51 &&
          strstr(jstr(d, "error"), "a_type f8e4m3fnuz has no cuBLASLt storage type"));
    cJSON_Delete(j);
    CHECK(count_runs() == runs);
    j = post("/v1/runs?backend=cuda&budget=1&skip_invalid=1", "text/plain", log, &st);
    CHECK_MSG(st == 201, "status %d", st);
    d = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "unsupported"), 0);
    CHECK(jnum(j, "problems") == 3 && strstr(jstr(d, "problem"), "f8e4m3fnuz"));
    cJSON_Delete(j);
    CHECK(count_runs() == runs + 1);
    /* cpu: neither fp8 nor an epilogue; nothing left to tune */
    j = post("/v1/runs?backend=cpu&budget=1&skip_invalid=1", "text/plain", log, &st);
    CHECK_MSG(st == 422, "status %d", st);
    CHECK(strstr(jstr(j, "error"), "4 problems the cpu backend cannot run") &&
          strstr(jstr(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "details"), 0), "error"),
                 "cpu backend: a_type=f8e4m3"));
    cJSON_Delete(j);
    const char *gelu = "- {function: matmul, M: 64, N: 64, K: 64, a_type: f32_r, b_type: f32_r,"
                       " c_type: f32_r, d_type: f32_r, compute_type: c_f32_r, bias_vector: true,"
                       " bias_type: f32_r, activation_type: gelu}\n"
                       "- {function: matmul, M: 32, N: 32, K: 32}\n";
    j = post("/v1/runs?backend=cpu&budget=1", "text/plain", gelu, &st);
    CHECK_MSG(st == 422 && strstr(jstr(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "details"), 0),
                                         "error"),
                                    "epilogue bias=1 activation=gelu not supported"),
              "status %d", st);
    cJSON_Delete(j);
    CHECK(count_runs() == runs + 1);
    free(log);
}

/* tests/data/hipblaslt_cuda_mix.log: bf16, f16, f32 and OCP fp8 GEMMs,
 * batched ones, NN/NT/TN, and bias + GELU epilogues (the issue 18 GEMM,
 * bf16 TN 32000x3x4096, among them): a cuda run takes the log whole (201,
 * every line a problem, nothing under "unsupported"), so every GEMM of it
 * reaches a worker, which gives it a result or a reason. The GPU half is
 * the lead's run of the same file. */
static void test_cuda_mix(void)
{
    size_t len;
    char *log = gt_read_file(gt_test_data("hipblaslt_cuda_mix.log"), &len, 0);
    CHECK_MSG(log != NULL, "cannot read hipblaslt_cuda_mix.log");
    if (!log)
        return;
    int st;
    cJSON *j = post("/v1/runs?backend=cuda&budget=1", "text/plain", log, &st);
    CHECK_MSG(st == 201, "status %d: %s", st, jstr(j, "error"));
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "unsupported");
    CHECK_MSG(jnum(j, "problems") == 12 && (!u || cJSON_GetArraySize(u) == 0),
              "problems %g, unsupported %d", jnum(j, "problems"), u ? cJSON_GetArraySize(u) : -1);
    int64_t id = (int64_t)jnum(j, "id");
    cJSON_Delete(j);
    CHECK(labels(id, "bf16 ") == 5 && labels(id, "f16 ") == 3 && labels(id, "f32 ") == 2 &&
          labels(id, "f8e4m3 ") == 2);
    free(log);
}

int main(void)
{
    if (gt_test_tmpdir(g_dir, sizeof g_dir, "loghttp"))
        return 1;
    char path[128], err[512];
    snprintf(path, sizeof path, "%s/h.db", g_dir);
    gt_store *s = gt_store_open(path, err, sizeof err);
    CHECK_MSG(s != NULL, "%s", err);
    gt_http_opts o = {.addr = "127.0.0.1", .port = 0, .max_body = 1 << 20,
                      .max_log_lines = 1000, .data_dir = g_dir};
    gt_http *h = s ? gt_http_start(s, &o, err, sizeof err) : NULL;
    CHECK_MSG(h != NULL, "%s", err);
    if (h) {
        snprintf(g_base, sizeof g_base, "http://127.0.0.1:%d", gt_http_port(h));
        RUN(test_fp8_encoding);
        RUN(test_missing_comma);
        RUN(test_unsupported);
        RUN(test_cuda_mix);
        gt_http_stop(h);
    }
    if (s)
        gt_store_close(s);
    return gt_test_done_rm(g_dir);
}
