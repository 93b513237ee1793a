/* test_search_evo.c: the evolutionary search's pure logic (server/search_evo.c).
 *
 * Proves: the space view (duplicates merged, string and integer attributes,
 * missing keys, lookup by hash); crossover and mutation return only free
 * members of the space, the nearest ones; a generation never repeats a
 * config, is a function of its inputs and seed; the bounds and stop rules;
 * and, on a synthetic space with a smooth cost over its attributes and a
 * known optimum, that the search gets within 5 % of the optimum with a
 * budget of 1/350 of the space, and beats a random sample of the same budget
 * on average over 40 seeds. */
#include "gt_search_evo.h"
#include "gt_test.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gt_config.h"

static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* ---- the synthetic space: a CPU-like blocking space with a string
 * attribute and a pruning rule, so not every combination is a member ---- */

static const int k_mc[] = {32, 64, 96, 128, 192, 256};
static const int k_nc[] = {64, 128, 256, 512, 1024, 2048};
static const int k_kc[] = {64, 128, 256, 384, 512};
static const int k_un[] = {1, 2, 4, 8};
static const int k_th[] = {1, 2, 4, 8, 16};
static const char *const k_tile[] = {"4x8", "8x8", "6x16", "4x16", "8x16"};
static const double k_tile_cost[] = {0.12, 0.08, 0.0, 0.05, 0.03};
static const char *const k_pipe[] = {"reg", "async"};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static cJSON *synthetic_space(void)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t a = 0; a < N_OF(k_mc); a++)
        for (size_t b = 0; b < N_OF(k_nc); b++)
            for (size_t c = 0; c < N_OF(k_kc); c++)
                for (size_t d = 0; d < N_OF(k_un); d++)
                    for (size_t e = 0; e < N_OF(k_th); e++)
                        for (size_t f = 0; f < N_OF(k_tile); f++)
                            for (size_t g = 0; g < N_OF(k_pipe); g++) {
                                /* pruned: B panel over 2 MiB, more threads than
                                 * row blocks of 16, deep unroll of a short k */
                                if ((long)k_kc[c] * k_nc[b] * 4 > (2L << 20) ||
                                    k_th[e] > k_mc[a] / 16 || (k_un[d] == 8 && k_kc[c] == 64))
                                    continue;
                                cJSON *o = cJSON_CreateObject();
                                cJSON_AddNumberToObject(o, "mc", k_mc[a]);
                                cJSON_AddNumberToObject(o, "nc", k_nc[b]);
                                cJSON_AddNumberToObject(o, "kc", k_kc[c]);
                                cJSON_AddNumberToObject(o, "unroll", k_un[d]);
                                cJSON_AddNumberToObject(o, "threads", k_th[e]);
                                cJSON_AddStringToObject(o, "tile", k_tile[f]);
                                cJSON_AddStringToObject(o, "pipe", k_pipe[g]);
                                cJSON_AddItemToArray(arr, o);
                            }
    return arr;
}

static double num(const cJSON *c, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *str(const cJSON *c, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* A smooth cost (time in us) over the attributes, with an interaction
 * between mc and kc; 0 (invalid) for one corner, as a failing candidate. */
static double cost(const cJSON *c)
{
    double lm = log2(num(c, "mc")), ln = log2(num(c, "nc")), lk = log2(num(c, "kc"));
    double lu = log2(num(c, "unroll")), lt = log2(num(c, "threads"));
    if (num(c, "unroll") == 8 && num(c, "threads") == 16)
        return 0;
    double t = 0;
    for (size_t i = 0; i < N_OF(k_tile); i++)
        if (!strcmp(str(c, "tile"), k_tile[i]))
            t = k_tile_cost[i];
    return 100 * (1 + 0.05 * (lm - 6.6) * (lm - 6.6) + 0.04 * (ln - 9.3) * (ln - 9.3) +
                  0.06 * (lk - 7.7) * (lk - 7.7) + 0.03 * (lu - 2.2) * (lu - 2.2) +
                  0.08 * (lt - 3.4) * (lt - 3.4) + 0.02 * (lm - lk + 1) * (lm - lk + 1) + t +
                  (strcmp(str(c, "pipe"), "async") ? 0.02 : 0));
}

static gt_evo_space *g_sp;
static double *g_cost; /* per member */
static double g_opt;

static void setup(void)
{
    char err[128];
    g_sp = gt_evo_space_new(synthetic_space(), err, sizeof err);
    CHECK_MSG(g_sp != NULL, "%s", err);
    if (!g_sp)
        exit(1);
    size_t n = gt_evo_space_size(g_sp);
    g_cost = malloc(n * sizeof *g_cost);
    g_opt = INFINITY;
    for (size_t i = 0; i < n; i++) {
        g_cost[i] = cost(gt_evo_space_config(g_sp, i));
        if (g_cost[i] > 0 && g_cost[i] < g_opt)
            g_opt = g_cost[i];
    }
}

/* ---- the space view ---- */

static void test_space(void)
{
    char err[128];
    /* gemv-like configs: strings and integers, a key missing in one, one
     * config twice (keys in another order: the same canonical config). */
    cJSON *arr = cJSON_Parse(
        "[{\"family\":\"gemv\",\"pipe\":\"async\",\"vec\":8,\"warps\":4},"
        " {\"family\":\"gemv\",\"pipe\":\"reg\",\"vec\":8,\"warps\":4},"
        " {\"warps\":4,\"vec\":8,\"pipe\":\"async\",\"family\":\"gemv\"},"
        " {\"algo_id\":66,\"tile\":20,\"splitk\":1},"
        " {\"family\":\"gemv\",\"pipe\":\"reg\",\"vec\":4,\"warps\":2}]");
    cJSON *probe = cJSON_Duplicate(arr, 1);
    gt_evo_space *sp = gt_evo_space_new(arr, err, sizeof err);
    CHECK_MSG(sp != NULL, "%s", err);
    if (sp) {
        CHECK(gt_evo_space_size(sp) == 4);
        CHECK(gt_evo_space_attrs(sp) == 7); /* algo_id family pipe splitk tile vec warps */
        CHECK(gt_evo_space_find(sp, cJSON_GetArrayItem(probe, 2)) == 0);
        CHECK(gt_evo_space_find(sp, cJSON_GetArrayItem(probe, 3)) == 2);
        CHECK(gt_evo_space_find(sp, cJSON_GetArrayItem(probe, 4)) == 3);
        char h1[17], h2[17];
        gt_cfg_hash(gt_evo_space_config(sp, 2), h1);
        gt_cfg_hash(cJSON_GetArrayItem(probe, 3), h2);
        CHECK(strcmp(h1, h2) == 0);
        /* Not members: a value, a key or a missing key no member has. */
        cJSON *x = cJSON_Parse("{\"algo_id\":66,\"tile\":21,\"splitk\":1}");
        CHECK(gt_evo_space_find(sp, x) == -1);
        cJSON_Delete(x);
        x = cJSON_Parse("{\"algo_id\":66,\"tile\":20,\"splitk\":1,\"bogus\":0}");
        CHECK(gt_evo_space_find(sp, x) == -1);
        cJSON_Delete(x);
        x = cJSON_Parse("{\"algo_id\":66,\"tile\":20}");
        CHECK(gt_evo_space_find(sp, x) == -1);
        cJSON_Delete(x);
        x = cJSON_Parse("{\"splitk\":1.0,\"tile\":20,\"algo_id\":66}");
        CHECK(gt_evo_space_find(sp, x) == 2);
        cJSON_Delete(x);
        CHECK(gt_evo_mismatch(sp, 0, 1) == 1);
        CHECK(gt_evo_mismatch(sp, 1, 3) == 2);
        CHECK(gt_evo_mismatch(sp, 0, 2) == 7);
        /* Mutating 0 changes one attribute: pipe -> member 1 (one apart),
         * vec or warps -> member 3 (the nearest with another vec/warps),
         * anything else -> member 2; never 0 itself. */
        unsigned char taken[4] = {1, 0, 0, 0};
        int hit[4] = {0};
        for (uint64_t r = 0; r < 64; r++) {
            uint64_t rng = r;
            long m = gt_evo_mutate(sp, 0, taken, &rng);
            CHECK(m >= 1 && m <= 3);
            if (m >= 1 && m <= 3)
                hit[m]++;
        }
        CHECK(hit[1] && hit[2] && hit[3]);
        uint64_t rng = 5;
        taken[1] = 1;
        /* Crossing 0 and 1 gives 0 or 1, both taken: the nearest free is 3. */
        CHECK(gt_evo_crossover(sp, 0, 1, taken, &rng) == 3);
        taken[2] = taken[3] = 1;
        CHECK(gt_evo_crossover(sp, 0, 1, taken, &rng) == -1);
        CHECK(gt_evo_mutate(sp, 0, taken, &rng) == -1);
    }
    gt_evo_space_free(sp);
    cJSON_Delete(probe);
    arr = cJSON_Parse("[{\"a\":1}, 3]");
    CHECK(gt_evo_space_new(arr, err, sizeof err) == NULL && strstr(err, "entry 1"));
    sp = gt_evo_space_new(cJSON_CreateArray(), err, sizeof err);
    CHECK(sp && gt_evo_space_size(sp) == 0);
    if (sp) {
        size_t out[4];
        unsigned char t = 0;
        CHECK(gt_evo_next(sp, NULL, 0, &t, 4, 0, 1, out) == 0);
    }
    gt_evo_space_free(sp);
}

/* ---- operators on the synthetic space ---- */

static void test_operators(void)
{
    size_t n = gt_evo_space_size(g_sp);
    unsigned char *taken = calloc(n, 1);
    uint64_t pick = 42;
    int bad_member = 0, bad_free = 0, not_nearest = 0, same_run = 1, mut_far = 0, from_parents = 0;
    for (int i = 0; i < 300; i++) {
        size_t a = (size_t)(mix(&pick) % n), b = (size_t)(mix(&pick) % n);
        /* up to an eighth of the space taken at random by the end */
        for (int t = 0; t < 10; t++)
            taken[mix(&pick) % n] = 1;
        uint64_t r1 = (uint64_t)i, r2 = (uint64_t)i;
        long c = gt_evo_crossover(g_sp, a, b, taken, &r1);
        long c2 = gt_evo_crossover(g_sp, a, b, taken, &r2);
        same_run &= c == c2 && r1 == r2;
        bad_member += c < 0 || (size_t)c >= n;
        if (c < 0)
            continue;
        bad_free += taken[c];
        /* Every attribute of a child that is itself a free member comes
         * from a parent; otherwise it differs from both in no more places
         * than the parents differ from each other. */
        int dab = gt_evo_mismatch(g_sp, a, b);
        int dc = gt_evo_mismatch(g_sp, (size_t)c, a) + gt_evo_mismatch(g_sp, (size_t)c, b);
        from_parents += dc == dab;
        not_nearest += gt_evo_mismatch(g_sp, (size_t)c, a) > dab + 2 &&
                       gt_evo_mismatch(g_sp, (size_t)c, b) > dab + 2;
        long m = gt_evo_mutate(g_sp, a, taken, &r1);
        bad_member += m < 0 || (size_t)m >= n;
        if (m >= 0) {
            bad_free += taken[m];
            mut_far += gt_evo_mismatch(g_sp, (size_t)m, a) != 1;
        }
    }
    CHECK(same_run);
    CHECK_MSG(bad_member == 0 && bad_free == 0, "%d not members, %d taken", bad_member, bad_free);
    CHECK_MSG(not_nearest == 0, "%d children far from both parents", not_nearest);
    /* In this dense grid most crossovers land exactly on a combination. */
    CHECK_MSG(from_parents > 200, "%d of 300 children made of their parents' attributes",
              from_parents);
    /* and a free member one attribute away nearly always exists */
    CHECK_MSG(mut_far < 10, "%d mutations moved more than one attribute", mut_far);
    free(taken);
}

/* ---- generations ---- */

/* Runs a whole search like the store does; returns the best time found and
 * sets *evals (configs measured) and *to5 (measured when the best first got
 * within 5 % of the optimum, or 0). order (optional) receives the proposals. */
static double run_evo(uint64_t seed, int budget, int population, int generations, int *evals,
                      int *to5, int *ngen, size_t *order)
{
    size_t n = gt_evo_space_size(g_sp);
    unsigned char *taken = calloc(n, 1);
    gt_evo_obs *obs = calloc((size_t)budget + 1, sizeof *obs);
    size_t *out = calloc((size_t)budget + 1, sizeof *out);
    gt_evo_limits lim;
    gt_evo_limits_resolve(budget, population, generations, n, &lim);
    gt_evo_progress pr = {0, 0, 0, 0};
    size_t nobs = 0;
    double best = 0;
    *to5 = 0;
    long k = gt_evo_next(g_sp, NULL, 0, taken, (size_t)lim.population, 0, seed, out);
    for (;;) {
        for (long i = 0; i < k; i++) {
            double t = g_cost[out[i]];
            if (order)
                order[nobs] = out[i];
            obs[nobs].member = out[i];
            obs[nobs++].time_us = t;
            if (t > 0 && (best <= 0 || t < best))
                best = t;
            if (!*to5 && best > 0 && best <= g_opt * 1.05)
                *to5 = (int)nobs;
        }
        pr.issued += (int)k;
        size_t nfree = 0;
        for (size_t i = 0; i < n; i++)
            nfree += !taken[i];
        const char *why;
        int want = gt_evo_plan(&lim, &pr, best, nfree, &why);
        if (want <= 0)
            break;
        pr.generation++;
        k = gt_evo_next(g_sp, obs, nobs, taken, (size_t)want, pr.generation, seed, out);
        if (k <= 0)
            break;
    }
    *evals = (int)nobs;
    *ngen = pr.generation + 1;
    free(taken);
    free(obs);
    free(out);
    return best;
}

static double run_random(uint64_t seed, int budget)
{
    size_t n = gt_evo_space_size(g_sp);
    unsigned char *taken = calloc(n, 1);
    double best = 0;
    uint64_t s = seed ^ 0x1234;
    for (int i = 0; i < budget; i++) {
        size_t m;
        do
            m = (size_t)(mix(&s) % n);
        while (taken[m]);
        taken[m] = 1;
        if (g_cost[m] > 0 && (best <= 0 || g_cost[m] < best))
            best = g_cost[m];
    }
    free(taken);
    return best;
}

static void test_generations(void)
{
    size_t n = gt_evo_space_size(g_sp);
    unsigned char *taken = calloc(n, 1);
    size_t out[32];
    /* Generation 0: the head of the space first (n/2 = 8 > GT_EVO_HEADS). */
    long k = gt_evo_next(g_sp, NULL, 0, taken, 16, 0, 9, out);
    CHECK(k == 16);
    for (size_t i = 0; i < GT_EVO_HEADS; i++)
        CHECK(out[i] == i);
    /* No repeats within or across generations, only free members. */
    size_t all[40 * 16];
    int order_ok = 1;
    int evals, to5, ngen;
    run_evo(77, 600, 16, 40, &evals, &to5, &ngen, all);
    CHECK(evals <= 600);
    unsigned char *seen = calloc(n, 1);
    int repeats = 0;
    for (int i = 0; i < evals; i++) {
        repeats += seen[all[i]];
        seen[all[i]] = 1;
        order_ok &= all[i] < n;
    }
    CHECK_MSG(repeats == 0 && order_ok, "%d configs proposed twice", repeats);
    /* Deterministic for a seed, different for another. */
    size_t again[40 * 16], other[40 * 16];
    int e2, e3;
    run_evo(77, 600, 16, 40, &e2, &to5, &ngen, again);
    run_evo(78, 600, 16, 40, &e3, &to5, &ngen, other);
    CHECK(e2 == evals && memcmp(all, again, (size_t)evals * sizeof *all) == 0);
    CHECK(memcmp(all, other, 16 * sizeof *all) != 0);
    /* An observation list in another order breeds the same generation. */
    gt_evo_obs obs[32], rev[32];
    memset(taken, 0, n);
    k = gt_evo_next(g_sp, NULL, 0, taken, 32, 0, 3, out);
    for (int i = 0; i < 16; i++) {
        obs[i].member = out[i];
        obs[i].time_us = g_cost[out[i]];
        rev[15 - i] = obs[i];
    }
    unsigned char *t2 = malloc(n);
    memcpy(t2, taken, n);
    size_t o1[8], o2[8];
    CHECK(gt_evo_next(g_sp, obs, 16, taken, 8, 1, 3, o1) == 8);
    CHECK(gt_evo_next(g_sp, rev, 16, t2, 8, 1, 3, o2) == 8);
    CHECK(memcmp(o1, o2, sizeof o1) == 0);
    /* Nothing valid yet: a random sample, still free members only. */
    for (int i = 0; i < 16; i++)
        obs[i].time_us = NAN;
    CHECK(gt_evo_next(g_sp, obs, 16, taken, 8, 2, 3, o1) == 8);
    for (int i = 0; i < 8; i++)
        CHECK(taken[o1[i]]);
    free(t2);
    free(seen);
    free(taken);
}

static void test_limits(void)
{
    gt_evo_limits l;
    gt_evo_limits_resolve(32, 0, 0, 1000, &l);
    CHECK(l.budget == 32 && l.population == 8 && l.generations == 4);
    gt_evo_limits_resolve(100, 0, 0, 1000, &l);
    CHECK(l.budget == 100 && l.population == 20 && l.generations == 5);
    gt_evo_limits_resolve(0, 0, 0, 50, &l); /* budget 0: the whole space */
    CHECK(l.budget == 50 && l.population == 10 && l.generations == 5);
    gt_evo_limits_resolve(30, 7, 0, 5, &l); /* a space smaller than the budget */
    CHECK(l.budget == 5 && l.population == 5 && l.generations == 1);
    gt_evo_limits_resolve(30, 7, 9, 1000, &l);
    CHECK(l.budget == 30 && l.population == 7 && l.generations == 9);

    gt_evo_limits lim = {.budget = 40, .population = 8, .generations = 10};
    gt_evo_progress pr = {.generation = 0, .issued = 8};
    const char *why;
    CHECK(gt_evo_plan(&lim, &pr, 100, 500, &why) == 8 && !why && pr.best_us == 100 && !pr.stale);
    pr.generation = 1, pr.issued = 16;
    CHECK(gt_evo_plan(&lim, &pr, 99.5, 500, &why) == 8 && pr.stale == 1); /* < 1 %: no gain */
    CHECK(pr.best_us == 100);
    pr.generation = 2, pr.issued = 24;
    CHECK(gt_evo_plan(&lim, &pr, 98.9, 500, &why) == 8 && pr.stale == 0 && pr.best_us == 98.9);
    pr.generation = 3, pr.issued = 36;
    CHECK(gt_evo_plan(&lim, &pr, 98.9, 500, &why) == 4); /* the budget's rest */
    CHECK(gt_evo_plan(&lim, &pr, 98.9, 3, &why) == 3);   /* the space's rest */
    CHECK(gt_evo_plan(&lim, &pr, 98.9, 0, &why) == 0 && !strcmp(why, "converged"));
    pr.stale = 0;
    CHECK(gt_evo_plan(&lim, &pr, 98.9, 0, &why) == 0 && !strcmp(why, "exhausted"));
    pr.stale = 0, pr.issued = 40;
    CHECK(gt_evo_plan(&lim, &pr, 50, 500, &why) == 0 && !strcmp(why, "budget"));
    pr.issued = 30, pr.generation = 9;
    CHECK(gt_evo_plan(&lim, &pr, 40, 500, &why) == 0 && !strcmp(why, "generations"));
    /* Nothing valid ever: stale grows until the search gives up. */
    gt_evo_progress p0 = {.generation = 0, .issued = 8};
    int stops = 0;
    for (int g = 0; g < 5 && !stops; g++) {
        p0.generation = g;
        stops = gt_evo_plan(&lim, &p0, 0, 500, &why) == 0;
    }
    CHECK(stops && p0.generation == GT_EVO_PATIENCE - 1 && !strcmp(why, "converged"));
}

/* ---- the search works: within 5 % of the optimum on 1/300 of the space,
 * better than random at the same budget. Exact numbers (everything is
 * seeded): budget 64: mean best/opt 1.037, 30/40 seeds within 5 %, random
 * 1.133; budget 128: 1.006 (40/40) vs 1.117 ---- */

static void quality_at(int budget, double max_mean, int min_within)
{
    size_t n = gt_evo_space_size(g_sp);
    const int seeds = 40;
    double sum_evo = 0, sum_rnd = 0;
    int within = 0, wins = 0, evals_sum = 0, to5_sum = 0, to5_n = 0, gens_sum = 0, over = 0;
    for (int s = 0; s < seeds; s++) {
        int evals, to5, ngen;
        double be = run_evo((uint64_t)s * 7919 + 1, budget, 0, 0, &evals, &to5, &ngen, NULL);
        double br = run_random((uint64_t)s * 7919 + 1, budget);
        over += evals > budget || !(be > 0) || !(br > 0);
        sum_evo += be / g_opt;
        sum_rnd += br / g_opt;
        within += be <= g_opt * 1.05;
        wins += be < br;
        evals_sum += evals;
        gens_sum += ngen;
        if (to5) {
            to5_sum += to5;
            to5_n++;
        }
    }
    /* Exhaustive with the same budget: the first configs in the space's order. */
    double bx = 0;
    for (int i = 0; i < budget; i++)
        if (g_cost[i] > 0 && (bx <= 0 || g_cost[i] < bx))
            bx = g_cost[i];
    double me = sum_evo / seeds, mr = sum_rnd / seeds;
    fprintf(stderr,
            "space %zu configs, optimum %.3f us, budget %d, %d seeds:\n"
            "  evolutionary: mean best/opt %.4f, within 5%% in %d/%d seeds, mean %.1f evals,"
            " %.1f generations, within 5%% after %.1f evals on average (%d seeds)\n"
            "  random:       mean best/opt %.4f; evolutionary better in %d/%d seeds\n"
            "  exhaustive:   %zu evals for the optimum; its first %d: best/opt %.4f\n",
            n, g_opt, budget, seeds, me, within, seeds, (double)evals_sum / seeds,
            (double)gens_sum / seeds, to5_n ? (double)to5_sum / to5_n : 0.0, to5_n, mr, wins,
            seeds, n, budget, bx / g_opt);
    CHECK_MSG(over == 0, "%d searches over budget or without a valid best", over);
    CHECK_MSG(me <= max_mean, "budget %d: evolutionary mean best/opt %.4f", budget, me);
    CHECK_MSG(within >= min_within, "budget %d: within 5 %% in %d of %d seeds", budget, within,
              seeds);
    CHECK_MSG(me < mr, "budget %d: evolutionary %.4f vs random %.4f", budget, me, mr);
    CHECK_MSG(wins >= seeds * 3 / 4, "budget %d: better than random in %d of %d", budget, wins,
              seeds);
    CHECK((size_t)budget * 100 < n); /* far fewer evaluations than exhaustive */
}

static void test_quality(void)
{
    quality_at(64, 1.05, 24);
    quality_at(128, 1.025, 34);
}

int main(void)
{
    setup();
    RUN(test_space);
    RUN(test_operators);
    RUN(test_generations);
    RUN(test_limits);
    RUN(test_quality);
    gt_evo_space_free(g_sp);
    free(g_cost);
    return gt_test_done();
}
