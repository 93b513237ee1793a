/* plausible.c: the least time a device can take for a GEMM. */
#include "gt_plausible.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "gen_dev.h"

/* Margins over the device's own figures. tc_flops in gen_device is a rate
 * the ranking model expects to reach (6e14 on sm_90, where cuBLASLt's best
 * measured 8e14 on an H100), not the data sheet's peak, and DRAM bandwidth
 * is exceeded where part of the data stays in L2 between calls. */
#define FLOPS_MARGIN 4.0
#define BW_MARGIN 8.0
/* Without gen_device: per unit, above any device of 2026 (an H100 SM: 7.5
 * Tflop/s of dense bf16; an MI300X CU 4.3; a core with AMX ~4). */
#define GPU_UNIT_FLOPS 16e12
#define CPU_UNIT_FLOPS 4e12

void gt_plausible_dev_init(gt_plausible_dev *d, const char *backend, int units,
                           const char *gen_device)
{
    memset(d, 0, sizeof *d);
    d->gpu = backend && strcmp(backend, "cpu") != 0;
    d->units = units > 0 ? units : 0;
    if (!gen_device || !gen_device[0])
        return;
    cJSON *j = cJSON_Parse(gen_device);
    gt_gen_dev g;
    char err[200];
    if (j && gt_gen_dev_from_json(j, &g, err, sizeof err) == 0) {
        d->peak_flops = g.tc_flops;
        d->dram_bw = g.dram_bw;
    }
    cJSON_Delete(j);
}

/* Tensor cores and vector units run 8-bit inputs at twice the 16-bit rate. */
static double type_factor(gt_dtype a) { return gt_dtype_is_f8(a) || a == GT_DT_I8 ? 2.0 : 1.0; }

double gt_plausible_min_time_us(const gt_plausible_dev *d, double flops, double bytes, gt_dtype a,
                                char *why, size_t len)
{
    double rate = 0, t = 0;
    const char *src = "";
    if (d->peak_flops > 0) {
        rate = d->peak_flops * FLOPS_MARGIN;
        src = "4x gen_device.tc_flops";
    } else if (d->units > 0) {
        rate = d->units * (d->gpu ? GPU_UNIT_FLOPS : CPU_UNIT_FLOPS);
        src = d->gpu ? "16 Tflop/s per unit" : "4 Tflop/s per core";
    }
    rate *= type_factor(a);
    if (why && len)
        why[0] = '\0';
    if (rate > 0 && flops > 0) {
        t = flops / rate * 1e6;
        if (why)
            snprintf(why, len, "%.3g flop at %.3g flop/s (%s)", flops, rate, src);
    }
    if (d->dram_bw > 0 && bytes > 0) {
        double tb = bytes / (d->dram_bw * BW_MARGIN) * 1e6;
        if (tb > t) {
            t = tb;
            if (why)
                snprintf(why, len, "%.3g bytes at %.3g B/s (8x gen_device.dram_bw)", bytes,
                         d->dram_bw * BW_MARGIN);
        }
    }
    return t;
}
