/* store_evo.c: the store's side of strategy=evolutionary. A problem's whole
 * candidate space and its search counters live in the spaces table
 * (schema/003_evolutionary.sql); each generation is a set of ordinary screen
 * jobs tagged with its number, so leases, expiry, poison candidates and the
 * progress views work on them unchanged. When the last job of a generation
 * finishes, gt_store_advance_problem calls gt_store_evo_step, which breeds
 * the next one (server/search_evo.c) from every screen result of the problem,
 * in the same transaction as the report that finished the generation: a
 * coordinator killed at any point restarts with either the old generation
 * finished and the next one queued, or neither. Where a search starts (its
 * space, seed, limits and generation 0) is the planner's decision
 * (gt_plan.h), recorded here by gt_store_evo_record. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_search_evo.h"
#include "gt_util.h"
#include "store_priv.h"

int gt_store_evo_record(gt_store *s, int64_t run_id, int64_t pid, const gt_plan_problem *pp,
                        char *err, size_t errlen)
{
    sqlite3_stmt *st = gt_store_prep(
        s,
        "INSERT INTO spaces(problem_id, run_id, configs, size, seed, budget, population,"
        " generations, generation, issued, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, 'searching')",
        err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, pid);
    sqlite3_bind_int64(st, 2, run_id);
    gt_store_bind_text(st, 3, pp->space);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)pp->space_size);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)pp->seed); /* two's complement round trip */
    sqlite3_bind_int(st, 6, pp->lim.budget);
    sqlite3_bind_int(st, 7, pp->lim.population);
    sqlite3_bind_int(st, 8, pp->lim.generations);
    sqlite3_bind_int64(st, 9, pp->issued);
    if (gt_store_step_done(s, st, err, errlen))
        return -1;
    gt_info("problem %lld: evolutionary search over %zu configs: budget %d, population %d, "
            "at most %d generations; generation 0: %ld configs",
            (long long)pid, pp->space_size, pp->lim.budget, pp->lim.population,
            pp->lim.generations, pp->issued);
    return 0;
}

/* Marks the members among a job's candidates (JSON array text) taken. */
static int mark_job(const gt_evo_space *sp, const char *cands_txt, unsigned char *taken)
{
    cJSON *c = cJSON_Parse(cands_txt);
    if (!c)
        return -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, c)
    {
        long m = gt_evo_space_find(sp, it);
        if (m >= 0)
            taken[m] = 1;
    }
    cJSON_Delete(c);
    return 0;
}

/* Appends an observation, growing the array. 0 or -1 on OOM. */
static int push_obs(gt_evo_obs **obs, size_t *n, size_t *cap, size_t m, double t)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        gt_evo_obs *o2 = realloc(*obs, c * sizeof *o2);
        if (!o2)
            return -1;
        *obs = o2;
        *cap = c;
    }
    (*obs)[*n].member = m;
    (*obs)[(*n)++].time_us = t;
    return 0;
}

/* The problem's observations: every screen result of a member (invalid ones
 * as time 0) and the baseline, with the mean of its screen timings, as a
 * parent that costs no budget. All of them end up taken. *best: the best
 * valid candidate time (0: none). */
static int load_obs(gt_store *s, int64_t pid, const gt_evo_space *sp, const cJSON *base,
                    unsigned char *taken, gt_evo_obs **obs_out, size_t *nobs, double *best,
                    char *err, size_t errlen)
{
    size_t cap = 0, n = 0;
    gt_evo_obs *obs = NULL;
    *best = 0;
    sqlite3_stmt *st = gt_store_prep(s,
                                     "SELECT config, valid, time_us FROM results"
                                     " WHERE problem_id = ? AND phase = 'screen' AND is_baseline = 0",
                                     err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, pid);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        cJSON *cfg = cJSON_Parse(gt_store_col_text(st, 0));
        long m = cfg ? gt_evo_space_find(sp, cfg) : -1;
        cJSON_Delete(cfg);
        if (m < 0)
            continue; /* a run-option extra outside the space */
        double t = sqlite3_column_int(st, 1) && sqlite3_column_type(st, 2) != SQLITE_NULL
                       ? sqlite3_column_double(st, 2)
                       : 0;
        if (push_obs(&obs, &n, &cap, (size_t)m, t)) {
            gt_store_finish(s, st);
            goto oom;
        }
        taken[m] = 1;
        if (t > 0 && (*best <= 0 || t < *best))
            *best = t;
    }
    gt_store_finish(s, st);
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "sqlite step: %s", sqlite3_errmsg(s->db));
        goto fail;
    }
    long bm = base ? gt_evo_space_find(sp, base) : -1;
    if (bm >= 0) {
        taken[bm] = 1;
        st = gt_store_prep(s, "SELECT AVG(time_us) FROM baselines WHERE problem_id = ?", err, errlen);
        if (!st)
            goto fail;
        sqlite3_bind_int64(st, 1, pid);
        rc = sqlite3_step(st);
        double t = rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL
                       ? sqlite3_column_double(st, 0)
                       : 0;
        gt_store_finish(s, st);
        if (rc != SQLITE_ROW) {
            snprintf(err, errlen, "sqlite step: %s", sqlite3_errmsg(s->db));
            goto fail;
        }
        if (t > 0 && push_obs(&obs, &n, &cap, (size_t)bm, t))
            goto oom;
    }
    *obs_out = obs;
    *nobs = n;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    free(obs);
    return -1;
}

int gt_store_evo_step(gt_store *s, int64_t pid, int64_t now_ms, int *queued, char *err,
                      size_t errlen)
{
    int rc = -1;
    *queued = 0;
    gt_evo_space *sp = NULL;
    cJSON *space = NULL, *gen = NULL, *base = NULL;
    unsigned char *taken = NULL;
    gt_evo_obs *obs = NULL;
    size_t nobs = 0, *out = NULL;
    gt_plan_job *jobs = NULL;
    size_t njobs = 0;
    char *base_txt = NULL;
    sqlite3_stmt *st = gt_store_prep(
        s,
        "SELECT run_id, configs, seed, budget, population, generations, generation, issued,"
        " best_us, stale FROM spaces WHERE problem_id = ? AND state = 'searching'",
        err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, pid);
    int r = sqlite3_step(st);
    if (r != SQLITE_ROW) {
        gt_store_finish(s, st);
        if (r == SQLITE_DONE)
            return 0; /* not an evolutionary problem, or its search is over */
        snprintf(err, errlen, "sqlite step: %s", sqlite3_errmsg(s->db));
        return -1;
    }
    int64_t run_id = sqlite3_column_int64(st, 0);
    space = cJSON_Parse(gt_store_col_text(st, 1));
    uint64_t seed = (uint64_t)sqlite3_column_int64(st, 2);
    gt_evo_limits lim = {.budget = sqlite3_column_int(st, 3),
                         .population = sqlite3_column_int(st, 4),
                         .generations = sqlite3_column_int(st, 5)};
    gt_evo_progress pr = {.generation = sqlite3_column_int(st, 6),
                          .issued = sqlite3_column_int(st, 7),
                          .best_us = sqlite3_column_type(st, 8) == SQLITE_NULL
                                         ? 0
                                         : sqlite3_column_double(st, 8),
                          .stale = sqlite3_column_int(st, 9)};
    gt_store_finish(s, st);
    const char *why = NULL;
    char bad[160];
    long k = 0;
    double best = 0;
    /* A stored space that cannot be read back is not worth failing every
     * report of the problem over (the transaction would roll back each
     * time): the search ends and the final phase gets what was measured. */
    if (!space) {
        snprintf(bad, sizeof bad, "error: stored space is not JSON");
        why = bad;
        goto record;
    }
    sp = gt_evo_space_new(space, bad + 7, sizeof bad - 7);
    space = NULL; /* the space owns it now */
    if (!sp) {
        memcpy(bad, "error: ", 7);
        why = bad;
        goto record;
    }
    size_t n = gt_evo_space_size(sp);
    taken = calloc(n ? n : 1, 1);
    out = calloc(lim.population > 0 ? (size_t)lim.population : 1, sizeof *out);
    if (!taken || !out)
        goto oom;

    /* Taken: everything proposed so far (whatever became of its job) and
     * everything measured, so the search never proposes a config twice. */
    st = gt_store_prep(s,
                       "SELECT candidates, baseline FROM jobs WHERE problem_id = ? AND kind = 'screen'",
                       err, errlen);
    if (!st)
        goto out;
    sqlite3_bind_int64(st, 1, pid);
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (mark_job(sp, gt_store_col_text(st, 0), taken)) {
            gt_store_finish(s, st);
            snprintf(err, errlen, "problem %lld: stored candidates are not JSON", (long long)pid);
            goto out;
        }
        if (!base && sqlite3_column_type(st, 1) != SQLITE_NULL)
            base = cJSON_Parse(gt_store_col_text(st, 1));
    }
    gt_store_finish(s, st);
    if (r != SQLITE_DONE) {
        snprintf(err, errlen, "sqlite step: %s", sqlite3_errmsg(s->db));
        goto out;
    }
    if (load_obs(s, pid, sp, base, taken, &obs, &nobs, &best, err, errlen))
        goto out;
    size_t nfree = 0;
    for (size_t i = 0; i < n; i++)
        nfree += !taken[i];

    int want = gt_evo_plan(&lim, &pr, best, nfree, &why);
    if (want > 0) {
        k = gt_evo_next(sp, obs, nobs, taken, (size_t)want, pr.generation + 1, seed, out);
        if (k < 0)
            goto oom;
        if (k == 0)
            why = "exhausted";
    }
    if (k > 0) {
        /* The generation's jobs, cut as the planner cuts every job list.
         * Their shards count from 0 within this generation (not on from
         * the problem's earlier generations): a generation is written
         * when the previous one's results are in, so its first job is
         * leased as a new problem's first would be, ahead of other
         * problems' later shards. */
        gt_run_opts o;
        if (gt_store_run_opts(s, run_id, &o, err, errlen))
            goto out;
        char backend[sizeof o.backend];
        snprintf(backend, sizeof backend, "%s", o.backend);
        int shard_size = o.shard_size;
        gt_run_opts_fini(&o);
        gen = gt_evo_members_json(sp, out, (size_t)k);
        base_txt = base ? cJSON_PrintUnformatted(base) : NULL;
        if (!gen || (base && !base_txt) || gt_plan_shard(gen, shard_size, &jobs, &njobs))
            goto oom;
        if (gt_store_insert_jobs(s, run_id, pid, backend, jobs, njobs, base_txt,
                                 pr.generation + 1, now_ms, err, errlen))
            goto out;
        gt_info("problem %lld: generation %d: %ld configs (best so far %.3f us, %d of %d measured)",
                (long long)pid, pr.generation + 1, k, best, pr.issued, lim.budget);
    }
record:
    if (k == 0)
        gt_info("problem %lld: evolutionary search done after generation %d (%s): %d configs, "
                "best %.3f us",
                (long long)pid, pr.generation, why ? why : "exhausted", pr.issued, best);
    st = gt_store_prep(s,
                       "UPDATE spaces SET generation = generation + ?2, issued = issued + ?3,"
                       " best_us = ?4, stale = ?5, state = ?6, stop_reason = ?7 WHERE problem_id = ?1",
                       err, errlen);
    if (!st)
        goto out;
    sqlite3_bind_int64(st, 1, pid);
    sqlite3_bind_int(st, 2, k > 0);
    sqlite3_bind_int64(st, 3, k);
    if (pr.best_us > 0)
        sqlite3_bind_double(st, 4, pr.best_us);
    else
        sqlite3_bind_null(st, 4);
    sqlite3_bind_int(st, 5, pr.stale);
    gt_store_bind_text(st, 6, k > 0 ? "searching" : "done");
    gt_store_bind_text(st, 7, k > 0 ? NULL : (why ? why : "exhausted"));
    if (gt_store_step_done(s, st, err, errlen))
        goto out;
    *queued = k > 0;
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
out:
    gt_plan_jobs_free(jobs, njobs);
    cJSON_free(base_txt);
    cJSON_Delete(space);
    cJSON_Delete(gen);
    cJSON_Delete(base);
    free(taken);
    free(out);
    free(obs);
    gt_evo_space_free(sp);
    return rc;
}
