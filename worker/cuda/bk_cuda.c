/* placeholder until the CUDA backend lands */
#include "gt_backend.h"
const gt_backend gt_bk_cuda = {.name = "cuda"};
