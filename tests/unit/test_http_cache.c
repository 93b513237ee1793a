/* test_http_cache.c: the run-view cache of the HTTP API (server/http_cache.c).
 * What it proves: a fresh view is served from the cache; an expired view is
 * re-rendered by exactly one request while the others get the previous text
 * (single flight); a renderer that never puts is replaced after a TTL; a
 * stale text is not served past GT_HTTP_VIEW_STALE_MS; clear drops all. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gt_test.h"
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

int main(void)
{
    RUN(test_single_flight);
    return gt_test_done();
}
