/* gt_policy.h: tuning-policy constants that more than one program must
 * agree on (module prefix gt_policy_ / GT_). Not the wire protocol
 * (proto/gt_proto.h: message names, versions, sizes): a policy says how a
 * measurement is judged, and the worker, the coordinator and the CLI each
 * apply or print it. Header only; common/ sits at the bottom of the layers
 * (common <- proto, gen, cuda <- server, worker, lib <- cli, python, bench),
 * so every folder may include it. */
#ifndef GT_POLICY_H
#define GT_POLICY_H

/* A final phase's baseline more than this factor away (either way) from the
 * median of its screen jobs' (job timing "baseline_ref_us"): the worker times
 * the final rounds once more (worker/runner.c), a result that still drifts
 * is flagged baseline_suspect in GET /v1/runs/{id} (server/store_query.c)
 * and the CLI says so; a screen baseline this far from at least two other
 * workers' (and near none) is dropped (server/store_jobs.c). On the H100,
 * runs agree within a few percent; a disturbed final once measured 2x. */
#define GT_BASELINE_DRIFT_MAX 1.25

#endif
