/* gt_json.h: compact JSON text (common/json_text.c). */
#ifndef GT_JSON_H
#define GT_JSON_H

struct cJSON;

/* A JSON value's compact text (malloc'd; NULL out of memory or a value
 * cJSON cannot print), byte for byte what cJSON_PrintUnformatted writes:
 * every text the planner stores (shards, baseline, space) and the
 * dispatcher's copy of an enumeration come from here. */
char *gt_json_print(const struct cJSON *v);

#endif
