/* tolerance.c: the validation tolerance every backend (and `gemmtune
 * verify`) judges a result by. */
#include "gt_backend.h"

/* Relative error ||out-ref||/||ref|| allowed for a problem. The bound follows
 * the least precise of the input types and the compute type: the rounding of
 * inputs and output to that type, times a small factor for accumulation
 * order. fp32 with fp32 accumulation lands far below 1e-4; tf32 near 3e-4;
 * f16 ~1e-3; bf16 between 1e-3 and 1e-2; fp8 a few percent. */
double gt_bk_tolerance(const gt_problem *p)
{
    gt_dtype ts[] = {p->a_type, p->b_type, p->d_type, p->compute_type};
    double tol = 1e-5;
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        double t;
        switch (ts[i]) {
        case GT_DT_F64: t = 1e-12; break;
        case GT_DT_F32: t = 1e-5; break;
        case GT_DT_TF32: t = 2e-3; break;
        case GT_DT_F16: t = 5e-3; break;
        case GT_DT_BF16: t = 2e-2; break;
        case GT_DT_F8E4M3: t = 1e-1; break;
        case GT_DT_F8E5M2: t = 2e-1; break;
        case GT_DT_I8:
        case GT_DT_I32: t = 0; break;
        default: t = 0; break;
        }
        if (t > tol)
            tol = t;
    }
    return tol;
}
