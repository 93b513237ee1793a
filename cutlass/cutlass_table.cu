/* cutlass_table.cu: libgemmtune_cutlass's C interface (gt_cutlass.h) over the kernels of
 * cutlass_k*.cu, in one table. Exported: only the gt_cutlass_* functions (hidden visibility
 * for the rest, cutlass/CMakeLists.txt). */
#include <cstdio>

#include "cutlass_gemm.cuh"

namespace gt_cutlass {
extern const entry part1[], part2[], part3[];
extern const int part1_n, part2_n, part3_n;

/* the i-th entry over the parts, in their order (stable: names, not positions, are what a
 * tuned config keeps) */
static const entry *at(int i)
{
    const entry *parts[] = {part1, part2, part3};
    const int ns[] = {part1_n, part2_n, part3_n};
    for (int p = 0; p < 3; p++) {
        if (i >= 0 && i < ns[p])
            return &parts[p][i];
        i -= ns[p];
    }
    return nullptr;
}
} // namespace gt_cutlass

#define GT_CUTLASS_API extern "C" __attribute__((visibility("default")))

GT_CUTLASS_API int gt_cutlass_abi(void) { return GT_CUTLASS_ABI; }

GT_CUTLASS_API int gt_cutlass_count(void)
{
    return gt_cutlass::part1_n + gt_cutlass::part2_n + gt_cutlass::part3_n;
}

GT_CUTLASS_API const gt_cutlass_kernel *gt_cutlass_kernel_at(int i)
{
    const gt_cutlass::entry *e = gt_cutlass::at(i);
    return e ? &e->k : nullptr;
}

GT_CUTLASS_API int gt_cutlass_check(int i, const gt_cutlass_args *a, size_t *ws, char *err, size_t errlen)
{
    const gt_cutlass::entry *e = gt_cutlass::at(i);
    if (!e || !a || !ws) {
        snprintf(err, errlen, "no kernel %d (of %d), or no arguments", i, gt_cutlass_count());
        return 5;
    }
    return e->check(a, ws, err, errlen);
}

GT_CUTLASS_API int gt_cutlass_run(int i, const gt_cutlass_args *a, void *ws, size_t ws_bytes, void *stream,
                                  char *err, size_t errlen)
{
    const gt_cutlass::entry *e = gt_cutlass::at(i);
    if (!e || !a) {
        snprintf(err, errlen, "no kernel %d (of %d), or no arguments", i, gt_cutlass_count());
        return 5;
    }
    return e->run(a, ws, ws_bytes, stream, err, errlen);
}
