/* test_dispatch_order.c: a lease does not wait behind a queue of results.
 *
 * The real dispatcher (gt_dispatch on tcp://127.0.0.1, a real SQLite store
 * with a cpu run) gets a burst of large results messages from many workers
 * at once, then a lease from one more worker. The dispatcher serves leases
 * (and the other small requests) ahead of results messages: the lease must
 * be answered in the first half of the burst's time (0.3-8 ms against
 * ~33 ms on the 2-core development machine), where in arrival order it
 * came with the burst's last answers (checked with a build that put every
 * request in one queue). It is served inside the results transaction in
 * progress and answered at once, before that transaction commits
 * (gt_dispatch_stats.early_leases counts it). Every
 * result of the burst is stored once, and the coordinator's answer times
 * (gemmtune_worker_answer_seconds) count both queues. A results message
 * that fails after it wrote in a transaction of many (results
 * transactions have no savepoints) fails alone: the transaction is rolled
 * back and served again, each message in a savepoint of its own, and what
 * the messages counted is counted once. */
#include <cjson/cJSON.h>
#include <nng/nng.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gt_dispatch.h"
#include "gt_store.h"
#include "gt_test.h"
#include "gt_util.h"

#define FLOOD 24   /* workers whose results messages arrive first */
#define GEMMS 32   /* one screen job each for them, and more for the lease */
#define EXTRA 256  /* results per message beyond the job's candidates */
#define NEW 8      /* results per message of the rolled-back transaction's phase */

static const char *str(const cJSON *j, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

typedef struct worker {
    nng_socket s;
    char cred[64];
    long long job;
    char *results; /* the results message for its job: every candidate, valid */
    int nres;
    double acked_ms;
    int ok;
} worker;

/* Registers w and leases a job; builds its results message. 0 or -1. */
static int start_worker(worker *w, const char *url, int pid)
{
    w->s = gt_test_dial(url);
    cJSON *r = gt_test_req(w->s,
                    "{\"v\":1,\"type\":\"register\",\"host\":\"flood\",\"pid\":%d,\"backend\":\"cpu\","
                    "\"device_model\":\"Sim CPU\",\"units\":2}",
                    pid);
    int ok = r && !strcmp(str(r, "type"), "registered");
    if (ok)
        snprintf(w->cred, sizeof w->cred, "%s", str(r, "session"));
    cJSON_Delete(r);
    if (!ok)
        return -1;
    r = gt_test_req(w->s, "{\"v\":1,\"type\":\"lease\",\"session\":\"%s\"}", w->cred);
    const cJSON *job = cJSON_GetObjectItemCaseSensitive(r, "job");
    const cJSON *cands = cJSON_GetObjectItemCaseSensitive(job, "candidates");
    if (!r || strcmp(str(r, "type"), "job") || !cJSON_IsArray(cands)) {
        cJSON_Delete(r);
        return -1;
    }
    w->job = (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(job, "id"));
    cJSON *m = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    cJSON_AddNumberToObject(m, "v", 1);
    cJSON_AddStringToObject(m, "type", "results");
    cJSON_AddStringToObject(m, "session", w->cred);
    cJSON_AddNumberToObject(m, "job_id", (double)w->job);
    cJSON_AddBoolToObject(m, "done", 0);
    const cJSON *c;
    int i = 0;
    cJSON_ArrayForEach(c, cands)
    {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddItemToObject(x, "config", cJSON_Duplicate(c, 1));
        cJSON_AddBoolToObject(x, "valid", 1);
        cJSON_AddNumberToObject(x, "time_us", 500 + i++);
        cJSON_AddNumberToObject(x, "rel_err", 0);
        cJSON_AddItemToArray(arr, x);
    }
    /* and more of the family's configs beyond the job's, so that each
     * message is a few milliseconds of the store's work (a worker may
     * report any config it timed) */
    for (int k = 0; k < EXTRA; k++) {
        cJSON *x = cJSON_CreateObject(), *cfg = cJSON_CreateObject();
        cJSON_AddNumberToObject(cfg, "kc", 64 + 8 * (k % 16));
        cJSON_AddNumberToObject(cfg, "mc", 32 + 8 * (k / 16));
        cJSON_AddNumberToObject(cfg, "mr", 4);
        cJSON_AddNumberToObject(cfg, "nc", 256);
        cJSON_AddNumberToObject(cfg, "nr", 8);
        cJSON_AddNumberToObject(cfg, "threads", 1);
        cJSON_AddNumberToObject(cfg, "unroll", 3);
        cJSON_AddItemToObject(x, "config", cfg);
        cJSON_AddBoolToObject(x, "valid", 1);
        cJSON_AddNumberToObject(x, "time_us", 900 + k);
        cJSON_AddNumberToObject(x, "rel_err", 0);
        cJSON_AddItemToArray(arr, x);
        i++;
    }
    w->nres = i;
    cJSON_AddItemToObject(m, "results", arr);
    w->results = cJSON_PrintUnformatted(m);
    cJSON_Delete(m);
    cJSON_Delete(r);
    return w->results && w->nres > 0 ? 0 : -1;
}

/* A small results message of worker w for job: NEW results of configs
 * {"kc": base + k}, the last one 0.001 us (physically impossible: stored
 * invalid, counted implausible) when implausible, 666 us (refused by the
 * test's trigger) when poison. malloc'd text. */
static char *small_msg(const worker *w, long long job, int base, int implausible, int poison)
{
    cJSON *m = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    cJSON_AddNumberToObject(m, "v", 1);
    cJSON_AddStringToObject(m, "type", "results");
    cJSON_AddStringToObject(m, "session", w->cred);
    cJSON_AddNumberToObject(m, "job_id", (double)job);
    cJSON_AddBoolToObject(m, "done", 0);
    for (int k = 0; k < NEW; k++) {
        cJSON *x = cJSON_CreateObject(), *cfg = cJSON_CreateObject();
        cJSON_AddNumberToObject(cfg, "kc", base + k);
        cJSON_AddItemToObject(x, "config", cfg);
        cJSON_AddBoolToObject(x, "valid", 1);
        int last = k == NEW - 1;
        cJSON_AddNumberToObject(x, "time_us", last && poison ? 666 : last && implausible ? 0.001 : 700 + k);
        cJSON_AddNumberToObject(x, "rel_err", 0);
        cJSON_AddItemToArray(arr, x);
    }
    cJSON_AddItemToObject(m, "results", arr);
    char *t = cJSON_PrintUnformatted(m);
    cJSON_Delete(m);
    return t;
}

static void *wait_ack(void *arg)
{
    worker *w = arg;
    cJSON *r = gt_test_recv(w->s);
    w->acked_ms = gt_mono_ms();
    w->ok = r && !strcmp(str(r, "type"), "ack");
    cJSON_Delete(r);
    return NULL;
}

int main(void)
{
    char dir[64], err[512];
    if (gt_test_tmpdir(dir, sizeof dir, "order"))
        return 1;
    /* GEMMS cpu problems, one screen job of 64 candidates each */
    char log[4096];
    size_t at = (size_t)snprintf(log, sizeof log, "M,N,K\n");
    for (int i = 0; i < GEMMS; i++)
        at += (size_t)snprintf(log + at, sizeof log - at, "%d,%d,%d\n", 64 + 8 * i, 96, 128);
    static const char *const opts[][2] = {{"budget", "64"}, {"shard_size", "64"}};
    gt_store *s = gt_test_store_with_run(dir, log, opts, 2, NULL);
    if (!s)
        return gt_test_done();
    gt_dispatch_opts dopt = {.url = "tcp://127.0.0.1:0", .lease_ms = 60000, .heartbeat_ms = 10000,
                             .max_attempts = 3};
    gt_dispatch *d = gt_dispatch_start(s, &dopt, err, sizeof err);
    CHECK_MSG(d, "%s", err);
    if (!d)
        return gt_test_done();
    const char *url = gt_dispatch_url(d);

    static worker ws[FLOOD];
    int ready = 1;
    for (int i = 0; i < FLOOD && ready; i++)
        ready = start_worker(&ws[i], url, 100 + i) == 0;
    CHECK(ready);
    nng_socket late = gt_test_dial(url);
    cJSON *r = gt_test_req(late,
                    "{\"v\":1,\"type\":\"register\",\"host\":\"late\",\"pid\":7,\"backend\":\"cpu\","
                    "\"device_model\":\"Sim CPU\",\"units\":2}");
    char cred[64];
    snprintf(cred, sizeof cred, "%s", str(r, "session"));
    CHECK(r && !strcmp(str(r, "type"), "registered"));
    cJSON_Delete(r);
    if (!ready)
        goto out;
    long long before = gt_test_int(s, "SELECT COUNT(*) FROM results");

    /* the burst: every results message out before the lease */
    pthread_t th[FLOOD];
    int sent = 0;
    for (int i = 0; i < FLOOD; i++)
        sent += gt_test_send(ws[i].s, ws[i].results) == 0;
    CHECK(sent == FLOOD);
    for (int i = 0; i < FLOOD; i++)
        CHECK(pthread_create(&th[i], NULL, wait_ack, &ws[i]) == 0);
    double t0 = gt_mono_ms();
    r = gt_test_req(late, "{\"v\":1,\"type\":\"lease\",\"session\":\"%s\"}", cred);
    double leased_ms = gt_mono_ms();
    CHECK(r && !strcmp(str(r, "type"), "job"));
    cJSON_Delete(r);
    double last_ack = 0, first_ack = 1e300;
    int acked = 0, nres = 0;
    for (int i = 0; i < FLOOD; i++) {
        pthread_join(th[i], NULL);
        acked += ws[i].ok;
        nres += ws[i].nres;
        last_ack = ws[i].acked_ms > last_ack ? ws[i].acked_ms : last_ack;
        first_ack = ws[i].acked_ms < first_ack ? ws[i].acked_ms : first_ack;
    }
    fprintf(stderr, "  %d results messages (%d results) sent first: the lease answered after %.1f ms,"
                    " the first results message after %.1f ms, the last after %.1f ms\n",
            FLOOD, nres, leased_ms - t0, first_ack - t0, last_ack - t0);
    CHECK(acked == FLOOD);
    /* served after the results message in progress, not after the burst
     * (in arrival order it came with the burst's last answers) */
    CHECK_MSG(leased_ms - t0 < 0.5 * (last_ack - t0),
              "the lease waited for the results messages (%.1f ms, last ack %.1f ms)", leased_ms - t0,
              last_ack - t0);
    /* every result stored, once */
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM results") - before == nres);
    CHECK(gt_test_int(s, "SELECT COUNT(DISTINCT problem_id || ':' || config_hash) FROM results") ==
          gt_test_int(s, "SELECT COUNT(*) FROM results"));
    /* the coordinator's answer times: the registrations and leases, the
     * results messages */
    gt_dispatch_stats st;
    /* (the sender counts an answer just after sending it) */
    for (int i = 0; i < 100; i++) {
        memset(&st, 0, sizeof st);
        gt_dispatch_stats_get(d, &st);
        if (st.answer[GT_DISPATCH_Q_LEASE].count >= 2 * FLOOD + 2 && st.answer[GT_DISPATCH_Q_RESULTS].count >= FLOOD)
            break;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    CHECK(st.answer[GT_DISPATCH_Q_LEASE].count == 2 * FLOOD + 2);
    CHECK(st.answer[GT_DISPATCH_Q_RESULTS].count == FLOOD);
    fprintf(stderr, "  leases answered before their commit: %llu\n", (unsigned long long)st.early_leases);

    /* Then for certain inside a results transaction: with the store held
     * here, the dispatcher waits in the transaction of the burst's first
     * message while the rest and a lease queue up; released, it finishes
     * that message, finds the lease and answers it before the commit. (A
     * lease sweep due in the held window would take the store first and the
     * lease into a transaction of its own: up to three tries.) The burst is
     * sent again: results are idempotent, and every one is acknowledged. */
    uint64_t early0 = st.early_leases;
    int early = 0;
    for (int attempt = 0; attempt < 3 && !early; attempt++) {
        gt_store_lock(s);
        sent = 0;
        for (int i = 0; i < FLOOD; i++)
            sent += gt_test_send(ws[i].s, ws[i].results) == 0;
        char lease[160];
        snprintf(lease, sizeof lease, "{\"v\":1,\"type\":\"lease\",\"session\":\"%s\"}", cred);
        sent += gt_test_send(late, lease) == 0;
        struct timespec held = {0, 50 * 1000000L};
        nanosleep(&held, NULL);
        gt_store_unlock(s);
        CHECK(sent == FLOOD + 1);
        r = gt_test_recv(late);
        CHECK(r && (!strcmp(str(r, "type"), "job") || !strcmp(str(r, "type"), "none")));
        cJSON_Delete(r);
        acked = 0;
        for (int i = 0; i < FLOOD; i++) {
            r = gt_test_recv(ws[i].s);
            acked += r && !strcmp(str(r, "type"), "ack");
            cJSON_Delete(r);
        }
        CHECK(acked == FLOOD);
        memset(&st, 0, sizeof st);
        gt_dispatch_stats_get(d, &st);
        early = st.early_leases > early0;
    }
    CHECK_MSG(early, "the lease was answered after its transaction's commit, three times");
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM results") - before == nres);

    /* A results message that fails after it wrote, in a transaction of many:
     * results transactions run without savepoints (GT_STORE_BATCH_UNGUARDED),
     * so it is rolled back whole and its messages served again, each in a
     * savepoint of its own. With the store held, every worker's small
     * message of new results queues up, the poison last (a trigger on the
     * store's connection refuses its last result, after its first were
     * inserted), one for a job not leased to its sender, one with an
     * implausible result. The poison alone is refused; every other message
     * is acknowledged and stored once; the refusal and the implausible
     * result are counted once though served twice; one replay. */
    CHECK(gt_test_store_sql(s, "CREATE TEMP TRIGGER inject BEFORE INSERT ON results WHEN"
                               " NEW.time_us = 666 BEGIN SELECT RAISE(ABORT, 'injected'); END") == 0);
    memset(&st, 0, sizeof st);
    gt_dispatch_stats_get(d, &st);
    gt_dispatch_stats st0 = st;
    long long before_poison = gt_test_int(s, "SELECT COUNT(*) FROM results");
    enum { POISON = FLOOD - 1, THIEF = 3, DOUBTFUL = 5 };
    char *msg[FLOOD];
    gt_store_lock(s);
    sent = 0;
    for (int i = 0; i < FLOOD; i++) {
        /* the thief reports for the next worker's job */
        long long job = i == THIEF ? ws[i + 1].job : ws[i].job;
        msg[i] = small_msg(&ws[i], job, 4096 + 16 * i, i == DOUBTFUL, i == POISON);
        sent += msg[i] && gt_test_send(ws[i].s, msg[i]) == 0;
        struct timespec gap = {0, 1000000L}; /* in this order, as far as the sockets go */
        nanosleep(&gap, NULL);
    }
    struct timespec held = {0, 50 * 1000000L};
    nanosleep(&held, NULL);
    gt_store_unlock(s);
    CHECK(sent == FLOOD);
    int acks = 0, poison_refused = 0, thief_refused = 0;
    for (int i = 0; i < FLOOD; i++) {
        r = gt_test_recv(ws[i].s);
        const char *e = str(r, "error");
        if (i == POISON)
            poison_refused = r && strstr(e, "injected") != NULL;
        else if (i == THIEF)
            thief_refused = r && !strcmp(str(r, "refused"), "not_leased");
        else
            acks += r && !strcmp(str(r, "type"), "ack") &&
                    cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "accepted")) == NEW;
        cJSON_Delete(r);
        free(msg[i]);
    }
    CHECK(poison_refused && thief_refused);
    CHECK_MSG(acks == FLOOD - 2, "%d of %d messages acknowledged with all their results", acks, FLOOD - 2);
    CHECK_MSG(gt_test_int(s, "SELECT COUNT(*) FROM results") - before_poison == (FLOOD - 2) * NEW,
              "%lld new results stored, %d sent by the innocent",
              gt_test_int(s, "SELECT COUNT(*) FROM results") - before_poison, (FLOOD - 2) * NEW);
    CHECK(gt_test_int(s, "SELECT COUNT(DISTINCT problem_id || ':' || config_hash) FROM results") ==
          gt_test_int(s, "SELECT COUNT(*) FROM results"));
    memset(&st, 0, sizeof st);
    gt_dispatch_stats_get(d, &st);
    CHECK_MSG(st.replays - st0.replays == 1, "%llu replays",
              (unsigned long long)(st.replays - st0.replays));
    CHECK(st.refused[GT_REFUSED_NOT_LEASED] - st0.refused[GT_REFUSED_NOT_LEASED] == 1);
    CHECK(st.implausible - st0.implausible == 1);
    fprintf(stderr, "  a results transaction rolled back and served again: %d acknowledged, the"
                    " poison refused alone\n", acks);
    CHECK(gt_test_store_sql(s, "DROP TRIGGER inject") == 0);
out:
    for (int i = 0; i < FLOOD; i++) {
        free(ws[i].results);
        nng_close(ws[i].s);
    }
    nng_close(late);
    gt_dispatch_stop(d);
    gt_store_close(s);
    return gt_test_done_rm(dir);
}
