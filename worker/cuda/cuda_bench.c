/* cuda_bench.c: the cuda backend's per-problem work: prepare (device
 * buffers, random inputs, the heuristic's algos, then the reference in
 * cuda_check.c) and time (events, rotating input sets, calibrated
 * iterations, repeats). validate is in cuda_check.c.
 *
 * Per-candidate work is kept small for throughput: no device allocation,
 * no memset or host copy beyond validate's poison and 32-byte result, one
 * stream, a pool of events created once per context; time() synchronizes
 * once or twice to calibrate and once for all repeats (launch=graph: once
 * more, after the graph's warm-up replay). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gen_cuda.h"
#include "gt_cuda.h"
#include "gt_policy.h"
#include "gt_util.h"

#define ALIGN 256
#define MEM_MARGIN ((size_t)1 << 30) /* left free for cuBLASLt and the rest */

static size_t al(size_t x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

/* Fresh per prepare: time, pid and a counter, so two prepares of the same
 * problem never see the same inputs. */
static uint64_t fresh_seed(void)
{
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return gt_mix64((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec) ^
           gt_mix64(((uint64_t)getpid() << 32) ^ ++counter);
}

static int mem_free(gt_bk_ctx *ctx, size_t *fr, char *err, size_t errlen)
{
    size_t total = 0;
    return gt_cuda_ck(ctx, cudaMemGetInfo(fr, &total), "cudaMemGetInfo", err, errlen);
}

/* ---- prepare ------------------------------------------------------------- */

/* The sizes of pp's buffers for pp->p (mapped in pp->map): what prepare
 * allocates, and what gt_cuda_fits checks against free memory without
 * allocating. *base: inputs, output, bias and scales; *vbuf: the
 * reference's; *bias: the bias vector's (within *base). */
static void layout(gt_bk_prob *pp, size_t *base, size_t *vbuf, size_t *bias)
{
    const gt_problem *p = &pp->p;
    const gt_cu_map *m = &pp->map;
    int an = p->trans_a == 'N', bn = p->trans_b == 'N';
    pp->a_n = gt_cu_span(p->lda, an ? p->k : p->m, p->batch, p->stride_a);
    pp->b_n = gt_cu_span(p->ldb, bn ? p->n : p->k, p->batch, p->stride_b);
    pp->c_n = gt_cu_span(p->ldc, p->n, p->batch, p->stride_c);
    pp->d_n = gt_cu_span(p->ldd, p->n, p->batch, p->stride_d);
    pp->a_sz = (size_t)pp->a_n * gt_cu_kt_size(m->akt);
    pp->b_sz = (size_t)pp->b_n * gt_cu_kt_size(m->bkt);
    pp->c_sz = (size_t)pp->c_n * gt_cu_kt_size(m->ckt);
    pp->d_sz = (size_t)pp->d_n * gt_cu_kt_size(m->dkt);
    pp->c_inplace = p->beta == 0 && p->c_type == p->d_type && p->ldc == p->ldd &&
                    (p->batch == 1 || p->stride_c == p->stride_d);
    pp->rotate_c = p->beta != 0;
    pp->set_bytes = al(pp->a_sz) + al(pp->b_sz) + al(pp->d_sz) + (pp->rotate_c ? al(pp->c_sz) : 0);
    *bias = m->has_bias ? (size_t)p->m * gt_cu_kt_size(m->bias_kt) : 0;
    *base = al(pp->a_sz) + al(pp->b_sz) + al(pp->d_sz) + (pp->c_inplace ? 0 : al(pp->c_sz)) +
            al(*bias) + 4 * GT_CUDA_SCALE_SLOT * sizeof(float);
    /* The reference's columns (all, or a sample drawn from prepare's seed):
     * see cuda_check.c. */
    pp->ns = gt_cuda_ref_columns(p->m, p->n, p->k, p->batch);
    *vbuf = gt_cuda_vbuf_bytes(p, pp->ns);
}

static int too_big(size_t need, size_t fr, char *err, size_t errlen)
{
    if (need + MEM_MARGIN <= fr)
        return 0;
    snprintf(err, errlen, "cuda: problem needs %zu MiB of device memory, %zu MiB free",
             (need + MEM_MARGIN) >> 20, fr >> 20);
    return 1;
}

int gt_cuda_fits(gt_bk_ctx *ctx, const gt_problem *p, const gt_cu_map *m, char *err, size_t errlen)
{
    gt_bk_prob t;
    memset(&t, 0, sizeof t);
    t.p = *p;
    gt_problem_finish(&t.p);
    t.map = *m;
    size_t base, vbuf, bias, fr = 0;
    layout(&t, &base, &vbuf, &bias);
    if (mem_free(ctx, &fr, err, errlen) != 0)
        return -1;
    return too_big(base + vbuf, fr, err, errlen) ? -1 : 0;
}

/* The heuristic's results for the prepared descriptors (up to 32, what an
 * untuned caller would pick from): build runs their exact algo bytes for an
 * equal config, since re-creating an algo from its attributes does not
 * always reproduce it bit for bit. A heuristic that refuses p leaves none
 * (nheur 0) and is no error: the generated families and the cuBLASLt
 * configs AlgoCheck accepts still run (issue 18; the job's default then
 * fails to build, gt_cuda_no_default). Only a failure to ask is. */
static int heuristics(gt_bk_prob *pp, char *err, size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t r[GT_CUDA_HEUR_MAX];
    int n = 0;
    uint64_t ws = ctx->ws_size;
    cublasStatus_t s = cublasLtMatmulPreferenceCreate(&pref);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &ws, sizeof ws);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(ctx->lt, pp->desc.op, pp->desc.a, pp->desc.b,
                                           pp->desc.c, pp->desc.d, pref, GT_CUDA_HEUR_MAX, r, &n);
    if (pref)
        (void)cublasLtMatmulPreferenceDestroy(pref);
    pp->nheur = 0;
    if (s != CUBLAS_STATUS_SUCCESS || n < 1) {
        /* the refusal itself, not a broken context: what
         * cublasLtMatmulAlgoGetHeuristic answers for a problem it has no
         * algorithm for (CUBLAS_STATUS_NOT_SUPPORTED, INVALID_VALUE, or no
         * result) */
        if (s != CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_NOT_SUPPORTED && s != CUBLAS_STATUS_INVALID_VALUE) {
            snprintf(err, errlen, "cuda: cuBLASLt heuristic: %s", gt_cu_status_name(s));
            return -1;
        }
        return 0;
    }
    for (int i = 0; i < n && i < GT_CUDA_HEUR_MAX; i++) {
        gt_cuda_heur *h = &pp->heur[pp->nheur];
        char why[160];
        if (r[i].state != CUBLAS_STATUS_SUCCESS ||
            gt_cu_lt_cfg_from_algo(&gt_cu_lt_linked, &r[i].algo, &h->cfg, why, sizeof why) != 0 ||
            gt_cuda_heur_find(pp, &h->cfg, NULL, NULL))
            continue; /* unreadable or a repeat: the first one stands */
        h->algo = r[i].algo;
        h->ws = r[i].workspaceSize;
        pp->nheur++;
    }
    return 0;
}

int gt_cuda_heur_find(const gt_bk_prob *pp, const gt_cu_lt_cfg *c, cublasLtMatmulAlgo_t *algo,
                      size_t *ws)
{
    for (int i = 0; i < pp->nheur; i++) {
        if (gt_cu_lt_cfg_equal(&pp->heur[i].cfg, c)) {
            if (algo)
                *algo = pp->heur[i].algo;
            if (ws)
                *ws = pp->heur[i].ws;
            return 1;
        }
    }
    return 0;
}

int gt_cuda_prepare(gt_bk_ctx *ctx, const gt_problem *p, gt_bk_prob **out, char *err,
                    size_t errlen)
{
    *out = NULL;
    if (gt_cuda_alive(ctx, err, errlen) != 0)
        return -1;
    gt_bk_prob *pp = calloc(1, sizeof *pp);
    if (!pp) {
        snprintf(err, errlen, "cuda: out of host memory");
        return -1;
    }
    pp->ctx = ctx;
    pp->p = *p;
    gt_problem_finish(&pp->p);
    p = &pp->p;
    gt_cu_map *m = &pp->map;
    if (gt_cu_map_problem(p, ctx->sm, m, err, errlen) != 0)
        goto fail;
    if (!ctx->kern && gt_cuda_kernels_load(ctx->sm, &ctx->kern, err, errlen) != 0)
        goto fail;

    pp->seed = fresh_seed();
    size_t base_sz, vbuf_sz, bias_sz, fr = 0;
    layout(pp, &base_sz, &vbuf_sz, &bias_sz);
    if (pp->ns < p->n) {
        if (!(pp->cols = malloc((size_t)pp->ns * sizeof *pp->cols))) {
            snprintf(err, errlen, "cuda: out of host memory");
            goto fail;
        }
        gt_cuda_sample_columns(pp->seed ^ 0xc01c01ULL, p->n, pp->ns, pp->cols);
    }
    if (mem_free(ctx, &fr, err, errlen) != 0)
        goto fail;
    if (too_big(base_sz + vbuf_sz, fr, err, errlen))
        goto fail;
    if (gt_cuda_ck(ctx, cudaMalloc(&pp->base, base_sz), "cudaMalloc(inputs)", err, errlen) ||
        gt_cuda_ck(ctx, cudaMalloc(&pp->vbuf, vbuf_sz), "cudaMalloc(reference)", err, errlen) ||
        gt_cuda_ck(ctx, cudaMallocHost((void **)&pp->hout, 4 * sizeof(double)),
                   "cudaMallocHost(result)", err, errlen))
        goto fail;
    char *q = pp->base;
    pp->val.a = q, q += al(pp->a_sz);
    pp->val.b = q, q += al(pp->b_sz);
    pp->val.d = q, q += al(pp->d_sz);
    if (pp->c_inplace)
        pp->val.c = pp->val.d;
    else
        pp->val.c = q, q += al(pp->c_sz);
    pp->bias = m->has_bias ? q : NULL, q += al(bias_sz);
    pp->scales = (float *)q;
    pp->sets = calloc(1, sizeof *pp->sets);
    if (!pp->sets) {
        snprintf(err, errlen, "cuda: out of host memory");
        goto fail;
    }
    pp->sets[0] = pp->val;
    pp->nsets = 1;

    float scales[4 * GT_CUDA_SCALE_SLOT] = {0}; /* a, b, d scale 1.0; amax slot 0 */
    scales[0] = scales[GT_CUDA_SCALE_SLOT] = scales[2 * GT_CUDA_SCALE_SLOT] = 1.0f;
    if (gt_cuda_fill(ctx->kern, ctx->stream, pp->val.a, pp->a_n, m->akt, pp->seed + 1, err, errlen) ||
        gt_cuda_fill(ctx->kern, ctx->stream, pp->val.b, pp->b_n, m->bkt, pp->seed + 2, err, errlen) ||
        (!pp->c_inplace && gt_cuda_fill(ctx->kern, ctx->stream, pp->val.c, pp->c_n, m->ckt,
                                        pp->seed + 3, err, errlen)) ||
        (m->has_bias && gt_cuda_fill(ctx->kern, ctx->stream, pp->bias, p->m, m->bias_kt,
                                     pp->seed + 4, err, errlen)) ||
        gt_cuda_ck(ctx, cudaMemcpyAsync(pp->scales, scales, sizeof scales, cudaMemcpyHostToDevice,
                                        ctx->stream),
                   "copy scales", err, errlen) ||
        gt_cuda_ck(ctx, cudaStreamSynchronize(ctx->stream), "fill inputs", err, errlen))
        goto fail;

    gt_cu_ptrs ptrs = {pp->bias, pp->scales, pp->scales + GT_CUDA_SCALE_SLOT,
                       pp->scales + 2 * GT_CUDA_SCALE_SLOT};
    /* The generated family's compiles start now, on the other cores, while
     * the reference runs: by the first build they are (mostly) done. */
    gt_cuda_gen_prepare(pp);
    if (gt_cu_desc_create(p, m, &ptrs, &pp->desc, err, errlen) != 0 ||
        heuristics(pp, err, errlen) != 0 || gt_cuda_reference(pp, err, errlen) != 0)
        goto fail;
    *out = pp;
    return 0;
fail:
    gt_cuda_unprepare(pp);
    return -1;
}

static void free_rot(gt_bk_prob *pp)
{
    if (pp->rot)
        (void)cudaFree(pp->rot);
    pp->rot = NULL;
    pp->nsets = pp->sets ? 1 : 0;
    pp->next = 0;
    pp->rot_want = 0;
    pp->sets_gen++;
}

void gt_cuda_unprepare(gt_bk_prob *pp)
{
    if (!pp)
        return;
    if (pp->val_n > 0) {
        gt_cu_cache_stats cs;
        gt_cu_cache_stats_get(&cs);
        gt_info("cuda: %d validations, %.0f ms: %.0f ms in the candidates' kernels, %.0f ms around them;"
                " compiles so far %ld (%.0f ms on %d threads), disk hits %ld",
                pp->val_n, pp->val_wall_ms, pp->val_kernel_ms, pp->val_wall_ms - pp->val_kernel_ms,
                cs.compiles, cs.compile_ms, cs.threads, cs.disk_hits);
    }
    /* Frees are best effort: after a sticky error they fail, and the
     * process is restarted anyway. */
    free_rot(pp);
    gt_cuda_gen_unprepare(pp);
    if (pp->base)
        (void)cudaFree(pp->base);
    if (pp->vbuf)
        (void)cudaFree(pp->vbuf);
    if (pp->hout)
        (void)cudaFreeHost(pp->hout);
    gt_cu_desc_destroy(&pp->desc);
    free(pp->sets);
    free(pp->cols);
    free(pp);
}

/* Sizes the rotating sets: their total exceeds the requested bytes (default:
 * twice L2, or the problem's rotating_mb), at least two sets so that no
 * operand stays in L2 from one call to the next, within free memory. */
static int ensure_sets(gt_bk_prob *pp, int64_t req, char *err, size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    int64_t want = req > 0 ? req : pp->p.rotating_mb > 0 ? pp->p.rotating_mb << 20 : 2 * ctx->l2_bytes;
    if (want == pp->rot_want && pp->nsets >= 1)
        return 0;
    free_rot(pp);
    int64_t n = (want + (int64_t)pp->set_bytes - 1) / (int64_t)pp->set_bytes;
    if (n < 2)
        n = 2;
    if (n > 1024)
        n = 1024;
    size_t fr = 0;
    if (mem_free(ctx, &fr, err, errlen) != 0)
        return -1;
    int64_t fit = fr > MEM_MARGIN ? (int64_t)((fr - MEM_MARGIN) / pp->set_bytes) + 1 : 1;
    if (n > fit)
        n = fit;
    gt_cuda_set *sets = realloc(pp->sets, (size_t)n * sizeof *sets);
    if (!sets) {
        snprintf(err, errlen, "cuda: out of host memory");
        return -1;
    }
    pp->sets = sets;
    if (n > 1) {
        if (gt_cuda_ck(ctx, cudaMalloc(&pp->rot, (size_t)(n - 1) * pp->set_bytes),
                       "cudaMalloc(rotating sets)", err, errlen))
            return -1;
        char *q = pp->rot;
        for (int64_t s = 1; s < n; s++) {
            gt_cuda_set *st = &sets[s];
            st->a = q, q += al(pp->a_sz);
            st->b = q, q += al(pp->b_sz);
            st->d = q, q += al(pp->d_sz);
            if (pp->rotate_c)
                st->c = q, q += al(pp->c_sz);
            else
                st->c = pp->c_inplace ? st->d : pp->val.c; /* never read: beta == 0 */
            if (gt_cuda_ck(ctx, cudaMemcpyAsync(st->a, pp->val.a, pp->a_sz, cudaMemcpyDeviceToDevice, ctx->stream), "copy set A", err, errlen) ||
                gt_cuda_ck(ctx, cudaMemcpyAsync(st->b, pp->val.b, pp->b_sz, cudaMemcpyDeviceToDevice, ctx->stream), "copy set B", err, errlen) ||
                (pp->rotate_c && gt_cuda_ck(ctx, cudaMemcpyAsync(st->c, pp->val.c, pp->c_sz, cudaMemcpyDeviceToDevice, ctx->stream), "copy set C", err, errlen)))
                return -1;
        }
        if (gt_cuda_ck(ctx, cudaStreamSynchronize(ctx->stream), "copy rotating sets", err, errlen))
            return -1;
    }
    pp->nsets = (int)n;
    pp->rot_want = want;
    return 0;
}

/* ---- running ------------------------------------------------------------- */

static int run(gt_bk_prob *pp, gt_bk_cand *c, const gt_cuda_set *s, char *err, size_t errlen)
{
    if (c->gen)
        return gt_cuda_gen_run(pp, c, s, err, errlen); /* a generated kernel, same sets and events */
    gt_bk_ctx *ctx = pp->ctx;
    const gt_cu_desc *d = &pp->desc;
    cublasStatus_t st = cublasLtMatmul(ctx->lt, d->op, pp->map.alpha, s->a, d->a, s->b, d->b,
                                       pp->map.beta, s->c, d->c, s->d, d->d, &c->algo, ctx->ws,
                                       ctx->ws_size, ctx->stream);
    return gt_cuda_ckb(ctx, st, "cublasLtMatmul", err, errlen);
}

/* Issues n calls rotating through the sets. */
static int calls(gt_bk_prob *pp, gt_bk_cand *c, int n, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++) {
        if (run(pp, c, &pp->sets[pp->next], err, errlen) != 0)
            return -1;
        if (++pp->next >= pp->nsets)
            pp->next = 0;
    }
    return 0;
}

/* Times n calls between two events (one synchronization); ms per call. */
static int timed(gt_bk_prob *pp, gt_bk_cand *c, int n, double *ms_per_call, char *err,
                 size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    float ms = 0;
    if (gt_cuda_ck(ctx, cudaEventRecord(ctx->ev[0], ctx->stream), "cudaEventRecord", err, errlen) ||
        calls(pp, c, n, err, errlen) ||
        gt_cuda_ck(ctx, cudaEventRecord(ctx->ev[1], ctx->stream), "cudaEventRecord", err, errlen) ||
        gt_cuda_ck(ctx, cudaEventSynchronize(ctx->ev[1]), "timed run", err, errlen) ||
        gt_cuda_ck(ctx, cudaEventElapsedTime(&ms, ctx->ev[0], ctx->ev[1]), "cudaEventElapsedTime",
                   err, errlen))
        return -1;
    *ms_per_call = ms / n;
    return 0;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(const double *v, int n, double q)
{
    double pos = q * (n - 1);
    int lo = (int)pos;
    if (lo >= n - 1)
        return v[n - 1];
    return v[lo] + (pos - lo) * (v[lo + 1] - v[lo]);
}

#define MAX_ITERS 1000000
#define MAX_REPEATS 1000

/* ---- launch=graph ---------------------------------------------------------
 *
 * Applications run decode GEMMs back to back inside CUDA graphs (PyTorch's
 * CUDA graphs, Inductor's autotune_cudagraph_benchmarking, TensorRT-LLM's
 * AutoTuner), where no launch latency or host enqueue rate stands between
 * two calls. With launch=graph each repeat replays one graph of the calls
 * instead of launching them: captured once per timing on the context's
 * stream, instantiated and uploaded once, freed at the end. The graph holds
 * whole rotations through the input sets (a multiple of nsets calls, from
 * the set rotation continues at), so replays back to back meet the sets in
 * the order plain calls do and every operand comes from beyond L2 as
 * before. cuBLASLt is capturable with a fixed workspace: every call passes
 * the context's one workspace, allocated at open. */

/* Calls captured into one graph at most (rounded up to whole rotations):
 * enough for a repeat of short kernels, while instantiating stays in the
 * milliseconds; a repeat that needs more calls replays it several times. */
#define GRAPH_MAX_CALLS 2048

/* The calls one graph holds for a repeat of `iters` calls over nsets sets. */
static int graph_calls(int iters, int nsets)
{
    int want = iters < GRAPH_MAX_CALLS ? iters : GRAPH_MAX_CALLS;
    int per = nsets > 0 ? nsets : 1;
    return (want + per - 1) / per * per;
}

/* Captures n calls of c (rotating through the sets from pp->next, as calls()
 * does) into an executable graph, uploaded to the device. A call that cannot
 * be captured (an algorithm that synchronizes or allocates) fails the
 * candidate with the reason: it is never timed another way. */
static int graph_capture(gt_bk_prob *pp, gt_bk_cand *c, int n, cudaGraphExec_t *exec, char *err,
                         size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    cudaGraph_t g = NULL;
    char why[256] = "";
    *exec = NULL;
    /* thread-local: the generated families' background compiles (other
     * threads) may load modules meanwhile without invalidating the capture */
    if (gt_cuda_ck(ctx, cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal),
                   "graph: cudaStreamBeginCapture", err, errlen))
        return -1;
    int crc = calls(pp, c, n, why, sizeof why);
    /* always ended, so that the stream leaves capture mode whatever failed */
    cudaError_t e = cudaStreamEndCapture(ctx->stream, &g);
    if (crc != 0) {
        (void)cudaGetLastError(); /* the capture error is not sticky: clear it */
        snprintf(err, errlen, "graph capture failed (launch=graph times only what a CUDA graph "
                              "can hold): %.200s", why);
        goto fail;
    }
    if (gt_cuda_ck(ctx, e, "graph capture failed: cudaStreamEndCapture", err, errlen) ||
        gt_cuda_ck(ctx, cudaGraphInstantiate(exec, g, 0), "graph: cudaGraphInstantiate", err,
                   errlen) ||
        gt_cuda_ck(ctx, cudaGraphUpload(*exec, ctx->stream), "graph: cudaGraphUpload", err, errlen))
        goto fail;
    (void)cudaGraphDestroy(g); /* the executable graph keeps what it needs */
    return 0;
fail:
    if (*exec)
        (void)cudaGraphExecDestroy(*exec);
    *exec = NULL;
    if (g)
        (void)cudaGraphDestroy(g);
    return -1;
}

/* Enqueues `reps` replays of exec (no synchronization). */
static int graph_replays(gt_bk_ctx *ctx, cudaGraphExec_t exec, int reps, char *err, size_t errlen)
{
    for (int i = 0; i < reps; i++)
        if (gt_cuda_ck(ctx, cudaGraphLaunch(exec, ctx->stream), "cudaGraphLaunch", err, errlen))
            return -1;
    return 0;
}

void gt_cuda_graph_drop(gt_bk_cand *c)
{
    if (c->gexec)
        (void)cudaGraphExecDestroy(c->gexec); /* best effort: after a sticky error it fails */
    c->gexec = NULL;
    c->gexec_calls = 0;
}

/* The graph's part of a timing (after calibration): captures the calls of
 * one repeat (at least `iters`, whole rotations) the first time, times one
 * replay as a warm-up, replays it as often as min_ms needs per repeat, and
 * records the repeats' events as the plain path does. *iters: calls per
 * repeat. The instantiated graph stays with the candidate for its next
 * timings (gt_cuda_graph_drop at release): a launch-bound final times every
 * entry in each of up to 40 rounds, and capturing and instantiating some
 * hundred calls each time cost more than replaying them. Its size is the
 * first timing's: the replays per repeat follow its own measured time. */
static int graph_repeats(gt_bk_prob *pp, gt_bk_cand *c, int *iters, int repeats, double min_ms,
                         char *err, size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    cudaGraphExec_t exec = NULL;
    int n = graph_calls(*iters, pp->nsets), rc = -1;
    float ms = 0;
    if (c->gexec && c->gexec_gen == pp->sets_gen) {
        exec = c->gexec;
        n = c->gexec_calls;
    } else {
        gt_cuda_graph_drop(c);
        if (graph_capture(pp, c, n, &exec, err, errlen) != 0)
            return -1;
        c->gexec = exec;
        c->gexec_calls = n;
        c->gexec_gen = pp->sets_gen;
    }
    if (gt_cuda_ck(ctx, cudaEventRecord(ctx->ev[0], ctx->stream), "cudaEventRecord", err, errlen) ||
        graph_replays(ctx, exec, 1, err, errlen) ||
        gt_cuda_ck(ctx, cudaEventRecord(ctx->ev[1], ctx->stream), "cudaEventRecord", err, errlen) ||
        gt_cuda_ck(ctx, cudaEventSynchronize(ctx->ev[1]), "graph warm-up replay", err, errlen) ||
        gt_cuda_ck(ctx, cudaEventElapsedTime(&ms, ctx->ev[0], ctx->ev[1]), "cudaEventElapsedTime",
                   err, errlen))
        goto out;
    /* replays per repeat: min_ms measured on the graph itself, which runs
     * launch-bound calls faster than the plain calibration estimated */
    double want = ceil(min_ms / (ms > 1e-6 ? ms : 1e-6));
    int maxreps = MAX_ITERS / n > 0 ? MAX_ITERS / n : 1;
    int reps = want < 1 ? 1 : want > maxreps ? maxreps : (int)want;
    if (gt_cuda_ck(ctx, cudaEventRecord(ctx->ev[2], ctx->stream), "cudaEventRecord", err, errlen))
        goto out;
    for (int r = 0; r < repeats; r++)
        if (graph_replays(ctx, exec, reps, err, errlen) ||
            gt_cuda_ck(ctx, cudaEventRecord(ctx->ev[3 + r], ctx->stream), "cudaEventRecord", err,
                       errlen))
            goto out;
    if (gt_cuda_ck(ctx, cudaEventSynchronize(ctx->ev[2 + repeats]), "graph timing run", err, errlen))
        goto out;
    *iters = n * reps;
    rc = 0;
out:
    if (rc != 0)
        gt_cuda_graph_drop(c); /* captured again next time, if it can be */
    return rc;
}

int gt_cuda_time(gt_bk_prob *pp, gt_bk_cand *c, const gt_timing_opts *o, gt_timing *t, char *err,
                 size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    gt_timing_opts def = {.min_time_ms = 1.0, .warmup = 2, .repeats = 5, .rotating_bytes = 0};
    if (!o)
        o = &def;
    memset(t, 0, sizeof *t);
    int repeats = o->repeats < 1 ? 1 : o->repeats > MAX_REPEATS ? MAX_REPEATS : o->repeats;
    double min_ms = o->min_time_ms > 0 ? o->min_time_ms : 0.1;
    if (gt_cuda_alive(ctx, err, errlen) != 0 || ensure_sets(pp, o->rotating_bytes, err, errlen) ||
        gt_cuda_events(ctx, repeats + 3, err, errlen))
        return -1;
    double us_small[64], *us = us_small;
    if (repeats > 64 && !(us = malloc((size_t)repeats * sizeof *us))) {
        snprintf(err, errlen, "cuda: out of host memory");
        return -1;
    }
    int rc = -1, chained = 0;
    /* The screen's early exit on the validation run alone: its one call
     * already ran far past the job's best. The first launch of a kernel may
     * include loading its module (lazy loading), so it is trusted only
     * GT_SCREEN_PRUNE_FIRST_MARGIN_US beyond the bound; the calibration below
     * catches the rest. One call instead of two for the candidates that
     * cost a 25-shape run most of its time. */
    if (o->prune_above_us > 0 && c->check_us > o->prune_above_us + GT_SCREEN_PRUNE_FIRST_MARGIN_US) {
        t->median_us = t->min_us = t->max_us = c->check_us;
        t->iters = 1;
        t->repeats = 1;
        t->pruned = 1;
        rc = 0;
        goto out;
    }
    /* launch=chained: a generated gemv kernel (sm_90+) is validated chained
     * once, then timed with every call launched chained; the rest plainly */
    if (o->chained && c->gen && (chained = gt_cuda_gen_chain_begin(pp, c, err, errlen)) < 0)
        goto out;
    /* Calibration, at most two synchronizations: the warm-up calls are
     * timed (validate has run the candidate once already, so its kernel is
     * loaded); when they last less than a quarter of min_time, one round of
     * the call count that should reach that quarter refines the estimate,
     * which a single short call overstates by the launch latency. */
    int n = o->warmup > 0 ? o->warmup : 1;
    double est = 0;
    if (timed(pp, c, n, &est, err, errlen) != 0)
        goto out;
    if (o->prune_above_us > 0 && est * 1000.0 > o->prune_above_us) {
        /* the screen's early exit: far slower than the job's best already */
        t->median_us = t->min_us = t->max_us = est * 1000.0;
        t->iters = n;
        t->repeats = 1;
        t->pruned = 1;
        rc = 0;
        goto out;
    }
    if (est * n < min_ms * 0.25) {
        double w = ceil(min_ms * 0.25 / (est > 1e-6 ? est : 1e-6));
        n = w < 2 * n ? 2 * n : w > 65536 ? 65536 : (int)w;
        if (timed(pp, c, n, &est, err, errlen) != 0)
            goto out;
    }
    double want = ceil(min_ms / (est > 1e-6 ? est : 1e-6));
    int iters = want < 1 ? 1 : want > MAX_ITERS ? MAX_ITERS : (int)want;
    if (o->graph) {
        /* launch=graph: the same repeats and events, each a graph replay */
        if (graph_repeats(pp, c, &iters, repeats, min_ms, err, errlen) != 0)
            goto out;
    } else {
        /* All repeats back to back between events 2..repeats+2; one sync. */
        if (gt_cuda_ck(ctx, cudaEventRecord(ctx->ev[2], ctx->stream), "cudaEventRecord", err, errlen))
            goto out;
        for (int r = 0; r < repeats; r++) {
            if (calls(pp, c, iters, err, errlen) ||
                gt_cuda_ck(ctx, cudaEventRecord(ctx->ev[3 + r], ctx->stream), "cudaEventRecord", err,
                           errlen))
                goto out;
        }
        if (gt_cuda_ck(ctx, cudaEventSynchronize(ctx->ev[2 + repeats]), "timing run", err, errlen))
            goto out;
    }
    for (int r = 0; r < repeats; r++) {
        float ms = 0;
        if (gt_cuda_ck(ctx, cudaEventElapsedTime(&ms, ctx->ev[2 + r], ctx->ev[3 + r]),
                       "cudaEventElapsedTime", err, errlen))
            goto out;
        us[r] = (double)ms * 1000.0 / iters;
    }
    qsort(us, (size_t)repeats, sizeof *us, cmp_dbl);
    t->median_us = quantile(us, repeats, 0.5);
    t->min_us = us[0];
    t->max_us = us[repeats - 1];
    t->spread = t->median_us > 0
                    ? (quantile(us, repeats, 0.75) - quantile(us, repeats, 0.25)) / t->median_us
                    : 0;
    t->iters = iters;
    t->repeats = repeats;
    rc = 0;
out:
    if (chained > 0)
        gt_cuda_gen_chain_end(ctx);
    if (us != us_small)
        free(us);
    return rc;
}
