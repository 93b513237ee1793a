/* gt_config.h: candidate configurations, their canonical form and hash, and
 * the CPU backend's candidate space (module prefix gt_cfg_ / gt_space_).
 *
 * A candidate configuration is a flat JSON object of named integer (or string)
 * attributes, e.g. {"kc":256,"mc":64,"mr":4,"nc":256,"nr":8,"threads":2,"unroll":4}.
 * Its canonical text has the keys sorted and no spaces, so the same config
 * always has the same text and hash, on every worker and coordinator. */
#ifndef GT_CONFIG_H
#define GT_CONFIG_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct gt_problem;

/* Canonical text of a config object (keys sorted, compact). Returns a malloc'd
 * string the caller frees, or NULL on OOM / non-object input. */
char *gt_cfg_canonical(const struct cJSON *cfg);
/* 64-bit FNV-1a of the canonical text, as 16 lowercase hex digits + NUL. */
int gt_cfg_hash(const struct cJSON *cfg, char out[17]);
/* FNV-1a 64 over bytes; used for config hashes and the compile cache keys. */
uint64_t gt_fnv1a64(const void *data, size_t len, uint64_t seed);
#define GT_FNV_SEED 0xcbf29ce484222325ULL

typedef enum gt_strategy {
    GT_STRAT_EXHAUSTIVE = 0,  /* every config that survives pruning */
    GT_STRAT_RANDOM,          /* a uniform sample of budget configs */
    GT_STRAT_EVOLUTIONARY,    /* generations bred from the best measured so far
                                 (server/search_evo.c), budget configs in all */
} gt_strategy;
const char *gt_strategy_name(gt_strategy s);
/* Accepts the names above, any case, and "evo" / "ga" for evolutionary. */
int gt_strategy_parse(const char *s, gt_strategy *out);

/* The CPU backend's space for a problem: a blocked, packed GEMM whose
 * blocking is tuned. Attributes: mc, nc, kc (cache blocks), mr, nr (register
 * micro-tile), unroll (k loop unroll of the micro-kernel), threads.
 * Rules prune configs that cannot help this problem (blocks much larger than
 * the matrix, more threads than cores or row blocks).
 * ncpu: cores of the worker model (0 = this machine's).
 * budget: upper bound on candidates (0 = no bound); with RANDOM a seeded
 * uniform sample, with EXHAUSTIVE (and EVOLUTIONARY, which draws its
 * generations from gt_space_cpu_all instead) the first budget in a fixed
 * spread order.
 * Returns a new JSON array of config objects (caller owns), or NULL on OOM.
 * The space holds the default blocking (gt_space_cpu_default), never the
 * baseline (another kind of config). */
struct cJSON *gt_space_cpu(const struct gt_problem *p, gt_strategy s, int budget,
                           uint64_t seed, int ncpu);
/* The whole space (every config that survives pruning, and the default
 * blocking) for a search that draws its own samples from it: the first
 * nhead in the spread order (the blocking a tuned library would pick, then
 * points far from it and from each other: the heuristic picks an
 * evolutionary search starts from), the rest in canonical order. Returns a
 * new JSON array (caller owns), or NULL on OOM. */
struct cJSON *gt_space_cpu_all(const struct gt_problem *p, int nhead, int ncpu);
/* What every CPU candidate is compared against: the library a user would
 * call, OpenBLAS, on the run's ncpu threads: {"lib":"openblas","threads":N}
 * (worker/cpu_blas.c builds it, or fails naming what is missing). */
struct cJSON *gt_space_cpu_baseline(const struct gt_problem *p, int ncpu);
/* The generated kernel's untuned default blocking (all cores, threads
 * shrunk to the work): the baseline before OpenBLAS was, now a member of
 * the space. NULL on OOM. */
struct cJSON *gt_space_cpu_default(const struct gt_problem *p, int ncpu);

#endif
