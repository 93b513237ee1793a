/* mma_space.c: the "mma" family's configs (JSON <-> struct, canonical text)
 * and its space for a problem: the raw cross product of the attribute values,
 * pruned by rules that each give their reason, ranked by a roofline model
 * and cut to a cap. Pure host C.
 *
 * Rules, in the order they are checked (the first that fails is the reason):
 *   shape      warp tile (bm/warps_m) x (bn/warps_n) a multiple of 16 x 16
 *              (one ldmatrix.x4 feeds a 16 x 16 A fragment and two n8 B
 *              fragments); splitk > 1 exactly when a reduction is named
 *   threads    warps_m * warps_n * 32 within the device's threads per block
 *   tile       bm (bn) not twice m (n) rounded up to 16 or more: the tile
 *              half the size covers the problem, the rest would be zero rows
 *   k tile     bk > 32 only when k > bk / 2 (else half of every stage is
 *              zeros); stages at most the k tiles per split + 1 (deeper
 *              stages are never filled)
 *   alignment  lda, ldb and the batch strides multiples of 16 bytes (8
 *              16-bit elements, 16 fp8 ones): every cp.async moves an
 *              aligned 16-byte chunk, the TMA's global strides too
 *   swizzle    > 1 only when it reorders something: more than `swizzle`
 *              tile rows and more than one tile column
 *   split-K    no empty split (each split gets >= 1 k tile); only when the
 *              grid without it has fewer CTAs than SMs, and only up to the
 *              first splitk that fills them (splitk/2 must not); batch x
 *              splitk within grid z (65535)
 *   resources  dynamic shared memory (stages x (bm + bn) x bk x 2 bytes)
 *              within the device's opt-in per-block limit; estimated
 *              registers within 255 per thread and one CTA's within the
 *              SM's register file
 *   latency    at least 4 warps resident per SM (with fewer, nothing hides
 *              the ldmatrix -> mma and cp.async latencies)
 *   workspace  split-K workspace within 256 MiB
 *   rank       beyond the cap of the model's ranking
 *
 * inst "wgmma" (gen/mma_wg_src.c; bm 64 or 128, bn 16 to 256: wgmma's n,
 * 16 and 32 for skinny problems; bk one 128-byte row: 64 16-bit values or
 * 128 fp8 ones) adds, first:
 *   inst       fp8 inputs only with wgmma (the applicability admits them on
 *              sm_90 only); the device is sm_90 (wgmma and the TMA are sm_90a
 *              features; nothing else runs the cubin), not HIP
 *   k tile     bk x the element size is 128 bytes
 *   tma        m, n, k and batch below 2^31 (tensor-map coordinates are
 *              32-bit); batch strides at least a whole matrix (a map's
 *              strides nest); the alignment rule above is also the TMA's
 *              (global strides multiples of 16 bytes)
 *   persist    ctas > 0 (a persistent grid) only with splitk 1 and more
 *              tiles than CTAs (else every CTA has one tile: nothing to
 *              loop over), and a CTA's ring iterations (its tiles x the k
 *              tiles) below 2^31, the kernel's int counters
 *   cluster    cluster 2 only with an even persistent grid and at least
 *              two tile rows (a cluster shares B between two of them)
 *   pingpong   only persistent, with bm 64 (warps_m 4: each consumer
 *              warpgroup's tile), bn 256, no cluster and 4 stages or more
 *              (the others measured slow), and at least two tiles per CTA
 *              (else one warpgroup has nothing to do)
 * and counts shared memory as stages x (bm + bn) x 128 bytes + 1024 (the
 * ring's 1024-byte alignment; + GT_MMA_WG_EPI_BYTES per warpgroup when
 * persistent), registers as bn / 2 accumulators + 40; the
 * epilogue's staging of the tile (bn x (bm + 16 bytes) elements of D) fits
 * in the ring for every encodable config with stages >= 3.
 * A k or m or n that is not a multiple of the tile needs no rule: the copies
 * zero-fill past the ends and only in-range elements of D are stored.
 *
 * On HIP (d->hip: gfx90a/gfx942, the template gt_gen_mma_hip_src) the same
 * rules with the HIP kernel's numbers (waves of 64, MFMA 16x16 blocks, LDS
 * double-buffered, tiles in flight in registers), and where it differs:
 *   threads    warps_m * warps_n * 64 (waves) within 1024
 *   alignment  also k a multiple of 8: the copy loads whole 16-byte chunks
 *              (buffer loads zero whole chunks past the rows or k, there is
 *              no partial zero-fill as cp.async's src-size)
 *   offsets    bm x lda and bn x ldb x 2 bytes below 2 GiB: buffer loads
 *              take 32-bit offsets from the panel's base
 *   resources  LDS (2 x (bm + bn) x bk x 2) within 64 KiB per workgroup;
 *              accumulators (wave tile / 64 per lane, AGPRs) within 256;
 *              the other VGPRs (estimate fitted to hipRTC, gt_mma_regs_for)
 *              within 256; VGPRs + AGPRs x threads within the CU's 4 x 512 x
 *              64 (gfx90a allocates both from one file of 512 per lane).
 *              This also keeps the loads in flight per lane ((stages - 1) x
 *              chunks, 4 VGPRs each) below vmcnt's 63
 *   latency    at least 4 waves resident per CU: one per SIMD, else MFMA
 *              units idle */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_mma.h"
#include "space_common.h"
#include "src_common.h"

/* ---- encoding ------------------------------------------------------------------ */

/* Integer attributes, sorted like the canonical text. */
static const gt_gen_int_attr k_int[] = {
    {"bk", 32, 128, offsetof(gt_mma_cfg, bk)},
    {"bm", 16, 256, offsetof(gt_mma_cfg, bm)},
    {"bn", 16, 256, offsetof(gt_mma_cfg, bn)},
    {"splitk", 1, 64, offsetof(gt_mma_cfg, splitk)},
    {"stages", 2, 16, offsetof(gt_mma_cfg, stages)},
    {"swizzle", 1, 64, offsetof(gt_mma_cfg, swizzle)},
    {"warps_m", 1, 8, offsetof(gt_mma_cfg, warps_m)},
    {"warps_n", 1, 8, offsetof(gt_mma_cfg, warps_n)},
};
#define NINT (sizeof k_int / sizeof k_int[0])

static const char *const k_red[] = {"none", "atomic", "twopass"};
static const char *const k_inst[] = {"sync", "wgmma"};

static int pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

/* A string attribute naming one of n values: its index into *out; -1 when
 * it is not one of them or was seen before. */
static int enum_attr(const cJSON *it, const char *const *names, int n, int *seen, int *out)
{
    int v = -1;
    for (int i = 0; i < n && cJSON_IsString(it); i++)
        if (!strcmp(it->valuestring, names[i]))
            v = i;
    if ((*seen)++ || v < 0)
        return -1;
    *out = v;
    return 0;
}

/* The grid's problem-free limits, which the parse and gt_mma_check (for
 * configs made in code) both apply: 0, or 1 (ctas) / 2 (cluster) / 3
 * (pingpong) with the reason, led by the key, into why. */
static int grid_reason(const gt_mma_cfg *c, char *why, size_t len)
{
    if (c->ctas > 0 && (c->inst != GT_MMA_INST_WGMMA || c->splitk != 1)) {
        snprintf(why, len, "ctas=%d: a persistent grid needs inst wgmma and splitk 1 (got %s, splitk %d)", c->ctas,
                 k_inst[c->inst], c->splitk);
        return 1;
    }
    if (c->cluster && (c->ctas <= 0 || c->ctas % 2)) {
        snprintf(why, len, "cluster=2: needs a persistent grid of an even number of CTAs (got ctas %d)", c->ctas);
        return 2;
    }
    if (c->pingpong && (c->ctas <= 0 || c->bm != 64 || c->warps_m != 4)) {
        snprintf(why, len,
                 "pingpong=1: needs a persistent grid and bm 64 with warps_m 4 "
                 "(got ctas %d, bm %d, warps_m %d)", c->ctas, c->bm, c->warps_m);
        return 3;
    }
    /* measured on the H200 (bench/results/h200_46_wgmma_pingpong.txt): with
     * bn 128 a warpgroup alone keeps too little math in flight (0.56-0.75
     * of cuBLASLt's default), in clusters of two the CTAs wait on each
     * other's turns (0.78-0.82), and a ring of 3 stages cannot fill the
     * next warpgroup's tile while this one finishes (0.62-0.70) */
    if (c->pingpong && (c->bn != 256 || c->cluster || c->stages < 4)) {
        snprintf(why, len,
                 "pingpong=1: needs bn 256, no cluster and 4 stages or more "
                 "(got bn %d, cluster %d, stages %d)", c->bn, c->cluster ? 2 : 1, c->stages);
        return 3;
    }
    return 0;
}

int gt_mma_cfg_from_json(const cJSON *j, gt_mma_cfg *c, char *err, size_t errlen)
{
    int seen_int[NINT] = {0}, seen_red = 0, seen_fam = 0, seen_inst = 0, seen_ctas = 0, seen_cl = 0,
        seen_pp = 0;
    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(j)) {
        snprintf(err, errlen, "mma: config is not a JSON object");
        return -1;
    }
    for (const cJSON *it = j->child; it; it = it->next) {
        const char *k = it->string ? it->string : "";
        if (!strcmp(k, "family")) {
            if (seen_fam++ || !cJSON_IsString(it) || strcmp(it->valuestring, "mma")) {
                snprintf(err, errlen, "mma: config family must be \"mma\", once");
                return -1;
            }
            continue;
        }
        if (!strcmp(k, "reduction")) {
            if (enum_attr(it, k_red, 3, &seen_red, &c->reduction) != 0) {
                snprintf(err, errlen, "mma: config reduction: must be one of none, atomic, twopass, once");
                return -1;
            }
            continue;
        }
        if (!strcmp(k, "inst")) {
            if (enum_attr(it, k_inst, 2, &seen_inst, &c->inst) != 0) {
                snprintf(err, errlen, "mma: config inst: must be \"sync\" or \"wgmma\", once");
                return -1;
            }
            continue;
        }
        /* optional like inst (0, a CTA per tile, when absent), so that the
         * configs stored before it existed parse and print as they did */
        if (!strcmp(k, "ctas")) {
            if (seen_ctas++ || !cJSON_IsNumber(it) || it->valuedouble != (double)(int)it->valuedouble ||
                it->valuedouble < 0 || it->valuedouble > GT_MMA_MAX_CTAS) {
                snprintf(err, errlen, "mma: config ctas: must be an integer 0 to %d, once", GT_MMA_MAX_CTAS);
                return -1;
            }
            c->ctas = (int)it->valuedouble;
            continue;
        }
        if (!strcmp(k, "cluster")) {
            if (seen_cl++ || !cJSON_IsNumber(it) || (it->valuedouble != 1 && it->valuedouble != 2)) {
                snprintf(err, errlen, "mma: config cluster: must be 1 or 2, once");
                return -1;
            }
            c->cluster = it->valuedouble == 2 ? 2 : 0;
            continue;
        }
        if (!strcmp(k, "pingpong")) {
            if (seen_pp++ || !cJSON_IsNumber(it) ||
                (it->valuedouble != 0 && it->valuedouble != 1)) {
                snprintf(err, errlen, "mma: config pingpong: must be 0 or 1, once");
                return -1;
            }
            c->pingpong = it->valuedouble == 1;
            continue;
        }
        if (gt_gen_int_attr_set("mma", k_int, NINT, seen_int, it, c, err, errlen) != 0)
            return -1;
    }
    if (gt_gen_int_attr_missing("mma", k_int, NINT, seen_int, err, errlen) != 0)
        return -1;
    if (!seen_red) {
        snprintf(err, errlen, "mma: config reduction: missing");
        return -1;
    }
    /* values the template cannot instantiate at all (problem-independent;
     * wgmma's bk 128, its fp8 row, is checked against the problem by
     * gt_mma_check) */
    if (c->inst == GT_MMA_INST_SYNC && c->bk != 32 && c->bk != 64) {
        snprintf(err, errlen, "mma: config bk=%d: must be 32 or 64", c->bk);
        return -1;
    }
    if (c->bm % 16 || c->bn % 16) {
        snprintf(err, errlen, "mma: config bm=%d, bn=%d: must be multiples of 16", c->bm, c->bn);
        return -1;
    }
    if (!pow2(c->warps_m) || !pow2(c->warps_n)) {
        snprintf(err, errlen, "mma: config warps_m=%d, warps_n=%d: must be 1, 2, 4 or 8", c->warps_m,
                 c->warps_n);
        return -1;
    }
    if (c->inst == GT_MMA_INST_SYNC && c->stages > 5) {
        snprintf(err, errlen, "mma: config stages=%d: inst sync takes 2 to 5", c->stages);
        return -1;
    }
    /* wgmma: one warpgroup (4 warps) per 64 rows, the whole bn per warpgroup
     * (wgmma's n), k tiles of one 128-byte swizzle row */
    if (c->inst == GT_MMA_INST_WGMMA &&
        ((c->bm != 64 && c->bm != 128) ||
         (c->bn != 16 && c->bn != 32 && c->bn != 64 && c->bn != 128 && c->bn != 256) ||
         (c->bk != 64 && c->bk != 128) || c->warps_m != c->bm / 16 || c->warps_n != 1 || c->stages < 3)) {
        snprintf(err, errlen, "mma: config inst wgmma: needs bm 64 or 128 with warps_m = bm/16, bn 16, 32, "
                              "64, 128 or 256 with warps_n 1, bk 64 (16-bit) or 128 (fp8) and stages 3 to 16 "
                              "(got bm=%d bn=%d bk=%d "
                              "warps %dx%d stages %d)", c->bm, c->bn, c->bk, c->warps_m, c->warps_n, c->stages);
        return -1;
    }
    char why[GT_GEN_REASON];
    if (grid_reason(c, why, sizeof why) != 0) {
        snprintf(err, errlen, "mma: config %s", why);
        return -1;
    }
    return 0;
}

cJSON *gt_mma_cfg_to_json(const gt_mma_cfg *c)
{
    cJSON *j = cJSON_CreateObject();
    if (!j || !cJSON_AddStringToObject(j, "family", "mma") ||
        (c->inst != GT_MMA_INST_SYNC && !cJSON_AddStringToObject(j, "inst", k_inst[c->inst])) ||
        (c->ctas > 0 && !cJSON_AddNumberToObject(j, "ctas", c->ctas)) ||
        (c->cluster == 2 && !cJSON_AddNumberToObject(j, "cluster", 2)) ||
        (c->pingpong && !cJSON_AddNumberToObject(j, "pingpong", 1)) ||
        !cJSON_AddStringToObject(j, "reduction", gt_gen_red_name(c->reduction)) ||
        gt_gen_int_attr_add(j, k_int, NINT, c) != 0) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

/* "inst", "ctas", "cluster" and "pingpong" only when they are not the default, so that the text
 * (and every cache key and stored result built on it) of a config that
 * existed before them stays as it was */
int gt_mma_cfg_text(const gt_mma_cfg *c, char *buf, size_t len)
{
    char ctas[40] = "";
    snprintf(ctas, sizeof ctas, "%s", c->cluster == 2 ? "\"cluster\":2," : "");
    if (c->ctas > 0)
        snprintf(ctas + strlen(ctas), sizeof ctas - strlen(ctas), "\"ctas\":%d,", c->ctas);
    return snprintf(buf, len,
                    "{\"bk\":%d,\"bm\":%d,\"bn\":%d,%s\"family\":\"mma\",%s%s\"reduction\":\"%s\","
                    "\"splitk\":%d,\"stages\":%d,\"swizzle\":%d,\"warps_m\":%d,\"warps_n\":%d}",
                    c->bk, c->bm, c->bn, ctas, c->inst == GT_MMA_INST_WGMMA ? "\"inst\":\"wgmma\"," : "",
                    c->pingpong ? "\"pingpong\":1," : "", gt_gen_red_name(c->reduction), c->splitk,
                    c->stages, c->swizzle, c->warps_m, c->warps_n);
}

/* ---- applicability --------------------------------------------------------------- */

int gt_mma_applicable(const gt_problem *p, const gt_gen_dev *d, char *why, size_t len)
{
    /* fp8 runs on the wgmma template only (mma.sync m16n8k16 and the HIP
     * port take 16-bit inputs) */
    int fp8_ok = !d->hip && d->sm == 90;
    if (!d->hip && d->sm < 80)
        GT_WHY(why, len, "sm_%d: mma.sync m16n8k16 bf16/f16, ldmatrix and cp.async need sm_80 or newer",
                 d->sm);
    else if (p->trans_a != 'T')
        GT_WHY(why, len, "transA=N: tiles of A are loaded as rows along k, contiguous only for "
                           "transA=T (N would need ldmatrix.trans)");
    else if (p->trans_b != 'N')
        GT_WHY(why, len, "transB=T: tiles of B are loaded as columns along k (transB=N only)");
    else if (!fp8_ok && (gt_dtype_is_f8(p->a_type) || gt_dtype_is_f8(p->b_type)))
        GT_WHY(why, len, "A/B types %s/%s: the family runs fp8 inputs on wgmma only, a CUDA sm_90 "
                           "instruction (this device is %s%d)", gt_dtype_name(p->a_type),
                 gt_dtype_name(p->b_type), d->hip ? "HIP, not CUDA " : "sm_", d->hip ? 0 : d->sm);
    else if (gt_gen_types_reason(p, fp8_ok, why, len) != 0)
        return -1;
    else if (p->m < 1 || p->n < 1 || p->k < 1 || p->batch < 1)
        GT_WHY(why, len, "empty problem");
    else
        return 0;
    return -1;
}

/* ---- rules ------------------------------------------------------------------------- */

int gt_mma_regs(const gt_mma_cfg *c)
{
    if (c->inst == GT_MMA_INST_WGMMA) /* bn / 2 f32 accumulators per thread, addresses, barriers */
        return c->bn / 2 + 40;
    int wm = c->warps_m > 0 ? c->bm / c->warps_m : 0, wn = c->warps_n > 0 ? c->bn / c->warps_n : 0;
    int mt = wm / 16, nt = wn / 8;
    /* accumulators; A and B fragments of two k16 steps (ptxas overlaps the
     * ldmatrix of the next step with the mma of this one); the copy loop's
     * and the epilogue's addresses and bounds */
    return mt * nt * 4 + 2 * (mt * 4 + nt * 2) + 40;
}

/* HIP (gen/mma_src.c, gt_gen_mma_hip_src): the accumulators of MT x NT
 * MFMA 16x16 blocks (4 per lane each, in AGPRs) ... */
static int hip_acc(const gt_mma_cfg *c)
{
    int wm = c->warps_m > 0 ? c->bm / c->warps_m : 0, wn = c->warps_n > 0 ? c->bn / c->warps_n : 0;
    return (wm / 16) * (wn / 16) * 4;
}

/* ... and the 16-byte chunks of one tile a thread loads (A and B) */
static int hip_chunks(const gt_mma_cfg *c)
{
    int rs = c->warps_m * c->warps_n * 64 / (c->bk / 8); /* rows one pass of the threads copies */
    return rs > 0 ? (c->bm + rs - 1) / rs + (c->bn + rs - 1) / rs : 0;
}

/* ... and its VGPRs besides the accumulators: the fragments of a k32 step
 * (one 16-byte chunk per block), the register ring (stages - 1 tiles of
 * chunks), their addresses, and what hipRTC 5.2 adds for gfx90a around
 * the accumulators (3/4 of them, alignment and copies) and for indices,
 * bounds and the buffer resources (28): fitted to the .vgpr_count of ~100
 * compiled configs, under it by at most a few registers */
static int hip_arch(const gt_mma_cfg *c)
{
    int wm = c->warps_m > 0 ? c->bm / c->warps_m : 0, wn = c->warps_n > 0 ? c->bn / c->warps_n : 0;
    int mt = wm / 16, nt = wn / 16, ch = hip_chunks(c);
    return hip_acc(c) * 3 / 4 + (mt + nt) * 4 + (c->stages - 1) * ch * 4 + 2 * ch + 28;
}

int gt_mma_regs_for(const gt_mma_cfg *c, int hip)
{
    return hip ? hip_acc(c) + hip_arch(c) : gt_mma_regs(c);
}

typedef struct derived {
    long long npm, npn, tiles, ctas, nk;
    int threads, warps, regs, res;  /* res: CTAs resident per SM */
    gt_gen_geom g;
} derived;

static void derive(const gt_problem *p, const gt_gen_dev *d, const gt_mma_cfg *c, derived *x)
{
    memset(x, 0, sizeof *x);
    int64_t batch = p->batch > 0 ? p->batch : 1;
    gt_mma_geometry_for(p, c, d->hip, &x->g);
    x->npm = (p->m + c->bm - 1) / c->bm;
    x->npn = (p->n + c->bn - 1) / c->bn;
    x->tiles = x->npm * x->npn * batch;
    x->ctas = x->tiles * (c->splitk > 0 ? c->splitk : 1);
    x->nk = x->g.kper / c->bk;
    x->warps = gt_mma_consumer_warps(c);
    x->threads = x->warps * (d->hip ? 64 : 32);
    x->regs = gt_mma_regs_for(c, d->hip); /* HIP: VGPRs + AGPRs, one file of 512 per lane */
    int by_warps = d->max_warps_sm / (x->warps > 0 ? x->warps : 1);
    int rr = x->regs < 32 ? 32 : (x->regs + 7) / 8 * 8; /* allocation granularity */
    int by_regs = d->regs_sm / (x->threads * rr);
    int smem_sm = d->smem_sm > 0 ? d->smem_sm : d->smem_block;
    int by_smem = x->g.smem_bytes ? (int)((size_t)smem_sm / (x->g.smem_bytes + 1024)) : 32;
    x->res = by_warps < by_regs ? by_warps : by_regs;
    if (by_smem < x->res)
        x->res = by_smem;
    if (x->res > 32)
        x->res = 32;
}

int gt_mma_tma_check(const gt_problem *p, char *why, size_t len)
{
    const int64_t i31 = (int64_t)1 << 31, batch = p->batch > 0 ? p->batch : 1;
    if (p->m >= i31 || p->n >= i31 || p->k >= i31 || batch >= i31)
        GT_WHY(why, len, "tma: m, n, k and batch must be below 2^31 (32-bit tensor-map coordinates)");
    else if (batch > 1 && (p->stride_a < p->lda * p->m || p->stride_b < p->ldb * p->n))
        GT_WHY(why, len, "tma: batch strides %lld, %lld overlap the matrices (a tensor map's batch stride "
                           "must span a whole matrix)", (long long)p->stride_a, (long long)p->stride_b);
    else
        return 0;
    return 1;
}

int gt_mma_elem_check(const gt_problem *p, const gt_mma_cfg *c, char *why, size_t len)
{
    int es = gt_gen_elem_size(p), wg = c->inst == GT_MMA_INST_WGMMA;
    if (!wg && es == 1)
        GT_WHY(why, len, "inst: fp8 inputs run on inst wgmma only (mma.sync m16n8k16 takes 16-bit inputs)");
    else if (wg && c->bk * es != 128)
        GT_WHY(why, len, "k tile: inst wgmma loads k tiles of one 128-byte row: bk=%d x %d-byte elements",
                 c->bk, es);
    else
        return 0;
    return 1;
}

/* A persistent CTA's ring iterations: its tiles (a cluster's pairs of
 * tile rows, shared by its two CTAs) times the k tiles of each. The
 * kernel counts them in 32-bit ints. */
static long long persist_iters(const derived *x, const gt_mma_cfg *c)
{
    long long units = c->cluster == 2 ? c->ctas / 2 : c->ctas;
    long long per = (c->cluster == 2 ? (x->npm + 1) / 2 : x->npm) * x->npn;
    return units > 0 ? (per + units - 1) / units * x->nk : 0;
}

int gt_mma_check(const gt_problem *p, const gt_gen_dev *d, const gt_mma_cfg *c, char *why, size_t len)
{
    derived x;
    if (c->bm < 16 || c->bn < 16 || c->bk < 16 || c->warps_m < 1 || c->warps_n < 1 || c->splitk < 1) {
        GT_WHY(why, len, "shape: bm, bn, bk, warps and splitk must be positive");
        return 1;
    }
    derive(p, d, c, &x);
    int64_t batch = p->batch > 0 ? p->batch : 1;
    long long m16 = (p->m + 15) / 16 * 16, n16 = (p->n + 15) / 16 * 16;
    long long c0 = x.tiles, optin = d->smem_optin > 0 ? d->smem_optin : d->smem_block;
    long long tiles_k = (p->k + c->bk - 1) / c->bk;
    /* 16-byte chunks: 8 elements of 16 bits, 16 of fp8 */
    int es = gt_gen_elem_size(p), ae = 16 / es;
    int al = p->lda % ae == 0 && p->ldb % ae == 0 &&
             (batch == 1 || (p->stride_a % ae == 0 && p->stride_b % ae == 0));
    int wg = c->inst == GT_MMA_INST_WGMMA, grid;
    char gw[GT_GEN_REASON];
    if (gt_mma_elem_check(p, c, why, len) != 0)
        ; /* why says which */
    else if (wg && (d->hip || d->sm != 90))
        GT_WHY(why, len, "inst: wgmma and the TMA are sm_90a instructions; this device is %s%d", d->hip ? "HIP, not CUDA " : "sm_",
                 d->hip ? 0 : d->sm);
    else if (wg && gt_mma_tma_check(p, why, len) != 0)
        ; /* why says which */
    else if (c->bm % (16 * c->warps_m) || c->bn % (16 * c->warps_n))
        GT_WHY(why, len, "shape: warp tile %dx%d (bm/warps_m x bn/warps_n) is not a multiple of 16x16",
                 c->bm / c->warps_m, c->bn / c->warps_n);
    else if ((c->splitk > 1) != (c->reduction != GT_GEN_RED_NONE))
        GT_WHY(why, len, "shape: reduction=%s with splitk=%d (a reduction exactly when splitk > 1)",
                 gt_gen_red_name(c->reduction), c->splitk);
    else if (x.threads > d->max_threads_block)
        GT_WHY(why, len, "threads: %d warps = %d threads > %d per block", x.warps, x.threads,
                 d->max_threads_block);
    else if (c->bm > 16 && c->bm >= 2 * m16)
        GT_WHY(why, len, "tile: bm=%d >= 2 x %lld (m rounded up to 16): bm/2 covers m, the rest "
                           "are zero rows", c->bm, m16);
    else if (c->bn > 16 && c->bn >= 2 * n16)
        GT_WHY(why, len, "tile: bn=%d >= 2 x %lld (n rounded up to 16): bn/2 covers n, the rest "
                           "are zero columns", c->bn, n16);
    else if (c->bk > 32 && p->k <= c->bk / 2)
        GT_WHY(why, len, "k tile: bk=%d > k=%lld: half of every stage would be zeros", c->bk,
                 (long long)p->k);
    else if (c->stages > x.nk + 1)
        GT_WHY(why, len, "k tile: stages=%d > %lld k tiles per split + 1: the deeper stages are "
                           "never filled", c->stages, x.nk);
    else if (!d->hip && !al)
        GT_WHY(why, len, "alignment: lda=%lld, ldb=%lld%s not all multiples of %d: cp.async and the TMA "
                           "copy aligned 16-byte chunks", (long long)p->lda, (long long)p->ldb,
                 batch > 1 ? " or the batch strides" : "", ae);
    else if (d->hip && (!al || p->k % 8))
        GT_WHY(why, len, "alignment: lda=%lld, ldb=%lld, k=%lld%s not all multiples of 8: the HIP copy "
                           "loads whole, aligned 16-byte chunks (no partial zero-filling copy)",
                 (long long)p->lda, (long long)p->ldb, (long long)p->k,
                 batch > 1 ? " or the batch strides" : "");
    else if (d->hip && ((long long)c->bm * p->lda * 2 >= (1LL << 31) ||
                        (long long)c->bn * p->ldb * 2 >= (1LL << 31)))
        GT_WHY(why, len, "offsets: a panel of bm x lda or bn x ldb elements spans 2 GiB or more: the HIP "
                           "kernel's buffer loads take 32-bit offsets");
    else if (c->swizzle > 1 && (x.npm <= c->swizzle || x.npn == 1))
        GT_WHY(why, len, "swizzle: group of %d tile rows with %lld x %lld tiles reorders nothing",
                 c->swizzle, x.npm, x.npn);
    else if (c->splitk > 1 && (long long)(c->splitk - 1) * x.g.kper >= p->k)
        GT_WHY(why, len, "split-K: splitk=%d leaves empty splits (k=%lld: %lld k tiles of %d, %lld "
                           "per split)", c->splitk, (long long)p->k, tiles_k, c->bk, x.nk);
    else if (c->splitk > 1 && c0 >= d->sms)
        GT_WHY(why, len, "split-K: %lld CTAs without it already cover the %d SMs; it would only add "
                           "a reduction", c0, d->sms);
    else if (c->splitk > 2 && c0 * (c->splitk / 2) >= d->sms)
        GT_WHY(why, len, "split-K: splitk=%d already gives %lld CTAs >= %d SMs: more splits only add "
                           "reduction traffic", c->splitk / 2, c0 * (c->splitk / 2), d->sms);
    else if ((grid = grid_reason(c, gw, sizeof gw)) != 0)
        GT_WHY(why, len, "%s: %s", grid == 1 ? "persist" : grid == 2 ? "cluster" : "pingpong", gw);
    else if (c->cluster && x.npm < 2)
        GT_WHY(why, len, "cluster: %lld tile row(s): a cluster of two shares B between two tile rows",
                 x.npm);
    else if (c->ctas > 0 && x.npm * x.npn <= c->ctas)
        GT_WHY(why, len, "persist: %lld tiles fit in one grid of %d CTAs: nothing to loop over",
                 x.npm * x.npn, c->ctas);
    else if (c->pingpong && x.npm * x.npn < 2LL * c->ctas)
        GT_WHY(why, len,
               "pingpong: %lld tiles over %d CTAs: fewer than two a CTA leave one of its two "
               "warpgroups idle", x.npm * x.npn, c->ctas);
    else if (c->ctas > 0 && persist_iters(&x, c) >= (1LL << 31))
        GT_WHY(why, len, "persist: %lld ring iterations per CTA overflow the kernel's 32-bit counters",
                 persist_iters(&x, c));
    else if ((long long)batch * c->splitk > 65535)
        GT_WHY(why, len, "split-K: grid z = batch x splitk = %lld > 65535", (long long)batch * c->splitk);
    else if (wg && (long long)x.g.smem_bytes + 16 * c->stages + 16 > optin)
        GT_WHY(why, len, "resources: %zu bytes of dynamic shared memory (%d stages x (%d + %d) x 128 + 1024 "
                           "for the ring's alignment) > %lld per block (opt-in)", x.g.smem_bytes, c->stages,
                 c->bm, c->bn, optin);
    else if (!d->hip && (long long)x.g.smem_bytes + 16 > optin)
        GT_WHY(why, len, "resources: %zu bytes of dynamic shared memory (%d stages x (%d + %d) x %d x 2) "
                           "> %lld per block (opt-in)", x.g.smem_bytes, c->stages, c->bm, c->bn, c->bk,
                 optin);
    else if (d->hip && (long long)x.g.smem_bytes + 16 > optin)
        GT_WHY(why, len, "resources: %zu bytes of LDS (2 x (%d + %d) x %d x 2: double-buffered) > %lld per "
                           "workgroup", x.g.smem_bytes, c->bm, c->bn, c->bk, optin);
    else if (d->hip && hip_acc(c) > 256)
        GT_WHY(why, len, "resources: %d accumulators per lane (%d x %d wave tile / 64) > 256 AGPRs",
                 hip_acc(c), c->bm / c->warps_m, c->bn / c->warps_n);
    else if (d->hip && hip_arch(c) > d->max_regs_thread)
        GT_WHY(why, len, "resources: ~%d VGPRs per lane besides the accumulators > %d: would spill",
                 hip_arch(c), d->max_regs_thread);
    else if (!d->hip && x.regs > d->max_regs_thread)
        GT_WHY(why, len, "resources: ~%d registers per thread > %d: would spill", x.regs,
                 d->max_regs_thread);
    else if ((long long)x.regs * x.threads > d->regs_sm)
        GT_WHY(why, len, "resources: ~%d registers x %d threads > %d per %s", x.regs, x.threads,
                 d->regs_sm, d->hip ? "CU" : "SM");
    else if (!d->hip && x.res * x.warps < 4)
        GT_WHY(why, len, "latency: %d CTA(s) of %d warp(s) resident per SM: fewer than 4 warps cannot "
                           "hide the ldmatrix/mma and copy latencies", x.res, x.warps);
    else if (d->hip && x.res * x.warps < 4)
        GT_WHY(why, len, "latency: %d workgroup(s) of %d wave(s) resident per CU: fewer than 4 waves leave "
                           "some of its 4 SIMDs (and their MFMA units) idle", x.res, x.warps);
    else if ((int64_t)x.g.ws_bytes > GT_MMA_MAX_WS)
        GT_WHY(why, len, "workspace: %zu MiB > %lld MiB", x.g.ws_bytes >> 20,
                 (long long)(GT_MMA_MAX_WS >> 20));
    else
        return 0;
    return 1;
}

/* ---- model ------------------------------------------------------------------------- */

/* Bytes one operand costs from DRAM: per wave of W concurrent CTAs the
 * distinct panels it touches (`panels` of `panel` bytes), every wave; but
 * never more than once per tile of the other dimension, and only once when
 * the operand fits in half of L2 (it then stays there between waves). */
static double operand_bytes(double total, double panels, double panel, double waves, double reuse_max,
                            double l2)
{
    if (total <= 0.5 * l2)
        return total;
    double b = waves * panels * panel;
    return fmax(total, fmin(b, total * reuse_max));
}

double gt_mma_model_us(const gt_problem *p, const gt_gen_dev *d, const gt_mma_cfg *c)
{
    derived x;
    derive(p, d, c, &x);
    double batch = p->batch > 0 ? (double)p->batch : 1, sms = d->sms > 0 ? d->sms : 1;
    double bw = d->dram_bw > 0 ? d->dram_bw : 2e12, tc = d->tc_flops > 0 ? d->tc_flops : 3e14;
    double l2 = d->l2_bytes > 0 ? (double)d->l2_bytes : 40e6;
    double es = gt_gen_elem_size(p); /* bytes of an A/B element */
    int mt = c->bm / c->warps_m / 16, nt = c->bn / c->warps_n / 8;
    /* tensor pipe: mma per ldmatrix.x4 of the warp tile sets how much of the
     * peak the shared-memory path leaves; resident warps and stages hide
     * latency */
    double inten = (double)(mt * nt) / (mt + nt / 2.0);
    double res = fmin((double)x.res, ceil((double)x.ctas / sms));
    double warps_sm = res * x.warps;
    double eff = inten / (inten + 1.0) * fmin(1.0, 0.55 + 0.45 * fmin(1.0, warps_sm / 8.0)) *
                 (c->stages >= 3 ? 1.0 : 0.85) * (c->bk == 64 ? 1.0 : 0.95);
    if (c->inst == GT_MMA_INST_WGMMA) {
        /* wgmma reads both operands from shared memory without ldmatrix:
         * ~1.25x mma.sync's reachable rate (cuBLASLt's 760 Tflop/s on an
         * H100 against ~600), less for narrow n and a single warpgroup */
        tc *= es == 1 ? 2.5 : 1.25; /* fp8: twice the 16-bit tensor rate */
        /* pingpong keeps two warpgroups' math in flight, as bm 128 does (and
         * hides each one's epilogue under the other's: what the model does
         * not count, and the screen measures) */
        eff = (c->bn >= 128 ? 0.9 : 0.75) * (c->bm == 128 || c->pingpong ? 1.0 : 0.9) *
              (c->stages >= 4 ? 1.0 : 0.9);
    }
    double flop_cta = 2.0 * c->bm * c->bn * (double)x.g.kper;
    double t_comp = ceil((double)x.ctas / sms) * flop_cta / (tc / sms * eff);
    /* DRAM: a wave of W CTAs covers gs tile rows and ceil(W/gs) tile columns */
    double W = fmin((double)x.ctas, sms * x.res);
    double gs = c->swizzle > 1 ? fmin((double)c->swizzle, (double)x.npm) : (double)x.npm;
    double a_pan = fmin(W, gs), b_pan = fmin((double)x.npn, ceil(W / gs));
    double waves = ceil((double)x.ctas / W);
    double a_tot = (double)p->m * (double)p->k * es * batch, b_tot = (double)p->n * (double)p->k * es * batch;
    double kshare = (double)x.g.kper;
    /* wgmma, a one-wave grid in raster 1 (m fastest) with several tile
     * columns: the CTAs that share a panel of A start a whole tile column
     * apart, and A came from DRAM once per column. On the H100 (bench/results/h100_43_wgmma_stages.txt,
     * 600 configs each of 4096x128x4096 and 6144x128x4096) raster 1 was
     * 10-30 % slower than raster 4 for every such tile at 6-8 stages, and up
     * to 6x at 3-4; the one-wave count above does not see it */
    double a_bytes = c->inst == GT_MMA_INST_WGMMA && c->swizzle == 1 && x.npn > 1 && waves <= 1 &&
                             a_tot > 0.5 * l2
                         ? a_tot * (double)x.npn
                         : operand_bytes(a_tot, a_pan, c->bm * kshare * es, waves, (double)x.npn, l2);
    double dram = a_bytes +
                  operand_bytes(b_tot, b_pan, c->bn * kshare * es, waves, (double)x.npm, l2) +
                  (double)p->m * (double)p->n * batch * (p->beta != 0 ? 4.0 : 2.0);
    /* Little's law: the copies in flight per SM (stages - 1 tiles ahead per
     * resident CTA) must cover DRAM latency; ~32 KiB per SM saturates the
     * cp.async path; the TMA ring needs ~96 KiB (the H100 sweeps of
     * bench/results/h100_22_sweep*: 3 stages of a 64 x 128 tile run 1.6x
     * slower than 6 at n = 128) */
    double inflight = res * (c->stages - 1) * (double)(c->bm + c->bn) * c->bk * es;
    double sat = c->inst == GT_MMA_INST_WGMMA ? 98304.0 : 32768.0;
    double t_mem = dram / (bw * fmax(0.05, fmin(1.0, inflight / sat)));
    /* ... and past that a TMA ring still gains from depth, a little: on the
     * H100's memory-bound n = 128 shapes a 64 x 64 tile took 17.59 us at 8
     * stages (112 KiB ahead), 17.20 at 10, 17.06 at 12 (176 KiB), paired
     * rounds (bench/results/h100_44_cutlass_union.txt); 4096x128x14336 47.2
     * against 49.8 (h100_43). t = t0 (1 + 10 KiB / ahead) fits the first
     * within 0.4 %. Only for a grid of one wave: with several, resident
     * CTAs and the next generation hide the latency too (on 128256x128x4096,
     * 1002 tiles, two CTAs of a 3-stage 128 x 128 ring per SM ran 2 % ahead
     * of one of 6 stages). */
    int deep = c->inst == GT_MMA_INST_WGMMA && waves <= 1;
    if (deep)
        t_mem *= 1.0 + 10240.0 / inflight;
    /* a cluster of two multicasts B: each CTA fetches half of it */
    double t_l2 = (double)x.ctas * (c->bm + c->bn / (c->cluster == 2 ? 2.0 : 1.0)) * kshare * es / (3.0 * bw);
    double t = fmax(t_comp, fmax(t_mem, t_l2)) + 0.15 * fmin(t_comp, t_mem);
    /* pipeline fill per CTA generation on an SM (a persistent grid fills
     * its ring once: the loads of a CTA's next tile start while it stores
     * this one), split-K reductions, launch. In a one-wave grid a TMA
     * ring's stages are all issued at once by one thread, so its fill is a
     * load's latency and not one per stage: counted per stage, 12 stages of
     * a 64 x 64 tile ranked 1.6 us behind 8 on 4096x128x4096 (out of the
     * screen's cap), where they ran 0.5 us ahead (h100_44). */
    double fill = deep ? 2 * 0.4e-6 : (c->stages - 1) * 0.4e-6;
    t += (c->ctas > 0 ? 1.0 : ceil((double)x.ctas / (sms * x.res))) * fill;
    double mn = (double)p->m * (double)p->n * batch * 4;
    if (c->splitk > 1)
        t += c->reduction == GT_GEN_RED_ATOMIC ? c->splitk * mn * 2 / (0.5 * bw) + 0.5e-6
                                               : c->splitk * mn * 2 / bw + 2.5e-6;
    /* rasters the count above rates alike (every g > 1 of a one-wave grid,
     * for one) keep the measured order: g 4 before 8 before 16 (on the
     * H100's n = 128 shapes g 16 was up to 30 % slower than g 4, h100_43);
     * a nanosecond per doubling decides ties only */
    if (c->swizzle > 4)
        t += 1e-9 * log2((double)c->swizzle / 4.0);
    return t * 1e6 + 3.0;
}

/* ---- the space ----------------------------------------------------------------------- */

void gt_mma_space_free(gt_mma_space *s)
{
    free(s->keep);
    free(s->pruned);
    memset(s, 0, sizeof *s);
}

static const int k_tiles[] = {16, 32, 64, 128, 256};
static const int k_bks[] = {32, 64}, k_wgs[] = {1, 2, 4}, k_sks[] = {1, 2, 4, 8, 16},
                 k_swz[] = {1, 4, 8, 16};
#define NT_ 5
#define NRAW_SYNC (NT_ * NT_ * 2 * 3 * 3 * 4 * 9 * 4)
/* inst wgmma: grid (a CTA per tile, or persistent) x bm x bn x stages x
 * split x raster. 12 stages: a ring of 192 KiB on a 64 x 64 tile (deeper
 * rings do not fit larger tiles: the shared-memory rule prunes them), which
 * the memory-bound n = 128 shapes want: on the H100, 4096x128x14336 bf16
 * took 47.2 us at 12 stages against 49.8 at 8, 4096x128x4096 16.9 against
 * 17.4 (bench/results/h100_43_wgmma_stages.txt) */
static const int k_wg_bm[] = {64, 128}, k_wg_bn[] = {16, 32, 64, 128, 256}, k_wg_st[] = {3, 4, 6, 8, 12};
#define NWG_BN 5
#define NWG_ST 5
#define NWG_ONE (2 * NWG_BN * NWG_ST * 9 * 4)
/* a CTA per tile, persistent, persistent with clusters of 2, persistent pingpong */
#define NRAW_WG (4 * NWG_ONE)
#define NRAW (NRAW_SYNC + NRAW_WG)

static int index_of(const int *v, int n, int x)
{
    int i = 0;
    while (i < n - 1 && v[i] != x)
        i++;
    return i;
}

/* The order of the kept configs. The model cannot tell apart what decides
 * between close configs (occupancy, L2 hit rates, ptxas' schedule), so the
 * cap keeps variety rather than near-copies: first the best raster of every
 * (tile, warps, bk, stages, split) combination, interleaved over the tile
 * shapes (bm, bn) whose best estimate is within 1.5x of the overall best,
 * then the second-best rasters likewise, and so on; tile shapes further
 * off follow by estimate. Where wgmma configs exist (sm_90), all of them
 * come before the mma.sync ones. ok comes sorted by estimate; the builder sorts
 * by the keys set here. */
static int interleave(gt_gen_ranked *ok, int nok)
{
    /* per combination: rasters seen so far; per (tile shape, raster round):
     * configs seen so far */
    enum {
        NCOMB_SYNC = NT_ * NT_ * 2 * 3 * 3 * 4 * 9,
        NCOMB = NCOMB_SYNC + 4 * 2 * NWG_BN * NWG_ST * 9
    };
    unsigned short *comb = calloc(NCOMB, sizeof *comb);
    int cls[NT_][NT_][4] = {{{0}}};
    double best_of[NT_][NT_];
    if (!comb)
        return -1;
    int wg = 0;
    for (int i = 0; i < nok && !wg; i++)
        wg = ok[i].c.mma.inst == GT_MMA_INST_WGMMA;
    for (int i = 0; i < NT_; i++)
        for (int j = 0; j < NT_; j++)
            best_of[i][j] = -1;
    for (int i = 0; i < nok; i++) {
        const gt_mma_cfg *c = &ok[i].c.mma;
        int a = index_of(k_tiles, NT_, c->bm), b = index_of(k_tiles, NT_, c->bn);
        int sk = c->splitk == 1 ? 0 : 1 + 2 * index_of(k_sks + 1, 4, c->splitk) + (c->reduction - 1);
        int code = c->inst == GT_MMA_INST_WGMMA
                       ? NCOMB_SYNC + ((((c->ctas > 0) + (c->cluster == 2) + 2 * c->pingpong) * 2 +
                                        index_of(k_wg_bm, 2, c->bm)) * NWG_BN +
                                       index_of(k_wg_bn, NWG_BN, c->bn)) * (NWG_ST * 9) +
                                      index_of(k_wg_st, NWG_ST, c->stages) * 9 + sk
                       : ((((a * NT_ + b) * 2 + index_of(k_bks, 2, c->bk)) * 3 + index_of(k_wgs, 3, c->warps_m)) * 3 +
                          index_of(k_wgs, 3, c->warps_n)) * 36 + (c->stages - 2) * 9 + sk;
        int v = comb[code]++;
        if (best_of[a][b] < 0)
            best_of[a][b] = ok[i].us;
        v = v < 3 ? v : 3;
        ok[i].key = best_of[a][b] <= 1.5 * ok[0].us ? v * 65536 + cls[a][b][v]++ : 1 << 24;
        /* where wgmma runs, mma.sync configs follow every wgmma one: on the
         * H100 the best wgmma config beat the best mma.sync one by 10-30 %
         * on every Llama shape with n >= 128 (bench/results/h100_22_sweep*),
         * which the roofline model, blind to ldmatrix and issue limits,
         * does not see */
        if (wg && c->inst == GT_MMA_INST_SYNC)
            ok[i].key += 1 << 25;
    }
    free(comb);
    return 0;
}

/* the raw config i: mixed-radix digits, swizzle fastest; the wgmma configs
 * after the mma.sync ones */
static int raw_cfg(const gt_problem *p, const gt_gen_dev *d, int i, gt_gen_anycfg *out)
{
    if (i >= NRAW_SYNC) {
        /* the persistent copies: splitk 1 only (the split-K digits are not
         * in the space); as many CTAs as the SMs hold at once (the estimate
         * of derive(), the staging buffers counted): a grid larger than
         * what is resident would start its last CTAs a whole CTA's tiles
         * late, one smaller leaves SMs idle or one CTA to hide another's
         * latency */
        int pers = (i - NRAW_SYNC) / NWG_ONE, j = (i - NRAW_SYNC) % NWG_ONE;
        if (pers && (j / 4 % 9 != 0 || d->sms < 1))
            return 0;
        int sw = j % 4, skr = j / 4 % 9, st = j / 36 % NWG_ST, bn = j / (36 * NWG_ST) % NWG_BN,
            bm = j / (36 * NWG_ST * NWG_BN) % 2;
        int sk = skr ? 1 + (skr - 1) / 2 : 0, red = skr ? 1 + (skr - 1) % 2 : GT_GEN_RED_NONE;
        /* one 128-byte row of k per stage: 64 16-bit values, 128 fp8 ones */
        out->mma = (gt_mma_cfg){.bm = k_wg_bm[bm], .bn = k_wg_bn[bn], .bk = 128 / gt_gen_elem_size(p),
                                .warps_m = k_wg_bm[bm] / 16,
                                .warps_n = 1, .stages = k_wg_st[st], .splitk = k_sks[sk], .reduction = red,
                                .swizzle = k_swz[sw], .inst = GT_MMA_INST_WGMMA,
                                .ctas = pers ? d->sms : 0, .cluster = pers == 2 ? 2 : 0,
                                .pingpong = pers == 3};
        if (pers) {
            derived x;
            derive(p, d, &out->mma, &x);
            /* whole clusters */
            const int per = pers == 2 ? 2 : 1, ctas = d->sms * (x.res > 1 ? x.res : 1) / per * per;
            out->mma.ctas = ctas < GT_MMA_MAX_CTAS ? ctas : GT_MMA_MAX_CTAS;
        }
        return 1;
    }
    int sw = i % 4, skr = i / 4 % 9, st = i / 36 % 4, wn = i / 144 % 3, wm = i / 432 % 3;
    int bk = i / 1296 % 2, bn = i / 2592 % NT_, bm = i / (2592 * NT_) % NT_;
    int sk = skr ? 1 + (skr - 1) / 2 : 0, red = skr ? 1 + (skr - 1) % 2 : GT_GEN_RED_NONE;
    out->mma = (gt_mma_cfg){.bm = k_tiles[bm], .bn = k_tiles[bn], .bk = k_bks[bk],
                            .warps_m = k_wgs[wm], .warps_n = k_wgs[wn], .stages = 2 + st,
                            .splitk = k_sks[sk], .reduction = red, .swizzle = k_swz[sw]};
    return 1;
}

static int check_cfg(const gt_problem *p, const gt_gen_dev *d, const gt_gen_anycfg *c, char *why,
                     size_t len)
{
    return gt_mma_check(p, d, &c->mma, why, len);
}

static double model_cfg(const gt_problem *p, const gt_gen_dev *d, const gt_gen_anycfg *c)
{
    return gt_mma_model_us(p, d, &c->mma);
}

static int text_cfg(const gt_gen_anycfg *c, char *buf, size_t len)
{
    return gt_mma_cfg_text(&c->mma, buf, len);
}

static void rank_reason(const gt_gen_ranked *r, int i, int nok, int cap, char *buf, size_t len)
{
    snprintf(buf, len, "rank: %d of %d (model %.1f us), beyond the cap of %d", i + 1, nok, r->us, cap);
}

static const gt_gen_space_spec k_spec = {
    .nraw = NRAW,
    .cfg_size = sizeof(gt_mma_cfg),
    .pruned_size = sizeof(gt_mma_pruned),
    .reason_off = offsetof(gt_mma_pruned, reason),
    .raw = raw_cfg,
    .check = check_cfg,
    .model_us = model_cfg,
    .text = text_cfg,
    .order = interleave,
    .rank_reason = rank_reason,
};
_Static_assert(offsetof(gt_mma_pruned, cfg) == 0, "the builder writes the config at offset 0");

static int prune(const gt_problem *p, const gt_gen_dev *d, int cap, int with_pruned, gt_mma_space *s)
{
    gt_gen_space_out o;
    memset(s, 0, sizeof *s);
    if (gt_mma_applicable(p, d, s->why, sizeof s->why) != 0)
        return 0;
    if (gt_gen_space_build(&k_spec, p, d, cap, with_pruned, &o) != 0)
        return -1;
    s->keep = o.keep;
    s->nkeep = o.nkeep;
    s->pruned = o.pruned;
    s->npruned = o.npruned;
    s->raw = o.raw;
    return 0;
}

int gt_mma_prune(const gt_problem *p, const gt_gen_dev *d, int cap, gt_mma_space *s)
{
    return prune(p, d, cap, 1, s);
}

int gt_mma_prune_kept(const gt_problem *p, const gt_gen_dev *d, int cap, gt_mma_space *s)
{
    return prune(p, d, cap, 0, s);
}
