/* gt_lib.h: internals of libgemmtune and the LD_PRELOAD shim (module prefix
 * gt_lib_; gt_db_* for what gemmtune.c shares with the other files of the
 * library). Nothing here is exported from the shared libraries: every object
 * of lib/ is compiled with hidden visibility and only the gt_db_* functions
 * of gemmtune.h are marked for export.
 *
 *   gemmtune.c         the result database: open, lookups, the public
 *                      description -> problem
 *   gemmtune_kernel.c  generated kernels from the gen/ library (host only)
 *   kernel_cuda.c      (CUDA builds) NVRTC compile, load and launch of them
 *   gemmtune_cuda.c    (CUDA builds) the public cuBLASLt lookups
 *   plan_cuda.c        (CUDA builds) plans: either winner made ready and run
 *   plan_nocuda.c      (builds without CUDA) the plan functions, refusing
 *   record.c           the record-file line writer of the preload shim
 *   preload.c          (CUDA builds) the shim
 *
 * What the worker shares with the library (the cuBLASLt mapping both ways,
 * the cuda config codecs, the driver, NVRTC, module load and launch) is
 * cuda/'s (gt_cu.h, and gt_cu_host.h in builds without CUDA), compiled in
 * the same way. */
#ifndef GT_LIB_H
#define GT_LIB_H

#include <stddef.h>
#include <stdint.h>

#include "gt_cu_host.h"
#include "gt_problem.h"

#if defined(__GNUC__)
#define GT_HIDDEN __attribute__((visibility("hidden")))
#else
#define GT_HIDDEN
#endif

/* One line of a hipBLASLt bench log (HIPBLASLT_LOG_MASK=32 format, the
 * format gemmtune ingests with every field: ld, strides, types, epilogue)
 * for p called `calls` times, with a trailing newline. Returns the length
 * like snprintf. */
GT_HIDDEN int gt_lib_record_line(const gt_problem *p, int64_t calls, char *buf, size_t len);

/* gemmtune.c internals shared with gemmtune_cuda.c and preload.c. */
struct gt_db;
struct gt_gemm_desc;
/* The problem of a public GEMM description (defaults filled in, checked). */
GT_HIDDEN int gt_db_desc_problem(const struct gt_gemm_desc *d, gt_problem *p, char *err,
                                 size_t errlen);
/* The decoded cuda config tuned for key on model: GT_DB_OK, GT_DB_NOT_TUNED,
 * or GT_DB_REJECTED when the stored config does not decode. */
GT_HIDDEN int gt_db_cuda_cfg(const struct gt_db *db, const char *key, const char *model,
                             gt_cu_lt_cfg *cfg);

/* The cuda entry tuned for key on model, for gemmtune_kernel.c: GT_DB_NOT_TUNED;
 * GT_DB_OK (a library configuration) with *res; GT_DB_GENERATED with *res
 * and *spec, the problem's JSON (owned by db). */
struct gt_db_result;
GT_HIDDEN int gt_db_gen_entry(const struct gt_db *db, const char *key, const char *model,
                              const char **spec, struct gt_db_result *res);

/* The exported-kernel description behind a gt_db_kernel (its tensor maps). */
struct gt_gen_kernel;
struct gt_db_kernel;
GT_HIDDEN const struct gt_gen_kernel *gt_db_kernel_gen(const struct gt_db_kernel *k);

#endif
