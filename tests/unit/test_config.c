/* test_config.c: config canonical form and hash, strategy names, and the CPU
 * candidate space (prune rules, dedupe, budget, seeded sampling, baseline). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gt_config.h"
#include "gt_problem.h"
#include "gt_test.h"

static char *canon_of(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    if (!j)
        return NULL;
    char *t = gt_cfg_canonical(j);
    cJSON_Delete(j);
    return t;
}

static void test_canonical(void)
{
    char *a = canon_of("{\"b\":1, \"a\":{\"d\":[1,{\"z\":2,\"y\":3}],\"c\":\"x\"}}");
    char *b = canon_of("{ \"a\" : {\"c\":\"x\", \"d\":[1, {\"y\":3, \"z\":2}]}, \"b\" : 1 }");
    CHECK(a && b);
    if (a && b) {
        CHECK_MSG(strcmp(a, "{\"a\":{\"c\":\"x\",\"d\":[1,{\"y\":3,\"z\":2}]},\"b\":1}") == 0, "%s", a);
        CHECK(strcmp(a, b) == 0);
    }
    free(a);
    free(b);
    /* Arrays keep their order; numbers print like cJSON; strings escape. */
    a = canon_of("{\"v\":[3,1,2],\"f\":0.5,\"s\":\"q\\\"\\n\",\"t\":true,\"n\":null}");
    CHECK(a && strcmp(a, "{\"f\":0.5,\"n\":null,\"s\":\"q\\\"\\n\",\"t\":true,\"v\":[3,1,2]}") == 0);
    free(a);
    a = canon_of("{}");
    CHECK(a && strcmp(a, "{}") == 0);
    free(a);
    /* Only objects are configs. */
    cJSON *arr = cJSON_Parse("[1,2]");
    CHECK(gt_cfg_canonical(arr) == NULL);
    char h[17];
    CHECK(gt_cfg_hash(arr, h) == -1);
    cJSON_Delete(arr);
    CHECK(gt_cfg_canonical(NULL) == NULL);
}

static void test_hash(void)
{
    /* FNV-1a 64 reference values. */
    CHECK(gt_fnv1a64("", 0, GT_FNV_SEED) == 0xcbf29ce484222325ULL);
    CHECK(gt_fnv1a64("a", 1, GT_FNV_SEED) == 0xaf63dc4c8601ec8cULL);
    cJSON *c1 = cJSON_Parse(
        "{\"unroll\":1,\"threads\":2,\"nr\":8,\"nc\":256,\"mr\":4,\"mc\":64,\"kc\":256}");
    cJSON *c2 = cJSON_Parse(
        "{\"kc\":256,\"mc\":64,\"mr\":4,\"nc\":256,\"nr\":8,\"threads\":2,\"unroll\":1}");
    char h1[17], h2[17];
    CHECK(gt_cfg_hash(c1, h1) == 0 && gt_cfg_hash(c2, h2) == 0);
    /* Stable across releases and hosts: a stored hash must keep meaning. */
    CHECK_MSG(strcmp(h1, "59b5d4211800b8a5") == 0, "%s", h1);
    CHECK(strcmp(h1, h2) == 0 && strlen(h1) == 16);
    cJSON_ReplaceItemInObject(c2, "kc", cJSON_CreateNumber(128));
    CHECK(gt_cfg_hash(c2, h2) == 0 && strcmp(h1, h2) != 0);
    cJSON_Delete(c1);
    cJSON_Delete(c2);
}

static void test_strategy(void)
{
    gt_strategy s;
    CHECK(gt_strategy_parse("exhaustive", &s) == 0 && s == GT_STRAT_EXHAUSTIVE);
    CHECK(gt_strategy_parse("random", &s) == 0 && s == GT_STRAT_RANDOM);
    CHECK(gt_strategy_parse("RANDOM", &s) == 0 && s == GT_STRAT_RANDOM);
    CHECK(gt_strategy_parse("bayes", &s) == -1);
    CHECK(gt_strategy_parse(NULL, &s) == -1);
    CHECK(strcmp(gt_strategy_name(GT_STRAT_EXHAUSTIVE), "exhaustive") == 0);
    CHECK(strcmp(gt_strategy_name(GT_STRAT_RANDOM), "random") == 0);
    CHECK(gt_strategy_parse("evolutionary", &s) == 0 && s == GT_STRAT_EVOLUTIONARY);
    CHECK(gt_strategy_parse("evo", &s) == 0 && s == GT_STRAT_EVOLUTIONARY);
    CHECK(gt_strategy_parse("GA", &s) == 0 && s == GT_STRAT_EVOLUTIONARY);
    CHECK(gt_strategy_parse("evolution", &s) == -1);
    CHECK(strcmp(gt_strategy_name(GT_STRAT_EVOLUTIONARY), "evolutionary") == 0);
}

static int geti(const cJSON *c, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, k);
    return cJSON_IsNumber(v) ? v->valueint : -1;
}

static int64_t rup(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* Every prune rule the space promises (common/space_cpu.c). */
static int cfg_ok(const gt_problem *p, const cJSON *c, int ncpu, char *why, size_t len)
{
    int mc = geti(c, "mc"), nc = geti(c, "nc"), kc = geti(c, "kc"), mr = geti(c, "mr"),
        nr = geti(c, "nr"), un = geti(c, "unroll"), th = geti(c, "threads");
#define RULE(cond)                                                                                 \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            snprintf(why, len, "%s", #cond);                                                       \
            return 0;                                                                              \
        }                                                                                          \
    } while (0)
    RULE(cJSON_GetArraySize(c) == 7);
    RULE(mc > 0 && nc > 0 && kc > 0 && mr > 0 && nr > 0 && un > 0 && th > 0);
    RULE(mc % mr == 0 && nc % nr == 0);
    RULE(mc <= rup(p->m, mr) && nc <= rup(p->n, nr) && kc <= p->k);
    RULE(un <= kc && (un & (un - 1)) == 0);
    RULE(th <= ncpu);
    RULE(th <= ((p->m + mc - 1) / mc) * ((nc + nr - 1) / nr));
    RULE((int64_t)mc * kc * 4 <= (1 << 20));
    RULE((int64_t)kc * nc * 4 <= (4 << 20));
    RULE((int64_t)kc * (mr + nr) * 4 <= (48 << 10));
    RULE(p->d_type == GT_DT_F32 || p->k <= kc || p->m * nc * 4 <= (256 << 20) || nc == nr);
    return 1;
#undef RULE
}

static int has_hash(const cJSON *arr, const char *h)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, arr)
    {
        char x[17];
        if (gt_cfg_hash(c, x) == 0 && strcmp(x, h) == 0)
            return 1;
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Number of duplicate canonical texts in arr. */
static int dupes(const cJSON *arr)
{
    int n = cJSON_GetArraySize(arr), d = 0;
    char **v = calloc((size_t)n + 1, sizeof *v);
    const cJSON *c;
    int i = 0;
    cJSON_ArrayForEach(c, arr) v[i++] = gt_cfg_canonical(c);
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    for (i = 1; i < n; i++)
        d += strcmp(v[i - 1], v[i]) == 0;
    for (i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return d;
}

static int same_list(const cJSON *a, const cJSON *b)
{
    if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b))
        return 0;
    for (const cJSON *x = a->child, *y = b->child; x && y; x = x->next, y = y->next)
        if (!cJSON_Compare(x, y, 1))
            return 0;
    return 1;
}

static void check_space(int64_t m, int64_t n, int64_t k, int ncpu, gt_dtype dt)
{
    gt_problem p;
    gt_problem_init(&p, m, n, k);
    p.a_type = p.b_type = p.c_type = p.d_type = dt;
    gt_problem_finish(&p);
    cJSON *all = gt_space_cpu(&p, GT_STRAT_EXHAUSTIVE, 0, 0, ncpu);
    cJSON *base = gt_space_cpu_baseline(&p, ncpu);
    if (ncpu <= 0) /* 0 means this machine's cores */
        ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(all && base);
    if (!all || !base)
        return;
    int n_all = cJSON_GetArraySize(all);
    fprintf(stderr, "  space %lldx%lldx%lld ncpu=%d: %d configs\n", (long long)m, (long long)n,
            (long long)k, ncpu, n_all);
    CHECK(n_all > 0);
    char why[128];
    const cJSON *c;
    int bad = 0;
    cJSON_ArrayForEach(c, all)
    {
        if (!cfg_ok(&p, c, ncpu, why, sizeof why) && bad++ < 3) {
            char *t = gt_cfg_canonical(c);
            fprintf(stderr, "  rule %s broken by %s\n", why, t);
            free(t);
        }
    }
    CHECK(bad == 0);
    CHECK(dupes(all) == 0);
    /* The baseline is OpenBLAS on the run's ncpu threads, not in the space;
     * the kernel's default blocking (the baseline before it) is a valid
     * member of the space. */
    const cJSON *lib = cJSON_GetObjectItemCaseSensitive(base, "lib");
    CHECK(cJSON_IsString(lib) && !strcmp(lib->valuestring, "openblas"));
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(base, "threads")) == ncpu);
    CHECK(cJSON_GetArraySize(base) == 2);
    char bh[17];
    CHECK(gt_cfg_hash(base, bh) == 0 && !has_hash(all, bh));
    cJSON *def = gt_space_cpu_default(&p, ncpu);
    CHECK_MSG(def && cfg_ok(&p, def, ncpu, why, sizeof why), "default: %s", why);
    char dh[17];
    CHECK(def && gt_cfg_hash(def, dh) == 0 && has_hash(all, dh));
    cJSON_Delete(def);

    /* EXHAUSTIVE with a budget: a deterministic prefix order, spread over
     * every attribute rather than varying the last one only. */
    int budget = n_all > 24 ? 24 : n_all - 1;
    if (budget > 0) {
        cJSON *e1 = gt_space_cpu(&p, GT_STRAT_EXHAUSTIVE, budget, 1, ncpu);
        cJSON *e2 = gt_space_cpu(&p, GT_STRAT_EXHAUSTIVE, budget, 2, ncpu);
        CHECK(e1 && e2 && cJSON_GetArraySize(e1) == budget && same_list(e1, e2));
        CHECK(dupes(e1) == 0);
        cJSON_ArrayForEach(c, e1)
        {
            char h[17];
            CHECK(gt_cfg_hash(c, h) == 0 && has_hash(all, h));
        }
        const char *keys[] = {"mc", "nc", "kc", "mr", "nr", "unroll", "threads"};
        for (int a = 0; a < 7 && e1; a++) {
            int lo_all = 1 << 30, hi_all = 0, lo = 1 << 30, hi = 0;
            cJSON_ArrayForEach(c, all)
            {
                int v = geti(c, keys[a]);
                lo_all = v < lo_all ? v : lo_all;
                hi_all = v > hi_all ? v : hi_all;
            }
            cJSON_ArrayForEach(c, e1)
            {
                int v = geti(c, keys[a]);
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
            if (lo_all != hi_all && budget >= 8)
                CHECK_MSG(lo != hi, "attribute %s does not vary in the first %d", keys[a], budget);
        }
        cJSON_Delete(e1);
        cJSON_Delete(e2);
    }
    /* RANDOM: a seeded sample without repetition, reproducible per seed. */
    int rb = n_all > 10 ? 10 : n_all;
    cJSON *r1 = gt_space_cpu(&p, GT_STRAT_RANDOM, rb, 42, ncpu);
    cJSON *r2 = gt_space_cpu(&p, GT_STRAT_RANDOM, rb, 42, ncpu);
    cJSON *r3 = gt_space_cpu(&p, GT_STRAT_RANDOM, rb, 43, ncpu);
    CHECK(r1 && r2 && r3);
    if (r1 && r2 && r3) {
        CHECK(cJSON_GetArraySize(r1) == rb && same_list(r1, r2));
        if (n_all > 20)
            CHECK(!same_list(r1, r3));
        CHECK(dupes(r1) == 0);
        cJSON_ArrayForEach(c, r1)
        {
            char h[17];
            CHECK(gt_cfg_hash(c, h) == 0 && has_hash(all, h));
        }
    }
    cJSON *rall = gt_space_cpu(&p, GT_STRAT_RANDOM, 0, 7, ncpu);
    CHECK(rall && cJSON_GetArraySize(rall) == n_all && dupes(rall) == 0);
    cJSON_Delete(rall);
    /* The whole space for the evolutionary search: the same configs, the
     * exhaustive order's first picks at its head. */
    int nh = n_all > 4 ? 4 : n_all;
    cJSON *sall = gt_space_cpu_all(&p, nh, ncpu);
    cJSON *head = gt_space_cpu(&p, GT_STRAT_EXHAUSTIVE, nh, 0, ncpu);
    CHECK(sall && head && cJSON_GetArraySize(sall) == n_all && dupes(sall) == 0);
    if (sall && head) {
        int i = 0, same = 1;
        cJSON_ArrayForEach(c, head) same &= cJSON_Compare(c, cJSON_GetArrayItem(sall, i++), 1);
        CHECK(nh == n_all || same);
        /* the same set: its tail is the canonical order, so the union of
         * both lists has exactly n_all distinct configs */
        cJSON *both = cJSON_Duplicate(all, 1);
        cJSON_ArrayForEach(c, sall) cJSON_AddItemToArray(both, cJSON_Duplicate(c, 1));
        CHECK(dupes(both) == n_all);
        cJSON_Delete(both);
    }
    cJSON_Delete(sall);
    cJSON_Delete(head);
    cJSON_Delete(r1);
    cJSON_Delete(r2);
    cJSON_Delete(r3);
    cJSON_Delete(all);
    cJSON_Delete(base);
}

/* The spread order's memo (space_cpu.c): a space met again gives the order
 * computed before, and an order evicted and computed afresh is the same. */
static void test_spread_memo(void)
{
    gt_problem p, q;
    gt_problem_init(&p, 512, 512, 512);
    gt_problem_finish(&p);
    cJSON *a1 = gt_space_cpu(&p, GT_STRAT_EXHAUSTIVE, 32, 0, 4);
    cJSON *a2 = gt_space_cpu(&p, GT_STRAT_EXHAUSTIVE, 32, 0, 4); /* remembered */
    CHECK(a1 && a2 && cJSON_GetArraySize(a1) == 32 && same_list(a1, a2));
    /* more other spaces than the memo's 256 entries (space_cpu.c SPREAD_MEMO;
     * each ncpu its own thread counts), so p's order is evicted */
    for (int ncpu = 5; ncpu < 5 + 300; ncpu++) {
        gt_problem_init(&q, 300 + ncpu, 700, 200);
        gt_problem_finish(&q);
        cJSON *o = gt_space_cpu(&q, GT_STRAT_EXHAUSTIVE, 32, 0, ncpu);
        CHECK(o && cJSON_GetArraySize(o) == 32 && dupes(o) == 0);
        cJSON_Delete(o);
    }
    cJSON *a3 = gt_space_cpu(&p, GT_STRAT_EXHAUSTIVE, 32, 0, 4); /* computed again */
    CHECK(a3 && same_list(a1, a3));
    /* another budget is another order's prefix, not the memo's */
    cJSON *b = gt_space_cpu(&p, GT_STRAT_EXHAUSTIVE, 8, 0, 4);
    CHECK(b && cJSON_GetArraySize(b) == 8);
    for (int i = 0; b && a1 && i < 8; i++)
        CHECK(cJSON_Compare(cJSON_GetArrayItem(a1, i), cJSON_GetArrayItem(b, i), 1));
    cJSON_Delete(a1);
    cJSON_Delete(a2);
    cJSON_Delete(a3);
    cJSON_Delete(b);
}

static void test_space_cpu(void)
{
    check_space(256, 256, 256, 2, GT_DT_F32);
    check_space(37, 29, 41, 2, GT_DT_BF16);
    check_space(4096, 4096, 4096, 16, GT_DT_BF16);
    check_space(4096, 1, 4096, 8, GT_DT_F16);     /* skinny: one column */
    check_space(1, 1, 1, 4, GT_DT_F32);           /* degenerate: a handful of configs */
    check_space(6144, 512, 4096, 0, GT_DT_F32);   /* this machine's cores */
    check_space(128256, 64, 4096, 8, GT_DT_BF16); /* LM head: the f32 accumulator bound */
}

/* The canonical text prints every leaf exactly as cJSON_PrintUnformatted
 * does (its integer fast path must not change a hash a worker computed
 * with cJSON's printer): ints at and past the int range, negative zero,
 * fractions, large and tiny doubles, booleans, null. */
static void test_canonical_numbers_like_cjson(void)
{
    const double vals[] = {0.0, -0.0, 1.0, -1.0, 7.0, 2147483647.0, -2147483648.0, 2147483648.0,
                           -2147483649.0, 1099511627776.0, 9007199254740993.0, 1e15, 1e300,
                           0.5, -0.25, 1e-7, 3.141592653589793, 64.0, 4096.0, 1e21};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        cJSON *o = cJSON_CreateObject(), *n = cJSON_CreateNumber(vals[i]);
        cJSON_AddItemToObject(o, "v", cJSON_Duplicate(n, 1));
        char *leaf = cJSON_PrintUnformatted(n), *c = gt_cfg_canonical(o), want[128];
        snprintf(want, sizeof want, "{\"v\":%s}", leaf ? leaf : "?");
        CHECK_MSG(c && leaf && strcmp(c, want) == 0, "%.17g: %s, cJSON %s", vals[i], c ? c : "(null)", want);
        free(c);
        cJSON_free(leaf);
        cJSON_Delete(n);
        cJSON_Delete(o);
    }
    char *a = canon_of("{\"t\":true,\"f\":false,\"n\":null,\"i\":-12,\"l\":[0,-0,2147483647]}");
    CHECK_MSG(a && strcmp(a, "{\"f\":false,\"i\":-12,\"l\":[0,-0,2147483647],\"n\":null,\"t\":true}") == 0,
              "%s", a ? a : "(null)");
    free(a);
}

int main(void)
{
    RUN(test_canonical);
    RUN(test_canonical_numbers_like_cjson);
    RUN(test_hash);
    RUN(test_strategy);
    RUN(test_space_cpu);
    RUN(test_spread_memo);
    return gt_test_done();
}
