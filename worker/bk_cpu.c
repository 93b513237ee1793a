/* placeholder until the CPU backend lands */
#include "gt_backend.h"
const gt_backend gt_bk_cpu = {.name = "cpu"};
