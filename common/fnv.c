/* fnv.c: FNV-1a 64 (gt_config.h), alone in its file because libgemmtune
 * compiles it in (its lookup tables and the preload shim's GEMM table hash
 * with it) without the rest of common/, as it does common/problem.c. */
#include "gt_config.h"

uint64_t gt_fnv1a64(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
