/* test_http_views.c: the cached run views of a real HTTP server (server/
 * http.c, http_cache.c) re-rendered by the cache's refresher thread from
 * their keys alone. A run is cancelled behind the API's back (a store call,
 * so no POST drops the cache); once the views' TTL has passed, GET
 * /v1/runs/{id} and GET /v1/runs?limit=5&backend=cpu answer at once
 * with the text they had, and the refresher's text, saying "cancelled",
 * arrives well before a request would render it itself (TTL +
 * GT_HTTP_VIEW_STALE_MS): so the refresher understood both kinds of key. */
#include "gt_http.h"
#include "gt_httpc.h"
#include "gt_store.h"
#include "gt_test.h"
#include "gt_util.h"
#include "http_priv.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char g_base[64];

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* GET path's JSON (NULL on failure), and how long it took in *ms (when ms). */
static cJSON *get(const char *path, double *ms)
{
    char err[256];
    gt_httpc_resp r;
    memset(&r, 0, sizeof r);
    double t0 = gt_mono_ms();
    if (gt_httpc_request(g_base, "GET", path, NULL, NULL, 0, NULL, &r, err, sizeof err)) {
        fprintf(stderr, "  GET %s: %s\n", path, err);
        return NULL;
    }
    if (ms)
        *ms = gt_mono_ms() - t0;
    cJSON *j = r.status == 200 ? cJSON_Parse(r.body) : NULL;
    gt_httpc_resp_free(&r);
    return j;
}

/* The run's state as GET /v1/runs/{id} and as the first entry of the
 * list page give it ("" when absent). */
static void states(int64_t id, char run[16], char list[16])
{
    char path[64];
    snprintf(path, sizeof path, "/v1/runs/%lld", (long long)id);
    cJSON *j = get(path, NULL);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "state");
    snprintf(run, 16, "%s", cJSON_IsString(v) ? v->valuestring : "");
    cJSON_Delete(j);
    j = get("/v1/runs?limit=5&backend=cpu", NULL);
    v = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "runs"), 0),
                                         "state");
    snprintf(list, 16, "%s", cJSON_IsString(v) ? v->valuestring : "");
    cJSON_Delete(j);
}

int main(void)
{
    char dir[64], path[128], err[512];
    if (gt_test_tmpdir(dir, sizeof dir, "httpviews"))
        return 1;
    snprintf(path, sizeof path, "%s/h.db", dir);
    gt_store *s = gt_store_open(path, err, sizeof err);
    CHECK_MSG(s != NULL, "%s", err);
    gt_http_opts o = {.addr = "127.0.0.1", .port = 0, .max_body = 1 << 20, .max_log_lines = 1000,
                      .data_dir = dir};
    gt_http *h = s ? gt_http_start(s, &o, err, sizeof err) : NULL;
    CHECK_MSG(h != NULL, "%s", err);
    if (!h) {
        if (s)
            gt_store_close(s);
        return gt_test_done();
    }
    snprintf(g_base, sizeof g_base, "http://127.0.0.1:%d", gt_http_port(h));
    const char *csv = "M,N,K\n64,64,64\n32,32,32\n";
    gt_httpc_resp r;
    memset(&r, 0, sizeof r);
    int posted = gt_httpc_request(g_base, "POST", "/v1/runs?format=csv&backend=cpu&budget=4", "text/csv",
                                  csv, strlen(csv), NULL, &r, err, sizeof err) == 0 &&
                 r.status == 201;
    CHECK_MSG(posted, "POST: %s %d %s", err, r.status, r.body ? r.body : "");
    cJSON *made = posted ? cJSON_Parse(r.body) : NULL;
    gt_httpc_resp_free(&r);
    const cJSON *idv = cJSON_GetObjectItemCaseSensitive(made, "id");
    int64_t id = cJSON_IsNumber(idv) ? (int64_t)idv->valuedouble : 0;
    cJSON_Delete(made);
    CHECK(id > 0);

    char run[16], list[16];
    states(id, run, list); /* rendered by these requests, then cached */
    CHECK_MSG(!strcmp(run, "running") && !strcmp(list, "running"), "%s %s", run, list);
    double cached_at = gt_mono_ms();
    CHECK(gt_store_cancel_run(s, id, err, sizeof err) == 0); /* no POST: the cache stays */
    states(id, run, list);
    CHECK_MSG(!strcmp(run, "running") && !strcmp(list, "running"), "still cached: %s %s", run, list);

    sleep_ms((long)GT_HTTP_VIEW_TTL_MS + 50);
    char runpath[64];
    snprintf(runpath, sizeof runpath, "/v1/runs/%lld", (long long)id);
    cJSON *j = get(runpath, NULL); /* expired: the previous text, the refresher renders */
    CHECK(j != NULL);
    cJSON_Delete(j);
    int seen = 0;
    while (!seen && gt_mono_ms() - cached_at < GT_HTTP_VIEW_TTL_MS + GT_HTTP_VIEW_STALE_MS - 150) {
        states(id, run, list);
        seen = !strcmp(run, "cancelled") && !strcmp(list, "cancelled");
        if (!seen)
            sleep_ms(20);
    }
    CHECK_MSG(seen, "the refresher's views: run %s, list %s, %.0f ms after the first render", run, list,
              gt_mono_ms() - cached_at);
    gt_http_stop(h);
    gt_store_close(s);
    return gt_test_done_rm(dir);
}
