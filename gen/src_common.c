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

int gt_gen_type_defs_of(const gt_problem *p, gt_gen_type_defs *t)
{
    t->ab = p->a_type == GT_DT_BF16 ? 0 : p->a_type == GT_DT_F16 ? 1 : -1;
    t->dkt = kt_of(p->d_type);
    t->ckt = kt_of(p->c_type);
    t->bkt = p->bias ? kt_of(p->bias_type != GT_DT_INVALID ? p->bias_type : p->d_type) : -1;
    t->act = !strcmp(p->activation, "relu")                                        ? 1
             : !strcmp(p->activation, "gelu") || !strcmp(p->activation, "gelu_tanh") ? 2
                                                                                     : 0;
    t->beta = p->beta != 0.0;
    return t->ab < 0 || t->dkt < 0 || t->ckt < 0 || (p->bias && t->bkt < 0) ? -1 : 0;
}
