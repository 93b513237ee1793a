/* plan.c: the run planner (gt_plan.h): which configs each problem measures,
 * in which screen jobs, and where an evolutionary search starts. Moved out
 * of the store, which now only writes what is decided here. */
#include "gt_plan.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_config.h"
#include "gt_json.h"
#include "gt_util.h"

/* ------------------------------------------------------------------ jobs */

void gt_plan_jobs_free(gt_plan_job *jobs, size_t njobs)
{
    for (size_t i = 0; i < njobs; i++)
        free(jobs[i].candidates);
    free(jobs);
}

int gt_plan_shard(const cJSON *cands, int shard_size, gt_plan_job **jobs, size_t *njobs)
{
    int n = cJSON_GetArraySize(cands);
    *jobs = NULL;
    *njobs = 0;
    if (n <= 0)
        return 0;
    if (shard_size < 1)
        shard_size = 1;
    /* The first job of a large shard size is a fraction of it: the lease
     * takes every GEMM's first job before any GEMM's others
     * (store_lease.c next_job), and how soon the last GEMM gets its first
     * result is the sum of those first jobs (25 Llama shapes on the H100,
     * shards of 50: 8.3 s for the lm_head GEMM's alone, every GEMM's first
     * result 16-30 s after submission). Small shard sizes are cut evenly. */
    int first = shard_size >= GT_PLAN_FIRST_SHARD_MIN ? shard_size / GT_PLAN_FIRST_SHARD_DIV : shard_size;
    size_t cap = 1 + (size_t)(n + shard_size - 1) / (size_t)shard_size;
    gt_plan_job *out = calloc(cap, sizeof *out);
    if (!out)
        return -1;
    size_t k = 0;
    const cJSON *c = cands->child;
    for (int start = 0, len = first; start < n; start += len, len = shard_size) {
        cJSON *shard = cJSON_CreateArray();
        if (!shard)
            goto fail;
        for (int i = start; i < n && i < start + len; i++, c = c->next) {
            cJSON *d = cJSON_Duplicate(c, 1);
            if (!d || !cJSON_AddItemToArray(shard, d)) {
                cJSON_Delete(d);
                cJSON_Delete(shard);
                goto fail;
            }
        }
        out[k].ncandidates = cJSON_GetArraySize(shard);
        out[k].candidates = gt_json_print(shard);
        cJSON_Delete(shard);
        if (!out[k].candidates)
            goto fail;
        k++;
    }
    *jobs = out;
    *njobs = k;
    return 0;
fail:
    gt_plan_jobs_free(out, k);
    return -1;
}

/* A JSON value's compact text (malloc'd), or NULL when out of memory. */
static char *print_dup(const cJSON *v)
{
    return gt_json_print(v);
}

/* Appends the configs of the JSON array text extra (the run option
 * candidates; NULL: none) to cands, skipping duplicates of cands and of the
 * baseline. 0 or -1 (OOM/bad JSON). */
static int add_extra(cJSON *cands, const cJSON *baseline, const char *extra)
{
    if (!extra)
        return 0;
    cJSON *ex = cJSON_Parse(extra);
    if (!ex)
        return -1;
    char bh[17], h[17], ch[17];
    if (baseline && gt_cfg_hash(baseline, bh))
        bh[0] = '\0';
    const cJSON *c;
    cJSON_ArrayForEach(c, ex)
    {
        if (gt_cfg_hash(c, h))
            continue;
        int dup = baseline && !strcmp(h, bh);
        const cJSON *d;
        cJSON_ArrayForEach(d, cands)
        {
            if (!dup && !gt_cfg_hash(d, ch) && !strcmp(h, ch))
                dup = 1;
        }
        if (dup)
            continue;
        cJSON *copy = cJSON_Duplicate(c, 1);
        if (!copy || !cJSON_AddItemToArray(cands, copy)) {
            cJSON_Delete(copy);
            cJSON_Delete(ex);
            return -1;
        }
    }
    cJSON_Delete(ex);
    return 0;
}

/* Screen jobs of cands (taken over: deleted here) beside baseline, in
 * generation `generation` (-1 none). 0, or -1 with err. */
static int plan_jobs(const gt_run_opts *o, cJSON *cands, const cJSON *baseline, int generation,
                     gt_plan_problem *pp, char *err, size_t errlen)
{
    int rc = -1;
    pp->generation = generation;
    if (!(pp->baseline = print_dup(baseline)) ||
        gt_plan_shard(cands, o->shard_size, &pp->jobs, &pp->njobs))
        snprintf(err, errlen, "out of memory");
    else
        rc = 0;
    cJSON_Delete(cands);
    return rc;
}

/* --------------------------------------------------------- evolutionary */

/* strategy=evolutionary: the search over space (a JSON array: the whole
 * candidate space, the backend's picks first) and its generation 0 plus
 * the run option candidates, measured on top of the budget as with the
 * other strategies (bred from only when they are members). The baseline is
 * timed in every job anyway: it never costs budget. */
static int plan_search(const gt_run_opts *o, const char *key, const cJSON *space,
                       const cJSON *baseline, gt_plan_problem *pp, char *err, size_t errlen)
{
    int rc = -1;
    gt_evo_space *sp = NULL;
    unsigned char *taken = NULL;
    size_t *out = NULL;
    cJSON *gen = NULL;
    cJSON *copy = cJSON_Duplicate(space, 1);
    if (!copy)
        goto oom;
    sp = gt_evo_space_new(copy, err, errlen);
    if (!sp)
        goto out;
    size_t n = gt_evo_space_size(sp);
    gt_evo_limits_resolve(o->budget, o->population, o->generations, n, &pp->lim);
    /* The run seed as the store keeps it (a JSON number in runs.options,
     * exact up to 2^53), so that a problem planned at submission and one
     * planned from an enumeration (options read back) search alike. */
    pp->seed = gt_evo_seed((uint64_t)(double)o->seed, key);
    pp->space_size = n;
    taken = calloc(n ? n : 1, 1);
    out = calloc(pp->lim.population ? (size_t)pp->lim.population : 1, sizeof *out);
    pp->space = print_dup(space);
    if (!taken || !out || !pp->space)
        goto oom;
    long bm = baseline ? gt_evo_space_find(sp, baseline) : -1;
    if (bm >= 0)
        taken[bm] = 1;
    long k = gt_evo_next(sp, NULL, 0, taken, (size_t)pp->lim.population, 0, pp->seed, out);
    if (k < 0)
        goto oom;
    pp->issued = k;
    gen = gt_evo_members_json(sp, out, (size_t)k);
    if (!gen || add_extra(gen, baseline, o->candidates))
        goto oom;
    pp->search = 1;
    pp->ncandidates = (size_t)pp->lim.budget + (size_t)cJSON_GetArraySize(gen) - (size_t)k;
    rc = plan_jobs(o, gen, baseline, 0, pp, err, errlen);
    gen = NULL;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
out:
    cJSON_Delete(gen);
    free(out);
    free(taken);
    gt_evo_space_free(sp);
    return rc;
}

/* ------------------------------------------------------------------ runs */

/* A CPU problem (the index-th of the log): its space, built here. */
static int plan_cpu(const gt_run_opts *o, size_t index, gt_plan_problem *pp, char *err,
                    size_t errlen)
{
    const gt_problem *p = pp->problem;
    cJSON *base = gt_space_cpu_baseline(p, o->ncpu), *cands = NULL;
    int rc = -1;
    if (o->strategy == GT_STRAT_EVOLUTIONARY) {
        /* The whole space is kept; the search draws its generations from
         * it. Its head is the CPU's "heuristic": the spread order. */
        char key[512];
        gt_problem_key(p, key, sizeof key);
        cands = gt_space_cpu_all(p, GT_EVO_HEADS, o->ncpu);
        if (!cands || !base)
            snprintf(err, errlen, "out of memory building the candidate space");
        else
            rc = plan_search(o, key, cands, base, pp, err, errlen);
        cJSON_Delete(cands);
    } else {
        cands = gt_space_cpu(p, o->strategy, o->budget, o->seed + (uint64_t)index, o->ncpu);
        if (!cands || !base || add_extra(cands, base, o->candidates)) {
            snprintf(err, errlen, "out of memory building the candidate space");
            cJSON_Delete(cands);
        } else {
            pp->ncandidates = (size_t)cJSON_GetArraySize(cands);
            rc = plan_jobs(o, cands, base, -1, pp, err, errlen);
        }
    }
    cJSON_Delete(base);
    return rc;
}

int gt_plan_run(const gt_run_opts *o, const gt_log_result *log, gt_plan *out, char *err,
                size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (log->nproblems && !(out->problems = calloc(log->nproblems, sizeof *out->problems))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    out->nproblems = log->nproblems;
    /* Backends other than the CPU list their space on the device. */
    int device_space = strcmp(o->backend, "cpu") != 0;
    for (size_t i = 0; i < log->nproblems; i++) {
        gt_plan_problem *pp = &out->problems[i];
        pp->problem = &log->problems[i];
        pp->generation = -1;
        pp->enumerate = device_space;
        if (!device_space && plan_cpu(o, i, pp, err, errlen)) {
            gt_plan_free(out);
            return -1;
        }
    }
    return 0;
}

void gt_plan_problem_fini(gt_plan_problem *p)
{
    gt_plan_jobs_free(p->jobs, p->njobs);
    free(p->baseline);
    free(p->space);
    memset(p, 0, sizeof *p);
}

void gt_plan_free(gt_plan *p)
{
    for (size_t i = 0; i < p->nproblems; i++)
        gt_plan_problem_fini(&p->problems[i]);
    free(p->problems);
    memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------ enumerated */

/* The candidates an enumeration returned, cut to the run's budget: with the
 * exhaustive strategy the first ones (the device's list puts the library's
 * heuristic picks first), with random the first entries (up to 32, at most
 * half the budget: the heuristic's picks) plus a sample of the rest seeded
 * by the problem's id. cands (parsed for this call) is rearranged in place,
 * and what is selected moves out of it into the array returned.
 *
 * Why in place: copying the whole list and then deleting its tail one item
 * at a time walked the list twice per deleted item (4632 enumerated
 * configs, budget 100: 68 ms of the single dispatcher thread per report,
 * 158 ms with random). The sample's moves are the same cJSON calls as
 * before, so the selection is the same list, item for item; taking the
 * first budget items off the head is constant time each. */
static cJSON *select_enumerated(cJSON *cands, int64_t problem_id, const gt_run_opts *o)
{
    int n = cJSON_GetArraySize(cands);
    if (o->budget <= 0 || n <= o->budget)
        return cJSON_Duplicate(cands, 1);
    if (o->strategy == GT_STRAT_RANDOM) {
        int keep = o->budget / 2 < 32 ? o->budget / 2 : 32;
        uint64_t x = 0x9e3779b97f4a7c15ULL ^ (uint64_t)problem_id;
        /* Partial Fisher-Yates over items [keep, n): move the sample up front. */
        for (int i = keep; i < o->budget; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            int r = i + (int)(x % (uint64_t)(n - i));
            if (r != i) {
                cJSON *a = cJSON_DetachItemFromArray(cands, r);
                cJSON *b = cJSON_DetachItemFromArray(cands, i);
                cJSON_InsertItemInArray(cands, i, a);
                cJSON_InsertItemInArray(cands, r, b);
            }
        }
    }
    cJSON *out = cJSON_CreateArray();
    if (!out)
        return NULL;
    for (int i = 0; i < o->budget; i++) {
        cJSON *c = cJSON_DetachItemFromArray(cands, 0);
        if (!c || !cJSON_AddItemToArray(out, c)) {
            cJSON_Delete(c);
            cJSON_Delete(out);
            return NULL;
        }
    }
    return out;
}

int gt_plan_enum_keep(const gt_run_opts *o)
{
    return o->strategy == GT_STRAT_EXHAUSTIVE && o->budget > 0 ? o->budget : 0;
}

int gt_plan_enumerated(const gt_run_opts *o, int64_t problem_id, const char *key,
                       const char *candidates, const char *baseline, gt_plan_problem *out,
                       char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->generation = -1;
    int rc = -1;
    cJSON *cands = cJSON_Parse(candidates), *base = cJSON_Parse(baseline);
    if (!cJSON_IsArray(cands) || !cJSON_IsObject(base)) {
        snprintf(err, errlen, "enumerate results need candidates[] and baseline_config{}");
        goto out;
    }
    if (o->strategy == GT_STRAT_EVOLUTIONARY) {
        /* The whole enumerated list is the space (every entry passed
         * AlgoCheck or the pruning rules on the device); the search draws
         * its generations from it. */
        rc = plan_search(o, key, cands, base, out, err, errlen);
    } else {
        cJSON *sel = select_enumerated(cands, problem_id, o);
        if (!sel || add_extra(sel, base, o->candidates)) {
            cJSON_Delete(sel);
            snprintf(err, errlen, "out of memory");
        } else {
            out->ncandidates = (size_t)cJSON_GetArraySize(sel);
            rc = plan_jobs(o, sel, base, -1, out, err, errlen);
        }
    }
out:
    if (rc)
        gt_plan_problem_fini(out);
    cJSON_Delete(cands);
    cJSON_Delete(base);
    return rc;
}
