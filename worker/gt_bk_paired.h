/* gt_bk_paired.h: the paired, interleaved rounds (common/gt_paired.h) over
 * a backend's built candidates (module prefix gt_bk_paired_). The worker's
 * final phase (worker/runner.c) and `gemmtune verify` for the cpu backend
 * (cli/cli_verify.c) both time through this one adapter, so a claim and its
 * re-check differ only in the process and machine they run in. */
#ifndef GT_BK_PAIRED_H
#define GT_BK_PAIRED_H

#include "gt_backend.h"
#include "gt_paired.h"

typedef struct gt_bk_paired {
    const gt_backend *bk;
    gt_bk_prob *pp;
    gt_bk_cand **cands;      /* n built entries, [0] the baseline; NULL: not timed. One
                                whose timing fails is released and set NULL */
    int n;
    gt_timing_opts timing;   /* of one timing (repeats is forced to 1: the rounds repeat) */
    /* Optional: called before entry i is timed (the worker names the entry
     * in flight to its supervisor); a negative return aborts. */
    int (*before)(void *ctx, int i);
    void *ctx;
    char (*why)[256];        /* optional, n entries: why an entry's timing failed */
    /* Out: the device's state over the rounds (the backend's state() read
     * after every timing; samples 0 when it has none), and why not when
     * state() failed ("" otherwise). */
    gt_gpu_state gpu;
    char gpu_why[200];
} gt_bk_paired;

/* Runs the protocol (o) over p's entries. times: n * o->max_rounds doubles
 * (gt_paired_run's layout), *rounds, st[n] as gt_paired_run fills them,
 * p->gpu the device's state over these rounds. 0, or -1 when before()
 * aborted or out of memory. */
int gt_bk_paired_run(gt_bk_paired *p, const gt_paired_opts *o, double *times, int *rounds,
                     gt_paired_stat *st);

#endif
