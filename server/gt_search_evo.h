/* gt_search_evo.h: the evolutionary search over a problem's candidate space
 * (strategy=evolutionary; module prefix gt_evo_).
 *
 * Pure logic: given the space (a JSON array of config objects) and the
 * (config, time) pairs measured so far, it picks the next generation. No
 * I/O, no clock, no global state: the same inputs and seed give the same
 * generation, which is what makes a run reproducible and the tests exact.
 * The planner (server/plan.c) starts a search (its limits, seed and
 * generation 0); the store (server/store_evo.c) keeps the space and the
 * counters in SQLite and calls this between generations.
 *
 * A config is a vector of attributes (the union of the members' keys; a key
 * a member lacks is one more value, "absent"), so cuBLASLt's integer
 * configs and the generated families' mixed string/integer ones are
 * handled alike. Every config the search returns is a member of the space
 * that is not marked taken (measured or proposed before): crossover and
 * mutation build a vector and map it to the nearest free member by the
 * number of attributes that differ. */
#ifndef GT_SEARCH_EVO_H
#define GT_SEARCH_EVO_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* The search stops when this many generations in a row brought no better
 * best. A constant, not a run option: the budget already bounds the cost,
 * this only returns what a converged search would waste. Three: half of
 * every generation (8+ configs by default) probes the neighbours of the
 * best, so three in a row without a gain mean its neighbourhood is measured
 * out; one or two would stop on an unlucky draw of neighbours. */
#define GT_EVO_PATIENCE 3
/* "Better" means at least 1 % faster: screen timings carry about that much
 * noise, so a smaller gain would keep a converged search alive on noise. */
#define GT_EVO_MIN_GAIN 0.01
/* Generation 0 measures up to this many configs from the head of the space
 * (the backend's own picks: cuBLASLt's heuristic, the CPU spread order), at
 * most half the population; the rest is a seeded uniform sample. */
#define GT_EVO_HEADS 4

typedef struct gt_evo_space gt_evo_space;

/* Builds the search's view of configs (a JSON array of objects), which it
 * takes over (freed with the space, or at once on failure). The same config
 * twice keeps its first place. NULL with err on OOM or a member that is not
 * an object. */
gt_evo_space *gt_evo_space_new(struct cJSON *configs, char *err, size_t errlen);
void gt_evo_space_free(gt_evo_space *sp);
/* Distinct members. */
size_t gt_evo_space_size(const gt_evo_space *sp);
/* Attributes (keys over all members). */
size_t gt_evo_space_attrs(const gt_evo_space *sp);
/* Index of the member equal to cfg (same keys and values: the same
 * canonical config, gt_cfg_canonical), or -1. */
long gt_evo_space_find(const gt_evo_space *sp, const struct cJSON *cfg);
/* Member i's config (owned by the space). */
const struct cJSON *gt_evo_space_config(const gt_evo_space *sp, size_t i);
/* Number of attributes in which members a and b differ. */
int gt_evo_mismatch(const gt_evo_space *sp, size_t a, size_t b);
/* The members idx[0..k) as a new JSON array of copies of their configs (a
 * generation as jobs carry it), or NULL when out of memory. */
struct cJSON *gt_evo_members_json(const gt_evo_space *sp, const size_t *idx, size_t k);

/* The search's bounds for a space of size members, from the run options
 * (0 = default): budget min(budget, size) (0: size); population max(8,
 * budget/5), at most the budget; generations ceil(budget/population). */
typedef struct gt_evo_limits {
    int budget, population, generations;
} gt_evo_limits;
void gt_evo_limits_resolve(int budget, int population, int generations, size_t size,
                           gt_evo_limits *out);

/* Where a search stands after a generation was measured. */
typedef struct gt_evo_progress {
    int generation; /* the generation just measured (0-based) */
    int issued;     /* configs proposed so far, all generations */
    int stale;      /* generations in a row without a better best */
    double best_us; /* the best that counts as reached (<= 0: none yet) */
} gt_evo_progress;

/* Updates pr with the best valid time measured so far (best_now <= 0: none)
 * and returns how many configs the next generation gets, or 0 to stop with
 * *why set ("budget", "generations", "converged", "exhausted"). free_left is
 * the number of members not yet taken. */
int gt_evo_plan(const gt_evo_limits *lim, gt_evo_progress *pr, double best_now, size_t free_left,
                const char **why);

/* A measured member; time_us <= 0 (or NaN) when it was not valid. */
typedef struct gt_evo_obs {
    size_t member;
    double time_us;
} gt_evo_obs;

/* A problem's search seed: the run seed mixed with the problem key, so the
 * problems of a run search differently and a problem's search does not
 * depend on row ids. */
uint64_t gt_evo_seed(uint64_t run_seed, const char *problem_key);

/* A child taking each attribute from parent a or b (a fair coin each), or
 * when that is not a free member, the free member with the fewest attributes
 * different from it (ties by *rng). -1 when no member is free (or on OOM). */
long gt_evo_crossover(const gt_evo_space *sp, size_t a, size_t b, const unsigned char *taken,
                      uint64_t *rng);
/* parent with one attribute changed: an attribute drawn by *rng, the free
 * member differing from parent in it and in as few others as possible
 * (three times in four also with the value nearest the parent's in that
 * attribute's order: a local step; otherwise any value). Tries the other
 * attributes when none is free; -1 when no member is free (or on OOM). */
long gt_evo_mutate(const gt_evo_space *sp, size_t parent, const unsigned char *taken,
                   uint64_t *rng);

/* Generation `generation` of at most n free members into out[], marking
 * each taken (taken has gt_evo_space_size entries, nonzero = measured or
 * proposed). Generation 0: the space's head (GT_EVO_HEADS, at most n/2) and a
 * uniform sample. Later ones breed from the valid observations (in any
 * order: they are sorted by time, then member): the parents are the best
 * n/2 measured so far; half the generation mutates the very best (the top
 * n/8, at least one: elitism without measuring anything twice), the rest
 * crosses tournament-selected parents (mutating one child in four), and one
 * random immigrant comes in when n >= 8. While nothing valid was measured, a
 * uniform sample. Returns the number written (< n only when the space runs
 * out), -1 on OOM. */
long gt_evo_next(const gt_evo_space *sp, const gt_evo_obs *obs, size_t nobs, unsigned char *taken,
                 size_t n, int generation, uint64_t seed, size_t *out);

#endif
