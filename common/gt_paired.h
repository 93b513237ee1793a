/* gt_paired.h: the paired, interleaved timing protocol that says how much
 * faster a configuration is than the default, and how sure that is (module
 * prefix gt_paired_). Shared by the worker's final phase (worker/runner.c,
 * every backend) and `gemmtune verify` (cli/cli_verify.c): a claim and its
 * re-check are measured the same way, by this one implementation.
 *
 *   round r: the baseline (entry 0) and every finalist are timed once each,
 *            in an order shuffled per round (so no entry always runs after a
 *            long kernel, or first after an idle gap);
 *   per finalist i: the round's paired ratio x_r = baseline_r / finalist_r
 *            (> 1: faster than the default). Drift that slows the whole
 *            round (clocks, temperature, a neighbour) cancels in x_r;
 *   uplift:  the median of x_1..x_n, with a distribution-free confidence
 *            interval from order statistics (gt_paired_ci_rank);
 *   stop:    once every live finalist's interval is narrower than the target
 *            relative width, after at least GT_PAIRED_MIN_ROUNDS rounds, or
 *            when the round budget is spent.
 *
 * Pure C over a timing callback: no device, no backend, no I/O, so common/
 * holds it and every layer may use it (ARCHITECTURE.md). */
#ifndef GT_PAIRED_H
#define GT_PAIRED_H

#include <stdint.h>

typedef struct gt_paired_opts {
    int min_rounds;      /* at least this many rounds (raised to what the CI needs) */
    int max_rounds;      /* the round budget */
    double ci_width;     /* target relative width (hi - lo) / uplift; <= 0: run the budget */
    double confidence;   /* two-sided, e.g. 0.95 */
    uint64_t seed;       /* of the per-round order */
} gt_paired_opts;

/* Defaults from common/gt_policy.h; max_rounds and ci_width as given. */
void gt_paired_opts_init(gt_paired_opts *o, int max_rounds, double ci_width);

typedef struct gt_paired_stat {
    int ok;              /* 1: an interval exists (enough rounds) */
    int rounds;          /* paired rounds it is computed from */
    double uplift;       /* median of the paired ratios baseline / entry */
    double lo, hi;       /* the confidence interval of that median */
} gt_paired_stat;

/* The order statistic that bounds a distribution-free confidence interval
 * of the median of n samples: the interval is [x_(k), x_(n+1-k)] (1-based,
 * sorted) for the largest k with P(Binomial(n, 1/2) < k) <= (1 - conf) / 2.
 * 0 when n is too small for conf (n < 6 at 95 %). */
int gt_paired_ci_rank(int n, double confidence);

/* Median and interval of the n ratios in v (sorted in place). st->ok is 0
 * when n is too small for an interval: then lo is 0 (no lower bound, so
 * never significant) and hi the largest ratio. */
void gt_paired_stat_of(double *v, int n, double confidence, gt_paired_stat *st);

/* 1 when the interval is narrower than the target (relative to the uplift). */
int gt_paired_narrow(const gt_paired_stat *st, double ci_width);

/* 1 when the gain is beyond the noise and large enough to survive a re-time
 * in another process: an interval whose lower bound is above GT_MIN_GAIN
 * (gt_policy.h). Only then may a finalist replace the default. */
int gt_paired_significant(const gt_paired_stat *st);

/* Times entry i once: *us per call. Returns 0, 1 when entry i failed (it is
 * dropped from the remaining rounds), -1 to abort the whole protocol. */
typedef int (*gt_paired_time_fn)(void *ctx, int i, double *us);

/* Runs the protocol over n entries, entry 0 the baseline. alive[i] (in and
 * out): entries to time; a failing one is cleared. times: n * max_rounds
 * doubles, entry i's round r at times[i * max_rounds + r] (0 where not
 * timed). *rounds: rounds run. st[i] for i >= 1: the finalist's paired
 * statistic (ok 0 when the baseline or the entry fell out); st[0] the
 * baseline against itself (uplift 1). Returns 0, or -1 when fn aborted. */
int gt_paired_run(const gt_paired_opts *o, int n, int *alive, gt_paired_time_fn fn, void *ctx,
                  double *times, int *rounds, gt_paired_stat *st);

/* Recomputes st[0..n-1] from the first `rounds` rounds of times (what
 * gt_paired_run leaves), e.g. after its stopping rule, for a caller that
 * keeps the matrix. */
void gt_paired_stats(const gt_paired_opts *o, int n, const int *alive, const double *times,
                     int stride, int rounds, gt_paired_stat *st);

/* The median of entry i's own times over the rounds it was timed in (0 when
 * none): the per-call time reported next to the paired uplift. */
double gt_paired_median_time(const double *times, int stride, int i, int rounds);

#endif
