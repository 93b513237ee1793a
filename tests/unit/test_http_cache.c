/* test_http_cache.c: the run-view cache of the HTTP API (server/http_cache.c).
 * What it proves: a fresh view is served from the cache; an expired view is
 * re-rendered by exactly one request while the others get the previous text
 * (single flight); a renderer that never puts is replaced after a TTL; a
 * stale text is not served past GT_HTTP_VIEW_STALE_MS; clear drops all.
 * With the refresher: an expired view is answered with its previous text at
 * once and re-rendered on the cache's thread, once for many requests; a
 * render begun before a clear is not put back; fini waits for a render.
 * renew (a POST): the run it names and the cached run lists are rendered again
 * at once, in the caller, so their next GET renders nothing; other views are
 * dropped; a renew without a renderer is a clear. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gt_test.h"
#include "gt_util.h"
#include "http_priv.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* 1 when get returns a copy equal to want (freed), 0 when it returns NULL. */
static int got(gt_http_cache *c, const char *key, double ttl, const char *want)
{
    char *t = gt_http_cache_get(c, key, ttl);
    if (!t)
        return 0;
    int eq = want && !strcmp(t, want);
    free(t);
    return eq ? 1 : -1;
}

static void test_single_flight(void)
{
    gt_http_cache c;
    CHECK(gt_http_cache_init(&c) == 0);
    const double ttl = 40;
    CHECK(got(&c, "run/1", ttl, NULL) == 0); /* empty: render */
    gt_http_cache_put(&c, "run/1", "v1");
    CHECK(got(&c, "run/1", ttl, "v1") == 1); /* fresh */
    CHECK(got(&c, "run/2", ttl, NULL) == 0); /* other keys are separate */
    sleep_ms(60);
    CHECK(got(&c, "run/1", ttl, NULL) == 0);  /* expired: this caller renders */
    CHECK(got(&c, "run/1", ttl, "v1") == 1);  /* the others: previous text */
    CHECK(got(&c, "run/1", ttl, "v1") == 1);
    gt_http_cache_put(&c, "run/1", "v2");
    CHECK(got(&c, "run/1", ttl, "v2") == 1);  /* the new text at once */

    /* A renderer that never puts: after a TTL another caller renders. */
    sleep_ms(60);
    CHECK(got(&c, "run/1", ttl, NULL) == 0);
    CHECK(got(&c, "run/1", ttl, "v2") == 1);
    sleep_ms(60);
    CHECK(got(&c, "run/1", ttl, NULL) == 0);
    CHECK(got(&c, "run/1", ttl, "v2") == 1);

    /* Never staler than ttl + GT_HTTP_VIEW_STALE_MS, renderer or not. */
    gt_http_cache_put(&c, "run/1", "v3");
    sleep_ms((long)(ttl + GT_HTTP_VIEW_STALE_MS) + 20);
    CHECK(got(&c, "run/1", ttl, NULL) == 0); /* renderer */
    CHECK(got(&c, "run/1", ttl, NULL) == 0); /* too old even while it renders */

    gt_http_cache_put(&c, "run/1", "v4");
    gt_http_cache_clear(&c);
    CHECK(got(&c, "run/1", ttl, NULL) == 0); /* a POST's change is seen at once */
    gt_http_cache_fini(&c);
}

static struct {
    pthread_mutex_t mu;
    int calls;
    long sleep_ms;
    char last_key[48];
} g_r = {PTHREAD_MUTEX_INITIALIZER, 0, 0, ""};

static char *fake_render(void *ctx, const char *key)
{
    (void)ctx;
    pthread_mutex_lock(&g_r.mu);
    int n = ++g_r.calls;
    long ms = g_r.sleep_ms;
    snprintf(g_r.last_key, sizeof g_r.last_key, "%s", key);
    pthread_mutex_unlock(&g_r.mu);
    sleep_ms(ms);
    char *t = malloc(16);
    if (t)
        snprintf(t, 16, "r%d", n);
    return t;
}

static int calls(void)
{
    pthread_mutex_lock(&g_r.mu);
    int n = g_r.calls;
    pthread_mutex_unlock(&g_r.mu);
    return n;
}

static void test_refresher(void)
{
    gt_http_cache c;
    CHECK(gt_http_cache_init(&c) == 0);
    CHECK(gt_http_cache_start(&c, fake_render, NULL) == 0);
    const double ttl = 40;
    g_r.sleep_ms = 300; /* a render far slower than the TTL */
    CHECK(got(&c, "run/1", ttl, NULL) == 0); /* never rendered: the request renders */
    gt_http_cache_put(&c, "run/1", "v1");
    sleep_ms(60);
    double t0 = gt_mono_ms();
    for (int i = 0; i < 5; i++)
        CHECK(got(&c, "run/1", ttl, "v1") == 1); /* expired: the previous text, at once */
    CHECK(gt_mono_ms() - t0 < 150);                  /* nobody waited for the 300 ms render */
    const double peek = 1e9; /* a TTL under which nothing expires: looks, asks no render */
    for (int i = 0; i < 1000 && got(&c, "run/1", peek, "r1") != 1; i++)
        sleep_ms(2);
    CHECK(calls() == 1 && !strcmp(g_r.last_key, "run/1")); /* one render for the five */
    CHECK(got(&c, "run/1", peek, "r1") == 1);               /* and its text served */

    /* A clear (a POST) during a render: what was rendered before it is dropped. */
    sleep_ms(60);
    CHECK(got(&c, "run/1", ttl, "r1") == 1); /* expired again: hands it to the refresher */
    for (int i = 0; i < 1000 && calls() < 2; i++)
        sleep_ms(1);
    gt_http_cache_clear(&c); /* while render 2 sleeps its 300 ms */
    sleep_ms(400);
    CHECK(calls() == 2);
    CHECK(got(&c, "run/1", ttl, NULL) == 0); /* not r2: the request renders afresh */

    /* Too old (a refresher that fell behind): the request renders. */
    g_r.sleep_ms = 0;
    gt_http_cache_put(&c, "run/2", "w1");
    sleep_ms((long)(ttl + GT_HTTP_VIEW_STALE_MS) + 20);
    CHECK(got(&c, "run/2", ttl, NULL) == 0);

    /* fini waits for a render in progress */
    g_r.sleep_ms = 300;
    gt_http_cache_put(&c, "run/3", "x1");
    sleep_ms(60);
    CHECK(got(&c, "run/3", ttl, "x1") == 1);
    for (int i = 0; i < 1000 && calls() < 3; i++)
        sleep_ms(1);
    gt_http_cache_fini(&c); /* while render 3 sleeps */
    CHECK(calls() == 3);
}

static void test_renew(void)
{
    gt_http_cache c;
    CHECK(gt_http_cache_init(&c) == 0);
    const double ttl = 60000, peek = 1e9;
    /* without a renderer: a clear */
    gt_http_cache_put(&c, "runs?50&0&&", "l0");
    const char *also9[] = {"run/9"};
    gt_http_cache_renew(&c, also9, 1, GT_HTTP_RUNS_KEY_PREFIX);
    CHECK(got(&c, "runs?50&0&&", peek, NULL) == 0 && got(&c, "run/9", peek, NULL) == 0);
    CHECK(gt_http_cache_start(&c, fake_render, NULL) == 0);
    g_r.sleep_ms = 0;
    int before = calls();
    gt_http_cache_put(&c, "runs?50&0&&", "l1");
    gt_http_cache_put(&c, "runs?10&0&done&", "l2");
    gt_http_cache_put(&c, "run/1", "v1");
    /* run 2 created: its view and the list's default page (not cached yet) asked for */
    const char *also2[] = {"run/2", "runs?50&0&&", "run/2"};
    gt_http_cache_renew(&c, also2, 3, GT_HTTP_RUNS_KEY_PREFIX);
    CHECK(calls() == before + 3); /* run/2 and the two lists, each rendered once, in the call */
    char *a = gt_http_cache_get(&c, "run/2", ttl), *b = gt_http_cache_get(&c, "runs?50&0&&", ttl),
         *d = gt_http_cache_get(&c, "runs?10&0&done&", ttl);
    CHECK(a && b && d && a[0] == 'r' && b[0] == 'r' && d[0] == 'r'); /* fresh renders, not l1/l2 */
    free(a);
    free(b);
    free(d);
    CHECK(got(&c, "run/1", ttl, NULL) == 0); /* another run's view: dropped, as by clear */
    CHECK(calls() == before + 3);            /* and no GET above rendered */
    gt_http_cache_fini(&c);
}

int main(void)
{
    RUN(test_single_flight);
    RUN(test_refresher);
    RUN(test_renew);
    return gt_test_done();
}
