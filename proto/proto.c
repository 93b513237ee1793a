/* proto.c: encoding and decoding of coordinator <-> worker messages. */
#include "gt_proto.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

cJSON *gt_proto_new(const char *type)
{
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    if (!cJSON_AddNumberToObject(j, "v", GT_PROTO_VERSION) ||
        !cJSON_AddStringToObject(j, "type", type)) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

cJSON *gt_proto_error(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *j = gt_proto_new(GT_MSG_ERROR);
    if (j && !cJSON_AddStringToObject(j, "error", msg)) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

int gt_proto_send(nng_socket s, const cJSON *msg)
{
    char *txt = cJSON_PrintUnformatted(msg);
    if (!txt)
        return NNG_ENOMEM;
    int rv = nng_send(s, txt, strlen(txt), 0);
    cJSON_free(txt);
    return rv;
}

/* msg encoded into a new nng message, after req's header when req is given
 * (the route a raw REP socket answers by). 0, or an nng error code. */
static int encode_msg(const cJSON *msg, const nng_msg *req, nng_msg **out)
{
    char *txt = cJSON_PrintUnformatted(msg);
    if (!txt)
        return NNG_ENOMEM;
    nng_msg *m = NULL;
    /* nng's accessors take a non-const message; the header is only read */
    nng_msg *r = (nng_msg *)req;
    int rv = nng_msg_alloc(&m, 0);
    if (rv == 0 && r)
        rv = nng_msg_header_append(m, nng_msg_header(r), nng_msg_header_len(r));
    if (rv == 0)
        rv = nng_msg_append(m, txt, strlen(txt));
    cJSON_free(txt);
    if (rv != 0) {
        if (m)
            nng_msg_free(m);
        return rv;
    }
    if (r)
        nng_msg_set_pipe(m, nng_msg_get_pipe(r));
    *out = m;
    return 0;
}

int gt_proto_send_ctx(nng_ctx c, nng_aio *aio, const cJSON *msg)
{
    nng_msg *m = NULL;
    int rv = encode_msg(msg, NULL, &m);
    if (rv != 0)
        return rv;
    nng_aio_set_msg(aio, m);
    nng_ctx_send(c, aio);
    return 0;
}

int gt_proto_reply(nng_socket s, const nng_msg *req, const cJSON *msg)
{
    nng_msg *m = NULL;
    int rv = encode_msg(msg, req, &m);
    if (rv == 0 && (rv = nng_sendmsg(s, m, 0)) != 0)
        nng_msg_free(m); /* nng_sendmsg owns it only on success */
    return rv;
}

cJSON *gt_proto_decode(const void *buf, size_t len, const char **type, char *err, size_t errlen)
{
    if (len > GT_PROTO_MAX_MSG) {
        snprintf(err, errlen, "message of %zu bytes exceeds the %u byte limit", len, GT_PROTO_MAX_MSG);
        return NULL;
    }
    cJSON *j = cJSON_ParseWithLength(buf, len);
    if (!j || !cJSON_IsObject(j)) {
        snprintf(err, errlen, "message is not a JSON object");
        cJSON_Delete(j);
        return NULL;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "v");
    if (!cJSON_IsNumber(v) || v->valueint != GT_PROTO_VERSION) {
        snprintf(err, errlen, "protocol version %d expected, got %s", GT_PROTO_VERSION,
                 cJSON_IsNumber(v) ? "another" : "none");
        cJSON_Delete(j);
        return NULL;
    }
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (!cJSON_IsString(t)) {
        snprintf(err, errlen, "message has no type");
        cJSON_Delete(j);
        return NULL;
    }
    *type = t->valuestring;
    return j;
}

cJSON *gt_proto_recv(nng_socket s, const char **type, int *rv, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    *rv = nng_recv(s, &buf, &len, NNG_FLAG_ALLOC);
    if (*rv != 0) {
        snprintf(err, errlen, "receive: %s", nng_strerror(*rv));
        return NULL;
    }
    cJSON *j = gt_proto_decode(buf, len, type, err, errlen);
    nng_free(buf, len);
    return j;
}

cJSON *gt_proto_result_to_json(const gt_result *r)
{
    cJSON *j = cJSON_CreateObject();
    if (!j)
        return NULL;
    cJSON *cfg = r->config ? cJSON_Duplicate(r->config, 1) : cJSON_CreateObject();
    if (!cfg) {
        cJSON_Delete(j);
        return NULL;
    }
    cJSON_AddItemToObject(j, "config", cfg);
    /* JSON has no NaN: a non-finite error is sent as null and means "invalid". */
    int ok = cJSON_AddBoolToObject(j, "baseline", r->is_baseline) &&
             cJSON_AddBoolToObject(j, "valid", r->valid) &&
             cJSON_AddNumberToObject(j, "time_us", r->time_us) &&
             cJSON_AddNumberToObject(j, "spread", r->spread) &&
             cJSON_AddNumberToObject(j, "tflops", r->tflops) &&
             (isfinite(r->rel_err) ? cJSON_AddNumberToObject(j, "rel_err", r->rel_err) != NULL
                                   : cJSON_AddNullToObject(j, "rel_err") != NULL) &&
             cJSON_AddStringToObject(j, "reason", r->reason);
    if (ok && r->rounds > 0)
        ok = cJSON_AddNumberToObject(j, "rounds", r->rounds) &&
             cJSON_AddNumberToObject(j, "uplift", r->uplift) &&
             cJSON_AddNumberToObject(j, "uplift_lo", r->uplift_lo) &&
             cJSON_AddNumberToObject(j, "uplift_hi", r->uplift_hi);
    if (ok && r->graph)
        ok = cJSON_AddStringToObject(j, "launch", "graph") != NULL;
    if (ok && r->gpu.samples > 0) {
        cJSON *g = gt_gpu_state_to_json(&r->gpu);
        ok = g != NULL;
        if (g)
            cJSON_AddItemToObject(j, "gpu_state", g);
    }
    if (!ok) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

int gt_proto_result_from_json(const cJSON *j, gt_result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (!cJSON_IsObject(j)) {
        snprintf(err, errlen, "result: not an object");
        return -1;
    }
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(j, "config");
    if (!cJSON_IsObject(cfg)) {
        snprintf(err, errlen, "result.config: missing or not an object");
        return -1;
    }
    r->config = (cJSON *)cfg;
    r->is_baseline = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "baseline"));
    r->valid = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "valid"));
    if (gt_proto_get_num(j, "time_us", &r->time_us, err, errlen))
        return -1;
    const cJSON *v;
    r->spread = (v = cJSON_GetObjectItemCaseSensitive(j, "spread")) && cJSON_IsNumber(v) ? v->valuedouble : 0;
    r->tflops = (v = cJSON_GetObjectItemCaseSensitive(j, "tflops")) && cJSON_IsNumber(v) ? v->valuedouble : 0;
    v = cJSON_GetObjectItemCaseSensitive(j, "rel_err");
    r->rel_err = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    v = cJSON_GetObjectItemCaseSensitive(j, "reason");
    snprintf(r->reason, sizeof r->reason, "%s", cJSON_IsString(v) ? v->valuestring : "");
    /* Paired statistics: all four, finite, 0 <= lo <= uplift <= hi, or none. */
    r->rounds = (int)gt_proto_int_or(j, "rounds", 0, 1000000, 0);
    if (r->rounds > 0) {
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "uplift"),
                    *lo = cJSON_GetObjectItemCaseSensitive(j, "uplift_lo"),
                    *hi = cJSON_GetObjectItemCaseSensitive(j, "uplift_hi");
        if (cJSON_IsNumber(u) && cJSON_IsNumber(lo) && cJSON_IsNumber(hi) && isfinite(u->valuedouble) &&
            isfinite(lo->valuedouble) && isfinite(hi->valuedouble) && lo->valuedouble >= 0 &&
            lo->valuedouble <= u->valuedouble && u->valuedouble <= hi->valuedouble) {
            r->uplift = u->valuedouble;
            r->uplift_lo = lo->valuedouble;
            r->uplift_hi = hi->valuedouble;
        } else {
            snprintf(err, errlen, "result: rounds needs uplift_lo <= uplift <= uplift_hi, finite, >= 0");
            return -1;
        }
    }
    /* How it was timed when not as the job said: only "graph" (a plain
     * job's launch-bound final, timed as CUDA graph replays). */
    v = cJSON_GetObjectItemCaseSensitive(j, "launch");
    if (v) {
        if (!cJSON_IsString(v) || strcmp(v->valuestring, "graph") != 0) {
            snprintf(err, errlen, "result.launch: \"graph\" or absent");
            return -1;
        }
        r->graph = 1;
    }
    /* The GPU's state is beside the measurement, not part of it: one that
     * does not check out is dropped (none recorded), the result kept. */
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(j, "gpu_state");
    char gerr[160];
    if (g && gt_gpu_state_from_json(g, &r->gpu, gerr, sizeof gerr) != 0)
        memset(&r->gpu, 0, sizeof r->gpu);
    /* A result is only valid with a finite time and error: never trust the flag alone. */
    if (r->valid && (!isfinite(r->time_us) || r->time_us <= 0 || !isfinite(r->rel_err))) {
        r->valid = 0;
        if (!r->reason[0])
            snprintf(r->reason, sizeof r->reason, "invalid measurement");
    }
    return 0;
}

int gt_proto_get_int(const cJSON *j, const char *name, long long *out, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 9e15) {
        snprintf(err, errlen, "field %s: missing or not an integer", name);
        return -1;
    }
    *out = (long long)v->valuedouble;
    return 0;
}

int gt_proto_get_num(const cJSON *j, const char *name, double *out, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!cJSON_IsNumber(v)) {
        snprintf(err, errlen, "field %s: missing or not a number", name);
        return -1;
    }
    *out = v->valuedouble;
    return 0;
}

const char *gt_proto_get_str(const cJSON *j, const char *name, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!cJSON_IsString(v)) {
        snprintf(err, errlen, "field %s: missing or not a string", name);
        return NULL;
    }
    return v->valuestring;
}

long long gt_proto_int_or(const cJSON *j, const char *name, long long lo, long long hi, long long dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!cJSON_IsNumber(v) || v->valuedouble != v->valuedouble)
        return dflt;
    if (v->valuedouble <= (double)lo)
        return lo;
    if (v->valuedouble >= (double)hi)
        return hi;
    return (long long)v->valuedouble;
}
