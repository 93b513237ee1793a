/* space_common.h: what the generated families' configs and spaces share
 * (gen/gemv_space.c, gen/mma_space.c) and nothing else: the integer
 * attributes of a config's JSON form, the problem-level type and epilogue
 * rules, and the space builder (raw cross product -> kept or pruned with a
 * reason -> ranked -> cut to a cap). Not part of the public gen_gemv.h /
 * gen_mma.h interface. */
#ifndef GEN_SPACE_COMMON_H
#define GEN_SPACE_COMMON_H

#include <stddef.h>
#include <stdio.h>

/* A rule's reason into why (len bytes), or nothing when why is NULL: a
 * space built without its pruned list formats no reasons. */
#define GT_WHY(why, len, ...) ((why) ? snprintf((why), (len), __VA_ARGS__) : 0)

#include "gen_mma.h"

struct cJSON;

/* ---- encoding: integer attributes --------------------------------------------- */

/* One integer attribute of a family's config: its JSON key, its range and
 * where it lives in the config struct. A family's table is sorted like the
 * canonical text. */
typedef struct gt_gen_int_attr {
    const char *name;
    int lo, hi;
    size_t off;
} gt_gen_int_attr;

/* Stores JSON member `it` (key it->string) into cfg by the table: 0; -1
 * with "<fam>: config key 'K' unknown" or "<fam>: config K: must be an
 * integer in LO..HI, once" (seen[] counts each attribute, n entries). */
int gt_gen_int_attr_set(const char *fam, const gt_gen_int_attr *attrs, size_t n, int *seen,
                        const struct cJSON *it, void *cfg, char *err, size_t errlen);
/* 0 when every attribute was seen, else -1 with "<fam>: config K: missing"
 * for the first one that was not. */
int gt_gen_int_attr_missing(const char *fam, const gt_gen_int_attr *attrs, size_t n,
                            const int *seen, char *err, size_t errlen);
/* Adds every attribute of cfg to object j: 0, or -1 out of memory. */
int gt_gen_int_attr_add(struct cJSON *j, const gt_gen_int_attr *attrs, size_t n, const void *cfg);

/* ---- applicability ------------------------------------------------------------------ */

/* 0 when a family can take p's types and epilogue (bf16/f16 inputs of one
 * type, f32 compute and scale, C/D/bias in f32/f16/bf16, activation
 * none/relu/gelu(_tanh)); else -1 with the reason. fp8 1 (the "gemv"
 * family) also admits OCP fp8 inputs as cuBLASLt's fp8 matmul takes them
 * (e4m3/e5m2, not both e5m2, one f32 scale per tensor for A and B). */
int gt_gen_types_reason(const gt_problem *p, int fp8, char *why, size_t len);

/* ---- the space -------------------------------------------------------------------- */

typedef union gt_gen_anycfg {
    gt_gen_cfg gemv;
    gt_mma_cfg mma;
} gt_gen_anycfg;

/* A config that passed every rule, on its way through the ranking. */
typedef struct gt_gen_ranked {
    gt_gen_anycfg c;
    double us;      /* the model's estimate */
    int key;        /* the family's order: lower first, then by estimate */
    char text[256]; /* canonical text: the tie-break, so the order is total */
} gt_gen_ranked;

/* A family, as the builder sees it. Its pruned record is the config at
 * offset 0 and char reason[GT_GEN_REASON] at reason_off. */
typedef struct gt_gen_space_spec {
    int nraw;                 /* indices of the raw cross product, 0..nraw-1 */
    size_t cfg_size;          /* sizeof the family's config */
    size_t pruned_size;       /* sizeof the family's pruned record */
    size_t reason_off;        /* offsetof(record, reason) */
    /* Config i of the raw space for p into c: 1, or 0 when i is not in the
     * space (neither counted in raw nor pruned). p only chooses values
     * whose meaning depends on the element size (gemv's vec), and d only
     * values that name the device's size (mma's persistent grid, one CTA
     * per SM), never the size of the space. */
    int (*raw)(const gt_problem *p, const gt_gen_dev *d, int i, gt_gen_anycfg *c);
    int (*check)(const gt_problem *p, const gt_gen_dev *d, const gt_gen_anycfg *c, char *why,
                 size_t len);
    double (*model_us)(const gt_problem *p, const gt_gen_dev *d, const gt_gen_anycfg *c);
    int (*text)(const gt_gen_anycfg *c, char *buf, size_t len);
    /* Sets each ranked config's key; ok comes sorted by estimate. 0, or -1
     * out of memory. */
    int (*order)(gt_gen_ranked *ok, int nok);
    /* The reason of the config at 0-based position i of nok, beyond cap. */
    void (*rank_reason)(const gt_gen_ranked *r, int i, int nok, int cap, char *buf, size_t len);
} gt_gen_space_spec;

/* What the builder returns: the family copies it into its space struct. */
typedef struct gt_gen_space_out {
    void *keep;     /* nkeep configs, best first (malloc'd) */
    int nkeep;
    void *pruned;   /* npruned records (malloc'd): the rule's reasons in raw
                       order, then the configs beyond the cap in rank order */
    int npruned;
    int raw;
} gt_gen_space_out;

/* Builds the space of p on d: each raw config kept or pruned with its
 * reason; of those passing every rule, sorted by the family's key then the
 * estimate, the first `cap` (<= 0: all) kept. with_pruned 0: the pruned
 * configs are only counted (no list, no reasons formatted), which is all a
 * worker's enumeration needs and several times faster. 0, or -1 out of
 * memory (*out zeroed). */
int gt_gen_space_build(const gt_gen_space_spec *f, const gt_problem *p, const gt_gen_dev *d, int cap,
                       int with_pruned, gt_gen_space_out *out);

#endif
