/* test_run_opts.c: the run option launch (server/run_opts.c): plain,
 * chained and graph are accepted, anything else is refused naming the
 * values (POST /v1/runs answers 400 with that text), chained and graph need
 * backend cuda, and the stored form reads back the same launch (an older
 * run's options without it read back as plain). And final_family_ratio: 0
 * or 1..10, default 1.25, refused naming the field, stored and read back. */
#include "gt_run_opts.h"
#include "gt_test.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* The stored launch of o, read back through gt_run_opts_from_stored. */
static void round_trip(const gt_run_opts *o, int chained, int graph)
{
    cJSON *j = gt_run_opts_to_stored(o);
    CHECK(j != NULL);
    const cJSON *l = j ? cJSON_GetObjectItemCaseSensitive(j, "launch") : NULL;
    CHECK(cJSON_IsString(l) && !strcmp(l->valuestring, gt_run_opts_launch(o)));
    char *txt = j ? cJSON_PrintUnformatted(j) : NULL;
    gt_run_opts b;
    CHECK(txt && gt_run_opts_from_stored(&b, txt) == 0);
    CHECK(b.chained == chained && b.graph == graph);
    gt_run_opts_fini(&b);
    free(txt);
    cJSON_Delete(j);
}

static void test_launch(void)
{
    char err[256];
    gt_run_opts o;
    gt_run_opts_default(&o);
    CHECK(!o.chained && !o.graph && !strcmp(gt_run_opts_launch(&o), "plain"));
    CHECK(gt_run_opts_set(&o, "backend", "cuda", err, sizeof err) == 0);
    CHECK(gt_run_opts_set(&o, "launch", "graph", err, sizeof err) == 0);
    CHECK(o.graph && !o.chained && !strcmp(gt_run_opts_launch(&o), "graph"));
    CHECK(gt_run_opts_check(&o, err, sizeof err) == 0);
    round_trip(&o, 0, 1);
    /* the last launch given wins: never both chained and graph */
    CHECK(gt_run_opts_set(&o, "launch", "chained", err, sizeof err) == 0);
    CHECK(o.chained && !o.graph && !strcmp(gt_run_opts_launch(&o), "chained"));
    round_trip(&o, 1, 0);
    CHECK(gt_run_opts_set(&o, "launch", "plain", err, sizeof err) == 0);
    CHECK(!o.chained && !o.graph);
    round_trip(&o, 0, 0);
    /* a bad value: refused, naming the three values, the option unchanged */
    CHECK(gt_run_opts_set(&o, "launch", "graph", err, sizeof err) == 0);
    err[0] = 0;
    CHECK(gt_run_opts_set(&o, "launch", "Graph", err, sizeof err) == -1);
    CHECK(strstr(err, "launch=Graph: must be plain, chained or graph") != NULL);
    CHECK(o.graph);
    CHECK(gt_run_opts_set(&o, "launch", "", err, sizeof err) == -1);
    gt_run_opts_fini(&o);
}

static void test_graph_needs_cuda(void)
{
    char err[256] = "";
    gt_run_opts o;
    gt_run_opts_default(&o);
    CHECK(gt_run_opts_set(&o, "launch", "graph", err, sizeof err) == 0);
    CHECK(gt_run_opts_check(&o, err, sizeof err) == -1);
    CHECK(strstr(err, "launch=graph: only backend cuda times in CUDA graphs") && strstr(err, "is cpu"));
    CHECK(gt_run_opts_set(&o, "backend", "hip", err, sizeof err) == 0);
    CHECK(gt_run_opts_check(&o, err, sizeof err) == -1);
    gt_run_opts_fini(&o);
}

static void test_json_and_stored(void)
{
    char err[256] = "";
    gt_run_opts o;
    gt_run_opts_default(&o);
    cJSON *j = cJSON_Parse("{\"backend\":\"cuda\",\"launch\":\"graph\"}");
    CHECK(j && gt_run_opts_from_json(&o, j, err, sizeof err) == 0 && o.graph);
    cJSON_Delete(j);
    gt_run_opts_fini(&o);
    gt_run_opts_default(&o);
    j = cJSON_Parse("{\"launch\":\"cudagraph\"}");
    CHECK(j && gt_run_opts_from_json(&o, j, err, sizeof err) == -1 && strstr(err, "plain, chained or graph"));
    cJSON_Delete(j);
    gt_run_opts_fini(&o);
    /* stored options from before launch, or with a value this version does
     * not know: plain */
    CHECK(gt_run_opts_from_stored(&o, "{\"repeats\":5}") == 0 && !o.graph && !o.chained);
    gt_run_opts_fini(&o);
    CHECK(gt_run_opts_from_stored(&o, "{\"launch\":\"warp\"}") == 0 && !o.graph && !o.chained);
    gt_run_opts_fini(&o);
    CHECK(gt_run_opts_from_stored(&o, "{\"launch\":\"graph\"}") == 0 && o.graph && !o.chained);
    gt_run_opts_fini(&o);
}

/* final_family_ratio (the final's extra per-family finalists,
 * store_phases.c): its default, range, error text and stored form. */
static void test_final_family_ratio(void)
{
    char err[256] = "";
    gt_run_opts o;
    gt_run_opts_default(&o);
    CHECK(o.final_family_ratio == 1.25);
    CHECK(gt_run_opts_set(&o, "final_family_ratio", "0", err, sizeof err) == 0 &&
          o.final_family_ratio == 0);
    CHECK(gt_run_opts_set(&o, "final_family_ratio", "1", err, sizeof err) == 0 &&
          o.final_family_ratio == 1);
    CHECK(gt_run_opts_set(&o, "final_family_ratio", "10", err, sizeof err) == 0 &&
          o.final_family_ratio == 10);
    CHECK(gt_run_opts_set(&o, "final_family_ratio", "1.1", err, sizeof err) == 0 &&
          o.final_family_ratio == 1.1);
    /* refused, naming the field and its values, the option unchanged */
    static const char *const bad[] = {"0.5", "-1", "10.5", "x", "", "1.2x", "nan", "inf"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CHECK_MSG(gt_run_opts_set(&o, "final_family_ratio", bad[i], err, sizeof err) == -1 &&
                      strstr(err, "final_family_ratio=") &&
                      strstr(err, "must be 0 (off) or a number in [1, 10]"),
                  "'%s': %s", bad[i], err);
        CHECK(o.final_family_ratio == 1.1);
    }
    /* the JSON body's number, and the stored form read back exactly */
    cJSON *j = cJSON_Parse("{\"final_family_ratio\":1.5}");
    CHECK(j && gt_run_opts_from_json(&o, j, err, sizeof err) == 0 && o.final_family_ratio == 1.5);
    cJSON_Delete(j);
    j = cJSON_Parse("{\"final_family_ratio\":0.9}");
    CHECK(j && gt_run_opts_from_json(&o, j, err, sizeof err) == -1 &&
          strstr(err, "final_family_ratio"));
    cJSON_Delete(j);
    CHECK(gt_run_opts_set(&o, "final_family_ratio", "1.1", err, sizeof err) == 0);
    j = gt_run_opts_to_stored(&o);
    const cJSON *r = j ? cJSON_GetObjectItemCaseSensitive(j, "final_family_ratio") : NULL;
    CHECK(cJSON_IsNumber(r) && r->valuedouble == 1.1);
    char *txt = j ? cJSON_PrintUnformatted(j) : NULL;
    gt_run_opts b;
    CHECK(txt && gt_run_opts_from_stored(&b, txt) == 0 && b.final_family_ratio == 1.1);
    gt_run_opts_fini(&b);
    free(txt);
    cJSON_Delete(j);
    /* an older run's options without it: the default; a stored value this
     * version refuses: the default too */
    CHECK(gt_run_opts_from_stored(&b, "{\"final_k\":4}") == 0 && b.final_family_ratio == 1.25);
    gt_run_opts_fini(&b);
    CHECK(gt_run_opts_from_stored(&b, "{\"final_family_ratio\":99}") == 0 &&
          b.final_family_ratio == 1.25);
    gt_run_opts_fini(&b);
    CHECK(gt_run_opts_from_stored(&b, "{\"final_family_ratio\":0}") == 0 &&
          b.final_family_ratio == 0);
    gt_run_opts_fini(&b);
    gt_run_opts_fini(&o);
}

int main(void)
{
    RUN(test_launch);
    RUN(test_final_family_ratio);
    RUN(test_graph_needs_cuda);
    RUN(test_json_and_stored);
    return gt_test_done();
}
