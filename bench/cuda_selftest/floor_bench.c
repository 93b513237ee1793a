/* floor_bench.c: the self-test's --floor section (gt-cuda-selftest --floor):
 * what a single kernel can reach when it only has to stream a weight matrix
 * of the decode shapes once, timed exactly like a candidate (a loop of
 * back-to-back calls between two events, each call on the next of several
 * rotating buffers whose total exceeds twice L2, median of repeats). It is
 * the ceiling the "gemv" family is measured against: every byte of A must
 * cross DRAM once, and nothing else is done. Rows named with an 8 are the
 * fp8 weights of the same shapes (one byte an element): 16.8 and 25.2 MB,
 * where a call's fixed cost is a third of the ideal time.
 *
 *   empty    a kernel that does nothing, one CTA per SM: the cost of a call
 *            in a back-to-back loop (launch, drain, the gap between kernels);
 *   stream   a kernel that reads `bytes` with 16-byte loads and keeps a
 *            dependency on every word (so no load can be dropped), the best
 *            of a sweep over threads per CTA, CTAs per SM and loads in flight
 *            per thread;
 *   quad     the same bytes read the way the mma fragments of the gemv
 *            family's lanes "quad" read them: each warp load takes 64 bytes
 *            from each of 8 rows (4 lanes a row), walking along the rows;
 *            against "stream" it prices that access pattern alone;
 *   copy     cudaMemcpyAsync device to device of the same bytes (read +
 *            written: twice the traffic);
 *   pdl      the best stream kernel launched with programmatic dependent
 *            launch (sm_90): it waits on griddepcontrol.wait before its first
 *            load and lets the next call start at once, so a call's launch
 *            and ramp overlap the previous one's drain: the ceiling of the
 *            run option launch=chained, which times the gemv family this
 *            way. In an application the gain needs the kernel before it to
 *            launch its dependents early too.
 *
 * The kernels are compiled by NVRTC (the family's pool and caches) and run
 * through the runtime's library API, which takes a cubin without linking
 * the driver library. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_bench_priv.h"
#include "gen_cuda.h"

static const char k_floor_src[] =
    "typedef unsigned long long u64;\n"
    "struct v4 { unsigned x, y, z, w; };\n"
    "__device__ __forceinline__ v4 ld16(const v4 *p) {\n"
    "  v4 v; asm volatile(\"ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];\"\n"
    "      : \"=r\"(v.x), \"=r\"(v.y), \"=r\"(v.z), \"=r\"(v.w) : \"l\"(p)); return v;\n"
    "}\n"
    "extern \"C\" __global__ void gt_floor_empty(unsigned *out) {}\n"
    /* each thread reads U vectors per step, the CTAs of the grid interleaved
     * (neighbouring threads, neighbouring 16-byte words) */
    "extern \"C\" __global__ void gt_floor_stream(const v4 *p, u64 n, unsigned *out, int pdl, u64 rowv) {\n"
    "#if GT_PDL\n"
    "  if (pdl) { asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
    "             asm volatile(\"griddepcontrol.launch_dependents;\"); }\n"
    "#endif\n"
    "  const u64 stride = (u64)gridDim.x * blockDim.x;\n"
    "  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  unsigned x = 0;\n"
    "  for (; i + (GT_U - 1) * stride < n; i += GT_U * stride) {\n"
    "    v4 v[GT_U];\n"
    "#pragma unroll\n"
    "    for (int u = 0; u < GT_U; u++) v[u] = ld16(p + i + u * stride);\n"
    "#pragma unroll\n"
    "    for (int u = 0; u < GT_U; u++) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;\n"
    "  }\n"
    "  for (; i < n; i += stride) { v4 v = ld16(p + i); x ^= v.x ^ v.y ^ v.z ^ v.w; }\n"
    "  if (x == 0x9e3779b9u) out[blockIdx.x] = x;\n" /* never true for the zero fill */
    "}\n"
    /* rows of rowv 16-byte words in groups of 8, each group's rows cut in 8
     * pieces along k; a warp takes (group, piece) items, lane (g, t4) reads
     * word t4 + 4j of row g of the piece */
    "extern \"C\" __global__ void gt_floor_quad(const v4 *p, u64 n, unsigned *out, int pdl, u64 rowv) {\n"
    "#if GT_PDL\n"
    "  if (pdl) { asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
    "             asm volatile(\"griddepcontrol.launch_dependents;\"); }\n"
    "#endif\n"
    "  const unsigned lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;\n"
    "  const u64 w0 = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5, nw = ((u64)gridDim.x * blockDim.x) >> 5;\n"
    "  const u64 piece = rowv / 8, items = n / rowv / 8 * 8;\n"
    "  unsigned x = 0;\n"
    "  for (u64 it = w0; it < items; it += nw) {\n"
    "    const v4 *r = p + ((it >> 3) * 8 + g) * rowv + (it & 7) * piece + t4;\n"
    "    for (u64 j = 0; j + 4 * GT_U <= piece; j += 4 * GT_U) {\n"
    "      v4 v[GT_U];\n"
    "#pragma unroll\n"
    "      for (int u = 0; u < GT_U; u++) v[u] = ld16(r + j + 4 * u);\n"
    "#pragma unroll\n"
    "      for (int u = 0; u < GT_U; u++) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;\n"
    "    }\n"
    "  }\n"
    "  if (x == 0x9e3779b9u) out[blockIdx.x] = x;\n"
    "}\n";

#define NSETS_MAX 64

typedef struct floor_run {
    gt_bk_ctx *ctx;
    void *sets[NSETS_MAX];
    void *dst;       /* copy destination (bytes) */
    int nsets;
    size_t bytes;
    unsigned long long rowv; /* a row of the matrix in 16-byte words */
    unsigned *out;
} floor_run;

typedef struct launch {
    cudaKernel_t k;  /* NULL: cudaMemcpyAsync */
    unsigned grid, threads;
    int pdl, empty;
    int loads;       /* the stream kernel's loads per thread and step (label) */
} launch;

static int call(floor_run *r, const launch *l, int set)
{
    if (!l->k)
        return cudaMemcpyAsync(r->dst, r->sets[set], r->bytes, cudaMemcpyDeviceToDevice,
                               r->ctx->stream) != cudaSuccess;
    unsigned long long n = r->bytes / 16;
    const void *p = r->sets[set];
    int pdl = l->pdl;
    void *args[] = {(void *)&p, (void *)&n, (void *)&r->out, (void *)&pdl, (void *)&r->rowv};
    void *eargs[] = {(void *)&r->out};
    cudaLaunchAttribute at = {.id = cudaLaunchAttributeProgrammaticStreamSerialization};
    at.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {.gridDim = {l->grid, 1, 1}, .blockDim = {l->threads, 1, 1},
                              .stream = r->ctx->stream, .attrs = &at, .numAttrs = l->pdl ? 1 : 0};
    return cudaLaunchKernelExC(&cfg, (const void *)l->k, l->empty ? eargs : args) != cudaSuccess;
}

/* One timed loop: iters calls between two events; milliseconds in *ms. */
static int loop(floor_run *r, const launch *l, int iters, int *set, float *ms)
{
    gt_bk_ctx *ctx = r->ctx;
    if (cudaEventRecord(ctx->ev[0], ctx->stream) != cudaSuccess)
        return -1;
    for (int i = 0; i < iters; i++)
        if (call(r, l, (*set)++ % r->nsets))
            return -1;
    return cudaEventRecord(ctx->ev[1], ctx->stream) != cudaSuccess ||
                   cudaEventSynchronize(ctx->ev[1]) != cudaSuccess ||
                   cudaEventElapsedTime(ms, ctx->ev[0], ctx->ev[1]) != cudaSuccess
               ? -1
               : 0;
}

/* Median microseconds per call over `repeats` loops of back-to-back calls,
 * each loop about min_ms long (a first loop of 8 calls, after 4 warm-up
 * calls, sizes them); the sets rotate across calls. */
static int time_calls(floor_run *r, const launch *l, int repeats, double min_ms, double *us)
{
    double t[16];
    float ms = 0;
    int iters = 8, s = 0;
    if (repeats > 16)
        repeats = 16;
    if (loop(r, l, 4, &s, &ms) != 0 || loop(r, l, iters, &s, &ms) != 0)
        return -1;
    double per = ms > 0 ? ms / iters : 0.01;
    iters = (int)ceil(min_ms / per);
    iters = iters < 8 ? 8 : iters > 20000 ? 20000 : iters;
    for (int rep = 0; rep < repeats; rep++) {
        if (loop(r, l, iters, &s, &ms) != 0)
            return -1;
        t[rep] = ms * 1000.0 / iters;
    }
    *us = gt_st_mid(t, repeats);
    return 0;
}

static void free_sets(floor_run *r)
{
    for (int i = 0; i < r->nsets; i++)
        if (r->sets[i])
            (void)cudaFree(r->sets[i]);
    if (r->dst)
        (void)cudaFree(r->dst);
    r->nsets = 0;
    r->dst = NULL;
}

/* Rotating sets of `bytes` each, together more than twice L2 (at least 2). */
static int alloc_sets(floor_run *r, size_t bytes)
{
    int64_t l2 = r->ctx->l2_bytes > 0 ? r->ctx->l2_bytes : (int64_t)50 << 20;
    int n = (int)(2 * l2 / (int64_t)bytes) + 1;
    n = n < 2 ? 2 : n > NSETS_MAX ? NSETS_MAX : n;
    r->bytes = bytes;
    r->nsets = 0;
    for (int i = 0; i < n; i++) {
        if (cudaMalloc(&r->sets[i], bytes) != cudaSuccess || cudaMemset(r->sets[i], 0, bytes) != cudaSuccess)
            return -1;
        r->nsets++;
    }
    return cudaMalloc(&r->dst, bytes) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess ? -1 : 0;
}

typedef struct kern {
    cudaLibrary_t lib;
    cudaKernel_t k;
} kern;

static int load(gt_bk_ctx *ctx, int u, const char *name, kern *out, char *err, size_t errlen)
{
    char du[32], dp[32];
    const char *opts[3] = {du, dp, "-std=c++17"};
    const gt_cu_image *img;
    snprintf(du, sizeof du, "-DGT_U=%d", u);
    snprintf(dp, sizeof dp, "-DGT_PDL=%d", ctx->sm >= 90);
    gt_cu_entry *e = gt_cu_cache_request(k_floor_src, name, opts, 3, ctx->sm, 0, NULL);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (gt_cu_cache_wait(e, &img, err, errlen) != 0)
        return -1;
    cudaError_t ce = cudaLibraryLoadData(&out->lib, img->data, NULL, NULL, 0, NULL, NULL, 0);
    if (ce == cudaSuccess)
        ce = cudaLibraryGetKernel(&out->k, out->lib, name);
    if (ce != cudaSuccess) {
        snprintf(err, errlen, "load %s: %s", name, cudaGetErrorString(ce));
        return -1;
    }
    return 0;
}

int gt_st_floor_bench(gt_bk_ctx *ctx)
{
    static const int us_[] = {2, 4, 8}, threads_[] = {256, 512, 1024}, per_sm_[] = {1, 2, 4, 8};
    static const struct {
        const char *name;
        int64_t m, k;
        int es; /* bytes per element: 2 bf16, 1 fp8 */
    } sizes[] = {{"o8", 4096, 4096, 1},     {"qkv8", 6144, 4096, 1},       {"o", 4096, 4096, 2},
                 {"qkv", 6144, 4096, 2},    {"down8", 4096, 14336, 1},     {"down", 4096, 14336, 2},
                 {"gate_up", 28672, 4096, 2}, {"lm_head", 128256, 4096, 2}};
    char err[512];
    kern ks[3] = {0}, kq[3] = {0}, ke = {0};
    floor_run r = {.ctx = ctx};
    int failures = 0;
    double empty_us = NAN;
    printf("\n== floor: one pass over a weight matrix, timed like a candidate (back-to-back calls, "
           "rotating sets > 2x L2, median) ==\n");
    double bw = gt_st_copy_bandwidth(ctx);
    printf("copy bandwidth %.3f TB/s (1 GiB device-to-device, read + written, median of 10)\n", bw / 1e12);
    if (gt_cuda_events(ctx, 2, err, sizeof err) != 0 || cudaMalloc((void **)&r.out, 1 << 20) != cudaSuccess) {
        printf("FAIL floor: %s\n", err);
        return 1;
    }
    for (int i = 0; i < 3; i++)
        if (load(ctx, us_[i], "gt_floor_stream", &ks[i], err, sizeof err) != 0 ||
            load(ctx, us_[i], "gt_floor_quad", &kq[i], err, sizeof err) != 0) {
            printf("FAIL floor compile: %s\n", err);
            failures++;
            goto out;
        }
    if (load(ctx, 1, "gt_floor_empty", &ke, err, sizeof err) != 0) {
        printf("FAIL floor compile: %s\n", err);
        failures++;
        goto out;
    }
    {
        launch l = {.k = ke.k, .grid = (unsigned)ctx->sms, .threads = 128, .empty = 1};
        r.nsets = 1;
        r.sets[0] = NULL;
        if (time_calls(&r, &l, 7, 5.0, &empty_us) != 0) {
            printf("FAIL floor empty kernel: %s\n", cudaGetErrorString(cudaGetLastError()));
            failures++;
            goto out;
        }
        r.nsets = 0;
        printf("empty kernel, %d CTAs, back to back: %.2f us per call\n", ctx->sms, empty_us);
    }
    printf("%-8s %9s %8s %9s %8s %6s  %-22s %9s %6s %9s %8s %9s %8s\n", "weights", "MB", "ideal_us", "stream_us",
           "TB/s", "%copy", "best (threads x CTAs/SM x loads)", "quad_us", "%copy", "copy_us", "copy TB/s",
           "pdl_us", "%copy");
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        size_t bytes = (size_t)sizes[z].m * (size_t)sizes[z].k * (size_t)sizes[z].es;
        if (alloc_sets(&r, bytes) != 0) {
            printf("FAIL floor %s: allocating %d x %zu bytes\n", sizes[z].name, r.nsets + 1, bytes);
            failures++;
            free_sets(&r);
            continue;
        }
        double best = INFINITY, qbest = INFINITY, copy_us = NAN, pdl_us = NAN;
        launch bl = {0}, ql = {0};
        r.rowv = (unsigned long long)sizes[z].k * (unsigned long long)sizes[z].es / 16;
        for (int pat = 0; pat < 2; pat++)
            for (int ui = 0; ui < 3; ui++)
                for (int ti = 0; ti < 3; ti++)
                    for (int ci = 0; ci < 4; ci++) {
                        if (threads_[ti] * per_sm_[ci] > 2048)
                            continue;
                        launch l = {.k = (pat ? kq : ks)[ui].k, .grid = (unsigned)(per_sm_[ci] * ctx->sms),
                                    .threads = (unsigned)threads_[ti], .loads = us_[ui]};
                        double t;
                        if (time_calls(&r, &l, 5, 2.0, &t) != 0) {
                            printf("FAIL floor %s %s: %s\n", sizes[z].name, pat ? "quad" : "stream",
                                   cudaGetErrorString(cudaGetLastError()));
                            failures++;
                            goto next;
                        }
                        if (t < (pat ? qbest : best)) {
                            *(pat ? &qbest : &best) = t;
                            *(pat ? &ql : &bl) = l;
                        }
                    }
        {
            if (time_calls(&r, &bl, 9, 5.0, &best) != 0 || time_calls(&r, &ql, 9, 5.0, &qbest) != 0)
                failures++;
            launch c = {0};
            if (time_calls(&r, &c, 9, 5.0, &copy_us) != 0)
                failures++;
            if (ctx->sm >= 90) {
                launch p = bl;
                p.pdl = 1;
                if (time_calls(&r, &p, 9, 5.0, &pdl_us) != 0)
                    failures++;
            }
            char lab[64];
            snprintf(lab, sizeof lab, "%u x %u x %d", bl.threads, bl.grid / (unsigned)ctx->sms, bl.loads);
            double ideal = bw > 0 ? bytes / bw * 1e6 : NAN;
            printf("%-8s %9.1f %8.2f %9.2f %8.3f %6.1f  %-22s %9.2f %6.1f %9.2f %8.3f %9.2f %8.1f\n",
                   sizes[z].name, bytes / 1e6, ideal, best, bytes / (best * 1e-6) / 1e12,
                   bw > 0 ? 100.0 * ideal / best : 0.0, lab, qbest, bw > 0 ? 100.0 * ideal / qbest : 0.0, copy_us,
                   2.0 * bytes / (copy_us * 1e-6) / 1e12, pdl_us, bw > 0 ? 100.0 * ideal / pdl_us : 0.0);
        }
    next:
        fflush(stdout);
        free_sets(&r);
        if (gt_cuda_alive(ctx, err, sizeof err) != 0) {
            printf("FAIL floor: %s\n", err);
            failures++;
            break;
        }
    }
out:
    for (int i = 0; i < 3; i++) {
        if (ks[i].lib)
            (void)cudaLibraryUnload(ks[i].lib);
        if (kq[i].lib)
            (void)cudaLibraryUnload(kq[i].lib);
    }
    if (ke.lib)
        (void)cudaLibraryUnload(ke.lib);
    free_sets(&r);
    if (r.out)
        (void)cudaFree(r.out);
    (void)cudaGetLastError();
    return failures;
}
