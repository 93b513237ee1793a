/* gt_client.h: the worker's connection to the coordinator (module prefix
 * gt_client_): an nng req socket that redials on its own, and a request
 * helper that retries with exponential backoff until it gets an answer, so a
 * coordinator restart or a network blip only delays a worker. Every request
 * the worker sends is safe to repeat (results are idempotent on the
 * coordinator). */
#ifndef GT_CLIENT_H
#define GT_CLIENT_H

#include <nng/nng.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

struct cJSON;

/* The worker's session with the coordinator (PROTOCOL.md, "Sessions"),
 * shared by the worker's connections: the credential registration gave,
 * and how to build a register message (with the token). Every request a
 * client with a session sends carries the credential; a refusal that asks
 * to register again is answered by attaching this connection to the
 * session, or, on the client allowed to (the main one), by registering
 * anew, and the request is sent again. */
typedef struct gt_client_session {
    pthread_mutex_t mu;
    char credential[64];               /* "" before the first registration */
    int64_t worker_id;
    int heartbeat_ms;
    /* A new register message without "session" (caller owns), or NULL. */
    struct cJSON *(*register_msg)(void *ctx);
    void *ctx;
} gt_client_session;

typedef struct gt_client {
    nng_socket sock;
    char url[256];
    int timeout_ms;                    /* per attempt */
    volatile sig_atomic_t *stop;       /* give up retrying when set (may be NULL) */
    gt_client_session *session;        /* NULL: requests go out as given */
    int may_register;                  /* may replace the session by a new registration */
    int attached;                      /* bound to the session once (gt_client_authenticate) */
} gt_client;

/* tls_ca: PEM file of the CA that signed the coordinator's certificate,
 * required for tls+tcp:// URLs (the server name is checked), NULL otherwise. */
int gt_client_open(gt_client *c, const char *url, int timeout_ms, volatile sig_atomic_t *stop,
                   const char *tls_ca, char *err, size_t errlen);
void gt_client_close(gt_client *c);
/* Sends req and returns the reply (caller owns) and its type. Retries on
 * transport errors with backoff (0.2 s doubling to 10 s) for at most
 * max_wait_ms (0 = until stop is set). With a session, the request carries
 * its credential and worker id; a connection not yet bound to the session
 * attaches first once there is a credential (a request sent unattached
 * would be refused, and the coordinator logs every refusal as a warning),
 * and a refusal that asks to register again is answered by
 * gt_client_authenticate and one more try. Any other "error" reply is
 * returned as is. */
struct cJSON *gt_client_call(gt_client *c, const struct cJSON *req, const char **type,
                             int max_wait_ms, char *err, size_t errlen);

/* Binds this client's connection to its session: attaches with the
 * credential when there is one; registers anew when there is none, or when
 * the coordinator no longer knows it and the client may_register. 0 on
 * success, -1 unreachable or stopping, -2 refused (err says why: a wrong
 * token, an unknown session on a client that may not register). */
int gt_client_authenticate(gt_client *c, char *err, size_t errlen);

#endif
