/* paired.c: the paired, interleaved timing protocol (gt_paired.h).
 *
 * Why the median of per-round ratios with an order-statistic interval, and
 * not a bootstrap or a t interval: the interval [x_(k), x_(n+1-k)] covers the
 * median of the ratios' distribution with probability >= the confidence for
 * any continuous distribution, needing only that rounds are independent
 * alike (what interleaving, pairing and the per-round shuffle aim at). It is
 * exact, not asymptotic, so it holds at the 8 to 40 rounds a final phase
 * affords, where a bootstrap of a median is coarse and seed-dependent and a
 * t interval is misled by the heavy right tail of timings (one disturbed
 * round moves a mean a lot, an order statistic by one rank). It is also
 * deterministic, so the worker's decision, `gemmtune verify` and the unit
 * tests compute the same numbers from the same timings. */
#include "gt_paired.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gt_policy.h"
#include "gt_util.h"

void gt_paired_opts_init(gt_paired_opts *o, int max_rounds, double ci_width)
{
    memset(o, 0, sizeof *o);
    o->min_rounds = GT_PAIRED_MIN_ROUNDS;
    o->max_rounds = max_rounds;
    o->ci_width = ci_width;
    o->confidence = GT_PAIRED_CONFIDENCE;
    o->seed = 1;
}

int gt_paired_ci_rank(int n, double confidence)
{
    if (n < 1 || !(confidence > 0 && confidence < 1))
        return 0;
    double alpha2 = (1 - confidence) / 2, cum = 0;
    int k = 0;
    /* P(B < j + 1) = P(B <= j), in log space so large n cannot overflow */
    for (int j = 0; j < n; j++) {
        double lp = lgamma(n + 1.0) - lgamma(j + 1.0) - lgamma(n - j + 1.0) - n * log(2.0);
        cum += exp(lp);
        if (cum > alpha2 * (1 + 1e-12))
            break;
        k = j + 1;
    }
    /* the interval needs lower <= upper order statistic */
    return k > 0 && 2 * k <= n + 1 ? k : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void gt_paired_stat_of(double *v, int n, double confidence, gt_paired_stat *st)
{
    memset(st, 0, sizeof *st);
    st->rounds = n;
    if (n <= 0)
        return;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    st->uplift = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    int k = gt_paired_ci_rank(n, confidence);
    if (k > 0) {
        st->ok = 1;
        st->lo = v[k - 1];
        st->hi = v[n - k];
    } else {
        /* no interval at this confidence: no lower bound (nothing is
         * beyond the noise), the largest ratio seen above */
        st->lo = 0;
        st->hi = v[n - 1];
    }
}

int gt_paired_narrow(const gt_paired_stat *st, double ci_width)
{
    return st->ok && st->uplift > 0 && (st->hi - st->lo) / st->uplift <= ci_width;
}

int gt_paired_significant(const gt_paired_stat *st)
{
    return st->ok && st->lo > GT_MIN_GAIN;
}

double gt_paired_median_time(const double *times, int stride, int i, int rounds)
{
    double *v = malloc(sizeof *v * (size_t)(rounds > 0 ? rounds : 1));
    int n = 0;
    if (!v)
        return 0;
    for (int r = 0; r < rounds; r++) {
        double t = times[(size_t)i * (size_t)stride + (size_t)r];
        if (t > 0 && isfinite(t))
            v[n++] = t;
    }
    double m = 0;
    if (n > 0) {
        qsort(v, (size_t)n, sizeof *v, cmp_double);
        m = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    }
    free(v);
    return m;
}

void gt_paired_stats(const gt_paired_opts *o, int n, const int *alive, const double *times,
                     int stride, int rounds, gt_paired_stat *st)
{
    double *v = malloc(sizeof *v * (size_t)(rounds > 0 ? rounds : 1));
    for (int i = 0; i < n; i++) {
        memset(&st[i], 0, sizeof st[i]);
        if (!v || !alive[i])
            continue;
        if (i == 0) {
            /* the baseline against itself: exactly 1 in every round */
            st[0] = (gt_paired_stat){.ok = 1, .rounds = rounds, .uplift = 1, .lo = 1, .hi = 1};
            continue;
        }
        int m = 0;
        for (int r = 0; r < rounds; r++) {
            double b = times[r], c = times[(size_t)i * (size_t)stride + (size_t)r];
            if (b > 0 && c > 0 && isfinite(b) && isfinite(c))
                v[m++] = b / c;
        }
        gt_paired_stat_of(v, m, o->confidence, &st[i]);
    }
    free(v);
}

/* Whether the rounds may stop: every live finalist's interval is narrower
 * than the target (ci_width <= 0: never, the budget runs out), or no
 * finalist is left to decide about. */
static int may_stop(const gt_paired_opts *o, int n, const int *alive, const gt_paired_stat *st)
{
    for (int i = 1; i < n; i++) {
        if (!alive[i])
            continue;
        if (!(o->ci_width > 0) || !gt_paired_narrow(&st[i], o->ci_width))
            return 0;
    }
    return 1;
}

int gt_paired_run(const gt_paired_opts *o, int n, int *alive, gt_paired_time_fn fn, void *ctx,
                  double *times, int *rounds, gt_paired_stat *st)
{
    int maxr = o->max_rounds > 0 ? o->max_rounds : 1;
    int minr = o->min_rounds > 0 ? o->min_rounds : 1;
    /* the fewest rounds with an interval at this confidence */
    int need = 1;
    while (need < 1000 && gt_paired_ci_rank(need, o->confidence) == 0)
        need++;
    if (minr < need)
        minr = need;
    if (minr > maxr)
        minr = maxr;
    int *order = malloc(sizeof *order * (size_t)n);
    uint64_t seed = o->seed;
    int rc = -1;
    *rounds = 0;
    memset(times, 0, sizeof *times * (size_t)n * (size_t)maxr);
    memset(st, 0, sizeof *st * (size_t)n);
    if (!order)
        return -1;
    for (int r = 0; r < maxr; r++) {
        for (int i = 0; i < n; i++)
            order[i] = i;
        /* Fisher-Yates over splitmix64: the same order on every platform */
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(gt_rand_u64(&seed) % (uint64_t)(i + 1));
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int q = 0; q < n; q++) {
            int i = order[q];
            if (!alive[i])
                continue;
            double us = 0;
            int f = fn(ctx, i, &us);
            if (f < 0)
                goto out;
            if (f > 0 || !(us > 0) || !isfinite(us)) {
                alive[i] = 0;
                continue;
            }
            times[(size_t)i * (size_t)maxr + (size_t)r] = us;
        }
        *rounds = r + 1;
        if (!alive[0])
            break; /* nothing left to pair with */
        if (*rounds < minr)
            continue;
        gt_paired_stats(o, n, alive, times, maxr, *rounds, st);
        if (may_stop(o, n, alive, st))
            break;
    }
    gt_paired_stats(o, n, alive, times, maxr, *rounds, st);
    rc = 0;
out:
    free(order);
    return rc;
}
