/* log_sizes.c: the two hand-written size-list formats.
 *
 * CSV, one GEMM per row, a header row and '#' comments allowed:
 *   M,N,K[,dtype,transA,transB,batch,count]
 * Empty or missing optional columns take the defaults f32, N, N, 1, 1.
 *
 * YAML as Triton's tune_gemm.py reads and writes it (scripts/amd/gemm): one
 * flow map per line, keys optionally quoted, extra keys (its tuning configs)
 * ignored, a trailing "# TFLOPS ..." comment allowed:
 *   - {'M': 16, 'N': 16, 'K': 16, 'rowMajorA': 'T', 'rowMajorB': 'N'}
 * tune_gemm builds A as an M x K and B as a K x N matrix and stores A
 * row-major when rowMajorA is 'T' (col_a = rowMajorA != 'T'). A row-major
 * M x K matrix is, in BLAS column-major terms, a K x M matrix used
 * transposed, with lda = K: exactly op(A) = A^T of the problem model with
 * m = M and k = K. So rowMajorA maps to transA unchanged (T -> 'T', N ->
 * 'N'), rowMajorB to transB likewise, and M, N, K keep their meaning; this is
 * also how tune_gemm itself labels the sizes ("TN"). Only C differs:
 * tune_gemm allocates it row-major, the model's D is column-major with
 * ldd = M. transA/transB are accepted as well and must agree when both are
 * given. Types: dtype (all operands), dtype_a, dtype_b, dtype_c; the default
 * is fp16, tune_gemm's own default. batch/batch_count and count/call_count
 * default to 1. tune_gemm's "fp8"/"bf8" are FNUZ on gfx942 and OCP
 * elsewhere: both formats read them by the run's fp8_encoding. */
#include "gt_log.h"
#include "log_internal.h"

#include <string.h>

#define CSV_COLS 8

static void trim(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '\t'))
        (*s)++, (*n)--;
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
        (*n)--;
}

static int size_field(const char *field, const char *v, size_t n, int64_t *out, gt_log_error *e)
{
    if (n == 0) {
        gt_log_seterr(e, field, "%s: missing", field);
        return -1;
    }
    return gt_log_int(field, v, n, GT_LOG_SIZE_MAX, out, e);
}

/* Fills p from sizes, transposes, batch, count and the storage type. */
static void build(gt_problem *p, const int64_t mnk[3], char ta, char tb, int64_t batch,
                  int64_t count, gt_dtype ab, gt_dtype cd)
{
    gt_problem_init(p, mnk[0], mnk[1], mnk[2]);
    p->trans_a = ta;
    p->trans_b = tb;
    p->batch = batch;
    p->call_count = count;
    gt_log_set_types(p, ab, cd);
    gt_problem_default_ld(p);
}

int gt_log_line_csv(const char *line, gt_problem *p, gt_log_error *e)
{
    return gt_log_line_csv_fp8(line, GT_LOG_FP8_OCP, p, e);
}

int gt_log_line_csv_fp8(const char *line, gt_log_fp8 fp8, gt_problem *p, gt_log_error *e)
{
    size_t len = strlen(line);
    const char *hash = memchr(line, '#', len);
    if (hash)
        len = (size_t)(hash - line);
    const char *s = line;
    trim(&s, &len);
    if (len == 0)
        return 0;
    if (s[0] == 'M' || s[0] == 'm')
        return 0; /* the header row */

    const char *col[CSV_COLS];
    size_t cl[CSV_COLS], ncol = 0;
    const char *end = s + len;
    for (const char *c = s;;) {
        const char *comma = memchr(c, ',', (size_t)(end - c));
        const char *stop = comma ? comma : end;
        if (ncol == CSV_COLS) {
            gt_log_seterr(e, "", "too many columns (at most %d: "
                                 "M,N,K,dtype,transA,transB,batch,count)", CSV_COLS);
            return -1;
        }
        col[ncol] = c;
        cl[ncol] = (size_t)(stop - c);
        trim(&col[ncol], &cl[ncol]);
        ncol++;
        if (!comma)
            break;
        c = comma + 1;
    }
    if (ncol < 3) {
        gt_log_seterr(e, "", "need at least M,N,K (got %zu column%s)", ncol,
                      ncol == 1 ? "" : "s");
        return -1;
    }
    for (size_t i = ncol; i < CSV_COLS; i++)
        cl[i] = 0;

    int64_t mnk[3], batch = 1, count = 1;
    gt_dtype t = GT_DT_F32;
    char ta = 'N', tb = 'N';
    if (size_field("M", col[0], cl[0], &mnk[0], e) || size_field("N", col[1], cl[1], &mnk[1], e) ||
        size_field("K", col[2], cl[2], &mnk[2], e))
        return -1;
    if (cl[3] && gt_log_dtype_field("dtype", col[3], cl[3], fp8, &t, e))
        return -1;
    if ((cl[4] && gt_log_trans("transA", col[4], cl[4], &ta, e)) ||
        (cl[5] && gt_log_trans("transB", col[5], cl[5], &tb, e)))
        return -1;
    if ((cl[6] && gt_log_int("batch", col[6], cl[6], GT_LOG_SIZE_MAX, &batch, e)) ||
        (cl[7] && gt_log_int("count", col[7], cl[7], GT_LOG_CALLS_MAX, &count, e)))
        return -1;
    build(p, mnk, ta, tb, batch, count, t, GT_DT_INVALID);
    return 1;
}

/* Optional transpose from one of two keys (tune_gemm's rowMajorX or our
 * transX) that must agree when both are present. */
static int yaml_trans(const gt_log_kv *kv, size_t n, const char *rowkey, const char *tkey,
                      char *out, gt_log_error *e)
{
    const gt_log_kv *r = gt_log_kv_find(kv, n, rowkey), *t = gt_log_kv_find(kv, n, tkey);
    char a = 'N', b = 'N';
    if ((r && gt_log_trans(rowkey, r->val, r->vlen, &a, e)) ||
        (t && gt_log_trans(tkey, t->val, t->vlen, &b, e)))
        return -1;
    if (r && t && a != b) {
        gt_log_seterr(e, tkey, "%s=%c: contradicts %s=%c", tkey, b, rowkey, a);
        return -1;
    }
    *out = r ? a : t ? b : 'N';
    return 0;
}

static int yaml_int(const gt_log_kv *kv, size_t n, const char *k1, const char *k2, int64_t max,
                    int64_t *out, gt_log_error *e)
{
    const gt_log_kv *v = gt_log_kv_find(kv, n, k1);
    const char *key = k1;
    if (!v && k2) {
        v = gt_log_kv_find(kv, n, k2);
        key = k2;
    }
    return v ? gt_log_int(key, v->val, v->vlen, max, out, e) : 0;
}

static int yaml_type(const gt_log_kv *kv, size_t n, const char *key, gt_log_fp8 fp8,
                     gt_dtype *out, gt_log_error *e)
{
    const gt_log_kv *v = gt_log_kv_find(kv, n, key);
    return v ? gt_log_dtype_field(key, v->val, v->vlen, fp8, out, e) : 0;
}

int gt_log_line_yaml(const char *line, gt_problem *p, gt_log_error *e)
{
    return gt_log_line_yaml_fp8(line, GT_LOG_FP8_OCP, p, e);
}

int gt_log_line_yaml_fp8(const char *line, gt_log_fp8 fp8, gt_problem *p, gt_log_error *e)
{
    const char *s = line;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s || *s == '#' || !strncmp(s, "---", 3) || !strncmp(s, "...", 3))
        return 0;
    const char *b = s + 1;
    while (*b == ' ' || *b == '\t')
        b++;
    if (s[0] != '-' || *b != '{') {
        gt_log_seterr(e, "", "unsupported YAML: only one \"- {M: .., N: .., K: ..}\" entry per "
                             "line is read");
        return -1;
    }
    gt_log_kv kv[GT_LOG_MAX_KV];
    size_t n;
    if (gt_log_flowmap(line, kv, GT_LOG_MAX_KV, &n, e))
        return -1;
    for (size_t i = 1; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (kv[i].klen == kv[j].klen && !memcmp(kv[i].key, kv[j].key, kv[i].klen)) {
                char show[32];
                gt_log_show(show, sizeof show, kv[i].key, kv[i].klen);
                gt_log_seterr(e, show, "%s: field given twice", show);
                return -1;
            }
    int64_t mnk[3], batch = 1, count = 1;
    static const char *const dims[] = {"M", "N", "K"};
    for (int i = 0; i < 3; i++) {
        const gt_log_kv *v = gt_log_kv_find(kv, n, dims[i]);
        if (!v) {
            gt_log_seterr(e, dims[i], "%s: missing", dims[i]);
            return -1;
        }
        if (size_field(dims[i], v->val, v->vlen, &mnk[i], e))
            return -1;
    }
    char ta, tb;
    if (yaml_trans(kv, n, "rowMajorA", "transA", &ta, e) ||
        yaml_trans(kv, n, "rowMajorB", "transB", &tb, e))
        return -1;
    if (yaml_int(kv, n, "batch", "batch_count", GT_LOG_SIZE_MAX, &batch, e) ||
        yaml_int(kv, n, "count", "call_count", GT_LOG_CALLS_MAX, &count, e))
        return -1;
    gt_dtype t = GT_DT_F16, ta_t = GT_DT_INVALID, tb_t = GT_DT_INVALID, tc = GT_DT_INVALID;
    if (yaml_type(kv, n, "dtype", fp8, &t, e) || yaml_type(kv, n, "dtype_a", fp8, &ta_t, e) ||
        yaml_type(kv, n, "dtype_b", fp8, &tb_t, e) || yaml_type(kv, n, "dtype_c", fp8, &tc, e))
        return -1;
    build(p, mnk, ta, tb, batch, count, ta_t != GT_DT_INVALID ? ta_t : t, tc);
    if (tb_t != GT_DT_INVALID)
        p->b_type = tb_t == GT_DT_TF32 ? GT_DT_F32 : tb_t;
    return 1;
}
