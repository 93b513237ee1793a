/* gen_bench.h: the self-test's sections beyond the backend's vtable
 * (bench/cuda_selftest/, module prefix gt_st_; only gt-cuda-selftest links
 * them, never the worker): the generated families' benchmarks --gen
 * ("gemv", gen_bench.c) and --mma ("mma", mma_bench.c), --floor
 * (floor_bench.c) and --sweep (gen_sweep.c), which say what they measure.
 * Need a GPU. */
#ifndef GEN_BENCH_H
#define GEN_BENCH_H

#include "gt_backend.h"
#include "gt_cuda.h"

typedef struct gt_st_opts {
    int tokens;          /* only n = tokens (gemv: 1 or 16; mma: 16, 128, 2048); 0: all */
    int max_cands;       /* cuBLASLt enumeration cap per shape */
    double min_time_ms;  /* quick screen per repeat */
    int rounds;          /* interleaved re-timing rounds (<= 32) */
    int fresh_cache;     /* compile into a new, empty cache directory */
} gt_st_opts;

/* Measured device-to-device copy bandwidth, bytes/s (0 when it failed). */
double gt_st_copy_bandwidth(gt_bk_ctx *ctx);
/* Prints the section; returns the number of failures. */
int gt_st_gemv_bench(const gt_backend *bk, gt_bk_ctx *ctx, const gt_st_opts *o);
/* The mma section (tokens: 16, 128 or 2048; 0 all); returns the failures. */
int gt_st_mma_bench(const gt_backend *bk, gt_bk_ctx *ctx, const gt_st_opts *o);
/* The floor section (floor_bench.c): one streaming pass over each weight
 * matrix of the decode shapes, timed like a candidate; returns the failures. */
int gt_st_floor_bench(gt_bk_ctx *ctx);
/* The sweep section (gen_sweep.c): per_shape kept gemv configs of each
 * decode shape (n = tokens, 0: 1 and 16) quick-timed for the ranking
 * model's calibration, one CSV row each when csv_path is set. */
int gt_st_sweep(const gt_backend *bk, gt_bk_ctx *ctx, int tokens, int per_shape, const char *csv_path);

#endif
