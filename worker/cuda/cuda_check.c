/* cuda_check.c: how the cuda backend decides that a candidate is correct.
 *
 *   reference  exact double arithmetic on the exact inputs (NVRTC gt_ref),
 *              over every column of D for small problems, else over a fixed
 *              sample of columns of every batch entry (all m rows of each):
 *              the first, the last, and one column drawn from the prepare
 *              seed in each equal stratum of the rest, 64..256 columns with
 *              about 2^36 MACs. The lm_head shape (128256 x 8192 x 4096,
 *              4.3e12 MACs) then costs 130 columns, 6.8e10 MACs, instead of
 *              the whole GEMM in fp64, and 133 MB of device memory instead
 *              of 8 GB. The host recomputes 16 of its elements (corners
 *              included) from the device buffers before trusting it.
 *   validate   poison D (0xff: NaN in every float type; 0x80 bytes for
 *              integers), run the candidate once, then on the GPU: sum
 *              (out-ref)^2 and sum ref^2 in double over the reference's
 *              elements, and a scan of ALL of D counting non-finite or
 *              still-poisoned elements; a fixed-order reduction leaves 32
 *              bytes, the only copy to the host. One synchronization.
 *              rel_err = sqrt(sum diff^2 / sum ref^2) (absolute when the
 *              reference is all zero), NaN when any element of D is
 *              non-finite or unwritten: a NaN never passes.
 *
 * fp8: the reference multiplies the product by alpha x scale_a x scale_b
 * with the scales every candidate (cuBLASLt's and the generated kernels)
 * reads from the prepared problem's scale slots, set here to
 * GT_CUDA_VAL_SCALE_A/B rather than 1, so a kernel that drops or doubles a
 * scale fails.
 *
 * Sampling sees every row of A and a spread of B's columns; an error
 * confined to unsampled columns of D with finite values escapes it (the
 * scan still catches unwritten and non-finite ones there). The host
 * functions at the top mirror the GPU path exactly and need no GPU
 * (tests/unit/test_cuda_host.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_cuda.h"
#include "gt_util.h"

/* ---- host: plan, sample, semantics --------------------------------------- */

int64_t gt_cuda_ref_columns(int64_t m, int64_t n, int64_t k, int64_t batch)
{
    double macs = (double)m * (double)n * (double)k * (double)batch;
    double full_bytes = (double)m * (double)n * (double)batch * 8.0;
    if (macs <= GT_CUDA_FULL_REF_MACS && full_bytes <= (double)GT_CUDA_REF_BYTES)
        return n;
    double per_col = (double)m * (double)k * (double)batch; /* MACs per sampled column */
    double ns = floor(GT_CUDA_SAMPLE_MACS / (per_col > 1 ? per_col : 1));
    ns = ns < GT_CUDA_MIN_COLS ? GT_CUDA_MIN_COLS : ns > GT_CUDA_MAX_COLS ? GT_CUDA_MAX_COLS : ns;
    double fit = floor((double)GT_CUDA_REF_BYTES / ((double)m * (double)batch * 8.0));
    if (ns > fit)
        ns = fit;
    if (ns < 2)
        ns = 2; /* first and last, whatever the memory */
    return ns < (double)n ? (int64_t)ns : n;
}

void gt_cuda_sample_columns(uint64_t seed, int64_t n, int64_t ns, int64_t *cols)
{
    if (ns >= n || ns < 2) {
        for (int64_t c = 0; c < n && c < (ns < 1 ? 1 : ns); c++)
            cols[c] = c;
        return;
    }
    cols[0] = 0;
    cols[ns - 1] = n - 1;
    /* ns-2 disjoint strata of [1, n-1), one column in each: ascending and
     * distinct by construction, every part of D represented. */
    int64_t inner = n - 2, strata = ns - 2;
    for (int64_t s = 0; s < strata; s++) {
        int64_t lo = 1 + s * inner / strata, hi = 1 + (s + 1) * inner / strata;
        cols[s + 1] = lo + (int64_t)(gt_mix64(seed ^ gt_mix64((uint64_t)s)) % (uint64_t)(hi - lo));
    }
}

int gt_cuda_is_bad(int kt, const void *buf, size_t i)
{
    const unsigned char *p = buf;
    switch (kt) {
    case GT_CU_KT_F32:
    case GT_CU_KT_I32: {
        uint32_t u;
        memcpy(&u, p + i * 4, 4);
        return kt == GT_CU_KT_F32 ? (u & 0x7f800000u) == 0x7f800000u : u == 0x80808080u;
    }
    case GT_CU_KT_F64: {
        uint64_t u;
        memcpy(&u, p + i * 8, 8);
        return (u & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL;
    }
    case GT_CU_KT_F16:
    case GT_CU_KT_BF16: {
        uint16_t h;
        memcpy(&h, p + i * 2, 2);
        return kt == GT_CU_KT_F16 ? (h & 0x7c00) == 0x7c00 : (h & 0x7f80) == 0x7f80;
    }
    case GT_CU_KT_E4M3: return (p[i] & 0x7f) == 0x7f;
    case GT_CU_KT_E5M2: return (p[i] & 0x7c) == 0x7c;
    case GT_CU_KT_I8: return p[i] == 0x80;
    default: return 1;
    }
}

double gt_cuda_rel_from(double num, double den, uint64_t bad)
{
    if (bad || !isfinite(num) || !isfinite(den))
        return NAN;
    if (den == 0)
        return sqrt(num); /* all-zero reference: absolute error */
    return sqrt(num / den);
}

double gt_cuda_rel_err(int dkt, const void *out, int64_t m, int64_t n, int64_t ldd, int64_t batch,
                       int64_t sd, const int64_t *cols, int64_t ns, const double *ref)
{
    double num = 0, den = 0;
    uint64_t bad = 0;
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t c = 0; c < ns; c++) {
            int64_t j = cols ? cols[c] : c;
            size_t o = (size_t)(b * sd + j * ldd);
            const double *r = ref + (size_t)((b * ns + c) * m);
            for (int64_t i = 0; i < m; i++) {
                double e = gt_cu_decode(dkt, out, o + (size_t)i) - r[i];
                num += e * e;
                den += r[i] * r[i];
            }
        }
        for (int64_t j = 0; j < n; j++) /* the scan: all of D, padding excluded */
            for (int64_t i = 0; i < m; i++)
                bad += (uint64_t)gt_cuda_is_bad(dkt, out, (size_t)(b * sd + j * ldd + i));
    }
    return gt_cuda_rel_from(num, den, bad);
}

/* ---- device: layout, reference, spot-check -------------------------------- */

#define VAL(x) (((x) + 255) / 256 * 256)

size_t gt_cuda_vbuf_bytes(const gt_problem *p, int64_t ns)
{
    size_t ref = (size_t)(p->m * ns * p->batch) * sizeof(double);
    size_t cols = ns < p->n ? (size_t)ns * sizeof(long long) : 0;
    return VAL(ref) + VAL(cols) + VAL(2 * GT_CUDA_PARTS * sizeof(double)) +
           VAL(GT_CUDA_PARTS * sizeof(unsigned long long)) + VAL(4 * sizeof(double));
}

static void vbuf_layout(gt_bk_prob *pp)
{
    const gt_problem *p = &pp->p;
    char *q = pp->vbuf;
    size_t ref = (size_t)(p->m * pp->ns * p->batch) * sizeof(double);
    pp->ref = (double *)q, q += VAL(ref);
    if (pp->cols)
        pp->dcols = (long long *)q, q += VAL((size_t)pp->ns * sizeof(long long));
    pp->part = (double *)q, q += VAL(2 * GT_CUDA_PARTS * sizeof(double));
    pp->bad = (unsigned long long *)q, q += VAL(GT_CUDA_PARTS * sizeof(unsigned long long));
    pp->dout = (double *)q;
}

/* Copies `count` elements of type kt starting at element `first`, `stride`
 * elements apart, from the device into host memory. */
static int fetch(gt_bk_ctx *ctx, const void *dev, int kt, int64_t first, int64_t stride,
                 int64_t count, void *host, char *err, size_t errlen)
{
    size_t es = gt_cu_kt_size(kt);
    const char *src = (const char *)dev + (size_t)first * es;
    cudaError_t e = stride == 1 ? cudaMemcpy(host, src, (size_t)count * es, cudaMemcpyDeviceToHost)
                                : cudaMemcpy2D(host, es, src, (size_t)stride * es, es,
                                               (size_t)count, cudaMemcpyDeviceToHost);
    return gt_cuda_ck(ctx, e, "reference spot-check copy", err, errlen);
}

static double act_host(int act, double v)
{
    if (act == GT_CAPS_ACT_RELU)
        return v > 0 ? v : 0;
    if (act == GT_CAPS_ACT_GELU)
        return 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    return v;
}

/* 16 reference elements (first and last corner included) recomputed on the
 * host from the device buffers; each must agree to 1e-9 of the sum of
 * magnitudes of its terms. */
static int spot_check(gt_bk_prob *pp, char *err, size_t errlen)
{
    const gt_problem *p = &pp->p;
    const gt_cu_map *m = &pp->map;
    gt_bk_ctx *ctx = pp->ctx;
    int rc = -1;
    char *ra = malloc((size_t)p->k * 8), *rb = malloc((size_t)p->k * 8);
    if (!ra || !rb) {
        snprintf(err, errlen, "cuda: out of host memory");
        goto out;
    }
    uint64_t r = pp->seed ^ 0x5151;
    for (int s = 0; s < 16; s++) {
        int64_t b, i, c;
        if (s == 0) {
            b = i = c = 0;
        } else if (s == 1) {
            b = p->batch - 1, i = p->m - 1, c = pp->ns - 1;
        } else {
            b = (int64_t)((r = gt_mix64(r)) % (uint64_t)p->batch);
            i = (int64_t)((r = gt_mix64(r)) % (uint64_t)p->m);
            c = (int64_t)((r = gt_mix64(r)) % (uint64_t)pp->ns);
        }
        int64_t j = pp->cols ? pp->cols[c] : c;
        int ta = p->trans_a == 'T', tb = p->trans_b == 'T';
        double got = 0;
        if (fetch(ctx, pp->val.a, m->akt, b * p->stride_a + (ta ? i * p->lda : i), ta ? 1 : p->lda,
                  p->k, ra, err, errlen) ||
            fetch(ctx, pp->val.b, m->bkt, b * p->stride_b + (tb ? j : j * p->ldb), tb ? p->ldb : 1,
                  p->k, rb, err, errlen) ||
            fetch(ctx, pp->ref, GT_CU_KT_F64, (b * pp->ns + c) * p->m + i, 1, 1, &got, err, errlen))
            goto out;
        double acc = 0, mag = 0;
        for (int64_t kk = 0; kk < p->k; kk++) {
            double x = gt_cu_decode(m->akt, ra, (size_t)kk) * gt_cu_decode(m->bkt, rb, (size_t)kk);
            acc += x;
            mag += fabs(x);
        }
        double v = pp->ref_alpha * acc;
        mag = fabs(pp->ref_alpha) * mag;
        if (p->beta != 0) {
            char cv[8];
            if (fetch(ctx, pp->val.c, m->ckt, b * p->stride_c + i + j * p->ldc, 1, 1, cv, err,
                      errlen))
                goto out;
            double cc = p->beta * gt_cu_decode(m->ckt, cv, 0);
            v += cc;
            mag += fabs(cc);
        }
        if (m->has_bias) {
            char bv[8];
            if (fetch(ctx, pp->bias, m->bias_kt, i, 1, 1, bv, err, errlen))
                goto out;
            double bb = gt_cu_decode(m->bias_kt, bv, 0);
            v += bb;
            mag += fabs(bb);
        }
        v = act_host(m->act, v);
        if (!(fabs(got - v) <= 1e-9 * (mag + 1.0))) {
            snprintf(err, errlen,
                     "cuda: reference self-check failed at batch %lld row %lld col %lld: gpu %.17g "
                     "host %.17g",
                     (long long)b, (long long)i, (long long)j, got, v);
            goto out;
        }
    }
    rc = 0;
out:
    free(ra);
    free(rb);
    return rc;
}

/* fp8: the validation scales into the A and B slots (the D scale stays 1),
 * and the reference's product multiplier alpha x scale_a x scale_b, as
 * cuBLASLt applies them (to the product only, not to C or the bias). */
static int set_scales(gt_bk_prob *pp, char *err, size_t errlen)
{
    pp->ref_alpha = pp->p.alpha;
    if (!pp->map.fp8)
        return 0;
    const float sa = GT_CUDA_VAL_SCALE_A, sb = GT_CUDA_VAL_SCALE_B;
    pp->ref_alpha = pp->p.alpha * (double)sa * (double)sb;
    return gt_cuda_ck(pp->ctx, cudaMemcpyAsync(pp->scales, &sa, sizeof sa, cudaMemcpyHostToDevice,
                                               pp->ctx->stream),
                      "copy scale_a", err, errlen) ||
           gt_cuda_ck(pp->ctx, cudaMemcpyAsync(pp->scales + GT_CUDA_SCALE_SLOT, &sb, sizeof sb,
                                               cudaMemcpyHostToDevice, pp->ctx->stream),
                      "copy scale_b", err, errlen);
}

int gt_cuda_reference(gt_bk_prob *pp, char *err, size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    const gt_problem *p = &pp->p;
    vbuf_layout(pp);
    if (set_scales(pp, err, errlen) != 0)
        return -1;
    if (pp->cols && gt_cuda_ck(ctx, cudaMemcpyAsync(pp->dcols, pp->cols,
                                                    (size_t)pp->ns * sizeof(long long),
                                                    cudaMemcpyHostToDevice, ctx->stream),
                               "copy reference columns", err, errlen))
        return -1;
    gt_cuda_ref_args g = {
        .a = pp->val.a, .b = pp->val.b, .c = pp->val.c, .bias = pp->bias, .r = pp->ref,
        .cols = pp->dcols, .m = p->m, .n = p->n, .k = p->k, .lda = p->lda, .ldb = p->ldb,
        .ldc = p->ldc, .sa = p->stride_a, .sb = p->stride_b, .sc = p->stride_c, .ns = pp->ns,
        .ta = pp->map.akt, .tb = pp->map.bkt, .tc = pp->map.ckt, .tbias = pp->map.bias_kt,
        .transa = p->trans_a == 'T', .transb = p->trans_b == 'T', .act = pp->map.act,
        .has_c = p->beta != 0, .has_bias = pp->map.has_bias, .alpha = pp->ref_alpha, .beta = p->beta,
    };
    if (p->batch == 1)
        g.sa = g.sb = g.sc = 0;
    double t0 = gt_mono_ms();
    if (gt_cuda_ref(ctx->kern, ctx->stream, &g, p->batch, err, errlen) ||
        gt_cuda_ck(ctx, cudaStreamSynchronize(ctx->stream), "reference kernel", err, errlen))
        return -1;
    pp->ref_ms = gt_mono_ms() - t0;
    return spot_check(pp, err, errlen);
}

/* ---- validate -------------------------------------------------------------- */

static int check_enqueue(gt_bk_prob *pp, char *err, size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    const gt_problem *p = &pp->p;
    gt_cuda_check_args a = {
        .d = pp->val.d, .r = pp->ref, .cols = pp->dcols, .part = pp->part, .bad = pp->bad,
        .out = pp->dout, .m = p->m, .n = p->n, .ns = pp->ns, .batch = p->batch, .ldd = p->ldd,
        .sd = p->batch > 1 ? p->stride_d : 0, .dkt = pp->map.dkt,
    };
    return gt_cuda_check_launch(ctx->kern, ctx->stream, &a, err, errlen) ||
           gt_cuda_ck(ctx, cudaMemcpyAsync(pp->hout, pp->dout, 4 * sizeof(double),
                                           cudaMemcpyDeviceToHost, ctx->stream),
                      "copy comparison result", err, errlen);
}

static double result(const gt_bk_prob *pp)
{
    uint64_t bad;
    memcpy(&bad, &pp->hout[2], sizeof bad);
    return gt_cuda_rel_from(pp->hout[0], pp->hout[1], bad);
}

int gt_cuda_check(gt_bk_prob *pp, double *rel_err, char *err, size_t errlen)
{
    *rel_err = NAN;
    if (gt_cuda_alive(pp->ctx, err, errlen) != 0 || check_enqueue(pp, err, errlen) ||
        gt_cuda_ck(pp->ctx, cudaStreamSynchronize(pp->ctx->stream), "comparison", err, errlen))
        return -1;
    *rel_err = result(pp);
    return 0;
}

int gt_cuda_validate(gt_bk_prob *pp, gt_bk_cand *c, double *rel_err, char *err, size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    const gt_cu_desc *d = &pp->desc;
    *rel_err = NAN;
    if (gt_cuda_alive(ctx, err, errlen) != 0)
        return -1;
    /* 0xff bytes are NaN in every float type we write (f64, f32, f16, bf16,
     * e4m3fn, e5m2); integers get 0x80 bytes, which no valid output equals
     * (i8 -128 would also be a saturated result, which the unclamped
     * reference rejects anyway). Padding between columns stays poisoned and
     * is never looked at. */
    int poison = (pp->map.dkt == GT_CU_KT_I8 || pp->map.dkt == GT_CU_KT_I32) ? 0x80 : 0xff;
    const gt_cuda_set *s = &pp->val;
    if (gt_cuda_ck(ctx, cudaMemsetAsync(s->d, poison, pp->d_sz, ctx->stream), "poison D", err,
                   errlen) ||
        gt_cuda_check_mark(pp, 0, err, errlen) ||
        gt_cuda_ckb(ctx,
                    cublasLtMatmul(ctx->lt, d->op, pp->map.alpha, s->a, d->a, s->b, d->b,
                                   pp->map.beta, s->c, d->c, s->d, d->d, &c->algo, ctx->ws,
                                   ctx->ws_size, ctx->stream),
                    "cublasLtMatmul", err, errlen) ||
        gt_cuda_check_mark(pp, 1, err, errlen) ||
        check_enqueue(pp, err, errlen) ||
        gt_cuda_ck(ctx, cudaStreamSynchronize(ctx->stream), "validation run", err, errlen))
        return -1;
    *rel_err = result(pp);
    c->check_us = gt_cuda_check_us(pp);
    return 0;
}

/* The validation run's kernel time: events around the candidate's calls
 * only (after the poison, before the comparison), so the screen's early exit
 * can stop a far too slow candidate on this one run (gt_cuda_time). */
int gt_cuda_check_mark(gt_bk_prob *pp, int end, char *err, size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    if (gt_cuda_events(ctx, 2, err, errlen))
        return -1;
    return gt_cuda_ck(ctx, cudaEventRecord(ctx->ev[end ? 1 : 0], ctx->stream), "cudaEventRecord", err,
                      errlen);
}

double gt_cuda_check_us(gt_bk_prob *pp)
{
    float ms = 0;
    if (cudaEventElapsedTime(&ms, pp->ctx->ev[0], pp->ctx->ev[1]) != cudaSuccess)
        return 0; /* no time: the early exit waits for the calibration */
    return (double)ms * 1000.0;
}
