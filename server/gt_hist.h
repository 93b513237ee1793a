/* gt_hist.h: a latency histogram in the buckets /metrics exposes (the
 * observing side: the HTTP registry and the dispatcher fill them,
 * metrics.c renders them). */
#ifndef GT_HIST_H
#define GT_HIST_H

#include <stdint.h>

/* Histogram bucket upper bounds in seconds (the +Inf bucket is implicit). */
#define GT_METRICS_NBUCKETS 12
extern const double gt_metrics_buckets[GT_METRICS_NBUCKETS];

typedef struct gt_hist {
    uint64_t in[GT_METRICS_NBUCKETS]; /* observations in (bound[i-1], bound[i]], not cumulative */
    uint64_t count;                   /* all observations, the +Inf bucket */
    double sum;
} gt_hist;
void gt_hist_observe(gt_hist *h, double v);

#endif
