/* test_paired.c: the paired rounds' statistics and stopping rule
 * (common/paired.c) on deterministic inputs: the order statistic that
 * bounds a median's distribution-free interval (the binomial table), the
 * median and interval of given ratios, significance (lower bound above
 * GT_MIN_GAIN, 1.02),
 * and gt_paired_run over a scripted timer: every round times each live
 * entry once in a shuffled order, stops at GT_PAIRED_MIN_ROUNDS once every
 * interval is narrow, runs the budget when one stays wide, drops an entry
 * whose timing fails, and aborts when the timer says so; and `gemmtune
 * verify`'s pass/fail rule. */
#include "gt_cli.h"
#include "gt_paired.h"
#include "gt_policy.h"
#include "gt_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int near(double a, double b) { return fabs(a - b) < 1e-12; }

static void ci_rank(void)
{
    /* largest k with P(Binomial(n, 1/2) <= k - 1) <= 0.025 */
    CHECK(gt_paired_ci_rank(5, 0.95) == 0);  /* 2/32 > 0.05: no interval yet */
    CHECK(gt_paired_ci_rank(6, 0.95) == 1);  /* 2/64 = 0.031 */
    CHECK(gt_paired_ci_rank(8, 0.95) == 1);  /* P(<=1) = 9/256 = 0.035 > 0.025 */
    CHECK(gt_paired_ci_rank(9, 0.95) == 2);  /* P(<=1) = 10/512 = 0.0195 */
    CHECK(gt_paired_ci_rank(12, 0.95) == 3); /* P(<=2) = 79/4096 = 0.019 */
    CHECK(gt_paired_ci_rank(20, 0.95) == 6); /* P(<=5) = 0.0207, P(<=6) = 0.0577 */
    CHECK(gt_paired_ci_rank(40, 0.95) == 14);
    CHECK(gt_paired_ci_rank(9, 0.99) == 1);  /* P(<=0) = 0.002 <= 0.005 < P(<=1) */
    CHECK(gt_paired_ci_rank(0, 0.95) == 0 && gt_paired_ci_rank(10, 1.0) == 0);
    /* no overflow for a large n: about n/2 - 0.98 sqrt(n) */
    int k = gt_paired_ci_rank(1000, 0.95);
    CHECK_MSG(k >= 468 && k <= 470, "k %d", k);
}

static void stat_of(void)
{
    double v[] = {1.10, 1.00, 1.20, 1.30, 1.05, 1.15, 1.25, 1.02, 1.12};
    gt_paired_stat st;
    gt_paired_stat_of(v, 9, 0.95, &st);
    CHECK(st.ok && st.rounds == 9 && near(st.uplift, 1.12) && near(st.lo, 1.02) && near(st.hi, 1.25));
    /* an interval above 1 but not above GT_MIN_GAIN (1.02): a gain too small
     * to survive a re-time in another process, not significant */
    CHECK(!gt_paired_significant(&st));
    CHECK(gt_paired_narrow(&st, 0.21) && !gt_paired_narrow(&st, 0.2));
    /* the same with its two lowest rounds higher: lo 1.06, significant */
    double v2[] = {1.10, 1.06, 1.20, 1.30, 1.05, 1.15, 1.25, 1.07, 1.12};
    gt_paired_stat_of(v2, 9, 0.95, &st);
    CHECK(st.ok && near(st.lo, 1.06) && gt_paired_significant(&st));
    /* the SQL that picks winners spells the same number */
    CHECK(near(atof(GT_MIN_GAIN_SQL), GT_MIN_GAIN));
    /* the interval reaches below 1: no significant gain, however good the median */
    double w[] = {1.30, 0.99, 1.30, 1.30, 1.30, 1.30, 1.30, 0.98, 1.30};
    gt_paired_stat_of(w, 9, 0.95, &st);
    CHECK(st.ok && near(st.uplift, 1.30) && near(st.lo, 0.99) && !gt_paired_significant(&st));
    /* even n: the median is the mean of the middle two */
    double e[] = {1.0, 1.1, 1.2, 1.3, 1.4, 1.5};
    gt_paired_stat_of(e, 6, 0.95, &st);
    CHECK(st.ok && near(st.uplift, 1.25) && near(st.lo, 1.0) && near(st.hi, 1.5));
    /* too few rounds for an interval: no lower bound, never significant */
    double f[] = {1.5, 1.6, 1.7, 1.8};
    gt_paired_stat_of(f, 4, 0.95, &st);
    CHECK(!st.ok && st.lo == 0 && near(st.hi, 1.8) && near(st.uplift, 1.65) && !gt_paired_significant(&st));
    CHECK(!gt_paired_narrow(&st, 1.0));
    gt_paired_stat_of(f, 0, 0.95, &st);
    CHECK(!st.ok && st.rounds == 0);
}

/* A scripted timer: entry i takes base[i] us, plus noise[r % 4] for entry
 * 1 when noisy; fail_at: entry 2 fails in that round (-1: never);
 * abort_at: the timer aborts at that call (-1: never). */
typedef struct script {
    double base[4];
    int noisy, fail_at, abort_at, calls, round_calls;
    int n;
    int order[64][4]; /* the order entries were timed in, per round */
    int pos;
} script;

static int scripted(void *ctx, int i, double *us)
{
    script *s = ctx;
    int r = s->calls / s->n;
    if (s->abort_at >= 0 && s->calls == s->abort_at)
        return -1;
    if (r < 64)
        s->order[r][s->calls % s->n] = i;
    s->calls++;
    if (i == 2 && s->fail_at >= 0 && r >= s->fail_at)
        return 1;
    static const double noise[] = {0, 3, -2, 5};
    *us = s->base[i] + (s->noisy && i == 1 ? noise[r % 4] : 0);
    return 0;
}

static void run_rule(void)
{
    gt_paired_opts o;
    gt_paired_opts_init(&o, 40, 0.02);
    CHECK(o.min_rounds == GT_PAIRED_MIN_ROUNDS && near(o.confidence, GT_PAIRED_CONFIDENCE));
    double times[3 * 40];
    gt_paired_stat st[3];
    int alive[3] = {1, 1, 1}, rounds = 0;
    /* steady: the ratios never vary, every interval is narrow at the first
     * chance, which is GT_PAIRED_MIN_ROUNDS */
    script s = {.base = {20, 10, 25}, .fail_at = -1, .abort_at = -1, .n = 3};
    CHECK(gt_paired_run(&o, 3, alive, scripted, &s, times, &rounds, st) == 0);
    CHECK_MSG(rounds == GT_PAIRED_MIN_ROUNDS && s.calls == 3 * GT_PAIRED_MIN_ROUNDS, "%d rounds", rounds);
    CHECK(st[1].ok && near(st[1].uplift, 2.0) && near(st[1].lo, 2.0) && gt_paired_significant(&st[1]));
    CHECK(st[2].ok && near(st[2].uplift, 0.8) && !gt_paired_significant(&st[2]));
    CHECK(st[0].ok && st[0].uplift == 1 && st[0].rounds == rounds);
    CHECK(near(gt_paired_median_time(times, 40, 1, rounds), 10));
    /* every round times each entry once, and the order is shuffled: not the
     * same permutation in every round */
    int perm_ok = 1, varies = 0;
    for (int r = 0; r < rounds; r++) {
        int seen[3] = {0};
        for (int q = 0; q < 3; q++)
            seen[s.order[r][q]]++;
        perm_ok &= seen[0] == 1 && seen[1] == 1 && seen[2] == 1;
        varies |= memcmp(s.order[r], s.order[0], sizeof s.order[0]) != 0;
    }
    CHECK(perm_ok && varies);
    /* the same seed, the same order */
    script s2 = {.base = {20, 10, 25}, .fail_at = -1, .abort_at = -1, .n = 3};
    int alive2[3] = {1, 1, 1};
    CHECK(gt_paired_run(&o, 3, alive2, scripted, &s2, times, &rounds, st) == 0);
    CHECK(memcmp(s.order, s2.order, sizeof s.order) == 0);

    /* noisy entry 1 (10 +- 5 us against 20): its interval stays wider than
     * 2 %, so the budget ends the rounds */
    gt_paired_opts_init(&o, 24, 0.02);
    script s3 = {.base = {20, 10, 25}, .noisy = 1, .fail_at = -1, .abort_at = -1, .n = 3};
    int alive3[3] = {1, 1, 1};
    CHECK(gt_paired_run(&o, 3, alive3, scripted, &s3, times, &rounds, st) == 0);
    CHECK(rounds == 24 && st[1].ok && st[1].hi > st[1].lo && st[1].lo <= st[1].uplift &&
          st[1].uplift <= st[1].hi && !gt_paired_narrow(&st[1], 0.02));
    /* a width of 0: the budget, however steady */
    gt_paired_opts_init(&o, 11, 0);
    script s4 = {.base = {20, 10, 25}, .fail_at = -1, .abort_at = -1, .n = 3};
    int alive4[3] = {1, 1, 1};
    CHECK(gt_paired_run(&o, 3, alive4, scripted, &s4, times, &rounds, st) == 0 && rounds == 11);

    /* entry 2 fails from round 3 on: dropped, the others go on; its
     * statistic holds the 3 rounds it had: no interval */
    gt_paired_opts_init(&o, 40, 0.02);
    script s5 = {.base = {20, 10, 25}, .fail_at = 3, .abort_at = -1, .n = 3};
    int alive5[3] = {1, 1, 1};
    CHECK(gt_paired_run(&o, 3, alive5, scripted, &s5, times, &rounds, st) == 0);
    CHECK(alive5[2] == 0 && alive5[1] == 1 && rounds == GT_PAIRED_MIN_ROUNDS);
    CHECK(st[2].rounds == 0 && !st[2].ok && st[1].ok);
    /* the timer aborts (the supervisor is gone): -1 */
    script s6 = {.base = {20, 10, 25}, .fail_at = -1, .abort_at = 7, .n = 3};
    int alive6[3] = {1, 1, 1};
    CHECK(gt_paired_run(&o, 3, alive6, scripted, &s6, times, &rounds, st) == -1);
    /* the baseline alone: nothing to decide, the minimum rounds for its time */
    script s7 = {.base = {20}, .fail_at = -1, .abort_at = -1, .n = 1};
    int alive7[1] = {1};
    CHECK(gt_paired_run(&o, 1, alive7, scripted, &s7, times, &rounds, st) == 0 &&
          rounds == GT_PAIRED_MIN_ROUNDS);
}

/* `gemmtune verify`'s verdict: within the tolerance of the stored uplift */
static void verify_pass(void)
{
    CHECK(gt_cli_verify_pass(1.05, 1.04, 0.02) && gt_cli_verify_pass(1.0, 1.02, 0.02));
    CHECK(!gt_cli_verify_pass(1.0, 1.021, 0.02) && !gt_cli_verify_pass(1.055, 0.981, 0.02));
    CHECK(gt_cli_verify_pass(3.0, 1.0, 1.0) && !gt_cli_verify_pass(3.0, 1.0, 0.5));
    CHECK(!gt_cli_verify_pass(0, 1.0, 1.0) && !gt_cli_verify_pass(NAN, 1.0, 1.0) &&
          !gt_cli_verify_pass(1.0, INFINITY, 1.0));
}

int main(void)
{
    RUN(ci_rank);
    RUN(stat_of);
    RUN(run_rule);
    RUN(verify_pass);
    return gt_test_done();
}
