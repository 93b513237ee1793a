/* gen_run.c: the cuda backend's generated-kernel candidates ("gemv", "mma",
 * and the test-only "fault" family; "cutlass", libgemmtune_cutlass's prebuilt kernels,
 * through cutlass_run.c): their place in enumeration, their build
 * (NVRTC image from cuda/'s compile cache, module loaded once per device
 * context, launched through cuda/'s driver table like the helper kernels),
 * and validate / run exactly like a cuBLASLt candidate: the same poisoned D,
 * the same validation set, reference and GPU comparison, the same rotating
 * sets and events in time() (cuda_bench.c calls gt_cuda_gen_run where it
 * would call cublasLtMatmul). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_cuda.h"
#include "gen_mma.h"
#include "gt_util.h"

typedef struct gen_mod {
    uint64_t key;
    CUmodule mod;
    CUfunction fn, fin;
    int regs, local, smem;
} gen_mod;

struct gt_cuda_gen_ctx {
    int have_dev;
    gt_gen_dev dev;
    const gt_cu_drv *drv;     /* launch_kernel_ex, tensor_map_encode_tiled: NULL before CUDA 12 */
    int chain;                /* gemv kernels launch chained (gt_cuda_gen_set_chain) */
    int nochain;              /* gemv builds without chained launch (gt_cuda_gen_set_nochain) */
    gen_mod **mods;           /* each allocated alone: candidates keep pointers */
    int nmods, capmods;
    void *flag;               /* a zeroed word nobody sets: the hang fault spins on it */
};

struct gt_cuda_gen_prob {
    /* "atomic" split-K: workspace and tile counters, zeroed once and left
     * zero by every call; "twopass": scratch slices (never shared with the
     * atomic one, whose zeros they would spoil) */
    void *ws, *cnt, *scratch;
    size_t ws_bytes, cnt_bytes, scratch_bytes;
};

/* The tensor maps of one rotating set's operands (wgmma): encoded once per
 * set, not per launch, so timing loops launch back to back. */
#define GEN_TMAP_SETS 32
typedef struct gen_tmaps {
    const void *a, *b, *d;
    CUtensorMap t[GT_MMA_MAX_TMAPS]; /* A, B, and with TMA stores D */
} gen_tmaps;

struct gt_cuda_gen_cand {
    int family, fault;
    gt_gen_cfg cfg;           /* "gemv" */
    gt_mma_cfg mcfg;          /* "mma" */
    int ntmaps;               /* wgmma: the encodings (A, B, D) and the sets seen */
    gt_mma_tmap tm[GT_MMA_MAX_TMAPS];
    gen_tmaps *sets;
    int nsets;
    gt_gen_geom geom;
    const gen_mod *m;
    double compile_ms, build_ms;
    int cache;                /* 0 compiled now, 1 disk, 2 memory */
    int chain_ok;             /* validated chained (gt_cuda_gen_chain_begin) */
    int timed_chained;        /* timed with chained launches */
    int nochain;              /* built with -DGT_NOCHAIN: never launched chained */
    int spill_st, spill_ld;
    gt_cuda_cutlass_cand *cl;  /* "cutlass" (cutlass_run.c) */
};

/* ---- context --------------------------------------------------------------------- */

static gt_cuda_gen_ctx *gctx(gt_bk_ctx *ctx, char *err, size_t errlen)
{
    if (ctx->gen)
        return ctx->gen;
    gt_cuda_gen_ctx *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "cuda: out of host memory");
        return NULL;
    }
    if (!(g->drv = gt_cu_drv_get(err, errlen))) {
        free(g);
        return NULL;
    }
    ctx->gen = g;
    return g;
}

void gt_cuda_gen_close(gt_bk_ctx *ctx)
{
    gt_cuda_gen_ctx *g = ctx->gen;
    gt_cu_cache_pool_stop(); /* no compile thread outlives the backend */
    if (!g)
        return;
    for (int i = 0; i < g->nmods; i++) {
        (void)g->drv->module_unload(g->mods[i]->mod); /* best effort at teardown */
        free(g->mods[i]);
    }
    free(g->mods);
    if (g->flag)
        (void)cudaFree(g->flag);
    free(g);
    ctx->gen = NULL;
}

int gt_cuda_gen_device(gt_bk_ctx *ctx, gt_gen_dev *d, char *err, size_t errlen)
{
    gt_cuda_gen_ctx *g = gctx(ctx, err, errlen);
    if (!g)
        return -1;
    if (!g->have_dev) {
        int smem = 0, regs = 0, thr_sm = 0, thr_blk = 0, clk = 0, bus = 0, optin = 0, smem_sm = 0;
        gt_gen_dev_default(&g->dev, ctx->sm, ctx->sms);
        if (cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlock, ctx->dev) == cudaSuccess && smem > 0)
            g->dev.smem_block = smem;
        if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, ctx->dev) == cudaSuccess &&
            optin > 0)
            g->dev.smem_optin = optin;
        if (cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, ctx->dev) ==
                cudaSuccess && smem_sm > 0)
            g->dev.smem_sm = smem_sm;
        if (ctx->l2_bytes > 0)
            g->dev.l2_bytes = ctx->l2_bytes;
        if (cudaDeviceGetAttribute(&regs, cudaDevAttrMaxRegistersPerMultiprocessor, ctx->dev) == cudaSuccess && regs > 0)
            g->dev.regs_sm = regs;
        if (cudaDeviceGetAttribute(&thr_sm, cudaDevAttrMaxThreadsPerMultiProcessor, ctx->dev) == cudaSuccess && thr_sm > 0)
            g->dev.max_warps_sm = thr_sm / 32;
        if (cudaDeviceGetAttribute(&thr_blk, cudaDevAttrMaxThreadsPerBlock, ctx->dev) == cudaSuccess && thr_blk > 0)
            g->dev.max_threads_block = thr_blk;
        if (cudaDeviceGetAttribute(&clk, cudaDevAttrMemoryClockRate, ctx->dev) == cudaSuccess &&
            cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, ctx->dev) == cudaSuccess &&
            clk > 0 && bus > 0)
            g->dev.dram_bw = 2.0 * clk * 1e3 * bus / 8 * 0.9; /* DDR, ~90 % reachable */
        (void)cudaGetLastError(); /* an unsupported attribute is not an error here */
        g->have_dev = 1;
    }
    *d = g->dev;
    return 0;
}

static int env_cap(const char *name, int dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    int v = atoi(s);
    return v < 0 ? 0 : v;
}

/* GT_CUDA_GEN_MAX caps "gemv" and, at 0, turns every generated family off;
 * GT_CUDA_MMA_MAX caps "mma" (0 turns it alone off). */
static int gen_cap(void) { return env_cap("GT_CUDA_GEN_MAX", GT_GEN_DEFAULT_CAP); }
static int mma_cap(void) { return gen_cap() ? env_cap("GT_CUDA_MMA_MAX", GT_MMA_DEFAULT_CAP) : 0; }
/* GT_CUDA_CUTLASS_MAX caps "cutlass": every kept kernel of the library at its
 * scheduler's defaults (12 today) and the knobs of the best of them (24 is a good value).
 * Off by default: on the H100 it won no GEMM in four runs of the 25 Llama shapes (its best at
 * 0.61-1.00 of cuBLASLt's best configs), and in a fixed budget its configs take the place
 * of cuBLASLt's: budget 250, exhaustive, one start, 60.0 s and geomean 1.0607 with 24 of
 * them against 56.5 s and 1.0664 without (bench/results/h100_40_service_strategies.txt). */
#define GT_CUTLASS_DEFAULT_CAP 0
static int cutlass_cap(void) { return gen_cap() ? env_cap("GT_CUDA_CUTLASS_MAX", GT_CUTLASS_DEFAULT_CAP) : 0; }

/* ---- compiling ------------------------------------------------------------------------ */

/* The options of (p, c); returns the count or -1. */
static int gemv_opts(const gt_problem *p, const gt_gen_cfg *c, char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN],
                     const char *opts[GT_GEN_MAX_DEFS])
{
    int n = gt_gen_defines(p, c, 0, defs);
    for (int i = 0; i < n; i++)
        opts[i] = defs[i];
    return n;
}

/* A gemv config's compile options as its build requests them (the
 * context's -DGT_NOCHAIN included): n, or -1 with err. */
static int gemv_image_opts(const gt_cuda_gen_ctx *g, const gt_problem *p, const gt_gen_cfg *c,
                           char defs[][GT_GEN_DEF_LEN], const char **opts, char *err, size_t errlen)
{
    int n = gemv_opts(p, c, defs, opts);
    if (n < 0) {
        snprintf(err, errlen, "gemv: no encoding of this problem's types");
        return -1;
    }
    if (g->nochain) {
        if (n >= GT_GEN_MAX_DEFS) {
            snprintf(err, errlen, "gemv: no room for -DGT_NOCHAIN");
            return -1;
        }
        opts[n++] = "-DGT_NOCHAIN=1";
    }
    return n;
}

static int mma_opts(const gt_problem *p, const gt_mma_cfg *c, char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN],
                    const char *opts[GT_GEN_MAX_DEFS])
{
    int n = gt_mma_defines(p, c, defs);
    for (int i = 0; i < n; i++)
        opts[i] = defs[i];
    return n;
}

int gt_cuda_gen_mma_sm(const gt_bk_ctx *ctx, const gt_mma_cfg *c)
{
    return c->inst == GT_MMA_INST_WGMMA ? ctx->sm | GT_CU_SM_A : ctx->sm;
}

/* A config of p's family, parsed and passed by the enumeration's rules
 * (not its rank cap: a config from outside the enumeration, run option
 * "candidates", gets the same rules), as build and prefetch take it. 0, or
 * -1 with err naming the rule. */
static int mma_cfg_for(const gt_problem *p, const gt_gen_dev *d, const cJSON *cfg, gt_mma_cfg *c, char *err,
                       size_t errlen)
{
    char why[GT_GEN_REASON];
    if (gt_mma_cfg_from_json(cfg, c, err, errlen) != 0)
        return -1;
    if (gt_mma_applicable(p, d, why, sizeof why) != 0 || gt_mma_check(p, d, c, why, sizeof why) != 0) {
        snprintf(err, errlen, "mma: not for this problem: %s", why);
        return -1;
    }
    return 0;
}

static int gemv_cfg_for(const gt_problem *p, const gt_gen_dev *d, const cJSON *cfg, gt_gen_cfg *c, char *err,
                        size_t errlen)
{
    char why[GT_GEN_REASON];
    if (gt_gen_cfg_from_json(cfg, c, err, errlen) != 0)
        return -1;
    if (gt_gen_applicable(p, d, why, sizeof why) != 0 || gt_gen_check(p, d, c, why, sizeof why) != 0) {
        snprintf(err, errlen, "gemv: not for this problem: %s", why);
        return -1;
    }
    return 0;
}

/* Starts the background compiles of the kept configs of p (behind those
 * queued before: problems to come). */
static void precompile(gt_bk_ctx *ctx, const gt_problem *p, const gt_gen_space *s, const gt_mma_space *ms)
{
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN], err[256];
    const char *opts[GT_GEN_MAX_DEFS];
    gt_cuda_gen_ctx *g = gctx(ctx, err, sizeof err);
    if (!g)
        return; /* the builds say why */
    /* alternately, as enumerate lists them, so a small budget finds both ready */
    for (int i = 0; i < s->nkeep || i < ms->nkeep; i++) {
        int n = i < s->nkeep ? gemv_image_opts(g, p, &s->keep[i], defs, opts, err, sizeof err) : 0;
        if (n > 0)
            (void)gt_cu_cache_request(gt_gen_gemv_src, "gt_gemv", opts, n, ctx->sm, 1, NULL);
        n = i < ms->nkeep ? mma_opts(p, &ms->keep[i], defs, opts) : 0;
        if (n > 0)
            (void)gt_cu_cache_request(gt_mma_src_of(&ms->keep[i]), "gt_mma", opts, n,
                                      gt_cuda_gen_mma_sm(ctx, &ms->keep[i]), 1, NULL);
    }
}

void gt_cuda_gen_prefetch(gt_bk_prob *pp, const cJSON *cands)
{
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN], err[256];
    const char *opts[GT_GEN_MAX_DEFS];
    gt_bk_ctx *ctx = pp->ctx;
    gt_gen_dev d;
    gt_cuda_gen_ctx *g = gctx(ctx, err, sizeof err);
    if (!g || !cJSON_IsArray(cands) || gt_cuda_gen_device(ctx, &d, err, sizeof err) != 0)
        return;
    /* last first: each goes to the queue's head, so the job's first
     * candidate is compiled first, as its builds will ask */
    for (int i = cJSON_GetArraySize(cands) - 1; i >= 0; i--) {
        const cJSON *cfg = cJSON_GetArrayItem(cands, i);
        int fam = gt_gen_family(cfg), n = -1;
        if (fam == GT_FAM_MMA) {
            gt_mma_cfg c;
            if (mma_cfg_for(&pp->p, &d, cfg, &c, err, sizeof err) != 0 ||
                (n = mma_opts(&pp->p, &c, defs, opts)) < 0)
                continue; /* its build says why */
            (void)gt_cu_cache_request(gt_mma_src_of(&c), "gt_mma", opts, n, gt_cuda_gen_mma_sm(ctx, &c),
                                      GT_CU_URGENT, NULL);
        } else if (fam == GT_FAM_GEMV) {
            gt_gen_cfg c;
            if (gemv_cfg_for(&pp->p, &d, cfg, &c, err, sizeof err) != 0 ||
                (n = gemv_image_opts(g, &pp->p, &c, defs, opts, err, sizeof err)) < 0)
                continue;
            (void)gt_cu_cache_request(gt_gen_gemv_src, "gt_gemv", opts, n, ctx->sm, GT_CU_URGENT, NULL);
        }
    }
}

/* Both families' spaces for p (empty where a cap turns one off). */
static int space_of(gt_bk_ctx *ctx, const gt_problem *p, gt_gen_space *s, gt_mma_space *ms, char *err,
                    size_t errlen)
{
    gt_gen_dev d;
    memset(s, 0, sizeof *s);
    memset(ms, 0, sizeof *ms);
    int cap = gen_cap(), mcap = mma_cap();
    if (cap == 0) {
        snprintf(s->why, sizeof s->why, "GT_CUDA_GEN_MAX=0: generated families off");
        snprintf(ms->why, sizeof ms->why, "GT_CUDA_GEN_MAX=0: generated families off");
        return 0;
    }
    if (gt_cuda_gen_device(ctx, &d, err, errlen) != 0)
        return -1;
    if (gt_gen_prune_kept(p, &d, cap, s) != 0) {
        snprintf(err, errlen, "cuda: out of host memory pruning the gemv family");
        return -1;
    }
    if (mcap == 0) {
        snprintf(ms->why, sizeof ms->why, "GT_CUDA_MMA_MAX=0: the mma family is off");
        return 0;
    }
    if (gt_mma_prune_kept(p, &d, mcap, ms) != 0) {
        gt_gen_space_free(s);
        snprintf(err, errlen, "cuda: out of host memory pruning the mma family");
        return -1;
    }
    return 0;
}

int gt_cuda_gen_enumerate(gt_bk_ctx *ctx, const gt_problem *p, cJSON **arr, int *pruned, char *err,
                          size_t errlen)
{
    gt_gen_space s;
    gt_mma_space ms;
    *arr = NULL;
    *pruned = 0;
    if (space_of(ctx, p, &s, &ms, err, errlen) != 0)
        return -1;
    /* the families alternate, each best first, so that the coordinator's
     * first `budget` entries hold the best guesses of each (the cutlass family's kernels
     * are built ahead of time: nothing to precompile) */
    gt_cu_cutlass_space *cs = malloc(sizeof *cs);
    if (!cs) {
        gt_gen_space_free(&s);
        gt_mma_space_free(&ms);
        snprintf(err, errlen, "cuda: out of host memory");
        return -1;
    }
    (void)gt_cuda_cutlass_space(ctx, p, cutlass_cap(), cs); /* empty where it has none */
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && (i < s.nkeep || i < ms.nkeep || i < cs->n); i++)
        for (int f = 0; a && f < 3; f++) {
            if (i >= (f == 0 ? s.nkeep : f == 1 ? ms.nkeep : cs->n))
                continue;
            cJSON *j = f == 0   ? gt_gen_cfg_to_json(&s.keep[i])
                       : f == 1 ? gt_mma_cfg_to_json(&ms.keep[i])
                                : gt_cu_cutlass_cfg_to_json(&cs->cfg[i]);
            if (!j || !cJSON_AddItemToArray(a, j)) {
                cJSON_Delete(j);
                cJSON_Delete(a);
                a = NULL;
            }
        }
    if (!a) {
        gt_gen_space_free(&s);
        gt_mma_space_free(&ms);
        free(cs);
        snprintf(err, errlen, "cuda: out of host memory");
        return -1;
    }
    precompile(ctx, p, &s, &ms);
    *pruned = s.npruned + ms.npruned + cs->pruned + cs->refused;
    gt_gen_space_free(&s);
    gt_mma_space_free(&ms);
    free(cs);
    *arr = a;
    return 0;
}

void gt_cuda_gen_prepare(gt_bk_prob *pp)
{
    char err[256];
    gt_gen_space s;
    gt_mma_space ms;
    pp->gen = calloc(1, sizeof *pp->gen);
    if (pp->gen && !pp->ctx->warming && space_of(pp->ctx, &pp->p, &s, &ms, err, sizeof err) == 0) {
        precompile(pp->ctx, &pp->p, &s, &ms);
        gt_gen_space_free(&s);
        gt_mma_space_free(&ms);
    }
}

void gt_cuda_gen_unprepare(gt_bk_prob *pp)
{
    if (!pp->gen)
        return;
    if (pp->gen->ws)
        (void)cudaFree(pp->gen->ws);
    if (pp->gen->cnt)
        (void)cudaFree(pp->gen->cnt);
    if (pp->gen->scratch)
        (void)cudaFree(pp->gen->scratch);
    free(pp->gen);
    pp->gen = NULL;
}

/* The loaded module of an image (loaded on the calling thread, once per
 * context). dyn: the dynamic shared memory the main kernel launches with
 * (a key fixes the config, hence the size); above 48 KiB, static and
 * dynamic together, the kernel must opt in: it always does, once. */
static const gen_mod *module(gt_cuda_gen_ctx *g, uint64_t key, const gt_cu_image *img,
                             const char *fn, const char *fin, size_t dyn, char *err, size_t errlen)
{
    for (int i = 0; i < g->nmods; i++)
        if (g->mods[i]->key == key)
            return g->mods[i];
    if (g->nmods == g->capmods) {
        int cap = g->capmods ? 2 * g->capmods : 64;
        gen_mod **v = realloc(g->mods, (size_t)cap * sizeof *v);
        if (!v) {
            snprintf(err, errlen, "cuda: out of host memory");
            return NULL;
        }
        g->mods = v;
        g->capmods = cap;
    }
    gen_mod *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "cuda: out of host memory");
        return NULL;
    }
    m->key = key;
    const char *const names[2] = {fn, fin};
    const size_t dyns[2] = {dyn, 0};
    CUfunction fns[2] = {NULL, NULL};
    if (gt_cu_module_load(g->drv, img->data, img->cubin, fin ? 2 : 1, names, dyns, &m->mod, fns, err,
                          errlen) != 0) {
        free(m);
        return NULL;
    }
    m->fn = fns[0];
    m->fin = fns[1];
    /* informative (the candidate's info): an unknown attribute stays 0 */
    (void)g->drv->func_get_attribute(&m->regs, CU_FUNC_ATTRIBUTE_NUM_REGS, m->fn);
    (void)g->drv->func_get_attribute(&m->local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, m->fn);
    (void)g->drv->func_get_attribute(&m->smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, m->fn);
    g->mods[g->nmods++] = m;
    return m;
}

/* Grows the problem's workspaces to the candidate's need (once per problem
 * and size, never per call: "atomic" kernels leave theirs zeroed). */
static int workspace(gt_bk_prob *pp, int reduction, const gt_gen_geom *geo, char *err, size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    struct gt_cuda_gen_prob *w = pp->gen;
    if (!w) {
        snprintf(err, errlen, "cuda: problem prepared without generated-kernel state");
        return -1;
    }
    if (reduction == GT_GEN_RED_TWOPASS) {
        if (geo->ws_bytes > w->scratch_bytes) {
            if (w->scratch)
                (void)cudaFree(w->scratch);
            w->scratch = NULL;
            w->scratch_bytes = 0;
            if (gt_cuda_ck(ctx, cudaMalloc(&w->scratch, geo->ws_bytes), "cudaMalloc(gemv slices)", err, errlen))
                return -1;
            w->scratch_bytes = geo->ws_bytes;
        }
        return 0;
    }
    if (geo->ws_bytes > w->ws_bytes) {
        if (w->ws)
            (void)cudaFree(w->ws);
        w->ws = NULL;
        w->ws_bytes = 0;
        if (gt_cuda_ck(ctx, cudaMalloc(&w->ws, geo->ws_bytes), "cudaMalloc(gemv workspace)", err, errlen) ||
            gt_cuda_ck(ctx, cudaMemset(w->ws, 0, geo->ws_bytes), "cudaMemset(gemv workspace)", err, errlen))
            return -1;
        w->ws_bytes = geo->ws_bytes;
    }
    if (geo->cnt_bytes > w->cnt_bytes) {
        if (w->cnt)
            (void)cudaFree(w->cnt);
        w->cnt = NULL;
        w->cnt_bytes = 0;
        if (gt_cuda_ck(ctx, cudaMalloc(&w->cnt, geo->cnt_bytes), "cudaMalloc(gemv counters)", err, errlen) ||
            gt_cuda_ck(ctx, cudaMemset(w->cnt, 0, geo->cnt_bytes), "cudaMemset(gemv counters)", err, errlen))
            return -1;
        w->cnt_bytes = geo->cnt_bytes;
    }
    return 0;
}

/* ---- build ------------------------------------------------------------------------------ */

static int build_image(gt_bk_ctx *ctx, gt_cuda_gen_cand *gc, const char *src, const char *fn,
                       const char *fin, const char *const *opts, int nopts, size_t dyn, int sm, char *err,
                       size_t errlen)
{
    gt_cuda_gen_ctx *g = gctx(ctx, err, errlen);
    int hit = 0;
    const gt_cu_image *img = NULL;
    if (!g)
        return -1;
    gt_cu_entry *e = gt_cu_cache_request(src, fn, opts, nopts, sm, 0, &hit);
    if (!e) {
        snprintf(err, errlen, "cuda: out of host memory");
        return -1;
    }
    if (gt_cu_cache_wait(e, &img, err, errlen) != 0)
        return -1;
    gc->compile_ms = img->compile_ms;
    gc->cache = hit ? 2 : img->origin == GT_CU_FROM_DISK ? 1 : 0;
    gc->spill_st = img->spill_stores;
    gc->spill_ld = img->spill_loads;
    gc->m = module(g, gt_cu_cache_key(e), img, fn, fin, dyn, err, errlen);
    return gc->m ? 0 : -1;
}

/* An "mma" config: the same rules as enumeration (not the cap), then the
 * image, the module with its dynamic shared memory, the workspace. */
static int build_mma(gt_bk_prob *pp, const cJSON *cfg, gt_cuda_gen_cand *gc, char *err, size_t errlen)
{
    gt_gen_dev d;
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
    const char *opts[GT_GEN_MAX_DEFS];
    if (gt_cuda_gen_device(pp->ctx, &d, err, errlen) != 0 || mma_cfg_for(&pp->p, &d, cfg, &gc->mcfg, err, errlen) != 0)
        return -1;
    gt_mma_geometry(&pp->p, &gc->mcfg, &gc->geom);
    int n = mma_opts(&pp->p, &gc->mcfg, defs, opts);
    if (n < 0) {
        snprintf(err, errlen, "mma: no encoding of this problem's types");
        return -1;
    }
    gc->ntmaps = gt_mma_tmaps(&pp->p, &gc->mcfg, gc->tm);
    if (gc->ntmaps && !pp->ctx->gen->drv->tensor_map_encode_tiled) {
        snprintf(err, errlen, "mma: inst wgmma needs the driver's cuTensorMapEncodeTiled (CUDA 12 or newer)");
        return -1;
    }
    if (gc->ntmaps && !(gc->sets = calloc(GEN_TMAP_SETS, sizeof *gc->sets))) {
        snprintf(err, errlen, "cuda: out of host memory");
        return -1;
    }
    if (build_image(pp->ctx, gc, gt_mma_src_of(&gc->mcfg), "gt_mma", "gt_mma_fin", opts, n, gc->geom.smem_bytes,
                    gt_cuda_gen_mma_sm(pp->ctx, &gc->mcfg), err, errlen) != 0 ||
        workspace(pp, gc->mcfg.reduction, &gc->geom, err, errlen) != 0)
        return -1;
    return 0;
}

int gt_cuda_gen_build(gt_bk_prob *pp, const cJSON *cfg, int family, gt_bk_cand *c, char *err,
                      size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    double t0 = gt_mono_ms();
    gt_cuda_gen_cand *gc = calloc(1, sizeof *gc);
    if (!gc) {
        snprintf(err, errlen, "cuda: out of host memory");
        return -1;
    }
    gc->family = family;
    int rc = -1;
    if (family == GT_FAM_FAULT) {
        if (gt_gen_fault_from_json(cfg, &gc->fault, err, errlen) != 0 ||
            build_image(ctx, gc, gt_gen_fault_src, gc->fault == GT_FAULT_OOB ? "gt_fault_oob" : "gt_fault_hang",
                        NULL, NULL, 0, 0, ctx->sm, err, errlen) != 0)
            goto out;
        gt_cuda_gen_ctx *g = ctx->gen;
        if (!g->flag && (gt_cuda_ck(ctx, cudaMalloc(&g->flag, 256), "cudaMalloc(flag)", err, errlen) ||
                         gt_cuda_ck(ctx, cudaMemset(g->flag, 0, 256), "cudaMemset(flag)", err, errlen)))
            goto out;
        rc = 0;
        goto out;
    }
    gt_gen_dev d;
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
    const char *opts[GT_GEN_MAX_DEFS];
    if (family == GT_FAM_MMA) {
        rc = build_mma(pp, cfg, gc, err, errlen);
        goto out;
    }
    if (family == GT_FAM_CUTLASS) {
        rc = gt_cuda_cutlass_build(pp, cfg, &gc->cl, err, errlen);
        goto out;
    }
    if (gt_cuda_gen_device(ctx, &d, err, errlen) != 0 || gemv_cfg_for(&pp->p, &d, cfg, &gc->cfg, err, errlen) != 0)
        goto out;
    gt_gen_geometry(&pp->p, &gc->cfg, 32, &gc->geom);
    gt_cuda_gen_ctx *g = gctx(ctx, err, errlen);
    if (!g)
        goto out;
    int n = gemv_image_opts(g, &pp->p, &gc->cfg, defs, opts, err, errlen);
    if (n < 0)
        goto out;
    gc->nochain = g->nochain;
    if (build_image(ctx, gc, gt_gen_gemv_src, "gt_gemv", "gt_gemv_fin", opts, n, 0, ctx->sm, err, errlen) != 0 ||
        workspace(pp, gc->cfg.reduction, &gc->geom, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    gc->build_ms = gt_mono_ms() - t0;
    if (rc != 0) {
        free(gc->sets);
        free(gc);
        return -1;
    }
    c->gen = gc;
    return 0;
}

void gt_cuda_gen_release(gt_bk_cand *c)
{
    if (c->gen) {
        free(c->gen->sets);
        gt_cuda_cutlass_release(c->gen->cl);
    }
    free(c->gen); /* modules stay loaded for the context: the next build of the key is free */
    c->gen = NULL;
}

/* ---- run ----------------------------------------------------------------------------------- */

/* The tensor maps of the set's A, B and D (wgmma), encoded on first use. */
static const gen_tmaps *tmaps_of(gt_cuda_gen_ctx *g, gt_cuda_gen_cand *gc, const void *a,
                                 const void *b, const void *d, char *err, size_t errlen)
{
    for (int i = 0; i < gc->nsets; i++)
        if (gc->sets[i].a == a && gc->sets[i].b == b && gc->sets[i].d == d)
            return &gc->sets[i];
    /* more sets than slots (never in one run: the sets are few): reuse the last */
    gen_tmaps *t = &gc->sets[gc->nsets < GEN_TMAP_SETS ? gc->nsets++ : GEN_TMAP_SETS - 1];
    t->a = t->b = t->d = NULL;
    for (int i = 0; i < gc->ntmaps; i++) {
        const void *base = gt_mma_tmap_base(&gc->tm[i], a, b, d);
        if (gt_cu_tmap_encode(g->drv, &gc->tm[i], base, &t->t[i], err, errlen) != 0) {
            if (t == &gc->sets[gc->nsets - 1])
                gc->nsets--;
            return NULL;
        }
    }
    t->a = a, t->b = b, t->d = d;
    return t;
}

int gt_cuda_gen_run(gt_bk_prob *pp, gt_bk_cand *c, const gt_cuda_set *s, char *err, size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    gt_cuda_gen_ctx *g = ctx->gen;
    gt_cuda_gen_cand *gc = c->gen;
    CUstream st = (CUstream)ctx->stream;
    static const unsigned one[3] = {1, 1, 1};
    if (gc->family == GT_FAM_CUTLASS)
        return gt_cuda_cutlass_run(pp, gc->cl, s, err, errlen);
    if (gc->family == GT_FAM_FAULT) {
        long long off = 1LL << 37; /* 1 TiB past D, in 8-byte words */
        void *d = s->d, *f = g->flag;
        void *oob[] = {&d, &off}, *hang[] = {&f};
        return gt_cu_launch(g->drv, gc->m->fn, one, one, 0, st, gc->fault == GT_FAULT_OOB ? oob : hang,
                            0, "launch fault kernel", err, errlen);
    }
    const gt_problem *p = &pp->p;
    int batched = p->batch > 1, mma = gc->family == GT_FAM_MMA;
    int red = mma ? gc->mcfg.reduction : gc->cfg.reduction;
    gt_gen_args a = {
        .a = s->a, .b = s->b, .c = s->c, .bias = pp->bias, .d = s->d,
        .ws = red == GT_GEN_RED_TWOPASS ? pp->gen->scratch : pp->gen->ws,
        .cnt = pp->gen->cnt,
        .m = p->m, .n = p->n, .k = p->k, .lda = p->lda, .ldb = p->ldb, .ldc = p->ldc,
        .ldd = p->ldd, .sa = batched ? p->stride_a : 0, .sb = batched ? p->stride_b : 0,
        .sc = batched ? p->stride_c : 0, .sd = batched ? p->stride_d : 0,
        .kper = gc->geom.kper, .alpha = p->alpha, .beta = p->beta,
        /* fp8: the scales cuBLASLt's candidates read too (read only by a
         * kernel whose struct declares them) */
        .scale_a = pp->scales, .scale_b = pp->scales + GT_CUDA_SCALE_SLOT,
    };
    void *args[1 + GT_MMA_MAX_TMAPS] = {&a};
    if (gc->ntmaps) {
        const gen_tmaps *t = tmaps_of(g, gc, s->a, s->b, s->d, err, errlen);
        if (!t)
            return -1;
        for (int i = 0; i < gc->ntmaps; i++)
            args[1 + i] = (void *)&t->t[i];
    }
    const gt_gen_geom *geo = &gc->geom;
    const char *what = mma ? "launch gt_mma" : "launch gt_gemv";
    const unsigned grid[3] = {geo->gx, geo->gy, geo->gz}, block[3] = {geo->threads, 1, 1};
    /* chained: programmatic dependent launch, the kernel may start before
     * the one before it ends; it waits (griddepcontrol.wait) before it
     * reads B, C or bias or writes anything (the fin kernel launches
     * plainly). gemv's shared memory is static; mma's is dynamic. */
    int chained = g->chain && !mma && !gc->nochain;
    if (gt_cu_launch(g->drv, gc->m->fn, grid, block, mma ? (unsigned)geo->smem_bytes : 0, st, args,
                     chained, what, err, errlen) != 0)
        return -1;
    if (geo->fin_blocks) {
        long long nbatch = p->batch;
        void *fargs[] = {&a, &nbatch};
        const unsigned fgrid[3] = {geo->fin_blocks, 1, 1}, fblock[3] = {256, 1, 1};
        return gt_cu_launch(g->drv, gc->m->fin, fgrid, fblock, 0, st, fargs, 0, what, err, errlen);
    }
    return 0;
}

int gt_cuda_gen_validate(gt_bk_prob *pp, gt_bk_cand *c, double *rel_err, char *err, size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    *rel_err = 0.0 / 0.0;
    if (gt_cuda_alive(ctx, err, errlen) != 0)
        return -1;
    int poison = (pp->map.dkt == GT_CU_KT_I8 || pp->map.dkt == GT_CU_KT_I32) ? 0x80 : 0xff;
    if (gt_cuda_ck(ctx, cudaMemsetAsync(pp->val.d, poison, pp->d_sz, ctx->stream), "poison D", err,
                   errlen) ||
        gt_cuda_check_mark(pp, 0, err, errlen) || gt_cuda_gen_run(pp, c, &pp->val, err, errlen) ||
        gt_cuda_check_mark(pp, 1, err, errlen) || gt_cuda_check(pp, rel_err, err, errlen))
        return -1;
    c->check_us = gt_cuda_check_us(pp);
    return 0;
}

int gt_cuda_gen_set_chain(gt_bk_ctx *ctx, int on, char *err, size_t errlen)
{
    gt_cuda_gen_ctx *g = gctx(ctx, err, errlen);
    if (!g)
        return -1;
    if (on && ctx->sm < 90) {
        snprintf(err, errlen, "cuda: chained launch needs sm_90 or newer (griddepcontrol); this device is sm_%d",
                 ctx->sm);
        return -1;
    }
    if (on && !g->drv->launch_kernel_ex) {
        snprintf(err, errlen, "cuda: chained launch needs the driver's cuLaunchKernelEx (CUDA 12 or newer)");
        return -1;
    }
    g->chain = on != 0;
    return 0;
}

int gt_cuda_gen_set_nochain(gt_bk_ctx *ctx, int on)
{
    char err[160];
    gt_cuda_gen_ctx *g = gctx(ctx, err, sizeof err);
    if (!g)
        return -1;
    g->nochain = on != 0;
    return 0;
}

/* The producer kernel of the chained check, loaded once per context. */
static CUfunction producer_fn(gt_bk_ctx *ctx, char *err, size_t errlen)
{
    gt_cuda_gen_ctx *g = ctx->gen;
    const gt_cu_image *img = NULL;
    int hit = 0;
    gt_cu_entry *e = gt_cu_cache_request(gt_gen_fault_src, "gt_chain_producer", NULL, 0, ctx->sm, 0, &hit);
    if (!e) {
        snprintf(err, errlen, "cuda: out of host memory");
        return NULL;
    }
    if (gt_cu_cache_wait(e, &img, err, errlen) != 0)
        return NULL;
    const gen_mod *m = module(g, gt_cu_cache_key(e), img, "gt_chain_producer", NULL, 0, err, errlen);
    return m ? m->fn : NULL;
}

int gt_cuda_gen_validate_chained(gt_bk_prob *pp, gt_bk_cand *c, double *rel_err, char *err, size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    gt_cuda_gen_ctx *g = ctx->gen;
    void *save = NULL;
    int rc = -1;
    *rel_err = 0.0 / 0.0;
    if (!c->gen || c->gen->family != GT_FAM_GEMV || c->gen->nochain) {
        snprintf(err, errlen, "cuda: only gemv kernels built for it launch chained");
        return -1;
    }
    if (gt_cuda_alive(ctx, err, errlen) != 0 || gt_cuda_gen_set_chain(ctx, 1, err, errlen) != 0)
        return -1;
    CUfunction pf = producer_fn(ctx, err, errlen);
    if (!pf)
        goto out;
    /* B poisoned (0xffff: NaN in bf16 and f16), then restored by a producer
     * that lets the gemv launch at once and writes 50 us later: a gemv that
     * read B before its wait would see NaN */
    unsigned *dst = pp->val.b;
    long long words = (long long)(pp->b_sz / 4), ns = 50000;
    int poison = (pp->map.dkt == GT_CU_KT_I8 || pp->map.dkt == GT_CU_KT_I32) ? 0x80 : 0xff;
    if (gt_cuda_ck(ctx, cudaMalloc(&save, pp->b_sz), "cudaMalloc(B copy)", err, errlen) ||
        gt_cuda_ck(ctx, cudaMemcpyAsync(save, pp->val.b, pp->b_sz, cudaMemcpyDeviceToDevice, ctx->stream),
                   "copy B", err, errlen) ||
        gt_cuda_ck(ctx, cudaMemsetAsync(pp->val.b, 0xff, pp->b_sz, ctx->stream), "poison B", err, errlen) ||
        gt_cuda_ck(ctx, cudaMemsetAsync(pp->val.d, poison, pp->d_sz, ctx->stream), "poison D", err, errlen))
        goto out;
    const unsigned *src = save;
    void *pargs[] = {&dst, &src, &words, &ns};
    const unsigned pgrid[3] = {(unsigned)(ctx->sms > 0 ? ctx->sms : 1), 1, 1}, pblock[3] = {256, 1, 1};
    if (gt_cu_launch(g->drv, pf, pgrid, pblock, 0, (CUstream)ctx->stream, pargs, 0,
                     "launch gt_chain_producer", err, errlen) != 0 ||
        gt_cuda_gen_run(pp, c, &pp->val, err, errlen) != 0)
        goto out;
    rc = gt_cuda_check(pp, rel_err, err, errlen);
out:
    (void)gt_cuda_gen_set_chain(ctx, 0, NULL, 0);
    if (save && (gt_cuda_ck(ctx, cudaStreamSynchronize(ctx->stream), "synchronize", err, errlen) ||
                 gt_cuda_ck(ctx, cudaFree(save), "cudaFree(B copy)", err, errlen)))
        rc = -1;
    return rc;
}

int gt_cuda_gen_chain_begin(gt_bk_prob *pp, gt_bk_cand *c, char *err, size_t errlen)
{
    gt_cuda_gen_cand *gc = c->gen;
    gt_cuda_gen_ctx *g = pp->ctx->gen;
    if (!gc || gc->family != GT_FAM_GEMV || gc->nochain || pp->ctx->sm < 90 || !g ||
        !g->drv->launch_kernel_ex)
        return 0;
    if (!gc->chain_ok) {
        double e = NAN;
        if (gt_cuda_gen_validate_chained(pp, c, &e, err, errlen) != 0)
            return -1;
        if (!(e <= gt_bk_tolerance(&pp->p))) {
            snprintf(err, errlen, "chained launch: result wrong (rel err %.3g, tolerance %.3g)", e,
                     gt_bk_tolerance(&pp->p));
            return -1;
        }
        gc->chain_ok = 1;
    }
    if (gt_cuda_gen_set_chain(pp->ctx, 1, err, errlen) != 0)
        return -1;
    gc->timed_chained = 1;
    return 1;
}

void gt_cuda_gen_chain_end(gt_bk_ctx *ctx)
{
    (void)gt_cuda_gen_set_chain(ctx, 0, NULL, 0);
}

cJSON *gt_cuda_gen_cand_info(const gt_bk_cand *c)
{
    const gt_cuda_gen_cand *gc = c ? c->gen : NULL;
    static const char *const origin[] = {"compiled", "disk", "memory"};
    if (!gc)
        return NULL;
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    if (gc->family == GT_FAM_CUTLASS) {
        /* prebuilt: no compile, module or registers of ours to report */
        cJSON_AddStringToObject(j, "family", "cutlass");
        cJSON_AddNumberToObject(j, "build_ms", gc->build_ms);
        gt_cuda_cutlass_info(gc->cl, j);
        return j;
    }
    cJSON_AddStringToObject(j, "family", gc->family == GT_FAM_FAULT ? "fault"
                                         : gc->family == GT_FAM_MMA ? "mma"
                                                                    : "gemv");
    cJSON_AddNumberToObject(j, "compile_ms", gc->compile_ms);
    cJSON_AddNumberToObject(j, "build_ms", gc->build_ms);
    cJSON_AddStringToObject(j, "cache", origin[gc->cache]);
    cJSON_AddNumberToObject(j, "registers", gc->m ? gc->m->regs : -1);
    cJSON_AddNumberToObject(j, "spill_bytes", gc->spill_st);
    cJSON_AddNumberToObject(j, "local_bytes", gc->m ? gc->m->local : -1);
    /* static shared memory of the module, plus the launch's dynamic bytes (mma) */
    cJSON_AddNumberToObject(j, "smem_bytes", gc->m ? gc->m->smem + (gc->family == GT_FAM_MMA ?
                                                                    (double)gc->geom.smem_bytes : 0) : -1);
    if (gc->family == GT_FAM_GEMV || gc->family == GT_FAM_MMA) {
        int grid[3] = {(int)gc->geom.gx, (int)gc->geom.gy, (int)gc->geom.gz};
        cJSON_AddItemToObject(j, "grid", cJSON_CreateIntArray(grid, 3));
        cJSON_AddNumberToObject(j, "threads", gc->geom.threads);
        cJSON_AddNumberToObject(j, "ws_bytes", (double)gc->geom.ws_bytes);
    }
    if (gc->timed_chained)
        cJSON_AddStringToObject(j, "launch", "chained");
    return j;
}
