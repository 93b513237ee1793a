/* gemmtune_kernel.c: libgemmtune's generated kernels, host side (see
 * gemmtune.h "generated kernels"): a tuned winner whose config names a
 * kernel family is re-created from its problem and config by gen/'s
 * gt_gen_kernel_make, the code the worker compiled and timed, and exposed
 * as the public gt_db_kernel. No CUDA here; kernel_cuda.c compiles and
 * launches (CUDA builds). */
#include "gemmtune.h"
#include "gen_export.h"
#include "gt_lib.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 512

/* The public part first, so a gt_db_kernel * is also a kern *. */
typedef struct kern {
    gt_db_kernel pub;
    gt_gen_kernel g;
    char *key, *model;
} kern;

void gt_db_kernel_free(gt_db_kernel *k)
{
    kern *x = (kern *)k;
    if (!x)
        return;
    gt_gen_kernel_free(&x->g);
    free(x->key);
    free(x->model);
    free(x);
}

int gt_db_kernel_get_key(const gt_db *db, const char *key, const char *device_model,
                         gt_db_kernel **out)
{
    char err[256];
    const char *spec = NULL;
    gt_db_result res;
    gt_problem p;
    if (!db || !key || !device_model || !out)
        return GT_DB_EINVAL;
    *out = NULL;
    int rc = gt_db_gen_entry(db, key, device_model, &spec, &res);
    if (rc == GT_DB_OK)
        return GT_DB_REJECTED; /* a cuBLASLt config: gt_db_cublaslt_algo */
    if (rc != GT_DB_GENERATED)
        return rc;
    cJSON *pj = cJSON_Parse(spec), *cj = cJSON_Parse(res.config);
    kern *x = calloc(1, sizeof *x);
    rc = GT_DB_REJECTED;
    if (!x || !pj || !cj)
        goto out;
    /* Built for an unknown target: the CUDA side picks the device's own. */
    if (gt_problem_from_json(pj, &p, err, sizeof err) != 0 ||
        gt_gen_kernel_make(&p, cj, 0, &x->g, err, sizeof err) != GT_GEN_EXPORT_OK)
        goto out;
    if (!(x->key = strdup(res.key)) || !(x->model = strdup(res.device_model)))
        goto out;
    const gt_gen_kernel *g = &x->g;
    gt_db_kernel *k = &x->pub;
    k->family = g->family_name;
    k->key = x->key;
    k->device_model = x->model;
    k->config = g->config;
    k->time_us = res.time_us;
    k->baseline_us = res.baseline_us;
    k->uplift = res.uplift;
    k->source = g->source;
    k->program_name = GT_GEN_PROGRAM_NAME;
    k->options = g->opts;
    k->noptions = g->nopts;
    k->min_sm = g->min_sm;
    k->arch_specific = g->arch_specific;
    k->tensor_maps = g->ntmaps;
    k->chain_min_sm = g->chain_min_sm;
    k->chain_reads_a = g->chain_reads_a;
    k->scales = gt_gen_kernel_scaled(g);
    /* two slots in the public struct: a family with more launches is one
     * this library cannot describe */
    if (g->nlaunch > 2)
        goto out;
    k->nlaunch = g->nlaunch;
    for (int i = 0; i < g->nlaunch; i++) {
        const gt_gen_launch *l = &g->launch[i];
        gt_db_launch *o = &k->launch[i];
        o->kernel = l->kernel;
        memcpy(o->grid, l->grid, sizeof o->grid);
        memcpy(o->block, l->block, sizeof o->block);
        o->shared_bytes = l->smem_dynamic;
        o->extra_param = l->extra_name;
        o->extra_value = l->extra_value;
    }
    k->args_bytes = g->args_bytes;
    k->workspace_bytes = g->workspace_bytes;
    for (int i = 0; i < g->nbufs; i++)
        k->workspace_zero |= g->bufs[i].zero;
    *out = k;
    x = NULL;
    rc = GT_DB_OK;
out:
    cJSON_Delete(pj);
    cJSON_Delete(cj);
    gt_db_kernel_free((gt_db_kernel *)x);
    return rc;
}

int gt_db_kernel_get(const gt_db *db, const gt_gemm_desc *d, const char *device_model,
                     gt_db_kernel **out)
{
    char key[KEY_MAX], err[200];
    if (!db || !d || !device_model || !out)
        return GT_DB_EINVAL;
    int n = gt_db_key(d, key, sizeof key, err, sizeof err);
    if (n < 0 || (size_t)n >= sizeof key)
        return GT_DB_EINVAL;
    return gt_db_kernel_get_key(db, key, device_model, out);
}

const gt_gen_kernel *gt_db_kernel_gen(const gt_db_kernel *k)
{
    return k ? &((const kern *)k)->g : NULL;
}

int gt_db_kernel_args(const gt_db_kernel *k, const void *a, const void *b, const void *c,
                      const void *bias, void *d, void *workspace, void *out, size_t len)
{
    return gt_db_kernel_args_scaled(k, a, b, c, bias, d, NULL, NULL, workspace, out, len);
}

int gt_db_kernel_args_scaled(const gt_db_kernel *k, const void *a, const void *b, const void *c,
                             const void *bias, void *d, const void *scale_a, const void *scale_b,
                             void *workspace, void *out, size_t len)
{
    const kern *x = (const kern *)k;
    if (!k || !out)
        return -1;
    return gt_gen_kernel_args(&x->g, a, b, c, bias, d, scale_a, scale_b, workspace, out, len);
}
