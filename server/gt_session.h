/* gt_session.h: authenticated worker sessions (module prefix gt_session_).
 *
 * A worker that registers with the right token gets a session credential:
 * 128 random bits, shown to it once. The store keeps only its digest,
 * SHA-256(credential "\n" token), so a coordinator restarted with another
 * token finds no earlier session valid. Each nng connection (pipe) that
 * registered or attached with the token is bound to that session here, in
 * memory; every later request must come on a bound connection and carry
 * the credential. A connection that closes loses its binding; a worker
 * re-attaches its new connection with the token and its credential
 * (PROTOCOL.md, "Sessions"). Worker ids are never credentials.
 *
 * Thread safety: every function may be called from any thread (the
 * dispatcher's loop and nng's pipe callbacks). */
#ifndef GT_SESSION_H
#define GT_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "gt_secret.h"

typedef struct gt_session_table gt_session_table;

gt_session_table *gt_session_table_new(void);
void gt_session_table_free(gt_session_table *t);

/* The digest the store keeps for a credential under the coordinator's
 * token ("" when it runs without one), in out[GT_SHA256_HEX + 1]. */
void gt_session_digest(const char *credential, const char *token, char *out);

/* Binds connection pipe_id to a worker's session (replacing an earlier
 * binding of that connection). 0, or -1 when out of memory. */
int gt_session_bind(gt_session_table *t, uint32_t pipe_id, int64_t worker_id, const char *digest);
/* Why a request is refused, or GT_SESSION_OK. */
typedef enum gt_session_check {
    GT_SESSION_OK = 0,
    GT_SESSION_NO_BINDING,   /* this connection never registered or attached */
    GT_SESSION_NO_CREDENTIAL,/* the request carries no "session" */
    GT_SESSION_MISMATCH,     /* the credential is not this connection's session */
    GT_SESSION_WRONG_WORKER, /* worker_id names another worker than the session's */
} gt_session_check;
/* Checks a request that came on pipe_id with the credential (NULL when
 * absent) and the worker id it names (< 0 when absent); on success *worker_id
 * is the session's worker. */
gt_session_check gt_session_verify(gt_session_table *t, uint32_t pipe_id, const char *credential,
                                   const char *token, int64_t claimed_id, int64_t *worker_id);
const char *gt_session_check_name(gt_session_check c);
/* A connection closed: its binding goes. */
void gt_session_unbind_pipe(gt_session_table *t, uint32_t pipe_id);
/* A worker left: every connection bound to it loses its binding. */
void gt_session_unbind_worker(gt_session_table *t, int64_t worker_id);
/* Connections bound now (for tests and metrics). */
size_t gt_session_count(gt_session_table *t);

#endif
