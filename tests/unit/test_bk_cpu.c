/* test_bk_cpu.c: the CPU backend end to end: device description, generated
 * kernels for every type and transpose with fringes, batches, beta and
 * padded leading dimensions checked against the reference; warning-free
 * generated source; build failures with reasons; the compile cache;
 * unsupported problems; and that validation catches a wrong kernel. The
 * baseline, OpenBLAS (cpu_blas.c): built, validated and timed like a kernel
 * for every transpose with batches, beta and padded leading dimensions, its
 * refusals with their reasons, and a worker without the library.
 * Compiles dominate the run time, so configs are shared across cases. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gt_backend.h"
#include "gt_bk_cpu.h"
#include "gt_config.h"
#include "gt_test.h"

static gt_bk_ctx *g_ctx;
static char g_cache[] = "/tmp/gt_test_bk_cpu.XXXXXX";

/* Multiple kc blocks with a fringe, 3 row blocks, 2 column blocks, groups
 * of panels over 2 threads, unroll remainders. */
static const char *k_fringe1 =
    "{\"mc\":16,\"nc\":16,\"kc\":16,\"mr\":4,\"nr\":8,\"unroll\":4,\"threads\":2}";
static const char *k_fringe2 =
    "{\"mc\":12,\"nc\":32,\"kc\":32,\"mr\":6,\"nr\":16,\"unroll\":8,\"threads\":1}";

static void test_open(void)
{
    gt_bk_device dev;
    char err[256];
    CHECK(gt_bk_cpu.open(0, &g_ctx, &dev, err, sizeof err) == 0);
    if (!g_ctx) {
        fprintf(stderr, "open: %s\n", err);
        return;
    }
    struct utsname u;
    CHECK(uname(&u) == 0);
    fprintf(stderr, "  device: %s | %s | %d units | %lld MiB | %s\n", dev.model, dev.arch,
            dev.units, (long long)(dev.mem_bytes >> 20), dev.driver);
    CHECK(strcmp(dev.backend, "cpu") == 0 && dev.index == 0);
    CHECK(dev.model[0] != '\0' && dev.driver[0] != '\0');
    CHECK(strncmp(dev.arch, u.machine, strlen(u.machine)) == 0);
    CHECK(dev.units >= 1 && dev.units == (int)sysconf(_SC_NPROCESSORS_ONLN));
    CHECK(dev.mem_bytes > 0);
    gt_bk_ctx *other = NULL;
    CHECK(gt_bk_cpu.open(1, &other, &dev, err, sizeof err) == -1 && other == NULL);
    CHECK(strstr(err, "device 1") != NULL);
    CHECK(gt_bk_find("cpu") == &gt_bk_cpu);
}

/* A problem with every feature on: batch 3 with gaps between matrices,
 * padded leading dimensions, beta != 0 with C of c_type. */
static void make_problem(gt_problem *p, gt_dtype ab, gt_dtype cd, char ta, char tb)
{
    gt_problem_init(p, 37, 29, 41);
    p->trans_a = ta;
    p->trans_b = tb;
    p->a_type = p->b_type = ab;
    p->c_type = p->d_type = cd;
    p->batch = 3;
    p->lda = (ta == 'N' ? p->m : p->k) + 3;
    p->ldb = (tb == 'N' ? p->k : p->n) + 5;
    p->ldc = p->m + 2;
    p->ldd = p->m + 7;
    p->stride_a = p->lda * (ta == 'N' ? p->k : p->m) + 11;
    p->stride_b = p->ldb * (tb == 'N' ? p->n : p->k) + 1;
    p->stride_c = p->ldc * p->n;
    p->stride_d = p->ldd * p->n + 13;
    p->alpha = 1.25;
    p->beta = -0.5;
    gt_problem_finish(p);
}

/* Builds cfg, validates it and times it; returns the rel. error (NaN when a
 * step failed). */
static double run_cfg(gt_bk_prob *pp, const gt_problem *p, const cJSON *cfg, double *us)
{
    char err[512];
    gt_bk_cand *c = NULL;
    double re = NAN;
    *us = 0;
    if (gt_bk_cpu.build(pp, cfg, &c, err, sizeof err) != 0) {
        fprintf(stderr, "  build failed: %s\n", err);
        return NAN;
    }
    if (gt_bk_cpu.validate(pp, c, &re, err, sizeof err) != 0) {
        fprintf(stderr, "  validate failed: %s\n", err);
        re = NAN;
    }
    gt_timing_opts o = {.min_time_ms = 0.2, .warmup = 1, .repeats = 3, .rotating_bytes = 1 << 20};
    gt_timing t;
    if (gt_bk_cpu.time(pp, c, &o, &t, err, sizeof err) != 0) {
        fprintf(stderr, "  time failed: %s\n", err);
        re = NAN;
    } else {
        CHECK(t.median_us > 0 && t.min_us <= t.median_us && t.median_us <= t.max_us);
        CHECK(t.iters >= 1 && t.repeats == 3 && t.spread >= 0 && !t.pruned);
        *us = t.median_us;
    }
    /* the screen's early exit: past the bound after calibration, one call's time and no
     * repeats; under it (a bound no call reaches), timed in full */
    o.prune_above_us = 1e-3;
    CHECK(gt_bk_cpu.time(pp, c, &o, &t, err, sizeof err) == 0 && t.pruned && t.repeats == 1 &&
          t.median_us > 1e-3 && t.median_us == t.min_us);
    o.prune_above_us = 1e12;
    CHECK(gt_bk_cpu.time(pp, c, &o, &t, err, sizeof err) == 0 && !t.pruned && t.repeats == 3);
    (void)p;
    gt_bk_cpu.release(c);
    return re;
}

/* p prepared on the test's context, its label in label; NULL after a
 * failed check. */
static gt_bk_prob *prepare_checked(const gt_problem *p, char *label, size_t len)
{
    char err[512];
    gt_problem_label(p, label, len);
    gt_bk_prob *pp = NULL;
    if (gt_bk_cpu.prepare(g_ctx, p, &pp, err, sizeof err) != 0) {
        CHECK_MSG(0, "%s: prepare: %s", label, err);
        return NULL;
    }
    return pp;
}

static void check_problem(const gt_problem *p, const char **cfgs, int ncfg, int with_base)
{
    char label[96];
    gt_bk_prob *pp = prepare_checked(p, label, sizeof label);
    if (!pp)
        return;
    double tol = gt_bk_tolerance(p);
    for (int i = -1; i < ncfg; i++) {
        /* with_base: the kernel's default blocking, once the baseline */
        cJSON *cfg = i < 0 ? (with_base ? gt_space_cpu_default(p, 2) : NULL) : cJSON_Parse(cfgs[i]);
        if (!cfg)
            continue;
        double us, re = run_cfg(pp, p, cfg, &us);
        char *t = gt_cfg_canonical(cfg);
        if (getenv("GT_TEST_VERBOSE"))
            fprintf(stderr, "  %s c=%s d=%s %s: rel_err %.3g (tol %.3g)\n", label,
                    gt_dtype_name(p->c_type), gt_dtype_name(p->d_type), t, re, tol);
        CHECK_MSG(re <= tol, "%s c=%s d=%s %s: rel_err %.3g > tol %.3g", label,
                  gt_dtype_name(p->c_type), gt_dtype_name(p->d_type), t, re, tol);
        free(t);
        cJSON_Delete(cfg);
    }
    gt_bk_cpu.unprepare(pp);
}

static void test_types_and_transposes(void)
{
    const gt_dtype types[] = {GT_DT_F32, GT_DT_F16, GT_DT_BF16};
    const char *ops[] = {"NN", "NT", "TN", "TT"};
    const char *cfgs[] = {k_fringe1, k_fringe2};
    for (int ti = 0; ti < 3; ti++)
        for (int oi = 0; oi < 4; oi++) {
            gt_problem p;
            make_problem(&p, types[ti], types[ti], ops[oi][0], ops[oi][1]);
            check_problem(&p, cfgs, 2, 1);
        }
}

static void test_mixed_and_special(void)
{
    const char *cfgs[] = {k_fringe1};
    gt_problem p;
    /* bf16 inputs, f32 C and D: the usual mixed-precision GEMM. */
    make_problem(&p, GT_DT_BF16, GT_DT_F32, 'T', 'N');
    check_problem(&p, cfgs, 1, 0);
    /* Every operand a different type; low-precision D over several kc blocks. */
    make_problem(&p, GT_DT_F32, GT_DT_F16, 'N', 'T');
    p.b_type = GT_DT_BF16;
    p.c_type = GT_DT_BF16;
    gt_problem_finish(&p);
    check_problem(&p, cfgs, 1, 0);
    /* beta == 0: no C at all (the kernel must not read it); broadcast A. */
    make_problem(&p, GT_DT_F32, GT_DT_F32, 'N', 'N');
    p.beta = 0;
    p.stride_a = 0;
    gt_problem_finish(&p);
    check_problem(&p, cfgs, 1, 0);
    /* Tight single GEMM with an m, n, k of 1. */
    gt_problem_init(&p, 1, 1, 1);
    gt_problem_finish(&p);
    check_problem(&p, cfgs, 1, 0);
}

static void expect_build_fail(gt_bk_prob *pp, const char *json, const char *needle)
{
    char err[512] = "";
    gt_bk_cand *c = NULL;
    cJSON *cfg = cJSON_Parse(json);
    CHECK(cfg != NULL);
    int rc = gt_bk_cpu.build(pp, cfg, &c, err, sizeof err);
    CHECK_MSG(rc == -1 && c == NULL && strstr(err, needle), "%s: rc=%d err='%s'", json, rc, err);
    cJSON_Delete(cfg);
}

static void test_build_failures(void)
{
    gt_problem p;
    make_problem(&p, GT_DT_F32, GT_DT_F32, 'N', 'N');
    char err[512];
    gt_bk_prob *pp = NULL;
    CHECK(gt_bk_cpu.prepare(g_ctx, &p, &pp, err, sizeof err) == 0);
    if (!pp)
        return;
    expect_build_fail(pp, "{\"mc\":16,\"nc\":16,\"kc\":16,\"mr\":0,\"nr\":8,\"unroll\":4,\"threads\":1}",
                      "mr=0");
    expect_build_fail(pp, "{\"mc\":16,\"nc\":16,\"kc\":16,\"mr\":4,\"nr\":8,\"unroll\":4}",
                      "'threads' missing");
    expect_build_fail(pp, "{\"mc\":18,\"nc\":16,\"kc\":16,\"mr\":4,\"nr\":8,\"unroll\":4,\"threads\":1}",
                      "not a multiple of mr");
    expect_build_fail(pp, "{\"mc\":16,\"nc\":16,\"kc\":16,\"mr\":4,\"nr\":8,\"unroll\":4,\"threads\":1,"
                          "\"vec\":2}",
                      "unknown config attribute 'vec'");
    expect_build_fail(pp, "{\"mc\":16,\"nc\":16,\"kc\":1.5,\"mr\":4,\"nr\":8,\"unroll\":4,\"threads\":1}",
                      "kc=1.5");
    expect_build_fail(pp, "[1]", "not a JSON object");
    /* A source that does not compile: the reason is the compiler's error. */
    expect_build_fail(pp, "{\"mc\":16,\"nc\":16,\"kc\":16,\"mr\":4,\"nr\":8,\"unroll\":4,\"threads\":1,"
                          "\"bug\":2}",
                      "error");
    gt_bk_cpu.unprepare(pp);
}

/* Files in the test's cache directory whose names end in suffix. */
static int count_suffix(const char *suffix)
{
    DIR *d = opendir(g_cache);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    size_t sl = strlen(suffix);
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        n += l > sl && strcmp(e->d_name + l - sl, suffix) == 0;
    }
    closedir(d);
    return n;
}

static void test_cache(void)
{
    const char *json = "{\"mc\":24,\"nc\":24,\"kc\":24,\"mr\":4,\"nr\":8,\"unroll\":2,\"threads\":1}";
    cJSON *cfg = cJSON_Parse(json);
    char err[512];
    long h0, m0, h1, m1, h2, m2, h3, m3;
    gt_problem p, q;
    make_problem(&p, GT_DT_F16, GT_DT_F16, 'T', 'T');
    make_problem(&q, GT_DT_F16, GT_DT_F16, 'T', 'T');
    q.m = 70; /* other sizes, same types and transposes */
    q.n = 5;
    gt_problem_default_ld(&q);
    gt_problem_finish(&q);
    gt_bk_prob *pp = NULL, *qq = NULL;
    CHECK(gt_bk_cpu.prepare(g_ctx, &p, &pp, err, sizeof err) == 0);
    CHECK(gt_bk_cpu.prepare(g_ctx, &q, &qq, err, sizeof err) == 0);
    if (!pp || !qq || !cfg)
        goto out;
    gt_bk_cand *c = NULL;
    gt_bk_cpu_cache_stats(&h0, &m0);
    CHECK(gt_bk_cpu.build(pp, cfg, &c, err, sizeof err) == 0);
    gt_bk_cpu.release(c);
    gt_bk_cpu_cache_stats(&h1, &m1);
    CHECK(m1 == m0 + 1 && h1 == h0);
    CHECK(gt_bk_cpu.build(pp, cfg, &c, err, sizeof err) == 0);
    gt_bk_cpu.release(c);
    gt_bk_cpu_cache_stats(&h2, &m2);
    CHECK(h2 == h1 + 1 && m2 == m1);
    /* Sizes are run-time arguments: another problem reuses the object. */
    double re = NAN;
    CHECK(gt_bk_cpu.build(qq, cfg, &c, err, sizeof err) == 0);
    if (c) {
        CHECK(gt_bk_cpu.validate(qq, c, &re, err, sizeof err) == 0 && re <= gt_bk_tolerance(&q));
        gt_bk_cpu.release(c);
    }
    gt_bk_cpu_cache_stats(&h3, &m3);
    CHECK(h3 == h2 + 1 && m3 == m2);
    /* The objects and their sources are in the directory we set. */
    CHECK(count_suffix(".so") >= 1 && count_suffix(".c") >= 1);
out:
    gt_bk_cpu.unprepare(pp);
    gt_bk_cpu.unprepare(qq);
    cJSON_Delete(cfg);
}

static void test_unsupported(void)
{
    char err[512];
    gt_bk_prob *pp = NULL;
    gt_problem p;
    gt_problem_init(&p, 16, 16, 16);
    p.a_type = GT_DT_F8E4M3;
    gt_problem_finish(&p);
    CHECK(gt_bk_cpu.prepare(g_ctx, &p, &pp, err, sizeof err) == -1 && pp == NULL);
    CHECK_MSG(strstr(err, "a_type=f8e4m3 not supported") != NULL, "%s", err);
    gt_problem_init(&p, 16, 16, 16);
    p.c_type = p.d_type = GT_DT_F64;
    CHECK(gt_bk_cpu.prepare(g_ctx, &p, &pp, err, sizeof err) == -1 && strstr(err, "f64"));
    gt_problem_init(&p, 16, 16, 16);
    p.b_type = GT_DT_I8;
    CHECK(gt_bk_cpu.prepare(g_ctx, &p, &pp, err, sizeof err) == -1 && strstr(err, "b_type=i8"));
    gt_problem_init(&p, 16, 16, 16);
    snprintf(p.activation, sizeof p.activation, "gelu");
    CHECK(gt_bk_cpu.prepare(g_ctx, &p, &pp, err, sizeof err) == -1 && strstr(err, "gelu"));
    gt_problem_init(&p, 16, 16, 16);
    p.lda = 3; /* invalid problem */
    CHECK(gt_bk_cpu.prepare(g_ctx, &p, &pp, err, sizeof err) == -1 && strstr(err, "lda"));
}

/* The test hook bug=1 skips D's last column: validation must fail it. */
static void test_detects_wrong_kernel(void)
{
    gt_problem p;
    make_problem(&p, GT_DT_BF16, GT_DT_BF16, 'T', 'N');
    char err[512];
    gt_bk_prob *pp = NULL;
    CHECK(gt_bk_cpu.prepare(g_ctx, &p, &pp, err, sizeof err) == 0);
    if (!pp)
        return;
    cJSON *cfg = cJSON_Parse(
        "{\"mc\":16,\"nc\":16,\"kc\":16,\"mr\":4,\"nr\":8,\"unroll\":4,\"threads\":2,\"bug\":1}");
    gt_bk_cand *c = NULL;
    double re = 0;
    CHECK(gt_bk_cpu.build(pp, cfg, &c, err, sizeof err) == 0);
    if (c) {
        CHECK(gt_bk_cpu.validate(pp, c, &re, err, sizeof err) == 0);
        CHECK_MSG(!(re <= gt_bk_tolerance(&p)), "rel_err %g", re);
        gt_bk_cpu.release(c);
    }
    cJSON_Delete(cfg);
    gt_bk_cpu.unprepare(pp);
}

/* Generated sources compile cleanly under the project's warning flags. */
static void test_source_warning_free(void)
{
    const char *cfgs[] = {k_fringe1, k_fringe2,
                          "{\"mc\":64,\"nc\":256,\"kc\":256,\"mr\":4,\"nr\":8,\"unroll\":1,\"threads\":1}"};
    const gt_dtype ab[] = {GT_DT_BF16, GT_DT_F32, GT_DT_F16};
    const gt_dtype cd[] = {GT_DT_F16, GT_DT_BF16, GT_DT_F32};
    const char *cc = getenv("GEMMTUNE_CC") ? getenv("GEMMTUNE_CC") : "cc";
    for (int i = 0; i < 3; i++) {
        gt_problem p;
        make_problem(&p, ab[i], cd[i], i ? 'N' : 'T', i == 1 ? 'N' : 'T');
        cJSON *cfg = cJSON_Parse(cfgs[i]);
        gt_cpu_cfg k;
        char err[512], path[128], out[4096];
        gt_str src;
        gt_str_init(&src);
        CHECK(gt_cpu_cfg_parse(cfg, &k, err, sizeof err) == 0);
        CHECK(gt_cpu_codegen(&k, &p, &src, err, sizeof err) == 0 && src.s);
        snprintf(path, sizeof path, "%s/warn%d.c", g_cache, i);
        CHECK(src.s && gt_write_file(path, src.s, src.len) == 0);
        char *argv[] = {(char *)cc, "-std=c11", "-O3", "-march=native", "-fPIC", "-fopenmp",
                        "-ffp-contract=fast", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
                        "-Wshadow", "-Wconversion", "-Wno-sign-conversion", "-c", "-o",
                        "/dev/null", path, NULL};
        int rc = gt_run_argv(argv, out, sizeof out, 120000);
        CHECK_MSG(rc == 0, "%s: rc=%d\n%s", path, rc, out);
        /* clang too when there is one (single-thread kernels: clang's OpenMP
         * headers are a separate package). */
        char *cl[] = {"clang", "-std=c11", "-O3", "-march=native", "-fPIC", "-Wall", "-Wextra",
                      "-Wpedantic", "-Werror", "-c", "-o", "/dev/null", path, NULL};
        char *ver[] = {"clang", "--version", NULL};
        if (k.threads == 1 && gt_run_argv(ver, out, sizeof out, 30000) == 0) {
            rc = gt_run_argv(cl, out, sizeof out, 120000);
            CHECK_MSG(rc == 0, "clang %s: rc=%d\n%s", path, rc, out);
        }
        gt_str_free(&src);
        cJSON_Delete(cfg);
    }
}

/* Every config of the coordinator's space parses as a valid build config;
 * the baseline is the library's. */
static void test_space_configs_parse(void)
{
    gt_problem p;
    gt_problem_init(&p, 300, 200, 500);
    gt_problem_finish(&p);
    cJSON *all = gt_space_cpu(&p, GT_STRAT_EXHAUSTIVE, 0, 0, 4);
    cJSON *base = gt_space_cpu_baseline(&p, 4);
    cJSON *def = gt_space_cpu_default(&p, 4);
    CHECK(all && base && def && cJSON_GetArraySize(all) > 0);
    CHECK(gt_cpu_blas_is_cfg(base) && !gt_cpu_blas_is_cfg(def));
    cJSON_Delete(base);
    cJSON_AddItemToArray(all, def);
    const cJSON *c;
    int bad = 0;
    cJSON_ArrayForEach(c, all)
    {
        gt_cpu_cfg k;
        char err[256];
        if (gt_cpu_cfg_parse(c, &k, err, sizeof err) != 0 && bad++ < 3)
            fprintf(stderr, "  %s\n", err);
    }
    CHECK(bad == 0);
    cJSON_Delete(all);
}

/* Reported, not asserted: the best of a few configs and the default
 * blocking against the baseline, OpenBLAS, on an f32 NN 256^3 GEMM. */
static void test_measure(void)
{
    gt_problem p;
    gt_problem_init(&p, 256, 256, 256);
    gt_problem_finish(&p);
    char err[512];
    gt_bk_prob *pp = NULL;
    CHECK(gt_bk_cpu.prepare(g_ctx, &p, &pp, err, sizeof err) == 0);
    if (!pp)
        return;
    cJSON *cands = gt_space_cpu(&p, GT_STRAT_EXHAUSTIVE, 3, 0, 0);
    cJSON *def = gt_space_cpu_default(&p, 0);
    cJSON *base = gt_space_cpu_baseline(&p, 0);
    double best = 0, def_gf = 0, base_gf = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cands)
    {
        double us, re = run_cfg(pp, &p, c, &us);
        CHECK(re <= gt_bk_tolerance(&p));
        if (us > 0 && p.flops / us / 1e3 > best)
            best = p.flops / us / 1e3;
    }
    double us, re = run_cfg(pp, &p, def, &us);
    CHECK(re <= gt_bk_tolerance(&p));
    if (us > 0)
        def_gf = p.flops / us / 1e3;
    re = run_cfg(pp, &p, base, &us);
    CHECK(re <= gt_bk_tolerance(&p));
    if (us > 0)
        base_gf = p.flops / us / 1e3;
    fprintf(stderr, "  f32 NN 256^3: best of 3 %.1f GFLOP/s, default blocking %.1f, OpenBLAS %.1f\n",
            best, def_gf, base_gf);
    cJSON_Delete(cands);
    cJSON_Delete(def);
    cJSON_Delete(base);
    gt_bk_cpu.unprepare(pp);
}

/* The baseline config as the coordinator writes it, on `threads` threads. */
static cJSON *blas_cfg(int threads)
{
    gt_problem p;
    gt_problem_init(&p, 1, 1, 1);
    return gt_space_cpu_baseline(&p, threads);
}

/* Builds the OpenBLAS baseline for p, validates and times it: rel_err
 * within p's tolerance and a time. */
static void check_blas(const gt_problem *p, int threads)
{
    char label[96];
    gt_bk_prob *pp = prepare_checked(p, label, sizeof label);
    if (!pp)
        return;
    cJSON *cfg = blas_cfg(threads);
    double us, re = run_cfg(pp, p, cfg, &us), tol = gt_bk_tolerance(p);
    if (getenv("GT_TEST_VERBOSE"))
        fprintf(stderr, "  openblas %s threads=%d: rel_err %.3g (tol %.3g), %.2f us\n", label, threads,
                re, tol, us);
    CHECK_MSG(re <= tol && us > 0, "openblas %s threads=%d: rel_err %.3g > tol %.3g or no time (%.3g us)",
              label, threads, re, tol, us);
    cJSON_Delete(cfg);
    gt_bk_cpu.unprepare(pp);
}

/* Builds cfg_json for p and expects the build to fail naming needle. */
static void expect_blas_fail(const gt_problem *p, const char *cfg_json, const char *needle)
{
    char err[512] = "";
    gt_bk_prob *pp = NULL;
    if (gt_bk_cpu.prepare(g_ctx, p, &pp, err, sizeof err) != 0) {
        CHECK_MSG(0, "prepare: %s", err);
        return;
    }
    cJSON *cfg = cfg_json ? cJSON_Parse(cfg_json) : blas_cfg(1);
    gt_bk_cand *c = NULL;
    int rc = gt_bk_cpu.build(pp, cfg, &c, err, sizeof err);
    CHECK_MSG(rc == -1 && c == NULL && strstr(err, needle) && !strchr(err, '\n'),
              "expected a one-line build error with '%s': rc=%d err='%s'", needle, rc, err);
    if (c)
        gt_bk_cpu.release(c);
    cJSON_Delete(cfg);
    gt_bk_cpu.unprepare(pp);
}

/* A worker without libopenblas (GEMMTUNE_OPENBLAS names a file that does
 * not exist): the baseline fails naming the library; the kernels still
 * build. In a child process, as OpenBLAS is opened once per process: this
 * runs before any other test opens it. */
static void test_openblas_missing(void)
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        setenv("GEMMTUNE_OPENBLAS", "/nonexistent/libopenblas.so.0", 1);
        gt_problem p;
        gt_problem_init(&p, 16, 16, 16);
        gt_problem_finish(&p);
        char err[512] = "";
        gt_bk_prob *pp = NULL;
        gt_bk_cand *c = NULL;
        cJSON *cfg = blas_cfg(1);
        int ok = gt_bk_cpu.prepare(g_ctx, &p, &pp, err, sizeof err) == 0 &&
                 gt_bk_cpu.build(pp, cfg, &c, err, sizeof err) == -1 && c == NULL &&
                 strstr(err, "openblas baseline: cannot load libopenblas") &&
                 strstr(err, "GEMMTUNE_OPENBLAS=/nonexistent/libopenblas.so.0");
        fprintf(stderr, "  without OpenBLAS: %s\n", err);
        cJSON_Delete(cfg);
        gt_bk_cpu.unprepare(pp);
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The baseline: OpenBLAS for every transpose with a batch of 3 (gaps
 * between the matrices), padded leading dimensions, beta != 0 and C apart
 * from D; beta == 0 with broadcast A; a larger single GEMM on 2 threads;
 * bf16 where the library has cblas_sbgemm, else the reason. Refused with a
 * one-line reason: what OpenBLAS has no GEMM for, a bad config. */
static void test_openblas(void)
{
    const char *ops[] = {"NN", "NT", "TN", "TT"};
    gt_problem p;
    for (int oi = 0; oi < 4; oi++) {
        make_problem(&p, GT_DT_F32, GT_DT_F32, ops[oi][0], ops[oi][1]);
        check_blas(&p, oi % 2 ? 2 : 1);
    }
    make_problem(&p, GT_DT_F32, GT_DT_F32, 'T', 'N');
    p.beta = 0;
    p.stride_a = 0;
    gt_problem_finish(&p);
    check_blas(&p, 1);
    gt_problem_init(&p, 200, 130, 300);
    p.trans_b = 'T';
    gt_problem_default_ld(&p);
    gt_problem_finish(&p);
    check_blas(&p, 2);

    /* bf16 A and B into f32 C and D: cblas_sbgemm when the library has it.
     * Debian 12's 0.3.21 does not (built without BUILD_BFLOAT16). */
    make_problem(&p, GT_DT_BF16, GT_DT_F32, 'T', 'N');
    void *lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_NOLOAD);
    int has_sb = lib && dlsym(lib, "cblas_sbgemm");
    if (lib)
        dlclose(lib); /* NOLOAD: drops only this reference */
    if (has_sb)
        check_blas(&p, 2);
    else
        expect_blas_fail(&p, NULL, "has no bf16 GEMM (cblas_sbgemm absent");
    fprintf(stderr, "  bf16 baseline: %s\n", has_sb ? "cblas_sbgemm" : "none (no cblas_sbgemm)");
    /* bf16 output: sbgemm writes f32 (or there is no sbgemm at all). */
    make_problem(&p, GT_DT_BF16, GT_DT_BF16, 'T', 'N');
    expect_blas_fail(&p, NULL, has_sb ? "cblas_sbgemm writes an f32 C" : "cblas_sbgemm absent");
    make_problem(&p, GT_DT_F16, GT_DT_F16, 'N', 'N');
    expect_blas_fail(&p, NULL, "OpenBLAS has no f16 GEMM");
    make_problem(&p, GT_DT_F32, GT_DT_F32, 'N', 'N');
    p.b_type = GT_DT_BF16;
    gt_problem_finish(&p);
    expect_blas_fail(&p, NULL, "mixed input types a=f32 b=bf16");
    make_problem(&p, GT_DT_F32, GT_DT_BF16, 'N', 'N');
    expect_blas_fail(&p, NULL, "mixed types a/b=f32 c=bf16 d=bf16");
    make_problem(&p, GT_DT_F32, GT_DT_F32, 'N', 'N');
    expect_blas_fail(&p, "{\"lib\":\"mkl\",\"threads\":1}", "lib must be \"openblas\"");
    expect_blas_fail(&p, "{\"lib\":\"openblas\",\"mc\":64}", "unknown openblas config attribute 'mc'");
    expect_blas_fail(&p, "{\"lib\":\"openblas\",\"threads\":0}", "threads must be an integer");
}

static void cleanup_cache(void)
{
    char *argv[] = {"rm", "-rf", g_cache, NULL};
    char out[256];
    if (gt_run_argv(argv, out, sizeof out, 30000) != 0)
        fprintf(stderr, "could not remove %s\n", g_cache);
}

int main(void)
{
    if (!mkdtemp(g_cache) || setenv("GEMMTUNE_CACHE_DIR", g_cache, 1) != 0) {
        perror("cache dir");
        return 1;
    }
    RUN(test_open);
    if (g_ctx) {
        RUN(test_openblas_missing); /* first: before this process opens OpenBLAS */
        RUN(test_openblas);
        RUN(test_source_warning_free);
        RUN(test_space_configs_parse);
        RUN(test_types_and_transposes);
        RUN(test_mixed_and_special);
        RUN(test_build_failures);
        RUN(test_cache);
        RUN(test_unsupported);
        RUN(test_detects_wrong_kernel);
        RUN(test_measure);
        long h, m;
        gt_bk_cpu_cache_stats(&h, &m);
        fprintf(stderr, "  compile cache: %ld hits, %ld misses\n", h, m);
        gt_bk_cpu.close(g_ctx);
    }
    cleanup_cache();
    return gt_test_done();
}
