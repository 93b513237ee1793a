/* test_run_opts.c: the run option launch (server/run_opts.c): plain,
 * chained and graph are accepted, anything else is refused naming the
 * values (POST /v1/runs answers 400 with that text), chained and graph need
 * backend cuda, and the stored form reads back the same launch (an older
 * run's options without it read back as plain). */
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

int main(void)
{
    RUN(test_launch);
    RUN(test_graph_needs_cuda);
    RUN(test_json_and_stored);
    return gt_test_done();
}
