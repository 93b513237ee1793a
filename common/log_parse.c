/* log_parse.c: the workload log driver (gt_log_parse): format names and
 * detection, line splitting, rejection of binary input, per-line dispatch
 * to the format parsers, merging of identical GEMMs, weights, ordering and
 * the flop-share threshold. Also the small value helpers the format parsers
 * share (log_internal.h). */
#include "gt_log.h"
#include "log_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Longest line we look at: real lines are under 2 KiB, and a bound keeps a
 * hostile multi-gigabyte "line" from being copied around. */
#define LINE_MAX_BYTES 65536
/* Detection looks at this many meaningful lines at most. */
#define DETECT_LINES 64

/* ------------------------------------------------------------------------ */
/* shared helpers                                                            */

void gt_log_seterr(gt_log_error *e, const char *field, const char *fmt, ...)
{
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
}

void gt_log_show(char *dst, size_t cap, const char *v, size_t vlen)
{
    if (cap == 0)
        return;
    size_t lim = cap - 1 < 60 ? cap - 1 : 60;
    if (vlen <= lim) {
        memcpy(dst, v, vlen);
        dst[vlen] = '\0';
        return;
    }
    /* Cut on a UTF-8 boundary so the message stays valid text. */
    size_t n = lim >= 3 ? lim - 3 : 0;
    while (n > 0 && ((unsigned char)v[n] & 0xc0) == 0x80)
        n--;
    memcpy(dst, v, n);
    memcpy(dst + n, "...", lim - n >= 3 ? 3 : lim - n);
    dst[n + (lim - n >= 3 ? 3 : lim - n)] = '\0';
}

int gt_log_eq(const char *s, size_t len, const char *lit)
{
    size_t l = strlen(lit);
    return len == l && memcmp(s, lit, l) == 0;
}

int gt_log_ieq(const char *s, size_t len, const char *lit)
{
    size_t l = strlen(lit);
    return len == l && strncasecmp(s, lit, l) == 0;
}

int gt_log_int(const char *field, const char *v, size_t vlen, int64_t max, int64_t *out,
               gt_log_error *e)
{
    char show[64];
    gt_log_show(show, sizeof show, v, vlen);
    size_t i = 0;
    int neg = 0;
    if (i < vlen && (v[i] == '-' || v[i] == '+')) {
        neg = v[i] == '-';
        i++;
    }
    if (i == vlen) {
        gt_log_seterr(e, field, "%s=%s: not an integer", field, show);
        return -1;
    }
    int64_t acc = 0;
    int overflow = 0;
    for (; i < vlen; i++) {
        if (v[i] < '0' || v[i] > '9') {
            gt_log_seterr(e, field, "%s=%s: not an integer", field, show);
            return -1;
        }
        int d = v[i] - '0';
        if (acc > (INT64_MAX - d) / 10)
            overflow = 1;
        else
            acc = acc * 10 + d;
    }
    if (neg && (acc != 0 || overflow)) {
        gt_log_seterr(e, field, "%s=%s: negative", field, show);
        return -1;
    }
    if (overflow) {
        gt_log_seterr(e, field, "%s=%s: out of range (larger than 2^63-1)", field, show);
        return -1;
    }
    if (acc > max) {
        if (max == GT_LOG_SIZE_MAX)
            gt_log_seterr(e, field, "%s=%s: larger than 2^31-1", field, show);
        else
            gt_log_seterr(e, field, "%s=%s: larger than %lld", field, show, (long long)max);
        return -1;
    }
    *out = acc;
    return 0;
}

int gt_log_double(const char *field, const char *v, size_t vlen, double *out, gt_log_error *e)
{
    char show[64], buf[64];
    gt_log_show(show, sizeof show, v, vlen);
    /* Decimal only: strtod would also take hex, "inf" and "nan", and a
     * device pointer printed as 0X7F.. must not become a scale factor. */
    int digits = 0, other = 0;
    for (size_t i = 0; i < vlen; i++) {
        char c = v[i];
        if (c >= '0' && c <= '9')
            digits = 1;
        else if (c != '+' && c != '-' && c != '.' && c != 'e' && c != 'E')
            other = 1;
    }
    if (!digits || other || vlen >= sizeof buf) {
        gt_log_seterr(e, field, "%s=%s: not a number", field, show);
        return -1;
    }
    memcpy(buf, v, vlen);
    buf[vlen] = '\0';
    char *end;
    double d = strtod(buf, &end);
    if (*end != '\0' || !isfinite(d)) {
        gt_log_seterr(e, field, "%s=%s: not a finite number", field, show);
        return -1;
    }
    *out = d;
    return 0;
}

int gt_log_bool(const char *field, const char *v, size_t vlen, int *out, gt_log_error *e)
{
    if (gt_log_ieq(v, vlen, "true")) {
        *out = 1;
        return 0;
    }
    if (gt_log_ieq(v, vlen, "false")) {
        *out = 0;
        return 0;
    }
    char show[64];
    gt_log_show(show, sizeof show, v, vlen);
    gt_log_seterr(e, field, "%s=%s: must be true or false", field, show);
    return -1;
}

int gt_log_trans(const char *field, const char *v, size_t vlen, char *out, gt_log_error *e)
{
    if (vlen == 1 && (v[0] == 'N' || v[0] == 'n' || v[0] == 'T' || v[0] == 't')) {
        *out = (v[0] == 'N' || v[0] == 'n') ? 'N' : 'T';
        return 0;
    }
    char show[64];
    gt_log_show(show, sizeof show, v, vlen);
    if (vlen == 1 && (v[0] == 'C' || v[0] == 'c'))
        gt_log_seterr(e, field, "%s=%s: conjugate transpose is not supported for real types",
                      field, show);
    else
        gt_log_seterr(e, field, "%s=%s: must be N or T", field, show);
    return -1;
}

/* The fp8 names that say nothing about the encoding: gt_dtype_parse reads
 * them as OCP, the run's fp8_encoding may say FNUZ (gt_log.h). */
static const char *const k_fp8_unsaid[] = {"f8_r", "bf8_r", "fp8", "bf8"};

gt_dtype gt_log_dtype(const char *v, size_t vlen, gt_log_fp8 fp8)
{
    char buf[40];
    if (vlen == 0 || vlen >= sizeof buf)
        return GT_DT_INVALID;
    memcpy(buf, v, vlen);
    buf[vlen] = '\0';
    /* Triton's names of types problem.c knows by others. */
    if (!strcasecmp(buf, "fp32"))
        return GT_DT_F32;
    if (!strcasecmp(buf, "fp64"))
        return GT_DT_F64;
    gt_dtype t = gt_dtype_parse(buf);
    if (fp8 != GT_LOG_FP8_FNUZ)
        return t;
    for (size_t i = 0; i < sizeof k_fp8_unsaid / sizeof k_fp8_unsaid[0]; i++)
        if (!strcasecmp(buf, k_fp8_unsaid[i]))
            return t == GT_DT_F8E4M3 ? GT_DT_F8E4M3FNUZ : GT_DT_F8E5M2FNUZ;
    return t;
}

int gt_log_dtype_field(const char *field, const char *v, size_t vlen, gt_log_fp8 fp8,
                       gt_dtype *out, gt_log_error *e)
{
    gt_dtype t = gt_log_dtype(v, vlen, fp8);
    if (t == GT_DT_INVALID) {
        char show[64];
        gt_log_show(show, sizeof show, v, vlen);
        gt_log_seterr(e, field, "%s=%s: unknown data type", field, show);
        return -1;
    }
    *out = t;
    return 0;
}

void gt_log_set_types(gt_problem *p, gt_dtype ab, gt_dtype cd)
{
    gt_dtype store = ab == GT_DT_TF32 ? GT_DT_F32 : ab;
    if (cd == GT_DT_INVALID)
        cd = ab == GT_DT_I8 ? GT_DT_I32 : store;
    if (cd == GT_DT_TF32)
        cd = GT_DT_F32;
    p->a_type = p->b_type = store;
    p->c_type = p->d_type = cd;
    switch (ab) {
    case GT_DT_F64: p->compute_type = p->scale_type = GT_DT_F64; break;
    case GT_DT_I8: p->compute_type = p->scale_type = GT_DT_I32; break;
    case GT_DT_TF32:
        p->compute_type = GT_DT_TF32;
        p->scale_type = GT_DT_F32;
        break;
    default: p->compute_type = p->scale_type = GT_DT_F32; break;
    }
}

/* ------------------------------------------------------------------------ */
/* format names and detection                                                */

static const struct {
    gt_log_format f;
    const char *name;
} k_formats[] = {
    {GT_LOG_AUTO, "auto"}, {GT_LOG_HIPBLASLT, "hipblaslt"}, {GT_LOG_TUNABLEOP, "tunableop"},
    {GT_LOG_CUBLASLT, "cublaslt"}, {GT_LOG_CSV, "csv"},     {GT_LOG_YAML, "yaml"},
};
#define NFORMATS (sizeof k_formats / sizeof k_formats[0])

const char *gt_log_format_name(gt_log_format f)
{
    for (size_t i = 0; i < NFORMATS; i++)
        if (k_formats[i].f == f)
            return k_formats[i].name;
    return "unknown";
}

int gt_log_format_parse(const char *s, gt_log_format *f)
{
    if (!s)
        return -1;
    for (size_t i = 0; i < NFORMATS; i++)
        if (!strcasecmp(s, k_formats[i].name)) {
            *f = k_formats[i].f;
            return 0;
        }
    return -1;
}

const char *gt_log_fp8_name(gt_log_fp8 e)
{
    return e == GT_LOG_FP8_FNUZ ? "fnuz" : e == GT_LOG_FP8_OCP ? "ocp" : "unknown";
}

int gt_log_fp8_parse(const char *s, gt_log_fp8 *e)
{
    if (s && !strcasecmp(s, "ocp")) {
        *e = GT_LOG_FP8_OCP;
        return 0;
    }
    if (s && !strcasecmp(s, "fnuz")) {
        *e = GT_LOG_FP8_FNUZ;
        return 0;
    }
    return -1;
}

static int starts(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n >= l && memcmp(s, lit, l) == 0;
}

/* One CSV field of digits (or the letter want, for a header), spaces around. */
static int csv_field(const char **ps, const char *end, char want)
{
    const char *s = *ps;
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    const char *b = s;
    if (s < end && (*s == want || *s == (char)(want + 'a' - 'A')))
        s++;
    else
        while (s < end && *s >= '0' && *s <= '9')
            s++;
    if (s == b)
        return 0;
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    *ps = s;
    return 1;
}

static int looks_csv(const char *s, size_t n)
{
    const char *end = s + n, *p = s;
    for (int i = 0; i < 3; i++) {
        if (!csv_field(&p, end, "MNK"[i]))
            return 0;
        if (i < 2) {
            if (p == end || *p != ',')
                return 0;
            p++;
        }
    }
    return p == end || *p == ',' || *p == '#';
}

/* Classifies one line: a format, GT_LOG_AUTO for "no idea", or -1 for a line
 * that carries nothing (blank, comment, YAML document marker). */
static int classify(const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    if (n == 0 || s[0] == '#' || starts(s, n, "---") || starts(s, n, "..."))
        return -1;
    if (s[0] == '-') {
        size_t i = 1;
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == n || s[i] != '{')
            return GT_LOG_AUTO;
        i++;
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (starts(s + i, n - i, "function:") || starts(s + i, n - i, "function :"))
            return GT_LOG_HIPBLASLT;
        for (; i < n; i++) {
            char prev = s[i - 1];
            if (s[i] != 'M' || !(prev == '{' || prev == ' ' || prev == ',' || prev == '\'' ||
                                 prev == '"'))
                continue;
            size_t j = i + 1;
            if (j < n && (s[j] == '\'' || s[j] == '"'))
                j++;
            while (j < n && s[j] == ' ')
                j++;
            if (j < n && s[j] == ':')
                return GT_LOG_YAML;
        }
        return GT_LOG_AUTO;
    }
    if (s[0] == '[') {
        /* "[time][cublasLt][pid][level][function]": look at the first groups. */
        size_t i = 0;
        for (int g = 0; g < 3 && i < n && s[i] == '['; g++) {
            const char *close = memchr(s + i, ']', n - i);
            if (!close)
                break;
            size_t len = (size_t)(close - (s + i)) - 1;
            if (gt_log_eq(s + i + 1, len, "cublasLt"))
                return GT_LOG_CUBLASLT;
            i = (size_t)(close - s) + 1;
        }
        return GT_LOG_AUTO;
    }
    if (starts(s, n, "GemmTunableOp_") || starts(s, n, "GemmStridedBatchedTunableOp_") ||
        starts(s, n, "GemmAndBiasTunableOp_") || starts(s, n, "ScaledGemmTunableOp_") ||
        starts(s, n, "Validator,"))
        return GT_LOG_TUNABLEOP;
    if (looks_csv(s, n))
        return GT_LOG_CSV;
    return GT_LOG_AUTO;
}

/* Skips a UTF-8 byte order mark, which editors on Windows like to add. */
static size_t bom_len(const char *text, size_t len)
{
    return len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
}

/* Detection that also says whether any meaningful line was seen. */
static gt_log_format detect(const char *text, size_t len, int *meaningful)
{
    *meaningful = 0;
    if (!text)
        return GT_LOG_AUTO;
    size_t pos = bom_len(text, len);
    int seen = 0;
    while (pos < len && seen < DETECT_LINES) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        int c = classify(text + pos, n);
        if (c >= 0) {
            *meaningful = 1;
            seen++;
            if (c != GT_LOG_AUTO)
                return (gt_log_format)c;
        }
        pos += n + 1;
    }
    return GT_LOG_AUTO;
}

gt_log_format gt_log_detect(const char *text, size_t len)
{
    int meaningful;
    return detect(text, len, &meaningful);
}

/* ------------------------------------------------------------------------ */
/* the driver                                                                */

/* Returns the offset of the first byte that makes the line binary (NUL,
 * control characters other than tab, DEL, invalid UTF-8), or n when the line
 * is text. */
static size_t binary_at(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            if ((c < 0x20 && c != '\t') || c == 0x7f)
                return i;
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf)
            len = 2, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
            len = 3, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
            len = 4, cp = c & 0x07;
        else
            return i;
        if (n - i < len)
            return i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return i;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
            return i;
        i += len;
    }
    return n;
}

static void add_error(gt_log_result *res, int line, const char *field, const char *msg)
{
    size_t slot = res->nerrors;
    /* Whole-input errors explain the rejection: never lose them to the cap. */
    if (slot >= GT_LOG_MAX_ERRORS && line == 0)
        slot = GT_LOG_MAX_ERRORS - 1;
    if (slot < GT_LOG_MAX_ERRORS) {
        gt_log_error *e = &res->errors[slot];
        e->line = line;
        snprintf(e->field, sizeof e->field, "%s", field ? field : "");
        snprintf(e->msg, sizeof e->msg, "%s", msg);
    }
    res->nerrors++;
}

/* The field a gt_problem_check message is about: its leading word before
 * '=' or ':' ("lda=1: smaller than M=16" -> "lda"); "" for prose. */
static void check_field(const char *msg, char *field, size_t cap)
{
    size_t i = 0;
    while (msg[i] && msg[i] != '=' && msg[i] != ':' && msg[i] != ' ')
        i++;
    if (msg[i] == ' ' || msg[i] == '\0' || i == 0 || i >= cap)
        i = 0;
    memcpy(field, msg, i);
    field[i] = '\0';
}

static int64_t sat_add(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

typedef struct {
    uint64_t hash;
    size_t idx1; /* problem index + 1; 0 = empty */
} slot_t;

typedef struct {
    slot_t *slots;
    size_t cap; /* power of two */
    size_t used;
} merge_tab;

#define KEY_LEN 1024

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static int tab_grow(merge_tab *t)
{
    size_t ncap = t->cap ? t->cap * 2 : 64;
    if (ncap > SIZE_MAX / sizeof(slot_t))
        return -1;
    slot_t *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].idx1)
            continue;
        size_t j = t->slots[i].hash & (ncap - 1);
        while (ns[j].idx1)
            j = (j + 1) & (ncap - 1);
        ns[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = ns;
    t->cap = ncap;
    return 0;
}

/* Adds p to res, adding its calls to an identical problem when there is one.
 * Returns 0, or -1 when out of memory. */
static int merge_problem(gt_log_result *res, merge_tab *t, const gt_problem *p)
{
    char key[KEY_LEN], other[KEY_LEN];
    if ((t->used + 1) * 2 > t->cap && tab_grow(t))
        return -1;
    gt_problem_key(p, key, sizeof key);
    uint64_t h = fnv1a(key);
    size_t j = h & (t->cap - 1);
    while (t->slots[j].idx1) {
        if (t->slots[j].hash == h) {
            gt_problem *q = &res->problems[t->slots[j].idx1 - 1];
            gt_problem_key(q, other, sizeof other);
            if (!strcmp(key, other)) {
                q->call_count = sat_add(q->call_count, p->call_count);
                return 0;
            }
        }
        j = (j + 1) & (t->cap - 1);
    }
    if (res->nproblems == res->cap) {
        size_t ncap = res->cap ? res->cap * 2 : 64;
        if (ncap > SIZE_MAX / sizeof(gt_problem))
            return -1;
        gt_problem *np = realloc(res->problems, ncap * sizeof *np);
        if (!np)
            return -1;
        res->problems = np;
        res->cap = ncap;
    }
    res->problems[res->nproblems++] = *p;
    t->slots[j].hash = h;
    t->slots[j].idx1 = res->nproblems;
    t->used++;
    return 0;
}

typedef struct {
    double w;
    size_t idx;
} order_t;

static int order_cmp(const void *a, const void *b)
{
    const order_t *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Weights, heaviest first (first seen first among equals), threshold. */
static int finish_problems(gt_log_result *res, double threshold)
{
    size_t n = res->nproblems;
    double total = 0;
    int64_t calls = 0;
    for (size_t i = 0; i < n; i++) {
        gt_problem *p = &res->problems[i];
        gt_problem_finish(p);
        total += p->flops * (double)p->call_count;
        calls = sat_add(calls, p->call_count);
    }
    res->total_flops = total;
    res->total_calls = calls;
    order_t *ord = malloc(n * sizeof *ord);
    gt_problem *sorted = malloc(n * sizeof *sorted);
    if (!ord || !sorted) {
        free(ord);
        free(sorted);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        gt_problem *p = &res->problems[i];
        p->weight = total > 0 ? p->flops * (double)p->call_count / total : 0;
        ord[i] = (order_t){p->weight, i};
    }
    qsort(ord, n, sizeof *ord, order_cmp);
    for (size_t i = 0; i < n; i++)
        sorted[i] = res->problems[ord[i].idx];
    free(ord);
    free(res->problems);
    res->problems = sorted;
    res->cap = n;
    if (threshold > 0 && threshold < 1) {
        double cum = 0;
        size_t keep = 0;
        while (keep < n) {
            cum += res->problems[keep++].weight;
            /* The tolerance keeps rounding from dropping the problem that
             * exactly reaches the threshold. */
            if (cum >= threshold - 1e-12)
                break;
        }
        res->dropped = n - keep;
        res->nproblems = keep;
    }
    return 0;
}

typedef int (*line_fn)(const char *, gt_log_fp8, gt_problem *, gt_log_error *);

/* TunableOp and cuBLASLt name both fp8 encodings explicitly: the run's
 * fp8_encoding has nothing to say there. */
static int line_tunableop(const char *line, gt_log_fp8 fp8, gt_problem *p, gt_log_error *e)
{
    (void)fp8;
    return gt_log_line_tunableop(line, p, e);
}

static int line_cublaslt(const char *line, gt_log_fp8 fp8, gt_problem *p, gt_log_error *e)
{
    (void)fp8;
    return gt_log_line_cublaslt(line, p, e);
}

static line_fn parser_for(gt_log_format f)
{
    switch (f) {
    case GT_LOG_HIPBLASLT: return gt_log_line_hipblaslt_fp8;
    case GT_LOG_TUNABLEOP: return line_tunableop;
    case GT_LOG_CUBLASLT: return line_cublaslt;
    case GT_LOG_CSV: return gt_log_line_csv_fp8;
    case GT_LOG_YAML: return gt_log_line_yaml_fp8;
    default: return NULL;
    }
}

int gt_log_parse(const char *text, size_t len, const gt_log_opts *opts, gt_log_result *res)
{
    memset(res, 0, sizeof *res);
    gt_log_opts o = {0};
    if (opts)
        o = *opts;
    if (!text)
        len = 0;
    char msg[GT_LOG_MSG_LEN];
    char *buf = NULL;
    merge_tab tab = {0};
    int rc = -1;

    gt_log_format f = o.format;
    if (f == GT_LOG_AUTO) {
        int meaningful;
        f = detect(text, len, &meaningful);
        if (f == GT_LOG_AUTO) {
            add_error(res, 0, "",
                      meaningful ? "could not detect the log format (tried hipblaslt, "
                                   "tunableop, cublaslt, csv, yaml); name the format explicitly"
                                 : "the log is empty: no GEMM found");
            return -1;
        }
    }
    res->format = f;
    if (o.fp8_encoding != GT_LOG_FP8_OCP && o.fp8_encoding != GT_LOG_FP8_FNUZ) {
        snprintf(msg, sizeof msg, "unknown fp8 encoding %d (ocp or fnuz)", (int)o.fp8_encoding);
        add_error(res, 0, "fp8_encoding", msg);
        return -1;
    }
    line_fn fn = parser_for(f);
    if (!fn) {
        snprintf(msg, sizeof msg, "unknown log format %d", (int)f);
        add_error(res, 0, "", msg);
        return -1;
    }
    buf = malloc(LINE_MAX_BYTES + 1);
    if (!buf)
        goto oom;

    size_t pos = text ? bom_len(text, len) : 0;
    while (pos < len) {
        const char *s = text + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        pos += n + 1;
        if (o.max_lines && res->lines == o.max_lines) {
            snprintf(msg, sizeof msg, "more than %zu lines: the rest of the log was not read",
                     o.max_lines);
            add_error(res, res->lines + 1 > INT32_MAX ? INT32_MAX : (int)(res->lines + 1), "",
                      msg);
            break;
        }
        res->lines++;
        int lineno = res->lines > INT32_MAX ? INT32_MAX : (int)res->lines;
        if (n && s[n - 1] == '\r')
            n--;
        if (n > LINE_MAX_BYTES) {
            snprintf(msg, sizeof msg, "line too long (%zu bytes, at most %d)", n,
                     LINE_MAX_BYTES);
            add_error(res, lineno, "", msg);
            continue;
        }
        size_t bad = binary_at((const unsigned char *)s, n);
        if (bad < n) {
            snprintf(msg, sizeof msg, "binary data: byte 0x%02x at column %zu",
                     (unsigned char)s[bad], bad + 1);
            add_error(res, lineno, "", msg);
            continue;
        }
        memcpy(buf, s, n);
        buf[n] = '\0';
        gt_problem p;
        gt_log_error e;
        memset(&e, 0, sizeof e);
        int r = fn(buf, o.fp8_encoding, &p, &e);
        if (r == 0)
            continue;
        if (r < 0) {
            add_error(res, lineno, e.field, e.msg[0] ? e.msg : "invalid line");
            continue;
        }
        if (gt_problem_check(&p, msg, sizeof msg)) {
            char field[sizeof e.field];
            check_field(msg, field, sizeof field);
            add_error(res, lineno, field, msg);
            continue;
        }
        if (merge_problem(res, &tab, &p))
            goto oom;
        res->gemm_lines++;
    }

    if (res->nproblems == 0) {
        if (res->nerrors)
            snprintf(msg, sizeof msg, "no valid GEMM in the log (format %s): %zu bad lines",
                     gt_log_format_name(f), res->nerrors);
        else
            snprintf(msg, sizeof msg, "no GEMM found in the log (format %s)",
                     gt_log_format_name(f));
        add_error(res, 0, "", msg);
        goto out;
    }
    if (finish_problems(res, o.threshold))
        goto oom;
    rc = res->nerrors && !o.skip_invalid ? -1 : 0;
    goto out;
oom:
    add_error(res, 0, "", "out of memory while reading the log");
    rc = -1;
out:
    free(buf);
    free(tab.slots);
    return rc;
}

void gt_log_result_free(gt_log_result *res)
{
    if (!res)
        return;
    free(res->problems);
    res->problems = NULL;
    res->nproblems = res->cap = 0;
}
