/* gemv_space.c: the "gemv" family's configs (JSON <-> struct, canonical text),
 * the fault configs, and the family's space for a problem: the raw cross
 * product of the attribute values, pruned by rules that each give their
 * reason, then ranked by a bandwidth model and cut to a cap. Pure host C.
 *
 * Rules, in the order they are checked (the first that fails is the reason):
 *   shape      kwarps divides warps; rows per warp (rows_per_cta divided by
 *              warps/kwarps) is 16 or 32 for lanes "quad" (one or two m16
 *              tiles; 16 or 32 rows = one or two rows per lane of a wave64)
 *              and 1, 2, 4 or 8 for lanes "warp"; splitk > 1 exactly when a
 *              reduction is named (gt_gen_check_shape, shared with the
 *              export); lanes "warp" only for n <= 8 (its columns are FMAs,
 *              not mma tiles)
 *   pipe       async: CUDA only, a ring of at least 2, no evict-first form;
 *              dbuf: at least two blocks per warp (else nothing overlaps)
 *   threads    warps * warp size within the device's threads per block
 *   n_tile     at least n (a smaller tile streams A once per column block)
 *              and less than n rounded up to 8, plus 8 (idle columns); lanes
 *              "warp": the smallest power of two >= n
 *   vec        vec x the element size (2 bytes; 1 for fp8) is a 16- or
 *              8-byte load (fp8: vec 16 or 8; bf16/f16: 8 or 4)
 *   alignment  lda, ldb (and batch strides) multiples of vec, or vector
 *              loads of A rows / B columns would be misaligned; the 8-byte
 *              vec only where the 16-byte one is not aligned (half the bytes
 *              per load)
 *   rows       rows_per_cta no more than twice m rounded up to 16
 *   split-K    no empty split; only when the grid without it has fewer CTAs
 *              than the device holds at once (SMs x CTAs resident per SM):
 *              a small matrix needs every resident slot loading from the
 *              first microsecond, otherwise it only adds a reduction; batch*splitk
 *              within the grid's z limit; each warp's k share holds at least
 *              one unrolled step (k_unroll x the warp's chunk of 4 or 32
 *              lanes x vec), or the main loop never runs
 *   resources  static shared memory within the per-block limit; estimated
 *              registers within the per-thread limit and one CTA's within
 *              the SM's register file
 *   in flight  at least 8 KiB of A loads in flight per SM (resident warps x
 *              k_unroll x rows per lane x 16 bytes): less cannot cover DRAM
 *              latency at full bandwidth
 *   workspace  split-K workspace within 256 MiB
 *   rank       beyond the cap (default 48) of the model's ranking
 * A k that is not a multiple of 4*vec needs no rule: the tail is loaded
 * element by element with zeros past the end. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_gemv.h"
#include "space_common.h"
#include "src_common.h"

/* ---- families and encoding ------------------------------------------------- */

int gt_gen_family(const cJSON *cfg)
{
    if (!cJSON_IsObject(cfg))
        return GT_FAM_UNKNOWN;
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(cfg, "family");
    if (!f)
        return GT_FAM_CUBLASLT;
    if (!cJSON_IsString(f))
        return GT_FAM_UNKNOWN;
    if (!strcmp(f->valuestring, "cublaslt"))
        return GT_FAM_CUBLASLT;
    if (!strcmp(f->valuestring, "gemv"))
        return GT_FAM_GEMV;
    if (!strcmp(f->valuestring, "fault"))
        return GT_FAM_FAULT;
    if (!strcmp(f->valuestring, "mma"))
        return GT_FAM_MMA;
    if (!strcmp(f->valuestring, "cutlass"))
        return GT_FAM_CUTLASS;
    return GT_FAM_UNKNOWN;
}

static const char *const k_red[] = {"none", "atomic", "twopass"};
static const char *const k_load[] = {"nc", "cs", "na256"};
static const char *const k_pipe[] = {"reg", "async", "dbuf"};
static const char *const k_lanes[] = {"quad", "warp"};
static const char *const k_f8[] = {"mma", "cvt"};

const char *gt_gen_red_name(int r) { return r >= 0 && r < 3 ? k_red[r] : "?"; }
const char *gt_gen_load_name(int l) { return l >= 0 && l < 3 ? k_load[l] : "?"; }
const char *gt_gen_pipe_name(int p) { return p >= 0 && p < 3 ? k_pipe[p] : "?"; }
const char *gt_gen_lanes_name(int l) { return l >= 0 && l < 2 ? k_lanes[l] : "?"; }
const char *gt_gen_f8_name(int f) { return f >= 0 && f < 2 ? k_f8[f] : "?"; }

/* Integer attributes, sorted like the canonical text. */
static const gt_gen_int_attr k_int[] = {
    {"k_unroll", 1, 16, offsetof(gt_gen_cfg, k_unroll)},
    {"kwarps", 1, 32, offsetof(gt_gen_cfg, kwarps)},
    {"n_tile", 1, 32, offsetof(gt_gen_cfg, n_tile)},
    {"rows_per_cta", 1, 1024, offsetof(gt_gen_cfg, rows_per_cta)},
    {"splitk", 1, 64, offsetof(gt_gen_cfg, splitk)},
    {"vec", 4, 16, offsetof(gt_gen_cfg, vec)},
    {"warps", 1, 32, offsetof(gt_gen_cfg, warps)},
};
#define NINT (sizeof k_int / sizeof k_int[0])

static int str_index(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s))
            return i;
    return -1;
}

int gt_gen_cfg_from_json(const cJSON *j, gt_gen_cfg *c, char *err, size_t errlen)
{
    int seen_int[NINT] = {0}, seen_red = 0, seen_load = 0, seen_pipe = 0, seen_fam = 0, seen_lanes = 0;
    int seen_f8 = 0;
    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(j)) {
        snprintf(err, errlen, "gemv: config is not a JSON object");
        return -1;
    }
    for (const cJSON *it = j->child; it; it = it->next) {
        const char *k = it->string ? it->string : "";
        if (!strcmp(k, "family")) {
            if (seen_fam++ || !cJSON_IsString(it) || strcmp(it->valuestring, "gemv")) {
                snprintf(err, errlen, "gemv: config family must be \"gemv\", once");
                return -1;
            }
            continue;
        }
        if (!strcmp(k, "lanes")) { /* optional: "quad" when left out */
            int v = cJSON_IsString(it) ? str_index(k_lanes, 2, it->valuestring) : -1;
            if (seen_lanes++ || v < 0) {
                snprintf(err, errlen, "gemv: config lanes: must be one of quad, warp, once");
                return -1;
            }
            c->lanes = v;
            continue;
        }
        if (!strcmp(k, "f8")) { /* optional: "mma" when left out */
            int v = cJSON_IsString(it) ? str_index(k_f8, 2, it->valuestring) : -1;
            if (seen_f8++ || v < 0) {
                snprintf(err, errlen, "gemv: config f8: must be one of mma, cvt, once");
                return -1;
            }
            c->f8 = v;
            continue;
        }
        if (!strcmp(k, "reduction") || !strcmp(k, "a_load") || !strcmp(k, "pipe")) {
            int w = k[0] == 'r' ? 0 : k[0] == 'a' ? 1 : 2;
            const char *const *names = w == 0 ? k_red : w == 1 ? k_load : k_pipe;
            int *seen = w == 0 ? &seen_red : w == 1 ? &seen_load : &seen_pipe;
            int v = cJSON_IsString(it) ? str_index(names, 3, it->valuestring) : -1;
            if ((*seen)++ || v < 0) {
                snprintf(err, errlen, "gemv: config %s: must be one of %s, once", k,
                         w == 0 ? "none, atomic, twopass" : w == 1 ? "nc, cs, na256" : "reg, async, dbuf");
                return -1;
            }
            *(w == 0 ? &c->reduction : w == 1 ? &c->a_load : &c->pipe) = v;
            continue;
        }
        if (gt_gen_int_attr_set("gemv", k_int, NINT, seen_int, it, c, err, errlen) != 0)
            return -1;
    }
    if (gt_gen_int_attr_missing("gemv", k_int, NINT, seen_int, err, errlen) != 0)
        return -1;
    if (!seen_red || !seen_load || !seen_pipe) {
        snprintf(err, errlen, "gemv: config %s: missing",
                 !seen_red ? "reduction" : !seen_load ? "a_load" : "pipe");
        return -1;
    }
    if (c->vec != 4 && c->vec != 8 && c->vec != 16) {
        snprintf(err, errlen, "gemv: config vec=%d: must be 4, 8 or 16", c->vec);
        return -1;
    }
    if (c->lanes == GT_GEN_LANES_QUAD && c->n_tile % 8) {
        snprintf(err, errlen, "gemv: config n_tile=%d: must be 8, 16, 24 or 32", c->n_tile);
        return -1;
    }
    if (c->lanes == GT_GEN_LANES_WARP && (c->n_tile > 8 || (c->n_tile & (c->n_tile - 1)))) {
        snprintf(err, errlen, "gemv: config n_tile=%d: must be 1, 2, 4 or 8 with lanes warp", c->n_tile);
        return -1;
    }
    return 0;
}

cJSON *gt_gen_cfg_to_json(const gt_gen_cfg *c)
{
    cJSON *j = cJSON_CreateObject();
    if (!j || !cJSON_AddStringToObject(j, "family", "gemv") ||
        !cJSON_AddStringToObject(j, "a_load", gt_gen_load_name(c->a_load)) ||
        !cJSON_AddStringToObject(j, "reduction", gt_gen_red_name(c->reduction)) ||
        !cJSON_AddStringToObject(j, "pipe", gt_gen_pipe_name(c->pipe)) ||
        (c->lanes && !cJSON_AddStringToObject(j, "lanes", gt_gen_lanes_name(c->lanes))) ||
        (c->f8 && !cJSON_AddStringToObject(j, "f8", gt_gen_f8_name(c->f8))) ||
        gt_gen_int_attr_add(j, k_int, NINT, c) != 0) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

int gt_gen_cfg_text(const gt_gen_cfg *c, char *buf, size_t len)
{
    /* "f8" sorts between "a_load" and "family", "lanes" between "kwarps"
     * and "n_tile"; each left out at its default ("mma", "quad") */
    return snprintf(buf, len,
                    "{\"a_load\":\"%s\",%s\"family\":\"gemv\",\"k_unroll\":%d,\"kwarps\":%d,%s"
                    "\"n_tile\":%d,\"pipe\":\"%s\",\"reduction\":\"%s\",\"rows_per_cta\":%d,"
                    "\"splitk\":%d,\"vec\":%d,\"warps\":%d}",
                    gt_gen_load_name(c->a_load), c->f8 ? "\"f8\":\"cvt\"," : "", c->k_unroll,
                    c->kwarps,
                    c->lanes ? "\"lanes\":\"warp\"," : "", c->n_tile,
                    gt_gen_pipe_name(c->pipe), gt_gen_red_name(c->reduction), c->rows_per_cta,
                    c->splitk, c->vec, c->warps);
}

int gt_gen_fault_from_json(const cJSON *j, int *kind, char *err, size_t errlen)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(j, "kind");
    int n = 0;
    for (const cJSON *it = cJSON_IsObject(j) ? j->child : NULL; it; it = it->next)
        n++;
    if (n != 2 || !cJSON_IsString(k) || (strcmp(k->valuestring, "oob") && strcmp(k->valuestring, "hang"))) {
        snprintf(err, errlen, "fault: config must be {\"family\":\"fault\",\"kind\":\"oob\"|\"hang\"}");
        return -1;
    }
    *kind = !strcmp(k->valuestring, "oob") ? GT_FAULT_OOB : GT_FAULT_HANG;
    return 0;
}

/* ---- devices ------------------------------------------------------------------ */

void gt_gen_dev_default(gt_gen_dev *d, int sm, int sms)
{
    memset(d, 0, sizeof *d);
    d->sm = sm;
    d->sms = sms > 0 ? sms : 132;
    d->warp_size = 32;
    d->max_threads_block = 1024;
    d->smem_block = 48 * 1024;
    d->regs_sm = 65536;
    d->max_regs_thread = 255;
    d->max_warps_sm = sm >= 90 || sm == 80 ? 64 : 48;
    d->dram_bw = sm >= 90 ? 2.95e12 : 1.9e12;
    /* H100: 227 KiB opt-in of 228 per SM, 50 MiB L2, mma.sync reaching about
     * 60 % of the wgmma peak; A100: 163 of 164 KiB, 40 MiB; sm_86/89: 99 of 100 */
    d->smem_optin = sm >= 90 ? 232448 : sm == 80 || sm == 87 ? 166912 : 101376;
    d->smem_sm = sm >= 90 ? 233472 : sm == 80 || sm == 87 ? 167936 : 102400;
    d->l2_bytes = sm >= 90 ? (int64_t)50 << 20 : sm == 80 ? (int64_t)40 << 20 : (int64_t)6 << 20;
    d->tc_flops = sm >= 90 ? 6.0e14 : sm == 80 ? 2.8e14 : 1.2e14;
}

void gt_gen_dev_hip(gt_gen_dev *d, int cus)
{
    memset(d, 0, sizeof *d);
    d->hip = 1;
    d->sms = cus > 0 ? cus : 104;
    d->warp_size = 64;
    d->max_threads_block = 1024;
    d->smem_block = 64 * 1024;
    d->regs_sm = 4 * 512 * 64;   /* 4 SIMDs x 512 VGPRs x 64 lanes */
    d->max_regs_thread = 256;
    d->max_warps_sm = 32;
    d->dram_bw = 1.6e12;
    d->smem_optin = d->smem_sm = 64 * 1024; /* LDS per workgroup and per CU */
    d->l2_bytes = (int64_t)8 << 20;
    d->tc_flops = 1.5e14; /* MI250X GCD, bf16 MFMA, reachable */
}

/* ---- applicability ---------------------------------------------------------------- */

int gt_gen_applicable(const gt_problem *p, const gt_gen_dev *d, char *why, size_t len)
{
    int f8 = gt_gen_elem_size(p) == 1;
    if (!d->hip && d->sm < 80)
        GT_WHY(why, len, "sm_%d: the mma.sync m16n8k16 bf16/f16 path needs sm_80 or newer", d->sm);
    else if (f8 && d->hip)
        GT_WHY(why, len, "fp8 inputs: the HIP port has no fp8 path (gfx942's fp8 is FNUZ, another "
                           "encoding)");
    else if (f8 && d->sm < 89)
        GT_WHY(why, len, "sm_%d: fp8 inputs need sm_89 or newer (mma.sync m16n8k32 e4m3/e5m2, "
                           "cvt.rn.f16x2.e4m3x2/e5m2x2)", d->sm);
    else if (p->trans_a != 'T')
        GT_WHY(why, len, "transA=N: the family streams rows of op(A) = A^T, contiguous only for "
                           "transA=T (NN/NT would need a column-streaming kernel)");
    else if (p->trans_b != 'N')
        GT_WHY(why, len, "transB=T: B columns are read contiguous along k (transB=N only)");
    else if (gt_gen_types_reason(p, 1, why, len) != 0)
        return -1;
    else if (p->n > GT_GEN_MAX_N)
        GT_WHY(why, len, "n=%lld > %d: not a skinny GEMM (memory-bound only for few columns)",
                 (long long)p->n, GT_GEN_MAX_N);
    else if (p->m < 1 || p->n < 1 || p->k < 1 || p->batch < 1)
        GT_WHY(why, len, "empty problem");
    else
        return 0;
    return -1;
}

/* ---- rules ------------------------------------------------------------------------- */

/* fp8 inputs multiplied as raw bytes by mma.sync m16n8k32 (no conversion):
 * lanes "quad" on CUDA with f8 "mma"; lanes "warp" (FMAs) and "cvt" decode */
static int f8_native(const gt_gen_dev *d, const gt_gen_cfg *c)
{
    return !d->hip && c->lanes == GT_GEN_LANES_QUAD && c->f8 == GT_GEN_F8_MMA;
}

typedef struct derived {
    int wm, rw, nar, nbc, nv, lw, acc, regs, res_cta;
    gt_gen_geom g;
    double ctas, inflight; /* CTAs of the grid; bytes of A loads in flight per SM */
} derived;

static void derive(const gt_problem *p, const gt_gen_dev *d, const gt_gen_cfg *c, derived *x)
{
    memset(x, 0, sizeof *x);
    x->wm = c->kwarps > 0 && c->warps % c->kwarps == 0 ? c->warps / c->kwarps : 1;
    x->rw = c->rows_per_cta / x->wm;
    int es = gt_gen_elem_size(p);
    x->nv = c->vec / 2;      /* 32-bit words of a vector as 16-bit values (the math) */
    x->lw = c->vec * es / 4; /* 32-bit words of a vector as loaded (fp8: half of nv) */
    if (c->lanes == GT_GEN_LANES_WARP) { /* a row per lane group of the whole warp */
        x->nar = x->rw;
        x->nbc = c->n_tile;
        x->acc = x->rw * c->n_tile;
    } else if (d->warp_size == 32) {
        x->nar = 2 * (x->rw / 16);
        x->nbc = c->n_tile / 8;
        x->acc = (x->rw / 16) * (c->n_tile / 8) * 4;
    } else {
        x->nar = x->rw / (d->warp_size / 4);
        x->nbc = c->n_tile;
        x->acc = x->nar * c->n_tile;
    }
    /* live registers of the unrolled loop: accumulators, the loads in
     * flight (dbuf: two blocks), row/column pointers, and a fixed overhead
     * (indices, bounds; 24 and the 32-register floor below fit the H100
     * sweep best); fp8: one chunk's vectors decoded to f16 as well (kept for
     * f8 "mma", which decodes nothing: without it, 6 of the 120 configs
     * test_nvrtc_f8 compiles for sm_90 spilled, dbuf at 16 warps), and with
     * pipe "reg" half the unrolled chunks' (fitted, not counted: with one
     * chunk, k_unroll 8 configs at 512 threads were kept that ptxas compiles
     * with spills, e.g. 8 bytes at 64 registers for e4m3 x e5m2 1024x5x4104
     * with a k tail, where k_unroll 4 takes 52 registers and none) */
    int sets = c->pipe == GT_GEN_PIPE_ASYNC ? 1 : c->pipe == GT_GEN_PIPE_DBUF ? 2 * c->k_unroll
                                                                              : c->k_unroll;
    int decoded = es != 1 ? 0 : c->pipe == GT_GEN_PIPE_REG ? (c->k_unroll + 1) / 2 : 1;
    x->regs = x->acc + sets * (x->nar + x->nbc) * x->lw + 2 * (x->nar + x->nbc) + 24 +
              decoded * (x->nar + x->nbc) * x->nv;
    gt_gen_geometry(p, c, d->warp_size, &x->g);
    x->ctas = (double)x->g.gx * x->g.gy * x->g.gz;
    int threads = c->warps * d->warp_size;
    int by_warps = d->max_warps_sm / (c->warps > 0 ? c->warps : 1);
    int by_regs = d->regs_sm / (threads * (x->regs < 32 ? 32 : x->regs));
    int by_smem = x->g.smem_bytes ? (int)((size_t)d->smem_block * 4 / x->g.smem_bytes) : 32;
    x->res_cta = by_warps < by_regs ? by_warps : by_regs;
    if (by_smem < x->res_cta)
        x->res_cta = by_smem;
    if (x->res_cta > 32)
        x->res_cta = 32;
    double resident = fmin(x->ctas, (double)x->res_cta * d->sms);
    x->inflight = resident * c->warps / d->sms * c->k_unroll * x->nar * d->warp_size * c->vec * (double)es *
                  (c->pipe == GT_GEN_PIPE_DBUF ? 2 : 1);
}

/* The rules after "rows", on the derived geometry and estimates. */
static int check_derived(const gt_problem *p, const gt_gen_dev *d, const gt_gen_cfg *c, int64_t batch,
                         int wb, char *why, size_t len)
{
    derived x;
    derive(p, d, c, &x);
    long long c0 = (long long)x.g.gx * x.g.gy * batch;
    int warp_lanes = c->lanes == GT_GEN_LANES_WARP;
    if (c->splitk > 1 && (long long)(c->splitk - 1) * x.g.kper >= p->k)
        GT_WHY(why, len, "split-K: splitk=%d leaves empty splits (k=%lld, %lld per split)",
                 c->splitk, (long long)p->k, x.g.kper);
    else if (c->splitk > 1 && c0 >= (long long)(x.res_cta > 0 ? x.res_cta : 1) * d->sms)
        GT_WHY(why, len, "split-K: %lld CTAs without it already fill the %d SMs x %d resident CTAs; "
                           "it would only add a reduction", c0, d->sms, x.res_cta > 0 ? x.res_cta : 1);
    else if ((long long)batch * c->splitk > 65535)
        GT_WHY(why, len, "split-K: grid z = batch x splitk = %lld > 65535",
                 (long long)batch * c->splitk);
    else if (x.g.kper / c->kwarps < wb && c->k_unroll > 1)
        GT_WHY(why, len, "split-K: k per warp %lld < k_unroll x %d lanes x vec = %d: the unrolled loop "
                           "would never run", x.g.kper / c->kwarps, warp_lanes ? d->warp_size : 4, wb);
    else if (c->pipe == GT_GEN_PIPE_DBUF && x.g.kper / c->kwarps < 2 * wb)
        GT_WHY(why, len, "pipe=dbuf: k per warp %lld < two unrolled steps of %d: no next block to load "
                           "while this one computes", x.g.kper / c->kwarps, wb);
    else if (x.g.smem_bytes > (size_t)d->smem_block)
        GT_WHY(why, len, "resources: %zu bytes of shared memory > %d per block", x.g.smem_bytes,
                 d->smem_block);
    else if (x.regs > d->max_regs_thread)
        GT_WHY(why, len, "resources: ~%d registers per thread > %d: would spill", x.regs,
                 d->max_regs_thread);
    else if ((long long)x.regs * c->warps * d->warp_size > d->regs_sm)
        GT_WHY(why, len, "resources: ~%d registers x %d threads > %d per SM", x.regs,
                 c->warps * d->warp_size, d->regs_sm);
    else if (x.inflight < 8192)
        GT_WHY(why, len, "in flight: %.1f KiB of A loads per SM < 8 KiB: cannot cover DRAM latency",
                 x.inflight / 1024);
    else if ((int64_t)x.g.ws_bytes > GT_GEN_MAX_WS)
        GT_WHY(why, len, "workspace: %zu MiB > %lld MiB", x.g.ws_bytes >> 20,
                 (long long)(GT_GEN_MAX_WS >> 20));
    else
        return 0;
    return 1;
}

int gt_gen_check_shape(const gt_gen_cfg *c, char *why, size_t len)
{
    int wm = c->kwarps > 0 && c->warps % c->kwarps == 0 ? c->warps / c->kwarps : 1;
    int rw = c->rows_per_cta / wm, warp_lanes = c->lanes == GT_GEN_LANES_WARP;
    if (c->kwarps < 1 || c->warps % c->kwarps)
        GT_WHY(why, len, "shape: kwarps=%d does not divide warps=%d", c->kwarps, c->warps);
    else if (!warp_lanes && (c->rows_per_cta % wm || (rw != 16 && rw != 32)))
        GT_WHY(why, len, "shape: rows per warp rows_per_cta/(warps/kwarps) = %d/%d is not 16 or 32",
                 c->rows_per_cta, wm);
    else if (warp_lanes && (c->rows_per_cta % wm || rw < 1 || rw > 8 || (rw & (rw - 1))))
        GT_WHY(why, len, "shape: rows per warp rows_per_cta/(warps/kwarps) = %d/%d is not 1, 2, 4 or 8 "
                           "(lanes=warp)", c->rows_per_cta, wm);
    else if ((c->splitk > 1) != (c->reduction != GT_GEN_RED_NONE))
        GT_WHY(why, len, "shape: reduction=%s with splitk=%d (a reduction exactly when splitk > 1)",
                 gt_gen_red_name(c->reduction), c->splitk);
    else
        return 0;
    return 1;
}

int gt_gen_check_vec(const gt_problem *p, const gt_gen_cfg *c, char *why, size_t len)
{
    int es = gt_gen_elem_size(p);
    if (c->vec * es != 16 && c->vec * es != 8) {
        GT_WHY(why, len, "vec=%d: %d-byte vectors of %d-byte elements; the template loads 16 or 8 "
                           "bytes (vec %d or %d)", c->vec, c->vec * es, es, 16 / es, 8 / es);
        return 1;
    }
    return 0;
}

int gt_gen_check(const gt_problem *p, const gt_gen_dev *d, const gt_gen_cfg *c, char *why, size_t len)
{
    /* the rules up to "rows" need no geometry; most of the raw space fails
     * one of them, so the geometry and the register and in-flight estimates
     * are worked out for the rest only */
    long long n8 = (p->n + 7) / 8 * 8, m16 = (p->m + 15) / 16 * 16;
    int64_t batch = p->batch > 0 ? p->batch : 1;
    int es = gt_gen_elem_size(p), v16 = 16 / es; /* vec of a 16-byte load */
    int al16 = p->lda % v16 == 0 && p->ldb % v16 == 0 &&
               (batch == 1 || (p->stride_a % v16 == 0 && p->stride_b % v16 == 0));
    int al = p->lda % c->vec == 0 && p->ldb % c->vec == 0 &&
             (batch == 1 || (p->stride_a % c->vec == 0 && p->stride_b % c->vec == 0));
    int warp_lanes = c->lanes == GT_GEN_LANES_WARP;
    int wb = c->k_unroll * (warp_lanes ? d->warp_size : 4) * c->vec;
    if (gt_gen_check_shape(c, why, len) || gt_gen_check_vec(p, c, why, len))
        return 1;
    if (c->f8 == GT_GEN_F8_CVT && (es != 1 || warp_lanes || d->hip))
        GT_WHY(why, len, "f8=cvt: only fp8 inputs on the mma path (lanes quad, CUDA) choose how "
                           "fp8 is multiplied (lanes warp always converts)");
    else if (warp_lanes && p->n > 8)
        GT_WHY(why, len, "lanes=warp: n=%lld > 8: its columns are FMAs, the mma tiles of lanes=quad "
                           "are cheaper", (long long)p->n);
    else if (c->pipe == GT_GEN_PIPE_ASYNC && d->hip)
        GT_WHY(why, len, "pipe=async: cp.async is CUDA (sm_80+) only");
    else if (c->pipe == GT_GEN_PIPE_ASYNC && c->k_unroll < 2)
        GT_WHY(why, len, "pipe=async with k_unroll=1: a one-stage ring overlaps nothing");
    else if (c->pipe == GT_GEN_PIPE_ASYNC && c->a_load == GT_GEN_LD_CS)
        GT_WHY(why, len, "pipe=async: cp.async has no evict-first form (a_load=cs would equal nc)");
    else if (c->warps * d->warp_size > d->max_threads_block)
        GT_WHY(why, len, "threads: %d warps of %d > %d threads per block", c->warps,
                 d->warp_size, d->max_threads_block);
    else if (warp_lanes && (c->n_tile < p->n || c->n_tile >= 2 * p->n))
        GT_WHY(why, len, "n_tile=%d: lanes=warp takes the smallest power of two >= n=%lld", c->n_tile,
                 (long long)p->n);
    else if (c->n_tile < p->n)
        GT_WHY(why, len, "n_tile=%d < n=%lld: A would be streamed %lld times, once per column block",
                 c->n_tile, (long long)p->n, (long long)((p->n + c->n_tile - 1) / c->n_tile));
    else if (!warp_lanes && c->n_tile >= n8 + 8)
        GT_WHY(why, len, "n_tile=%d > %lld (n rounded up to 8): idle columns cost registers and loads",
                 c->n_tile, n8);
    else if (!al)
        GT_WHY(why, len, "alignment: lda=%lld, ldb=%lld%s not all multiples of vec=%d: %d-byte loads "
                           "of A rows / B columns would be misaligned", (long long)p->lda,
                 (long long)p->ldb, batch > 1 ? " or the batch strides" : "", c->vec, es * c->vec);
    else if (c->vec < v16 && al16)
        GT_WHY(why, len, "vec=%d: 16-byte loads (vec=%d) are aligned here and move twice the bytes "
                           "per instruction", c->vec, v16);
    else if (!warp_lanes && c->rows_per_cta > 2 * m16)
        GT_WHY(why, len, "rows_per_cta=%d > 2 x %lld (m rounded up to 16): most rows of each CTA idle",
                 c->rows_per_cta, m16);
    else if (warp_lanes && c->rows_per_cta > 2 * p->m)
        GT_WHY(why, len, "rows_per_cta=%d > 2 x m=%lld: most rows of each CTA idle", c->rows_per_cta,
                 (long long)p->m);
    else
        return check_derived(p, d, c, batch, wb, why, len);
    return 1;
}

/* ---- model ------------------------------------------------------------------------- */

double gt_gen_model_us(const gt_problem *p, const gt_gen_dev *d, const gt_gen_cfg *c)
{
    derived x;
    derive(p, d, c, &x);
    double batch = p->batch > 0 ? (double)p->batch : 1;
    double bw = d->dram_bw > 0 ? d->dram_bw : 2e12;
    double es = gt_gen_elem_size(p);
    double a_bytes = (double)p->m * (double)p->k * es * batch;
    /* The constants were fitted on gt-cuda-selftest --sweep of the Llama
     * decode shapes on an H100 (tests/data/gemv_sweep_h100.csv, checked by
     * test_gen_model): on the newest sweep the best of the model's top 48
     * is within 3.1 % of the best measured config on every shape (0.7 % in
     * geomean).
     * Bandwidth reached with this much in flight (32 KiB per SM saturates);
     * 4 lanes per row touch 64 bytes of 8 rows per load, a whole warp 512
     * contiguous bytes of one row, which DRAM serves better; the read-only
     * path without a hint fetches less ahead */
    double eff = 0.93 * fmin(1.0, x.inflight / 32768.0);
    if (c->lanes != GT_GEN_LANES_WARP)
        eff *= 0.92;
    if (c->a_load == GT_GEN_LD_NC)
        eff *= 0.97;
    /* dbuf: a warp's loads stay in flight while it computes, which pays
     * where registers, not resident warps, bound the loads in flight (lanes
     * "quad"); lanes "warp" already runs 64 warps an SM at n <= 8, and the
     * second register set costs it residency. Measured on the H100 only:
     * HIP ranks dbuf by its loads in flight alone */
    if (c->pipe == GT_GEN_PIPE_DBUF && !d->hip)
        eff *= c->lanes == GT_GEN_LANES_WARP ? 0.98 : 1.05;
    /* lanes "warp" with more than two rows per warp: each lane then holds
     * rw x n_tile accumulators and rw rows' loads, and the median such config
     * ran 21-23 % behind the median two-row one at n = 4 on the H100 (6-11 %
     * at n = 1), where the bandwidth terms above ranked them ahead (the cap
     * missed o 4096x4x4096's best by 14 %). Fitted, not derived: 3 % per
     * column and doubling of rows past two (tests/data/gemv_sweep_h100_n4.csv;
     * 2 % to 10 % rank the same) */
    if (c->lanes == GT_GEN_LANES_WARP && x.rw > 2)
        eff /= 1 + 0.03 * c->n_tile * log2(x.rw / 2.0);
    /* more resident warps hide latency better than deeper unrolling */
    double warps_sm = fmin((double)x.res_cta * c->warps, fmax(x.ctas / d->sms, 1.0) * c->warps);
    eff *= 0.9 + 0.1 * fmin(1.0, warps_sm / d->max_warps_sm);
    double t = a_bytes / (bw * (eff > 0.05 ? eff : 0.05));
    /* the SM with the most CTAs streams longest; an SM draws at most ~3x
     * its share of the bandwidth */
    double slots = (double)x.res_cta * d->sms;
    if (x.ctas <= slots) {
        double per = ceil(x.ctas / d->sms) * a_bytes / x.ctas;
        t = fmax(t, per / (3.0 * bw / d->sms));
    } else {
        t *= sqrt(ceil(x.ctas / slots) * slots / x.ctas);
    }
    /* B from L1/L2, once per CTA for its k range: it overlaps the stream */
    double b_l2 = x.ctas * (double)x.g.kper * fmin((double)p->n, c->n_tile) * es;
    t = fmax(t, b_l2 / (4.0 * bw));
    /* fp8 converted (f8 "cvt", lanes "warp"): every element of A, and of B
     * once per row group of warps, is decoded by a cvt.f16x2 (two
     * elements); taken as 16 per clock per SM at 1.7 GHz (not measured: a
     * bound that matters only where the CTA's B share is large next to its
     * A). f8 "mma" multiplies the bytes as loaded: no such bound */
    if (es == 1 && !f8_native(d, c)) {
        double cvts = 0.5 * ((double)p->m * (double)p->k * batch +
                             x.ctas * x.wm * (double)x.g.kper * c->n_tile);
        t = fmax(t, cvts / (d->sms * 16.0 * 1.7e9));
    }
    double mn = (double)p->m * (double)p->n * batch * 4;
    if (c->splitk > 1) /* the tile's last CTA, or a second kernel, after the others */
        t += c->reduction == GT_GEN_RED_ATOMIC ? c->splitk * mn * 2 / (0.5 * bw) + 2.5e-6
                                               : c->splitk * mn * 2 / bw + 3.0e-6;
    if (d->hip) /* FMA path: 2 flops per element and column */
        t = fmax(t, 2.0 * p->m * c->n_tile * (double)p->k * batch / (d->sms * 256.0 * 1.7e9));
    else if (c->lanes == GT_GEN_LANES_WARP) {
        /* an FMA per element and column, a convert per element, for each
         * column tile. An SM retires about 45 of them a clock, not its 128
         * FP32 lanes' worth: B's loads and converts and the final shuffles
         * share the issue slots (fitted on the n = 8 sweep of the H100,
         * tests/data/gemv_sweep_h100_n8.csv, where lanes "warp" at n_tile 8
         * runs 16-41 % behind the best "quad" config and a bound at 128 a
         * clock ranked it first) */
        double tiles = ceil((double)p->n / c->n_tile);
        t = fmax(t, (double)p->m * tiles * (c->n_tile + 1) * (double)p->k * batch / (d->sms * 45.0 * 1.7e9));
    }
    return t * 1e6 + 2.0 + 0.05 * c->a_load; /* launch, ramp and drain; a_load: stable order */
}

/* ---- the space ----------------------------------------------------------------------- */

void gt_gen_space_free(gt_gen_space *s)
{
    free(s->keep);
    free(s->pruned);
    memset(s, 0, sizeof *s);
}

/* The raw space, lanes "quad": 2 rows per warp x 3 row groups x 6 kwarps
 * (layouts of more than 32 warps left out: up to 32 warps split the k range
 * of a few rows, which is how a small matrix fills the GPU without split-K)
 * x 4 k_unroll x 2 vec x 9 split-K x 4 n_tile x 3 a_load x 3 pipe; then
 * lanes "warp": the same with 4 rows per warp and its 4 n_tile. */
#define NRAW_B (4 * 2 * 9 * 4 * 3 * 3)
#define NRAW_Q (2 * 3 * 6 * NRAW_B)
#define NRAW (NRAW_Q + 4 * 3 * 6 * NRAW_B)

static int raw_cfg(const gt_problem *p, const gt_gen_dev *d, int i, gt_gen_anycfg *out)
{
    (void)d;
    static const int rws_q[] = {16, 32}, rws_w[] = {1, 2, 4, 8}, wms[] = {1, 2, 4};
    static const int kws[] = {1, 2, 4, 8, 16, 32};
    static const int us[] = {1, 2, 4, 8}, sks[] = {1, 2, 4, 8, 16};
    /* vec: the elements of a 16- and an 8-byte load */
    static const int vecs16[] = {8, 4}, vecs8[] = {16, 8};
    const int *vecs = gt_gen_elem_size(p) == 1 ? vecs8 : vecs16;
    static const int nts_q[] = {8, 16, 24, 32}, nts_w[] = {1, 2, 4, 8};
    int lanes = i >= NRAW_Q;
    if (lanes)
        i -= NRAW_Q;
    int a = i / NRAW_B, b = i % NRAW_B;
    int rw = (lanes ? rws_w : rws_q)[a / 18], wm = wms[a / 6 % 3], kw = kws[a % 6];
    if (wm * kw > 32)
        return 0;
    int u = b / 648, v = b / 324 % 2, sr = b / 36 % 9, nt = b / 9 % 4, ld = b / 3 % 3;
    int sk = sr ? 1 + (sr - 1) / 2 : 0, red = sr ? 1 + (sr - 1) % 2 : 0;
    out->gemv = (gt_gen_cfg){.rows_per_cta = rw * wm, .warps = wm * kw, .kwarps = kw,
                             .vec = vecs[v], .k_unroll = us[u], .splitk = sks[sk],
                             .reduction = red, .n_tile = (lanes ? nts_w : nts_q)[nt], .a_load = ld,
                             .pipe = b % 3, .lanes = lanes};
    return 1;
}

static int check_cfg(const gt_problem *p, const gt_gen_dev *d, const gt_gen_anycfg *c, char *why,
                     size_t len)
{
    return gt_gen_check(p, d, &c->gemv, why, len);
}

static double model_cfg(const gt_problem *p, const gt_gen_dev *d, const gt_gen_anycfg *c)
{
    return gt_gen_model_us(p, d, &c->gemv);
}

static int text_cfg(const gt_gen_anycfg *c, char *buf, size_t len)
{
    return gt_gen_cfg_text(&c->gemv, buf, len);
}

/* Two classes alternate down the ranking, the register pipes (reg, dbuf)
 * and the shared-memory ring (async): the model cannot tell which keeps
 * more loads in flight on a given part, so both stay in the cap. The key
 * is the rank within the config's class. */
static int order(gt_gen_ranked *ok, int nok)
{
    int seen[2] = {0, 0};
    for (int i = 0; i < nok; i++)
        ok[i].key = seen[ok[i].c.gemv.pipe == GT_GEN_PIPE_ASYNC]++;
    return 0;
}

static void rank_reason(const gt_gen_ranked *r, int i, int nok, int cap, char *buf, size_t len)
{
    snprintf(buf, len, "rank: %d of %d (model %.1f us, %d of its pipe class), beyond the cap of %d",
             i + 1, nok, r->us, r->key + 1, cap);
}

static const gt_gen_space_spec k_spec = {
    .nraw = NRAW,
    .cfg_size = sizeof(gt_gen_cfg),
    .pruned_size = sizeof(gt_gen_pruned),
    .reason_off = offsetof(gt_gen_pruned, reason),
    .raw = raw_cfg,
    .check = check_cfg,
    .model_us = model_cfg,
    .text = text_cfg,
    .order = order,
    .rank_reason = rank_reason,
};
_Static_assert(offsetof(gt_gen_pruned, cfg) == 0, "the builder writes the config at offset 0");

static int prune(const gt_problem *p, const gt_gen_dev *d, int cap, int with_pruned, gt_gen_space *s)
{
    gt_gen_space_out o;
    memset(s, 0, sizeof *s);
    if (gt_gen_applicable(p, d, s->why, sizeof s->why) != 0)
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

int gt_gen_prune(const gt_problem *p, const gt_gen_dev *d, int cap, gt_gen_space *s)
{
    return prune(p, d, cap, 1, s);
}

int gt_gen_prune_kept(const gt_problem *p, const gt_gen_dev *d, int cap, gt_gen_space *s)
{
    return prune(p, d, cap, 0, s);
}
