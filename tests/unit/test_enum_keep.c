/* test_enum_keep.c: an enumerate job tells its worker how many of the
 * list's first entries the coordinator will use (gt_plan_enum_keep): the
 * budget with the exhaustive strategy, 0 (all) with random and evolutionary;
 * and a list no longer than that plans the same screen as the whole list
 * (gt_plan_enumerated takes the head), so a worker that sends only keep
 * entries changes nothing the run measures. Through the store calls the
 * dispatcher makes (register, lease) on a real SQLite file. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_plan.h"
#include "gt_run_opts.h"
#include "gt_store.h"
#include "gt_test.h"
#include "gt_util.h"

/* The keep of the first job leased from a new cuda run with these options
 * (-1 when the lease is not an enumerate job). */
static int leased_keep(const char *dir, const char *name, const char *strategy, const char *budget)
{
    char err[512], sub[128];
    snprintf(sub, sizeof sub, "%s/%s", dir, name);
    CHECK(gt_mkdirs(sub, 0700) == 0);
    const char *const opts[][2] = {{"backend", "cuda"}, {"device_model", "Sim GPU"},
                                   {"strategy", strategy}, {"budget", budget}};
    gt_store *s = gt_test_store_with_run(sub, "M,N,K,dtype\n4096,16,4096,bf16\n", opts, 4, NULL);
    if (!s)
        return -1;
    int64_t wid = gt_test_sim_gpu_worker(s, "sim", 4244);
    int keep = -1;
    gt_job job;
    int r = gt_store_lease(s, wid, gt_wall_ms(), 30000, &job, err, sizeof err);
    CHECK_MSG(r == 1 && !strcmp(job.kind, "enumerate"), "lease: %d %s", r, err);
    if (r == 1) {
        if (!strcmp(job.kind, "enumerate"))
            keep = job.keep;
        gt_job_free(&job);
    }
    gt_store_close(s);
    return keep;
}

/* A device list of n cuBLASLt-shaped configs (distinct algo ids). */
static char *device_list(int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        cJSON *c = cJSON_CreateObject();
        if (!c || !cJSON_AddStringToObject(c, "family", "cublaslt") ||
            !cJSON_AddNumberToObject(c, "algo_id", 100 + i) || !cJSON_AddItemToArray(a, c)) {
            cJSON_Delete(c);
            cJSON_Delete(a);
            return NULL;
        }
    }
    char *t = a ? cJSON_PrintUnformatted(a) : NULL;
    cJSON_Delete(a);
    return t;
}

/* The configs the plan's screen jobs hold, in job order, as one text. */
static char *planned(const gt_plan_problem *pp)
{
    size_t cap = 1, len = 0;
    for (size_t i = 0; i < pp->njobs; i++)
        cap += strlen(pp->jobs[i].candidates) + 1;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    t[0] = '\0';
    for (size_t i = 0; i < pp->njobs; i++)
        len += (size_t)snprintf(t + len, cap - len, "%s|", pp->jobs[i].candidates);
    return t;
}

/* The head of the list (keep entries) plans exactly what the whole list
 * plans under the exhaustive strategy. */
static void test_head_plans_the_same(void)
{
    char err[256];
    gt_run_opts o;
    gt_run_opts_default(&o);
    CHECK(gt_run_opts_set(&o, "backend", "cuda", err, sizeof err) == 0 &&
          gt_run_opts_set(&o, "budget", "24", err, sizeof err) == 0 &&
          gt_run_opts_set(&o, "shard_size", "10", err, sizeof err) == 0);
    int keep = gt_plan_enum_keep(&o);
    CHECK(keep == 24);
    char *all = device_list(300), *head = device_list(keep);
    const char *base = "{\"family\":\"cublaslt\",\"algo_id\":1}";
    gt_plan_problem a, h;
    CHECK(all && head);
    if (all && head && gt_plan_enumerated(&o, 7, "k", all, base, &a, err, sizeof err) == 0) {
        if (gt_plan_enumerated(&o, 7, "k", head, base, &h, err, sizeof err) == 0) {
            char *ta = planned(&a), *th = planned(&h);
            CHECK(a.njobs == 3 && h.njobs == a.njobs && a.ncandidates == h.ncandidates);
            CHECK(ta && th && !strcmp(ta, th));
            free(ta);
            free(th);
            gt_plan_problem_fini(&h);
        } else {
            CHECK_MSG(0, "%s", err);
        }
        gt_plan_problem_fini(&a);
    } else {
        CHECK_MSG(0, "%s", err);
    }
    free(all);
    free(head);
    gt_run_opts_fini(&o);
}

int main(void)
{
    char dir[64];
    if (gt_test_tmpdir(dir, sizeof dir, "enumkeep"))
        return 1;
    CHECK(leased_keep(dir, "ex", "exhaustive", "37") == 37);
    /* random samples the whole list, evolutionary searches it */
    CHECK(leased_keep(dir, "rnd", "random", "37") == 0);
    CHECK(leased_keep(dir, "evo", "evolutionary", "37") == 0);
    test_head_plans_the_same();
    return gt_test_done();
}
