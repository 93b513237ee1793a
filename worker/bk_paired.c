/* bk_paired.c: gt_bk_paired_run, the paired rounds over a backend's built
 * candidates (gt_bk_paired.h), and the device's state next to them. */
#include "gt_bk_paired.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct one_ctx {
    gt_bk_paired *p;
    gt_timing_opts one;
    /* the device's state: read after every timing, grouped by round */
    gt_gpu_acc acc;
    int state_off;           /* state() failed once: not asked again in this run */
    unsigned char *seen;     /* entries timed in the current round */
    int round;
} one_ctx;

/* Reads the device's state after a timing of entry i. gt_paired_run times
 * every live entry once per round, so the first entry met again starts the
 * next round: the rounds are known without changing its callback. */
static void sample_state(one_ctx *c, int i)
{
    gt_bk_paired *p = c->p;
    if (!p->bk->state || c->state_off)
        return;
    if (c->seen[i]) {
        memset(c->seen, 0, (size_t)p->n);
        c->round++;
    }
    c->seen[i] = 1;
    gt_gpu_sample s;
    char err[200] = "";
    if (p->bk->state(p->pp, &s, err, sizeof err) != 0) {
        snprintf(p->gpu_why, sizeof p->gpu_why, "%s", err[0] ? err : "device state unreadable");
        c->state_off = 1;
        return;
    }
    (void)gt_gpu_acc_add(&c->acc, c->round, &s); /* out of memory: one reading fewer */
}

static int time_one(void *vctx, int i, double *us)
{
    one_ctx *c = vctx;
    gt_bk_paired *p = c->p;
    char err[200];
    if (!p->cands[i])
        return 1;
    if (p->before && p->before(p->ctx, i) < 0)
        return -1;
    gt_timing t;
    if (p->bk->time(p->pp, p->cands[i], &c->one, &t, err, sizeof err)) {
        if (p->why)
            snprintf(p->why[i], sizeof p->why[i], "timing: %s", err);
        p->bk->release(p->cands[i]);
        p->cands[i] = NULL;
        return 1;
    }
    sample_state(c, i);
    *us = t.median_us;
    return 0;
}

int gt_bk_paired_run(gt_bk_paired *p, const gt_paired_opts *o, double *times, int *rounds,
                     gt_paired_stat *st)
{
    one_ctx c = {.p = p, .one = p->timing};
    c.one.repeats = 1;
    gt_gpu_acc_init(&c.acc);
    memset(&p->gpu, 0, sizeof p->gpu);
    p->gpu_why[0] = 0;
    int rc = -1;
    int *alive = calloc((size_t)p->n, sizeof *alive);
    c.seen = calloc((size_t)p->n, 1);
    if (!alive || !c.seen)
        goto out;
    for (int i = 0; i < p->n; i++)
        alive[i] = p->cands[i] != NULL;
    rc = gt_paired_run(o, p->n, alive, time_one, &c, times, rounds, st);
    /* an entry whose time was not finite is dropped by the protocol: release it too */
    for (int i = 0; rc == 0 && i < p->n; i++)
        if (!alive[i] && p->cands[i]) {
            if (p->why && !p->why[i][0])
                snprintf(p->why[i], sizeof p->why[i], "timing: no valid time measured");
            p->bk->release(p->cands[i]);
            p->cands[i] = NULL;
        }
    if (rc == 0 && !c.state_off)
        gt_gpu_acc_state(&c.acc, &p->gpu);
out:
    gt_gpu_acc_free(&c.acc);
    free(c.seen);
    free(alive);
    return rc;
}
