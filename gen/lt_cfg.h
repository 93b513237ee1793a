/* lt_cfg.h: the cuBLASLt family's configuration (module prefix gt_lt_): the
 * nine cuBLASLt algo config attributes as a flat JSON object of integers
 * (worker/cuda/CONFIG.md). Pure host C, no CUDA header: the cuda worker
 * (worker/cuda/cuda_space.c) and libgemmtune (lib/ltmap.c) decode the same
 * stored text with the same rules. */
#ifndef GT_LT_CFG_H
#define GT_LT_CFG_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

typedef struct gt_lt_cfg {
    int32_t algo_id;
    uint32_t tile, stages;
    int32_t splitk;
    uint32_t reduction, swizzle, custom;
    uint16_t cluster, inner_shape;
} gt_lt_cfg;

/* Strict decode: algo_id required, the other keys optional (splitk 1, the
 * rest 0), integers in range, no unknown or repeated key; "family":"cublaslt"
 * (what an absent family means, gen_gemv.h) is accepted and ignored. 0, or
 * -1 with the reason in err. */
int gt_lt_cfg_from_json(const struct cJSON *j, gt_lt_cfg *c, char *err, size_t errlen);
/* All nine keys; NULL out of memory. */
struct cJSON *gt_lt_cfg_to_json(const gt_lt_cfg *c);
/* Canonical text (keys sorted, compact: equal to gt_cfg_canonical of the
 * JSON form). Returns the length like snprintf. */
int gt_lt_cfg_text(const gt_lt_cfg *c, char *buf, size_t len);

#endif
