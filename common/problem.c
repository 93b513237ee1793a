/* problem.c: the GEMM problem model: types, validation, FLOPs/bytes, the
 * canonical key that decides when two calls are the same GEMM, and JSON. */
#include "gt_problem.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
    gt_dtype t;
    const char *canon;
    size_t size;
} k_types[] = {
    {GT_DT_F32, "f32", 4},       {GT_DT_F64, "f64", 8},         {GT_DT_F16, "f16", 2},
    {GT_DT_BF16, "bf16", 2},     {GT_DT_TF32, "tf32", 4},       {GT_DT_F8E4M3, "f8e4m3", 1},
    {GT_DT_F8E5M2, "f8e5m2", 1}, {GT_DT_I8, "i8", 1},           {GT_DT_I32, "i32", 4},
    {GT_DT_F8E4M3FNUZ, "f8e4m3fnuz", 1}, {GT_DT_F8E5M2FNUZ, "f8e5m2fnuz", 1},
};

/* Every spelling the supported logs use, mapped to one type. */
static const struct {
    const char *name;
    gt_dtype t;
} k_aliases[] = {
    {"f32", GT_DT_F32},          {"float", GT_DT_F32},         {"float32", GT_DT_F32},
    {"f32_r", GT_DT_F32},        {"c_f32_r", GT_DT_F32},       {"r_32f", GT_DT_F32},
    {"compute_32f", GT_DT_F32},  {"compute_32f_pedantic", GT_DT_F32}, {"s", GT_DT_F32},
    {"f64", GT_DT_F64},          {"double", GT_DT_F64},        {"float64", GT_DT_F64},
    {"f64_r", GT_DT_F64},        {"c_f64_r", GT_DT_F64},       {"r_64f", GT_DT_F64},
    {"compute_64f", GT_DT_F64},  {"d", GT_DT_F64},
    {"f16", GT_DT_F16},          {"half", GT_DT_F16},          {"float16", GT_DT_F16},
    {"fp16", GT_DT_F16},         {"f16_r", GT_DT_F16},         {"c_f16_r", GT_DT_F16},
    {"r_16f", GT_DT_F16},        {"compute_16f", GT_DT_F16},   {"h", GT_DT_F16},
    {"bf16", GT_DT_BF16},        {"bfloat16", GT_DT_BF16},     {"bf16_r", GT_DT_BF16},
    {"r_16bf", GT_DT_BF16},      {"b", GT_DT_BF16},
    {"tf32", GT_DT_TF32},        {"xf32_r", GT_DT_TF32},       {"c_xf32_r", GT_DT_TF32},
    {"compute_32f_fast_tf32", GT_DT_TF32},
    /* fp8, OCP: f8_r/bf8_r/fp8/bf8 do not say their encoding and read as
     * OCP here (gt_problem.h); the log parsers map them by fp8_encoding. */
    {"f8e4m3", GT_DT_F8E4M3},    {"f8_r", GT_DT_F8E4M3},       {"r_8f_e4m3", GT_DT_F8E4M3},
    {"float8_e4m3fn", GT_DT_F8E4M3}, {"fp8", GT_DT_F8E4M3},
    {"f8e5m2", GT_DT_F8E5M2},    {"bf8_r", GT_DT_F8E5M2},      {"r_8f_e5m2", GT_DT_F8E5M2},
    {"float8_e5m2", GT_DT_F8E5M2}, {"bf8", GT_DT_F8E5M2},
    /* fp8, FNUZ: hipBLASLt's newer names, PyTorch's, hipDataType's. */
    {"f8e4m3fnuz", GT_DT_F8E4M3FNUZ}, {"f8_fnuz_r", GT_DT_F8E4M3FNUZ},
    {"float8_e4m3fnuz", GT_DT_F8E4M3FNUZ}, {"r_8f_e4m3_fnuz", GT_DT_F8E4M3FNUZ},
    {"f8e5m2fnuz", GT_DT_F8E5M2FNUZ}, {"bf8_fnuz_r", GT_DT_F8E5M2FNUZ},
    {"float8_e5m2fnuz", GT_DT_F8E5M2FNUZ}, {"r_8f_e5m2_fnuz", GT_DT_F8E5M2FNUZ},
    {"i8", GT_DT_I8},            {"int8", GT_DT_I8},           {"i8_r", GT_DT_I8},
    {"r_8i", GT_DT_I8},
    {"i32", GT_DT_I32},          {"int32", GT_DT_I32},         {"i32_r", GT_DT_I32},
    {"c_i32_r", GT_DT_I32},      {"r_32i", GT_DT_I32},         {"compute_32i", GT_DT_I32},
};

const char *gt_dtype_name(gt_dtype t)
{
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        if (k_types[i].t == t)
            return k_types[i].canon;
    return "invalid";
}

gt_dtype gt_dtype_parse(const char *s)
{
    if (!s)
        return GT_DT_INVALID;
    for (size_t i = 0; i < sizeof k_aliases / sizeof k_aliases[0]; i++)
        if (strcasecmp(s, k_aliases[i].name) == 0)
            return k_aliases[i].t;
    return GT_DT_INVALID;
}

size_t gt_dtype_size(gt_dtype t)
{
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        if (k_types[i].t == t)
            return k_types[i].size;
    return 0;
}

int gt_dtype_is_f8(gt_dtype t)
{
    return t == GT_DT_F8E4M3 || t == GT_DT_F8E5M2 || t == GT_DT_F8E4M3FNUZ ||
           t == GT_DT_F8E5M2FNUZ;
}

const char *gt_scale_name(gt_scale_mode m)
{
    switch (m) {
    case GT_SCALE_AUTO: return "auto";
    case GT_SCALE_NONE: return "none";
    case GT_SCALE_SCALAR: return "scalar";
    default: return "invalid";
    }
}

/* The mode an operand of type t has when nothing says otherwise. */
static gt_scale_mode usual_scale(gt_dtype t)
{
    return gt_dtype_is_f8(t) ? GT_SCALE_SCALAR : GT_SCALE_NONE;
}

gt_scale_mode gt_problem_scale(const gt_problem *p, char operand)
{
    gt_scale_mode m = operand == 'a' ? p->scale_a : p->scale_b;
    gt_dtype t = operand == 'a' ? p->a_type : p->b_type;
    return m == GT_SCALE_AUTO ? usual_scale(t) : m;
}

/* Whether the scale modes differ from the types' usual ones: only then do
 * they show in the key and the JSON. */
static int unusual_scales(const gt_problem *p)
{
    return gt_problem_scale(p, 'a') != usual_scale(p->a_type) ||
           gt_problem_scale(p, 'b') != usual_scale(p->b_type);
}

void gt_problem_init(gt_problem *p, int64_t m, int64_t n, int64_t k)
{
    memset(p, 0, sizeof *p);
    p->m = m;
    p->n = n;
    p->k = k;
    p->batch = 1;
    p->trans_a = 'N';
    p->trans_b = 'N';
    p->a_type = p->b_type = p->c_type = p->d_type = GT_DT_F32;
    p->compute_type = p->scale_type = GT_DT_F32;
    p->alpha = 1.0;
    p->beta = 0.0;
    p->bias_type = GT_DT_INVALID;
    snprintf(p->activation, sizeof p->activation, "none");
    p->call_count = 1;
    gt_problem_default_ld(p);
}

void gt_problem_init_tn(gt_problem *p, int64_t m, int64_t n, int64_t k, gt_dtype ab, gt_dtype cd)
{
    gt_problem_init(p, m, n, k);
    p->trans_a = 'T';
    p->a_type = p->b_type = ab;
    p->c_type = p->d_type = cd;
    gt_problem_default_ld(p);
    gt_problem_finish(p);
}

void gt_problem_default_ld(gt_problem *p)
{
    /* Column-major: A is stored m x k (N) or k x m (T); B is k x n or n x k. */
    p->lda = p->trans_a == 'N' ? p->m : p->k;
    p->ldb = p->trans_b == 'N' ? p->k : p->n;
    p->ldc = p->m;
    p->ldd = p->m;
    if (p->batch > 1) {
        p->stride_a = p->lda * (p->trans_a == 'N' ? p->k : p->m);
        p->stride_b = p->ldb * (p->trans_b == 'N' ? p->n : p->k);
        p->stride_c = p->ldc * p->n;
        p->stride_d = p->ldd * p->n;
    } else {
        p->stride_a = p->stride_b = p->stride_c = p->stride_d = 0;
    }
}

void gt_problem_finish(gt_problem *p)
{
    double b = (double)p->batch;
    p->flops = 2.0 * (double)p->m * (double)p->n * (double)p->k * b;
    double bytes = (double)p->m * (double)p->k * (double)gt_dtype_size(p->a_type) +
                   (double)p->k * (double)p->n * (double)gt_dtype_size(p->b_type) +
                   (double)p->m * (double)p->n * (double)gt_dtype_size(p->d_type);
    if (p->beta != 0.0)
        bytes += (double)p->m * (double)p->n * (double)gt_dtype_size(p->c_type);
    p->bytes = bytes * b;
}

/* Largest dimension we accept: sizes beyond it overflow 32-bit BLAS interfaces
 * and no real workload has them. */
#define GT_DIM_MAX ((int64_t)1 << 31)

int gt_problem_check(const gt_problem *p, char *err, size_t errlen)
{
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return -1;                                                                                 \
    } while (0)
    const struct {
        const char *name;
        int64_t v;
    } dims[] = {{"M", p->m}, {"N", p->n}, {"K", p->k}, {"batch_count", p->batch}};
    for (size_t i = 0; i < 4; i++) {
        if (dims[i].v < 1)
            FAIL("%s=%lld: must be >= 1", dims[i].name, (long long)dims[i].v);
        if (dims[i].v >= GT_DIM_MAX)
            FAIL("%s=%lld: larger than 2^31-1", dims[i].name, (long long)dims[i].v);
    }
    if (p->trans_a != 'N' && p->trans_a != 'T')
        FAIL("transA=%c: must be N or T", p->trans_a ? p->trans_a : '?');
    if (p->trans_b != 'N' && p->trans_b != 'T')
        FAIL("transB=%c: must be N or T", p->trans_b ? p->trans_b : '?');
    int64_t min_lda = p->trans_a == 'N' ? p->m : p->k;
    int64_t min_ldb = p->trans_b == 'N' ? p->k : p->n;
    if (p->lda < min_lda)
        FAIL("lda=%lld: smaller than %s=%lld", (long long)p->lda, p->trans_a == 'N' ? "M" : "K",
             (long long)min_lda);
    if (p->ldb < min_ldb)
        FAIL("ldb=%lld: smaller than %s=%lld", (long long)p->ldb, p->trans_b == 'N' ? "K" : "N",
             (long long)min_ldb);
    if (p->ldc < p->m)
        FAIL("ldc=%lld: smaller than M=%lld", (long long)p->ldc, (long long)p->m);
    if (p->ldd < p->m)
        FAIL("ldd=%lld: smaller than M=%lld", (long long)p->ldd, (long long)p->m);
    if (p->lda >= GT_DIM_MAX || p->ldb >= GT_DIM_MAX || p->ldc >= GT_DIM_MAX || p->ldd >= GT_DIM_MAX)
        FAIL("leading dimension larger than 2^31-1");
    if (p->stride_a < 0 || p->stride_b < 0 || p->stride_c < 0 || p->stride_d < 0)
        FAIL("stride: must be >= 0");
    if (p->batch > 1) {
        /* A and B may be broadcast (stride 0); the outputs must not overlap. */
        if (p->stride_d < p->ldd * p->n)
            FAIL("stride_d=%lld: smaller than ldd*N=%lld for batch_count=%lld",
                 (long long)p->stride_d, (long long)(p->ldd * p->n), (long long)p->batch);
    }
    /* Total elements of the largest operand must fit comfortably in int64. */
    double elems = (double)p->batch * ((double)p->ldd * (double)p->n +
                                       (double)p->lda * (double)(p->trans_a == 'N' ? p->k : p->m));
    if (elems > 9.0e15)
        FAIL("problem too large: %.3g elements", elems);
    const struct {
        const char *name;
        gt_dtype t;
    } types[] = {{"a_type", p->a_type},       {"b_type", p->b_type},
                 {"c_type", p->c_type},       {"d_type", p->d_type},
                 {"compute_type", p->compute_type}, {"scale_type", p->scale_type}};
    for (size_t i = 0; i < 6; i++)
        if (types[i].t == GT_DT_INVALID)
            FAIL("%s: unknown data type", types[i].name);
    const struct {
        const char *name, *type_name;
        gt_scale_mode m;
        gt_dtype t;
    } scales[] = {{"scale_a", "a_type", gt_problem_scale(p, 'a'), p->a_type},
                  {"scale_b", "b_type", gt_problem_scale(p, 'b'), p->b_type}};
    for (size_t i = 0; i < 2; i++) {
        if (scales[i].m != GT_SCALE_NONE && scales[i].m != GT_SCALE_SCALAR)
            FAIL("%s=%d: unknown scaling mode", scales[i].name, (int)scales[i].m);
        /* cuBLASLt refuses scale pointers on other types and libgemmtune
         * never maps such a call: a scale there would be tuned as if absent. */
        if (scales[i].m == GT_SCALE_SCALAR && !gt_dtype_is_f8(scales[i].t))
            FAIL("%s=scalar: per-tensor scales are modelled for fp8 operands only (%s %s)",
                 scales[i].name, scales[i].type_name, gt_dtype_name(scales[i].t));
    }
    if (p->call_count < 1)
        FAIL("call_count=%lld: must be >= 1", (long long)p->call_count);
    if (!isfinite(p->alpha) || !isfinite(p->beta))
        FAIL("alpha/beta: must be finite");
    return 0;
#undef FAIL
}

int gt_problem_key(const gt_problem *p, char *buf, size_t len)
{
    /* The scale modes go last and only when unusual: every key written
     * before they were modelled stays the same text. */
    char scales[48] = "";
    if (unusual_scales(p))
        snprintf(scales, sizeof scales, ",scale=%s/%s", gt_scale_name(gt_problem_scale(p, 'a')),
                 gt_scale_name(gt_problem_scale(p, 'b')));
    return snprintf(buf, len,
                    "m=%lld,n=%lld,k=%lld,b=%lld,op=%c%c,ld=%lld/%lld/%lld/%lld,"
                    "st=%lld/%lld/%lld/%lld,t=%s/%s/%s/%s,ct=%s,st=%s,ab=%.17g/%.17g,bias=%d:%s,"
                    "act=%s%s",
                    (long long)p->m, (long long)p->n, (long long)p->k, (long long)p->batch,
                    p->trans_a, p->trans_b, (long long)p->lda, (long long)p->ldb,
                    (long long)p->ldc, (long long)p->ldd, (long long)p->stride_a,
                    (long long)p->stride_b, (long long)p->stride_c, (long long)p->stride_d,
                    gt_dtype_name(p->a_type), gt_dtype_name(p->b_type), gt_dtype_name(p->c_type),
                    gt_dtype_name(p->d_type), gt_dtype_name(p->compute_type),
                    gt_dtype_name(p->scale_type), p->alpha, p->beta, p->bias,
                    p->bias ? gt_dtype_name(p->bias_type) : "-", p->activation, scales);
}

int gt_problem_label(const gt_problem *p, char *buf, size_t len)
{
    if (p->batch > 1)
        return snprintf(buf, len, "%s %c%c %lldx%lldx%lld b%lld", gt_dtype_name(p->a_type),
                        p->trans_a, p->trans_b, (long long)p->m, (long long)p->n,
                        (long long)p->k, (long long)p->batch);
    return snprintf(buf, len, "%s %c%c %lldx%lldx%lld", gt_dtype_name(p->a_type), p->trans_a,
                    p->trans_b, (long long)p->m, (long long)p->n, (long long)p->k);
}

cJSON *gt_problem_to_json(const gt_problem *p)
{
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    char ta[2] = {p->trans_a, 0}, tb[2] = {p->trans_b, 0};
    int ok = cJSON_AddNumberToObject(j, "m", (double)p->m) &&
             cJSON_AddNumberToObject(j, "n", (double)p->n) &&
             cJSON_AddNumberToObject(j, "k", (double)p->k) &&
             cJSON_AddNumberToObject(j, "batch", (double)p->batch) &&
             cJSON_AddStringToObject(j, "trans_a", ta) &&
             cJSON_AddStringToObject(j, "trans_b", tb) &&
             cJSON_AddNumberToObject(j, "lda", (double)p->lda) &&
             cJSON_AddNumberToObject(j, "ldb", (double)p->ldb) &&
             cJSON_AddNumberToObject(j, "ldc", (double)p->ldc) &&
             cJSON_AddNumberToObject(j, "ldd", (double)p->ldd) &&
             cJSON_AddNumberToObject(j, "stride_a", (double)p->stride_a) &&
             cJSON_AddNumberToObject(j, "stride_b", (double)p->stride_b) &&
             cJSON_AddNumberToObject(j, "stride_c", (double)p->stride_c) &&
             cJSON_AddNumberToObject(j, "stride_d", (double)p->stride_d) &&
             cJSON_AddStringToObject(j, "a_type", gt_dtype_name(p->a_type)) &&
             cJSON_AddStringToObject(j, "b_type", gt_dtype_name(p->b_type)) &&
             cJSON_AddStringToObject(j, "c_type", gt_dtype_name(p->c_type)) &&
             cJSON_AddStringToObject(j, "d_type", gt_dtype_name(p->d_type)) &&
             cJSON_AddStringToObject(j, "compute_type", gt_dtype_name(p->compute_type)) &&
             cJSON_AddStringToObject(j, "scale_type", gt_dtype_name(p->scale_type)) &&
             cJSON_AddNumberToObject(j, "alpha", p->alpha) &&
             cJSON_AddNumberToObject(j, "beta", p->beta) &&
             cJSON_AddBoolToObject(j, "bias", p->bias) &&
             cJSON_AddStringToObject(j, "bias_type", p->bias ? gt_dtype_name(p->bias_type) : "none") &&
             cJSON_AddStringToObject(j, "activation", p->activation) &&
             cJSON_AddNumberToObject(j, "rotating_mb", (double)p->rotating_mb) &&
             cJSON_AddNumberToObject(j, "call_count", (double)p->call_count) &&
             cJSON_AddNumberToObject(j, "flops", p->flops) &&
             cJSON_AddNumberToObject(j, "bytes", p->bytes) &&
             cJSON_AddNumberToObject(j, "weight", p->weight);
    /* Like the key: only unusual modes are written, so the specs of
     * problems without them stay what they were. */
    if (ok && unusual_scales(p))
        ok = cJSON_AddStringToObject(j, "scale_a", gt_scale_name(gt_problem_scale(p, 'a'))) &&
             cJSON_AddStringToObject(j, "scale_b", gt_scale_name(gt_problem_scale(p, 'b')));
    if (!ok) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

static int get_i64(const cJSON *j, const char *name, int64_t *out, int required, char *err,
                   size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!v) {
        if (!required)
            return 0;
        snprintf(err, errlen, "%s: missing", name);
        return -1;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
        fabs(v->valuedouble) > 9.0e15) {
        snprintf(err, errlen, "%s: must be an integer", name);
        return -1;
    }
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int get_type(const cJSON *j, const char *name, gt_dtype *out, int required, char *err,
                    size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!v) {
        if (!required)
            return 0;
        snprintf(err, errlen, "%s: missing", name);
        return -1;
    }
    gt_dtype t = cJSON_IsString(v) ? gt_dtype_parse(v->valuestring) : GT_DT_INVALID;
    if (t == GT_DT_INVALID) {
        snprintf(err, errlen, "%s: unknown data type", name);
        return -1;
    }
    *out = t;
    return 0;
}

static int get_scale(const cJSON *j, const char *name, gt_scale_mode *out, char *err,
                     size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!v)
        return 0;
    if (cJSON_IsString(v) && !strcmp(v->valuestring, "none")) {
        *out = GT_SCALE_NONE;
        return 0;
    }
    if (cJSON_IsString(v) && !strcmp(v->valuestring, "scalar")) {
        *out = GT_SCALE_SCALAR;
        return 0;
    }
    snprintf(err, errlen, "%s: must be \"none\" or \"scalar\" (per-row, vector and block "
                          "scales are not modelled)", name);
    return -1;
}

static int get_trans(const cJSON *j, const char *name, char *out, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!v)
        return 0;
    if (!cJSON_IsString(v) || (strcmp(v->valuestring, "N") && strcmp(v->valuestring, "T"))) {
        snprintf(err, errlen, "%s: must be \"N\" or \"T\"", name);
        return -1;
    }
    *out = v->valuestring[0];
    return 0;
}

int gt_problem_from_json(const cJSON *j, gt_problem *p, char *err, size_t errlen)
{
    int64_t m = 0, n = 0, k = 0;
    if (!cJSON_IsObject(j)) {
        snprintf(err, errlen, "problem: not an object");
        return -1;
    }
    if (get_i64(j, "m", &m, 1, err, errlen) || get_i64(j, "n", &n, 1, err, errlen) ||
        get_i64(j, "k", &k, 1, err, errlen))
        return -1;
    gt_problem_init(p, 1, 1, 1);
    p->m = m;
    p->n = n;
    p->k = k;
    if (get_i64(j, "batch", &p->batch, 0, err, errlen) ||
        get_trans(j, "trans_a", &p->trans_a, err, errlen) ||
        get_trans(j, "trans_b", &p->trans_b, err, errlen))
        return -1;
    /* Range-check the sizes before anything multiplies them (the default
     * strides below would overflow int64 for hostile sizes); the full check
     * runs at the end. */
    const struct {
        const char *name;
        int64_t v;
    } dims[] = {{"m", p->m}, {"n", p->n}, {"k", p->k}, {"batch", p->batch}};
    for (size_t i = 0; i < 4; i++) {
        if (dims[i].v < 1 || dims[i].v >= GT_DIM_MAX) {
            snprintf(err, errlen, "%s=%lld: must be in [1, 2^31-1]", dims[i].name,
                     (long long)dims[i].v);
            return -1;
        }
    }
    gt_problem_default_ld(p);
    if (get_i64(j, "lda", &p->lda, 0, err, errlen) || get_i64(j, "ldb", &p->ldb, 0, err, errlen) ||
        get_i64(j, "ldc", &p->ldc, 0, err, errlen) || get_i64(j, "ldd", &p->ldd, 0, err, errlen) ||
        get_i64(j, "stride_a", &p->stride_a, 0, err, errlen) ||
        get_i64(j, "stride_b", &p->stride_b, 0, err, errlen) ||
        get_i64(j, "stride_c", &p->stride_c, 0, err, errlen) ||
        get_i64(j, "stride_d", &p->stride_d, 0, err, errlen) ||
        get_type(j, "a_type", &p->a_type, 0, err, errlen) ||
        get_type(j, "b_type", &p->b_type, 0, err, errlen) ||
        get_type(j, "c_type", &p->c_type, 0, err, errlen) ||
        get_type(j, "d_type", &p->d_type, 0, err, errlen) ||
        get_type(j, "compute_type", &p->compute_type, 0, err, errlen) ||
        get_type(j, "scale_type", &p->scale_type, 0, err, errlen) ||
        get_i64(j, "rotating_mb", &p->rotating_mb, 0, err, errlen) ||
        get_i64(j, "call_count", &p->call_count, 0, err, errlen))
        return -1;
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "alpha")) && cJSON_IsNumber(v))
        p->alpha = v->valuedouble;
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "beta")) && cJSON_IsNumber(v))
        p->beta = v->valuedouble;
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "bias")))
        p->bias = cJSON_IsTrue(v);
    if (p->bias && get_type(j, "bias_type", &p->bias_type, 1, err, errlen))
        return -1;
    if (get_scale(j, "scale_a", &p->scale_a, err, errlen) ||
        get_scale(j, "scale_b", &p->scale_b, err, errlen))
        return -1;
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "activation")) && cJSON_IsString(v))
        snprintf(p->activation, sizeof p->activation, "%s", v->valuestring);
    if ((v = cJSON_GetObjectItemCaseSensitive(j, "weight")) && cJSON_IsNumber(v))
        p->weight = v->valuedouble;
    gt_problem_finish(p);
    return gt_problem_check(p, err, errlen);
}
