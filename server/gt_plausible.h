/* gt_plausible.h: what physics allows a reported time (module prefix
 * gt_plausible_). A result faster than the registered device could run the
 * GEMM at all (its FLOPs at the device's peak rate, its bytes at its memory
 * bandwidth, each with a wide margin) is a forged or broken measurement:
 * the coordinator stores it as invalid with the reason instead of letting
 * it win. The bounds are deliberately loose (a factor of 4 over the peak
 * rate, 8 over DRAM bandwidth for data that may partly sit in L2): they
 * catch impossible times, never a fast but real kernel. */
#ifndef GT_PLAUSIBLE_H
#define GT_PLAUSIBLE_H

#include <stddef.h>

#include "gt_problem.h"

typedef struct gt_plausible_dev {
    int gpu;           /* 1 for cuda/hip, 0 for cpu */
    int units;         /* SMs, CUs or cores as registered; 0: unknown */
    double peak_flops; /* flop/s from the worker's gen_device (tc_flops), 0: unknown */
    double dram_bw;    /* bytes/s from gen_device, 0: unknown */
} gt_plausible_dev;

/* The device as the store registered it: backend name, units and the
 * gen_device JSON text (NULL or "" when the worker sent none). */
void gt_plausible_dev_init(gt_plausible_dev *d, const char *backend, int units,
                           const char *gen_device);

/* The least time in microseconds a GEMM of flops and bytes per call with
 * inputs of type a can take on d; 0 when d says too little to bound it.
 * why gets the limit that binds, e.g. "2.4e+15 flop/s (4x tc_flops)". */
double gt_plausible_min_time_us(const gt_plausible_dev *d, double flops, double bytes, gt_dtype a,
                                char *why, size_t len);

#endif
