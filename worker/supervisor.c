/* supervisor.c: the worker's crash isolation. The supervisor starts the
 * bench child, feeds it jobs, relays its events to the coordinator in
 * batches, and when the child dies or hangs, blames the candidate in flight,
 * restarts the child and resumes the job after that candidate. Also the
 * child's main loop. Messages on the socket pair are JSON objects, one per
 * line (cJSON escapes newlines inside strings, so a line is a message). */
#include "gt_sup.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gen_dev.h"
#include "gt_policy.h"
#include "gt_proto.h"
#include "gt_runner.h"

/* ------------------------------------------------------------- framing */

/* Writes one message and a newline, whole (retrying short writes). */
static int write_msg(int fd, const cJSON *m)
{
    char *txt = cJSON_PrintUnformatted(m);
    if (!txt)
        return -1;
    size_t n = strlen(txt);
    int rc = 0;
    const char *p = txt;
    size_t left = n;
    while (left > 0 && rc == 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            rc = -1;
        else {
            p += w;
            left -= (size_t)w;
        }
    }
    while (rc == 0) {
        ssize_t w = write(fd, "\n", 1);
        if (w == 1)
            break;
        if (w < 0 && errno == EINTR)
            continue;
        rc = -1;
    }
    cJSON_free(txt);
    return rc;
}

/* Reads the next message within timeout_ms (checking stop every 200 ms).
 * Returns it, or NULL with *why: 0 timeout, 1 end of stream / error,
 * 2 stop requested. */
static cJSON *read_msg(int fd, gt_str *in, int timeout_ms, volatile sig_atomic_t *stop, int *why)
{
    double t0 = gt_mono_ms();
    for (;;) {
        char *nl = in->s ? memchr(in->s, '\n', in->len) : NULL;
        if (nl) {
            size_t len = (size_t)(nl - in->s);
            cJSON *m = cJSON_ParseWithLength(in->s, len);
            memmove(in->s, nl + 1, in->len - len - 1);
            in->len -= len + 1;
            in->s[in->len] = '\0';
            if (m)
                return m;
            continue; /* not JSON (cannot happen with our child): skip the line */
        }
        if (stop && *stop) {
            *why = 2;
            return NULL;
        }
        double left = timeout_ms - (gt_mono_ms() - t0);
        if (left <= 0) {
            *why = 0;
            return NULL;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, left < 200 ? (int)left + 1 : 200);
        if (pr < 0 && errno != EINTR) {
            *why = 1;
            return NULL;
        }
        if (pr <= 0)
            continue;
        char buf[65536];
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || gt_str_append(in, buf, (size_t)r)) {
            *why = 1;
            return NULL;
        }
    }
}

/* -------------------------------------------------------------- child */

static int child_emit(void *ctx, cJSON *ev)
{
    int rc = write_msg(*(int *)ctx, ev);
    cJSON_Delete(ev);
    return rc;
}

static cJSON *device_json(const gt_bk_device *d)
{
    cJSON *j = cJSON_CreateObject();
    if (j && (!cJSON_AddStringToObject(j, "model", d->model) ||
              !cJSON_AddStringToObject(j, "arch", d->arch) ||
              !cJSON_AddNumberToObject(j, "index", d->index) ||
              !cJSON_AddNumberToObject(j, "mem_bytes", (double)d->mem_bytes) ||
              !cJSON_AddNumberToObject(j, "units", d->units) ||
              !cJSON_AddStringToObject(j, "driver", d->driver))) {
        cJSON_Delete(j);
        return NULL;
    }
    if (j && d->one_context && !cJSON_AddTrueToObject(j, "one_context")) {
        cJSON_Delete(j);
        return NULL;
    }
    if (j && d->has_gen) {
        cJSON *g = gt_gen_dev_to_json(&d->gen);
        if (!g || !cJSON_AddItemToObject(j, "gen_device", g)) {
            cJSON_Delete(g);
            cJSON_Delete(j);
            return NULL;
        }
    }
    return j;
}

int gt_sup_child_main(int fd, const gt_backend *bk, int device, int warm)
{
    char err[256];
    gt_bk_ctx *ctx = NULL;
    gt_bk_device dev;
    memset(&dev, 0, sizeof dev);
    /* Anything a library prints must not end up in the event stream. */
    if (dup2(2, 1) < 0)
        return 1;
    cJSON *hello = cJSON_CreateObject();
    if (!hello || !cJSON_AddStringToObject(hello, "ev", "hello"))
        return 1;
    /* test-only: a spare that cannot start (tests/integration/test_fresh_finals.sh) */
    if (warm && getenv("GT_TEST_SPARE_FAIL"))
        return 1;
    if (bk->open(device, &ctx, &dev, err, sizeof err)) {
        cJSON_AddStringToObject(hello, "error", err);
        write_msg(fd, hello);
        cJSON_Delete(hello);
        return 1;
    }
    cJSON *dj = device_json(&dev);
    if (!dj)
        return 1;
    cJSON_AddItemToObject(hello, "device", dj);
    /* a spare warms up before its hello: the supervisor reads that when
     * the final comes, and a spare still warming is still starting */
    if (warm && bk->warm)
        bk->warm(ctx);
    int rc = write_msg(fd, hello);
    cJSON_Delete(hello);
    gt_runner r = {.bk = bk, .ctx = ctx, .emit = child_emit, .emit_ctx = &fd};
    gt_str in;
    gt_str_init(&in);
    while (rc == 0) {
        int why;
        cJSON *m = read_msg(fd, &in, INT_MAX, NULL, &why);
        if (!m)
            break; /* the supervisor closed our input: leave */
        rc = gt_runner_run(&r, cJSON_GetObjectItemCaseSensitive(m, "job"));
        cJSON_Delete(m);
    }
    gt_str_free(&in);
    gt_runner_fini(&r);
    bk->close(ctx);
    return rc == 0 ? 0 : 1;
}

/* ---------------------------------------------------------- supervisor */

static void reap(gt_sup *s, int *status)
{
    *status = 0;
    if (s->pid <= 0)
        return;
    /* Give a child that is ending on its own a moment, then kill it. */
    for (int i = 0; i < 50; i++) {
        pid_t r = waitpid(s->pid, status, WNOHANG);
        if (r == s->pid) {
            s->pid = 0;
            return;
        }
        if (i == 0)
            kill(s->pid, SIGKILL);
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    waitpid(s->pid, status, 0);
    s->pid = 0;
}

static void close_child(gt_sup *s, int *status)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    reap(s, status);
    s->in.len = 0;
    if (s->in.s)
        s->in.s[0] = '\0';
}

/* Forks and execs the bench child into s->pid and s->fd; its hello is read
 * by hello(). warm: a spare, which warms its device up before its hello. */
static int spawn(gt_sup *s, int warm, char *err, size_t errlen)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(err, errlen, "socketpair: %s", strerror(errno));
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (pid == 0) {
        /* A supervisor killed with SIGKILL must not leave its bench child
         * running candidates (and holding the GPU): the kernel kills the
         * child with it. The flag survives exec; a supervisor that died
         * before it was set is caught by the getppid check. gt_sup_start
         * runs on the main thread, which lives as long as the process. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(126);
        /* The child end must survive exec: clear close-on-exec on it. */
        int fl = fcntl(sv[1], F_GETFD);
        if (fl < 0 || fcntl(sv[1], F_SETFD, fl & ~FD_CLOEXEC) < 0)
            _exit(126);
        char fdarg[16], devarg[16];
        snprintf(fdarg, sizeof fdarg, "%d", sv[1]);
        snprintf(devarg, sizeof devarg, "%d", s->device);
        char *argv[] = {"gemmtune-worker", "--bench-child", fdarg, "--backend", s->backend,
                        "--device", devarg, "--log-level",
                        (char *)(s->log_level ? s->log_level : "info"),
                        warm ? "--bench-warm" : NULL, NULL};
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(sv[1]);
    s->pid = pid;
    s->fd = sv[0];
    return 0;
}

/* Reads the child's hello and takes the device from it. */
static int hello(gt_sup *s, char *err, size_t errlen)
{
    int why = 0, status;
    cJSON *hello = read_msg(s->fd, &s->in, (int)(s->prep_timeout_s * 1000), NULL, &why);
    const cJSON *dev = hello ? cJSON_GetObjectItemCaseSensitive(hello, "device") : NULL;
    if (!cJSON_IsObject(dev)) {
        const cJSON *e = hello ? cJSON_GetObjectItemCaseSensitive(hello, "error") : NULL;
        snprintf(err, errlen, "bench process: %s",
                 cJSON_IsString(e) ? e->valuestring : why == 0 ? "no hello in time" : "ended at start");
        cJSON_Delete(hello);
        close_child(s, &status);
        return -1;
    }
    const cJSON *v;
    snprintf(s->dev.backend, sizeof s->dev.backend, "%s", s->backend);
    s->dev.index = s->device;
    if ((v = cJSON_GetObjectItemCaseSensitive(dev, "model")) && cJSON_IsString(v))
        snprintf(s->dev.model, sizeof s->dev.model, "%s", v->valuestring);
    if ((v = cJSON_GetObjectItemCaseSensitive(dev, "arch")) && cJSON_IsString(v))
        snprintf(s->dev.arch, sizeof s->dev.arch, "%s", v->valuestring);
    if ((v = cJSON_GetObjectItemCaseSensitive(dev, "driver")) && cJSON_IsString(v))
        snprintf(s->dev.driver, sizeof s->dev.driver, "%s", v->valuestring);
    if ((v = cJSON_GetObjectItemCaseSensitive(dev, "mem_bytes")) && cJSON_IsNumber(v))
        s->dev.mem_bytes = gt_proto_int_or(dev, "mem_bytes", 0, 1LL << 53, 0);
    if ((v = cJSON_GetObjectItemCaseSensitive(dev, "units")) && cJSON_IsNumber(v))
        s->dev.units = (int)gt_proto_int_or(dev, "units", 0, 1 << 30, 0);
    s->dev.one_context = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dev, "one_context"));
    /* Our own child wrote it with gt_gen_dev_to_json: a refusal is a bug,
     * said in the log; the worker still serves, registering without it. */
    s->dev.has_gen = 0;
    if ((v = cJSON_GetObjectItemCaseSensitive(dev, "gen_device"))) {
        char gerr[256];
        s->dev.has_gen = gt_gen_dev_from_json(v, &s->dev.gen, gerr, sizeof gerr) == 0;
        if (!s->dev.has_gen)
            gt_warn("bench process: %s", gerr);
    }
    cJSON_Delete(hello);
    return 0;
}

int gt_sup_start(gt_sup *s, char *err, size_t errlen)
{
    return spawn(s, 0, err, errlen) != 0 ? -1 : hello(s, err, errlen);
}

/* The spare and the child change places (the spare's slots are the main
 * child's fields while it is used or started). */
static void swap_spare(gt_sup *s)
{
    pid_t p = s->pid;
    s->pid = s->spare_pid;
    s->spare_pid = p;
    int f = s->fd;
    s->fd = s->spare_fd;
    s->spare_fd = f;
    gt_str t = s->in;
    s->in = s->spare_in;
    s->spare_in = t;
}

/* Spares that fail to start in a row before the worker stops starting them. */
#define SPARE_FAILS_MAX 3

/* Starts a spare when fresh finals are on and none is there: it opens its
 * device while the screening child works, so a final does not wait for it. */
static void spare_start(gt_sup *s)
{
    char err[256];
    /* a GPU that holds one context at a time: a spare would hold the device
     * the screening child needs when it restarts after a crash */
    if (!s->fresh_finals || s->spare_pid > 0 || s->dev.one_context)
        return;
    swap_spare(s);
    if (spawn(s, 1, err, sizeof err) != 0)
        gt_warn("spare bench process: %s (finals run in the screening one)", err);
    swap_spare(s);
}

/* Reaps the used spare if it has ended (block 0), or waits for it to (1:
 * killed after a grace time, as it may hang in a GPU gone bad). */
static void reap_dying(gt_sup *s, int block)
{
    int status;
    for (int i = 0; s->dying_pid > 0; i++) {
        if (waitpid(s->dying_pid, &status, WNOHANG) != 0) {
            s->dying_pid = 0; /* ended (or, -1, no child of ours any more) */
            return;
        }
        if (!block)
            return;
        if (i == 100) { /* 2 s */
            kill(s->dying_pid, SIGKILL);
            waitpid(s->dying_pid, &status, 0);
            s->dying_pid = 0;
            return;
        }
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

void gt_sup_idle(gt_sup *s) { reap_dying(s, 0); }

static void spare_stop(gt_sup *s)
{
    int status;
    swap_spare(s);
    close_child(s, &status);
    swap_spare(s);
    s->spare_ready = 0;
}

void gt_sup_stop(gt_sup *s)
{
    int status;
    close_child(s, &status);
    gt_str_free(&s->in);
    spare_stop(s);
    gt_str_free(&s->spare_in);
    reap_dying(s, 1);
}

/* Whether a final job runs in a fresh child: its baseline as the screens
 * timed it is short enough for the per-launch cost to count (none known:
 * yes). */
static int wants_fresh(const gt_sup *s, const cJSON *job)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(job, "timing");
    const cJSON *b = t ? cJSON_GetObjectItemCaseSensitive(t, "baseline_ref_us") : NULL;
    return s->fresh_finals == 2 ||
           (s->fresh_finals && (!cJSON_IsNumber(b) || b->valuedouble < GT_FRESH_FINAL_MAX_US));
}

/* Waits for the spare's hello: its warm-up is over and it sits idle until
 * its job. A spare that fails is closed (finals then run in the screening
 * child until the next one starts). */
static void spare_wait(gt_sup *s, long long job_id)
{
    char err[256];
    if (s->spare_pid <= 0 || s->spare_ready)
        return;
    swap_spare(s);
    gt_bk_device d = s->dev; /* hello takes the device from the spare's */
    int rc = hello(s, err, sizeof err); /* on failure it closed it */
    s->dev = d;
    swap_spare(s);
    s->spare_ready = rc == 0;
    s->spare_fails = rc == 0 ? 0 : s->spare_fails + 1;
    if (rc != 0)
        gt_warn("job %lld: spare bench process: %s (the final runs in the screening one%s)", job_id, err,
                s->spare_fails >= SPARE_FAILS_MAX ? "; fresh finals off after three spares in a row failed" : "");
    if (s->spare_fails >= SPARE_FAILS_MAX)
        s->fresh_finals = 0;
}

/* Before a final: no other process of ours works the GPU during its rounds
 * (the last used spare ended, the spare idle); then, for a fresh final, the
 * spare takes the child's place: 1 when it did (the screening child waits
 * in the spare's), 0 when the final runs in the screening child. */
static int final_begin(gt_sup *s, int fresh, long long job_id)
{
    double t0 = gt_mono_ms();
    if (fresh)
        spare_start(s); /* the first final, or the last spare failed */
    reap_dying(s, 1);
    spare_wait(s, job_id);
    if (!fresh || !s->spare_ready)
        return 0;
    swap_spare(s);
    s->spare_ready = 0;
    gt_info("job %lld: final phase in a fresh bench process (waited %.0f ms for it)", job_id, gt_mono_ms() - t0);
    return 1;
}

/* After a final in the spare: it ends (its context goes with it), the
 * screening child is the child again, and the next spare starts (again: 0
 * when the worker is stopping). */
static void end_spare(gt_sup *s, int again)
{
    /* its input closed, it logs the job's cost line and leaves by itself,
     * not waited for: the next job does not wait for its context's
     * teardown (reaped while the worker idles, or before the next final) */
    reap_dying(s, 1);
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    s->dying_pid = s->pid;
    s->pid = 0;
    gt_str_free(&s->in);
    swap_spare(s); /* the spare's slots now hold the closed child's: fd -1, pid 0 */
    gt_str_init(&s->spare_in);
    s->spare_ready = 0;
    if (again)
        spare_start(s);
}

/* Why the child is gone, for the failed candidate's reason. */
static void describe_end(int status, int timed_out, double limit_s, char *buf, size_t len)
{
    if (timed_out)
        snprintf(buf, len, "hung: no progress for %.0f s, bench process killed", limit_s);
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "crashed: bench process killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(buf, len, "crashed: bench process exited with status %d", WEXITSTATUS(status));
    else
        snprintf(buf, len, "crashed: bench process ended");
}

typedef struct jobrun {
    gt_sup *s;
    gt_client *cl;
    int64_t worker_id;
    long long job_id;
    cJSON *pending;          /* results not yet sent */
    cJSON *baseline;         /* the baseline's timing, sent with done */
    cJSON *extra;            /* enumerate answer */
    int sent;                /* results messages sent for the job */
    double oldest_ms;        /* when the oldest pending result arrived */
} jobrun;

/* Sends a results message. Returns 0 acknowledged, 1 run cancelled, -1
 * unreachable or refused. */
static int flush(jobrun *jr, int done, const char *error)
{
    char err[256];
    int rc = -1;
    cJSON *m = gt_proto_new(GT_MSG_RESULTS);
    if (!m || !cJSON_AddNumberToObject(m, "worker_id", (double)jr->worker_id) ||
        !cJSON_AddNumberToObject(m, "job_id", (double)jr->job_id) ||
        !cJSON_AddBoolToObject(m, "done", done) ||
        (error && !cJSON_AddStringToObject(m, "error", error)))
        goto out;
    cJSON_AddItemToObject(m, "results", jr->pending);
    jr->pending = cJSON_CreateArray();
    if (done && jr->baseline) {
        cJSON_AddItemToObject(m, "baseline", jr->baseline);
        jr->baseline = NULL;
    }
    if (done && jr->extra) {
        cJSON *it = jr->extra->child;
        while (it) {
            cJSON *next = it->next;
            cJSON_AddItemToObject(m, it->string, cJSON_DetachItemViaPointer(jr->extra, it));
            it = next;
        }
    }
    const char *type;
    jr->sent++;
    cJSON *reply = gt_client_call(jr->cl, m, &type, 0, err, sizeof err);
    if (!reply) {
        gt_err("job %lld: results not delivered: %s", jr->job_id, err);
        goto out;
    }
    if (!strcmp(type, GT_MSG_ACK)) {
        rc = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "cancelled")) ? 1 : 0;
    } else {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(reply, "error");
        gt_err("job %lld: coordinator refused results: %s", jr->job_id,
               cJSON_IsString(e) ? e->valuestring : type);
    }
    cJSON_Delete(reply);
out:
    cJSON_Delete(m);
    if (!jr->pending)
        jr->pending = cJSON_CreateArray();
    return jr->pending ? rc : -1;
}

static int send_job(gt_sup *s, const cJSON *work)
{
    cJSON *m = cJSON_CreateObject();
    cJSON *w = cJSON_Duplicate(work, 1);
    if (!m || !w) {
        cJSON_Delete(m);
        cJSON_Delete(w);
        return -1;
    }
    cJSON_AddItemToObject(m, "job", w);
    int rc = write_msg(s->fd, m);
    cJSON_Delete(m);
    return rc;
}

/* Records the candidate in flight as failed after the child died. */
static int blame(jobrun *jr, const cJSON *cfg, int is_baseline, const char *reason)
{
    gt_result r;
    memset(&r, 0, sizeof r);
    r.config = (cJSON *)cfg;
    r.is_baseline = is_baseline;
    r.time_us = -1;
    r.rel_err = NAN;
    snprintf(r.reason, sizeof r.reason, "%s", reason);
    cJSON *o = gt_proto_result_to_json(&r);
    if (!o || !cJSON_AddItemToArray(jr->pending, o)) {
        cJSON_Delete(o);
        return -1;
    }
    return 0;
}

#define MAX_RESTARTS_PER_JOB 16

int gt_sup_run_job(gt_sup *s, const cJSON *job, gt_client *cl, int64_t worker_id, int batch,
                   volatile sig_atomic_t *stop)
{
    char err[256], reason[200];
    const cJSON *idj = cJSON_GetObjectItemCaseSensitive(job, "id");
    const cJSON *kj = cJSON_GetObjectItemCaseSensitive(job, "kind");
    jobrun jr = {.s = s, .cl = cl, .worker_id = worker_id,
                 .job_id = cJSON_IsNumber(idj) ? gt_proto_int_or(job, "id", 0, 1LL << 53, -1) : -1,
                 .pending = cJSON_CreateArray()};
    cJSON *work = cJSON_Duplicate(job, 1);
    int rc = -1, restarts = 0, fresh = 0;
    const char *kind = cJSON_IsString(kj) ? kj->valuestring : "screen";
    if (!jr.pending || !work)
        goto out;
    int final = !strcmp(kind, "final");
    reap_dying(s, 0);
    if (final)
        fresh = final_begin(s, wants_fresh(s, job), jr.job_id);
    if (s->pid <= 0 && gt_sup_start(s, err, sizeof err)) {
        gt_err("%s", err);
        rc = flush(&jr, 1, err) < 0 ? -1 : 0;
        goto out;
    }
    if (send_job(s, work))
        goto child_died;
    if (!final)
        spare_start(s); /* opens its device while this screen runs */
    int inflight = -2; /* -2: preparing, -1: baseline, >= 0: candidate index */
    for (;;) {
        int why;
        double limit = inflight == -2 ? s->prep_timeout_s : s->cand_timeout_s;
        cJSON *ev = read_msg(s->fd, &s->in, (int)(limit * 1000), stop, &why);
        if (!ev && why == 2) {
            /* Stop: report what was measured, leave the rest to the lease. */
            int status;
            close_child(s, &status);
            rc = flush(&jr, 0, NULL) < 0 ? -1 : 1;
            goto out;
        }
        if (!ev) {
            int status;
            close_child(s, &status);
            describe_end(status, why == 0, limit, reason, sizeof reason);
            gt_warn("job %lld: candidate %d: %s", jr.job_id, inflight, reason);
            s->restarts++;
            if (++restarts > MAX_RESTARTS_PER_JOB || inflight == -2 || !strcmp(kind, "enumerate") ||
                (inflight == -1 && !strcmp(kind, "final"))) {
                char msg[300];
                snprintf(msg, sizeof msg, "%s %s", inflight == -1 ? "baseline" : "preparing the problem",
                         reason);
                if (restarts > MAX_RESTARTS_PER_JOB)
                    snprintf(msg, sizeof msg, "bench process died %d times in this job", restarts - 1);
                rc = flush(&jr, 1, msg) < 0 ? -1 : 0;
                goto out;
            }
            cJSON *cands = cJSON_GetObjectItemCaseSensitive(work, "candidates");
            if (inflight == -1) {
                if (blame(&jr, cJSON_GetObjectItemCaseSensitive(work, "baseline"), 1, reason))
                    goto out;
                cJSON_ReplaceItemInObjectCaseSensitive(work, "baseline", cJSON_CreateNull());
            } else {
                if (blame(&jr, cJSON_GetArrayItem(cands, inflight), 0, reason))
                    goto out;
                /* Screen: the candidates before it are reported already,
                 * resume after it. Final: drop it, measure the rest again. */
                int drop_to = !strcmp(kind, "final") ? inflight : 0;
                for (int i = inflight; i >= drop_to; i--)
                    cJSON_DeleteItemFromArray(cands, i);
            }
            if (gt_sup_start(s, err, sizeof err) == 0 && send_job(s, work) == 0) {
                inflight = -2;
                continue;
            }
            gt_err("job %lld: cannot restart the bench process: %s", jr.job_id, err);
            flush(&jr, 0, NULL);
            rc = -1;
            goto out;
        }
        const cJSON *evn = cJSON_GetObjectItemCaseSensitive(ev, "ev");
        const char *name = cJSON_IsString(evn) ? evn->valuestring : "";
        if (!strcmp(name, "start")) {
            const cJSON *i = cJSON_GetObjectItemCaseSensitive(ev, "i");
            inflight = cJSON_IsNumber(i) ? i->valueint : -2;
        } else if (!strcmp(name, "result")) {
            cJSON *r = cJSON_DetachItemFromObjectCaseSensitive(ev, "result");
            double now = gt_mono_ms();
            if (r) {
                if (cJSON_GetArraySize(jr.pending) == 0)
                    jr.oldest_ms = now;
                cJSON_AddItemToArray(jr.pending, r);
            }
            /* a full batch; the job's first result (its GEMM's progress
             * shows at once); results held GT_RESULT_FLUSH_MS (slow
             * candidates of a large GEMM) */
            int n = cJSON_GetArraySize(jr.pending);
            if (n >= batch || (n > 0 && (jr.sent == 0 || now - jr.oldest_ms >= GT_RESULT_FLUSH_MS))) {
                int f = flush(&jr, 0, NULL);
                if (f) {
                    int status;
                    close_child(s, &status); /* drop the job now: a fresh child next time */
                    cJSON_Delete(ev);
                    rc = f;
                    goto out;
                }
            }
        } else if (!strcmp(name, "baseline")) {
            cJSON_Delete(jr.baseline);
            jr.baseline = cJSON_DetachItemFromObjectCaseSensitive(ev, "baseline");
        } else if (!strcmp(name, "enumerated")) {
            cJSON_Delete(jr.extra);
            jr.extra = cJSON_CreateObject();
            if (jr.extra) {
                cJSON_AddItemToObject(jr.extra, "candidates",
                                      cJSON_DetachItemFromObjectCaseSensitive(ev, "candidates"));
                cJSON_AddItemToObject(jr.extra, "baseline_config",
                                      cJSON_DetachItemFromObjectCaseSensitive(ev, "baseline_config"));
            }
        } else if (!strcmp(name, "done")) {
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(ev, "error");
            int f = flush(&jr, 1, cJSON_IsString(e) ? e->valuestring : NULL);
            cJSON_Delete(ev);
            rc = f < 0 ? -1 : f;
            goto out;
        }
        cJSON_Delete(ev);
    }
child_died : {
    int status;
    close_child(s, &status);
    rc = flush(&jr, 0, NULL) < 0 ? -1 : 1;
}
out:
    if (fresh)
        end_spare(s, !(stop && *stop));
    cJSON_Delete(jr.pending);
    cJSON_Delete(jr.baseline);
    cJSON_Delete(jr.extra);
    cJSON_Delete(work);
    return rc;
}
