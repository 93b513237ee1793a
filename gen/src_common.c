/* src_common.c: the -D encoding of a problem's types and epilogue that
 * both generated families' templates take (src_common.h). Pure host C. */
#include <string.h>

#include "src_common.h"

static int kt_of(gt_dtype t)
{
    switch (t) {
    case GT_DT_F32: return 0;
    case GT_DT_F16: return 2;
    case GT_DT_BF16: return 3;
    default: return -1;
    }
}

/* The A/B codes: bf16 and f16 as the 16-bit mma types, OCP fp8 as the two
 * encodings cvt.f16x2.{e4m3,e5m2}x2 decodes (FNUZ is another encoding:
 * none) */
static int ab_of(gt_dtype t)
{
    switch (t) {
    case GT_DT_BF16: return 0;
    case GT_DT_F16: return 1;
    case GT_DT_F8E4M3: return 2;
    case GT_DT_F8E5M2: return 3;
    default: return -1;
    }
}

int gt_gen_elem_size(const gt_problem *p)
{
    return ab_of(p->a_type) >= 2 ? 1 : 2;
}

int gt_gen_type_defs_of(const gt_problem *p, gt_gen_type_defs *t)
{
    t->ab = ab_of(p->a_type);
    t->bb = ab_of(p->b_type);
    t->dkt = kt_of(p->d_type);
    t->ckt = kt_of(p->c_type);
    t->bkt = p->bias ? kt_of(p->bias_type != GT_DT_INVALID ? p->bias_type : p->d_type) : -1;
    t->act = !strcmp(p->activation, "relu")                                        ? 1
             : !strcmp(p->activation, "gelu") || !strcmp(p->activation, "gelu_tanh") ? 2
                                                                                     : 0;
    t->beta = p->beta != 0.0;
    /* 16-bit inputs are one type (one mma instruction); fp8 ones may mix,
     * each decoded by its own cvt */
    int mixed = t->ab != t->bb && (t->ab < 2 || t->bb < 2);
    return t->ab < 0 || t->bb < 0 || mixed || t->dkt < 0 || t->ckt < 0 || (p->bias && t->bkt < 0) ? -1 : 0;
}
