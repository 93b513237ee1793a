/* main_gemmtuned.c: the coordinator daemon. Opens the database, starts the
 * worker endpoint (nng) and the HTTP API, and shuts both down cleanly on
 * SIGINT/SIGTERM, checkpointing the WAL last. The same shutdown, with exit
 * status 1, follows when the store finds its database or WAL file removed or
 * replaced (gt_store_on_lost). */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <pthread.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gt_dispatch.h"
#include "gt_export.h"
#include "gt_http.h"
#include "gt_proto.h"
#include "gt_store.h"
#include "gt_util.h"

/* For gemmtune_dispatch_requests_total on /metrics. */
static uint64_t dispatch_requests(void *d) { return gt_dispatch_requests(d); }
/* For gemmtune_worker_refused_total and the other security counters. */
static void dispatch_stats(void *d, gt_dispatch_stats *out) { gt_dispatch_stats_get(d, out); }

/* The thread waiting in sigwait, and whether the store woke it. */
static pthread_t g_main_thread;
static atomic_int g_store_lost;

/* The store refuses writes from now on (it logged why): leave through the
 * signal path, so that the API and the dispatcher stop, the WAL still open
 * is checkpointed into the database file and the exit status says it
 * failed. Runs inside a commit: flag and wake only. */
static void on_store_lost(void *ctx, const char *why)
{
    (void)ctx;
    (void)why;
    atomic_store(&g_store_lost, 1);
    int e = pthread_kill(g_main_thread, SIGTERM);
    if (e)
        gt_err("cannot wake the main thread to stop: %s", strerror(e));
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gemmtuned [options]\n"
            "  --db PATH             database file (default ./gemmtune.db)\n"
            "  --http ADDR:PORT      HTTP API address (default 127.0.0.1:8470; port 0 = any)\n"
            "  --listen URL          worker endpoint (default tcp://127.0.0.1:8471)\n"
            "  --data-dir DIR        scratch space for exports (default: the database's folder)\n"
            "  --lease-timeout SEC   a job returns to the queue after SEC without news (default 30)\n"
            "  --heartbeat SEC       heartbeat interval told to workers (default lease/6)\n"
            "  --max-attempts N      leases of one job before it fails (default 3)\n"
            "  --max-body MB         request body limit (default 64)\n"
            "  --max-lines N         line limit of a submitted log (default 1000000)\n"
            "  --tls-cert-key FILE   PEM certificate + key for a tls+tcp:// worker endpoint\n"
            "  --token TOKEN         require this token from workers and on POST requests\n"
            "  --read-token TOKEN    require this token (or --token) on GET requests too\n"
            "                        (/healthz, /readyz and the status page stay open)\n"
            "                        (default: environment GEMMTUNE_TOKEN, else none)\n"
            "  --port-file PATH      once listening, write http=PORT and worker=URL lines to PATH\n"
            "                        (with port 0 in --http/--listen the system picks free ports)\n"
            "  --log-level LEVEL     debug, info, warn, error (default info)\n"
            "  --version, --help\n");
}

int main(int argc, char **argv)
{
    const char *db = "gemmtune.db", *http = "127.0.0.1:8470", *listen_url = GT_DEFAULT_WORKER_URL;
    const char *data_dir = NULL, *token = getenv("GEMMTUNE_TOKEN"), *port_file = NULL;
    const char *tls_cert_key = NULL, *read_token = getenv("GEMMTUNE_READ_TOKEN");
    double lease_s = 30, heartbeat_s = 0;
    long max_attempts = 3, max_body_mb = 64, max_lines = 1000000;
    gt_log_set_name("gemmtuned");
    enum { O_DB = 1, O_HTTP, O_LISTEN, O_DATA, O_LEASE, O_HB, O_ATT, O_BODY, O_LINES, O_TOKEN,
           O_PORTFILE, O_LEVEL, O_VERSION, O_HELP, O_TLS, O_RTOKEN };
    static const struct option opts[] = {
        {"db", required_argument, 0, O_DB},           {"http", required_argument, 0, O_HTTP},
        {"listen", required_argument, 0, O_LISTEN},   {"data-dir", required_argument, 0, O_DATA},
        {"lease-timeout", required_argument, 0, O_LEASE}, {"heartbeat", required_argument, 0, O_HB},
        {"max-attempts", required_argument, 0, O_ATT}, {"max-body", required_argument, 0, O_BODY},
        {"max-lines", required_argument, 0, O_LINES}, {"token", required_argument, 0, O_TOKEN},
        {"port-file", required_argument, 0, O_PORTFILE}, {"log-level", required_argument, 0, O_LEVEL},
        {"version", no_argument, 0, O_VERSION},       {"help", no_argument, 0, O_HELP},
        {"tls-cert-key", required_argument, 0, O_TLS},
        {"read-token", required_argument, 0, O_RTOKEN},
        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case O_DB: db = optarg; break;
        case O_HTTP: http = optarg; break;
        case O_LISTEN: listen_url = optarg; break;
        case O_DATA: data_dir = optarg; break;
        case O_LEASE: lease_s = strtod(optarg, &end); break;
        case O_HB: heartbeat_s = strtod(optarg, &end); break;
        case O_ATT: max_attempts = strtol(optarg, &end, 10); break;
        case O_BODY: max_body_mb = strtol(optarg, &end, 10); break;
        case O_LINES: max_lines = strtol(optarg, &end, 10); break;
        case O_TOKEN: token = optarg; break;
        case O_PORTFILE: port_file = optarg; break;
        case O_TLS: tls_cert_key = optarg; break;
        case O_RTOKEN: read_token = optarg; break;
        case O_LEVEL:
            if (!strcmp(optarg, "debug")) gt_log_set_level(GT_LOG_DEBUG);
            else if (!strcmp(optarg, "info")) gt_log_set_level(GT_LOG_INFO);
            else if (!strcmp(optarg, "warn")) gt_log_set_level(GT_LOG_WARN);
            else if (!strcmp(optarg, "error")) gt_log_set_level(GT_LOG_ERR);
            else { fprintf(stderr, "gemmtuned: --log-level %s: unknown level\n", optarg); return 2; }
            break;
        case O_VERSION: printf("gemmtuned %s\n", GT_GEMMTUNE_VERSION); return 0;
        case O_HELP: usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (end && (*end || end == optarg)) {
            fprintf(stderr, "gemmtuned: bad number '%s'\n", optarg);
            return 2;
        }
    }
    if (optind < argc || lease_s <= 0 || max_attempts < 1 || max_body_mb < 1 || max_lines < 1) {
        usage(stderr);
        return 2;
    }
    char addr[256];
    int port;
    const char *colon = strrchr(http, ':');
    if (!colon || colon == http || (size_t)(colon - http) >= sizeof addr ||
        sscanf(colon + 1, "%d", &port) != 1 || port < 0 || port > 65535) {
        fprintf(stderr, "gemmtuned: --http %s: expected ADDR:PORT\n", http);
        return 2;
    }
    memcpy(addr, http, (size_t)(colon - http));
    addr[colon - http] = '\0';
    char dbdir[PATH_MAX];
    snprintf(dbdir, sizeof dbdir, "%s", db);
    if (!data_dir)
        data_dir = dirname(dbdir);
    char host[128] = "localhost";
    gethostname(host, sizeof host - 1);

    /* Block the stop signals before any thread starts (threads inherit the
     * mask), so they are only ever taken by sigwait below. */
    sigset_t stopset;
    sigemptyset(&stopset);
    sigaddset(&stopset, SIGINT);
    sigaddset(&stopset, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stopset, NULL);
    signal(SIGPIPE, SIG_IGN);

    int rc = 1;
    char err[512];
    gt_dispatch *d = NULL;
    gt_http *h = NULL;
    gt_store *s = gt_store_open(db, err, sizeof err);
    if (!s) {
        gt_err("%s", err);
        return 1;
    }
    gt_info("database %s", db);
    g_main_thread = pthread_self();
    gt_store_on_lost(s, on_store_lost, NULL);
    /* checkpoints off the dispatcher's commits; without them the store's
     * automatic checkpoint goes on */
    gt_store_ckpt *ck = gt_store_ckpt_start(s, err, sizeof err);
    if (!ck)
        gt_warn("%s: checkpointing inside commits", err);
    gt_dispatch_opts dopt = {
        .url = listen_url,
        .lease_ms = (int64_t)(lease_s * 1000),
        .heartbeat_ms = (int64_t)((heartbeat_s > 0 ? heartbeat_s : lease_s / 6) * 1000),
        .max_attempts = (int)max_attempts,
        .token = token,
        .tls_cert_key = tls_cert_key,
    };
    if (!(d = gt_dispatch_start(s, &dopt, err, sizeof err))) {
        gt_err("%s", err);
        goto out;
    }
    gt_http_opts hopt = {
        .addr = addr,
        .port = port,
        .max_body = (size_t)max_body_mb << 20,
        .max_log_lines = (size_t)max_lines,
        .data_dir = data_dir,
        .token = token,
        .source = host,
        .max_conns = 256,
        .threads = 4,
        .read_token = read_token,
        .dispatch_requests = dispatch_requests,
        .dispatch_stats = dispatch_stats,
        .dispatch_ctx = d,
    };
    if (!(h = gt_http_start(s, &hopt, err, sizeof err))) {
        gt_err("%s", err);
        goto out;
    }
    if (port_file) {
        char buf[400];
        int n = snprintf(buf, sizeof buf, "http=%d\nworker=%s\n", gt_http_port(h), gt_dispatch_url(d));
        if (gt_write_file(port_file, buf, (size_t)n)) {
            gt_err("cannot write %s: %s", port_file, strerror(errno));
            goto out;
        }
    }
    if (token && *token)
        gt_info("authentication on: workers and POST requests need the token");
    int sig = 0;
    while (sigwait(&stopset, &sig) != 0)
        ;
    if (atomic_load(&g_store_lost)) {
        gt_err("stopping: the database or its WAL file was removed or replaced under the"
               " coordinator (see above); exit status 1");
    } else {
        gt_info("signal %d: shutting down", sig);
        rc = 0;
    }
out:
    gt_http_stop(h);
    gt_dispatch_stop(d);
    gt_store_ckpt_stop(ck);
    if (gt_store_checkpoint(s))
        gt_warn("WAL checkpoint failed");
    gt_store_close(s);
    /* A loss noticed while stopping (by the checkpoint) fails the exit too. */
    if (atomic_load(&g_store_lost))
        rc = 1;
    return rc;
}
