/* backend.c: the registry of built-in backends (their shared validation
 * tolerances: tolerance.c, in library gt_bk with the cpu backend). */
#include <string.h>

#include "gt_backend.h"

const gt_backend *gt_bk_find(const char *name)
{
    if (!name)
        return NULL;
    if (strcmp(name, "cpu") == 0)
        return &gt_bk_cpu;
#ifdef GT_WITH_CUDA
    if (strcmp(name, "cuda") == 0)
        return &gt_bk_cuda;
#endif
    return NULL;
}
