/* gen_bench.h: the generated family's benchmark, run by gt-cuda-selftest --gen
 * (gen_bench.c says what it measures). Needs a GPU. */
#ifndef GEN_BENCH_H
#define GEN_BENCH_H

#include "gt_backend.h"
#include "gt_cuda.h"

typedef struct gt_gen_bench_opts {
    int tokens;          /* only n = tokens (1 or 16); 0: both */
    int max_cands;       /* cuBLASLt enumeration cap per shape */
    double min_time_ms;  /* quick screen per repeat */
    int rounds;          /* interleaved re-timing rounds (<= 32) */
    int fresh_cache;     /* compile into a new, empty cache directory */
} gt_gen_bench_opts;

/* Measured device-to-device copy bandwidth, bytes/s (0 when it failed). */
double gt_gen_copy_bandwidth(gt_bk_ctx *ctx);
/* Prints the section; returns the number of failures. */
int gt_gen_bench(const gt_backend *bk, gt_bk_ctx *ctx, const gt_gen_bench_opts *o);

#endif
