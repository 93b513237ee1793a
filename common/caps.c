/* caps.c: the problems each backend can run. The cuda rules follow the
 * cublasLtMatmul type tables (here, not in cuda/cu_map.c, so that the
 * coordinator, the worker and libgemmtune read one copy). */
#include "gt_caps.h"

#include "gt_log.h"

#include <stdio.h>
#include <string.h>

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return -1;                                                                                 \
    } while (0)

static int is16(gt_dtype t) { return t == GT_DT_F16 || t == GT_DT_BF16; }
/* OCP fp8 only: cuBLASLt has no FNUZ encoding. */
static int isf8(gt_dtype t) { return t == GT_DT_F8E4M3 || t == GT_DT_F8E5M2; }
static int isf32(gt_dtype t) { return t == GT_DT_F32 || t == GT_DT_TF32; }

static int no_epilogue(const gt_problem *p)
{
    return !p->bias && (!p->activation[0] || !strcmp(p->activation, "none"));
}

/* ---- cpu --------------------------------------------------------------- */

static int type_in(gt_dtype t, const gt_dtype *ok, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ok[i] == t)
            return 1;
    return 0;
}

/* The cpu backend's generated C: f32, f16 and bf16 storage with f32
 * accumulation, no epilogue. */
static int cpu_check(const gt_problem *p, char *err, size_t errlen)
{
    static const gt_dtype storage[] = {GT_DT_F32, GT_DT_F16, GT_DT_BF16};
    /* f32 accumulation is at least as precise as any of these. */
    static const gt_dtype compute[] = {GT_DT_F32, GT_DT_TF32, GT_DT_F16, GT_DT_BF16};
    const struct {
        const char *name;
        gt_dtype t;
        const gt_dtype *ok;
        size_t n;
    } chk[] = {
        {"a_type", p->a_type, storage, 3},        {"b_type", p->b_type, storage, 3},
        {"c_type", p->c_type, storage, 3},        {"d_type", p->d_type, storage, 3},
        {"compute_type", p->compute_type, compute, 4}, {"scale_type", p->scale_type, compute, 4},
    };
    for (size_t i = 0; i < sizeof chk / sizeof chk[0]; i++)
        if (!type_in(chk[i].t, chk[i].ok, chk[i].n))
            FAIL("cpu backend: %s=%s not supported", chk[i].name, gt_dtype_name(chk[i].t));
    if (!no_epilogue(p))
        FAIL("cpu backend: epilogue bias=%d activation=%s not supported", p->bias, p->activation);
    return 0;
}

/* ---- cuda -------------------------------------------------------------- */

gt_dtype gt_caps_cuda_default_bias(const gt_problem *p)
{
    if (isf8(p->a_type) && isf32(p->d_type))
        return GT_DT_BF16;
    if (isf8(p->a_type) && isf8(p->d_type))
        return p->c_type;
    if (p->d_type == GT_DT_I8)
        return GT_DT_F32;
    return p->d_type;
}

/* A type cuBLASLt stores: every model type but FNUZ fp8 (and invalid). */
static int lt_storage(gt_dtype t)
{
    switch (t) {
    case GT_DT_F32:
    case GT_DT_TF32:
    case GT_DT_F64:
    case GT_DT_F16:
    case GT_DT_BF16:
    case GT_DT_F8E4M3:
    case GT_DT_F8E5M2:
    case GT_DT_I8:
    case GT_DT_I32: return 1;
    default: return 0;
    }
}

/* The storage class cuBLASLt compares A and B by (tf32 is f32 storage). */
static gt_dtype storage_of(gt_dtype t) { return t == GT_DT_TF32 ? GT_DT_F32 : t; }

/* FP8, following the cuBLASLt documentation of cublasLtMatmul (its FP8
 * type table and "to use FP8 kernels" requirements). Compute f32 and scale
 * type f32 only:
 *
 *   A     B     C     D                   bias (the only one accepted)
 *   e4m3  e4m3  bf16  bf16 | e4m3         bf16
 *   e4m3  e4m3  f16   f16  | e4m3         f16
 *   e4m3  e4m3  f32   f32                 bf16
 *   e4m3  e5m2  bf16  bf16 | e4m3 | e5m2  bf16   (e5m2 x e4m3 alike)
 *   e4m3  e5m2  f16   f16  | e4m3 | e5m2  f16
 *   e4m3  e5m2  f32   f32                 bf16
 *
 * e5m2 x e5m2 is not supported, C is never fp8 (so no C scale), and an
 * fp8 D takes its 16-bit C's type for the bias. Layout: A transposed and
 * B not ("TN") on sm_89 (Ada), sm_90 (Hopper) and sm_12x (GeForce
 * Blackwell); any layout on sm_100 and sm_11x. Every matrix must meet the
 * Tensor Core alignment, which is a requirement for fp8: rows of each
 * stored operand ((opA == N ? m : k) for A, (opB == N ? k : n) for B, m
 * for C) and lda, ldb, ldc, ldd and the batch strides are multiples of 16
 * bytes. The descriptor gets A_SCALE_POINTER and B_SCALE_POINTER always
 * and D_SCALE_POINTER when D is fp8; AMAX_D is optional and not requested.
 * With sm 0 the layout and architecture rules are left out (some device
 * runs every layout). */
static int map_fp8(const gt_problem *p, int sm, char *err, size_t errlen)
{
    gt_dtype a = p->a_type, b = p->b_type, c = p->c_type, d = p->d_type;
    if (a == GT_DT_F8E5M2 && b == GT_DT_F8E5M2)
        FAIL("cuda: fp8 A and B cannot both be e5m2");
    if (sm && sm < 89)
        FAIL("cuda: fp8 requires sm_89 or newer (device sm_%d)", sm);
    if (sm && (sm < 100 || sm >= 120) && (p->trans_a != 'T' || p->trans_b != 'N'))
        FAIL("cuda: fp8 requires transA=T transB=N on sm_%d (got %c%c)", sm, p->trans_a,
             p->trans_b);
    int mixed = a != b;
    if (isf32(c) || isf32(d)) {
        if (c != GT_DT_F32 || d != GT_DT_F32)
            FAIL("cuda: fp8 with f32 output needs C and D both f32 (got %s/%s)", gt_dtype_name(c),
                 gt_dtype_name(d));
    } else if (!is16(c)) {
        FAIL("cuda: fp8 needs c_type bf16, f16 or f32 (got %s)", gt_dtype_name(c));
    } else if (d != c && d != GT_DT_F8E4M3 && !(mixed && d == GT_DT_F8E5M2)) {
        FAIL("cuda: fp8 %s x %s with c_type %s needs d_type %s or e4m3%s (got %s)",
             gt_dtype_name(a), gt_dtype_name(b), gt_dtype_name(c), gt_dtype_name(c),
             mixed ? " or e5m2" : "", gt_dtype_name(d));
    }
    if (p->bias && p->bias_type != GT_DT_INVALID) {
        gt_dtype want = d == GT_DT_F32 ? GT_DT_BF16 : c;
        if (p->bias_type != want)
            FAIL("cuda: fp8 with C %s / D %s needs bias_type %s (got %s)", gt_dtype_name(c),
                 gt_dtype_name(d), gt_dtype_name(want), gt_dtype_name(p->bias_type));
    }
    const struct {
        const char *what;
        int64_t v;
        gt_dtype t;
    } al[] = {
        {"rows of A", p->trans_a == 'N' ? p->m : p->k, a},
        {"rows of B", p->trans_b == 'N' ? p->k : p->n, b},
        {"m (rows of C)", p->m, c},
        {"lda", p->lda, a},
        {"ldb", p->ldb, b},
        {"ldc", p->ldc, c},
        {"ldd", p->ldd, d},
        {"stride_a", p->batch > 1 ? p->stride_a : 0, a},
        {"stride_b", p->batch > 1 ? p->stride_b : 0, b},
        {"stride_c", p->batch > 1 ? p->stride_c : 0, c},
        {"stride_d", p->batch > 1 ? p->stride_d : 0, d},
    };
    for (size_t i = 0; i < sizeof al / sizeof al[0]; i++)
        if ((al[i].v * (int64_t)gt_dtype_size(al[i].t)) % 16 != 0)
            FAIL("cuda: fp8 requires %s=%lld to be a multiple of 16 bytes (%s)", al[i].what,
                 (long long)al[i].v, gt_dtype_name(al[i].t));
    return 0;
}

/* Compute type and the one scale type cuBLASLt accepts with it. Finer
 * limits of the other types (alignment) are left to cuBLASLt itself, whose
 * refusal the worker reports with the status name. */
static int map_compute(const gt_problem *p, int sm, gt_caps_cuda *o, char *err, size_t errlen)
{
    gt_dtype a = p->a_type, b = p->b_type, c = p->c_type, d = p->d_type;
    const char *an = gt_dtype_name(a), *bn = gt_dtype_name(b);
    if ((!isf8(a) || !isf8(b)) && storage_of(a) != storage_of(b))
        FAIL("cuda: a_type %s and b_type %s differ (mixed inputs only for fp8)", an, bn);
    switch (p->compute_type) {
    case GT_DT_F64:
        if (a != GT_DT_F64 || c != GT_DT_F64 || d != GT_DT_F64)
            FAIL("cuda: compute f64 needs f64 A/B/C/D (got %s/%s/%s/%s)", an, bn,
                 gt_dtype_name(c), gt_dtype_name(d));
        o->compute = o->scale = GT_DT_F64;
        return 0;
    case GT_DT_TF32:
        if (!isf32(a) || !isf32(c) || !isf32(d))
            FAIL("cuda: compute tf32 needs f32 A/B/C/D (got %s/%s/%s/%s)", an, bn,
                 gt_dtype_name(c), gt_dtype_name(d));
        if (sm && sm < 80)
            FAIL("cuda: tf32 requires sm_80 or newer (device sm_%d)", sm);
        o->compute = GT_DT_TF32;
        o->scale = GT_DT_F32;
        return 0;
    case GT_DT_F16:
        if (a != GT_DT_F16 || c != GT_DT_F16 || d != GT_DT_F16)
            FAIL("cuda: compute f16 needs f16 A/B/C/D (got %s/%s/%s/%s)", an, bn,
                 gt_dtype_name(c), gt_dtype_name(d));
        o->compute = o->scale = GT_DT_F16;
        return 0;
    case GT_DT_I32:
        if (a != GT_DT_I8)
            FAIL("cuda: compute i32 needs i8 A/B (got %s/%s)", an, bn);
        if (d == GT_DT_I32 && c == GT_DT_I32)
            o->scale = GT_DT_I32;
        else if (d == GT_DT_I8 && c == GT_DT_I8)
            o->scale = GT_DT_F32;
        else
            FAIL("cuda: i8 GEMM needs C/D both i32 or both i8 (got %s/%s)", gt_dtype_name(c),
                 gt_dtype_name(d));
        o->compute = GT_DT_I32;
        return 0;
    case GT_DT_F32:
        o->compute = o->scale = GT_DT_F32;
        if (isf32(a)) {
            if (!isf32(c) || !isf32(d))
                FAIL("cuda: f32 inputs need f32 C/D (got %s/%s)", gt_dtype_name(c),
                     gt_dtype_name(d));
        } else if (is16(a)) {
            if (a == GT_DT_BF16 && sm && sm < 80)
                FAIL("cuda: bf16 requires sm_80 or newer (device sm_%d)", sm);
            if (c != d || (d != a && d != GT_DT_F32))
                FAIL("cuda: %s inputs need C/D both %s or both f32 (got %s/%s)", an, an,
                     gt_dtype_name(c), gt_dtype_name(d));
        } else if (isf8(a)) {
            if (map_fp8(p, sm, err, errlen) != 0)
                return -1;
            o->fp8 = 1;
            o->d_scale = isf8(d);
        } else if (a == GT_DT_I8) {
            if (!isf32(c) || !isf32(d))
                FAIL("cuda: i8 inputs with f32 compute need f32 C/D (got %s/%s)",
                     gt_dtype_name(c), gt_dtype_name(d));
        } else {
            FAIL("cuda: input type %s not supported with compute f32", an);
        }
        return 0;
    default:
        FAIL("cuda: compute type %s not supported (f32, tf32, f16, f64, i32)",
             gt_dtype_name(p->compute_type));
    }
}

int gt_caps_cuda_map(const gt_problem *p, int sm, gt_caps_cuda *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->bias = GT_DT_INVALID;
    if (gt_problem_check(p, err, errlen) != 0) {
        char why[200];
        snprintf(why, sizeof why, "%s", err);
        FAIL("cuda: bad problem: %s", why);
    }
    const struct {
        const char *name;
        gt_dtype t;
    } ops[] = {{"a_type", p->a_type}, {"b_type", p->b_type}, {"c_type", p->c_type}, {"d_type", p->d_type}};
    for (size_t i = 0; i < 4; i++)
        if (!lt_storage(ops[i].t))
            FAIL("cuda: %s %s has no cuBLASLt storage type", ops[i].name, gt_dtype_name(ops[i].t));
    if (map_compute(p, sm, o, err, errlen) != 0)
        return -1;
    if (p->scale_type != o->scale)
        FAIL("cuda: compute %s with %s inputs needs scale_type %s (got %s)",
             gt_dtype_name(o->compute), gt_dtype_name(p->a_type), gt_dtype_name(o->scale),
             gt_dtype_name(p->scale_type));
    const char *act = p->activation;
    if (act[0] == 0 || strcmp(act, "none") == 0)
        o->act = GT_CAPS_ACT_NONE;
    else if (strcmp(act, "relu") == 0)
        o->act = GT_CAPS_ACT_RELU;
    else if (strcmp(act, "gelu") == 0 || strcmp(act, "gelu_tanh") == 0)
        o->act = GT_CAPS_ACT_GELU; /* cuBLASLt's GELU is the tanh approximation */
    else
        FAIL("cuda: activation '%s' has no cuBLASLt epilogue (none, relu, gelu)", act);
    if (p->bias) {
        gt_dtype bt = p->bias_type != GT_DT_INVALID ? p->bias_type : gt_caps_cuda_default_bias(p);
        if (!lt_storage(bt) || bt == GT_DT_TF32)
            FAIL("cuda: bias_type %s not supported", gt_dtype_name(bt));
        o->bias = bt;
    }
    return 0;
}

/* ---- all backends ------------------------------------------------------ */

int gt_caps_check(const char *backend, const gt_problem *p, char *err, size_t errlen)
{
    if (!strcmp(backend, "cpu"))
        return cpu_check(p, err, errlen);
    if (!strcmp(backend, "cuda")) {
        gt_caps_cuda o;
        return gt_caps_cuda_map(p, 0, &o, err, errlen);
    }
    if (!strcmp(backend, "hip")) {
        /* The hip backend runs the generated families only (gen/), which
         * check their own configurations; FNUZ is what gfx942 computes in,
         * OCP what gfx950 does, so both pass here. */
        return gt_problem_check(p, err, errlen);
    }
    FAIL("unknown backend '%s'", backend);
}

size_t gt_caps_filter(const char *backend, struct gt_log_result *res, gt_caps_refusal *out,
                      size_t max)
{
    size_t kept = 0, removed = 0;
    for (size_t i = 0; i < res->nproblems; i++) {
        char why[256];
        if (gt_caps_check(backend, &res->problems[i], why, sizeof why) == 0) {
            res->problems[kept++] = res->problems[i];
            continue;
        }
        if (removed < max) {
            gt_caps_refusal *r = &out[removed];
            gt_problem_label(&res->problems[i], r->label, sizeof r->label);
            r->calls = res->problems[i].call_count;
            snprintf(r->reason, sizeof r->reason, "%s", why);
        }
        removed++;
    }
    res->nproblems = kept;
    return removed;
}
