/* test_gen_mma.c: the generated "mma" family without a GPU: config encoding
 * (canonical text equal to gt_cfg_canonical, strict parsing with reasons),
 * applicability, every pruning rule triggered with its reason, the family's
 * space on the Llama-3-8B shapes, the launch geometry and -D definitions,
 * and NVRTC compiles of the kept configs for sm_90 and sm_80 (CUDA builds)
 * with ptxas reporting no spills. With a GPU it also builds, validates and
 * times every enumerated config of a few problems through the backend.
 * test_gen_mma_emu.c emulates the kernel's data path on the host. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gen_mma.h"
#include "gt_config.h"
#include "gen_test_util.h"
#include "gt_problem.h"
#include "gt_test.h"
#include "gt_util.h"

#ifdef GT_WITH_CUDA
#include "gen_cuda.h"
#include "gt_backend.h"
#include "gt_cuda.h"
#endif

static const int64_t k_tokens[] = {16, 128, 2048};

static const gt_mma_cfg k_cfg = {.bm = 128, .bn = 128, .bk = 32, .warps_m = 2, .warps_n = 2,
                                 .stages = 4, .splitk = 1, .reduction = GT_GEN_RED_NONE, .swizzle = 8};

static gt_gen_dev h100(void)
{
    gt_gen_dev d;
    gt_gen_dev_default(&d, 90, 132);
    return d;
}

/* 1 when text parses (strictly) to *want. */
static int parses_to(const char *text, const gt_mma_cfg *want)
{
    char err[256];
    gt_mma_cfg c;
    cJSON *j = cJSON_Parse(text);
    int ok = j && gt_mma_cfg_from_json(j, &c, err, sizeof err) == 0 && !memcmp(&c, want, sizeof c);
    cJSON_Delete(j);
    return ok;
}

static void test_encoding(void)
{
    char err[256], text[512];
    gt_mma_cfg back;
    cJSON *j = gt_mma_cfg_to_json(&k_cfg);
    CHECK(j != NULL);
    gt_mma_cfg_text(&k_cfg, text, sizeof text);
    const char *want = "{\"bk\":32,\"bm\":128,\"bn\":128,\"family\":\"mma\",\"reduction\":\"none\",\"splitk\":1,"
                       "\"stages\":4,\"swizzle\":8,\"warps_m\":2,\"warps_n\":2}";
    CHECK_MSG(strcmp(text, want) == 0, "%s", text);
    char *canon = gt_cfg_canonical(j);
    CHECK_MSG(canon && strcmp(canon, want) == 0, "gt_cfg_canonical: %s", canon ? canon : "(null)");
    free(canon);
    char h16[17];
    CHECK(gt_cfg_hash(j, h16) == 0 && strcmp(h16, "0000000000000000") != 0);
    fprintf(stderr, "     mma example hash %s\n", h16);
    CHECK(gt_gen_family(j) == GT_FAM_MMA);
    CHECK_MSG(gt_mma_cfg_from_json(j, &back, err, sizeof err) == 0, "%s", err);
    CHECK(memcmp(&back, &k_cfg, sizeof back) == 0);
    cJSON_Delete(j);
    /* the key order of the input does not matter */
    CHECK(parses_to("{\"warps_n\":2,\"family\":\"mma\",\"swizzle\":8,\"bm\":128,\"reduction\":\"none\","
                    "\"bn\":128,\"stages\":4,\"bk\":32,\"splitk\":1,\"warps_m\":2}", &k_cfg));
    /* the example with one key deleted (value NULL), replaced or added */
    static const struct {
        const char *key, *value, *why;
    } bad[] = {
        {"reduction", NULL, "reduction: missing"},
        {"warps_n", NULL, "warps_n: missing"},
        {"bk", "48", "bk=48"},
        {"bm", "120", "multiples of 16"},
        {"stages", "17", "stages: must be an integer in 2..16"},
        {"stages", "6", "inst sync takes 2 to 5"},
        {"inst", "\"hmma\"", "inst: must be"},
        {"inst", "\"wgmma\"", "inst wgmma: needs bm 64 or 128"},
        {"warps_m", "3", "warps_m=3"},
        {"reduction", "\"tree\"", "reduction: must be one of"},
        {"bm", "128.5", "bm: must be an integer"},
        {"bk", "\"32\"", "bk: must be an integer"},
        {"vec", "8", "key 'vec' unknown"},
        {"family", "\"gemv\"", "family must be \"mma\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j = gt_mma_cfg_to_json(&k_cfg);
        cJSON *v = bad[i].value ? cJSON_Parse(bad[i].value) : NULL;
        if (!bad[i].value)
            cJSON_DeleteItemFromObjectCaseSensitive(j, bad[i].key);
        else if (cJSON_GetObjectItemCaseSensitive(j, bad[i].key))
            cJSON_ReplaceItemInObjectCaseSensitive(j, bad[i].key, v);
        else
            cJSON_AddItemToObject(j, bad[i].key, v);
        err[0] = 0;
        CHECK_MSG(gt_mma_cfg_from_json(j, &back, err, sizeof err) == -1 && !strncmp(err, "mma: ", 5) &&
                      strstr(err, bad[i].why),
                  "%s=%s: got '%s', want '%s'", bad[i].key, bad[i].value ? bad[i].value : "(none)", err,
                  bad[i].why);
        cJSON_Delete(j);
    }
    static const char *const raw[] = {"{\"family\":\"mma\"}", "[1,2]",
                                      "{\"bk\":32,\"bk\":64,\"bm\":128,\"bn\":128,\"family\":\"mma\","
                                      "\"reduction\":\"none\",\"splitk\":1,\"stages\":4,\"swizzle\":8,"
                                      "\"warps_m\":2,\"warps_n\":2}"};
    for (size_t i = 0; i < 3; i++) {
        j = cJSON_Parse(raw[i]);
        err[0] = 0;
        CHECK_MSG(j && gt_mma_cfg_from_json(j, &back, err, sizeof err) == -1 && !strncmp(err, "mma: ", 5) &&
                      strstr(err, i == 0 ? "missing" : i == 1 ? "not a JSON object" : "once"),
                  "%s: got '%s'", raw[i], err);
        cJSON_Delete(j);
    }
    /* the gemv family's parse refuses an mma config and the other way round */
    j = cJSON_Parse(want);
    gt_gen_cfg gc;
    CHECK(j && gt_gen_cfg_from_json(j, &gc, err, sizeof err) == -1);
    cJSON_Delete(j);
}

static void expect_na(gt_problem p, const gt_gen_dev *d, const char *needle)
{
    char why[GT_GEN_REASON] = "";
    gt_problem_finish(&p);
    CHECK_MSG(gt_mma_applicable(&p, d, why, sizeof why) == -1 && strstr(why, needle), "want '%s', got '%s'",
              needle, why);
}

static void test_applicable(void)
{
    char why[GT_GEN_REASON];
    gt_gen_dev d = h100(), old, hip;
    gt_gen_dev_default(&old, 75, 40);
    gt_gen_dev_hip(&hip, 104);
    gt_problem p = gen_test_prob(4096, 2048, 4096, GT_DT_BF16, GT_DT_BF16);
    CHECK(gt_mma_applicable(&p, &d, why, sizeof why) == 0);
    p = gen_test_prob(3, 5, 7, GT_DT_F16, GT_DT_F32); /* any size: edges are zero-filled */
    CHECK(gt_mma_applicable(&p, &d, why, sizeof why) == 0);
    expect_na(gen_test_prob(4096, 16, 4096, GT_DT_BF16, GT_DT_BF16), &old, "sm_75");
    /* HIP has its port of the template (test_gen_mma_hip.c) */
    p = gen_test_prob(4096, 16, 4096, GT_DT_BF16, GT_DT_BF16);
    CHECK_MSG(gt_mma_applicable(&p, &hip, why, sizeof why) == 0, "%s", why);
    p = gen_test_prob(4096, 16, 4096, GT_DT_BF16, GT_DT_BF16);
    p.trans_a = 'N';
    gt_problem_default_ld(&p);
    expect_na(p, &d, "transA=N");
    p = gen_test_prob(4096, 16, 4096, GT_DT_BF16, GT_DT_BF16);
    p.trans_b = 'T';
    gt_problem_default_ld(&p);
    expect_na(p, &d, "transB=T");
    expect_na(gen_test_prob(64, 64, 64, GT_DT_F32, GT_DT_F32), &d, "A/B types f32/f32");
    p = gen_test_prob(64, 64, 64, GT_DT_BF16, GT_DT_BF16);
    p.b_type = GT_DT_F16;
    expect_na(p, &d, "A/B types bf16/f16");
    p = gen_test_prob(64, 64, 64, GT_DT_F16, GT_DT_F16);
    p.compute_type = p.scale_type = GT_DT_F16;
    expect_na(p, &d, "compute f16");
    p = gen_test_prob(64, 64, 64, GT_DT_BF16, GT_DT_F8E4M3);
    expect_na(p, &d, "C/D types");
    p = gen_test_prob(64, 64, 64, GT_DT_BF16, GT_DT_BF16);
    snprintf(p.activation, sizeof p.activation, "silu");
    expect_na(p, &d, "activation silu");
}

/* Every rule, each triggered on its own with its reason. */
static void test_rules(void)
{
    char why[GT_GEN_REASON];
    gt_gen_dev d = h100(), a100, big = h100();
    gt_gen_dev_default(&a100, 80, 108);
    big.sms = 100000; /* a device wide enough that split-K never fills it */
    gt_problem p = gen_test_prob(4096, 2048, 4096, GT_DT_BF16, GT_DT_BF16);
    CHECK_MSG(gt_mma_check(&p, &d, &k_cfg, why, sizeof why) == 0, "%s", why);
    gt_mma_cfg c = k_cfg;
    c.warps_m = 4, c.bm = 32;
    gen_test_mma_pruned(p, &d, c, "shape: warp tile 8x64");
    c = k_cfg, c.warps_n = 4, c.bn = 32;
    gen_test_mma_pruned(p, &d, c, "shape: warp tile 64x8");
    c = k_cfg, c.reduction = GT_GEN_RED_ATOMIC;
    gen_test_mma_pruned(p, &d, c, "reduction=atomic with splitk=1");
    c = k_cfg, c.splitk = 2;
    gen_test_mma_pruned(p, &d, c, "reduction=none with splitk=2");
    c = k_cfg, c.bm = 256, c.bn = 256, c.warps_m = 8, c.warps_n = 8;
    gen_test_mma_pruned(p, &d, c, "threads: 64 warps = 2048 threads > 1024");
    c = k_cfg, c.bm = 256, c.warps_m = 4;
    gen_test_mma_pruned(gen_test_prob(100, 2048, 4096, GT_DT_BF16, GT_DT_BF16), &d, c, "tile: bm=256 >= 2 x 112");
    c = k_cfg;
    gen_test_mma_pruned(gen_test_prob(4096, 16, 4096, GT_DT_BF16, GT_DT_BF16), &d, c, "tile: bn=128 >= 2 x 16");
    c = k_cfg, c.bk = 64;
    gen_test_mma_pruned(gen_test_prob(4096, 2048, 24, GT_DT_BF16, GT_DT_BF16), &d, c, "k tile: bk=64 > k=24");
    c = k_cfg, c.stages = 5;
    gen_test_mma_pruned(gen_test_prob(4096, 2048, 96, GT_DT_BF16, GT_DT_BF16), &d, c, "stages=5 > 3 k tiles");
    gt_problem q = gen_test_prob(4096, 2048, 4100, GT_DT_BF16, GT_DT_BF16); /* lda = ldb = 4100 */
    gen_test_mma_pruned(q, &d, k_cfg, "alignment: lda=4100, ldb=4100");
    q = gen_test_prob(4096, 2048, 4096, GT_DT_BF16, GT_DT_BF16);
    q.batch = 2, q.stride_a = 4096LL * 4096 + 4, q.stride_b = 4096LL * 2048, q.stride_c = q.stride_d = 4096LL * 2048;
    gen_test_mma_pruned(q, &d, k_cfg, "or the batch strides");
    c = k_cfg, c.swizzle = 16;
    gen_test_mma_pruned(gen_test_prob(1024, 2048, 4096, GT_DT_BF16, GT_DT_BF16), &d, c, "swizzle: group of 16 tile rows");
    gen_test_mma_pruned(gen_test_prob(4096, 128, 4096, GT_DT_BF16, GT_DT_BF16), &d, k_cfg, "with 32 x 1 tiles");
    c = k_cfg, c.splitk = 4, c.reduction = GT_GEN_RED_TWOPASS, c.swizzle = 1, c.stages = 2;
    gen_test_mma_pruned(gen_test_prob(256, 256, 96, GT_DT_BF16, GT_DT_BF16), &d, c, "split-K: splitk=4 leaves empty splits");
    c = k_cfg, c.splitk = 2, c.reduction = GT_GEN_RED_ATOMIC;
    gen_test_mma_pruned(p, &d, c, "split-K: 512 CTAs without it already cover the 132 SMs");
    c = k_cfg, c.splitk = 16, c.reduction = GT_GEN_RED_ATOMIC, c.swizzle = 1;
    gen_test_mma_pruned(gen_test_prob(1024, 1024, 8192, GT_DT_BF16, GT_DT_BF16), &d, c, "split-K: splitk=8 already gives 512");
    c = k_cfg, c.splitk = 2, c.reduction = GT_GEN_RED_ATOMIC, c.swizzle = 1;
    q = gen_test_prob(128, 128, 4096, GT_DT_BF16, GT_DT_BF16);
    q.batch = 40000, q.stride_a = q.stride_b = 128 * 4096, q.stride_c = q.stride_d = 128 * 128;
    gen_test_mma_pruned(q, &big, c, "grid z = batch x splitk = 80000");
    c = k_cfg, c.bm = 256, c.bn = 256, c.bk = 64, c.stages = 4, c.warps_m = 4, c.warps_n = 4;
    gen_test_mma_pruned(p, &d, c, "resources: 262144 bytes of dynamic shared memory");
    c.stages = 3; /* 192 KiB: fits an H100, not an A100 */
    gen_test_mma_pruned(p, &a100, c, "> 166912 per block (opt-in)");
    c = k_cfg, c.bm = 256, c.bn = 256, c.warps_m = 2, c.warps_n = 2, c.stages = 2;
    gen_test_mma_pruned(p, &d, c, "registers per thread > 255");
    c = k_cfg, c.bm = 256, c.bn = 256, c.warps_m = 4, c.warps_n = 4, c.stages = 2;
    gen_test_mma_pruned(p, &d, c, "registers x 512 threads > 65536");
    c = k_cfg, c.bm = 64, c.bn = 64, c.bk = 64, c.warps_m = 1, c.warps_n = 1, c.stages = 5;
    gen_test_mma_pruned(p, &d, c, "latency: 2 CTA(s) of 1 warp(s)");
    c = k_cfg, c.bm = 256, c.bn = 256, c.bk = 64, c.warps_m = 4, c.warps_n = 4, c.stages = 2;
    c.splitk = 16, c.reduction = GT_GEN_RED_TWOPASS, c.swizzle = 1;
    big.regs_sm = 1 << 20;
    gen_test_mma_pruned(gen_test_prob(8192, 8192, 16384, GT_DT_BF16, GT_DT_BF16), &big, c, "workspace: 4096 MiB > 256");
}

/* inst "wgmma": the encoding (the key appears only when not the default, so
 * an mma.sync config's text is what it always was), its problem-free limits,
 * its rules (sm_90 only, 32-bit tensor-map coordinates, shared memory with
 * the ring's alignment), and the space: on an H100 the n >= 128 Llama shapes
 * keep wgmma configs first, on an A100 none. */
static const gt_mma_cfg k_wg = {.bm = 128, .bn = 256, .bk = 64, .warps_m = 8, .warps_n = 1, .stages = 4,
                                .splitk = 1, .reduction = GT_GEN_RED_NONE, .swizzle = 8,
                                .inst = GT_MMA_INST_WGMMA};

static void test_wgmma(void)
{
    char err[256], text[512], why[GT_GEN_REASON];
    gt_mma_cfg back;
    cJSON *j = gt_mma_cfg_to_json(&k_wg);
    gt_mma_cfg_text(&k_wg, text, sizeof text);
    const char *want = "{\"bk\":64,\"bm\":128,\"bn\":256,\"family\":\"mma\",\"inst\":\"wgmma\",\"reduction\":\"none\","
                       "\"splitk\":1,\"stages\":4,\"swizzle\":8,\"warps_m\":8,\"warps_n\":1}";
    CHECK_MSG(strcmp(text, want) == 0, "%s", text);
    char *canon = j ? gt_cfg_canonical(j) : NULL;
    CHECK_MSG(canon && !strcmp(canon, want), "%s", canon ? canon : "(null)");
    free(canon);
    CHECK(j && gt_mma_cfg_from_json(j, &back, err, sizeof err) == 0 && !memcmp(&back, &k_wg, sizeof back));
    cJSON_Delete(j);
    /* "inst":"sync" spelled out is the default */
    CHECK(parses_to("{\"bk\":32,\"bm\":128,\"bn\":128,\"family\":\"mma\",\"inst\":\"sync\",\"reduction\":\"none\","
                    "\"splitk\":1,\"stages\":4,\"swizzle\":8,\"warps_m\":2,\"warps_n\":2}", &k_cfg));
    static const struct {
        int bm, bn, bk, wm, wn, st;
    } bad[] = {{256, 128, 64, 8, 1, 4}, {128, 192, 64, 8, 1, 4}, {128, 128, 32, 8, 1, 4},
               {128, 128, 64, 4, 2, 4}, {64, 128, 64, 8, 1, 4}, {128, 128, 64, 8, 1, 2}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gt_mma_cfg c = k_wg;
        c.bm = bad[i].bm, c.bn = bad[i].bn, c.bk = bad[i].bk, c.warps_m = bad[i].wm, c.warps_n = bad[i].wn;
        c.stages = bad[i].st;
        j = gt_mma_cfg_to_json(&c);
        err[0] = 0;
        CHECK_MSG(j && gt_mma_cfg_from_json(j, &back, err, sizeof err) == -1 && strstr(err, "inst wgmma: needs"),
                  "case %zu: %s", i, err);
        cJSON_Delete(j);
    }
    /* rules */
    gt_gen_dev d = h100(), a100;
    gt_gen_dev_default(&a100, 80, 108);
    gt_problem p = gen_test_prob(4096, 2048, 4096, GT_DT_BF16, GT_DT_BF16);
    CHECK_MSG(gt_mma_check(&p, &d, &k_wg, why, sizeof why) == 0, "%s", why);
    gen_test_mma_pruned(p, &a100, k_wg, "inst: wgmma and the TMA are sm_90a instructions; this device is sm_80");
    gt_gen_dev hip;
    gt_gen_dev_hip(&hip, 104);
    gen_test_mma_pruned(p, &hip, k_wg, "inst: wgmma and the TMA are sm_90a instructions; this device is HIP");
    gen_test_mma_pruned(gen_test_prob(4096, 2048, 4100, GT_DT_BF16, GT_DT_BF16), &d, k_wg, "alignment: lda=4100");
    gt_problem q = p;
    q.batch = 2, q.stride_a = 4096LL * 4096 - 8, q.stride_b = 4096LL * 2048, q.stride_c = q.stride_d = 4096LL * 2048;
    gen_test_mma_pruned(q, &d, k_wg, "tma: batch strides 16777208, 8388608 overlap the matrices");
    gt_mma_cfg c = k_wg;
    c.stages = 8; /* 8 x 384 x 128 + 1024 bytes */
    gen_test_mma_pruned(p, &d, c, "resources: 394240 bytes of dynamic shared memory (8 stages x (128 + 256) x 128");
    /* deep rings: 12 stages of a 64 x 64 tile (196 KB) fit, of a 128 x 128 one do not */
    {
        gt_problem n128 = gen_test_prob(4096, 128, 4096, GT_DT_BF16, GT_DT_BF16);
        gt_mma_cfg deep = k_wg;
        deep.bm = 64, deep.bn = 64, deep.warps_m = 4, deep.stages = 12, deep.swizzle = 4;
        CHECK_MSG(gt_mma_check(&n128, &d, &deep, why, sizeof why) == 0, "%s", why);
        j = gt_mma_cfg_to_json(&deep);
        CHECK(j && gt_mma_cfg_from_json(j, &back, err, sizeof err) == 0 && back.stages == 12);
        cJSON_Delete(j);
        gt_mma_cfg big = deep;
        big.bm = 128, big.bn = 128, big.warps_m = 8, big.swizzle = 1;
        gen_test_mma_pruned(n128, &d, big, "resources: 394240 bytes of dynamic shared memory (12 stages");
        /* the model: a one-wave grid in raster 1 with two tile columns reads A
         * once per column (raster 4 shares it); rasters the count cannot tell
         * apart rank 4 before 16 */
        gt_mma_cfg r1 = deep, r16 = deep;
        r1.stages = r16.stages = deep.stages = 8;
        r1.swizzle = 1, r16.swizzle = 16;
        double t4 = gt_mma_model_us(&n128, &d, &deep);
        CHECK_MSG(gt_mma_model_us(&n128, &d, &r1) > 1.2 * t4 && gt_mma_model_us(&n128, &d, &r16) > t4 &&
                      gt_mma_model_us(&n128, &d, &r16) < t4 + 0.01,
                  "raster 1 %.2f, 4 %.2f, 16 %.2f us", gt_mma_model_us(&n128, &d, &r1), t4,
                  gt_mma_model_us(&n128, &d, &r16));
        /* a one-wave grid's TMA ring fills once, whatever its depth: 12
         * stages no slower than 8 (the H100: 17.06 against 17.59 us in paired
         * rounds, h100_44_wgmma_model); with many waves, two resident CTAs of
         * a 3-stage 128 x 128 ring ahead of one of 6 stages (128256x128x4096:
         * 2 % faster there) */
        {
            gt_mma_cfg s8 = deep, s12 = deep;
            s8.stages = 8, s12.stages = 12;
            CHECK_MSG(gt_mma_model_us(&n128, &d, &s12) <= gt_mma_model_us(&n128, &d, &s8) + 1e-9,
                      "12 stages %.3f us, 8 stages %.3f", gt_mma_model_us(&n128, &d, &s12),
                      gt_mma_model_us(&n128, &d, &s8));
            gt_problem tall = gen_test_prob(128256, 128, 4096, GT_DT_BF16, GT_DT_BF16);
            gt_mma_cfg t3 = k_wg, t6;
            t3.bm = 128, t3.bn = 128, t3.warps_m = 8, t3.stages = 3, t3.swizzle = 1;
            t6 = t3, t6.stages = 6;
            CHECK_MSG(gt_mma_model_us(&tall, &d, &t3) < gt_mma_model_us(&tall, &d, &t6),
                      "3 stages %.2f us, 6 %.2f", gt_mma_model_us(&tall, &d, &t3),
                      gt_mma_model_us(&tall, &d, &t6));
        }
        /* and the default cap keeps a 64 x 64 tile in raster 4 at 8 and 12 stages,
         * the best of 600 configs measured on the H100 (h100_43) */
        gt_mma_space sp;
        CHECK(gt_mma_prune_kept(&n128, &d, GT_MMA_DEFAULT_CAP, &sp) == 0);
        int st8 = 0, st12 = 0;
        for (int i = 0; i < sp.nkeep; i++) {
            const gt_mma_cfg *k = &sp.keep[i];
            if (k->inst == GT_MMA_INST_WGMMA && k->bm == 64 && k->bn == 64 && k->swizzle == 4 && k->splitk == 1 &&
                k->ctas == 0) {
                st8 += k->stages == 8;
                st12 += k->stages == 12;
            }
        }
        CHECK_MSG(st8 == 1 && st12 == 1, "kept: %d at 8 stages, %d at 12", st8, st12);
        gt_mma_space_free(&sp);
    }
    gt_gen_geom g;
    gt_mma_geometry(&p, &k_wg, &g);
    CHECK(g.threads == 256u + 32u * (unsigned)gt_mma_wg_pw(&k_wg) && g.smem_bytes == 4 * 384 * 128 + 1024 && g.gx == 32 * 8 && g.kper == 4096);
    CHECK(gt_mma_src_of(&k_wg) == gt_gen_mma_wg_src && gt_mma_src_of(&k_cfg) == gt_gen_mma_src);
    /* bn <= 128: a producer warp after the consumers (32 more threads,
     * -DGT_PW=1); bn = 256 keeps its registers (no producer warp) */
    {
        gt_mma_cfg pw = k_wg;
        pw.bn = 128;
        char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
        int nd = gt_mma_defines(&p, &pw, defs), has = 0;
        for (int i = 0; i < nd; i++)
            has += !strcmp(defs[i], "-DGT_PW=1");
        gt_mma_geometry(&p, &pw, &g);
        CHECK(gt_mma_wg_pw(&pw) && has == 1 && g.threads == 256 + 32);
        nd = gt_mma_defines(&p, &k_wg, defs);
        for (int i = 0; i < nd; i++)
            CHECK(strcmp(defs[i], "-DGT_PW=1") != 0);
        CHECK(!gt_mma_wg_pw(&k_wg) && !gt_mma_wg_pw(&k_cfg));
    }
    /* the space */
    for (size_t t = 0; t < 3; t++) {
        gt_problem q = gen_test_prob(28672, k_tokens[t], 4096, GT_DT_BF16, GT_DT_BF16);
        gt_mma_space s, s80;
        CHECK(gt_mma_prune(&q, &d, GT_MMA_DEFAULT_CAP, &s) == 0 && gt_mma_prune(&q, &a100, GT_MMA_DEFAULT_CAP, &s80) == 0);
        int wg = 0, wg80 = 0;
        for (int k = 0; k < s.nkeep; k++)
            wg += s.keep[k].inst == GT_MMA_INST_WGMMA;
        for (int k = 0; k < s80.nkeep; k++)
            wg80 += s80.keep[k].inst == GT_MMA_INST_WGMMA;
        CHECK(wg80 == 0);
        if (k_tokens[t] >= 128)
            CHECK_MSG(wg > 0 && s.keep[0].inst == GT_MMA_INST_WGMMA, "n=%d: %d wgmma kept", (int)k_tokens[t], wg);
        else /* n = 16: the tile rule leaves wgmma's bn = 16 alone */
            for (int k = 0; k < s.nkeep; k++)
                CHECK(s.keep[k].inst != GT_MMA_INST_WGMMA || s.keep[k].bn == 16);
        CHECK_MSG(k_tokens[t] >= 128 || wg > 0, "n=%d: %d wgmma kept", (int)k_tokens[t], wg);
        gt_mma_space_free(&s);
        gt_mma_space_free(&s80);
    }
}

/* A persistent wgmma grid (config "ctas"): the key appears only when set,
 * so every config stored before it keeps its text; it needs inst wgmma and
 * splitk 1 (refused at parse) and more tiles than CTAs (pruned); the grid is
 * the CTAs, not the tiles, with one epilogue staging buffer per warpgroup
 * past the ring and -DGT_PERSIST=1; the space keeps persistent copies
 * beside the one-CTA-per-tile configs where tiles exceed the SMs. */
/* pingpong: two consumer warpgroups of 64 rows taking a persistent CTA's
 * tiles in turn, loads from a producer warpgroup */
static void test_wgmma_pingpong(void)
{
    char err[256], text[512], why[GT_GEN_REASON];
    gt_gen_dev d = h100();
    gt_problem p = gen_test_prob(28672, 2048, 4096, GT_DT_BF16, GT_DT_BF16);
    gt_mma_cfg c = k_wg, back;
    c.bm = 64, c.warps_m = 4, c.ctas = 132, c.pingpong = 1, c.stages = 5;
    gt_mma_cfg_text(&c, text, sizeof text);
    const char *want = "{\"bk\":64,\"bm\":64,\"bn\":256,\"ctas\":132,\"family\":\"mma\",\"inst\":\"wgmma\","
                       "\"pingpong\":1,\"reduction\":\"none\",\"splitk\":1,\"stages\":5,\"swizzle\":8,"
                       "\"warps_m\":4,\"warps_n\":1}";
    CHECK_MSG(strcmp(text, want) == 0, "%s", text);
    cJSON *j = gt_mma_cfg_to_json(&c);
    char *canon = j ? gt_cfg_canonical(j) : NULL;
    CHECK_MSG(canon && !strcmp(canon, want), "%s", canon ? canon : "(null)");
    free(canon);
    CHECK(j && gt_mma_cfg_from_json(j, &back, err, sizeof err) == 0 && !memcmp(&c, &back, sizeof c));
    cJSON_Delete(j);
    /* "pingpong":0 is the default; anything else is refused */
    j = cJSON_Parse("{\"bk\":64,\"bm\":128,\"bn\":256,\"family\":\"mma\",\"inst\":\"wgmma\",\"pingpong\":0,"
                    "\"reduction\":\"none\",\"splitk\":1,\"stages\":4,\"swizzle\":8,\"warps_m\":8,\"warps_n\":1}");
    CHECK(j && gt_mma_cfg_from_json(j, &back, err, sizeof err) == 0 && back.pingpong == 0);
    cJSON_Delete(j);
    j = cJSON_Parse("{\"bk\":64,\"bm\":64,\"bn\":256,\"family\":\"mma\",\"inst\":\"wgmma\",\"pingpong\":2,"
                    "\"reduction\":\"none\",\"splitk\":1,\"stages\":4,\"swizzle\":8,\"warps_m\":4,\"warps_n\":1}");
    CHECK(j && gt_mma_cfg_from_json(j, &back, err, sizeof err) != 0 && strstr(err, "pingpong: must be 0 or 1"));
    cJSON_Delete(j);
    CHECK_MSG(gt_mma_check(&p, &d, &c, why, sizeof why) == 0, "%s", why);
    /* geometry: 2 x 128 consumers + the producer warpgroup, a staging
     * buffer per consumer warpgroup; defines */
    gt_gen_geom g;
    gt_mma_geometry(&p, &c, &g);
    CHECK(g.threads == 256 + 128 && g.gx == 132 && gt_mma_wg_pw(&c) == 2);
    CHECK(g.smem_bytes == 5 * 320 * 128 + 1024 + 2 * GT_MMA_WG_TS_BYTES); /* bn 256 */
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
    int nd = gt_mma_defines(&p, &c, defs), pp = 0, pw = 0;
    for (int i = 0; i < nd; i++)
        pp += !strcmp(defs[i], "-DGT_PP=1"), pw += !strcmp(defs[i], "-DGT_PW=2");
    CHECK(pp == 1 && pw == 1);
    /* rules: persistent only, bm 64, two tiles a CTA at least */
    gt_mma_cfg x = c;
    x.ctas = 0;
    gen_test_mma_pruned(p, &d, x, "pingpong: pingpong=1: needs a persistent grid and bm 64 with warps_m 4");
    x = c, x.bm = 128, x.warps_m = 8;
    gen_test_mma_pruned(p, &d, x, "pingpong: pingpong=1: needs a persistent grid and bm 64 with warps_m 4");
    /* 28672 x 2048: 448 x 8 tiles over 132 CTAs is enough; 4096 x 256: 64 x 1 over 48 is not */
    x = c, x.ctas = 48, x.swizzle = 1;
    gen_test_mma_pruned(gen_test_prob(4096, 256, 4096, GT_DT_BF16, GT_DT_BF16), &d, x,
                        "pingpong: 64 tiles over 48 CTAs: fewer than two a CTA");
    x = c, x.bn = 128;
    gen_test_mma_pruned(p, &d, x, "pingpong: pingpong=1: needs bn 256, no cluster and 4 stages or more");
    x = c, x.cluster = 2;
    gen_test_mma_pruned(p, &d, x, "pingpong: pingpong=1: needs bn 256, no cluster and 4 stages or more");
    x = c, x.stages = 3;
    gen_test_mma_pruned(p, &d, x, "pingpong: pingpong=1: needs bn 256, no cluster and 4 stages or more");
    /* the space keeps pingpong configs where the math is the limit (on the
     * H200 they ran up to 4 % ahead of the cooperative 128 x 256 tile on the
     * k = 4096 prefill shapes), none where a CTA would get one tile */
    gt_mma_space sp;
    CHECK(gt_mma_prune_kept(&p, &d, GT_MMA_DEFAULT_CAP, &sp) == 0);
    int npp = 0;
    for (int i = 0; i < sp.nkeep; i++)
        npp += sp.keep[i].pingpong && sp.keep[i].bm == 64 && sp.keep[i].bn == 256 && !sp.keep[i].cluster;
    CHECK_MSG(npp >= 1, "28672x2048x4096 keeps %d pingpong configs", npp);
    gt_mma_space_free(&sp);
    gt_problem small = gen_test_prob(4096, 128, 4096, GT_DT_BF16, GT_DT_BF16);
    CHECK(gt_mma_prune_kept(&small, &d, GT_MMA_DEFAULT_CAP, &sp) == 0);
    for (int i = 0; i < sp.nkeep; i++)
        CHECK(!sp.keep[i].pingpong);
    gt_mma_space_free(&sp);
}

static void test_wgmma_persist(void)
{
    char err[256], text[512], why[GT_GEN_REASON];
    gt_mma_cfg c = k_wg, back;
    c.ctas = 132;
    gt_mma_cfg_text(&c, text, sizeof text);
    const char *want = "{\"bk\":64,\"bm\":128,\"bn\":256,\"ctas\":132,\"family\":\"mma\",\"inst\":\"wgmma\","
                       "\"reduction\":\"none\",\"splitk\":1,\"stages\":4,\"swizzle\":8,\"warps_m\":8,\"warps_n\":1}";
    CHECK_MSG(strcmp(text, want) == 0, "%s", text);
    cJSON *j = gt_mma_cfg_to_json(&c);
    char *canon = j ? gt_cfg_canonical(j) : NULL;
    CHECK_MSG(canon && !strcmp(canon, want), "%s", canon ? canon : "(null)");
    free(canon);
    CHECK(j && gt_mma_cfg_from_json(j, &back, err, sizeof err) == 0 && !memcmp(&back, &c, sizeof back));
    cJSON_Delete(j);
    CHECK(parses_to(want, &c));
    /* "ctas":0 spelled out is the default */
    CHECK(parses_to("{\"bk\":64,\"bm\":128,\"bn\":256,\"ctas\":0,\"family\":\"mma\",\"inst\":\"wgmma\","
                    "\"reduction\":\"none\",\"splitk\":1,\"stages\":4,\"swizzle\":8,\"warps_m\":8,\"warps_n\":1}",
                    &k_wg));
    static const char *const bad[] = {
        "{\"bk\":64,\"bm\":128,\"bn\":256,\"ctas\":-1,\"family\":\"mma\",\"inst\":\"wgmma\",\"reduction\":\"none\","
        "\"splitk\":1,\"stages\":4,\"swizzle\":8,\"warps_m\":8,\"warps_n\":1}",
        "{\"bk\":64,\"bm\":128,\"bn\":256,\"ctas\":1.5,\"family\":\"mma\",\"inst\":\"wgmma\",\"reduction\":\"none\","
        "\"splitk\":1,\"stages\":4,\"swizzle\":8,\"warps_m\":8,\"warps_n\":1}",
        "{\"bk\":64,\"bm\":128,\"bn\":256,\"ctas\":\"132\",\"family\":\"mma\",\"inst\":\"wgmma\",\"reduction\":\"none\","
        "\"splitk\":1,\"stages\":4,\"swizzle\":8,\"warps_m\":8,\"warps_n\":1}",
        "{\"bk\":64,\"bm\":128,\"bn\":256,\"ctas\":132,\"family\":\"mma\",\"inst\":\"wgmma\",\"reduction\":\"atomic\","
        "\"splitk\":2,\"stages\":4,\"swizzle\":8,\"warps_m\":8,\"warps_n\":1}",
        "{\"bk\":32,\"bm\":128,\"bn\":128,\"ctas\":132,\"family\":\"mma\",\"reduction\":\"none\","
        "\"splitk\":1,\"stages\":4,\"swizzle\":8,\"warps_m\":2,\"warps_n\":2}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *b = cJSON_Parse(bad[i]);
        err[0] = 0;
        CHECK_MSG(b && gt_mma_cfg_from_json(b, &back, err, sizeof err) == -1 && strstr(err, "config ctas"),
                  "case %zu: %s", i, err);
        cJSON_Delete(b);
    }
    /* rules: more tiles than CTAs */
    gt_gen_dev d = h100();
    gt_problem p = gen_test_prob(4096, 2048, 4096, GT_DT_BF16, GT_DT_BF16); /* 32 x 8 tiles */
    CHECK_MSG(gt_mma_check(&p, &d, &c, why, sizeof why) == 0, "%s", why);
    gen_test_mma_pruned(gen_test_prob(4096, 1024, 4096, GT_DT_BF16, GT_DT_BF16), &d, c,
                        "persist: 128 tiles fit in one grid of 132 CTAs");
    /* the parse's limits hold for configs made in code too */
    {
        gt_mma_cfg x = c;
        x.splitk = 2, x.reduction = GT_GEN_RED_ATOMIC, x.swizzle = 1;
        gen_test_mma_pruned(gen_test_prob(512, 256, 4096, GT_DT_BF16, GT_DT_BF16), &d, x,
                            "persist: ctas=132: a persistent grid needs inst wgmma and splitk 1");
        x = c, x.ctas = 131, x.cluster = 2;
        gen_test_mma_pruned(p, &d, x, "cluster: cluster=2: needs a persistent grid of an even number of CTAs");
    }
    /* 2^23 x 2^22 tiles of 2^14 k tiles each over 132 CTAs */
    gen_test_mma_pruned(gen_test_prob(1LL << 30, 1LL << 30, 1LL << 20, GT_DT_BF16, GT_DT_BF16), &d, c,
                        "ring iterations per CTA overflow the kernel's 32-bit counters");
    /* geometry and defines: the grid is the CTAs (batch in z), the ring plus
     * the staging per warpgroup (bn 256: the TMA store's two buffers) */
    gt_gen_geom g;
    gt_problem pb = p;
    pb.batch = 3, pb.stride_a = 4096LL * 4096, pb.stride_b = 4096LL * 2048, pb.stride_c = pb.stride_d = 4096LL * 2048;
    gt_mma_geometry(&pb, &c, &g);
    CHECK(g.gx == 132 && g.gy == 1 && g.gz == 3 && g.threads == 256 && g.ws_bytes == 0);
    CHECK(g.smem_bytes == 4 * 384 * 128 + 1024 + 2 * GT_MMA_WG_TS_BYTES);
    /* two 1024-aligned buffers */
    CHECK(GT_MMA_WG_TS_BYTES == 8192 && GT_MMA_WG_TS_BYTES % 2048 == 0);
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
    int nd = gt_mma_defines(&p, &c, defs), has = 0, ts = 0, epb = 0;
    for (int i = 0; i < nd; i++)
        has += !strcmp(defs[i], "-DGT_PERSIST=1"), ts += !strcmp(defs[i], "-DGT_TS=1"),
            epb += !strcmp(defs[i], "-DGT_EPB=8192");
    CHECK(has == 1 && ts == 1 && epb == 1);
    nd = gt_mma_defines(&p, &k_wg, defs);
    for (int i = 0; i < nd; i++)
        CHECK(strcmp(defs[i], "-DGT_PERSIST=1") != 0 && strcmp(defs[i], "-DGT_TS=1") != 0 &&
              strncmp(defs[i], "-DGT_EPB=", 9) != 0);
    /* TMA stores: a third map, of D (dims m, n, batch; a warpgroup's 64 rows by 32 columns a
     * box), for 16-bit D without bias or C, aligned; else the two maps and the stores of old */
    {
        gt_mma_tmap tm[GT_MMA_MAX_TMAPS];
        CHECK(gt_mma_wg_tma_store(&pb, &c) && gt_mma_tmaps(&pb, &c, tm) == 3);
        CHECK(!strcmp(tm[2].operand, "d") && tm[2].dtype == GT_MMA_TMAP_BF16 &&
              tm[2].dims[0] == 4096 && tm[2].dims[1] == 2048 && tm[2].dims[2] == 3 &&
              tm[2].strides[0] == 4096 * 2 &&
              tm[2].strides[1] == 4096ULL * 2048 * 2 && tm[2].box[0] == 64 && tm[2].box[1] == 32 &&
              tm[2].box[2] == 1);
        CHECK(gt_mma_tmaps(&p, &c, tm) == 3 && tm[2].dims[2] == 1 &&
              tm[2].strides[1] == 4096ULL * 2048 * 2);
        /* each map's pointer by its operand, whatever the order */
        char pa, pb, pd;
        CHECK(gt_mma_tmap_base(&tm[0], &pa, &pb, &pd) == &pa &&
              gt_mma_tmap_base(&tm[1], &pa, &pb, &pd) == &pb &&
              gt_mma_tmap_base(&tm[2], &pa, &pb, &pd) == &pd);
        gt_problem q = gen_test_prob(4096, 2048, 4096, GT_DT_F16, GT_DT_F16);
        CHECK(gt_mma_tmaps(&q, &c, tm) == 3 && tm[2].dtype == GT_MMA_TMAP_F16);
        q = gen_test_prob(4096, 2048, 4096, GT_DT_BF16, GT_DT_F32); /* f32 D: the padded staging */
        CHECK(!gt_mma_wg_tma_store(&q, &c) && gt_mma_tmaps(&q, &c, tm) == 2);
        q = p, q.bias = 1, q.bias_type = GT_DT_BF16;
        CHECK(!gt_mma_wg_tma_store(&q, &c));
        q = p, q.beta = 1.0;
        CHECK(!gt_mma_wg_tma_store(&q, &c));
        q = p, q.ldd = 4100; /* 8200 bytes: not a multiple of 16 */
        CHECK(!gt_mma_wg_tma_store(&q, &c));
        q = p, q.ldd = 4104;
        CHECK(gt_mma_wg_tma_store(&q, &c));
        gt_mma_cfg x = c;
        x.bn = 128, x.warps_m = 8;
        CHECK(!gt_mma_wg_tma_store(&p, &x) && gt_mma_wg_epi_bytes(&x) == GT_MMA_WG_EPI_BYTES);
        CHECK(!gt_mma_wg_tma_store(&p, &k_wg)); /* a CTA per tile */
    }
    /* clusters of two: the key after bn, refused without an even
     * persistent grid, pruned with one tile row; half of B per CTA (the
     * map's box), -DGT_MC=1, a grid of whole pairs of tile rows */
    {
        gt_mma_cfg m = c;
        m.cluster = 2;
        gt_mma_cfg_text(&m, text, sizeof text);
        CHECK_MSG(!strcmp(text, "{\"bk\":64,\"bm\":128,\"bn\":256,\"cluster\":2,\"ctas\":132,\"family\":\"mma\","
                                "\"inst\":\"wgmma\",\"reduction\":\"none\",\"splitk\":1,\"stages\":4,\"swizzle\":8,"
                                "\"warps_m\":8,\"warps_n\":1}"),
                  "%s", text);
        CHECK(parses_to(text, &m));
        cJSON *mj = gt_mma_cfg_to_json(&m);
        char *mc = mj ? gt_cfg_canonical(mj) : NULL;
        CHECK_MSG(mc && !strcmp(mc, text), "%s", mc ? mc : "(null)");
        free(mc);
        cJSON_ReplaceItemInObjectCaseSensitive(mj, "ctas", cJSON_CreateNumber(131));
        CHECK(gt_mma_cfg_from_json(mj, &back, err, sizeof err) == -1 && strstr(err, "cluster=2: needs"));
        cJSON_ReplaceItemInObjectCaseSensitive(mj, "cluster", cJSON_CreateNumber(3));
        CHECK(gt_mma_cfg_from_json(mj, &back, err, sizeof err) == -1 && strstr(err, "config cluster: must be 1 or 2"));
        cJSON_Delete(mj);
        CHECK(parses_to("{\"bk\":64,\"bm\":128,\"bn\":256,\"cluster\":1,\"family\":\"mma\",\"inst\":\"wgmma\","
                        "\"reduction\":\"none\",\"splitk\":1,\"stages\":4,\"swizzle\":8,\"warps_m\":8,\"warps_n\":1}",
                        &k_wg));
        CHECK_MSG(gt_mma_check(&p, &d, &m, why, sizeof why) == 0, "%s", why);
        gt_mma_cfg m1 = m;
        m1.swizzle = 1;
        gen_test_mma_pruned(gen_test_prob(128, 16384, 4096, GT_DT_BF16, GT_DT_BF16), &d, m1,
                            "cluster: 1 tile row(s)");
        gt_mma_tmap tm[GT_MMA_MAX_TMAPS];
        /* A, B (half of it each), and D */
        CHECK(gt_mma_tmaps(&p, &m, tm) == 3 && tm[0].box[1] == 128 && tm[1].box[1] == 128);
        gt_problem odd = gen_test_prob(1100, 2048, 4096, GT_DT_BF16, GT_DT_BF16); /* 9 tile rows: 5 pairs */
        m.ctas = 200;
        gt_mma_geometry(&odd, &m, &g);
        CHECK(g.gx == 5 * 8 * 2);
        m.ctas = 64;
        gt_mma_geometry(&odd, &m, &g);
        CHECK(g.gx == 64);
        nd = gt_mma_defines(&p, &m, defs), has = 0;
        for (int i = 0; i < nd; i++)
            has += !strcmp(defs[i], "-DGT_MC=1");
        CHECK(has == 1);
    }
    /* the staging: 32 columns of 64 bf16 values or 16 of f32, padded by 16 bytes */
    CHECK(GT_MMA_WG_EPI_BYTES >= (64 + 8) * 2 * 32 && GT_MMA_WG_EPI_BYTES >= (64 + 4) * 4 * 16);
    /* the space: persistent copies (ctas = the SMs x the CTAs resident on one, splitk 1) beside the
     * others where the tiles exceed the SMs, none where they do not */
    for (int big = 0; big < 2; big++) {
        /* 512 x 256: at most 8 x 16 tiles (64 x 16), within the 132 SMs */
        gt_problem q = gen_test_prob(big ? 28672 : 512, big ? 2048 : 256, 4096, GT_DT_BF16, GT_DT_BF16);
        gt_mma_space s;
        CHECK(gt_mma_prune(&q, &d, GT_MMA_DEFAULT_CAP, &s) == 0);
        int np = 0, other = 0;
        for (int k = 0; k < s.nkeep; k++) {
            np += s.keep[k].ctas > 0;
            other += s.keep[k].inst == GT_MMA_INST_WGMMA && s.keep[k].ctas == 0;
            /* the SMs x the CTAs resident on one */
            CHECK(s.keep[k].ctas == 0 || (s.keep[k].ctas % 132 == 0 && s.keep[k].splitk == 1));
            CHECK(!s.keep[k].cluster || (s.keep[k].ctas > 0 && s.keep[k].cluster == 2));
        }
        CHECK_MSG(big ? np > 0 && other > 0 : np == 0, "%s: %d persistent, %d other", big ? "big" : "small", np, other);
        gt_mma_space_free(&s);
    }
}

/* fp8 (OCP e4m3/e5m2 A and B, per-tensor scales) on inst wgmma: applicable
 * on an H100 only; every kept config is wgmma with bk 128 (one 128-byte
 * row); mma.sync and a 64-value k tile are pruned with their reasons, and
 * so are 16-byte-misaligned rows; the tensor maps move bytes (UINT8, box
 * 128 values, strides in bytes); the defines carry B's type. */
static void test_wgmma_f8(void)
{
    char err[256], why[GT_GEN_REASON];
    gt_gen_dev d = h100(), ada, hip;
    gt_gen_dev_default(&ada, 89, 128);
    gt_gen_dev_hip(&hip, 104);
    gt_problem p = gen_test_prob_f8(4096, 2048, 4096, GT_DT_F8E4M3, GT_DT_F8E4M3, GT_DT_BF16);
    CHECK_MSG(gt_mma_applicable(&p, &d, why, sizeof why) == 0, "%s", why);
    expect_na(p, &ada, "A/B types f8e4m3/f8e4m3: the family runs fp8 inputs on wgmma only, a CUDA sm_90 "
                       "instruction (this device is sm_89)");
    expect_na(p, &hip, "fp8 inputs on wgmma only, a CUDA sm_90 instruction (this device is HIP");
    expect_na(gen_test_prob_f8(4096, 2048, 4096, GT_DT_F8E4M3, GT_DT_BF16, GT_DT_BF16), &d, "OCP");
    expect_na(gen_test_prob_f8(4096, 2048, 4096, GT_DT_F8E5M2, GT_DT_F8E5M2, GT_DT_BF16), &d, "e5m2/e5m2");
    /* encoding: bk 128 only with wgmma */
    gt_mma_cfg c = k_wg, back;
    c.bk = 128;
    cJSON *j = gt_mma_cfg_to_json(&c);
    CHECK(j && gt_mma_cfg_from_json(j, &back, err, sizeof err) == 0 && back.bk == 128);
    cJSON_Delete(j);
    gt_mma_cfg s128 = k_cfg;
    s128.bk = 128;
    j = gt_mma_cfg_to_json(&s128);
    CHECK_MSG(j && gt_mma_cfg_from_json(j, &back, err, sizeof err) == -1 && strstr(err, "bk=128: must be 32 or 64"),
              "%s", err);
    cJSON_Delete(j);
    /* rules */
    CHECK_MSG(gt_mma_check(&p, &d, &c, why, sizeof why) == 0, "%s", why);
    gen_test_mma_pruned(p, &d, k_wg, "k tile: inst wgmma loads k tiles of one 128-byte row: bk=64 x 1-byte");
    gt_problem b16 = gen_test_prob(4096, 2048, 4096, GT_DT_BF16, GT_DT_BF16);
    gen_test_mma_pruned(b16, &d, c, "k tile: inst wgmma loads k tiles of one 128-byte row: bk=128 x 2-byte");
    gen_test_mma_pruned(p, &d, k_cfg, "inst: fp8 inputs run on inst wgmma only");
    gen_test_mma_pruned(gen_test_prob_f8(4096, 2048, 4104, GT_DT_F8E4M3, GT_DT_F8E4M3, GT_DT_BF16), &d, c,
                        "alignment: lda=4104, ldb=4104 not all multiples of 16");
    gen_test_mma_pruned(gen_test_prob_f8(4096, 2048, 64, GT_DT_F8E4M3, GT_DT_F8E4M3, GT_DT_BF16), &d, c,
                        "k tile: bk=128 > k=64: half of every stage would be zeros");
    /* geometry and maps: the same 128-byte rows as bf16's 64 values */
    gt_gen_geom g;
    gt_mma_geometry(&p, &c, &g);
    CHECK(g.threads == 256u + 32u * (unsigned)gt_mma_wg_pw(&c) && g.smem_bytes == 4 * 384 * 128 + 1024 && g.kper == 4096);
    gt_mma_tmap t[GT_MMA_MAX_TMAPS];
    CHECK(gt_mma_tmaps(&p, &c, t) == 2);
    CHECK(t[0].dtype == GT_MMA_TMAP_U8 && t[0].box[0] == 128 && t[0].box[1] == 128 && t[1].box[1] == 256 &&
          t[0].strides[0] == 4096 && t[0].strides[1] == 4096ULL * 4096 && t[1].dims[1] == 2048);
    CHECK(!strcmp(gt_mma_tmap_type_name(&t[0]), "CU_TENSOR_MAP_DATA_TYPE_UINT8"));
    CHECK(gt_mma_tmaps(&b16, &k_wg, t) == 2 && t[0].dtype == GT_MMA_TMAP_BF16 && t[0].box[0] == 64 &&
          t[0].strides[0] == 8192);
    /* defines: B's type for fp8 only, none for mma.sync */
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
    gt_problem mix = gen_test_prob_f8(1024, 256, 4096, GT_DT_F8E4M3, GT_DT_F8E5M2, GT_DT_F32);
    int n = gt_mma_defines(&mix, &c, defs), bb = 0, ab = 0;
    for (int i = 0; i < n; i++)
        bb += !strcmp(defs[i], "-DGT_BB=3"), ab += !strcmp(defs[i], "-DGT_AB=2");
    CHECK(n > 0 && bb == 1 && ab == 1);
    CHECK(gt_mma_defines(&mix, &k_cfg, defs) == -1);
    n = gt_mma_defines(&b16, &k_wg, defs);
    for (int i = 0; i < n; i++)
        CHECK(strncmp(defs[i], "-DGT_BB", 7) != 0);
    /* the space: prefill and decode shapes keep wgmma configs of bk 128 only */
    static const int64_t tok[] = {16, 128, 2048};
    for (size_t k = 0; k < 3; k++)
        for (size_t i = 0; i < 5; i++) {
            gt_problem q = gen_test_prob_f8(gen_test_llama[i][0], tok[k], gen_test_llama[i][1], GT_DT_F8E4M3,
                                            GT_DT_F8E4M3, GT_DT_BF16);
            gt_mma_space s;
            CHECK(gt_mma_prune_kept(&q, &d, GT_MMA_DEFAULT_CAP, &s) == 0);
            CHECK_MSG(s.nkeep > 0, "%lldx%lldx%lld: %s", (long long)q.m, (long long)q.n, (long long)q.k, s.why);
            for (int x = 0; x < s.nkeep; x++)
                CHECK(s.keep[x].inst == GT_MMA_INST_WGMMA && s.keep[x].bk == 128);
            gt_mma_space_free(&s);
        }
}

/* Every config of the raw space is kept or pruned with a reason; the kept
 * ones pass every rule; the Llama shapes all get a full family. */
static void test_prune(void)
{
    gt_gen_dev d = h100(), a100;
    gt_gen_dev_default(&a100, 80, 108);
    /* the enumeration's build without the pruned list: the same kept
     * configs in the same order, the pruned only counted */
    {
        gt_problem q = gen_test_prob(4096, 128, 4096, GT_DT_BF16, GT_DT_BF16);
        gt_mma_space a, b;
        CHECK(gt_mma_prune(&q, &d, GT_MMA_DEFAULT_CAP, &a) == 0 && gt_mma_prune_kept(&q, &d, GT_MMA_DEFAULT_CAP, &b) == 0);
        CHECK(a.nkeep == b.nkeep && a.npruned == b.npruned && a.raw == b.raw && b.pruned == NULL && a.pruned);
        CHECK(a.nkeep == b.nkeep && memcmp(a.keep, b.keep, (size_t)a.nkeep * sizeof *a.keep) == 0);
        gt_mma_space_free(&a);
        gt_mma_space_free(&b);
    }
    double t0 = gt_mono_ms();
    for (int dv = 0; dv < 2; dv++)
        for (size_t t = 0; t < 3; t++)
            for (size_t i = 0; i < sizeof gen_test_llama / sizeof gen_test_llama[0]; i++) {
                gt_problem p = gen_test_prob(gen_test_llama[i][0], k_tokens[t], gen_test_llama[i][1], GT_DT_BF16, GT_DT_BF16);
                const gt_gen_dev *dev = dv ? &a100 : &d;
                gt_mma_space s;
                char why[GT_GEN_REASON], label[64];
                gt_problem_label(&p, label, sizeof label);
                CHECK(gt_mma_prune(&p, dev, GT_MMA_DEFAULT_CAP, &s) == 0);
                CHECK_MSG(s.why[0] == 0 && s.nkeep == GT_MMA_DEFAULT_CAP, "%s: %d kept (%s)", label, s.nkeep,
                          s.why);
                /* mma.sync, wgmma (2 x 5 x 5 stages x 9 x 4), and wgmma's
                 * persistent copies without and with clusters and pingpong
                 * (splitk 1: 2 x 5 x 5 x 4 each) */
                CHECK(s.nkeep + s.npruned == s.raw && s.raw == 64800 + 1800 + 3 * 200);
                int bad = 0, ranked = 0, tiles = 0;
                for (int k = 0; k < s.npruned; k++) {
                    bad += strlen(s.pruned[k].reason) < 10 || !strchr(s.pruned[k].reason, ':');
                    ranked += !strncmp(s.pruned[k].reason, "rank: ", 6);
                    /* a pruned config really fails its rule (or is ranked out) */
                    if (k % 97 == 0 && strncmp(s.pruned[k].reason, "rank: ", 6))
                        CHECK(gt_mma_check(&p, dev, &s.pruned[k].cfg, why, sizeof why) == 1 &&
                              !strcmp(why, s.pruned[k].reason));
                }
                CHECK_MSG(bad == 0 && ranked > 0, "%s: %d without reason, %d ranked", label, bad, ranked);
                for (int k = 0; k < s.nkeep; k++) {
                    CHECK_MSG(gt_mma_check(&p, dev, &s.keep[k], why, sizeof why) == 0, "%s kept but %s", label,
                              why);
                    tiles += k == 0 || s.keep[k].bm != s.keep[0].bm || s.keep[k].bn != s.keep[0].bn;
                }
                /* the cap holds more than one tile shape */
                CHECK_MSG(tiles > 1, "%s: one tile shape only", label);
                /* many tokens: big tiles first; few: tiles as narrow as n */
                if (k_tokens[t] == 2048)
                    CHECK(s.keep[0].bm >= 64 && s.keep[0].bn >= 64 && s.keep[0].splitk == 1);
                if (k_tokens[t] == 16)
                    CHECK(s.keep[0].bn == 16);
                gt_mma_space_free(&s);
            }
    fprintf(stderr, "     30 spaces of %d configs pruned in %.0f ms\n", 64800 + 1440, gt_mono_ms() - t0);
    /* unaligned leading dimensions: nothing kept, every config says why */
    gt_problem p = gen_test_prob(4096, 512, 4100, GT_DT_F16, GT_DT_F32);
    gt_mma_space s;
    CHECK(gt_mma_prune(&p, &d, 0, &s) == 0 && s.nkeep == 0 && s.npruned == s.raw);
    int align = 0;
    for (int k = 0; k < s.npruned; k++)
        align += strstr(s.pruned[k].reason, "alignment") != NULL;
    CHECK(align > 1000);
    gt_mma_space_free(&s);
    /* cap 0: every config that passes the rules, none ranked out */
    p = gen_test_prob(1000, 1000, 1000, GT_DT_F16, GT_DT_F32);
    CHECK(gt_mma_prune(&p, &d, 0, &s) == 0 && s.nkeep > GT_MMA_DEFAULT_CAP);
    for (int k = 0; k < s.npruned; k++)
        CHECK(strncmp(s.pruned[k].reason, "rank: ", 6) != 0);
    gt_mma_space_free(&s);
    /* not applicable: empty, with the family-level reason */
    p.trans_b = 'T';
    gt_problem_default_ld(&p);
    CHECK(gt_mma_prune(&p, &d, 0, &s) == 0 && s.nkeep == 0 && s.npruned == 0 && strstr(s.why, "transB"));
    gt_mma_space_free(&s);
}

static void test_geometry(void)
{
    gt_gen_geom g;
    gt_problem p = gen_test_prob(1000, 300, 4095, GT_DT_BF16, GT_DT_BF16);
    gt_mma_cfg c = k_cfg;
    c.bk = 64, c.splitk = 3, c.reduction = GT_GEN_RED_TWOPASS;
    gt_mma_geometry(&p, &c, &g);
    /* 64 k tiles over 3 splits: 22 tiles each, the last one 20 (and a part) */
    CHECK(g.kper == 22 * 64 && g.kper * 2 < 4095 && g.kper * 3 >= 4095);
    CHECK(g.gx == 8 * 3 && g.gy == 1 && g.gz == 3 && g.threads == 128);
    CHECK(g.smem_bytes == (size_t)4 * 256 * 64 * 2);
    CHECK(g.ws_bytes == (size_t)3 * 1000 * 300 * 4 && g.fin_blocks == (1000 * 300 + 255) / 256 && !g.cnt_bytes);
    c.reduction = GT_GEN_RED_ATOMIC;
    p.batch = 5;
    gt_mma_geometry(&p, &c, &g);
    CHECK(g.gz == 15 && g.ws_bytes == (size_t)5 * 1000 * 300 * 4 && g.cnt_bytes == (size_t)24 * 5 * 4);
    CHECK(g.fin_blocks == 0);
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
    p.bias = 1, p.bias_type = GT_DT_F32;
    snprintf(p.activation, sizeof p.activation, "gelu");
    int n = gt_mma_defines(&p, &c, defs), seen = 0;
    for (int i = 0; i < n; i++)
        seen += !strcmp(defs[i], "-DGT_BM=128") + !strcmp(defs[i], "-DGT_BK=64") + !strcmp(defs[i], "-DGT_ST=4") +
                !strcmp(defs[i], "-DGT_RED=1") + !strcmp(defs[i], "-DGT_SWZ=8") + !strcmp(defs[i], "-DGT_DKT=3") +
                !strcmp(defs[i], "-DGT_BIASKT=0") + !strcmp(defs[i], "-DGT_ACT=2");
    CHECK(n == 15 && n <= GT_GEN_MAX_DEFS && seen == 8);
    p.d_type = GT_DT_F8E4M3;
    CHECK(gt_mma_defines(&p, &c, defs) == -1);
}

#ifdef GT_WITH_CUDA
/* A config list without duplicates (what reaches the compiler: the config
 * and the problem's types; every problem here has the same types). */
typedef struct cfgset {
    gt_mma_cfg *v;
    int n, cap;
} cfgset;

static void add_cfg(cfgset *s, const gt_mma_cfg *c)
{
    for (int i = 0; i < s->n; i++)
        if (!memcmp(&s->v[i], c, sizeof *c))
            return;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        gt_mma_cfg *v = realloc(s->v, (size_t)s->cap * sizeof *v);
        if (!v)
            return;
        s->v = v;
    }
    s->v[s->n++] = *c;
}

/* Compiles every config of `set` for (p's types, sm) on the pool; returns
 * how many failed or spilled. */
static int compile_set(const gt_problem *p, const cfgset *set, int sm, const char *what)
{
    char err[512];
    gt_cu_entry **ents = calloc((size_t)(set->n ? set->n : 1), sizeof *ents);
    double t0 = gt_mono_ms();
    int fails = 0, spills = 0, regs_max = 0;
    if (!ents)
        return 1;
    for (int i = 0; i < set->n; i++) {
        char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
        const char *opts[GT_GEN_MAX_DEFS];
        int n = gt_mma_defines(p, &set->v[i], defs);
        for (int o = 0; o < n; o++)
            opts[o] = defs[o];
        int wg = set->v[i].inst == GT_MMA_INST_WGMMA;
        ents[i] = gt_cu_cache_request(gt_mma_src_of(&set->v[i]), "gt_mma", opts, n, wg ? sm | GT_CU_SM_A : sm, 1,
                                      NULL);
    }
    for (int i = 0; i < set->n; i++) {
        const gt_cu_image *img = NULL;
        char text[256];
        gt_mma_cfg_text(&set->v[i], text, sizeof text);
        if (!ents[i] || gt_cu_cache_wait(ents[i], &img, err, sizeof err) != 0) {
            if (fails++ < 3)
                fprintf(stderr, "     %s: compile failed: %s\n", text, err);
            continue;
        }
        CHECK(img->cubin == 1 && img->len > 1000);
        if (img->spill_stores != 0 && spills++ < 3)
            fprintf(stderr, "     %s sm_%d: %d bytes spilled (estimate %d registers)\n", text, sm,
                    img->spill_stores, gt_mma_regs(&set->v[i]));
        regs_max = gt_mma_regs(&set->v[i]) > regs_max ? gt_mma_regs(&set->v[i]) : regs_max;
    }
    fprintf(stderr, "     sm_%d %s: %d configs compiled in %.1f s wall, %d failed, %d spilled\n", sm, what,
            set->n, (gt_mono_ms() - t0) / 1000, fails, spills);
    free(ents);
    return fails + spills;
}

/* NVRTC compiles of kept configs for sm_90 and sm_80, with no ptxas spill
 * (the register rule's estimate is conservative). The kernels take ~1-2
 * CPU s each and the compile options depend on the config and the types
 * only, so configs are deduplicated over the shapes. By default, to stay
 * well inside a minute on two cores: the top 3 of every Llama shape for
 * sm_90, the top 1 for sm_80, and an f16 / f32-output / bias / gelu problem
 * with split-K of both reductions. GT_TEST_MMA_ALL=1: every kept config of
 * every Llama shape for both targets (gt-cuda-selftest --mma compiles and
 * runs those on the GPU). */
static void test_nvrtc(void)
{
    char dir[] = "/tmp/gt-mma-cache.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("GEMMTUNE_CACHE_DIR", dir, 1);
    gt_cu_cache_forget();
    int all = getenv("GT_TEST_MMA_ALL") != NULL;
    for (int sm = 90; sm >= 80; sm -= 10) {
        gt_gen_dev d;
        gt_gen_dev_default(&d, sm, sm == 90 ? 132 : 108);
        cfgset set = {0};
        gt_problem p0 = gen_test_prob(4096, 16, 4096, GT_DT_BF16, GT_DT_BF16);
        for (size_t t = 0; t < 3; t++)
            for (size_t i = 0; i < sizeof gen_test_llama / sizeof gen_test_llama[0]; i++) {
                gt_problem p = gen_test_prob(gen_test_llama[i][0], k_tokens[t], gen_test_llama[i][1], GT_DT_BF16, GT_DT_BF16);
                gt_mma_space s;
                CHECK(gt_mma_prune(&p, &d, GT_MMA_DEFAULT_CAP, &s) == 0 && s.nkeep > 0);
                for (int c = 0; c < s.nkeep && (all || c < (sm == 90 ? 3 : 1)); c++)
                    add_cfg(&set, &s.keep[c]);
                gt_mma_space_free(&s);
            }
        CHECK_MSG(compile_set(&p0, &set, sm, all ? "all Llama configs" : "Llama top configs") == 0,
                  "sm_%d", sm);
        free(set.v);
    }
    /* every wgmma config the Llama shapes keep on an H100 (sm_90a) */
    {
        gt_gen_dev d;
        gt_gen_dev_default(&d, 90, 132);
        cfgset set = {0};
        for (size_t t = 0; t < 3; t++)
            for (size_t i = 0; i < sizeof gen_test_llama / sizeof gen_test_llama[0]; i++) {
                gt_problem p = gen_test_prob(gen_test_llama[i][0], k_tokens[t], gen_test_llama[i][1], GT_DT_BF16, GT_DT_BF16);
                gt_mma_space s;
                CHECK(gt_mma_prune(&p, &d, GT_MMA_DEFAULT_CAP, &s) == 0);
                for (int c = 0; c < s.nkeep; c++)
                    if (s.keep[c].inst == GT_MMA_INST_WGMMA)
                        add_cfg(&set, &s.keep[c]);
                gt_mma_space_free(&s);
            }
        gt_problem p0 = gen_test_prob(4096, 128, 4096, GT_DT_BF16, GT_DT_BF16);
        CHECK(set.n >= 10);
        CHECK(compile_set(&p0, &set, 90, "wgmma configs of the Llama shapes (sm_90a)") == 0);
        free(set.v);
    }
    /* the other types and epilogue, split-K of both kinds, a 2-stage ring */
    gt_problem e = gen_test_prob(3000, 500, 1000, GT_DT_F16, GT_DT_F32);
    e.bias = 1, e.bias_type = GT_DT_F16, e.alpha = 0.5, e.beta = 0.25;
    snprintf(e.activation, sizeof e.activation, "gelu");
    cfgset set = {0};
    gt_mma_cfg c = k_cfg;
    add_cfg(&set, &c);
    c.splitk = 2, c.reduction = GT_GEN_RED_ATOMIC, c.stages = 2, c.bk = 64;
    add_cfg(&set, &c);
    c.reduction = GT_GEN_RED_TWOPASS, c.bm = 64, c.bn = 48, c.warps_n = 1, c.stages = 5;
    add_cfg(&set, &c);
    /* and wgmma with them: split-K of both kinds, every bn */
    c = k_wg, c.bn = 64, c.bm = 64, c.warps_m = 4;
    add_cfg(&set, &c);
    c = k_wg, c.splitk = 2, c.reduction = GT_GEN_RED_ATOMIC, c.bn = 128;
    add_cfg(&set, &c);
    c = k_wg, c.splitk = 3, c.reduction = GT_GEN_RED_TWOPASS, c.stages = 3;
    add_cfg(&set, &c);
    c = k_wg, c.bn = 16, c.bm = 64, c.warps_m = 4, c.splitk = 4, c.reduction = GT_GEN_RED_ATOMIC;
    add_cfg(&set, &c);
    c = k_wg, c.bn = 32, c.stages = 6;
    add_cfg(&set, &c);
    /* persistent: thread 0 as the producer (bn 256), the producer warp (bn
     * 128), and the f32 staging of 16 columns */
    c = k_wg, c.ctas = 132;
    add_cfg(&set, &c);
    c.bn = 128, c.bm = 64, c.warps_m = 4;
    add_cfg(&set, &c);
    c.cluster = 2; /* and in clusters of two */
    add_cfg(&set, &c);
    c = k_wg, c.ctas = 132, c.cluster = 2;
    add_cfg(&set, &c);
    /* pingpong (a producer warpgroup, setmaxnreg) at 4 and 5 stages */
    c = k_wg, c.ctas = 132, c.bm = 64, c.warps_m = 4, c.pingpong = 1;
    add_cfg(&set, &c);
    c.stages = 5;
    add_cfg(&set, &c);
    CHECK(compile_set(&e, &set, 90, "f16 in, f32 out, bias, gelu, split-K, persistent") == 0);
    free(set.v);
    /* fp8 on wgmma: the top configs the Llama shapes keep at n = 128 and
     * 2048 (e4m3, bf16 D), and the e4m3 x e5m2 mix with f32 D, bias, gelu,
     * beta and both split-K reductions */
    {
        gt_gen_dev d;
        gt_gen_dev_default(&d, 90, 132);
        cfgset f8 = {0};
        for (size_t t = 1; t < 3; t++)
            for (size_t i = 0; i < sizeof gen_test_llama / sizeof gen_test_llama[0]; i++) {
                gt_problem p = gen_test_prob_f8(gen_test_llama[i][0], k_tokens[t], gen_test_llama[i][1],
                                                GT_DT_F8E4M3, GT_DT_F8E4M3, GT_DT_BF16);
                gt_mma_space s;
                CHECK(gt_mma_prune_kept(&p, &d, GT_MMA_DEFAULT_CAP, &s) == 0 && s.nkeep > 0);
                for (int c = 0; c < s.nkeep && (all || c < 3); c++)
                    add_cfg(&f8, &s.keep[c]);
                gt_mma_space_free(&s);
            }
        gt_problem p0 = gen_test_prob_f8(4096, 2048, 4096, GT_DT_F8E4M3, GT_DT_F8E4M3, GT_DT_BF16);
        CHECK(compile_set(&p0, &f8, 90, "fp8 wgmma configs of the Llama shapes (sm_90a)") == 0);
        free(f8.v);
        f8 = (cfgset){0};
        gt_problem m8 = gen_test_prob_f8(3000, 500, 1008, GT_DT_F8E4M3, GT_DT_F8E5M2, GT_DT_F32);
        m8.bias = 1, m8.bias_type = GT_DT_BF16, m8.alpha = 0.5, m8.beta = 0.25;
        snprintf(m8.activation, sizeof m8.activation, "gelu");
        c = k_wg, c.bk = 128;
        add_cfg(&f8, &c);
        c.splitk = 2, c.reduction = GT_GEN_RED_ATOMIC, c.bn = 128;
        add_cfg(&f8, &c);
        c = k_wg, c.bk = 128, c.bm = 64, c.warps_m = 4, c.bn = 16, c.splitk = 3, c.reduction = GT_GEN_RED_TWOPASS;
        add_cfg(&f8, &c);
        c = k_wg, c.bk = 128, c.ctas = 132;
        add_cfg(&f8, &c);
        c.cluster = 2;
        add_cfg(&f8, &c);
        CHECK(compile_set(&m8, &f8, 90, "fp8 e4m3 x e5m2, f32 out, bias, gelu, split-K") == 0);
        free(f8.v);
    }
    gt_cu_cache_forget();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* With a GPU: every "mma" config the enumeration adds for p, plus `extra`,
 * must build, validate within tolerance and time; a config a rule prunes
 * is refused by build with the rule's reason. */
static void smoke(const gt_backend *bk, gt_bk_ctx *ctx, gt_problem p, const char *const *extra)
{
    char err[512], label[64];
    gt_problem_label(&p, label, sizeof label);
    cJSON *cands = NULL, *base = NULL;
    gt_bk_prob *pp = NULL;
    int gen = 0, passed = 0;
    if (bk->enumerate(ctx, &p, 0, &cands, &base, err, sizeof err) != 0 ||
        bk->prepare(ctx, &p, &pp, err, sizeof err) != 0) {
        CHECK_MSG(0, "%s: %s", label, err);
        goto out;
    }
    int n = cJSON_GetArraySize(cands);
    for (int i = 0; i < n + 8; i++) {
        cJSON *x = i >= n && extra && extra[i - n] ? cJSON_Parse(extra[i - n]) : NULL;
        const cJSON *cfg = i < n ? cJSON_GetArrayItem(cands, i) : x;
        if (i >= n && !x)
            break;
        if (gt_gen_family(cfg) != GT_FAM_MMA) {
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
        } else if (++passed <= 1) {
            cJSON *info = gt_cuda_gen_cand_info(c);
            char *it = info ? cJSON_PrintUnformatted(info) : NULL;
            fprintf(stderr, "     %s %.2f us err %.2e %s\n", label, t.median_us, e, it ? it : "");
            free(it);
            cJSON_Delete(info);
        }
        free(txt);
        if (c)
            bk->release(c);
        cJSON_Delete(x);
    }
    fprintf(stderr, "     %s: %d of %d mma configs valid\n", label, passed, gen);
    CHECK_MSG(gen > 0 && passed == gen, "%s: %d of %d", label, passed, gen);
    /* a 256-row tile is pruned for m <= 128: build says why */
    if (p.m <= 128) {
        cJSON *j = cJSON_Parse("{\"bk\":32,\"bm\":256,\"bn\":64,\"family\":\"mma\",\"reduction\":\"none\","
                               "\"splitk\":1,\"stages\":3,\"swizzle\":1,\"warps_m\":4,\"warps_n\":1}");
        gt_bk_cand *c = NULL;
        CHECK(bk->build(pp, j, &c, err, sizeof err) == -1 && strstr(err, "mma: not for this problem: tile: bm=256"));
        cJSON_Delete(j);
    }
out:
    if (pp)
        bk->unprepare(pp);
    cJSON_Delete(cands);
    cJSON_Delete(base);
}

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
    gt_cuda_set_limits(ctx, 40, 20);
    gt_cuda_set_exit_on_sticky(ctx, 0);
/* a wgmma config with k tiles of bk (64: 16-bit inputs, 128: fp8) */
#define WGK_CFG(bk, bm, bn, wm, st, sk, red, swz)                                                             \
    "{\"bk\":" #bk ",\"bm\":" #bm ",\"bn\":" #bn ",\"family\":\"mma\",\"inst\":\"wgmma\",\"reduction\":\"" red \
    "\",\"splitk\":" #sk ",\"stages\":" #st ",\"swizzle\":" #swz ",\"warps_m\":" #wm ",\"warps_n\":1}"
#define WG_CFG(...) WGK_CFG(64, __VA_ARGS__)
#define WG8_CFG(...) WGK_CFG(128, __VA_ARGS__)
/* persistent (splitk 1): a grid of `ctas` CTAs, few, so that each loops over
 * many tiles and the ring's phases wrap across tiles; WGC_CFG in clusters
 * of two (ctas even) */
#define WGP_CFG(bk, ctas, bm, bn, wm, st, swz)                                                                \
    "{\"bk\":" #bk ",\"bm\":" #bm ",\"bn\":" #bn ",\"ctas\":" #ctas ",\"family\":\"mma\",\"inst\":\"wgmma\","   \
    "\"reduction\":\"none\",\"splitk\":1,\"stages\":" #st ",\"swizzle\":" #swz ",\"warps_m\":" #wm ",\"warps_n\":1}"
#define WGC_CFG(bk, ctas, bm, bn, wm, st, swz)                                                                \
    "{\"bk\":" #bk ",\"bm\":" #bm ",\"bn\":" #bn ",\"cluster\":2,\"ctas\":" #ctas ",\"family\":\"mma\","       \
    "\"inst\":\"wgmma\",\"reduction\":\"none\",\"splitk\":1,\"stages\":" #st ",\"swizzle\":" #swz                  \
    ",\"warps_m\":" #wm ",\"warps_n\":1}"
#define MMA_CFG(bm, bn, bk, wm, wn, st, sk, red, swz)                                                   \
    "{\"bk\":" #bk ",\"bm\":" #bm ",\"bn\":" #bn ",\"family\":\"mma\",\"reduction\":\"" red "\",\"splitk\":" #sk \
    ",\"stages\":" #st ",\"swizzle\":" #swz ",\"warps_m\":" #wm ",\"warps_n\":" #wn "}"
    static const char *const extra[] = {
        MMA_CFG(64, 64, 32, 2, 2, 3, 4, "atomic", 1), MMA_CFG(64, 32, 64, 2, 1, 2, 3, "twopass", 1),
        /* atomic after twopass: the zeroed workspace must not have been spoiled */
        MMA_CFG(32, 64, 32, 1, 2, 5, 2, "atomic", 1), NULL};
    static const char *const skinny[] = {
        MMA_CFG(64, 16, 32, 2, 1, 3, 4, "atomic", 1), MMA_CFG(32, 16, 64, 1, 1, 2, 3, "twopass", 1),
        MMA_CFG(128, 16, 64, 4, 1, 5, 2, "atomic", 1), NULL};
    /* wgmma with its narrowest n on skinny problems: bn 16 at n = 16 and
     * n = 1 (the tensor map's box is wider than B), bn 32 at n = 32 with
     * m, n, k tails; split-K of both kinds */
    static const char *const wg_skinny[] = {
        WG_CFG(64, 16, 4, 4, 1, "none", 1), WG_CFG(64, 16, 4, 6, 4, "atomic", 1),
        WG_CFG(128, 16, 8, 3, 2, "twopass", 1), WG_CFG(128, 16, 8, 8, 4, "atomic", 1), NULL};
    static const char *const wg_n32[] = {WG_CFG(64, 32, 4, 4, 1, "none", 1), WG_CFG(64, 32, 4, 3, 2, "atomic", 1),
                                         WG_CFG(128, 32, 8, 6, 2, "twopass", 1), NULL};
    static const char *const raster[] = {MMA_CFG(64, 64, 64, 2, 2, 4, 1, "none", 4),
                                         MMA_CFG(64, 128, 32, 1, 4, 3, 1, "none", 8),
                                         WG_CFG(128, 128, 8, 4, 1, "none", 1), WG_CFG(64, 256, 4, 3, 1, "none", 4),
                                         WGP_CFG(64, 11, 128, 256, 8, 4, 4), WGP_CFG(64, 13, 64, 128, 4, 6, 8),
                                         WGC_CFG(64, 10, 128, 256, 8, 4, 4), NULL};
    /* clusters of two on 9 tile rows of 128 (18 of 64): the last pair's
     * second CTA loads zeros and stores nothing; thread 0 (bn 256) and the
     * producer warp as the producer; 4-8 pairs a cluster */
    static const char *const wg_cluster[] = {WGC_CFG(64, 4, 128, 128, 8, 4, 1), WGC_CFG(64, 2, 64, 64, 4, 3, 4),
                                             WGC_CFG(64, 6, 128, 256, 8, 3, 1), NULL};
    /* wgmma on edges: m, n, k tails (the TMA zero-fills), f32 D through the
     * coalesced epilogue, both split-K reductions */
    static const char *const wg_edges[] = {
        WG_CFG(64, 64, 4, 3, 1, "none", 1), WG_CFG(128, 128, 8, 4, 1, "none", 1),
        WG_CFG(64, 128, 4, 4, 3, "atomic", 1), WG_CFG(128, 64, 8, 3, 2, "twopass", 1),
        MMA_CFG(64, 64, 32, 2, 2, 3, 4, "atomic", 1),
        /* persistent, with the producer warp: 16, 3 and 40 tiles a CTA */
        WGP_CFG(64, 2, 64, 64, 4, 3, 1), WGP_CFG(64, 3, 128, 128, 8, 4, 1), WGP_CFG(64, 2, 64, 16, 4, 6, 4), NULL};
    gt_problem p = gen_test_prob(1000, 77, 1000, GT_DT_BF16, GT_DT_F32); /* edges everywhere, lda 1000 */
    p.alpha = 0.5, p.beta = 0.25;
    smoke(bk, ctx, p, extra);
    smoke(bk, ctx, p, wg_edges);
    /* D rows 1001 elements apart: not 16-byte aligned, the element-wise store */
    p = gen_test_prob(1000, 200, 1000, GT_DT_BF16, GT_DT_BF16);
    p.ldd = p.ldc = 1001;
    p.bias = 1, p.bias_type = GT_DT_BF16;
    smoke(bk, ctx, p, wg_edges);
    p = gen_test_prob(1100, 300, 1000, GT_DT_BF16, GT_DT_F32);
    p.alpha = 0.5, p.beta = 0.25;
    smoke(bk, ctx, p, wg_cluster);
    p = gen_test_prob(1100, 300, 1000, GT_DT_BF16, GT_DT_BF16);
    p.ldd = p.ldc = 1101; /* element-wise stores */
    smoke(bk, ctx, p, wg_cluster);
    /* bf16 D, no bias, no C, rows 16-byte aligned: the persistent kernels'
     * stmatrix staging, with m and n tails */
    p = gen_test_prob(1104, 300, 1000, GT_DT_BF16, GT_DT_BF16);
    smoke(bk, ctx, p, wg_cluster);
    p = gen_test_prob(128, 16, 4096, GT_DT_BF16, GT_DT_BF16);
    p.bias = 1;
    snprintf(p.activation, sizeof p.activation, "gelu");
    smoke(bk, ctx, p, skinny);
    smoke(bk, ctx, p, wg_skinny);
    p = gen_test_prob(4096, 1, 4096, GT_DT_BF16, GT_DT_BF16);
    smoke(bk, ctx, p, wg_skinny);
    p = gen_test_prob(1000, 30, 1000, GT_DT_BF16, GT_DT_F32);
    smoke(bk, ctx, p, wg_n32);
    p = gen_test_prob(4096, 512, 2048, GT_DT_F16, GT_DT_F16);
    p.batch = 3;
    snprintf(p.activation, sizeof p.activation, "relu");
    gt_problem_default_ld(&p);
    smoke(bk, ctx, p, raster);
    p = gen_test_prob(4096, 2048, 4096, GT_DT_BF16, GT_DT_BF16);
    smoke(bk, ctx, p, NULL);
    /* fp8 on wgmma (validated against the reference with the scales
     * applied): every kept config of a prefill shape; edges in m, n and k
     * with the e4m3 x e5m2 mix, f32 D, alpha, beta and bias through both
     * split-K reductions (element-wise stores; a D whose rows are not
     * 16-byte aligned, the other way there, is no cuBLASLt fp8 problem:
     * ldc must be a multiple of 16 bytes); a skinny n */
    static const char *const wg8_edges[] = {
        WG8_CFG(64, 64, 4, 3, 1, "none", 1), WG8_CFG(128, 128, 8, 4, 1, "none", 1),
        WG8_CFG(64, 128, 4, 4, 3, "atomic", 1), WG8_CFG(128, 64, 8, 3, 2, "twopass", 1),
        WGP_CFG(128, 3, 64, 64, 4, 3, 1), WGP_CFG(128, 2, 128, 128, 8, 3, 1), WGC_CFG(128, 4, 64, 64, 4, 3, 1),
        NULL};
    static const char *const wg8_skinny[] = {WG8_CFG(64, 16, 4, 4, 1, "none", 1),
                                             WG8_CFG(128, 16, 8, 6, 4, "atomic", 1), NULL};
    p = gen_test_prob_f8(4096, 2048, 4096, GT_DT_F8E4M3, GT_DT_F8E4M3, GT_DT_BF16);
    smoke(bk, ctx, p, NULL);
    p = gen_test_prob_f8(1000, 77, 1008, GT_DT_F8E4M3, GT_DT_F8E5M2, GT_DT_F32);
    p.alpha = 0.5, p.beta = 0.25, p.bias = 1, p.bias_type = GT_DT_BF16;
    smoke(bk, ctx, p, wg8_edges);
    p = gen_test_prob_f8(4096, 16, 4096, GT_DT_F8E5M2, GT_DT_F8E4M3, GT_DT_F16);
    smoke(bk, ctx, p, wg8_skinny);
    bk->close(ctx);
}
#endif

int main(int argc, char **argv)
{
    gt_test_mode(argc, argv);
    if (gt_test_cpu()) {
        RUN(test_encoding);
        RUN(test_applicable);
        RUN(test_rules);
        RUN(test_wgmma);
        RUN(test_wgmma_pingpong);
        RUN(test_wgmma_persist);
        RUN(test_wgmma_f8);
        RUN(test_prune);
        RUN(test_geometry);
#ifdef GT_WITH_CUDA
        RUN(test_nvrtc);
#else
        fprintf(stderr, "     SKIP nvrtc: built without CUDA\n");
        CHECK(1);
#endif
    }
    if (gt_test_gpu()) {
#ifdef GT_WITH_CUDA
        RUN(test_gpu);
#else
        gt_test_skip("gpu", "built without CUDA");
#endif
    }
    return gt_test_done();
}
