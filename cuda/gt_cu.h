/* gt_cu.h: the CUDA host library (cuda/, module prefix gt_cu_): everything
 * that both the code that finds a tuned result (the worker's cuda backend,
 * worker/cuda/) and the code that applies it (libgemmtune and the preload
 * shim, lib/) need, in one copy:
 *
 *   gt_cu_host.h    (no CUDA header, every build) cuBLASLt's codes against
 *                   the problem model, element codecs, host scalars, the
 *                   cuBLASLt config as JSON, descriptor tuple -> problem
 *   cu_map.c        problem -> cuBLASLt types, scalars and descriptors
 *                   (linked against cuBLASLt)
 *   lt_api.c        cuBLASLt through a table of functions (gt_cu_lt_api):
 *                   reading descriptors into a tuple, a config's attributes
 *                   on an algo, re-creating + checking a config's algo. The
 *                   preload fills the table from the application's own
 *                   libcublasLt, everyone else uses gt_cu_lt_linked
 *                   (lt_linked.c)
 *   drv.c           the CUDA driver, opened at run time (dlopen), never
 *                   linked: libgemmtune and the worker load on machines
 *                   without a driver and say so when used
 *   module.c        module load, kernel launch (plain or chained), tensor
 *                   maps of generated kernels, through the driver table
 *   nvrtc.c         NVRTC: the target for a device and one compile
 *   nvrtc_cache.c   (worker only) the content-addressed compile cache in
 *                   memory and on disk, fed by a pool of compile threads
 *
 * It may include common/ (problem model, caps, utilities), gen/ (the
 * generated families' pure host code) and the CUDA toolkit's headers
 * (cuda.h, cublasLt.h, nvrtc.h), never worker/, lib/ or server/, and it
 * never calls the CUDA runtime (libgemmtune does not link it). Everything
 * is compiled position independent with hidden visibility, because
 * libgemmtune and the preload shim compile these objects in
 * (cuda/CMakeLists.txt). Functions return 0 / -1 with a one-line reason
 * ("cuda: ...") in err; nothing prints. */
#ifndef GT_CU_H
#define GT_CU_H

#include <stddef.h>
#include <stdint.h>

#include <cublasLt.h>
#include <cuda.h>

#include "gen_mma.h"
#include "gt_cu_host.h"

/* ---- problem -> cuBLASLt (cu_map.c) ---------------------------------------------- */

typedef struct gt_cu_map {
    cudaDataType_t a, b, c, d;       /* storage types */
    cublasComputeType_t compute;
    cudaDataType_t scale;
    cublasOperation_t opa, opb;
    cublasLtEpilogue_t epilogue;
    gt_caps_act act;
    int has_bias;
    int bias_set;                    /* bias type given explicitly */
    cudaDataType_t bias;             /* valid when bias_set */
    int bias_kt;                     /* element code of the bias vector */
    int fp8;                         /* fp8 inputs: A/B scale pointers */
    int d_scale;                     /* fp8 output: D scale pointer too */
    int akt, bkt, ckt, dkt;          /* element codes of A, B, C, D */
    unsigned char alpha[8], beta[8]; /* host scalars in the scale type */
} gt_cu_map;

/* Maps p for a device of compute capability sm (major*10+minor, e.g. 90;
 * 0: any device, the rules that depend on it left out). The type rules are
 * common/caps.c's (gt_caps_cuda_map); this turns their answer into
 * cuBLASLt's enums and host scalars. -1 with "cuda: ..." in err for
 * anything cuBLASLt cannot run. */
int gt_cu_map_problem(const gt_problem *p, int sm, gt_cu_map *m, char *err, size_t errlen);
/* Storage cudaDataType_t of a problem type; -1 when it has none. */
int gt_cu_dtype(gt_dtype t, cudaDataType_t *out);

/* Device pointers that cuBLASLt reads besides A/B/C/D; a descriptor made
 * only for the heuristic or AlgoCheck takes aligned placeholders (they only
 * look at the alignment). */
typedef struct gt_cu_ptrs {
    const void *bias;
    const void *a_scale, *b_scale, *d_scale;
} gt_cu_ptrs;

/* A matmul descriptor and its four layouts. */
typedef struct gt_cu_desc {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c, d;
} gt_cu_desc;

/* Creates the matmul and layout descriptors of p (host only). */
int gt_cu_desc_create(const gt_problem *p, const gt_cu_map *m, const gt_cu_ptrs *ptrs, gt_cu_desc *d,
                      char *err, size_t errlen);
void gt_cu_desc_destroy(gt_cu_desc *d);

/* Elements spanned by an operand: (batch-1)*stride + ld*cols. */
int64_t gt_cu_span(int64_t ld, int64_t cols, int64_t batch, int64_t stride);

/* ---- cuBLASLt through a table (lt_api.c, lt_linked.c) ------------------------------- */

typedef struct gt_cu_lt_api {
    cublasStatus_t (*layout_get)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, void *,
                                 size_t, size_t *);
    cublasStatus_t (*desc_get)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, void *,
                               size_t, size_t *);
    cublasStatus_t (*pref_get)(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                               void *, size_t, size_t *);
    cublasStatus_t (*algo_init)(cublasLtHandle_t, cublasComputeType_t, cudaDataType_t,
                                cudaDataType_t, cudaDataType_t, cudaDataType_t, cudaDataType_t,
                                int, cublasLtMatmulAlgo_t *);
    cublasStatus_t (*cfg_set)(cublasLtMatmulAlgo_t *, cublasLtMatmulAlgoConfigAttributes_t,
                              const void *, size_t);
    cublasStatus_t (*cfg_get)(const cublasLtMatmulAlgo_t *, cublasLtMatmulAlgoConfigAttributes_t,
                              void *, size_t, size_t *);
    cublasStatus_t (*algo_check)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                 cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                 cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *,
                                 cublasLtMatmulHeuristicResult_t *);
    cublasStatus_t (*cap_get)(const cublasLtMatmulAlgo_t *, cublasLtMatmulAlgoCapAttributes_t,
                              void *, size_t, size_t *);
    const char *(*status_name)(cublasStatus_t);
} gt_cu_lt_api;

/* The cuBLASLt this library is linked against (lt_linked.c). */
extern const gt_cu_lt_api gt_cu_lt_linked;
/* Fills api from a dlopen handle on a libcublasLt (a function it lacks is
 * NULL; the caller checks the ones it needs). */
void gt_cu_lt_api_dlsym(void *handle, gt_cu_lt_api *api);
/* "CUBLAS_STATUS_NOT_SUPPORTED"; "CUBLAS_STATUS_?" when the library cannot say. */
const char *gt_cu_lt_status_name(const gt_cu_lt_api *api, cublasStatus_t s);
/* The same for the linked cuBLASLt. */
const char *gt_cu_status_name(cublasStatus_t s);

/* Reads the tuple of a matmul (descriptor + the four layouts). 0, or -1
 * when a core attribute cannot be read. Attributes newer cuBLASLt versions
 * added (fast accumulation, scale modes, ...) read as their default when
 * the library does not know them. */
int gt_cu_lt_describe(const gt_cu_lt_api *api, const gt_cu_desc *d, gt_cu_lt_tuple *out);

/* The types of cublasLtMatmulAlgoInit (and AlgoGetIds) for a matmul. */
typedef struct gt_cu_lt_types {
    cublasComputeType_t compute;
    cudaDataType_t scale, a, b, c, d;
} gt_cu_lt_types;
gt_cu_lt_types gt_cu_map_types(const gt_cu_map *m);
gt_cu_lt_types gt_cu_lt_tuple_types(const gt_cu_lt_tuple *t);

/* Writes the eight settable attributes of c into an initialized algo. */
int gt_cu_lt_cfg_apply(const gt_cu_lt_api *api, const gt_cu_lt_cfg *c, cublasLtMatmulAlgo_t *algo,
                       char *err, size_t errlen);
/* Reads the nine attributes of an algo (e.g. a heuristic result). */
int gt_cu_lt_cfg_from_algo(const gt_cu_lt_api *api, const cublasLtMatmulAlgo_t *algo,
                           gt_cu_lt_cfg *c, char *err, size_t errlen);

/* A config's algo as cublasLtMatmulAlgoCheck accepted it. */
typedef struct gt_cu_lt_algo {
    cublasLtMatmulAlgo_t algo;
    size_t workspace;          /* from cublasLtMatmulAlgoCheck */
    float waves;
    uint32_t align[4];         /* CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_{A,B,C,D}_BYTES (256: unknown) */
    int32_t splitk;
    uint32_t reduction;
} gt_cu_lt_algo;

/* Re-creates config c for the matmul of types t and checks it against the
 * descriptors d: cublasLtMatmulAlgoInit(algo_id) + the eight config
 * attributes + cublasLtMatmulAlgoCheck. This is how the worker builds a
 * candidate and how libgemmtune and the preload re-create a tuned one. 0, or
 * -1 with the cuBLASLt status in err. */
int gt_cu_lt_algo_make(const gt_cu_lt_api *api, cublasLtHandle_t h, const gt_cu_lt_types *t,
                       const gt_cu_lt_cfg *c, const gt_cu_desc *d, gt_cu_lt_algo *out, char *err,
                       size_t errlen);

/* ---- the CUDA driver (drv.c) -------------------------------------------------------
 * libcuda.so.1 comes with the GPU driver, not the toolkit: a binary that
 * linked it could not even be loaded on a machine without a driver (a build
 * host, a CPU-only test). It is opened at the first use, the way cuBLASLt
 * and the CUDA runtime reach it, and its entry points are taken with
 * cuGetProcAddress at CUDA 12.0's ABI. */
typedef struct gt_cu_drv {
    CUresult(CUDAAPI *ctx_get_device)(CUdevice *);
    CUresult(CUDAAPI *ctx_get_current)(CUcontext *);
    CUresult(CUDAAPI *ctx_set_current)(CUcontext);
    CUresult(CUDAAPI *stream_get_ctx)(CUstream, CUcontext *);
    CUresult(CUDAAPI *device_get)(CUdevice *, int);
    CUresult(CUDAAPI *primary_ctx_retain)(CUcontext *, CUdevice);
    CUresult(CUDAAPI *device_get_attribute)(int *, CUdevice_attribute, CUdevice);
    CUresult(CUDAAPI *device_get_name)(char *, int, CUdevice);
    CUresult(CUDAAPI *module_load_data)(CUmodule *, const void *);
    CUresult(CUDAAPI *module_unload)(CUmodule);
    CUresult(CUDAAPI *module_get_function)(CUfunction *, CUmodule, const char *);
    CUresult(CUDAAPI *func_get_attribute)(int *, CUfunction_attribute, CUfunction);
    CUresult(CUDAAPI *func_set_attribute)(CUfunction, CUfunction_attribute, int);
    CUresult(CUDAAPI *launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                     unsigned, unsigned, CUstream, void **, void **);
    CUresult(CUDAAPI *get_error_name)(CUresult, const char **);
    /* NULL when the driver lacks them: chained launches and wgmma kernels
     * are then refused with the reason */
    CUresult(CUDAAPI *launch_kernel_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult(CUDAAPI *tensor_map_encode_tiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                               const cuuint64_t *, const cuuint64_t *,
                                               const cuuint32_t *, const cuuint32_t *,
                                               CUtensorMapInterleave, CUtensorMapSwizzle,
                                               CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
} gt_cu_drv;

/* The driver's table (opened once per process, never closed: its functions
 * may be used until exit), or NULL with the reason ("cuda: no CUDA driver:
 * ...") in err. */
const gt_cu_drv *gt_cu_drv_get(char *err, size_t errlen);
/* "cuda: what: CUDA_ERROR_NAME (code)" in err. */
void gt_cu_drv_err(const gt_cu_drv *d, CUresult r, const char *what, char *err, size_t errlen);
/* The compute capability (10 * major + minor) of the calling thread's
 * current context's device: 0, or -1 with the reason (no driver, no current
 * context) in err. */
int gt_cu_current_sm(int *sm, char *err, size_t errlen);
/* Makes device ordinal's primary context (the CUDA runtime's, so PyTorch's)
 * current on the calling thread when no context is: what the runtime does
 * lazily at a thread's first runtime call, which a thread that only reaches
 * the GPU through libgemmtune's driver calls never makes. A current context
 * is left as it is. 0, or -1 with err. */
int gt_cu_bind_device(int ordinal, char *err, size_t errlen);
/* The ordinal of the current context's device in *ordinal; 0, or -1 with err. */
int gt_cu_current_device(int *ordinal, char *err, size_t errlen);
/* The calling thread's current context and its device's ordinal; 0, or -1
 * with err (no driver, no current context). */
int gt_cu_current_ctx(CUcontext *ctx, int *ordinal, char *err, size_t errlen);
/* Makes ctx (the one a plan or module was made in) current for a call that
 * uses it: on a thread with no context it stays current, as
 * gt_cu_bind_device does; on a thread whose current context is another (a
 * second GPU's: PyTorch switches devices per tensor, not per library call)
 * the previous one is kept in *prev for gt_cu_ctx_leave. Launching a
 * function of one context, or cuBLASLt's kernels for a handle of one device,
 * while another is current fails with CUDA_ERROR_INVALID_HANDLE at best and
 * runs on the wrong GPU at worst. 0, or -1 with err. */
int gt_cu_ctx_enter(CUcontext ctx, CUcontext *prev, char *err, size_t errlen);
/* Puts back what gt_cu_ctx_enter replaced (nothing when it replaced none). */
void gt_cu_ctx_leave(CUcontext ctx, CUcontext prev);
/* Whether stream belongs to ctx: 0 when it does, when it is one of the
 * default streams (NULL, legacy, per-thread: the current context's, which
 * gt_cu_ctx_enter made ctx), or when the driver cannot say (a stream handle
 * it does not answer for is left to the launch to refuse); -1 with err naming
 * ordinal when the driver says it is another context's stream (a stream of
 * another GPU: the kernels would be queued behind that GPU's work). */
int gt_cu_stream_in_ctx(CUstream stream, CUcontext ctx, int ordinal, char *err, size_t errlen);

/* ---- modules and launches (module.c) ------------------------------------------------ */

/* Loads a module from an image (a cubin, or NUL-terminated PTX the driver
 * JIT-compiles) into the current context and takes its functions names[0..n).
 * A function with dyn[i] > 0 bytes of dynamic shared memory opts in to them
 * (above 48 KiB, static and dynamic together, it must; it always does).
 * On failure nothing stays loaded. */
int gt_cu_module_load(const gt_cu_drv *d, const void *image, int cubin, int n,
                      const char *const *names, const size_t *dyn, CUmodule *mod, CUfunction *fns,
                      char *err, size_t errlen);
/* Enqueues one launch on s. chained: programmatic dependent launch (the
 * kernel may start while the one before it on the stream drains; it waits
 * with griddepcontrol.wait), which needs the driver's cuLaunchKernelEx.
 * what names the launch in err. */
int gt_cu_launch(const gt_cu_drv *d, CUfunction f, const unsigned grid[3], const unsigned block[3],
                 unsigned smem, CUstream s, void **params, int chained, const char *what, char *err,
                 size_t errlen);
/* Encodes the tensor map t (gen_mma.h: what a wgmma kernel takes after its
 * argument struct) for the operand at base. */
int gt_cu_tmap_encode(const gt_cu_drv *d, const gt_mma_tmap *t, const void *base, CUtensorMap *out,
                      char *err, size_t errlen);

/* ---- NVRTC (nvrtc.c) ------------------------------------------------------------------ */

/* OR'ed into an sm: the arch-specific target sm_NNa (cubin only; wgmma and
 * the TMA are sm_90a features no other arch runs). */
#define GT_CU_SM_A 0x10000

/* The target to compile for a device of compute capability sm: a cubin for
 * an arch this NVRTC knows ("sm_90"), else PTX for the newest arch below it
 * ("compute_90"), which the driver JIT-compiles; with GT_CU_SM_A the
 * arch-specific cubin ("sm_90a") or nothing. 0, or -1 when NVRTC cannot. */
int gt_cu_nvrtc_target(int sm, char *target, size_t len, int *cubin);

/* A compiled image. */
enum { GT_CU_FROM_COMPILE = 0, GT_CU_FROM_DISK = 1 };
typedef struct gt_cu_image {
    unsigned char *data;     /* malloc'd, NUL-terminated (PTX is text) */
    size_t len;              /* without the NUL */
    int cubin;               /* 1 cubin, 0 PTX (JIT-compiled by the driver at load) */
    char target[24];         /* "sm_90", "sm_90a" (GT_CU_SM_A) or "compute_90" */
    double compile_ms;       /* NVRTC time when compiled (also kept on disk) */
    int origin;              /* GT_CU_FROM_*: how this process got it (nvrtc_cache.c) */
    int spill_stores, spill_loads; /* ptxas -v of the kernel asked for, -1 unknown */
} gt_cu_image;

/* Compiles src (program name `name`) with --gpu-architecture=<the target
 * of sm> followed by opts. stats_kernel: also ask ptxas for its report and
 * keep that kernel's spill counts (NULL: no report, spills -1). Fills
 * data, len, cubin, target and the spills of *img; the caller frees data. */
int gt_cu_nvrtc_compile(const char *src, const char *name, int sm, const char *const *opts, int nopts,
                        const char *stats_kernel, gt_cu_image *img, char *err, size_t errlen);

/* ---- the compile cache (nvrtc_cache.c; the worker's) -----------------------------------
 * Key: FNV-1a 64 of the source, every option, the target ("sm_90" cubin, or
 * "compute_NN" PTX when NVRTC does not know the device's arch), the NVRTC
 * version and the file format version. Disk: $GEMMTUNE_CACHE_DIR/cuda, else
 * $XDG_CACHE_HOME/gemmtune/cuda, else ~/.cache/gemmtune/cuda; one file per
 * key with a checked header, written to a unique temporary name and renamed
 * into place (workers sharing the directory never read a partial file; a
 * corrupt one is compiled again); while one process compiles a key it holds
 * <key>.lock and the others wait for its file (a lock whose process is gone
 * is taken over). In process: every key ever requested, so a
 * second request never compiles or reads the disk. Compiles run on a small
 * pool of threads (one per core of the worker's share of the host but one,
 * at low priority); they never touch a CUDA context, they produce images. */
typedef struct gt_cu_entry gt_cu_entry;
#define GT_CU_URGENT 2 /* gt_cu_cache_request's async: first in the queue */

/* Requests the image of src (a static string) compiled with opts for sm
 * (GT_CU_SM_A allowed); `kernel` names the function whose ptxas statistics
 * are kept. async: queue the compile on the pool and return at once
 * (GT_CU_URGENT: at the queue's head, moved there when queued already: a
 * job's own candidates before the precompiles of problems to come); else
 * compile on this thread when nobody else is. *mem_hit (may be NULL): 1 when
 * the key was already in the in-process cache. Returns NULL only out of
 * memory. */
gt_cu_entry *gt_cu_cache_request(const char *src, const char *kernel, const char *const *opts,
                                 int nopts, int sm, int async, int *mem_hit);
/* Waits until the entry is compiled; 0 with *img (valid for the process
 * lifetime, until gt_cu_cache_forget), or -1 with the compile error. */
int gt_cu_cache_wait(gt_cu_entry *e, const gt_cu_image **img, char *err, size_t errlen);
uint64_t gt_cu_cache_key(const gt_cu_entry *e);

typedef struct gt_cu_cache_stats {
    long requests;           /* gt_cu_cache_request calls */
    long mem_hits;           /* answered from the in-process cache */
    long disk_hits;          /* read from the disk cache */
    long compiles;           /* NVRTC runs */
    long failures;           /* compiles that failed */
    double compile_ms;       /* summed NVRTC wall time (all threads) */
    int threads;             /* pool threads */
} gt_cu_cache_stats;
void gt_cu_cache_stats_get(gt_cu_cache_stats *s);
/* The host's cores are shared by this many workers (one per GPU): the pool
 * started next takes its share (GT_COMPILE_THREADS overrides). */
void gt_cu_cache_pool_share(int gpus);
/* Stops the pool (running compiles finish, queued ones stay queued: a
 * waiter compiles them itself) and joins its threads; the next async
 * request starts it again. */
void gt_cu_cache_pool_stop(void);
/* Stops the pool and drops the in-process cache (tests and self-test: the
 * next requests read the disk). No image pointer may be in use. */
void gt_cu_cache_forget(void);
/* The directory the disk cache uses now (created). 0 or -1. */
int gt_cu_cache_dir(char *buf, size_t len);

#endif
