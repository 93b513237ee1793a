/* fuzz_http.c: libFuzzer target for the coordinator's HTTP API
 * (server/http.c on libmicrohttpd, with the real store behind it).
 *
 * What it proves, for any bytes a client can send on a TCP connection to
 * gemmtuned's API port (the input IS the request: method line, headers,
 * body, possibly several pipelined requests or garbage):
 *   - the request handler, the option readers, the log parsers, run
 *     creation in SQLite, the result queries, CSV and export answers never
 *     crash, leak or hit UB. The server runs in this process: ASan/UBSan see
 *     its threads, so a fault in the server is a crash of this target;
 *   - every answer is HTTP, and every JSON answer (all but CSV and export)
 *     is one complete JSON object, as README.md's API section promises;
 *   - the server stays alive and answering: every PROBE_EVERY inputs a
 *     GET /healthz must get 200, or the target aborts (a wedged or dead
 *     server thread is a bug too).
 *
 * Setup, once per process: a store on a fresh temp file, pre-filled with
 * one run that has results (so /results, ?format=csv and /export have rows
 * to print), and gt_http_start on 127.0.0.1, port 0, with a bearer token
 * (the dictionary and seeds carry it) so the auth check is fuzzed too.
 * The store is bounded: every RECYCLE_EVERY inputs the server stops, the
 * database is deleted and a fresh one is made; bodies are capped at
 * MAX_BODY and logs at MAX_LOG_LINES lines.
 *
 * Per input: a new TCP connection, the bytes written raw, the write side
 * shut (so an incomplete request ends at once instead of waiting for the
 * server's idle timeout), the answer read until EOF or READ_TIMEOUT_MS,
 * the connection closed. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gt_dispatch.h"
#include "gt_http.h"
#include "gt_log.h"
#include "gt_plan.h"
#include "gt_proto.h"
#include "gt_store.h"
#include "gt_util.h"

#define RECYCLE_EVERY 2000       /* inputs per database */
#define PROBE_EVERY 200          /* inputs between liveness probes */
#define READ_TIMEOUT_MS 2000     /* whole answer; a healthy server answers in ~ms */
#define MAX_BODY (256u << 10)
#define MAX_LOG_LINES 10000
#define RESP_CAP (1u << 20)      /* answer bytes kept for checking; the rest is drained */
#define FUZZ_TOKEN "fuzz-token"

#define FUZZ_DIE(...)                                                                   \
    do {                                                                                \
        fprintf(stderr, "fuzz_http: " __VA_ARGS__);                                     \
        fputc('\n', stderr);                                                            \
        abort();                                                                        \
    } while (0)

static struct {
    char dir[512];
    char db[600];
    gt_store *store;
    gt_http *http;
    int port;
    unsigned long inputs;
    unsigned long errors_500;
    int ready;
} g;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------------ the server */

static void remove_db_files(void)
{
    static const char *const sfx[] = {"", "-wal", "-shm"};
    char p[700];
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", g.db, sfx[i]);
        if (unlink(p) != 0 && errno != ENOENT)
            fprintf(stderr, "fuzz_http: unlink %s: %s\n", p, strerror(errno));
    }
}

/* One run with a finished screen job and measured results, made through the
 * same store calls the dispatcher uses, so result and export routes print
 * real rows. */
static void prefill(void)
{
    static const char log[] = "M,N,K,dtype,transA,transB,batch,count\n"
                              "64,32,16,f32,N,N,1,10\n"
                              "32,8,64,bf16,T,N,1,3\n";
    char err[512];
    gt_run_opts o;
    gt_run_opts_default(&o);
    snprintf(o.name, sizeof o.name, "prefill");
    o.budget = 2;
    o.shard_size = 2;
    gt_log_result res;
    if (gt_log_parse(log, sizeof log - 1, &o.log, &res) != 0)
        FUZZ_DIE("prefill: log rejected: %s", res.errors[0].msg);
    gt_run_created cr;
    gt_plan plan;
    int rc = gt_plan_run(&o, &res, &plan, err, sizeof err);
    if (rc == 0) {
        rc = gt_store_create_run(g.store, &o, &res, &plan, &cr, err, sizeof err);
        gt_plan_free(&plan);
    }
    gt_log_result_free(&res);
    if (rc)
        FUZZ_DIE("prefill: create run: %s", err);

    gt_worker_info w;
    memset(&w, 0, sizeof w);
    snprintf(w.host, sizeof w.host, "fuzz-host");
    w.pid = 1;
    snprintf(w.backend, sizeof w.backend, "cpu");
    snprintf(w.device_model, sizeof w.device_model, "fuzz cpu");
    snprintf(w.arch, sizeof w.arch, "x86_64");
    w.units = 2;
    snprintf(w.version, sizeof w.version, "0");
    int64_t wid, now = gt_wall_ms();
    if (gt_store_register_worker(g.store, &w, now, &wid, err, sizeof err))
        FUZZ_DIE("prefill: register: %s", err);
    gt_job job;
    memset(&job, 0, sizeof job);
    rc = gt_store_lease(g.store, wid, now, 30000, &job, err, sizeof err);
    if (rc != 1)
        FUZZ_DIE("prefill: lease: %s", rc < 0 ? err : "no job");
    cJSON *cands = cJSON_Parse(job.candidates);
    cJSON *msg = cJSON_CreateObject();
    cJSON *arr = cJSON_CreateArray();
    if (!cands || !msg || !arr)
        FUZZ_DIE("prefill: out of memory");
    cJSON_AddNumberToObject(msg, "job_id", (double)job.id);
    cJSON_AddItemToObject(msg, "results", arr);
    int i = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cands)
    {
        gt_result r;
        memset(&r, 0, sizeof r);
        r.config = (cJSON *)c;
        r.valid = i == 0; /* one good, one wrong: both kinds of row */
        r.time_us = 40.0 + i;
        r.spread = 0.01;
        r.tflops = 0.3;
        r.rel_err = i == 0 ? 1e-7 : 0.5;
        snprintf(r.reason, sizeof r.reason, "%s", i == 0 ? "" : "wrong result, \"quoted\",comma");
        cJSON *rj = gt_proto_result_to_json(&r);
        if (!rj)
            FUZZ_DIE("prefill: out of memory");
        cJSON_AddItemToArray(arr, rj);
        i++;
    }
    cJSON *base = cJSON_Parse(job.baseline ? job.baseline : "{}");
    cJSON *b = cJSON_CreateObject();
    if (!base || !b)
        FUZZ_DIE("prefill: out of memory");
    cJSON_AddItemToObject(b, "config", base);
    cJSON_AddNumberToObject(b, "time_us", 55.0);
    cJSON_AddNumberToObject(b, "spread", 0.02);
    cJSON_AddItemToObject(msg, "baseline", b);
    cJSON_AddBoolToObject(msg, "done", 1);
    int cancelled = 0;
    size_t accepted = 0, rejected = 0;
    gt_report rep;
    if (gt_dispatch_decode_report(msg, &rep, err, sizeof err))
        FUZZ_DIE("prefill: decode report: %s", err);
    rc = gt_store_report(g.store, wid, &rep, now, 30000, &cancelled, &accepted, &rejected, err,
                         sizeof err);
    gt_report_fini(&rep);
    if (rc)
        FUZZ_DIE("prefill: report: %s", err);
    cJSON_Delete(msg);
    cJSON_Delete(cands);
    gt_job_free(&job);
}

static void server_start(void)
{
    char err[512];
    remove_db_files();
    g.store = gt_store_open(g.db, err, sizeof err);
    if (!g.store)
        FUZZ_DIE("store open %s: %s", g.db, err);
    prefill();
    gt_http_opts o;
    memset(&o, 0, sizeof o);
    o.addr = "127.0.0.1";
    o.port = 0;
    o.max_body = MAX_BODY;
    o.max_log_lines = MAX_LOG_LINES;
    o.data_dir = g.dir;
    o.token = FUZZ_TOKEN;
    o.source = "fuzz";
    o.max_conns = 16;
    o.threads = 2;
    g.http = gt_http_start(g.store, &o, err, sizeof err);
    if (!g.http)
        FUZZ_DIE("http start: %s", err);
    g.port = gt_http_port(g.http);
}

static void server_stop(void)
{
    gt_http_stop(g.http); /* joins the server threads: no request in flight after */
    g.http = NULL;
    gt_store_close(g.store);
    g.store = NULL;
    remove_db_files();
}

static void cleanup(void)
{
    if (!g.ready)
        return;
    server_stop();
    if (rmdir(g.dir) != 0)
        fprintf(stderr, "fuzz_http: rmdir %s: %s\n", g.dir, strerror(errno));
    if (g.errors_500)
        fprintf(stderr, "fuzz_http: %lu answers had status 500\n", g.errors_500);
    g.ready = 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* The server logs every run it creates; at thousands of inputs a second
     * that is noise around the fuzzer's own output. */
    gt_log_set_level(GT_LOG_ERR);
    const char *tmp = getenv("TMPDIR");
    snprintf(g.dir, sizeof g.dir, "%s/gt-fuzz-http-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g.dir))
        FUZZ_DIE("mkdtemp %s: %s", g.dir, strerror(errno));
    snprintf(g.db, sizeof g.db, "%s/fuzz.db", g.dir);
    server_start();
    g.ready = 1;
    if (atexit(cleanup) != 0)
        FUZZ_DIE("atexit failed");
    return 0;
}

/* ------------------------------------------------------------ the client */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int connect_local(int port)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = -1;
    /* libFuzzer's -timeout ticks with SIGALRM: a connect it interrupts is
     * retried on a fresh socket (an interrupted connect goes on in the
     * background, so the old one cannot simply be called again). */
    for (int attempt = 0;; attempt++) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            FUZZ_DIE("socket: %s", strerror(errno));
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
            break;
        int e = errno;
        close(fd);
        if (e != EINTR || attempt == 10)
            FUZZ_DIE("connect 127.0.0.1:%d: %s (server gone?)", port, strerror(e));
    }
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Status code of an answer, 0 when it does not start with an HTTP status
 * line. */
static int status_of(const char *resp, size_t len)
{
    if (len < 12 || strncmp(resp, "HTTP/1.", 7) != 0 || resp[8] != ' ')
        return 0;
    int s = 0;
    for (int i = 9; i < 12; i++) {
        if (resp[i] < '0' || resp[i] > '9')
            return 0;
        s = s * 10 + (resp[i] - '0');
    }
    return s;
}

/* Value of header name in the header block [resp, hend), or NULL. */
static const char *header(const char *resp, const char *hend, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(resp, "\r\n"); p && p < hend; p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2;
        if ((size_t)(hend - line) > nl && !strncasecmp(line, name, nl) && line[nl] == ':') {
            const char *v = line + nl + 1;
            while (*v == ' ')
                v++;
            const char *e = strstr(v, "\r\n");
            *vlen = e ? (size_t)(e - v) : strlen(v);
            return v;
        }
    }
    return NULL;
}

/* Whether resp (NUL-terminated, len bytes) holds one whole final answer:
 * interim 1xx answers skipped, then headers and Content-Length bytes of
 * body (none for HEAD). Without a length only EOF ends it. */
static int answer_complete(const char *resp, size_t len, int head)
{
    const char *p = resp;
    for (;;) {
        size_t left = len - (size_t)(p - resp);
        int status = status_of(p, left);
        const char *hend = status ? strstr(p, "\r\n\r\n") : NULL;
        if (!hend)
            return 0;
        if (status >= 100 && status < 200) {
            p = hend + 4;
            continue;
        }
        if (head || status == 204 || status == 304)
            return 1;
        size_t vlen;
        const char *cl = header(p, hend, "Content-Length", &vlen);
        if (!cl)
            return 0;
        size_t blen = strtoul(cl, NULL, 10);
        return (size_t)(resp + len - (hend + 4)) >= blen;
    }
}

/* Sends req and reads the answer into resp (up to cap-1 bytes,
 * NUL-terminated; the rest is drained). Returns the bytes kept.
 *
 * The write side is shut once the first answer is complete, or after
 * SHUT_AFTER_MS without any answer (an incomplete request: the server waits
 * for more), so the server sees EOF and closes. Not earlier: libmicrohttpd
 * polls edge-triggered, and a FIN that arrives together with the request is
 * only noticed at its 60 s idle timeout. A server that closes early (413, a
 * bad request line) is normal: sending stops and what it answered is read. */
#define SHUT_AFTER_MS 5
#define GRACE_MS 20
static size_t exchange(const uint8_t *req, size_t len, char *resp, size_t cap)
{
    int fd = connect_local(g.port);
    int head = len >= 5 && !memcmp(req, "HEAD ", 5);
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* EPIPE / ECONNRESET: the server has had enough */
        off += (size_t)n;
    }
    size_t got = 0;
    int shut = 0, done = 0;
    int64_t t0 = now_ms(), deadline = t0 + READ_TIMEOUT_MS;
    resp[0] = '\0';
    for (;;) {
        int64_t now = now_ms(), left = deadline - now;
        if (left <= 0)
            break;
        if (!shut && got == 0 && now - t0 >= SHUT_AFTER_MS) {
            (void)shutdown(fd, SHUT_WR);
            shut = 1;
        }
        int wait = (int)left;
        if (!shut && got == 0 && wait > SHUT_AFTER_MS)
            wait = SHUT_AFTER_MS;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, wait);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            break;
        if (pr == 0)
            continue; /* the deadline or the shut point decides */
        char sink[16384];
        int keep = got + 1 < cap;
        ssize_t n = recv(fd, keep ? resp + got : sink, keep ? cap - 1 - got : sizeof sink, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* EOF (the normal end) or reset */
        if (keep) {
            got += (size_t)n;
            resp[got] = '\0';
        }
        if (!done && (!keep || answer_complete(resp, got, head))) {
            if (!shut)
                (void)shutdown(fd, SHUT_WR);
            shut = done = 1;
            /* The answer is in: what follows (pipelined answers, the EOF)
             * gets a short grace, not the whole timeout. */
            if (deadline > now_ms() + GRACE_MS)
                deadline = now_ms() + GRACE_MS;
        }
    }
    resp[got] = '\0';
    close(fd);
    return got;
}

/* The first answer on the connection (pipelined requests get more): it is
 * HTTP, and a JSON answer of known length is one JSON object. */
static void check_answer(const uint8_t *req, size_t reqlen, const char *resp, size_t len)
{
    if (len == 0)
        return; /* the server may close on garbage without a word */
    int status = status_of(resp, len);
    if (!status)
        FUZZ_DIE("answer is not HTTP: %.80s", resp);
    /* 500 is the handler's "database error" / "cannot create the run":
     * worth a look, though not a crash (a full disk gives it too). Other
     * 5xx (505 for HTTP/2.1) are libmicrohttpd's protocol answers. */
    if (status == 500) {
        if (g.errors_500++ < 5)
            fprintf(stderr, "fuzz_http: status %d for a request starting %.*s\n", status,
                    (int)(reqlen < 60 ? reqlen : 60), (const char *)req);
    }
    const char *hend = strstr(resp, "\r\n\r\n");
    if (!hend)
        return; /* answer cut by the read cap or the timeout */
    size_t vlen;
    const char *ct = header(resp, hend, "Content-Type", &vlen);
    const char *cl = header(resp, hend, "Content-Length", &vlen);
    if (!ct || strncmp(ct, "application/json", 16) || !cl)
        return;
    /* no body with HEAD; a server skips empty lines before the request line
     * (RFC 9112 2.2), so a fuzzed "\r\n\r\nHEAD ..." is a HEAD too, whose
     * Content-Length then frames the next answer instead of a body */
    const uint8_t *rq = req;
    size_t rl = reqlen;
    while (rl && (*rq == '\r' || *rq == '\n'))
        rq++, rl--;
    if (rl >= 5 && !memcmp(rq, "HEAD ", 5))
        return;
    size_t blen = strtoul(cl, NULL, 10);
    const char *body = hend + 4;
    if ((size_t)(resp + len - body) < blen)
        return; /* cut */
    cJSON *j = cJSON_ParseWithLength(body, blen);
    if (!cJSON_IsObject(j))
        FUZZ_DIE("status %d: JSON answer is not a JSON object: %.*s", status,
                 (int)(blen < 200 ? blen : 200), body);
    cJSON_Delete(j);
}

static void probe(void)
{
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    char resp[4096];
    size_t n = exchange((const uint8_t *)req, sizeof req - 1, resp, sizeof resp);
    if (status_of(resp, n) != 200)
        FUZZ_DIE("server stopped answering: GET /healthz got %zu bytes: %.80s", n, resp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g.ready)
        FUZZ_DIE("not initialised");
    static char *resp;
    if (!resp && !(resp = malloc(RESP_CAP)))
        FUZZ_DIE("out of memory");
    size_t n = exchange(data, size, resp, RESP_CAP);
    /* GT_FUZZ_HTTP_ECHO=1 shows each answer: to check what seeds reach. */
    static int echo = -1;
    if (echo < 0)
        echo = getenv("GT_FUZZ_HTTP_ECHO") != NULL;
    if (echo)
        fprintf(stderr, "fuzz_http: %zu bytes in, %zu out: %.*s\n", size, n,
                (int)(n < 400 ? n : 400), resp);
    check_answer(data, size, resp, n);
    g.inputs++;
    if (g.inputs % PROBE_EVERY == 0)
        probe();
    if (g.inputs % RECYCLE_EVERY == 0) {
        server_stop();
        server_start();
    }
    return 0;
}
