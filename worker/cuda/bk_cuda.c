/* bk_cuda.c: the cuda worker backend (gt_bk_cuda): a search over cuBLASLt
 * algorithm configurations. This file owns the device context (open/close),
 * error classification, and building/releasing candidates; the space is in
 * cuda_space.c, prepare/validate/time in cuda_bench.c, the problem mapping
 * in cuda/ (gt_cu.h, shared with libgemmtune).
 *
 * Environment knobs (read at open, all optional):
 *   GT_CUDA_WORKSPACE_MB     cuBLASLt workspace (default 32, what PyTorch gives it)
 *   GT_CUDA_MAX_CANDIDATES   enumeration cap (default 4000)
 *   GT_CUDA_ENUM_SECONDS     enumeration time budget (default 60)
 *   GT_CUDA_GEN_MAX          generated "gemv" configs per problem (default 48, 0 = every
 *                            generated family off)
 *   GT_CUDA_MMA_MAX          generated "mma" configs per problem (default 32, 0 = off)
 *   GT_CUDA_EXIT_ON_STICKY   0: keep the process after a sticky error (default 1: exit
 *                            with GT_CUDA_STICKY_EXIT so the supervisor restarts it)
 *
 *   GT_CUDA_CUTLASS_MAX      "cutlass" configs per problem (default 0 = off, 24 a good value; the
 *                            family needs libgemmtune_cutlass: GT_CUTLASS_LIB or the
 *                            library beside the program or on the loader's path)
 *
 * Configs with "family":"gemv", "mma", "cutlass" or "fault" are the families' kernels
 * (gen_run.c; cutlass_run.c); anything else is a cuBLASLt config. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_nvml.h"
#include "gen_cuda.h"
#include "gt_cuda.h"
#include "gt_util.h"

#define DEFAULT_WS_MB 32
#define DEFAULT_MAX_CANDS 4000
#define DEFAULT_ENUM_SECONDS 60.0
#define DEFAULT_MAX_CHECKS 20000000LL

/* Errors after which the context is unusable until the process exits. */
static int is_sticky(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorECCUncorrectable: return 1;
    default: return 0;
    }
}

int gt_cuda_alive(gt_bk_ctx *ctx, char *err, size_t errlen)
{
    if (ctx->dead[0]) {
        snprintf(err, errlen, "%s", ctx->dead);
        return -1;
    }
    /* The runtime's current device is per thread: the job runner may call
     * from another thread than open's. Cheap when already current. */
    return gt_cuda_ck(ctx, cudaSetDevice(ctx->dev), "cudaSetDevice", err, errlen);
}

int gt_cuda_ck(gt_bk_ctx *ctx, cudaError_t e, const char *what, char *err, size_t errlen)
{
    if (e == cudaSuccess)
        return 0;
    if (ctx && is_sticky(e)) {
        snprintf(ctx->dead, sizeof ctx->dead,
                 "cuda: sticky error %s (%s) during %s: the device context is unusable until the "
                 "worker process restarts",
                 cudaGetErrorName(e), cudaGetErrorString(e), what);
        snprintf(err, errlen, "%s", ctx->dead);
        if (ctx->exit_on_sticky) {
            /* Every later call of this process would fail: end it, so the
             * supervisor blames the candidate in flight and starts a fresh
             * context. The one line says why in the worker's log. */
            fprintf(stderr, "%s\n", ctx->dead);
            fflush(stderr);
            _exit(GT_CUDA_STICKY_EXIT);
        }
    } else {
        snprintf(err, errlen, "cuda: %s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
    }
    return -1;
}

int gt_cuda_ckb(gt_bk_ctx *ctx, cublasStatus_t s, const char *what, char *err, size_t errlen)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return 0;
    /* A failed launch inside cuBLASLt leaves the CUDA error behind it. */
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        char w[128];
        snprintf(w, sizeof w, "%s (%s)", what, gt_cu_status_name(s));
        return gt_cuda_ck(ctx, e, w, err, errlen);
    }
    snprintf(err, errlen, "cuda: %s: %s", what, gt_cu_status_name(s));
    return -1;
}

int gt_cuda_events(gt_bk_ctx *ctx, int n, char *err, size_t errlen)
{
    if (n <= ctx->nev)
        return 0;
    cudaEvent_t *ev = realloc(ctx->ev, (size_t)n * sizeof *ev);
    if (!ev) {
        snprintf(err, errlen, "cuda: out of host memory");
        return -1;
    }
    ctx->ev = ev;
    while (ctx->nev < n) {
        /* Default flags: timing on, and the host spins on synchronize, which
         * wakes faster than blocking sync; throughput needs that. */
        if (gt_cuda_ck(ctx, cudaEventCreate(&ctx->ev[ctx->nev]), "cudaEventCreate", err, errlen))
            return -1;
        ctx->nev++;
    }
    return 0;
}

static long env_long(const char *name, long def, long lo, long hi)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    return (end && *end == 0 && v >= lo && v <= hi) ? v : def;
}

static void cuda_close(gt_bk_ctx *ctx)
{
    if (!ctx)
        return;
    /* Teardown is best effort: results are ignored (after a sticky error
     * every call fails, and the process exits soon after). */
    for (int i = 0; i < ctx->nev; i++)
        (void)cudaEventDestroy(ctx->ev[i]);
    free(ctx->ev);
    if (ctx->ws)
        (void)cudaFree(ctx->ws);
    if (ctx->stream)
        (void)cudaStreamDestroy(ctx->stream);
    if (ctx->lt)
        (void)cublasLtDestroy(ctx->lt);
    gt_cuda_gen_close(ctx);
    gt_cuda_cutlass_close(ctx);
    gt_cuda_kernels_unload(ctx->kern);
    gt_cuda_nvml_close(ctx->nvml);
    free(ctx);
}

static int cuda_open(int index, gt_bk_ctx **out, gt_bk_device *dev, char *err, size_t errlen)
{
    *out = NULL;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "cuda: no usable CUDA device: cudaGetDeviceCount: %s (%s)",
                 cudaGetErrorName(e), cudaGetErrorString(e));
        return -1;
    }
    if (index < 0 || index >= count) {
        snprintf(err, errlen, "cuda: device %d not present (%d CUDA devices)", index, count);
        return -1;
    }
    /* One worker per GPU is the deployment (README): the host's cores are
     * shared among as many compile pools as the node has GPUs. */
    gt_cu_cache_pool_share(count);
    gt_bk_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        snprintf(err, errlen, "cuda: out of host memory");
        return -1;
    }
    ctx->dev = index;
    struct cudaDeviceProp prop;
    int drv = 0, rt = 0;
    if (gt_cuda_ck(ctx, cudaSetDevice(index), "cudaSetDevice", err, errlen) ||
        gt_cuda_ck(ctx, cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties", err,
                   errlen) ||
        gt_cuda_ck(ctx, cudaFree(NULL), "context creation", err, errlen) ||
        gt_cuda_ck(ctx, cudaDriverGetVersion(&drv), "cudaDriverGetVersion", err, errlen) ||
        gt_cuda_ck(ctx, cudaRuntimeGetVersion(&rt), "cudaRuntimeGetVersion", err, errlen) ||
        gt_cuda_ck(ctx, cudaDeviceGetAttribute(&ctx->cluster_launch, cudaDevAttrClusterLaunch, index),
                   "cudaDeviceGetAttribute(ClusterLaunch)", err, errlen))
        goto fail;
    ctx->sm = prop.major * 10 + prop.minor;
    ctx->sms = prop.multiProcessorCount;
    ctx->l2_bytes = prop.l2CacheSize;
    if (gt_cuda_ckb(ctx, cublasLtCreate(&ctx->lt), "cublasLtCreate", err, errlen) ||
        gt_cuda_ck(ctx, cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking),
                   "cudaStreamCreate", err, errlen))
        goto fail;
    ctx->ws_size = (size_t)env_long("GT_CUDA_WORKSPACE_MB", DEFAULT_WS_MB, 0, 1 << 16) << 20;
    /* Zeroed once: split-K kernels keep counters in the workspace. */
    if (ctx->ws_size &&
        (gt_cuda_ck(ctx, cudaMalloc(&ctx->ws, ctx->ws_size), "cudaMalloc(workspace)", err, errlen) ||
         gt_cuda_ck(ctx, cudaMemset(ctx->ws, 0, ctx->ws_size), "cudaMemset(workspace)", err, errlen)))
        goto fail;
    if (gt_cuda_events(ctx, 16, err, errlen) != 0)
        goto fail;
    ctx->max_cands = (int)env_long("GT_CUDA_MAX_CANDIDATES", DEFAULT_MAX_CANDS, 1, 10000000);
    ctx->enum_seconds = (double)env_long("GT_CUDA_ENUM_SECONDS", (long)DEFAULT_ENUM_SECONDS, 1, 86400);
    ctx->max_checks = DEFAULT_MAX_CHECKS;
    ctx->exit_on_sticky = (int)env_long("GT_CUDA_EXIT_ON_STICKY", 1, 0, 1);

    memset(dev, 0, sizeof *dev);
    snprintf(dev->backend, sizeof dev->backend, "cuda");
    dev->index = index;
    snprintf(dev->model, sizeof dev->model, "%.*s", (int)sizeof dev->model - 1, prop.name);
    snprintf(dev->arch, sizeof dev->arch, "sm_%d%d", prop.major, prop.minor);
    dev->mem_bytes = (int64_t)prop.totalGlobalMem;
    dev->units = prop.multiProcessorCount;
    int mode = cudaComputeModeDefault;
    dev->one_context = cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, index) == cudaSuccess &&
                       mode != cudaComputeModeDefault;
    /* Peak clocks (kHz) go with the versions: two GPUs of one model but other
     * clocks (power caps, SKUs) give other timings. */
    int sm_khz = 0, mem_khz = 0;
    if (cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, index) != cudaSuccess)
        sm_khz = 0;
    if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, index) != cudaSuccess)
        mem_khz = 0;
    snprintf(dev->driver, sizeof dev->driver,
             "driver %d runtime %d cublasLt %zu sm_clock %d MHz mem_clock %d MHz", drv, rt,
             cublasLtGetVersion(), sm_khz / 1000, mem_khz / 1000);
    /* The limits enumeration prunes with, read now from the context just
     * made (attribute queries, cached for gen_run.c). A failure here means
     * the generated families cannot build either (the same driver entry
     * points): the device still opens for cuBLASLt, it registers without
     * gen_device, and the first generated build reports the reason. */
    char gerr[256];
    dev->has_gen = gt_cuda_gen_device(ctx, &dev->gen, gerr, sizeof gerr) == 0;
    *out = ctx;
    return 0;
fail:
    cuda_close(ctx);
    return -1;
}

void gt_cuda_set_exit_on_sticky(gt_bk_ctx *ctx, int on) { ctx->exit_on_sticky = on != 0; }

static int cuda_build(gt_bk_prob *pp, const cJSON *cfg, gt_bk_cand **out, char *err, size_t errlen)
{
    *out = NULL;
    /* the default of a problem cuBLASLt's heuristic refuses: it cannot run */
    if (gt_cuda_no_default(cfg, err, errlen))
        return -1;
    int fam = gt_gen_family(cfg);
    if (fam == GT_FAM_UNKNOWN) {
        snprintf(err, errlen, "cuda: config family unknown (cublaslt, gemv, mma, cutlass or fault)");
        return -1;
    }
    gt_bk_cand *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "cuda: out of host memory");
        return -1;
    }
    c->pp = pp;
    if (fam != GT_FAM_CUBLASLT) {
        if (gt_cuda_alive(pp->ctx, err, errlen) != 0 || gt_cuda_gen_build(pp, cfg, fam, c, err, errlen) != 0) {
            free(c);
            return -1;
        }
        *out = c;
        return 0;
    }
    /* A config equal to one of the heuristic's results runs the heuristic's
     * algo bytes (checked by cuBLASLt when it returned them); any other is
     * re-created from its attributes and checked. Host work only. */
    if (gt_cuda_alive(pp->ctx, err, errlen) != 0 ||
        gt_cu_lt_cfg_from_json(cfg, &c->cfg, err, errlen) != 0 ||
        (!gt_cuda_heur_find(pp, &c->cfg, &c->algo, &c->ws_need) &&
         gt_cuda_algo_make(pp->ctx, &pp->map, &pp->desc, &c->cfg, &c->algo, &c->ws_need, err,
                           errlen) != 0)) {
        free(c);
        return -1;
    }
    *out = c;
    return 0;
}

static void cuda_release(gt_bk_cand *c)
{
    if (!c)
        return;
    gt_cuda_graph_drop(c); /* its cached graph, if it was timed as one */
    if (c->gen)
        gt_cuda_gen_release(c);
    free(c); /* an algo is plain host data: nothing else on the device to free */
}

static int cuda_validate(gt_bk_prob *pp, gt_bk_cand *c, double *rel_err, char *err, size_t errlen)
{
    double t0 = gt_mono_ms();
    int rc = c->gen ? gt_cuda_gen_validate(pp, c, rel_err, err, errlen)
                    : gt_cuda_validate(pp, c, rel_err, err, errlen);
    /* where a screen's validation time goes: the candidates' kernels, or
     * the host around them (first launches, module loads, the comparison):
     * summed per prepared problem, logged by gt_cuda_unprepare */
    pp->val_n++;
    pp->val_wall_ms += gt_mono_ms() - t0;
    pp->val_kernel_ms += rc == 0 ? c->check_us / 1000.0 : 0;
    return rc;
}

/* The device's state next to a timing (gt_backend.state): NVML is opened
 * at the first read, for this context's device by its PCI bus id; without
 * it every read fails with the same reason, which the caller reports once. */
static int cuda_state(gt_bk_prob *pp, gt_gpu_sample *s, char *err, size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    if (!ctx->nvml_tried) {
        char bus[64];
        ctx->nvml_tried = 1;
        cudaError_t e = cudaDeviceGetPCIBusId(bus, (int)sizeof bus, ctx->dev);
        if (e != cudaSuccess)
            snprintf(ctx->nvml_why, sizeof ctx->nvml_why, "nvml: cudaDeviceGetPCIBusId: %s",
                     cudaGetErrorName(e));
        else
            ctx->nvml = gt_cuda_nvml_open(bus, ctx->nvml_why, sizeof ctx->nvml_why);
    }
    if (!ctx->nvml) {
        snprintf(err, errlen, "%s", ctx->nvml_why);
        return -1;
    }
    return gt_cuda_nvml_sample(ctx->nvml, s, err, errlen);
}

/* Visible GPUs, for `gemmtune-worker --device all` (0 when none or no
 * driver: the caller reports it). Runs in the launching parent only, which
 * then execs one worker per device. */
static int cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        return 0;
    return n;
}

/* gt_backend.warm: what a fresh process's first job would pay inside it
 * (the spare's final: 170 ms more prepare than the screening child's on the
 * H100): the worker's kernels module, cuBLASLt's first heuristic query, the
 * reference and NVML, through a prepare of a small problem that compiles
 * and loads no generated kernel (a module loaded counts: gt_sup.h). */
static void cuda_warm(gt_bk_ctx *ctx)
{
    gt_problem p;
    gt_bk_prob *pp = NULL;
    gt_gpu_sample s;
    char err[256];
    gt_problem_init_tn(&p, 256, 16, 256, GT_DT_BF16, GT_DT_BF16);
    ctx->warming = 1;
    int rc = gt_cuda_prepare(ctx, &p, &pp, err, sizeof err);
    ctx->warming = 0;
    if (rc != 0) {
        gt_debug("cuda: warm-up: %s", err);
        return;
    }
    (void)cuda_state(pp, &s, err, sizeof err); /* no NVML: the job says so */
    gt_cuda_unprepare(pp);
}

const gt_backend gt_bk_cuda = {
    .name = "cuda",
    .graphs = 1,
    .device_count = cuda_device_count,
    .open = cuda_open,
    .close = cuda_close,
    .warm = cuda_warm,
    .enumerate = gt_cuda_enumerate,
    .prepare = gt_cuda_prepare,
    .unprepare = gt_cuda_unprepare,
    .prefetch = gt_cuda_gen_prefetch,
    .build = cuda_build,
    .release = cuda_release,
    .validate = cuda_validate,
    .time = gt_cuda_time,
    .state = cuda_state,
};
