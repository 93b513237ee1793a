/* space_common.c: the pieces of the "gemv" and "mma" families' configs and
 * spaces that do not depend on the family (space_common.h): integer
 * attributes of the JSON form, the type and epilogue rules, the space
 * builder. Pure host C. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space_common.h"

/* ---- encoding: integer attributes --------------------------------------------- */

int gt_gen_int_attr_set(const char *fam, const gt_gen_int_attr *attrs, size_t n, int *seen,
                        const cJSON *it, void *cfg, char *err, size_t errlen)
{
    const char *k = it->string ? it->string : "";
    size_t i = 0;
    while (i < n && strcmp(k, attrs[i].name))
        i++;
    if (i == n) {
        snprintf(err, errlen, "%s: config key '%s' unknown", fam, k);
        return -1;
    }
    double d = it->valuedouble;
    if (seen[i]++ || !cJSON_IsNumber(it) || d != floor(d) || d < attrs[i].lo || d > attrs[i].hi) {
        snprintf(err, errlen, "%s: config %s: must be an integer in %d..%d, once", fam, k, attrs[i].lo,
                 attrs[i].hi);
        return -1;
    }
    *(int *)((char *)cfg + attrs[i].off) = (int)d;
    return 0;
}

int gt_gen_int_attr_missing(const char *fam, const gt_gen_int_attr *attrs, size_t n,
                            const int *seen, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++)
        if (!seen[i]) {
            snprintf(err, errlen, "%s: config %s: missing", fam, attrs[i].name);
            return -1;
        }
    return 0;
}

int gt_gen_int_attr_add(cJSON *j, const gt_gen_int_attr *attrs, size_t n, const void *cfg)
{
    for (size_t i = 0; i < n; i++)
        if (!cJSON_AddNumberToObject(j, attrs[i].name, *(const int *)((const char *)cfg + attrs[i].off)))
            return -1;
    return 0;
}

/* ---- applicability ------------------------------------------------------------------ */

static int io_type(gt_dtype t) { return t == GT_DT_F32 || t == GT_DT_F16 || t == GT_DT_BF16; }

static int ocp_f8(gt_dtype t) { return t == GT_DT_F8E4M3 || t == GT_DT_F8E5M2; }

int gt_gen_types_reason(const gt_problem *p, int fp8, char *why, size_t len)
{
    const char *act = p->activation;
    int f8 = fp8 && ocp_f8(p->a_type) && ocp_f8(p->b_type);
    if (fp8 && (gt_dtype_is_f8(p->a_type) || gt_dtype_is_f8(p->b_type)) && !f8)
        snprintf(why, len, "A/B types %s/%s: fp8 inputs are OCP e4m3/e5m2 on both sides (FNUZ is "
                 "AMD's encoding; an fp8 x 16-bit mix is no cuBLASLt GEMM)",
                 gt_dtype_name(p->a_type), gt_dtype_name(p->b_type));
    else if (f8 && p->a_type == GT_DT_F8E5M2 && p->b_type == GT_DT_F8E5M2)
        snprintf(why, len, "A/B types e5m2/e5m2: cuBLASLt's fp8 matmul takes at most one e5m2 input");
    else if (f8 && (gt_problem_scale(p, 'a') != GT_SCALE_SCALAR || gt_problem_scale(p, 'b') != GT_SCALE_SCALAR))
        snprintf(why, len, "fp8 scales %s/%s: one f32 scale per tensor for A and B only (cuBLASLt's "
                 "A/B scale pointers)", gt_scale_name(gt_problem_scale(p, 'a')),
                 gt_scale_name(gt_problem_scale(p, 'b')));
    else if (!f8 && (p->a_type != p->b_type || (p->a_type != GT_DT_BF16 && p->a_type != GT_DT_F16)))
        snprintf(why, len, "A/B types %s/%s: bf16 or f16 inputs of one type only%s",
                 gt_dtype_name(p->a_type), gt_dtype_name(p->b_type), fp8 ? ", or OCP fp8" : "");
    else if (p->compute_type != GT_DT_F32 || (p->scale_type != GT_DT_F32 && p->scale_type != GT_DT_INVALID))
        snprintf(why, len, "compute %s, scale %s: the family accumulates and scales in f32 only",
                 gt_dtype_name(p->compute_type), gt_dtype_name(p->scale_type));
    else if (!io_type(p->d_type) || !io_type(p->c_type))
        snprintf(why, len, "C/D types %s/%s: f32, f16 or bf16 only", gt_dtype_name(p->c_type),
                 gt_dtype_name(p->d_type));
    else if (p->bias && p->bias_type != GT_DT_INVALID && !io_type(p->bias_type))
        snprintf(why, len, "bias type %s: f32, f16 or bf16 only", gt_dtype_name(p->bias_type));
    else if (act[0] && strcmp(act, "none") && strcmp(act, "relu") && strcmp(act, "gelu") &&
             strcmp(act, "gelu_tanh"))
        snprintf(why, len, "activation %s: none, relu or gelu (tanh) only", act);
    else
        return 0;
    return -1;
}

/* ---- the space -------------------------------------------------------------------- */

static int cmp_us(const void *a, const void *b)
{
    const gt_gen_ranked *x = a, *y = b;
    if (x->us != y->us)
        return x->us < y->us ? -1 : 1;
    return strcmp(x->text, y->text);
}

static int cmp_key(const void *a, const void *b)
{
    const gt_gen_ranked *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return cmp_us(a, b);
}

static void out_free(gt_gen_space_out *out)
{
    free(out->keep);
    free(out->pruned);
    memset(out, 0, sizeof *out);
}

int gt_gen_space_build(const gt_gen_space_spec *f, const gt_problem *p, const gt_gen_dev *d, int cap,
                       int with_pruned, gt_gen_space_out *out)
{
    int nok = 0, keep = 0, okcap = 1024;
    memset(out, 0, sizeof *out);
    gt_gen_ranked *ok = malloc((size_t)okcap * sizeof *ok);
    if (with_pruned)
        out->pruned = malloc((size_t)f->nraw * f->pruned_size);
    if (!ok || (with_pruned && !out->pruned))
        goto fail;
    for (int i = 0; i < f->nraw; i++) {
        gt_gen_anycfg c;
        if (!f->raw(p, d, i, &c))
            continue;
        out->raw++;
        char *rec = with_pruned ? (char *)out->pruned + (size_t)out->npruned * f->pruned_size : NULL;
        if (f->check(p, d, &c, rec ? rec + f->reason_off : NULL, GT_GEN_REASON)) {
            if (rec)
                memcpy(rec, &c, f->cfg_size);
            out->npruned++;
            continue;
        }
        if (nok == okcap) { /* the kept are a few per cent of the raw space */
            gt_gen_ranked *grown = realloc(ok, (size_t)okcap * 2 * sizeof *ok);
            if (!grown)
                goto fail;
            ok = grown;
            okcap *= 2;
        }
        ok[nok].c = c;
        ok[nok].us = f->model_us(p, d, &c);
        ok[nok].key = 0;
        f->text(&c, ok[nok].text, sizeof ok[nok].text);
        nok++;
    }
    qsort(ok, (size_t)nok, sizeof *ok, cmp_us);
    if (f->order(ok, nok) != 0)
        goto fail;
    qsort(ok, (size_t)nok, sizeof *ok, cmp_key);
    keep = cap > 0 && nok > cap ? cap : nok;
    out->keep = malloc((size_t)(keep > 0 ? keep : 1) * f->cfg_size);
    if (!out->keep)
        goto fail;
    for (int i = 0; i < nok; i++) {
        if (i < keep) {
            memcpy((char *)out->keep + (size_t)out->nkeep++ * f->cfg_size, &ok[i].c, f->cfg_size);
            continue;
        }
        if (!with_pruned) {
            out->npruned++;
            continue;
        }
        char *rec = (char *)out->pruned + (size_t)out->npruned++ * f->pruned_size;
        memcpy(rec, &ok[i].c, f->cfg_size);
        f->rank_reason(&ok[i], i, nok, cap, rec + f->reason_off, GT_GEN_REASON);
    }
    free(ok);
    return 0;
fail:
    free(ok);
    out_free(out);
    return -1;
}
