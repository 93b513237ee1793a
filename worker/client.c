/* client.c: request/reply to the coordinator with reconnects and backoff. */
#include "gt_client.h"

#include <cjson/cJSON.h>
#include <nng/protocol/reqrep0/req.h>
#include <nng/supplemental/tls/tls.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gt_proto.h"
#include "gt_util.h"

int gt_client_open(gt_client *c, const char *url, int timeout_ms, volatile sig_atomic_t *stop,
                   const char *tls_ca, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    snprintf(c->url, sizeof c->url, "%s", url);
    c->timeout_ms = timeout_ms;
    c->stop = stop;
    int rv = nng_req0_open(&c->sock);
    if (rv != 0) {
        snprintf(err, errlen, "nng req socket: %s", nng_strerror(rv));
        return -1;
    }
    /* We retry ourselves (with backoff and logging), so the req protocol's
     * own silent resend is turned off. */
    if ((rv = nng_setopt_ms(c->sock, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE)) != 0 ||
        (rv = nng_setopt_ms(c->sock, NNG_OPT_RECVTIMEO, timeout_ms)) != 0 ||
        (rv = nng_setopt_ms(c->sock, NNG_OPT_SENDTIMEO, timeout_ms)) != 0 ||
        (rv = nng_setopt_ms(c->sock, NNG_OPT_RECONNMINT, 100)) != 0 ||
        (rv = nng_setopt_ms(c->sock, NNG_OPT_RECONNMAXT, 5000)) != 0 ||
        (rv = nng_setopt_size(c->sock, NNG_OPT_RECVMAXSZ, GT_PROTO_MAX_MSG)) != 0) {
        snprintf(err, errlen, "nng options: %s", nng_strerror(rv));
        nng_close(c->sock);
        return -1;
    }
    /* Non-blocking dial: the socket keeps redialling in the background, so a
     * worker may start before its coordinator. */
    nng_dialer d;
    int tls = !strncmp(url, "tls+tcp://", 10);
    if (tls && !(tls_ca && *tls_ca)) {
        snprintf(err, errlen, "%s: a tls+tcp:// coordinator needs --tls-ca FILE", url);
        nng_close(c->sock);
        return -1;
    }
    if ((rv = nng_dialer_create(&d, c->sock, url)) != 0 ||
        (tls && (rv = nng_dialer_set_string(d, NNG_OPT_TLS_CA_FILE, tls_ca)) != 0) ||
        (tls && (rv = nng_dialer_set_int(d, NNG_OPT_TLS_AUTH_MODE, NNG_TLS_AUTH_MODE_REQUIRED)) != 0) ||
        (rv = nng_dialer_start(d, NNG_FLAG_NONBLOCK)) != 0) {
        snprintf(err, errlen, "cannot dial %s: %s", url, nng_strerror(rv));
        nng_close(c->sock);
        return -1;
    }
    return 0;
}

void gt_client_close(gt_client *c) { nng_close(c->sock); }

static void sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
    nanosleep(&ts, NULL);
}

static cJSON *call_once(gt_client *c, const cJSON *req, const char **type, int max_wait_ms,
                        char *err, size_t errlen)
{
    double t0 = gt_mono_ms(), backoff = 200;
    int attempt = 0;
    for (;;) {
        int rv = gt_proto_send(c->sock, req);
        if (rv == 0) {
            cJSON *reply = gt_proto_recv(c->sock, type, &rv, err, errlen);
            if (reply)
                return reply;
            if (rv == 0) /* undecodable reply: the coordinator is not one of ours */
                return NULL;
        } else {
            snprintf(err, errlen, "send: %s", nng_strerror(rv));
        }
        if (rv == NNG_ECLOSED)
            return NULL;
        attempt++;
        if ((c->stop && *c->stop) || (max_wait_ms > 0 && gt_mono_ms() - t0 > max_wait_ms))
            return NULL;
        if (attempt == 1 || attempt % 10 == 0)
            gt_warn("coordinator %s unreachable (%s); retrying", c->url, err);
        sleep_ms(backoff);
        backoff = backoff * 2 > 10000 ? 10000 : backoff * 2;
    }
}

/* Sets (or replaces) a string member. 0, or -1 out of memory. */
static int set_str(cJSON *o, const char *name, const char *v)
{
    cJSON *n = cJSON_CreateString(v);
    if (!n)
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(o, name))
        return cJSON_ReplaceItemInObjectCaseSensitive(o, name, n) ? 0 : -1;
    return cJSON_AddItemToObject(o, name, n) ? 0 : -1;
}

static int set_num(cJSON *o, const char *name, double v)
{
    cJSON *n = cJSON_CreateNumber(v);
    if (!n)
        return -1;
    if (cJSON_GetObjectItemCaseSensitive(o, name))
        return cJSON_ReplaceItemInObjectCaseSensitive(o, name, n) ? 0 : -1;
    return cJSON_AddItemToObject(o, name, n) ? 0 : -1;
}

/* One register exchange: with the credential (attach) or without (new). */
static int register_once(gt_client *c, const char *credential, cJSON **reply, const char **type,
                         char *err, size_t errlen)
{
    gt_client_session *ss = c->session;
    cJSON *m = ss->register_msg(ss->ctx);
    if (!m || (credential && set_str(m, "session", credential))) {
        cJSON_Delete(m);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *reply = call_once(c, m, type, 0, err, errlen);
    cJSON_Delete(m);
    return *reply ? 0 : -1;
}

int gt_client_authenticate(gt_client *c, char *err, size_t errlen)
{
    gt_client_session *ss = c->session;
    if (!ss)
        return 0;
    char cred[64];
    pthread_mutex_lock(&ss->mu);
    snprintf(cred, sizeof cred, "%s", ss->credential);
    pthread_mutex_unlock(&ss->mu);
    for (int fresh = !cred[0]; fresh < 2; fresh++) {
        if (fresh && !c->may_register) {
            snprintf(err, errlen, "the coordinator does not know this worker's session");
            return -2;
        }
        cJSON *r = NULL;
        const char *type;
        if (register_once(c, fresh ? NULL : cred, &r, &type, err, errlen))
            return -1;
        const cJSON *sess = cJSON_GetObjectItemCaseSensitive(r, "session");
        if (!strcmp(type, GT_MSG_REGISTERED) && cJSON_IsString(sess) &&
            strlen(sess->valuestring) < sizeof ss->credential) {
            pthread_mutex_lock(&ss->mu);
            snprintf(ss->credential, sizeof ss->credential, "%s", sess->valuestring);
            ss->worker_id = gt_proto_int_or(r, "worker_id", 0, 1LL << 53, 0);
            ss->heartbeat_ms = (int)gt_proto_int_or(r, "heartbeat_ms", 100, 600000, 5000);
            pthread_mutex_unlock(&ss->mu);
            if (fresh)
                gt_info("registered as worker %lld with %s", (long long)ss->worker_id, c->url);
            c->attached = 1;
            cJSON_Delete(r);
            return 0;
        }
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error");
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(r, "refused");
        snprintf(err, errlen, "registration refused: %s",
                 cJSON_IsString(e) ? e->valuestring : type);
        /* Only an unknown session is worth a new registration; a wrong
         * token is for the operator to fix. */
        int retry = !fresh && cJSON_IsString(why) && !strcmp(why->valuestring, "unknown_session");
        cJSON_Delete(r);
        if (!retry)
            return -2;
    }
    return -2;
}

static int wants_reregister(const cJSON *r, const char *type)
{
    return !strcmp(type, GT_MSG_ERROR) &&
           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "reregister"));
}

cJSON *gt_client_call(gt_client *c, const cJSON *req, const char **type, int max_wait_ms, char *err,
                      size_t errlen)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(req, "type");
    if (!c->session || (cJSON_IsString(t) && !strcmp(t->valuestring, GT_MSG_REGISTER)))
        return call_once(c, req, type, max_wait_ms, err, errlen);
    cJSON *m = cJSON_Duplicate(req, 1);
    cJSON *r = NULL;
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (!c->attached) {
        pthread_mutex_lock(&c->session->mu);
        int have = c->session->credential[0] != 0;
        pthread_mutex_unlock(&c->session->mu);
        char aerr[256];
        /* a failure here is not final: the refusal below attaches again */
        if (have)
            (void)gt_client_authenticate(c, aerr, sizeof aerr);
    }
    /* At most two authentications per request: an attach, then a new
     * registration's credential reaching this connection. */
    for (int auth = 0;; auth++) {
        gt_client_session *ss = c->session;
        pthread_mutex_lock(&ss->mu);
        int bad = set_str(m, "session", ss->credential) || set_num(m, "worker_id", (double)ss->worker_id);
        pthread_mutex_unlock(&ss->mu);
        if (bad) {
            snprintf(err, errlen, "out of memory");
            break;
        }
        r = call_once(c, m, type, max_wait_ms, err, errlen);
        if (!r || auth == 2 || !wants_reregister(r, *type))
            break;
        char aerr[256];
        int arc = gt_client_authenticate(c, aerr, sizeof aerr);
        if (arc != 0) {
            gt_warn("%s", aerr);
            break; /* the refusal goes back to the caller */
        }
        cJSON_Delete(r);
        r = NULL;
    }
    cJSON_Delete(m);
    return r;
}
