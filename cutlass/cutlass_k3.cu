/* cutlass_k3.cu: libgemmtune_cutlass's bf16 stream-K kernels (the skinny and long-K shapes:
 * split the K loop over CTAs), a 64-row ping-pong and a cluster-less 256x128. */
#include "cutlass_gemm.cuh"

namespace gt_cutlass {
using T = cutlass::bfloat16_t;
extern const entry part3[] = {
    make<T, 128, 256, 2, 1, Coop, StreamK>("sk_coop_128x256_c2x1", "bf16"),
    make<T, 128, 128, 1, 1, Coop, StreamK>("sk_coop_128x128_c1x1", "bf16"),
    make<T, 64, 256, 1, 1, PingPong, Persistent>("pp_64x256_c1x1", "bf16"),
    make<T, 256, 128, 1, 1, Coop, Persistent>("coop_256x128_c1x1", "bf16"),
};
extern const int part3_n = sizeof part3 / sizeof part3[0];
} // namespace gt_cutlass
