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
 * req/s on 16 cores; bench/coord_bench.sh).
 *
 * With the refresher running (gemmtuned starts it), not even that one
 * request renders: it gets the previous text too, and a thread of the
 * cache renders the view. The request that rendered waited for it, and so
 * did the other connections of its server thread: with 256 workers
 * saturating 2 cores, a 1000-GEMM run view took 70-200 ms to render, and
 * those waits were the API's p90 and p99 (docs/coord_bench.md). Only a view
 * never rendered yet, or older than GT_HTTP_VIEW_STALE_MS past its TTL (a
 * refresher that fell behind), is rendered by the request. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "http_priv.h"

int gt_http_cache_init(gt_http_cache *c)
{
    memset(c, 0, sizeof *c);
    if (pthread_mutex_init(&c->mu, NULL))
        return -1;
    if (pthread_cond_init(&c->wake, NULL)) {
        pthread_mutex_destroy(&c->mu);
        return -1;
    }
    return 0;
}

/* Puts text (taken) under slot i; caller holds mu. */
static void put_locked(gt_http_cache *c, size_t i, char *text)
{
    free(c->e[i].text);
    c->e[i].text = text;
    c->e[i].at_ms = gt_mono_ms();
    c->e[i].refresh_ms = 0;
    c->e[i].queued = 0;
}

static void *refresher(void *arg)
{
    gt_http_cache *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        size_t i = 0;
        while (i < GT_HTTP_CACHE_SLOTS && !(c->e[i].queued && c->e[i].text))
            i++;
        if (i == GT_HTTP_CACHE_SLOTS) {
            pthread_cond_wait(&c->wake, &c->mu);
            continue;
        }
        char key[sizeof c->e[0].key];
        memcpy(key, c->e[i].key, sizeof key);
        c->e[i].queued = 0;
        unsigned long gen = c->gen;
        pthread_mutex_unlock(&c->mu);
        char *text = c->render(c->render_ctx, key); /* the store's work, unlocked */
        pthread_mutex_lock(&c->mu);
        /* the slot may have been cleared or reused meanwhile: only the same
         * key, and nothing rendered before a clear, is put back */
        if (text && gen == c->gen && c->e[i].text && !strcmp(c->e[i].key, key)) {
            put_locked(c, i, text);
            text = NULL;
        }
        free(text);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int gt_http_cache_start(gt_http_cache *c, gt_http_render_fn render, void *ctx)
{
    pthread_mutex_lock(&c->mu);
    c->render = render;
    c->render_ctx = ctx;
    c->stop = 0;
    int rc = pthread_create(&c->thread, NULL, refresher, c);
    c->running = rc == 0;
    pthread_mutex_unlock(&c->mu);
    return rc == 0 ? 0 : -1;
}

void gt_http_cache_fini(gt_http_cache *c)
{
    pthread_mutex_lock(&c->mu);
    int running = c->running;
    c->stop = 1;
    pthread_cond_broadcast(&c->wake);
    pthread_mutex_unlock(&c->mu);
    if (running)
        pthread_join(c->thread, NULL);
    for (size_t i = 0; i < GT_HTTP_CACHE_SLOTS; i++)
        free(c->e[i].text);
    pthread_cond_destroy(&c->wake);
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
        int young = age < ttl_ms + GT_HTTP_VIEW_STALE_MS;
        if (fresh || (refreshing && young)) {
            copy = strdup(c->e[i].text);
        } else if (c->running && young) {
            c->e[i].refresh_ms = now; /* the refresher renders; this caller gets the text */
            c->e[i].queued = 1;
            pthread_cond_signal(&c->wake);
            copy = strdup(c->e[i].text);
        } else {
            c->e[i].refresh_ms = now; /* this caller renders */
        }
        break;
    }
    pthread_mutex_unlock(&c->mu);
    return copy;
}

/* Puts text (taken) under key, in its slot or the next one; caller holds mu. */
static void put_key_locked(gt_http_cache *c, const char *key, char *text)
{
    size_t slot = c->next;
    for (size_t i = 0; i < GT_HTTP_CACHE_SLOTS; i++)
        if (c->e[i].text && !strcmp(c->e[i].key, key))
            slot = i;
    if (slot == c->next)
        c->next = (c->next + 1) % GT_HTTP_CACHE_SLOTS;
    put_locked(c, slot, text);
    strcpy(c->e[slot].key, key);
}

void gt_http_cache_put(gt_http_cache *c, const char *key, const char *text)
{
    if (strlen(key) >= sizeof c->e[0].key)
        return;
    char *copy = strdup(text);
    if (!copy)
        return; /* a cache that cannot grow is just a miss next time */
    pthread_mutex_lock(&c->mu);
    put_key_locked(c, key, copy);
    pthread_mutex_unlock(&c->mu);
}

/* Drops every text; caller holds mu. */
static void clear_locked(gt_http_cache *c)
{
    for (size_t i = 0; i < GT_HTTP_CACHE_SLOTS; i++) {
        free(c->e[i].text);
        c->e[i].text = NULL;
        c->e[i].queued = 0;
    }
    c->gen++;
}

void gt_http_cache_clear(gt_http_cache *c)
{
    pthread_mutex_lock(&c->mu);
    clear_locked(c);
    pthread_mutex_unlock(&c->mu);
}

/* Whether key is among keys[0..n). */
static int has_key(char (*keys)[48], size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(keys[i], key))
            return 1;
    return 0;
}

void gt_http_cache_renew(gt_http_cache *c, const char *const *also, size_t nalso, const char *prefix)
{
    _Static_assert(sizeof c->e[0].key == 48, "has_key's key size");
    char keys[GT_HTTP_CACHE_SLOTS + GT_HTTP_RENEW_MAX][48];
    size_t n = 0;
    for (size_t i = 0; i < nalso && i < GT_HTTP_RENEW_MAX; i++)
        if (also[i] && strlen(also[i]) < sizeof keys[0] && !has_key(keys, n, also[i]))
            strcpy(keys[n++], also[i]);
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < GT_HTTP_CACHE_SLOTS; i++)
        if (c->e[i].text && prefix && !strncmp(c->e[i].key, prefix, strlen(prefix)) &&
            !has_key(keys, n, c->e[i].key))
            memcpy(keys[n++], c->e[i].key, sizeof keys[0]);
    clear_locked(c);
    unsigned long gen = c->gen;
    gt_http_render_fn render = c->render;
    void *ctx = c->render_ctx;
    pthread_mutex_unlock(&c->mu);
    for (size_t k = 0; render && k < n; k++) {
        char *text = render(ctx, keys[k]); /* the store's work, unlocked */
        if (!text)
            continue; /* the next GET renders it, as after a clear */
        pthread_mutex_lock(&c->mu);
        if (gen == c->gen) { /* nothing cleared since: this text saw the POST's change */
            put_key_locked(c, keys[k], text);
            text = NULL;
        }
        pthread_mutex_unlock(&c->mu);
        free(text);
    }
}

char *gt_http_view_text(cJSON *j)
{
    if (!j)
        return NULL;
    char *txt = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!txt)
        return NULL;
    size_t n = strlen(txt);
    char *t2 = realloc(txt, n + 2);
    if (!t2) {
        free(txt);
        return NULL;
    }
    t2[n] = '\n';
    t2[n + 1] = '\0';
    return t2;
}

enum MHD_Result gt_http_send_view(gt_req *q, const char *key, cJSON *j)
{
    char *t2 = gt_http_view_text(j);
    if (!t2)
        return MHD_NO;
    gt_http_cache_put(&q->h->views, key, t2);
    return gt_http_send_text(q, MHD_HTTP_OK, "application/json", t2);
}
