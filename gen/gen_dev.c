/* gen_dev.c: gt_gen_dev <-> JSON (gen_dev.h), the "gen_device" a cuda
 * worker registers with and the coordinator's space view reads back. One
 * table lists the members, so the writer and the strict reader cannot
 * drift apart and a new gt_gen_dev field is one line here. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_dev.h"

enum { T_INT, T_I64, T_DBL };

/* The ranges are what a device can plausibly report, wide enough for
 * GPUs to come; they keep the rules' and the model's arithmetic (divisions
 * by sms, regs_sm, dram_bw, tc_flops; int products of the limits) sane for
 * whatever a peer sends. */
static const struct member {
    const char *name;
    int type;
    size_t off;
    double lo, hi;
} k_members[] = {
    {"hip", T_INT, offsetof(gt_gen_dev, hip), 0, 1},
    {"sm", T_INT, offsetof(gt_gen_dev, sm), 0, 1000},
    {"sms", T_INT, offsetof(gt_gen_dev, sms), 1, 4096},
    {"warp_size", T_INT, offsetof(gt_gen_dev, warp_size), 32, 64},
    {"max_threads_block", T_INT, offsetof(gt_gen_dev, max_threads_block), 32, 65536},
    {"smem_block", T_INT, offsetof(gt_gen_dev, smem_block), 1, 1 << 24},
    {"regs_sm", T_INT, offsetof(gt_gen_dev, regs_sm), 1, 1 << 24},
    {"max_regs_thread", T_INT, offsetof(gt_gen_dev, max_regs_thread), 1, 4096},
    {"max_warps_sm", T_INT, offsetof(gt_gen_dev, max_warps_sm), 1, 4096},
    {"dram_bw", T_DBL, offsetof(gt_gen_dev, dram_bw), 1e6, 1e16},
    {"smem_optin", T_INT, offsetof(gt_gen_dev, smem_optin), 1, 1 << 24},
    {"smem_sm", T_INT, offsetof(gt_gen_dev, smem_sm), 1, 1 << 24},
    {"l2_bytes", T_I64, offsetof(gt_gen_dev, l2_bytes), 0, 1099511627776.0 /* 1 TiB */},
    {"tc_flops", T_DBL, offsetof(gt_gen_dev, tc_flops), 1e6, 1e18},
};
#define NMEMBERS (sizeof k_members / sizeof k_members[0])

/* The shortest decimal that reads back as exactly v, as a raw JSON number.
 * cJSON's own printer keeps 15 digits whenever they read back within an
 * epsilon of v, which can lose the last bits of dram_bw (computed from
 * clocks) and so move the model's ranking on the coordinator. */
static cJSON *exact_number(double v)
{
    char buf[32];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return cJSON_CreateRaw(buf);
}

cJSON *gt_gen_dev_to_json(const gt_gen_dev *d)
{
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    for (size_t i = 0; i < NMEMBERS; i++) {
        const struct member *m = &k_members[i];
        const char *p = (const char *)d + m->off;
        double v;
        if (m->type == T_INT) {
            int x;
            memcpy(&x, p, sizeof x);
            v = x;
        } else if (m->type == T_I64) {
            int64_t x;
            memcpy(&x, p, sizeof x);
            v = (double)x; /* exact: the range keeps it below 2^53 */
        } else {
            memcpy(&v, p, sizeof v);
        }
        cJSON *item = m->type == T_DBL ? exact_number(v) : cJSON_CreateNumber(v);
        if (!item || !cJSON_AddItemToObject(j, m->name, item)) {
            cJSON_Delete(item);
            cJSON_Delete(j);
            return NULL;
        }
    }
    return j;
}

static const struct member *find(const char *name)
{
    for (size_t i = 0; i < NMEMBERS; i++)
        if (!strcmp(k_members[i].name, name))
            return &k_members[i];
    return NULL;
}

int gt_gen_dev_from_json(const cJSON *j, gt_gen_dev *out, char *err, size_t errlen)
{
    gt_gen_dev d;
    int seen[NMEMBERS] = {0};
    memset(&d, 0, sizeof d);
    if (!cJSON_IsObject(j)) {
        snprintf(err, errlen, "gen_device: an object expected");
        return -1;
    }
    for (const cJSON *it = j->child; it; it = it->next) {
        const char *key = it->string ? it->string : "";
        const struct member *m = find(key);
        if (!m) {
            snprintf(err, errlen, "gen_device: unknown member '%.64s'", key);
            return -1;
        }
        size_t i = (size_t)(m - k_members);
        if (seen[i]++) {
            snprintf(err, errlen, "gen_device: %s given twice", m->name);
            return -1;
        }
        double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
        if (!isfinite(v) || v < m->lo || v > m->hi || (m->type != T_DBL && v != floor(v))) {
            snprintf(err, errlen, "gen_device: %s must be %s in %.17g..%.17g", m->name,
                     m->type == T_DBL ? "a number" : "an integer", m->lo, m->hi);
            return -1;
        }
        char *p = (char *)&d + m->off;
        if (m->type == T_INT) {
            int x = (int)v;
            memcpy(p, &x, sizeof x);
        } else if (m->type == T_I64) {
            int64_t x = (int64_t)v;
            memcpy(p, &x, sizeof x);
        } else {
            memcpy(p, &v, sizeof v);
        }
    }
    for (size_t i = 0; i < NMEMBERS; i++)
        if (!seen[i]) {
            snprintf(err, errlen, "gen_device: %s missing", k_members[i].name);
            return -1;
        }
    /* What the rules assume of the two kinds of device (gen_gemv.h): a CUDA
     * one has a compute capability and 32-lane warps; HIP has no sm. */
    if (d.warp_size != 32 && d.warp_size != 64) {
        snprintf(err, errlen, "gen_device: warp_size=%d: 32 or 64", d.warp_size);
        return -1;
    }
    if (!d.hip && (d.sm < 10 || d.warp_size != 32)) {
        snprintf(err, errlen, "gen_device: a CUDA device (hip=0) needs sm >= 10 and warp_size 32 "
                              "(sm=%d, warp_size=%d)", d.sm, d.warp_size);
        return -1;
    }
    if (d.hip && d.sm != 0) {
        snprintf(err, errlen, "gen_device: a HIP device (hip=1) has sm=0, not %d", d.sm);
        return -1;
    }
    *out = d;
    return 0;
}

int gt_gen_dev_equal(const gt_gen_dev *a, const gt_gen_dev *b)
{
    for (size_t i = 0; i < NMEMBERS; i++) {
        const struct member *m = &k_members[i];
        size_t n = m->type == T_INT ? sizeof(int) : m->type == T_I64 ? sizeof(int64_t) : sizeof(double);
        if (memcmp((const char *)a + m->off, (const char *)b + m->off, n) != 0)
            return 0;
    }
    return 1;
}

int gt_gen_dev_sm_of(const char *s)
{
    int v = 0, n = 0;
    if (!s || strncmp(s, "sm_", 3) != 0)
        return 0;
    for (s += 3; isdigit((unsigned char)*s) && n < 4; s++, n++)
        v = v * 10 + (*s - '0');
    return *s == '\0' && n >= 2 ? v : 0;
}
