/* search_evo.c: the evolutionary search (gt_search_evo.h): the space as
 * attribute vectors, crossover and mutation that only ever land on free
 * members, and the generation builder. Pure: no I/O; every random choice
 * comes from a splitmix64 stream seeded by the caller. */
#include "gt_search_evo.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_config.h"
#include "gt_util.h"

/* One attribute value. Values of an attribute are sorted (absent, numbers
 * ascending, strings, anything else by its canonical text), so a value's id
 * is also its rank: "the value next to this one" for mutation. */
enum { V_ABSENT = 0, V_NUM, V_STR, V_OTHER };
typedef struct evo_val {
    int type;
    double num;
    const char *str; /* V_STR: borrowed from the space's copy; V_OTHER: owned text */
} evo_val;

struct gt_evo_space {
    cJSON *owned;          /* the configs, taken over from the caller */
    const cJSON **items;   /* members, in the space's order */
    size_t n, na;
    const char **keys;     /* attribute names, sorted (borrowed from owned) */
    evo_val **vals;        /* per attribute: its distinct values, sorted */
    size_t *nvals;
    int *vec;              /* n x na value ids */
    long *vtab;            /* open addressing: vector -> member (-1 empty) */
    size_t vcap;
};

/* ------------------------------------------------------------------ seed */

uint64_t gt_evo_seed(uint64_t run_seed, const char *problem_key)
{
    uint64_t s = run_seed;
    uint64_t k = problem_key ? gt_fnv1a64(problem_key, strlen(problem_key), GT_FNV_SEED) : 0;
    return gt_rand_u64(&s) ^ k;
}

/* ---------------------------------------------------------------- space */

static int cmp_val(const evo_val *a, const evo_val *b)
{
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    switch (a->type) {
    case V_NUM: return a->num < b->num ? -1 : a->num > b->num;
    case V_STR:
    case V_OTHER: return strcmp(a->str, b->str);
    }
    return 0;
}

static int cmp_val_q(const void *a, const void *b) { return cmp_val(a, b); }

static int cmp_str_q(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static uint64_t vec_hash(const int *v, size_t na)
{
    return gt_fnv1a64(v, na * sizeof *v, GT_FNV_SEED);
}

static long vec_find(const gt_evo_space *sp, const int *v)
{
    size_t mask = sp->vcap - 1;
    for (size_t i = (size_t)vec_hash(v, sp->na) & mask;; i = (i + 1) & mask) {
        long m = sp->vtab[i];
        if (m < 0)
            return -1;
        if (!memcmp(sp->vec + (size_t)m * sp->na, v, sp->na * sizeof *v))
            return m;
    }
}

void gt_evo_space_free(gt_evo_space *sp)
{
    if (!sp)
        return;
    for (size_t a = 0; sp->vals && a < sp->na; a++) {
        for (size_t i = 0; sp->vals[a] && i < sp->nvals[a]; i++)
            if (sp->vals[a][i].type == V_OTHER)
                free((char *)sp->vals[a][i].str);
        free(sp->vals[a]);
    }
    free(sp->vals);
    free(sp->nvals);
    free(sp->keys);
    free(sp->vec);
    free(sp->vtab);
    free(sp->items);
    cJSON_Delete(sp->owned);
    free(sp);
}

/* The value of a config's attribute. V_OTHER text is malloc'd (NULL: OOM). */
static int leaf_val(const cJSON *c, evo_val *v)
{
    memset(v, 0, sizeof *v);
    if (cJSON_IsNumber(c)) {
        v->type = V_NUM;
        v->num = c->valuedouble;
        return 0;
    }
    if (cJSON_IsString(c)) {
        v->type = V_STR;
        v->str = c->valuestring ? c->valuestring : "";
        return 0;
    }
    /* Booleans, null, nested values: compared by their canonical text. */
    v->type = V_OTHER;
    v->str = cJSON_IsObject(c) ? gt_cfg_canonical(c) : cJSON_PrintUnformatted(c);
    return v->str ? 0 : -1;
}

/* Fills keys, vals and vec of a space whose items are set. */
static int build_attrs(gt_evo_space *sp, char *err, size_t errlen)
{
    size_t nk = 0, cap = 0;
    const char **all = NULL;
    evo_val *col = NULL;
    int rc = -1;
    for (size_t i = 0; i < sp->n; i++)
        for (const cJSON *c = sp->items[i]->child; c; c = c->next) {
            if (nk == cap) {
                cap = cap ? cap * 2 : 64;
                const char **t = realloc(all, cap * sizeof *t);
                if (!t)
                    goto oom;
                all = t;
            }
            all[nk++] = c->string;
        }
    if (nk)
        qsort(all, nk, sizeof *all, cmp_str_q);
    size_t u = 0;
    for (size_t i = 0; i < nk; i++)
        if (!u || strcmp(all[u - 1], all[i]))
            all[u++] = all[i];
    sp->keys = all;
    all = NULL;
    sp->na = u;
    sp->vals = calloc(u ? u : 1, sizeof *sp->vals);
    sp->nvals = calloc(u ? u : 1, sizeof *sp->nvals);
    sp->vec = calloc(sp->n * (u ? u : 1), sizeof *sp->vec);
    col = malloc((sp->n ? sp->n : 1) * sizeof *col);
    if (!sp->vals || !sp->nvals || !sp->vec || !col)
        goto oom;
    for (size_t a = 0; a < sp->na; a++) {
        /* This attribute's value in every member (absent where missing). */
        for (size_t i = 0; i < sp->n; i++) {
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(sp->items[i], sp->keys[a]);
            if (!c) {
                memset(&col[i], 0, sizeof col[i]);
                col[i].type = V_ABSENT;
            } else if (leaf_val(c, &col[i])) {
                for (size_t j = 0; j < i; j++)
                    if (col[j].type == V_OTHER)
                        free((char *)col[j].str);
                goto oom;
            }
        }
        evo_val *sorted = malloc((sp->n ? sp->n : 1) * sizeof *sorted);
        if (!sorted) {
            for (size_t j = 0; j < sp->n; j++)
                if (col[j].type == V_OTHER)
                    free((char *)col[j].str);
            goto oom;
        }
        memcpy(sorted, col, sp->n * sizeof *col);
        qsort(sorted, sp->n, sizeof *sorted, cmp_val_q);
        size_t nv = 0;
        for (size_t i = 0; i < sp->n; i++) {
            if (nv && cmp_val(&sorted[nv - 1], &sorted[i]) == 0)
                continue; /* a duplicate V_OTHER text is freed below, from col */
            sorted[nv++] = sorted[i];
        }
        sp->vals[a] = sorted;
        sp->nvals[a] = nv;
        for (size_t i = 0; i < sp->n; i++) {
            const evo_val *f = bsearch(&col[i], sorted, nv, sizeof *sorted, cmp_val_q);
            sp->vec[i * sp->na + a] = (int)(f - sorted);
            /* The table keeps one copy of each V_OTHER text: free the others. */
            if (col[i].type == V_OTHER && f->str != col[i].str)
                free((char *)col[i].str);
        }
    }
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
out:
    free(all);
    free(col);
    return rc;
}

static size_t pow2_at_least(size_t x)
{
    size_t c = 16;
    while (c < x)
        c <<= 1;
    return c;
}

/* Inserts member m's vector into the vector table; 0, or 1 when an equal
 * vector is already there (the same config twice). */
static int vec_insert(gt_evo_space *sp, size_t m)
{
    const int *v = sp->vec + m * sp->na;
    if (vec_find(sp, v) >= 0)
        return 1;
    size_t mask = sp->vcap - 1, i = (size_t)vec_hash(v, sp->na) & mask;
    while (sp->vtab[i] >= 0)
        i = (i + 1) & mask;
    sp->vtab[i] = (long)m;
    return 0;
}

gt_evo_space *gt_evo_space_new(cJSON *configs, char *err, size_t errlen)
{
    gt_evo_space *sp = calloc(1, sizeof *sp);
    if (!sp) {
        cJSON_Delete(configs);
        goto oom;
    }
    sp->owned = configs;
    if (!cJSON_IsArray(configs)) {
        snprintf(err, errlen, "space: not a JSON array");
        goto fail;
    }
    size_t cap = (size_t)cJSON_GetArraySize(configs);
    sp->items = calloc(cap ? cap : 1, sizeof *sp->items);
    if (!sp->items)
        goto oom;
    for (const cJSON *c = configs->child; c; c = c->next) {
        if (!cJSON_IsObject(c)) {
            snprintf(err, errlen, "space: entry %zu is not a config object", sp->n);
            goto fail;
        }
        sp->items[sp->n++] = c;
    }
    if (build_attrs(sp, err, errlen))
        goto fail;
    sp->vcap = pow2_at_least(2 * sp->n);
    sp->vtab = malloc(sp->vcap * sizeof *sp->vtab);
    if (!sp->vtab)
        goto oom;
    memset(sp->vtab, 0xff, sp->vcap * sizeof *sp->vtab); /* all -1 */
    /* Equal vectors are equal canonical configs (same keys, same values):
     * keep the first place of each, in order. Hashing the canonical text of
     * every member instead costs ten times more (30k configs: 0.17 s). */
    size_t u = 0;
    for (size_t m = 0; m < sp->n; m++) {
        if (u != m) {
            memmove(sp->vec + u * sp->na, sp->vec + m * sp->na, sp->na * sizeof *sp->vec);
            sp->items[u] = sp->items[m];
        }
        if (vec_insert(sp, u) == 0)
            u++;
    }
    sp->n = u;
    return sp;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    gt_evo_space_free(sp);
    return NULL;
}

long gt_evo_space_find(const gt_evo_space *sp, const cJSON *cfg)
{
    if (!cJSON_IsObject(cfg) || !sp->na)
        return -1;
    int stackv[32], *v = sp->na <= 32 ? stackv : malloc(sp->na * sizeof *v);
    long m = -1;
    if (!v)
        return -1;
    size_t nkeys = 0;
    for (size_t a = 0; a < sp->na; a++) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(cfg, sp->keys[a]);
        evo_val x;
        if (!c) {
            memset(&x, 0, sizeof x);
            x.type = V_ABSENT;
        } else if (leaf_val(c, &x)) {
            goto out;
        } else {
            nkeys++;
        }
        const evo_val *f = bsearch(&x, sp->vals[a], sp->nvals[a], sizeof x, cmp_val_q);
        if (x.type == V_OTHER)
            free((char *)x.str);
        if (!f)
            goto out; /* a value no member has */
        v[a] = (int)(f - sp->vals[a]);
    }
    /* A key no member has makes it a stranger too. */
    if (nkeys == (size_t)cJSON_GetArraySize(cfg))
        m = vec_find(sp, v);
out:
    if (v != stackv)
        free(v);
    return m;
}

cJSON *gt_evo_members_json(const gt_evo_space *sp, const size_t *idx, size_t k)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return NULL;
    for (size_t i = 0; i < k; i++) {
        cJSON *c = cJSON_Duplicate(sp->items[idx[i]], 1);
        if (!c || !cJSON_AddItemToArray(arr, c)) {
            cJSON_Delete(c);
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

size_t gt_evo_space_size(const gt_evo_space *sp) { return sp->n; }
size_t gt_evo_space_attrs(const gt_evo_space *sp) { return sp->na; }
const cJSON *gt_evo_space_config(const gt_evo_space *sp, size_t i) { return sp->items[i]; }

/* Attributes in which member m differs from vector v; stops counting past
 * limit (the caller only needs to know it is worse). */
static int mismatch_vec(const gt_evo_space *sp, size_t m, const int *v, int limit)
{
    const int *x = sp->vec + m * sp->na;
    int d = 0;
    for (size_t a = 0; a < sp->na && d <= limit; a++)
        d += x[a] != v[a];
    return d;
}

int gt_evo_mismatch(const gt_evo_space *sp, size_t a, size_t b)
{
    return mismatch_vec(sp, a, sp->vec + b * sp->na, (int)sp->na);
}

/* ------------------------------------------------------------ operators */

/* The free member nearest vector v (fewest differing attributes), ties
 * broken uniformly by *rng; -1 when none is free. */
static long nearest_free(const gt_evo_space *sp, const int *v, const unsigned char *taken,
                         uint64_t *rng)
{
    long exact = vec_find(sp, v);
    if (exact >= 0 && !taken[exact])
        return exact;
    long best = -1;
    int bestd = (int)sp->na + 1;
    size_t ties = 0;
    for (size_t m = 0; m < sp->n; m++) {
        if (taken[m])
            continue;
        int d = mismatch_vec(sp, m, v, bestd);
        if (d < bestd) {
            best = (long)m;
            bestd = d;
            ties = 1;
        } else if (d == bestd && gt_rand_below(rng, ++ties) == 0) {
            best = (long)m; /* reservoir: each tie kept with probability 1/ties */
        }
    }
    return best;
}

long gt_evo_crossover(const gt_evo_space *sp, size_t a, size_t b, const unsigned char *taken,
                      uint64_t *rng)
{
    int *child = malloc((sp->na ? sp->na : 1) * sizeof *child);
    if (!child)
        return -1;
    const int *pa = sp->vec + a * sp->na, *pb = sp->vec + b * sp->na;
    uint64_t bits = 0;
    for (size_t i = 0; i < sp->na; i++) {
        if (i % 64 == 0)
            bits = gt_rand_u64(rng);
        child[i] = (bits >> (i % 64)) & 1 ? pa[i] : pb[i];
    }
    long m = nearest_free(sp, child, taken, rng);
    free(child);
    return m;
}

long gt_evo_mutate(const gt_evo_space *sp, size_t parent, const unsigned char *taken,
                   uint64_t *rng)
{
    const int *p = sp->vec + parent * sp->na;
    size_t *order = malloc((sp->na ? sp->na : 1) * sizeof *order);
    if (!order)
        return -1;
    /* The attributes that can change, in a random order. */
    size_t no = 0;
    for (size_t a = 0; a < sp->na; a++)
        if (sp->nvals[a] > 1)
            order[no++] = a;
    for (size_t i = no; i > 1; i--) {
        size_t j = gt_rand_below(rng, i), t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    long best = -1;
    for (size_t k = 0; k < no && best < 0; k++) {
        size_t a = order[k];
        /* Three times in four a step to the neighbouring value (a local
         * move on ordered attributes such as block sizes), otherwise any
         * value (the mix did a little better than always local or half
         * and half on the synthetic space of tests/unit/test_search_evo.c). */
        int near = gt_rand_below(rng, 4) != 0;
        int bestd = (int)sp->na + 1;
        long bests = 0;
        size_t ties = 0;
        for (size_t m = 0; m < sp->n; m++) {
            const int *x = sp->vec + m * sp->na;
            if (taken[m] || x[a] == p[a])
                continue;
            int d = mismatch_vec(sp, m, p, bestd);
            long step = near ? labs((long)x[a] - (long)p[a]) : 0;
            if (d < bestd || (d == bestd && step < bests)) {
                best = (long)m;
                bestd = d;
                bests = step;
                ties = 1;
            } else if (d == bestd && step == bests && gt_rand_below(rng, ++ties) == 0) {
                best = (long)m;
            }
        }
    }
    free(order);
    if (best < 0) /* nothing free differs in a changeable attribute */
        best = nearest_free(sp, p, taken, rng);
    return best;
}

/* A uniformly drawn free member, or -1. */
static long random_free(const gt_evo_space *sp, const unsigned char *taken, uint64_t *rng)
{
    size_t nfree = 0;
    for (size_t m = 0; m < sp->n; m++)
        nfree += !taken[m];
    if (!nfree)
        return -1;
    size_t r = gt_rand_below(rng, nfree);
    for (size_t m = 0; m < sp->n; m++)
        if (!taken[m] && r-- == 0)
            return (long)m;
    return -1;
}

/* ----------------------------------------------------------- generations */

void gt_evo_limits_resolve(int budget, int population, int generations, size_t size,
                           gt_evo_limits *out)
{
    long b = budget > 0 && (size_t)budget < size ? budget : (long)size;
    long p = population > 0 ? population : (b / 5 > 8 ? b / 5 : 8);
    if (p > b)
        p = b;
    long g = generations > 0 ? generations : (p > 0 ? (b + p - 1) / p : 1);
    if (g < 1)
        g = 1;
    out->budget = (int)b;
    out->population = (int)p;
    out->generations = (int)g;
}

int gt_evo_plan(const gt_evo_limits *lim, gt_evo_progress *pr, double best_now, size_t free_left,
                const char **why)
{
    int better = best_now > 0 && (pr->best_us <= 0 || best_now < pr->best_us * (1 - GT_EVO_MIN_GAIN));
    if (better) {
        pr->best_us = best_now;
        pr->stale = 0;
    } else {
        pr->stale++;
    }
    *why = NULL;
    if (pr->issued >= lim->budget)
        *why = "budget";
    else if (pr->generation + 1 >= lim->generations)
        *why = "generations";
    else if (pr->stale >= GT_EVO_PATIENCE)
        *why = "converged";
    else if (free_left == 0)
        *why = "exhausted";
    if (*why)
        return 0;
    long n = lim->population;
    if (n > lim->budget - pr->issued)
        n = lim->budget - pr->issued;
    if ((size_t)n > free_left)
        n = (long)free_left;
    return (int)n;
}

static int cmp_obs(const void *a, const void *b)
{
    const gt_evo_obs *x = a, *y = b;
    if (x->time_us != y->time_us)
        return x->time_us < y->time_us ? -1 : 1;
    return x->member < y->member ? -1 : x->member > y->member;
}

/* Tournament of three: the fastest of three members of the sorted pool. */
static size_t tournament(size_t npool, uint64_t *rng)
{
    size_t w = gt_rand_below(rng, npool);
    for (int i = 1; i < 3; i++) {
        size_t c = gt_rand_below(rng, npool);
        if (c < w)
            w = c;
    }
    return w;
}

long gt_evo_next(const gt_evo_space *sp, const gt_evo_obs *obs, size_t nobs, unsigned char *taken,
                 size_t n, int generation, uint64_t seed, size_t *out)
{
    /* One stream per generation: a generation does not depend on how many
     * draws the ones before made, only on their results. */
    uint64_t rng = seed ^ (0xd1b54a32d192ed03ULL * (uint64_t)(generation + 1));
    size_t k = 0;
    gt_evo_obs *pool = NULL;
    size_t npool = 0;
#define TAKE(m)                                                                                    \
    do {                                                                                           \
        taken[(m)] = 1;                                                                            \
        out[k++] = (size_t)(m);                                                                    \
    } while (0)

    if (generation == 0) {
        size_t heads = n < 2 ? n : (n / 2 < GT_EVO_HEADS ? n / 2 : GT_EVO_HEADS);
        for (size_t m = 0; m < sp->n && k < heads; m++)
            if (!taken[m])
                TAKE(m);
    } else if (nobs) {
        pool = malloc(nobs * sizeof *pool);
        if (!pool)
            return -1;
        for (size_t i = 0; i < nobs; i++)
            if (obs[i].time_us > 0 && obs[i].member < sp->n) /* NaN fails the test too */
                pool[npool++] = obs[i];
        qsort(pool, npool, sizeof *pool, cmp_obs);
        /* The parents are the best half generation measured so far (a
         * steady-state, elitist population: nothing good is ever lost, and
         * nothing is measured twice to keep it). */
        size_t keep = n / 2 > 2 ? n / 2 : 2;
        if (npool > keep)
            npool = keep;
    }
    if (npool) {
        /* Half the generation explores around the very best (the top
         * eighth, at least one): on the smooth landscapes of blocking and
         * tiling parameters that is where the next gain usually is
         * (tests/unit/test_search_evo.c measured this against spreading
         * the mutations over the top half). The rest recombines the
         * parents; one random immigrant keeps a larger generation from
         * collapsing on a local optimum. */
        size_t nelite = n / 2 ? n / 2 : 1, nimm = n >= 8 ? 1 : 0;
        size_t ntop = n / 8 ? n / 8 : 1;
        if (ntop > npool)
            ntop = npool;
        for (size_t i = 0; k < n; i++) {
            long m;
            if (i < nelite) {
                m = gt_evo_mutate(sp, pool[i % ntop].member, taken, &rng);
            } else if (k + nimm >= n) {
                m = random_free(sp, taken, &rng);
            } else {
                size_t a = tournament(npool, &rng), b = tournament(npool, &rng);
                for (int t = 0; t < 4 && b == a && npool > 1; t++)
                    b = tournament(npool, &rng);
                m = gt_evo_crossover(sp, pool[a].member, pool[b].member, taken, &rng);
                if (m >= 0 && gt_rand_below(&rng, 4) == 0) {
                    long m2 = gt_evo_mutate(sp, (size_t)m, taken, &rng);
                    if (m2 >= 0)
                        m = m2;
                }
            }
            if (m < 0)
                m = random_free(sp, taken, &rng);
            if (m < 0)
                break; /* the space is measured out */
            TAKE(m);
        }
    }
    /* Generation 0 after its head, or nothing valid to breed from yet. */
    while (k < n) {
        long m = random_free(sp, taken, &rng);
        if (m < 0)
            break;
        TAKE(m);
    }
#undef TAKE
    free(pool);
    return (long)k;
}
