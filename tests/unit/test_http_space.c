/* test_http_space.c: the generated families' pruned spaces as the API shows
 * them (server/space_view.c, server/store_space.c; the HTTP route itself is
 * tests/integration/test_space.sh). Proven here, without a GPU:
 *   - the view is the worker's space: for sm_90 with 132 SMs and the default
 *     caps, the kept configs, in rank order, are exactly gt_gen_prune's and
 *     gt_mma_prune's (the calls worker/cuda/gen_run.c makes), and the
 *     pruned examples are their pruned lists with the same reasons, in the
 *     same order, on decode, misaligned, prefill, batched and epilogue
 *     problems and one neither family applies to;
 *   - the counts add up: kept + pruned == raw, by_rule sums to pruned and
 *     equals a count of the reasons' rules; ?rule= keeps only that rule and
 *     "matching" is its by_rule count; offset/limit pages cover the list;
 *   - a rule's name is the reason's text before ':' or '=';
 *   - the verdict on one config: kept (with its rank), pruned by the rule
 *     that prunes it (kwarps not dividing warps, a misaligned lda, the rank
 *     cap, a tile on a misaligned problem), a config outside the raw space
 *     checked by the same rules, an inapplicable family, and refusals of
 *     library, unknown and malformed configs;
 *   - the store finds the problem by id or key, the run's backend and model,
 *     and the newest worker of that backend and model only;
 *   - a worker's registered limits (gen_device) are used exactly: the space
 *     is gen's with that device and differs from the defaults'; another
 *     arch asked for, an older worker or an unreadable text fall back to
 *     the defaults; GET /v1/workers rows carry gen_device. */
#include "gen_dev.h"
#include "gen_mma.h"
#include "gt_config.h"
#include "gt_space.h"
#include "gt_store_space.h"
#include "gen_test_util.h"
#include "gt_test.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* bf16 TN, tight leading dimensions (gen_test_util.c). */
static gt_problem mk(int64_t m, int64_t n, int64_t k)
{
    return gen_test_prob(m, n, k, GT_DT_BF16, GT_DT_BF16);
}

static gt_problem misaligned(void)
{
    gt_problem p = mk(4096, 8, 4096);
    p.lda = 4100; /* a multiple of 4, not of 8: gemv vec=8 and every mma config pruned */
    gt_problem_finish(&p);
    return p;
}

static gt_problem batched_epilogue(void)
{
    gt_problem p = mk(3000, 5, 1000);
    p.batch = 2;
    p.a_type = p.b_type = GT_DT_F16;
    p.c_type = p.d_type = GT_DT_F32;
    p.bias = 1;
    p.bias_type = GT_DT_F16;
    snprintf(p.activation, sizeof p.activation, "gelu");
    gt_problem_default_ld(&p);
    gt_problem_finish(&p);
    return p;
}

static cJSON *space(const gt_problem *p, const gt_gen_dev *d, int fams, const char *rule,
                    int offset, int limit)
{
    char err[256];
    gt_spview_query q = {.families = fams, .rule = rule, .offset = offset, .limit = limit};
    cJSON *o = cJSON_CreateObject();
    if (!o || gt_spview_add_families(o, p, d, &q, err, sizeof err) != 0) {
        fprintf(stderr, "space: %s\n", err);
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static const cJSON *at(const cJSON *o, const char *a, const char *b, const char *c)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        x = cJSON_GetObjectItemCaseSensitive(x, b);
    if (c)
        x = cJSON_GetObjectItemCaseSensitive(x, c);
    return x;
}

static int num(const cJSON *o, const char *a, const char *b, const char *c)
{
    const cJSON *x = at(o, a, b, c);
    return cJSON_IsNumber(x) ? x->valueint : -1;
}

/* The canonical text of a JSON config equals gt_*_cfg_text's (gen_gemv.h). */
static int cfg_is(const cJSON *cfg, const char *text)
{
    char *t = gt_cfg_canonical(cfg);
    int eq = t && !strcmp(t, text);
    free(t);
    return eq;
}

static void rule_names(void)
{
    char r[GT_SPACE_RULE_LEN];
    gt_spview_rule("alignment: lda=4100, ldb=4096 not all multiples", r, sizeof r);
    CHECK(!strcmp(r, "alignment"));
    gt_spview_rule("n_tile=8 < n=32: A would be streamed", r, sizeof r);
    CHECK(!strcmp(r, "n_tile"));
    gt_spview_rule("split-K: splitk=4 leaves empty splits", r, sizeof r);
    CHECK(!strcmp(r, "split-K"));
    gt_spview_rule("in flight: 1.9 KiB", r, sizeof r);
    CHECK(!strcmp(r, "in flight"));
    gt_spview_rule("rank: 49 of 200", r, sizeof r);
    CHECK(!strcmp(r, "rank"));
    gt_spview_rule("no separator at all", r, 4);
    CHECK(!strcmp(r, "no "));
}

/* One family of one problem against gen/'s own answer. */
static void family_matches(const gt_problem *p, const gt_gen_dev *d, int fam)
{
    const char *name = fam == GT_SPACE_GEMV ? "gemv" : "mma";
    gt_gen_space gs;
    gt_mma_space ms;
    memset(&gs, 0, sizeof gs);
    memset(&ms, 0, sizeof ms);
    int rc = fam == GT_SPACE_GEMV ? gt_gen_prune(p, d, GT_GEN_DEFAULT_CAP, &gs)
                                  : gt_mma_prune(p, d, GT_MMA_DEFAULT_CAP, &ms);
    CHECK(rc == 0);
    int raw = fam == GT_SPACE_GEMV ? gs.raw : ms.raw;
    int nkeep = fam == GT_SPACE_GEMV ? gs.nkeep : ms.nkeep;
    int npruned = fam == GT_SPACE_GEMV ? gs.npruned : ms.npruned;
    const char *why = fam == GT_SPACE_GEMV ? gs.why : ms.why;
    cJSON *o = space(p, d, fam, NULL, 0, GT_SPACE_LIMIT_MAX);
    CHECK(o != NULL);
    if (!o)
        goto out;
    const cJSON *f = at(o, "families", name, NULL);
    CHECK(f && !at(o, "families", fam == GT_SPACE_GEMV ? "mma" : "gemv", NULL));
    CHECK(cJSON_IsBool(at(f, "applicable", NULL, NULL)) &&
          cJSON_IsTrue(at(f, "applicable", NULL, NULL)) == (why[0] == '\0'));
    if (why[0])
        CHECK(!strcmp(cJSON_GetStringValue(at(f, "reason", NULL, NULL)), why));
    CHECK(num(f, "cap", NULL, NULL) == (fam == GT_SPACE_GEMV ? GT_GEN_DEFAULT_CAP : GT_MMA_DEFAULT_CAP));
    CHECK_MSG(num(f, "raw", NULL, NULL) == raw && num(f, "kept", "count", NULL) == nkeep &&
                  num(f, "pruned", "count", NULL) == npruned,
              "%s: raw %d kept %d pruned %d", name, raw, nkeep, npruned);
    CHECK(nkeep + npruned == raw);
    /* kept: the same configs in the same (rank) order */
    const cJSON *kept = at(f, "kept", "configs", NULL);
    CHECK(cJSON_GetArraySize(kept) == nkeep);
    int i = 0, same = 1;
    char text[256];
    const cJSON *e;
    cJSON_ArrayForEach(e, kept)
    {
        if (fam == GT_SPACE_GEMV)
            gt_gen_cfg_text(&gs.keep[i], text, sizeof text);
        else
            gt_mma_cfg_text(&ms.keep[i], text, sizeof text);
        same &= cfg_is(at(e, "config", NULL, NULL), text) && num(e, "rank", NULL, NULL) == i + 1 &&
                cJSON_IsNumber(at(e, "model_us", NULL, NULL));
        i++;
    }
    CHECK_MSG(same, "%s: kept list differs from gen's", name);
    /* by_rule sums to pruned and is the count of the reasons' rules */
    const cJSON *by = at(f, "pruned", "by_rule", NULL);
    int sum = 0, counted_ok = 1;
    cJSON_ArrayForEach(e, by)
    {
        int n = 0;
        char r[GT_SPACE_RULE_LEN];
        for (int j = 0; j < npruned; j++) {
            gt_spview_rule(fam == GT_SPACE_GEMV ? gs.pruned[j].reason : ms.pruned[j].reason, r,
                          sizeof r);
            n += !strcmp(r, e->string);
        }
        counted_ok &= n == e->valueint;
        sum += e->valueint;
    }
    CHECK_MSG(sum == npruned && counted_ok, "%s: by_rule sums to %d of %d", name, sum, npruned);
    /* examples: gen's pruned list, reasons and all, up to the limit */
    const cJSON *ex = at(f, "pruned", "examples", NULL);
    int want = npruned < GT_SPACE_LIMIT_MAX ? npruned : GT_SPACE_LIMIT_MAX;
    CHECK(cJSON_GetArraySize(ex) == want && num(f, "pruned", "matching", NULL) == npruned);
    i = 0;
    same = 1;
    cJSON_ArrayForEach(e, ex)
    {
        const char *reason = fam == GT_SPACE_GEMV ? gs.pruned[i].reason : ms.pruned[i].reason;
        if (fam == GT_SPACE_GEMV)
            gt_gen_cfg_text(&gs.pruned[i].cfg, text, sizeof text);
        else
            gt_mma_cfg_text(&ms.pruned[i].cfg, text, sizeof text);
        same &= cfg_is(at(e, "config", NULL, NULL), text) &&
                !strcmp(cJSON_GetStringValue(at(e, "reason", NULL, NULL)), reason);
        i++;
    }
    CHECK_MSG(same, "%s: pruned examples differ from gen's", name);
out:
    cJSON_Delete(o);
    gt_gen_space_free(&gs);
    gt_mma_space_free(&ms);
}

static void matches_worker(void)
{
    gt_gen_dev d;
    gt_gen_dev_default(&d, 90, 132); /* what gt_cuda_gen_device starts from on an H100 */
    gt_problem ps[] = {mk(4096, 1, 4096), mk(14336, 16, 4096), misaligned(), mk(4096, 512, 4096),
                       batched_epilogue(), mk(1024, 64, 1024)};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        family_matches(&ps[i], &d, GT_SPACE_GEMV);
        family_matches(&ps[i], &d, GT_SPACE_MMA);
    }
    /* n = 512: gemv does not apply, mma does */
    cJSON *o = space(&ps[3], &d, GT_SPACE_ALL, NULL, 0, 10);
    CHECK(o && cJSON_IsFalse(at(o, "families", "gemv", "applicable")) &&
          num(o, "families", "gemv", "raw") == 0 && cJSON_IsTrue(at(o, "families", "mma", "applicable")));
    cJSON_Delete(o);
    /* an sm_75 device: neither applies */
    gt_gen_dev_default(&d, 75, 40);
    o = space(&ps[0], &d, GT_SPACE_ALL, NULL, 0, 10);
    CHECK(o && cJSON_IsFalse(at(o, "families", "gemv", "applicable")) &&
          cJSON_IsFalse(at(o, "families", "mma", "applicable")) &&
          strstr(cJSON_GetStringValue(at(o, "families", "mma", "reason")), "sm_80"));
    cJSON_Delete(o);
}

static void filter_and_pages(void)
{
    gt_gen_dev d;
    gt_gen_dev_default(&d, 90, 132);
    gt_problem p = misaligned();
    cJSON *o = space(&p, &d, GT_SPACE_GEMV, "alignment", 0, 7);
    const cJSON *pr = at(o, "families", "gemv", "pruned");
    int n = num(pr, "by_rule", "alignment", NULL);
    CHECK(o && n > 7);
    CHECK(num(pr, "matching", NULL, NULL) == n && num(pr, "limit", NULL, NULL) == 7 &&
          !strcmp(cJSON_GetStringValue(at(pr, "rule", NULL, NULL)), "alignment"));
    const cJSON *e;
    int all = 1;
    cJSON_ArrayForEach(e, at(pr, "examples", NULL, NULL))
        all &= !strcmp(cJSON_GetStringValue(at(e, "rule", NULL, NULL)), "alignment") &&
               !strncmp(cJSON_GetStringValue(at(e, "reason", NULL, NULL)), "alignment: lda=4100", 19);
    CHECK(cJSON_GetArraySize(at(pr, "examples", NULL, NULL)) == 7 && all);
    /* pages of 7 cover the same list as one page of GT_SPACE_LIMIT_MAX (the
     * first 1000 of the alignment rule's 2916) */
    cJSON *whole = space(&p, &d, GT_SPACE_GEMV, "alignment", 0, GT_SPACE_LIMIT_MAX);
    const cJSON *wex = at(whole, "families", "gemv", "pruned");
    wex = at(wex, "examples", NULL, NULL);
    int w = n < GT_SPACE_LIMIT_MAX ? n : GT_SPACE_LIMIT_MAX;
    int same = cJSON_GetArraySize(wex) == w;
    for (int off = 0; off < w && same; off += 7) {
        cJSON *pg = space(&p, &d, GT_SPACE_GEMV, "alignment", off, 7);
        const cJSON *ex = at(at(pg, "families", "gemv", "pruned"), "examples", NULL, NULL);
        int k = 0;
        cJSON_ArrayForEach(e, ex)
        {
            if (off + k < w) { /* the whole page ends at w */
                char *a = cJSON_PrintUnformatted(e);
                char *b = cJSON_PrintUnformatted(cJSON_GetArrayItem(wex, off + k));
                same &= a && b && !strcmp(a, b);
                free(a);
                free(b);
            }
            k++;
        }
        same &= k == (n - off < 7 ? n - off : 7);
        same &= num(at(pg, "families", "gemv", "pruned"), "offset", NULL, NULL) == off;
        cJSON_Delete(pg);
    }
    CHECK(same);
    cJSON_Delete(whole);
    cJSON_Delete(o);
    /* a rule nothing is pruned by: no examples, counts unchanged */
    o = space(&p, &d, GT_SPACE_GEMV, "no-such-rule", 0, 50);
    pr = at(o, "families", "gemv", "pruned");
    CHECK(num(pr, "matching", NULL, NULL) == 0 && cJSON_GetArraySize(at(pr, "examples", NULL, NULL)) == 0 &&
          num(pr, "count", NULL, NULL) > 0);
    cJSON_Delete(o);
}

/* The verdict on cfg (JSON text) for p on d; NULL when refused (rc 1). */
static cJSON *verdict(const gt_problem *p, const gt_gen_dev *d, const char *cfg, int *rc)
{
    char err[256];
    cJSON *c = cJSON_Parse(cfg), *o = cJSON_CreateObject();
    *rc = c && o ? gt_spview_add_verdict(o, p, d, c, err, sizeof err) : -1;
    cJSON_Delete(c);
    if (*rc != 0) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static const char *str(const cJSON *o, const char *k)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
    return s ? s : "";
}

static int is_true(const cJSON *o, const char *k)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static void verdicts(void)
{
    gt_gen_dev d;
    gt_gen_dev_default(&d, 90, 132);
    gt_problem p = mk(4096, 1, 4096), bad = misaligned();
    gt_gen_space gs;
    gt_mma_space ms;
    int rc;
    CHECK(gt_gen_prune(&p, &d, GT_GEN_DEFAULT_CAP, &gs) == 0 && gs.nkeep > 3);
    CHECK(gt_mma_prune(&p, &d, GT_MMA_DEFAULT_CAP, &ms) == 0 && ms.nkeep > 3);
    /* kept, with its rank */
    cJSON *tj = gt_gen_cfg_to_json(&gs.keep[2]);
    char *t = cJSON_PrintUnformatted(tj);
    cJSON *v = verdict(&p, &d, t, &rc);
    CHECK(v && is_true(v, "kept") && num(v, "rank", NULL, NULL) == 3 && is_true(v, "runnable") &&
          is_true(v, "in_raw") && !cJSON_GetObjectItem(v, "reason") && !strcmp(str(v, "family"), "gemv"));
    cJSON_Delete(v);
    /* kwarps not dividing warps: the shape rule; not runnable */
    cJSON_ReplaceItemInObject(tj, "kwarps", cJSON_CreateNumber(3));
    free(t);
    t = cJSON_PrintUnformatted(tj);
    v = verdict(&p, &d, t, &rc);
    CHECK(v && !is_true(v, "kept") && !strcmp(str(v, "rule"), "shape") &&
          strstr(str(v, "reason"), "kwarps=3 does not divide") && !is_true(v, "runnable") &&
          !is_true(v, "in_raw"));
    cJSON_Delete(v);
    /* a raw-space config that fits n = 8 with vec=8 on a misaligned lda:
     * alignment */
    char text[256];
    gt_gen_cfg c = {.rows_per_cta = 16, .warps = 4, .kwarps = 4, .vec = 8, .k_unroll = 2, .splitk = 1,
                    .n_tile = 8, .a_load = GT_GEN_LD_NA256, .pipe = GT_GEN_PIPE_REG};
    c.vec = 8;
    gt_gen_cfg_text(&c, text, sizeof text);
    v = verdict(&bad, &d, text, &rc);
    CHECK(v && !is_true(v, "kept") && !strcmp(str(v, "rule"), "alignment") &&
          strstr(str(v, "reason"), "lda=4100") && is_true(v, "in_raw"));
    cJSON_Delete(v);
    /* beyond the cap: pruned by rank, but a worker builds it as a candidate */
    int r = -1;
    for (int i = 0; i < gs.npruned && r < 0; i++)
        if (!strncmp(gs.pruned[i].reason, "rank:", 5))
            r = i;
    CHECK(r >= 0);
    gt_gen_cfg_text(&gs.pruned[r].cfg, text, sizeof text);
    v = verdict(&p, &d, text, &rc);
    CHECK(v && !is_true(v, "kept") && !strcmp(str(v, "rule"), "rank") &&
          !strcmp(str(v, "reason"), gs.pruned[r].reason) && is_true(v, "runnable"));
    cJSON_Delete(v);
    /* outside the raw space (k_unroll 3 is never enumerated), yet no rule
     * prunes it: not kept, runnable */
    c = gs.keep[0];
    c.k_unroll = 3;
    char why[GT_GEN_REASON];
    CHECK(gt_gen_check(&p, &d, &c, why, sizeof why) == 0);
    gt_gen_cfg_text(&c, text, sizeof text);
    v = verdict(&p, &d, text, &rc);
    CHECK(v && !is_true(v, "kept") && !strcmp(str(v, "rule"), "raw space") && !is_true(v, "in_raw") &&
          is_true(v, "runnable"));
    cJSON_Delete(v);
    /* mma: kept; on the misaligned problem, alignment */
    gt_mma_cfg_text(&ms.keep[0], text, sizeof text);
    v = verdict(&p, &d, text, &rc);
    CHECK(v && is_true(v, "kept") && num(v, "rank", NULL, NULL) == 1 && !strcmp(str(v, "family"), "mma"));
    cJSON_Delete(v);
    v = verdict(&bad, &d, text, &rc);
    CHECK(v && !is_true(v, "kept") && !strcmp(str(v, "rule"), "alignment"));
    cJSON_Delete(v);
    /* gemv on n = 64: the family does not apply */
    gt_problem wide = mk(1024, 64, 1024);
    gt_gen_cfg_text(&gs.keep[0], text, sizeof text);
    v = verdict(&wide, &d, text, &rc);
    CHECK(v && !is_true(v, "kept") && cJSON_IsFalse(cJSON_GetObjectItem(v, "applicable")) &&
          strstr(str(v, "reason"), "n=64 > 32"));
    cJSON_Delete(v);
    /* refused: a cuBLASLt config, an unknown family, a missing attribute, not an object */
    CHECK(!verdict(&p, &d, "{\"algo_id\":66,\"tile\":20}", &rc) && rc == 1);
    CHECK(!verdict(&p, &d, "{\"family\":\"triton\"}", &rc) && rc == 1);
    CHECK(!verdict(&p, &d, "{\"family\":\"gemv\",\"vec\":8}", &rc) && rc == 1);
    CHECK(!verdict(&p, &d, "[1]", &rc) && rc == 1);
    free(t);
    cJSON_Delete(tj);
    gt_gen_space_free(&gs);
    gt_mma_space_free(&ms);
}

static int64_t new_run(gt_store *s, const char *backend, const char *model)
{
    static const char log[] =
        "- {function: matmul, M: 4096, N: 1, K: 4096, transA: T, transB: N, a_type: bf16_r, "
        "b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, compute_type: c_f32_r, call_count: 5}\n";
    char err[256];
    gt_run_opts o;
    gt_log_result res;
    gt_run_created cr = {0};
    gt_run_opts_default(&o);
    snprintf(o.backend, sizeof o.backend, "%s", backend);
    snprintf(o.device_model, sizeof o.device_model, "%s", model);
    int ok = gt_log_parse(log, sizeof log - 1, &o.log, &res) == 0 &&
             gt_test_create_run(s, &o, &res, &cr, err, sizeof err) == 0;
    gt_log_result_free(&res); /* in both cases (gt_log.h) */
    gt_run_opts_fini(&o);
    return ok ? cr.id : -1;
}

static void store_target(void)
{
    char dir[] = "/tmp/gt-space.XXXXXX", path[256], err[512], id[32];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/c.db", dir);
    gt_store *s = gt_store_open(path, err, sizeof err);
    CHECK_MSG(s, "%s", err);
    if (!s)
        return;
    int64_t run = new_run(s, "cuda", "H100"), unbound = new_run(s, "cuda", "");
    CHECK(run > 0 && unbound > 0);
    gt_spview_target t;
    CHECK(gt_store_space_target(s, run, "1", &t, err, sizeof err) == 0);
    CHECK(t.problem_id == 1 && !strcmp(t.backend, "cuda") && !strcmp(t.device_model, "H100") &&
          t.worker_id == 0 && t.spec && t.spec[0] == '{' && t.key && !strncmp(t.key, "m=4096,n=1,", 11));
    char key[512];
    snprintf(key, sizeof key, "%s", t.key ? t.key : "");
    gt_spview_target_fini(&t);
    /* workers: another model, another backend, then two of the model (the
     * newer heartbeat wins) */
    CHECK(gt_test_store_sql(s, "INSERT INTO workers (host, pid, device_index, backend, device_model, arch,"
                  " mem_bytes, units, driver, version, state, registered_ms, last_heartbeat_ms) VALUES"
                  " ('a', 1, 0, 'cuda', 'A100', 'sm_80', 1, 108, 'd', 'v', 'idle', 1, 50),"
                  " ('b', 1, 0, 'hip', 'H100', 'gfx90a', 1, 104, 'd', 'v', 'idle', 1, 60),"
                  " ('c', 1, 0, 'cuda', 'H100', 'sm_90', 1, 114, 'd', 'v', 'gone', 1, 30),"
                  " ('d', 1, 0, 'cuda', 'H100', 'sm_90', 1, 132, 'd', 'v', 'gone', 1, 40);") == 0);
    CHECK(gt_store_space_target(s, run, key, &t, err, sizeof err) == 0);
    CHECK(t.problem_id == 1 && t.worker_id == 4 && !strcmp(t.arch, "sm_90") && t.units == 132);
    gt_spview_target_fini(&t);
    /* an unbound run matches no worker */
    snprintf(id, sizeof id, "%d", 2);
    CHECK(gt_store_space_target(s, unbound, id, &t, err, sizeof err) == 0);
    CHECK(t.worker_id == 0 && t.device_model[0] == '\0');
    gt_spview_target_fini(&t);
    /* what is missing */
    CHECK(gt_store_space_target(s, run, "2", &t, err, sizeof err) == GT_STORE_NO_PROBLEM);
    CHECK(gt_store_space_target(s, run, "m=1", &t, err, sizeof err) == GT_STORE_NO_PROBLEM);
    CHECK(gt_store_space_target(s, 999, "1", &t, err, sizeof err) == GT_STORE_NO_RUN);
    CHECK(t.key == NULL && t.spec == NULL);
    gt_store_close(s);
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    CHECK(system(path) == 0);
}

/* The kept configs of both families for p on d, as canonical texts joined. */
static char *kept_text(const cJSON *o)
{
    cJSON *k = cJSON_CreateArray();
    cJSON_AddItemReferenceToArray(k, (cJSON *)at(o, "families", "gemv", NULL));
    cJSON_AddItemReferenceToArray(k, (cJSON *)at(o, "families", "mma", NULL));
    char *t = cJSON_PrintUnformatted(k);
    cJSON_Delete(k);
    return t;
}

/* A worker that registered with its own limits (gen_device, through the
 * store's register call as dispatch.c makes it): the store hands them back
 * for the run's problems, gt_spview_device uses them exactly (limits_from
 * "worker"), and the space is gt_gen_prune's / gt_mma_prune's with that
 * device, which differs from the defaults' (smem_optin of an sm_86, 2 %
 * more DRAM bandwidth). ?arch= of another arch falls back to its defaults;
 * ?sms= still wins; a stored text that does not parse is ignored, said. */
static void worker_limits(void)
{
    char dir[] = "/tmp/gt-space-lim.XXXXXX", path[256], err[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/c.db", dir);
    gt_store *s = gt_store_open(path, err, sizeof err);
    CHECK_MSG(s, "%s", err);
    if (!s)
        return;
    int64_t run = new_run(s, "cuda", "H100");
    gt_gen_dev wd, def;
    gt_gen_dev_default(&def, 90, 114);
    wd = def;
    wd.dram_bw = def.dram_bw * 1.02 + 12345.678;
    wd.smem_optin = 101376;
    wd.smem_sm = 102400;
    gt_worker_info w;
    memset(&w, 0, sizeof w);
    snprintf(w.host, sizeof w.host, "gpu1");
    snprintf(w.backend, sizeof w.backend, "cuda");
    snprintf(w.device_model, sizeof w.device_model, "H100");
    snprintf(w.arch, sizeof w.arch, "sm_90");
    w.units = 114;
    cJSON *gj = gt_gen_dev_to_json(&wd);
    CHECK(gj && cJSON_PrintPreallocated(gj, w.gen_device, sizeof w.gen_device, 0));
    cJSON_Delete(gj);
    int64_t wid = 0;
    CHECK(gt_store_register_worker(s, &w, 100, &wid, err, sizeof err) == 0 && wid > 0);
    gt_spview_target t;
    CHECK(gt_store_space_target(s, run, "1", &t, err, sizeof err) == 0);
    CHECK(t.worker_id == wid && t.gen_device && !strcmp(t.gen_device, w.gen_device));
    gt_spview_dev_in in = {.w_sm = 90, .w_sms = t.units, .w_gen_device = t.gen_device};
    gt_spview_dev sd;
    gt_spview_device(&in, &sd);
    CHECK(!strcmp(sd.limits_from, "worker") && !strcmp(sd.arch_from, "worker") &&
          !sd.ignored[0] && gt_gen_dev_equal(&sd.d, &wd));
    /* the space is gen's with that exact device, and not the defaults' */
    gt_problem ps[] = {mk(4096, 1, 4096), mk(14336, 16, 4096), mk(4096, 8, 14336),
                       mk(4096, 512, 4096), mk(1024, 64, 1024), batched_epilogue()};
    int differ = 0;
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        family_matches(&ps[i], &sd.d, GT_SPACE_GEMV);
        family_matches(&ps[i], &sd.d, GT_SPACE_MMA);
        cJSON *a = space(&ps[i], &sd.d, GT_SPACE_ALL, NULL, 0, 0);
        cJSON *b = space(&ps[i], &def, GT_SPACE_ALL, NULL, 0, 0);
        char *ta = a ? kept_text(a) : NULL, *tb = b ? kept_text(b) : NULL;
        CHECK(ta && tb);
        differ += ta && tb && strcmp(ta, tb) != 0;
        free(ta);
        free(tb);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    CHECK_MSG(differ >= 3, "only %d of 6 problems keep other configs with the worker's limits",
              differ);
    /* ?sms= wins over the worker's, the limits stay its own */
    in.q_sms = 100;
    gt_spview_device(&in, &sd);
    CHECK(!strcmp(sd.limits_from, "worker") && !strcmp(sd.sms_from, "query") && sd.d.sms == 100 &&
          sd.d.dram_bw == wd.dram_bw);
    /* ?arch=sm_90 is the worker's arch: still its limits; sm_80: the defaults */
    in.q_sms = 0;
    in.q_sm = 90;
    gt_spview_device(&in, &sd);
    CHECK(!strcmp(sd.limits_from, "worker") && !strcmp(sd.arch_from, "query"));
    in.q_sm = 80;
    gt_spview_device(&in, &sd);
    gt_gen_dev a100;
    gt_gen_dev_default(&a100, 80, 114);
    CHECK(!strcmp(sd.limits_from, "default") && strstr(sd.ignored, "sm_80") &&
          gt_gen_dev_equal(&sd.d, &a100));
    /* an older worker (no gen_device): the defaults, nothing ignored */
    in.q_sm = 0;
    in.w_gen_device = NULL;
    gt_spview_device(&in, &sd);
    CHECK(!strcmp(sd.limits_from, "default") && !sd.ignored[0] && gt_gen_dev_equal(&sd.d, &def));
    /* a stored text of another version: the defaults, and why */
    in.w_gen_device = "{\"hip\":0}";
    gt_spview_device(&in, &sd);
    CHECK(!strcmp(sd.limits_from, "default") && strstr(sd.ignored, "missing") &&
          gt_gen_dev_equal(&sd.d, &def));
    gt_spview_target_fini(&t);
    /* GET /v1/workers shows it, parsed; a worker without one shows null */
    memset(w.gen_device, 0, sizeof w.gen_device);
    w.pid = 2;
    CHECK(gt_store_register_worker(s, &w, 200, &wid, err, sizeof err) == 0);
    cJSON *ws = gt_store_workers_json(s, 300, err, sizeof err);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(ws, "workers");
    const cJSON *g0 = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(rows, 0), "gen_device");
    const cJSON *g1 = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(rows, 1), "gen_device");
    gt_gen_dev back;
    CHECK(cJSON_GetArraySize(rows) == 2 && gt_gen_dev_from_json(g0, &back, err, sizeof err) == 0 &&
          gt_gen_dev_equal(&back, &wd) && cJSON_IsNull(g1));
    cJSON_Delete(ws);
    gt_store_close(s);
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    CHECK(system(path) == 0);
}

int main(void)
{
    RUN(rule_names);
    RUN(matches_worker);
    RUN(filter_and_pages);
    RUN(verdicts);
    RUN(store_target);
    RUN(worker_limits);
    return gt_test_done();
}
