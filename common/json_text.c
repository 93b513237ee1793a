/* json_text.c: compact JSON text of a cJSON tree, byte for byte what
 * cJSON_PrintUnformatted writes, faster on configs: integers are written
 * directly instead of through cJSON's %g round trip (an enumeration's 4632
 * configs, 600 KB: 2 ms instead of 9.5 of the coordinator's single
 * dispatcher thread). Every other number, a raw item and anything cJSON
 * would refuse go to cJSON's own printer, so the text stays cJSON's. */
#include "gt_json.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"

/* A string as cJSON prints it: '"' and '\' escaped, the control characters
 * as \b \f \n \r \t or \u00xx, every other byte as it is; runs of plain
 * bytes are appended in one piece. */
static int put_string(gt_str *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    if (!s)
        return gt_str_append(b, "\"\"", 2);
    if (gt_str_append(b, "\"", 1))
        return -1;
    const unsigned char *run = (const unsigned char *)s, *c;
    for (c = run; *c; c++) {
        if (*c > 31 && *c != '"' && *c != '\\')
            continue;
        char e[6] = {'\\', 0, 0, 0, 0, 0};
        size_t n = 2;
        switch (*c) {
        case '"': e[1] = '"'; break;
        case '\\': e[1] = '\\'; break;
        case '\b': e[1] = 'b'; break;
        case '\f': e[1] = 'f'; break;
        case '\n': e[1] = 'n'; break;
        case '\r': e[1] = 'r'; break;
        case '\t': e[1] = 't'; break;
        default:
            e[1] = 'u', e[2] = '0', e[3] = '0', e[4] = hex[*c >> 4], e[5] = hex[*c & 15];
            n = 6;
        }
        if ((c > run && gt_str_append(b, (const char *)run, (size_t)(c - run))) || gt_str_append(b, e, n))
            return -1;
        run = c + 1;
    }
    if (c > run && gt_str_append(b, (const char *)run, (size_t)(c - run)))
        return -1;
    return gt_str_append(b, "\"", 1);
}

/* A value's compact text appended to b, byte for byte what
 * cJSON_PrintUnformatted writes. Integers (the configs' numbers) are
 * written here; any other number, a raw item and anything cJSON would
 * refuse go to cJSON's own printer, so the text stays cJSON's. */
static int compact_print(const cJSON *v, gt_str *b)
{
    const cJSON *c;
    switch (v->type & 0xFF) {
    case cJSON_NULL:
        return gt_str_append(b, "null", 4);
    case cJSON_False:
        return gt_str_append(b, "false", 5);
    case cJSON_True:
        return gt_str_append(b, "true", 4);
    case cJSON_String:
        return put_string(b, v->valuestring);
    case cJSON_Number: {
        /* integral and exact below 1e15: %d and %1.15g (whichever cJSON
         * uses) write the same digits; -0 ("-0" by %g, "0" by %d) is left
         * to cJSON */
        double d = v->valuedouble;
        if (d == d && fabs(d) < 1e15 && d == (double)(long long)d && (d != 0 || !signbit(d))) {
            char num[24];
            int n = snprintf(num, sizeof num, "%lld", (long long)d);
            return n > 0 ? gt_str_append(b, num, (size_t)n) : -1;
        }
        break;
    }
    case cJSON_Array:
        if (gt_str_append(b, "[", 1))
            return -1;
        for (c = v->child; c; c = c->next)
            if ((c != v->child && gt_str_append(b, ",", 1)) || compact_print(c, b))
                return -1;
        return gt_str_append(b, "]", 1);
    case cJSON_Object:
        if (gt_str_append(b, "{", 1))
            return -1;
        for (c = v->child; c; c = c->next)
            if ((c != v->child && gt_str_append(b, ",", 1)) || put_string(b, c->string) ||
                gt_str_append(b, ":", 1) || compact_print(c, b))
                return -1;
        return gt_str_append(b, "}", 1);
    default:
        break;
    }
    /* cJSON prints an item alone as it prints it inside a tree */
    char *t = cJSON_PrintUnformatted(v);
    int rc = t ? gt_str_append(b, t, strlen(t)) : -1;
    cJSON_free(t);
    return rc;
}

char *gt_json_print(const cJSON *v)
{
    gt_str b;
    gt_str_init(&b);
    if (compact_print(v, &b) || gt_str_append(&b, "", 0) || b.oom) {
        gt_str_free(&b);
        return NULL;
    }
    return b.s; /* ownership passes to the caller */
}
