/* test_plan_shard.c: how the planner cuts a problem's candidates into screen
 * jobs (server/plan.c gt_plan_shard).
 *
 * Proves: every candidate lands in exactly one job, in order; small shard
 * sizes are cut evenly (the last job takes the rest); from
 * GT_PLAN_FIRST_SHARD_MIN on, the first job holds shard_size /
 * GT_PLAN_FIRST_SHARD_DIV candidates and the others shard_size, so each
 * GEMM's first result comes after a few candidates; an empty array gives no
 * job. */
#include "gt_plan.h"
#include "gt_test.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

static cJSON *numbers(int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(i));
    return a;
}

/* Cuts n candidates with shard_size; checks the job sizes against want
 * (nwant of them) and that the jobs hold 0..n-1 in order. */
static void check_cut(int n, int shard_size, const int *want, size_t nwant)
{
    cJSON *a = numbers(n);
    gt_plan_job *jobs = NULL;
    size_t njobs = 0;
    CHECK(a != NULL);
    CHECK(gt_plan_shard(a, shard_size, &jobs, &njobs) == 0);
    CHECK_MSG(njobs == nwant, "n %d shard %d: %zu jobs, want %zu", n, shard_size, njobs, nwant);
    int next = 0;
    for (size_t j = 0; j < njobs && j < nwant; j++) {
        CHECK_MSG(jobs[j].ncandidates == want[j], "n %d shard %d job %zu: %d candidates, want %d", n,
                  shard_size, j, jobs[j].ncandidates, want[j]);
        cJSON *c = cJSON_Parse(jobs[j].candidates);
        CHECK(cJSON_GetArraySize(c) == jobs[j].ncandidates);
        const cJSON *it;
        cJSON_ArrayForEach(it, c)
        {
            CHECK(cJSON_IsNumber(it) && it->valueint == next);
            next++;
        }
        cJSON_Delete(c);
    }
    CHECK_MSG(next == n, "n %d shard %d: %d candidates in the jobs", n, shard_size, next);
    gt_plan_jobs_free(jobs, njobs);
    cJSON_Delete(a);
}

static void test_even_cuts(void)
{
    check_cut(8, 3, (const int[]){3, 3, 2}, 3);
    check_cut(6, 2, (const int[]){2, 2, 2}, 3);
    check_cut(4, 8, (const int[]){4}, 1);
    check_cut(5, 1, (const int[]){1, 1, 1, 1, 1}, 5);
    /* just below the minimum: still even */
    check_cut(40, GT_PLAN_FIRST_SHARD_MIN - 1, (const int[]){19, 19, 2}, 3);
}

static void test_small_first_job(void)
{
    /* 250 candidates in shards of 50: 10, then 50s, the rest last */
    check_cut(250, 50, (const int[]){10, 50, 50, 50, 50, 40}, 6);
    check_cut(20, 20, (const int[]){4, 16}, 2);
    check_cut(3, 50, (const int[]){3}, 1);
    check_cut(10, 50, (const int[]){10}, 1);
    check_cut(11, 50, (const int[]){10, 1}, 2);
}

static void test_empty(void)
{
    cJSON *a = cJSON_CreateArray();
    gt_plan_job *jobs = (gt_plan_job *)1;
    size_t njobs = 7;
    CHECK(gt_plan_shard(a, 50, &jobs, &njobs) == 0);
    CHECK(jobs == NULL && njobs == 0);
    cJSON_Delete(a);
}

int main(void)
{
    RUN(test_even_cuts);
    RUN(test_small_first_job);
    RUN(test_empty);
    return gt_test_done();
}
