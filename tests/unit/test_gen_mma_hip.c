/* test_gen_mma_hip.c: the HIP port of the "mma" family (gen/mma_src.c's
 * gt_gen_mma_hip_src, gen/mma_space.c with a HIP device) without a GPU:
 * applicability and every HIP-specific rule with its reason, the family's
 * space on the Llama shapes under MI200 limits, the HIP -D definitions and
 * launch geometry against the CUDA ones, a host emulation of the HIP
 * kernel's data path (register ring, buffer-load zeros, LDS layout and
 * ds_read_b128 addresses, MFMA 16x16x16 operand and result layouts, the
 * epilogue's indices) that must give the exact product, and hipRTC
 * compiles of every kept config of a few Llama shapes for gfx90a (gfx942
 * when the compiler knows it) with no spills. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen_mma.h"
#include "gen_test_util.h"
#include "gt_problem.h"
#include "gt_test.h"
#include "gt_util.h"

#ifdef GT_WITH_HIP
#include "gen_hip.h"
#endif

/* the kernel's index math, as C (the ldmatrix lanes are CUDA only: unused here) */
#define GT_MMA_HD __attribute__((unused)) static inline
GT_MMA_INDEX_FNS

static gt_gen_dev mi200(void)
{
    gt_gen_dev d;
    gt_gen_dev_hip(&d, 104);
    return d;
}

static const gt_mma_cfg k_cfg = {.bm = 128, .bn = 128, .bk = 32, .warps_m = 2, .warps_n = 2,
                                 .stages = 3, .splitk = 1, .reduction = GT_GEN_RED_NONE, .swizzle = 8};

/* The family applies on HIP; each HIP rule prunes on its own, with its
 * reason, where CUDA keeps the config (or prunes it for its own reason). */
static void test_rules(void)
{
    char why[GT_GEN_REASON];
    gt_gen_dev d = mi200(), h100;
    gt_gen_dev_default(&h100, 90, 132);
    gt_problem p = gen_test_prob(4096, 2048, 4096, GT_DT_BF16, GT_DT_BF16);
    CHECK_MSG(gt_mma_applicable(&p, &d, why, sizeof why) == 0, "%s", why);
    CHECK_MSG(gt_mma_check(&p, &d, &k_cfg, why, sizeof why) == 0, "%s", why);
    gt_mma_cfg c = k_cfg;
    c.bm = 256, c.bn = 256, c.warps_m = 8, c.warps_n = 8;
    gen_test_mma_pruned(p, &d, c, "threads: 64 warps = 4096 threads > 1024");
    c = k_cfg, c.warps_m = 4, c.warps_n = 4; /* 16 waves = 1024 threads: allowed */
    CHECK_MSG(gt_mma_check(&p, &d, &c, why, sizeof why) == 0, "%s", why);
    /* k = 4100 with lda = ldb = 4104: aligned rows, a partial last chunk */
    gt_problem q = gen_test_prob(4096, 2048, 4100, GT_DT_BF16, GT_DT_BF16);
    q.lda = q.ldb = 4104;
    gen_test_mma_pruned(q, &d, k_cfg, "alignment: lda=4104, ldb=4104, k=4100 not all multiples of 8");
    gt_problem_finish(&q);
    CHECK_MSG(gt_mma_check(&q, &h100, &k_cfg, why, sizeof why) == 0, "CUDA zero-fills: %s", why);
    q = gen_test_prob(4096, 2048, 4096, GT_DT_BF16, GT_DT_BF16);
    q.lda = (int64_t)1 << 23; /* 128 rows x 8 Mi elements x 2 bytes = 2 GiB */
    gen_test_mma_pruned(q, &d, k_cfg, "offsets: a panel of bm x lda");
    c = k_cfg, c.bm = 256, c.bn = 256, c.bk = 64, c.warps_m = 4, c.warps_n = 4;
    gen_test_mma_pruned(p, &d, c, "resources: 131072 bytes of LDS (2 x (256 + 256) x 64 x 2");
    c = k_cfg, c.bm = 256, c.warps_m = 1, c.warps_n = 1, c.stages = 2;
    gen_test_mma_pruned(p, &d, c, "resources: 512 accumulators per lane (256 x 128 wave tile / 64) > 256 AGPRs");
    c = k_cfg, c.warps_m = 1, c.warps_n = 1, c.stages = 5; /* 4 tiles of 16 chunks in flight */
    gen_test_mma_pruned(p, &d, c, "VGPRs per lane besides the accumulators > 256");
    c = k_cfg, c.bm = 256, c.warps_m = 4, c.warps_n = 4, c.stages = 5;
    gen_test_mma_pruned(p, &d, c, "registers x 1024 threads > 131072 per CU");
    c = k_cfg, c.bm = 64, c.bn = 64, c.bk = 64, c.warps_m = 1, c.warps_n = 1, c.stages = 2;
    gen_test_mma_pruned(p, &d, c, "latency: 1 workgroup(s) of 1 wave(s) resident per CU");
    /* the CUDA rules still apply: a reason that does not depend on the target */
    c = k_cfg, c.splitk = 2;
    gen_test_mma_pruned(p, &d, c, "reduction=none with splitk=2");
    /* the register estimate: accumulators + the rest, as the rules split it */
    CHECK(gt_mma_regs_for(&k_cfg, 0) == gt_mma_regs(&k_cfg) && gt_mma_regs_for(&k_cfg, 1) > 64);
}

/* The Llama shapes all get a full family on MI200 limits; kept configs pass
 * every rule; the HIP -D definitions are the CUDA ones + GT_HIP, GT_WS; the
 * HIP geometry differs from the CUDA one in threads (waves of 64) and LDS
 * (double-buffered) only. */
static void test_prune_geometry(void)
{
    static const int64_t shapes[][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}, {128256, 4096}};
    static const int64_t tokens[] = {16, 128, 2048};
    gt_gen_dev d = mi200();
    for (size_t t = 0; t < 3; t++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            gt_problem p = gen_test_prob(shapes[i][0], tokens[t], shapes[i][1], GT_DT_BF16, GT_DT_BF16);
            char why[GT_GEN_REASON], label[64];
            gt_mma_space s;
            gt_problem_label(&p, label, sizeof label);
            CHECK(gt_mma_prune(&p, &d, GT_MMA_DEFAULT_CAP, &s) == 0);
            CHECK_MSG(s.why[0] == 0 && s.nkeep == GT_MMA_DEFAULT_CAP && s.nkeep + s.npruned == s.raw,
                      "%s: %d kept (%s)", label, s.nkeep, s.why);
            int bad = 0;
            for (int k = 0; k < s.npruned; k++)
                bad += strlen(s.pruned[k].reason) < 10 || !strchr(s.pruned[k].reason, ':');
            CHECK_MSG(bad == 0, "%s: %d pruned without a reason", label, bad);
            for (int k = 0; k < s.nkeep; k++) {
                const gt_mma_cfg *c = &s.keep[k];
                char dc[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN], dh[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
                gt_gen_geom gc, gh;
                CHECK_MSG(gt_mma_check(&p, &d, c, why, sizeof why) == 0, "%s kept but %s", label, why);
                int nc = gt_mma_defines(&p, c, dc), nh = gt_mma_defines_for(&p, c, 1, dh);
                int same = nc == 15 && nh == nc + 2 && nh <= GT_GEN_MAX_DEFS && !strcmp(dh[nc], "-DGT_HIP=1") &&
                           !strcmp(dh[nc + 1], "-DGT_WS=64");
                for (int x = 0; x < nc && same; x++)
                    same = !strcmp(dc[x], dh[x]) && !strstr(dc[x], "GT_HIP") && !strstr(dc[x], "GT_WS");
                CHECK_MSG(same, "%s: defines CUDA %d, HIP %d", label, nc, nh);
                gt_mma_geometry(&p, c, &gc);
                gt_mma_geometry_for(&p, c, 1, &gh);
                CHECK(gh.threads == (unsigned)(c->warps_m * c->warps_n * 64) && gh.threads <= 1024 &&
                      gc.threads * 2 == gh.threads);
                CHECK(gh.smem_bytes == (size_t)2 * (c->bm + c->bn) * c->bk * 2 && gh.smem_bytes < 65536);
                CHECK(gh.gx == gc.gx && gh.gy == gc.gy && gh.gz == gc.gz && gh.kper == gc.kper &&
                      gh.ws_bytes == gc.ws_bytes && gh.cnt_bytes == gc.cnt_bytes && gh.fin_blocks == gc.fin_blocks);
                CHECK(gt_mma_regs_for(c, 1) * (int)gh.threads <= d.regs_sm);
            }
            gt_mma_space_free(&s);
        }
}

/* ---- host emulation of the HIP kernel's data path ------------------------------ */

/* The MFMA layouts (v_mfma_f32_16x16x16{bf16_1k,f16}, CDNA ISA / AMD's matrix
 * instruction calculator): lane l supplies A[l % 16][4 (l / 16) + e] and
 * B[4 (l / 16) + e][l % 16] (e = 0..3, one 8-byte operand each) and holds
 * D[4 (l / 16) + e][l % 16]. */
typedef struct hemu {
    const gt_mma_cfg *c;
    long long m, n, k, lda, ldb, row0, col0, kb, ke;
    const double *A, *B;
    int thr, kc, rs, ca, cb, npf;
    double *ring;   /* [npf][thr][ca + cb][8] */
    double *lds;    /* 2 halves of (bm + bn) x bk */
    double *acc;    /* [wave][lane][mt][nt][4] */
} hemu;

/* gt_fetch of both operands of the tile at k0 into slot u: the chunks that
 * gt_fetch asks for (offset < 2^31 from the panel's base, inside the row),
 * zeros for those it gives the offset 2^31 */
static int hemu_fetch(hemu *e, int u, long long k0)
{
    int bad = 0;
    for (int tid = 0; tid < e->thr; tid++)
        for (int op = 0; op < 2; op++) {
            int rows = op ? e->c->bn : e->c->bm, n = op ? e->cb : e->ca;
            long long left = op ? e->n - e->col0 : e->m - e->row0, ld = op ? e->ldb : e->lda;
            const double *src = op ? e->B + e->col0 * ld : e->A + e->row0 * ld;
            int c = tid % e->kc, r0 = tid / e->kc;
            for (int it = 0; it < n; it++) {
                int r = r0 + it * e->rs;
                int ok = k0 + c * 8 < e->ke && r < rows && r < left;
                double *v = e->ring + (((size_t)u * e->thr + tid) * (e->ca + e->cb) + (op ? e->ca : 0) + it) * 8;
                long long off = (r * ld + k0 + c * 8) * 2;
                bad += ok && (off >= (1LL << 31) || k0 + c * 8 + 8 > ld);
                for (int x = 0; x < 8; x++)
                    v[x] = ok ? src[r * ld + k0 + c * 8 + x] : 0.0;
            }
        }
    return bad;
}

/* gt_stash of slot u into LDS half h, at gt_mma_soff */
static void hemu_stash(hemu *e, int u, int h)
{
    int sa = e->c->bm * e->c->bk;
    for (int tid = 0; tid < e->thr; tid++)
        for (int op = 0; op < 2; op++) {
            int rows = op ? e->c->bn : e->c->bm, n = op ? e->cb : e->ca, c = tid % e->kc, r0 = tid / e->kc;
            for (int it = 0; it < n; it++) {
                int r = r0 + it * e->rs;
                if (r >= rows)
                    continue;
                const double *v = e->ring + (((size_t)u * e->thr + tid) * (e->ca + e->cb) + (op ? e->ca : 0) + it) * 8;
                double *dst = e->lds + (size_t)h * (sa + e->c->bn * e->c->bk) + (op ? sa : 0) + gt_mma_soff(r, c, e->kc);
                memcpy(dst, v, 8 * sizeof *v);
            }
        }
}

/* gt_math on LDS half h: each lane's ds_read_b128 at the kernel's byte
 * address, two MFMAs per k32 step; counts bank conflicts of the 8-lane
 * phases of each ds_read_b128 */
static int hemu_math(hemu *e, int h)
{
    const gt_mma_cfg *c = e->c;
    int wm_ = c->bm / c->warps_m, wn_ = c->bn / c->warps_n, mt = wm_ / 16, nt = wn_ / 16, conflicts = 0;
    unsigned sa = (unsigned)(c->bm * c->bk), st = (unsigned)h * 2u * (sa + (unsigned)(c->bn * c->bk));
    for (int w = 0; w < c->warps_m * c->warps_n; w++) {
        int wm = w % c->warps_m, wn = w / c->warps_m;
        for (int kk = 0; kk < c->bk / 32; kk++)
            for (int i = 0; i < mt; i++)
                for (int j = 0; j < nt; j++) {
                    double af[64][8], bf[64][8];
                    unsigned banks[2][8] = {{0}};
                    for (int l = 0; l < 64; l++) {
                        unsigned aoff = 2u * (unsigned)gt_mma_soff(wm * wm_ + (l & 15), l >> 4, e->kc);
                        unsigned boff = 2u * sa + 2u * (unsigned)gt_mma_soff(wn * wn_ + (l & 15), l >> 4, e->kc);
                        unsigned ab = st + (aoff ^ ((unsigned)kk << 6)) + (unsigned)i * 32u * (unsigned)c->bk;
                        unsigned bb = st + (boff ^ ((unsigned)kk << 6)) + (unsigned)j * 32u * (unsigned)c->bk;
                        memcpy(af[l], e->lds + ab / 2, sizeof af[l]);
                        memcpy(bf[l], e->lds + bb / 2, sizeof bf[l]);
                        banks[0][l / 8] |= 1u << (ab / 16 % 8);
                        banks[1][l / 8] |= 1u << (bb / 16 % 8);
                    }
                    for (int g = 0; g < 8; g++)
                        conflicts += (banks[0][g] != 0xff) + (banks[1][g] != 0xff);
                    for (int half = 0; half < 2; half++) {
                        double A16[16][16], B16[16][16];
                        for (int l = 0; l < 64; l++)
                            for (int x = 0; x < 4; x++) {
                                A16[l % 16][4 * (l / 16) + x] = af[l][4 * half + x];
                                B16[4 * (l / 16) + x][l % 16] = bf[l][4 * half + x];
                            }
                        for (int l = 0; l < 64; l++)
                            for (int x = 0; x < 4; x++) {
                                double s = 0;
                                for (int z = 0; z < 16; z++)
                                    s += A16[4 * (l / 16) + x][z] * B16[z][l % 16];
                                e->acc[((((size_t)w * 64 + l) * mt + i) * nt + j) * 4 + x] += s;
                            }
                    }
                }
    }
    return conflicts;
}

/* The kernel's step(u, i): the loads of tile i + npf into slot u, the math
 * of LDS half i % 2, tile i + 1 from slot (u + 1) % npf into half (i + 1) % 2 */
static int hemu_step(hemu *e, int u, int i)
{
    int bad = hemu_fetch(e, u, e->kb + (long long)(i + e->npf) * e->c->bk);
    bad += hemu_math(e, i & 1);
    hemu_stash(e, (u + 1) % e->npf, (i + 1) & 1);
    return bad;
}

/* One CTA, scheduled as the kernel (prologue, the loop unrolled by npf and
 * its remainder), then the epilogue's indices. Returns the elements stored;
 * bad counts reads outside a row or past 2 GiB and bank conflicts. */
static long long hemu_cta(hemu *e, long long pm, long long pn, int sk, double *out, int *bad)
{
    const gt_mma_cfg *c = e->c;
    gt_problem p = gen_test_prob(e->m, e->n, e->k, GT_DT_BF16, GT_DT_F32);
    gt_gen_geom g;
    gt_mma_geometry_for(&p, c, 1, &g);
    e->row0 = pm * c->bm, e->col0 = pn * c->bn, e->kb = sk * g.kper;
    e->ke = e->kb + g.kper < e->k ? e->kb + g.kper : e->k;
    int nk = e->ke > e->kb ? (int)((e->ke - e->kb + c->bk - 1) / c->bk) : 0;
    int wm_ = c->bm / c->warps_m, wn_ = c->bn / c->warps_n, mt = wm_ / 16, nt = wn_ / 16;
    long long stored = 0;
    memset(e->acc, 0, sizeof *e->acc * (size_t)e->thr * mt * nt * 4);
    for (int s = 0; s < e->npf; s++)
        *bad += hemu_fetch(e, s, e->kb + (long long)s * c->bk);
    hemu_stash(e, 0, 0);
    int t = 0;
    for (; t + e->npf <= nk; t += e->npf)
        for (int u = 0; u < e->npf; u++)
            *bad += hemu_step(e, u, t + u);
    for (int u = 0; u < e->npf - 1; u++)
        if (t + u < nk)
            *bad += hemu_step(e, u, t + u);
    for (int w = 0; w < c->warps_m * c->warps_n; w++)
        for (int l = 0; l < 64; l++)
            for (int i = 0; i < mt; i++)
                for (int j = 0; j < nt; j++)
                    for (int x = 0; x < 4; x++) {
                        int wm = w % c->warps_m, wn = w / c->warps_m;
                        long long ii = e->row0 + wm * wm_ + 16 * i + 4 * (l >> 4) + x;
                        long long jj = e->col0 + wn * wn_ + 16 * j + (l & 15);
                        if (ii >= e->m || jj >= e->n)
                            continue;
                        out[jj * e->m + ii] += e->acc[((((size_t)w * 64 + l) * mt + i) * nt + j) * 4 + x];
                        stored++;
                    }
    return stored;
}

/* The emulated HIP kernel (every CTA, every split, summed as the reductions
 * do) equals the product exactly, every element of D stored once per split,
 * no chunk read outside its row, no bank conflict; m, n and k (a multiple
 * of 8) not multiples of the tiles, every ring depth and a remainder. */
static void test_emulation(void)
{
    static const struct {
        long long m, n, k, lda;
        gt_mma_cfg c;
    } cases[] = {
        {77, 45, 104, 104, {64, 64, 32, 2, 2, 3, 1, 0, 1, 0, 0, 0, 0}},
        {130, 70, 200, 200, {128, 64, 64, 4, 1, 4, 1, 0, 4, 0, 0, 0, 0}},
        {33, 17, 72, 72, {32, 16, 32, 1, 1, 2, 1, 0, 1, 0, 0, 0, 0}},
        {40, 100, 264, 272, {16, 32, 64, 1, 2, 2, 3, 2, 1, 0, 0, 0, 0}},
        {96, 48, 136, 136, {32, 48, 32, 2, 1, 5, 2, 1, 1, 0, 0, 0, 0}},
        {200, 300, 64, 64, {64, 128, 32, 2, 4, 2, 1, 0, 2, 0, 0, 0, 0}},
        {50, 60, 520, 520, {32, 32, 32, 1, 1, 5, 1, 0, 1, 0, 0, 0, 0}},   /* 17 tiles: 4 x 4 + 1 */
        {50, 60, 456, 456, {32, 32, 64, 2, 2, 4, 1, 0, 1, 0, 0, 0, 0}},   /* 8 tiles: 2 x 3 + 2 */
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const gt_mma_cfg *c = &cases[ci].c;
        hemu e = {.c = c, .m = cases[ci].m, .n = cases[ci].n, .k = cases[ci].k, .lda = cases[ci].lda,
                  .ldb = cases[ci].lda};
        e.thr = c->warps_m * c->warps_n * 64, e.kc = c->bk / 8, e.rs = e.thr / e.kc;
        e.ca = (c->bm + e.rs - 1) / e.rs, e.cb = (c->bn + e.rs - 1) / e.rs, e.npf = c->stages - 1;
        int mt = c->bm / c->warps_m / 16, nt = c->bn / c->warps_n / 16, bad = 0;
        double *A = malloc(sizeof *A * (size_t)(e.m * e.lda)), *B = malloc(sizeof *B * (size_t)(e.n * e.ldb));
        double *out = calloc((size_t)(e.m * e.n), sizeof *out);
        e.ring = malloc(sizeof *e.ring * (size_t)e.npf * e.thr * (e.ca + e.cb) * 8);
        e.lds = malloc(sizeof *e.lds * 2 * (size_t)(c->bm + c->bn) * c->bk);
        e.acc = malloc(sizeof *e.acc * (size_t)e.thr * mt * nt * 4);
        if (!A || !B || !out || !e.ring || !e.lds || !e.acc) {
            CHECK(0);
            goto next;
        }
        uint64_t x = 0x9e3779b97f4a7c15ULL + ci;
        /* values past k in the padding are garbage: the kernel must not read them */
        gen_test_fill(A, e.m, e.lda, e.k, &x);
        gen_test_fill(B, e.n, e.ldb, e.k, &x);
        e.A = A, e.B = B;
        long long npm = (e.m + c->bm - 1) / c->bm, npn = (e.n + c->bn - 1) / c->bn, stored = 0;
        for (long long pid = 0; pid < npm * npn; pid++) {
            long long pm, pn;
            gt_mma_tile(pid, npm, npn, c->swizzle, &pm, &pn);
            for (int sk = 0; sk < c->splitk; sk++)
                stored += hemu_cta(&e, pm, pn, sk, out, &bad);
        }
        long long wrong = gen_test_wrong(out, A, B, e.m, e.n, e.k, e.lda, e.ldb);
        char text[256];
        gt_mma_cfg_text(c, text, sizeof text);
        CHECK_MSG(wrong == 0 && bad == 0 && stored == e.m * e.n * c->splitk,
                  "%lldx%lldx%lld %s: %lld wrong, %d bad reads or conflicts, %lld stored", e.m, e.n, e.k, text,
                  wrong, bad, stored);
    next:
        free(A);
        free(B);
        free(out);
        free(e.ring);
        free(e.lds);
        free(e.acc);
    }
}

#ifdef GT_WITH_HIP
/* A config list without duplicates (the compile options depend on the
 * config and the problem's types only; these problems share their types). */
typedef struct cfgset {
    gt_mma_cfg *v;
    int n, cap;
} cfgset;

static int add_cfg(cfgset *s, const gt_mma_cfg *c)
{
    for (int i = 0; i < s->n; i++)
        if (!memcmp(&s->v[i], c, sizeof *c))
            return 0;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        gt_mma_cfg *v = realloc(s->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        s->v = v, s->cap = cap;
    }
    s->v[s->n++] = *c;
    return 0;
}

static void compile_set(const char *arch, const gt_problem *p, const cfgset *set, const char *what)
{
    gt_hip_batch b;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(gt_hip_mma_compile_all(arch, p, set->v, set->n, (int)(ncpu > 0 ? ncpu : 1), &b) == 0);
    fprintf(stderr, "     %s %s: %d of %d configs compiled with hipRTC in %.1f s, %d spilled, up to %d VGPRs\n",
            arch, what, b.ok, set->n, b.seconds, b.spilled, b.vgprs_max);
    CHECK_MSG(b.failed == 0 && b.ok == set->n && set->n > 0, "%s: %d failed, first: %s", arch, b.failed,
              b.first_err);
    /* the register rules keep every config within the file without spills */
    CHECK_MSG(b.spilled == 0 && b.vgprs_max <= 512, "%s: %d spilled, %d VGPRs", arch, b.spilled, b.vgprs_max);
}

/* Every kept config (MI200 limits, the port's cap) of the Llama shapes
 * m x k = 4096 x 4096 and 28672 x 4096 with n = 16, 128, 2048 compiles for
 * gfx90a without spills, as do configs of the other types and epilogues and
 * both split-K reductions; gfx942 too when this hipRTC knows it (HIP 5.2's
 * comgr aborts on it: the probe says so, in a child). hipRTC takes ~0.3-0.5
 * CPU s per mma kernel: with GT_HIP_MMA_CAP (24) the 108 distinct configs
 * take ~30 s on two idle cores (~65 s on two busy ones), within the ~90 s
 * this test may add. GT_TEST_HIP_ALL=1: all five Llama shapes with the
 * CUDA cap (32): 173 configs. */
static void test_hiprtc(void)
{
    char why[256] = "";
    if (!gen_test_hiprtc_ready(why, sizeof why))
        return;
    static const int64_t shapes[][2] = {{4096, 4096}, {28672, 4096}, {6144, 4096}, {4096, 14336}, {128256, 4096}};
    static const int64_t tokens[] = {16, 128, 2048};
    const char *archs[] = {"gfx90a", "gfx942"};
    int all = getenv("GT_TEST_HIP_ALL") != NULL;
    gt_gen_dev d = mi200();
    for (int a = 0; a < 2; a++) {
        if (!gt_hip_arch_known(archs[a], why, sizeof why)) {
            fprintf(stderr, "     SKIP %s: %s\n", archs[a], why);
            CHECK_MSG(a == 1, "gfx90a must be known: %s", why); /* gfx90a is required */
            continue;
        }
        cfgset set = {0};
        gt_problem p0 = gen_test_prob(4096, 16, 4096, GT_DT_BF16, GT_DT_BF16);
        for (size_t t = 0; t < 3; t++)
            for (size_t i = 0; i < (all ? 5u : 2u); i++) {
                gt_problem p = gen_test_prob(shapes[i][0], tokens[t], shapes[i][1], GT_DT_BF16, GT_DT_BF16);
                gt_mma_space s;
                CHECK(gt_mma_prune(&p, &d, all ? GT_MMA_DEFAULT_CAP : GT_HIP_MMA_CAP, &s) == 0 && s.nkeep > 0);
                for (int c = 0; c < s.nkeep; c++)
                    CHECK(add_cfg(&set, &s.keep[c]) == 0);
                gt_mma_space_free(&s);
            }
        compile_set(archs[a], &p0, &set, all ? "all Llama shapes" : "Llama shapes");
        free(set.v);
        /* f16 MFMAs, f32 output, bias, gelu; split-K of both kinds, a
         * 2-stage and a 5-stage ring with a remainder */
        gt_problem e = gen_test_prob(3000, 500, 1000, GT_DT_F16, GT_DT_F32);
        e.bias = 1, e.bias_type = GT_DT_F16, e.alpha = 0.5, e.beta = 0.25;
        snprintf(e.activation, sizeof e.activation, "gelu");
        cfgset ex = {0};
        gt_mma_cfg c = k_cfg;
        CHECK(add_cfg(&ex, &c) == 0);
        c.splitk = 2, c.reduction = GT_GEN_RED_ATOMIC, c.stages = 2, c.bk = 64, c.warps_m = c.warps_n = 4;
        CHECK(add_cfg(&ex, &c) == 0);
        c.reduction = GT_GEN_RED_TWOPASS, c.bm = 64, c.bn = 48, c.warps_m = 2, c.warps_n = 1, c.stages = 5;
        CHECK(add_cfg(&ex, &c) == 0);
        compile_set(archs[a], &e, &ex, "f16, f32 out, bias, gelu, split-K");
        free(ex.v);
    }
}
#endif

int main(int argc, char **argv)
{
    gt_test_mode(argc, argv);
    if (gt_test_cpu()) {
        RUN(test_rules);
        RUN(test_prune_geometry);
        RUN(test_emulation);
    }
    /* hipRTC compiles need hipcc, not a GPU, but a machine without it cannot
     * run them: they are this test's "GPU" section, skipped there. */
    if (gt_test_gpu()) {
#ifdef GT_WITH_HIP
        RUN(test_hiprtc);
#else
        gt_test_skip("hiprtc", "the HIP port is not built (no hipcc when cmake ran)");
#endif
    }
    return gt_test_done();
}
