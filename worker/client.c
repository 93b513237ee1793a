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

cJSON *gt_client_call(gt_client *c, const cJSON *req, const char **type, int max_wait_ms, char *err,
                      size_t errlen)
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
