/* events.c: GET /v1/runs/{id}/events, live progress of a run as
 * server-sent events (text/event-stream).
 *
 * The stream is a libmicrohttpd response whose content-reader callback polls
 * the store: a cheap fingerprint (gt_store_run_fingerprint) every 0.5 s, and
 * the run summary only when the fingerprint moved; an `event: progress` goes
 * out when the summary (all but the clock-driven elapsed_s and eta_s)
 * differs from the last one sent, an `event: end` once the run left
 * 'running', and a comment line after 15 s of silence for proxies. A
 * client that hung up is found at the next poll (peer_closed).
 *
 * Waiting never holds one of the server's pool threads: with nothing to
 * send, the callback suspends its connection and a ticker thread resumes the
 * suspended ones every 0.5 s. Summaries are shared between streams of one
 * run through a small cache, so many viewers cost one query per change.
 *
 * Suspend/resume rules (microhttpd.h): suspend only from the callback,
 * never resume a connection that is not suspended, and leave none suspended
 * at MHD_stop_daemon. A stream's state field, under the mutex, makes the
 * ticker resume only connections whose suspend call has returned. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "gt_store_stats.h"
#include "http_priv.h"

#define POLL_MS 500.0         /* store polls of one stream, at most this often */
#define TICK_MS 500           /* the ticker's period: the wait between polls */
#define BEAT_MS 15000.0       /* silence before a comment line */
#define CACHE_SLOTS 16
#define CACHE_MAX_AGE_MS 1000.0

typedef enum { ST_RUNNING, ST_SUSPENDING, ST_SUSPENDED } stream_state;

typedef struct stream {
    gt_events *e;
    struct MHD_Connection *c;
    int64_t run_id;
    gt_str out;                 /* bytes not yet handed to MHD, from off */
    size_t off;
    double next_poll, next_beat;
    char fp[512];               /* fingerprint of the last poll */
    char *last_key;             /* summary without clock fields, last sent */
    uint64_t seq;               /* event ids */
    int ended;                  /* the end event is queued */
    stream_state state;         /* under e->mu */
    struct stream *prev, *next; /* under e->mu */
} stream;

typedef struct cache_slot {
    int64_t run_id;
    char fp[512];
    char state[16];
    char *json, *key;
    double at;
} cache_slot;

struct gt_events {
    gt_store *store;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t ticker;
    int ticker_started, ticker_stop, stopping;
    unsigned active, max;
    stream *head;
    struct MHD_Connection **batch; /* the ticker's resume list, max entries */
    cache_slot cache[CACHE_SLOTS];
};

/* ------------------------------------------------------------ summaries */

/* The summary of a run for fingerprint fp: from the cache when another
 * stream computed it lately, else from the store. 0, or -1. */
static int summary_for(gt_events *e, int64_t run_id, const char *fp, char **json, char **key,
                       char *state, size_t statelen)
{
    double now = gt_mono_ms();
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < CACHE_SLOTS; i++) {
        cache_slot *cs = &e->cache[i];
        if (cs->json && cs->run_id == run_id && !strcmp(cs->fp, fp) &&
            now - cs->at < CACHE_MAX_AGE_MS) {
            *json = strdup(cs->json);
            *key = strdup(cs->key);
            snprintf(state, statelen, "%s", cs->state);
            pthread_mutex_unlock(&e->mu);
            if (*json && *key)
                return 0;
            free(*json);
            free(*key);
            return -1;
        }
    }
    pthread_mutex_unlock(&e->mu);
    char err[256];
    int found = 0;
    cJSON *j = gt_store_run_summary(e->store, run_id, gt_wall_ms(), &found, err, sizeof err);
    if (!j)
        return -1;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "state");
    snprintf(state, statelen, "%s", cJSON_IsString(st) ? st->valuestring : "");
    *json = cJSON_PrintUnformatted(j);
    cJSON_DeleteItemFromObjectCaseSensitive(j, "elapsed_s");
    cJSON_DeleteItemFromObjectCaseSensitive(j, "eta_s");
    *key = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!*json || !*key)
        goto fail;
    /* Keep a copy: the same run's slot, else an empty or the oldest one. */
    pthread_mutex_lock(&e->mu);
    cache_slot *slot = &e->cache[0];
    for (int i = 0; i < CACHE_SLOTS; i++) {
        cache_slot *cs = &e->cache[i];
        if (cs->json && cs->run_id == run_id) {
            slot = cs;
            break;
        }
        if (!cs->json || (slot->json && cs->at < slot->at))
            slot = cs;
    }
    char *cj = strdup(*json), *ck = strdup(*key);
    if (cj && ck) {
        free(slot->json);
        free(slot->key);
        slot->json = cj;
        slot->key = ck;
        slot->run_id = run_id;
        slot->at = now;
        snprintf(slot->fp, sizeof slot->fp, "%s", fp);
        snprintf(slot->state, sizeof slot->state, "%s", state);
    } else {
        free(cj);
        free(ck);
    }
    pthread_mutex_unlock(&e->mu);
    return 0;
fail:
    free(*json);
    free(*key);
    *json = *key = NULL;
    return -1;
}

/* Queues an event: "event:", "id:", one data line (compact JSON has no
 * line breaks) and the blank line that ends it. */
static void emit(stream *st, const char *event, const char *data)
{
    gt_str_printf(&st->out, "event: %s\nid: %llu\ndata: %s\n\n", event,
                  (unsigned long long)++st->seq, data);
    st->next_beat = gt_mono_ms() + BEAT_MS;
}

/* One look at the store; queues what changed. Errors are transient (a busy
 * database): the next poll tries again. */
static void poll_run(stream *st)
{
    char fp[512];
    int f = gt_store_run_fingerprint(st->e->store, st->run_id, fp, sizeof fp);
    if (f < 0)
        return;
    if (f == 0) {
        char data[96];
        snprintf(data, sizeof data, "{\"id\":%lld,\"state\":\"deleted\"}", (long long)st->run_id);
        emit(st, "end", data);
        st->ended = 1;
        return;
    }
    if (!strcmp(fp, st->fp))
        return;
    char *json = NULL, *key = NULL, state[16];
    if (summary_for(st->e, st->run_id, fp, &json, &key, state, sizeof state))
        return;
    snprintf(st->fp, sizeof st->fp, "%s", fp);
    if (!st->last_key || strcmp(key, st->last_key)) {
        emit(st, "progress", json);
        free(st->last_key);
        st->last_key = key;
        key = NULL;
    }
    if (strcmp(state, "running")) {
        emit(st, "end", json);
        st->ended = 1;
    }
    free(json);
    free(key);
}

/* ------------------------------------------------------------ the stream */

static ssize_t drain(stream *st, char *buf, size_t max)
{
    size_t n = st->out.len - st->off;
    if (n > max)
        n = max;
    memcpy(buf, st->out.s + st->off, n);
    st->off += n;
    if (st->off == st->out.len) {
        st->out.len = 0;
        st->off = 0;
    }
    return (ssize_t)n;
}

/* Whether the client hung up. MHD only notices when a write fails, which
 * for a quiet stream is the second keepalive, half a minute later; a peek
 * sees the FIN at once (it reads 0 bytes and consumes nothing). */
static int peer_closed(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return 0;
    char b;
    ssize_t n = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    stream *st = cls;
    gt_events *e = st->e;
    (void)pos;
    if (st->out.oom)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    if (st->off < st->out.len)
        return drain(st, buf, max);
    if (st->ended)
        return MHD_CONTENT_READER_END_OF_STREAM;
    pthread_mutex_lock(&e->mu);
    int stopping = e->stopping;
    pthread_mutex_unlock(&e->mu);
    if (stopping)
        return MHD_CONTENT_READER_END_OF_STREAM;
    double now = gt_mono_ms();
    if (now >= st->next_poll) {
        if (peer_closed(st->c))
            return MHD_CONTENT_READER_END_WITH_ERROR; /* frees the slot now */
        st->next_poll = now + POLL_MS;
        poll_run(st);
    }
    if (st->out.len == 0 && now >= st->next_beat) {
        gt_str_append(&st->out, ": keepalive\n\n", 13);
        st->next_beat = now + BEAT_MS;
    }
    if (st->out.oom)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    if (st->out.len)
        return drain(st, buf, max);
    if (st->ended)
        return MHD_CONTENT_READER_END_OF_STREAM;
    /* Nothing to say: wait for the ticker without holding this thread. */
    pthread_mutex_lock(&e->mu);
    if (e->stopping) {
        pthread_mutex_unlock(&e->mu);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    st->state = ST_SUSPENDING;
    pthread_mutex_unlock(&e->mu);
    MHD_suspend_connection(st->c);
    pthread_mutex_lock(&e->mu);
    int resume_now = e->stopping; /* shutdown went by while we suspended */
    st->state = resume_now ? ST_RUNNING : ST_SUSPENDED;
    pthread_mutex_unlock(&e->mu);
    if (resume_now)
        MHD_resume_connection(st->c);
    return 0;
}

/* MHD destroys the response when the connection is done with it, however it
 * ended: this is where a stream leaves the list. */
static void stream_free(void *cls)
{
    stream *st = cls;
    gt_events *e = st->e;
    pthread_mutex_lock(&e->mu);
    if (st->prev)
        st->prev->next = st->next;
    else
        e->head = st->next;
    if (st->next)
        st->next->prev = st->prev;
    e->active--;
    pthread_mutex_unlock(&e->mu);
    gt_str_free(&st->out);
    free(st->last_key);
    free(st);
}

enum MHD_Result gt_http_events(gt_req *q, int64_t run_id)
{
    gt_events *e = q->h->events;
    char fp[512];
    int f = gt_store_run_fingerprint(q->h->rstore, run_id, fp, sizeof fp);
    if (f == 0)
        return gt_http_send_error(q, MHD_HTTP_NOT_FOUND, NULL, "run %lld not found",
                                  (long long)run_id);
    if (f < 0)
        return gt_http_send_error(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "database error");
    stream *st = calloc(1, sizeof *st);
    if (!st)
        return MHD_NO;
    st->e = e;
    st->c = q->c;
    st->run_id = run_id;
    gt_str_init(&st->out);
    pthread_mutex_lock(&e->mu);
    int full = e->active >= e->max || e->stopping;
    if (!full) {
        e->active++; /* the slot is taken now; stream_free gives it back */
        st->next = e->head;
        if (e->head)
            e->head->prev = st;
        e->head = st;
    }
    pthread_mutex_unlock(&e->mu);
    if (full) {
        gt_str_free(&st->out);
        free(st);
        return gt_http_send_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
                                  "too many event streams (limit %u): poll /v1/runs/%lld instead",
                                  e->max, (long long)run_id);
    }
    /* The reconnection delay, then the current state at once. (The ticker
     * only touches suspended streams: this one is not yet.) */
    gt_str_append(&st->out, "retry: 3000\n\n", 13);
    poll_run(st);
    st->next_poll = gt_mono_ms() + POLL_MS;
    st->next_beat = gt_mono_ms() + BEAT_MS;
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, reader, st, stream_free);
    if (!r) {
        stream_free(st);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream; charset=utf-8");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(r, "X-Accel-Buffering", "no"); /* nginx: pass events at once */
    enum MHD_Result ret = gt_http_queue(q, MHD_HTTP_OK, r);
    MHD_destroy_response(r); /* a queued response lives on; else this frees st */
    return ret;
}

/* ------------------------------------------------------------ lifecycle */

/* Takes every suspended stream (its suspend call returned) out of waiting;
 * the caller resumes the connections in e->batch after unlocking. */
static unsigned take_suspended(gt_events *e)
{
    unsigned n = 0;
    for (stream *st = e->head; st && n < e->max; st = st->next)
        if (st->state == ST_SUSPENDED) {
            st->state = ST_RUNNING;
            e->batch[n++] = st->c;
        }
    return n;
}

static void *ticker_main(void *arg)
{
    gt_events *e = arg;
    pthread_mutex_lock(&e->mu);
    while (!e->ticker_stop) {
        struct timespec ts = gt_time_after_ms(CLOCK_MONOTONIC, TICK_MS);
        int rc = 0;
        while (!e->ticker_stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&e->cv, &e->mu, &ts);
        if (e->ticker_stop)
            break;
        unsigned n = take_suspended(e);
        /* A connection in the batch stays suspended in MHD until resumed
         * here, so MHD cannot close and free it in between. */
        pthread_mutex_unlock(&e->mu);
        for (unsigned i = 0; i < n; i++)
            MHD_resume_connection(e->batch[i]);
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

gt_events *gt_events_new(gt_store *s, unsigned max_streams)
{
    gt_events *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->store = s;
    e->max = max_streams ? max_streams : GT_EVENTS_MAX_STREAMS;
    pthread_condattr_t ca;
    if (!(e->batch = calloc(e->max, sizeof *e->batch)) || pthread_mutex_init(&e->mu, NULL)) {
        free(e->batch);
        free(e);
        return NULL;
    }
    if (pthread_condattr_init(&ca) || pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) ||
        pthread_cond_init(&e->cv, &ca)) {
        pthread_mutex_destroy(&e->mu);
        free(e->batch);
        free(e);
        return NULL;
    }
    pthread_condattr_destroy(&ca);
    if (pthread_create(&e->ticker, NULL, ticker_main, e)) {
        gt_events_free(e);
        return NULL;
    }
    e->ticker_started = 1;
    return e;
}

static void stop_ticker(gt_events *e)
{
    pthread_mutex_lock(&e->mu);
    e->ticker_stop = 1;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    if (e->ticker_started) {
        pthread_join(e->ticker, NULL);
        e->ticker_started = 0;
    }
}

void gt_events_shutdown(gt_events *e)
{
    if (!e)
        return;
    /* The ticker goes first so that no resume is in flight, then every
     * stream learns it must end and the suspended ones are woken to do so. */
    stop_ticker(e);
    pthread_mutex_lock(&e->mu);
    e->stopping = 1;
    unsigned n = take_suspended(e);
    pthread_mutex_unlock(&e->mu);
    for (unsigned i = 0; i < n; i++)
        MHD_resume_connection(e->batch[i]);
}

void gt_events_free(gt_events *e)
{
    if (!e)
        return;
    stop_ticker(e);
    for (int i = 0; i < CACHE_SLOTS; i++) {
        free(e->cache[i].json);
        free(e->cache[i].key);
    }
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e->batch);
    free(e);
}

unsigned gt_events_active(gt_events *e)
{
    if (!e)
        return 0;
    pthread_mutex_lock(&e->mu);
    unsigned n = e->active;
    pthread_mutex_unlock(&e->mu);
    return n;
}

unsigned gt_events_max(const gt_events *e) { return e ? e->max : 0; }
