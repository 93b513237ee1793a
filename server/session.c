/* session.c: the connection -> session bindings of the worker endpoint.
 * A small array searched linearly: one entry per worker connection (two per
 * worker: requests and heartbeats), a few thousand at the most, and each
 * lookup is far cheaper than the SQLite transaction the request runs. */
#include "gt_session.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct binding {
    uint32_t pipe_id;
    int64_t worker_id;
    char digest[GT_SHA256_HEX + 1];
} binding;

struct gt_session_table {
    pthread_mutex_t mu;
    binding *b;
    size_t n, cap;
};

gt_session_table *gt_session_table_new(void)
{
    gt_session_table *t = calloc(1, sizeof *t);
    if (t && pthread_mutex_init(&t->mu, NULL) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

void gt_session_table_free(gt_session_table *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t->b);
    free(t);
}

void gt_session_digest(const char *credential, const char *token, char *out)
{
    /* "\n" cannot occur in a hex credential, so (credential, token) pairs
     * never collide by shifting bytes from one into the other. */
    size_t lc = strlen(credential), lt = strlen(token);
    char *buf = malloc(lc + lt + 2);
    if (!buf) {
        /* No digest can be formed: an all-"!" text that no digest equals
         * refuses the session instead of accepting it. */
        memset(out, '!', GT_SHA256_HEX);
        out[GT_SHA256_HEX] = '\0';
        return;
    }
    memcpy(buf, credential, lc);
    buf[lc] = '\n';
    memcpy(buf + lc + 1, token, lt + 1);
    gt_secret_sha256_hex(buf, lc + lt + 1, out);
    free(buf);
}

static binding *find(gt_session_table *t, uint32_t pipe_id)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->b[i].pipe_id == pipe_id)
            return &t->b[i];
    return NULL;
}

int gt_session_bind(gt_session_table *t, uint32_t pipe_id, int64_t worker_id, const char *digest)
{
    int rc = 0;
    pthread_mutex_lock(&t->mu);
    binding *b = find(t, pipe_id);
    if (!b) {
        if (t->n == t->cap) {
            size_t cap = t->cap ? 2 * t->cap : 16;
            binding *nb = realloc(t->b, cap * sizeof *nb);
            if (!nb) {
                rc = -1;
                goto out;
            }
            t->b = nb;
            t->cap = cap;
        }
        b = &t->b[t->n++];
    }
    b->pipe_id = pipe_id;
    b->worker_id = worker_id;
    snprintf(b->digest, sizeof b->digest, "%s", digest);
out:
    pthread_mutex_unlock(&t->mu);
    return rc;
}

gt_session_check gt_session_verify(gt_session_table *t, uint32_t pipe_id, const char *credential,
                                   const char *token, int64_t claimed_id, int64_t *worker_id)
{
    char digest[GT_SHA256_HEX + 1] = "";
    if (credential)
        gt_session_digest(credential, token, digest);
    gt_session_check rc;
    pthread_mutex_lock(&t->mu);
    binding *b = find(t, pipe_id);
    if (!b)
        rc = GT_SESSION_NO_BINDING;
    else if (!credential)
        rc = GT_SESSION_NO_CREDENTIAL;
    else if (!gt_secret_equal(b->digest, digest))
        rc = GT_SESSION_MISMATCH;
    else if (claimed_id >= 0 && claimed_id != b->worker_id)
        rc = GT_SESSION_WRONG_WORKER;
    else {
        rc = GT_SESSION_OK;
        *worker_id = b->worker_id;
    }
    pthread_mutex_unlock(&t->mu);
    return rc;
}

const char *gt_session_check_name(gt_session_check c)
{
    switch (c) {
    case GT_SESSION_OK: return "ok";
    case GT_SESSION_NO_BINDING: return "no_session";
    case GT_SESSION_NO_CREDENTIAL: return "no_credential";
    case GT_SESSION_MISMATCH: return "bad_credential";
    case GT_SESSION_WRONG_WORKER: return "wrong_worker";
    }
    return "unknown";
}

void gt_session_unbind_pipe(gt_session_table *t, uint32_t pipe_id)
{
    pthread_mutex_lock(&t->mu);
    binding *b = find(t, pipe_id);
    if (b)
        *b = t->b[--t->n];
    pthread_mutex_unlock(&t->mu);
}

void gt_session_unbind_worker(gt_session_table *t, int64_t worker_id)
{
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->n;) {
        if (t->b[i].worker_id == worker_id)
            t->b[i] = t->b[--t->n];
        else
            i++;
    }
    pthread_mutex_unlock(&t->mu);
}

size_t gt_session_count(gt_session_table *t)
{
    pthread_mutex_lock(&t->mu);
    size_t n = t->n;
    pthread_mutex_unlock(&t->mu);
    return n;
}
