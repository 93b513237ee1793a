/* gen_export.h: a generated kernel as something a program outside gemmtune
 * can compile and launch (module prefix gt_gen_): the complete source (the
 * family's template with the config's definitions written in as #defines),
 * the NVRTC options, the kernel names, the launch geometry of each kernel,
 * the workspace and how it must be initialised, and the layout of the
 * argument struct. Pure host C, no CUDA header: the coordinator re-creates a
 * winner for download (GET /v1/runs/{id}/kernels/{problem}) and libgemmtune
 * hands it to applications, neither of which ever sees the worker's source.
 *
 * A generated kernel is fully determined by (problem, config, target): the
 * worker compiles the same template with the same definitions
 * (worker/cuda/gen_run.c), so what is exported here is what was measured.
 *
 * Families: gt_gen_kernel_make dispatches on gt_gen_family; a family fills
 * the family-neutral gt_gen_kernel below ("gemv", and "mma" with its
 * mma.sync and, for sm_90a, wgmma instructions; a new family adds one case
 * and one filler). */
#ifndef GEN_EXPORT_H
#define GEN_EXPORT_H

#include <stddef.h>

#include "gen_gemv.h"
#include "gen_mma.h"
#include "gt_problem.h"

struct cJSON;

/* NVRTC's name for the program (what the worker passes to nvrtcCreateProgram). */
#define GT_GEN_PROGRAM_NAME "gt_gen.cu"

#define GT_GEN_MAX_LAUNCH 2
#define GT_GEN_MAX_ARGS 24
#define GT_GEN_MAX_BUFS 2
#define GT_GEN_MAX_OPTS 4
/* Buffers inside the one workspace start at multiples of this. */
#define GT_GEN_WS_ALIGN 256

/* One member of the kernels' argument struct (passed by value). Every member
 * is 8 bytes, so its offset is 8 x its index on host and device alike. */
enum { GT_GEN_ARG_PTR = 0, GT_GEN_ARG_I64 = 1, GT_GEN_ARG_F64 = 2 };
typedef struct gt_gen_arg {
    const char *name;   /* member name, e.g. "lda" (static) */
    const char *ctype;  /* its C type, e.g. "long long" (static) */
    int kind;           /* GT_GEN_ARG_*: pointers are the caller's; scalars are fixed */
    long long i;        /* I64: the value for this problem */
    double f;           /* F64: the value for this problem */
    const char *doc;    /* what it holds (static) */
} gt_gen_arg;

/* One kernel launch, in order, on one stream. Parameters: the argument
 * struct by value, then (when extra_name is set) one long long. */
typedef struct gt_gen_launch {
    const char *kernel;        /* extern "C" function name (static) */
    unsigned grid[3], block[3];
    size_t smem_dynamic;       /* bytes to pass at launch (above 48 KiB the function needs
                                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first) */
    size_t smem_static;        /* shared memory the kernel declares itself (informative) */
    const char *extra_name;    /* NULL, or the name of the trailing long long parameter */
    long long extra_value;
} gt_gen_launch;

/* A buffer the kernels use, carved out of one device workspace. */
typedef struct gt_gen_buf {
    const char *arg;           /* the pointer member it goes to ("ws", "cnt") */
    size_t offset, bytes;      /* within the workspace (offset: GT_GEN_WS_ALIGN multiple) */
    int zero;                  /* 1: must be zero before the first launch (the kernels
                                  leave it zero again); 0: no initialisation needed */
    const char *init;          /* the rule in words (static) */
} gt_gen_buf;

typedef struct gt_gen_kernel {
    int family;                /* GT_FAM_* */
    const char *family_name;   /* "gemv" (static) */
    char *config;              /* canonical JSON text (owned) */
    char *source;              /* the definitions as #defines + the template (owned):
                                  compiles as is with NVRTC or nvcc */
    const char *template_src;  /* the template alone (static) */
    char defs[GT_GEN_MAX_DEFS][GT_GEN_DEF_LEN]; /* the -D options the worker passes with the
                                                   template instead of the #defines */
    int ndefs;
    char arch[16];             /* "sm_90": the target the worker compiled for; "" unknown;
                                  "sm_90a" for an arch-specific kernel */
    int arch_specific;         /* 1: compiles and runs for sm_<min_sm>a only (wgmma, TMA) */
    int ntmaps;                /* tensor maps launch[0] takes after the struct (mma inst
                                  wgmma: 2, for "a" and "b"); the caller encodes them for
                                  the call's pointers with cuTensorMapEncodeTiled */
    gt_mma_tmap tmaps[GT_MMA_MAX_TMAPS];
    int chain_min_sm;          /* launch[0] may launch chained (programmatic dependent launch)
                                  on sm_<chain_min_sm> and newer; 0: never (gemv: 90) */
    int chain_reads_a;         /* 1: it reads A before its griddepcontrol.wait (gemv pipe
                                  dbuf): the kernel before it must not write A */
    const char *opts[GT_GEN_MAX_OPTS]; /* NVRTC options besides the architecture (static) */
    int nopts;
    int min_sm;                /* the oldest compute capability it compiles for (80) */
    int nlaunch;
    gt_gen_launch launch[GT_GEN_MAX_LAUNCH];
    const char *args_struct;   /* the template's name of the argument struct (static) */
    int nargs;
    gt_gen_arg args[GT_GEN_MAX_ARGS];
    size_t args_bytes;         /* sizeof the argument struct: 8 x nargs */
    int nbufs;
    gt_gen_buf bufs[GT_GEN_MAX_BUFS];
    size_t workspace_bytes;    /* one device allocation holding every buffer; 0: none */
} gt_gen_kernel;

/* Results of gt_gen_kernel_make. */
enum {
    GT_GEN_EXPORT_OK = 0,
    GT_GEN_EXPORT_LIBRARY = 1, /* a cuBLASLt configuration or a libgemmtune_cutlass kernel
                                  (built ahead of time): no source to export */
    GT_GEN_EXPORT_BAD = -1,    /* unknown or test-only family, malformed config, or a
                                  config that cannot run this problem */
    GT_GEN_EXPORT_NOMEM = -2,
};

/* The kernel of config cfg for problem p on the CUDA target sm (compute
 * capability major*10+minor as the worker's "sm_90"; 0 when unknown: arch
 * stays ""). Fills *k (free it with gt_gen_kernel_free whatever the result)
 * and returns GT_GEN_EXPORT_*, with the reason in err when not OK. */
int gt_gen_kernel_make(const gt_problem *p, const struct cJSON *cfg, int sm, gt_gen_kernel *k,
                       char *err, size_t errlen);
void gt_gen_kernel_free(gt_gen_kernel *k);

/* The NVRTC options for k->source: --gpu-architecture=<k->arch> when the
 * arch is known (written into arch_buf), then k->opts. The worker passes
 * the same, plus --ptxas-options=-v (only to read spill counts) and k->defs
 * where the source has #defines. Returns the count. */
int gt_gen_kernel_nvrtc_opts(const gt_gen_kernel *k, char arch_buf[48],
                             const char *opts[GT_GEN_MAX_OPTS + 1]);

/* k as a new JSON object: family, config, kernels, source, program_name,
 * nvrtc_options, worker_nvrtc_options, defines, target, launches, workspace,
 * args. NULL out of memory. */
struct cJSON *gt_gen_kernel_json(const gt_gen_kernel *k);

/* k as a header file (new string): a comment block with `about` (free
 * text, one item per line, may be NULL) and the launch parameters, then
 * the source. NULL out of memory. */
char *gt_gen_kernel_cuh(const gt_gen_kernel *k, const char *about);

/* Fills the argument struct (k->args_bytes bytes at out) with the pointers
 * of one call and the fixed scalars; ws is the device workspace of
 * k->workspace_bytes (NULL when 0). Pointer members name their role: a, b,
 * c, bias, d, scale_a, scale_b (fp8 kernels: device f32 scalars, ignored
 * otherwise), or a buffer of k->bufs. Returns 0, or -1 when len is short, a
 * member has no known role, or an fp8 kernel's scale pointer is NULL. */
int gt_gen_kernel_args(const gt_gen_kernel *k, const void *a, const void *b, const void *c,
                       const void *bias, void *d, const void *scale_a, const void *scale_b, void *ws,
                       void *out, size_t len);

/* 1 when k's argument struct has the fp8 scale pointers (scale_a, scale_b). */
int gt_gen_kernel_scaled(const gt_gen_kernel *k);

#endif
