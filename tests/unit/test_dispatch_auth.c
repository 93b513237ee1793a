/* test_dispatch_auth.c: a forging client against the real dispatcher.
 *
 * A coordinator's worker endpoint (gt_dispatch on tcp://127.0.0.1, a real
 * SQLite store with a cpu run) is attacked with raw nng req sockets, as an
 * outsider who can reach the worker port would: lease, results, heartbeat
 * and bye with a guessed or stolen worker id, with no session, with a
 * session credential stolen from another connection, with the wrong worker
 * id; registration and attach without the token; results for a job the
 * sender never leased; a sub-physical time and baseline from an honest
 * session. Every forgery gets a refusal (and is counted), none changes the
 * store. Then the coordinator restarts with another token: the earlier
 * session is gone. */
#include <cjson/cJSON.h>
#include <nng/nng.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_dispatch.h"
#include "gt_store.h"
#include "gt_test.h"
#include "gt_util.h"

static const char *str(const cJSON *j, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* 1 when the reply is an error refused for the reason named. */
static int refused(cJSON *r, const char *why)
{
    int ok = r && !strcmp(str(r, "type"), "error") && !strcmp(str(r, "refused"), why);
    if (!ok) {
        char *t = r ? cJSON_PrintUnformatted(r) : NULL;
        fprintf(stderr, "  expected a refusal %s, got %s\n", why, t ? t : "(nothing)");
        free(t);
    }
    cJSON_Delete(r);
    return ok;
}

#define REG "{\"v\":1,\"type\":\"register\",\"host\":\"%s\",\"pid\":%d,\"backend\":\"cpu\"," \
            "\"device_model\":\"Sim CPU\",\"units\":2%s}"

int main(void)
{
    char dir[64], err[512];
    if (gt_test_tmpdir(dir, sizeof dir, "auth"))
        return 1;
    /* a cpu run of two GEMMs, queued */
    static const char *const opts[][2] = {{"budget", "4"}};
    gt_store *s = gt_test_store_with_run(dir, "M,N,K\n64,64,64\n48,32,96\n", opts, 1, NULL);
    if (!s)
        return gt_test_done();

    gt_dispatch_opts dopt = {.url = "tcp://127.0.0.1:0", .lease_ms = 30000, .heartbeat_ms = 5000,
                             .max_attempts = 3, .token = "T0ken"};
    gt_dispatch *d = gt_dispatch_start(s, &dopt, err, sizeof err);
    CHECK_MSG(d, "%s", err);
    if (!d)
        return gt_test_done();
    char url[256];
    snprintf(url, sizeof url, "%s", gt_dispatch_url(d));

    /* The honest worker registers with the token and leases a job. */
    nng_socket honest = gt_test_dial(url);
    cJSON *r = gt_test_req(honest, REG, "good", 11, ",\"token\":\"T0ken\"");
    CHECK(r && !strcmp(str(r, "type"), "registered"));
    char cred[64];
    snprintf(cred, sizeof cred, "%s", str(r, "session"));
    long long wid = (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "worker_id"));
    cJSON_Delete(r);
    CHECK(strlen(cred) == 32);
    CHECK(gt_dispatch_sessions(d) == 1);
    r = gt_test_req(honest, "{\"v\":1,\"type\":\"lease\",\"session\":\"%s\"}", cred);
    CHECK(r && !strcmp(str(r, "type"), "job"));
    long long job = (long long)cJSON_GetNumberValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "job"), "id"));
    cJSON_Delete(r);
    long long leased_before = gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE state = 'leased'");
    CHECK(leased_before == 1);

    /* The attacker: a connection that never registered. */
    nng_socket evil = gt_test_dial(url);
    CHECK(refused(gt_test_req(evil, "{\"v\":1,\"type\":\"lease\",\"worker_id\":%lld}", wid), "no_session"));
    CHECK(refused(gt_test_req(evil, "{\"v\":1,\"type\":\"lease\",\"worker_id\":2}"), "no_session"));
    CHECK(refused(gt_test_req(evil, "{\"v\":1,\"type\":\"heartbeat\",\"worker_id\":%lld}", wid), "no_session"));
    CHECK(refused(gt_test_req(evil,
                      "{\"v\":1,\"type\":\"results\",\"worker_id\":%lld,\"job_id\":%lld,\"done\":true,"
                      "\"results\":[{\"config\":{\"mc\":64},\"valid\":true,\"time_us\":0.001,"
                      "\"rel_err\":0}],\"baseline\":{\"config\":{\"mc\":1},\"time_us\":1000}}",
                      wid, job),
                  "no_session"));
    CHECK(refused(gt_test_req(evil, "{\"v\":1,\"type\":\"bye\",\"worker_id\":%lld}", wid), "no_session"));
    /* ... with the honest worker's credential, stolen off the wire */
    CHECK(refused(gt_test_req(evil, "{\"v\":1,\"type\":\"lease\",\"session\":\"%s\"}", cred), "no_session"));
    CHECK(refused(gt_test_req(evil, "{\"v\":1,\"type\":\"lease\",\"worker_id\":%lld,\"session\":\"%s\"}", wid, cred),
                  "no_session"));
    /* ... registering or attaching without the token */
    CHECK(refused(gt_test_req(evil, REG, "evil", 66, ""), "bad_token"));
    CHECK(refused(gt_test_req(evil, REG, "evil", 66, ",\"token\":\"guess\""), "bad_token"));
    char attach[128];
    snprintf(attach, sizeof attach, ",\"session\":\"%s\"", cred);
    CHECK(refused(gt_test_req(evil, REG, "evil", 66, attach), "bad_token"));
    CHECK(refused(gt_test_req(evil, "{\"v\":1,\"type\":\"lease\",\"session\":\"%s\"}", cred), "no_session"));
    /* nothing changed: no result, no new worker, the lease still the honest one's */
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM results") == 0);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM baselines") == 0);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM workers") == 1);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM workers WHERE state = 'gone'") == 0);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE state = 'leased'") == 1);
    CHECK(gt_dispatch_refused(d, GT_REFUSED_NO_SESSION) == 8);
    CHECK(gt_dispatch_refused(d, GT_REFUSED_TOKEN) == 3);
    CHECK(gt_dispatch_refused(d, GT_REFUSED_NO_CREDENTIAL) == 0);

    /* The honest connection itself: no credential, a wrong one, another
     * worker's id. */
    CHECK(refused(gt_test_req(honest, "{\"v\":1,\"type\":\"lease\",\"worker_id\":%lld}", wid), "no_credential"));
    CHECK(refused(gt_test_req(honest, "{\"v\":1,\"type\":\"lease\",\"session\":\"%032d\"}", 0), "bad_credential"));
    CHECK(refused(gt_test_req(honest, "{\"v\":1,\"type\":\"heartbeat\",\"session\":\"%s\",\"worker_id\":%lld}", cred,
                      wid + 1),
                  "wrong_worker"));

    /* A second worker with the token may not report for the first's job. */
    nng_socket other = gt_test_dial(url);
    r = gt_test_req(other, REG, "other", 12, ",\"token\":\"T0ken\"");
    char cred2[64];
    snprintf(cred2, sizeof cred2, "%s", str(r, "session"));
    CHECK(r && !strcmp(str(r, "type"), "registered") && strcmp(cred, cred2) != 0);
    cJSON_Delete(r);
    CHECK(refused(gt_test_req(other,
                      "{\"v\":1,\"type\":\"results\",\"session\":\"%s\",\"job_id\":%lld,\"done\":true,"
                      "\"results\":[]}",
                      cred2, job),
                  "not_leased"));
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE state = 'leased'") == 1);

    /* A second connection of the honest worker attaches with the token and
     * its credential (what its heartbeat socket does) and keeps its id. */
    nng_socket hb = gt_test_dial(url);
    CHECK(refused(gt_test_req(hb, REG, "good", 11, attach), "bad_token")); /* the token is needed too */
    char attach_tok[160];
    snprintf(attach_tok, sizeof attach_tok, ",\"token\":\"T0ken\",\"session\":\"%s\"", cred);
    r = gt_test_req(hb, REG, "good", 11, attach_tok);
    CHECK(r && !strcmp(str(r, "type"), "registered") &&
          (long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "worker_id")) == wid);
    cJSON_Delete(r);
    r = gt_test_req(hb, "{\"v\":1,\"type\":\"heartbeat\",\"session\":\"%s\"}", cred);
    CHECK(r && !strcmp(str(r, "type"), "ack"));
    cJSON_Delete(r);

    /* An honest session reporting the impossible: a time and a baseline
     * far below what 2 cpu units can do for 64x64x64 (0.52 Mflop). */
    r = gt_test_req(honest,
            "{\"v\":1,\"type\":\"results\",\"session\":\"%s\",\"job_id\":%lld,\"done\":false,"
            "\"results\":[{\"config\":{\"mc\":64},\"valid\":true,\"time_us\":0.001,\"rel_err\":0},"
            "{\"config\":{\"mc\":32},\"valid\":true,\"time_us\":40,\"rel_err\":0}],"
            "\"baseline\":{\"config\":{\"mc\":1},\"time_us\":0.002}}",
            cred, job);
    CHECK(r && !strcmp(str(r, "type"), "ack"));
    cJSON_Delete(r);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM results WHERE valid = 1") == 1);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM results WHERE valid = 0 AND time_us = 0.001"
                   " AND reason LIKE 'implausible: %below the physical bound%'") == 1);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM baselines") == 0);
    CHECK(gt_dispatch_implausible(d) == 2);

    /* bye from the honest worker unbinds both its connections */
    r = gt_test_req(honest, "{\"v\":1,\"type\":\"bye\",\"session\":\"%s\"}", cred);
    CHECK(r && !strcmp(str(r, "type"), "ack"));
    cJSON_Delete(r);
    CHECK(refused(gt_test_req(hb, "{\"v\":1,\"type\":\"heartbeat\",\"session\":\"%s\"}", cred), "no_session"));
    CHECK(refused(gt_test_req(hb, REG, "good", 11, attach_tok), "unknown_session"));
    nng_close(hb);

    /* Restart with another token: the second worker's session is void. */
    gt_dispatch_stop(d);
    nng_close(honest);
    nng_close(evil);
    dopt.token = "N3w";
    d = gt_dispatch_start(s, &dopt, err, sizeof err);
    CHECK_MSG(d, "%s", err);
    if (d) {
        nng_socket again = gt_test_dial(gt_dispatch_url(d));
        CHECK(refused(gt_test_req(again, "{\"v\":1,\"type\":\"lease\",\"session\":\"%s\"}", cred2), "no_session"));
        char a2[160];
        snprintf(a2, sizeof a2, ",\"token\":\"T0ken\",\"session\":\"%s\"", cred2);
        CHECK(refused(gt_test_req(again, REG, "other", 12, a2), "bad_token"));
        snprintf(a2, sizeof a2, ",\"token\":\"N3w\",\"session\":\"%s\"", cred2);
        CHECK(refused(gt_test_req(again, REG, "other", 12, a2), "unknown_session"));
        nng_close(again);
        gt_dispatch_stop(d);
    }
    nng_close(other);
    gt_store_close(s);
    return gt_test_done_rm(dir);
}
