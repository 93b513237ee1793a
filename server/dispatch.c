/* dispatch.c: answers workers over nng req/rep. Its threads
 * (dispatch_loop.c) serve requests in store transactions of several,
 * answering none before its transaction commits, so a crash loses nothing
 * that was acknowledged; leases go ahead of results messages. Here: each
 * request served (gt_dispatch_handle), the endpoint started and stopped.
 *
 * Every request but register must come on a connection bound to a worker
 * session and carry its credential (gt_session.h): the worker id in a
 * message is only checked against the session, never trusted.
 *
 * This file is where the protocol ends: it decodes each message (proto/'s
 * helpers) into the C values the store takes (gt_worker_info, gt_report)
 * and answers by the store's return codes (gt_store_error), so the store
 * includes no protocol header. */
#include "gt_dispatch.h"
#include "dispatch_priv.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen_dev.h"
#include "gt_config.h"
#include "gt_json.h"
#include "gt_proto.h"
#include "gt_secret.h"
#include "gt_session.h"
#include "gt_util.h"


uint64_t gt_dispatch_requests(const gt_dispatch *d) { return atomic_load(&d->requests); }

uint64_t gt_dispatch_refused(const gt_dispatch *d, gt_dispatch_refusal why)
{
    return why < GT_DISPATCH_REFUSALS ? atomic_load(&d->refused[why]) : 0;
}

const char *gt_dispatch_refusal_name(gt_dispatch_refusal why)
{
    static const char *names[GT_DISPATCH_REFUSALS] = {
        [GT_REFUSED_TOKEN] = "bad_token",          [GT_REFUSED_NO_SESSION] = "no_session",
        [GT_REFUSED_NO_CREDENTIAL] = "no_credential", [GT_REFUSED_BAD_CREDENTIAL] = "bad_credential",
        [GT_REFUSED_WRONG_WORKER] = "wrong_worker", [GT_REFUSED_UNKNOWN_SESSION] = "unknown_session",
        [GT_REFUSED_NOT_LEASED] = "not_leased",
    };
    return why < GT_DISPATCH_REFUSALS ? names[why] : "unknown";
}

uint64_t gt_dispatch_implausible(const gt_dispatch *d) { return atomic_load(&d->implausible); }

size_t gt_dispatch_sessions(const gt_dispatch *d) { return gt_session_count(d->sessions); }

void gt_dispatch_stats_get(const gt_dispatch *d, gt_dispatch_stats *out)
{
    for (int i = 0; i < GT_DISPATCH_REFUSALS; i++)
        out->refused[i] = atomic_load(&d->refused[i]);
    out->implausible = atomic_load(&d->implausible);
    out->early_leases = atomic_load(&d->early_leases);
    out->replays = atomic_load(&d->replays);
    out->sessions = gt_session_count(d->sessions);
    pthread_mutex_lock((pthread_mutex_t *)&d->hmu);
    memcpy(out->answer, d->answer, sizeof out->answer);
    pthread_mutex_unlock((pthread_mutex_t *)&d->hmu);
}

const char *gt_dispatch_queue_name(gt_dispatch_queue q)
{
    return q == GT_DISPATCH_Q_LEASE ? "lease" : q == GT_DISPATCH_Q_RESULTS ? "results" : "unknown";
}

/* A refusal: counted, logged once per request, and answered with
 * reregister so an honest worker whose connection was replaced (a
 * reconnect, a coordinator restart) attaches again. */
static cJSON *refuse(gt_dispatch *d, gt_dispatch_refusal why, int reregister, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static cJSON *refuse(gt_dispatch *d, gt_dispatch_refusal why, int reregister, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    d->tally->refused[why]++;
    gt_warn("dispatch: refused (%s): %s", gt_dispatch_refusal_name(why), msg);
    cJSON *r = gt_proto_error("%s", msg);
    if (r && (!cJSON_AddStringToObject(r, "refused", gt_dispatch_refusal_name(why)) ||
              (reregister && !cJSON_AddBoolToObject(r, "reregister", 1)))) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}
const char *gt_dispatch_url(const gt_dispatch *d) { return d->url; }

static void copy_str(char *dst, size_t n, const cJSON *j, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    snprintf(dst, n, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

/* A JSON number as an integer, dflt when absent or out of [0, 2^53]: the
 * cast of an out-of-range double is undefined behaviour, and no field read
 * this way (pid, device index, memory, units) can be negative or huge. */
static long long get_ll(const cJSON *j, const char *name, long long dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 9007199254740992.0))
        return dflt;
    return (long long)v->valuedouble;
}

static cJSON *unknown_worker(long long id)
{
    cJSON *r = gt_proto_error("unknown worker %lld: register again", id);
    if (r)
        cJSON_AddBoolToObject(r, "reregister", 1);
    return r;
}

/* The optional "gen_device" of a register message, checked and written
 * back canonical into buf (gen/gen_dev.h); buf "" when absent. A bad one
 * is dropped with the reason (-1), not refused: the field is optional, and
 * a newer worker with a member this coordinator does not know yet must
 * still be able to register; only the space view loses its limits. */
static int gen_device_text(const cJSON *m, char *buf, size_t len, char *err, size_t errlen)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(m, "gen_device");
    gt_gen_dev gd;
    buf[0] = '\0';
    if (!j)
        return 0;
    if (gt_gen_dev_from_json(j, &gd, err, errlen) != 0)
        return -1;
    cJSON *c = gt_gen_dev_to_json(&gd);
    int ok = c && cJSON_PrintPreallocated(c, buf, (int)len, 0);
    cJSON_Delete(c);
    if (!ok) {
        buf[0] = '\0';
        snprintf(err, errlen, "gen_device: out of memory or longer than %zu bytes", len - 1);
        return -1;
    }
    return 0;
}

static cJSON *registered_reply(gt_dispatch *d, int64_t id, const char *credential)
{
    cJSON *r = gt_proto_new(GT_MSG_REGISTERED);
    if (r && (!cJSON_AddNumberToObject(r, "worker_id", (double)id) ||
              !cJSON_AddStringToObject(r, "session", credential) ||
              !cJSON_AddNumberToObject(r, "heartbeat_ms", (double)d->o.heartbeat_ms) ||
              !cJSON_AddNumberToObject(r, "lease_ms", (double)d->o.lease_ms))) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

/* register with "session": a worker's further connection (its heartbeat
 * socket, or any connection after a reconnect or a coordinator restart)
 * joins the session it already has, keeping its id and leases. */
static cJSON *on_attach(gt_dispatch *d, const char *credential, uint32_t pipe)
{
    char err[256], digest[GT_SHA256_HEX + 1];
    int64_t id = 0;
    gt_session_digest(credential, d->token, digest);
    int rc = gt_store_worker_by_session(d->store, digest, &id, err, sizeof err);
    if (rc < 0)
        return gt_proto_error("register: %s", err);
    if (rc == 1)
        return refuse(d, GT_REFUSED_UNKNOWN_SESSION, 1,
                      "unknown session (the coordinator's database or token changed, or the worker "
                      "left): register without one");
    if (gt_session_bind(d->sessions, pipe, id, digest))
        return NULL;
    gt_debug("worker %lld attached a connection", (long long)id);
    return registered_reply(d, id, credential);
}

static cJSON *on_register(gt_dispatch *d, const cJSON *m, uint32_t pipe)
{
    char err[256];
    if (d->token[0]) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(m, "token");
        if (!cJSON_IsString(t) || !gt_secret_equal(d->token, t->valuestring))
            return refuse(d, GT_REFUSED_TOKEN, 0, "unauthorized: wrong or missing worker token");
    }
    const cJSON *sess = cJSON_GetObjectItemCaseSensitive(m, "session");
    if (sess && !cJSON_IsNull(sess)) {
        if (!cJSON_IsString(sess) || strlen(sess->valuestring) != GT_SECRET_HEX)
            return refuse(d, GT_REFUSED_BAD_CREDENTIAL, 1, "register: session must be %d hex digits",
                          GT_SECRET_HEX);
        return on_attach(d, sess->valuestring, pipe);
    }
    gt_worker_info w;
    memset(&w, 0, sizeof w);
    copy_str(w.host, sizeof w.host, m, "host");
    copy_str(w.backend, sizeof w.backend, m, "backend");
    copy_str(w.device_model, sizeof w.device_model, m, "device_model");
    copy_str(w.arch, sizeof w.arch, m, "arch");
    copy_str(w.driver, sizeof w.driver, m, "driver");
    copy_str(w.version, sizeof w.version, m, "version");
    w.pid = (int)get_ll(m, "pid", 0);
    w.device_index = (int)get_ll(m, "device_index", 0);
    w.mem_bytes = get_ll(m, "mem_bytes", 0);
    w.units = (int)get_ll(m, "units", 0);
    if (!w.host[0] || !w.backend[0] || !w.device_model[0])
        return gt_proto_error("register: host, backend and device_model are required");
    if (gen_device_text(m, w.gen_device, sizeof w.gen_device, err, sizeof err) != 0)
        gt_warn("dispatch: worker %s pid %d registers without its %s (the space view uses default "
                "limits for it)", w.host, w.pid, err);
    char credential[GT_SECRET_HEX + 1];
    if (gt_secret_new(credential))
        return gt_proto_error("register: no randomness for a session credential");
    gt_session_digest(credential, d->token, w.session_digest);
    int64_t id;
    if (gt_store_register_worker(d->store, &w, gt_wall_ms(), &id, err, sizeof err))
        return gt_proto_error("register: %s", err);
    if (gt_session_bind(d->sessions, pipe, id, w.session_digest))
        return NULL;
    gt_info("worker %lld registered: %s pid %d %s[%d] %s", (long long)id, w.host, w.pid, w.backend,
            w.device_index, w.device_model);
    return registered_reply(d, id, credential);
}

static cJSON *on_heartbeat(gt_dispatch *d, const cJSON *m, long long wid)
{
    char err[256];
    /* "job_id": the job the worker works on (0: none); absent from older
     * workers, whose every lease is extended as before. */
    long long job = gt_proto_int_or(m, "job_id", -1, 1LL << 53, -1);
    switch (gt_store_heartbeat(d->store, wid, job, gt_wall_ms(), d->o.lease_ms, err, sizeof err)) {
    case 0:
        return gt_proto_new(GT_MSG_ACK);
    case GT_STORE_E_UNKNOWN_WORKER:
        return unknown_worker(wid);
    default:
        return gt_proto_error("heartbeat: %s", err);
    }
}

/* Adds a JSON text column the store wrote (null when absent) as it is: a
 * raw item, printed verbatim into the reply. Parsing it into a tree only to
 * print it again (a screen job's candidates: 64 configs) was a tenth of the
 * dispatcher's time under 256 simulated workers (bench/coord_bench.sh). The
 * store writes these columns from cJSON prints, so they are valid JSON. */
static int add_raw(cJSON *o, const char *name, const char *txt)
{
    cJSON *v = txt ? cJSON_CreateRaw(txt) : cJSON_CreateNull();
    if (!v)
        return 0;
    cJSON_AddItemToObject(o, name, v);
    return 1;
}

static cJSON *on_lease(gt_dispatch *d, long long wid)
{
    char err[256];
    gt_job job;
    int rc = gt_store_lease(d->store, wid, gt_wall_ms(), d->o.lease_ms, &job, err, sizeof err);
    if (rc == GT_STORE_E_UNKNOWN_WORKER)
        return unknown_worker(wid);
    if (rc < 0)
        return gt_proto_error("lease: %s", err);
    if (rc == 0) {
        cJSON *r = gt_proto_new(GT_MSG_NONE);
        if (r && !cJSON_AddNumberToObject(r, "retry_ms", job.retry_ms > 0 ? job.retry_ms : GT_RETRY_IDLE_MS)) {
            cJSON_Delete(r);
            return NULL;
        }
        return r;
    }
    cJSON *r = gt_proto_new(GT_MSG_JOB), *j = cJSON_CreateObject();
    int ok = r && j && cJSON_AddNumberToObject(j, "id", (double)job.id) &&
             cJSON_AddNumberToObject(j, "run_id", (double)job.run_id) &&
             cJSON_AddNumberToObject(j, "problem_id", (double)job.problem_id) &&
             cJSON_AddStringToObject(j, "kind", job.kind) &&
             cJSON_AddStringToObject(j, "backend", job.backend) &&
             cJSON_AddNumberToObject(j, "attempt", job.attempts) &&
             add_raw(j, "problem", job.problem) && add_raw(j, "candidates", job.candidates) &&
             add_raw(j, "baseline", job.baseline) && add_raw(j, "timing", job.timing) &&
             (job.keep <= 0 || cJSON_AddNumberToObject(j, "keep", job.keep));
    if (ok) {
        cJSON_AddItemToObject(r, "job", j);
        j = NULL;
        gt_debug("job %lld (%s, run %lld) leased to worker %lld", (long long)job.id, job.kind,
                 (long long)job.run_id, wid);
    }
    cJSON_Delete(j);
    gt_job_free(&job);
    if (!ok) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

/* ---- the request parse's memory ----
 * cJSON allocates every node, key and string of a message on its own (a
 * results message of 64 CPU results: about 2000 mallocs and as many frees;
 * the parse was a tenth of the dispatcher's time). The dispatcher thread
 * parses each request into a bump arena instead: cJSON's hooks (process-
 * wide, installed once) take memory from the calling thread's arena only
 * while that thread is parsing (arena.on), and free nothing that lies in
 * it; everything else, on every thread, is plain malloc and free, as
 * without hooks (cJSON's printer then grows its buffer by malloc and copy,
 * not realloc). handle() deletes the message before the next parse resets
 * the arena, and keeps no pointer into it (the store gets copies:
 * gt_report, the session's digest). A message larger than the arena goes on
 * in malloc'd memory. */
#define PARSE_ARENA_BYTES ((size_t)4 << 20)

static _Thread_local struct {
    char *base;
    size_t used, cap;
    int on;
} arena;

static void *arena_malloc(size_t n)
{
    if (arena.on) {
        size_t a = (n + 15) & ~(size_t)15;
        if (a >= n && arena.cap - arena.used >= a) {
            void *p = arena.base + arena.used;
            arena.used += a;
            return p;
        }
    }
    return malloc(n);
}

static void arena_free(void *p)
{
    uintptr_t u = (uintptr_t)p, b = (uintptr_t)arena.base;
    if (p && u >= b && u - b < arena.cap)
        return; /* freed all at once by the next parse */
    free(p);
}

static void install_hooks(void)
{
    cJSON_Hooks h = {arena_malloc, arena_free};
    cJSON_InitHooks(&h);
}

void gt_dispatch_arena_open(void)
{
    /* none: cJSON's malloc'd nodes, as before */
    if ((arena.base = malloc(PARSE_ARENA_BYTES)))
        arena.cap = PARSE_ARENA_BYTES;
}

void gt_dispatch_arena_close(void)
{
    free(arena.base);
    arena.base = NULL;
    arena.cap = arena.used = 0;
}

/* The message in buf, parsed into the thread's arena (gt_proto_decode). */
static cJSON *decode_in_arena(const void *buf, size_t len, const char **type, char *err,
                              size_t errlen)
{
    arena.used = 0;
    arena.on = arena.base != NULL;
    cJSON *m = gt_proto_decode(buf, len, type, err, errlen);
    arena.on = 0;
    return m;
}

/* A JSON value's compact text in *out (malloc'd), as cJSON_PrintUnformatted
 * writes it (gt_json_print: cJSON's own printer took 9.5 ms of the
 * single dispatcher thread for an enumeration's 4632 configs). 0, or -1 out
 * of memory. */
static int print_dup(const cJSON *v, char **out)
{
    *out = gt_json_print(v);
    return *out ? 0 : -1;
}

/* gt_cfg_hash of a config whose canonical text is already at hand: the same
 * FNV-1a over the same text, without canonicalising the config a second
 * time (that was a tenth of decoding a results message). */
static void hash_canonical(const char *canonical, char out[17])
{
    uint64_t h = gt_fnv1a64(canonical, strlen(canonical), GT_FNV_SEED);
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

int gt_dispatch_decode_report(const cJSON *m, gt_report *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->baseline_us = NAN;
    long long job_id;
    if (gt_proto_get_int(m, "job_id", &job_id, err, errlen))
        return -1;
    r->job_id = job_id;
    r->done = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "done"));
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "error");
    if (cJSON_IsString(v) && v->valuestring[0] && !(r->error = strdup(v->valuestring)))
        goto oom;
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(m, "results"), *it;
    int n = cJSON_GetArraySize(results);
    if (n > 0 && !(r->results = calloc((size_t)n, sizeof *r->results)))
        goto oom;
    cJSON_ArrayForEach(it, results)
    {
        gt_result pr;
        if (gt_proto_result_from_json(it, &pr, err, errlen))
            goto fail;
        gt_report_result *o = &r->results[r->nresults];
        /* The coordinator keeps configs canonical: one text and hash per
         * config whatever order a worker wrote its keys in. */
        if (!(o->config = gt_cfg_canonical(pr.config)))
            goto oom;
        hash_canonical(o->config, o->config_hash);
        r->nresults++;
        o->is_baseline = pr.is_baseline;
        o->valid = pr.valid;
        o->time_us = pr.time_us;
        o->spread = pr.spread;
        o->tflops = pr.tflops;
        o->rel_err = pr.rel_err;
        o->rounds = pr.rounds;
        o->uplift = pr.uplift;
        o->uplift_lo = pr.uplift_lo;
        o->uplift_hi = pr.uplift_hi;
        o->gpu = pr.gpu;
        o->graph = pr.graph;
        snprintf(o->reason, sizeof o->reason, "%s", pr.reason);
    }
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(m, "baseline");
    if (cJSON_IsObject(b)) {
        const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(b, "config");
        if (cJSON_IsObject(cfg) && !(r->baseline_config = gt_cfg_canonical(cfg)))
            goto oom;
        v = cJSON_GetObjectItemCaseSensitive(b, "time_us");
        r->baseline_us = cJSON_IsNumber(v) ? v->valuedouble : NAN;
        v = cJSON_GetObjectItemCaseSensitive(b, "spread");
        r->baseline_spread = cJSON_IsNumber(v) ? v->valuedouble : 0;
    }
    /* An enumeration's answer, kept as the worker wrote it: its order is
     * the backend's ranking, which the planner keeps. */
    v = cJSON_GetObjectItemCaseSensitive(m, "candidates");
    if (cJSON_IsArray(v) && print_dup(v, &r->enum_candidates))
        goto oom;
    v = cJSON_GetObjectItemCaseSensitive(m, "baseline_config");
    if (cJSON_IsObject(v) && print_dup(v, &r->enum_baseline))
        goto oom;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    gt_report_fini(r);
    return -1;
}

static cJSON *on_results(gt_dispatch *d, const cJSON *m, long long wid)
{
    char err[256];
    int cancelled = 0;
    size_t accepted = 0, rejected = 0;
    gt_report rep;
    if (gt_dispatch_decode_report(m, &rep, err, sizeof err)) {
        gt_warn("results from worker %lld refused: %s", wid, err);
        return gt_proto_error("results: %s", err);
    }
    int rc = gt_store_report(d->store, wid, &rep, gt_wall_ms(), d->o.lease_ms, &cancelled,
                             &accepted, &rejected, err, sizeof err);
    gt_report_fini(&rep);
    switch (rc) {
    case 0:
        break;
    case GT_STORE_E_UNKNOWN_WORKER:
        return unknown_worker(wid);
    case GT_STORE_E_NOT_LEASED:
        return refuse(d, GT_REFUSED_NOT_LEASED, 0, "results: %s", err);
    default:
        gt_warn("results from worker %lld refused: %s", wid, err);
        return gt_proto_error("results: %s", err);
    }
    d->tally->implausible += rejected;
    cJSON *r = gt_proto_new(GT_MSG_ACK);
    if (r && (!cJSON_AddNumberToObject(r, "accepted", (double)accepted) ||
              !cJSON_AddBoolToObject(r, "cancelled", cancelled))) {
        cJSON_Delete(r);
        return NULL;
    }
    return r;
}

static cJSON *on_bye(gt_dispatch *d, long long wid)
{
    char err[256];
    if (gt_store_worker_bye(d->store, wid, gt_wall_ms(), err, sizeof err))
        return gt_proto_error("bye: %s", err);
    gt_session_unbind_worker(d->sessions, wid);
    gt_info("worker %lld left", wid);
    return gt_proto_new(GT_MSG_ACK);
}

/* gt_dispatch_handle's request, counting into d->tally. */
static cJSON *serve_request(gt_dispatch *d, const void *buf, size_t len, uint32_t pipe)
{
    char err[256];
    const char *type = NULL;
    cJSON *m = decode_in_arena(buf, len, &type, err, sizeof err);
    if (!m)
        return gt_proto_error("bad message: %s", err);
    cJSON *reply = NULL;
    if (!strcmp(type, GT_MSG_REGISTER)) {
        reply = on_register(d, m, pipe);
    } else {
        /* The session decides who is asking; a worker_id in the message
         * must name the same worker (older field, kept for logs). */
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "session");
        const cJSON *idj = cJSON_GetObjectItemCaseSensitive(m, "worker_id");
        long long claimed = -1;
        if (idj && gt_proto_get_int(m, "worker_id", &claimed, err, sizeof err))
            claimed = -2; /* present but not an id: never a session's */
        int64_t wid = 0;
        gt_session_check chk = gt_session_verify(d->sessions, pipe, cJSON_IsString(c) ? c->valuestring : NULL,
                                                 d->token, claimed, &wid);
        switch (chk) {
        case GT_SESSION_OK: break;
        case GT_SESSION_NO_BINDING:
            reply = refuse(d, GT_REFUSED_NO_SESSION, 1,
                           "%s: unauthenticated connection: register (or attach) first", type);
            break;
        case GT_SESSION_NO_CREDENTIAL:
            reply = refuse(d, GT_REFUSED_NO_CREDENTIAL, 1, "%s: the request carries no session", type);
            break;
        case GT_SESSION_MISMATCH:
            reply = refuse(d, GT_REFUSED_BAD_CREDENTIAL, 1,
                           "%s: the session is not this connection's", type);
            break;
        case GT_SESSION_WRONG_WORKER:
            reply = refuse(d, GT_REFUSED_WRONG_WORKER, 1,
                           "%s: worker_id %lld is not this session's worker", type, claimed);
            break;
        }
        if (chk != GT_SESSION_OK)
            ;
        else if (!strcmp(type, GT_MSG_HEARTBEAT))
            reply = on_heartbeat(d, m, wid);
        else if (!strcmp(type, GT_MSG_LEASE))
            reply = on_lease(d, wid);
        else if (!strcmp(type, GT_MSG_RESULTS))
            reply = on_results(d, m, wid);
        else if (!strcmp(type, GT_MSG_BYE))
            reply = on_bye(d, wid);
        else
            reply = gt_proto_error("unknown message type %s", type);
    }
    cJSON_Delete(m);
    return reply ? reply : gt_proto_error("out of memory");
}

void gt_dispatch_tally_add(gt_dispatch *d, const gt_dispatch_tally *t)
{
    for (int i = 0; i < GT_DISPATCH_REFUSALS; i++)
        if (t->refused[i])
            atomic_fetch_add(&d->refused[i], t->refused[i]);
    if (t->implausible)
        atomic_fetch_add(&d->implausible, t->implausible);
}

cJSON *gt_dispatch_handle(gt_dispatch *d, const void *buf, size_t len, uint32_t pipe,
                          gt_dispatch_tally *t)
{
    memset(t, 0, sizeof *t);
    d->tally = t;
    cJSON *reply = serve_request(d, buf, len, pipe);
    d->tally = NULL;
    return reply;
}

/* nng calls this on its own thread when a connection closes. */
static void on_pipe_gone(nng_pipe p, nng_pipe_ev ev, void *arg)
{
    (void)ev;
    gt_dispatch *d = arg;
    gt_session_unbind_pipe(d->sessions, (uint32_t)nng_pipe_id(p));
}

gt_dispatch *gt_dispatch_start(gt_store *s, const gt_dispatch_opts *o, char *err, size_t errlen)
{
    gt_dispatch *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (pthread_mutex_init(&d->hmu, NULL) != 0) {
        snprintf(err, errlen, "dispatch: mutex");
        free(d);
        return NULL;
    }
    d->store = s;
    d->o = *o;
    static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;
    pthread_once(&hooks_once, install_hooks);
    if (!(d->sessions = gt_session_table_new())) {
        snprintf(err, errlen, "out of memory");
        pthread_mutex_destroy(&d->hmu);
        free(d);
        return NULL;
    }
    snprintf(d->url, sizeof d->url, "%s", o->url);
    snprintf(d->token, sizeof d->token, "%s", o->token ? o->token : "");
    d->o.url = d->url;
    d->o.token = d->token;
    /* raw: many requests in flight, answered in batches (loop) */
    int rv = nng_rep0_open_raw(&d->sock);
    if (rv != 0) {
        snprintf(err, errlen, "nng rep socket: %s", nng_strerror(rv));
        gt_session_table_free(d->sessions);
        pthread_mutex_destroy(&d->hmu);
        free(d);
        return NULL;
    }
    if ((rv = nng_setopt_ms(d->sock, NNG_OPT_RECVTIMEO, 200)) != 0 ||
        (rv = nng_setopt_size(d->sock, NNG_OPT_RECVMAXSZ, GT_PROTO_MAX_MSG)) != 0 ||
        (rv = nng_pipe_notify(d->sock, NNG_PIPE_EV_REM_POST, on_pipe_gone, d)) != 0) {
        snprintf(err, errlen, "nng options: %s", nng_strerror(rv));
        goto fail;
    }
    nng_listener l;
    int tls = !strncmp(d->url, "tls+tcp://", 10);
    if (tls && !(o->tls_cert_key && *o->tls_cert_key)) {
        snprintf(err, errlen, "%s: a tls+tcp:// endpoint needs --tls-cert-key FILE", d->url);
        goto fail;
    }
    if ((rv = nng_listener_create(&l, d->sock, d->url)) != 0 ||
        (tls && (rv = nng_listener_set_string(l, NNG_OPT_TLS_CERT_KEY_FILE, o->tls_cert_key)) != 0) ||
        (rv = nng_listener_start(l, 0)) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", d->url, nng_strerror(rv));
        goto fail;
    }
    /* With port 0 the system picks a free port: report the one bound. */
    int port = 0;
    const char *colon = strrchr(d->url, ':');
    if ((tls || !strncmp(d->url, "tcp://", 6)) && colon && !strcmp(colon, ":0") &&
        nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port) == 0) {
        char base[200];
        snprintf(base, sizeof base, "%.*s", (int)(colon - d->url), d->url);
        snprintf(d->url, sizeof d->url, "%.200s:%d", base, port);
    }
    if (gt_dispatch_threads_start(d, err, errlen) != 0)
        goto fail;
    gt_info("worker endpoint listening on %s", d->url);
    return d;
fail:
    nng_close(d->sock);
    gt_session_table_free(d->sessions);
    pthread_mutex_destroy(&d->hmu);
    free(d);
    return NULL;
}

/* nng_close on a thread of its own: see gt_dispatch_stop. */
static void *close_sock(void *arg)
{
    gt_dispatch *d = arg;
    nng_close(d->sock);
    atomic_store(&d->closed, 1);
    return NULL;
}

/* How long gt_dispatch_stop waits for nng_close. */
#define CLOSE_WAIT_MS 5000

void gt_dispatch_stop(gt_dispatch *d)
{
    if (!d)
        return;
    gt_dispatch_threads_stop(d);
    /* nng before 1.8 (Debian 12 ships 1.5.2) can deadlock inside nng_close
     * while it tears down connected pipes (nanomsg/nng#1543, #1813): the
     * coordinator then never exits, and a supervisor or a test waiting on
     * its exit status (a lost database must exit 1 at once) waits forever.
     * So the socket is closed on a thread of its own, the pipe callback
     * removed first, and the wait is bounded: on a hang the socket and
     * this dispatcher are left to the exiting process (its results are in
     * the store already: nothing is lost but memory). */
    nng_pipe_notify(d->sock, NNG_PIPE_EV_REM_POST, NULL, NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, close_sock, d) != 0) {
        close_sock(d);
    } else {
        for (int i = 0; i < CLOSE_WAIT_MS / 10 && !atomic_load(&d->closed); i++) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (!atomic_load(&d->closed)) {
            gt_warn("the worker endpoint did not close within %d s (a known nng_close deadlock in"
                    " nng < 1.8): leaving it to the exit",
                    CLOSE_WAIT_MS / 1000);
            pthread_detach(t);
            return;
        }
        pthread_join(t, NULL);
    }
    gt_session_table_free(d->sessions);
    pthread_mutex_destroy(&d->hmu);
    free(d);
}
