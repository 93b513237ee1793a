/* cutlass_run.c: the cuda backend's "cutlass" candidates: kernels of libgemmtune_cutlass
 * (cutlass/gt_cutlass.h), opened at run time through cuda/'s loader (gt_cu_cutlass.h), their
 * space from cuda/cutlass_cfg.c (the same code libgemmtune maps a stored winner with), built
 * (the library's check: sizes, alignment, knobs, and the workspace it needs) and run on the
 * backend's stream with the prepared problem's operands. gen_run.c dispatches to it like to
 * its own families, so validation (poisoned D, the GPU comparison) and timing (rotating sets,
 * events, graphs) are the ones every candidate gets.
 *
 * A worker without the library has no such candidates, never a failure: the enumeration
 * leaves the family out and says why once; a config that names the family still builds to a
 * clear error. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_cuda.h"
#include "gt_cu_cutlass.h"
#include "gt_util.h"

struct gt_cuda_cutlass_ctx {
    gt_cu_cutlass lib;
    int tried;
    char why[320]; /* why there is no library */
};

struct gt_cuda_cutlass_cand {
    int index; /* in the library's table */
    gt_cu_cutlass_cfg cfg;
    gt_cutlass_args args; /* the problem's, pointers set per run */
    void *ws;
    size_t ws_bytes;
    gt_bk_ctx *ctx;
};

/* The library, opened at the first use on this context; NULL with the reason in err. */
static const gt_cu_cutlass *lib_of(gt_bk_ctx *ctx, char *err, size_t errlen)
{
    if (!ctx->cutlass) {
        ctx->cutlass = calloc(1, sizeof *ctx->cutlass);
        if (!ctx->cutlass) {
            snprintf(err, errlen, "cuda: out of host memory");
            return NULL;
        }
    }
    struct gt_cuda_cutlass_ctx *c = ctx->cutlass;
    if (!c->tried) {
        c->tried = 1;
        if (gt_cu_cutlass_open(&c->lib, NULL, c->why, sizeof c->why) != 0)
            gt_info("cuda: the cutlass family is off: %s", c->why);
    }
    if (!c->lib.dl) {
        snprintf(err, errlen, "cuda: %s", c->why);
        return NULL;
    }
    return &c->lib;
}

void gt_cuda_cutlass_close(gt_bk_ctx *ctx)
{
    if (!ctx->cutlass)
        return;
    gt_cu_cutlass_close(&ctx->cutlass->lib);
    free(ctx->cutlass);
    ctx->cutlass = NULL;
}

int gt_cuda_cutlass_space(gt_bk_ctx *ctx, const gt_problem *p, int cap, gt_cu_cutlass_space *s)
{
    char err[320];
    memset(s, 0, sizeof *s);
    if (cap <= 0) {
        snprintf(s->why, sizeof s->why, "the cutlass family is off (GT_CUDA_CUTLASS_MAX=0, the default; 24 turns it on)");
        return 0;
    }
    /* its kernels are SM90 (wgmma, TMA): nothing to offer another device */
    if (ctx->sm != 90) {
        snprintf(s->why, sizeof s->why, "the cutlass family's kernels are sm_90a; this device is sm_%d", ctx->sm);
        return 0;
    }
    const gt_cu_cutlass *lib = lib_of(ctx, err, sizeof err);
    if (!lib) {
        snprintf(s->why, sizeof s->why, "%.250s", err);
        return 0;
    }
    return gt_cu_cutlass_space_for(lib, p, ctx->sms, cap, s);
}

int gt_cuda_cutlass_build(gt_bk_prob *pp, const cJSON *cfg, gt_cuda_cutlass_cand **out, char *err,
                          size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    *out = NULL;
    gt_cuda_cutlass_cand *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "cuda: out of host memory");
        return -1;
    }
    c->ctx = ctx;
    const gt_cu_cutlass *lib;
    if (gt_cu_cutlass_cfg_from_json(cfg, &c->cfg, err, errlen) != 0 || !(lib = lib_of(ctx, err, errlen)))
        goto fail;
    if ((c->index = gt_cu_cutlass_find(lib, c->cfg.kernel)) < 0) {
        snprintf(err, errlen, "cuda: libgemmtune_cutlass has no kernel %s (another build of it?)", c->cfg.kernel);
        goto fail;
    }
    if (gt_cu_cutlass_args_for(&pp->p, &c->cfg, ctx->sms, &c->args, err, errlen) != 0)
        goto fail;
    char why[256];
    if (lib->check(c->index, &c->args, &c->ws_bytes, why, sizeof why) != 0) {
        snprintf(err, errlen, "cuda: cutlass %s: %s", c->cfg.kernel, why);
        goto fail;
    }
    /* its own scratch: the library initialises it at every run, so sharing it with another
     * candidate would be safe too, but a candidate's memory stays what it was timed with */
    if (c->ws_bytes && gt_cuda_ck(ctx, cudaMalloc(&c->ws, c->ws_bytes), "cudaMalloc(cutlass workspace)", err, errlen))
        goto fail;
    *out = c;
    return 0;
fail:
    free(c);
    return -1;
}

void gt_cuda_cutlass_release(gt_cuda_cutlass_cand *c)
{
    if (!c)
        return;
    if (c->ws)
        (void)cudaFree(c->ws); /* best effort: after a sticky error the process ends anyway */
    free(c);
}

int gt_cuda_cutlass_run(gt_bk_prob *pp, gt_cuda_cutlass_cand *c, const gt_cuda_set *s, char *err, size_t errlen)
{
    gt_bk_ctx *ctx = pp->ctx;
    char why[256];
    gt_cutlass_args a = c->args;
    a.a = s->a;
    a.b = s->b;
    a.d = s->d;
    int rc = ctx->cutlass->lib.run(c->index, &a, c->ws, c->ws_bytes, ctx->stream, why, sizeof why);
    if (rc != 0) {
        /* a launch that failed leaves the CUDA error behind it: sticky ones end the context */
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return gt_cuda_ck(ctx, e, "cutlass launch", err, errlen);
        snprintf(err, errlen, "cuda: cutlass %s: %s", c->cfg.kernel, why);
        return -1;
    }
    return 0;
}

void gt_cuda_cutlass_info(const gt_cuda_cutlass_cand *c, cJSON *j)
{
    const gt_cutlass_kernel *k = c->ctx->cutlass->lib.kernel_at(c->index);
    if (!k)
        return;
    int tile[2] = {k->tile_m, k->tile_n}, cluster[2] = {k->cluster_m, k->cluster_n};
    cJSON_AddItemToObject(j, "tile", cJSON_CreateIntArray(tile, 2));
    cJSON_AddItemToObject(j, "cluster", cJSON_CreateIntArray(cluster, 2));
    cJSON_AddStringToObject(j, "schedule", k->schedule);
    cJSON_AddStringToObject(j, "scheduler", k->scheduler);
    cJSON_AddNumberToObject(j, "ws_bytes", (double)c->ws_bytes);
}
