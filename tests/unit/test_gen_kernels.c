/* test_gen_kernels.c: the generated "gemv" family without a GPU: config
 * encoding (canonical text and hash, strict parsing, families), the fault
 * configs, applicability and every pruning rule with its reason, the
 * family's space for the Llama decode shapes, the launch geometry, the
 * k-permutation that feeds mma.sync fragments straight from 16-byte loads
 * (emulated on the host with the PTX fragment layout), NVRTC compiles of
 * every generated config through the thread pool and both caches (CUDA
 * builds), the chained-launch instructions in the PTX of every pipe, and hipRTC compiles of every config of the HIP port for gfx90a
 * (and gfx942 when the compiler knows it) where hipRTC is installed; without
 * it the skip is asserted with its reason. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gt_config.h"
#include "gen_test_util.h"
#include "gt_problem.h"
#include "gt_test.h"
#include "gt_util.h"

#if defined(GT_WITH_CUDA) || defined(GT_WITH_HIP)
#include "gen_gemv.h"
#endif
#ifdef GT_WITH_CUDA
#include "gen_cuda.h"
#include "gt_backend.h"
#endif
#ifdef GT_WITH_HIP
#include "gen_hip.h"
#endif

#if defined(GT_WITH_CUDA) || defined(GT_WITH_HIP)


static const gt_gen_cfg k_cfg = {.rows_per_cta = 32, .warps = 4, .kwarps = 2, .vec = 8,
                                 .k_unroll = 4, .splitk = 1, .reduction = GT_GEN_RED_NONE,
                                 .n_tile = 16, .a_load = GT_GEN_LD_NA256, .pipe = GT_GEN_PIPE_ASYNC};

static void test_family(void)
{
    const struct {
        const char *json;
        int fam;
    } cases[] = {
        {"{\"algo_id\":1}", GT_FAM_CUBLASLT},
        {"{\"family\":\"cublaslt\",\"algo_id\":1}", GT_FAM_CUBLASLT},
        {"{\"family\":\"gemv\"}", GT_FAM_GEMV},
        {"{\"family\":\"fault\",\"kind\":\"oob\"}", GT_FAM_FAULT},
        {"{\"family\":\"mma\"}", GT_FAM_MMA},
        {"{\"family\":\"cutlass\",\"kernel\":\"pp_128x128_c1x1\"}", GT_FAM_CUTLASS},
        {"{\"family\":\"triton\"}", GT_FAM_UNKNOWN},
        {"{\"family\":3}", GT_FAM_UNKNOWN},
        {"[1]", GT_FAM_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *j = cJSON_Parse(cases[i].json);
        CHECK_MSG(gt_gen_family(j) == cases[i].fam, "%s", cases[i].json);
        cJSON_Delete(j);
    }
}

static void test_encoding(void)
{
    char err[256], text[512];
    gt_gen_cfg back;
    cJSON *j = gt_gen_cfg_to_json(&k_cfg);
    CHECK(j != NULL);
    gt_gen_cfg_text(&k_cfg, text, sizeof text);
    const char *want = "{\"a_load\":\"na256\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,"
                       "\"n_tile\":16,\"pipe\":\"async\",\"reduction\":\"none\",\"rows_per_cta\":32,"
                       "\"splitk\":1,\"vec\":8,\"warps\":4}";
    CHECK_MSG(strcmp(text, want) == 0, "%s", text);
    char *canon = gt_cfg_canonical(j);
    CHECK_MSG(canon && strcmp(canon, want) == 0, "gt_cfg_canonical: %s", canon ? canon : "(null)");
    free(canon);
    char h16[17]; /* pinned: a change here orphans stored gemv results */
    CHECK_MSG(gt_cfg_hash(j, h16) == 0 && strcmp(h16, "0000000000000000") != 0, "hash %s", h16);
    fprintf(stderr, "     gemv example hash %s\n", h16);
    CHECK(gt_gen_family(j) == GT_FAM_GEMV);
    CHECK_MSG(gt_gen_cfg_from_json(j, &back, err, sizeof err) == 0, "%s", err);
    CHECK(memcmp(&back, &k_cfg, sizeof back) == 0);
    cJSON_Delete(j);
    const char *bad[] = {
        "{\"family\":\"gemv\"}",
        "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"n_tile\":16,\"pipe\":\"reg\","
        "\"reduction\":\"none\",\"rows_per_cta\":32,\"splitk\":1,\"vec\":8}",                /* no warps */
        "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"n_tile\":16,\"pipe\":\"reg\","
        "\"reduction\":\"none\",\"rows_per_cta\":32,\"splitk\":1,\"vec\":6,\"warps\":4}",    /* vec 6 */
        "{\"a_load\":\"l3\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"n_tile\":16,\"pipe\":\"reg\","
        "\"reduction\":\"none\",\"rows_per_cta\":32,\"splitk\":1,\"vec\":8,\"warps\":4}",    /* a_load */
        "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"n_tile\":12,\"pipe\":\"reg\","
        "\"reduction\":\"none\",\"rows_per_cta\":32,\"splitk\":1,\"vec\":8,\"warps\":4}",    /* n_tile */
        "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":4.5,\"kwarps\":2,\"n_tile\":16,\"pipe\":\"reg\","
        "\"reduction\":\"none\",\"rows_per_cta\":32,\"splitk\":1,\"vec\":8,\"warps\":4}",    /* 4.5 */
        "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"n_tile\":16,\"pipe\":\"reg\","
        "\"reduction\":\"none\",\"rows_per_cta\":32,\"splitk\":1,\"vec\":8,\"warps\":4,\"x\":1}", /* key */
        "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"n_tile\":16,\"pipe\":\"tma\","
        "\"reduction\":\"none\",\"rows_per_cta\":32,\"splitk\":1,\"vec\":8,\"warps\":4}",    /* pipe */
    };
    /* lanes "warp": named in the JSON and the text (between kwarps and
     * n_tile), "quad" left out so stored quad configs keep their hashes */
    gt_gen_cfg w = k_cfg;
    w.lanes = GT_GEN_LANES_WARP, w.n_tile = 2, w.rows_per_cta = 4;
    j = gt_gen_cfg_to_json(&w);
    gt_gen_cfg_text(&w, text, sizeof text);
    CHECK_MSG(strstr(text, "\"kwarps\":2,\"lanes\":\"warp\",\"n_tile\":2,"), "%s", text);
    canon = gt_cfg_canonical(j);
    CHECK_MSG(canon && strcmp(canon, text) == 0, "gt_cfg_canonical: %s", canon ? canon : "(null)");
    free(canon);
    CHECK_MSG(gt_gen_cfg_from_json(j, &back, err, sizeof err) == 0, "%s", err);
    CHECK(memcmp(&back, &w, sizeof back) == 0);
    cJSON_Delete(j);
    const char *bad_lanes[] = {
        "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"lanes\":\"row\",\"n_tile\":2,"
        "\"pipe\":\"reg\",\"reduction\":\"none\",\"rows_per_cta\":4,\"splitk\":1,\"vec\":8,\"warps\":4}",
        "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"lanes\":\"warp\",\"n_tile\":3,"
        "\"pipe\":\"reg\",\"reduction\":\"none\",\"rows_per_cta\":4,\"splitk\":1,\"vec\":8,\"warps\":4}",
        "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"lanes\":\"warp\",\"n_tile\":16,"
        "\"pipe\":\"reg\",\"reduction\":\"none\",\"rows_per_cta\":4,\"splitk\":1,\"vec\":8,\"warps\":4}",
        "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"n_tile\":2,"
        "\"pipe\":\"reg\",\"reduction\":\"none\",\"rows_per_cta\":4,\"splitk\":1,\"vec\":8,\"warps\":4}",
    };
    for (size_t i = 0; i < sizeof bad_lanes / sizeof bad_lanes[0]; i++) {
        j = cJSON_Parse(bad_lanes[i]);
        err[0] = 0;
        CHECK_MSG(j && gt_gen_cfg_from_json(j, &back, err, sizeof err) == -1 && strstr(err, i ? "n_tile" : "lanes"),
                  "accepted: %s (%s)", bad_lanes[i], err);
        cJSON_Delete(j);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j = cJSON_Parse(bad[i]);
        err[0] = 0;
        CHECK_MSG(j && gt_gen_cfg_from_json(j, &back, err, sizeof err) == -1 && !strncmp(err, "gemv: ", 6),
                  "accepted: %s", bad[i]);
        cJSON_Delete(j);
    }
}

static void test_fault_cfg(void)
{
    char err[256];
    int kind = 0;
    cJSON *j = cJSON_Parse("{\"family\":\"fault\",\"kind\":\"oob\"}");
    CHECK(gt_gen_fault_from_json(j, &kind, err, sizeof err) == 0 && kind == GT_FAULT_OOB);
    cJSON_Delete(j);
    j = cJSON_Parse("{\"kind\":\"hang\",\"family\":\"fault\"}");
    CHECK(gt_gen_fault_from_json(j, &kind, err, sizeof err) == 0 && kind == GT_FAULT_HANG);
    cJSON_Delete(j);
    const char *bad[] = {"{\"family\":\"fault\",\"kind\":\"nan\"}", "{\"family\":\"fault\"}",
                         "{\"family\":\"fault\",\"kind\":\"oob\",\"x\":1}"};
    for (size_t i = 0; i < 3; i++) {
        j = cJSON_Parse(bad[i]);
        CHECK_MSG(gt_gen_fault_from_json(j, &kind, err, sizeof err) == -1, "%s", bad[i]);
        cJSON_Delete(j);
    }
}

static void expect_na(gt_problem p, int sm, const char *needle)
{
    char why[GT_GEN_REASON] = "";
    gt_gen_dev d;
    gt_gen_dev_default(&d, sm, 132);
    gt_problem_finish(&p);
    CHECK_MSG(gt_gen_applicable(&p, &d, why, sizeof why) == -1 && strstr(why, needle), "want '%s', got '%s'",
              needle, why);
}

static void test_applicable(void)
{
    char why[GT_GEN_REASON];
    gt_gen_dev d;
    gt_gen_dev_default(&d, 90, 132);
    gt_problem p = gen_test_prob(4096, 1, 4096, GT_DT_BF16, GT_DT_BF16);
    CHECK(gt_gen_applicable(&p, &d, why, sizeof why) == 0);
    p = gen_test_prob(4096, 32, 4096, GT_DT_F16, GT_DT_F32);
    CHECK(gt_gen_applicable(&p, &d, why, sizeof why) == 0);
    expect_na(gen_test_prob(4096, 1, 4096, GT_DT_BF16, GT_DT_BF16), 75, "sm_75");
    p = gen_test_prob(4096, 1, 4096, GT_DT_BF16, GT_DT_BF16);
    p.trans_a = 'N';
    gt_problem_default_ld(&p);
    expect_na(p, 90, "transA=N");
    p = gen_test_prob(4096, 1, 4096, GT_DT_BF16, GT_DT_BF16);
    p.trans_b = 'T';
    gt_problem_default_ld(&p);
    expect_na(p, 90, "transB=T");
    expect_na(gen_test_prob(4096, 64, 4096, GT_DT_BF16, GT_DT_BF16), 90, "n=64");
    expect_na(gen_test_prob(4096, 1, 4096, GT_DT_F32, GT_DT_F32), 90, "A/B types");
    p = gen_test_prob(4096, 1, 4096, GT_DT_F16, GT_DT_F16);
    p.compute_type = p.scale_type = GT_DT_F16;
    expect_na(p, 90, "compute f16");
    p = gen_test_prob(4096, 1, 4096, GT_DT_BF16, GT_DT_BF16);
    snprintf(p.activation, sizeof p.activation, "silu");
    expect_na(p, 90, "activation silu");
}

static void expect_pruned(gt_problem p, gt_gen_cfg c, int hip, const char *needle)
{
    char why[GT_GEN_REASON] = "";
    gt_gen_dev d;
    if (hip)
        gt_gen_dev_hip(&d, 104);
    else
        gt_gen_dev_default(&d, 90, 132);
    gt_problem_finish(&p);
    CHECK_MSG(gt_gen_check(&p, &d, &c, why, sizeof why) == 1 && strstr(why, needle), "want '%s', got '%s'",
              needle, why);
}

static void test_rules(void)
{
    char why[GT_GEN_REASON];
    gt_gen_dev d;
    gt_gen_dev_default(&d, 90, 132);
    gt_problem p = gen_test_prob(4096, 16, 4096, GT_DT_BF16, GT_DT_BF16);
    CHECK_MSG(gt_gen_check(&p, &d, &k_cfg, why, sizeof why) == 0, "%s", why);
    gt_gen_cfg c = k_cfg;
    c.kwarps = 3;
    expect_pruned(p, c, 0, "shape: kwarps=3");
    c = k_cfg, c.rows_per_cta = 128;
    expect_pruned(p, c, 0, "rows per warp");
    c = k_cfg, c.reduction = GT_GEN_RED_ATOMIC;
    expect_pruned(p, c, 0, "reduction=atomic with splitk=1");
    c = k_cfg, c.warps = 32, c.kwarps = 16, c.rows_per_cta = 32, c.pipe = GT_GEN_PIPE_REG;
    expect_pruned(p, c, 1, "threads");
    c = k_cfg, c.n_tile = 8;
    expect_pruned(p, c, 0, "n_tile=8 < n=16");
    c = k_cfg, c.n_tile = 24;
    expect_pruned(p, c, 0, "idle columns");
    gt_problem q = gen_test_prob(4096, 16, 4100, GT_DT_BF16, GT_DT_BF16); /* lda = 4100: 8-byte aligned rows */
    expect_pruned(q, k_cfg, 0, "alignment: lda=4100");
    c = k_cfg, c.vec = 4, c.k_unroll = 8;
    gt_problem_finish(&q);
    CHECK_MSG(gt_gen_check(&q, &d, &c, why, sizeof why) == 0, "vec=4 on lda 4100: %s", why);
    expect_pruned(p, c, 0, "vec=4: 16-byte loads");
    expect_pruned(gen_test_prob(16, 16, 4096, GT_DT_BF16, GT_DT_BF16), (gt_gen_cfg){.rows_per_cta = 64, .warps = 2,
                  .kwarps = 1, .vec = 8, .k_unroll = 2, .splitk = 1, .n_tile = 16}, 0, "rows_per_cta=64");
    /* 256 CTAs of 2 warps leave most of the 132 x 32 resident slots empty:
     * split-K may fill them; 8192 CTAs fill them already */
    c = k_cfg, c.splitk = 8, c.reduction = GT_GEN_RED_ATOMIC, c.rows_per_cta = 16, c.warps = 2;
    CHECK_MSG(gt_gen_check(&p, &d, &c, why, sizeof why) == 0 || !strstr(why, "split-K"), "%s", why);
    expect_pruned(gen_test_prob(131072, 16, 4096, GT_DT_BF16, GT_DT_BF16), c, 0,
                  "split-K: 8192 CTAs without it already fill the 132 SMs x");
    /* lanes "warp" */
    gt_gen_cfg w = k_cfg;
    w.lanes = GT_GEN_LANES_WARP, w.n_tile = 1, w.rows_per_cta = 4, w.pipe = GT_GEN_PIPE_REG;
    gt_problem p1 = gen_test_prob(4096, 1, 4096, GT_DT_BF16, GT_DT_BF16);
    gt_problem_finish(&p1);
    CHECK_MSG(gt_gen_check(&p1, &d, &w, why, sizeof why) == 0, "%s", why);
    expect_pruned(p, w, 0, "lanes=warp: n=16 > 8");
    c = w, c.n_tile = 2;
    expect_pruned(p1, c, 0, "smallest power of two >= n=1");
    c = w, c.rows_per_cta = 32;
    expect_pruned(p1, c, 0, "is not 1, 2, 4 or 8 (lanes=warp)");
    c = w, c.splitk = 8, c.reduction = GT_GEN_RED_ATOMIC;
    expect_pruned(gen_test_prob(256, 1, 4096, GT_DT_BF16, GT_DT_BF16), c, 0, "k_unroll x 32 lanes x vec");
    c = k_cfg, c.splitk = 16, c.reduction = GT_GEN_RED_TWOPASS, c.rows_per_cta = 64, c.warps = 4;
    c.kwarps = 2;
    expect_pruned(gen_test_prob(4096, 16, 296, GT_DT_BF16, GT_DT_BF16), c, 0, "leaves empty splits");
    c = k_cfg, c.splitk = 4, c.reduction = GT_GEN_RED_ATOMIC, c.rows_per_cta = 128, c.warps = 8,
    c.kwarps = 2, c.k_unroll = 8;
    expect_pruned(gen_test_prob(4096, 16, 1024, GT_DT_BF16, GT_DT_BF16), c, 0, "unrolled loop would never run");
    c = k_cfg, c.warps = 8, c.kwarps = 4, c.rows_per_cta = 64, c.k_unroll = 8;
    expect_pruned(p, c, 0, "resources: ");
    c = k_cfg, c.pipe = GT_GEN_PIPE_REG, c.k_unroll = 8, c.n_tile = 32, c.rows_per_cta = 64, c.warps = 2,
    c.kwarps = 1;
    expect_pruned(gen_test_prob(4096, 32, 4096, GT_DT_BF16, GT_DT_BF16), c, 0, "registers");
    c = k_cfg, c.k_unroll = 1, c.pipe = GT_GEN_PIPE_REG, c.warps = 1, c.kwarps = 1, c.rows_per_cta = 16;
    expect_pruned(p, c, 0, "in flight");
    /* dbuf: a second block per warp to load while the first computes; any target */
    c = k_cfg, c.pipe = GT_GEN_PIPE_DBUF;
    CHECK_MSG(gt_gen_check(&p, &d, &c, why, sizeof why) == 0, "%s", why);
    expect_pruned(gen_test_prob(4096, 16, 384, GT_DT_BF16, GT_DT_BF16), c, 0,
                  "pipe=dbuf: k per warp 192 < two unrolled steps of 128");
    c.rows_per_cta = 64, c.warps = 4, c.kwarps = 2, c.n_tile = 8, c.k_unroll = 2; /* HIP: 32 rows per wave64 */
    gt_gen_dev hd;
    gt_gen_dev_hip(&hd, 104);
    gt_problem h1 = gen_test_prob(4096, 1, 4096, GT_DT_BF16, GT_DT_BF16);
    gt_problem_finish(&h1);
    CHECK_MSG(gt_gen_check(&h1, &hd, &c, why, sizeof why) == 0, "dbuf on HIP: %s", why);
    c = k_cfg, c.k_unroll = 1;
    expect_pruned(p, c, 0, "one-stage ring");
    c = k_cfg, c.a_load = GT_GEN_LD_CS;
    expect_pruned(p, c, 0, "no evict-first form");
    expect_pruned(p, k_cfg, 1, "cp.async is CUDA");
}

/* Every config of the raw space is kept or pruned with a reason; the kept
 * ones pass every rule and are capped; the Llama decode shapes all get a
 * family. */
/* fp8 split-K configs the GPU section gives directly (test_f8_rules checks
 * that no rule prunes them for those problems on an H100) */
static const char *const f8_splits[] = {
    "{\"a_load\":\"cs\",\"family\":\"gemv\",\"k_unroll\":1,\"kwarps\":1,\"lanes\":\"warp\",\"n_tile\":8,"
    "\"pipe\":\"dbuf\",\"reduction\":\"atomic\",\"rows_per_cta\":8,\"splitk\":2,\"vec\":16,\"warps\":4}",
    "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"n_tile\":8,"
    "\"pipe\":\"reg\",\"reduction\":\"atomic\",\"rows_per_cta\":64,\"splitk\":4,\"vec\":16,\"warps\":4}",
    "{\"a_load\":\"na256\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"n_tile\":8,"
    "\"pipe\":\"async\",\"reduction\":\"twopass\",\"rows_per_cta\":64,\"splitk\":4,\"vec\":16,\"warps\":4}",
    NULL};

/* f8 "cvt" (fp8 decoded to f16 for the 16-bit mma, the family's kernel
 * before the raw-byte mma) for 4096 x 16 x 4096 and 14336 x 1 x 4096: the
 * GPU section validates them beside the enumerated (f8 "mma") configs */
static const char *const f8_cvt16[] = {
    "{\"a_load\":\"nc\",\"f8\":\"cvt\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"n_tile\":16,"
    "\"pipe\":\"dbuf\",\"reduction\":\"none\",\"rows_per_cta\":32,\"splitk\":1,\"vec\":16,\"warps\":4}",
    NULL};
static const char *const f8_cvt8[] = {
    "{\"a_load\":\"nc\",\"f8\":\"cvt\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"n_tile\":8,"
    "\"pipe\":\"reg\",\"reduction\":\"none\",\"rows_per_cta\":32,\"splitk\":1,\"vec\":16,\"warps\":4}",
    NULL};

/* fp8 inputs: applicable on CUDA sm_89+ only, OCP e4m3/e5m2 (not both
 * e5m2, no FNUZ, no fp8 x bf16 mix), per-tensor scales; vec counts one-byte
 * elements (16 = a 16-byte load, 8 only where 16 is misaligned, 4 never);
 * the raw space offers 16 and 8; the model sees half the bytes of bf16;
 * B's type reaches the template as GT_BB, and only for fp8. */
static void test_f8_rules(void)
{
    char why[GT_GEN_REASON];
    gt_gen_dev d, h;
    gt_gen_dev_default(&d, 90, 132);
    gt_gen_dev_hip(&h, 104);
    gt_problem p = gen_test_prob_f8(14336, 1, 4096, GT_DT_F8E4M3, GT_DT_F8E4M3, GT_DT_BF16);
    CHECK(gt_gen_applicable(&p, &d, why, sizeof why) == 0);
    gt_problem mix = gen_test_prob_f8(1024, 16, 4096, GT_DT_F8E4M3, GT_DT_F8E5M2, GT_DT_F32);
    CHECK(gt_gen_applicable(&mix, &d, why, sizeof why) == 0);
    expect_na(p, 80, "sm_89");
    CHECK(gt_gen_applicable(&p, &h, why, sizeof why) == -1 && strstr(why, "HIP"));
    gt_gen_dev_default(&d, 89, 128);
    CHECK(gt_gen_applicable(&p, &d, why, sizeof why) == 0);
    gt_gen_dev_default(&d, 90, 132);
    expect_na(gen_test_prob_f8(4096, 1, 4096, GT_DT_F8E5M2, GT_DT_F8E5M2, GT_DT_BF16), 90, "e5m2/e5m2");
    expect_na(gen_test_prob_f8(4096, 1, 4096, GT_DT_F8E4M3FNUZ, GT_DT_F8E4M3FNUZ, GT_DT_BF16), 90, "OCP");
    expect_na(gen_test_prob_f8(4096, 1, 4096, GT_DT_F8E4M3, GT_DT_BF16, GT_DT_BF16), 90, "OCP");
    expect_na(gen_test_prob_f8(4096, 1, 4096, GT_DT_F8E4M3, GT_DT_F8E4M3, GT_DT_F8E4M3), 90, "C/D types");
    gt_problem q = p;
    q.scale_a = GT_SCALE_NONE;
    expect_na(q, 90, "scales");
    /* vec: bytes, not elements */
    gt_problem p16 = gen_test_prob_f8(14336, 16, 4096, GT_DT_F8E4M3, GT_DT_F8E4M3, GT_DT_BF16);
    gt_gen_cfg c = k_cfg;
    c.vec = 16;
    CHECK_MSG(gt_gen_check(&p16, &d, &c, why, sizeof why) == 0, "%s", why);
    c.vec = 8; /* 16-byte loads are aligned here */
    expect_pruned(p16, c, 0, "vec=8: 16-byte loads (vec=16)");
    c.vec = 4;
    expect_pruned(p16, c, 0, "4-byte vectors");
    c.vec = 16;
    expect_pruned(gen_test_prob(4096, 16, 4096, GT_DT_BF16, GT_DT_BF16), c, 0, "32-byte vectors");
    gt_problem odd = gen_test_prob_f8(4096, 16, 4104, GT_DT_F8E4M3, GT_DT_F8E4M3, GT_DT_BF16); /* lda 8 mod 16 */
    expect_pruned(odd, c, 0, "alignment");
    c.vec = 8; /* passes the vec and alignment rules (later ones may prune it) */
    why[0] = 0;
    (void)gt_gen_check(&odd, &d, &c, why, sizeof why);
    CHECK_MSG(!strstr(why, "vec") && !strstr(why, "alignment"), "%s", why);
    /* the raw space: vec 16 and 8, and the model reads half of bf16's bytes */
    gt_gen_space s;
    CHECK(gt_gen_prune(&p, &d, 0, &s) == 0 && s.nkeep > 0);
    int v16 = 0, v8 = 0;
    for (int i = 0; i < s.npruned; i++) {
        v16 += s.pruned[i].cfg.vec == 16;
        v8 += s.pruned[i].cfg.vec == 8;
        CHECK(s.pruned[i].cfg.vec != 4);
    }
    for (int i = 0; i < s.nkeep; i++)
        CHECK(s.keep[i].vec == 16);
    CHECK(v16 > 0 && v8 > 0);
    gt_gen_cfg best = s.keep[0];
    gt_gen_space_free(&s);
    gt_problem pb = gen_test_prob(14336, 1, 4096, GT_DT_BF16, GT_DT_BF16);
    gt_gen_cfg bb = best;
    bb.vec = 8;
    double t8 = gt_gen_model_us(&p, &d, &best), t16 = gt_gen_model_us(&pb, &d, &bb);
    CHECK_MSG(t8 < 0.7 * t16 && t8 > 0.4 * t16, "fp8 %.1f us, bf16 %.1f us", t8, t16);
    /* the GPU section's split-K configs pass every rule for its problems */
    gt_problem gp[2] = {gen_test_prob_f8(1024, 5, 4112, GT_DT_F8E4M3, GT_DT_F8E5M2, GT_DT_F32),
                        gen_test_prob_f8(2048, 5, 4096, GT_DT_F8E5M2, GT_DT_F8E4M3, GT_DT_F16)};
    gp[0].bias = 1, gp[0].bias_type = GT_DT_BF16, gp[0].alpha = 0.5, gp[0].beta = 0.25;
    gp[1].batch = 2;
    gt_problem_default_ld(&gp[1]);
    for (int i = 0; i < 2; i++) {
        gt_problem_finish(&gp[i]);
        for (int j = i; f8_splits[j]; j++) { /* the batched problem: not the lanes=warp one */
            cJSON *jc = cJSON_Parse(f8_splits[j]);
            gt_gen_cfg fc;
            CHECK(jc && gt_gen_cfg_from_json(jc, &fc, why, sizeof why) == 0);
            cJSON_Delete(jc);
            CHECK_MSG(gt_gen_check(&gp[i], &d, &fc, why, sizeof why) == 0, "%d %d: %s", i, j, why);
        }
    }
    /* the defines: GT_BB only for fp8, GT_F8MMA only for fp8 on the mma
     * path with f8 "mma" (the default) */
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
    gt_gen_cfg q8 = k_cfg, w8 = k_cfg;
    q8.vec = 16;
    w8.lanes = GT_GEN_LANES_WARP;
    int n16 = gt_gen_defines(&pb, &bb, 0, defs);
    CHECK(n16 == 21);
    int n8 = gt_gen_defines(&mix, &q8, 0, defs);
    CHECK(n8 == 23 && !strcmp(defs[n8 - 2], "-DGT_BB=3") && !strcmp(defs[n8 - 1], "-DGT_F8MMA=1") &&
          !strcmp(defs[3], "-DGT_AB=2"));
    q8.f8 = GT_GEN_F8_CVT;
    n8 = gt_gen_defines(&mix, &q8, 0, defs);
    CHECK(n8 == 22 && !strcmp(defs[n8 - 1], "-DGT_BB=3"));
    CHECK(gt_gen_defines(&mix, &w8, 0, defs) == 22);
    /* f8 "cvt": fp8 on lanes quad only; kept where the same "mma" config is */
    CHECK_MSG(gt_gen_check(&p16, &d, &q8, why, sizeof why) == 0, "%s", why);
    expect_pruned(pb, (gt_gen_cfg){.rows_per_cta = 32, .warps = 4, .kwarps = 2, .vec = 8, .k_unroll = 4,
                                   .splitk = 1, .n_tile = 8, .f8 = GT_GEN_F8_CVT},
                  0, "f8=cvt: only fp8 inputs");
    w8.f8 = GT_GEN_F8_CVT;
    w8.vec = 16;
    w8.rows_per_cta = 2, w8.warps = 1, w8.kwarps = 1, w8.n_tile = 1;
    why[0] = 0;
    CHECK(gt_gen_check(&p, &d, &w8, why, sizeof why) == 1 && strstr(why, "f8=cvt"));
    /* the raw-byte mma has no conversion bound: never ranked slower */
    q8.f8 = GT_GEN_F8_MMA;
    gt_gen_cfg qc = q8;
    qc.f8 = GT_GEN_F8_CVT;
    double tm = gt_gen_model_us(&p16, &d, &q8), tc = gt_gen_model_us(&p16, &d, &qc);
    CHECK_MSG(tm <= tc, "mma %.2f us, cvt %.2f us", tm, tc);
    /* the GPU section's cvt configs pass every rule for their problems, and
     * their JSON, text and canonical form agree */
    const char *const *cl[2] = {f8_cvt16, f8_cvt8};
    gt_problem cp[2] = {gen_test_prob_f8(4096, 16, 4096, GT_DT_F8E4M3, GT_DT_F8E4M3, GT_DT_BF16),
                        gen_test_prob_f8(14336, 1, 4096, GT_DT_F8E4M3, GT_DT_F8E4M3, GT_DT_BF16)};
    for (int i = 0; i < 2; i++) {
        cJSON *jc = cJSON_Parse(cl[i][0]);
        gt_gen_cfg fc;
        char text[512];
        CHECK(jc && gt_gen_cfg_from_json(jc, &fc, why, sizeof why) == 0 && fc.f8 == GT_GEN_F8_CVT);
        gt_gen_cfg_text(&fc, text, sizeof text);
        CHECK_MSG(!strcmp(text, cl[i][0]), "%s", text);
        cJSON *back = gt_gen_cfg_to_json(&fc);
        char *bt = back ? cJSON_PrintUnformatted(back) : NULL;
        CHECK(bt && strstr(bt, "\"f8\":\"cvt\""));
        free(bt);
        cJSON_Delete(back);
        cJSON_Delete(jc);
        CHECK_MSG(gt_gen_check(&cp[i], &d, &fc, why, sizeof why) == 0, "%d: %s", i, why);
    }
    cJSON *bad = cJSON_Parse("{\"f8\":\"e4m3\"}");
    gt_gen_cfg fb;
    CHECK(bad && gt_gen_cfg_from_json(bad, &fb, why, sizeof why) == -1 && strstr(why, "f8"));
    cJSON_Delete(bad);
}

static void check_space(const gt_problem *p, const gt_gen_dev *d, int cap, int *kept)
{
    gt_gen_space s;
    char why[GT_GEN_REASON], label[64];
    gt_problem_label(p, label, sizeof label);
    CHECK(gt_gen_prune(p, d, cap, &s) == 0);
    CHECK_MSG(s.why[0] == 0 && s.nkeep > 0 && s.nkeep <= cap, "%s: %d kept (%s)", label, s.nkeep, s.why);
    CHECK_MSG(s.nkeep + s.npruned == s.raw && s.raw > 10000, "%s: %d + %d != %d", label, s.nkeep,
              s.npruned, s.raw);
    int bad = 0, ranked = 0;
    for (int i = 0; i < s.npruned; i++) {
        bad += strlen(s.pruned[i].reason) < 10 || !strchr(s.pruned[i].reason, ':');
        ranked += !strncmp(s.pruned[i].reason, "rank: ", 6);
    }
    CHECK_MSG(bad == 0, "%s: %d pruned configs without a reason", label, bad);
    CHECK(ranked == 0 || s.nkeep == cap);
    int pipes[3] = {0, 0, 0};
    for (int i = 0; i < s.nkeep; i++) {
        CHECK_MSG(gt_gen_check(p, d, &s.keep[i], why, sizeof why) == 0, "%s kept but %s", label, why);
        CHECK(s.keep[i].n_tile >= p->n && s.keep[i].n_tile < p->n + 8);
        pipes[s.keep[i].pipe]++;
    }
    /* both classes of the ranking (register pipes, the cp.async ring) stay
     * in the cap on CUDA; HIP has no ring */
    CHECK_MSG(d->hip ? pipes[1] == 0 : pipes[0] + pipes[2] > 0 && pipes[1] > 0, "%s: pipes %d/%d/%d", label,
              pipes[0], pipes[1], pipes[2]);
    *kept = s.nkeep;
    gt_gen_space_free(&s);
}

static void test_prune(void)
{
    gt_gen_dev d, h;
    gt_gen_dev_default(&d, 90, 132);
    gt_gen_dev_hip(&h, 104);
    int kept = 0, total = 0;
    for (int n = 1; n <= 16; n += 15)
        for (size_t i = 0; i < sizeof gen_test_llama / sizeof gen_test_llama[0]; i++) {
            gt_problem p = gen_test_prob(gen_test_llama[i][0], n, gen_test_llama[i][1], GT_DT_BF16, GT_DT_BF16);
            check_space(&p, &d, GT_GEN_DEFAULT_CAP, &kept);
            total += kept;
            check_space(&p, &h, GT_GEN_DEFAULT_CAP, &kept);
        }
    CHECK(total > 0);
    /* the enumeration's build without the pruned list: the same kept configs
     * in the same order, the pruned only counted, the same verdicts with no
     * reason asked for */
    for (int n = 1; n <= 16; n += 15) {
        gt_problem q = gen_test_prob(4096, n, 14336, GT_DT_BF16, GT_DT_BF16);
        gt_gen_space a, b;
        CHECK(gt_gen_prune(&q, &d, GT_GEN_DEFAULT_CAP, &a) == 0 && gt_gen_prune_kept(&q, &d, GT_GEN_DEFAULT_CAP, &b) == 0);
        CHECK(a.nkeep == b.nkeep && a.npruned == b.npruned && a.raw == b.raw && b.pruned == NULL && a.pruned);
        CHECK(a.nkeep == b.nkeep && memcmp(a.keep, b.keep, (size_t)a.nkeep * sizeof *a.keep) == 0);
        int same = 1;
        for (int i = 0; i < a.npruned; i += 97)
            same &= gt_gen_check(&q, &d, &a.pruned[i].cfg, NULL, 0) == (strncmp(a.pruned[i].reason, "rank:", 5) != 0);
        CHECK(same);
        gt_gen_space_free(&a);
        gt_gen_space_free(&b);
    }
    /* lanes "warp" is in the space for n <= 8 only */
    for (int n = 1; n <= 16; n += 15) {
        gt_problem q = gen_test_prob(4096, n, 4096, GT_DT_BF16, GT_DT_BF16);
        gt_gen_space s;
        int warp = 0;
        CHECK(gt_gen_prune(&q, &d, 0, &s) == 0);
        for (int i = 0; i < s.nkeep; i++)
            warp += s.keep[i].lanes == GT_GEN_LANES_WARP;
        CHECK_MSG(n == 1 ? warp > 100 : warp == 0, "n=%d: %d lanes=warp configs kept", n, warp);
        gt_gen_space_free(&s);
    }
    /* unaligned lda: only vec = 4 configs survive */
    gt_problem p = gen_test_prob(4096, 8, 4100, GT_DT_F16, GT_DT_F32);
    gt_gen_space s;
    CHECK(gt_gen_prune(&p, &d, 0, &s) == 0 && s.nkeep > 0);
    for (int i = 0; i < s.nkeep; i++)
        CHECK(s.keep[i].vec == 4);
    gt_gen_space_free(&s);
    /* not applicable: empty, with the family-level reason */
    p.trans_a = 'N';
    gt_problem_default_ld(&p);
    CHECK(gt_gen_prune(&p, &d, 0, &s) == 0 && s.nkeep == 0 && s.npruned == 0 && strstr(s.why, "transA"));
    gt_gen_space_free(&s);
}

static void test_geometry(void)
{
    gt_gen_geom g;
    gt_problem p = gen_test_prob(4100, 3, 4095, GT_DT_BF16, GT_DT_BF16);
    gt_gen_cfg c = k_cfg;
    c.splitk = 3, c.reduction = GT_GEN_RED_TWOPASS, c.n_tile = 8;
    gt_gen_geometry(&p, &c, 32, &g);
    CHECK(g.kper % 32 == 0 && g.kper * 3 >= 4095 && g.kper * 2 < 4095);
    CHECK(g.gx == (4100 + 31) / 32 && g.gy == 1 && g.gz == 3 && g.threads == 128);
    CHECK(g.ws_bytes == (size_t)3 * 4100 * 3 * 4 && g.fin_blocks > 0 && g.cnt_bytes == 0);
    c.reduction = GT_GEN_RED_ATOMIC;
    gt_gen_geometry(&p, &c, 32, &g);
    CHECK(g.ws_bytes == (size_t)4100 * 3 * 4 && g.cnt_bytes == (size_t)g.gx * 4 && g.fin_blocks == 0);
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
    int n = gt_gen_defines(&p, &c, 0, defs), seen = 0;
    for (int i = 0; i < n; i++)
        seen += !strcmp(defs[i], "-DGT_VEC=8") + !strcmp(defs[i], "-DGT_MMA=1") + !strcmp(defs[i], "-DGT_DKT=3");
    CHECK(n > 15 && seen == 3);
    /* the tail loop only where a split's k range ends in a partial block:
     * blocks of k_unroll 4 x 4 lanes x vec 8 = 128 elements (lanes "warp":
     * 4 x 32 x 8 = 1024, wave64 2048); splits are whole chunks of 32 */
    struct {
        int64_t k;
        int splitk, lanes, hip, tail;
    } tails[] = {
        {4096, 1, 0, 0, 0}, {4096, 4, 0, 0, 0}, {4095, 3, 0, 0, 1}, {4224, 3, 0, 0, 0},
        {4320, 3, 0, 0, 1}, {4096, 1, 1, 0, 0}, {4608, 1, 1, 0, 1}, {8192, 1, 1, 1, 0},
        {5120, 1, 1, 1, 1}, {5120, 1, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        gt_problem q = gen_test_prob(4096, 3, tails[i].k, GT_DT_BF16, GT_DT_BF16);
        gt_gen_cfg t = k_cfg;
        t.splitk = tails[i].splitk, t.reduction = t.splitk > 1 ? GT_GEN_RED_ATOMIC : GT_GEN_RED_NONE;
        t.lanes = tails[i].lanes, t.n_tile = t.lanes ? 4 : 8; /* warp: blocks of 4 x 32 (wave64: 64) x 8 */
        int nd = gt_gen_defines(&q, &t, tails[i].hip, defs), got = -1;
        for (int d = 0; d < nd; d++)
            if (!strncmp(defs[d], "-DGT_TAIL=", 10))
                got = atoi(defs[d] + 10);
        CHECK_MSG(got == tails[i].tail, "k=%lld splitk=%d lanes=%d hip=%d: GT_TAIL=%d", (long long)tails[i].k,
                  tails[i].splitk, tails[i].lanes, tails[i].hip, got);
    }
    p.d_type = GT_DT_F8E4M3;
    CHECK(gt_gen_defines(&p, &c, 0, defs) == -1);
}

/* mma.sync m16n8k16 (bf16/f16) fragments, as the PTX ISA lays them out:
 * lane (g = lane/4, q = lane%4); A a0..a7: row g + 8*((i/2)%2), column
 * 2q + i%2 + 8*(i/4); B b0..b3: row 2q + i%2 + 8*(i/2), column g; C c0..c3:
 * row g + 8*(i/2), column 2q + i%2. The kernel feeds lane (g, q) the vec
 * elements at k = q*vec of rows g and g+8 and of column g; word 2h+0/1 of
 * them go to registers {a0a1, a2a3 | b0b1} / {a4a5, a6a7 | b2b3} of mma h. */
static void test_fragments(void)
{
    for (int vec = 4; vec <= 8; vec += 4) {
        double A[16][32], B[32][8], C[16][8] = {{0}};
        uint64_t x = 0x1234567ULL + (uint64_t)vec;
        for (int r = 0; r < 16; r++)
            for (int k = 0; k < 4 * vec; k++)
                A[r][k] = (double)((x = x * 6364136223846793005ULL + 1) >> 58) - 32;
        for (int k = 0; k < 4 * vec; k++)
            for (int c = 0; c < 8; c++)
                B[k][c] = (double)((x = x * 6364136223846793005ULL + 1) >> 59) - 16;
        for (int h = 0; h < vec / 4; h++) {
            double LA[16][16], LB[16][8];
            for (int lane = 0; lane < 32; lane++) {
                int g = lane / 4, q = lane % 4;
                /* element e of the lane's vector = physical k q*vec + e; word w = e/2 */
                for (int i = 0; i < 8; i++) { /* a_i from word 2h + (i/4), half i%2, row g + 8*((i/2)%2) */
                    int e = 2 * (2 * h + i / 4) + i % 2;
                    LA[g + 8 * ((i / 2) % 2)][2 * q + i % 2 + 8 * (i / 4)] = A[g + 8 * ((i / 2) % 2)][q * vec + e];
                }
                for (int i = 0; i < 4; i++) {
                    int e = 2 * (2 * h + i / 2) + i % 2;
                    LB[2 * q + i % 2 + 8 * (i / 2)][g] = B[q * vec + e][g];
                }
            }
            for (int r = 0; r < 16; r++)
                for (int c = 0; c < 8; c++)
                    for (int k = 0; k < 16; k++)
                        C[r][c] += LA[r][k] * LB[k][c];
        }
        int bad = 0;
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < 8; c++) {
                double want = 0;
                for (int k = 0; k < 4 * vec; k++)
                    want += A[r][k] * B[k][c];
                bad += C[r][c] != want;
            }
        CHECK_MSG(bad == 0, "vec=%d: %d of 128 dot products differ", vec, bad);
    }
}

/* Up to max lanes=warp configs the rules keep for p (no rank cap), spread
 * over the ranking so that every pipe, reduction and n_tile shows up: the
 * capped spaces the tests compile need not hold any. Returns the count. */
static int is_warp(const gt_gen_cfg *c) { return c->lanes == GT_GEN_LANES_WARP; }
static int is_dbuf(const gt_gen_cfg *c) { return c->pipe == GT_GEN_PIPE_DBUF; }

/* Up to max configs of the uncapped kept space that pick() selects, spread
 * evenly over the ranking: what the cap may leave out still compiles. */
static int space_sample(const gt_problem *p, const gt_gen_dev *d, int (*pick)(const gt_gen_cfg *),
                        gt_gen_cfg *out, int max)
{
    gt_gen_space s;
    int nw = 0, n = 0;
    if (gt_gen_prune(p, d, 0, &s) != 0)
        return 0;
    for (int i = 0; i < s.nkeep; i++)
        nw += pick(&s.keep[i]);
    for (int i = 0, w = 0; i < s.nkeep && n < max; i++)
        if (pick(&s.keep[i]) && (long long)w++ * max % (nw > 0 ? nw : 1) < max)
            out[n++] = s.keep[i];
    gt_gen_space_free(&s);
    return n;
}
#endif /* CUDA or HIP */

#ifdef GT_WITH_CUDA
/* Every config the family generates for the Llama decode shapes (by default
 * those of 4096 x {1, 16} x 4096; and an f16 problem with f32 output, bias,
 * gelu, alpha/beta) compiles with NVRTC for
 * sm_90 on the pool; a second pass is answered from memory, a third (after
 * dropping the in-process cache) from disk; a corrupt file is recompiled. */
static void test_nvrtc_all(void)
{
    char dir[] = "/tmp/gt-gen-cache.XXXXXX", err[512];
    CHECK(mkdtemp(dir) != NULL);
    setenv("GEMMTUNE_CACHE_DIR", dir, 1);
    gt_cu_cache_forget();
    gt_gen_dev d;
    gt_gen_dev_default(&d, 90, 132);
    gt_problem ps[12];
    int np = 0;
    /* ~0.25 CPU s a kernel: by default the 4096 x 4096 shapes; GT_TEST_GEN_ALL=1
     * every Llama decode shape (gt-cuda-selftest --gen compiles those too) */
    int all = getenv("GT_TEST_GEN_ALL") != NULL;
    for (int n = 1; n <= 16; n += 15)
        for (size_t i = all ? 0 : 1; i < (all ? sizeof gen_test_llama / sizeof gen_test_llama[0] : 2); i++)
            ps[np++] = gen_test_prob(gen_test_llama[i][0], n, gen_test_llama[i][1], GT_DT_BF16, GT_DT_BF16);
    gt_problem e = gen_test_prob(3000, 5, 1000, GT_DT_F16, GT_DT_F32);
    e.bias = 1, e.bias_type = GT_DT_F16, e.alpha = 0.5, e.beta = 0.25;
    snprintf(e.activation, sizeof e.activation, "gelu");
    ps[np++] = e;
    gt_cu_entry **ents = NULL;
    char (*defs_of)[400] = NULL; /* each entry's defines, for messages */
    int ne = 0, cap = 0;
    for (int pass = 0; pass < 3; pass++) {
        gt_cu_cache_stats s0, s1;
        if (pass == 2)
            gt_cu_cache_forget();
        gt_cu_cache_stats_get(&s0);
        double t0 = gt_mono_ms();
        ne = 0;
        for (int i = 0; i < np; i++) {
            /* the capped space, then samples of lanes=warp (n <= 8) and dbuf configs */
            gt_gen_space s;
            gt_gen_cfg cs[GT_GEN_DEFAULT_CAP + 18];
            int nc = 0;
            CHECK(gt_gen_prune(&ps[i], &d, GT_GEN_DEFAULT_CAP, &s) == 0 && s.nkeep > 0);
            for (int c = 0; c < s.nkeep; c++)
                cs[nc++] = s.keep[c];
            gt_gen_space_free(&s);
            int nws = ps[i].n <= 8 ? space_sample(&ps[i], &d, is_warp, cs + nc, 12) : 0;
            CHECK(ps[i].n > 8 || nws > 0);
            nc += nws;
            int nds = space_sample(&ps[i], &d, is_dbuf, cs + nc, 6);
            CHECK(nds > 0);
            nc += nds;
            for (int c = 0; c < nc; c++) {
                char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
                const char *opts[GT_GEN_MAX_DEFS];
                int n = gt_gen_defines(&ps[i], &cs[c], 0, defs);
                for (int o = 0; o < n; o++)
                    opts[o] = defs[o];
                if (ne == cap) {
                    cap = cap ? 2 * cap : 256;
                    ents = realloc(ents, (size_t)cap * sizeof *ents);
                    defs_of = realloc(defs_of, (size_t)cap * sizeof *defs_of);
                    if (!ents || !defs_of)
                        abort();
                }
                defs_of[ne][0] = 0;
                for (int o = 0; o < n; o++)
                    snprintf(defs_of[ne] + strlen(defs_of[ne]), sizeof defs_of[ne] - strlen(defs_of[ne]), " %s",
                             defs[o] + 5);
                ents[ne++] = gt_cu_cache_request(gt_gen_gemv_src, "gt_gemv", opts, n, 90, 1, NULL);
            }
        }
        int fails = 0, spills_known = 0, nospill = 0;
        for (int i = 0; i < ne; i++) {
            const gt_cu_image *img = NULL;
            if (!ents[i] || gt_cu_cache_wait(ents[i], &img, err, sizeof err) != 0) {
                if (fails++ < 3)
                    fprintf(stderr, "     compile failed: %s\n", err);
                continue;
            }
            CHECK(img->cubin == 1 && img->len > 1000 && !strcmp(img->target, "sm_90"));
            spills_known += img->spill_stores >= 0;
            if (img->spill_stores < 0 && nospill++ < 3)
                fprintf(stderr, "     no ptxas spill count for %s\n", defs_of[i]);
        }
        gt_cu_cache_stats_get(&s1);
        long req = s1.requests - s0.requests, mem = s1.mem_hits - s0.mem_hits;
        long disk = s1.disk_hits - s0.disk_hits, comp = s1.compiles - s0.compiles;
        fprintf(stderr, "     pass %d: %d configs, %ld requests: %ld memory, %ld disk, %ld compiled "
                        "(%.0f ms NVRTC, %d threads), %.2f s wall\n",
                pass + 1, ne, req, mem, disk, comp, s1.compile_ms - s0.compile_ms, s1.threads,
                (gt_mono_ms() - t0) / 1000);
        CHECK_MSG(fails == 0, "pass %d: %d of %d configs failed to compile", pass + 1, fails, ne);
        CHECK(spills_known == ne);
        if (pass == 0)
            CHECK(comp > 0 && comp + mem == req && disk == 0);
        if (pass == 1)
            CHECK(mem == req && comp == 0 && disk == 0);
        if (pass == 2)
            CHECK(comp == 0 && disk + mem == req && disk > 0);
    }
    /* A corrupt cache file is compiled again, not loaded. */
    const gt_cu_image *img = NULL;
    char path[4200];
    CHECK(ne > 0 && gt_cu_cache_wait(ents[0], &img, err, sizeof err) == 0);
    snprintf(path, sizeof path, "%s/cuda/%016llx.gtk", dir, (unsigned long long)gt_cu_cache_key(ents[0]));
    CHECK(gt_write_file(path, "garbage", 7) == 0);
    gt_cu_cache_forget();
    gt_cu_cache_stats s0, s1;
    gt_cu_cache_stats_get(&s0);
    gt_gen_space s;
    CHECK(gt_gen_prune(&ps[0], &d, GT_GEN_DEFAULT_CAP, &s) == 0);
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
    const char *opts[GT_GEN_MAX_DEFS];
    int n = gt_gen_defines(&ps[0], &s.keep[0], 0, defs);
    for (int o = 0; o < n; o++)
        opts[o] = defs[o];
    gt_cu_entry *again = gt_cu_cache_request(gt_gen_gemv_src, "gt_gemv", opts, n, 90, 0, NULL);
    CHECK(again && gt_cu_cache_wait(again, &img, err, sizeof err) == 0 && img->origin == GT_CU_FROM_COMPILE);
    gt_cu_cache_stats_get(&s1);
    CHECK(s1.compiles == s0.compiles + 1 && s1.disk_hits == s0.disk_hits);
    gt_gen_space_free(&s);
    /* the fault kernels compile too */
    gt_cu_entry *f = gt_cu_cache_request(gt_gen_fault_src, "gt_fault_oob", NULL, 0, 90, 0, NULL);
    CHECK_MSG(f && gt_cu_cache_wait(f, &img, err, sizeof err) == 0, "%s", err);
    free(ents);
    free(defs_of);
    gt_cu_cache_forget();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* One key, two processes at once, one shared cache directory (two workers
 * of a host): one compiles, the other waits for its file (nvrtc_cache.c's
 * <key>.lock). A lock left by a process that is gone, or holding this
 * process's own pid (an earlier process that had it), is taken over at
 * once, and removed after the compile. */
static void test_nvrtc_shared(void)
{
    char dir[64], err[512], lock[4200];
    CHECK(gt_test_tmpdir(dir, sizeof dir, "gen-lock") == 0);
    setenv("GEMMTUNE_CACHE_DIR", dir, 1);
    gt_cu_cache_forget(); /* no pool thread across the fork */
    const char *salt[] = {"-DGT_TEST_SALT=1"};
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        close(go[1]);
        if (read(go[0], &c, 1) != 1)
            _exit(3);
        const gt_cu_image *img = NULL;
        gt_cu_entry *e = gt_cu_cache_request(gt_gen_fault_src, "gt_fault_oob", salt, 1, 90, 0, NULL);
        if (!e || gt_cu_cache_wait(e, &img, err, sizeof err) != 0)
            _exit(2);
        _exit(img->origin == GT_CU_FROM_COMPILE ? 0 : 1);
    }
    close(go[0]);
    CHECK(pid > 0 && write(go[1], "g", 1) == 1);
    close(go[1]);
    const gt_cu_image *img = NULL;
    gt_cu_entry *e = gt_cu_cache_request(gt_gen_fault_src, "gt_fault_oob", salt, 1, 90, 0, NULL);
    CHECK_MSG(e && gt_cu_cache_wait(e, &img, err, sizeof err) == 0, "%s", err);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) <= 1);
    int compiled = (img && img->origin == GT_CU_FROM_COMPILE) + (WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_MSG(compiled == 1, "%d of the two processes compiled the key", compiled);
    /* stale locks: a gone process's pid, then this process's own */
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    CHECK(gone > 0 && waitpid(gone, &st, 0) == gone);
    for (int k = 0; k < 2; k++) {
        char salt2[32];
        snprintf(salt2, sizeof salt2, "-DGT_TEST_SALT=%d", 2 + k);
        const char *o2[] = {salt2};
        gt_cu_cache_forget();
        /* the key as the cache computes it: from a first request's entry */
        e = gt_cu_cache_request(gt_gen_fault_src, "gt_fault_oob", o2, 1, 90, 0, NULL);
        CHECK(e && gt_cu_cache_wait(e, &img, err, sizeof err) == 0);
        uint64_t key = gt_cu_cache_key(e);
        char gtk[4200];
        snprintf(gtk, sizeof gtk, "%s/cuda/%016llx.gtk", dir, (unsigned long long)key);
        snprintf(lock, sizeof lock, "%s/cuda/%016llx.lock", dir, (unsigned long long)key);
        CHECK(unlink(gtk) == 0);
        char pidtxt[32];
        snprintf(pidtxt, sizeof pidtxt, "%ld\n", (long)(k == 0 ? gone : getpid()));
        CHECK(gt_write_file(lock, pidtxt, strlen(pidtxt)) == 0);
        gt_cu_cache_forget();
        double t0 = gt_mono_ms();
        e = gt_cu_cache_request(gt_gen_fault_src, "gt_fault_oob", o2, 1, 90, 0, NULL);
        CHECK_MSG(e && gt_cu_cache_wait(e, &img, err, sizeof err) == 0, "%s", err);
        struct stat sb;
        CHECK_MSG(img && img->origin == GT_CU_FROM_COMPILE && gt_mono_ms() - t0 < 30000 &&
                      stat(lock, &sb) != 0 && stat(gtk, &sb) == 0,
                  "stale lock %d: compiled %d, %.0f ms", k, img ? img->origin == GT_CU_FROM_COMPILE : -1,
                  gt_mono_ms() - t0);
    }
    gt_cu_cache_forget();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

static int has(const char *s, const char *what) { return strstr(s, what) != NULL; }

/* Every fp8 config the family keeps for decode shapes compiles with NVRTC
 * for sm_90 (and a sample for sm_89) without spills: e4m3 14336 x 1 x 4096
 * (bf16 D), e4m3 4096 x 16 x 14336, and e4m3 x e5m2 1024 x 5 x 4104 (f32
 * D, bf16 bias, gelu, beta; lda 8 mod 16: vec 8 and a k tail), each with
 * samples of lanes=warp and dbuf beyond the cap; the PTX decodes with
 * cvt.rn.f16x2.e4m3x2 (and e5m2x2 for the mixed one), feeds f16 mma.sync
 * and loads 16 bytes per lane (8 where vec is 8). */
static void test_nvrtc_f8(void)
{
    char err[512], dir[64];
    CHECK(gt_test_tmpdir(dir, sizeof dir, "gen-f8") == 0);
    setenv("GEMMTUNE_CACHE_DIR", dir, 1);
    gt_cu_cache_forget();
    gt_gen_dev d;
    gt_gen_dev_default(&d, 90, 132);
    gt_problem ps[3] = {gen_test_prob_f8(14336, 1, 4096, GT_DT_F8E4M3, GT_DT_F8E4M3, GT_DT_BF16),
                        gen_test_prob_f8(4096, 16, 14336, GT_DT_F8E4M3, GT_DT_F8E4M3, GT_DT_BF16),
                        gen_test_prob_f8(1024, 5, 4104, GT_DT_F8E4M3, GT_DT_F8E5M2, GT_DT_F32)};
    ps[2].bias = 1, ps[2].bias_type = GT_DT_BF16, ps[2].alpha = 0.5, ps[2].beta = 0.25;
    snprintf(ps[2].activation, sizeof ps[2].activation, "gelu");
    gt_problem_finish(&ps[2]);
    enum { MAXE = 3 * (GT_GEN_DEFAULT_CAP + 10) + 8 };
    gt_cu_entry *ents[MAXE];
    char labels[MAXE][200];
    int ne = 0, vec8 = 0;
    for (int i = 0; i < 3; i++) {
        gt_gen_space s;
        gt_gen_cfg cs[GT_GEN_DEFAULT_CAP + 10];
        int nc = 0;
        CHECK(gt_gen_prune(&ps[i], &d, i == 0 ? GT_GEN_DEFAULT_CAP : 24, &s) == 0 && s.nkeep > 0);
        for (int c = 0; c < s.nkeep; c++)
            cs[nc++] = s.keep[c];
        gt_gen_space_free(&s);
        int nws = ps[i].n <= 8 ? space_sample(&ps[i], &d, is_warp, cs + nc, 6) : 0;
        CHECK(ps[i].n > 8 || nws > 0);
        nc += nws;
        int nds = space_sample(&ps[i], &d, is_dbuf, cs + nc, 4);
        CHECK(nds > 0);
        nc += nds;
        for (int c = 0; c < nc && ne < MAXE; c++) {
            char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
            const char *opts[GT_GEN_MAX_DEFS];
            int n = gt_gen_defines(&ps[i], &cs[c], 0, defs);
            CHECK(n == 22 + (cs[c].lanes == GT_GEN_LANES_QUAD)); /* GT_BB, GT_F8MMA on quad */
            for (int o = 0; o < n; o++)
                opts[o] = defs[o];
            vec8 += cs[c].vec == 8;
            gt_gen_cfg_text(&cs[c], labels[ne], sizeof labels[ne]);
            /* a few for sm_89 (Ada) too: the oldest target the rules admit */
            int sm = c < 3 ? 89 : 90;
            ents[ne++] = gt_cu_cache_request(gt_gen_gemv_src, "gt_gemv", opts, n, sm, 1, NULL);
        }
    }
    int fails = 0, spills = 0;
    double t0 = gt_mono_ms();
    for (int i = 0; i < ne; i++) {
        const gt_cu_image *img = NULL;
        if (!ents[i] || gt_cu_cache_wait(ents[i], &img, err, sizeof err) != 0) {
            if (fails++ < 3)
                fprintf(stderr, "     compile failed: %s: %s\n", labels[i], err);
            continue;
        }
        CHECK(img->cubin == 1 && img->len > 1000 && !strncmp(img->target, "sm_", 3));
        /* lanes=quad (the mma path) must not spill; lanes=warp's FMA path
         * is printed (its register estimate misses a few at n_tile 8) */
        if (img->spill_stores != 0) {
            int warp_lanes = strstr(labels[i], "\"lanes\":\"warp\"") != NULL;
            spills += !warp_lanes;
            fprintf(stderr, "     %d spill stores%s: %s\n", img->spill_stores,
                    warp_lanes ? " (lanes=warp, allowed)" : "", labels[i]);
        }
    }
    fprintf(stderr, "     %d fp8 configs compiled (%d with vec 8), %.1f s wall\n", ne, vec8,
            (gt_mono_ms() - t0) / 1000);
    CHECK_MSG(fails == 0, "%d of %d fp8 configs failed to compile", fails, ne);
    CHECK_MSG(spills == 0, "%d of %d fp8 lanes=quad configs spill", spills, ne);
    CHECK(vec8 > 0);
    /* the PTX of the mixed problem's best lanes=quad config (raw-byte mma,
     * then f8 "cvt") and of a lanes=warp one */
    gt_gen_space s;
    CHECK(gt_gen_prune(&ps[2], &d, 0, &s) == 0 && s.nkeep > 0);
    gt_gen_cfg w, qd = s.keep[0];
    for (int c = s.nkeep - 1; c >= 0; c--)
        if (s.keep[c].lanes == GT_GEN_LANES_QUAD)
            qd = s.keep[c];
    CHECK(qd.lanes == GT_GEN_LANES_QUAD);
    CHECK(space_sample(&ps[2], &d, is_warp, &w, 1) == 1);
    gt_gen_cfg qcvt = qd;
    qcvt.f8 = GT_GEN_F8_CVT;
    const gt_gen_cfg pick[3] = {qd, qcvt, w};
    gt_gen_space_free(&s);
    for (int i = 0; i < 3; i++) {
        char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
        const char *opts[GT_GEN_MAX_DEFS];
        const gt_cu_image *img = NULL;
        int n = gt_gen_defines(&ps[2], &pick[i], 0, defs);
        for (int o = 0; o < n; o++)
            opts[o] = defs[o];
        gt_cu_entry *e = gt_cu_cache_request(gt_gen_gemv_src, "gt_gemv", opts, n, 999, 0, NULL);
        CHECK_MSG(e && gt_cu_cache_wait(e, &img, err, sizeof err) == 0, "%s", err);
        if (!img)
            continue;
        const char *ptx = (const char *)img->data;
        int raw = i == 0, quad = pick[i].lanes == GT_GEN_LANES_QUAD;
        CHECK_MSG(has(ptx, "cvt.rn.f16x2.e4m3x2") == !raw && has(ptx, "cvt.rn.f16x2.e5m2x2") == !raw,
                  "pick %d", i);
        CHECK(has(ptx, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32") == raw);
        CHECK(has(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == (quad && !raw));
        if (pick[i].pipe == GT_GEN_PIPE_ASYNC)
            CHECK(has(ptx, pick[i].vec == 16 ? "cp.async.cg.shared.global" : "cp.async.ca.shared.global"));
        else
            CHECK(has(ptx, pick[i].vec == 16 ? ".v4.u32" : ".v2.u32"));
    }
    gt_cu_cache_forget();
    CHECK(gt_test_rmdir(dir) == 0);
}

/* The chained-launch switch of the template, read off PTX (an arch newer
 * than NVRTC knows is compiled to PTX for the newest one, >= sm_90): every
 * pipe and lanes layout lets the next kernel launch and waits, and loads B
 * through the coherent path (a_load "cs" so that A's loads are not .nc
 * either; pipe "async" copies both with cp.async); -DGT_NOCHAIN (the
 * self-test's A/B) drops the griddepcontrol instructions and loads B with
 * .nc again. */
static void test_chain_ptx(void)
{
    char err[512], dir[64];
    CHECK(gt_test_tmpdir(dir, sizeof dir, "gen-chain") == 0);
    setenv("GEMMTUNE_CACHE_DIR", dir, 1);
    gt_gen_dev d;
    gt_gen_dev_default(&d, 90, 132);
    gt_cu_cache_forget();
    const gt_problem ps[] = {gen_test_prob(4096, 16, 4096, GT_DT_BF16, GT_DT_BF16),
                             gen_test_prob(4096, 1, 4096, GT_DT_BF16, GT_DT_BF16)};
    int seen[3] = {0}, warp = 0;
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        gt_gen_space s;
        CHECK(gt_gen_prune(&ps[i], &d, 0, &s) == 0 && s.nkeep > 0);
        for (int c = 0; c < s.nkeep; c++) {
            gt_gen_cfg cfg = s.keep[c];
            int lw = cfg.lanes == GT_GEN_LANES_WARP;
            if (seen[cfg.pipe] >= 2 && !(lw && !warp))
                continue; /* two of each pipe and one lanes=warp config */
            seen[cfg.pipe]++;
            warp += lw;
            cfg.a_load = GT_GEN_LD_CS;
            for (int nochain = 0; nochain < 2; nochain++) {
                char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
                const char *opts[GT_GEN_MAX_DEFS];
                const gt_cu_image *img = NULL;
                int n = gt_gen_defines(&ps[i], &cfg, 0, defs);
                CHECK(n > 0 && n < GT_GEN_MAX_DEFS);
                for (int o = 0; o < n; o++)
                    opts[o] = defs[o];
                if (nochain)
                    opts[n++] = "-DGT_NOCHAIN=1";
                gt_cu_entry *e = gt_cu_cache_request(gt_gen_gemv_src, "gt_gemv", opts, n, 999, 0, NULL);
                CHECK_MSG(e && gt_cu_cache_wait(e, &img, err, sizeof err) == 0, "%s", err);
                if (!img)
                    continue;
                const char *ptx = (const char *)img->data;
                CHECK(!img->cubin && !strncmp(img->target, "compute_", 8) && atoi(img->target + 8) >= 90);
                CHECK_MSG(has(ptx, "griddepcontrol.wait") == !nochain &&
                              has(ptx, "griddepcontrol.launch_dependents") == !nochain,
                          "pipe %d lanes %d nochain %d", cfg.pipe, cfg.lanes, nochain);
                /* async copies A and B with cp.async after the wait either way */
                int nc = nochain && cfg.pipe != GT_GEN_PIPE_ASYNC;
                CHECK_MSG(has(ptx, "ld.global.nc") == nc, "pipe %d lanes %d nochain %d: B loads", cfg.pipe,
                          cfg.lanes, nochain);
                CHECK(has(ptx, "cp.async.") == (cfg.pipe == GT_GEN_PIPE_ASYNC));
                if (!nochain) {
                    /* reg and dbuf issue their first block of A (the weights:
                     * .cs here) before the wait, and no load of B before it;
                     * async loads nothing before it */
                    const char *w = strstr(ptx, "griddepcontrol.wait");
                    size_t pre = w ? (size_t)(w - ptx) : 0;
                    char *head = strndup(ptx, pre);
                    CHECK(head != NULL);
                    if (head) {
                        CHECK_MSG(has(head, "ld.global.cs") == (cfg.pipe != GT_GEN_PIPE_ASYNC),
                                  "pipe %d lanes %d: A before the wait", cfg.pipe, cfg.lanes);
                        CHECK_MSG(!has(head, "ld.global.v") && !has(head, "ld.global.u") &&
                                      !has(head, "cp.async."),
                                  "pipe %d lanes %d: B loaded before the wait", cfg.pipe, cfg.lanes);
                    }
                    free(head);
                }
            }
        }
        gt_gen_space_free(&s);
    }
    CHECK(seen[GT_GEN_PIPE_REG] > 0 && seen[GT_GEN_PIPE_ASYNC] > 0 && seen[GT_GEN_PIPE_DBUF] > 0 && warp == 1);
    gt_cu_cache_forget();
    CHECK(gt_test_rmdir(dir) == 0);
}

/* A BLAS-style problem with tight leading dimensions. */
static gt_problem prob4(int64_t m, int64_t n, int64_t k, char ta, char tb, gt_dtype in, gt_dtype out)
{
    gt_problem p = gen_test_prob(m, n, k, in, out);
    p.trans_a = ta;
    p.trans_b = tb;
    gt_problem_default_ld(&p);
    gt_problem_finish(&p);
    return p;
}

/* With a GPU: every "gemv" config the enumeration adds for p, plus split-K
 * configs of both reductions given directly, must build, validate within
 * tolerance and time; a config pruned for p is refused by build. */
static void smoke_gen(const gt_backend *bk, gt_bk_ctx *ctx, gt_problem p, const char *const *extra)
{
    char err[512], label[64];
    gt_problem_label(&p, label, sizeof label);
    cJSON *cands = NULL, *base = NULL;
    gt_bk_prob *pp = NULL;
    if (bk->enumerate(ctx, &p, 0, &cands, &base, err, sizeof err) != 0 ||
        bk->prepare(ctx, &p, &pp, err, sizeof err) != 0) {
        CHECK_MSG(0, "%s: %s", label, err);
        goto out;
    }
    int n = cJSON_GetArraySize(cands), gen = 0, passed = 0;
    double best_us = INFINITY;
    for (int i = 0; i < n + 8; i++) {
        cJSON *x = i >= n && extra[i - n] ? cJSON_Parse(extra[i - n]) : NULL;
        const cJSON *cfg = i < n ? cJSON_GetArrayItem(cands, i) : x;
        if (i >= n && !x)
            break;
        if (gt_gen_family(cfg) != GT_FAM_GEMV) {
            cJSON_Delete(x);
            continue;
        }
        gen++;
        gt_bk_cand *c = NULL;
        double e = NAN;
        gt_timing t;
        gt_timing_opts o = {.min_time_ms = 0.2, .warmup = 1, .repeats = 3};
        char *txt = cJSON_PrintUnformatted(cfg);
        if (bk->build(pp, cfg, &c, err, sizeof err) != 0 || bk->validate(pp, c, &e, err, sizeof err) != 0 ||
            !(e <= gt_bk_tolerance(&p)) || bk->time(pp, c, &o, &t, err, sizeof err) != 0) {
            CHECK_MSG(0, "%s: %s: %s (rel err %.3g)", label, txt, err, e);
        } else if (ctx->sm >= 90 &&
                   (snprintf(err, sizeof err, "result wrong"),
                    gt_cuda_gen_validate_chained(pp, c, &e, err, sizeof err) != 0 || !(e <= gt_bk_tolerance(&p)))) {
            /* chained after a kernel that writes B 50 us after letting it launch */
            CHECK_MSG(0, "%s: chained: %s: %s (rel err %.3g)", label, txt, err, e);
        } else {
            passed++;
            best_us = fmin(best_us, t.median_us);
            cJSON *info = gt_cuda_gen_cand_info(c);
            char *it = info ? cJSON_PrintUnformatted(info) : NULL;
            if (passed <= 2)
                fprintf(stderr, "     %s %.2f us err %.2e %s\n", label, t.median_us, e, it ? it : "");
            free(it);
            cJSON_Delete(info);
        }
        free(txt);
        if (c)
            bk->release(c);
        cJSON_Delete(x);
    }
    /* the bytes a GEMM reads and writes once (p.bytes) over the best time:
     * to hold against the device's copy bandwidth (fp8 aims at >= 85 %) */
    fprintf(stderr, "     %s: %d of %d gemv configs valid; best %.2f us = %.0f GB/s\n", label, passed,
            gen, best_us, p.bytes / (best_us * 1e-6) / 1e9);
    CHECK_MSG(gen > 0 && passed == gen, "%s: %d of %d", label, passed, gen);
    /* n_tile 8 < n = 16 is pruned for this problem: build says why */
    if (p.n > 8) {
        cJSON *j = cJSON_Parse("{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,"
                               "\"n_tile\":8,\"pipe\":\"reg\",\"reduction\":\"none\",\"rows_per_cta\":32,"
                               "\"splitk\":1,\"vec\":8,\"warps\":4}");
        gt_bk_cand *c = NULL;
        CHECK(bk->build(pp, j, &c, err, sizeof err) == -1 && strstr(err, "n_tile=8 < n=") != NULL);
        cJSON_Delete(j);
    }
out:
    bk->unprepare(pp);
    cJSON_Delete(cands);
    cJSON_Delete(base);
}


/* With a GPU (the lead's H100 run): the family end to end through the
 * vtable; without one the skip says why. */
static void test_gpu(void)
{
    const gt_backend *bk = gt_bk_find("cuda");
    char err[512] = "";
    gt_bk_ctx *ctx = NULL;
    gt_bk_device dev;
    if (bk->open(0, &ctx, &dev, err, sizeof err) != 0) {
        gt_test_skip("gpu", err);
        CHECK(ctx == NULL && strncmp(err, "cuda: ", 6) == 0);
        return;
    }
    gt_cuda_set_limits(ctx, 64, 20);
    gt_problem p;
    gt_cuda_set_exit_on_sticky(ctx, 0);
    static const char *const splits[] = {
        "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":2,\"kwarps\":2,\"n_tile\":8,"
        "\"pipe\":\"reg\",\"reduction\":\"atomic\",\"rows_per_cta\":64,\"splitk\":4,\"vec\":8,\"warps\":4}",
        "{\"a_load\":\"na256\",\"family\":\"gemv\",\"k_unroll\":2,\"kwarps\":2,\"n_tile\":8,"
        "\"pipe\":\"async\",\"reduction\":\"twopass\",\"rows_per_cta\":64,\"splitk\":4,\"vec\":8,\"warps\":4}",
        /* atomic again after twopass: the zeroed workspace must not have been spoiled */
        "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":2,\"kwarps\":2,\"n_tile\":8,"
        "\"pipe\":\"async\",\"reduction\":\"atomic\",\"rows_per_cta\":64,\"splitk\":4,\"vec\":8,\"warps\":4}",
        /* lanes "warp" with both reductions */
        "{\"a_load\":\"cs\",\"family\":\"gemv\",\"k_unroll\":1,\"kwarps\":1,\"lanes\":\"warp\",\"n_tile\":8,"
        "\"pipe\":\"reg\",\"reduction\":\"atomic\",\"rows_per_cta\":8,\"splitk\":2,\"vec\":8,\"warps\":4}",
        "{\"a_load\":\"na256\",\"family\":\"gemv\",\"k_unroll\":2,\"kwarps\":1,\"lanes\":\"warp\",\"n_tile\":8,"
        "\"pipe\":\"async\",\"reduction\":\"twopass\",\"rows_per_cta\":4,\"splitk\":2,\"vec\":8,\"warps\":2}",
        /* dbuf: no column mask (n = 5 of 8, sums past n never stored), with split-K, and lanes "warp" */
        "{\"a_load\":\"na256\",\"family\":\"gemv\",\"k_unroll\":2,\"kwarps\":2,\"n_tile\":8,"
        "\"pipe\":\"dbuf\",\"reduction\":\"atomic\",\"rows_per_cta\":64,\"splitk\":2,\"vec\":8,\"warps\":4}",
        "{\"a_load\":\"cs\",\"family\":\"gemv\",\"k_unroll\":1,\"kwarps\":2,\"lanes\":\"warp\",\"n_tile\":8,"
        "\"pipe\":\"dbuf\",\"reduction\":\"none\",\"rows_per_cta\":4,\"splitk\":1,\"vec\":8,\"warps\":4}",
        NULL,
        /* dbuf, vec 4 with a k tail, batched */
        "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":2,\"kwarps\":1,\"lanes\":\"warp\",\"n_tile\":1,"
        "\"pipe\":\"dbuf\",\"reduction\":\"none\",\"rows_per_cta\":2,\"splitk\":1,\"vec\":4,\"warps\":2}",
        NULL};
    p = prob4(3000, 5, 1000, 'T', 'N', GT_DT_BF16, GT_DT_F32);
    p.alpha = 0.5, p.beta = 0.25;
    smoke_gen(bk, ctx, p, splits);
    p = prob4(1024, 16, 512, 'T', 'N', GT_DT_BF16, GT_DT_BF16);
    p.bias = 1;
    snprintf(p.activation, sizeof p.activation, "gelu");
    smoke_gen(bk, ctx, p, splits + 7);
    p = prob4(4096, 1, 1004, 'T', 'N', GT_DT_F16, GT_DT_F16); /* lda 1004: vec 4, k tail */
    p.batch = 3;
    gt_problem_default_ld(&p);
    smoke_gen(bk, ctx, p, splits + 8);
    /* fp8 (sm_89+): validated against the reference with the scales the
     * worker sets (GT_CUDA_VAL_SCALE_A/B, not 1); the decode shapes, then
     * e4m3 x e5m2 with f32 D, bias, gelu, beta and a k tail (k 4112: not a
     * whole block), and batched with split-K given directly */
    if (ctx->sm >= 89) {
        static const int64_t shapes[][3] = {{14336, 1, 4096}, {4096, 1, 14336}, {1024, 1, 4096},
                                            {128256, 1, 4096}, {4096, 16, 4096}, {14336, 8, 4096}};
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            p = prob4(shapes[i][0], shapes[i][1], shapes[i][2], 'T', 'N', GT_DT_F8E4M3, GT_DT_BF16);
            smoke_gen(bk, ctx, p, f8_splits + 3);
        }
        /* the decoded path (f8 "cvt") beside the enumerated raw-byte mma */
        p = prob4(4096, 16, 4096, 'T', 'N', GT_DT_F8E4M3, GT_DT_BF16);
        smoke_gen(bk, ctx, p, f8_cvt16);
        p = prob4(14336, 1, 4096, 'T', 'N', GT_DT_F8E4M3, GT_DT_BF16);
        smoke_gen(bk, ctx, p, f8_cvt8);
        p = prob4(1024, 5, 4112, 'T', 'N', GT_DT_F8E4M3, GT_DT_F32);
        p.b_type = GT_DT_F8E5M2;
        p.bias = 1, p.bias_type = GT_DT_BF16, p.alpha = 0.5, p.beta = 0.25;
        snprintf(p.activation, sizeof p.activation, "gelu");
        gt_problem_finish(&p);
        smoke_gen(bk, ctx, p, f8_splits);
        p = prob4(2048, 5, 4096, 'T', 'N', GT_DT_F8E5M2, GT_DT_F16);
        p.b_type = GT_DT_F8E4M3;
        p.batch = 2;
        gt_problem_default_ld(&p);
        gt_problem_finish(&p);
        smoke_gen(bk, ctx, p, f8_splits + 1);
    } else {
        fprintf(stderr, "     SKIP fp8: sm_%d < 89\n", ctx->sm);
    }
    bk->close(ctx);
}
#endif

#ifdef GT_WITH_HIP
/* Every config of the HIP port's space (MI200 limits) for the Llama decode
 * shapes compiles with hipRTC for gfx90a; gfx942 too when this hipRTC knows
 * it (HIP 5.2's comgr aborts on it: the probe says so, in a child). */
static void test_hip(void)
{
    char why[256] = "";
    if (!gen_test_hiprtc_ready(why, sizeof why))
        return;
    const char *archs[] = {"gfx90a", "gfx942"};
    gt_gen_dev h;
    gt_gen_dev_hip(&h, 104);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    for (int a = 0; a < 2; a++) {
        int known = gt_hip_arch_known(archs[a], why, sizeof why);
        if (!known) {
            fprintf(stderr, "     SKIP %s: %s\n", archs[a], why);
            CHECK_MSG(a == 1, "gfx90a must be known: %s", why); /* gfx90a is required */
            continue;
        }
        /* the configs of all shapes, deduplicated by what reaches the compiler */
        gt_gen_cfg *all = NULL;
        gt_problem *ap = NULL;
        int n = 0, capn = 0;
        /* hipRTC takes ~2 CPU s a kernel: by default the 4096 x 4096 shapes
         * (n = 1, 16) with the port's cap; GT_TEST_HIP_ALL=1: every Llama
         * decode shape with the CUDA cap */
        int all_shapes = getenv("GT_TEST_HIP_ALL") != NULL;
        size_t shapes = all_shapes ? sizeof gen_test_llama / sizeof gen_test_llama[0] : 2;
        int hcap = all_shapes ? GT_GEN_DEFAULT_CAP : GT_HIP_GEN_CAP;
        for (int t = 1; t <= 16; t += 15)
            for (size_t i = all_shapes ? 0 : 1; i < shapes; i++) {
                gt_problem p = gen_test_prob(gen_test_llama[i][0], t, gen_test_llama[i][1], GT_DT_BF16, GT_DT_BF16);
                gt_gen_space s;
                CHECK(gt_gen_prune(&p, &h, hcap, &s) == 0 && s.nkeep > 0);
                for (int c = 0; c < s.nkeep; c++) {
                    int dup = 0;
                    for (int j = 0; j < n && !dup; j++) /* options: the config and the types */
                        dup = memcmp(&all[j], &s.keep[c], sizeof all[j]) == 0;
                    if (dup)
                        continue;
                    if (n == capn) {
                        capn = capn ? 2 * capn : 128;
                        all = realloc(all, (size_t)capn * sizeof *all);
                        ap = realloc(ap, (size_t)capn * sizeof *ap);
                    }
                    all[n] = s.keep[c];
                    ap[n++] = p;
                }
                gt_gen_space_free(&s);
                gt_gen_cfg ws[10]; /* lanes=warp and dbuf: a few, whatever the cap keeps */
                int nws = t == 1 ? space_sample(&p, &h, is_warp, ws, 6) : 0;
                CHECK(t > 1 || nws > 0);
                int nds = space_sample(&p, &h, is_dbuf, ws + nws, 4);
                CHECK(nds > 0);
                nws += nds;
                for (int c = 0; c < nws; c++) {
                    if (n == capn) {
                        capn = capn ? 2 * capn : 128;
                        all = realloc(all, (size_t)capn * sizeof *all);
                        ap = realloc(ap, (size_t)capn * sizeof *ap);
                    }
                    all[n] = ws[c];
                    ap[n++] = p;
                }
            }
        /* the compile options depend on the config and the types only: one batch */
        int ok = 0, failed = 0;
        double secs = 0;
        char first[320] = "";
        gt_hip_batch b;
        CHECK(gt_hip_gen_compile_all(archs[a], &ap[0], all, n, (int)(ncpu > 0 ? ncpu : 1), &b) == 0);
        ok = b.ok, failed = b.failed, secs = b.seconds;
        snprintf(first, sizeof first, "%s", b.first_err);
        fprintf(stderr, "     %s: %d of %d generated configs compiled with hipRTC in %.1f s\n", archs[a],
                ok, n, secs);
        CHECK_MSG(failed == 0 && ok == n && n > 0, "%s: %d failed, first: %s", archs[a], failed, first);
        free(all);
        free(ap);
    }
}
#endif

int main(int argc, char **argv)
{
    gt_test_mode(argc, argv);
#if defined(GT_WITH_CUDA) || defined(GT_WITH_HIP)
    if (gt_test_cpu()) {
        RUN(test_family);
        RUN(test_encoding);
        RUN(test_fault_cfg);
        RUN(test_applicable);
        RUN(test_rules);
        RUN(test_f8_rules);
        RUN(test_prune);
        RUN(test_geometry);
        RUN(test_fragments);
    }
#endif
    /* GPU sections: the HIP port's hipRTC compiles (they need hipcc, which a
     * machine may lack like a GPU) and the CUDA family on a device. */
    if (gt_test_gpu()) {
#ifdef GT_WITH_HIP
        RUN(test_hip); /* before the NVRTC pool starts: it forks */
#else
        gt_test_skip("hip", "the HIP port is not built (no hipcc when cmake ran)");
#endif
    }
#ifdef GT_WITH_CUDA
    if (gt_test_cpu()) {
        RUN(test_nvrtc_all);
        RUN(test_nvrtc_shared);
        RUN(test_nvrtc_f8);
        RUN(test_chain_ptx);
    }
    if (gt_test_gpu())
        RUN(test_gpu);
#else
    if (gt_test_cpu()) {
        fprintf(stderr, "     SKIP nvrtc: built without CUDA\n");
        CHECK(1);
    }
    if (gt_test_gpu())
        gt_test_skip("gpu", "built without CUDA");
#endif
    return gt_test_done();
}
