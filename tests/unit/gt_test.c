/* gt_test.c: the harness's counters and helpers. */
#include "gt_test.h"

#include <stdlib.h>

int gt_test_failures;
int gt_test_checks;

int gt_test_done(void)
{
    fprintf(stderr, "%d checks, %d failed\n", gt_test_checks, gt_test_failures);
    if (gt_test_checks == 0)
        return 1; /* a test that asserts nothing is a failure */
    return gt_test_failures ? 1 : 0;
}

const char *gt_test_data(const char *name)
{
    static char buf[4096];
    const char *dir = getenv("GT_TEST_DATA");
    snprintf(buf, sizeof buf, "%s/%s", dir ? dir : "tests/data", name);
    return buf;
}
