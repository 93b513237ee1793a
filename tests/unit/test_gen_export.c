/* test_gen_export.c: generated kernels as downloads (gen/gen_export.c), and
 * the coordinator query behind GET /v1/runs/{id}/kernels/{problem}
 * (gt_store_kernel_row). Proven here, without a GPU:
 *   - the launches, workspace and argument values are the worker's: grid,
 *     block, static shared memory, kper and workspace sizes equal
 *     gt_gen_geometry's; the argument struct gt_gen_kernel_args writes is
 *     byte for byte the gt_gen_args gen_run.c passes (the atomic counters
 *     carved from the one workspace at an aligned offset); the second
 *     "twopass" launch takes nbatch;
 *   - the source is the template with exactly gt_gen_defines' values as
 *     #defines, and no #include;
 *   - cuBLASLt configs are GT_GEN_EXPORT_LIBRARY; unknown, test-only,
 *     malformed, misaligned or inapplicable configs are refused with reasons;
 *   - the JSON and header renderings carry what a caller needs;
 *   - CUDA builds: the exported source compiles with plain NVRTC for sm_90
 *     with only the arch option, and its PTX is identical to the template
 *     compiled with the worker's -D options (what was measured is what is
 *     exported);
 *   - the store query picks problem_best's winner, a config by hash, and
 *     tells missing runs, problems and results apart. */
#include "gen_export.h"
#include "gen_mma.h"
#include "gt_store.h"
#include "gen_test_util.h"
#include "gt_test.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef GT_WITH_CUDA
#include <nvrtc.h>
#endif

/* bf16 TN, tight leading dimensions (gen_test_util.c). */
static gt_problem decode(int64_t m, int64_t n, int64_t k)
{
    return gen_test_prob(m, n, k, GT_DT_BF16, GT_DT_BF16);
}

/* f16 in, f32 out, f16 bias + GELU, alpha/beta, batch 2 (strided). */
static gt_problem epilogue(void)
{
    gt_problem p;
    gt_problem_init(&p, 3000, 5, 1000);
    p.trans_a = 'T';
    p.batch = 2;
    p.a_type = p.b_type = GT_DT_F16;
    p.c_type = p.d_type = GT_DT_F32;
    p.bias = 1;
    p.bias_type = GT_DT_F16;
    p.alpha = 0.5;
    p.beta = 0.25;
    snprintf(p.activation, sizeof p.activation, "gelu");
    gt_problem_default_ld(&p);
    gt_problem_finish(&p);
    return p;
}

static const char k_none[] =
    "{\"a_load\":\"na256\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"n_tile\":8,"
    "\"pipe\":\"async\",\"reduction\":\"none\",\"rows_per_cta\":32,\"splitk\":1,\"vec\":8,"
    "\"warps\":4}";
static const char k_twopass[] =
    "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":2,\"kwarps\":1,\"n_tile\":8,"
    "\"pipe\":\"reg\",\"reduction\":\"twopass\",\"rows_per_cta\":32,\"splitk\":4,\"vec\":8,"
    "\"warps\":2}";
static const char k_atomic[] =
    "{\"a_load\":\"cs\",\"family\":\"gemv\",\"k_unroll\":2,\"kwarps\":2,\"n_tile\":8,"
    "\"pipe\":\"reg\",\"reduction\":\"atomic\",\"rows_per_cta\":64,\"splitk\":2,\"vec\":8,"
    "\"warps\":4}";
static const char k_lt[] = "{\"algo_id\":66,\"cluster\":2,\"custom\":0,\"inner_shape\":0,"
                           "\"reduction\":0,\"splitk\":1,\"stages\":35,\"swizzle\":0,\"tile\":20}";

static int make(const gt_problem *p, const char *cfg, int sm, gt_gen_kernel *k, char *err,
                size_t errlen)
{
    cJSON *j = cJSON_Parse(cfg);
    int rc = gt_gen_kernel_make(p, j, sm, k, err, errlen);
    cJSON_Delete(j);
    return rc;
}

/* Everything the worker derives for (p, cfg) must be what the export says. */
static void check_matches_worker(const gt_problem *p, const char *cfg)
{
    char err[256];
    gt_gen_kernel k;
    gt_gen_cfg c;
    gt_gen_geom g;
    cJSON *j = cJSON_Parse(cfg);
    CHECK(j && gt_gen_cfg_from_json(j, &c, err, sizeof err) == 0);
    cJSON_Delete(j);
    gt_gen_geometry(p, &c, 32, &g);
    int rc = make(p, cfg, 90, &k, err, sizeof err);
    CHECK_MSG(rc == GT_GEN_EXPORT_OK, "%s: %s", cfg, err);
    if (rc != GT_GEN_EXPORT_OK) {
        gt_gen_kernel_free(&k);
        return;
    }
    int f8 = gt_dtype_is_f8(p->a_type); /* cvt.f16x2.e4m3x2 is sm_89 */
    CHECK(!strcmp(k.family_name, "gemv") && k.family == GT_FAM_GEMV && k.min_sm == (f8 ? 89 : 80));
    CHECK(gt_gen_kernel_scaled(&k) == f8);
    CHECK(!strcmp(k.arch, "sm_90") && !strcmp(k.config, cfg));
    /* launches */
    const gt_gen_launch *l = &k.launch[0];
    CHECK(!strcmp(l->kernel, "gt_gemv") && l->grid[0] == g.gx && l->grid[1] == g.gy &&
          l->grid[2] == g.gz && l->block[0] == g.threads && l->block[1] == 1 && l->block[2] == 1);
    CHECK(l->smem_dynamic == 0 && l->smem_static == g.smem_bytes && !l->extra_name);
    if (c.reduction == GT_GEN_RED_TWOPASS) {
        CHECK(k.nlaunch == 2 && !strcmp(k.launch[1].kernel, "gt_gemv_fin"));
        CHECK(k.launch[1].grid[0] == g.fin_blocks && k.launch[1].block[0] == 256);
        CHECK(k.launch[1].extra_name && !strcmp(k.launch[1].extra_name, "nbatch") &&
              k.launch[1].extra_value == p->batch);
    } else {
        CHECK(k.nlaunch == 1);
    }
    /* workspace: gen_run.c's workspace() sizes, one allocation */
    if (c.reduction == GT_GEN_RED_ATOMIC) {
        CHECK(k.nbufs == 2 && k.bufs[0].bytes == g.ws_bytes && k.bufs[1].bytes == g.cnt_bytes);
        CHECK(k.bufs[0].zero && k.bufs[1].zero && k.bufs[0].offset == 0);
        CHECK(k.bufs[1].offset >= g.ws_bytes && k.bufs[1].offset % GT_GEN_WS_ALIGN == 0);
        CHECK(k.workspace_bytes == k.bufs[1].offset + g.cnt_bytes);
    } else if (c.reduction == GT_GEN_RED_TWOPASS) {
        CHECK(k.nbufs == 1 && k.bufs[0].bytes == g.ws_bytes && !k.bufs[0].zero &&
              k.workspace_bytes == g.ws_bytes);
    } else {
        CHECK(k.nbufs == 0 && k.workspace_bytes == 0);
    }
    /* the argument struct, byte for byte gen_run.c's */
    char A, B, C, BIAS, D, SA, SB;
    unsigned char ws[8];
    unsigned char *cnt = c.reduction == GT_GEN_RED_ATOMIC ? ws + k.bufs[1].offset : NULL;
    int batched = p->batch > 1;
    gt_gen_args want = {
        .a = &A, .b = &B, .c = &C, .bias = &BIAS, .d = &D,
        .ws = c.splitk > 1 ? (float *)(void *)ws : NULL, .cnt = (unsigned *)(void *)cnt,
        .m = p->m, .n = p->n, .k = p->k, .lda = p->lda, .ldb = p->ldb, .ldc = p->ldc,
        .ldd = p->ldd, .sa = batched ? p->stride_a : 0, .sb = batched ? p->stride_b : 0,
        .sc = batched ? p->stride_c : 0, .sd = batched ? p->stride_d : 0,
        .kper = g.kper, .alpha = p->alpha, .beta = p->beta,
        .scale_a = (const float *)(void *)&SA, .scale_b = (const float *)(void *)&SB,
    };
    unsigned char got[sizeof want + 8];
    /* a 16-bit kernel's struct ends at beta; an fp8 one has the scales too */
    size_t want_bytes = f8 ? sizeof want : offsetof(gt_gen_args, scale_a);
    CHECK(k.args_bytes == want_bytes && !strcmp(k.args_struct, "gt_gemv_args"));
    CHECK(gt_gen_kernel_args(&k, &A, &B, &C, &BIAS, &D, &SA, &SB, k.workspace_bytes ? ws : NULL, got,
                             sizeof got) == 0);
    CHECK_MSG(memcmp(got, &want, want_bytes) == 0, "%s: argument bytes differ", cfg);
    CHECK(gt_gen_kernel_args(&k, &A, &B, &C, &BIAS, &D, &SA, &SB, NULL, got, want_bytes - 1) == -1);
    /* an fp8 kernel reads its scales: NULL ones are refused, not written */
    CHECK(gt_gen_kernel_args(&k, &A, &B, &C, &BIAS, &D, NULL, &SB, k.workspace_bytes ? ws : NULL, got,
                             sizeof got) == (f8 ? -1 : 0));
    CHECK(gt_gen_kernel_args(&k, &A, &B, &C, &BIAS, &D, &SA, NULL, k.workspace_bytes ? ws : NULL, got,
                             sizeof got) == (f8 ? -1 : 0));
    if (f8)
        CHECK(!strcmp(k.args[21].name, "scale_a") && !strcmp(k.args[22].name, "scale_b") &&
              k.args[21].kind == GT_GEN_ARG_PTR && strstr(k.source, "\n#define GT_BB "));
    /* the source: gt_gen_defines' values as #defines, then the template */
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
    int nd = gt_gen_defines(p, &c, 0, defs), seen = 0;
    CHECK(nd == k.ndefs && nd > 15);
    for (int i = 0; i < nd; i++) {
        char line[64], *eq = strchr(defs[i], '=');
        CHECK(!strcmp(defs[i], k.defs[i]) && eq);
        snprintf(line, sizeof line, "\n#define %.*s %s\n", (int)(eq - defs[i] - 2), defs[i] + 2,
                 eq + 1);
        seen += strstr(k.source, line) != NULL;
    }
    CHECK(seen == nd);
    size_t sl = strlen(k.source), tl = strlen(gt_gen_gemv_src);
    CHECK(sl > tl && !strcmp(k.source + sl - tl, gt_gen_gemv_src) && !strstr(k.source, "#include"));
    gt_gen_kernel_free(&k);
}

/* fp8 decode shapes: e4m3 14336 x 1 x 4096 with bf16 D, and e4m3 x e5m2
 * with f32 D, bias, gelu, beta (cuBLASLt's fp8 matmul forms) */
static gt_problem f8_decode(void)
{
    gt_problem p = gen_test_prob(14336, 1, 4096, GT_DT_F8E4M3, GT_DT_BF16);
    return p;
}

static gt_problem f8_epilogue(void)
{
    gt_problem p = gen_test_prob(1024, 5, 4096, GT_DT_F8E4M3, GT_DT_F32);
    p.b_type = GT_DT_F8E5M2;
    p.bias = 1, p.bias_type = GT_DT_BF16, p.alpha = 0.5, p.beta = 0.25;
    snprintf(p.activation, sizeof p.activation, "gelu");
    gt_problem_finish(&p);
    return p;
}

static const char k_f8_none[] =
    "{\"a_load\":\"na256\",\"family\":\"gemv\",\"k_unroll\":4,\"kwarps\":2,\"n_tile\":8,"
    "\"pipe\":\"dbuf\",\"reduction\":\"none\",\"rows_per_cta\":32,\"splitk\":1,\"vec\":16,"
    "\"warps\":4}";
static const char k_f8_twopass[] =
    "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":2,\"kwarps\":1,\"n_tile\":8,"
    "\"pipe\":\"async\",\"reduction\":\"twopass\",\"rows_per_cta\":32,\"splitk\":4,\"vec\":16,"
    "\"warps\":2}";
static const char k_f8_warp[] =
    "{\"a_load\":\"cs\",\"family\":\"gemv\",\"k_unroll\":2,\"kwarps\":2,\"lanes\":\"warp\","
    "\"n_tile\":8,\"pipe\":\"reg\",\"reduction\":\"atomic\",\"rows_per_cta\":4,\"splitk\":2,"
    "\"vec\":16,\"warps\":4}";

static void test_matches_worker(void)
{
    gt_problem p = decode(4096, 1, 4096), e = epilogue();
    check_matches_worker(&p, k_none);
    check_matches_worker(&p, k_twopass);
    check_matches_worker(&e, k_atomic);
    check_matches_worker(&e, k_twopass);
    gt_problem f = f8_decode(), fe = f8_epilogue();
    check_matches_worker(&f, k_f8_none);
    check_matches_worker(&f, k_f8_twopass);
    check_matches_worker(&fe, k_f8_warp);
    /* vec counts elements: 8 fp8 elements are an 8-byte load, 4 none */
    char err[256];
    gt_gen_kernel k;
    char cfg[sizeof k_f8_none];
    snprintf(cfg, sizeof cfg, "%s", k_f8_none);
    char *v = strstr(cfg, "\"vec\":16");
    memcpy(v, "\"vec\":4,", 8);
    memmove(v + 8, v + 9, strlen(v + 9) + 1);
    CHECK_MSG(make(&f, cfg, 90, &k, err, sizeof err) == GT_GEN_EXPORT_BAD && strstr(err, "4-byte vectors"),
              "%s: %s", cfg, err);
    gt_gen_kernel_free(&k);
}

static void expect_refused(const gt_problem *p, const char *cfg, int want, const char *needle)
{
    char err[256] = "";
    gt_gen_kernel k;
    int rc = make(p, cfg, 90, &k, err, sizeof err);
    CHECK_MSG(rc == want && strstr(err, needle), "%s -> %d: %s", cfg, rc, err);
    CHECK(!k.source && !k.config);
    gt_gen_kernel_free(&k);
}

static void test_refused(void)
{
    gt_problem p = decode(4096, 1, 4096);
    expect_refused(&p, k_lt, GT_GEN_EXPORT_LIBRARY, "cuBLASLt");
    expect_refused(&p, "{\"family\":\"cublaslt\",\"algo_id\":1}", GT_GEN_EXPORT_LIBRARY, "cuBLASLt");
    expect_refused(&p, "{\"family\":\"fault\",\"kind\":\"oob\"}", GT_GEN_EXPORT_BAD, "test-only");
    expect_refused(&p, "{\"family\":\"triton\"}", GT_GEN_EXPORT_BAD, "\"triton\"");
    /* a libgemmtune_cutlass kernel is built ahead of time: a library's, no source */
    expect_refused(&p, "{\"family\":\"cutlass\",\"kernel\":\"coop_128x128_c1x1\"}", GT_GEN_EXPORT_LIBRARY,
                   "libgemmtune_cutlass");
    expect_refused(&p, "{\"family\":\"gemv\",\"warps\":4}", GT_GEN_EXPORT_BAD, "gemv");
    /* kwarps 3 does not divide 4 warps */
    char bad[512];
    snprintf(bad, sizeof bad, "%s", k_none);
    memcpy(strstr(bad, "\"kwarps\":2"), "\"kwarps\":3", 10);
    expect_refused(&p, bad, GT_GEN_EXPORT_BAD, "kwarps=3");
    gt_problem q = p;
    q.lda = 4100; /* not a multiple of vec 8 */
    expect_refused(&q, k_none, GT_GEN_EXPORT_BAD, "alignment");
    q = p;
    q.trans_a = 'N';
    gt_problem_default_ld(&q);
    expect_refused(&q, k_none, GT_GEN_EXPORT_BAD, "transA=N");
}

static void test_renderings(void)
{
    char err[256];
    gt_gen_kernel k, u;
    gt_problem p = decode(4096, 1, 4096);
    CHECK(make(&p, k_twopass, 90, &k, err, sizeof err) == GT_GEN_EXPORT_OK);
    CHECK(make(&p, k_none, 0, &u, err, sizeof err) == GT_GEN_EXPORT_OK);
    char arch[48];
    const char *opts[GT_GEN_MAX_OPTS + 1];
    CHECK(gt_gen_kernel_nvrtc_opts(&k, arch, opts) == 1 && !strcmp(opts[0], "--gpu-architecture=sm_90"));
    CHECK(gt_gen_kernel_nvrtc_opts(&u, arch, opts) == 0 && !u.arch[0]);
    cJSON *j = gt_gen_kernel_json(&k), *ju = gt_gen_kernel_json(&u);
    CHECK(j && ju);
    char *txt = j ? cJSON_PrintUnformatted(j) : NULL;
    CHECK(txt && strstr(txt, "\"family\":\"gemv\"") && strstr(txt, "\"kernels\":[\"gt_gemv\",\"gt_gemv_fin\"]"));
    CHECK(txt && strstr(txt, "\"nvrtc_options\":[\"--gpu-architecture=sm_90\"]"));
    CHECK(txt && strstr(txt, "\"worker_nvrtc_options\":[\"--gpu-architecture=sm_90\",\"--ptxas-options=-v\",\"-DGT_HIP=0\""));
    CHECK(txt && strstr(txt, "{\"name\":\"nbatch\",\"type\":\"long long\",\"value\":1}"));
    CHECK(txt && strstr(txt, "\"program_name\":\"gt_gen.cu\"") && strstr(txt, "\"smem_optin\":false"));
    /* a reg-pipe gemv launches chained on sm_90+ and reads nothing before its wait */
    CHECK(txt && strstr(txt, "\"chained\":{\"min_sm\":90,\"launch\":0,\"attribute\":"
                             "\"CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION\",\"reads_before_wait\":[]"));
    const cJSON *members = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "args"), "members");
    CHECK(cJSON_GetArraySize(members) == 21);
    const cJSON *m18 = cJSON_GetArrayItem(members, 18);
    CHECK(m18 && !strcmp(cJSON_GetObjectItemCaseSensitive(m18, "name")->valuestring, "kper") &&
          cJSON_GetObjectItemCaseSensitive(m18, "offset")->valuedouble == 144);
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(ju, "target")));
    free(txt);
    cJSON_Delete(j);
    cJSON_Delete(ju);
    /* the header: the about text (with a comment terminator defused), the
     * launches, the workspace rule, the members, then the source */
    char *h = gt_gen_kernel_cuh(&k, "run 7, problem 3: bf16 TN 4096x1x4096\nsneaky */ text");
    CHECK(h && strstr(h, " * run 7, problem 3: bf16 TN 4096x1x4096\n"));
    CHECK(h && strstr(h, "sneaky * / text") && !strstr(h, "sneaky */"));
    CHECK(h && strstr(h, "2. gt_gemv_fin<<<dim3(16, 1, 1), dim3(256, 1, 1), 0>>>(struct gt_gemv_args args, long long nbatch)"));
    CHECK(h && strstr(h, "with nbatch = 1") && strstr(h, "ws   offset 0, 65536 bytes: none"));
    CHECK(h && strstr(h, "Chained launch (sm_90+): launch 1 may take the attribute\n"));
    CHECK(h && strstr(h, "+144  long long    kper = 1024"));
    CHECK(h && strstr(h, " */\n#pragma once\n/* gemmtune generated kernel: family gemv"));
    free(h);
    char *hu = gt_gen_kernel_cuh(&u, NULL);
    CHECK(hu && strstr(hu, "target    unknown: compile for the device's arch (sm_80 or newer)"));
    free(hu);
    gt_gen_kernel_free(&k);
    gt_gen_kernel_free(&u);
    /* dbuf reads its first block of A before the wait: the export says so */
    gt_gen_kernel dk;
    CHECK(make(&p, "{\"a_load\":\"na256\",\"family\":\"gemv\",\"k_unroll\":2,\"kwarps\":4,\"n_tile\":8,"
                   "\"pipe\":\"dbuf\",\"reduction\":\"none\",\"rows_per_cta\":32,\"splitk\":1,\"vec\":8,"
                   "\"warps\":4}", 90, &dk, err, sizeof err) == GT_GEN_EXPORT_OK);
    CHECK(dk.chain_min_sm == 90 && dk.chain_reads_a == 1);
    cJSON *jd = gt_gen_kernel_json(&dk);
    char *td = jd ? cJSON_PrintUnformatted(jd) : NULL;
    CHECK(td && strstr(td, "\"reads_before_wait\":[\"a\"],\"rule\":\"launch 1 may start before the kernel"));
    char *hd = gt_gen_kernel_cuh(&dk, NULL);
    CHECK(hd && strstr(hd, "reads a\n * first: the kernel before it must not write a"));
    free(hd);
    free(td);
    cJSON_Delete(jd);
    gt_gen_kernel_free(&dk);
}

#ifdef GT_WITH_CUDA
/* PTX of src with opts for compute_90, or NULL with the log in err. */
static char *ptx_of(const char *src, const char *const *opts, int n, char *err, size_t errlen)
{
    nvrtcProgram prog = NULL;
    char *ptx = NULL;
    size_t sz = 0;
    if (nvrtcCreateProgram(&prog, src, GT_GEN_PROGRAM_NAME, 0, NULL, NULL) != NVRTC_SUCCESS)
        return NULL;
    if (nvrtcCompileProgram(prog, n, opts) != NVRTC_SUCCESS) {
        size_t ll = 0;
        char *log = NULL;
        if (nvrtcGetProgramLogSize(prog, &ll) == NVRTC_SUCCESS && (log = malloc(ll + 1)) &&
            nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS)
            snprintf(err, errlen, "%.300s", log);
        free(log);
    } else if (nvrtcGetPTXSize(prog, &sz) == NVRTC_SUCCESS && (ptx = malloc(sz)) &&
               nvrtcGetPTX(prog, ptx) != NVRTC_SUCCESS) {
        free(ptx);
        ptx = NULL;
    }
    nvrtcDestroyProgram(&prog);
    return ptx;
}

static void check_nvrtc_of(const gt_problem *p, const char *cfg, const char *tmpl, const char *main_fn,
                           const char *fin_fn)
{
    char err[512] = "", arch[48];
    gt_gen_kernel k;
    const char *opts[GT_GEN_MAX_OPTS + 1], *wopts[GT_GEN_MAX_DEFS + 1];
    CHECK(make(p, cfg, 90, &k, err, sizeof err) == GT_GEN_EXPORT_OK);
    /* the download as a user compiles it: its options only (sm_90 cubin) */
    int n = gt_gen_kernel_nvrtc_opts(&k, arch, opts);
    nvrtcProgram prog = NULL;
    size_t cub = 0;
    int ok = nvrtcCreateProgram(&prog, k.source, GT_GEN_PROGRAM_NAME, 0, NULL, NULL) == NVRTC_SUCCESS &&
             nvrtcCompileProgram(prog, n, opts) == NVRTC_SUCCESS &&
             nvrtcGetCUBINSize(prog, &cub) == NVRTC_SUCCESS && cub > 1000;
    CHECK_MSG(ok, "%s: the exported source does not compile for %s", cfg, k.arch);
    if (prog)
        nvrtcDestroyProgram(&prog);
    /* same PTX as the worker's compile of the template with -D options */
    const char *ptxarch = k.arch_specific ? "--gpu-architecture=compute_90a" : "--gpu-architecture=compute_90";
    wopts[0] = ptxarch;
    for (int i = 0; i < k.ndefs; i++)
        wopts[i + 1] = k.defs[i];
    char *a = ptx_of(k.source, &ptxarch, 1, err, sizeof err);
    char *b = ptx_of(tmpl, wopts, k.ndefs + 1, err, sizeof err);
    CHECK_MSG(a && b && !strcmp(a, b), "%s: PTX of the export differs from the worker's (%s)", cfg,
              err);
    char e1[64], e2[64];
    snprintf(e1, sizeof e1, ".entry %s(", main_fn);
    snprintf(e2, sizeof e2, ".entry %s(", fin_fn);
    CHECK(a && strstr(a, e1) && strstr(a, e2));
    free(a);
    free(b);
    gt_gen_kernel_free(&k);
}

/* lanes "warp": split-K by atomics on the epilogue problem (n = 5, n_tile
 * 8), by two passes through a cp.async ring on the decode problem */
static const char k_warp_atomic[] =
    "{\"a_load\":\"cs\",\"family\":\"gemv\",\"k_unroll\":1,\"kwarps\":2,\"lanes\":\"warp\","
    "\"n_tile\":8,\"pipe\":\"reg\",\"reduction\":\"atomic\",\"rows_per_cta\":4,\"splitk\":2,"
    "\"vec\":8,\"warps\":4}";
static const char k_warp_twopass[] =
    "{\"a_load\":\"na256\",\"family\":\"gemv\",\"k_unroll\":2,\"kwarps\":2,\"lanes\":\"warp\","
    "\"n_tile\":1,\"pipe\":\"async\",\"reduction\":\"twopass\",\"rows_per_cta\":2,\"splitk\":2,"
    "\"vec\":8,\"warps\":4}";
/* pipe "dbuf": quad on the decode problem (beta 0: C compiled out), split-K
 * by atomics on the epilogue problem (beta 0.25), lanes "warp" */
static const char k_dbuf[] =
    "{\"a_load\":\"na256\",\"family\":\"gemv\",\"k_unroll\":2,\"kwarps\":2,\"n_tile\":8,"
    "\"pipe\":\"dbuf\",\"reduction\":\"none\",\"rows_per_cta\":32,\"splitk\":1,\"vec\":8,"
    "\"warps\":4}";
static const char k_dbuf_atomic[] =
    "{\"a_load\":\"cs\",\"family\":\"gemv\",\"k_unroll\":1,\"kwarps\":2,\"n_tile\":8,"
    "\"pipe\":\"dbuf\",\"reduction\":\"atomic\",\"rows_per_cta\":64,\"splitk\":2,\"vec\":8,"
    "\"warps\":4}";
static const char k_dbuf_warp[] =
    "{\"a_load\":\"cs\",\"family\":\"gemv\",\"k_unroll\":1,\"kwarps\":2,\"lanes\":\"warp\","
    "\"n_tile\":1,\"pipe\":\"dbuf\",\"reduction\":\"none\",\"rows_per_cta\":2,\"splitk\":1,"
    "\"vec\":8,\"warps\":4}";
static void check_nvrtc(const gt_problem *p, const char *cfg)
{
    check_nvrtc_of(p, cfg, gt_gen_gemv_src, "gt_gemv", "gt_gemv_fin");
}

static void test_nvrtc(void)
{
    gt_problem p = decode(4096, 1, 4096), e = epilogue();
    check_nvrtc(&p, k_none);
    check_nvrtc(&p, k_twopass);
    check_nvrtc(&e, k_atomic);
    check_nvrtc(&e, k_warp_atomic);
    check_nvrtc(&p, k_warp_twopass);
    check_nvrtc(&p, k_dbuf);
    check_nvrtc(&e, k_dbuf_atomic);
    check_nvrtc(&p, k_dbuf_warp);
    gt_problem f = f8_decode(), fe = f8_epilogue();
    check_nvrtc(&f, k_f8_none);
    check_nvrtc(&f, k_f8_twopass);
    check_nvrtc(&fe, k_f8_warp);
}
#endif

/* ---- the mma family ------------------------------------------------------------------ */

/* The best kept mma config of p's space on an H100 whose reduction is red
 * (-1: any), as canonical text in buf; 0, or -1 when there is none. */
static int mma_pick(const gt_problem *p, int red, int inst, char *buf, size_t len)
{
    gt_gen_dev d;
    gt_mma_space s;
    gt_gen_dev_default(&d, 90, 132);
    if (gt_mma_prune(p, &d, 0, &s) != 0)
        return -1;
    int rc = -1;
    for (int i = 0; i < s.nkeep && rc; i++)
        if ((red < 0 || s.keep[i].reduction == red) && s.keep[i].inst == inst)
            rc = gt_mma_cfg_text(&s.keep[i], buf, len) > 0 ? 0 : -1;
    gt_mma_space_free(&s);
    return rc;
}

/* What the worker derives for an mma config (gen_run.c: gt_mma_geometry,
 * gt_mma_defines, dynamic shared memory, gt_gen_args) is what the export
 * says. */
static void check_mma(const gt_problem *p, const char *cfg)
{
    char err[256];
    gt_gen_kernel k;
    gt_mma_cfg c;
    gt_gen_geom g;
    cJSON *j = cJSON_Parse(cfg);
    CHECK(j && gt_mma_cfg_from_json(j, &c, err, sizeof err) == 0);
    cJSON_Delete(j);
    gt_mma_geometry(p, &c, &g);
    int rc = make(p, cfg, 90, &k, err, sizeof err);
    CHECK_MSG(rc == GT_GEN_EXPORT_OK, "%s: %s", cfg, err);
    if (rc != GT_GEN_EXPORT_OK) {
        gt_gen_kernel_free(&k);
        return;
    }
    CHECK(!strcmp(k.family_name, "mma") && k.family == GT_FAM_MMA && !strcmp(k.config, cfg));
    const gt_gen_launch *l = &k.launch[0];
    CHECK(!strcmp(l->kernel, "gt_mma") && l->grid[0] == g.gx && l->grid[1] == g.gy &&
          l->grid[2] == g.gz && l->block[0] == g.threads && l->smem_dynamic == g.smem_bytes);
    CHECK(k.nlaunch == (c.reduction == GT_GEN_RED_TWOPASS ? 2 : 1));
    if (k.nlaunch == 2)
        CHECK(!strcmp(k.launch[1].kernel, "gt_mma_fin") && k.launch[1].grid[0] == g.fin_blocks);
    CHECK(k.workspace_bytes >= g.ws_bytes && !strcmp(k.args_struct, "gt_mma_args"));
    CHECK(k.args[18].i == g.kper && !strcmp(k.args[18].name, "kper"));
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN];
    int nd = gt_mma_defines(p, &c, defs);
    CHECK(nd == k.ndefs && nd > 0);
    for (int i = 0; i < nd && i < k.ndefs; i++)
        CHECK(!strcmp(defs[i], k.defs[i]));
    const char *tmpl = gt_mma_src_of(&c);
    size_t sl = strlen(k.source), tl = strlen(tmpl);
    CHECK(sl > tl && !strcmp(k.source + sl - tl, tmpl));
    /* wgmma: sm_90a only, the maps of A and B after the struct; fp8: the
     * scales after beta, maps of bytes */
    int wg = c.inst == GT_MMA_INST_WGMMA, es = gt_dtype_is_f8(p->a_type) ? 1 : 2;
    CHECK(gt_gen_kernel_scaled(&k) == (es == 1) && k.nargs == (es == 1 ? 23 : 21));
    /* the maps: A and B, and D where the kernel writes it with TMA stores */
    int nmaps = wg ? 2 + gt_mma_wg_tma_store(p, &c) : 0;
    CHECK(k.arch_specific == wg && k.ntmaps == nmaps && k.min_sm == (wg ? 90 : 80) &&
          !strcmp(k.arch, wg ? "sm_90a" : "sm_90"));
    cJSON *js = gt_gen_kernel_json(&k);
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(js, "tensor_maps");
    const cJSON *l0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(js, "launches"), 0);
    CHECK(cJSON_GetArraySize(tm) == nmaps &&
          cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(l0, "params")) == 1 + nmaps);
    if (nmaps == 3) {
        const cJSON *dm = cJSON_GetArrayItem(tm, 2);
        const cJSON *dd = cJSON_GetObjectItemCaseSensitive(dm, "global_dim");
        CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(dm, "operand")), "d") &&
              cJSON_GetArrayItem(dd, 0)->valuedouble == (double)p->m &&
              cJSON_GetArrayItem(dd, 1)->valuedouble == (double)p->n);
        /* the template's default, which the -D overrides */
        CHECK(strstr(k.source, "#define GT_TS 0") != NULL);
    }
    if (wg) {
        const cJSON *a = cJSON_GetArrayItem(tm, 0), *b = cJSON_GetArrayItem(tm, 1);
        const cJSON *ad = cJSON_GetObjectItemCaseSensitive(a, "global_dim");
        const cJSON *bb = cJSON_GetObjectItemCaseSensitive(b, "box_dim");
        const cJSON *as = cJSON_GetObjectItemCaseSensitive(a, "global_strides_bytes");
        CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "operand")), "a") &&
              cJSON_GetArrayItem(ad, 0)->valuedouble == (double)p->k &&
              cJSON_GetArrayItem(ad, 1)->valuedouble == (double)p->m &&
              cJSON_GetArrayItem(as, 0)->valuedouble == (double)es * p->lda &&
              cJSON_GetArrayItem(bb, 0)->valuedouble == 128 / es &&
              cJSON_GetArrayItem(bb, 1)->valuedouble == c.bn / (c.cluster == 2 ? 2 : 1) && /* clusters: half each */
              !strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "data_type")),
                      es == 1 ? "CU_TENSOR_MAP_DATA_TYPE_UINT8" : "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16") &&
              !strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "swizzle")),
                      "CU_TENSOR_MAP_SWIZZLE_128B"));
        char *cuh = gt_gen_kernel_cuh(&k, "test");
        CHECK(cuh && strstr(cuh, "CUtensorMap map0, CUtensorMap map1") && strstr(cuh, "(sm_90 only)"));
        /* the parameters are the maps, no more: a third only with TMA stores */
        CHECK(cuh && (strstr(cuh, "CUtensorMap map1, CUtensorMap map2)") != NULL) == (nmaps == 3) &&
              (strstr(cuh, "CUtensorMap map1)") != NULL) == (nmaps == 2));
        free(cuh);
        /* another target is refused */
        gt_gen_kernel k80;
        char e80[256];
        CHECK(make(p, cfg, 80, &k80, e80, sizeof e80) == GT_GEN_EXPORT_BAD && strstr(e80, "inst wgmma"));
        gt_gen_kernel_free(&k80);
    }
    cJSON_Delete(js);
    gt_gen_kernel_free(&k);
#ifdef GT_WITH_CUDA
    check_nvrtc_of(p, cfg, tmpl, "gt_mma", "gt_mma_fin");
#endif
}

static void test_mma(void)
{
    char cfg[512];
    gt_problem pre = decode(4096, 2048, 4096), mid = decode(4096, 16, 14336), n128 = decode(4096, 128, 14336);
    for (int inst = 0; inst < 2; inst++) {
        CHECK(mma_pick(&pre, -1, inst, cfg, sizeof cfg) == 0);
        check_mma(&pre, cfg);
    }
    /* wgmma's persistent grid, alone and in clusters of two (half of B's box) */
    check_mma(&pre, "{\"bk\":64,\"bm\":128,\"bn\":256,\"ctas\":132,\"family\":\"mma\",\"inst\":\"wgmma\","
                    "\"reduction\":\"none\",\"splitk\":1,\"stages\":4,\"swizzle\":8,\"warps_m\":8,\"warps_n\":1}");
    check_mma(&pre, "{\"bk\":64,\"bm\":128,\"bn\":128,\"cluster\":2,\"ctas\":132,\"family\":\"mma\",\"inst\":"
                    "\"wgmma\",\"reduction\":\"none\",\"splitk\":1,\"stages\":4,\"swizzle\":8,\"warps_m\":8,"
                    "\"warps_n\":1}");
    CHECK(mma_pick(&mid, GT_GEN_RED_ATOMIC, GT_MMA_INST_SYNC, cfg, sizeof cfg) == 0);
    check_mma(&mid, cfg);
    CHECK(mma_pick(&mid, GT_GEN_RED_TWOPASS, GT_MMA_INST_SYNC, cfg, sizeof cfg) == 0);
    check_mma(&mid, cfg);
    /* wgmma's bn 16 at n = 16 and n = 1 (a box wider than B): the winner
     * of gate_up n = 16 on the H100 is one */
    gt_problem one = decode(28672, 1, 4096);
    CHECK(mma_pick(&mid, -1, GT_MMA_INST_WGMMA, cfg, sizeof cfg) == 0 && strstr(cfg, "\"bn\":16,"));
    check_mma(&mid, cfg);
    CHECK(mma_pick(&one, -1, GT_MMA_INST_WGMMA, cfg, sizeof cfg) == 0 && strstr(cfg, "\"bn\":16,"));
    check_mma(&one, cfg);
    /* wgmma with split-K of both kinds */
    CHECK(mma_pick(&n128, GT_GEN_RED_ATOMIC, GT_MMA_INST_WGMMA, cfg, sizeof cfg) == 0);
    check_mma(&n128, cfg);
    CHECK(mma_pick(&n128, GT_GEN_RED_TWOPASS, GT_MMA_INST_WGMMA, cfg, sizeof cfg) == 0);
    check_mma(&n128, cfg);
    /* fp8 (e4m3, bf16 D) on wgmma: a prefill and a skinny shape */
    gt_problem f8 = gen_test_prob_f8(4096, 2048, 4096, GT_DT_F8E4M3, GT_DT_F8E4M3, GT_DT_BF16);
    CHECK(mma_pick(&f8, -1, GT_MMA_INST_WGMMA, cfg, sizeof cfg) == 0 && strstr(cfg, "\"bk\":128,"));
    check_mma(&f8, cfg);
    gt_problem f8s = gen_test_prob_f8(4096, 16, 14336, GT_DT_F8E4M3, GT_DT_F8E5M2, GT_DT_F32);
    CHECK(mma_pick(&f8s, -1, GT_MMA_INST_WGMMA, cfg, sizeof cfg) == 0);
    check_mma(&f8s, cfg);
    /* an fp8 config on mma.sync, or with a 16-bit k tile, is refused */
    expect_refused(&f8, "{\"bk\":64,\"bm\":128,\"bn\":128,\"family\":\"mma\",\"reduction\":\"none\",\"splitk\":1,"
                        "\"stages\":3,\"swizzle\":1,\"warps_m\":2,\"warps_n\":2}", GT_GEN_EXPORT_BAD,
                   "fp8 inputs run on inst wgmma only");
    expect_refused(&f8, "{\"bk\":64,\"bm\":128,\"bn\":128,\"family\":\"mma\",\"inst\":\"wgmma\",\"reduction\":"
                        "\"none\",\"splitk\":1,\"stages\":4,\"swizzle\":1,\"warps_m\":8,\"warps_n\":1}",
                   GT_GEN_EXPORT_BAD, "one 128-byte row: bk=64 x 1-byte");
    /* a config the target cannot run is refused with the rule */
    CHECK(mma_pick(&pre, -1, GT_MMA_INST_SYNC, cfg, sizeof cfg) == 0);
    gt_problem q = pre;
    q.lda = 4100;
    expect_refused(&q, cfg, GT_GEN_EXPORT_BAD, "alignment");
}

/* ---- the store query --------------------------------------------------------------- */

static void test_store_row(void)
{
    char dir[] = "/tmp/gt-genexp.XXXXXX", path[256], err[512], sql[4096];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/c.db", dir);
    gt_store *s = gt_store_open(path, err, sizeof err);
    CHECK_MSG(s, "%s", err);
    if (!s)
        return;
    /* a run with two decode problems (no worker: nothing runs) */
    const char log[] =
        "- {function: matmul, M: 4096, N: 1, K: 4096, transA: T, transB: N, a_type: bf16_r, "
        "b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, compute_type: c_f32_r, call_count: 5}\n"
        "- {function: matmul, M: 2048, N: 1, K: 4096, transA: T, transB: N, a_type: bf16_r, "
        "b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, compute_type: c_f32_r, call_count: 5}\n";
    gt_run_opts o;
    gt_log_result res;
    gt_run_created cr;
    gt_run_opts_default(&o);
    snprintf(o.backend, sizeof o.backend, "cuda");
    CHECK(gt_log_parse(log, sizeof log - 1, &o.log, &res) == 0);
    CHECK(gt_test_create_run(s, &o, &res, &cr, err, sizeof err) == 0 && cr.problems == 2);
    gt_log_result_free(&res);
    gt_run_opts_fini(&o);
    snprintf(sql, sizeof sql,
             "INSERT INTO workers (host, pid, device_index, backend, device_model, arch, mem_bytes,"
             " units, driver, version, state, registered_ms, last_heartbeat_ms) VALUES"
             " ('g', 1, 0, 'cuda', 'H100', 'sm_90', 1, 132, 'd', 'v', 'gone', 1, 1);"
             "INSERT INTO results (run_id, problem_id, job_id, backend, phase, config, config_hash,"
             " is_baseline, time_us, valid, worker_id, device_model, created_ms)"
             " SELECT %lld, p.id, (SELECT MIN(id) FROM jobs WHERE problem_id = p.id), 'cuda', v.ph,"
             " v.cfg, v.h, v.bl, v.t, v.ok, 1, 'H100', 1 FROM problems p, (SELECT 'screen' AS ph,"
             " '%s' AS cfg, '00000000000000c1' AS h, 0 AS bl, 9.0 AS t, 1 AS ok"
             " UNION ALL SELECT 'final', '%s', '00000000000000a1', 0, 12.0, 1"
             " UNION ALL SELECT 'final', '%s', '00000000000000b1', 1, 15.0, 1"
             " UNION ALL SELECT 'final', '%s', '00000000000000d1', 0, 11.0, 0) v WHERE p.m = 4096",
             (long long)cr.id, k_twopass, k_none, k_lt, k_atomic);
    CHECK(gt_test_store_sql(s, sql) == 0);
    int64_t p1 = 0, p2 = 0;
    gt_kernel_row r;
    char id[32], key[512];
    /* the winner: the fastest valid final row (not the faster screen one,
     * not the invalid one), with the final baseline and the worker's arch */
    for (int64_t i = 1; i <= 2; i++) {
        snprintf(id, sizeof id, "%lld", (long long)i);
        if (gt_store_kernel_row(s, cr.id, id, NULL, &r, err, sizeof err) == 0) {
            p1 = r.problem_id;
            snprintf(key, sizeof key, "%s", r.key);
            CHECK(!strcmp(r.config, k_none) && r.winner && r.valid && !strcmp(r.phase, "final"));
            CHECK(r.time_us == 12.0 && r.baseline_us == 15.0 && !strcmp(r.arch, "sm_90"));
            CHECK(!strcmp(r.device_model, "H100") && !strcmp(r.backend, "cuda") && r.spec[0] == '{');
            gt_kernel_row_fini(&r);
        } else {
            p2 = i;
        }
    }
    CHECK(p1 > 0 && p2 > 0 && p1 != p2);
    /* the same by key; a candidate by hash, invalid ones too */
    CHECK(gt_store_kernel_row(s, cr.id, key, NULL, &r, err, sizeof err) == 0 && r.problem_id == p1);
    gt_kernel_row_fini(&r);
    CHECK(gt_store_kernel_row(s, cr.id, key, "00000000000000d1", &r, err, sizeof err) == 0 &&
          !r.valid && !r.winner && !strcmp(r.config, k_atomic));
    gt_kernel_row_fini(&r);
    CHECK(gt_store_kernel_row(s, cr.id, key, "00000000000000c1", &r, err, sizeof err) == 0 &&
          !strcmp(r.phase, "screen") && isnan(r.baseline_us));
    gt_kernel_row_fini(&r);
    /* what is missing */
    snprintf(id, sizeof id, "%lld", (long long)p2);
    CHECK(gt_store_kernel_row(s, cr.id, id, NULL, &r, err, sizeof err) == GT_STORE_NO_RESULT);
    CHECK(gt_store_kernel_row(s, cr.id, key, "0000000000000000", &r, err, sizeof err) ==
          GT_STORE_NO_RESULT);
    CHECK(gt_store_kernel_row(s, cr.id, "999", NULL, &r, err, sizeof err) == GT_STORE_NO_PROBLEM);
    CHECK(gt_store_kernel_row(s, cr.id, "m=1", NULL, &r, err, sizeof err) == GT_STORE_NO_PROBLEM);
    CHECK(gt_store_kernel_row(s, cr.id + 1, "1", NULL, &r, err, sizeof err) == GT_STORE_NO_RUN);
    gt_store_close(s);
    snprintf(sql, sizeof sql, "rm -rf '%s'", dir);
    CHECK(system(sql) == 0);
}

int main(void)
{
    RUN(test_matches_worker);
    RUN(test_refused);
    RUN(test_renderings);
#ifdef GT_WITH_CUDA
    RUN(test_nvrtc);
#else
    fprintf(stderr, "     SKIP nvrtc: built without CUDA\n");
#endif
    RUN(test_mma);
    RUN(test_store_row);
    return gt_test_done();
}
