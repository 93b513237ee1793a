/* test_log.c: the workload log driver (gt_log_parse, gt_log_detect): the
 * three real sample logs with exact counts and decoded fields, CSV and YAML
 * lists, the bad-line fixtures, binary input, empty and undetectable logs,
 * the error cap, skip_invalid, merging, weights, the threshold, format
 * override, line endings and max_lines; a matmul entry with a comma missing,
 * fp8_encoding and what it changes (and does not). The per-format line parsers have
 * their own tests in test_log_lines.c. */
#include "gt_log.h"
#include "gt_test.h"
#include "gt_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *load(const char *name, size_t *len)
{
    char *t = gt_read_file(gt_test_data(name), len, 0);
    CHECK_MSG(t != NULL, "cannot read %s", name);
    return t;
}

static int parse(const char *text, gt_log_format f, int skip, gt_log_result *res)
{
    gt_log_opts o = {.format = f, .skip_invalid = skip};
    return gt_log_parse(text, strlen(text), &o, res);
}

static const gt_problem *find_mnk(const gt_log_result *r, int64_t m, int64_t n, int64_t k)
{
    for (size_t i = 0; i < r->nproblems; i++)
        if (r->problems[i].m == m && r->problems[i].n == n && r->problems[i].k == k)
            return &r->problems[i];
    return NULL;
}

static void check_weights(const gt_log_result *r)
{
    double sum = 0;
    for (size_t i = 0; i < r->nproblems; i++) {
        sum += r->problems[i].weight;
        if (i)
            CHECK(r->problems[i - 1].weight >= r->problems[i].weight);
    }
    CHECK_MSG(fabs(sum - 1.0) < 1e-9, "weights sum to %.12f", sum);
}

static void test_format_names(void)
{
    const char *names[] = {"auto", "hipblaslt", "tunableop", "cublaslt", "csv", "yaml"};
    for (int i = 0; i < 6; i++) {
        gt_log_format f;
        CHECK(gt_log_format_parse(names[i], &f) == 0);
        CHECK(!strcmp(gt_log_format_name(f), names[i]));
    }
    gt_log_format f;
    CHECK(gt_log_format_parse("HipBLASLt", &f) == 0 && f == GT_LOG_HIPBLASLT);
    CHECK(gt_log_format_parse("json", &f) == -1);
    CHECK(gt_log_format_parse(NULL, &f) == -1);
}

static void test_detect(void)
{
    const char *files[] = {"hipblaslt_llama3_8b.log", "tunableop_untuned_llama3_8b.csv",
                           "cublaslt_llama3_8b.log"};
    gt_log_format want[] = {GT_LOG_HIPBLASLT, GT_LOG_TUNABLEOP, GT_LOG_CUBLASLT};
    for (int i = 0; i < 3; i++) {
        size_t len;
        char *t = load(files[i], &len);
        CHECK_MSG(t && gt_log_detect(t, len) == want[i], "%s", files[i]);
        free(t);
    }
    struct {
        const char *text;
        gt_log_format f;
    } cases[] = {
        {"# sizes\n\nM,N,K\n16,16,16\n", GT_LOG_CSV},
        {"  128 , 64,32,bf16\n", GT_LOG_CSV},
        {"---\n# tune_gemm\n- {'M': 16, 'N': 16, 'K': 16}\n", GT_LOG_YAML},
        {"- {N: 1, M: 2, K: 3}\n", GT_LOG_YAML},
        {"- { function: matmul, M: 1}\n", GT_LOG_HIPBLASLT},
        {"Validator,PT_VERSION,2.5.0\n", GT_LOG_TUNABLEOP},
        {"ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_BFloat16_TN,tn_1_2_3\n",
         GT_LOG_TUNABLEOP},
        {"[2024-05-22 07:22:32][cublasLt][65020][Api][cublasLtCreate] lightHandle=0X7F\n",
         GT_LOG_CUBLASLT},
        {"hello world\nfoo,bar\n", GT_LOG_AUTO},
        {"", GT_LOG_AUTO},
        {"\n\n# only comments\n", GT_LOG_AUTO},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_MSG(gt_log_detect(cases[i].text, strlen(cases[i].text)) == cases[i].f, "case %zu",
                  i);
    CHECK(gt_log_detect(NULL, 0) == GT_LOG_AUTO);
}

static void test_hipblaslt_sample(void)
{
    size_t len;
    char *t = load("hipblaslt_llama3_8b.log", &len);
    if (!t)
        return;
    gt_log_result r;
    CHECK(gt_log_parse(t, len, NULL, &r) == 0);
    CHECK(r.format == GT_LOG_HIPBLASLT);
    CHECK(r.lines == 22 && r.gemm_lines == 22 && r.nproblems == 22);
    CHECK(r.nerrors == 0 && r.dropped == 0);
    CHECK_MSG(r.total_calls == 524258, "total_calls %lld", (long long)r.total_calls);
    check_weights(&r);
    /* Heaviest: the MLP up projection at prefill, 41.8% of the flops. */
    const gt_problem *h = &r.problems[0];
    CHECK(h->m == 28672 && h->n == 4096 && h->k == 4096 && h->call_count == 1024);
    CHECK(fabs(h->weight - 0.4178985767) < 1e-6);
    /* Line 1. */
    const gt_problem *p = find_mnk(&r, 16032, 109, 16384);
    CHECK(p != NULL);
    if (p) {
        CHECK(p->lda == 16384 && p->ldb == 16384 && p->ldc == 16032 && p->ldd == 16032);
        CHECK(p->trans_a == 'T' && p->trans_b == 'N' && p->batch == 1);
        CHECK(p->a_type == GT_DT_BF16 && p->b_type == GT_DT_BF16 && p->c_type == GT_DT_BF16 &&
              p->d_type == GT_DT_BF16);
        CHECK(p->compute_type == GT_DT_F32 && p->scale_type == GT_DT_F32);
        CHECK(p->rotating_mb == 512 && p->call_count == 1);
        CHECK(p->alpha == 1.0 && p->beta == 0.0 && !p->bias && !strcmp(p->activation, "none"));
        CHECK(p->flops == 2.0 * 16032 * 109 * 16384);
    }
    p = find_mnk(&r, 6144, 1, 4096);
    CHECK(p && p->call_count == 102400 && p->lda == 4096 && p->ldc == 6144);
    gt_log_result_free(&r);
    CHECK(r.problems == NULL && r.nproblems == 0);
    gt_log_result_free(&r); /* twice is harmless */

    /* Threshold 0.9 keeps the 7 heaviest (cumulative 0.9129). */
    gt_log_opts o = {.threshold = 0.9};
    CHECK(gt_log_parse(t, len, &o, &r) == 0);
    CHECK(r.nproblems == 7 && r.dropped == 15);
    CHECK(r.total_calls == 524258); /* totals are before the threshold */
    gt_log_result_free(&r);
    o.threshold = 1.0;
    CHECK(gt_log_parse(t, len, &o, &r) == 0 && r.nproblems == 22 && r.dropped == 0);
    gt_log_result_free(&r);
    free(t);
}

static void test_tunableop_sample(void)
{
    size_t len;
    char *t = load("tunableop_untuned_llama3_8b.csv", &len);
    if (!t)
        return;
    gt_log_result r;
    CHECK(gt_log_parse(t, len, NULL, &r) == 0);
    CHECK(r.format == GT_LOG_TUNABLEOP);
    CHECK(r.lines == 25 && r.gemm_lines == 25 && r.nproblems == 25 && r.total_calls == 25);
    check_weights(&r);
    const gt_problem *p = find_mnk(&r, 6144, 512, 4096);
    CHECK(p != NULL);
    if (p) {
        CHECK(p->trans_a == 'T' && p->trans_b == 'N' && p->lda == 4096 && p->ldb == 4096);
        CHECK(p->ldc == 6144 && p->ldd == 6144 && p->batch == 1 && p->call_count == 1);
        CHECK(p->a_type == GT_DT_BF16 && p->d_type == GT_DT_BF16 &&
              p->compute_type == GT_DT_F32);
    }
    CHECK(r.problems[0].m == 128256 && r.problems[0].n == 4096); /* heaviest */
    gt_log_result_free(&r);
    free(t);
}

static void test_cublaslt_sample(void)
{
    size_t len;
    char *t = load("cublaslt_llama3_8b.log", &len);
    if (!t)
        return;
    gt_log_result r;
    CHECK(gt_log_parse(t, len, NULL, &r) == 0);
    CHECK(r.format == GT_LOG_CUBLASLT && r.lines == 104 && r.nerrors == 0);
    /* 25 Trace Matmul lines, one call each, all different shapes. */
    CHECK(r.gemm_lines == 25 && r.nproblems == 25 && r.total_calls == 25);
    check_weights(&r);
    /* Adesc rows=4096 cols=6144 with transa=OP_T: m=6144, k=4096. */
    const gt_problem *p = find_mnk(&r, 6144, 512, 4096);
    CHECK(p != NULL);
    if (p) {
        CHECK(p->trans_a == 'T' && p->trans_b == 'N' && p->lda == 4096 && p->ldb == 4096);
        CHECK(p->ldc == 6144 && p->ldd == 6144 && p->a_type == GT_DT_BF16);
        CHECK(p->compute_type == GT_DT_F32 && p->scale_type == GT_DT_F32);
        CHECK(p->alpha == 1.0 && p->beta == 0.0 && !p->bias && p->call_count == 1);
    }
    CHECK(find_mnk(&r, 4096, 1, 14336) != NULL);
    CHECK(find_mnk(&r, 128256, 4096, 4096) == &r.problems[0]);
    gt_log_result_free(&r);

    /* Each Trace line is a call: the same log twice doubles the counts. */
    char *two = malloc(2 * len);
    if (two) {
        memcpy(two, t, len);
        memcpy(two + len, t, len);
        CHECK(gt_log_parse(two, 2 * len, NULL, &r) == 0);
        CHECK(r.nproblems == 25 && r.total_calls == 50 && r.problems[0].call_count == 2);
        gt_log_result_free(&r);
        free(two);
    }
    free(t);
}

static void test_csv(void)
{
    const char *text = "# llama sizes\n"
                       "M, N, K, dtype, transA, transB, batch, count\n"
                       "\n"
                       "16,32,64\n"
                       " 16 , 32 , 64 ,f32, n, N ,1, 4   # same GEMM, 4 more calls\n"
                       "128,8,256,bf16,T,N\n"
                       "8,8,8,,,T,2,\n";
    gt_log_result r;
    CHECK(parse(text, GT_LOG_AUTO, 0, &r) == 0);
    CHECK(r.format == GT_LOG_CSV && r.lines == 7 && r.gemm_lines == 4 && r.nproblems == 3);
    const gt_problem *p = find_mnk(&r, 16, 32, 64);
    CHECK(p && p->call_count == 5 && p->a_type == GT_DT_F32 && p->trans_a == 'N');
    CHECK(p && p->lda == 16 && p->ldb == 64 && p->ldc == 16);
    p = find_mnk(&r, 128, 8, 256);
    CHECK(p && p->a_type == GT_DT_BF16 && p->trans_a == 'T' && p->lda == 256 &&
          p->compute_type == GT_DT_F32);
    p = find_mnk(&r, 8, 8, 8);
    CHECK(p && p->batch == 2 && p->trans_b == 'T' && p->stride_a == 64 && p->call_count == 1);
    check_weights(&r);
    gt_log_result_free(&r);
}

static void test_yaml(void)
{
    const char *text =
        "---\n"
        "# written by tune_gemm.py\n"
        "- {'M': 16, 'N': 32, 'K': 64, 'rowMajorA': 'T', 'rowMajorB': 'N', 'BLOCK_SIZE_M': 16, "
        "'num_warps': 4} # TFLOPS: 0.01 time(us): 3.2\n"
        "- {M: 256, N: 256, K: 256, dtype: bf16, transA: N, transB: T, count: 3}\n"
        "- {\"M\": 8, \"N\": 8, \"K\": 8, \"dtype_a\": \"fp8\", \"dtype_c\": \"fp32\", "
        "\"batch\": 2}\n";
    gt_log_result r;
    CHECK(parse(text, GT_LOG_AUTO, 0, &r) == 0);
    CHECK(r.format == GT_LOG_YAML && r.nproblems == 3 && r.nerrors == 0);
    const gt_problem *p = find_mnk(&r, 16, 32, 64);
    CHECK(p && p->trans_a == 'T' && p->trans_b == 'N' && p->lda == 64 && p->ldb == 64);
    CHECK(p && p->a_type == GT_DT_F16); /* tune_gemm's default */
    p = find_mnk(&r, 256, 256, 256);
    CHECK(p && p->a_type == GT_DT_BF16 && p->trans_b == 'T' && p->call_count == 3);
    p = find_mnk(&r, 8, 8, 8);
    CHECK(p && p->a_type == GT_DT_F8E4M3 && p->d_type == GT_DT_F32 && p->batch == 2);
    gt_log_result_free(&r);
}

/* The bad_hipblaslt.log fixture: one error class per line. */
static void test_bad_file(void)
{
    size_t len;
    char *t = load("bad_hipblaslt.log", &len);
    if (!t)
        return;
    gt_log_result r;
    CHECK(gt_log_parse(t, len, NULL, &r) == -1); /* bad lines reject the log */
    struct {
        int line;
        const char *field, *msg;
    } want[] = {
        {3, "M", "M=-5: negative"},
        {4, "M", "out of range"},
        {5, "lda", "lda=1: smaller than K=16384"},
        {6, "a_type", "a_type=bf17_r: unknown data type"},
        {7, "transA", "transA=X"},
        {8, "", "truncated line"},
        {10, "M", "larger than 2^31-1"},
        {11, "activation_type", "swish"},
    };
    CHECK(r.nerrors == 8);
    for (size_t i = 0; i < 8 && i < r.nerrors; i++) {
        CHECK_MSG(r.errors[i].line == want[i].line, "error %zu on line %d", i, r.errors[i].line);
        CHECK_MSG(!strcmp(r.errors[i].field, want[i].field), "line %d field '%s'", want[i].line,
                  r.errors[i].field);
        CHECK_MSG(strstr(r.errors[i].msg, want[i].msg) != NULL, "line %d msg '%s'",
                  want[i].line, r.errors[i].msg);
    }
    gt_log_result_free(&r);
    /* skip_invalid: accepted, the skipped lines still listed, lines 2 and
     * 12 merged (1 + 3 calls). */
    gt_log_opts o = {.skip_invalid = 1};
    CHECK(gt_log_parse(t, len, &o, &r) == 0);
    CHECK(r.nerrors == 8 && r.nproblems == 2 && r.gemm_lines == 3 && r.total_calls == 5);
    const gt_problem *p = find_mnk(&r, 16032, 109, 16384);
    CHECK(p && p->call_count == 4);
    check_weights(&r);
    gt_log_result_free(&r);
    free(t);
}

/* A matmul entry with a comma missing after "matmul" is a bad line with its
 * number and field, whole-log: rejected, or skipped and listed. It used to
 * read as another API call and vanish, the log accepted without it. */
static void test_missing_comma(void)
{
    const char *text =
        "- {function: matmul, M: 16, N: 16, K: 16}\n"
        "- {function: matmul M: 16, N: 16, K: 16}\n"
        "- {function: matmul M: 16, N: 16, K: 16\n"
        "- {function: matmul_preference, M: 1}\n";
    gt_log_result r;
    CHECK(parse(text, GT_LOG_AUTO, 0, &r) == -1);
    CHECK(r.format == GT_LOG_HIPBLASLT && r.nerrors == 2);
    for (size_t i = 0; i < 2 && i < r.nerrors; i++) {
        CHECK_MSG(r.errors[i].line == (int)i + 2, "error %zu on line %d", i, r.errors[i].line);
        CHECK(!strcmp(r.errors[i].field, "function"));
        CHECK_MSG(strstr(r.errors[i].msg, "function=matmul M: 16") != NULL, "%s",
                  r.errors[i].msg);
    }
    gt_log_result_free(&r);
    CHECK(parse(text, GT_LOG_AUTO, 1, &r) == 0);
    CHECK(r.nerrors == 2 && r.nproblems == 1 && r.gemm_lines == 1 && r.errors[1].line == 3);
    gt_log_result_free(&r);
}

/* The key of problem i of r, in one of two static buffers. */
static const char *key_at(const gt_log_result *r, size_t i)
{
    static char k[2][512];
    static int n;
    n ^= 1;
    gt_problem_key(&r->problems[i], k[n], sizeof k[n]);
    return k[n];
}

static const gt_problem *find_types(const gt_log_result *r, int64_t m, gt_dtype a, gt_dtype b)
{
    for (size_t i = 0; i < r->nproblems; i++)
        if (r->problems[i].m == m && r->problems[i].a_type == a && r->problems[i].b_type == b)
            return &r->problems[i];
    return NULL;
}

/* hipblaslt_fp8.log: f8_r/bf8_r lines (no encoding said), f8_fnuz_r lines
 * (hipBLASLt's and PyTorch's signature), and an f8_r line without scales.
 * OCP and FNUZ never merge; fp8_encoding=fnuz reads f8_r as FNUZ, so the
 * first line joins the f8_fnuz_r GEMM; scaleA: 1 is fp8's usual mode, 0
 * another GEMM. */
static void test_fp8_encoding(void)
{
    gt_log_fp8 enc;
    CHECK(gt_log_fp8_parse("ocp", &enc) == 0 && enc == GT_LOG_FP8_OCP);
    CHECK(gt_log_fp8_parse("FNUZ", &enc) == 0 && enc == GT_LOG_FP8_FNUZ);
    CHECK(gt_log_fp8_parse("e4m3", &enc) == -1 && gt_log_fp8_parse(NULL, &enc) == -1);
    CHECK(!strcmp(gt_log_fp8_name(GT_LOG_FP8_OCP), "ocp"));
    CHECK(!strcmp(gt_log_fp8_name(GT_LOG_FP8_FNUZ), "fnuz"));

    size_t len;
    char *t = load("hipblaslt_fp8.log", &len);
    if (!t)
        return;
    const gt_dtype E4 = GT_DT_F8E4M3, E5 = GT_DT_F8E5M2, Z4 = GT_DT_F8E4M3FNUZ,
                   Z5 = GT_DT_F8E5M2FNUZ;
    gt_log_result r;
    CHECK(gt_log_parse(t, len, NULL, &r) == 0); /* default: OCP */
    CHECK_MSG(r.nproblems == 4 && r.nerrors == 0 && r.total_calls == 166, "%zu problems",
              r.nproblems);
    const gt_problem *p = find_types(&r, 4096, Z4, Z4);
    CHECK(p && p->call_count == 51 && gt_problem_scale(p, 'a') == GT_SCALE_SCALAR);
    CHECK(find_types(&r, 14336, E4, E5) != NULL);
    int scaled = 0, unscaled = 0;
    for (size_t i = 0; i < r.nproblems; i++) {
        const gt_problem *q = &r.problems[i];
        if (q->m != 4096 || q->a_type != E4)
            continue;
        if (q->scale_a == GT_SCALE_NONE)
            unscaled += q->call_count == 5 && strstr(key_at(&r, i), ",scale=none/none") != NULL;
        else
            scaled += q->call_count == 100 && strstr(key_at(&r, i), "scale") == NULL;
    }
    CHECK(scaled == 1 && unscaled == 1);
    gt_log_result_free(&r);

    gt_log_opts o = {.fp8_encoding = GT_LOG_FP8_FNUZ};
    CHECK(gt_log_parse(t, len, &o, &r) == 0);
    CHECK_MSG(r.nproblems == 3 && r.total_calls == 166, "%zu problems", r.nproblems);
    for (size_t i = 0; i < r.nproblems; i++)
        CHECK(r.problems[i].a_type == Z4);
    p = find_types(&r, 14336, Z4, Z5);
    CHECK(p && p->call_count == 10);
    CHECK(r.problems[0].m == 4096 && r.problems[0].call_count == 151);
    gt_log_result_free(&r);
    free(t);

    /* Size lists: fp8/bf8 follow the option, names that say it do not. */
    const char *csv = "16,16,16,fp8\n16,16,16,float8_e4m3fn\n32,32,32,bf8\n";
    o.format = GT_LOG_CSV;
    CHECK(gt_log_parse(csv, strlen(csv), &o, &r) == 0 && r.nproblems == 3);
    CHECK(find_types(&r, 16, Z4, Z4) && find_types(&r, 16, E4, E4) && find_types(&r, 32, Z5, Z5));
    gt_log_result_free(&r);
    /* TunableOp names the encoding: the option changes nothing. */
    const char *tun = "ScaledGemmTunableOp_Float8_e4m3fn_Float8_e4m3fn_Half_TN,"
                      "tn_16_16_16_ld_16_16_16_rw_0_bias_None\n";
    o.format = GT_LOG_AUTO;
    CHECK(gt_log_parse(tun, strlen(tun), &o, &r) == 0 && r.nproblems == 1 &&
          r.problems[0].a_type == E4);
    gt_log_result_free(&r);
    /* Not a value of the enum: the whole log is refused, nothing read. */
    o.fp8_encoding = (gt_log_fp8)7;
    CHECK(gt_log_parse(tun, strlen(tun), &o, &r) == -1);
    CHECK(r.nerrors == 1 && r.errors[0].line == 0 && !strcmp(r.errors[0].field, "fp8_encoding"));
    gt_log_result_free(&r);
}

static void test_binary(void)
{
    size_t len;
    char *t = load("bad_binary.log", &len);
    if (!t)
        return;
    gt_log_result r;
    CHECK(gt_log_parse(t, len, NULL, &r) == -1);
    CHECK(r.nerrors == 2 && r.lines == 4);
    CHECK(r.errors[0].line == 2 && strstr(r.errors[0].msg, "binary data") &&
          strstr(r.errors[0].msg, "0x00"));
    CHECK(r.errors[1].line == 3 && strstr(r.errors[1].msg, "binary data") &&
          strstr(r.errors[1].msg, "0xff"));
    gt_log_result_free(&r);
    gt_log_opts o = {.skip_invalid = 1};
    CHECK(gt_log_parse(t, len, &o, &r) == 0 && r.nproblems == 2 && r.nerrors == 2);
    gt_log_result_free(&r);
    free(t);

    /* Control characters, overlong and surrogate UTF-8 are binary; real
     * UTF-8 and tabs are text. */
    const char *cases[] = {"16,16,16\x01\n", "16,16,16 # \xc0\xaf\n", "16,16,16 # \xed\xa0\x80\n",
                           "16,16,16 # \xe2\x82\n", "16,16,16\x7f\n", "16,\r16,16\n"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_MSG(parse(cases[i], GT_LOG_CSV, 0, &r) == -1, "case %zu accepted", i);
        CHECK_MSG(r.nerrors >= 1 && strstr(r.errors[0].msg, "binary data"), "case %zu", i);
        gt_log_result_free(&r);
    }
    CHECK(parse("16,16,16\t# d\xc3\xa9j\xc3\xa0 vu \xf0\x9f\x98\x80\n", GT_LOG_CSV, 0, &r) == 0);
    gt_log_result_free(&r);
}

static void test_empty_and_undetectable(void)
{
    gt_log_result r;
    CHECK(gt_log_parse("", 0, NULL, &r) == -1);
    CHECK(r.nerrors == 1 && r.errors[0].line == 0 && strstr(r.errors[0].msg, "empty"));
    gt_log_result_free(&r);
    CHECK(gt_log_parse(NULL, 0, NULL, &r) == -1 && r.nerrors == 1);
    gt_log_result_free(&r);
    CHECK(parse("\n   \n# nothing\n", GT_LOG_AUTO, 0, &r) == -1 && strstr(r.errors[0].msg, "empty"));
    gt_log_result_free(&r);
    CHECK(parse("this is not a GEMM log\nat all\n", GT_LOG_AUTO, 0, &r) == -1);
    CHECK(r.nerrors == 1 && r.errors[0].line == 0);
    CHECK(strstr(r.errors[0].msg, "hipblaslt") && strstr(r.errors[0].msg, "tunableop") &&
          strstr(r.errors[0].msg, "cublaslt") && strstr(r.errors[0].msg, "csv") &&
          strstr(r.errors[0].msg, "yaml"));
    gt_log_result_free(&r);
    /* A cuBLASLt log without any matmul call: detected, but no GEMM. */
    CHECK(parse("[2026-11-22 10:36:51][cublasLt][460][Api][cublasLtCtxInit] ctx=0X41\n",
                GT_LOG_AUTO, 1, &r) == -1);
    CHECK(r.format == GT_LOG_CUBLASLT && r.nerrors == 1 &&
          !strcmp(r.errors[0].msg, "no GEMM found in the log (format cublaslt)"));
    gt_log_result_free(&r);
}

static void test_error_cap(void)
{
    gt_str s;
    gt_str_init(&s);
    for (int i = 0; i < 120; i++)
        gt_str_printf(&s, "16,16,-%d\n", i + 1);
    gt_str_printf(&s, "16,16,16\n");
    CHECK(!s.oom);
    gt_log_result r;
    /* "16,16,-1" does not look like CSV to detection: name the format. */
    gt_log_opts o = {.format = GT_LOG_CSV};
    CHECK(gt_log_parse(s.s, s.len, &o, &r) == -1);
    CHECK(r.nerrors == 120 && r.errors[GT_LOG_MAX_ERRORS - 1].line == GT_LOG_MAX_ERRORS);
    gt_log_result_free(&r);
    o.skip_invalid = 1;
    CHECK(gt_log_parse(s.s, s.len, &o, &r) == 0);
    CHECK(r.nerrors == 120 && r.nproblems == 1 && r.errors[0].line == 1 &&
          !strcmp(r.errors[0].field, "K"));
    gt_log_result_free(&r);
    /* With every line bad the rejection reason survives the cap. */
    s.len -= strlen("16,16,16\n");
    CHECK(gt_log_parse(s.s, s.len, &o, &r) == -1);
    CHECK(r.nerrors == 121 && r.errors[GT_LOG_MAX_ERRORS - 1].line == 0);
    CHECK(strstr(r.errors[GT_LOG_MAX_ERRORS - 1].msg, "no valid GEMM"));
    gt_log_result_free(&r);
    gt_str_free(&s);
}

static void test_merge_and_threshold(void)
{
    /* The same GEMM spelled three ways: defaults equal to explicit values,
     * batch-1 strides and the rotating size are not part of its identity. */
    const char *text =
        "- {function: matmul, M: 16, N: 32, K: 64, transA: N, call_count: 2, rotating: 0}\n"
        "- {function: matmul, M: 16, N: 32, K: 64, lda: 16, rotating: 512, call_count: 3}\n"
        "- {function: matmul, M: 16, N: 32, K: 64, stride_a: 99, a_type: f32_r}\n";
    gt_log_result r;
    CHECK(parse(text, GT_LOG_AUTO, 0, &r) == 0);
    CHECK(r.nproblems == 1 && r.problems[0].call_count == 6 && r.total_calls == 6);
    CHECK(r.gemm_lines == 3 && r.problems[0].weight == 1.0);
    gt_log_result_free(&r);

    /* flops*calls 900 : 90 : 9 (m=n=k scaled). */
    const char *csv = "10,10,9,f32,N,N,1,50\n"  /* 2*900*50 = 90000 */
                      "10,9,1,f32,N,N,1,50\n"   /* 9000 */
                      "3,3,1,f32,N,N,1,50\n";   /* 900 */
    gt_log_opts o = {.threshold = 0.95};
    CHECK(gt_log_parse(csv, strlen(csv), &o, &r) == 0);
    CHECK(r.nproblems == 2 && r.dropped == 1 && r.problems[0].k == 9);
    CHECK(fabs(r.total_flops - 99900.0) < 1e-6);
    CHECK(fabs(r.problems[0].weight - 90000.0 / 99900.0) < 1e-12);
    gt_log_result_free(&r);
    o.threshold = 0.5;
    CHECK(gt_log_parse(csv, strlen(csv), &o, &r) == 0 && r.nproblems == 1 && r.dropped == 2);
    gt_log_result_free(&r);
    o.threshold = 0;
    CHECK(gt_log_parse(csv, strlen(csv), &o, &r) == 0 && r.nproblems == 3 && r.dropped == 0);
    check_weights(&r);
    gt_log_result_free(&r);
}

static void test_format_override(void)
{
    size_t len;
    char *t = load("hipblaslt_llama3_8b.log", &len);
    if (!t)
        return;
    gt_log_result r;
    gt_log_opts o = {.format = GT_LOG_HIPBLASLT};
    CHECK(gt_log_parse(t, len, &o, &r) == 0 && r.nproblems == 22);
    gt_log_result_free(&r);
    o.format = GT_LOG_CSV; /* forced wrong: every line is a bad CSV row */
    CHECK(gt_log_parse(t, len, &o, &r) == -1);
    CHECK(r.format == GT_LOG_CSV && r.nerrors == 23 && r.errors[0].line == 1);
    gt_log_result_free(&r);
    o.format = GT_LOG_CUBLASLT; /* no Trace line: nothing at all */
    CHECK(gt_log_parse(t, len, &o, &r) == -1 && r.nerrors == 1 && r.errors[0].line == 0);
    gt_log_result_free(&r);
    free(t);
    /* YAML lines forced as hipBLASLt: "function: missing". */
    CHECK(parse("- {M: 1, N: 1, K: 1}\n", GT_LOG_HIPBLASLT, 0, &r) == -1);
    CHECK(!strcmp(r.errors[0].field, "function"));
    gt_log_result_free(&r);
    CHECK(parse("1,2,3\n", (gt_log_format)42, 0, &r) == -1 && r.nerrors == 1);
    gt_log_result_free(&r);
}

static void test_line_endings(void)
{
    size_t len;
    char *t = load("hipblaslt_llama3_8b.log", &len);
    if (!t)
        return;
    char *crlf = malloc(2 * len + 4);
    size_t n = 0;
    for (size_t i = 0; crlf && i < len; i++) {
        if (t[i] == '\n')
            crlf[n++] = '\r';
        crlf[n++] = t[i];
    }
    gt_log_result a, b;
    CHECK(gt_log_parse(t, len, NULL, &a) == 0);
    if (crlf) {
        CHECK(gt_log_parse(crlf, n, NULL, &b) == 0);
        CHECK(b.nproblems == a.nproblems && b.lines == 22 && b.total_calls == a.total_calls);
        gt_log_result_free(&b);
        /* Last line without its newline (and with a BOM in front). */
        memmove(crlf + 3, crlf, n - 2);
        memcpy(crlf, "\xef\xbb\xbf", 3);
        CHECK(gt_log_parse(crlf, n + 1, NULL, &b) == 0);
        CHECK(b.nproblems == 22 && b.lines == 22 && b.total_calls == a.total_calls);
        gt_log_result_free(&b);
    }
    gt_log_result_free(&a);
    free(crlf);
    free(t);
    CHECK(parse("16,16,16", GT_LOG_AUTO, 0, &a) == 0 && a.lines == 1 && a.nproblems == 1);
    gt_log_result_free(&a);
}

static void test_max_lines(void)
{
    const char *csv = "1,1,1\n2,2,2\n3,3,3\n4,4,4\n";
    gt_log_opts o = {.max_lines = 2};
    gt_log_result r;
    CHECK(gt_log_parse(csv, strlen(csv), &o, &r) == -1);
    CHECK(r.lines == 2 && r.nerrors == 1 && r.errors[0].line == 3);
    gt_log_result_free(&r);
    o.skip_invalid = 1;
    CHECK(gt_log_parse(csv, strlen(csv), &o, &r) == 0 && r.nproblems == 2);
    gt_log_result_free(&r);
    o.max_lines = 4;
    o.skip_invalid = 0;
    CHECK(gt_log_parse(csv, strlen(csv), &o, &r) == 0 && r.nproblems == 4 && r.nerrors == 0);
    gt_log_result_free(&r);
}

int main(void)
{
    RUN(test_format_names);
    RUN(test_detect);
    RUN(test_hipblaslt_sample);
    RUN(test_tunableop_sample);
    RUN(test_cublaslt_sample);
    RUN(test_csv);
    RUN(test_yaml);
    RUN(test_bad_file);
    RUN(test_missing_comma);
    RUN(test_fp8_encoding);
    RUN(test_binary);
    RUN(test_empty_and_undetectable);
    RUN(test_error_cap);
    RUN(test_merge_and_threshold);
    RUN(test_format_override);
    RUN(test_line_endings);
    RUN(test_max_lines);
    return gt_test_done();
}
