/* space_view.c: the generated families' spaces for one problem as JSON
 * (gt_space.h): what each family keeps and why it prunes the rest, and the
 * verdict on one config. The spaces are gen/'s (gt_gen_prune, gt_mma_prune)
 * with the CUDA worker's default caps; nothing here re-states a rule. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_dev.h"
#include "gt_space.h"

/* ---- one family's space, whichever family ------------------------------------------ */

typedef struct fam {
    int id;              /* GT_FAM_GEMV or GT_FAM_MMA */
    const char *name;
    int cap;
    gt_gen_space g;      /* id == GT_FAM_GEMV */
    gt_mma_space m;      /* id == GT_FAM_MMA */
    int raw, nkeep, npruned;
    const char *why;     /* "" when the family applies */
} fam;

static void fam_free(fam *f)
{
    gt_gen_space_free(&f->g);
    gt_mma_space_free(&f->m);
}

/* The caps are the worker's defaults (GT_CUDA_GEN_MAX, GT_CUDA_MMA_MAX
 * unset): a worker started with others keeps more or fewer by rank. */
static int fam_prune(fam *f, int id, const gt_problem *p, const gt_gen_dev *d)
{
    memset(f, 0, sizeof *f);
    f->id = id;
    if (id == GT_FAM_GEMV) {
        f->name = "gemv";
        f->cap = GT_GEN_DEFAULT_CAP;
        if (gt_gen_prune(p, d, f->cap, &f->g) != 0)
            return -1;
        f->raw = f->g.raw;
        f->nkeep = f->g.nkeep;
        f->npruned = f->g.npruned;
        f->why = f->g.why;
        return 0;
    }
    f->name = "mma";
    f->cap = GT_MMA_DEFAULT_CAP;
    if (gt_mma_prune(p, d, f->cap, &f->m) != 0)
        return -1;
    f->raw = f->m.raw;
    f->nkeep = f->m.nkeep;
    f->npruned = f->m.npruned;
    f->why = f->m.why;
    return 0;
}

static const char *fam_reason(const fam *f, int i)
{
    return f->id == GT_FAM_GEMV ? f->g.pruned[i].reason : f->m.pruned[i].reason;
}

static cJSON *fam_pruned_cfg(const fam *f, int i)
{
    return f->id == GT_FAM_GEMV ? gt_gen_cfg_to_json(&f->g.pruned[i].cfg)
                                : gt_mma_cfg_to_json(&f->m.pruned[i].cfg);
}

static cJSON *fam_kept_cfg(const fam *f, int i)
{
    return f->id == GT_FAM_GEMV ? gt_gen_cfg_to_json(&f->g.keep[i])
                                : gt_mma_cfg_to_json(&f->m.keep[i]);
}

static double fam_kept_us(const fam *f, const gt_problem *p, const gt_gen_dev *d, int i)
{
    return f->id == GT_FAM_GEMV ? gt_gen_model_us(p, d, &f->g.keep[i])
                                : gt_mma_model_us(p, d, &f->m.keep[i]);
}

/* Canonical texts, for finding a config in the space: the structs are
 * compared through their encoding, not their bytes. */
static void kept_text(const fam *f, int i, char *buf, size_t len)
{
    if (f->id == GT_FAM_GEMV)
        gt_gen_cfg_text(&f->g.keep[i], buf, len);
    else
        gt_mma_cfg_text(&f->m.keep[i], buf, len);
}

static void pruned_text(const fam *f, int i, char *buf, size_t len)
{
    if (f->id == GT_FAM_GEMV)
        gt_gen_cfg_text(&f->g.pruned[i].cfg, buf, len);
    else
        gt_mma_cfg_text(&f->m.pruned[i].cfg, buf, len);
}

/* ---- rules ----------------------------------------------------------------------------- */

void gt_spview_rule(const char *reason, char *buf, size_t len)
{
    size_t n = strcspn(reason, ":=");
    while (n > 0 && reason[n - 1] == ' ')
        n--;
    if (len == 0)
        return;
    if (n >= len)
        n = len - 1;
    memcpy(buf, reason, n);
    buf[n] = '\0';
}

/* The rule names come from a fixed set in gen/ (about a dozen per family);
 * the bound only guards against a reason format this file does not know,
 * which then counts under "other" rather than growing the table. */
#define MAX_RULES 64

typedef struct rule_count {
    char name[GT_SPACE_RULE_LEN];
    int n;
} rule_count;

static void count_rule(rule_count *rc, int *nrc, const char *rule)
{
    for (int i = 0; i < *nrc; i++)
        if (!strcmp(rc[i].name, rule)) {
            rc[i].n++;
            return;
        }
    if (*nrc == MAX_RULES - 1)
        rule = "other";
    for (int i = 0; i < *nrc; i++) /* "other" may exist already */
        if (!strcmp(rc[i].name, rule)) {
            rc[i].n++;
            return;
        }
    snprintf(rc[*nrc].name, sizeof rc[*nrc].name, "%s", rule);
    rc[(*nrc)++].n = 1;
}

/* Most frequent first, so the answer to "what prunes most" leads. */
static int cmp_count(const void *a, const void *b)
{
    const rule_count *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* ---- JSON ------------------------------------------------------------------------------- */

/* Adds item to parent (an array when name is NULL). The item is taken
 * either way: deleted when it cannot be added (NULL, or out of memory for
 * the key), so a caller never leaks it. 1 or 0. */
static int take(cJSON *parent, const char *name, cJSON *item)
{
    if (item && (name ? cJSON_AddItemToObject(parent, name, item) : cJSON_AddItemToArray(parent, item)))
        return 1;
    cJSON_Delete(item);
    return 0;
}

/* Microseconds to three decimals: the model's estimate is a ranking, not a
 * measurement; more digits would only suggest precision. */
static int add_us(cJSON *o, const char *name, double us)
{
    if (!isfinite(us))
        return cJSON_AddNullToObject(o, name) != NULL;
    return cJSON_AddNumberToObject(o, name, round(us * 1e3) / 1e3) != NULL;
}

static int add_kept(cJSON *o, const fam *f, const gt_problem *p, const gt_gen_dev *d)
{
    cJSON *kept = cJSON_AddObjectToObject(o, "kept"), *arr;
    if (!kept || !cJSON_AddNumberToObject(kept, "count", f->nkeep) ||
        !(arr = cJSON_AddArrayToObject(kept, "configs")))
        return -1;
    for (int i = 0; i < f->nkeep; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!take(arr, NULL, e) || !cJSON_AddNumberToObject(e, "rank", i + 1) ||
            !add_us(e, "model_us", fam_kept_us(f, p, d, i)) ||
            !take(e, "config", fam_kept_cfg(f, i)))
            return -1;
    }
    return 0;
}

static int add_pruned(cJSON *o, const fam *f, const gt_spview_query *q)
{
    rule_count *rc = calloc(MAX_RULES, sizeof *rc);
    cJSON *pr = cJSON_AddObjectToObject(o, "pruned"), *by = NULL, *ex = NULL;
    int nrc = 0, matching = 0, nex = 0, ret = -1;
    char rule[GT_SPACE_RULE_LEN];
    if (!rc || !pr || !cJSON_AddNumberToObject(pr, "count", f->npruned) ||
        !(by = cJSON_AddObjectToObject(pr, "by_rule")) ||
        !(q->rule ? cJSON_AddStringToObject(pr, "rule", q->rule) : cJSON_AddNullToObject(pr, "rule")) ||
        !(ex = cJSON_CreateArray()))
        goto out;
    for (int i = 0; i < f->npruned; i++) {
        gt_spview_rule(fam_reason(f, i), rule, sizeof rule);
        count_rule(rc, &nrc, rule);
        if (q->rule && strcmp(rule, q->rule))
            continue;
        if (matching++ < q->offset || nex >= q->limit)
            continue;
        nex++;
        cJSON *e = cJSON_CreateObject();
        if (!take(ex, NULL, e) || !cJSON_AddStringToObject(e, "rule", rule) ||
            !cJSON_AddStringToObject(e, "reason", fam_reason(f, i)) ||
            !take(e, "config", fam_pruned_cfg(f, i)))
            goto out;
    }
    qsort(rc, (size_t)nrc, sizeof *rc, cmp_count);
    for (int i = 0; i < nrc; i++)
        if (!cJSON_AddNumberToObject(by, rc[i].name, rc[i].n))
            goto out;
    if (!cJSON_AddNumberToObject(pr, "matching", matching) ||
        !cJSON_AddNumberToObject(pr, "offset", q->offset) ||
        !cJSON_AddNumberToObject(pr, "limit", q->limit))
        goto out;
    ret = take(pr, "examples", ex) ? 0 : -1;
    ex = NULL; /* taken */
out:
    cJSON_Delete(ex);
    free(rc);
    return ret;
}

static cJSON *family_json(const fam *f, const gt_problem *p, const gt_gen_dev *d,
                          const gt_spview_query *q)
{
    cJSON *o = cJSON_CreateObject();
    int applies = f->why[0] == '\0';
    if (!o || !cJSON_AddBoolToObject(o, "applicable", applies) ||
        (!applies && !cJSON_AddStringToObject(o, "reason", f->why)) ||
        !cJSON_AddNumberToObject(o, "cap", f->cap) || !cJSON_AddNumberToObject(o, "raw", f->raw) ||
        add_kept(o, f, p, d) != 0 || add_pruned(o, f, q) != 0) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

int gt_spview_add_families(cJSON *obj, const gt_problem *p, const gt_gen_dev *d,
                          const gt_spview_query *q, char *err, size_t errlen)
{
    static const int ids[2] = {GT_FAM_GEMV, GT_FAM_MMA}, bits[2] = {GT_SPACE_GEMV, GT_SPACE_MMA};
    cJSON *fams = cJSON_AddObjectToObject(obj, "families");
    if (!fams)
        goto nomem;
    for (int i = 0; i < 2; i++) {
        if (!(q->families & bits[i]))
            continue;
        fam f;
        if (fam_prune(&f, ids[i], p, d) != 0) {
            fam_free(&f);
            goto nomem;
        }
        cJSON *j = family_json(&f, p, d, q);
        fam_free(&f); /* the JSON holds copies */
        if (!take(fams, f.name, j))
            goto nomem;
    }
    return 0;
nomem:
    snprintf(err, errlen, "out of memory computing the space");
    return -1;
}

/* ---- one config's verdict ------------------------------------------------------------------ */

#define TEXT_LEN 256

int gt_spview_add_verdict(cJSON *obj, const gt_problem *p, const gt_gen_dev *d, const cJSON *cfg,
                         char *err, size_t errlen)
{
    gt_gen_cfg gc;
    gt_mma_cfg mc;
    char want[TEXT_LEN], have[TEXT_LEN], why[GT_GEN_REASON], rule[GT_SPACE_RULE_LEN];
    int id = gt_gen_family(cfg);
    if (!cJSON_IsObject(cfg)) {
        snprintf(err, errlen, "config: a JSON object expected");
        return 1;
    }
    if (id == GT_FAM_CUBLASLT || id == GT_FAM_FAULT || id == GT_FAM_CUTLASS || id == GT_FAM_UNKNOWN) {
        snprintf(err, errlen,
                 "config: %s: only the generated families gemv and mma are pruned by rules "
                 "(give \"family\":\"gemv\" or \"mma\")",
                 id == GT_FAM_CUBLASLT  ? "a cuBLASLt config (its space is the library's)"
                 : id == GT_FAM_FAULT   ? "a test-only fault config"
                 : id == GT_FAM_CUTLASS ? "a libgemmtune_cutlass config (its space is the worker's: "
                                          "the library's kernels, each checked by CUTLASS)"
                                        : "unknown family");
        return 1;
    }
    if (id == GT_FAM_GEMV ? gt_gen_cfg_from_json(cfg, &gc, err, errlen)
                          : gt_mma_cfg_from_json(cfg, &mc, err, errlen))
        return 1;
    if (id == GT_FAM_GEMV)
        gt_gen_cfg_text(&gc, want, sizeof want);
    else
        gt_mma_cfg_text(&mc, want, sizeof want);

    fam f;
    int rc = -1, kept = -1, pruned = -1;
    if (fam_prune(&f, id, p, d) != 0)
        goto out;
    for (int i = 0; i < f.nkeep && kept < 0; i++) {
        kept_text(&f, i, have, sizeof have);
        if (!strcmp(have, want))
            kept = i;
    }
    for (int i = 0; i < f.npruned && kept < 0 && pruned < 0; i++) {
        pruned_text(&f, i, have, sizeof have);
        if (!strcmp(have, want))
            pruned = i;
    }
    int applies = f.why[0] == '\0', in_raw = kept >= 0 || pruned >= 0;
    if (!cJSON_AddStringToObject(obj, "family", f.name) ||
        !take(obj, "config", id == GT_FAM_GEMV ? gt_gen_cfg_to_json(&gc) : gt_mma_cfg_to_json(&mc)) ||
        !cJSON_AddBoolToObject(obj, "kept", kept >= 0) ||
        !cJSON_AddBoolToObject(obj, "applicable", applies))
        goto out;
    if (kept >= 0) {
        if (!cJSON_AddNumberToObject(obj, "rank", kept + 1) ||
            !add_us(obj, "model_us", fam_kept_us(&f, p, d, kept)) ||
            !cJSON_AddBoolToObject(obj, "in_raw", 1) || !cJSON_AddBoolToObject(obj, "runnable", 1))
            goto out;
        rc = 0;
        goto out;
    }
    /* Not kept: the family does not apply, a rule prunes it (found in the
     * space, or checked here when the enumeration never generates it), or
     * it passes every rule but is not one of the enumerated values. */
    int runnable = 0;
    if (!applies) {
        snprintf(why, sizeof why, "%s", f.why);
        snprintf(rule, sizeof rule, "applicability");
    } else if (pruned >= 0) {
        snprintf(why, sizeof why, "%s", fam_reason(&f, pruned));
        gt_spview_rule(why, rule, sizeof rule);
        runnable = !strcmp(rule, "rank");
    } else if (id == GT_FAM_GEMV ? gt_gen_check(p, d, &gc, why, sizeof why)
                                 : gt_mma_check(p, d, &mc, why, sizeof why)) {
        gt_spview_rule(why, rule, sizeof rule);
    } else {
        snprintf(why, sizeof why, "raw space: passes every rule, but the family's enumeration "
                                  "does not generate these attribute values");
        snprintf(rule, sizeof rule, "raw space");
        runnable = 1;
    }
    if (!cJSON_AddStringToObject(obj, "rule", rule) || !cJSON_AddStringToObject(obj, "reason", why) ||
        !cJSON_AddBoolToObject(obj, "in_raw", in_raw) ||
        !cJSON_AddBoolToObject(obj, "runnable", runnable))
        goto out;
    rc = 0;
out:
    fam_free(&f);
    if (rc < 0)
        snprintf(err, errlen, "out of memory computing the verdict");
    return rc;
}

/* ---- the device ----------------------------------------------------------------------- */

void gt_spview_device(const gt_spview_dev_in *in, gt_spview_dev *out)
{
    memset(out, 0, sizeof *out);
    int sm = in->q_sm ? in->q_sm : in->w_sm ? in->w_sm : GT_SPACE_DEFAULT_SM;
    out->arch_from = in->q_sm ? "query" : in->w_sm ? "worker" : "default";
    out->sms_from = in->q_sms ? "query" : in->w_sms > 0 ? "worker" : "default";
    out->limits_from = "default";
    gt_gen_dev wd;
    if (in->w_gen_device) {
        cJSON *j = cJSON_Parse(in->w_gen_device);
        char why[200];
        if (!j)
            snprintf(out->ignored, sizeof out->ignored, "the worker's gen_device is not JSON");
        else if (gt_gen_dev_from_json(j, &wd, why, sizeof why) != 0)
            snprintf(out->ignored, sizeof out->ignored, "the worker's %s", why);
        /* The worker's limits are those of its own arch: a what-if on
         * another arch gets that arch's defaults, not a mix. */
        else if (in->q_sm && in->q_sm != wd.sm)
            snprintf(out->ignored, sizeof out->ignored,
                     "the worker's gen_device is sm_%d's, the query asks for sm_%d", wd.sm,
                     in->q_sm);
        else
            out->limits_from = "worker";
        cJSON_Delete(j);
    }
    if (!out->ignored[0] && in->w_gen_device)
        out->d = wd;
    else
        gt_gen_dev_default(&out->d, sm, in->w_sms > 0 ? in->w_sms : GT_SPACE_DEFAULT_SMS);
    if (in->q_sms)
        out->d.sms = in->q_sms;
}
