/* test_problem.c: the problem model: JSON round trips keep the canonical key
 * (what the coordinator sends is what the worker runs), hostile sizes are
 * refused before anything multiplies them, invariants name the field; fp8
 * OCP and FNUZ are distinct types, scale modes enter key and JSON only when
 * unusual (older keys unchanged), and the backends refuse FNUZ. */
#include <cjson/cJSON.h>
#include <string.h>

#include "gt_caps.h"
#include "gt_problem.h"
#include "gt_test.h"
#include "space_common.h"

static void roundtrip(const gt_problem *p)
{
    char err[256], k1[512], k2[512];
    cJSON *j = gt_problem_to_json(p);
    CHECK(j != NULL);
    gt_problem q;
    int rc = gt_problem_from_json(j, &q, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    gt_problem_key(p, k1, sizeof k1);
    gt_problem_key(&q, k2, sizeof k2);
    CHECK_MSG(strcmp(k1, k2) == 0, "%s != %s", k1, k2);
    CHECK(q.call_count == p->call_count);
    cJSON_Delete(j);
}

static void test_roundtrips(void)
{
    gt_problem p;
    gt_problem_init(&p, 96, 8, 64);
    p.trans_a = 'T';
    gt_problem_default_ld(&p);
    p.a_type = p.b_type = p.c_type = p.d_type = GT_DT_BF16;
    p.call_count = 7;
    gt_problem_finish(&p);
    roundtrip(&p);
    gt_problem_init(&p, 64, 16, 96);
    p.batch = 3;
    p.lda = 100;
    p.ldd = 80;
    p.ldc = 80;
    gt_problem_default_ld(&p);
    p.lda = 100;
    p.ldc = p.ldd = 80;
    p.stride_c = p.stride_d = 80 * 16;
    p.beta = 0.5;
    gt_problem_finish(&p);
    roundtrip(&p);
}

static void test_hostile(void)
{
    char err[256];
    gt_problem p;
    const char *bad[] = {
        "{\"m\":4000000000,\"n\":1,\"k\":4000000000,\"batch\":2}",
        "{\"m\":-1,\"n\":1,\"k\":1}",
        "{\"m\":1,\"n\":1,\"k\":1,\"batch\":0}",
        "{\"m\":16,\"n\":16,\"k\":16,\"lda\":1}",
        "{\"m\":16,\"n\":16,\"k\":16,\"a_type\":\"f13\"}",
        "{\"m\":1e300,\"n\":1,\"k\":1}",
        "{\"n\":1,\"k\":1}",
    };
    const char *field[] = {"m=", "m=", "batch=", "lda=", "a_type", "m", "m"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *j = cJSON_Parse(bad[i]);
        CHECK(j != NULL);
        int rc = gt_problem_from_json(j, &p, err, sizeof err);
        CHECK_MSG(rc == -1 && strstr(err, field[i]), "%s -> %s", bad[i], err);
        cJSON_Delete(j);
    }
}

/* An fp8 TN problem with bf16 output, the shape cuBLASLt's fp8 path takes. */
static gt_problem fp8_problem(gt_dtype a, gt_dtype b)
{
    gt_problem p;
    gt_problem_init(&p, 64, 16, 32);
    p.trans_a = 'T';
    p.a_type = a;
    p.b_type = b;
    p.c_type = p.d_type = GT_DT_BF16;
    gt_problem_default_ld(&p);
    gt_problem_finish(&p);
    return p;
}

static const char *key_of(const gt_problem *p)
{
    static char k[2][512];
    static int i;
    i ^= 1;
    gt_problem_key(p, k[i], sizeof k[i]);
    return k[i];
}

/* OCP and FNUZ fp8 are different types: names, sizes, parsing, keys. The
 * spellings that do not say the encoding read as OCP. */
static void test_fp8_types(void)
{
    const struct {
        gt_dtype t;
        const char *canon;
        const char *spellings[4];
    } want[] = {
        {GT_DT_F8E4M3, "f8e4m3", {"float8_e4m3fn", "R_8F_E4M3", "f8_r", "fp8"}},
        {GT_DT_F8E5M2, "f8e5m2", {"float8_e5m2", "R_8F_E5M2", "bf8_r", "bf8"}},
        {GT_DT_F8E4M3FNUZ,
         "f8e4m3fnuz",
         {"float8_e4m3fnuz", "f8_fnuz_r", "R_8F_E4M3_FNUZ", "F8E4M3FNUZ"}},
        {GT_DT_F8E5M2FNUZ,
         "f8e5m2fnuz",
         {"float8_e5m2fnuz", "bf8_fnuz_r", "R_8F_E5M2_FNUZ", "f8e5m2fnuz"}},
    };
    for (size_t i = 0; i < 4; i++) {
        CHECK(!strcmp(gt_dtype_name(want[i].t), want[i].canon));
        CHECK(gt_dtype_parse(want[i].canon) == want[i].t);
        CHECK(gt_dtype_size(want[i].t) == 1 && gt_dtype_is_f8(want[i].t));
        for (size_t j = 0; j < 4; j++)
            CHECK_MSG(gt_dtype_parse(want[i].spellings[j]) == want[i].t, "%s",
                      want[i].spellings[j]);
    }
    CHECK(!gt_dtype_is_f8(GT_DT_I8) && !gt_dtype_is_f8(GT_DT_BF16));
    gt_problem ocp = fp8_problem(GT_DT_F8E4M3, GT_DT_F8E4M3);
    gt_problem fnuz = fp8_problem(GT_DT_F8E4M3FNUZ, GT_DT_F8E4M3FNUZ);
    CHECK(strcmp(key_of(&ocp), key_of(&fnuz)) != 0);
    char err[256];
    CHECK_MSG(gt_problem_check(&fnuz, err, sizeof err) == 0, "%s", err);
    roundtrip(&fnuz);
    gt_problem mixed = fp8_problem(GT_DT_F8E5M2FNUZ, GT_DT_F8E4M3FNUZ);
    roundtrip(&mixed);
    char label[64];
    gt_problem_label(&fnuz, label, sizeof label);
    CHECK(!strcmp(label, "f8e4m3fnuz TN 64x16x32"));
}

/* Keys written before scales and FNUZ were modelled stay byte for byte. */
static void test_key_unchanged(void)
{
    gt_problem p;
    gt_problem_init(&p, 6144, 1, 4096);
    p.trans_a = 'T';
    p.a_type = p.b_type = p.c_type = p.d_type = GT_DT_BF16;
    gt_problem_default_ld(&p);
    CHECK_MSG(!strcmp(key_of(&p), "m=6144,n=1,k=4096,b=1,op=TN,ld=4096/4096/6144/6144,"
                                  "st=0/0/0/0,t=bf16/bf16/bf16/bf16,ct=f32,st=f32,"
                                  "ab=1/0,bias=0:-,act=none"),
              "%s", key_of(&p));
    p.scale_a = p.scale_b = GT_SCALE_NONE; /* what hipBLASLt's scaleA: 0 sets */
    CHECK(strstr(key_of(&p), "scale") == NULL);
    gt_problem f = fp8_problem(GT_DT_F8E4M3, GT_DT_F8E5M2);
    CHECK_MSG(!strcmp(key_of(&f), "m=64,n=16,k=32,b=1,op=TN,ld=32/32/64/64,st=0/0/0/0,"
                                  "t=f8e4m3/f8e5m2/bf16/bf16,ct=f32,st=f32,ab=1/0,bias=0:-,"
                                  "act=none"),
              "%s", key_of(&f));
    /* The JSON of such problems carries no scale fields either. */
    cJSON *j = gt_problem_to_json(&p);
    CHECK(j && !cJSON_GetObjectItem(j, "scale_a") && !cJSON_GetObjectItem(j, "scale_b"));
    cJSON_Delete(j);
}

/* Scale modes: per-tensor is fp8's usual mode (same key and spec as a
 * problem that never set one, as libgemmtune's), none on fp8 is another
 * GEMM, and scales on other types or unknown modes are refused. */
static void test_scales(void)
{
    gt_problem a = fp8_problem(GT_DT_F8E4M3, GT_DT_F8E4M3), b = a;
    b.scale_a = b.scale_b = GT_SCALE_SCALAR;
    CHECK(gt_problem_scale(&a, 'a') == GT_SCALE_SCALAR &&
          gt_problem_scale(&a, 'b') == GT_SCALE_SCALAR);
    CHECK(!strcmp(key_of(&a), key_of(&b)));
    b.scale_a = GT_SCALE_NONE;
    CHECK(strcmp(key_of(&a), key_of(&b)) != 0);
    CHECK(strstr(key_of(&b), ",scale=none/scalar") != NULL);
    roundtrip(&b);
    cJSON *j = gt_problem_to_json(&b);
    const cJSON *v = j ? cJSON_GetObjectItem(j, "scale_a") : NULL;
    CHECK(cJSON_IsString(v) && !strcmp(v->valuestring, "none"));
    cJSON_Delete(j);
    CHECK(!strcmp(gt_scale_name(GT_SCALE_SCALAR), "scalar") &&
          !strcmp(gt_scale_name(GT_SCALE_NONE), "none"));

    char err[256];
    gt_problem c;
    gt_problem_init(&c, 16, 16, 16);
    CHECK(gt_problem_scale(&c, 'a') == GT_SCALE_NONE);
    c.scale_b = GT_SCALE_SCALAR;
    CHECK(gt_problem_check(&c, err, sizeof err) == -1 && strstr(err, "scale_b=scalar") &&
          strstr(err, "fp8 operands only"));
    c.scale_b = (gt_scale_mode)9;
    CHECK(gt_problem_check(&c, err, sizeof err) == -1 && strstr(err, "scale_b=9"));
    const char *bad[] = {
        "{\"m\":16,\"n\":16,\"k\":16,\"scale_a\":\"vector\"}",
        "{\"m\":16,\"n\":16,\"k\":16,\"scale_b\":1}",
        "{\"m\":16,\"n\":16,\"k\":16,\"scale_a\":\"scalar\"}",
    };
    const char *field[] = {"scale_a", "scale_b", "scale_a=scalar"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *bj = cJSON_Parse(bad[i]);
        CHECK(bj != NULL);
        gt_problem q;
        int rc = gt_problem_from_json(bj, &q, err, sizeof err);
        CHECK_MSG(rc == -1 && strstr(err, field[i]), "%s -> %s", bad[i], err);
        cJSON_Delete(bj);
    }
}

/* The backends that cannot run FNUZ fp8 say so (cpu, the generated
 * families, cuda's cuBLASLt, which has no FNUZ type) rather than tuning
 * another GEMM. */
static void test_fnuz_refused(void)
{
    char err[256];
    gt_problem p = fp8_problem(GT_DT_F8E4M3FNUZ, GT_DT_F8E4M3FNUZ);
    CHECK(gt_caps_check("cpu", &p, err, sizeof err) == -1 && strstr(err, "f8e4m3fnuz"));
    CHECK(gt_caps_check("cuda", &p, err, sizeof err) == -1 && strstr(err, "f8e4m3fnuz"));
    /* neither the 16-bit families nor gemv's fp8 path (OCP only) */
    CHECK(gt_gen_types_reason(&p, 0, err, sizeof err) == -1 && strstr(err, "f8e4m3fnuz"));
    CHECK(gt_gen_types_reason(&p, 1, err, sizeof err) == -1 && strstr(err, "f8e4m3fnuz"));
    p = fp8_problem(GT_DT_F8E5M2FNUZ, GT_DT_F8E5M2FNUZ);
    CHECK(gt_caps_check("cpu", &p, err, sizeof err) == -1 && strstr(err, "f8e5m2fnuz"));
    CHECK(gt_caps_check("cuda", &p, err, sizeof err) == -1 && strstr(err, "f8e5m2fnuz"));
    /* neither the 16-bit families nor gemv's fp8 path (OCP only) */
    CHECK(gt_gen_types_reason(&p, 0, err, sizeof err) == -1 && strstr(err, "f8e5m2fnuz"));
    CHECK(gt_gen_types_reason(&p, 1, err, sizeof err) == -1 && strstr(err, "f8e5m2fnuz"));
}

/* gt_problem_init_tn: the decode layout, leading dimensions and flops of
 * the shape it was given; its JSON round trip keeps its key. */
static void test_init_tn(void)
{
    gt_problem p;
    gt_problem_init_tn(&p, 4096, 16, 1024, GT_DT_F8E4M3, GT_DT_BF16);
    CHECK(p.trans_a == 'T' && p.trans_b == 'N');
    CHECK(p.a_type == GT_DT_F8E4M3 && p.b_type == GT_DT_F8E4M3);
    CHECK(p.c_type == GT_DT_BF16 && p.d_type == GT_DT_BF16);
    CHECK(p.compute_type == GT_DT_F32 && p.scale_type == GT_DT_F32);
    CHECK(p.lda == 1024 && p.ldb == 1024 && p.ldc == 4096 && p.ldd == 4096);
    CHECK(p.flops == 2.0 * 4096 * 16 * 1024);
    CHECK(p.alpha == 1.0 && p.beta == 0.0 && p.batch == 1 && p.call_count == 1);
    roundtrip(&p);
}

int main(void)
{
    RUN(test_roundtrips);
    RUN(test_init_tn);
    RUN(test_hostile);
    RUN(test_fp8_types);
    RUN(test_key_unchanged);
    RUN(test_scales);
    RUN(test_fnuz_refused);
    return gt_test_done();
}
