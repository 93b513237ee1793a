/* test_problem.c: the problem model: JSON round trips keep the canonical key
 * (what the coordinator sends is what the worker runs), hostile sizes are
 * refused before anything multiplies them, invariants name the field. */
#include <cjson/cJSON.h>
#include <string.h>

#include "gt_problem.h"
#include "gt_test.h"

static void roundtrip(const gt_problem *p)
{
    char err[256], k1[512], k2[512];
    cJSON *j = gt_problem_to_json(p);
    CHECK(j != NULL);
    gt_problem q;
    int rc = gt_problem_from_json(j, &q, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    gt_problem_key(p, k1, sizeof k1);
    gt_problem_key(&q, k2, sizeof k2);
    CHECK_MSG(strcmp(k1, k2) == 0, "%s != %s", k1, k2);
    CHECK(q.call_count == p->call_count);
    cJSON_Delete(j);
}

static void test_roundtrips(void)
{
    gt_problem p;
    gt_problem_init(&p, 96, 8, 64);
    p.trans_a = 'T';
    gt_problem_default_ld(&p);
    p.a_type = p.b_type = p.c_type = p.d_type = GT_DT_BF16;
    p.call_count = 7;
    gt_problem_finish(&p);
    roundtrip(&p);
    gt_problem_init(&p, 64, 16, 96);
    p.batch = 3;
    p.lda = 100;
    p.ldd = 80;
    p.ldc = 80;
    gt_problem_default_ld(&p);
    p.lda = 100;
    p.ldc = p.ldd = 80;
    p.stride_c = p.stride_d = 80 * 16;
    p.beta = 0.5;
    gt_problem_finish(&p);
    roundtrip(&p);
}

static void test_hostile(void)
{
    char err[256];
    gt_problem p;
    const char *bad[] = {
        "{\"m\":4000000000,\"n\":1,\"k\":4000000000,\"batch\":2}",
        "{\"m\":-1,\"n\":1,\"k\":1}",
        "{\"m\":1,\"n\":1,\"k\":1,\"batch\":0}",
        "{\"m\":16,\"n\":16,\"k\":16,\"lda\":1}",
        "{\"m\":16,\"n\":16,\"k\":16,\"a_type\":\"f13\"}",
        "{\"m\":1e300,\"n\":1,\"k\":1}",
        "{\"n\":1,\"k\":1}",
    };
    const char *field[] = {"m=", "m=", "batch=", "lda=", "a_type", "m", "m"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *j = cJSON_Parse(bad[i]);
        CHECK(j != NULL);
        int rc = gt_problem_from_json(j, &p, err, sizeof err);
        CHECK_MSG(rc == -1 && strstr(err, field[i]), "%s -> %s", bad[i], err);
        cJSON_Delete(j);
    }
}

int main(void)
{
    RUN(test_roundtrips);
    RUN(test_hostile);
    return gt_test_done();
}
