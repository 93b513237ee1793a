/* config.c: candidate configurations: their canonical text (sorted keys,
 * compact, recursive), its FNV-1a 64 hash (gt_fnv1a64, fnv.c) every worker
 * and the coordinator agree on, and the search strategy names. The CPU
 * candidate space itself lives in space_cpu.c. */
#include "gt_config.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gt_util.h"

/* JSON string literal exactly as cJSON prints it (same escapes), so a key
 * and a string value canonicalise the same way whichever side printed them. */
static int put_string(gt_str *o, const char *s)
{
    gt_str_append(o, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': gt_str_append(o, "\\\"", 2); break;
        case '\\': gt_str_append(o, "\\\\", 2); break;
        case '\b': gt_str_append(o, "\\b", 2); break;
        case '\f': gt_str_append(o, "\\f", 2); break;
        case '\n': gt_str_append(o, "\\n", 2); break;
        case '\r': gt_str_append(o, "\\r", 2); break;
        case '\t': gt_str_append(o, "\\t", 2); break;
        default:
            if (*p < 32)
                gt_str_printf(o, "\\u%04x", *p);
            else
                gt_str_append(o, (const char *)p, 1);
        }
    }
    gt_str_append(o, "\"", 1);
    return o->oom ? -1 : 0;
}

/* An int as decimal text ("%d"), appended. */
static int int_text(gt_str *o, int v)
{
    char buf[16], *p = buf + sizeof buf;
    /* through unsigned: -INT_MIN overflows int */
    unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    return gt_str_append(o, p, (size_t)(buf + sizeof buf - p)) || o->oom ? -1 : 0;
}

typedef struct {
    const cJSON *item;
    size_t pos; /* original position: keeps duplicate keys in a stable order */
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    int c = strcmp(x->item->string, y->item->string);
    if (c)
        return c;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int canon(const cJSON *it, gt_str *o, int depth)
{
    /* Configs are flat or shallow; a deep structure is a malformed input,
     * not something to recurse into without bound. */
    if (depth > 64)
        return -1;
    if (cJSON_IsObject(it)) {
        size_t n = 0;
        for (const cJSON *c = it->child; c; c = c->next)
            n++;
        keyed *ks = n ? calloc(n, sizeof *ks) : NULL;
        if (n && !ks)
            return -1;
        size_t i = 0;
        for (const cJSON *c = it->child; c; c = c->next, i++) {
            if (!c->string) {
                free(ks);
                return -1;
            }
            ks[i].item = c;
            ks[i].pos = i;
        }
        if (n)
            qsort(ks, n, sizeof *ks, cmp_keyed);
        gt_str_append(o, "{", 1);
        int rc = 0;
        for (i = 0; i < n && rc == 0; i++) {
            if (i)
                gt_str_append(o, ",", 1);
            rc = put_string(o, ks[i].item->string);
            gt_str_append(o, ":", 1);
            if (rc == 0)
                rc = canon(ks[i].item, o, depth + 1);
        }
        free(ks);
        gt_str_append(o, "}", 1);
        return rc || o->oom ? -1 : 0;
    }
    if (cJSON_IsArray(it)) {
        gt_str_append(o, "[", 1);
        int first = 1;
        for (const cJSON *c = it->child; c; c = c->next) {
            if (!first)
                gt_str_append(o, ",", 1);
            first = 0;
            if (canon(c, o, depth + 1))
                return -1;
        }
        gt_str_append(o, "]", 1);
        return o->oom ? -1 : 0;
    }
    if (cJSON_IsString(it))
        return put_string(o, it->valuestring ? it->valuestring : "");
    if (cJSON_IsRaw(it))
        return gt_str_append(o, it->valuestring ? it->valuestring : "null",
                             strlen(it->valuestring ? it->valuestring : "null"));
    /* Booleans, null and integral numbers in int range exactly as cJSON
     * prints them ("%d" of valueint), without its malloc and the printf /
     * sscanf round trip it does for every number: configs are mostly small
     * integers and the coordinator canonicalises every result's config
     * (the single largest cost of a results message before this). */
    if (cJSON_IsTrue(it))
        return gt_str_append(o, "true", 4) || o->oom ? -1 : 0;
    if (cJSON_IsFalse(it))
        return gt_str_append(o, "false", 5) || o->oom ? -1 : 0;
    if (cJSON_IsNull(it))
        return gt_str_append(o, "null", 4) || o->oom ? -1 : 0;
    if (cJSON_IsNumber(it) && it->valuedouble >= INT_MIN && it->valuedouble <= INT_MAX &&
        it->valuedouble == (double)it->valueint && !signbit(it->valuedouble) == !(it->valueint < 0))
        return int_text(o, it->valueint);
    /* Other numbers: cJSON's own printer, so doubles round-trip the same on
     * every host. */
    char *leaf = cJSON_PrintUnformatted(it);
    if (!leaf)
        return -1;
    int rc = gt_str_append(o, leaf, strlen(leaf));
    cJSON_free(leaf);
    return rc || o->oom ? -1 : 0;
}

char *gt_cfg_canonical(const cJSON *cfg)
{
    if (!cJSON_IsObject(cfg))
        return NULL;
    gt_str o;
    gt_str_init(&o);
    if (canon(cfg, &o, 0) != 0 || o.oom || !o.s) {
        gt_str_free(&o);
        return NULL;
    }
    return o.s; /* ownership passes to the caller */
}

int gt_cfg_hash(const cJSON *cfg, char out[17])
{
    char *t = gt_cfg_canonical(cfg);
    if (!t) {
        out[0] = '\0';
        return -1;
    }
    uint64_t h = gt_fnv1a64(t, strlen(t), GT_FNV_SEED);
    free(t);
    snprintf(out, 17, "%016llx", (unsigned long long)h);
    return 0;
}

const char *gt_strategy_name(gt_strategy s)
{
    switch (s) {
    case GT_STRAT_EXHAUSTIVE: return "exhaustive";
    case GT_STRAT_RANDOM: return "random";
    case GT_STRAT_EVOLUTIONARY: return "evolutionary";
    }
    return "unknown";
}

int gt_strategy_parse(const char *s, gt_strategy *out)
{
    if (!s)
        return -1;
    if (strcasecmp(s, "exhaustive") == 0) {
        *out = GT_STRAT_EXHAUSTIVE;
        return 0;
    }
    if (strcasecmp(s, "random") == 0) {
        *out = GT_STRAT_RANDOM;
        return 0;
    }
    /* "ga" is what TuningDriver calls its search; the name stored in the run
     * is always the canonical "evolutionary". */
    if (strcasecmp(s, "evolutionary") == 0 || strcasecmp(s, "evo") == 0 ||
        strcasecmp(s, "ga") == 0) {
        *out = GT_STRAT_EVOLUTIONARY;
        return 0;
    }
    return -1;
}
