/* cuda_space.c: the cuda backend's candidate space: the enumeration of
 * every algo configuration that cublasLtMatmulAlgoCheck accepts for a
 * problem, and a config's algo within the context's workspace
 * (gt_cuda_algo_make). A config is cuda/'s gt_cu_lt_cfg: lt_cfg.c encodes it
 * as JSON, lt_api.c on an algo (worker/cuda/CONFIG.md).
 *
 * Enumeration: the heuristic's top results first (rank order; when the
 * heuristic refuses the problem there are none and the baseline is the
 * placeholder of gt_cuda_no_default_json, which fails to build naming why),
 * then for
 * every algo id: tile x stages (kept when AlgoCheck accepts them with the
 * default cluster, or with 1x1x1 when the default is refused), x every
 * cluster shape AlgoCheck accepts on cluster-capable devices (a pair that
 * accepts all ~50 shapes ignores the attribute and keeps one), x swizzle x
 * custom option x split-K {1,2,3,4,5,6,8,12,16,24,32} (split-K only when the
 * algo supports it and each split keeps >= 16 of k) x every reduction scheme
 * in the algo's mask. A config is kept when AlgoCheck accepts it with a
 * workspace <= the context's workspace. Above the cap the heuristic's configs
 * are all kept and the rest is an evenly strided sample in enumeration order,
 * so every algo id stays represented.
 *
 * keep (the enumerate job's: the coordinator's budget under the exhaustive
 * strategy, gt_plan_enum_keep): the list holds at most keep entries, and
 * the enumerated configs only the room the heuristic's and the families'
 * leave. No room: no AlgoCheck pass at all. Less room than tile/stages
 * pairs: three quarters of the room to the pairs of the algo ids the
 * heuristic returned (several configs of each pair where they are fewer),
 * a quarter to the other ids' pairs, each part evenly strided over its
 * pairs (enum_configs, draw_strided), instead of checking every config of
 * every pair.
 * A problem whose output tiles fill the GPU gets no split-K configs in a
 * keep-limited list (fills_gpu), and no pairs that need more than twice the
 * waves of the heuristic's pick (far smaller tiles: MAX_WAVES_RATIO).
 *
 * Generated families (gen_gemv.h, gen_mma.h): the "gemv" and "mma"
 * families' configs that survive their pruning (gt_cuda_gen_enumerate
 * alternates the two, each best first) are woven in after the heuristic's
 * first GEN_AFTER results (GEN_AFTER of them, then the rest of the
 * heuristic's, then the rest of the family's, then the enumerated configs),
 * so that a small budget (the coordinator keeps the first `budget` entries,
 * or with strategy random the first min(budget/2, 32) plus a sample)
 * measures both the library's and the family's best guesses. cuBLASLt
 * configs keep their form and hash. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_cuda.h"
#include "gt_cuda.h"
#include "gt_util.h"

int gt_cuda_algo_make(gt_bk_ctx *ctx, const gt_cu_map *m, const gt_cu_desc *d,
                      const gt_cu_lt_cfg *c, cublasLtMatmulAlgo_t *algo, size_t *ws_need,
                      char *err, size_t errlen)
{
    gt_cu_lt_types t = gt_cu_map_types(m);
    gt_cu_lt_algo a;
    if (gt_cu_lt_algo_make(&gt_cu_lt_linked, ctx->lt, &t, c, d, &a, err, errlen) != 0)
        return -1;
    if (a.workspace > ctx->ws_size) {
        snprintf(err, errlen, "cuda: config needs %zu bytes of workspace, the limit is %zu",
                 a.workspace, ctx->ws_size);
        return -1;
    }
    *algo = a.algo;
    *ws_need = a.workspace;
    return 0;
}

/* ---- enumeration --------------------------------------------------------- */

typedef struct cfgvec {
    gt_cu_lt_cfg *v;
    size_t n, cap;
} cfgvec;

static int vec_push(cfgvec *a, const gt_cu_lt_cfg *c)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 256;
        gt_cu_lt_cfg *v = realloc(a->v, cap * sizeof *v);
        if (!v)
            return -1;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = *c;
    return 0;
}

typedef struct enum_state {
    gt_bk_ctx *ctx;
    const gt_cu_desc *d;
    cublasLtMatmulAlgo_t init;      /* the current algo id, freshly initialized */
    const cfgvec *heur;             /* for dedupe */
    cfgvec found;
    double t0;
    int stop;
    int no_splitk;                  /* split-K 1 only (fills_gpu) */
    float max_waves;                /* > 0: a pair whose plain config needs more waves is not live */
    float last_waves;               /* the wavesCount of check's last accepted config */
    gt_cuda_enum_stats *st;
} enum_state;

/* Returns 1 when AlgoCheck accepts c (any workspace), 0 otherwise; *ws gets
 * the workspace it needs. Stops the enumeration at the budget. */
static int check(enum_state *e, const gt_cu_lt_cfg *c, size_t *ws)
{
    char err[160];
    if (e->stop)
        return 0;
    if ((++e->st->checks & 255) == 0 &&
        (gt_mono_ms() - e->t0 > e->ctx->enum_seconds * 1000.0 || e->st->checks >= e->ctx->max_checks)) {
        e->stop = 1;
        e->st->truncated = 1;
    }
    cublasLtMatmulAlgo_t a = e->init;
    if (gt_cu_lt_cfg_apply(&gt_cu_lt_linked, c, &a, err, sizeof err) != 0)
        return 0;
    cublasLtMatmulHeuristicResult_t r;
    memset(&r, 0, sizeof r);
    if (cublasLtMatmulAlgoCheck(e->ctx->lt, e->d->op, e->d->a, e->d->b, e->d->c, e->d->d, &a, &r) !=
        CUBLAS_STATUS_SUCCESS)
        return 0;
    *ws = r.workspaceSize;
    e->last_waves = r.wavesCount;
    return 1;
}

/* Keeps c when accepted within the workspace and not a heuristic config. */
static int accept(enum_state *e, const gt_cu_lt_cfg *c)
{
    size_t ws = 0;
    if (!check(e, c, &ws) || ws > e->ctx->ws_size)
        return 0;
    for (size_t i = 0; i < e->heur->n; i++)
        if (gt_cu_lt_cfg_equal(&e->heur->v[i], c))
            return 1;
    return vec_push(&e->found, c) == 0 ? 1 : -1;
}

/* Reads an array capability (uint32 ids); an empty or failed query yields
 * the single UNDEFINED id 0, as the cuBLASLt samples do. */
static int cap_ids(const cublasLtMatmulAlgo_t *a, cublasLtMatmulAlgoCapAttributes_t attr,
                   uint32_t **out)
{
    size_t sz = 0;
    uint32_t *v = NULL;
    int n = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(a, attr, NULL, 0, &sz) == CUBLAS_STATUS_SUCCESS &&
        sz >= sizeof(uint32_t)) {
        v = malloc(sz);
        if (!v)
            return -1;
        size_t w = 0;
        if (cublasLtMatmulAlgoCapGetAttribute(a, attr, v, sz, &w) == CUBLAS_STATUS_SUCCESS)
            n = (int)(w / sizeof(uint32_t));
    }
    if (n == 0) {
        free(v);
        v = malloc(sizeof *v);
        if (!v)
            return -1;
        v[0] = 0;
        n = 1;
    }
    *out = v;
    return n;
}

static int cap_u32(const cublasLtMatmulAlgo_t *a, cublasLtMatmulAlgoCapAttributes_t attr)
{
    uint32_t v = 0;
    size_t w = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(a, attr, &v, sizeof v, &w) != CUBLAS_STATUS_SUCCESS)
        return 0;
    return (int)v;
}

static const int k_splitk[] = {1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32};
#define SPLIT_MIN_K 16 /* a split shorter than this is never worth a kernel */

/* One algo id's tile x stages pair, with the id's capabilities: the unit
 * the enumeration checks (clusters, swizzle, custom option, split-K and
 * reductions within it). */
typedef struct pair {
    int id;
    uint32_t tile, stages;
    int splitk_ok, red_mask, swz_max, custom_max;
} pair;

typedef struct pairvec {
    pair *v;
    size_t n, cap;
} pairvec;

/* Appends the pairs of algo id `id` (none when it is not for these types
 * on this device). Capability queries only: no AlgoCheck. */
static int list_pairs(enum_state *e, const gt_cu_map *m, int id, pairvec *out)
{
    cublasLtMatmulAlgo_t init;
    if (cublasLtMatmulAlgoInit(e->ctx->lt, m->compute, m->scale, m->a, m->b, m->c, m->d, id,
                               &init) != CUBLAS_STATUS_SUCCESS)
        return 0;
    uint32_t *tiles = NULL, *stages = NULL;
    int rc = -1;
    int nt = cap_ids(&init, CUBLASLT_ALGO_CAP_TILE_IDS, &tiles);
    int ns = cap_ids(&init, CUBLASLT_ALGO_CAP_STAGES_IDS, &stages);
    if (nt < 0 || ns < 0)
        goto done;
    pair q = {.id = id,
              .splitk_ok = cap_u32(&init, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT) != 0,
              .red_mask = cap_u32(&init, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK),
              .swz_max = cap_u32(&init, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT) ? 1 : 0,
              .custom_max = cap_u32(&init, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX)};
    if (q.custom_max < 0 || q.custom_max > 1023)
        q.custom_max = 0;
    for (int ti = 0; ti < nt; ti++)
        for (int si = 0; si < ns; si++) {
            if (out->n == out->cap) {
                size_t cap = out->cap ? out->cap * 2 : 1024;
                pair *v = realloc(out->v, cap * sizeof *v);
                if (!v)
                    goto done;
                out->v = v;
                out->cap = cap;
            }
            q.tile = tiles[ti];
            q.stages = stages[si];
            out->v[out->n++] = q;
        }
    rc = 0;
done:
    free(tiles);
    free(stages);
    return rc;
}

/* The cluster shapes AlgoCheck accepts for pair q (e->init initialized for
 * its algo id) into cl: the default, and on cluster-capable devices every
 * explicit shape it accepts (one entry for a kernel that accepts them all).
 * Returns how many, 0 when the pair does not exist for the problem. */
static int pair_clusters(enum_state *e, const pair *q, uint16_t cl[CUBLASLT_CLUSTER_SHAPE_END])
{
    gt_cu_lt_cfg base = {.algo_id = q->id, .tile = q->tile, .stages = q->stages, .splitk = 1};
    int ncl = 0;
    size_t ws;
    int auto_ok = check(e, &base, &ws);
    if (auto_ok)
        cl[ncl++] = CUBLASLT_CLUSTER_SHAPE_AUTO;
    if (e->ctx->cluster_launch) {
        /* The default refused: one explicit shape decides whether this
         * tile/stages pair exists at all, before trying all. */
        gt_cu_lt_cfg probe = base;
        probe.cluster = CUBLASLT_CLUSTER_SHAPE_1x1x1;
        if (!auto_ok && !check(e, &probe, &ws))
            return 0;
        int tried = 0, took = 0;
        for (int s = CUBLASLT_CLUSTER_SHAPE_AUTO + 1; s < CUBLASLT_CLUSTER_SHAPE_END; s++) {
            probe.cluster = (uint16_t)s;
            tried++;
            if (check(e, &probe, &ws))
                cl[ncl++] = (uint16_t)s, took++;
        }
        /* A kernel that accepts every shape, 16-wide included, ignores the
         * attribute: one entry, not ~50 duplicates. */
        if (took == tried && !e->stop) {
            ncl = 0;
            cl[ncl++] = auto_ok ? CUBLASLT_CLUSTER_SHAPE_AUTO : CUBLASLT_CLUSTER_SHAPE_1x1x1;
            e->st->cluster_blind++;
        }
    }
    return ncl;
}

/* How many split-K values of k_splitk apply to pair q (1: split-K 1 only):
 * the algo supports it with a reduction scheme, each split keeps >= 16 of
 * k, and the problem is not one whose tiles fill the GPU by themselves
 * (e->no_splitk). */
static int pair_splits(const enum_state *e, const gt_problem *p, const pair *q, int nred)
{
    int nsk = 1;
    while (!e->no_splitk && q->splitk_ok && nred > 0 && nsk < (int)(sizeof k_splitk / sizeof k_splitk[0]) &&
           p->k >= (int64_t)k_splitk[nsk] * SPLIT_MIN_K)
        nsk++;
    return nsk;
}

static int pair_reds(const pair *q, uint32_t reds[3])
{
    int nred = 0;
    for (uint32_t r = CUBLASLT_REDUCTION_SCHEME_INPLACE; r <= CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE; r <<= 1)
        if (q->red_mask & (int)r)
            reds[nred++] = r;
    return nred;
}

/* 1 when p's output, cut in 128 x 128 tiles, gives at least
 * FILL_WAVES tiles per SM: every config's tile up to 256 x 256 then keeps
 * all SMs busy without splitting k, and split-K only adds the partial sums'
 * traffic and the reduction (the reason libraries split k only for few
 * output tiles). A keep-limited list (the exhaustive strategy's head) then
 * holds no split-K configs: on the H100 they were most of the sampled
 * cuBLASLt configs of 128256x8192x4096, validated at 70 ms on average
 * against 11 ms for the best, a quarter of a 25-GEMM run. The whole list
 * (keep 0: random, evolutionary) keeps them. */
#define FILL_WAVES 4
/* For such a problem a keep-limited list also leaves out the tile/stages
 * pairs whose plain config needs more than this many times the waves
 * (AlgoCheck's wavesCount) of the heuristic's pick: tiles of a quarter of
 * its area or less (or far lower occupancy), kernels made for other
 * shapes. On the H100 the sampled configs of 128256x8192x4096 validated at
 * 62 ms on average against 12 ms for the best: each one's validation run
 * alone cost a fifth of a second's budget of the whole 25-GEMM run. */
#define MAX_WAVES_RATIO 2.0f
static int fills_gpu(const gt_problem *p, int sms)
{
    double tiles = (double)((p->m + 127) / 128) * (double)((p->n + 127) / 128) * (double)p->batch;
    return sms > 0 && tiles >= (double)FILL_WAVES * sms;
}

/* Initializes e->init for pair q's algo id; 0 when the id is not for
 * these types on this device (or the enumeration stopped). */
static int pair_init(enum_state *e, const gt_cu_map *m, const pair *q)
{
    return !e->stop && cublasLtMatmulAlgoInit(e->ctx->lt, m->compute, m->scale, m->a, m->b, m->c, m->d,
                                              q->id, &e->init) == CUBLAS_STATUS_SUCCESS;
}

/* Checks every config of pair q, appending the accepted ones to e->found
 * in enumeration order. 0, or -1 out of memory. */
static int enum_pair(enum_state *e, const gt_cu_map *m, const gt_problem *p, const pair *q)
{
    if (!pair_init(e, m, q))
        return 0;
    gt_cu_lt_cfg base = {.algo_id = q->id, .tile = q->tile, .stages = q->stages, .splitk = 1};
    uint16_t cl[CUBLASLT_CLUSTER_SHAPE_END];
    int ncl = pair_clusters(e, q, cl);
    /* Reduction schemes: none without split-K, each one in the algo's mask
     * with it. */
    uint32_t reds[3];
    int nred = pair_reds(q, reds), nsk = pair_splits(e, p, q, nred);
    for (int ci = 0; ci < ncl; ci++)
        for (int sw = 0; sw <= q->swz_max; sw++)
            for (int cu = 0; cu <= q->custom_max; cu++)
                for (int ki = 0; ki < nsk; ki++) {
                    int sk = k_splitk[ki];
                    for (int ri = 0; ri < (sk > 1 ? nred : 1); ri++) {
                        gt_cu_lt_cfg c = base;
                        c.cluster = cl[ci];
                        c.swizzle = (uint32_t)sw;
                        c.custom = (uint32_t)cu;
                        c.splitk = sk;
                        c.reduction = sk > 1 ? reds[ri] : CUBLASLT_REDUCTION_SCHEME_NONE;
                        if (accept(e, &c) < 0)
                            return -1;
                    }
                }
    return 0;
}

/* 1 when pair q exists for this problem: AlgoCheck accepts its plain
 * config with the default cluster shape, or with 1x1x1 (enum_pair's first
 * checks, which end a pair that has neither), and, where e->max_waves is
 * set, with no more waves than that (else it counts in small_tiles). */
static int pair_exists(enum_state *e, const gt_cu_map *m, const pair *q)
{
    if (!pair_init(e, m, q))
        return 0;
    gt_cu_lt_cfg c = {.algo_id = q->id, .tile = q->tile, .stages = q->stages, .splitk = 1};
    size_t ws;
    int ok = check(e, &c, &ws);
    if (!ok && e->ctx->cluster_launch) {
        c.cluster = CUBLASLT_CLUSTER_SHAPE_1x1x1;
        ok = check(e, &c, &ws);
    }
    if (ok && e->max_waves > 0 && e->last_waves > e->max_waves) {
        e->st->small_tiles++;
        return 0;
    }
    return ok;
}

#define DRAW_TRIES 48

/* One config of pair q by rejection sampling: its accepted cluster shapes
 * found as enum_pair finds them, then configs drawn uniformly over those
 * and the other raw dimensions (swizzle, custom option, split-K with its
 * reduction), from the stream seeded by h, each checked alone, the first accepted kept (in
 * e->found): uniform over the pair's accepted configs, as one drawn from
 * enum_pair's whole list, for about fifty checks instead of the pair's
 * hundreds. 1 when one was kept, 0 when none was (DRAW_TRIES draws, or no
 * cluster shape), -1 out of memory. */
static int draw_pair(enum_state *e, const gt_cu_map *m, const gt_problem *p, const pair *q, uint64_t h)
{
    if (!pair_init(e, m, q))
        return 0;
    uint16_t cl[CUBLASLT_CLUSTER_SHAPE_END];
    uint64_t ncl = (uint64_t)pair_clusters(e, q, cl);
    if (ncl == 0)
        return 0;
    uint32_t reds[3];
    int nred = pair_reds(q, reds), nsk = pair_splits(e, p, q, nred);
    /* split-K 1 (no reduction), or a split > 1 with one of the schemes */
    uint64_t nkr = 1 + (uint64_t)(nsk - 1) * (uint64_t)nred;
    size_t before = e->found.n;
    for (int t = 0; t < DRAW_TRIES && !e->stop; t++) {
        uint64_t x = gt_rand_u64(&h);
        gt_cu_lt_cfg c = {.algo_id = q->id, .tile = q->tile, .stages = q->stages};
        c.cluster = cl[x % ncl], x /= ncl;
        c.swizzle = (uint32_t)(x % (uint64_t)(q->swz_max + 1)), x /= (uint64_t)(q->swz_max + 1);
        c.custom = (uint32_t)(x % (uint64_t)(q->custom_max + 1)), x /= (uint64_t)(q->custom_max + 1);
        uint64_t kr = x % nkr;
        c.splitk = kr == 0 ? 1 : k_splitk[1 + (kr - 1) / (uint64_t)nred];
        c.reduction = kr == 0 ? CUBLASLT_REDUCTION_SCHEME_NONE : reds[(kr - 1) % (uint64_t)nred];
        if (accept(e, &c) < 0)
            return -1;
        if (e->found.n > before)
            return 1;
    }
    return 0;
}

/* Appends up to want configs drawn from the live pairs idx[0..n) to keep: evenly strided
 * over the pairs, one config of each (a pair that gives none passes its turn on); with
 * more room than pairs, several distinct configs of each (other cluster shapes, swizzles,
 * custom options), the room shared evenly. */
#define OTHER_IDS_SHARE 4 /* the other algo ids' part of the room: a quarter */
static int draw_strided(enum_state *e, const gt_cu_map *m, const gt_problem *p, const pairvec *pv,
                        const size_t *idx, size_t n, size_t want, cfgvec *keep)
{
    if (n == 0 || want == 0)
        return 0;
    size_t slots = want < n ? want : n, target = keep->n + want;
    size_t owed = 0; /* turns of earlier strides whose pairs gave nothing */
    for (size_t i = 0; i < slots && !e->stop && keep->n < target; i++) {
        /* this stride's share of the room, plus what earlier ones could not use */
        size_t need = want / slots + (i < want % slots) + owed;
        size_t t = (size_t)((double)i * (double)n / (double)slots);
        size_t end = (size_t)((double)(i + 1) * (double)n / (double)slots);
        for (; t < end && t < n && need > 0 && !e->stop; t++) {
            uint64_t h = gt_mix64((uint64_t)idx[t]);
            /* up to need distinct configs of this pair: a few draws more than that, since
             * a draw may repeat one already kept */
            for (size_t d = 0; d < need * 2 + 2 && need > 0 && !e->stop; d++) {
                size_t before = e->found.n;
                uint64_t hd = h + d * 0x9e3779b97f4a7c15ULL;
                int r = draw_pair(e, m, p, &pv->v[idx[t]], hd);
                if (r < 0 || (r == 0 && d == 0 && enum_pair(e, m, p, &pv->v[idx[t]]) != 0))
                    return -1;
                size_t got = e->found.n - before;
                if (got > 0) {
                    const gt_cu_lt_cfg *c = &e->found.v[before + (size_t)(hd % got)];
                    int dup = 0;
                    for (size_t k = 0; k < keep->n && !dup; k++)
                        dup = gt_cu_lt_cfg_equal(&keep->v[k], c);
                    if (!dup) {
                        if (vec_push(keep, c) != 0)
                            return -1;
                        need--;
                    }
                }
                e->found.n = before;
                if (r == 0)
                    break; /* random draws find nothing here: its enumeration gave the one */
            }
        }
        owed = need;
    }
    return 0;
}

/* The enumerated configs into e->found: every pair's, in order, when want
 * is unbounded; else, after a first pass that finds the pairs that exist
 * for the problem (one or two checks each), every config of those when
 * they are no more than `want`, or else a sample of `want` configs: three
 * quarters of it from the pairs of the heuristic's algo ids, the rest from
 * the others, each part evenly strided over its pairs by draw_strided. A
 * run with the exhaustive strategy screens only its budget's head of the
 * list (gt_plan_enum_keep), tens of enumerated configs: checking all
 * ~10^5 configs to keep an evenly strided few cost 0.1-1 s of CPU per
 * problem, a fifth of a 25-GEMM run's enumeration time, and jobs that ran
 * several per host slower still. The sample keeps the spread over algo
 * ids, tiles and stages; within a pair the config is drawn at random
 * (seeded by the pair's position), so cluster shape, swizzle and split-K
 * vary across it. */
static int enum_configs(enum_state *e, const gt_cu_map *m, const gt_problem *p, const pairvec *pv,
                        size_t want)
{
    if (want == (size_t)-1) {
        for (size_t i = 0; i < pv->n && !e->stop; i++)
            if (enum_pair(e, m, p, &pv->v[i]) != 0)
                return -1;
        return 0;
    }
    size_t *live = malloc((pv->n ? pv->n : 1) * sizeof *live), nlive = 0;
    cfgvec keep = {0};
    if (!live)
        return -1;
    for (size_t i = 0; i < pv->n && !e->stop; i++)
        if (pair_exists(e, m, &pv->v[i]))
            live[nlive++] = i;
    e->st->live_pairs = (long long)nlive;
    if (nlive <= want) {
        for (size_t i = 0; i < nlive && !e->stop; i++)
            if (enum_pair(e, m, p, &pv->v[live[i]]) != 0)
                goto oom;
        free(live);
        return 0;
    }
    e->st->sampled = 1;
    /* The room goes first to the pairs of the algo ids the heuristic returned (cuBLASLt's
     * own kernels for this problem on this device), the rest strided over the other ids, so
     * every id stays represented. Measured on an H100 (bf16, the 25 Llama shapes,
     * bench/results/h100_40_cutlass_family_service.txt): the heuristic's id (66, the sm90
     * kernels) won every GEMM; the other ids' best were 1.04-1.85x slower, their median
     * 3-7x on the compute-bound shapes, where they held 300 of the 352 enumerated slots
     * and, since every candidate's validation is one full call, most of the screen's time. */
    size_t *pref = malloc(nlive * sizeof *pref), npref = 0, nother = 0;
    if (!pref)
        goto oom;
    for (size_t i = 0; i < nlive; i++) {
        int mine = 0;
        for (size_t j = 0; j < e->heur->n && !mine; j++)
            mine = e->heur->v[j].algo_id == pv->v[live[i]].id;
        if (mine)
            pref[npref++] = live[i];
        else
            live[nother++] = live[i];
    }
    size_t want_other = npref == 0 ? want : want / OTHER_IDS_SHARE;
    want_other = want_other < nother ? want_other : nother;
    size_t want_pref = want - want_other;
    int rc = draw_strided(e, m, p, pv, pref, npref, want_pref, &keep);
    e->st->preferred = (long long)keep.n;
    if (rc == 0) {
        /* what the preferred pairs could not fill goes to the others */
        size_t left = want - keep.n;
        rc = draw_strided(e, m, p, pv, live, nother, left < nother ? left : nother, &keep);
    }
    free(pref);
    if (rc != 0)
        goto oom;
    free(live);
    free(e->found.v);
    e->found = keep;
    return 0;
oom:
    free(live);
    free(keep.v);
    return -1;
}

cJSON *gt_cuda_no_default_json(const char *why)
{
    cJSON *j = cJSON_CreateObject();
    if (!j || !cJSON_AddStringToObject(j, "family", "cublaslt") ||
        !cJSON_AddStringToObject(j, "heuristic", "none") || !cJSON_AddStringToObject(j, "reason", why)) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

int gt_cuda_no_default(const cJSON *cfg, char *err, size_t errlen)
{
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(cfg, "heuristic");
    if (!cJSON_IsString(h) || strcmp(h->valuestring, "none"))
        return 0;
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(cfg, "reason");
    snprintf(err, errlen, "cuda: no default: %.200s",
             cJSON_IsString(why) ? why->valuestring : "cuBLASLt's heuristic has no algorithm for this problem");
    return 1;
}

#define HEUR_MAX 32
#define IDS_MAX 1024
#define GEN_AFTER 8 /* heuristic configs before the first generated ones */

int gt_cuda_enumerate(gt_bk_ctx *ctx, const gt_problem *p, int keep, cJSON **cands,
                      cJSON **baseline, char *err, size_t errlen)
{
    gt_cu_map m;
    gt_cu_desc d;
    memset(&d, 0, sizeof d);
    cublasLtMatmulPreference_t pref = NULL;
    cfgvec heur = {0};
    enum_state e;
    memset(&e, 0, sizeof e);
    cJSON *arr = NULL, *base = NULL, *gen = NULL;
    int *ids = NULL;
    pairvec pairs = {0};
    int rc = -1;
    gt_cuda_enum_stats st;
    memset(&st, 0, sizeof st);
    double t0 = gt_mono_ms();
    *cands = NULL;
    *baseline = NULL;

    if (gt_cuda_alive(ctx, err, errlen) != 0 || gt_cu_map_problem(p, ctx->sm, &m, err, errlen) != 0 ||
        gt_cuda_fits(ctx, p, &m, err, errlen) != 0)
        return -1;
    /* Placeholders: the heuristic and AlgoCheck only read pointer alignment. */
    /* Same alignments as prepare's buffers: bias and each scale 256. */
    gt_cu_ptrs ptrs = {(const void *)(uintptr_t)0x10000, (const void *)(uintptr_t)0x20000,
                       (const void *)(uintptr_t)0x20100, (const void *)(uintptr_t)0x20200};
    if (gt_cu_desc_create(p, &m, &ptrs, &d, err, errlen) != 0)
        goto out;
    cublasStatus_t s = cublasLtMatmulPreferenceCreate(&pref);
    uint64_t wsl = ctx->ws_size;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &wsl, sizeof wsl);
    if (gt_cuda_ckb(ctx, s, "matmul preference", err, errlen) != 0)
        goto out;
    cublasLtMatmulHeuristicResult_t res[HEUR_MAX];
    int nres = 0;
    s = cublasLtMatmulAlgoGetHeuristic(ctx->lt, d.op, d.a, d.b, d.c, d.d, pref, HEUR_MAX, res,
                                       &nres);
    /* A heuristic that refuses the problem (bf16 TN 32000x3x4096 with bias
     * + GELU: CUBLAS_STATUS_INVALID_VALUE) leaves no default, not no
     * candidates: AlgoCheck may still accept configs, and the generated
     * families have their own rules. */
    char no_heur[200] = "";
    if (s != CUBLAS_STATUS_SUCCESS || nres <= 0) {
        snprintf(no_heur, sizeof no_heur, "cuBLASLt's heuristic has no algorithm for this problem (%s, %d results)",
                 gt_cu_status_name(s), nres);
        gt_warn("enumerate: %s: enumerating the algo ids and the generated families without it", no_heur);
        nres = 0;
    }
    float heur_waves = 0; /* the heuristic pick's (MAX_WAVES_RATIO) */
    for (int i = 0; i < nres; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS)
            continue;
        if (heur_waves <= 0)
            heur_waves = res[i].wavesCount;
        gt_cu_lt_cfg c;
        if (gt_cu_lt_cfg_from_algo(&gt_cu_lt_linked, &res[i].algo, &c, err, errlen) != 0)
            goto out;
        int dup = 0;
        for (size_t j = 0; j < heur.n; j++)
            dup |= gt_cu_lt_cfg_equal(&heur.v[j], &c);
        if (dup)
            continue;
        /* The worker re-creates configs from attributes only: count the
         * heuristic algos that this does not reproduce bit for bit. */
        cublasLtMatmulAlgo_t again;
        size_t ws;
        char why[160];
        if (gt_cuda_algo_make(ctx, &m, &d, &c, &again, &ws, why, sizeof why) != 0 ||
            memcmp(again.data, res[i].algo.data, sizeof again.data) != 0)
            st.recreate_mismatch++;
        if (vec_push(&heur, &c) != 0)
            goto oom;
        st.heuristic++;
    }
    if (heur.n == 0 && !no_heur[0])
        snprintf(no_heur, sizeof no_heur, "cuBLASLt's heuristic returned no usable algorithm");

    /* The generated families first: how many of the list's entries they
     * take decides how many enumerated configs a keep-limited list has
     * room for. */
    if (gt_cuda_gen_enumerate(ctx, p, &gen, &st.gen_pruned, err, errlen) != 0)
        goto out;
    st.gen = cJSON_GetArraySize(gen);
    /* The enumerated configs follow the heuristic's and the families'
     * (below): with keep, only keep - heur.n - gen of them are read. None:
     * AlgoCheck's pass (a tenth of a second to a second of CPU time per
     * problem) is skipped. */
    size_t room = (size_t)-1; /* keep 0: the whole enumeration (sampled to the cap below) */
    if (keep > 0) {
        /* the cap's room beyond the heuristic's configs (max_cands 0: no cap) */
        size_t cap_room = ctx->max_cands <= 0                    ? (size_t)-1
                          : (size_t)ctx->max_cands > heur.n ? (size_t)ctx->max_cands - heur.n
                                                              : 0;
        room = (size_t)keep > heur.n + (size_t)st.gen ? (size_t)keep - heur.n - (size_t)st.gen : 0;
        room = room < cap_room ? room : cap_room;
    }
    if (room > 0) {
        ids = malloc(IDS_MAX * sizeof *ids);
        if (!ids)
            goto oom;
        int nids = 0;
        s = cublasLtMatmulAlgoGetIds(ctx->lt, m.compute, m.scale, m.a, m.b, m.c, m.d, IDS_MAX, ids,
                                     &nids);
        if (gt_cuda_ckb(ctx, s, "cublasLtMatmulAlgoGetIds", err, errlen) != 0)
            goto out;
        st.algo_ids = nids;
        e.ctx = ctx;
        e.d = &d;
        e.heur = &heur;
        e.t0 = t0;
        e.st = &st;
        e.no_splitk = keep > 0 && fills_gpu(p, ctx->sms);
        st.no_splitk = e.no_splitk;
        if (e.no_splitk && heur_waves > 0)
            e.max_waves = MAX_WAVES_RATIO * heur_waves;
        for (int i = 0; i < nids; i++)
            if (list_pairs(&e, &m, ids[i], &pairs) != 0)
                goto oom;
        st.pairs = (long long)pairs.n;
        if (enum_configs(&e, &m, p, &pairs, room) != 0)
            goto oom;
    }

    st.found = (long long)(heur.n + e.found.n);
    size_t cap = ctx->max_cands > 0 ? (size_t)ctx->max_cands : heur.n + e.found.n;
    size_t nsample = e.found.n;
    if (heur.n + nsample > cap) {
        nsample = cap > heur.n ? cap - heur.n : 0;
        st.capped = 1;
    }
    if (nsample > room) {
        nsample = room; /* the sample spans the whole enumeration still */
        st.capped = 1;
    }
    arr = cJSON_CreateArray();
    base = heur.n ? gt_cu_lt_cfg_to_json(&heur.v[0]) : gt_cuda_no_default_json(no_heur);
    if (!arr || !base)
        goto oom;
    for (size_t i = 0; i < heur.n + nsample; i++) {
        /* the family's configs after the first GEN_AFTER heuristic ones and
         * after the heuristic's last */
        if (i == (heur.n < GEN_AFTER ? heur.n : GEN_AFTER) || i == heur.n) {
            int take = i < heur.n ? GEN_AFTER : cJSON_GetArraySize(gen);
            for (int g = 0; g < take && cJSON_GetArraySize(gen) > 0; g++)
                cJSON_AddItemToArray(arr, cJSON_DetachItemFromArray(gen, 0));
        }
        /* evenly strided sample of the enumerated configs */
        const gt_cu_lt_cfg *c = i < heur.n ? &heur.v[i]
                                          : &e.found.v[(size_t)((double)(i - heur.n) *
                                                                (double)e.found.n / (double)nsample)];
        cJSON *j = gt_cu_lt_cfg_to_json(c);
        if (!j || !cJSON_AddItemToArray(arr, j)) {
            cJSON_Delete(j);
            goto oom;
        }
    }
    while (cJSON_GetArraySize(gen) > 0) /* no enumerated config after the heuristic's */
        cJSON_AddItemToArray(arr, cJSON_DetachItemFromArray(gen, 0));
    /* keep: the heuristic's and the families' configs alone may be more */
    while (keep > 0 && cJSON_GetArraySize(arr) > keep)
        cJSON_DeleteItemFromArray(arr, cJSON_GetArraySize(arr) - 1);
    st.returned = cJSON_GetArraySize(arr);
    *cands = arr;
    *baseline = base;
    arr = base = NULL;
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "cuda: out of host memory while enumerating");
out:
    st.seconds = (gt_mono_ms() - t0) / 1000.0;
    ctx->last_enum = st;
    if (rc == 0)
        gt_info("enumerate: %d entries (keep %d): %d heuristic, %d generated, %lld accepted of %lld"
                " tile/stages pairs (%lld live; %lld checks%s, %lld of the room to the heuristic's algo ids%s),"
                " %.3f s",
                st.returned, keep, st.heuristic, st.gen, st.found - st.heuristic, st.pairs, st.live_pairs, st.checks,
                st.sampled ? ", sampled" : "", st.preferred,
                st.no_splitk ? ", no split-K: the tiles fill the GPU" : "", st.seconds);
    if (rc == 0 && st.small_tiles > 0)
        gt_info("enumerate: %d tile/stages pairs left out: more than %.0fx the waves of the heuristic's pick",
                st.small_tiles, (double)MAX_WAVES_RATIO);
    cJSON_Delete(arr);
    cJSON_Delete(base);
    cJSON_Delete(gen);
    free(ids);
    free(pairs.v);
    free(heur.v);
    free(e.found.v);
    if (pref)
        (void)cublasLtMatmulPreferenceDestroy(pref);
    gt_cu_desc_destroy(&d);
    return rc;
}

void gt_cuda_enum_stats_get(const gt_bk_ctx *ctx, gt_cuda_enum_stats *st)
{
    *st = ctx->last_enum;
}

void gt_cuda_set_limits(gt_bk_ctx *ctx, int max_cands, double seconds)
{
    if (max_cands > 0)
        ctx->max_cands = max_cands;
    if (seconds > 0)
        ctx->enum_seconds = seconds;
}
