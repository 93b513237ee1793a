/* test_lease_retry.c: a worker that gets no job is told when to ask again:
 * soon (GT_RETRY_BUSY_MS) while another worker holds a job whose answer
 * will queue more (here a cuda problem's enumeration, whose answer queues
 * its screens), slowly (GT_RETRY_IDLE_MS) when nothing is in flight. Through
 * the store calls the dispatcher makes, on a real SQLite file. */
#include <stdio.h>
#include <string.h>

#include "gt_store.h"
#include "gt_test.h"
#include "gt_util.h"

int main(void)
{
    char dir[64], err[512];
    if (gt_test_tmpdir(dir, sizeof dir, "leaseretry"))
        return 1;
    static const char *const opts[][2] = {{"backend", "cuda"}, {"device_model", "Sim GPU"}};
    gt_store *s = gt_test_store_with_run(dir, "M,N,K,dtype\n4096,16,4096,bf16\n", opts, 2, NULL);
    if (!s)
        return gt_test_done();
    int64_t a = gt_test_sim_gpu_worker(s, "sim", 5001), b = gt_test_sim_gpu_worker(s, "sim", 5002);
    gt_job ja, jb;
    /* a holds the only job, the enumeration: b waits briefly */
    int r = gt_store_lease(s, a, gt_wall_ms(), 30000, &ja, err, sizeof err);
    CHECK_MSG(r == 1 && !strcmp(ja.kind, "enumerate"), "lease: %d %s", r, err);
    r = gt_store_lease(s, b, gt_wall_ms(), 30000, &jb, err, sizeof err);
    CHECK_MSG(r == 0 && jb.retry_ms == GT_RETRY_BUSY_MS, "lease: %d %d %s", r, jb.retry_ms, err);
    gt_job_free(&ja);
    /* a gone: its job back in the queue and leased by b; when b is gone
     * too, nothing is in flight and a new worker waits long */
    CHECK_MSG(gt_store_worker_bye(s, a, gt_wall_ms(), err, sizeof err) == 0, "%s", err);
    r = gt_store_lease(s, b, gt_wall_ms(), 30000, &jb, err, sizeof err);
    CHECK_MSG(r == 1 && !strcmp(jb.kind, "enumerate"), "lease: %d %s", r, err);
    gt_job_free(&jb);
    CHECK_MSG(gt_store_worker_bye(s, b, gt_wall_ms(), err, sizeof err) == 0, "%s", err);
    int64_t c = gt_test_sim_gpu_worker(s, "sim", 5003);
    /* c takes the requeued enumeration, and leaves */
    r = gt_store_lease(s, c, gt_wall_ms(), 30000, &jb, err, sizeof err);
    CHECK_MSG(r == 1, "lease: %d %s", r, err);
    gt_job_free(&jb);
    CHECK_MSG(gt_store_worker_bye(s, c, gt_wall_ms(), err, sizeof err) == 0, "%s", err);
    /* the run cancelled: no job queued or leased */
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE state = 'leased'") == 0);
    CHECK_MSG(gt_store_cancel_run(s, 1, err, sizeof err) == 0, "%s", err);
    CHECK(gt_test_int(s, "SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'leased')") == 0);
    int64_t d = gt_test_sim_gpu_worker(s, "sim", 5004);
    r = gt_store_lease(s, d, gt_wall_ms(), 30000, &jb, err, sizeof err);
    CHECK_MSG(r == 0 && jb.retry_ms == GT_RETRY_IDLE_MS, "lease: %d %d %s", r, jb.retry_ms, err);
    gt_store_close(s);
    return gt_test_done();
}
