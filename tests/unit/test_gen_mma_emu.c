/* test_gen_mma_emu.c: the "mma" kernel's index math on the host, from the
 * kernel's own index functions (GT_MMA_INDEX_FNS of gen_mma.h, compiled
 * here as C): the CTA raster is a bijection with the documented grouping,
 * the XOR-swizzled shared-memory layout is a bijection free of bank
 * conflicts for ldmatrix phases and cp.async chunks, the kernel's shortcut
 * for ldmatrix addresses equals the layout function, and an emulation of
 * whole CTAs (the copy loop with its zero-fill, ldmatrix.x4 and
 * mma.m16n8k16 with the PTX fragment layouts, the epilogue's indices, the
 * split-K sum) gives the exact product with every element of D stored once
 * per split, on problems whose m, n, k are not multiples of the tiles. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_mma.h"
#include "gen_test_util.h"
#include "gt_problem.h"
#include "gt_test.h"

#define GT_MMA_HD static inline
GT_MMA_INDEX_FNS

/* The raster is a bijection of CTA ids onto tiles, grouped as documented;
 * the swizzled layout is a bijection onto a tile's shared memory in which
 * every ldmatrix phase (8 rows of one chunk column) and every 8 consecutive
 * cp.async chunks hit 8 distinct 16-byte bank groups. */
static void test_index(void)
{
    static const long long shapes[][3] = {{1, 1, 8}, {7, 3, 4}, {16, 16, 8}, {17, 5, 16}, {1002, 16, 8}, {3, 40, 16}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int swz = 1; swz <= 16; swz *= 2) {
            long long npm = shapes[s][0], npn = shapes[s][1], n = npm * npn, bad = 0, ingroup = 0;
            char *hit = calloc((size_t)n, 1);
            for (long long pid = 0; pid < n && hit; pid++) {
                long long pm = -1, pn = -1;
                gt_mma_tile(pid, npm, npn, swz, &pm, &pn);
                bad += pm < 0 || pm >= npm || pn < 0 || pn >= npn || hit[pm * npn + pn]++;
                /* consecutive ids stay within one group of swz tile rows */
                ingroup += swz > 1 && pm / swz != (pid / ((long long)swz * npn));
            }
            CHECK_MSG(hit && bad == 0 && ingroup == 0, "raster %lldx%lld swizzle %d: %lld bad", npm, npn, swz, bad);
            free(hit);
        }
    for (int kc = 2; kc <= 8; kc *= 2) {
        int rows = 64, n = rows * kc, bad = 0;
        char *hit = calloc((size_t)n, 1);
        for (int r = 0; r < rows && hit; r++)
            for (int c = 0; c < kc; c++) {
                int o = gt_mma_soff(r, c, kc);
                bad += o % 8 || o < 0 || o >= n * 8 || hit[o / 8]++;
            }
        CHECK_MSG(hit && bad == 0, "layout kc=%d: %d bad", kc, bad);
        free(hit);
        for (int r0 = 0; r0 < rows; r0 += 8)
            for (int c = 0; c < kc; c++) {
                int banks = 0;
                for (int r = r0; r < r0 + 8; r++)
                    banks |= 1 << (gt_mma_soff(r, c, kc) * 2 / 16 % 8);
                CHECK_MSG(banks == 0xff, "kc=%d rows %d.. chunk %d: ldmatrix bank conflict", kc, r0, c);
            }
        /* the kernel's ldmatrix addresses: 16 rows further is + 16 rows of
         * bytes, chunk c ^ d is byte offset ^ (d << 4) */
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < kc; c++)
                for (int d = 0; d < kc; d++)
                    for (int i = 0; i < 3; i++)
                        CHECK(2 * gt_mma_soff(r + 16 * i, c ^ d, kc) ==
                              ((2 * gt_mma_soff(r, c, kc)) ^ (d << 4)) + i * 16 * kc * 16);
        for (int id0 = 0; id0 < n; id0 += 8) {
            int banks = 0;
            for (int id = id0; id < id0 + 8; id++)
                banks |= 1 << (gt_mma_soff(id / kc, id % kc, kc) * 2 / 16 % 8);
            CHECK_MSG(banks == 0xff, "kc=%d chunks %d..: cp.async bank conflict", kc, id0);
        }
    }
}

/* ---- host emulation of one CTA's data path ------------------------------------ */

/* PTX ISA, ldmatrix .x4: lane l supplies the address of row l%8 of matrix
 * l/8; lane t receives, in register i, elements 2(t%4) and 2(t%4)+1 of row
 * t/4 of matrix i. mma.m16n8k16 (bf16/f16): lane (g = t/4, q = t%4) holds
 * A regs {a0a1, a2a3, a4a5, a6a7} = (g, 2q), (g+8, 2q), (g, 2q+8),
 * (g+8, 2q+8) (+1 for the odd half); B regs {b0b1, b2b3} = k 2q, 2q+8 of
 * column g; C c0..c3 = (g, 2q), (g, 2q+1), (g+8, 2q), (g+8, 2q+1). */
typedef struct emu {
    const gt_mma_cfg *c;
    long long m, n, k, lda, ldb;
    const double *A, *B; /* A: m rows of lda; B: n rows of ldb (both along k) */
    double *smem;        /* one stage: bm rows then bn rows, bk each */
} emu;

/* gt_tile of the kernel, every thread's chunks: rows past rows_left and k
 * values past ke are zeros (cp.async src-size), chunks land at gt_mma_soff */
static void emu_tile(const emu *e, double *dst, const double *src, long long ld, long long rows,
                     long long rows_left, long long k0, long long ke)
{
    int kc = e->c->bk / 8;
    for (long long id = 0; id < rows * kc; id++) {
        int r = (int)(id / kc), c = (int)(id % kc);
        long long kk = k0 + c * 8, av = ke - kk;
        int bytes = r < rows_left && av > 0 ? (av >= 8 ? 16 : 2 * (int)av) : 0;
        for (int x = 0; x < 8; x++)
            dst[gt_mma_soff(r, c, kc) + x] = 2 * x < bytes ? src[r * ld + kk + x] : 0.0;
    }
}

/* the 4 registers (2 elements each) lane t receives from the ldmatrix.x4
 * of fragment f at k step kk of a warp whose tile starts at row w0: lane l
 * points at byte (2 soff(w0 + row(l), chunk(l)) ^ (kk << 5)) + f * 32 bk,
 * the kernel's address */
static void emu_ldsm4(const double *tile, int bk, int w0, int f, int kk, int isb, int t, double out[4][2])
{
    for (int i = 0; i < 4; i++) {
        int l = 8 * i + t / 4, r, c;
        if (isb)
            gt_mma_ldb_lane(l, &r, &c);
        else
            gt_mma_lda_lane(l, &r, &c);
        unsigned byte = ((2u * (unsigned)gt_mma_soff(w0 + r, c, bk / 8)) ^ ((unsigned)kk << 5)) + f * 32u * bk;
        const double *row = tile + byte / 2;
        out[i][0] = row[2 * (t % 4)];
        out[i][1] = row[2 * (t % 4) + 1];
    }
}

/* One CTA (tile pm, pn; split sk of splitk) into out (m x n, column-major,
 * accumulated): returns the number of elements stored. */
static long long emu_cta(const emu *e, long long pm, long long pn, int sk, double *out)
{
    const gt_mma_cfg *c = e->c;
    int wm_ = c->bm / c->warps_m, wn_ = c->bn / c->warps_n, mt = wm_ / 16, nt = wn_ / 8;
    gt_gen_geom g;
    gt_problem p = gen_test_prob(e->m, e->n, e->k, GT_DT_BF16, GT_DT_F32);
    gt_mma_geometry(&p, c, &g);
    long long row0 = pm * c->bm, col0 = pn * c->bn, kb = sk * g.kper;
    long long ke = kb + g.kper < e->k ? kb + g.kper : e->k, stored = 0;
    int nk = ke > kb ? (int)((ke - kb + c->bk - 1) / c->bk) : 0;
    double *acc = calloc((size_t)c->warps_m * c->warps_n * 32 * mt * nt * 4, sizeof *acc);
    if (!acc)
        return -1;
    for (int t = 0; t < nk; t++) {
        long long k0 = kb + (long long)t * c->bk;
        emu_tile(e, e->smem, e->A + row0 * e->lda, e->lda, c->bm, e->m - row0, k0, ke);
        emu_tile(e, e->smem + c->bm * c->bk, e->B + col0 * e->ldb, e->ldb, c->bn, e->n - col0, k0, ke);
        for (int w = 0; w < c->warps_m * c->warps_n; w++) {
            int wm = w % c->warps_m, wn = w / c->warps_m;
            for (int kk = 0; kk < c->bk / 16; kk++)
                for (int i = 0; i < mt; i++)
                    for (int j = 0; j < nt; j++) {
                        double LA[16][16], LB[16][8];
                        for (int ln = 0; ln < 32; ln++) {
                            double a[4][2], b[4][2];
                            int gq = ln / 4, q = ln % 4;
                            emu_ldsm4(e->smem, c->bk, wm * wm_, i, kk, 0, ln, a);
                            emu_ldsm4(e->smem + c->bm * c->bk, c->bk, wn * wn_, j / 2, kk, 1, ln, b);
                            for (int h = 0; h < 2; h++) {
                                LA[gq][2 * q + h] = a[0][h];
                                LA[gq + 8][2 * q + h] = a[1][h];
                                LA[gq][2 * q + 8 + h] = a[2][h];
                                LA[gq + 8][2 * q + 8 + h] = a[3][h];
                                /* n-tile j is registers {2(j%2), 2(j%2)+1} of its x4 */
                                LB[2 * q + h][gq] = b[2 * (j % 2)][h];
                                LB[2 * q + 8 + h][gq] = b[2 * (j % 2) + 1][h];
                            }
                        }
                        for (int ln = 0; ln < 32; ln++)
                            for (int x = 0; x < 4; x++) {
                                int r = ln / 4 + 8 * (x >> 1), col = 2 * (ln % 4) + (x & 1);
                                double s = 0;
                                for (int z = 0; z < 16; z++)
                                    s += LA[r][z] * LB[z][col];
                                acc[(((size_t)w * 32 + ln) * mt * nt + i * nt + j) * 4 + x] += s;
                            }
                    }
        }
    }
    /* the kernel's epilogue indices */
    for (int w = 0; w < c->warps_m * c->warps_n; w++)
        for (int ln = 0; ln < 32; ln++)
            for (int i = 0; i < mt; i++)
                for (int j = 0; j < nt; j++)
                    for (int x = 0; x < 4; x++) {
                        int wm = w % c->warps_m, wn = w / c->warps_m, gq = ln >> 2, t4 = ln & 3;
                        long long ii = row0 + wm * wm_ + 16 * i + gq + 8 * (x >> 1);
                        long long jj = col0 + wn * wn_ + 8 * j + 2 * t4 + (x & 1);
                        if (ii >= e->m || jj >= e->n)
                            continue;
                        out[jj * e->m + ii] += acc[(((size_t)w * 32 + ln) * mt * nt + i * nt + j) * 4 + x];
                        stored++;
                    }
    free(acc);
    return stored;
}

/* The emulated kernel (every CTA of the raster, every split, summed as the
 * reductions do) equals the product exactly (small integers: exact in
 * double), with every element of D stored once per split. */
static void test_emulation(void)
{
    static const struct {
        long long m, n, k, lda;
        gt_mma_cfg c;
    } cases[] = {
        {77, 45, 100, 104, {64, 64, 32, 2, 2, 3, 1, 0, 1, 0, 0, 0, 0}},
        {130, 70, 200, 200, {128, 64, 64, 4, 1, 4, 1, 0, 4, 0, 0, 0, 0}},
        {33, 17, 72, 72, {32, 16, 32, 1, 1, 2, 1, 0, 1, 0, 0, 0, 0}},
        {40, 100, 264, 264, {16, 32, 64, 1, 2, 2, 3, 2, 1, 0, 0, 0, 0}},
        {96, 48, 129, 136, {32, 48, 32, 2, 1, 5, 2, 1, 1, 0, 0, 0, 0}},
        {200, 300, 64, 64, {64, 128, 32, 2, 4, 2, 1, 0, 2, 0, 0, 0, 0}},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        emu e = {.c = &cases[ci].c, .m = cases[ci].m, .n = cases[ci].n, .k = cases[ci].k,
                 .lda = cases[ci].lda, .ldb = cases[ci].lda};
        const gt_mma_cfg *c = e.c;
        double *A = malloc(sizeof *A * (size_t)(e.m * e.lda)), *B = malloc(sizeof *B * (size_t)(e.n * e.ldb));
        double *out = calloc((size_t)(e.m * e.n), sizeof *out);
        e.smem = malloc(sizeof *e.smem * (size_t)((c->bm + c->bn) * c->bk));
        if (!A || !B || !out || !e.smem) {
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
                stored += emu_cta(&e, pm, pn, sk, out);
        }
        long long wrong = gen_test_wrong(out, A, B, e.m, e.n, e.k, e.lda, e.ldb);
        char text[256];
        gt_mma_cfg_text(c, text, sizeof text);
        CHECK_MSG(wrong == 0 && stored == e.m * e.n * c->splitk, "%lldx%lldx%lld %s: %lld wrong, %lld stored",
                  e.m, e.n, e.k, text, wrong, stored);
    next:
        free(A);
        free(B);
        free(out);
        free(e.smem);
    }
}

int main(void)
{
    RUN(test_index);
    RUN(test_emulation);
    return gt_test_done();
}
