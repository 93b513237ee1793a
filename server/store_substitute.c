/* store_substitute.c: the substitute baseline (issue 18). When a GEMM's
 * default (the vendor library's choice: OpenBLAS on cpu, cuBLASLt's
 * heuristic algo on cuda) could not run in any of its screen jobs, its
 * candidates still compete: the final job re-times the top ones in the
 * paired rounds against a substitute, the fastest valid screen candidate
 * that is a "library default"-like choice (cpu: the untuned default
 * blocking, gt_space_cpu_default; cuda: a cuBLASLt configuration, no
 * generated family), else the fastest valid candidate. The run views tell
 * such a GEMM apart (baseline_kind "substitute", store_query.c) and keep its
 * uplift out of the headline figures: it is measured against another
 * yardstick. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "gt_config.h"
#include "gt_problem.h"
#include "store_priv.h"

/* 1 when cfg is backend's library-default-like choice for p. */
static int default_like(const char *backend, const char *def_hash, const cJSON *cfg)
{
    if (!strcmp(backend, "cpu")) {
        char h[17];
        return def_hash[0] && gt_cfg_hash(cfg, h) == 0 && !strcmp(h, def_hash);
    }
    /* cuda and hip: a library configuration carries no family, or names
     * the library itself (cuda/lt_cfg.c: "family":"cublaslt") */
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(cfg, "family");
    return !f || (cJSON_IsString(f) && (!strcmp(f->valuestring, "cublaslt") ||
                                        !strcmp(f->valuestring, "hipblaslt")));
}

/* The cpu default blocking's hash for problem pid ("" when it cannot be
 * made: then no candidate is default-like and the fastest stands in). */
static int cpu_default_hash(gt_store *s, int64_t pid, int ncpu, char out[17], char *err,
                            size_t errlen)
{
    out[0] = 0;
    sqlite3_stmt *st = gt_store_prep(s, "SELECT spec FROM problems WHERE id = ?", err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, pid);
    cJSON *spec = sqlite3_step(st) == SQLITE_ROW ? cJSON_Parse(gt_store_col_text(st, 0)) : NULL;
    gt_store_finish(s, st);
    gt_problem p;
    char why[160];
    if (spec && gt_problem_from_json(spec, &p, why, sizeof why) == 0) {
        cJSON *def = gt_space_cpu_default(&p, ncpu);
        if (def && gt_cfg_hash(def, out) != 0)
            out[0] = 0;
        cJSON_Delete(def);
    }
    cJSON_Delete(spec);
    return 0;
}

int gt_store_pick_substitute(gt_store *s, int64_t pid, const char *backend, int ncpu,
                             cJSON **out, char *err, size_t errlen)
{
    *out = NULL;
    /* The default counts as failed only when a screen job said so (a
     * worker from before the substitute reports nothing) and none timed
     * it: a baseline dropped as an outlier or implausible is not a
     * default that cannot run. */
    sqlite3_stmt *st = gt_store_prep(
        s,
        "SELECT NOT EXISTS (SELECT 1 FROM baselines WHERE problem_id = ?1)"
        " AND EXISTS (SELECT 1 FROM results WHERE problem_id = ?1 AND phase = 'screen'"
        " AND valid = 0 AND is_baseline = 1)",
        err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, pid);
    int failed = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0);
    gt_store_finish(s, st);
    if (!failed)
        return 0;
    char def_hash[17] = "";
    if (!strcmp(backend, "cpu") && cpu_default_hash(s, pid, ncpu, def_hash, err, errlen))
        return -1;
    st = gt_store_prep(s,
                       "SELECT config FROM results WHERE problem_id = ?1 AND phase = 'screen'"
                       " AND valid = 1 AND is_baseline = 0 AND time_us IS NOT NULL"
                       " ORDER BY time_us, id",
                       err, errlen);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, pid);
    cJSON *fastest = NULL, *like = NULL;
    while (!like && sqlite3_step(st) == SQLITE_ROW) {
        cJSON *c = cJSON_Parse(gt_store_col_text(st, 0));
        if (!c)
            continue; /* stored configs are JSON; a bad one is no substitute */
        if (default_like(backend, def_hash, c))
            like = c;
        else if (!fastest)
            fastest = c;
        else
            cJSON_Delete(c);
    }
    gt_store_finish(s, st);
    if (like) {
        cJSON_Delete(fastest);
        *out = like;
    } else {
        *out = fastest;
    }
    return *out ? 1 : 0;
}
