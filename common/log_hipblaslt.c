/* log_hipblaslt.c: one line of a hipBLASLt bench log (HIPBLASLT_LOG_MASK=32,
 * also what PyTorch TunableOp prints as BLAS signatures):
 *   - {function: matmul, M: 16032, N: 109, K: 16384, lda: 16384, ...}
 * into a gt_problem. M, N, K, lda.. are BLAS column-major, exactly the
 * problem model's convention. Every field hipBLASLt prints is validated;
 * fields added by newer versions are ignored. An entry whose function reads
 * "matmul" and more (a comma missing) is a bad line, not another API call.
 * f8_r/bf8_r do not say their fp8 encoding: the run's fp8_encoding does.
 * Also home of the one-line "- { key: value, ... }" reader (gt_log_flowmap)
 * that the tune_gemm YAML parser shares. */
#include "gt_log.h"
#include "log_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- the "- { key: value, ... }" reader, shared with tune_gemm YAML ---- */

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* Reads a key or value starting at s: quoted (no escapes, as neither
 * hipBLASLt nor Python's dict repr of plain scalars produce them), a
 * bracketed group kept whole, or bare text up to one of stops. Sets
 * [*v, *v + *vlen) and returns the position after it, NULL when the line
 * ends inside a quote or bracket. */
static const char *read_token(const char *s, const char *stops, const char **v, size_t *vlen)
{
    if (*s == '\'' || *s == '"') {
        const char *q = strchr(s + 1, *s);
        if (!q)
            return NULL;
        *v = s + 1;
        *vlen = (size_t)(q - s - 1);
        return q + 1;
    }
    const char *p = s;
    if (*s == '[' || *s == '{') {
        int depth = 0;
        for (; *p; p++) {
            if (*p == '[' || *p == '{')
                depth++;
            else if ((*p == ']' || *p == '}') && --depth == 0)
                break;
        }
        if (!*p)
            return NULL;
        p++;
    } else {
        while (*p && !strchr(stops, *p))
            p++;
    }
    const char *end = p;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *v = s;
    *vlen = (size_t)(end - s);
    return p;
}

int gt_log_flowmap(const char *line, gt_log_kv *kv, size_t cap, size_t *n, gt_log_error *e)
{
    *n = 0;
    const char *s = skip_ws(line);
    if (*s != '-') {
        gt_log_seterr(e, "", "not a \"- { ... }\" entry");
        return -1;
    }
    s = skip_ws(s + 1);
    if (*s != '{') {
        gt_log_seterr(e, "", "not a \"- { ... }\" entry");
        return -1;
    }
    s = skip_ws(s + 1);
    while (*s != '}') {
        if (!*s)
            goto truncated;
        const char *k, *v;
        size_t kl, vl;
        s = read_token(s, ":,}", &k, &kl);
        if (!s)
            goto truncated;
        s = skip_ws(s);
        if (*s != ':') {
            if (!*s)
                goto truncated;
            char show[64];
            gt_log_show(show, sizeof show, k, kl);
            gt_log_seterr(e, "", "field '%s' has no value (missing ':')", show);
            return -1;
        }
        if (kl == 0) {
            gt_log_seterr(e, "", "empty field name");
            return -1;
        }
        s = skip_ws(s + 1);
        s = read_token(s, ",}", &v, &vl);
        if (!s)
            goto truncated;
        s = skip_ws(s);
        /* A pair counts only once its end is seen: "function: mat" cut
         * short must not read as some other function. */
        if (!*s)
            goto truncated;
        if (*n == cap) {
            gt_log_seterr(e, "", "too many fields (more than %zu)", cap);
            return -1;
        }
        kv[*n] = (gt_log_kv){k, kl, v, vl};
        (*n)++;
        if (*s == ',')
            s = skip_ws(s + 1);
        else if (*s != '}') {
            gt_log_seterr(e, "", "unexpected '%c' after field %.*s", *s, (int)(kl < 32 ? kl : 32),
                          k);
            return -1;
        }
    }
    s = skip_ws(s + 1);
    if (*s && *s != '#') {
        gt_log_seterr(e, "", "unexpected text after the closing '}'");
        return -1;
    }
    return 0;
truncated:
    gt_log_seterr(e, "", "truncated line: no closing '}'");
    return -1;
}

const gt_log_kv *gt_log_kv_find(const gt_log_kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (gt_log_eq(kv[i].key, kv[i].klen, key))
            return &kv[i];
    return NULL;
}

/* ---- hipBLASLt matmul entries ---- */

typedef struct {
    const gt_log_kv *kv;
    size_t n;
    gt_log_fp8 fp8; /* how f8_r/bf8_r read (gt_log.h) */
    gt_log_error *e;
} fields;

static const gt_log_kv *get(const fields *f, const char *key)
{
    return gt_log_kv_find(f->kv, f->n, key);
}

/* Optional integer field; *have says whether it was there. */
static int opt_int(const fields *f, const char *key, int64_t max, int64_t *out, int *have)
{
    const gt_log_kv *v = get(f, key);
    if (have)
        *have = v != NULL;
    return v ? gt_log_int(key, v->val, v->vlen, max, out, f->e) : 0;
}

static int req_size(const fields *f, const char *key, int64_t *out)
{
    if (!get(f, key)) {
        gt_log_seterr(f->e, key, "%s: missing", key);
        return -1;
    }
    return opt_int(f, key, GT_LOG_SIZE_MAX, out, NULL);
}

static int opt_type(const fields *f, const char *key, gt_dtype *out)
{
    const gt_log_kv *v = get(f, key);
    *out = GT_DT_INVALID;
    return v ? gt_log_dtype_field(key, v->val, v->vlen, f->fp8, out, f->e) : 0;
}

static int opt_bool(const fields *f, const char *key, int *out)
{
    const gt_log_kv *v = get(f, key);
    return v ? gt_log_bool(key, v->val, v->vlen, out, f->e) : 0;
}

/* One of a fixed set of words (any case); *idx is its index. */
static int opt_enum(const fields *f, const char *key, const char *const *words, size_t nwords,
                    const char *expect, size_t *idx)
{
    const gt_log_kv *v = get(f, key);
    if (!v)
        return 0;
    for (size_t i = 0; i < nwords; i++)
        if (gt_log_ieq(v->val, v->vlen, words[i])) {
            *idx = i;
            return 0;
        }
    char show[64];
    gt_log_show(show, sizeof show, v->val, v->vlen);
    gt_log_seterr(f->e, key, "%s=%s: %s", key, show, expect);
    return -1;
}

/* scaleA/scaleB. hipBLASLt prints its scaling mode as a small integer
 * (hipblaslt-bench --scaleA: 0 none, 1 scalar, 2 vector, 3 block); PyTorch's
 * scaled GEMM signature prints the scale's type instead, f32_r, for its
 * per-tensor scales (it leaves its row-wise flag out of the signature, so
 * such calls cannot be told apart here; their TunableOp rows can, rw_1).
 * Only none and one f32 scale per tensor are modelled: everything else is
 * refused by name rather than tuned as a GEMM it is not. Absent: the type's
 * usual mode (gt_problem.h). */
static int parse_scale(const fields *f, const char *key, gt_scale_mode *out)
{
    const gt_log_kv *v = get(f, key);
    *out = GT_SCALE_AUTO;
    if (!v)
        return 0;
    char show[64];
    gt_log_show(show, sizeof show, v->val, v->vlen);
    gt_dtype t = gt_log_dtype(v->val, v->vlen, f->fp8);
    if (t != GT_DT_INVALID) {
        if (t != GT_DT_F32) {
            gt_log_seterr(f->e, key, "%s=%s: only f32 per-tensor scales are modelled", key,
                          show);
            return -1;
        }
        *out = GT_SCALE_SCALAR;
        return 0;
    }
    int64_t mode;
    if (gt_log_int(key, v->val, v->vlen, 255, &mode, f->e))
        return -1;
    switch (mode) {
    case 0: *out = GT_SCALE_NONE; return 0;
    case 1: *out = GT_SCALE_SCALAR; return 0;
    case 2:
        gt_log_seterr(f->e, key, "%s=2: vector (per-row/per-column) scaling is not modelled, "
                                 "only none (0) or one scale per tensor (1)", key);
        return -1;
    case 3:
        gt_log_seterr(f->e, key, "%s=3: block scaling is not modelled, only none (0) or one "
                                 "scale per tensor (1)", key);
        return -1;
    default:
        gt_log_seterr(f->e, key, "%s=%s: unknown scaling mode (0 none, 1 scalar)", key, show);
        return -1;
    }
}

/* After the types: a per-tensor scale on an operand that is not fp8 is
 * refused here, naming the log's field (gt_problem_check would name the
 * model's). */
static int parse_scales(const fields *f, gt_problem *p)
{
    if (parse_scale(f, "scaleA", &p->scale_a) || parse_scale(f, "scaleB", &p->scale_b))
        return -1;
    const struct {
        const char *key, *type_key;
        gt_scale_mode m;
        gt_dtype t;
    } ops[] = {{"scaleA", "a_type", p->scale_a, p->a_type},
               {"scaleB", "b_type", p->scale_b, p->b_type}};
    for (size_t i = 0; i < 2; i++)
        if (ops[i].m == GT_SCALE_SCALAR && !gt_dtype_is_f8(ops[i].t)) {
            gt_log_seterr(f->e, ops[i].key,
                          "%s: a per-tensor scale is modelled for fp8 operands only (%s %s)",
                          ops[i].key, ops[i].type_key, gt_dtype_name(ops[i].t));
            return -1;
        }
    return 0;
}

static int no_duplicates(const fields *f)
{
    for (size_t i = 1; i < f->n; i++)
        for (size_t j = 0; j < i; j++)
            if (f->kv[i].klen == f->kv[j].klen &&
                !memcmp(f->kv[i].key, f->kv[j].key, f->kv[i].klen)) {
                char show[64];
                gt_log_show(show, sizeof show, f->kv[i].key, f->kv[i].klen);
                gt_log_seterr(f->e, show, "%s: field given twice", show);
                return -1;
            }
    return 0;
}

static int parse_types(const fields *f, gt_problem *p)
{
    gt_dtype a, b, c, d, ct, st, bt;
    if (opt_type(f, "a_type", &a) || opt_type(f, "b_type", &b) || opt_type(f, "c_type", &c) ||
        opt_type(f, "d_type", &d) || opt_type(f, "compute_type", &ct) ||
        opt_type(f, "scale_type", &st) || opt_type(f, "bias_type", &bt))
        return -1;
    /* Missing types follow A (hipBLASLt always prints them all; PyTorch's
     * signatures sometimes leave some out). */
    gt_log_set_types(p, a != GT_DT_INVALID ? a : GT_DT_F32, d != GT_DT_INVALID ? d : c);
    if (b != GT_DT_INVALID)
        p->b_type = b;
    if (c != GT_DT_INVALID)
        p->c_type = c;
    if (d != GT_DT_INVALID)
        p->d_type = d;
    if (ct != GT_DT_INVALID) {
        p->compute_type = ct;
        p->scale_type = ct == GT_DT_TF32 ? GT_DT_F32 : ct;
    }
    if (st != GT_DT_INVALID)
        p->scale_type = st;
    int bias = 0;
    if (opt_bool(f, "bias_vector", &bias))
        return -1;
    p->bias = bias;
    p->bias_type = bias ? (bt != GT_DT_INVALID ? bt : p->d_type) : GT_DT_INVALID;
    return 0;
}

static int parse_epilogue(const fields *f, gt_problem *p)
{
    static const char *const acts[] = {"none", "relu", "gelu"};
    static const char *const sources[] = {"a", "b", "d"};
    size_t act = 0, src = 0;
    /* hipBLASLt says activation_type; PyTorch's GemmAndBias signature says
     * activation (None/RELU/GELU). */
    if (opt_enum(f, "activation_type", acts, 3, "must be none, relu or gelu", &act) ||
        opt_enum(f, "activation", acts, 3, "must be none, relu or gelu", &act) ||
        opt_enum(f, "bias_source", sources, 3, "must be a, b or d", &src))
        return -1;
    snprintf(p->activation, sizeof p->activation, "%s", acts[act]);
    int flag;
    if (opt_bool(f, "scaleAlpha_vector", &flag) || opt_bool(f, "gradient", &flag) ||
        opt_bool(f, "use_e", &flag) || opt_bool(f, "flush", &flag))
        return -1;
    return 0;
}

/* Whether a "function:" value begins with the word matmul: "matmul M: 16"
 * is a matmul entry whose comma went missing (the reader runs the next
 * field into the value), not some other API call to skip. */
static int starts_matmul(const gt_log_kv *fn)
{
    return fn->vlen > 6 && !memcmp(fn->val, "matmul", 6) &&
           (fn->val[6] == ' ' || fn->val[6] == '\t' || fn->val[6] == ':');
}

int gt_log_line_hipblaslt(const char *line, gt_problem *p, gt_log_error *e)
{
    return gt_log_line_hipblaslt_fp8(line, GT_LOG_FP8_OCP, p, e);
}

int gt_log_line_hipblaslt_fp8(const char *line, gt_log_fp8 fp8, gt_problem *p, gt_log_error *e)
{
    const char *s = line;
    while (*s == ' ' || *s == '\t')
        s++;
    if (s[0] != '-')
        return 0;
    s++;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s != '{')
        return 0;

    gt_log_kv kv[GT_LOG_MAX_KV];
    size_t n = 0;
    int r = gt_log_flowmap(line, kv, GT_LOG_MAX_KV, &n, e);
    fields f = {kv, n, fp8, e};
    const gt_log_kv *fn = get(&f, "function");
    if (fn && !gt_log_eq(fn->val, fn->vlen, "matmul")) {
        /* Other hipBLASLt API calls are logged in the same shape. */
        if (!starts_matmul(fn))
            return 0;
        /* Before any error of the reader: this is the first thing wrong. */
        char show[64];
        gt_log_show(show, sizeof show, fn->val, fn->vlen);
        gt_log_seterr(e, "function", "function=%s: a matmul entry needs ',' after 'matmul' "
                                     "(a missing comma runs the next field into it)", show);
        return -1;
    }
    if (r)
        return -1;
    if (!fn) {
        gt_log_seterr(e, "function", "function: missing (not a hipBLASLt matmul entry)");
        return -1;
    }
    if (no_duplicates(&f))
        return -1;

    int64_t m, nn, k;
    if (req_size(&f, "M", &m) || req_size(&f, "N", &nn) || req_size(&f, "K", &k))
        return -1;
    gt_problem_init(p, m, nn, k);
    const gt_log_kv *v;
    if ((v = get(&f, "transA")) && gt_log_trans("transA", v->val, v->vlen, &p->trans_a, e))
        return -1;
    if ((v = get(&f, "transB")) && gt_log_trans("transB", v->val, v->vlen, &p->trans_b, e))
        return -1;
    if (opt_int(&f, "batch_count", GT_LOG_SIZE_MAX, &p->batch, NULL))
        return -1;
    /* Tight defaults first, for logs that leave some out. */
    gt_problem_default_ld(p);
    if (opt_int(&f, "lda", GT_LOG_SIZE_MAX, &p->lda, NULL) ||
        opt_int(&f, "ldb", GT_LOG_SIZE_MAX, &p->ldb, NULL) ||
        opt_int(&f, "ldc", GT_LOG_SIZE_MAX, &p->ldc, NULL) ||
        opt_int(&f, "ldd", GT_LOG_SIZE_MAX, &p->ldd, NULL))
        return -1;
    int hs[4];
    int64_t st[4];
    if (opt_int(&f, "stride_a", INT64_MAX, &st[0], &hs[0]) ||
        opt_int(&f, "stride_b", INT64_MAX, &st[1], &hs[1]) ||
        opt_int(&f, "stride_c", INT64_MAX, &st[2], &hs[2]) ||
        opt_int(&f, "stride_d", INT64_MAX, &st[3], &hs[3]))
        return -1;
    if (p->batch > 1) {
        /* Missing strides: tight for the leading dimensions actually given. */
        p->stride_a = hs[0] ? st[0] : p->lda * (p->trans_a == 'N' ? p->k : p->m);
        p->stride_b = hs[1] ? st[1] : p->ldb * (p->trans_b == 'N' ? p->n : p->k);
        p->stride_c = hs[2] ? st[2] : p->ldc * p->n;
        p->stride_d = hs[3] ? st[3] : p->ldd * p->n;
    } else {
        /* Strides mean nothing for one batch; hipBLASLt still prints them,
         * and identical GEMMs must not differ by them. */
        p->stride_a = p->stride_b = p->stride_c = p->stride_d = 0;
    }
    if ((v = get(&f, "alpha")) && gt_log_double("alpha", v->val, v->vlen, &p->alpha, e))
        return -1;
    if ((v = get(&f, "beta")) && gt_log_double("beta", v->val, v->vlen, &p->beta, e))
        return -1;
    if (parse_types(&f, p) || parse_scales(&f, p) || parse_epilogue(&f, p))
        return -1;
    int64_t ignored;
    if (opt_int(&f, "rotating", GT_LOG_SIZE_MAX, &p->rotating_mb, NULL) ||
        opt_int(&f, "cold_iters", GT_LOG_SIZE_MAX, &ignored, NULL) ||
        opt_int(&f, "iters", GT_LOG_SIZE_MAX, &ignored, NULL) ||
        opt_int(&f, "call_count", GT_LOG_CALLS_MAX, &p->call_count, NULL))
        return -1;
    return 1;
}
