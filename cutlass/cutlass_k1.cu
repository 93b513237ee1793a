/* cutlass_k1.cu: libgemmtune_cutlass's bf16 cooperative kernels with 256-wide tiles, the
 * winners at n >= 2048 (bench/results/h100_39_cutlass_probe.txt). */
#include "cutlass_gemm.cuh"

namespace gt_cutlass {
using T = cutlass::bfloat16_t;
extern const entry part1[] = {
    make<T, 128, 256, 2, 1, Coop, Persistent>("coop_128x256_c2x1", "bf16"),
    make<T, 128, 256, 1, 2, Coop, Persistent>("coop_128x256_c1x2", "bf16"),
    make<T, 256, 128, 1, 2, Coop, Persistent>("coop_256x128_c1x2", "bf16"),
    make<T, 256, 128, 2, 1, Coop, Persistent>("coop_256x128_c2x1", "bf16"),
};
extern const int part1_n = sizeof part1 / sizeof part1[0];
} // namespace gt_cutlass
