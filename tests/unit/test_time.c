/* test_time.c: gt_time_after_ms, the deadline of every timed condition
 * wait (the dispatcher's, the checkpoint thread's, the event ticker's): ms
 * later on the clock asked for, whole seconds carried, tv_nsec always
 * below a second. */
#include <time.h>

#include "gt_test.h"
#include "gt_util.h"

static double ms_of(struct timespec t) { return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6; }

int main(void)
{
    static const long after[] = {0, 1, 200, 999, 1000, 1500, 61234};
    static const int clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC};
    for (size_t c = 0; c < sizeof clocks / sizeof clocks[0]; c++)
        for (size_t i = 0; i < sizeof after / sizeof after[0]; i++) {
            struct timespec t = gt_time_after_ms(clocks[c], after[i]), later;
            clock_gettime(clocks[c], &later);
            /* the clock read inside, shifted by ms: at most ms past a read just after */
            double d = ms_of(t) - ms_of(later);
            CHECK_MSG(t.tv_nsec >= 0 && t.tv_nsec < 1000000000L, "clock %d, %ld ms: tv_nsec %ld", clocks[c],
                      after[i], t.tv_nsec);
            CHECK_MSG(d <= (double)after[i] + 1e-6 && d > (double)after[i] - 50.0,
                      "clock %d, %ld ms: %.3f ms after the clock", clocks[c], after[i], d);
        }
    return gt_test_done();
}
