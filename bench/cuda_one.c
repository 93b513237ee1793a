/* gt-cuda-one: builds, validates and times given configs of one GEMM through
 * the cuda backend's vtable (what the worker's runner calls), each config in
 * turn in one process, so that a few configs compare under the same clocks
 * and a profiler can be pointed at one kernel:
 *
 *   gt-cuda-one [--type bf16|e4m3] [--repeats N] [--min-ms T] [--graph]
 *               [--rounds R] [--load-modules L[,L2...]] [--lt-touch T]
 *               [--churn TOTAL,ALIVE] [--dummy-unroll U] [--shift-mb S[,S2...]]
 *               [--rotating-mb R] [--paired R] M N K CONFIG...
 *   ncu --kernel-name gt_mma --launch-skip 20 --launch-count 1 gt-cuda-one ...
 *
 * The problem is TN (A k x m, B k x n, column-major D), D bf16, f32
 * accumulation; CONFIG is a config's JSON ({"family":...}) or "lib" for the
 * backend's baseline (cuBLASLt's default). Prints one line per config:
 * median, min, relative error against the reference, TFLOP/s. Exit 0 when
 * every config built, validated and timed.
 *
 * --graph times each repeat as CUDA graph replays (a launch-bound final's
 * way); --rounds R times the whole list R times in turn. The options below
 * study what a long-lived bench child carries (a context that loaded seven
 * modules or more launches slower: bench/results/h100_42_module_state.txt):
 *   --load-modules L[,L2...]  after round r (but the last), loads modules
 *       until the r-th count of the list is loaded (the last count repeats):
 *       copies of one small NVRTC-compiled kernel, each launched once, as the
 *       worker's child loads and validates every candidate it builds; after
 *       the last round it unloads them all and times the list once more;
 *   --churn TOTAL,ALIVE  after the first round, loads TOTAL modules one by
 *       one, the oldest unloaded so that at most ALIVE stay loaded;
 *   --lt-touch T  after the first round, builds and validates (so launches,
 *       and lazily loads) the first T cuBLASLt configs of the enumeration,
 *       as a screen does;
 *   --dummy-unroll U  the loaded kernel's loop steps (default 512: a 28 KB
 *       image on sm_90; 8192: 266 KB).
 * And one of where the buffers lie:
 *   --shift-mb S[,S2...]  after the rounds, for each S: holds S MiB of device
 *       memory, prepares the problem's buffers anew (so they land after it),
 *       builds and times the list once, frees both.
 * --rotating-mb R: the rotating input sets' total, as a log's "rotating"
 * field asks (default: twice L2).
 * --paired R: after the rounds, the list timed in R paired rounds as a final
 * phase times its finalists against the baseline (the first config). */
#include <cjson/cJSON.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_backend.h"
#include "gt_bk_paired.h"
#include "gt_cu.h"
#include "gen_gemv.h"
#include "gt_problem.h"

/* Modules loaded by --load-modules: copies of one image. */
typedef struct {
    const gt_cu_drv *drv;
    gt_cu_image img;
    CUmodule *mods;
    int n, cap;
    float *buf;
} extra_mods;

/* The loaded kernel (--dummy-unroll steps: the default's image, 28 KB, is
 * the size of a generated candidate's). */
static const char dummy_fmt[] =
    "extern \"C\" __global__ void gt_dummy(float *x, int n) {\n"
    "  float a = x[threadIdx.x];\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < %d; i++) a = a * 1.0001f + (float)(i ^ n);\n"
    "  if (a == 12345.0f) x[0] = a;\n"
    "}\n";
static int dummy_unroll = 512;

/* Loads n more copies (compiling the image the first time) and launches each
 * once; 0, or -1 with err. */
static int load_more(extra_mods *x, int n, char *err, size_t errlen)
{
    int sm = 0;
    char src[sizeof dummy_fmt + 16];
    snprintf(src, sizeof src, dummy_fmt, dummy_unroll);
    if (!x->drv && (!(x->drv = gt_cu_drv_get(err, errlen)) || gt_cu_current_sm(&sm, err, errlen) ||
                    gt_cu_nvrtc_compile(src, "dummy.cu", sm, NULL, 0, NULL, &x->img, err, errlen)))
        return -1;
    if (x->n == 0)
        printf("dummy module image: %zu bytes\n", x->img.len);
    if (!x->buf && cudaMalloc((void **)&x->buf, 4096) != cudaSuccess) {
        snprintf(err, errlen, "cudaMalloc failed");
        return -1;
    }
    if (x->n + n > x->cap) {
        int cap = x->n + n;
        CUmodule *m = realloc(x->mods, (size_t)cap * sizeof *m);
        if (!m) {
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
        x->mods = m, x->cap = cap;
    }
    const char *name = "gt_dummy";
    for (int i = 0; i < n; i++) {
        CUfunction f;
        int arg = x->n;
        void *params[] = {&x->buf, &arg};
        unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
        if (gt_cu_module_load(x->drv, x->img.data, x->img.cubin, 1, &name, NULL, &x->mods[x->n], &f, err,
                              errlen) != 0)
            return -1;
        x->n++;
        if (gt_cu_launch(x->drv, f, grid, block, 0, NULL, params, 0, "gt_dummy", err, errlen) != 0)
            return -1;
    }
    if (cudaDeviceSynchronize() != cudaSuccess) {
        snprintf(err, errlen, "cudaDeviceSynchronize after the loads failed");
        return -1;
    }
    return 0;
}

/* Loads total modules one after another, each launched once, unloading the
 * oldest so that no more than alive stay loaded; those alive stay. */
static int churn(extra_mods *x, int total, int alive, char *err, size_t errlen)
{
    for (int i = 0; i < total; i++) {
        if (x->n >= alive && x->n > 0) {
            (void)x->drv->module_unload(x->mods[0]); /* a probe: nothing to do about a failure */
            memmove(x->mods, x->mods + 1, (size_t)(x->n - 1) * sizeof *x->mods);
            x->n--;
        }
        if (load_more(x, 1, err, errlen) != 0)
            return -1;
    }
    return 0;
}

static void unload_all(extra_mods *x)
{
    for (int i = 0; i < x->n; i++)
        (void)x->drv->module_unload(x->mods[i]); /* a probe: nothing to do about a failure */
    x->n = 0;
}

/* Builds and validates each config of the list (argument "lib": the
 * backend's baseline) into cs[]; prints one line each. 0, or 1 when any
 * failed (its cs[] NULL). */
static int build_list(const gt_backend *bk, gt_bk_ctx *ctx, gt_bk_prob *pp, const gt_problem *p,
                      const char *const *args, int ncfg, gt_bk_cand **cs, cJSON **cands, cJSON **base)
{
    char err[512] = "";
    int bad = 0;
    for (int a = 0; a < ncfg; a++) {
        cJSON *cfg = NULL;
        double rel = -1;
        if (!strcmp(args[a], "lib")) {
            if (!*base && bk->enumerate(ctx, p, 0, cands, base, err, sizeof err) != 0) {
                fprintf(stderr, "gt-cuda-one: enumerate: %s\n", err);
                bad = 1;
                continue;
            }
            cfg = cJSON_Duplicate(*base, 1);
        } else {
            cfg = cJSON_Parse(args[a]);
        }
        if (!cfg)
            snprintf(err, sizeof err, "not JSON");
        if (!cfg || bk->build(pp, cfg, &cs[a], err, sizeof err) != 0 ||
            bk->validate(pp, cs[a], &rel, err, sizeof err) != 0) {
            printf("FAIL %s: %s\n", args[a], err);
            bad = 1;
        } else {
            printf("valid, err %.2e: %s\n", rel, args[a]);
        }
        cJSON_Delete(cfg);
    }
    return bad;
}

/* Times each built config of the list once (repeats x at least min_ms);
 * prints one line each. 0, or 1 when any failed. */
static int time_list(const gt_backend *bk, gt_bk_prob *pp, const gt_problem *p, const char *const *args,
                     int ncfg, gt_bk_cand **cs, double min_ms, int repeats, int graph)
{
    char err[512] = "";
    int bad = 0;
    for (int a = 0; a < ncfg; a++) {
        gt_timing t = {0};
        gt_timing_opts o = {.min_time_ms = min_ms, .warmup = 3, .repeats = repeats, .graph = graph};
        if (!cs[a])
            continue;
        if (bk->time(pp, cs[a], &o, &t, err, sizeof err) != 0) {
            printf("FAIL %s: %s\n", args[a], err);
            bad = 1;
            continue;
        }
        printf("%10.3f us (min %.3f, spread %.3f, %d x %d calls)  %7.1f TFLOP/s  %s\n", t.median_us, t.min_us,
               t.spread, t.repeats, t.iters, p->flops / (t.median_us * 1e-6) / 1e12, args[a]);
    }
    return bad;
}

/* --shift-mb: the list built and timed again in a fresh set of buffers
 * allocated after a held block of `mb` MiB, so that they land elsewhere in
 * the device's memory (another process's allocation history does the same). */
static int shifted(const gt_backend *bk, gt_bk_ctx *ctx, const gt_problem *p, const char *const *args,
                   int ncfg, int mb, double min_ms, int repeats, int graph, cJSON **cands, cJSON **base)
{
    char err[512] = "";
    void *hold = NULL;
    gt_bk_prob *pp = NULL;
    int bad = 1;
    gt_bk_cand **cs = calloc((size_t)ncfg, sizeof *cs);
    if (!cs)
        return 1;
    if (mb > 0 && cudaMalloc(&hold, (size_t)mb << 20) != cudaSuccess) {
        fprintf(stderr, "gt-cuda-one: --shift-mb %d: cudaMalloc failed\n", mb);
        goto fail;
    }
    if (bk->prepare(ctx, p, &pp, err, sizeof err) != 0) {
        fprintf(stderr, "gt-cuda-one: prepare after %d MiB: %s\n", mb, err);
        goto fail;
    }
    printf("buffers after a held block of %d MiB\n", mb);
    bad = build_list(bk, ctx, pp, p, args, ncfg, cs, cands, base);
    bad |= time_list(bk, pp, p, args, ncfg, cs, min_ms, repeats, graph);
    fflush(stdout);
fail:
    for (int a = 0; a < ncfg; a++)
        if (cs[a])
            bk->release(cs[a]);
    free(cs);
    if (pp)
        bk->unprepare(pp);
    if (hold)
        (void)cudaFree(hold);
    return bad;
}

/* --paired R: the list timed as the final phase and `gemmtune verify` time
 * (worker/gt_bk_paired.h: R paired rounds in a shuffled order, one timing
 * of at least 8 ms and 2 warm-up calls per entry per round), the first
 * entry the baseline; prints each entry's median time over the rounds (as a
 * final reports it: gt_paired_median_time) and its paired uplift against the
 * first. */
static int paired(const gt_backend *bk, gt_bk_prob *pp, const char *const *args, int ncfg,
                  gt_bk_cand **cs, int rounds, int graph)
{
    gt_bk_paired bp = {.bk = bk, .pp = pp, .cands = cs, .n = ncfg,
                       .timing = {.min_time_ms = 8, .warmup = 2, .repeats = 1, .graph = graph}};
    gt_paired_opts po;
    gt_paired_opts_init(&po, rounds, 0);
    double *times = calloc((size_t)ncfg * (size_t)rounds, sizeof *times);
    gt_paired_stat *st = calloc((size_t)ncfg, sizeof *st);
    int done = 0, bad = 1;
    if (!times || !st || gt_bk_paired_run(&bp, &po, times, &done, st) != 0)
        goto out;
    printf("paired rounds: %d (%d entries)\n", done, ncfg);
    for (int a = 0; a < ncfg; a++) {
        int k = 0;
        for (int r = 0; r < done; r++)
            k += times[(size_t)a * (size_t)rounds + (size_t)r] > 0;
        printf("%10.3f us median over %d rounds, uplift %.4f [%.4f, %.4f]  %s\n",
               gt_paired_median_time(times, rounds, a, done), k, a ? st[a].uplift : 1.0, a ? st[a].lo : 1.0,
               a ? st[a].hi : 1.0, args[a]);
    }
    bad = 0;
out:
    free(times);
    free(st);
    return bad;
}

static int usage(void)
{
    fprintf(stderr, "usage: gt-cuda-one [--type bf16|e4m3] [--repeats N] [--min-ms T] [--graph] [--rounds R]\n"
                    "                   [--load-modules L[,L2...]] [--lt-touch T] [--churn TOTAL,ALIVE]\n"
                    "                   [--dummy-unroll U] [--shift-mb S[,S2...]] [--rotating-mb R]\n"
                    "                   [--paired R]\n"
                    "                   M N K CONFIG...\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *type = "bf16";
    int repeats = 15, i = 1, graph = 0, rounds = 1, nloads = 0, loads[32], touch = 0, ch_total = 0, ch_alive = 0;
    int nshifts = 0, shifts[32], rot_mb = 0, npaired = 0;
    double min_ms = 2.0;
    for (; i < argc && !strncmp(argv[i], "--", 2); i += 2) {
        if (!strcmp(argv[i], "--graph")) {
            graph = 1;
            i--;
            continue;
        }
        if (i + 1 >= argc)
            return usage();
        if (!strcmp(argv[i], "--type"))
            type = argv[i + 1];
        else if (!strcmp(argv[i], "--repeats"))
            repeats = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--min-ms"))
            min_ms = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--churn")) {
            if (sscanf(argv[i + 1], "%d,%d", &ch_total, &ch_alive) != 2 || ch_total < 1 || ch_alive < 1)
                return usage();
        } else if (!strcmp(argv[i], "--dummy-unroll"))
            dummy_unroll = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--lt-touch"))
            touch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--paired"))
            npaired = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rotating-mb"))
            rot_mb = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--shift-mb")) {
            for (const char *q = argv[i + 1]; *q && nshifts < 32; q = strchr(q, ',') ? strchr(q, ',') + 1 : "")
                if ((shifts[nshifts++] = atoi(q)) < 0)
                    return usage();
        }
        else if (!strcmp(argv[i], "--load-modules")) {
            for (const char *q = argv[i + 1]; *q && nloads < 32; q = strchr(q, ',') ? strchr(q, ',') + 1 : "")
                if ((loads[nloads++] = atoi(q)) <= 0)
                    return usage();
        }
        else
            return usage();
    }
    if (argc - i < 4 || repeats < 1 || rounds < 1 || (strcmp(type, "bf16") && strcmp(type, "e4m3")))
        return usage();
    gt_problem p;
    gt_problem_init_tn(&p, atoll(argv[i]), atoll(argv[i + 1]), atoll(argv[i + 2]),
                       strcmp(type, "bf16") ? GT_DT_F8E4M3 : GT_DT_BF16, GT_DT_BF16);
    p.rotating_mb = rot_mb;

    const gt_backend *bk = gt_bk_find("cuda");
    gt_bk_ctx *ctx = NULL;
    gt_bk_prob *pp = NULL;
    gt_bk_device dev;
    cJSON *cands = NULL, *base = NULL;
    char err[512] = "", label[64];
    int bad = 0;
    extra_mods xm = {0};
    gt_problem_label(&p, label, sizeof label);
    if (!bk || bk->open(0, &ctx, &dev, err, sizeof err) != 0 ||
        bk->prepare(ctx, &p, &pp, err, sizeof err) != 0) {
        fprintf(stderr, "gt-cuda-one: %s\n", err);
        bad = 1;
        goto out;
    }
    printf("%s on %s%s\n", label, dev.model, graph ? ", CUDA graphs" : "");
    int ncfg = argc - (i + 3);
    gt_bk_cand **cs = calloc((size_t)ncfg, sizeof *cs);
    if (!cs) {
        bad = 1;
        goto out;
    }
    if (build_list(bk, ctx, pp, &p, (const char *const *)argv + i + 3, ncfg, cs, &cands, &base))
        bad = 1;
    /* rounds 0..rounds-1, then one after unloading what --load-modules loaded */
    for (int r = 0; r < rounds + (nloads > 0 || ch_total > 0); r++) {
        if (r == rounds)
            unload_all(&xm);
        printf("round %d, %d extra modules loaded\n", r + 1, xm.n);
        if (time_list(bk, pp, &p, (const char *const *)argv + i + 3, ncfg, cs, min_ms, repeats, graph))
            bad = 1;
        fflush(stdout);
        if (r == 0 && touch > 0 && rounds > 1) {
            if (!base && bk->enumerate(ctx, &p, 0, &cands, &base, err, sizeof err) != 0) {
                fprintf(stderr, "gt-cuda-one: enumerate: %s\n", err);
                bad = 1;
                break;
            }
            int ok = 0, tried = 0;
            for (cJSON *e = cands ? cands->child : NULL; e && tried < touch; e = e->next) {
                const cJSON *cfg = e; /* the enumeration's array holds the configs themselves */
                gt_bk_cand *c = NULL;
                double rel = -1;
                if (gt_gen_family(cfg) != GT_FAM_CUBLASLT)
                    continue;
                tried++;
                if (bk->build(pp, cfg, &c, err, sizeof err) == 0 && bk->validate(pp, c, &rel, err, sizeof err) == 0)
                    ok++;
                if (c)
                    bk->release(c);
            }
            printf("touched %d cuBLASLt configs (%d ran)\n", tried, ok);
        }
        if (r == 0 && ch_total > 0 && rounds > 1 && churn(&xm, ch_total, ch_alive, err, sizeof err) != 0) {
            fprintf(stderr, "gt-cuda-one: --churn: %s\n", err);
            bad = 1;
            break;
        }
        int want = nloads ? loads[r < nloads ? r : nloads - 1] : 0;
        if (nloads && r < rounds - 1 && want > xm.n && load_more(&xm, want - xm.n, err, sizeof err) != 0) {
            fprintf(stderr, "gt-cuda-one: --load-modules: %s\n", err);
            bad = 1;
            break;
        }
    }
    if (npaired > 0)
        bad |= paired(bk, pp, (const char *const *)argv + i + 3, ncfg, cs, npaired, graph);
    for (int a = 0; a < ncfg; a++)
        if (cs[a])
            bk->release(cs[a]);
    free(cs);
    for (int sh = 0; sh < nshifts; sh++)
        bad |= shifted(bk, ctx, &p, (const char *const *)argv + i + 3, ncfg, shifts[sh], min_ms, repeats,
                       graph, &cands, &base);
out:
    if (xm.drv)
        unload_all(&xm);
    free(xm.mods);
    free(xm.img.data);
    if (xm.buf)
        (void)cudaFree(xm.buf);
    if (pp)
        bk->unprepare(pp);
    if (ctx)
        bk->close(ctx);
    cJSON_Delete(cands);
    cJSON_Delete(base);
    return bad;
}
