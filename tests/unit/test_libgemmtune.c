/* test_libgemmtune.c: libgemmtune (lib/), the preload shim's pure parts and,
 * in CUDA builds, the shim itself against a fake libcublasLt; plus the CLI's
 * TunableOp export and report (cli/report.c).
 *
 * An export file is built with gt_export_schema + plain SQL and opened with
 * the shared library (linked as a user would). Proven here:
 *   - lookups hit exactly the tuned (key, backend, device model) and miss
 *     for another ld, dtype, transpose, alpha, device model or backend; the
 *     CPU config JSON comes back verbatim; bad files are refused;
 *   - the public description -> key equals gt_problem_key of the problem;
 *   - cuda configs decode like the worker's gt_cu_lt_cfg_from_json;
 *   - the descriptor tuple -> problem mapping (pure function, both builds)
 *     inverts the worker's problem -> descriptors mapping (CUDA builds: the
 *     worker's gt_cu_desc_create, read back through cuBLASLt's getters)
 *     and refuses what gemmtune does not model;
 *   - the record lines parse with gt_log_parse into the same keys;
 *   - CUDA builds: under LD_PRELOAD the shim records GEMMs with call counts
 *     and puts the tuned algo first only when tuned for this device model,
 *     accepted by AlgoCheck and within the call's workspace, with the
 *     application's cuBLASLt in the global scope and loaded RTLD_LOCAL;
 *   - the TunableOp file has PyTorch's validator/row format and names. */
#include "gemmtune.h"
#include "gt_config.h"
#include "gt_export.h"
#include "gt_lib.h"
#include "gt_log.h"
#include "gt_report.h"
#include "gt_test.h"
#include "gt_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GT_HAS_ASAN 1
#endif
#endif
#ifndef GT_HAS_ASAN
#define GT_HAS_ASAN 0
#endif

#ifdef GT_WITH_CUDA
#include "gt_cu.h"
#endif

static char g_dir[256];

static const char *tpath(const char *name)
{
    static char buf[8][512];
    static int next;
    char *b = buf[next++ % 8];
    snprintf(b, 512, "%s/%s", g_dir, name);
    return b;
}

/* ---- the problems of the test export ---------------------------------------- */

/* P1: a Llama-3-8B QKV projection at one token, as PyTorch's Linear runs it. */
static gt_problem p_linear(void)
{
    gt_problem p;
    gt_problem_init(&p, 6144, 1, 4096);
    p.trans_a = 'T';
    p.a_type = p.b_type = p.c_type = p.d_type = GT_DT_BF16;
    gt_problem_default_ld(&p);
    gt_problem_finish(&p);
    return p;
}

/* P2: P1 on a padded view (ldb 4160). */
static gt_problem p_padded(void)
{
    gt_problem p = p_linear();
    p.ldb = 4160;
    return p;
}

/* P3: f16 NN with a GELU + f16 bias epilogue and alpha 0.5. */
static gt_problem p_gelu(void)
{
    gt_problem p;
    gt_problem_init(&p, 256, 128, 64);
    p.a_type = p.b_type = p.c_type = p.d_type = GT_DT_F16;
    p.alpha = 0.5;
    p.bias = 1;
    p.bias_type = GT_DT_F16;
    snprintf(p.activation, sizeof p.activation, "gelu");
    gt_problem_default_ld(&p);
    gt_problem_finish(&p);
    return p;
}

/* P4: batched f32 with TF32 math, beta 1. */
static gt_problem p_batched(void)
{
    gt_problem p;
    gt_problem_init(&p, 128, 64, 32);
    p.trans_a = 'T';
    p.batch = 4;
    p.compute_type = GT_DT_TF32;
    p.scale_type = GT_DT_F32;
    p.beta = 1.0;
    gt_problem_default_ld(&p);
    gt_problem_finish(&p);
    return p;
}

/* P5: a CPU problem. */
static gt_problem p_cpu(void)
{
    gt_problem p;
    gt_problem_init(&p, 64, 32, 16);
    gt_problem_finish(&p);
    return p;
}

static const char *key_of(const gt_problem *p)
{
    static char buf[6][512];
    static int next;
    char *b = buf[next++ % 6];
    gt_problem_key(p, b, 512);
    return b;
}

static const char k_cfg42[] = "{\"algo_id\":42,\"cluster\":2,\"custom\":0,\"inner_shape\":0,"
                              "\"reduction\":0,\"splitk\":1,\"stages\":35,\"swizzle\":0,\"tile\":20}";
static const char k_cfg_cpu[] = "{\"kc\":256,\"mc\":64,\"mr\":8,\"nc\":512,\"nr\":6,\"threads\":4,"
                                "\"unroll\":4}";

typedef struct best_row {
    const gt_problem *p;
    const char *backend, *model, *config;
    double time_us, baseline_us;
    int is_baseline;
} best_row;

static int add_problem(sqlite3 *db, int id, const gt_problem *p)
{
    char label[128];
    gt_problem_label(p, label, sizeof label);
    cJSON *spec = gt_problem_to_json(p);
    char *spec_s = cJSON_PrintUnformatted(spec);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(
        db,
        "INSERT INTO problems (id, key, label, m, n, k, batch, trans_a, trans_b, lda, ldb, ldc,"
        " ldd, stride_a, stride_b, stride_c, stride_d, a_type, b_type, c_type, d_type,"
        " compute_type, scale_type, alpha, beta, bias, bias_type, activation, call_count, flops,"
        " weight, spec) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,"
        "?19,?20,?21,?22,?23,?24,?25,?26,?27,?28,?29,?30,?31,?32)",
        -1, &st, NULL);
    if (rc == SQLITE_OK) {
        char ta[2] = {p->trans_a, 0}, tb[2] = {p->trans_b, 0};
        sqlite3_bind_int(st, 1, id);
        sqlite3_bind_text(st, 2, key_of(p), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, label, -1, SQLITE_TRANSIENT);
        const int64_t iv[] = {p->m,   p->n,   p->k,   p->batch, 0,           0,
                              p->lda, p->ldb, p->ldc, p->ldd,   p->stride_a, p->stride_b,
                              p->stride_c, p->stride_d};
        for (int i = 0; i < 4; i++)
            sqlite3_bind_int64(st, 4 + i, iv[i]);
        sqlite3_bind_text(st, 8, ta, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 9, tb, -1, SQLITE_TRANSIENT);
        for (int i = 6; i < 14; i++)
            sqlite3_bind_int64(st, 10 + i - 6, iv[i]);
        const gt_dtype ty[] = {p->a_type, p->b_type, p->c_type, p->d_type, p->compute_type,
                               p->scale_type};
        for (int i = 0; i < 6; i++)
            sqlite3_bind_text(st, 18 + i, gt_dtype_name(ty[i]), -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 24, p->alpha);
        sqlite3_bind_double(st, 25, p->beta);
        sqlite3_bind_int(st, 26, p->bias);
        sqlite3_bind_text(st, 27, p->bias ? gt_dtype_name(p->bias_type) : "none", -1,
                          SQLITE_STATIC);
        sqlite3_bind_text(st, 28, p->activation, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 29, 100 * id);
        sqlite3_bind_double(st, 30, p->flops);
        sqlite3_bind_double(st, 31, 1.0 / (id + 1));
        sqlite3_bind_text(st, 32, spec_s, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
        sqlite3_finalize(st);
    }
    cJSON_free(spec_s);
    cJSON_Delete(spec);
    return rc == SQLITE_OK ? 0 : -1;
}

static int add_best(sqlite3 *db, int pid, const best_row *b)
{
    char sql[2048], hash[17];
    cJSON *cfg = cJSON_Parse(b->config);
    if (!cfg || gt_cfg_hash(cfg, hash) != 0)
        snprintf(hash, sizeof hash, "%016x", pid);
    cJSON_Delete(cfg);
    char *cq = sqlite3_mprintf("%Q", b->config);
    snprintf(sql, sizeof sql,
             "INSERT INTO best (problem_id, backend, device_model, config, config_hash, time_us,"
             " baseline_us, uplift, tflops, rel_err, source) VALUES (%d, '%s', '%s', %s, '%s',"
             " %.17g, %.17g, %.17g, 1.0, 1e-3, 'test/run/1');"
             "INSERT INTO results (problem_id, backend, device_model, phase, config, config_hash,"
             " is_baseline, time_us, valid, source, created_ms) VALUES (%d, '%s', '%s', 'final',"
             " %s, '%s', %d, %.17g, 1, 'test/run/1', 1)",
             pid, b->backend, b->model, cq, hash, b->time_us, b->baseline_us,
             b->baseline_us / b->time_us, pid, b->backend, b->model, cq, hash, b->is_baseline,
             b->time_us);
    sqlite3_free(cq);
    return gt_test_sql(db, sql);
}

/* The export the tests use (also the fake-GPU preload test's database). */
static int make_export(const char *path, const best_row *rows, size_t n)
{
    sqlite3 *db = NULL;
    char err[256];
    unlink(path);
    int ok = sqlite3_open(path, &db) == SQLITE_OK && gt_export_schema(db, err, sizeof err) == 0 &&
             gt_test_sql(db, "INSERT INTO meta VALUES ('format_version', '1'),"
                      " ('source', 'test/run/1'), ('backend', 'cuda')") == 0;
    for (size_t i = 0; ok && i < n; i++) {
        /* One problems row per distinct key. */
        int pid = -1;
        for (size_t j = 0; j < i && pid < 0; j++)
            if (!strcmp(key_of(rows[j].p), key_of(rows[i].p)))
                pid = (int)j + 1;
        if (pid < 0) {
            pid = (int)i + 1;
            ok = add_problem(db, pid, rows[i].p) == 0;
        }
        ok = ok && add_best(db, pid, &rows[i]) == 0;
    }
    sqlite3_close(db);
    return ok ? 0 : -1;
}

static gt_problem P1, P2, P3, P4, P5;
#define H100 "NVIDIA H100 80GB HBM3"

static const char *main_export(void)
{
    static int made;
    const char *path = tpath("tuned.db");
    if (made)
        return path;
    const best_row rows[] = {
        {&P1, "cuda", "FakeGPU", k_cfg42, 10.0, 12.5, 0},
        {&P1, "cuda", H100, "{\"algo_id\":66,\"cluster\":2,\"custom\":0,\"inner_shape\":0,"
                            "\"reduction\":1,\"splitk\":4,\"stages\":16,\"swizzle\":1,\"tile\":24}",
         20.0, 25.0, 0},
        {&P2, "cuda", "FakeGPU", "{\"algo_id\":999}", 11.0, 12.0, 0},
        {&P3, "cuda", "FakeGPU", "{\"algo_id\":777,\"splitk\":1}", 5.0, 6.0, 0},
        {&P4, "cuda", "FakeGPU", "{\"algo_id\":55,\"tile\":18}", 3.0, 3.0, 1},
        {&P5, "cpu", "testcpu", k_cfg_cpu, 100.0, 150.0, 0},
    };
    CHECK(make_export(path, rows, sizeof rows / sizeof rows[0]) == 0);
    made = 1;
    return path;
}

/* ---- libgemmtune ------------------------------------------------------------- */

static void test_open_errors(void)
{
    char err[512];
    err[0] = 0;
    CHECK(gt_db_open(tpath("missing.db"), err, sizeof err) == NULL && err[0]);
    /* A SQLite file that is not an export. */
    sqlite3 *db;
    CHECK(sqlite3_open(tpath("other.db"), &db) == SQLITE_OK);
    CHECK(gt_test_sql(db, "CREATE TABLE t (x)") == 0);
    sqlite3_close(db);
    CHECK(gt_db_open(tpath("other.db"), err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "not a gemmtune export") != NULL, "%s", err);
    /* A newer format. */
    const best_row rows[] = {{&P1, "cuda", "FakeGPU", k_cfg42, 1, 2, 0}};
    CHECK(make_export(tpath("v2.db"), rows, 1) == 0);
    CHECK(sqlite3_open(tpath("v2.db"), &db) == SQLITE_OK);
    CHECK(gt_test_sql(db, "UPDATE meta SET value = '2' WHERE key = 'format_version'") == 0);
    sqlite3_close(db);
    CHECK(gt_db_open(tpath("v2.db"), err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "format_version 2") != NULL, "%s", err);
    CHECK(gt_db_open(NULL, err, sizeof err) == NULL);
    gt_db_close(NULL);
}

static void desc_linear(gt_gemm_desc *d)
{
    gt_gemm_desc_init(d, 6144, 1, 4096, "bf16");
    d->transa = 'T';
}

static void test_lookup(void)
{
    char err[512];
    gt_db *db = gt_db_open(main_export(), err, sizeof err);
    CHECK_MSG(db != NULL, "%s", err);
    if (!db)
        return;
    CHECK(gt_db_size(db) == 6);
    gt_gemm_desc d;
    gt_db_result r;
    desc_linear(&d);
    CHECK(gt_db_lookup(db, &d, "cuda", "FakeGPU", &r) == GT_DB_OK);
    CHECK(strcmp(r.config, k_cfg42) == 0 && strcmp(r.key, key_of(&P1)) == 0);
    CHECK(r.time_us == 10.0 && r.baseline_us == 12.5 && fabs(r.uplift - 1.25) < 1e-12);
    CHECK(!strcmp(r.backend, "cuda") && !strcmp(r.device_model, "FakeGPU"));
    CHECK(gt_db_lookup(db, &d, "cuda", H100, &r) == GT_DB_OK && strstr(r.config, "\"algo_id\":66"));
    /* against a substitute baseline (the default could not run): the
     * default's time and the uplift over it are unknown, the tuned entry
     * stands (issue 18) */
    {
        const best_row sub_rows[] = {{&P1, "cuda", "FakeGPU", k_cfg42, 10.0, 14.0, 0}};
        const char *spath = tpath("subst.db");
        sqlite3 *sdb = NULL;
        CHECK(make_export(spath, sub_rows, 1) == 0 && sqlite3_open(spath, &sdb) == SQLITE_OK &&
              gt_test_sql(sdb, "UPDATE best SET baseline_kind = 'substitute'") == 0);
        sqlite3_close(sdb);
        gt_db *sd = gt_db_open(spath, err, sizeof err);
        gt_db_result sr;
        CHECK_MSG(sd && gt_db_lookup(sd, &d, "cuda", "FakeGPU", &sr) == GT_DB_OK && sr.time_us == 10.0 &&
                      isnan(sr.baseline_us) && isnan(sr.uplift) && !strcmp(sr.config, k_cfg42),
                  "%s", sd ? "lookup" : err);
        gt_db_close(sd);
    }
    /* The same spelled with cuBLAS names and explicit tight leading dims. */
    gt_gemm_desc e = d;
    e.a_type = e.b_type = "CUDA_R_16BF";
    e.c_type = "R_16BF";
    e.d_type = "bf16_r";
    e.compute_type = "CUBLAS_COMPUTE_32F";
    e.lda = 4096, e.ldb = 4096, e.ldc = 6144, e.ldd = 6144;
    CHECK(gt_db_lookup(db, &e, "cuda", "FakeGPU", &r) == GT_DB_OK);
    /* Misses: another ld, dtype, transpose, alpha, device model, backend. */
    e = d;
    e.lda = 4104;
    CHECK(gt_db_lookup(db, &e, "cuda", "FakeGPU", &r) == GT_DB_NOT_TUNED);
    e = d;
    e.ldb = 4160; /* P2: tuned, a different entry */
    CHECK(gt_db_lookup(db, &e, "cuda", "FakeGPU", &r) == GT_DB_OK &&
          !strcmp(r.config, "{\"algo_id\":999}"));
    e = d;
    e.a_type = e.b_type = e.c_type = e.d_type = "f16";
    CHECK(gt_db_lookup(db, &e, "cuda", "FakeGPU", &r) == GT_DB_NOT_TUNED);
    e = d;
    e.d_type = e.c_type = "f32";
    CHECK(gt_db_lookup(db, &e, "cuda", "FakeGPU", &r) == GT_DB_NOT_TUNED);
    e = d;
    e.transa = 'N';
    e.lda = 6144;
    CHECK(gt_db_lookup(db, &e, "cuda", "FakeGPU", &r) == GT_DB_NOT_TUNED);
    e = d;
    e.transb = 'T';
    CHECK(gt_db_lookup(db, &e, "cuda", "FakeGPU", &r) == GT_DB_NOT_TUNED);
    e = d;
    e.alpha = 2.0;
    CHECK(gt_db_lookup(db, &e, "cuda", "FakeGPU", &r) == GT_DB_NOT_TUNED);
    e = d;
    e.compute_type = "tf32";
    CHECK(gt_db_lookup(db, &e, "cuda", "FakeGPU", &r) != GT_DB_OK);
    CHECK(gt_db_lookup(db, &d, "cuda", "NVIDIA A100-SXM4-80GB", &r) == GT_DB_NOT_TUNED);
    CHECK(gt_db_lookup(db, &d, "cuda", "FakeGPU ", &r) == GT_DB_NOT_TUNED);
    CHECK(gt_db_lookup(db, &d, "cpu", "FakeGPU", &r) == GT_DB_NOT_TUNED);
    CHECK(gt_db_lookup(db, &d, "hip", "FakeGPU", &r) == GT_DB_NOT_TUNED);
    /* The CPU config JSON comes back as stored. */
    gt_gemm_desc c;
    gt_gemm_desc_init(&c, 64, 32, 16, "f32");
    CHECK(gt_db_lookup(db, &c, "cpu", "testcpu", &r) == GT_DB_OK && !strcmp(r.config, k_cfg_cpu));
    CHECK(r.time_us == 100.0 && r.baseline_us == 150.0);
    CHECK(gt_db_lookup_key(db, key_of(&P5), "cpu", "testcpu", NULL) == GT_DB_OK);
    CHECK(gt_db_lookup(db, &c, "cpu", "othercpu", &r) == GT_DB_NOT_TUNED);
    /* Bad arguments. */
    CHECK(gt_db_lookup(NULL, &d, "cuda", "FakeGPU", &r) == GT_DB_EINVAL);
    CHECK(gt_db_lookup(db, &d, "cuda", NULL, &r) == GT_DB_EINVAL);
    e = d;
    e.a_type = "complex";
    CHECK(gt_db_lookup(db, &e, "cuda", "FakeGPU", &r) == GT_DB_EINVAL);
    e = d;
    e.lda = 5; /* smaller than k for a transposed A */
    CHECK(gt_db_lookup(db, &e, "cuda", "FakeGPU", &r) == GT_DB_EINVAL);
    CHECK(!strcmp(gt_db_strerror(GT_DB_NOT_TUNED), "not tuned"));
    gt_db_close(db);
}

static void test_desc_keys(void)
{
    char key[512], err[256];
    gt_gemm_desc d;
    desc_linear(&d);
    CHECK(gt_db_key(&d, key, sizeof key, err, sizeof err) > 0 && !strcmp(key, key_of(&P1)));
    CHECK_MSG(!strcmp(key, "m=6144,n=1,k=4096,b=1,op=TN,ld=4096/4096/6144/6144,st=0/0/0/0,"
                           "t=bf16/bf16/bf16/bf16,ct=f32,st=f32,ab=1/0,bias=0:-,act=none"),
              "%s", key);
    /* The epilogue, scalars and bias default. */
    gt_gemm_desc_init(&d, 256, 128, 64, "f16");
    d.alpha = 0.5;
    d.bias = 1;
    d.activation = "gelu";
    CHECK(gt_db_key(&d, key, sizeof key, err, sizeof err) > 0 && !strcmp(key, key_of(&P3)));
    /* Batched with tight strides, tf32 math. */
    gt_gemm_desc_init(&d, 128, 64, 32, "f32");
    d.transa = 't';
    d.batch = 4;
    d.compute_type = "CUBLAS_COMPUTE_32F_FAST_TF32";
    d.beta = 1.0;
    CHECK(gt_db_key(&d, key, sizeof key, err, sizeof err) > 0 && !strcmp(key, key_of(&P4)));
    d.stride_a = 0; /* a broadcast A is another GEMM */
    CHECK(gt_db_key(&d, key, sizeof key, err, sizeof err) > 0 && strcmp(key, key_of(&P4)));
    /* Implied compute/scale types. */
    gt_gemm_desc_init(&d, 16, 16, 16, "i8");
    d.c_type = d.d_type = "i32";
    CHECK(gt_db_key(&d, key, sizeof key, err, sizeof err) > 0 && strstr(key, ",ct=i32,st=i32,"));
    gt_gemm_desc_init(&d, 16, 16, 16, "f64");
    CHECK(gt_db_key(&d, key, sizeof key, err, sizeof err) > 0 && strstr(key, ",ct=f64,st=f64,"));
    /* Refusals name the field. */
    gt_gemm_desc_init(&d, 0, 16, 16, "f32");
    CHECK(gt_db_key(&d, key, sizeof key, err, sizeof err) < 0 && strstr(err, "M=0"));
    gt_gemm_desc_init(&d, 16, 16, 16, "tf32");
    CHECK(gt_db_key(&d, key, sizeof key, err, sizeof err) < 0 && strstr(err, "a_type"));
    gt_gemm_desc_init(&d, 16, 16, 16, "f32");
    d.activation = "swish";
    CHECK(gt_db_key(&d, key, sizeof key, err, sizeof err) < 0 && strstr(err, "swish"));
    /* cudaDataType_t / cublasComputeType_t names. */
    CHECK(!strcmp(gt_db_cuda_type(14), "bf16") && !strcmp(gt_db_cuda_type(0), "f32") &&
          !strcmp(gt_db_cuda_type(28), "f8e4m3") && gt_db_cuda_type(4) == NULL); /* R_32F, C_32F */
    CHECK(!strcmp(gt_db_cuda_compute(68), "f32") && !strcmp(gt_db_cuda_compute(77), "tf32") &&
          gt_db_cuda_compute(69) == NULL); /* 32F_PEDANTIC */
}

static void test_cuda_config(void)
{
    char err[256];
    gt_db_cuda_config c;
    CHECK(gt_db_cuda_config_parse(k_cfg42, &c, err, sizeof err) == 0);
    CHECK(c.algo_id == 42 && c.cluster == 2 && c.stages == 35 && c.tile == 20 && c.splitk == 1 &&
          c.reduction == 0 && c.swizzle == 0 && c.custom == 0 && c.inner_shape == 0);
    CHECK(gt_db_cuda_config_parse("{\"algo_id\":7}", &c, err, sizeof err) == 0 && c.splitk == 1 &&
          c.tile == 0);
    const char *bad[] = {"{}", "[]", "{\"algo_id\":1,\"bogus\":2}", "{\"algo_id\":1.5}",
                         "{\"algo_id\":1,\"reduction\":3}", "{\"algo_id\":1,\"swizzle\":2}",
                         "{\"algo_id\":-1}", "nonsense", "{\"algo_id\":1,\"algo_id\":2}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(gt_db_cuda_config_parse(bad[i], &c, err, sizeof err) == -1, "%s", bad[i]);
    gt_cu_lt_cfg lc;
    char text[256];
    CHECK(gt_cu_lt_cfg_parse(k_cfg42, &lc, err, sizeof err) == 0);
    CHECK(gt_cu_lt_cfg_text(&lc, text, sizeof text) > 0 && !strcmp(text, k_cfg42));
#ifdef GT_WITH_CUDA
    /* Same verdicts and values as the worker's decoder. */
    const char *all[] = {k_cfg42, "{\"algo_id\":7}", "{\"algo_id\":3,\"splitk\":8,\"reduction\":4}",
                         "{\"algo_id\":1,\"cluster\":65535,\"inner_shape\":3}"};
    for (size_t i = 0; i < sizeof all / sizeof all[0] + sizeof bad / sizeof bad[0]; i++) {
        const char *s = i < 4 ? all[i] : bad[i - 4];
        cJSON *j = cJSON_Parse(s);
        gt_cu_lt_cfg wc;
        int wrc = j ? gt_cu_lt_cfg_from_json(j, &wc, err, sizeof err) : -1;
        int lrc = gt_cu_lt_cfg_parse(s, &lc, err, sizeof err);
        CHECK_MSG(wrc == lrc, "%s: worker %d, lib %d", s, wrc, lrc);
        if (wrc == 0 && lrc == 0) {
            char t1[256], t2[256];
            gt_cu_lt_cfg_text(&wc, t1, sizeof t1);
            gt_cu_lt_cfg_text(&lc, t2, sizeof t2);
            CHECK_MSG(!strcmp(t1, t2), "%s vs %s", t1, t2);
        }
        cJSON_Delete(j);
    }
#endif
}

/* ---- the preload's mapping (pure) ---------------------------------------------- */

static void layout(gt_cu_lt_layout *l, int32_t type, uint64_t rows, uint64_t cols, int64_t ld)
{
    memset(l, 0, sizeof *l);
    l->type = type;
    l->rows = rows;
    l->cols = cols;
    l->ld = ld;
    l->batch = 1;
}

/* The tuple PyTorch's Linear (bf16, 6144 out, 4096 in, 1 token) hands cuBLASLt. */
static gt_cu_lt_tuple tuple_linear(void)
{
    gt_cu_lt_tuple t;
    memset(&t, 0, sizeof t);
    layout(&t.l[0], GT_CU_R_16BF, 4096, 6144, 4096); /* A: k x m, op T */
    layout(&t.l[1], GT_CU_R_16BF, 4096, 1, 4096);    /* B: k x n */
    layout(&t.l[2], GT_CU_R_16BF, 6144, 1, 6144);
    layout(&t.l[3], GT_CU_R_16BF, 6144, 1, 6144);
    t.compute = GT_CU_COMPUTE_32F;
    t.scale = GT_CU_R_32F;
    t.transa = GT_CU_OP_T;
    t.transb = GT_CU_OP_N;
    t.epilogue = GT_CU_EPI_DEFAULT;
    t.bias_type = -1;
    t.fill = GT_CU_FILL_FULL;
    return t;
}

static void test_mapping(void)
{
    char err[256];
    gt_problem p;
    gt_cu_lt_tuple t = tuple_linear();
    CHECK_MSG(gt_cu_lt_to_problem(&t, 1.0, 0.0, &p, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(!strcmp(key_of(&p), key_of(&P1)), "%s", key_of(&p));
    /* Strides of one batch entry mean nothing. */
    t.l[0].stride = 12345;
    CHECK(gt_cu_lt_to_problem(&t, 1.0, 0.0, &p, err, sizeof err) == 0 &&
          !strcmp(key_of(&p), key_of(&P1)));
    CHECK(gt_cu_lt_to_problem(&t, 1.0, 1.0, &p, err, sizeof err) == 0 &&
          strcmp(key_of(&p), key_of(&P1)));
    /* GELU + f16 bias, alpha 0.5. */
    memset(&t, 0, sizeof t);
    layout(&t.l[0], GT_CU_R_16F, 256, 64, 256);
    layout(&t.l[1], GT_CU_R_16F, 64, 128, 64);
    layout(&t.l[2], GT_CU_R_16F, 256, 128, 256);
    layout(&t.l[3], GT_CU_R_16F, 256, 128, 256);
    t.compute = GT_CU_COMPUTE_32F;
    t.scale = GT_CU_R_32F;
    t.epilogue = GT_CU_EPI_GELU_BIAS;
    t.bias_type = GT_CU_R_16F;
    t.fill = GT_CU_FILL_FULL;
    CHECK(gt_cu_lt_to_problem(&t, 0.5, 0.0, &p, err, sizeof err) == 0 &&
          !strcmp(key_of(&p), key_of(&P3)));
    t.bias_type = -1; /* unset: cuBLASLt's default, D's type here */
    CHECK(gt_cu_lt_to_problem(&t, 0.5, 0.0, &p, err, sizeof err) == 0 &&
          !strcmp(key_of(&p), key_of(&P3)));
    /* Batched, tf32. */
    memset(&t, 0, sizeof t);
    layout(&t.l[0], GT_CU_R_32F, 32, 128, 32);
    layout(&t.l[1], GT_CU_R_32F, 32, 64, 32);
    layout(&t.l[2], GT_CU_R_32F, 128, 64, 128);
    layout(&t.l[3], GT_CU_R_32F, 128, 64, 128);
    const int64_t strides[4] = {32 * 128, 32 * 64, 128 * 64, 128 * 64};
    for (int i = 0; i < 4; i++)
        t.l[i].batch = 4, t.l[i].stride = strides[i];
    t.compute = GT_CU_COMPUTE_32F_FAST_TF32;
    t.scale = GT_CU_R_32F;
    t.transa = GT_CU_OP_T;
    t.epilogue = GT_CU_EPI_DEFAULT;
    t.bias_type = -1;
    t.fill = GT_CU_FILL_FULL;
    CHECK(gt_cu_lt_to_problem(&t, 1.0, 1.0, &p, err, sizeof err) == 0 &&
          !strcmp(key_of(&p), key_of(&P4)));
    /* What gemmtune does not model is refused, with a reason. */
    struct {
        const char *why;
        void (*mut)(gt_cu_lt_tuple *);
    } refuse[] = {
        {"order", NULL}, {"transc", NULL}, {"SM count", NULL},  {"fast accumulation", NULL},
        {"scale mode", NULL}, {"aux", NULL}, {"does not fit", NULL}, {"batch counts", NULL},
        {"compute type", NULL}, {"epilogue", NULL}, {"fp8", NULL}, {"scale pointers", NULL},
        {"fill mode", NULL}, {"data type", NULL},
    };
    for (size_t i = 0; i < sizeof refuse / sizeof refuse[0]; i++) {
        t = tuple_linear();
        switch (i) {
        case 0: t.l[1].order = 1; break;              /* row-major */
        case 1: t.transc = GT_CU_OP_T; break;
        case 2: t.sm_count = 100; break;
        case 3: t.fast_accum = 1; break;
        case 4: t.a_scale_mode = 1; break;
        case 5: t.ptr_flags = GT_CU_HAS_AUX; break;
        case 6: t.l[1].rows = 4000; break;           /* B's k differs from A's */
        case 7: t.l[2].batch = 2; break;
        case 8: t.compute = 69; break;               /* COMPUTE_32F_PEDANTIC */
        case 9: t.epilogue = 8; break;               /* DRELU */
        case 10:
            for (int k = 0; k < 2; k++)
                t.l[k].type = GT_CU_R_8F_E4M3;
            break;
        case 11: t.ptr_flags = GT_CU_HAS_A_SCALE; break;
        case 12: t.fill = 0; break;
        case 13: t.l[3].type = 4; break;             /* CUDA_C_32F */
        }
        err[0] = 0;
        CHECK_MSG(gt_cu_lt_to_problem(&t, 1.0, 0.0, &p, err, sizeof err) == -1 &&
                      strstr(err, refuse[i].why),
                  "case %zu: '%s'", i, err);
    }
}

/* ---- record lines ------------------------------------------------------------------ */

static void test_record_lines(void)
{
    const gt_problem *ps[] = {&P1, &P2, &P3, &P4, &P5};
    const int64_t calls[] = {102400, 7, 3, 1, 0 /* written as 1 */};
    gt_str s;
    gt_str_init(&s);
    for (size_t i = 0; i < 5; i++) {
        char line[1024];
        int n = gt_lib_record_line(ps[i], calls[i], line, sizeof line);
        CHECK(n > 0 && (size_t)n < sizeof line && line[n - 1] == '\n');
        gt_str_append(&s, line, (size_t)n);
    }
    /* The same GEMM twice merges, counts add up. */
    char again[1024];
    gt_lib_record_line(&P1, 100, again, sizeof again);
    gt_str_append(&s, again, strlen(again));
    CHECK(gt_log_detect(s.s, s.len) == GT_LOG_HIPBLASLT);
    gt_log_opts o = {.format = GT_LOG_AUTO};
    gt_log_result r;
    memset(&r, 0, sizeof r);
    int rc = gt_log_parse(s.s, s.len, &o, &r);
    CHECK_MSG(rc == 0, "%s", r.nerrors ? r.errors[0].msg : "?");
    CHECK(r.format == GT_LOG_HIPBLASLT && r.nproblems == 5 && r.gemm_lines == 6);
    for (size_t i = 0; i < 5; i++) {
        int found = 0;
        for (size_t j = 0; j < r.nproblems; j++)
            if (!strcmp(key_of(&r.problems[j]), key_of(ps[i]))) {
                found = 1;
                int64_t want = i == 0 ? 102500 : calls[i] ? calls[i] : 1;
                CHECK_MSG(r.problems[j].call_count == want, "%zu: %lld", i,
                          (long long)r.problems[j].call_count);
            }
        CHECK_MSG(found, "record line of problem %zu does not parse back to its key", i);
    }
    gt_log_result_free(&r);
    gt_str_free(&s);

    /* The public form (gt_db_record_line, what the Python recorder writes):
     * the same line as the internal one for a desc, FNUZ refused. */
    gt_gemm_desc d;
    gt_gemm_desc_init(&d, 6144, 16, 4096, "bf16");
    d.transa = 'T';
    char pub[1024], key[1024], err[256];
    int n = gt_db_record_line(&d, 5, pub, sizeof pub, err, sizeof err);
    CHECK_MSG(n > 0 && pub[n - 1] == '\n', "%s", err);
    memset(&r, 0, sizeof r);
    rc = gt_log_parse(pub, (size_t)n, &o, &r);
    CHECK(rc == 0 && r.nproblems == 1 && r.problems[0].call_count == 5);
    CHECK(gt_db_key(&d, key, sizeof key, err, sizeof err) > 0 && rc == 0 && r.nproblems == 1 &&
          !strcmp(key_of(&r.problems[0]), key));
    gt_log_result_free(&r);
    gt_gemm_desc_init(&d, 64, 16, 64, "f8e4m3fnuz");
    CHECK(gt_db_record_line(&d, 1, pub, sizeof pub, err, sizeof err) == -1 && strstr(err, "FNUZ"));
}

#ifdef GT_WITH_CUDA
/* ---- the CUDA host side --------------------------------------------------------- */

/* The worker's problem -> descriptors (what the tuning ran), read back
 * through cuBLASLt's own getters and mapped by the shim's pure function,
 * gives the same key. No GPU needed: descriptors are host objects. */
static void test_cuda_roundtrip(void)
{
    gt_problem fp8, i8, bcast, relu;
    gt_problem_init(&fp8, 128, 64, 256);
    fp8.trans_a = 'T';
    fp8.a_type = fp8.b_type = GT_DT_F8E4M3;
    fp8.c_type = fp8.d_type = GT_DT_BF16;
    gt_problem_default_ld(&fp8);
    gt_problem_finish(&fp8);
    gt_problem_init(&i8, 64, 64, 64);
    i8.trans_a = 'T';
    i8.a_type = i8.b_type = GT_DT_I8;
    i8.c_type = i8.d_type = GT_DT_I32;
    i8.compute_type = i8.scale_type = GT_DT_I32;
    gt_problem_default_ld(&i8);
    gt_problem_finish(&i8);
    bcast = P4;
    bcast.stride_a = 0;
    gt_problem_finish(&bcast);
    gt_problem_init(&relu, 96, 48, 40);
    relu.bias = 1;
    relu.bias_type = GT_DT_F32;
    snprintf(relu.activation, sizeof relu.activation, "relu");
    relu.beta = 0.25;
    gt_problem_default_ld(&relu);
    gt_problem_finish(&relu);
    const gt_problem *ps[] = {&P1, &P2, &P3, &P4, &P5, &fp8, &i8, &bcast, &relu};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        char err[256];
        gt_cu_map m;
        gt_cu_desc d;
        gt_cu_ptrs ptrs = {(const void *)(uintptr_t)4096, (const void *)(uintptr_t)8192,
                           (const void *)(uintptr_t)8192, (const void *)(uintptr_t)8192};
        int ok = gt_cu_map_problem(ps[i], 90, &m, err, sizeof err) == 0;
        CHECK_MSG(ok, "problem %zu: %s", i, err);
        ok = ok && gt_cu_desc_create(ps[i], &m, &ptrs, &d, err, sizeof err) == 0;
        CHECK_MSG(ok, "problem %zu: %s", i, err);
        if (!ok)
            continue;
        gt_cu_lt_tuple t;
        gt_problem back;
        CHECK(gt_cu_lt_describe(&gt_cu_lt_linked, &d, &t) == 0);
        int rc = gt_cu_lt_to_problem(&t, ps[i]->alpha, ps[i]->beta, &back, err, sizeof err);
        CHECK_MSG(rc == 0, "problem %zu: %s", i, err);
        if (rc == 0)
            CHECK_MSG(!strcmp(key_of(&back), key_of(ps[i])), "problem %zu: %s vs %s", i,
                      key_of(&back), key_of(ps[i]));
        gt_cu_desc_destroy(&d);
    }
    /* Host scalars by scale type. */
    float f = 0.5f;
    double x = -2.25;
    uint16_t h = 0x3c00; /* 1.0 */
    int32_t n = 3;
    CHECK(gt_cu_scalar_get(CUDA_R_32F, &f) == 0.5 && gt_cu_scalar_get(CUDA_R_64F, &x) == -2.25 &&
          gt_cu_scalar_get(CUDA_R_16F, &h) == 1.0 && gt_cu_scalar_get(CUDA_R_32I, &n) == 3.0);
}

/* libgemmtune's cuBLASLt API up to the point where it needs a GPU. */
static void test_cublaslt_host(void)
{
    char err[256];
    gt_db *db = gt_db_open(main_export(), err, sizeof err);
    CHECK(db != NULL);
    if (!db)
        return;
    gt_gemm_desc d;
    desc_linear(&d);
    cublasLtMatmulAlgo_t algo;
    size_t ws = 0;
    /* A handle is never touched before the lookup hits: a dummy will do. */
    cublasLtHandle_t fake = (cublasLtHandle_t)(uintptr_t)1;
    CHECK(gt_db_cublaslt_algo(db, fake, &d, "OtherGPU", &algo, &ws) == GT_DB_NOT_TUNED);
    CHECK(gt_db_cublaslt_algo(db, NULL, &d, "FakeGPU", &algo, &ws) == GT_DB_EINVAL);
    d.a_type = "nonsense";
    CHECK(gt_db_cublaslt_algo(db, fake, &d, "FakeGPU", &algo, &ws) == GT_DB_EINVAL);
    gt_db_close(db);
    /* A stored config that does not decode is refused before any cuBLASLt call. */
    const best_row rows[] = {{&P1, "cuda", "FakeGPU", "{\"algo_id\":-5}", 1, 2, 0}};
    CHECK(make_export(tpath("badcfg.db"), rows, 1) == 0);
    db = gt_db_open(tpath("badcfg.db"), err, sizeof err);
    CHECK(db != NULL);
    desc_linear(&d);
    if (db)
        CHECK(gt_db_cublaslt_algo(db, fake, &d, "FakeGPU", &algo, &ws) == GT_DB_REJECTED);
    gt_db_close(db);
}

/* Runs gt-preload-app under the shim; its output lines "G..." in out. */
static int run_app(const char *mode, char *out, size_t outcap)
{
    const char *build = getenv("GT_BUILD_DIR");
    char app[1024], user[1024];
    snprintf(app, sizeof app, "%s/lib/fakelt/gt-preload-app", build ? build : ".");
    snprintf(user, sizeof user, "%s/lib/fakelt/libgt_ltuser.so", build ? build : ".");
    char *argv[] = {app, user, (char *)mode, NULL};
    return gt_run_argv(argv, out, outcap, 60000);
}

static int has_line(const char *out, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = out; (p = strstr(p, line)); p++)
        if ((p == out || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return 1;
    return 0;
}

static void test_preload_fake(void)
{
    const char *build = getenv("GT_BUILD_DIR");
    char shim[1024], out[16384];
    snprintf(shim, sizeof shim, "%s/lib/libgemmtune-preload.so", build ? build : ".");
    struct stat sb;
    CHECK_MSG(stat(shim, &sb) == 0, "%s missing", shim);

    /* No shim: the fake heuristic's own order. */
    CHECK(run_app("global", out, sizeof out) == 0);
    CHECK_MSG(has_line(out, "G1.1 n=3 algos=111,222,333 ran=111"), "%s", out);

    /* Record. */
    const char *rec = tpath("gemms.log");
    unlink(rec);
    setenv("LD_PRELOAD", shim, 1);
    setenv("GEMMTUNE_RECORD", rec, 1);
    setenv("GEMMTUNE_DEVICE_MODEL", "FakeGPU", 1);
    setenv("GEMMTUNE_VERBOSE", "2", 1);
    int rc = run_app("global", out, sizeof out);
    CHECK_MSG(rc == 0, "%s", out);
    CHECK_MSG(has_line(out, "G1.3 n=3 algos=111,222,333 ran=111"), "%s", out);
    unsetenv("GEMMTUNE_RECORD");
    size_t len = 0;
    char *text = gt_read_file(rec, &len, 0);
    CHECK_MSG(text != NULL, "no record file %s:\n%s", rec, out);
    if (text) {
        gt_log_opts o = {.format = GT_LOG_AUTO};
        gt_log_result r;
        memset(&r, 0, sizeof r);
        CHECK_MSG(gt_log_parse(text, len, &o, &r) == 0, "%s", r.nerrors ? r.errors[0].msg : text);
        CHECK(r.format == GT_LOG_HIPBLASLT);
        /* G5 (row-major) is not modelled and not recorded. */
        CHECK_MSG(r.nproblems == 4, "%zu problems:\n%s", r.nproblems, text);
        const gt_problem *want[] = {&P1, &P2, &P3, &P4};
        const int64_t calls[] = {3, 1, 2, 2};
        for (size_t i = 0; i < 4; i++) {
            int found = 0;
            for (size_t j = 0; j < r.nproblems; j++)
                if (!strcmp(key_of(&r.problems[j]), key_of(want[i]))) {
                    found = 1;
                    CHECK(r.problems[j].call_count == calls[i]);
                }
            CHECK_MSG(found, "recorded GEMMs lack %s:\n%s", key_of(want[i]), text);
        }
        gt_log_result_free(&r);
        free(text);
    }

    /* Look up: tuned for FakeGPU. */
    setenv("GEMMTUNE_DB", main_export(), 1);
    for (int pass = 0; pass < 2; pass++) {
        const char *mode = pass ? "local" : "global";
        rc = run_app(mode, out, sizeof out);
        CHECK_MSG(rc == 0, "%s: %s", mode, out);
        /* G1: the tuned algo 42 first; the heuristic's list shifted, its
         * last entry dropped (3 requested). */
        for (int rep = 1; rep <= 3; rep++) {
            char line[64];
            snprintf(line, sizeof line, "G1.%d n=3 algos=42,111,222 ran=42", rep);
            CHECK_MSG(has_line(out, line), "%s: %s\n%s", mode, line, out);
        }
        /* G2: tuned, refused by AlgoCheck: untouched. G3: needs 1 GiB of
         * workspace, the call allows 32 MiB: untouched. */
        CHECK_MSG(has_line(out, "G2.1 n=3 algos=111,222,333 ran=111"), "%s: %s", mode, out);
        CHECK_MSG(has_line(out, "G3.1 n=3 algos=111,222,333 ran=111") &&
                      has_line(out, "G3.2 n=3 algos=111,222,333 ran=111"),
                  "%s: %s", mode, out);
        CHECK_MSG(strstr(out, "preference did not fit 1,") != NULL, "%s: %s", mode, out);
        /* G4 was tuned with beta 1: the first heuristic call cannot know
         * beta (1/0 assumed: not tuned); after its cublasLtMatmul it can. */
        CHECK_MSG(has_line(out, "G4.1 n=3 algos=111,222,333 ran=111"), "%s: %s", mode, out);
        CHECK_MSG(has_line(out, "G4.2 n=3 algos=55,111,222 ran=55"), "%s: %s", mode, out);
        CHECK_MSG(has_line(out, "G5.1 n=3 algos=111,222,333 ran=111"), "%s: %s", mode, out);
        CHECK_MSG(strstr(out, "tuned algo first 4") != NULL, "%s: %s", mode, out);
    }
    /* Another device model: everything passes through. */
    setenv("GEMMTUNE_DEVICE_MODEL", "OtherGPU", 1);
    CHECK(run_app("global", out, sizeof out) == 0);
    CHECK_MSG(has_line(out, "G1.1 n=3 algos=111,222,333 ran=111") &&
                  has_line(out, "G4.2 n=3 algos=111,222,333 ran=111"),
              "%s", out);
    /* A database that is not there: a warning, everything passes through. */
    setenv("GEMMTUNE_DB", tpath("missing.db"), 1);
    setenv("GEMMTUNE_DEVICE_MODEL", "FakeGPU", 1);
    CHECK(run_app("global", out, sizeof out) == 0);
    CHECK_MSG(has_line(out, "G1.1 n=3 algos=111,222,333 ran=111") && strstr(out, "GEMMTUNE_DB"),
              "%s", out);
    unsetenv("GEMMTUNE_DB");
    unsetenv("GEMMTUNE_DEVICE_MODEL");
    unsetenv("GEMMTUNE_VERBOSE");
    unsetenv("LD_PRELOAD");
}
#endif

/* ---- TunableOp and report ----------------------------------------------------------- */

static char *capture(int (*fn)(void *), void *arg, int *rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    FILE **slot = arg;
    *slot = f;
    *rc = fn(arg);
    fclose(f);
    return buf;
}

typedef struct tcall {
    FILE *out;
    const char *path;
    gt_tunableop_opts o;
    gt_tunableop_stats st;
    char err[512];
} tcall;

static int do_tunableop(void *a)
{
    tcall *c = a;
    return gt_report_tunableop(c->path, &c->o, c->out, NULL, &c->st, c->err, sizeof c->err);
}

static void test_tunableop(void)
{
    gt_problem p1b = P1, pbias = P1, prelu = P1, pmixed = P1;
    p1b.alpha = 2.0; /* same TunableOp signature as P1 */
    pbias.bias = 1;
    pbias.bias_type = GT_DT_BF16;
    pbias.m = 4096;
    pbias.ldc = pbias.ldd = 4096;
    prelu.activation[0] = 0;
    snprintf(prelu.activation, sizeof prelu.activation, "relu"); /* without bias */
    prelu.m = 1024;
    prelu.ldc = prelu.ldd = 1024;
    pmixed.d_type = pmixed.c_type = GT_DT_F32;
    pmixed.m = 2048;
    pmixed.ldc = pmixed.ldd = 2048;
    const best_row rows[] = {
        {&P1, "cuda", H100, k_cfg42, 10.0, 12.5, 0},
        {&p1b, "cuda", H100, "{\"algo_id\":7}", 9.0, 12.5, 0},
        {&P4, "cuda", H100, "{\"algo_id\":55,\"tile\":18}", 3.0, 3.0, 1},
        {&pbias, "cuda", H100, "{\"algo_id\":31,\"splitk\":2,\"reduction\":4}", 8.0, 9.0, 0},
        {&prelu, "cuda", H100, k_cfg42, 1.0, 2.0, 0},
        {&pmixed, "cuda", H100, k_cfg42, 1.0, 2.0, 0},
        {&P5, "cpu", "testcpu", k_cfg_cpu, 100.0, 150.0, 0},
    };
    const char *path = tpath("top.db");
    CHECK(make_export(path, rows, sizeof rows / sizeof rows[0]) == 0);

    tcall c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.o.pt_version = "2.12.0";
    c.o.cublaslt_version = "130100";
    c.o.cuda_device = "9.0:" H100;
    int rc = -1;
    char *csv = capture(do_tunableop, &c, &rc);
    CHECK_MSG(rc == 0, "%s", c.err);
    const char *want =
        "Validator,PT_VERSION,2.12.0\n"
        "Validator,CUBLASLT_VERSION,130100\n"
        "Validator,CUDA_DEVICE,9.0:" H100 "\n"
        "GemmTunableOp_BFloat16_TN,tn_6144_1_4096_ld_4096_4096_6144,"
        "Gemm_Cublaslt_id_42_tile_20_stages_35_splitk_1_red_0_swizzle_0_custom_0_inner_0_cluster_2,"
        "0.01\n"
        "GemmStridedBatchedTunableOp_tf32_TN,tn_128_64_32_B_4_ld_32_32_128,Default,0.003\n"
        "GemmAndBiasTunableOp_BFloat16_TN,tn_4096_1_4096_ld_4096_4096_4096,"
        "Gemm_Cublaslt_id_31_tile_0_stages_0_splitk_2_red_4_swizzle_0_custom_0_inner_0_cluster_0,"
        "0.008\n";
    CHECK_MSG(csv && !strcmp(csv, want), "got:\n%s\nwant:\n%s", csv ? csv : "(null)", want);
    CHECK(c.st.rows == 3 && c.st.tuned == 2 && c.st.merged == 1 && c.st.skipped == 2);
    free(csv);

    /* A best row that is its final's baseline is PyTorch's Default, unless
     * that baseline was a substitute (issue 18: the default could not run):
     * then its cuBLASLt configuration is named like any winner. */
    const best_row base_rows[] = {{&P1, "cuda", H100, k_cfg42, 10.0, 10.0, 1}};
    const char *bpath = tpath("base.db");
    CHECK(make_export(bpath, base_rows, 1) == 0);
    c.path = bpath;
    csv = capture(do_tunableop, &c, &rc);
    CHECK_MSG(rc == 0 && csv && strstr(csv, "GemmTunableOp_BFloat16_TN,tn_6144_1_4096_ld_4096_4096_6144,Default,0.01\n"),
              "%s", csv ? csv : c.err);
    free(csv);
    sqlite3 *bdb = NULL;
    CHECK(sqlite3_open(bpath, &bdb) == SQLITE_OK &&
          gt_test_sql(bdb, "UPDATE best SET baseline_kind = 'substitute', baseline_reason = 'no default'") == 0);
    sqlite3_close(bdb);
    csv = capture(do_tunableop, &c, &rc);
    CHECK_MSG(rc == 0 && csv &&
                  strstr(csv, "GemmTunableOp_BFloat16_TN,tn_6144_1_4096_ld_4096_4096_6144,"
                              "Gemm_Cublaslt_id_42_tile_20_stages_35_splitk_1_red_0_swizzle_0_custom_0_inner_0_cluster_2,"
                              "0.01\n") && c.st.tuned == 1,
              "%s", csv ? csv : c.err);
    free(csv);
    c.path = path;

    /* Default only, validators given verbatim (with CRs, other lines dropped). */
    memset(&c.o, 0, sizeof c.o);
    c.o.default_only = 1;
    c.o.validators = "Validator,PT_VERSION,2.5.1+cu124\r\nGemmTunableOp_float_NN,x,Default,1\n"
                     "Validator,CUBLASLT_VERSION,120804\n";
    csv = capture(do_tunableop, &c, &rc);
    CHECK_MSG(rc == 0, "%s", c.err);
    CHECK_MSG(csv && !strncmp(csv, "Validator,PT_VERSION,2.5.1+cu124\nValidator,CUBLASLT_VERSION,"
                                   "120804\nGemmTunableOp_BFloat16_TN,tn_6144_1_4096_ld_4096_4096_"
                                   "6144,Default,0.0125\n",
                              strlen("Validator,PT_VERSION,2.5.1+cu124\nValidator,CUBLASLT_VERSION,"
                                     "120804\nGemmTunableOp_BFloat16_TN,tn_6144_1_4096_ld_4096_4096_"
                                     "6144,Default,0.0125\n")),
              "%s", csv ? csv : "");
    CHECK(c.st.tuned == 0 && c.st.rows == 3);
    free(csv);

    /* Refusals: no PT_VERSION; cuBLASLt names without their validators. */
    memset(&c.o, 0, sizeof c.o);
    c.o.validators = "Validator,CUBLASLT_VERSION,1\n";
    free(capture(do_tunableop, &c, &rc));
    CHECK(rc == -1 && strstr(c.err, "PT_VERSION"));
    memset(&c.o, 0, sizeof c.o);
    c.o.pt_version = "2.12.0";
    free(capture(do_tunableop, &c, &rc));
    CHECK(rc == -1 && strstr(c.err, "CUBLASLT_VERSION"));
    memset(&c.o, 0, sizeof c.o);
    c.o.pt_version = "2.12.0";
    c.o.default_only = 1;
    c.o.device_model = "OtherGPU";
    free(capture(do_tunableop, &c, &rc));
    CHECK(rc == -1 && strstr(c.err, "OtherGPU"));
}

typedef struct rcall {
    FILE *out;
    const char *path, *model;
    char err[512];
} rcall;

static int do_report(void *a)
{
    rcall *c = a;
    return gt_report_print_db(c->path, c->model, c->out, c->err, sizeof c->err);
}

static void test_report(void)
{
    rcall c;
    memset(&c, 0, sizeof c);
    c.path = main_export();
    int rc = -1;
    char *txt = capture(do_report, &c, &rc);
    /* Two device models (and a CPU) in the file: one must be chosen. */
    CHECK(rc == -1 && strstr(c.err, "--device-model"));
    free(txt);
    c.model = H100;
    txt = capture(do_report, &c, &rc);
    CHECK_MSG(rc == 0, "%s", c.err);
    CHECK_MSG(txt && strstr(txt, "bf16 TN 6144x1x4096") && strstr(txt, "1.250x") &&
                  strstr(txt, "GEMMs tuned           1 of 5") &&
                  strstr(txt, "FLOP-weighted uplift  1.2500x") &&
                  strstr(txt, "workload speed-up     1.2500x"),
              "%s", txt ? txt : "");
    free(txt);
    c.model = "FakeGPU";
    txt = capture(do_report, &c, &rc);
    CHECK_MSG(rc == 0 && txt && strstr(txt, "GEMMs tuned           4 of 5"), "%s %s", c.err,
              txt ? txt : "");
    free(txt);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/gt-libgemmtune-XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    P1 = p_linear();
    P2 = p_padded();
    P3 = p_gelu();
    P4 = p_batched();
    P5 = p_cpu();
    RUN(test_open_errors);
    RUN(test_lookup);
    RUN(test_desc_keys);
    RUN(test_cuda_config);
    RUN(test_mapping);
    RUN(test_record_lines);
#ifdef GT_WITH_CUDA
    RUN(test_cuda_roundtrip);
    RUN(test_cublaslt_host);
#if defined(__SANITIZE_ADDRESS__) || GT_HAS_ASAN
    /* An instrumented shim cannot be LD_PRELOADed ahead of the ASan runtime. */
    fprintf(stderr, "sanitizer build: the LD_PRELOAD test is skipped\n");
#else
    RUN(test_preload_fake);
#endif
#else
    fprintf(stderr, "built without CUDA: the cuBLASLt parts and the preload shim are absent\n");
#endif
    RUN(test_tunableop);
    RUN(test_report);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (gt_test_failures == 0 && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_dir);
    return gt_test_done();
}
