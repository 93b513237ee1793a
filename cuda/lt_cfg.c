/* lt_cfg.c: the cuBLASLt family's configuration as JSON (gt_cu_host.h):
 * the one decoder of stored cuda configs, for the worker and libgemmtune.
 *
 * Encoding: a flat JSON object of integers, always all nine keys
 * (canonical text has them in this, sorted, order):
 *
 *   algo_id      CUBLASLT_ALGO_CONFIG_ID: the kernel family, an id from
 *                cublasLtMatmulAlgoGetIds for the problem's types (required)
 *   cluster      CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, cublasLtClusterShape_t:
 *                0 = AUTO, 2 = 1x1x1, 3 = 2x1x1, 5 = 1x2x1, ... (sm_90+)
 *   custom       CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, 0..CUSTOM_OPTION_MAX
 *   inner_shape  CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, cublasLtMatmulInnerShape_t
 *                (0 = UNDEFINED; only heuristic results set others)
 *   reduction    CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME: 0 none, 1 in place,
 *                2 compute type, 4 output type (only with splitk > 1)
 *   splitk       CUBLASLT_ALGO_CONFIG_SPLITK_NUM, 1 = no split
 *   stages       CUBLASLT_ALGO_CONFIG_STAGES_ID, cublasLtMatmulStages_t
 *                (0 = UNDEFINED, 16 = 64x4, 35 = 64xAUTO, ...)
 *   swizzle      CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, 0 or 1
 *   tile         CUBLASLT_ALGO_CONFIG_TILE_ID, cublasLtMatmulTile_t
 *                (0 = UNDEFINED, 20 = 128x128, ...)
 *
 * e.g. {"algo_id":66,"cluster":2,"custom":0,"inner_shape":0,"reduction":0,
 *       "splitk":1,"stages":35,"swizzle":0,"tile":20}
 *
 * The numbers are cuBLASLt enum values: stable within a cuBLASLt major
 * version, so results are only comparable between workers whose device
 * descriptions (which carry the cuBLASLt version) match. The heuristic rank
 * is NOT part of a config: the same algo found by the heuristic and by the
 * enumeration is one config. worker/cuda/CONFIG.md documents the same. */
#include "gt_cu_host.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    double max;
} k_keys[] = {
    {"algo_id", 2147483647.0}, {"cluster", 65535}, {"custom", 4294967295.0},
    {"inner_shape", 65535},    {"reduction", 7},   {"splitk", 65535},
    {"stages", 4294967295.0},  {"swizzle", 1},     {"tile", 4294967295.0},
};
#define NKEYS (sizeof k_keys / sizeof k_keys[0])

static void cfg_vals(const gt_cu_lt_cfg *c, double v[NKEYS])
{
    v[0] = c->algo_id;
    v[1] = c->cluster;
    v[2] = c->custom;
    v[3] = c->inner_shape;
    v[4] = c->reduction;
    v[5] = c->splitk;
    v[6] = c->stages;
    v[7] = c->swizzle;
    v[8] = c->tile;
}

cJSON *gt_cu_lt_cfg_to_json(const gt_cu_lt_cfg *c)
{
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    double v[NKEYS];
    cfg_vals(c, v);
    for (size_t i = 0; i < NKEYS; i++) {
        if (!cJSON_AddNumberToObject(j, k_keys[i].name, v[i])) {
            cJSON_Delete(j);
            return NULL;
        }
    }
    return j;
}

int gt_cu_lt_cfg_from_json(const cJSON *j, gt_cu_lt_cfg *c, char *err, size_t errlen)
{
    double v[NKEYS] = {-1, 0, 0, 0, 0, 1, 0, 0, 0}; /* defaults; algo_id required */
    int seen[NKEYS] = {0};
    if (!cJSON_IsObject(j)) {
        snprintf(err, errlen, "cuda: config is not a JSON object");
        return -1;
    }
    for (const cJSON *it = j->child; it; it = it->next) {
        size_t k = 0;
        /* "family":"cublaslt" names what an absent family means (gen_gemv.h) */
        if (it->string && !strcmp(it->string, "family") && cJSON_IsString(it) &&
            !strcmp(it->valuestring, "cublaslt"))
            continue;
        while (k < NKEYS && strcmp(it->string ? it->string : "", k_keys[k].name) != 0)
            k++;
        if (k == NKEYS) {
            snprintf(err, errlen, "cuda: config key '%s' unknown", it->string ? it->string : "");
            return -1;
        }
        if (seen[k]++) {
            snprintf(err, errlen, "cuda: config key '%s' repeated", k_keys[k].name);
            return -1;
        }
        double d = it->valuedouble;
        if (!cJSON_IsNumber(it) || d != floor(d) || d < 0 || d > k_keys[k].max) {
            snprintf(err, errlen, "cuda: config %s: must be an integer in 0..%.0f", k_keys[k].name,
                     k_keys[k].max);
            return -1;
        }
        v[k] = d;
    }
    if (!seen[0]) {
        snprintf(err, errlen, "cuda: config algo_id: missing");
        return -1;
    }
    if (v[4] != 0 && v[4] != 1 && v[4] != 2 && v[4] != 4) {
        snprintf(err, errlen, "cuda: config reduction=%.0f: must be 0, 1, 2 or 4", v[4]);
        return -1;
    }
    memset(c, 0, sizeof *c);
    c->algo_id = (int32_t)v[0];
    c->cluster = (uint16_t)v[1];
    c->custom = (uint32_t)v[2];
    c->inner_shape = (uint16_t)v[3];
    c->reduction = (uint32_t)v[4];
    c->splitk = (int32_t)v[5];
    c->stages = (uint32_t)v[6];
    c->swizzle = (uint32_t)v[7];
    c->tile = (uint32_t)v[8];
    return 0;
}

int gt_cu_lt_cfg_text(const gt_cu_lt_cfg *c, char *buf, size_t len)
{
    return snprintf(buf, len,
                    "{\"algo_id\":%d,\"cluster\":%u,\"custom\":%u,\"inner_shape\":%u,"
                    "\"reduction\":%u,\"splitk\":%d,\"stages\":%u,\"swizzle\":%u,\"tile\":%u}",
                    (int)c->algo_id, (unsigned)c->cluster, (unsigned)c->custom,
                    (unsigned)c->inner_shape, (unsigned)c->reduction, (int)c->splitk,
                    (unsigned)c->stages, (unsigned)c->swizzle, (unsigned)c->tile);
}

int gt_cu_lt_cfg_parse(const char *json, gt_cu_lt_cfg *c, char *err, size_t errlen)
{
    cJSON *j = json ? cJSON_Parse(json) : NULL;
    int rc = gt_cu_lt_cfg_from_json(j, c, err, errlen);
    cJSON_Delete(j);
    return rc;
}

int gt_cu_lt_cfg_equal(const gt_cu_lt_cfg *x, const gt_cu_lt_cfg *y)
{
    return x->algo_id == y->algo_id && x->tile == y->tile && x->stages == y->stages &&
           x->splitk == y->splitk && x->reduction == y->reduction && x->swizzle == y->swizzle &&
           x->custom == y->custom && x->cluster == y->cluster && x->inner_shape == y->inner_shape;
}
