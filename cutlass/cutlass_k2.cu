/* cutlass_k2.cu: libgemmtune_cutlass's bf16 kernels with 128x128 tiles, cooperative and
 * ping-pong: the winners at n = 128, where wider tiles are half empty. */
#include "cutlass_gemm.cuh"

namespace gt_cutlass {
using T = cutlass::bfloat16_t;
extern const entry part2[] = {
    make<T, 128, 128, 1, 1, Coop, Persistent>("coop_128x128_c1x1", "bf16"),
    make<T, 128, 128, 2, 1, Coop, Persistent>("coop_128x128_c2x1", "bf16"),
    make<T, 128, 128, 1, 1, PingPong, Persistent>("pp_128x128_c1x1", "bf16"),
    make<T, 128, 128, 2, 1, PingPong, Persistent>("pp_128x128_c2x1", "bf16"),
};
extern const int part2_n = sizeof part2 / sizeof part2[0];
} // namespace gt_cutlass
