/* test_json_text.c: gt_json_print (common/json_text.c) writes exactly what
 * cJSON_PrintUnformatted writes, on configs and on the edge cases its integer
 * shortcut must leave to cJSON: -0, 1e15 and beyond, fractions, huge and
 * tiny doubles, NaN, escapes and control characters, non-ASCII text, nested
 * and empty arrays and objects, an empty key, a raw item. */
#include "gt_json.h"
#include "gt_test.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void same_as_cjson(const cJSON *v, const char *what)
{
    char *want = cJSON_PrintUnformatted(v);
    char *got = gt_json_print(v);
    CHECK_MSG(want && got && !strcmp(want, got), "%s: cJSON %s, gt_json_print %s", what, want ? want : "NULL",
              got ? got : "NULL");
    cJSON_free(want);
    free(got);
}

static void test_texts(void)
{
    static const char *const texts[] = {
        "{\"algo_id\":66,\"cluster\":5,\"custom\":2,\"inner_shape\":0,\"reduction\":0,\"splitk\":1,"
        "\"stages\":35,\"swizzle\":0,\"tile\":201}",
        "{\"a_load\":\"cs\",\"family\":\"gemv\",\"k_unroll\":2,\"vec\":8}",
        "[1,-1,0,-0,0.5,-2.25,1e15,-1e15,999999999999999,1e16,123456789012345678,1e300,1e-300,"
        "3.141592653589793,0.1]",
        "{\"\":1,\"s\":\"q\\\"b\\\\s\\/\\b\\f\\n\\r\\t\\u0001\\u001f \\u00e9\\u4e2d\",\"n\":null,"
        "\"t\":true,\"f\":false}",
        "[[],{},[[1,[2,{}]]],{\"a\":{\"b\":[]}}]",
        "[]",
        "{}",
        "\"just a string\"",
        "42",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        cJSON *v = cJSON_Parse(texts[i]);
        CHECK_MSG(v != NULL, "parse %s", texts[i]);
        if (v)
            same_as_cjson(v, texts[i]);
        cJSON_Delete(v);
    }
}

static void test_built_values(void)
{
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateNumber(NAN));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(INFINITY));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(-0.0));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(4294967296.0));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(-2147483649.0));
    cJSON_AddItemToArray(a, cJSON_CreateRaw("{\"raw\":1}"));
    same_as_cjson(a, "built array");
    cJSON_Delete(a);
    /* a long list of configs, as an enumeration sends them */
    cJSON *l = cJSON_CreateArray();
    for (int i = 0; i < 500; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddNumberToObject(c, "algo_id", i % 70);
        cJSON_AddNumberToObject(c, "splitk", (i % 11) + 1);
        cJSON_AddNumberToObject(c, "tile", i * 7);
        cJSON_AddStringToObject(c, "family", i % 3 ? "mma" : "gemv");
        cJSON_AddItemToArray(l, c);
    }
    same_as_cjson(l, "500 configs");
    cJSON_Delete(l);
}

int main(void)
{
    RUN(test_texts);
    RUN(test_built_values);
    return gt_test_done();
}
