/* log_tunableop.c: one row of a PyTorch TunableOp file, the untuned list
 * (PYTORCH_TUNABLEOP_UNTUNED_FILENAME) or tuned results (two more columns,
 * solution and milliseconds, which are ignored):
 *   GemmTunableOp_BFloat16_TN,tn_6144_1_4096_ld_4096_4096_6144
 * The formats follow PyTorch's aten/src/ATen/cuda/tunable sources:
 *   op name (TunableGemm.h Signature()):
 *     GemmTunableOp_<T>_<AB>, GemmAndBiasTunableOp_<T>_<AB>,
 *     GemmStridedBatchedTunableOp_<T>_<AB>, ScaledGemmTunableOp_<A>_<B>_<C>_<AB>
 *   parameters (GemmCommon.h Signature()):
 *     Gemm, GemmAndBias:  <ab>_<m>_<n>_<k>_ld_<lda>_<ldb>_<ldc>
 *     StridedBatched:     <ab>_<m>_<n>_<k>_B_<batch>_ld_<lda>_<ldb>_<ldc>
 *     Scaled:             <ab>_<m>_<n>_<k>_ld_<lda>_<ldb>_<ldc>_rw_<0|1>_bias_<T|None>
 *   Older PyTorch releases printed the same without the "_ld_..." part; such
 *   rows get tight leading dimensions.
 * m, n, k and the leading dimensions are BLAS column-major (PyTorch passes
 * them straight to gemm), as in the problem model. What the signature does
 * not carry gets a documented default: strided-batch strides are tight for
 * the given leading dimensions, beta is 0, GemmAndBias has no activation.
 * A scaled GEMM with rw_0 scales A and B by one f32 each (per-tensor, the
 * problem's GT_SCALE_SCALAR); rw_1 (row-wise: one scale per row of A and
 * per column of B) is not modelled by any backend and is refused. The fp8
 * type names say their encoding (Float8_e4m3fn OCP, Float8_e4m3fnuz FNUZ). */
#include "gt_log.h"
#include "log_internal.h"

#include <string.h>

typedef enum { OP_GEMM, OP_BIAS, OP_STRIDED, OP_SCALED } op_kind;

static const struct {
    const char *prefix;
    op_kind kind;
} k_ops[] = {
    {"GemmTunableOp_", OP_GEMM},
    {"GemmAndBiasTunableOp_", OP_BIAS},
    {"GemmStridedBatchedTunableOp_", OP_STRIDED},
    {"ScaledGemmTunableOp_", OP_SCALED},
};

/* TypeName<T>() in TunableGemm.h, and c10's ScalarType names used for the
 * scaled GEMM's bias; longest first so that a prefix never wins. */
static const struct {
    const char *name;
    gt_dtype t;
} k_types[] = {
    {"Float8_e4m3fnuz", GT_DT_F8E4M3FNUZ}, {"Float8_e5m2fnuz", GT_DT_F8E5M2FNUZ},
    {"Float8_e4m3fn", GT_DT_F8E4M3},       {"Float8_e5m2", GT_DT_F8E5M2},
    {"BFloat16", GT_DT_BF16},          {"double", GT_DT_F64},
    {"Double", GT_DT_F64},             {"float", GT_DT_F32},
    {"Float", GT_DT_F32},              {"Half", GT_DT_F16},
};

/* Matches a type name at s (of n bytes) that ends at n or before a '_'.
 * Returns its length, 0 when none matches. */
static size_t match_type(const char *s, size_t n, gt_dtype *t)
{
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++) {
        size_t l = strlen(k_types[i].name);
        if (l <= n && !memcmp(s, k_types[i].name, l) && (l == n || s[l] == '_')) {
            *t = k_types[i].t;
            return l;
        }
    }
    return 0;
}

static int type_error(const char *s, size_t n, gt_log_error *e)
{
    char show[64];
    gt_log_show(show, sizeof show, s, n);
    if (memmem(s, n, "complex", 7))
        gt_log_seterr(e, "dtype", "dtype=%s: complex GEMMs are not supported", show);
    else
        gt_log_seterr(e, "dtype", "dtype=%s: unknown TunableOp data type", show);
    return -1;
}

/* The op name: kind, types (3 for scaled GEMMs) and the layout letters. */
static int parse_op(const char *s, size_t n, op_kind *kind, gt_dtype t[3], char lay[2],
                    gt_log_error *e)
{
    size_t i = 0, plen = 0;
    for (; i < sizeof k_ops / sizeof k_ops[0]; i++) {
        plen = strlen(k_ops[i].prefix);
        if (n >= plen && !memcmp(s, k_ops[i].prefix, plen))
            break;
    }
    char show[64];
    gt_log_show(show, sizeof show, s, n);
    if (i == sizeof k_ops / sizeof k_ops[0]) {
        if (memmem(s, n, "TunableOp", 9))
            gt_log_seterr(e, "op", "op=%s: unsupported TunableOp operation", show);
        else
            gt_log_seterr(e, "", "not a TunableOp GEMM row: %s", show);
        return -1;
    }
    *kind = k_ops[i].kind;
    s += plen;
    n -= plen;
    if (n < 4 || s[n - 3] != '_' || (s[n - 2] != 'N' && s[n - 2] != 'T') ||
        (s[n - 1] != 'N' && s[n - 1] != 'T')) {
        gt_log_seterr(e, "op", "op=%s: must end in _NN, _NT, _TN or _TT", show);
        return -1;
    }
    lay[0] = s[n - 2];
    lay[1] = s[n - 1];
    n -= 3;
    int ntypes = *kind == OP_SCALED ? 3 : 1;
    size_t pos = 0;
    for (int k = 0; k < ntypes; k++) {
        size_t l = match_type(s + pos, n - pos, &t[k]);
        if (!l)
            return type_error(s + pos, n - pos, e);
        pos += l;
        if (k + 1 < ntypes) {
            if (pos == n)
                return type_error(s, n, e);
            pos++; /* the '_' match_type saw */
        }
    }
    if (pos != n)
        return type_error(s, n, e);
    return 0;
}

/* Cursor over the '_'-separated parameter field; done once the last token
 * was taken (an empty last token, as in "..._", still counts as one). */
typedef struct {
    const char *s, *end;
    int done;
} cursor;

static int next_tok(cursor *c, const char **t, size_t *n)
{
    if (c->done)
        return -1;
    const char *u = memchr(c->s, '_', (size_t)(c->end - c->s));
    const char *stop = u ? u : c->end;
    *t = c->s;
    *n = (size_t)(stop - c->s);
    if (u)
        c->s = u + 1;
    else
        c->s = c->end, c->done = 1;
    return 0;
}

static int tok_int(cursor *c, const char *field, int64_t max, int64_t *out, gt_log_error *e)
{
    const char *t;
    size_t n;
    if (next_tok(c, &t, &n)) {
        gt_log_seterr(e, field, "%s: missing in the signature", field);
        return -1;
    }
    return gt_log_int(field, t, n, max, out, e);
}

/* Whether the literal word w comes next; the cursor moves only when it does. */
static int tok_word(cursor *c, const char *w)
{
    cursor save = *c;
    const char *t;
    size_t n;
    if (next_tok(c, &t, &n) == 0 && gt_log_eq(t, n, w))
        return 1;
    *c = save;
    return 0;
}

static int parse_params(const char *s, size_t n, op_kind kind, const char lay[2], gt_problem *p,
                        gt_log_error *e)
{
    char show[64];
    gt_log_show(show, sizeof show, s, n);
    cursor c = {s, s + n, n == 0};
    const char *t;
    size_t tn;
    if (next_tok(&c, &t, &tn) || tn != 2 || (t[0] | 0x20) != (lay[0] | 0x20) ||
        (t[1] | 0x20) != (lay[1] | 0x20)) {
        gt_log_seterr(e, "trans", "signature %s: must start with %c%c_ like the op name", show,
                      lay[0] | 0x20, lay[1] | 0x20);
        return -1;
    }
    int64_t m, nn, k, batch = 1;
    if (tok_int(&c, "M", GT_LOG_SIZE_MAX, &m, e) || tok_int(&c, "N", GT_LOG_SIZE_MAX, &nn, e) ||
        tok_int(&c, "K", GT_LOG_SIZE_MAX, &k, e))
        return -1;
    if (kind == OP_STRIDED) {
        if (!tok_word(&c, "B")) {
            gt_log_seterr(e, "batch", "signature %s: no _B_<batch> after M_N_K", show);
            return -1;
        }
        if (tok_int(&c, "batch_count", GT_LOG_SIZE_MAX, &batch, e))
            return -1;
    }
    gt_problem_init(p, m, nn, k);
    p->trans_a = lay[0];
    p->trans_b = lay[1];
    p->batch = batch;
    gt_problem_default_ld(p);
    if (tok_word(&c, "ld")) {
        if (tok_int(&c, "lda", GT_LOG_SIZE_MAX, &p->lda, e) ||
            tok_int(&c, "ldb", GT_LOG_SIZE_MAX, &p->ldb, e) ||
            tok_int(&c, "ldc", GT_LOG_SIZE_MAX, &p->ldc, e))
            return -1;
        p->ldd = p->ldc;
        if (p->batch > 1) {
            p->stride_a = p->lda * (p->trans_a == 'N' ? p->k : p->m);
            p->stride_b = p->ldb * (p->trans_b == 'N' ? p->n : p->k);
            p->stride_c = p->ldc * p->n;
            p->stride_d = p->ldd * p->n;
        }
    }
    if (kind == OP_SCALED) {
        int64_t rw;
        if (!tok_word(&c, "rw")) {
            gt_log_seterr(e, "", "signature %s: scaled GEMM needs _rw_<0|1>_bias_<type>", show);
            return -1;
        }
        if (tok_int(&c, "rw", 1, &rw, e))
            return -1;
        if (rw) {
            gt_log_seterr(e, "rw", "rw=1: row-wise scaling (a scale per row of A and per "
                                   "column of B) is not modelled, only per-tensor scales (rw_0)");
            return -1;
        }
        p->scale_a = p->scale_b = GT_SCALE_SCALAR;
        if (!tok_word(&c, "bias") || c.done) {
            gt_log_seterr(e, "", "signature %s: scaled GEMM needs _bias_<type> last", show);
            return -1;
        }
        /* The rest is one ScalarType name, which may hold '_' itself. */
        size_t rest = (size_t)(c.end - c.s);
        gt_dtype bt;
        if (gt_log_eq(c.s, rest, "None")) {
            p->bias = 0;
        } else if (rest && match_type(c.s, rest, &bt) == rest) {
            p->bias = 1;
            p->bias_type = bt;
        } else {
            char bs[64];
            gt_log_show(bs, sizeof bs, c.s, rest);
            gt_log_seterr(e, "bias_type", "bias_type=%s: unknown data type", bs);
            return -1;
        }
        c.done = 1;
    }
    if (!c.done) {
        gt_log_seterr(e, "", "signature %s: unexpected text after the sizes", show);
        return -1;
    }
    return 0;
}

/* Trims blanks around [*s, *s + *n). */
static void trim(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '\t'))
        (*s)++, (*n)--;
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
        (*n)--;
}

int gt_log_line_tunableop(const char *line, gt_problem *p, gt_log_error *e)
{
    size_t len = strlen(line);
    const char *s = line;
    trim(&s, &len);
    if (len == 0 || s[0] == '#' || !strncmp(s, "Validator,", 10))
        return 0;
    const char *comma = memchr(s, ',', len);
    if (!comma) {
        char show[64];
        gt_log_show(show, sizeof show, s, len);
        gt_log_seterr(e, "", "not a TunableOp GEMM row (no ','): %s", show);
        return -1;
    }
    const char *op = s, *par = comma + 1;
    size_t opn = (size_t)(comma - s);
    const char *c2 = memchr(par, ',', len - opn - 1);
    size_t parn = c2 ? (size_t)(c2 - par) : len - opn - 1;
    trim(&op, &opn);
    trim(&par, &parn);

    op_kind kind;
    gt_dtype t[3] = {GT_DT_INVALID, GT_DT_INVALID, GT_DT_INVALID};
    char lay[2];
    if (parse_op(op, opn, &kind, t, lay, e) || parse_params(par, parn, kind, lay, p, e))
        return -1;
    if (kind == OP_SCALED) {
        p->a_type = t[0];
        p->b_type = t[1];
        p->c_type = p->d_type = t[2];
        p->compute_type = p->scale_type = GT_DT_F32;
    } else {
        gt_log_set_types(p, t[0], GT_DT_INVALID);
    }
    if (kind == OP_BIAS) {
        p->bias = 1;
        p->bias_type = p->d_type;
    }
    p->call_count = 1;
    return 1;
}
