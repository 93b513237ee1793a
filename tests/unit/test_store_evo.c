/* test_store_evo.c: strategy=evolutionary in the store (server/store_evo.c,
 * the spaces table of schema/003), driven by a simulated worker through the
 * same calls the dispatcher makes (register, lease, report, expire).
 *
 * Proves, for the CPU backend (space built at run creation) and the cuda
 * backend (space from an enumerate job): more than one generation runs;
 * every proposed config is a member of the stored space and none twice (nor
 * the baseline); a problem measures at most its budget; a poisoned job and a
 * requeued lease do not stop or repeat the search; the store reopened
 * between generations carries on; the progress never claims 100 % before the
 * run is done; every problem gets a final phase; two runs with the same
 * seed propose exactly the same configs; and a stored space that no longer
 * parses ends its search without blocking the problem. */
#include "gt_search_evo.h"
#include "gt_store.h"
#include "gt_test.h"
#include "gt_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[64];

static double num(const cJSON *c, const char *k, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* A deterministic "measurement": smooth in the CPU blocking attributes and
 * in the cuBLASLt ones; unroll 8 and split-K 16 fail validation. */
static double fake_time(const cJSON *c)
{
    if (num(c, "unroll", 1) == 8 || num(c, "splitk", 1) == 16)
        return 0;
    double t = 50;
    t += 3 * fabs(log2(num(c, "mc", 64)) - 6.5) + 2 * fabs(log2(num(c, "kc", 128)) - 7);
    t += 2 * fabs(log2(num(c, "nc", 256)) - 8) + fabs(log2(num(c, "unroll", 4)) - 2);
    t += 4 * fabs(num(c, "tile", 20) - 20) / 5 + 2 * fabs(log2(num(c, "splitk", 2)) - 1);
    t += fabs(num(c, "stages", 16) - 16) / 8 + (num(c, "algo_id", 66) == 66 ? 0 : 3);
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, "family");
    if (cJSON_IsString(f))
        t += 6 + num(c, "warps", 4);
    return t;
}

static cJSON *result_json(const cJSON *cfg, int is_baseline)
{
    double t = is_baseline ? 60 : fake_time(cfg);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "config", cJSON_Duplicate(cfg, 1));
    cJSON_AddBoolToObject(r, "baseline", is_baseline);
    cJSON_AddBoolToObject(r, "valid", t > 0);
    cJSON_AddNumberToObject(r, "time_us", t > 0 ? t : -1);
    cJSON_AddNumberToObject(r, "spread", 0.01);
    cJSON_AddNumberToObject(r, "tflops", 1);
    if (t > 0)
        cJSON_AddNumberToObject(r, "rel_err", 1e-6);
    else
        cJSON_AddNullToObject(r, "rel_err");
    cJSON_AddStringToObject(r, "reason", t > 0 ? "" : "rel_err too large");
    return r;
}

/* The cuda space the fake enumeration returns: cuBLASLt-like configs (all
 * nine integer keys) after four "heuristic" ones, then generated gemv ones
 * (strings and integers). Its first entry is the baseline. */
static cJSON *cuda_space(void)
{
    cJSON *arr = cJSON_CreateArray();
    static const int algos[] = {66, 21, 6}, tiles[] = {15, 18, 20, 23, 25};
    static const int stages[] = {0, 16, 22, 35}, splits[] = {1, 2, 4, 8, 16};
    for (size_t a = 0; a < 3; a++)
        for (size_t t = 0; t < 5; t++)
            for (size_t g = 0; g < 4; g++)
                for (size_t k = 0; k < 5; k++)
                    for (int sw = 0; sw < 2; sw++) {
                        if (algos[a] == 6 && splits[k] > 4)
                            continue; /* "AlgoCheck" refuses it */
                        cJSON *o = cJSON_CreateObject();
                        cJSON_AddNumberToObject(o, "algo_id", algos[a]);
                        cJSON_AddNumberToObject(o, "cluster", 0);
                        cJSON_AddNumberToObject(o, "custom", 0);
                        cJSON_AddNumberToObject(o, "inner_shape", 0);
                        cJSON_AddNumberToObject(o, "reduction", splits[k] > 1 ? 2 : 0);
                        cJSON_AddNumberToObject(o, "splitk", splits[k]);
                        cJSON_AddNumberToObject(o, "stages", stages[g]);
                        cJSON_AddNumberToObject(o, "swizzle", sw);
                        cJSON_AddNumberToObject(o, "tile", tiles[t]);
                        cJSON_AddItemToArray(arr, o);
                    }
    for (int w = 1; w <= 8; w *= 2)
        for (int u = 1; u <= 8; u *= 2) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "family", "gemv");
            cJSON_AddStringToObject(o, "pipe", u > 2 ? "async" : "reg");
            cJSON_AddNumberToObject(o, "k_unroll", u);
            cJSON_AddNumberToObject(o, "warps", w);
            cJSON_AddNumberToObject(o, "vec", 8);
            cJSON_AddItemToArray(arr, o);
        }
    return arr;
}

typedef struct sim {
    gt_store *s;
    char path[160];
    int64_t run, wid;
    int reports, reopen_at, poison_at, requeue_at;
    int progress_bad;     /* progress >= 1 while the run was running */
    double progress_gen0; /* progress right after the first generation reported */
    int poisoned, requeued;
} sim;

static int open_store(sim *m)
{
    char err[256];
    m->s = gt_store_open(m->path, err, sizeof err);
    CHECK_MSG(m->s != NULL, "%s", err);
    return m->s ? 0 : -1;
}

static int reg_worker(sim *m, const char *backend, const char *model)
{
    gt_worker_info w;
    memset(&w, 0, sizeof w);
    snprintf(w.host, sizeof w.host, "sim");
    w.pid = 4242;
    snprintf(w.backend, sizeof w.backend, "%s", backend);
    snprintf(w.device_model, sizeof w.device_model, "%s", model);
    char err[256];
    int rc = gt_store_register_worker(m->s, &w, gt_wall_ms(), &m->wid, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    return rc;
}

static int create(sim *m, const char *backend, const char *extra_opts, uint64_t seed)
{
    char err[512];
    gt_run_opts o;
    gt_run_opts_default(&o);
    const char *kv[][2] = {{"backend", backend}, {"strategy", "ga"},  {"budget", "20"},
                           {"population", "5"},  {"ncpu", "2"},       {"shard_size", "3"},
                           {"final_k", "2"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        CHECK(gt_run_opts_set(&o, kv[i][0], kv[i][1], err, sizeof err) == 0);
    o.seed = seed;
    if (extra_opts) {
        cJSON *j = cJSON_Parse(extra_opts);
        CHECK_MSG(gt_run_opts_from_json(&o, j, err, sizeof err) == 0, "%s", err);
        cJSON_Delete(j);
    }
    CHECK(o.strategy == GT_STRAT_EVOLUTIONARY && o.population == 5);
    const char *log = "M,N,K\n64,64,64\n48,32,96\n";
    gt_log_result res;
    gt_run_created cr;
    int rc = gt_log_parse(log, strlen(log), &o.log, &res);
    if (rc == 0)
        rc = gt_test_create_run(m->s, &o, &res, &cr, err, sizeof err);
    CHECK_MSG(rc == 0, "create run: %s", err);
    gt_log_result_free(&res);
    gt_run_opts_fini(&o);
    m->run = cr.id;
    /* cpu: the whole budget is announced up front, not generation 0 only */
    if (rc == 0 && !strcmp(backend, "cpu"))
        CHECK_MSG(cr.candidates == 40, "%zu", cr.candidates);
    return rc;
}

static double run_progress(sim *m, char *state, size_t len)
{
    char err[256];
    int found = 0;
    cJSON *j = gt_store_run_json(m->s, m->run, gt_wall_ms(), &found, err, sizeof err);
    double p = NAN;
    if (j) {
        p = num(j, "progress", NAN);
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "state");
        snprintf(state, len, "%s", cJSON_IsString(st) ? st->valuestring : "?");
    }
    cJSON_Delete(j);
    return p;
}

/* Leases and answers jobs until none is left; the hooks simulate a
 * coordinator restart, a lost lease and a poison job on the way. */
static void drive(sim *m)
{
    char err[512];
    for (int step = 0; step < 500; step++) {
        if (m->reports == m->reopen_at) {
            gt_store_close(m->s); /* state is all in SQLite: carry on */
            if (open_store(m))
                return;
        }
        gt_job job;
        int64_t now = gt_wall_ms();
        int r = gt_store_lease(m->s, m->wid, now, 30000, &job, err, sizeof err);
        CHECK_MSG(r >= 0, "lease: %s", err);
        if (r <= 0)
            return;
        if (!strcmp(job.kind, "screen") && m->reports == m->requeue_at && !m->requeued) {
            /* lease lost once: the job goes back to the queue */
            m->requeued = 1;
            CHECK(gt_store_expire(m->s, now + 60000, 3, 1 << 30, err, sizeof err) == 1);
            gt_job_free(&job);
            continue;
        }
        if (!strcmp(job.kind, "screen") && m->reports == m->poison_at && !m->poisoned) {
            /* a job whose lease expires for the last time fails */
            m->poisoned = 1;
            CHECK(gt_store_expire(m->s, now + 60000, 1, 1 << 30, err, sizeof err) == 1);
            gt_job_free(&job);
            continue;
        }
        cJSON *msg = cJSON_CreateObject(), *res = cJSON_CreateArray();
        cJSON_AddNumberToObject(msg, "job_id", (double)job.id);
        cJSON_AddItemToObject(msg, "results", res);
        cJSON_AddTrueToObject(msg, "done");
        cJSON *cands = cJSON_Parse(job.candidates);
        cJSON *base = job.baseline ? cJSON_Parse(job.baseline) : NULL;
        const cJSON *c;
        if (!strcmp(job.kind, "enumerate")) {
            cJSON *sp = cuda_space();
            cJSON_AddItemToObject(msg, "baseline_config", cJSON_Duplicate(cJSON_GetArrayItem(sp, 0), 1));
            cJSON_AddItemToObject(msg, "candidates", sp);
        } else {
            if (!strcmp(job.kind, "final"))
                cJSON_AddItemToArray(res, result_json(base, 1));
            cJSON_ArrayForEach(c, cands) cJSON_AddItemToArray(res, result_json(c, 0));
            cJSON *b = cJSON_CreateObject();
            cJSON_AddItemToObject(b, "config", cJSON_Duplicate(base, 1));
            cJSON_AddNumberToObject(b, "time_us", 60);
            cJSON_AddNumberToObject(b, "spread", 0.01);
            cJSON_AddItemToObject(msg, "baseline", b);
        }
        int cancelled = 0;
        size_t acc = 0, rejected = 0;
        r = gt_test_report(m->s, m->wid, msg, now, 30000, &cancelled, &acc, &rejected, err, sizeof err);
        CHECK_MSG(r == 0, "report: %s", err);
        cJSON_Delete(msg);
        cJSON_Delete(cands);
        cJSON_Delete(base);
        gt_job_free(&job);
        m->reports++;
        char state[16] = "";
        double p = run_progress(m, state, sizeof state);
        if (!strcmp(state, "running") && !(p < 1))
            m->progress_bad++;
        if (m->progress_gen0 < 0) {
            /* after generation 0 of both problems (2 x 5 configs, 2 jobs each) */
            sqlite3_stmt *st = NULL;
            sqlite3_prepare_v2(gt_store_db(m->s),
                               "SELECT COUNT(*) FROM jobs WHERE run_id = ? AND generation = 0"
                               " AND state IN ('queued', 'leased')",
                               -1, &st, NULL);
            sqlite3_bind_int64(st, 1, m->run);
            int left = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
            sqlite3_finalize(st);
            if (left == 0)
                m->progress_gen0 = p;
        }
    }
    CHECK_MSG(0, "the run did not finish in 500 jobs");
}

static long long q_int(gt_store *s, const char *sql, int64_t arg)
{
    sqlite3_stmt *st = NULL;
    long long v = -1;
    if (sqlite3_prepare_v2(gt_store_db(s), sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "prepare: %s: %s\n", sqlite3_errmsg(gt_store_db(s)), sql);
        return -1;
    }
    sqlite3_bind_int64(st, 1, arg);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Every screen candidate of the run is a member of its problem's stored
 * space (but the extras run option candidates), proposed once, never the
 * baseline; returns the proposals as text (problem key, generation, config
 * per line) for the determinism check. */
static char *check_proposals(gt_store *s, int64_t run, int extras)
{
    gt_str out;
    gt_str_init(&out);
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(gt_store_db(s),
                       "SELECT p.key, sp.configs, j.generation, j.candidates, j.baseline"
                       " FROM jobs j JOIN problems p ON p.id = j.problem_id"
                       " JOIN spaces sp ON sp.problem_id = p.id"
                       " WHERE j.run_id = ? AND j.kind = 'screen' ORDER BY p.key, j.generation, j.id",
                       -1, &st, NULL);
    sqlite3_bind_int64(st, 1, run);
    char last_key[512] = "";
    gt_evo_space *sp = NULL;
    unsigned char *seen = NULL;
    int not_member = 0, twice = 0, baseline = 0, untagged = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0);
        if (strcmp(key, last_key)) {
            snprintf(last_key, sizeof last_key, "%s", key);
            gt_evo_space_free(sp);
            free(seen);
            char err[128];
            sp = gt_evo_space_new(cJSON_Parse((const char *)sqlite3_column_text(st, 1)), err,
                                  sizeof err);
            seen = sp ? calloc(gt_evo_space_size(sp) + 1, 1) : NULL;
            if (!sp || !seen)
                break;
        }
        untagged += sqlite3_column_type(st, 2) == SQLITE_NULL;
        cJSON *cands = cJSON_Parse((const char *)sqlite3_column_text(st, 3));
        cJSON *base = cJSON_Parse((const char *)sqlite3_column_text(st, 4));
        char bh[17], h[17];
        gt_cfg_hash(base, bh);
        const cJSON *c;
        cJSON_ArrayForEach(c, cands)
        {
            gt_cfg_hash(c, h);
            long i = gt_evo_space_find(sp, c);
            not_member += i < 0;
            baseline += !strcmp(h, bh);
            if (i >= 0) {
                twice += seen[i];
                seen[i] = 1;
            }
            char *t = gt_cfg_canonical(c);
            gt_str_printf(&out, "%s g%d %s\n", key, sqlite3_column_int(st, 2), t);
            free(t);
        }
        cJSON_Delete(cands);
        cJSON_Delete(base);
    }
    sqlite3_finalize(st);
    gt_evo_space_free(sp);
    free(seen);
    CHECK_MSG(not_member == extras && twice == 0 && baseline == 0 && untagged == 0,
              "%d not in the space, %d twice, %d baselines, %d without a generation", not_member,
              twice, baseline, untagged);
    return out.s;
}

/* The checks every finished run must pass; returns its proposals. */
static char *check_run(sim *m, int budget)
{
    gt_store *s = m->s;
    char state[16] = "";
    run_progress(m, state, sizeof state);
    CHECK_MSG(!strcmp(state, "done"), "run state %s", state);
    CHECK(m->progress_bad == 0);
    CHECK_MSG(m->progress_gen0 > 0 && m->progress_gen0 < 0.5,
              "progress %.3f after generation 0 of 4", m->progress_gen0);
    CHECK(q_int(s, "SELECT COUNT(*) FROM problems WHERE run_id = ? AND state = 'done'", m->run) == 2);
    CHECK(q_int(s, "SELECT strategy = 'evolutionary' FROM runs WHERE id = ?", m->run) == 1);
    CHECK(q_int(s, "SELECT COUNT(*) FROM spaces WHERE run_id = ? AND state = 'done'"
                   " AND generation >= 1 AND issued <= budget AND stop_reason IS NOT NULL",
                m->run) == 2);
    CHECK(q_int(s, "SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM results WHERE run_id = ?"
                   " AND phase = 'screen' GROUP BY problem_id)",
                m->run) <= budget);
    CHECK(q_int(s, "SELECT COUNT(*) FROM jobs WHERE run_id = ? AND kind = 'final' AND state = 'done'",
                m->run) == 2);
    CHECK(q_int(s, "SELECT COUNT(DISTINCT problem_id) FROM results WHERE run_id = ?"
                   " AND phase = 'final' AND is_baseline = 0 AND valid = 1",
                m->run) == 2);
    char *props = check_proposals(s, m->run, 0);
    CHECK(props != NULL);
    return props;
}

static void sim_init(sim *m, const char *name)
{
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s/%s.db", g_dir, name);
    m->reopen_at = m->poison_at = m->requeue_at = -1;
    m->progress_gen0 = -1;
}

static void test_cpu(void)
{
    sim a, b;
    sim_init(&a, "cpu_a");
    sim_init(&b, "cpu_b");
    a.reopen_at = 5;  /* mid-run, between generations or inside one */
    a.requeue_at = 2; /* a lost lease in generation 0 */
    if (open_store(&a) || open_store(&b))
        return;
    if (create(&a, "cpu", NULL, 7) || create(&b, "cpu", NULL, 7) ||
        reg_worker(&a, "cpu", "Sim CPU") || reg_worker(&b, "cpu", "Sim CPU"))
        goto out;
    /* The whole pruned space is stored, not the budget. */
    long long size = q_int(a.s, "SELECT MIN(size) FROM spaces WHERE run_id = ?", a.run);
    CHECK_MSG(size > 100, "space of %lld configs", size);
    CHECK(q_int(a.s, "SELECT COUNT(*) FROM spaces WHERE run_id = ? AND budget = 20 AND"
                     " population = 5 AND generations = 4 AND issued = 5",
                a.run) == 2);
    drive(&a);
    drive(&b);
    CHECK(a.requeued);
    char *pa = check_run(&a, 20), *pb = check_run(&b, 20);
    /* Same seed, same proposals, whatever the restarts and requeues. */
    CHECK(pa && pb && strcmp(pa, pb) == 0);
    CHECK(q_int(a.s, "SELECT MAX(generation) FROM jobs WHERE run_id = ?", a.run) >= 1);
    free(pa);
    free(pb);
out:
    gt_store_close(a.s);
    gt_store_close(b.s);
}

static void test_other_seed_and_poison(void)
{
    sim a, c;
    sim_init(&a, "seed_a");
    sim_init(&c, "seed_c");
    c.poison_at = 4; /* a job of generation 1 or so fails for good */
    if (open_store(&a) || open_store(&c))
        return;
    if (create(&a, "cpu", NULL, 7) || create(&c, "cpu", NULL, 8) ||
        reg_worker(&a, "cpu", "Sim CPU") || reg_worker(&c, "cpu", "Sim CPU"))
        goto out;
    drive(&a);
    drive(&c);
    CHECK(c.poisoned);
    char *pa = check_run(&a, 20), *pc = check_run(&c, 20);
    CHECK(pa && pc && strcmp(pa, pc) != 0);
    CHECK(q_int(c.s, "SELECT COUNT(*) FROM jobs WHERE run_id = ? AND state = 'failed'", c.run) == 1);
    free(pa);
    free(pc);
out:
    gt_store_close(a.s);
    gt_store_close(c.s);
}

static void test_cuda(void)
{
    sim m;
    sim_init(&m, "cuda");
    if (open_store(&m))
        return;
    /* A run option candidate outside the space is measured on top. */
    if (create(&m, "cuda", "{\"candidates\":[{\"algo_id\":99,\"tile\":20}]}", 3) ||
        reg_worker(&m, "cuda", "Sim GPU"))
        goto out;
    drive(&m);
    char state[16] = "";
    run_progress(&m, state, sizeof state);
    CHECK_MSG(!strcmp(state, "done"), "%s", state);
    CHECK(m.progress_bad == 0);
    cJSON *sp = cuda_space();
    CHECK(q_int(m.s, "SELECT MIN(size) FROM spaces WHERE run_id = ?", m.run) ==
          cJSON_GetArraySize(sp));
    cJSON_Delete(sp);
    /* the heuristic head (after the baseline, entry 0) opens generation 0 */
    CHECK(q_int(m.s, "SELECT COUNT(*) FROM jobs WHERE run_id = ? AND generation = 0 AND kind ="
                     " 'screen' AND json_extract(candidates, '$[0].algo_id') = 66"
                     " AND json_extract(candidates, '$[0].stages') = 0"
                     " AND json_extract(candidates, '$[0].swizzle') = 1",
                m.run) == 2);
    CHECK(q_int(m.s, "SELECT COUNT(*) FROM spaces WHERE run_id = ? AND generation >= 1", m.run) == 2);
    /* 20 proposals at most, plus the extra */
    CHECK(q_int(m.s, "SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM results WHERE run_id = ?"
                     " AND phase = 'screen' GROUP BY problem_id)",
                m.run) <= 21);
    CHECK(q_int(m.s, "SELECT COUNT(*) FROM results WHERE run_id = ? AND phase = 'screen'"
                     " AND config LIKE '%\"algo_id\":99%'",
                m.run) == 2);
    /* the generated (string) configs are in the space and can be proposed */
    CHECK(q_int(m.s, "SELECT COUNT(*) FROM problems WHERE run_id = ? AND state = 'done'", m.run) == 2);
    char *p = check_proposals(m.s, m.run, 2);
    CHECK(p != NULL);
    free(p);
out:
    gt_store_close(m.s);
}

/* A stored space that no longer parses ends that search (the final phase
 * still runs) instead of failing every report of the problem. */
static void test_corrupt_space(void)
{
    sim m;
    sim_init(&m, "corrupt");
    if (open_store(&m))
        return;
    if (create(&m, "cpu", NULL, 7) || reg_worker(&m, "cpu", "Sim CPU"))
        goto out;
    char *msg = NULL;
    gt_store_lock(m.s);
    int rc = sqlite3_exec(gt_store_db(m.s),
                          "UPDATE spaces SET configs = '[1,' WHERE problem_id = (SELECT MIN(problem_id)"
                          " FROM spaces)",
                          NULL, NULL, &msg);
    gt_store_unlock(m.s);
    CHECK_MSG(rc == SQLITE_OK, "%s", msg ? msg : "");
    sqlite3_free(msg);
    drive(&m);
    char state[16] = "";
    run_progress(&m, state, sizeof state);
    CHECK_MSG(!strcmp(state, "done"), "%s", state);
    CHECK(q_int(m.s, "SELECT COUNT(*) FROM spaces WHERE run_id = ? AND stop_reason LIKE 'error: %'",
                m.run) == 1);
    CHECK(q_int(m.s, "SELECT COUNT(*) FROM jobs WHERE run_id = ? AND kind = 'final' AND state = 'done'",
                m.run) == 2);
out:
    gt_store_close(m.s);
}

static void test_options(void)
{
    gt_run_opts o;
    char err[256];
    gt_run_opts_default(&o);
    CHECK(o.population == 0 && o.generations == 0);
    CHECK(gt_run_opts_set(&o, "strategy", "evolutionary", err, sizeof err) == 0 &&
          o.strategy == GT_STRAT_EVOLUTIONARY);
    CHECK(gt_run_opts_set(&o, "strategy", "EVO", err, sizeof err) == 0);
    CHECK(gt_run_opts_set(&o, "strategy", "annealing", err, sizeof err) == -1 &&
          strstr(err, "evolutionary"));
    CHECK(gt_run_opts_set(&o, "population", "12", err, sizeof err) == 0 && o.population == 12);
    CHECK(gt_run_opts_set(&o, "generations", "-1", err, sizeof err) == -1);
    cJSON *j = cJSON_Parse("{\"generations\": 6, \"strategy\": \"ga\"}");
    CHECK(gt_run_opts_from_json(&o, j, err, sizeof err) == 0 && o.generations == 6);
    cJSON_Delete(j);
    gt_run_opts_fini(&o);
}

int main(void)
{
    if (gt_test_tmpdir(g_dir, sizeof g_dir, "evo") != 0)
        return 1;
    gt_log_set_level(GT_LOG_WARN);
    RUN(test_options);
    RUN(test_cpu);
    RUN(test_other_seed_and_poison);
    RUN(test_cuda);
    RUN(test_corrupt_space);
    return gt_test_done_rm(g_dir);
}
