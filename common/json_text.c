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

/* A growing text buffer for compact_print. */
typedef struct {
    char *p;
    size_t len, cap;
} text_buf;

static int tb_reserve(text_buf *b, size_t more)
{
    if (b->len + more < b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap <= b->len + more)
        cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q)
        return -1;
    b->p = q;
    b->cap = cap;
    return 0;
}

static int tb_put(text_buf *b, const char *s, size_t n)
{
    if (tb_reserve(b, n))
        return -1;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    return 0;
}

/* A string as cJSON prints it: '"' and '\' escaped, the control characters
 * as \b \f \n \r \t or \u00xx, every other byte as it is. */
static int tb_string(text_buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    if (!s)
        return tb_put(b, "\"\"", 2);
    size_t n = strlen(s);
    if (tb_reserve(b, 6 * n + 2)) /* the worst case: every byte \u00xx */
        return -1;
    char *o = b->p + b->len;
    *o++ = '"';
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c > 31 && *c != '"' && *c != '\\') {
            *o++ = (char)*c;
            continue;
        }
        *o++ = '\\';
        switch (*c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        default:
            *o++ = 'u', *o++ = '0', *o++ = '0', *o++ = hex[*c >> 4], *o++ = hex[*c & 15];
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->p);
    return 0;
}

/* A value's compact text appended to b, byte for byte what
 * cJSON_PrintUnformatted writes. Integers (the configs' numbers) are
 * written here; any other number, a raw item and anything cJSON would
 * refuse go to cJSON's own printer, so the text stays cJSON's. */
static int compact_print(const cJSON *v, text_buf *b)
{
    const cJSON *c;
    switch (v->type & 0xFF) {
    case cJSON_NULL:
        return tb_put(b, "null", 4);
    case cJSON_False:
        return tb_put(b, "false", 5);
    case cJSON_True:
        return tb_put(b, "true", 4);
    case cJSON_String:
        return tb_string(b, v->valuestring);
    case cJSON_Number: {
        /* integral and exact below 1e15: %d and %1.15g (whichever cJSON
         * uses) write the same digits; -0 ("-0" by %g, "0" by %d) is left
         * to cJSON */
        double d = v->valuedouble;
        if (d == d && fabs(d) < 1e15 && d == (double)(long long)d && (d != 0 || !signbit(d))) {
            char num[24];
            int n = snprintf(num, sizeof num, "%lld", (long long)d);
            return n > 0 ? tb_put(b, num, (size_t)n) : -1;
        }
        break;
    }
    case cJSON_Array:
        if (tb_put(b, "[", 1))
            return -1;
        for (c = v->child; c; c = c->next)
            if ((c != v->child && tb_put(b, ",", 1)) || compact_print(c, b))
                return -1;
        return tb_put(b, "]", 1);
    case cJSON_Object:
        if (tb_put(b, "{", 1))
            return -1;
        for (c = v->child; c; c = c->next)
            if ((c != v->child && tb_put(b, ",", 1)) || tb_string(b, c->string) ||
                tb_put(b, ":", 1) || compact_print(c, b))
                return -1;
        return tb_put(b, "}", 1);
    default:
        break;
    }
    /* cJSON prints an item alone as it prints it inside a tree */
    char *t = cJSON_PrintUnformatted(v);
    int rc = t ? tb_put(b, t, strlen(t)) : -1;
    cJSON_free(t);
    return rc;
}

char *gt_json_print(const cJSON *v)
{
    text_buf b = {0};
    if (compact_print(v, &b) || tb_put(&b, "", 1)) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

