/* test_cutlass_cfg.c: the "cutlass" family's configs (cuda/cutlass_cfg.c), the one mapping
 * the worker's search and libgemmtune's plan share.
 *   - which problems the family runs, each refusal naming why (transposes, types, batch,
 *     beta, epilogue, scales);
 *   - a config's JSON: canonical text (sorted keys, what a result is stored and hashed by),
 *     round trip, and each malformed field named;
 *   - a problem + config as the library's arguments;
 *   - with the built libgemmtune_cutlass ($GT_BUILD_DIR): the space of a compute-bound
 *     prefill GEMM (256-wide tiles first, every config accepted by its kernel's check, no
 *     config twice, the cap kept), of a GEMM with n = 128 (128-wide tiles first, 256-wide
 *     ones ranked out), of one whose rows are off CUTLASS's alignment (empty, CUTLASS's
 *     reason), and of a decode GEMM (n < 64: none). Host only: the SM count is given. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gt_cu_cutlass.h"
#include "gt_json.h"
#include "gt_test.h"

/* a Linear layer's GEMM as PyTorch calls cuBLAS: bf16 TN, f32 accumulation, beta 0 */
static gt_problem linear(int64_t m, int64_t n, int64_t k)
{
    gt_problem p;
    gt_problem_init(&p, m, n, k);
    p.trans_a = 'T', p.trans_b = 'N';
    p.a_type = p.b_type = p.c_type = p.d_type = GT_DT_BF16;
    p.compute_type = p.scale_type = GT_DT_F32;
    p.beta = 0;
    gt_problem_default_ld(&p);
    gt_problem_finish(&p);
    return p;
}

static void refused(const gt_problem *p, const char *needle)
{
    char err[256] = "";
    CHECK_MSG(gt_cu_cutlass_fits(p, err, sizeof err) == -1 && strstr(err, needle), "%s: %s", needle, err);
}

static void problem_rules(void)
{
    char err[256] = "";
    gt_problem p = linear(4096, 2048, 4096);
    CHECK_MSG(gt_cu_cutlass_fits(&p, err, sizeof err) == 0, "%s", err);
    gt_problem q = p;
    q.trans_a = 'N';
    gt_problem_default_ld(&q);
    refused(&q, "TN");
    q = p, q.a_type = q.b_type = q.c_type = q.d_type = GT_DT_F16;
    refused(&q, "bf16");
    q = p, q.d_type = GT_DT_F32;
    refused(&q, "bf16");
    q = p, q.compute_type = GT_DT_F16;
    refused(&q, "f32");
    q = p, q.batch = 4, q.stride_a = 4096LL * 4096, q.stride_b = 4096LL * 2048, q.stride_c = q.stride_d = 4096LL * 2048;
    refused(&q, "batched");
    q = p, q.beta = 1;
    refused(&q, "beta");
    q = p, q.bias = 1, q.bias_type = GT_DT_BF16;
    refused(&q, "bias");
    q = p;
    snprintf(q.activation, sizeof q.activation, "gelu");
    refused(&q, "activation");
    q = p, q.scale_a = GT_SCALE_SCALAR;
    refused(&q, "scales");
}

static void config_json(void)
{
    gt_cu_cutlass_cfg c = {"coop_256x128_c1x2", 4, 2, 1}, back;
    char err[256] = "";
    cJSON *j = gt_cu_cutlass_cfg_to_json(&c);
    char *text = gt_json_print(j);
    CHECK_MSG(text && !strcmp(text, "{\"family\":\"cutlass\",\"kernel\":\"coop_256x128_c1x2\",\"raster\":2,"
                                    "\"splits\":1,\"swizzle\":4}"),
              "%s", text ? text : "(null)");
    CHECK_MSG(gt_cu_cutlass_cfg_from_json(j, &back, err, sizeof err) == 0, "%s", err);
    CHECK(!strcmp(back.kernel, c.kernel) && back.swizzle == 4 && back.raster == 2 && back.splits == 1);
    free(text);
    cJSON_Delete(j);
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"{\"family\":\"mma\",\"kernel\":\"k\",\"raster\":0,\"splits\":1,\"swizzle\":1}", "\"family\""},
        {"{\"family\":\"cutlass\",\"raster\":0,\"splits\":1,\"swizzle\":1}", "\"kernel\""},
        {"{\"family\":\"cutlass\",\"kernel\":\"\",\"raster\":0,\"splits\":1,\"swizzle\":1}", "\"kernel\""},
        {"{\"family\":\"cutlass\",\"kernel\":\"k\",\"raster\":3,\"splits\":1,\"swizzle\":1}", "\"raster\""},
        {"{\"family\":\"cutlass\",\"kernel\":\"k\",\"raster\":0,\"splits\":0,\"swizzle\":1}", "\"splits\""},
        {"{\"family\":\"cutlass\",\"kernel\":\"k\",\"raster\":0,\"splits\":1,\"swizzle\":1.5}", "\"swizzle\""},
        {"{\"family\":\"cutlass\",\"kernel\":\"k\",\"raster\":0,\"splits\":1}", "\"swizzle\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *b = cJSON_Parse(bad[i].text);
        err[0] = 0;
        CHECK_MSG(gt_cu_cutlass_cfg_from_json(b, &back, err, sizeof err) == -1 && strstr(err, bad[i].needle),
                  "%s: %s", bad[i].text, err);
        cJSON_Delete(b);
    }
    /* the arguments: the problem's sizes and leading dimensions, the config's knobs */
    gt_problem p = linear(14336, 2048, 4096);
    gt_cutlass_args a;
    CHECK(gt_cu_cutlass_args_for(&p, &c, 132, &a, err, sizeof err) == 0);
    CHECK(a.m == 14336 && a.n == 2048 && a.k == 4096 && a.lda == 4096 && a.ldb == 4096 && a.ldd == 14336);
    CHECK(a.alpha == 1.0f && a.swizzle == 4 && a.raster == 2 && a.splits == 1 && a.sms == 132);
    CHECK(!a.a && !a.b && !a.d);
    p.beta = 1;
    CHECK(gt_cu_cutlass_args_for(&p, &c, 132, &a, err, sizeof err) == -1 && strstr(err, "beta"));
}

/* the built library, or NULL when this build has none */
static int open_built(gt_cu_cutlass *c)
{
    char path[4096], err[512];
    const char *b = getenv("GT_BUILD_DIR");
    snprintf(path, sizeof path, "%s/libgemmtune_cutlass.so", b ? b : ".");
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "  libgemmtune_cutlass not built here (no CUTLASS headers): its space not checked\n");
        return 0;
    }
    CHECK_MSG(gt_cu_cutlass_open(c, path, err, sizeof err) == 0, "%s", err);
    return c->dl != NULL;
}

static const gt_cutlass_kernel *kernel_of(const gt_cu_cutlass *c, const gt_cu_cutlass_cfg *cfg)
{
    int i = gt_cu_cutlass_find(c, cfg->kernel);
    return i >= 0 ? c->kernel_at(i) : NULL;
}

/* every config of s is accepted by its kernel's check and appears once */
static void all_accepted(const gt_cu_cutlass *c, const gt_problem *p, const gt_cu_cutlass_space *s)
{
    char err[256];
    for (int i = 0; i < s->n; i++) {
        gt_cutlass_args a;
        size_t ws;
        int k = gt_cu_cutlass_find(c, s->cfg[i].kernel);
        CHECK_MSG(k >= 0 && gt_cu_cutlass_args_for(p, &s->cfg[i], 132, &a, err, sizeof err) == 0 &&
                      c->check(k, &a, &ws, err, sizeof err) == 0,
                  "%s: %s", s->cfg[i].kernel, err);
        for (int j = 0; j < i; j++)
            CHECK_MSG(memcmp(&s->cfg[i], &s->cfg[j], sizeof s->cfg[i]) != 0, "config %d repeats %d", i, j);
    }
}

static void space(void)
{
    gt_cu_cutlass c;
    static gt_cu_cutlass_space s;
    memset(&c, 0, sizeof c);
    /* no library: no configs, and the reason */
    CHECK(gt_cu_cutlass_space_for(&c, NULL, 132, 24, &s) == 0 && s.n == 0 && strstr(s.why, "no libgemmtune_cutlass"));
    if (!open_built(&c))
        return;
    /* a compute-bound prefill GEMM: every kernel at the scheduler's defaults first (the
     * 128x128 tiles are within the model's reach of the 256-wide ones here), best first */
    gt_problem p = linear(14336, 2048, 4096);
    CHECK(gt_cu_cutlass_space_for(&c, &p, 132, 24, &s) == 0);
    CHECK_MSG(s.n == 24 && s.refused == 0, "%d configs, %d refused (%s)", s.n, s.refused, s.why);
    const gt_cutlass_kernel *k = s.n ? kernel_of(&c, &s.cfg[0]) : NULL;
    CHECK_MSG(k && k->tile_m * k->tile_n == 256 * 128, "first: %s", s.n ? s.cfg[0].kernel : "-");
    CHECK(s.cfg[0].swizzle == 1 && s.cfg[0].raster == 0 && s.cfg[0].splits == 1);
    all_accepted(&c, &p, &s);
    /* the cap holds, and a smaller one keeps the head of the same order */
    static gt_cu_cutlass_space s2;
    CHECK(gt_cu_cutlass_space_for(&c, &p, 132, 5, &s2) == 0 && s2.n == 5);
    CHECK(s2.n == 5 && !memcmp(s2.cfg, s.cfg, 5 * sizeof s.cfg[0]));
    /* n = 128: a 256-column tile computes half empty; the 128-wide tiles lead and the
     * 128x256 ones are ranked out */
    p = linear(4096, 128, 4096);
    CHECK(gt_cu_cutlass_space_for(&c, &p, 132, 64, &s) == 0 && s.n > 0 && s.pruned > 0);
    k = s.n ? kernel_of(&c, &s.cfg[0]) : NULL;
    CHECK_MSG(k && k->tile_n == 128, "first: %s", s.n ? s.cfg[0].kernel : "-");
    for (int i = 0; i < s.n; i++) {
        k = kernel_of(&c, &s.cfg[i]);
        CHECK_MSG(k && k->tile_n == 128, "%s kept at n = 128", s.cfg[i].kernel);
    }
    all_accepted(&c, &p, &s);
    /* stream-K with split-K where the tiles leave SMs idle (32 tiles on 132 SMs) */
    int splitk = 0;
    for (int i = 0; i < s.n; i++)
        splitk |= s.cfg[i].splits > 1;
    CHECK(splitk);
    /* rows of 4100 bf16 are off CUTLASS's 16-byte alignment: every kernel refuses, and the
     * space says why */
    p = linear(4096, 2048, 4100);
    CHECK(gt_cu_cutlass_space_for(&c, &p, 132, 24, &s) == 0);
    CHECK_MSG(s.n == 0 && s.refused > 0 && strstr(s.why, "alignment"), "%d configs: %s", s.n, s.why);
    /* a decode GEMM and a problem the family cannot run: none, with the reason */
    p = linear(4096, 16, 4096);
    CHECK(gt_cu_cutlass_space_for(&c, &p, 132, 24, &s) == 0 && s.n == 0 && strstr(s.why, "n = 16"));
    p = linear(4096, 2048, 4096);
    p.beta = 1;
    CHECK(gt_cu_cutlass_space_for(&c, &p, 132, 24, &s) == 0 && s.n == 0 && strstr(s.why, "beta"));
    gt_cu_cutlass_close(&c);
}

int main(int argc, char **argv)
{
    gt_test_mode(argc, argv);
    RUN(problem_rules);
    RUN(config_json);
    RUN(space);
    return gt_test_done();
}
