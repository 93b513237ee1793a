/* gen_bench_priv.h: what the self-test's generated-family sections share
 * (gen_bench_shape.c), internal to them: gen_bench.c (--gen, "gemv") and
 * mma_bench.c (--mma, "mma") differ in their shapes' token counts, what
 * they compile and the columns they print, not in how a shape is measured. */
#ifndef GEN_BENCH_PRIV_H
#define GEN_BENCH_PRIV_H

#include "gen_bench.h"

#define GT_ST_MAX_SHAPES 16

/* qsort comparator of doubles, ascending. */
int gt_st_cmp_dbl(const void *a, const void *b);
/* Sorts the n times in v and returns the middle one (v[n / 2]): the median
 * the self-test's sections report. */
double gt_st_mid(double *v, int n);

/* The section's shapes: the Llama-3-8B bf16 TN projections (qkv, o,
 * gate_up, down, lm_head) at each of the ntokens token counts, or at only
 * that one when only != 0; named "qkv n=16". Returns how many were written
 * (at most GT_ST_MAX_SHAPES; ntokens * 5 must not exceed it). */
int gt_st_shapes(const int *tokens, int ntokens, int only, gt_problem *ps,
                 char (*names)[32]);

/* Which side of the comparison a candidate of the enumeration is on. */
enum { GT_ST_SKIP = -1, GT_ST_LT = 0, GT_ST_FAM = 1 };

/* What one shape measured, handed to the section's row printer. */
typedef struct gt_st_row {
    const char *name;
    const gt_problem *p;
    double heur_us;    /* the heuristic's top-1 (the baseline), interleaved median */
    double lt_best_us; /* cuBLASLt's fastest: the baseline or its quick-timed best */
    double fam_us;     /* the family's fastest of its re-timed top 3; NAN when none */
    int timed;         /* the family's configs that validated and were quick-timed */
    int all;           /* the family's configs in the enumeration */
    int wrong;         /* ... that ran but failed validation */
    double worst;      /* the family's largest relative error among those that ran */
    double chain_us;   /* the fastest re-timed gemv config launched chained; NAN when not measured */
} gt_st_row;

/* How a section measures its family against cuBLASLt. */
typedef struct gt_st_family {
    const char *label;   /* the family's name in messages: "gen", "mma" */
    double check_s;      /* cuBLASLt AlgoCheck budget per shape, seconds */
    int (*side)(int fam); /* GT_GEN_BENCH_* of a gt_gen_family() value */
    int need_all;        /* a family config that did not time is a failure */
    int chain;           /* also time the re-timed gemv configs chained (sm_90+) */
    void (*print_row)(const gt_st_row *r, void *arg);
    void *arg;
} gt_st_family;

/* Measures one shape through the backend's vtable, as the worker runs
 * candidates: every candidate of the enumeration built, validated (a wrong
 * family config is a failure) and quick-timed; then the baseline, cuBLASLt's
 * fastest and the family's three fastest re-timed interleaved over
 * o->rounds, so that clock and thermal drift hit them alike. Prints the row
 * (f->print_row) and the family's best config; returns the failures. */
int gt_st_shape(const gt_backend *bk, gt_bk_ctx *ctx, const gt_st_family *f,
                const char *name, const gt_problem *p, const gt_st_opts *o);

#endif
