/* gt_metrics.h: the coordinator's /metrics in the Prometheus text exposition
 * format, version 0.0.4 (module prefix gt_metrics_).
 *
 * Three layers: text helpers (label and HELP escaping, sample lines, value
 * formatting, histograms) that tests/unit/test_metrics.c checks against the
 * spec; a registry of HTTP request counts and durations per route family,
 * updated by every HTTP thread; and gt_metrics_render, which writes the whole
 * page from the store's counts (gt_store_stats.h), its write health
 * (gt_store_health_get) and the registry.
 * docs/observability.md lists every series. */
#ifndef GT_METRICS_H
#define GT_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "gt_dispatch.h"
#include "gt_hist.h"
#include "gt_store.h"
#include "gt_store_stats.h"
#include "gt_util.h"

/* ---- text format helpers (each returns 0, or -1 when out of memory) ---- */

/* Histograms (gt_hist, gt_hist_observe): gt_hist.h. */

typedef struct gt_label {
    const char *name;
    const char *value;
} gt_label;

/* A label value: backslash, double quote and line feed escaped; bytes that
 * are not valid UTF-8 become U+FFFD (the format is UTF-8, and host names or
 * device models come from workers). */
int gt_metrics_escape_label(gt_str *b, const char *v);
/* HELP text: backslash and line feed escaped. */
int gt_metrics_escape_help(gt_str *b, const char *v);
/* A sample value as the format writes it: integers exactly, other numbers
 * in the fewest digits that read back the same, +Inf, -Inf, NaN. */
void gt_metrics_format_value(char *buf, size_t n, double v);
/* The # HELP and # TYPE lines of a family. type: counter, gauge, histogram. */
int gt_metrics_family(gt_str *b, const char *name, const char *type, const char *help);
/* One sample line: name{l1="v1",...} value. */
int gt_metrics_sample(gt_str *b, const char *name, const gt_label *labels, size_t nlabels,
                      double v);
/* The _bucket (cumulative, with le, ending at +Inf), _sum and _count lines
 * of one histogram; nlabels <= 7. */
int gt_metrics_histogram(gt_str *b, const char *name, const gt_label *labels, size_t nlabels,
                         const gt_hist *h);

/* ---- HTTP request accounting ---- */

/* Route families: a fixed set, so the label's cardinality is bounded
 * whatever URLs clients send. */
typedef enum gt_route {
    GT_ROUTE_HEALTHZ,
    GT_ROUTE_READYZ,
    GT_ROUTE_METRICS,
    GT_ROUTE_RUNS,
    GT_ROUTE_RUN,
    GT_ROUTE_RESULTS,
    GT_ROUTE_EXPORT,
    GT_ROUTE_CANCEL,
    GT_ROUTE_EVENTS,
    GT_ROUTE_TIMELINE,
    GT_ROUTE_VERIFY,
    GT_ROUTE_WORKERS,
    GT_ROUTE_STATIC,
    GT_ROUTE_OTHER,
    GT_ROUTE_COUNT
} gt_route;
/* The family's label value, e.g. "/v1/runs/{id}". */
const char *gt_route_name(gt_route r);

typedef struct gt_http_metrics gt_http_metrics;
gt_http_metrics *gt_http_metrics_new(void);
void gt_http_metrics_free(gt_http_metrics *m);
/* Counts one answered request (thread-safe). */
void gt_http_metrics_observe(gt_http_metrics *m, gt_route r, unsigned code, double seconds);

/* ---- the /metrics page ---- */
typedef struct gt_metrics_inputs {
    gt_store *store;                       /* the counts are read on this connection */
    gt_store *writer;                      /* whose write health gemmtune_store_* report
                                              (the connection that writes); NULL: store */
    gt_results_tally *tally;               /* results totals between scrapes, or NULL */
    const gt_http_metrics *http;
    int64_t now_ms;
    double start_time_s;                   /* process start, Unix seconds */
    uint64_t (*dispatch_requests)(void *); /* NULL: the series is left out */
    /* The dispatcher's refusals, implausible results and sessions
     * (gt_dispatch_stats_get); NULL: those series are left out. */
    void (*dispatch_stats)(void *, gt_dispatch_stats *);
    void *dispatch_ctx;
    unsigned sse_streams, sse_max;         /* open /events streams and their limit */
} gt_metrics_inputs;

/* Appends the whole exposition to b. 0, or -1 with err (database, memory). */
int gt_metrics_render(gt_str *b, const gt_metrics_inputs *in, char *err, size_t errlen);

#endif
