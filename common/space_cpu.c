/* space_cpu.c: the CPU backend's candidate space and its baseline.
 *
 * The baseline is a real library, OpenBLAS ({"lib":"openblas","threads":N},
 * built by worker/cpu_blas.c): what a user would call instead of a tuned
 * kernel, so an uplift says how much tuning beats it. The blocked kernel's
 * generic default blocking (default_cfg) is an ordinary member of the space.
 *
 * A candidate is the blocking of a GotoBLAS/BLIS-style packed GEMM:
 *   mc, nc, kc   cache blocks (rows of A, columns of B, depth)
 *   mr, nr       register micro-tile (rows x columns of D per micro-kernel)
 *   unroll       manual unroll of the micro-kernel's k loop
 *   threads      OpenMP threads over the (row block x column panel) work
 * The grid below is the nominal space; normalise() maps every grid point to
 * the config the kernel would really run for this problem (or drops it), and
 * equal results are merged, so no two candidates do the same thing. */
#include "gt_config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gt_problem.h"
#include "gt_util.h"

typedef struct cpu_cfg {
    int mc, nc, kc, mr, nr, unroll, threads;
} cpu_cfg;

/* Micro-tiles (mr x nr). The kernel vectorises over nr, so nr is a multiple
 * of 8 (one AVX2 register, two NEON) or 16 (one AVX-512 register); mr x nr/8
 * accumulators fit the 16 ymm of AVX2 up to 6x16 and the 32 zmm/NEON
 * registers for the larger tiles. */
static const int k_tiles[][2] = {{4, 8}, {8, 8}, {6, 16}, {4, 16}, {8, 16}, {12, 16}};
static const int k_kc[] = {64, 128, 256, 384, 512};
static const int k_mc[] = {32, 64, 96, 128, 192, 256};
static const int k_nc[] = {64, 128, 256, 512, 1024, 2048};
static const int k_unroll[] = {1, 2, 4, 8};
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Cache bounds of a typical modern core (x86-64 and ARM server parts). */
#define L1_BYTES (48 << 10)   /* A and B micro-panels stream through L1 */
#define L2_BYTES (1 << 20)    /* the packed A block stays in L2 */
#define L3_BYTES (4 << 20)    /* the packed B panel stays in (a share of) L3 */
#define ACC_BYTES ((int64_t)256 << 20) /* f32 accumulator of a low-precision D */

/* The untuned default blocking of the generated kernel: a generic
 * library's, all cores. Not the baseline (OpenBLAS is): a candidate. */
static const cpu_cfg k_default = {.mc = 64, .nc = 256, .kc = 256, .mr = 4, .nr = 8,
                                   .unroll = 1, .threads = 0 /* = ncpu */};

static int machine_ncpu(int ncpu)
{
    if (ncpu <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        ncpu = n > 0 ? (int)n : 1;
    }
    return ncpu > 1024 ? 1024 : ncpu;
}

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
static int64_t ceil_div(int64_t x, int64_t m) { return (x + m - 1) / m; }

/* Work items the kernel can hand to threads: row blocks times the nr panels
 * of a column block (worker/cpu_codegen.c splits a row block's panels into
 * groups when there are fewer row blocks than threads). */
static int64_t work_items(const gt_problem *p, const cpu_cfg *c)
{
    return ceil_div(p->m, c->mc) * ceil_div(c->nc < p->n ? c->nc : p->n, c->nr);
}

/* Maps a nominal config to the one the kernel really runs for p. Returns 0
 * when it survives, -1 when a prune rule drops it. */
static int normalise(const gt_problem *p, int ncpu, cpu_cfg *c)
{
    /* mc must be a multiple of mr (the packed A block is whole micro-panels):
     * round down, so mr=6 gets 30/60/96/126/192/252 instead of losing mc. */
    c->mc = c->mc / c->mr * c->mr;
    if (c->mc < c->mr)
        c->mc = c->mr;
    /* A block larger than its dimension behaves exactly like one that just
     * covers it: replace it, so the duplicates merge. */
    if (c->mc > round_up(p->m, c->mr))
        c->mc = (int)round_up(p->m, c->mr);
    if (c->nc > round_up(p->n, c->nr))
        c->nc = (int)round_up(p->n, c->nr);
    if (c->kc > p->k)
        c->kc = (int)p->k;
    /* A low-precision D accumulates across kc blocks in an f32 m x nc
     * buffer (worker/cpu_codegen.c): shrink nc so that buffer stays within
     * ACC_BYTES (huge-m GEMMs such as LM heads would otherwise need GiBs). */
    if (p->d_type != GT_DT_F32 && p->k > c->kc) {
        int64_t cap = ACC_BYTES / 4 / p->m / c->nr * c->nr;
        if (cap < c->nr)
            cap = c->nr;
        if (c->nc > cap)
            c->nc = (int)cap;
    }
    /* nc stays a multiple of nr: every grid nc is a multiple of 8 and 16 and
     * the fitted one is rounded up to nr above. */
    /* Unrolling beyond the depth unrolls nothing: cap to a power of two <= kc. */
    while (c->unroll > c->kc && c->unroll > 1)
        c->unroll /= 2;
    /* Threads: never more than cores, nor than work items (idle threads only
     * add fork/join cost). */
    if (c->threads > ncpu || c->threads > work_items(p, c))
        return -1;
    /* Cache fits: A and B micro-panels in L1, packed A in L2, packed B in L3. */
    if ((int64_t)c->kc * (c->mr + c->nr) * 4 > L1_BYTES)
        return -1;
    if ((int64_t)c->mc * c->kc * 4 > L2_BYTES)
        return -1;
    if ((int64_t)c->kc * c->nc * 4 > L3_BYTES)
        return -1;
    return 0;
}

/* The attributes as an array, for the field-wise loops below. */
static void cfg_vec(const cpu_cfg *c, int out[7])
{
    out[0] = c->mc;
    out[1] = c->nc;
    out[2] = c->kc;
    out[3] = c->mr;
    out[4] = c->nr;
    out[5] = c->unroll;
    out[6] = c->threads;
}

static int cmp_cfg(const void *a, const void *b)
{
    /* Field-wise order: equal tuples are equal canonical texts (every config
     * has the same integer keys), so sort+unique is dedupe by canonical form. */
    int x[7], y[7];
    cfg_vec(a, x);
    cfg_vec(b, y);
    for (int i = 0; i < 7; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

static int cfg_eq(const cpu_cfg *a, const cpu_cfg *b) { return cmp_cfg(a, b) == 0; }

static cJSON *cfg_json(const cpu_cfg *c)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    if (!cJSON_AddNumberToObject(o, "kc", c->kc) || !cJSON_AddNumberToObject(o, "mc", c->mc) ||
        !cJSON_AddNumberToObject(o, "mr", c->mr) || !cJSON_AddNumberToObject(o, "nc", c->nc) ||
        !cJSON_AddNumberToObject(o, "nr", c->nr) ||
        !cJSON_AddNumberToObject(o, "threads", c->threads) ||
        !cJSON_AddNumberToObject(o, "unroll", c->unroll)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int default_cfg(const gt_problem *p, int ncpu, cpu_cfg *out)
{
    cpu_cfg c = k_default;
    c.threads = ncpu;
    *out = c; /* defined on failure too: build_space keeps it beside a have_def flag */
    /* Same rules as the space, except threads shrink to the work instead of
     * dropping the config: the default must always be in the space. */
    for (;;) {
        cpu_cfg t = c;
        if (normalise(p, ncpu, &t) == 0) {
            *out = t;
            return 0;
        }
        if (c.threads == 1)
            return -1; /* cannot happen with the fixed baseline blocking */
        c.threads--;
    }
}

/* The problem with its dimensions at least 1: the rules divide by them, and
 * the coordinator may ask before the problem was checked. */
static gt_problem sane(const gt_problem *p)
{
    gt_problem q = *p;
    if (q.m < 1)
        q.m = 1;
    if (q.n < 1)
        q.n = 1;
    if (q.k < 1)
        q.k = 1;
    return q;
}

cJSON *gt_space_cpu_baseline(const gt_problem *p, int ncpu)
{
    (void)p; /* the worker maps the problem to OpenBLAS's routine, or refuses it */
    cJSON *o = cJSON_CreateObject();
    /* The same threads as the kernels' default: the run's ncpu. */
    if (!o || !cJSON_AddStringToObject(o, "lib", "openblas") ||
        !cJSON_AddNumberToObject(o, "threads", machine_ncpu(ncpu))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *gt_space_cpu_default(const gt_problem *p_in, int ncpu)
{
    cpu_cfg c;
    gt_problem q = sane(p_in), *p = &q;
    if (default_cfg(p, machine_ncpu(ncpu), &c) != 0)
        return NULL;
    return cfg_json(&c);
}

/* A config as the spread order compares it: its 7 attributes and their
 * log2, computed once per config (log2 in the distance loop was 60 % of a
 * 200-GEMM POST /v1/runs). */
typedef struct cfg_pt {
    int x[7];
    double l[7];
} cfg_pt;

static void cfg_point(const cpu_cfg *c, cfg_pt *pt)
{
    cfg_vec(c, pt->x);
    for (int i = 0; i < 7; i++)
        pt->l[i] = log2((double)pt->x[i]);
}

/* Distance between two configs for the spread order: the number of
 * attributes that differ dominates, the log2 distance breaks ties. */
static double cfg_dist(const cfg_pt *a, const cfg_pt *b)
{
    double d = 0;
    for (int i = 0; i < 7; i++) {
        if (a->x[i] != b->x[i])
            d += 1000.0 + fabs(a->l[i] - b->l[i]);
    }
    return d;
}

/* The points of a spread order, attribute by attribute (x[a][i], l[a][i]),
 * so that the distance update is a loop over the configs per attribute: the
 * O(n * budget) update was 87 % of POST /v1/runs for a large cpu log, and
 * these independent loops run 1.4x faster than one distance at a time. */
typedef struct pts {
    int *x[7];
    double *l[7];
    void *mem;
} pts;

static int pts_alloc(pts *s, size_t n)
{
    s->mem = malloc(n * 7 * (sizeof(int) + sizeof(double)));
    if (!s->mem)
        return -1;
    double *l = s->mem;
    int *x = (int *)(l + n * 7);
    for (int a = 0; a < 7; a++) {
        s->l[a] = l + (size_t)a * n;
        s->x[a] = x + (size_t)a * n;
    }
    return 0;
}

static void pts_set(pts *s, size_t i, const cfg_pt *p)
{
    for (int a = 0; a < 7; a++) {
        s->x[a][i] = p->x[a];
        s->l[a][i] = p->l[a];
    }
}

static void pts_get(const pts *s, size_t i, cfg_pt *p)
{
    for (int a = 0; a < 7; a++) {
        p->x[a] = s->x[a][i];
        p->l[a] = s->l[a][i];
    }
}

/* A point's nearest pick so far, where the triangle inequality (cfg_dist is
 * a metric: per attribute 0 or 1000 + |log2 difference|) spares most
 * distances: a point i whose nearest pick a lies at least 2 x mind[i] from
 * the new pick c is no nearer to c (d(i, c) >= d(a, c) - d(i, a) >=
 * mind[i]), so its distance to c is not computed. Late in the order, when
 * the picks are far apart and every point near one, that is most points:
 * the plain update of every point per pick was 86 % of POST /v1/runs for
 * 1500 cpu GEMMs (bench/results/coord_bench_stop46.txt). The margin covers
 * the rounding of sums of at most 7 terms near 1000, far below it. The
 * distances that are computed are cfg_dist's, and a partial sum that
 * reaches mind[i] stops (its terms are >= 0, so the rest cannot bring it
 * back below): the order is the one the full update gave, to the bit. */
#define SPREAD_MARGIN 1e-6

static size_t spread_update(const pts *s, size_t from, size_t n, const cfg_pt *c, size_t pick,
                            const double *dpick, double *mind, uint32_t *near)
{
    size_t far = from; /* the next pick: the first point farthest from every pick */
    for (size_t i = from; i < n; i++) {
        if (near[i] == UINT32_MAX || dpick[near[i]] < 2.0 * mind[i] + SPREAD_MARGIN) {
            double d = 0;
            for (int a = 0; a < 7 && d < mind[i]; a++) {
                if (s->x[a][i] != c->x[a])
                    d += 1000.0 + fabs(s->l[a][i] - c->l[a]);
            }
            if (d < mind[i]) {
                mind[i] = d;
                near[i] = (uint32_t)pick;
            }
        }
        if (mind[i] > mind[far])
            far = i;
    }
    return far;
}

/* Spread orders already computed. A log's GEMMs share spaces (every one
 * with its dimensions past the largest blocks prunes to the same grid), and
 * the order is a function of the space, the start and the budget alone: a
 * space seen before takes its picks from here, O(n), instead of the
 * O(n * budget) order (86 % of POST /v1/runs for 1500 cpu GEMMs, 27 ms a
 * GEMM; that log has 57 distinct spaces, met in the run's order, hence
 * room for many). An entry is keyed by two independent 64-bit hashes of
 * the input and keeps the picks as positions in the space: were two inputs
 * ever to collide, the picks would still be distinct configs of this space,
 * in a worse order, never a config outside it. The server plans runs on
 * several threads. */
#define SPREAD_MEMO 256

typedef struct spread_memo {
    uint64_t h1, h2;
    size_t n, budget;
    uint32_t *head; /* the picks, in order, as positions in v (NULL: a free slot) */
    uint64_t used;  /* when last hit or filled, for the eviction */
} spread_memo;

static spread_memo g_memo[SPREAD_MEMO];
static uint64_t g_memo_clock;
static pthread_mutex_t g_memo_mu = PTHREAD_MUTEX_INITIALIZER;

/* FNV-1a (a word at a time) and a multiply-rotate mix over the input's
 * words. */
_Static_assert(sizeof(cpu_cfg) == 7 * sizeof(int), "cpu_cfg is hashed as its 7 ints");
static void memo_key(const cpu_cfg *v, size_t n, size_t budget, const cpu_cfg *start,
                     uint64_t *h1, uint64_t *h2)
{
    uint64_t a = 0xcbf29ce484222325ULL, b = 0x9e3779b97f4a7c15ULL ^ n;
    const cpu_cfg *parts[2] = {start, v};
    size_t counts[2] = {1, n};
    for (int p = 0; p < 2; p++) {
        const int *w = (const int *)parts[p];
        size_t nw = counts[p] * (sizeof *v / sizeof(int));
        for (size_t i = 0; i < nw; i++) {
            uint32_t x = (uint32_t)w[i];
            a = (a ^ x) * 0x100000001b3ULL;
            b = (b ^ x) * 0xbf58476d1ce4e5b9ULL;
            b = (b << 27) | (b >> 37);
        }
    }
    *h1 = a ^ budget;
    *h2 = b ^ (budget * 0x94d049bb133111ebULL);
}

static int memo_is(const spread_memo *m, uint64_t h1, uint64_t h2, size_t n, size_t budget)
{
    return m->head && m->h1 == h1 && m->h2 == h2 && m->n == n && m->budget == budget;
}

/* Copies a remembered order's picks into head (budget entries); 1 on a hit. */
static int memo_get(uint64_t h1, uint64_t h2, size_t n, size_t budget, uint32_t *head)
{
    int hit = 0;
    pthread_mutex_lock(&g_memo_mu);
    for (int i = 0; i < SPREAD_MEMO && !hit; i++) {
        spread_memo *m = &g_memo[i];
        if (memo_is(m, h1, h2, n, budget)) {
            memcpy(head, m->head, budget * sizeof *head);
            m->used = ++g_memo_clock;
            hit = 1;
        }
    }
    pthread_mutex_unlock(&g_memo_mu);
    return hit;
}

/* Remembers an order (a copy of head), in place of the least recently used
 * one. Out of memory only means not remembered. */
static void memo_put(uint64_t h1, uint64_t h2, size_t n, size_t budget, const uint32_t *head)
{
    uint32_t *hc = malloc(budget * sizeof *hc);
    if (!hc)
        return;
    memcpy(hc, head, budget * sizeof *hc);
    pthread_mutex_lock(&g_memo_mu);
    int slot = 0;
    for (int i = 0; i < SPREAD_MEMO; i++) {
        const spread_memo *m = &g_memo[i];
        if (memo_is(m, h1, h2, n, budget)) {
            slot = -1; /* another thread just remembered it */
            break;
        }
        if (m->used < g_memo[slot].used)
            slot = i;
    }
    if (slot >= 0) {
        free(g_memo[slot].head);
        g_memo[slot] = (spread_memo){.h1 = h1, .h2 = h2, .n = n, .budget = budget, .head = hc,
                                     .used = ++g_memo_clock};
        hc = NULL;
    }
    pthread_mutex_unlock(&g_memo_mu);
    free(hc);
}

/* v reordered as head says: the picks first, the rest in their order. */
static int apply_head(cpu_cfg *v, size_t n, const uint32_t *head, size_t budget)
{
    cpu_cfg *orig = malloc(n * sizeof *orig);
    unsigned char *taken = calloc(n, 1);
    if (!orig || !taken) {
        free(orig);
        free(taken);
        return -1;
    }
    memcpy(orig, v, n * sizeof *v);
    for (size_t k = 0; k < budget; k++) {
        v[k] = orig[head[k]];
        taken[head[k]] = 1;
    }
    for (size_t i = 0, k = budget; i < n; i++)
        if (!taken[i])
            v[k++] = orig[i];
    free(taken);
    free(orig);
    return 0;
}

/* Reorders v so that every prefix is spread over the space: farthest-point
 * order from a known-good starting point. Deterministic; O(n * budget)
 * at worst (spread_update). */
static int spread_order(cpu_cfg *v, size_t n, size_t budget, int ncpu, const gt_problem *p)
{
    if (budget > n)
        budget = n;
    double *mind = NULL, *dpick = NULL;
    uint32_t *near = NULL, *pos = malloc(n * sizeof *pos);
    pts pt = {0};
    int rc = -1;
    if (!pos || n >= UINT32_MAX)
        goto out;
    /* Start from the blocking a tuned library would pick on AVX2/AVX-512. */
    cpu_cfg start = {.mc = 96, .nc = 1024, .kc = 256, .mr = 6, .nr = 16, .unroll = 4,
                     .threads = ncpu};
    (void)normalise(p, ncpu, &start); /* fitted; its own prune verdict does not matter */
    uint64_t h1, h2;
    memo_key(v, n, budget, &start, &h1, &h2);
    if (memo_get(h1, h2, n, budget, pos)) {
        rc = apply_head(v, n, pos, budget);
        goto out;
    }
    mind = malloc(n * sizeof *mind);
    dpick = malloc((budget + 1) * sizeof *dpick);
    near = malloc(n * sizeof *near);
    if (!mind || !dpick || !near || pts_alloc(&pt, n))
        goto out;
    for (size_t i = 0; i < n; i++) {
        cfg_pt c;
        cfg_point(&v[i], &c);
        pts_set(&pt, i, &c);
        mind[i] = 1e300; /* replaced by the distance to the first pick */
        near[i] = UINT32_MAX;
        pos[i] = (uint32_t)i; /* where the config at i was in the given v */
    }
    cfg_pt spt;
    cfg_point(&start, &spt);
    size_t far = 0;
    for (size_t k = 0; k < budget; k++) { /* budget <= n */
        size_t best = far;
        if (k == 0) {
            /* The grid point nearest the start. */
            double bd = 1e300;
            for (size_t i = 0; i < n; i++) {
                cfg_pt c;
                pts_get(&pt, i, &c);
                double d = cfg_dist(&c, &spt);
                if (d < bd) {
                    bd = d;
                    best = i;
                }
            }
        }
        cpu_cfg t = v[k];
        v[k] = v[best];
        v[best] = t;
        cfg_pt pk, pb;
        pts_get(&pt, k, &pk);
        pts_get(&pt, best, &pb);
        pts_set(&pt, k, &pb);
        pts_set(&pt, best, &pk);
        double tm = mind[k];
        mind[k] = mind[best];
        mind[best] = tm;
        uint32_t tn = near[k];
        near[k] = near[best];
        near[best] = tn;
        tn = pos[k];
        pos[k] = pos[best];
        pos[best] = tn;
        /* the new pick's distance to each earlier one (positions 0..k-1) */
        for (size_t j = 0; j < k; j++) {
            cfg_pt pj;
            pts_get(&pt, j, &pj);
            dpick[j] = cfg_dist(&pj, &pb);
        }
        if (k + 1 < n)
            far = spread_update(&pt, k + 1, n, &pb, k, dpick, mind, near);
    }
    memo_put(h1, h2, n, budget, pos);
    rc = 0;
out:
    free(pt.mem);
    free(pos);
    free(near);
    free(dpick);
    free(mind);
    return rc;
}

/* Every config of p's pruned space and the default blocking, deduplicated,
 * in canonical (field-wise) order: a new array in *out (caller frees), its
 * length in *nout. 0 or -1 on OOM. */
static int build_space(const gt_problem *p, int ncpu, cpu_cfg **out, size_t *nout)
{
    int threads[16];
    size_t nt = 0;
    for (int t = 1; t < ncpu && nt < NELEM(threads) - 1; t *= 2)
        threads[nt++] = t;
    threads[nt++] = ncpu;

    size_t cap = NELEM(k_tiles) * NELEM(k_kc) * NELEM(k_mc) * NELEM(k_nc) * NELEM(k_unroll) * nt + 1;
    cpu_cfg *v = malloc(cap * sizeof *v);
    if (!v)
        return -1;
    size_t n = 0;
    for (size_t ti = 0; ti < NELEM(k_tiles); ti++)
        for (size_t a = 0; a < NELEM(k_kc); a++)
            for (size_t b = 0; b < NELEM(k_mc); b++)
                for (size_t c = 0; c < NELEM(k_nc); c++)
                    for (size_t u = 0; u < NELEM(k_unroll); u++)
                        for (size_t t = 0; t < nt; t++) {
                            cpu_cfg x = {.mc = k_mc[b], .nc = k_nc[c], .kc = k_kc[a],
                                         .mr = k_tiles[ti][0], .nr = k_tiles[ti][1],
                                         .unroll = k_unroll[u], .threads = threads[t]};
                            if (normalise(p, ncpu, &x) == 0)
                                v[n++] = x;
                        }
    /* The default blocking is always a candidate (its threads shrink to the
     * work where the grid's would be pruned), then duplicates merge. */
    cpu_cfg def;
    if (default_cfg(p, ncpu, &def) == 0)
        v[n++] = def;
    if (n)
        qsort(v, n, sizeof *v, cmp_cfg);
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        if (u && cfg_eq(&v[u - 1], &v[i]))
            continue;
        v[u++] = v[i];
    }
    *out = v;
    *nout = u;
    return 0;
}

/* The first take configs of v as a new JSON array, or NULL on OOM. */
static cJSON *cfgs_json(const cpu_cfg *v, size_t take)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return NULL;
    for (size_t i = 0; i < take; i++) {
        cJSON *o = cfg_json(&v[i]);
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

cJSON *gt_space_cpu(const gt_problem *p_in, gt_strategy s, int budget, uint64_t seed, int ncpu)
{
    gt_problem q = sane(p_in), *p = &q;
    cJSON *arr = NULL;
    cpu_cfg *v = NULL;
    size_t n = 0;
    ncpu = machine_ncpu(ncpu);
    if (build_space(p, ncpu, &v, &n) != 0)
        goto fail;

    size_t take = (budget > 0 && (size_t)budget < n) ? (size_t)budget : n;
    if (s == GT_STRAT_RANDOM) {
        /* Partial Fisher-Yates: a uniform sample without repetition. */
        uint64_t st = seed ^ 0x6a09e667f3bcc908ULL;
        for (size_t i = 0; i < take; i++) {
            size_t j = i + gt_rand_below(&st, n - i);
            cpu_cfg t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
    } else if (take < n) {
        if (spread_order(v, n, take, ncpu, p) != 0)
            goto fail;
    }

    arr = cfgs_json(v, take);
    if (!arr)
        goto fail;
    free(v);
    return arr;
fail:
    free(v);
    return NULL;
}

cJSON *gt_space_cpu_all(const gt_problem *p_in, int nhead, int ncpu)
{
    gt_problem q = sane(p_in), *p = &q;
    cpu_cfg *v = NULL;
    size_t n = 0;
    ncpu = machine_ncpu(ncpu);
    if (build_space(p, ncpu, &v, &n) != 0)
        return NULL;
    /* Only the head is spread-ordered: the order of the full space costs
     * O(n^2) and the search samples the rest itself. spread_order moves the
     * picks to the front and leaves the others in some order: sort them
     * back to canonical so the stored space does not depend on how. */
    size_t head = nhead > 0 ? ((size_t)nhead < n ? (size_t)nhead : n) : 0;
    if (head && head < n && spread_order(v, n, head, ncpu, p) != 0) {
        free(v);
        return NULL;
    }
    if (head < n)
        qsort(v + head, n - head, sizeof *v, cmp_cfg);
    cJSON *arr = cfgs_json(v, n);
    free(v);
    return arr;
}
