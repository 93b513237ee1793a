/* cutlass_cfg.c: the "cutlass" family's configurations (gt_cu_cutlass.h): which problems
 * its kernels run, a config as JSON, a problem + config as the library's arguments, and the
 * family's space for a problem (ranking model and knobs). Host only: the worker enumerates,
 * builds and runs with it, libgemmtune's plan maps a stored winner with it, so the call
 * applied is the call that was timed.
 *
 * A config names a kernel of libgemmtune_cutlass by its name (positions in the library's
 * table may change between builds, names do not) and the tile scheduler's knobs:
 *   {"family":"cutlass","kernel":"coop_256x128_c1x2","raster":2,"splits":1,"swizzle":1}
 * (keys sorted: this is the canonical text, the one a result is stored and hashed by). */
#include "gt_cu_cutlass.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gt_cu_cutlass_fits(const gt_problem *p, char *err, size_t errlen)
{
    const char *why = NULL;
    if (p->trans_a != 'T' || p->trans_b != 'N')
        why = "its kernels are TN (op(A) = A^T, B as stored: a Linear layer's GEMM)";
    else if (p->a_type != GT_DT_BF16 || p->b_type != GT_DT_BF16 || p->d_type != GT_DT_BF16 ||
             p->c_type != GT_DT_BF16)
        why = "its kernels are bf16 (A, B, C and D)";
    else if (p->compute_type != GT_DT_F32 || p->scale_type != GT_DT_F32)
        why = "its kernels accumulate and scale in f32";
    else if (p->batch != 1)
        why = "its kernels are not batched";
    else if (p->beta != 0)
        why = "its kernels do not read C (beta must be 0)";
    else if (p->bias || (p->activation[0] && strcmp(p->activation, "none") != 0))
        why = "its kernels have no bias or activation epilogue";
    else if (gt_problem_scale(p, 'a') != GT_SCALE_NONE || gt_problem_scale(p, 'b') != GT_SCALE_NONE)
        why = "its kernels take no operand scales";
    else if (p->m > 0x7fffffff || p->n > 0x7fffffff || p->k > 0x7fffffff)
        why = "a size above 2^31-1";
    else if (p->ldd != p->ldc)
        why = "C and D with different leading dimensions";
    if (!why)
        return 0;
    snprintf(err, errlen, "cutlass: %s", why);
    return -1;
}

cJSON *gt_cu_cutlass_cfg_to_json(const gt_cu_cutlass_cfg *c)
{
    cJSON *j = cJSON_CreateObject();
    if (!j || !cJSON_AddStringToObject(j, "family", "cutlass") || !cJSON_AddStringToObject(j, "kernel", c->kernel) ||
        !cJSON_AddNumberToObject(j, "raster", c->raster) || !cJSON_AddNumberToObject(j, "splits", c->splits) ||
        !cJSON_AddNumberToObject(j, "swizzle", c->swizzle)) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

/* An integer member in [lo, hi]; -1 with the field named when missing or out of range. */
static int int_of(const cJSON *j, const char *name, int lo, int hi, int *out, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi) {
        snprintf(err, errlen, "cutlass config: \"%s\" must be an integer in %d..%d", name, lo, hi);
        return -1;
    }
    *out = (int)v->valuedouble;
    return 0;
}

int gt_cu_cutlass_cfg_from_json(const cJSON *j, gt_cu_cutlass_cfg *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    const cJSON *f = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "family") : NULL;
    const cJSON *k = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "kernel") : NULL;
    if (!cJSON_IsString(f) || strcmp(f->valuestring, "cutlass") != 0) {
        snprintf(err, errlen, "cutlass config: \"family\" must be \"cutlass\"");
        return -1;
    }
    if (!cJSON_IsString(k) || !k->valuestring[0] || strlen(k->valuestring) >= sizeof c->kernel) {
        snprintf(err, errlen, "cutlass config: \"kernel\" must name a kernel (under %zu characters)",
                 sizeof c->kernel);
        return -1;
    }
    snprintf(c->kernel, sizeof c->kernel, "%s", k->valuestring);
    /* the ranges the library takes; its check says which value a kernel refuses */
    if (int_of(j, "swizzle", 1, 8, &c->swizzle, err, errlen) || int_of(j, "raster", 0, 2, &c->raster, err, errlen) ||
        int_of(j, "splits", 1, 16, &c->splits, err, errlen))
        return -1;
    return 0;
}

int gt_cu_cutlass_args_for(const gt_problem *p, const gt_cu_cutlass_cfg *c, int sms, gt_cutlass_args *a,
                           char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    if (gt_cu_cutlass_fits(p, err, errlen) != 0)
        return -1;
    a->m = (int)p->m;
    a->n = (int)p->n;
    a->k = (int)p->k;
    a->lda = p->lda;
    a->ldb = p->ldb;
    a->ldd = p->ldd;
    a->alpha = (float)p->alpha;
    a->swizzle = c->swizzle;
    a->raster = c->raster;
    a->splits = c->splits;
    a->sms = sms;
    return 0;
}

/* ---- the space --------------------------------------------------------------------- */

/* A kernel's relative cost for p on sms multiprocessors: a wave model. A persistent kernel
 * runs ceil(tiles / slots) waves of its tile (slots: the SMs its clusters fill); a stream-K
 * kernel spreads the tiles' k-iterations evenly (no last partial wave, a fixup's cost
 * instead). Each tile's cost is its area over what the tile shape reaches of the peak:
 * 128x128 tiles re-read more per flop (two consumer warpgroups on 64 rows each) and 64x256
 * has a narrow m; ping-pong keeps the tensor cores busier on one 128x128 tile than the
 * cooperative schedule. Calibrated on the H100 probe (bench/results/h100_39_cutlass_probe.txt:
 * at n = 2048 / 8192 the 256-wide tiles lead, 128x128 ping-pong at 0.93-0.97 of them,
 * cooperative 128x128 and 64x256 at 0.83-0.92; at n = 128 the 128-wide tiles lead, since a
 * 256-wide tile computes half empty). */
static double kernel_cost(const gt_cutlass_kernel *k, const gt_problem *p, int sms)
{
    double tm = k->tile_m, tn = k->tile_n;
    double tiles = ceil((double)p->m / tm) * ceil((double)p->n / tn);
    int cl = k->cluster_m * k->cluster_n > 0 ? k->cluster_m * k->cluster_n : 1;
    double slots = (double)(sms / cl * cl);
    double eff = 1.0;
    if (k->tile_m * k->tile_n <= 128 * 128)
        eff = strcmp(k->schedule, "pingpong") == 0 ? 0.95 : 0.89;
    else if (k->tile_m < 128)
        eff = 0.89;
    if (cl > 1)
        eff *= 1.01; /* TMA multicast halves one operand's L2 traffic */
    double tile = tm * tn * (double)p->k / eff;
    if (slots < 1)
        slots = 1;
    if (strcmp(k->scheduler, "streamk") == 0)
        return tiles * tile / slots * 1.04 + tile * 0.02; /* the fixup's partial-tile reduction */
    return ceil(tiles / slots) * tile;
}

typedef struct ranked {
    int index;
    double cost;
} ranked;

static int by_cost(const void *x, const void *y)
{
    const ranked *a = x, *b = y;
    return a->cost < b->cost ? -1 : a->cost > b->cost ? 1 : a->index - b->index;
}

/* Whether a stream-K kernel's tiles leave SMs idle on p: then split-K 2 and 4 are tried too. */
static int splits_help(const gt_cutlass_kernel *k, const gt_problem *p, int sms)
{
    double tiles = ceil((double)p->m / k->tile_m) * ceil((double)p->n / k->tile_n);
    return strcmp(k->scheduler, "streamk") == 0 && tiles < sms;
}

/* Appends kernel index at these knobs (base: the problem's arguments) when the library
 * accepts it; s->refused counts the others, s->why keeps the first refusal. */
static void push(const gt_cu_cutlass *lib, const gt_cutlass_args *base, int index, int swizzle, int raster,
                 int splits, gt_cu_cutlass_space *s, int cap)
{
    if (s->n >= cap || s->n >= GT_CU_CUTLASS_SPACE_MAX)
        return;
    gt_cu_cutlass_cfg c = {.swizzle = swizzle, .raster = raster, .splits = splits};
    gt_cutlass_args a = *base;
    char why[200];
    size_t ws = 0;
    snprintf(c.kernel, sizeof c.kernel, "%s", lib->kernel_at(index)->name);
    a.swizzle = swizzle, a.raster = raster, a.splits = splits;
    if (lib->check(index, &a, &ws, why, sizeof why)) {
        s->refused++;
        if (!s->why[0])
            snprintf(s->why, sizeof s->why, "%s: %s", c.kernel, why);
        return;
    }
    s->cfg[s->n++] = c;
}

int gt_cu_cutlass_space_for(const gt_cu_cutlass *lib, const gt_problem *p, int sms, int cap,
                            gt_cu_cutlass_space *s)
{
    memset(s, 0, sizeof *s);
    if (!lib->dl) {
        snprintf(s->why, sizeof s->why, "no libgemmtune_cutlass loaded");
        return 0;
    }
    if (gt_cu_cutlass_fits(p, s->why, sizeof s->why) != 0 || cap <= 0)
        return 0;
    /* its narrowest tile is 128 columns of n: below 64 most of every tile computes nothing,
     * where the gemv and mma families and cuBLASLt's small tiles are made for it */
    if (p->n < GT_CU_CUTLASS_MIN_N) {
        snprintf(s->why, sizeof s->why, "cutlass: n = %lld < %d: its tiles are 128 or 256 columns wide",
                 (long long)p->n, GT_CU_CUTLASS_MIN_N);
        return 0;
    }
    int nk = lib->count();
    ranked r[64];
    int nr = 0;
    for (int i = 0; i < nk && nr < (int)(sizeof r / sizeof r[0]); i++) {
        const gt_cutlass_kernel *k = lib->kernel_at(i);
        if (!k || strcmp(k->types, "bf16") != 0)
            continue;
        r[nr].index = i;
        r[nr].cost = kernel_cost(k, p, sms);
        nr++;
    }
    if (nr == 0)
        return 0;
    qsort(r, (size_t)nr, sizeof r[0], by_cost);
    /* Kernels past PRUNE_RATIO x the best one's cost are left out: at n = 128 the 256-wide
     * tiles ran at 0.35-0.55 of the 128-wide ones, never close. */
    const double PRUNE_RATIO = 1.6;
    int kept = 0;
    while (kept < nr && r[kept].cost <= r[0].cost * PRUNE_RATIO)
        kept++;
    /* what the kernels left out would have offered (the loops below) */
    for (int i = kept; i < nr; i++)
        s->pruned += 9 + 2 * splits_help(lib->kernel_at(r[i].index), p, sms);
    /* the problem's arguments once; each config only sets its knobs */
    gt_cu_cutlass_cfg defaults = {.swizzle = 1, .raster = 0, .splits = 1};
    gt_cutlass_args base;
    if (gt_cu_cutlass_args_for(p, &defaults, sms, &base, s->why, sizeof s->why) != 0)
        return 0;
    /* Every kept kernel first with the scheduler's own choices (swizzle 1, raster by its
     * heuristic), best guess first, so a small budget times every tile shape; then the knobs
     * of the best kernels: swizzle 2/4/8 and both rasters (the probe's winners used all of
     * them, worth 1-4 % per shape); a stream-K kernel whose tiles leave SMs idle also with
     * split-K 2 and 4. */
    for (int i = 0; i < kept; i++)
        push(lib, &base, r[i].index, 1, 0, 1, s, cap);
    for (int i = 0; i < kept; i++) {
        static const int sw[] = {1, 2, 4, 8};
        for (int ro = 1; ro <= 2; ro++)
            for (int w = 0; w < 4; w++)
                push(lib, &base, r[i].index, sw[w], ro, 1, s, cap);
        if (splits_help(lib->kernel_at(r[i].index), p, sms))
            for (int sp = 2; sp <= 4; sp += 2)
                push(lib, &base, r[i].index, 1, 0, sp, s, cap);
    }
    return 0;
}
