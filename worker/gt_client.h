/* gt_client.h: the worker's connection to the coordinator (module prefix
 * gt_client_): an nng req socket that redials on its own, and a request
 * helper that retries with exponential backoff until it gets an answer, so a
 * coordinator restart or a network blip only delays a worker. Every request
 * the worker sends is safe to repeat (results are idempotent on the
 * coordinator). */
#ifndef GT_CLIENT_H
#define GT_CLIENT_H

#include <nng/nng.h>
#include <signal.h>

struct cJSON;

typedef struct gt_client {
    nng_socket sock;
    char url[256];
    int timeout_ms;                    /* per attempt */
    volatile sig_atomic_t *stop;       /* give up retrying when set (may be NULL) */
} gt_client;

/* tls_ca: PEM file of the CA that signed the coordinator's certificate,
 * required for tls+tcp:// URLs (the server name is checked), NULL otherwise. */
int gt_client_open(gt_client *c, const char *url, int timeout_ms, volatile sig_atomic_t *stop,
                   const char *tls_ca, char *err, size_t errlen);
void gt_client_close(gt_client *c);
/* Sends req and returns the reply (caller owns) and its type. Retries on
 * transport errors with backoff (0.2 s doubling to 10 s) for at most
 * max_wait_ms (0 = until stop is set). An "error" reply is returned as is. */
struct cJSON *gt_client_call(gt_client *c, const struct cJSON *req, const char **type,
                             int max_wait_ms, char *err, size_t errlen);

#endif
