/* log_cublaslt.c: one line of a cuBLASLt API log (CUBLASLT_LOG_LEVEL=5 or
 * CUBLASLT_LOG_MASK with traces). Only the Trace line of a matmul call
 * describes a GEMM, with its descriptors expanded:
 *   [time][cublasLt][pid][Trace][cublasLtTSTMatmul] A=.. Adesc=[type=R_16BF
 *   rows=4096 cols=6144 ld=4096] B=.. Bdesc=[..] C=.. Cdesc=[..] D=..
 *   Ddesc=[..] computeDesc=[computeType=COMPUTE_32F scaleType=R_32F
 *   transa=OP_T ..] algo=[..] .. beta=0 ..
 * Every other line (the Api line of the same call with pointers only,
 * heuristics queries, version and context lines) carries no GEMM. Each Trace
 * line is one call. Descriptors describe the stored matrices: op(A) is m x k,
 * so A is rows=m cols=k when not transposed and rows=k cols=m when it is;
 * n comes from D. Type names say their fp8 encoding (cuBLASLt has OCP
 * only), so the run's fp8_encoding does not apply; aScalePointer and
 * bScalePointer in computeDesc are per-tensor scales. */
#include "gt_log.h"
#include "log_internal.h"

#include <stdio.h>
#include <string.h>

#define MAX_TOKS 64

typedef struct {
    const char *k;
    size_t kl;
    const char *v;
    size_t vl;
} tok;

/* Splits "key=value key=[a=b c=d] word" into key/value tokens; bracketed
 * values are kept whole (brackets included), words without '=' skipped. */
static int tokenize(const char *s, const char *end, tok *t, size_t *n, gt_log_error *e)
{
    *n = 0;
    while (s < end) {
        while (s < end && (*s == ' ' || *s == '\t'))
            s++;
        const char *k = s;
        while (s < end && *s != '=' && *s != ' ' && *s != '\t')
            s++;
        if (s == end || *s != '=')
            continue;
        size_t kl = (size_t)(s - k);
        const char *v = ++s;
        if (s < end && *s == '[') {
            int depth = 0;
            for (; s < end; s++) {
                if (*s == '[')
                    depth++;
                else if (*s == ']' && --depth == 0)
                    break;
            }
            if (s == end) {
                gt_log_seterr(e, "", "truncated line: no closing ']' after %.*s=",
                              (int)(kl < 32 ? kl : 32), k);
                return -1;
            }
            s++;
        } else {
            while (s < end && *s != ' ' && *s != '\t')
                s++;
        }
        if (*n == MAX_TOKS) {
            gt_log_seterr(e, "", "too many fields (more than %d)", MAX_TOKS);
            return -1;
        }
        t[(*n)++] = (tok){k, kl, v, (size_t)(s - v)};
    }
    return 0;
}

/* cuBLASLt spells keys in lower case (transa), hipBLASLt in camel case
 * (transA): keys compare in any case. */
static const tok *find(const tok *t, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (gt_log_ieq(t[i].k, t[i].kl, key))
            return &t[i];
    return NULL;
}

typedef struct {
    const char *name; /* "Adesc" */
    int have;
    gt_dtype type;
    int64_t rows, cols, ld, batch, stride;
} desc;

static int desc_int(const desc *d, const tok *t, size_t n, const char *key, int64_t max,
                    int64_t *out, gt_log_error *e)
{
    const tok *v = find(t, n, key);
    if (!v)
        return 0;
    char field[32];
    snprintf(field, sizeof field, "%s.%s", d->name, key);
    return gt_log_int(field, v->v, v->vl, max, out, e);
}

static int parse_desc(const tok *all, size_t nall, desc *d, gt_log_error *e)
{
    const tok *v = find(all, nall, d->name);
    if (!v)
        return 0;
    if (v->vl < 2 || v->v[0] != '[') {
        char show[64];
        gt_log_show(show, sizeof show, v->v, v->vl);
        gt_log_seterr(e, d->name, "%s=%s: descriptor not expanded (not a Trace line?)", d->name,
                      show);
        return -1;
    }
    tok t[MAX_TOKS];
    size_t n;
    if (tokenize(v->v + 1, v->v + v->vl - 1, t, &n, e))
        return -1;
    char field[32];
    const char *need[] = {"type", "rows", "cols"};
    for (size_t i = 0; i < 3; i++)
        if (!find(t, n, need[i])) {
            snprintf(field, sizeof field, "%s.%s", d->name, need[i]);
            gt_log_seterr(e, field, "%s: %s missing", d->name, need[i]);
            return -1;
        }
    const tok *ty = find(t, n, "type");
    snprintf(field, sizeof field, "%s.type", d->name);
    if (gt_log_dtype_field(field, ty->v, ty->vl, GT_LOG_FP8_OCP, &d->type, e))
        return -1;
    d->ld = -1;
    d->batch = 1;
    d->stride = 0;
    if (desc_int(d, t, n, "rows", GT_LOG_SIZE_MAX, &d->rows, e) ||
        desc_int(d, t, n, "cols", GT_LOG_SIZE_MAX, &d->cols, e) ||
        desc_int(d, t, n, "ld", GT_LOG_SIZE_MAX, &d->ld, e) ||
        desc_int(d, t, n, "batchCount", GT_LOG_SIZE_MAX, &d->batch, e) ||
        desc_int(d, t, n, "strideBatch", INT64_MAX, &d->stride, e))
        return -1;
    if (d->ld < 0)
        d->ld = d->rows;
    const tok *ord = find(t, n, "order");
    if (ord && !gt_log_eq(ord->v, ord->vl, "ORDER_COL")) {
        char show[64];
        gt_log_show(show, sizeof show, ord->v, ord->vl);
        snprintf(field, sizeof field, "%s.order", d->name);
        gt_log_seterr(e, field, "%s order=%s: only column-major (ORDER_COL) is supported",
                      d->name, show);
        return -1;
    }
    d->have = 1;
    return 0;
}

static int op_trans(const tok *t, size_t n, const char *key, char *out, gt_log_error *e)
{
    const tok *v = find(t, n, key);
    *out = 'N';
    if (!v || gt_log_eq(v->v, v->vl, "OP_N"))
        return 0;
    /* Conjugation is a no-op on the real types the model knows. */
    if (gt_log_eq(v->v, v->vl, "OP_T") || gt_log_eq(v->v, v->vl, "OP_C")) {
        *out = 'T';
        return 0;
    }
    char show[64];
    gt_log_show(show, sizeof show, v->v, v->vl);
    gt_log_seterr(e, key, "%s=%s: must be OP_N, OP_T or OP_C", key, show);
    return -1;
}

static const struct {
    const char *name;
    int bias;
    const char *act;
} k_epilogues[] = {
    {"EPILOGUE_DEFAULT", 0, "none"}, {"EPILOGUE_RELU", 0, "relu"},
    {"EPILOGUE_GELU", 0, "gelu"},    {"EPILOGUE_BIAS", 1, "none"},
    {"EPILOGUE_RELU_BIAS", 1, "relu"}, {"EPILOGUE_GELU_BIAS", 1, "gelu"},
};

/* A pointer value that is no pointer: cuBLASLt prints unset ones as 0x0. */
static int null_ptr(const tok *v)
{
    size_t i = v->vl > 2 && v->v[0] == '0' && (v->v[1] == 'x' || v->v[1] == 'X') ? 2 : 0;
    if (v->vl == 0 || gt_log_eq(v->v, v->vl, "(nil)"))
        return 1;
    for (; i < v->vl; i++)
        if (v->v[i] != '0')
            return 0;
    return 1;
}

/* One operand's scale: a set scale pointer is one f32 per tensor unless a
 * scale mode says otherwise (cuBLASLt 12.8+ prints aScaleMode=VEC32_UE8M0
 * for MXFP8 blocks, OUTER_VEC_32F for per-row scales, ...); those are not
 * modelled and refused by name. No pointer: the type's usual mode. */
static int parse_scale(const tok *t, size_t n, const char *ptr_key, const char *mode_key,
                       gt_scale_mode *out, gt_log_error *e)
{
    *out = GT_SCALE_AUTO;
    const tok *v = find(t, n, mode_key);
    if (v && !gt_log_eq(v->v, v->vl, "SCALAR_32F")) {
        char show[64];
        gt_log_show(show, sizeof show, v->v, v->vl);
        gt_log_seterr(e, mode_key, "%s=%s: only one f32 scale per tensor (SCALAR_32F) is "
                                   "modelled", mode_key, show);
        return -1;
    }
    if ((v = find(t, n, ptr_key)) && !null_ptr(v))
        *out = GT_SCALE_SCALAR;
    return 0;
}

static int parse_compute(const tok *all, size_t nall, gt_problem *p, gt_log_error *e)
{
    const tok *cd = find(all, nall, "computeDesc");
    if (!cd || cd->vl < 2 || cd->v[0] != '[') {
        gt_log_seterr(e, "computeDesc", "computeDesc: missing or not expanded");
        return -1;
    }
    tok t[MAX_TOKS];
    size_t n;
    if (tokenize(cd->v + 1, cd->v + cd->vl - 1, t, &n, e))
        return -1;
    if (op_trans(t, n, "transa", &p->trans_a, e) || op_trans(t, n, "transb", &p->trans_b, e))
        return -1;
    const tok *v;
    if ((v = find(t, n, "computeType"))) {
        if (gt_log_dtype_field("computeType", v->v, v->vl, GT_LOG_FP8_OCP, &p->compute_type, e))
            return -1;
        p->scale_type = p->compute_type == GT_DT_TF32 ? GT_DT_F32 : p->compute_type;
    }
    if ((v = find(t, n, "scaleType")) &&
        gt_log_dtype_field("scaleType", v->v, v->vl, GT_LOG_FP8_OCP, &p->scale_type, e))
        return -1;
    size_t epi = 0;
    if ((v = find(t, n, "epilogue"))) {
        for (epi = 0; epi < sizeof k_epilogues / sizeof k_epilogues[0]; epi++)
            if (gt_log_eq(v->v, v->vl, k_epilogues[epi].name))
                break;
        if (epi == sizeof k_epilogues / sizeof k_epilogues[0]) {
            char show[64];
            gt_log_show(show, sizeof show, v->v, v->vl);
            gt_log_seterr(e, "epilogue", "epilogue=%s: not supported (DEFAULT, RELU, GELU, "
                                         "BIAS, RELU_BIAS or GELU_BIAS)", show);
            return -1;
        }
    }
    snprintf(p->activation, sizeof p->activation, "%s", k_epilogues[epi].act);
    p->bias = k_epilogues[epi].bias;
    p->bias_type = p->bias ? p->d_type : GT_DT_INVALID;
    if (p->bias && (v = find(t, n, "biasDataType")) &&
        gt_log_dtype_field("biasDataType", v->v, v->vl, GT_LOG_FP8_OCP, &p->bias_type, e))
        return -1;
    if (parse_scale(t, n, "aScalePointer", "aScaleMode", &p->scale_a, e) ||
        parse_scale(t, n, "bScalePointer", "bScaleMode", &p->scale_b, e))
        return -1;
    return 0;
}

static int mismatch(gt_log_error *e, const desc *d, const char *what, int64_t got,
                    const char *dim, int64_t want)
{
    char field[32];
    snprintf(field, sizeof field, "%s.%s", d->name, what);
    gt_log_seterr(e, field, "%s %s=%lld: does not match %s=%lld", d->name, what,
                  (long long)got, dim, (long long)want);
    return -1;
}

/* Is this a "[..][Trace][cublasLt...Matmul]" line? *rest: after the groups. */
static int is_matmul_trace(const char *s, const char **rest)
{
    int trace = 0;
    for (int g = 0; g < 8 && *s == '['; g++) {
        const char *close = strchr(s, ']');
        if (!close)
            return 0;
        size_t len = (size_t)(close - s) - 1;
        if (trace) {
            /* cublasLtMatmul and its typed variants (cublasLtTSTMatmul, ..),
             * not cublasLt..MatmulAlgoGetHeuristic and friends. */
            if (len < 14 || strncmp(s + 1, "cublasLt", 8) || strncmp(close - 6, "Matmul", 6))
                return 0;
            *rest = close + 1;
            return 1;
        }
        trace = gt_log_eq(s + 1, len, "Trace");
        s = close + 1;
    }
    return 0;
}

int gt_log_line_cublaslt(const char *line, gt_problem *p, gt_log_error *e)
{
    const char *rest = NULL;
    if (!is_matmul_trace(line, &rest))
        return 0;
    tok t[MAX_TOKS];
    size_t n;
    if (tokenize(rest, rest + strlen(rest), t, &n, e))
        return -1;
    desc a = {.name = "Adesc"}, b = {.name = "Bdesc"}, c = {.name = "Cdesc"}, d = {.name = "Ddesc"};
    if (parse_desc(t, n, &a, e) || parse_desc(t, n, &b, e) || parse_desc(t, n, &c, e) ||
        parse_desc(t, n, &d, e))
        return -1;
    if (!a.have || !b.have || (!c.have && !d.have)) {
        const char *miss = !a.have ? "Adesc" : !b.have ? "Bdesc" : "Ddesc";
        gt_log_seterr(e, miss, "%s: missing", miss);
        return -1;
    }
    /* D is written in place of C when the log leaves one out. */
    if (!d.have)
        d = c, d.name = "Ddesc";
    if (!c.have)
        c = d, c.name = "Cdesc";

    gt_problem_init(p, 1, 1, 1);
    p->d_type = d.type; /* the bias type defaults to it */
    if (parse_compute(t, n, p, e))
        return -1;
    int64_t m = p->trans_a == 'N' ? a.rows : a.cols;
    int64_t k = p->trans_a == 'N' ? a.cols : a.rows;
    int64_t nn = d.cols;
    if (d.rows != m)
        return mismatch(e, &d, "rows", d.rows, "M", m);
    if ((p->trans_b == 'N' ? b.rows : b.cols) != k)
        return mismatch(e, &b, p->trans_b == 'N' ? "rows" : "cols",
                        p->trans_b == 'N' ? b.rows : b.cols, "K", k);
    if ((p->trans_b == 'N' ? b.cols : b.rows) != nn)
        return mismatch(e, &b, p->trans_b == 'N' ? "cols" : "rows",
                        p->trans_b == 'N' ? b.cols : b.rows, "N", nn);
    if (c.rows != m)
        return mismatch(e, &c, "rows", c.rows, "M", m);
    if (c.cols != nn)
        return mismatch(e, &c, "cols", c.cols, "N", nn);
    const desc *all[] = {&b, &c, &d};
    for (size_t i = 0; i < 3; i++)
        if (all[i]->batch != a.batch)
            return mismatch(e, all[i], "batchCount", all[i]->batch, "Adesc.batchCount",
                            a.batch);

    p->m = m;
    p->n = nn;
    p->k = k;
    p->batch = a.batch;
    p->lda = a.ld;
    p->ldb = b.ld;
    p->ldc = c.ld;
    p->ldd = d.ld;
    if (p->batch > 1) {
        p->stride_a = a.stride;
        p->stride_b = b.stride;
        p->stride_c = c.stride;
        p->stride_d = d.stride;
    }
    p->a_type = a.type;
    p->b_type = b.type;
    p->c_type = c.type;
    p->d_type = d.type;
    /* cuBLASLt refuses scale pointers on other types: such a line is a
     * failed call, not a GEMM to tune. */
    if (p->scale_a == GT_SCALE_SCALAR && !gt_dtype_is_f8(p->a_type)) {
        gt_log_seterr(e, "aScalePointer", "aScalePointer: a per-tensor scale is modelled for "
                                          "fp8 operands only (Adesc.type %s)",
                      gt_dtype_name(p->a_type));
        return -1;
    }
    if (p->scale_b == GT_SCALE_SCALAR && !gt_dtype_is_f8(p->b_type)) {
        gt_log_seterr(e, "bScalePointer", "bScalePointer: a per-tensor scale is modelled for "
                                          "fp8 operands only (Bdesc.type %s)",
                      gt_dtype_name(p->b_type));
        return -1;
    }
    const tok *v;
    if ((v = find(t, n, "alpha")) && gt_log_double("alpha", v->v, v->vl, &p->alpha, e))
        return -1;
    if ((v = find(t, n, "beta")) && gt_log_double("beta", v->v, v->vl, &p->beta, e))
        return -1;
    p->call_count = 1;
    return 1;
}
