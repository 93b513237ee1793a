/* gt_proto.h: the coordinator <-> worker protocol (module prefix gt_proto_).
 *
 * Transport: nng req/rep over TCP; the worker sends a request, the coordinator
 * answers each one. Every message is one JSON object with "v" (protocol
 * version) and "type". PROTOCOL.md documents every message and field.
 *
 * proto/ owns the wire format only; it may include common/. Only the
 * coordinator's dispatcher (server/dispatch.c) and the worker's client side
 * (worker/) speak it: the store takes C structs, and tuning-policy
 * constants live in common/gt_policy.h (ARCHITECTURE.md). */
#ifndef GT_PROTO_H
#define GT_PROTO_H

#include <nng/nng.h>
#include <stddef.h>

#include "gt_gpu_state.h"
#include "gt_problem.h"

#define GT_PROTO_VERSION 1
#define GT_PROTO_MAX_MSG (64u << 20) /* receive limit: 64 MiB */
#define GT_DEFAULT_HTTP_ADDR "127.0.0.1"
#define GT_DEFAULT_HTTP_PORT 8470
#define GT_DEFAULT_WORKER_URL "tcp://127.0.0.1:8471"
/* Tuning-policy constants (the final phase's baseline drift threshold,
 * GT_BASELINE_DRIFT_MAX) are no protocol: common/gt_policy.h. */

struct cJSON;

/* Message types. */
#define GT_MSG_REGISTER "register"     /* worker -> coordinator */
#define GT_MSG_REGISTERED "registered" /* reply */
#define GT_MSG_HEARTBEAT "heartbeat"
#define GT_MSG_LEASE "lease"
#define GT_MSG_JOB "job"               /* reply to lease: a job */
#define GT_MSG_NONE "none"             /* reply to lease: nothing now, retry later */
#define GT_MSG_RESULTS "results"
#define GT_MSG_ACK "ack"               /* reply to heartbeat/results */
#define GT_MSG_BYE "bye"               /* worker leaves; its leases go back to the queue */
#define GT_MSG_ERROR "error"           /* reply: the request was refused */

/* A new message {"v":1,"type":type}; NULL on OOM. */
struct cJSON *gt_proto_new(const char *type);
/* An error reply with a message. */
struct cJSON *gt_proto_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Encodes and sends msg (not freed). 0 or an nng error code. */
int gt_proto_send(nng_socket s, const struct cJSON *msg);
int gt_proto_send_ctx(nng_ctx c, nng_aio *aio, const struct cJSON *msg);
/* Answers req (received on raw REP socket s) with msg: the reply carries
 * req's header (the route back to its requester). req is not freed. */
int gt_proto_reply(nng_socket s, const nng_msg *req, const struct cJSON *msg);
/* Decodes a received buffer: checks JSON, version and type. Returns the
 * message (caller owns) and its type in *type, or NULL with err set. */
struct cJSON *gt_proto_decode(const void *buf, size_t len, const char **type, char *err, size_t errlen);
/* Receives one message on s (blocking, honours the socket's receive timeout).
 * Returns NULL with err set on timeout/decode error; *rv gets the nng code. */
struct cJSON *gt_proto_recv(nng_socket s, const char **type, int *rv, char *err, size_t errlen);

/* One measured candidate, as reported in a "results" message. */
typedef struct gt_result {
    struct cJSON *config;    /* borrowed; canonicalised by the coordinator */
    int is_baseline;
    int valid;
    double time_us;          /* < 0: not timed */
    double spread;
    double tflops;
    double rel_err;          /* NaN allowed: invalid */
    char reason[256];
    /* final phase, paired with the baseline (common/gt_paired.h): rounds > 0,
     * the median of per-round ratios baseline / this and its interval;
     * rounds 0: not paired (screen, or the baseline did not run) */
    int rounds;
    double uplift, uplift_lo, uplift_hi;
    /* final phase: the GPU's state over the job's paired rounds
     * (gt_gpu_state.h); samples 0: none recorded (not sent) */
    gt_gpu_state gpu;
    /* 1: timed as CUDA graph replays although the job's launch was plain:
     * the final found the problem launch-bound (runner.c, run_final), so
     * time_us and the uplift are the kernels' own, not the host's enqueue
     * rate; sent as "launch": "graph". 0: the job's launch. */
    int graph;
} gt_result;

/* Encodes r into a new JSON object (config is duplicated). */
struct cJSON *gt_proto_result_to_json(const gt_result *r);
/* Decodes; r->config points into j. 0 or -1 with err. */
int gt_proto_result_from_json(const struct cJSON *j, gt_result *r, char *err, size_t errlen);

/* Field helpers for decoding; return -1 with err naming the field. */
int gt_proto_get_int(const struct cJSON *j, const char *name, long long *out, char *err, size_t errlen);
int gt_proto_get_num(const struct cJSON *j, const char *name, double *out, char *err, size_t errlen);
const char *gt_proto_get_str(const struct cJSON *j, const char *name, char *err, size_t errlen);
/* An integer field clamped to [lo, hi]; dflt when absent, not a number or
 * NaN. Never casts an out-of-range double (undefined behaviour in C). */
long long gt_proto_int_or(const struct cJSON *j, const char *name, long long lo, long long hi,
                          long long dflt);

#endif
