/* http_cache.c: a short-lived cache of the rendered run views (GET /v1/runs
 * and /v1/runs/{id}). Rendering a run costs O(results) store work (progress
 * counts, best per problem: ~15 ms at 50k results); dashboards and `status
 * --wait` poll these views many times a second across clients. Serving the
 * same text for 250 ms keeps the cost per second bounded whatever the
 * polling rate; any POST (new run, cancel) drops the cache so a client
 * always sees its own change at once.
 *
 * Expiry is single-flight: the first request to find a view expired renders
 * it, and until its text is put back every other request for that view gets
 * the previous text (at most GT_HTTP_VIEW_STALE_MS old). Without that, every
 * connection polling the view renders it at once each time it expires, and
 * those requests (~15 ms each, all competing for the cores the dispatcher
 * needs) were the whole p99 of the coordinator benchmark (36 ms at 99k
 * req/s on 16 cores; bench/coord_bench.sh). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "http_priv.h"

int gt_http_cache_init(gt_http_cache *c)
{
    memset(c, 0, sizeof *c);
    return pthread_mutex_init(&c->mu, NULL) == 0 ? 0 : -1;
}

void gt_http_cache_fini(gt_http_cache *c)
{
    for (size_t i = 0; i < GT_HTTP_CACHE_SLOTS; i++)
        free(c->e[i].text);
    pthread_mutex_destroy(&c->mu);
}

char *gt_http_cache_get(gt_http_cache *c, const char *key, double ttl_ms)
{
    char *copy = NULL;
    double now = gt_mono_ms();
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < GT_HTTP_CACHE_SLOTS; i++) {
        if (!c->e[i].text || strcmp(c->e[i].key, key))
            continue;
        double age = now - c->e[i].at_ms;
        int fresh = age < ttl_ms;
        /* Expired: serve it stale while one request re-renders; a renderer
         * that failed (never put) is replaced after a TTL of its own. */
        int refreshing = c->e[i].refresh_ms > 0 && now - c->e[i].refresh_ms < ttl_ms;
        if (fresh || (refreshing && age < ttl_ms + GT_HTTP_VIEW_STALE_MS))
            copy = strdup(c->e[i].text);
        else
            c->e[i].refresh_ms = now; /* this caller renders */
        break;
    }
    pthread_mutex_unlock(&c->mu);
    return copy;
}

void gt_http_cache_put(gt_http_cache *c, const char *key, const char *text)
{
    if (strlen(key) >= sizeof c->e[0].key)
        return;
    char *copy = strdup(text);
    if (!copy)
        return; /* a cache that cannot grow is just a miss next time */
    pthread_mutex_lock(&c->mu);
    size_t slot = c->next;
    for (size_t i = 0; i < GT_HTTP_CACHE_SLOTS; i++)
        if (c->e[i].text && !strcmp(c->e[i].key, key))
            slot = i;
    if (slot == c->next)
        c->next = (c->next + 1) % GT_HTTP_CACHE_SLOTS;
    free(c->e[slot].text);
    c->e[slot].text = copy;
    c->e[slot].at_ms = gt_mono_ms();
    c->e[slot].refresh_ms = 0;
    strcpy(c->e[slot].key, key);
    pthread_mutex_unlock(&c->mu);
}

void gt_http_cache_clear(gt_http_cache *c)
{
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < GT_HTTP_CACHE_SLOTS; i++) {
        free(c->e[i].text);
        c->e[i].text = NULL;
    }
    pthread_mutex_unlock(&c->mu);
}

enum MHD_Result gt_http_send_view(gt_req *q, const char *key, cJSON *j)
{
    if (!j)
        return MHD_NO;
    char *txt = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!txt)
        return MHD_NO;
    size_t n = strlen(txt);
    char *t2 = realloc(txt, n + 2);
    if (!t2) {
        free(txt);
        return MHD_NO;
    }
    t2[n] = '\n';
    t2[n + 1] = '\0';
    gt_http_cache_put(&q->h->views, key, t2);
    return gt_http_send_text(q, MHD_HTTP_OK, "application/json", t2);
}
