/* gt_space.h: the generated families' pruned spaces as JSON (module prefix
 * gt_spview_; gt_space_ is common/space_cpu.c's CPU space), what GET
 * /v1/runs/{id}/space/{problem} serves
 * (server/http_space.c). Pure: a problem and the device limits in, JSON
 * out, computed by the gen/ code the CUDA worker runs (gt_gen_prune,
 * gt_mma_prune) with the worker's default caps, so the coordinator shows
 * the space a worker with those limits enumerates without asking one. */
#ifndef GT_SPACE_H
#define GT_SPACE_H

#include <stddef.h>

#include "gen_mma.h"
#include "gt_problem.h"

struct cJSON;

enum { GT_SPACE_GEMV = 1, GT_SPACE_MMA = 2, GT_SPACE_ALL = 3 };
#define GT_SPACE_LIMIT_DEFAULT 50   /* pruned examples per family */
#define GT_SPACE_LIMIT_MAX 1000     /* bounds a response to ~0.5 MB per family */
#define GT_SPACE_RULE_LEN 48

typedef struct gt_spview_query {
    int families;        /* GT_SPACE_* mask */
    const char *rule;    /* NULL: every pruned config is an example; else this rule's only */
    int offset, limit;   /* the page of pruned examples (limit <= GT_SPACE_LIMIT_MAX) */
} gt_spview_query;

/* The rule of a pruning reason: its text up to the first ':' or '=',
 * trailing blanks dropped ("alignment: lda=..." -> "alignment",
 * "n_tile=8 < n=32: ..." -> "n_tile", "rank: 49 of ..." -> "rank"). The
 * reasons' leading words are the rule names of gen/gemv_space.c and
 * gen/mma_space.c; cutting at '=' as well keeps the value out of the name. */
void gt_spview_rule(const char *reason, char *buf, size_t len);

/* Adds one member per family of q->families to obj ("gemv", "mma"):
 * applicable (else reason), cap, raw, kept {count, configs [{rank,
 * model_us, config}]}, pruned {count, by_rule {rule: count}, rule,
 * matching, offset, limit, examples [{rule, reason, config}]}.
 * Invariants: kept.count + pruned.count == raw; by_rule sums to
 * pruned.count. 0, or -1 with err (out of memory). */
int gt_spview_add_families(struct cJSON *obj, const gt_problem *p, const gt_gen_dev *d,
                          const gt_spview_query *q, char *err, size_t errlen);

/* The verdict on one config (a "gemv" or "mma" config object) for p on d,
 * added to obj: family, config (as parsed), kept, and: rank and model_us
 * when kept; rule and reason when not; applicable; in_raw (whether the
 * family's enumeration generates it at all); runnable (whether a worker
 * builds it when handed in as a run candidate: applicable and no rule but
 * the rank cap prunes it). 0; 1 with err when cfg is not a config of a
 * generated family or does not parse; -1 with err (out of memory). */
int gt_spview_add_verdict(struct cJSON *obj, const gt_problem *p, const gt_gen_dev *d,
                         const struct cJSON *cfg, char *err, size_t errlen);

/* Where the device a space is computed for comes from (http_space.c):
 * the query's ?arch= / ?sms= (a what-if) win; else the run's worker's arch
 * and SMs; else an H100 (sm_90, 132 SMs). The limits are the worker's own
 * gen_device (what it registered with: its kept list is then exactly what
 * it enumerates) unless the query names another arch, whose limits the
 * worker's cannot be; else gt_gen_dev_default's for the arch. ?sms=
 * replaces the SM count either way. */
typedef struct gt_spview_dev_in {
    int q_sm, q_sms;            /* the query's, 0 when not given */
    int w_sm, w_sms;            /* the worker's arch (sm_NN -> NN) and SMs, 0 when unknown */
    const char *w_gen_device;   /* the worker's gen_device JSON text, NULL when none */
} gt_spview_dev_in;

typedef struct gt_spview_dev {
    gt_gen_dev d;
    const char *arch_from;      /* "query", "worker", "default" */
    const char *sms_from;
    const char *limits_from;    /* "worker" (its gen_device) or "default" */
    char ignored[256];          /* non-empty: why the worker's gen_device was not used */
} gt_spview_dev;

#define GT_SPACE_DEFAULT_SM 90
#define GT_SPACE_DEFAULT_SMS 132

/* A stored gen_device that does not parse (written by a coordinator of
 * another version, whose members differ) is not an error: the defaults
 * are used and out->ignored says why. */
void gt_spview_device(const gt_spview_dev_in *in, gt_spview_dev *out);

#endif
