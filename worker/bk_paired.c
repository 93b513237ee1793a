/* bk_paired.c: gt_bk_paired_run, the paired rounds over a backend's built
 * candidates (gt_bk_paired.h). */
#include "gt_bk_paired.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct one_ctx {
    gt_bk_paired *p;
    gt_timing_opts one;
} one_ctx;

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
    *us = t.median_us;
    return 0;
}

int gt_bk_paired_run(gt_bk_paired *p, const gt_paired_opts *o, double *times, int *rounds,
                     gt_paired_stat *st)
{
    one_ctx c = {.p = p, .one = p->timing};
    c.one.repeats = 1;
    int *alive = calloc((size_t)p->n, sizeof *alive);
    if (!alive)
        return -1;
    for (int i = 0; i < p->n; i++)
        alive[i] = p->cands[i] != NULL;
    int rc = gt_paired_run(o, p->n, alive, time_one, &c, times, rounds, st);
    /* an entry whose time was not finite is dropped by the protocol: release it too */
    for (int i = 0; rc == 0 && i < p->n; i++)
        if (!alive[i] && p->cands[i]) {
            if (p->why && !p->why[i][0])
                snprintf(p->why[i], sizeof p->why[i], "timing: no valid time measured");
            p->bk->release(p->cands[i]);
            p->cands[i] = NULL;
        }
    free(alive);
    return rc;
}
