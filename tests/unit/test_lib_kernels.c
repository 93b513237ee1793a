/* test_lib_kernels.c: libgemmtune's generated kernels, linked as a user
 * links the shared library. Proven here:
 *   - a generated winner survives the whole path unchanged: a coordinator
 *     run whose results hold gemv winners, exported (gt_export_run) and
 *     merged (gt_export_merge), keeps each config's text byte for byte;
 *   - the library's lookups return GT_DB_GENERATED for those GEMMs (with
 *     the config) and GT_DB_OK for a cuBLASLt winner; gt_db_cublaslt_algo
 *     says GT_DB_GENERATED rather than trying cuBLASLt;
 *   - gt_db_kernel_get gives the kernel the coordinator would export:
 *     the same source as gen/'s gt_gen_kernel_make, the worker's geometry
 *     (gt_gen_geometry), workspace, launches (two for "twopass", with
 *     nbatch), the times of the export, and the worker's argument bytes;
 *     a cuBLASLt winner is GT_DB_REJECTED, other devices GT_DB_NOT_TUNED;
 *   - CUDA builds: the returned source compiles with NVRTC for sm_90 with
 *     the returned options; gt_db_kernel_cuda_load fails with a reason
 *     without a driver, and where a GPU is present it compiles, loads and
 *     launches both kernels through the library and D matches a host
 *     reference (the inputs are exact in bf16, so only D's rounding
 *     differs). */
#include "gemmtune.h"
#include "gen_export.h"
#include "gen_mma.h"
#include "gt_export.h"
#include "gt_store.h"
#include "gen_test_util.h"
#include "gt_bk_cpu.h"
#include "gt_test.h"

#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef GT_WITH_CUDA
#include <cuda_runtime_api.h>
#include <nvrtc.h>
#endif

#define MODEL "NVIDIA H100 80GB HBM3"

static char g_dir[64];

/* the H100's winner for 4096 x 1 x 4096 (lanes "warp", one row per CTA) */
static const char k_none[] =
    "{\"a_load\":\"na256\",\"family\":\"gemv\",\"k_unroll\":2,\"kwarps\":4,\"lanes\":\"warp\","
    "\"n_tile\":1,\"pipe\":\"reg\",\"reduction\":\"none\",\"rows_per_cta\":1,\"splitk\":1,"
    "\"vec\":8,\"warps\":4}";
static const char k_twopass[] =
    "{\"a_load\":\"nc\",\"family\":\"gemv\",\"k_unroll\":2,\"kwarps\":1,\"n_tile\":16,"
    "\"pipe\":\"reg\",\"reduction\":\"twopass\",\"rows_per_cta\":32,\"splitk\":4,\"vec\":8,"
    "\"warps\":2}";
/* the Hopper "mma" kernel: sm_90a only, two tensor maps after the struct */
static const char k_wg[] =
    "{\"bk\":64,\"bm\":64,\"bn\":128,\"family\":\"mma\",\"inst\":\"wgmma\",\"reduction\":\"none\","
    "\"splitk\":1,\"stages\":4,\"swizzle\":1,\"warps_m\":4,\"warps_n\":1}";
/* persistent 128 x 256: D written with TMA stores through a third map; its
 * GEMM's m and n end inside a tile (the map clips) */
static const char k_ts[] =
    "{\"bk\":64,\"bm\":128,\"bn\":256,\"ctas\":132,\"family\":\"mma\",\"inst\":\"wgmma\","
    "\"reduction\":\"none\",\"splitk\":1,\"stages\":4,\"swizzle\":4,\"warps_m\":8,\"warps_n\":1}";
static const char k_lt[] = "{\"algo_id\":66,\"cluster\":2,\"custom\":0,\"inner_shape\":0,"
                           "\"reduction\":0,\"splitk\":1,\"stages\":35,\"swizzle\":0,\"tile\":20}";

/* The GEMMs of the run: D = A^T B, bf16, f32 accumulation. */
static void desc_of(gt_gemm_desc *d, int64_t m, int64_t n, int64_t k)
{
    gt_gemm_desc_init(d, m, n, k, "bf16");
    d->transa = 'T';
}

/* bf16 TN, tight leading dimensions (gen_test_util.c). */
static gt_problem problem_of(int64_t m, int64_t n, int64_t k)
{
    return gen_test_prob(m, n, k, GT_DT_BF16, GT_DT_BF16);
}

static const char *tpath(const char *name)
{
    static char buf[4][128];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, 128, "%s/%s", g_dir, name);
    return b;
}

/* A coordinator run (real store) of three GEMMs with final results as a
 * CUDA worker reports them, exported and merged; the merged file's path. */
static const char *make_export(void)
{
    char err[512], sql[4096];
    gt_store *s = gt_store_open(tpath("coord.db"), err, sizeof err);
    CHECK_MSG(s, "%s", err);
    if (!s)
        return NULL;
    const char log[] =
        "4096,1,4096,bf16,T,N,1,10\n"
        "6144,1,4096,bf16,T,N,1,10\n"
        "1024,16,2048,bf16,T,N,1,10\n"
        "2048,128,2048,bf16,T,N,1,10\n"
        "1896,2300,256,bf16,T,N,1,10\n";
    static const char *const cuda[][2] = {{"backend", "cuda"}};
    gt_run_created cr = {0};
    int ok = gt_test_add_run(s, log, cuda, 1, &cr) == 0;
    CHECK_MSG(!ok || cr.problems == 5, "%zu problems", cr.problems);
    ok = ok && cr.problems == 5;
    snprintf(sql, sizeof sql,
             "INSERT INTO results (run_id, problem_id, job_id, backend, phase, config, config_hash,"
             " is_baseline, time_us, rel_err, valid, device_model, created_ms)"
             " SELECT p.run_id, p.id, (SELECT MIN(id) FROM jobs WHERE problem_id = p.id), 'cuda',"
             " 'final', v.cfg, v.h, v.bl, v.t, 0.001, 1, '" MODEL "', 1 FROM problems p JOIN ("
             "  SELECT 4096 AS m, '%s' AS cfg, '00000000000000a1' AS h, 0 AS bl, 12.0 AS t"
             "  UNION ALL SELECT 4096, '%s', '00000000000000b1', 1, 15.0"
             "  UNION ALL SELECT 6144, '%s', '00000000000000b2', 0, 20.0"
             "  UNION ALL SELECT 1024, '%s', '00000000000000c3', 0, 8.0"
             "  UNION ALL SELECT 1024, '%s', '00000000000000b3', 1, 10.0"
             "  UNION ALL SELECT 2048, '%s', '00000000000000d4', 0, 9.0"
             "  UNION ALL SELECT 2048, '%s', '00000000000000b4', 1, 10.0"
             "  UNION ALL SELECT 1896, '%s', '00000000000000e5', 0, 9.0"
             "  UNION ALL SELECT 1896, '%s', '00000000000000b5', 1, 10.0) v ON v.m = p.m",
             k_none, k_lt, k_lt, k_twopass, k_lt, k_wg, k_lt, k_ts, k_lt);
    gt_store_lock(s);
    ok = ok && gt_test_sql(gt_store_db(s), sql) == 0 &&
         gt_export_run(gt_store_db(s), cr.id, "test/run/1", tpath("a.db"), err, sizeof err) == 0;
    gt_store_unlock(s);
    CHECK_MSG(ok, "%s", err);
    gt_store_close(s);
    const char *in[] = {tpath("a.db")};
    CHECK_MSG(ok && gt_export_merge(in, 1, tpath("m.db"), err, sizeof err) == 0, "%s", err);
    /* the configs, byte for byte, in both files */
    for (int f = 0; f < 2; f++) {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        int n = 0, same = 0;
        if (sqlite3_open_v2(tpath(f ? "m.db" : "a.db"), &db, SQLITE_OPEN_READONLY, NULL) ==
                SQLITE_OK &&
            sqlite3_prepare_v2(db, "SELECT b.config, p.m FROM best b JOIN problems p ON p.id ="
                                   " b.problem_id ORDER BY p.m", -1, &st, NULL) == SQLITE_OK)
            while (sqlite3_step(st) == SQLITE_ROW) {
                const char *c = (const char *)sqlite3_column_text(st, 0);
                int m = sqlite3_column_int(st, 1);
                const char *want = m == 4096   ? k_none
                                   : m == 1024 ? k_twopass
                                   : m == 2048 ? k_wg
                                   : m == 1896 ? k_ts
                                               : k_lt;
                n++;
                same += c && !strcmp(c, want);
            }
        sqlite3_finalize(st);
        sqlite3_close(db);
        CHECK_MSG(n == 5 && same == 5, "%s: %d best rows, %d configs unchanged", f ? "merge" : "export",
                  n, same);
    }
    return tpath("m.db");
}

static void check_args(const gt_db_kernel *k, const gt_problem *p, const char *cfg)
{
    gt_gen_cfg c;
    gt_gen_geom g;
    char err[256], A, B, D;
    unsigned char ws[8], got[256];
    cJSON *j = cJSON_Parse(cfg);
    CHECK(gt_gen_cfg_from_json(j, &c, err, sizeof err) == 0);
    cJSON_Delete(j);
    gt_gen_geometry(p, &c, 32, &g);
    /* what gen_run.c launches: its grid, block and argument struct */
    CHECK(k->launch[0].grid[0] == g.gx && k->launch[0].grid[1] == g.gy &&
          k->launch[0].grid[2] == g.gz && k->launch[0].block[0] == g.threads);
    CHECK(k->launch[0].shared_bytes == 0 && !strcmp(k->launch[0].kernel, "gt_gemv"));
    gt_gen_args want = {.a = &A, .b = &B, .c = NULL, .bias = NULL, .d = &D,
                        .ws = c.splitk > 1 ? (float *)(void *)ws : NULL, .cnt = NULL,
                        .m = p->m, .n = p->n, .k = p->k, .lda = p->lda, .ldb = p->ldb,
                        .ldc = p->ldc, .ldd = p->ldd, .kper = g.kper, .alpha = 1.0, .beta = 0.0};
    /* a bf16 kernel's struct ends at beta (an fp8 one adds scale_a, scale_b) */
    size_t want_bytes = offsetof(gt_gen_args, scale_a);
    CHECK(k->args_bytes == want_bytes && k->scales == 0);
    CHECK(gt_db_kernel_args(k, &A, &B, NULL, NULL, &D, k->workspace_bytes ? ws : NULL, got,
                            sizeof got) == 0 &&
          memcmp(got, &want, want_bytes) == 0);
    CHECK(gt_db_kernel_args(k, &A, &B, NULL, NULL, &D, NULL, got, 8) == -1);
    CHECK(k->workspace_bytes == g.ws_bytes && !k->workspace_zero);
}

/* Plans without a GPU: an untuned GEMM is GT_DB_NOT_TUNED and makes
 * nothing; a cuBLASLt winner without a driver is an error that says so (in
 * builds without CUDA, every plan is); free(NULL) is safe. */
static void test_plan_host(gt_db *db, const gt_gemm_desc *gen, const gt_gemm_desc *lt)
{
    char err[512];
    gt_db_plan *p = (gt_db_plan *)(uintptr_t)1;
    size_t ws = 1;
    int z = 1;
    gt_db_plan_free(NULL);
    gt_db_plan_workspace(NULL, &ws, &z);
    CHECK(ws == 0 && z == 0);
    CHECK(gt_db_plan_create(NULL, lt, MODEL, &p, err, sizeof err) == GT_DB_EINVAL && p == NULL);
#ifdef GT_WITH_CUDA
    gt_gemm_desc un;
    desc_of(&un, 512, 3, 512);
    p = (gt_db_plan *)(uintptr_t)1;
    CHECK(gt_db_plan_create(db, &un, MODEL, &p, err, sizeof err) == GT_DB_NOT_TUNED && p == NULL);
    CHECK(gt_db_plan_create(db, gen, "OtherGPU", &p, err, sizeof err) == GT_DB_NOT_TUNED && !p);
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    int rc = gt_db_plan_create(db, lt, MODEL, &p, err, sizeof err);
    if (!drv) {
        CHECK_MSG(rc == GT_DB_EINVAL && p == NULL && strstr(err, "no CUDA driver"), "%d: %s", rc,
                  err);
        rc = gt_db_plan_create(db, gen, MODEL, &p, err, sizeof err);
        CHECK_MSG(rc == GT_DB_EINVAL && p == NULL && strstr(err, "no CUDA driver"), "%d: %s", rc,
                  err);
    } else {
        /* a driver: no current context here, or this device's cuBLASLt's answer */
        CHECK_MSG(rc == GT_DB_OK ? p != NULL : (p == NULL && err[0]), "%d: %s", rc, err);
        gt_db_plan_free(p);
        dlclose(drv);
    }
#else
    (void)gen;
    CHECK(gt_db_plan_create(db, lt, MODEL, &p, err, sizeof err) == GT_DB_EINVAL && p == NULL &&
          strstr(err, "built without CUDA"));
    CHECK(gt_db_plan_run(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, err,
                         sizeof err) == GT_DB_EINVAL);
#endif
}

static void test_lookups(void)
{
    char err[512];
    const char *path = make_export();
    gt_db *db = path ? gt_db_open(path, err, sizeof err) : NULL;
    CHECK_MSG(db, "%s", err);
    if (!db)
        return;
    CHECK(gt_db_size(db) == 5);
    gt_gemm_desc d1, d2, d3;
    desc_of(&d1, 4096, 1, 4096);
    desc_of(&d2, 6144, 1, 4096);
    desc_of(&d3, 1024, 16, 2048);
    gt_db_result r;
    CHECK(gt_db_lookup(db, &d1, "cuda", MODEL, &r) == GT_DB_GENERATED && !strcmp(r.config, k_none));
    CHECK(r.time_us == 12.0 && r.baseline_us == 15.0 && fabs(r.uplift - 1.25) < 1e-12);
    CHECK(gt_db_lookup(db, &d2, "cuda", MODEL, &r) == GT_DB_OK && !strcmp(r.config, k_lt));
    CHECK(gt_db_lookup(db, &d3, "cuda", MODEL, &r) == GT_DB_GENERATED);
    CHECK(gt_db_lookup(db, &d1, "cuda", "OtherGPU", &r) == GT_DB_NOT_TUNED);
    CHECK(!strcmp(gt_db_strerror(GT_DB_GENERATED), "tuned: a generated kernel"));

    /* the kernel of the 4096 x 1 x 4096 winner */
    gt_db_kernel *k = NULL;
    CHECK(gt_db_kernel_get(db, &d1, MODEL, &k) == GT_DB_OK && k);
    if (k) {
        gt_gen_kernel g;
        gt_problem p = problem_of(4096, 1, 4096);
        cJSON *cj = cJSON_Parse(k_none);
        CHECK(gt_gen_kernel_make(&p, cj, 0, &g, err, sizeof err) == GT_GEN_EXPORT_OK);
        cJSON_Delete(cj);
        CHECK(g.source && !strcmp(k->source, g.source) && !strcmp(k->config, k_none));
        CHECK(!strcmp(k->family, "gemv") && !strcmp(k->program_name, "gt_gen.cu"));
        CHECK(k->noptions == 0 && k->min_sm == 80 && k->nlaunch == 1 && !k->launch[0].extra_param);
        /* chained on sm_90+; a pipe other than dbuf reads nothing before its wait */
        CHECK(k->chain_min_sm == 90 && k->chain_reads_a == (strstr(k_none, "dbuf") != NULL));
        CHECK(!strcmp(k->device_model, MODEL) && k->time_us == 12.0 && k->baseline_us == 15.0);
        char key[512];
        CHECK(gt_db_key(&d1, key, sizeof key, err, sizeof err) > 0 && !strcmp(k->key, key));
        check_args(k, &p, k_none);
        gt_gen_kernel_free(&g);
        gt_db_kernel *k2 = NULL;
        CHECK(gt_db_kernel_get_key(db, key, MODEL, &k2) == GT_DB_OK && k2 &&
              !strcmp(k2->source, k->source));
        gt_db_kernel_free(k2);
    }
    gt_db_kernel_free(k);
    /* two-pass split-K: two launches, nbatch, a workspace without zeroing */
    k = NULL;
    CHECK(gt_db_kernel_get(db, &d3, MODEL, &k) == GT_DB_OK && k);
    if (k) {
        gt_problem p = problem_of(1024, 16, 2048);
        CHECK(k->nlaunch == 2 && !strcmp(k->launch[1].kernel, "gt_gemv_fin"));
        CHECK(k->launch[1].block[0] == 256 && !strcmp(k->launch[1].extra_param, "nbatch") &&
              k->launch[1].extra_value == 1);
        CHECK(k->workspace_bytes == (size_t)1024 * 16 * 4 * 4);
        check_args(k, &p, k_twopass);
    }
    gt_db_kernel_free(k);
    /* the wgmma kernel: arch-specific, two tensor maps; bn 128, so one
     * warpgroup and the producer warp (128 + 32 threads) */
    /* the persistent 128 x 256 kernel: three tensor maps (A, B, D: TMA stores), its shared
     * memory the ring, the alignment and two 8 KB stagings */
    k = NULL;
    gt_gemm_desc d5;
    desc_of(&d5, 1896, 2300, 256);
    CHECK(gt_db_kernel_get(db, &d5, MODEL, &k) == GT_DB_OK && k);
    if (k)
        CHECK_MSG(!strcmp(k->family, "mma") && k->tensor_maps == 3 && k->nlaunch == 1 &&
                      k->launch[0].grid[0] == 132 && k->launch[0].block[0] == 256 &&
                      k->launch[0].shared_bytes == 4 * 384 * 128 + 1024 + 2 * 8192,
                  "maps %d grid %u block %u smem %zu", k->tensor_maps, k->launch[0].grid[0],
                  k->launch[0].block[0], (size_t)k->launch[0].shared_bytes);
    gt_db_kernel_free(k);
    k = NULL;
    gt_gemm_desc d4;
    desc_of(&d4, 2048, 128, 2048);
    CHECK(gt_db_kernel_get(db, &d4, MODEL, &k) == GT_DB_OK && k);
    if (k) {
        gt_problem p = problem_of(2048, 128, 2048);
        CHECK(!strcmp(k->family, "mma") && k->min_sm == 90 && k->arch_specific == 1 && k->tensor_maps == 2 &&
              k->chain_min_sm == 0 &&
              k->nlaunch == 1 && k->launch[0].block[0] == 128 + 32 && k->launch[0].shared_bytes == 4 * 192 * 128 + 1024);
        gt_mma_cfg c;
        gt_gen_geom g;
        char A, B, D;
        unsigned char got[256];
        cJSON *j = cJSON_Parse(k_wg);
        CHECK(gt_mma_cfg_from_json(j, &c, err, sizeof err) == 0);
        cJSON_Delete(j);
        gt_mma_geometry(&p, &c, &g);
        gt_gen_args want = {.a = &A, .b = &B, .d = &D, .m = p.m, .n = p.n, .k = p.k, .lda = p.lda, .ldb = p.ldb,
                            .ldc = p.ldc, .ldd = p.ldd, .kper = g.kper, .alpha = 1.0, .beta = 0.0};
        CHECK(k->launch[0].grid[0] == g.gx && k->launch[0].grid[2] == g.gz && !strcmp(k->launch[0].kernel, "gt_mma"));
        CHECK(gt_db_kernel_args(k, &A, &B, NULL, NULL, &D, NULL, got, sizeof got) == 0 &&
              memcmp(got, &want, sizeof want) == 0 && k->workspace_bytes == 0);
    }
    gt_db_kernel_free(k);
    /* not a generated kernel, not tuned, bad arguments */
    k = (gt_db_kernel *)(uintptr_t)1;
    CHECK(gt_db_kernel_get(db, &d2, MODEL, &k) == GT_DB_REJECTED && k == NULL);
    CHECK(gt_db_kernel_get(db, &d1, "OtherGPU", &k) == GT_DB_NOT_TUNED && k == NULL);
    CHECK(gt_db_kernel_get(NULL, &d1, MODEL, &k) == GT_DB_EINVAL);
    CHECK(gt_db_kernel_get(db, &d1, MODEL, NULL) == GT_DB_EINVAL);
    gt_db_kernel_free(NULL);
    test_plan_host(db, &d1, &d2);
#ifdef GT_WITH_CUDA
    /* cuBLASLt is never asked to run a generated winner (the handle is not
     * touched before the lookup decides) */
    cublasLtMatmulAlgo_t algo;
    size_t wsz = 0;
    CHECK(gt_db_cublaslt_algo(db, (cublasLtHandle_t)(uintptr_t)1, &d1, MODEL, &algo, &wsz) ==
          GT_DB_GENERATED);
#endif
    gt_db_close(db);
}

#ifdef GT_WITH_CUDA
/* Runs k (from the library) on random exact inputs and compares D with a
 * host reference. Returns the number of elements off by more than bf16's
 * rounding. */
static long run_on_gpu(const gt_db_kernel *k, int64_t m, int64_t n, int64_t kk)
{
    char err[512];
    gt_db_module mod;
    long bad = -1;
    size_t na = (size_t)(m * kk), nb = (size_t)(kk * n), nd = (size_t)(m * n);
    uint16_t *ha = malloc(na * 2), *hb = malloc(nb * 2), *hd = malloc(nd * 2);
    void *da = NULL, *db = NULL, *dd = NULL, *ws = NULL;
    if (!ha || !hb || !hd)
        goto out;
    uint64_t x = 12345;
    for (size_t i = 0; i < na; i++)
        ha[i] = gt_cpu_f32_to_bf16((float)((int)((x = x * 6364136223846793005ULL + 1) >> 60) - 8) / 16.0f);
    for (size_t i = 0; i < nb; i++)
        hb[i] = gt_cpu_f32_to_bf16((float)((int)((x = x * 6364136223846793005ULL + 1) >> 60) - 8) / 16.0f);
    int ok = gt_db_kernel_cuda_load(k, &mod, err, sizeof err) == 0;
    CHECK_MSG(ok, "load: %s", err);
    if (!ok)
        goto out;
    CHECK(mod.nfunction == k->nlaunch && mod.module && !strcmp(mod.target, k->arch_specific ? "sm_90a" : "sm_90"));
    ok = cudaMalloc(&da, na * 2) == cudaSuccess && cudaMalloc(&db, nb * 2) == cudaSuccess &&
         cudaMalloc(&dd, nd * 2) == cudaSuccess &&
         (!k->workspace_bytes || cudaMalloc(&ws, k->workspace_bytes) == cudaSuccess) &&
         (!k->workspace_zero || cudaMemset(ws, 0, k->workspace_bytes) == cudaSuccess) &&
         cudaMemcpy(da, ha, na * 2, cudaMemcpyHostToDevice) == cudaSuccess &&
         cudaMemcpy(db, hb, nb * 2, cudaMemcpyHostToDevice) == cudaSuccess &&
         cudaMemset(dd, 0xff, nd * 2) == cudaSuccess; /* NaN: an unwritten element shows */
    CHECK(ok);
    /* twice: a kernel that leaves its workspace dirty fails the second call */
    for (int rep = 0; ok && rep < 2; rep++) {
        ok = gt_db_kernel_cuda_launch(k, &mod, NULL, da, db, NULL, NULL, dd, ws, err, sizeof err) == 0;
        CHECK_MSG(ok, "launch: %s", err);
    }
    ok = ok && cudaDeviceSynchronize() == cudaSuccess &&
         cudaMemcpy(hd, dd, nd * 2, cudaMemcpyDeviceToHost) == cudaSuccess;
    CHECK(ok);
    if (ok) {
        bad = 0;
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                double ref = 0; /* A stored k x m (lda = k), B k x n (ldb = k) */
                for (int64_t q = 0; q < kk; q++)
                    ref += (double)gt_cpu_bf16_to_f32(ha[i * kk + q]) * gt_cpu_bf16_to_f32(hb[j * kk + q]);
                double got = gt_cpu_bf16_to_f32(hd[j * m + i]);
                bad += !(fabs(got - ref) <= fabs(ref) / 128 + 1e-6);
            }
    }
    /* chained (a square gemv): D2 = A D1 launched chained right after the
     * launch that writes D1 (poisoned before): a kernel that read its B
     * before waiting for the one before it would see NaN */
    if (ok && m == kk && n == 1 && k->chain_min_sm) {
        void *dd2 = NULL;
        uint16_t *hd2 = malloc(nd * 2);
        ok = hd2 && cudaMalloc(&dd2, nd * 2) == cudaSuccess && cudaMemset(dd, 0xff, nd * 2) == cudaSuccess &&
             cudaMemset(dd2, 0xff, nd * 2) == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess;
        CHECK(ok);
        ok = ok && gt_db_kernel_cuda_launch(k, &mod, NULL, da, db, NULL, NULL, dd, ws, err, sizeof err) == 0 &&
             gt_db_kernel_cuda_launch_ex(k, &mod, NULL, da, dd, NULL, NULL, dd2, ws, GT_DB_LAUNCH_CHAINED, err,
                                         sizeof err) == 0;
        CHECK_MSG(ok, "chained launch: %s", err);
        ok = ok && cudaDeviceSynchronize() == cudaSuccess &&
             cudaMemcpy(hd, dd, nd * 2, cudaMemcpyDeviceToHost) == cudaSuccess &&
             cudaMemcpy(hd2, dd2, nd * 2, cudaMemcpyDeviceToHost) == cudaSuccess;
        CHECK(ok);
        long bad2 = 0;
        for (int64_t i = 0; ok && i < m; i++) {
            double ref = 0;
            for (int64_t q = 0; q < kk; q++)
                ref += (double)gt_cpu_bf16_to_f32(ha[i * kk + q]) * gt_cpu_bf16_to_f32(hd[q]);
            double got = gt_cpu_bf16_to_f32(hd2[i]);
            bad2 += !(fabs(got - ref) <= fabs(ref) / 128 + 1e-3);
        }
        CHECK_MSG(bad2 == 0, "chained: %ld of %lld elements wrong", bad2, (long long)m);
        fprintf(stderr, "     chained launch after the kernel writing its B: %s\n", bad2 ? "WRONG" : "ok");
        if (bad2)
            bad += bad2;
        cudaFree(dd2);
        free(hd2);
    }
    gt_db_kernel_cuda_unload(&mod);
out:
    cudaFree(da);
    cudaFree(db);
    cudaFree(dd);
    cudaFree(ws);
    free(ha);
    free(hb);
    free(hd);
    return bad;
}

/* The config cuBLASLt's heuristic picks for D = A^T B (bf16, m x n x k) on
 * the current device, as the canonical JSON of a tuned cuda config (keys
 * sorted, worker/cuda/CONFIG.md): a config this device certainly accepts. */
static int heuristic_cfg(int64_t m, int64_t n, int64_t k, char *cfg, size_t len)
{
    cublasLtHandle_t h = NULL;
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    int nres = 0, rc = -1;
    int32_t ta = CUBLAS_OP_T;
    uint64_t wsmax = 32u << 20;
    if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, (uint64_t)k, (uint64_t)m, k) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, (uint64_t)k, (uint64_t)n, k) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, (uint64_t)m, (uint64_t)n, m) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsmax,
                                             sizeof wsmax) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, lc, lc, pref, 1, &res, &nres) !=
            CUBLAS_STATUS_SUCCESS ||
        nres < 1)
        goto out;
    int32_t id = 0, splitk = 1;
    uint32_t tile = 0, stages = 0, red = 0, swz = 0, custom = 0;
    uint16_t cluster = 0, inner = 0;
    size_t got;
    const cublasLtMatmulAlgo_t *al = &res.algo;
    if (cublasLtMatmulAlgoConfigGetAttribute(al, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &got) ||
        cublasLtMatmulAlgoConfigGetAttribute(al, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &got) ||
        cublasLtMatmulAlgoConfigGetAttribute(al, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &got) ||
        cublasLtMatmulAlgoConfigGetAttribute(al, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &got) ||
        cublasLtMatmulAlgoConfigGetAttribute(al, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &got) ||
        cublasLtMatmulAlgoConfigGetAttribute(al, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz, &got) ||
        cublasLtMatmulAlgoConfigGetAttribute(al, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof custom, &got) ||
        cublasLtMatmulAlgoConfigGetAttribute(al, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster,
                                             &got) ||
        cublasLtMatmulAlgoConfigGetAttribute(al, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &inner, sizeof inner, &got))
        goto out;
    snprintf(cfg, len,
             "{\"algo_id\":%d,\"cluster\":%u,\"custom\":%u,\"inner_shape\":%u,\"reduction\":%u,"
             "\"splitk\":%d,\"stages\":%u,\"swizzle\":%u,\"tile\":%u}",
             (int)id, (unsigned)cluster, (unsigned)custom, (unsigned)inner, (unsigned)red, (int)splitk,
             (unsigned)stages, (unsigned)swz, (unsigned)tile);
    rc = 0;
out:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (la)
        cublasLtMatrixLayoutDestroy(la);
    if (lb)
        cublasLtMatrixLayoutDestroy(lb);
    if (lc)
        cublasLtMatrixLayoutDestroy(lc);
    if (op)
        cublasLtMatmulDescDestroy(op);
    if (h)
        cublasLtDestroy(h);
    return rc;
}

/* An export whose one GEMM (m x n x k bf16 TN) has the winner cfg on model,
 * made as make_export makes its file (tag names its files); the path. */
static const char *make_lt_export(const char *tag, const char *model, const char *cfg, int64_t m, int64_t n,
                                  int64_t k)
{
    char err[512], sql[4096], log[128], name[64], out[64];
    snprintf(name, sizeof name, "%s.db", tag);
    snprintf(out, sizeof out, "%s-export.db", tag);
    gt_store *s = gt_store_open(tpath(name), err, sizeof err);
    CHECK_MSG(s, "%s", err);
    if (!s)
        return NULL;
    int ll = snprintf(log, sizeof log, "%lld,%lld,%lld,bf16,T,N,1,10\n", (long long)m, (long long)n,
                      (long long)k);
    static const char *const cuda[][2] = {{"backend", "cuda"}};
    gt_run_created cr = {0};
    int ok = ll > 0 && (size_t)ll < sizeof log && gt_test_add_run(s, log, cuda, 1, &cr) == 0;
    CHECK_MSG(!ok || cr.problems == 1, "%zu problems", cr.problems);
    ok = ok && cr.problems == 1;
    snprintf(sql, sizeof sql,
             "INSERT INTO results (run_id, problem_id, job_id, backend, phase, config, config_hash,"
             " is_baseline, time_us, rel_err, valid, device_model, created_ms)"
             " SELECT p.run_id, p.id, (SELECT MIN(id) FROM jobs WHERE problem_id = p.id), 'cuda',"
             " 'final', '%s', v.h, v.bl, v.t, 0.001, 1, '%s', 1 FROM problems p, ("
             "  SELECT '00000000000000e1' AS h, 0 AS bl, 9.0 AS t"
             "  UNION ALL SELECT '00000000000000e2', 1, 10.0) v",
             cfg, model);
    gt_store_lock(s);
    ok = ok && gt_test_sql(gt_store_db(s), sql) == 0 &&
         gt_export_run(gt_store_db(s), cr.id, "test/run/lt", tpath(out), err, sizeof err) == 0;
    gt_store_unlock(s);
    CHECK_MSG(ok, "%s", err);
    gt_store_close(s);
    return ok ? tpath(out) : NULL;
}

/* A winner (cfg, NULL: cuBLASLt's heuristic pick) through the plan API on this device:
 * created, run twice on the default stream with its workspace, D compared with a host
 * reference (exact bf16 inputs). */
/* The driver calls the foreign-context check needs and libgemmtune does not
 * (a second context, a stream of its own), from libcuda.so.1 as the library
 * takes its own. */
typedef int (*drv_ctx_create)(void **, unsigned, int);
typedef int (*drv_ctx_ptr)(void *);
typedef int (*drv_ctx_get)(void **);
typedef int (*drv_stream_create)(void **, unsigned);
static struct {
    drv_ctx_create ctx_create;
    drv_ctx_ptr ctx_destroy, ctx_set, stream_destroy;
    drv_ctx_get ctx_get;
    drv_stream_create stream_create;
} g_drv;

static int drv_load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
    g_drv.ctx_create = (drv_ctx_create)dlsym(h, "cuCtxCreate_v2");
    g_drv.ctx_destroy = (drv_ctx_ptr)dlsym(h, "cuCtxDestroy_v2");
    g_drv.ctx_set = (drv_ctx_ptr)dlsym(h, "cuCtxSetCurrent");
    g_drv.ctx_get = (drv_ctx_get)dlsym(h, "cuCtxGetCurrent");
    g_drv.stream_create = (drv_stream_create)dlsym(h, "cuStreamCreate");
    g_drv.stream_destroy = (drv_ctx_ptr)dlsym(h, "cuStreamDestroy_v2");
    return g_drv.ctx_create && g_drv.ctx_destroy && g_drv.ctx_set && g_drv.ctx_get && g_drv.stream_create &&
                   g_drv.stream_destroy
               ? 0
               : -1;
}

/* A plan made in the primary context, run while another context of the same
 * GPU is current (what a call on cuda:1 meets while PyTorch has cuda:0
 * current): it runs in its own context, writes D (poisoned first; the caller
 * checks it against the host reference), and leaves the caller's context
 * current; a stream of that other context is refused with the reason rather
 * than queued there. 0 when D was written by the run here; 1 when the GPU
 * allows no second context (D untouched); -1 on a failure. */
static int plan_foreign_ctx(gt_db_plan *plan, void *da, void *dbuf, void *dd, size_t nd, void *ws)
{
    char err[512];
    void *primary = NULL, *other = NULL, *cur = NULL, *s2 = NULL;
    int ok = drv_load() == 0 && g_drv.ctx_get(&primary) == 0 && primary;
    CHECK_MSG(ok, "the driver's context calls (libcuda.so.1)");
    if (!ok)
        return -1;
    if (g_drv.ctx_create(&other, 0, 0) != 0 || !other) {
        /* a GPU in exclusive-process compute mode holds one context per process */
        fprintf(stderr, "     SKIP GPU: no second context on device 0 (exclusive compute mode?): "
                        "the plan's own context not checked\n");
        CHECK(g_drv.ctx_set(primary) == 0);
        return 1;
    }
    /* D poisoned in the primary context, where it was allocated, so that the run below is
     * what writes it */
    ok = g_drv.ctx_set(primary) == 0 && cudaMemset(dd, 0xff, nd * 2) == cudaSuccess &&
         cudaDeviceSynchronize() == cudaSuccess && g_drv.ctx_set(other) == 0;
    CHECK_MSG(ok, "poisoning D");
    if (!ok) {
        g_drv.ctx_destroy(other);
        g_drv.ctx_set(primary);
        return -1;
    }
    int rc = gt_db_plan_run(plan, NULL, da, dbuf, NULL, NULL, dd, NULL, NULL, NULL, ws, 0, err, sizeof err);
    CHECK_MSG(rc == GT_DB_OK, "run while another context is current: %s", err);
    CHECK(g_drv.ctx_get(&cur) == 0 && cur == other);
    int written = rc == GT_DB_OK;
    if (g_drv.stream_create(&s2, 0) == 0) {
        rc = gt_db_plan_run(plan, s2, da, dbuf, NULL, NULL, dd, NULL, NULL, NULL, ws, 0, err, sizeof err);
        CHECK_MSG(rc == GT_DB_EINVAL && strstr(err, "another CUDA context"),
                  "a stream of another context: rc %d, %s", rc, err);
        CHECK(g_drv.ctx_get(&cur) == 0 && cur == other);
        g_drv.stream_destroy(s2);
    } else {
        CHECK_MSG(0, "cuStreamCreate in the second context");
    }
    CHECK(g_drv.ctx_destroy(other) == 0);
    CHECK(g_drv.ctx_set(primary) == 0);
    fprintf(stderr, "     GPU: the plan ran in its own context while another was current, and refused "
                    "that context's stream\n");
    return written ? 0 : -1;
}

static void plan_gpu_one(const char *tag, const char *winner, int64_t m, int64_t n, int64_t kk)
{
    char err[512], cfg[512];
    struct cudaDeviceProp prop;
    gt_db *db = NULL;
    gt_db_plan *plan = NULL;
    size_t na = (size_t)(m * kk), nb = (size_t)(kk * n), nd = (size_t)(m * n), wsb = 0;
    uint16_t *ha = malloc(na * 2), *hb = malloc(nb * 2), *hd = malloc(nd * 2);
    void *da = NULL, *dbuf = NULL, *dd = NULL, *ws = NULL;
    int zero = 0;
    if (winner)
        snprintf(cfg, sizeof cfg, "%s", winner);
    int ok = ha && hb && hd && cudaGetDeviceProperties(&prop, 0) == cudaSuccess &&
             (winner || heuristic_cfg(m, n, kk, cfg, sizeof cfg) == 0);
    CHECK_MSG(ok, "device properties or cuBLASLt heuristic");
    const char *path = ok ? make_lt_export(tag, prop.name, cfg, m, n, kk) : NULL;
    if (!path)
        goto out;
    CHECK_MSG(db = gt_db_open(path, err, sizeof err), "%s", err);
    if (!db)
        goto out;
    gt_gemm_desc d;
    desc_of(&d, m, n, kk);
    gt_db_result r;
    CHECK(gt_db_lookup(db, &d, "cuda", prop.name, &r) == (winner ? GT_DB_GENERATED : GT_DB_OK) &&
          !strcmp(r.config, cfg));
    int rc = gt_db_plan_create(db, &d, prop.name, &plan, err, sizeof err);
    CHECK_MSG(rc == GT_DB_OK && plan, "plan of %s: %d %s", cfg, rc, err);
    if (!plan)
        goto out;
    gt_db_plan_workspace(plan, &wsb, &zero);
    CHECK(zero == 0);
    uint64_t x = 777;
    for (size_t i = 0; i < na; i++)
        ha[i] = gt_cpu_f32_to_bf16((float)((int)((x = x * 6364136223846793005ULL + 1) >> 60) - 8) / 16.0f);
    for (size_t i = 0; i < nb; i++)
        hb[i] = gt_cpu_f32_to_bf16((float)((int)((x = x * 6364136223846793005ULL + 1) >> 60) - 8) / 16.0f);
    ok = cudaMalloc(&da, na * 2) == cudaSuccess && cudaMalloc(&dbuf, nb * 2) == cudaSuccess &&
         cudaMalloc(&dd, nd * 2) == cudaSuccess && (!wsb || cudaMalloc(&ws, wsb) == cudaSuccess) &&
         cudaMemcpy(da, ha, na * 2, cudaMemcpyHostToDevice) == cudaSuccess &&
         cudaMemcpy(dbuf, hb, nb * 2, cudaMemcpyHostToDevice) == cudaSuccess &&
         cudaMemset(dd, 0xff, nd * 2) == cudaSuccess; /* NaN: an unwritten element shows */
    CHECK(ok);
    for (int rep = 0; ok && rep < 2; rep++) {
        rc = gt_db_plan_run(plan, NULL, da, dbuf, NULL, NULL, dd, NULL, NULL, NULL, ws, 0, err, sizeof err);
        CHECK_MSG(rc == GT_DB_OK, "run: %s", err);
        ok = rc == GT_DB_OK;
    }
    /* a missing workspace is refused, not run */
    if (ok && wsb)
        CHECK(gt_db_plan_run(plan, NULL, da, dbuf, NULL, NULL, dd, NULL, NULL, NULL, NULL, 0, err,
                             sizeof err) == GT_DB_EINVAL && err[0]);
    /* the last run, the D checked below: while another context is current */
    ok = ok && plan_foreign_ctx(plan, da, dbuf, dd, nd, ws) >= 0;
    ok = ok && cudaDeviceSynchronize() == cudaSuccess &&
         cudaMemcpy(hd, dd, nd * 2, cudaMemcpyDeviceToHost) == cudaSuccess;
    CHECK(ok);
    if (ok) {
        long bad = 0;
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                double ref = 0;
                for (int64_t q = 0; q < kk; q++)
                    ref += (double)gt_cpu_bf16_to_f32(ha[i * kk + q]) * gt_cpu_bf16_to_f32(hb[j * kk + q]);
                double got = gt_cpu_bf16_to_f32(hd[j * m + i]);
                bad += !(fabs(got - ref) <= fabs(ref) / 128 + 1e-6);
            }
        CHECK_MSG(bad == 0, "%s: %ld elements of D wrong", cfg, bad);
        fprintf(stderr, "     GPU: plan of %s winner %s (%zu B workspace): D matches the host reference\n",
                winner ? "cutlass" : "cuBLASLt", cfg, wsb);
    }
out:
    gt_db_plan_free(plan);
    gt_db_close(db);
    cudaFree(da);
    cudaFree(dbuf);
    cudaFree(dd);
    cudaFree(ws);
    free(ha);
    free(hb);
    free(hd);
}

static void test_plan_gpu(void)
{
    plan_gpu_one("lt", NULL, 256, 64, 512);
    /* a libgemmtune_cutlass winner (sm_90 only, with the library this build made): the
     * plan maps it with the worker's code (cuda/cutlass_cfg.c) and runs it on the stream;
     * a stream-K kernel with split-K, so its workspace is used too */
    char lib[4096];
    const char *b = getenv("GT_BUILD_DIR");
    struct cudaDeviceProp prop;
    snprintf(lib, sizeof lib, "%s/libgemmtune_cutlass.so", b ? b : ".");
    if (access(lib, R_OK) != 0 || cudaGetDeviceProperties(&prop, 0) != cudaSuccess ||
        prop.major * 10 + prop.minor != 90) {
        fprintf(stderr, "     GPU: no cutlass plan here (no libgemmtune_cutlass or not sm_90)\n");
        return;
    }
    setenv("GT_CUTLASS_LIB", lib, 1);
    plan_gpu_one("cl", "{\"family\":\"cutlass\",\"kernel\":\"pp_128x128_c1x1\",\"raster\":1,\"splits\":1,"
                       "\"swizzle\":2}", 384, 192, 512);
    plan_gpu_one("clsk", "{\"family\":\"cutlass\",\"kernel\":\"sk_coop_128x128_c1x1\",\"raster\":0,"
                         "\"splits\":2,\"swizzle\":1}", 256, 128, 1024);
}

static void test_cuda(void)
{
    char err[512];
    /* --gpu runs no test_lookups: the export is made here then */
    const char *path = gt_test_cpu() ? tpath("m.db") : make_export();
    gt_db *db = path ? gt_db_open(path, err, sizeof err) : NULL;
    CHECK_MSG(db, "%s", err);
    if (!db)
        return;
    const int64_t shapes[4][3] = {
        {4096, 1, 4096}, {1024, 16, 2048}, {2048, 128, 2048}, {1896, 2300, 256}};
    for (int s = 0; s < 4; s++) {
        gt_gemm_desc d;
        gt_db_kernel *k = NULL;
        desc_of(&d, shapes[s][0], shapes[s][1], shapes[s][2]);
        CHECK(gt_db_kernel_get(db, &d, MODEL, &k) == GT_DB_OK && k);
        if (!k)
            continue;
        if (gt_test_cpu()) {
            /* the source as returned, with the returned options, for sm_90 */
            const char *opts[8] = {k->arch_specific ? "--gpu-architecture=sm_90a"
                                                    : "--gpu-architecture=sm_90"};
            for (int i = 0; i < k->noptions && i < 7; i++)
                opts[i + 1] = k->options[i];
            nvrtcProgram prog = NULL;
            size_t cub = 0;
            CHECK(nvrtcCreateProgram(&prog, k->source, k->program_name, 0, NULL, NULL) ==
                      NVRTC_SUCCESS &&
                  nvrtcCompileProgram(prog, k->noptions + 1, opts) == NVRTC_SUCCESS &&
                  nvrtcGetCUBINSize(prog, &cub) == NVRTC_SUCCESS && cub > 1000);
            if (prog)
                nvrtcDestroyProgram(&prog);
        }
        void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        int gpus = 0;
        if (drv && cudaGetDeviceCount(&gpus) == cudaSuccess && gpus > 0 &&
            cudaFree(NULL) == cudaSuccess) {
            if (gt_test_gpu()) { /* --cpu leaves the launch to the _gpu entry */
                long bad = run_on_gpu(k, shapes[s][0], shapes[s][1], shapes[s][2]);
                CHECK_MSG(bad == 0, "%s on the GPU: %ld elements of D wrong", k->config, bad);
                fprintf(stderr, "     GPU: %lldx%lldx%lld %s: D matches the host reference\n",
                        (long long)shapes[s][0], (long long)shapes[s][1], (long long)shapes[s][2],
                        k->launch[k->nlaunch - 1].kernel);
                if (s == 0)
                    test_plan_gpu();
            }
        } else {
            /* no driver or no device: a reason, nothing loaded */
            gt_db_module mod;
            memset(&mod, 0x55, sizeof mod);
            CHECK(gt_db_kernel_cuda_load(k, &mod, err, sizeof err) == -1 && err[0] && !mod.module);
            CHECK_MSG(drv || strstr(err, "no CUDA driver"), "%s", err);
            if (s == 0 && gt_test_gpu())
                gt_test_skip("GPU launch", err);
        }
        if (drv)
            dlclose(drv);
        gt_db_kernel_free(k);
    }
    gt_db_close(db);
}
#endif

int main(int argc, char **argv)
{
    gt_test_mode(argc, argv);
    snprintf(g_dir, sizeof g_dir, "/tmp/gt-libkern-XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    if (gt_test_cpu())
        RUN(test_lookups);
#ifdef GT_WITH_CUDA
    RUN(test_cuda); /* NVRTC compiles (CPU) and launches (GPU): it picks by mode */
#else
    if (gt_test_cpu())
        fprintf(stderr, "     SKIP nvrtc and launch: built without CUDA\n");
    if (gt_test_gpu())
        gt_test_skip("GPU launch", "built without CUDA");
#endif
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (gt_test_failures == 0 && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_dir);
    return gt_test_done();
}
