/* test_cutlass_lib.c: libgemmtune_cutlass (cutlass/gt_cutlass.h) through its run-time loader
 * (cuda/gt_cu_cutlass.h).
 * CPU: the loader tells a missing library (1, naming where it looked) from a library that is
 * not this one (-1, naming the symbol); where the library is built ($GT_BUILD_DIR), its table
 * (names unique and findable, tiles and schedules described) and its host-side checks: a
 * supported GEMM gets its workspace size, and each kind of refusal says why (operands off
 * CUTLASS's 16-byte alignment, leading dimensions shorter than a row, knobs out of range,
 * split-K asked of a kernel without the stream-K scheduler, no SM count and no device).
 * GPU: every kernel, at two knob settings, on two GEMMs with partial tiles, against a
 * reference computed on the host from the same bf16 inputs (relative error of the whole
 * output under 1e-2, and every element written: the output is NaN-poisoned before). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gt_bk_cpu.h"
#include "gt_cu_cutlass.h"
#include "gt_test.h"

#ifdef GT_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

static char lib_path[4096];

/* the library next to the build's others, or "" when this build has none */
static const char *built_lib(void)
{
    const char *b = getenv("GT_BUILD_DIR");
    snprintf(lib_path, sizeof lib_path, "%s/libgemmtune_cutlass.so", b ? b : ".");
    return access(lib_path, R_OK) == 0 ? lib_path : "";
}

/* opens the library at p (checked): 1 when open */
static int open_built(gt_cu_cutlass *c, const char *p)
{
    char err[512];
    CHECK_MSG(gt_cu_cutlass_open(c, p, err, sizeof err) == 0, "%s", err);
    return c->dl != NULL;
}

static void loader_refusals(void)
{
    gt_cu_cutlass c;
    char err[512];
    CHECK(gt_cu_cutlass_open(&c, "/nonexistent/libgemmtune_cutlass.so", err, sizeof err) == 1);
    CHECK_MSG(strstr(err, "/nonexistent/libgemmtune_cutlass.so") != NULL, "%s", err);
    CHECK(c.dl == NULL && gt_cu_cutlass_find(&c, "coop_128x128_c1x1") == -1);
    /* a real shared library that is not this one */
    CHECK(gt_cu_cutlass_open(&c, "libm.so.6", err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "gt_cutlass_abi") != NULL, "%s", err);
    CHECK(c.dl == NULL);
}

static gt_cutlass_args args_of(int m, int n, int k)
{
    gt_cutlass_args a;
    memset(&a, 0, sizeof a);
    a.m = m, a.n = n, a.k = k, a.lda = k, a.ldb = k, a.ldd = m, a.alpha = 1.0f;
    a.swizzle = 1, a.raster = 0, a.splits = 1, a.sms = 132; /* an H100's: no device needed */
    return a;
}

static void table_and_checks(void)
{
    const char *p = built_lib();
    if (!*p) {
        fprintf(stderr, "  libgemmtune_cutlass not built here (no CUTLASS headers): its table not checked\n");
        return;
    }
    gt_cu_cutlass c;
    char err[512];
    if (!open_built(&c, p))
        return;
    int n = c.count();
    CHECK_MSG(n >= 12, "%d kernels", n);
    for (int i = 0; i < n; i++) {
        const gt_cutlass_kernel *k = c.kernel_at(i);
        CHECK(k && k->name && !strcmp(k->types, "bf16") && k->tile_k == 64);
        if (!k)
            continue;
        CHECK_MSG(gt_cu_cutlass_find(&c, k->name) == i, "%s is not found at %d", k->name, i);
        CHECK(k->tile_m >= 64 && k->tile_n >= 128 && k->cluster_m >= 1 && k->cluster_n >= 1);
        CHECK(!strcmp(k->schedule, "cooperative") || !strcmp(k->schedule, "pingpong"));
        CHECK(!strcmp(k->scheduler, "persistent") || !strcmp(k->scheduler, "streamk"));
        /* a Llama prefill GEMM runs, with the workspace it names */
        gt_cutlass_args a = args_of(4096, 2048, 4096);
        size_t ws = (size_t)-1;
        CHECK_MSG(c.check(i, &a, &ws, err, sizeof err) == 0 && ws != (size_t)-1, "%s: %s", k->name, err);
    }
    CHECK(c.kernel_at(n) == NULL && c.kernel_at(-1) == NULL && gt_cu_cutlass_find(&c, "nope") == -1);
    int coop = gt_cu_cutlass_find(&c, "coop_256x128_c1x2"), sk = gt_cu_cutlass_find(&c, "sk_coop_128x128_c1x1");
    CHECK(coop >= 0 && sk >= 0);
    if (coop < 0 || sk < 0)
        goto out;
    size_t ws;
    gt_cutlass_args a = args_of(4096, 2048, 4100); /* rows of 4100 bf16: off 16 bytes */
    CHECK(c.check(coop, &a, &ws, err, sizeof err) == 2);
    CHECK_MSG(strstr(err, "alignment") != NULL, "%s", err);
    a = args_of(4096, 2048, 4096);
    a.lda = 4088; /* shorter than a row of op(A) */
    CHECK(c.check(coop, &a, &ws, err, sizeof err) == 1 && strstr(err, "lda 4088"));
    a = args_of(4096, 2048, 4096);
    a.swizzle = 3;
    CHECK(c.check(coop, &a, &ws, err, sizeof err) == 1 && strstr(err, "swizzle 3"));
    a.swizzle = 8, a.raster = 3;
    CHECK(c.check(coop, &a, &ws, err, sizeof err) == 1 && strstr(err, "raster 3"));
    a.raster = 2, a.splits = 2; /* split-K is the stream-K scheduler's */
    CHECK(c.check(coop, &a, &ws, err, sizeof err) == 1 && strstr(err, "splits 2"));
    CHECK_MSG(c.check(sk, &a, &ws, err, sizeof err) == 0, "%s", err);
    CHECK(c.check(n, &a, &ws, err, sizeof err) == 5 && c.run(n, &a, NULL, 0, NULL, err, sizeof err) == 5);
#ifdef GT_WITH_CUDA
    /* without the SM count the library asks the device: refused, not a crash, where none is */
    {
        int devs = 0;
        a = args_of(4096, 2048, 4096);
        a.sms = 0;
        int rc = c.check(coop, &a, &ws, err, sizeof err);
        if (cudaGetDeviceCount(&devs) != cudaSuccess || devs == 0)
            CHECK_MSG(rc == 6 && strstr(err, "no CUDA device"), "%d %s", rc, err);
        else
            CHECK_MSG(rc == 0, "%s", err);
    }
#endif
out:
    gt_cu_cutlass_close(&c);
    CHECK(c.dl == NULL);
}

#ifdef GT_WITH_CUDA
/* kernel i on m x n x k (TN, packed) at the given knobs against the host's reference: the
 * relative error, or -1 when it did not run (err), NAN when an element stayed poisoned */
static double run_one(const gt_cu_cutlass *c, int i, int m, int n, int k, int swizzle, int raster, int splits,
                      char *err, size_t errlen)
{
    size_t na = (size_t)m * k, nb = (size_t)k * n, nd = (size_t)m * n, ws_bytes = 0;
    uint16_t *ha = malloc(na * 2), *hb = malloc(nb * 2), *hd = malloc(nd * 2);
    void *da = NULL, *db = NULL, *dd = NULL, *ws = NULL;
    double rel = -1;
    if (!ha || !hb || !hd)
        goto out;
    uint64_t seed = 7;
    gt_cpu_fill_random(ha, GT_DT_BF16, (int64_t)na, &seed);
    gt_cpu_fill_random(hb, GT_DT_BF16, (int64_t)nb, &seed);
    gt_cutlass_args a = args_of(m, n, k);
    a.swizzle = swizzle, a.raster = raster, a.splits = splits, a.alpha = 0.5f;
    a.sms = 0; /* the device's, as the worker leaves it */
    if (c->check(i, &a, &ws_bytes, err, errlen))
        goto out;
    if (cudaMalloc(&da, na * 2) || cudaMalloc(&db, nb * 2) || cudaMalloc(&dd, nd * 2) ||
        (ws_bytes && cudaMalloc(&ws, ws_bytes)) || cudaMemcpy(da, ha, na * 2, cudaMemcpyHostToDevice) ||
        cudaMemcpy(db, hb, nb * 2, cudaMemcpyHostToDevice) || cudaMemset(dd, 0xff, nd * 2)) {
        snprintf(err, errlen, "CUDA: %s", cudaGetErrorString(cudaGetLastError()));
        goto out;
    }
    a.a = da, a.b = db, a.d = dd;
    if (c->run(i, &a, ws, ws_bytes, NULL, err, errlen))
        goto out;
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess)
        e = cudaMemcpy(hd, dd, nd * 2, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "CUDA: %s", cudaGetErrorString(e));
        goto out;
    }
    double num = 0, den = 0;
    for (int col = 0; col < n; col++)
        for (int row = 0; row < m; row++) {
            double r = 0;
            for (int x = 0; x < k; x++) /* op(A)[row][x] = A[x + row*lda], B[x + col*ldb] */
                r += (double)gt_cpu_bf16_to_f32(ha[(size_t)row * k + x]) *
                     gt_cpu_bf16_to_f32(hb[(size_t)col * k + x]);
            r *= 0.5;
            double v = gt_cpu_bf16_to_f32(hd[(size_t)col * m + row]);
            if (isnan(v)) {
                rel = NAN;
                goto out;
            }
            num += (v - r) * (v - r), den += r * r;
        }
    rel = sqrt(num / den);
out:
    cudaFree(da), cudaFree(db), cudaFree(dd), cudaFree(ws);
    free(ha), free(hb), free(hd);
    return rel;
}
#endif

static void kernels_on_gpu(void)
{
#ifndef GT_WITH_CUDA
    gt_test_skip("CUTLASS kernels", "built without CUDA");
#else
    const char *p = built_lib();
    int dev = 0;
    if (!*p) {
        gt_test_skip("CUTLASS kernels", "libgemmtune_cutlass not built (no CUTLASS headers)");
        return;
    }
    struct cudaDeviceProp prop;
    if (cudaGetDeviceCount(&dev) != cudaSuccess || dev < 1 || cudaGetDeviceProperties(&prop, 0) != cudaSuccess ||
        prop.major != 9) {
        gt_test_skip("CUTLASS kernels", "no sm_90 GPU");
        return;
    }
    gt_cu_cutlass c;
    char err[512];
    if (!open_built(&c, p))
        return;
    /* partial tiles in m and n; k over several stages */
    static const int shapes[][3] = {{392, 136, 520}, {1024, 264, 2048}};
    for (int i = 0; i < c.count(); i++) {
        const gt_cutlass_kernel *k = c.kernel_at(i);
        int sk = !strcmp(k->scheduler, "streamk");
        for (int s = 0; s < 2; s++)
            for (int knob = 0; knob < 2; knob++) {
                int sw = knob ? 4 : 1, ra = knob ? 2 : 1, sp = knob && sk ? 2 : 1;
                double rel = run_one(&c, i, shapes[s][0], shapes[s][1], shapes[s][2], sw, ra, sp, err, sizeof err);
                CHECK_MSG(rel >= 0 && rel < 1e-2, "%s %dx%dx%d swizzle %d raster %d splits %d: rel err %g %s",
                          k->name, shapes[s][0], shapes[s][1], shapes[s][2], sw, ra, sp, rel, rel < 0 ? err : "");
            }
    }
    gt_cu_cutlass_close(&c);
#endif
}

int main(int argc, char **argv)
{
    gt_test_mode(argc, argv);
    if (gt_test_cpu()) {
        RUN(loader_refusals);
        RUN(table_and_checks);
    }
    if (gt_test_gpu())
        RUN(kernels_on_gpu);
    return gt_test_done();
}
