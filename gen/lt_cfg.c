/* lt_cfg.c: the cuBLASLt family's configuration encoding (lt_cfg.h). */
#include "lt_cfg.h"

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

static void cfg_vals(const gt_lt_cfg *c, double v[NKEYS])
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

cJSON *gt_lt_cfg_to_json(const gt_lt_cfg *c)
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

int gt_lt_cfg_from_json(const cJSON *j, gt_lt_cfg *c, char *err, size_t errlen)
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

int gt_lt_cfg_text(const gt_lt_cfg *c, char *buf, size_t len)
{
    return snprintf(buf, len,
                    "{\"algo_id\":%d,\"cluster\":%u,\"custom\":%u,\"inner_shape\":%u,"
                    "\"reduction\":%u,\"splitk\":%d,\"stages\":%u,\"swizzle\":%u,\"tile\":%u}",
                    (int)c->algo_id, (unsigned)c->cluster, (unsigned)c->custom,
                    (unsigned)c->inner_shape, (unsigned)c->reduction, (int)c->splitk,
                    (unsigned)c->stages, (unsigned)c->swizzle, (unsigned)c->tile);
}
