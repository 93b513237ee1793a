/* test_log_lines.c: the per-format line parsers (gt_log_line_*): decoded
 * fields of hand-written lines, every error class with the field it names,
 * lines that carry no GEMM, a matmul entry with a comma missing (a bad line,
 * not another API call), fp8 encodings and scale modes, and a mutation loop
 * that feeds truncated and damaged real lines to every parser (memory safety
 * under ASan). The whole-log driver is tested in test_log.c. */
#include "gt_log.h"
#include "gt_test.h"
#include "gt_util.h"

#include <stdlib.h>
#include <string.h>

static const char k_hip[] =
    "- {function: matmul, M: 16, N: 32, K: 64, lda: 16, ldb: 64, ldc: 16, ldd: 16, stride_a: 0, "
    "stride_b: 0, stride_c: 0, stride_d: 0, alpha: 1.0, beta: 0.0, transA: N, transB: N, "
    "batch_count: 1, scaleA: 0, scaleB: 0, scaleAlpha_vector: false, gradient: false, use_e: "
    "false, bias_vector: false, bias_source: d, a_type: f16_r, b_type: f16_r, c_type: f16_r, "
    "d_type: f16_r, scale_type: f32_r, bias_type: f32_r, compute_type: c_f32_r, "
    "activation_type: none, flush: false, rotating: 0, cold_iters: 0, iters: 0, call_count: 1}";

static const char k_trace_pre[] = "[2026-11-22 10:36:51][cublasLt][460][Trace][cublasLtSSSMatmul] ";

static char *load(const char *name, size_t *len)
{
    char *t = gt_read_file(gt_test_data(name), len, 0);
    CHECK_MSG(t != NULL, "cannot read %s", name);
    return t;
}

/* k_hip with one "from" replaced by "to". */
static void hip_with(char *out, size_t cap, const char *from, const char *to)
{
    const char *at = strstr(k_hip, from);
    if (!at) {
        snprintf(out, cap, "%s", k_hip);
        CHECK_MSG(0, "test bug: '%s' not in the template", from);
        return;
    }
    snprintf(out, cap, "%.*s%s%s", (int)(at - k_hip), k_hip, to, at + strlen(from));
}

typedef int (*line_fn)(const char *, gt_problem *, gt_log_error *);

typedef struct {
    const char *line, *field, *msg;
} bad_case;

/* Each line (after prefix) must be refused naming field, msg in the text. */
static void expect_bad(line_fn fn, const char *prefix, const bad_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char buf[2048];
        gt_problem p;
        gt_log_error e;
        snprintf(buf, sizeof buf, "%s%s", prefix, c[i].line);
        memset(&e, 0, sizeof e);
        CHECK_MSG(fn(buf, &p, &e) == -1, "accepted %s", c[i].line);
        CHECK_MSG(!strcmp(e.field, c[i].field), "%s: field '%s'", c[i].line, e.field);
        CHECK_MSG(strstr(e.msg, c[i].msg) != NULL, "%s: msg '%s'", c[i].line, e.msg);
    }
}

static void test_hipblaslt_fields(void)
{
    gt_problem p;
    gt_log_error e;
    memset(&e, 0, sizeof e);
    CHECK(gt_log_line_hipblaslt(k_hip, &p, &e) == 1);
    CHECK(p.m == 16 && p.n == 32 && p.k == 64 && p.a_type == GT_DT_F16 && p.call_count == 1);
    char buf[2048];
    hip_with(buf, sizeof buf, "bias_vector: false", "bias_vector: true");
    CHECK(gt_log_line_hipblaslt(buf, &p, &e) == 1);
    CHECK(p.bias == 1 && p.bias_type == GT_DT_F32);
    hip_with(buf, sizeof buf, "activation_type: none", "activation_type: gelu");
    CHECK(gt_log_line_hipblaslt(buf, &p, &e) == 1 && !strcmp(p.activation, "gelu"));
    hip_with(buf, sizeof buf, "batch_count: 1", "batch_count: 4");
    CHECK(gt_log_line_hipblaslt(buf, &p, &e) == 1);
    /* Strides printed as 0 are kept: stride_d 0 is then refused by the
     * problem check, A/B broadcast (0) are legal. */
    CHECK(p.batch == 4 && p.stride_a == 0 && p.stride_d == 0);
    /* Minimal entry: tight defaults for everything left out. */
    const char *min = "- {function: matmul, M: 8, N: 4, K: 2, transA: t, batch_count: 3}";
    CHECK(gt_log_line_hipblaslt(min, &p, &e) == 1);
    CHECK(p.trans_a == 'T' && p.lda == 2 && p.ldb == 2 && p.ldc == 8 && p.ldd == 8);
    CHECK(p.stride_a == 16 && p.stride_b == 8 && p.stride_d == 32 && p.call_count == 1);
    CHECK(p.a_type == GT_DT_F32 && p.compute_type == GT_DT_F32);
    /* Newer hipBLASLt fields are ignored; PyTorch's spacing is accepted. */
    CHECK(gt_log_line_hipblaslt("- { function: matmul, M: 1, N: 1, K: 1, new_knob: [1, 2], "
                                "other: {a: 1} }",
                                &p, &e) == 1);
    /* Batch 1 strides never split identical GEMMs. */
    hip_with(buf, sizeof buf, "stride_a: 0", "stride_a: 1024");
    CHECK(gt_log_line_hipblaslt(buf, &p, &e) == 1 && p.stride_a == 0);
    /* Not GEMMs. */
    CHECK(gt_log_line_hipblaslt("", &p, &e) == 0);
    CHECK(gt_log_line_hipblaslt("# comment", &p, &e) == 0);
    CHECK(gt_log_line_hipblaslt("hipBLASLt version: 100100", &p, &e) == 0);
    CHECK(gt_log_line_hipblaslt("- {function: matmul_preference, M: 1}", &p, &e) == 0);
    CHECK(gt_log_line_hipblaslt("- {function: other, M: 1", &p, &e) == 0);
}

/* One bad hipBLASLt line: expect -1, the field and a piece of the message. */
static void bad_hip(const char *from, const char *to, const char *field, const char *msg)
{
    char buf[2048];
    hip_with(buf, sizeof buf, from, to);
    gt_problem p;
    gt_log_error e;
    memset(&e, 0, sizeof e);
    int r = gt_log_line_hipblaslt(buf, &p, &e);
    char chk[GT_LOG_MSG_LEN] = "";
    if (r == 1 && gt_problem_check(&p, chk, sizeof chk)) {
        r = -1;
        snprintf(e.msg, sizeof e.msg, "%s", chk);
        snprintf(e.field, sizeof e.field, "%s", field); /* check_field is the driver's */
    }
    CHECK_MSG(r == -1, "%s -> %s accepted", from, to);
    CHECK_MSG(!strcmp(e.field, field), "%s: field '%s', want '%s'", to, e.field, field);
    CHECK_MSG(strstr(e.msg, msg) != NULL, "%s: msg '%s', want '%s'", to, e.msg, msg);
}

static void test_hipblaslt_errors(void)
{
    bad_hip("M: 16", "M: -5", "M", "M=-5: negative");
    bad_hip("M: 16", "M: 99999999999999999999", "M", "M=99999999999999999999: out of range");
    bad_hip("M: 16", "M: 2147483648", "M", "larger than 2^31-1");
    bad_hip("M: 16", "M: 16x", "M", "not an integer");
    bad_hip("M: 16,", "", "M", "M: missing");
    bad_hip("ldb: 64", "ldb: -1", "ldb", "negative");
    bad_hip("a_type: f16_r", "a_type: f17_r", "a_type", "a_type=f17_r: unknown data type");
    bad_hip("compute_type: c_f32_r", "compute_type: c_f32_fast_f16_r", "compute_type",
            "c_f32_fast_f16_r");
    bad_hip("bias_type: f32_r", "bias_type: nope", "bias_type", "bias_type=nope");
    bad_hip("transA: N", "transA: X", "transA", "transA=X: must be N or T");
    bad_hip("transB: N", "transB: C", "transB", "conjugate");
    bad_hip("flush: false", "flush: maybe", "flush", "true or false");
    bad_hip("activation_type: none", "activation_type: swish", "activation_type", "swish");
    bad_hip("bias_source: d", "bias_source: q", "bias_source", "a, b or d");
    bad_hip("alpha: 1.0", "alpha: 0x1p3", "alpha", "not a number");
    bad_hip("beta: 0.0", "beta: 1e999", "beta", "not a finite");
    bad_hip("call_count: 1", "call_count: 1e3", "call_count", "not an integer");
    bad_hip("rotating: 0", "rotating: -512", "rotating", "negative");
    bad_hip("M: 16", "M: 16, M: 17", "M", "given twice");
    bad_hip("iters: 0, call_count: 1}", "iters: 0, call_count: 1", "", "truncated line");
    bad_hip("call_count: 1}", "call_count: 1} trailing", "", "after the closing");
    bad_hip("function: matmul, ", "", "function", "function: missing");
    bad_hip("lda: 16", "lda: 1", "lda", "lda=1: smaller than M=16");
    bad_hip("scaleA: 0", "scaleA: 999", "scaleA", "larger than 255");
    /* Scaling modes no backend models, and scales on types that take none. */
    bad_hip("scaleA: 0", "scaleA: 2", "scaleA", "vector (per-row/per-column) scaling");
    bad_hip("scaleB: 0", "scaleB: 3", "scaleB", "block scaling");
    bad_hip("scaleA: 0", "scaleA: 7", "scaleA", "scaleA=7: unknown scaling mode");
    bad_hip("scaleB: 0", "scaleB: bf16_r", "scaleB", "only f32 per-tensor scales");
    bad_hip("scaleA: 0", "scaleA: 1", "scaleA", "fp8 operands only (a_type f16)");
    bad_hip("scaleB: 0", "scaleB: f32_r", "scaleB", "fp8 operands only (b_type f16)");
}

/* A matmul entry with a comma missing after "matmul" used to read as an
 * unknown API call ("matmul M: 16") and vanish without a word. */
static void test_hipblaslt_missing_comma(void)
{
    const bad_case bad[] = {
        {"- {function: matmul M: 16, N: 16, K: 16}", "function", "needs ',' after 'matmul'"},
        {"- {function: matmul M: 16, N: 16, K: 16", "function", "function=matmul M: 16"},
        {"  - { function: matmul\tM: 16, N: 16, K: 16 }", "function", "missing comma"},
        {"- {function: 'matmul' M: 16, N: 16, K: 16}", "", "unexpected 'M'"},
        {"- {function: matmul: 16, N: 16, K: 16}", "function", "function=matmul: 16"},
        /* Cut right after it: the reader's own error, still a bad line. */
        {"- {function: matmul M: 16", "", "truncated line"},
    };
    expect_bad(gt_log_line_hipblaslt, "", bad, sizeof bad / sizeof bad[0]);
    /* Other functions, even with a comma missing, stay other functions. */
    gt_problem p;
    gt_log_error e;
    memset(&e, 0, sizeof e);
    CHECK(gt_log_line_hipblaslt("- {function: matmul_preference M: 1, N: 1}", &p, &e) == 0);
    CHECK(gt_log_line_hipblaslt("- {function: matmulx M: 1, N: 1}", &p, &e) == 0);
    CHECK(gt_log_line_hipblaslt("- {function: other M: 1, N: 1", &p, &e) == 0);
}

/* fp8 a_type/b_type in k_hip's place, and scaleA/scaleB as given ("" to
 * leave them out). */
static int hip_fp8(const char *ta, const char *tb, const char *sa, const char *sb, gt_problem *p,
                   gt_log_error *e)
{
    char line[2048];
    snprintf(line, sizeof line,
             "- {function: matmul, M: 64, N: 16, K: 32, lda: 32, ldb: 32, ldc: 64, ldd: 64, "
             "transA: T, transB: N, batch_count: 1, %s%s%s%s%s%sa_type: %s, b_type: %s, "
             "c_type: bf16_r, d_type: bf16_r, scale_type: f32_r, compute_type: c_f32_r}",
             *sa ? "scaleA: " : "", sa, *sa ? ", " : "", *sb ? "scaleB: " : "", sb,
             *sb ? ", " : "", ta, tb);
    memset(e, 0, sizeof *e);
    return gt_log_line_hipblaslt(line, p, e);
}

static const char *key_of(const gt_problem *p)
{
    static char k[2][512];
    static int i;
    i ^= 1;
    gt_problem_key(p, k[i], sizeof k[i]);
    return k[i];
}

/* fp8 encodings: the names that say one keep it; f8_r/bf8_r read as OCP
 * here (the driver maps them by fp8_encoding: test_log.c). Scales: none
 * and per-tensor modelled, the fp8 default being per-tensor. */
static void test_fp8_and_scales(void)
{
    gt_problem p, q;
    gt_log_error e;
    CHECK(hip_fp8("f8_r", "bf8_r", "", "", &p, &e) == 1);
    CHECK(p.a_type == GT_DT_F8E4M3 && p.b_type == GT_DT_F8E5M2 && p.scale_a == GT_SCALE_AUTO);
    CHECK(hip_fp8("f8_fnuz_r", "bf8_fnuz_r", "", "", &q, &e) == 1);
    CHECK(q.a_type == GT_DT_F8E4M3FNUZ && q.b_type == GT_DT_F8E5M2FNUZ);
    CHECK(strcmp(key_of(&p), key_of(&q)) != 0);
    CHECK(strstr(key_of(&q), "t=f8e4m3fnuz/f8e5m2fnuz/bf16/bf16,") != NULL);
    /* Per-tensor scales on fp8 are its usual mode: same GEMM, same key as
     * libgemmtune's (which never sets a mode), whatever the spelling. */
    const char *scalar[] = {"1", "f32_r"};
    for (int i = 0; i < 2; i++) {
        CHECK(hip_fp8("f8_r", "bf8_r", scalar[i], scalar[i], &q, &e) == 1);
        CHECK(q.scale_a == GT_SCALE_SCALAR && q.scale_b == GT_SCALE_SCALAR);
        CHECK_MSG(!strcmp(key_of(&p), key_of(&q)), "%s vs %s", key_of(&p), key_of(&q));
    }
    /* No scale (hipBLASLt's scaleA: 0) is another GEMM for hipBLASLt. */
    CHECK(hip_fp8("f8_r", "bf8_r", "0", "1", &q, &e) == 1);
    CHECK(q.scale_a == GT_SCALE_NONE && q.scale_b == GT_SCALE_SCALAR);
    CHECK(strcmp(key_of(&p), key_of(&q)) != 0);
    CHECK(strstr(key_of(&q), ",scale=none/scalar") != NULL);
    CHECK(hip_fp8("f8_r", "f8_r", "2", "", &q, &e) == -1 && !strcmp(e.field, "scaleA"));
    /* Non-fp8 with scaleA: 0 (the sample logs): key without any scale. */
    CHECK(gt_log_line_hipblaslt(k_hip, &p, &e) == 1 && p.scale_a == GT_SCALE_NONE);
    CHECK(strstr(key_of(&p), "scale") == NULL);
    /* PyTorch's scaled GEMM signature on ROCm: FNUZ by name, f32 scales. */
    CHECK(gt_log_line_hipblaslt(
              "- { function: matmul, M: 16, N: 16, K: 32, lda: 32, ldb: 32, ldc: 16, ldd: 16, "
              "stride_a: 0, stride_b: 0, stride_c: 0, stride_d: 0, transA: T, transB: N, "
              "batch_count: 1, scaleA: f32_r, scaleB: f32_r, a_type: f8_fnuz_r, b_type: "
              "f8_fnuz_r, c_type: bf16_r, d_type: bf16_r, scale_type: f32_r, compute_type: "
              "f32_r }",
              &p, &e) == 1);
    CHECK(p.a_type == GT_DT_F8E4M3FNUZ && p.scale_a == GT_SCALE_SCALAR &&
          p.scale_b == GT_SCALE_SCALAR);
    /* Size lists: explicit names keep their encoding, fp8 reads as OCP. */
    CHECK(gt_log_line_csv("16,16,16,float8_e4m3fnuz", &p, &e) == 1 &&
          p.a_type == GT_DT_F8E4M3FNUZ);
    CHECK(gt_log_line_csv("16,16,16,fp8", &p, &e) == 1 && p.a_type == GT_DT_F8E4M3);
    CHECK(gt_log_line_yaml("- {M: 16, N: 16, K: 16, dtype: float8_e5m2fnuz}", &p, &e) == 1 &&
          p.a_type == GT_DT_F8E5M2FNUZ);
}

static void test_tunableop_variants(void)
{
    gt_problem p;
    gt_log_error e;
    memset(&e, 0, sizeof e);
    CHECK(gt_log_line_tunableop("GemmStridedBatchedTunableOp_float_NT,"
                                "nt_128_96_64_B_12_ld_128_96_128",
                                &p, &e) == 1);
    CHECK(p.m == 128 && p.n == 96 && p.k == 64 && p.batch == 12 && p.a_type == GT_DT_F32);
    CHECK(p.trans_a == 'N' && p.trans_b == 'T' && p.lda == 128 && p.ldb == 96);
    CHECK(p.stride_a == 128 * 64 && p.stride_b == 96 * 64 && p.stride_d == 128 * 96);
    /* Per-tensor scales (rw_0) are modelled; row-wise (rw_1) is refused
     * below. */
    CHECK(gt_log_line_tunableop("ScaledGemmTunableOp_Float8_e4m3fn_Float8_e5m2_BFloat16_TN,"
                                "tn_64_12288_2048_ld_2048_2048_64_rw_0_bias_Half",
                                &p, &e) == 1);
    CHECK(p.a_type == GT_DT_F8E4M3 && p.b_type == GT_DT_F8E5M2 && p.d_type == GT_DT_BF16);
    CHECK(p.bias && p.bias_type == GT_DT_F16 && p.m == 64 && p.ldc == 64);
    CHECK(p.scale_a == GT_SCALE_SCALAR && p.scale_b == GT_SCALE_SCALAR);
    /* FNUZ is its own type, never OCP's. */
    CHECK(gt_log_line_tunableop("ScaledGemmTunableOp_Float8_e4m3fnuz_Float8_e4m3fnuz_Half_NN,"
                                "nn_16_16_16_ld_16_16_16_rw_0_bias_None",
                                &p, &e) == 1 &&
          !p.bias && p.a_type == GT_DT_F8E4M3FNUZ && p.b_type == GT_DT_F8E4M3FNUZ);
    CHECK(gt_log_line_tunableop("ScaledGemmTunableOp_Float8_e5m2fnuz_Float8_e4m3fnuz_Half_NN,"
                                "nn_16_16_16_ld_16_16_16_rw_0_bias_None",
                                &p, &e) == 1 &&
          p.a_type == GT_DT_F8E5M2FNUZ && p.b_type == GT_DT_F8E4M3FNUZ);
    CHECK(gt_log_line_tunableop("GemmAndBiasTunableOp_Half_TN,tn_768_1024_768_ld_768_768_768",
                                &p, &e) == 1);
    CHECK(p.bias && p.bias_type == GT_DT_F16 && p.a_type == GT_DT_F16);
    /* Tuned results: extra columns ignored. */
    CHECK(gt_log_line_tunableop("GemmTunableOp_double_NN,nn_8_8_8_ld_8_8_8,Gemm_Rocblas_1,0.01",
                                &p, &e) == 1 &&
          p.a_type == GT_DT_F64 && p.compute_type == GT_DT_F64);
    /* Older PyTorch: no leading dimensions. */
    CHECK(gt_log_line_tunableop("GemmTunableOp_Half_TN,tn_64_32_16", &p, &e) == 1);
    CHECK(p.lda == 16 && p.ldb == 16 && p.ldc == 64);
    CHECK(gt_log_line_tunableop("Validator,PT_VERSION,2.5.0", &p, &e) == 0);
    CHECK(gt_log_line_tunableop("  ", &p, &e) == 0);

    bad_case bad[] = {
        {"GemmTunableOp_BFloat16_TN,nt_6144_1_4096_ld_4096_4096_6144", "trans", "tn_"},
        {"GemmTunableOp_c10::complex<float>_NN,nn_1_1_1", "dtype", "complex"},
        {"GemmTunableOp_Int4_NN,nn_1_1_1", "dtype", "Int4"},
        {"GemmTunableOp_Half_XN,nn_1_1_1", "op", "_NN"},
        {"GroupedGemmTunableOp_Half_NN,nn_1_1_1", "op", "unsupported"},
        {"not-a-native-row", "", "no ','"},
        {"GemmTunableOp_Half_NN,nn_-1_1_1", "M", "negative"},
        {"GemmTunableOp_Half_NN,nn_1_1_1_ld_1_1", "ldc", "missing"},
        {"GemmTunableOp_Half_NN,nn_1_1_1_ld_1_1_1_x", "", "unexpected text"},
        {"GemmStridedBatchedTunableOp_Half_NN,nn_1_1_1_ld_1_1_1", "batch", "_B_"},
        {"ScaledGemmTunableOp_Half_NN,nn_1_1_1", "dtype", "Half"},
        {"ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_Half_NN,nn_1_1_1_ld_1_1_1", "",
         "rw"},
        {"ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_Half_NN,"
         "nn_1_1_1_ld_1_1_1_rw_2_bias_None",
         "rw", "larger than 1"},
        {"ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_Half_NN,"
         "nn_1_1_1_ld_1_1_1_rw_0_bias_Quux",
         "bias_type", "Quux"},
        {"ScaledGemmTunableOp_Float8_e4m3fn_Float8_e5m2_BFloat16_TN,"
         "tn_64_12288_2048_ld_2048_2048_64_rw_1_bias_Half",
         "rw", "rw=1: row-wise scaling"},
    };
    expect_bad(gt_log_line_tunableop, "", bad, sizeof bad / sizeof bad[0]);
}

static int trace(const char *body, gt_problem *p, gt_log_error *e)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%s%s", k_trace_pre, body);
    memset(e, 0, sizeof *e);
    return gt_log_line_cublaslt(buf, p, e);
}

#define DESCS_NN                                                                                   \
    "Adesc=[type=R_32F rows=64 cols=32 ld=64] Bdesc=[type=R_32F rows=32 cols=16 ld=32] "          \
    "Cdesc=[type=R_32F rows=64 cols=16 ld=64] Ddesc=[type=R_32F rows=64 cols=16 ld=64] "
/* fp8 e4m3 x e5m2 TN (A stored k x m), bf16 out. */
#define DESCS_F8                                                                                   \
    "Adesc=[type=R_8F_E4M3 rows=32 cols=64 ld=32] Bdesc=[type=R_8F_E5M2 rows=32 cols=16 ld=32] "  \
    "Cdesc=[type=R_16BF rows=64 cols=16 ld=64] Ddesc=[type=R_16BF rows=64 cols=16 ld=64] "


static void test_cublaslt_variants(void)
{
    gt_problem p;
    gt_log_error e;
    CHECK(trace(DESCS_NN "computeDesc=[computeType=COMPUTE_32F_FAST_TF32 scaleType=R_32F "
                         "epilogue=EPILOGUE_RELU_BIAS] alpha=2 beta=1",
                &p, &e) == 1);
    CHECK(p.m == 64 && p.n == 16 && p.k == 32 && p.trans_a == 'N' && p.trans_b == 'N');
    CHECK(p.compute_type == GT_DT_TF32 && p.alpha == 2.0 && p.beta == 1.0);
    CHECK(p.bias && p.bias_type == GT_DT_F32 && !strcmp(p.activation, "relu"));
    CHECK(trace(DESCS_NN "computeDesc=[computeType=COMPUTE_32F epilogue=EPILOGUE_GELU]", &p,
                &e) == 1 &&
          !p.bias && !strcmp(p.activation, "gelu"));
    /* OP_C on a real type is a transpose; B transposed: rows=n cols=k. */
    CHECK(trace("Adesc=[type=R_16F rows=32 cols=64 ld=40] Bdesc=[type=R_16F rows=16 cols=32 "
                "ld=16] Cdesc=[type=R_16F rows=64 cols=16 ld=64] Ddesc=[type=R_16F rows=64 "
                "cols=16 ld=64] computeDesc=[computeType=COMPUTE_32F transa=OP_C transb=OP_T]",
                &p, &e) == 1);
    CHECK(p.trans_a == 'T' && p.trans_b == 'T' && p.m == 64 && p.k == 32 && p.lda == 40);
    /* Strided batch. */
    CHECK(trace("Adesc=[type=R_16BF rows=8 cols=4 ld=8 batchCount=3 strideBatch=32] "
                "Bdesc=[type=R_16BF rows=4 cols=2 ld=4 batchCount=3 strideBatch=8] "
                "Cdesc=[type=R_16BF rows=8 cols=2 ld=8 batchCount=3 strideBatch=16] "
                "Ddesc=[type=R_16BF rows=8 cols=2 ld=8 batchCount=3 strideBatch=16 "
                "order=ORDER_COL] computeDesc=[computeType=COMPUTE_32F]",
                &p, &e) == 1);
    CHECK(p.batch == 3 && p.stride_a == 32 && p.stride_b == 8 && p.stride_d == 16);
    /* A matmul Trace line without descriptors is broken, not "no GEMM". */
    CHECK(trace("", &p, &e) == -1 && !strcmp(e.field, "Adesc"));
    /* Not GEMMs. */
    const char *other[] = {
        "[2026-11-22 10:36:51][cublasLt][460][Api][cublasLtTSTMatmul] A=0X1 Adesc=0X2",
        ("[2026-11-22 10:36:51][cublasLt][460][Trace][cublasLtTSTMatmulAlgoGetHeuristic] "
         "Adesc=[type=R_16BF rows=1 cols=1 ld=1]"),
        "[2026-11-22 10:36:51][cublasLt][460][Api][cublasLtCtxInit] ctx=0X41AC1830",
        "random text",
        "[unterminated",
    };
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        memset(&e, 0, sizeof e);
        CHECK_MSG(gt_log_line_cublaslt(other[i], &p, &e) == 0, "%s", other[i]);
    }
    /* fp8 with scale pointers: per-tensor scales, the key of fp8 without. */
    gt_problem q;
    CHECK(trace(DESCS_F8 "computeDesc=[computeType=COMPUTE_32F scaleType=R_32F transa=OP_T "
                         "aScalePointer=0x7ef80a005800 bScalePointer=0x7ef80a005880]",
                &p, &e) == 1);
    CHECK(p.a_type == GT_DT_F8E4M3 && p.b_type == GT_DT_F8E5M2);
    CHECK(p.scale_a == GT_SCALE_SCALAR && p.scale_b == GT_SCALE_SCALAR);
    CHECK(trace(DESCS_F8 "computeDesc=[computeType=COMPUTE_32F transa=OP_T aScaleMode=SCALAR_32F "
                         "aScalePointer=0x0]",
                &q, &e) == 1);
    CHECK(q.scale_a == GT_SCALE_AUTO && q.scale_b == GT_SCALE_AUTO);
    char k1[512], k2[512];
    gt_problem_key(&p, k1, sizeof k1);
    gt_problem_key(&q, k2, sizeof k2);
    CHECK_MSG(!strcmp(k1, k2), "%s vs %s", k1, k2);
    /* A null pointer on a non-fp8 type is no scale. */
    CHECK(trace(DESCS_NN "computeDesc=[computeType=COMPUTE_32F aScalePointer=0X0]", &p, &e) == 1);
    bad_case bad[] = {
        {DESCS_F8 "computeDesc=[computeType=COMPUTE_32F transa=OP_T aScalePointer=0x7e00 "
                  "bScalePointer=0x7f00 aScaleMode=VEC32_UE8M0 bScaleMode=VEC32_UE8M0]",
         "aScaleMode", "aScaleMode=VEC32_UE8M0: only one f32 scale per tensor"},
        {DESCS_F8 "computeDesc=[computeType=COMPUTE_32F transa=OP_T bScaleMode=OUTER_VEC_32F]",
         "bScaleMode", "OUTER_VEC_32F"},
        {DESCS_NN "computeDesc=[computeType=COMPUTE_32F aScalePointer=0x7e00]", "aScalePointer",
         "fp8 operands only (Adesc.type f32)"},
        {DESCS_NN "computeDesc=[computeType=COMPUTE_32F bScalePointer=0x7e00]", "bScalePointer",
         "fp8 operands only (Bdesc.type f32)"},
        {DESCS_NN "computeDesc=[computeType=COMPUTE_32F epilogue=EPILOGUE_DGELU]", "epilogue",
         "EPILOGUE_DGELU"},
        {DESCS_NN "computeDesc=[computeType=COMPUTE_32F_FAST_16BF]", "computeType",
         "COMPUTE_32F_FAST_16BF"},
        {DESCS_NN "computeDesc=[transa=OP_X]", "transa", "OP_X"},
        {"Adesc=[type=R_32F rows=64 cols=32 ld=64 order=ORDER_ROW] Bdesc=[type=R_32F rows=32 "
         "cols=16] Ddesc=[type=R_32F rows=64 cols=16] computeDesc=[]",
         "Adesc.order", "ORDER_ROW"},
        {"Adesc=[type=R_32F rows=64 cols=32] Bdesc=[type=R_32F rows=31 cols=16] "
         "Ddesc=[type=R_32F rows=64 cols=16] computeDesc=[]",
         "Bdesc.rows", "does not match K=32"},
        {"Adesc=[type=R_32F rows=64 cols=32] Bdesc=[type=R_32F rows=32 cols=16] "
         "Ddesc=[type=R_32F rows=63 cols=16] computeDesc=[]",
         "Ddesc.rows", "does not match M=64"},
        {"Adesc=[type=R_32F rows=64 cols=32] Bdesc=[type=R_32F rows=32 cols=16] "
         "Cdesc=[type=R_32F rows=64 cols=15] Ddesc=[type=R_32F rows=64 cols=16] computeDesc=[]",
         "Cdesc.cols", "does not match N=16"},
        {"Adesc=[type=R_32F rows=64 cols=32 batchCount=2] Bdesc=[type=R_32F rows=32 cols=16] "
         "Ddesc=[type=R_32F rows=64 cols=16] computeDesc=[]",
         "Bdesc.batchCount", "batchCount=1"},
        {"Adesc=[type=R_4F_E2M1 rows=64 cols=32] Bdesc=[type=R_32F rows=32 cols=16] "
         "Ddesc=[type=R_32F rows=64 cols=16] computeDesc=[]",
         "Adesc.type", "R_4F_E2M1"},
        {"Adesc=[type=R_32F rows=-64 cols=32]", "Adesc.rows", "negative"},
        {"Adesc=[type=R_32F cols=32] Bdesc=[]", "Adesc.rows", "missing"},
        {"Adesc=[type=R_32F rows=64 cols=32 Bdesc=[type=R_32F]", "", "truncated"},
        {"Adesc=0X7FFE39CFEC40 Bdesc=0X7FFE39CFEC80", "Adesc", "not expanded"},
        {"Bdesc=[type=R_32F rows=32 cols=16] Ddesc=[type=R_32F rows=64 cols=16]", "Adesc",
         "missing"},
        {DESCS_NN "computeDesc=[] beta=0X7F00", "beta", "not a number"},
    };
    expect_bad(gt_log_line_cublaslt, k_trace_pre, bad, sizeof bad / sizeof bad[0]);
}

static void test_csv_lines(void)
{
    gt_problem q;
    gt_log_error e;
    memset(&e, 0, sizeof e);
    CHECK(gt_log_line_csv("m,n,k", &q, &e) == 0 && gt_log_line_csv(" # x", &q, &e) == 0);
    CHECK(gt_log_line_csv("", &q, &e) == 0);
    CHECK(gt_log_line_csv("4,2,8,int8,T,T,3,7", &q, &e) == 1);
    CHECK(q.a_type == GT_DT_I8 && q.d_type == GT_DT_I32 && q.compute_type == GT_DT_I32);
    CHECK(q.trans_a == 'T' && q.lda == 8 && q.ldb == 2 && q.batch == 3 && q.call_count == 7);
    CHECK(q.stride_a == 32 && q.stride_b == 16 && q.stride_c == 8 && q.stride_d == 8);
    CHECK(gt_log_line_csv("4,2,8,tf32", &q, &e) == 1);
    CHECK(q.a_type == GT_DT_F32 && q.compute_type == GT_DT_TF32 && q.scale_type == GT_DT_F32);
    bad_case bad[] = {
        {"16,32", "", "at least M,N,K"},
        {"16,,64", "N", "missing"},
        {"16,32,64,f99", "dtype", "f99"},
        {"16,32,64,f32,X", "transA", "must be N or T"},
        {"16,32,64,f32,N,N,1,1,extra", "", "too many columns"},
        {"16,32,64,f32,N,N,-2", "batch", "negative"},
        {"-16,32,64", "M", "negative"},
    };
    expect_bad(gt_log_line_csv, "", bad, sizeof bad / sizeof bad[0]);
}

static void test_yaml_lines(void)
{
    gt_problem q;
    gt_log_error e;
    bad_case bad[] = {
        {"- {M: 16, N: 16}", "K", "K: missing"},
        {"- {M: 16, N: 16, K: 16, rowMajorA: T, transA: N}", "transA", "contradicts"},
        {"- {M: 16, N: 16, K: 16, dtype: fp4}", "dtype", "fp4"},
        {"- {M: 16, N: 16, K: 16", "", "truncated"},
        {"- M: 16", "", "unsupported YAML"},
        {"- {'M: 16, N: 16, K: 16}", "", "truncated"},
        {"- {M: 1, M: 1, N: 1, K: 1}", "M", "twice"},
    };
    expect_bad(gt_log_line_yaml, "", bad, sizeof bad / sizeof bad[0]);
    CHECK(gt_log_line_yaml("...", &q, &e) == 0 && gt_log_line_yaml("  # x", &q, &e) == 0);
}


/* Feeds every parser truncations and byte mutations of real lines: the
 * result does not matter, only that nothing reads out of bounds (ASan) and
 * that a GEMM, when returned, has a consistent error-free state. */
static void test_mutations(void)
{
    const char *files[] = {"hipblaslt_llama3_8b.log", "tunableop_untuned_llama3_8b.csv",
                           "cublaslt_llama3_8b.log"};
    line_fn fns[] = {
        gt_log_line_hipblaslt, gt_log_line_tunableop, gt_log_line_cublaslt, gt_log_line_csv,
        gt_log_line_yaml};
    const char specials[] = "[]{}:,'\"_= -#0123456789NTn";
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    long calls = 0;
    for (int fi = 0; fi < 3; fi++) {
        size_t len;
        char *t = load(files[fi], &len);
        if (!t)
            continue;
        char line[4096];
        for (size_t pos = 0; pos < len;) {
            const char *nl = memchr(t + pos, '\n', len - pos);
            size_t n = nl ? (size_t)(nl - (t + pos)) : len - pos;
            if (n >= sizeof line)
                n = sizeof line - 1;
            for (int round = 0; round < 40; round++) {
                memcpy(line, t + pos, n);
                size_t m = n;
                if (round < 20) {
                    m = n * (size_t)round / 20; /* truncation */
                } else {
                    for (int k = 0; k < 3 && n; k++) {
                        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
                        line[(rng >> 33) % n] = specials[(rng >> 17) % (sizeof specials - 1)];
                    }
                }
                line[m] = '\0';
                for (size_t f = 0; f < 5; f++) {
                    gt_problem p;
                    gt_log_error e;
                    memset(&e, 0, sizeof e);
                    int r = fns[f](line, &p, &e);
                    calls++;
                    if (r < 0 && !e.msg[0])
                        CHECK_MSG(0, "parser %zu: error without a message: %s", f, line);
                    if (r > 1 || r < -1)
                        CHECK_MSG(0, "parser %zu returned %d", f, r);
                }
            }
            pos += (nl ? (size_t)(nl - (t + pos)) : len - pos) + 1;
        }
        free(t);
    }
    CHECK(calls > 10000);
}

int main(void)
{
    RUN(test_hipblaslt_fields);
    RUN(test_hipblaslt_errors);
    RUN(test_hipblaslt_missing_comma);
    RUN(test_fp8_and_scales);
    RUN(test_tunableop_variants);
    RUN(test_cublaslt_variants);
    RUN(test_csv_lines);
    RUN(test_yaml_lines);
    RUN(test_mutations);
    return gt_test_done();
}
