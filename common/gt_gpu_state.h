/* gt_gpu_state.h: the GPU's state while a final job's paired rounds ran
 * (module prefix gt_gpu_state_): SM clock, board power, temperature and the
 * clocks event (throttle) reasons, sampled next to each timing, summarised
 * per job and carried with its final results, so a timing can be read
 * beside the state it was measured in (issue 17: on the H100 long
 * compute-bound kernels run at the 700 W cap, SM clocks falling from 1980 to
 * 1290-1800 MHz).
 *
 * Pure C: the samples come from the backend (worker/cuda/cuda_nvml.c reads
 * NVML), the summary travels in the protocol (proto/PROTOCOL.md,
 * "gpu_state") and the store, and `gemmtune verify` prints its own. */
#ifndef GT_GPU_STATE_H
#define GT_GPU_STATE_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* One reading of the device. */
typedef struct gt_gpu_sample {
    double sm_mhz;       /* SM clock */
    double power_w;      /* board power */
    double temp_c;       /* GPU temperature */
    uint64_t reasons;    /* clocks event (throttle) reasons, NVML's bit values */
} gt_gpu_sample;

/* The reasons that mean a cap held the clocks down: NVML's SW power cap
 * (0x4), HW slowdown (0x8), SW thermal (0x20), HW thermal (0x40) and HW
 * power brake (0x80) slowdowns. Idle (0x1), application clocks (0x2) and
 * sync boost (0x10) are not caps. */
#define GT_GPU_REASONS_CAP 0xECULL

/* The summary of one job's samples; samples 0: nothing was recorded (no
 * NVML, or a backend without a GPU). */
typedef struct gt_gpu_state {
    int samples;               /* readings taken */
    int rounds;                /* paired rounds they fall in */
    double sm_clock_min_mhz;
    double sm_clock_median_mhz;
    double power_max_w;
    double temp_max_c;
    double throttled_frac;     /* rounds with a power or thermal cap in any reading / rounds */
} gt_gpu_state;

/* Collects the samples of one run of paired rounds. */
typedef struct gt_gpu_acc {
    double *clk;               /* the SM clocks, for the median */
    int n, cap;
    double pmax, tmax;
    int round;                 /* the round of the last sample; -1 before the first */
    int rounds, capped;        /* rounds seen, rounds with a cap */
    int cur_capped;            /* the current round has had a capped reading */
} gt_gpu_acc;

void gt_gpu_acc_init(gt_gpu_acc *a);
void gt_gpu_acc_free(gt_gpu_acc *a);
/* Adds a reading taken in round `round` (0-based, never decreasing); one
 * out of the ranges gt_gpu_state_from_json accepts (a clock of 0) is
 * skipped. 0, or -1 out of memory (the reading is lost, the rest stays
 * usable). */
int gt_gpu_acc_add(gt_gpu_acc *a, int round, const gt_gpu_sample *s);
/* The summary of what was added (all zero when nothing was). */
void gt_gpu_acc_state(const gt_gpu_acc *a, gt_gpu_state *out);

/* {"samples","rounds","sm_clock_min_mhz","sm_clock_median_mhz",
 * "power_max_w","temp_max_c","throttled_frac"}; NULL out of memory. */
struct cJSON *gt_gpu_state_to_json(const gt_gpu_state *s);
/* Reads and checks that object: integers 1 <= rounds <= samples, clocks in
 * (0, 10000] MHz with min <= median, power in [0, 10000] W, temperature in
 * [-100, 300] C, throttled_frac in [0, 1], all present and finite. 0, or -1
 * with err naming the field. */
int gt_gpu_state_from_json(const struct cJSON *j, gt_gpu_state *s, char *err, size_t errlen);

#endif
