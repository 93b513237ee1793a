/* main_worker.c: gemmtune-worker, one process per device. Registers with the
 * coordinator, heartbeats from a thread of its own, leases jobs and runs
 * them in a bench child process (gt_sup.h: a crashing or hanging candidate
 * costs a child restart, never the worker). `--device all` starts one
 * process per device of the backend and waits for them. SIGTERM/SIGINT:
 * what was measured is reported and the job is handed back. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gen_dev.h"
#include "gt_backend.h"
#include "gt_client.h"
#include "gt_proto.h"
#include "gt_sup.h"
#include "gt_util.h"

#define GT_WORKER_VERSION "0.1.0"

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

typedef struct worker {
    const char *url;
    const char *token;
    const char *tls_ca;          /* CA file for tls+tcp:// coordinators */
    const gt_backend *bk;
    int device;
    int batch;
    double idle_exit_s;          /* exit after this long without work (0 = never) */
    gt_sup sup;                  /* the bench child and the device it opened */
    gt_bk_device dev;
    gt_client main;
    gt_client_session sess;      /* shared by the main and heartbeat connections */
    /* The job in hand (0: none), under sess.mu: heartbeats keep only its
     * lease alive, so a job given up (results refused) expires. */
    int64_t job_id;
    volatile int reregister;     /* the coordinator refused a session we could not restore */
} worker;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gemmtune-worker [options]\n"
            "  --server URL        coordinator worker endpoint (default %s,\n"
            "                      or environment GEMMTUNE_WORKER_URL)\n"
            "  --backend NAME      cpu (default) or cuda\n"
            "  --device N|all      device index (default 0); all: one process per device\n"
            "  --batch N           results per message (default 8)\n"
            "  --token TOKEN       shared worker token (default: environment GEMMTUNE_TOKEN)\n"
            "  --tls-ca FILE       CA certificate (PEM) for a tls+tcp:// coordinator\n"
            "  --exit-when-idle S  exit after S seconds without a job (default: run forever)\n"
            "  --candidate-timeout S  a candidate silent for S seconds is killed (default 60)\n"
            "  --log-level LEVEL   debug, info, warn, error\n"
            "  --version, --help\n"
            "environment: GT_WORKER_FRESH_FINAL=0 runs cuda finals in the screening bench\n"
            "  process (default: a short GEMM's final in a fresh one, on cuda; 1: that on any\n"
            "  backend; all: every final)\n",
            GT_DEFAULT_WORKER_URL);
}

static cJSON *register_msg(void *ctx)
{
    worker *w = ctx;
    char host[128] = "localhost";
    gethostname(host, sizeof host - 1);
    cJSON *m = gt_proto_new(GT_MSG_REGISTER);
    if (!m)
        return NULL;
    int ok = cJSON_AddStringToObject(m, "host", host) &&
             cJSON_AddNumberToObject(m, "pid", getpid()) &&
             cJSON_AddNumberToObject(m, "device_index", w->dev.index) &&
             cJSON_AddStringToObject(m, "backend", w->bk->name) &&
             cJSON_AddStringToObject(m, "device_model", w->dev.model) &&
             cJSON_AddStringToObject(m, "arch", w->dev.arch) &&
             cJSON_AddNumberToObject(m, "mem_bytes", (double)w->dev.mem_bytes) &&
             cJSON_AddNumberToObject(m, "units", w->dev.units) &&
             cJSON_AddStringToObject(m, "driver", w->dev.driver) &&
             cJSON_AddStringToObject(m, "version", GT_WORKER_VERSION) &&
             (!w->token || cJSON_AddStringToObject(m, "token", w->token));
    /* Optional (PROTOCOL.md): the limits the generated families prune with
     * on this device, so the coordinator's space view is this worker's. */
    cJSON *g = ok && w->dev.has_gen ? gt_gen_dev_to_json(&w->dev.gen) : NULL;
    if (ok && w->dev.has_gen && (!g || !cJSON_AddItemToObject(m, "gen_device", g))) {
        cJSON_Delete(g);
        ok = 0;
    }
    if (!ok) {
        cJSON_Delete(m);
        return NULL;
    }
    return m;
}

/* Binds the main connection to a session: attaches to ours, or registers
 * anew when the coordinator no longer knows it. 0, or -1 when refused for
 * good (bad token) or stopping. */
static int do_register(worker *w)
{
    char err[256];
    int rc = gt_client_authenticate(&w->main, err, sizeof err);
    if (rc == 0) {
        w->reregister = 0;
        gt_info("session with %s as worker %lld (%s %s)", w->url, (long long)w->sess.worker_id,
                w->bk->name, w->dev.model);
        return 0;
    }
    if (rc == -2)
        gt_err("%s", err);
    return -1;
}

/* Heartbeats on a socket of their own, so a long candidate on the main
 * thread never starves them and leases stay alive while the work goes on. */
static void *heartbeat_loop(void *arg)
{
    worker *w = arg;
    gt_client hb;
    char err[256];
    if (gt_client_open(&hb, w->url, 10000, &g_stop, w->tls_ca, err, sizeof err)) {
        gt_err("heartbeat: %s", err);
        return NULL;
    }
    /* This connection attaches to the main one's session before its first
     * heartbeat (gt_client_call does, once the main connection has
     * registered); only the main connection registers. */
    hb.session = &w->sess;
    while (!g_stop) {
        pthread_mutex_lock(&w->sess.mu);
        int every = w->sess.heartbeat_ms;
        pthread_mutex_unlock(&w->sess.mu);
        for (int slept = 0; slept < every && !g_stop; slept += 100) {
            struct timespec ts = {0, 100 * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (g_stop)
            break;
        pthread_mutex_lock(&w->sess.mu);
        int64_t job = w->job_id;
        pthread_mutex_unlock(&w->sess.mu);
        cJSON *m = gt_proto_new(GT_MSG_HEARTBEAT);
        if (!m || !cJSON_AddNumberToObject(m, "job_id", (double)job)) {
            cJSON_Delete(m);
            continue;
        }
        const char *type;
        cJSON *r = gt_client_call(&hb, m, &type, every, err, sizeof err);
        cJSON_Delete(m);
        if (r && !strcmp(type, GT_MSG_ERROR) &&
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "reregister")))
            w->reregister = 1;
        cJSON_Delete(r);
    }
    gt_client_close(&hb);
    return NULL;
}

static void send_bye(worker *w)
{
    char err[256];
    cJSON *m = gt_proto_new(GT_MSG_BYE);
    if (!m)
        return;
    const char *type;
    /* Bounded: on shutdown a coordinator that is gone must not hold us. */
    sig_atomic_t saved = g_stop;
    g_stop = 0;
    cJSON *r = gt_client_call(&w->main, m, &type, 3000, err, sizeof err);
    g_stop = saved;
    cJSON_Delete(r);
    cJSON_Delete(m);
}

static int serve(worker *w)
{
    char err[256];
    if (gt_client_open(&w->main, w->url, 30000, &g_stop, w->tls_ca, err, sizeof err)) {
        gt_err("%s", err);
        return 1;
    }
    if (pthread_mutex_init(&w->sess.mu, NULL) != 0) {
        gt_client_close(&w->main);
        return 1;
    }
    w->sess.heartbeat_ms = 5000;
    w->sess.register_msg = register_msg;
    w->sess.ctx = w;
    w->main.session = &w->sess;
    w->main.may_register = 1;
    int rc = 1;
    pthread_t hb;
    int hb_started = 0;
    if (do_register(w))
        goto out;
    if (pthread_create(&hb, NULL, heartbeat_loop, w) != 0) {
        gt_err("cannot start the heartbeat thread");
        goto out;
    }
    hb_started = 1;
    double idle_since = gt_mono_ms();
    while (!g_stop) {
        /* A session the coordinator refuses and that cannot be restored
         * (its token changed): nothing to say goodbye with; exit 1. */
        if (w->reregister && do_register(w))
            goto out;
        cJSON *m = gt_proto_new(GT_MSG_LEASE);
        if (!m)
            break;
        const char *type;
        cJSON *r = gt_client_call(&w->main, m, &type, 0, err, sizeof err);
        cJSON_Delete(m);
        if (!r)
            break;
        if (!strcmp(type, GT_MSG_JOB)) {
            const cJSON *job = cJSON_GetObjectItemCaseSensitive(r, "job");
            pthread_mutex_lock(&w->sess.mu);
            w->job_id = gt_proto_int_or(job, "id", 0, 1LL << 53, 0);
            pthread_mutex_unlock(&w->sess.mu);
            int jrc = gt_sup_run_job(&w->sup, job, &w->main, w->sess.worker_id, w->batch, &g_stop);
            pthread_mutex_lock(&w->sess.mu);
            w->job_id = 0;
            pthread_mutex_unlock(&w->sess.mu);
            if (jrc < 0)
                gt_warn("job abandoned: coordinator or bench process unreachable, or results "
                        "refused; its lease expires and another worker takes it");
            idle_since = gt_mono_ms();
        } else if (!strcmp(type, GT_MSG_NONE)) {
            int ms = (int)gt_proto_int_or(r, "retry_ms", 10, 10000, 500);
            gt_sup_idle(&w->sup);
            if (w->idle_exit_s > 0 && gt_mono_ms() - idle_since > w->idle_exit_s * 1000) {
                gt_info("idle for %.0f s: exiting", w->idle_exit_s);
                cJSON_Delete(r);
                break;
            }
            struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        } else {
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error");
            gt_warn("lease refused: %s", cJSON_IsString(e) ? e->valuestring : type);
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "reregister")))
                w->reregister = 1;
            else
                sleep(1);
        }
        cJSON_Delete(r);
    }
    send_bye(w);
    rc = 0;
out:
    g_stop = 1;
    if (hb_started)
        pthread_join(hb, NULL);
    gt_client_close(&w->main);
    pthread_mutex_destroy(&w->sess.mu);
    return rc;
}

/* --device all: one child process per device, restarted never (a child that
 * dies is reported; a supervisor such as systemd restarts the whole set).
 * SIGTERM/SIGINT to this parent are passed on to every child, so each hands
 * its job back, also when the parent is a container's PID 1. */
static int spawn_all(char **argv, int argc, int ndev)
{
    pid_t *pids = calloc((size_t)ndev, sizeof *pids);
    if (!pids)
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: waitpid returns EINTR */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    for (int i = 0; i < ndev; i++) {
        pid_t p = fork();
        if (p < 0) {
            gt_err("fork: %s", strerror(errno));
            continue;
        }
        if (p == 0) {
            char **av = calloc((size_t)argc + 3, sizeof *av);
            char idx[16];
            snprintf(idx, sizeof idx, "%d", i);
            int k = 0;
            for (int a = 0; a < argc; a++) {
                if (!strcmp(argv[a], "--device") && a + 1 < argc) {
                    a++;
                    continue;
                }
                if (!strcmp(argv[a], "--device=all"))
                    continue;
                av[k++] = argv[a];
            }
            av[k++] = "--device";
            av[k++] = idx;
            execv("/proc/self/exe", av);
            _exit(127);
        }
        pids[i] = p;
    }
    int rc = 0, forwarded = 0;
    for (int i = 0; i < ndev; i++) {
        int st;
        if (pids[i] <= 0)
            continue;
        pid_t r;
        while ((r = waitpid(pids[i], &st, 0)) < 0 && errno == EINTR) {
            if (g_stop && !forwarded) {
                forwarded = 1;
                for (int j = 0; j < ndev; j++)
                    if (pids[j] > 0)
                        kill(pids[j], SIGTERM);
            }
        }
        if (r > 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
            gt_warn("worker for device %d ended abnormally", i);
            rc = 1;
        }
    }
    free(pids);
    return rc;
}

int main(int argc, char **argv)
{
    worker w;
    memset(&w, 0, sizeof w);
    w.url = getenv("GEMMTUNE_WORKER_URL") ? getenv("GEMMTUNE_WORKER_URL") : GT_DEFAULT_WORKER_URL;
    w.token = getenv("GEMMTUNE_TOKEN");
    w.batch = 8;
    const char *backend = "cpu", *device = "0";
    gt_log_set_name("gemmtune-worker");
    enum { O_SERVER = 1, O_BACKEND, O_DEVICE, O_BATCH, O_TOKEN, O_IDLE, O_LEVEL, O_VERSION, O_HELP,
           O_CTIMEOUT, O_CHILD, O_TLSCA, O_WARM };
    const char *level = NULL;
    int child_fd = -1, child_warm = 0;
    double cand_timeout = 60;
    static const struct option opts[] = {
        {"server", required_argument, 0, O_SERVER}, {"backend", required_argument, 0, O_BACKEND},
        {"device", required_argument, 0, O_DEVICE}, {"batch", required_argument, 0, O_BATCH},
        {"token", required_argument, 0, O_TOKEN},   {"exit-when-idle", required_argument, 0, O_IDLE},
        {"log-level", required_argument, 0, O_LEVEL}, {"version", no_argument, 0, O_VERSION},
        {"help", no_argument, 0, O_HELP},
        {"candidate-timeout", required_argument, 0, O_CTIMEOUT},
        {"bench-child", required_argument, 0, O_CHILD}, /* internal: the bench process */
        {"bench-warm", no_argument, 0, O_WARM},         /* internal: a spare (gt_sup.h) */
        {"tls-ca", required_argument, 0, O_TLSCA},
        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_SERVER: w.url = optarg; break;
        case O_BACKEND: backend = optarg; break;
        case O_DEVICE: device = optarg; break;
        case O_BATCH: w.batch = atoi(optarg); break;
        case O_TOKEN: w.token = optarg; break;
        case O_IDLE: w.idle_exit_s = atof(optarg); break;
        case O_CTIMEOUT: cand_timeout = atof(optarg); break;
        case O_CHILD: child_fd = atoi(optarg); break;
        case O_WARM: child_warm = 1; break;
        case O_TLSCA: w.tls_ca = optarg; break;
        case O_LEVEL:
            level = optarg;
            if (!strcmp(optarg, "debug")) gt_log_set_level(GT_LOG_DEBUG);
            else if (!strcmp(optarg, "warn")) gt_log_set_level(GT_LOG_WARN);
            else if (!strcmp(optarg, "error")) gt_log_set_level(GT_LOG_ERR);
            else gt_log_set_level(GT_LOG_INFO);
            break;
        case O_VERSION: printf("gemmtune-worker %s\n", GT_WORKER_VERSION); return 0;
        case O_HELP: usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc || w.batch < 1 || !(cand_timeout > 0)) {
        usage(stderr);
        return 2;
    }
    w.bk = gt_bk_find(backend);
    if (!w.bk) {
        fprintf(stderr, "gemmtune-worker: backend %s is not built in (have: cpu%s)\n", backend,
#ifdef GT_WITH_CUDA
                ", cuda"
#else
                ""
#endif
        );
        return 2;
    }
    if (!strcmp(device, "all")) {
        int n = w.bk->device_count ? w.bk->device_count() : 1;
        if (n <= 0) {
            gt_err("no %s device found", backend);
            return 1;
        }
        gt_info("starting %d workers, one per %s device", n, backend);
        return spawn_all(argv, argc, n);
    }
    char *end;
    w.device = (int)strtol(device, &end, 10);
    if (*end || w.device < 0) {
        fprintf(stderr, "gemmtune-worker: --device %s: expected an index or all\n", device);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (child_fd >= 0) {
        /* The bench child: the supervisor stops it by closing its input
         * (or kills it); SIGINT from a terminal goes to the supervisor. */
        signal(SIGINT, SIG_IGN);
        gt_log_set_name("gemmtune-bench");
        return gt_sup_child_main(child_fd, w.bk, w.device, child_warm);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    char err[256];
    snprintf(w.sup.backend, sizeof w.sup.backend, "%s", w.bk->name);
    w.sup.device = w.device;
    w.sup.log_level = level;
    w.sup.cand_timeout_s = cand_timeout;
    w.sup.prep_timeout_s = cand_timeout * 10 > 600 ? cand_timeout * 10 : 600;
    w.sup.fd = -1;
    w.sup.spare_fd = -1;
    gt_str_init(&w.sup.spare_in);
    /* fresh finals (gt_sup.h): on for cuda, where they were measured;
     * GT_WORKER_FRESH_FINAL=0 turns them off, =1 applies cuda's rule on
     * any backend, =all gives every final a fresh child (whatever its
     * baseline's time) */
    const char *ff = getenv("GT_WORKER_FRESH_FINAL");
    w.sup.fresh_finals = !ff || !*ff ? !strcmp(w.bk->name, "cuda") : !strcmp(ff, "all") ? 2 : strcmp(ff, "0") != 0;
    gt_str_init(&w.sup.in);
    if (gt_sup_start(&w.sup, err, sizeof err)) {
        gt_err("cannot open %s device %d: %s", backend, w.device, err);
        return 1;
    }
    w.dev = w.sup.dev;
    gt_info("%s device %d: %s (%s, %d units), bench process %d", backend, w.device, w.dev.model,
            w.dev.arch, w.dev.units, (int)w.sup.pid);
    int rc = serve(&w);
    gt_sup_stop(&w.sup);
    return rc;
}
