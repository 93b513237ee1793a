/* plan_cuda.c: libgemmtune's plans (CUDA builds): one tuned GEMM made ready
 * to run, whichever kind its winner is (gemmtune.h). A cuBLASLt winner keeps
 * the descriptors the worker's own code builds (cuda/: gt_cu_map_problem for
 * this device's compute capability, gt_cu_desc_create) and the algo
 * re-created and checked against them (gt_cu_lt_algo_make), so the call run
 * is the call that was timed; a generated winner keeps its kernel compiled
 * and loaded (kernel_cuda.c); a "cutlass" winner keeps its kernel of
 * libgemmtune_cutlass and the arguments the worker's cutlass_run.c timed it
 * with (cuda/cutlass_cfg.c maps both). */
#define GEMMTUNE_CUBLASLT 1
#include "gemmtune.h"
#include "gt_cu.h"
#include "gt_cu_cutlass.h"
#include "gt_lib.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 512

/* Placeholder device pointers for the bias and scales while the algo is
 * checked (AlgoCheck only looks at their alignment, as in the worker's
 * enumeration); gt_db_plan_run writes the real ones. */
#define PLACEHOLDER ((const void *)(uintptr_t)4096)

struct gt_db_plan {
    int generated;
    int device;    /* the ordinal of the device it was made on, for messages */
    CUcontext ctx; /* the context it was made in (its module, cuBLASLt handle, workspace
                    * checks): gt_db_plan_run makes it current for the call */
    /* cuBLASLt */
    cublasLtHandle_t lt;
    gt_cu_map map;
    gt_cu_desc desc;
    int have_desc;
    gt_cu_lt_algo algo;
    pthread_mutex_t lock;          /* the descriptor's pointers, from set to enqueue */
    int have_lock;
    /* generated */
    gt_db_kernel *k;
    gt_db_module mod;
    /* cutlass: the kernel's index in the library, its arguments (pointers set per run) */
    int cutlass, cl_index;
    gt_cutlass_args cl_args;
    size_t cl_ws;
};

/* Whether pointer x (operand `what`) has the algo's minimum alignment. */
static int aligned(const void *x, uint32_t align, const char *what, char *err, size_t errlen)
{
    if (!x || !align || align > 256 || ((uintptr_t)x % align) == 0)
        return 1;
    snprintf(err, errlen, "%s at %p: the tuned algo needs %u-byte alignment", what, x, align);
    return 0;
}

/* libgemmtune_cutlass, opened once per process at the first plan that needs it and kept
 * (plans of any thread share it; its functions are reentrant) */
static pthread_once_t cl_once = PTHREAD_ONCE_INIT;
static gt_cu_cutlass cl_lib;
static char cl_why[320];
static void cl_open(void) { (void)gt_cu_cutlass_open(&cl_lib, NULL, cl_why, sizeof cl_why); }

/* The cutlass half: the config's kernel checked for this problem on the current device.
 * Without the library, or on another device than the kernels' sm_90, the plan is
 * GT_DB_REJECTED (the caller falls back to its own GEMM, as for a cuBLASLt config this
 * device refuses). */
static int make_cutlass(gt_db_plan *p, const gt_problem *prob, const cJSON *config, char *err, size_t errlen)
{
    gt_cu_cutlass_cfg cfg;
    if (gt_cu_cutlass_cfg_from_json(config, &cfg, err, errlen) != 0)
        return GT_DB_REJECTED;
    int sm, sms = 0;
    const gt_cu_drv *d = gt_cu_drv_get(err, errlen);
    if (!d || gt_cu_current_sm(&sm, err, errlen) != 0)
        return GT_DB_EINVAL;
    if (sm != 90) {
        snprintf(err, errlen, "the cutlass kernel %s is sm_90a; this device is sm_%d", cfg.kernel, sm);
        return GT_DB_REJECTED;
    }
    CUresult r = d->device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, (CUdevice)p->device);
    if (r != CUDA_SUCCESS) {
        gt_cu_drv_err(d, r, "cuDeviceGetAttribute(multiprocessors)", err, errlen);
        return GT_DB_EINVAL;
    }
    if (pthread_once(&cl_once, cl_open) != 0 || !cl_lib.dl) {
        snprintf(err, errlen, "%s", cl_why[0] ? cl_why : "libgemmtune_cutlass did not open");
        return GT_DB_REJECTED;
    }
    if ((p->cl_index = gt_cu_cutlass_find(&cl_lib, cfg.kernel)) < 0) {
        snprintf(err, errlen, "libgemmtune_cutlass has no kernel %s (another build of it?)", cfg.kernel);
        return GT_DB_REJECTED;
    }
    char why[256];
    if (gt_cu_cutlass_args_for(prob, &cfg, sms, &p->cl_args, err, errlen) != 0)
        return GT_DB_REJECTED;
    if (cl_lib.check(p->cl_index, &p->cl_args, &p->cl_ws, why, sizeof why) != 0) {
        snprintf(err, errlen, "cutlass %s: %s", cfg.kernel, why);
        return GT_DB_REJECTED;
    }
    p->cutlass = 1;
    return GT_DB_OK;
}

static int run_cutlass(gt_db_plan *p, void *stream, const void *a, const void *b, void *d, void *ws,
                       char *err, size_t errlen)
{
    char why[256];
    if (!a || !b || !d || (p->cl_ws && !ws)) {
        snprintf(err, errlen, "a pointer the GEMM needs is NULL (A, B, D%s)", p->cl_ws ? ", workspace" : "");
        return GT_DB_EINVAL;
    }
    /* TMA reads and writes 16-byte aligned rows from 16-byte aligned bases */
    if (!aligned(a, 16, "A", err, errlen) || !aligned(b, 16, "B", err, errlen) || !aligned(d, 16, "D", err, errlen))
        return GT_DB_EINVAL;
    gt_cutlass_args x = p->cl_args;
    x.a = a;
    x.b = b;
    x.d = d;
    if (cl_lib.run(p->cl_index, &x, ws, p->cl_ws, stream, why, sizeof why) != 0) {
        snprintf(err, errlen, "cutlass: %s", why);
        return GT_DB_EINVAL;
    }
    return GT_DB_OK;
}

/* The cuBLASLt half of gt_db_plan_create: key is tuned with a cuBLASLt config. */
static int make_lt(gt_db_plan *p, const gt_db *db, const gt_problem *prob, const char *key,
                   const char *model, char *err, size_t errlen)
{
    gt_cu_lt_cfg cfg;
    int sm, rc = gt_db_cuda_cfg(db, key, model, &cfg);
    if (rc != GT_DB_OK) {
        snprintf(err, errlen, "%s", rc == GT_DB_REJECTED ? "the stored cuBLASLt config does not decode"
                                                         : "not tuned");
        return rc;
    }
    /* the device first: without one, say so before cuBLASLt is touched */
    if (gt_cu_current_sm(&sm, err, errlen) != 0)
        return GT_DB_EINVAL;
    gt_cu_ptrs ptrs = {PLACEHOLDER, PLACEHOLDER, PLACEHOLDER, PLACEHOLDER};
    if (gt_cu_map_problem(prob, sm, &p->map, err, errlen) != 0 ||
        gt_cu_desc_create(prob, &p->map, &ptrs, &p->desc, err, errlen) != 0)
        return GT_DB_EINVAL;
    p->have_desc = 1;
    cublasStatus_t st = cublasLtCreate(&p->lt);
    if (st != CUBLAS_STATUS_SUCCESS) {
        p->lt = NULL;
        snprintf(err, errlen, "cuda: cublasLtCreate: %s", gt_cu_status_name(st));
        return GT_DB_EINVAL;
    }
    gt_cu_lt_types types = gt_cu_map_types(&p->map);
    if (gt_cu_lt_algo_make(&gt_cu_lt_linked, p->lt, &types, &cfg, &p->desc, &p->algo, err,
                           errlen) != 0)
        return GT_DB_REJECTED;
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        snprintf(err, errlen, "pthread_mutex_init failed");
        return GT_DB_EINVAL;
    }
    p->have_lock = 1;
    return GT_DB_OK;
}

/* The generated half: compiled and loaded in the current context. */
static int make_gen(gt_db_plan *p, const gt_db *db, const gt_gemm_desc *d, const char *model,
                    char *err, size_t errlen)
{
    int rc = gt_db_kernel_get(db, d, model, &p->k);
    if (rc != GT_DB_OK) {
        snprintf(err, errlen, "gt_db_kernel_get: %s", gt_db_strerror(rc));
        return rc;
    }
    p->generated = 1;
    if (gt_db_kernel_cuda_load(p->k, &p->mod, err, errlen) != 0)
        return GT_DB_EINVAL;
    return GT_DB_OK;
}

int gt_db_plan_create(gt_db *db, const gt_gemm_desc *d, const char *device_model,
                      gt_db_plan **out, char *err, size_t errlen)
{
    char key[KEY_MAX];
    gt_problem prob;
    gt_db_result r;
    gt_db_plan *p = NULL;
    int rc;
    if (out)
        *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    if (!db || !d || !device_model || !out) {
        snprintf(err, errlen, "invalid argument");
        return GT_DB_EINVAL;
    }
    if (gt_db_desc_problem(d, &prob, err, errlen) != 0)
        return GT_DB_EINVAL;
    int n = gt_problem_key(&prob, key, sizeof key);
    if (n < 0 || (size_t)n >= sizeof key) {
        snprintf(err, errlen, "problem key too long");
        return GT_DB_EINVAL;
    }
    rc = gt_db_lookup_key(db, key, "cuda", device_model, &r);
    if (rc == GT_DB_NOT_TUNED) {
        snprintf(err, errlen, "not tuned for %s", device_model);
        return rc;
    }
    if (rc != GT_DB_OK && rc != GT_DB_GENERATED) {
        snprintf(err, errlen, "lookup: %s", gt_db_strerror(rc));
        return rc;
    }
    if (!(p = calloc(1, sizeof *p))) {
        snprintf(err, errlen, "out of memory");
        return GT_DB_EINVAL;
    }
    if (gt_cu_current_ctx(&p->ctx, &p->device, err, errlen) != 0) {
        rc = GT_DB_EINVAL;
        goto fail;
    }
    /* a generated winner of the cutlass family has no source: the library runs it */
    cJSON *gen = rc == GT_DB_GENERATED ? cJSON_Parse(r.config) : NULL;
    if (gen && gt_gen_family(gen) == GT_FAM_CUTLASS)
        rc = make_cutlass(p, &prob, gen, err, errlen);
    else
        rc = rc == GT_DB_GENERATED ? make_gen(p, db, d, device_model, err, errlen)
                                   : make_lt(p, db, &prob, key, device_model, err, errlen);
    cJSON_Delete(gen);
    if (rc != GT_DB_OK)
        goto fail;
    *out = p;
    return GT_DB_OK;
fail:
    gt_db_plan_free(p);
    return rc;
}

void gt_db_plan_workspace(const gt_db_plan *p, size_t *bytes, int *zero_once)
{
    size_t b = 0;
    int z = 0;
    if (p && p->cutlass) {
        b = p->cl_ws; /* scratch: the library initialises what it needs at every run */
    } else if (p && p->generated) {
        b = p->k->workspace_bytes;
        z = p->k->workspace_zero;
    } else if (p) {
        b = p->algo.workspace; /* cuBLASLt's is scratch: no initialisation */
    }
    if (bytes)
        *bytes = b;
    if (zero_once)
        *zero_once = z;
}


/* Writes one device pointer attribute of the matmul descriptor. */
static int set_ptr(gt_db_plan *p, cublasLtMatmulDescAttributes_t attr, const void *v,
                   const char *what, char *err, size_t errlen)
{
    cublasStatus_t st = cublasLtMatmulDescSetAttribute(p->desc.op, attr, &v, sizeof v);
    if (st == CUBLAS_STATUS_SUCCESS)
        return 0;
    snprintf(err, errlen, "cuda: %s: %s", what, gt_cu_status_name(st));
    return -1;
}

static int run_lt(gt_db_plan *p, void *stream, const void *a, const void *b, const void *c,
                  const void *bias, void *d, const void *sa, const void *sb, const void *sd,
                  void *ws, char *err, size_t errlen)
{
    const gt_cu_map *m = &p->map;
    int rc = GT_DB_EINVAL;
    if (!a || !b || !d || (m->has_bias && !bias) || (m->fp8 && (!sa || !sb)) ||
        (m->d_scale && !sd) || (p->algo.workspace && !ws)) {
        snprintf(err, errlen, "a pointer the GEMM needs is NULL (A, B, D%s%s%s)",
                 m->has_bias ? ", bias" : "", m->fp8 ? ", the scales" : "",
                 p->algo.workspace ? ", workspace" : "");
        return GT_DB_EINVAL;
    }
    /* beta 0: cuBLASLt does not read C, but takes a pointer with D's layout */
    if (!c)
        c = d;
    if (!aligned(a, p->algo.align[0], "A", err, errlen) ||
        !aligned(b, p->algo.align[1], "B", err, errlen) ||
        !aligned(c, p->algo.align[2], "C", err, errlen) ||
        !aligned(d, p->algo.align[3], "D", err, errlen))
        return GT_DB_EINVAL;
    if (pthread_mutex_lock(&p->lock) != 0) {
        snprintf(err, errlen, "pthread_mutex_lock failed");
        return GT_DB_EINVAL;
    }
    /* only the pointers the problem has: setting others would change the
     * descriptor from the one the algo was checked against */
    if ((m->has_bias &&
         set_ptr(p, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias, "BIAS_POINTER", err, errlen)) ||
        (m->fp8 &&
         (set_ptr(p, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, sa, "A_SCALE_POINTER", err, errlen) ||
          set_ptr(p, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, sb, "B_SCALE_POINTER", err, errlen))) ||
        (m->d_scale &&
         set_ptr(p, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, sd, "D_SCALE_POINTER", err, errlen)))
        goto out;
    cublasStatus_t st = cublasLtMatmul(p->lt, p->desc.op, m->alpha, a, p->desc.a, b, p->desc.b,
                                       m->beta, c, p->desc.c, d, p->desc.d, &p->algo.algo, ws,
                                       p->algo.workspace, (cudaStream_t)stream);
    if (st != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cuda: cublasLtMatmul: %s", gt_cu_status_name(st));
        goto out;
    }
    rc = GT_DB_OK;
out:
    (void)pthread_mutex_unlock(&p->lock); /* locked above by this thread: cannot fail */
    return rc;
}

int gt_db_plan_run(gt_db_plan *p, void *stream, const void *a, const void *b, const void *c,
                   const void *bias, void *d, const void *scale_a, const void *scale_b,
                   const void *scale_d, void *workspace, int flags, char *err, size_t errlen)
{
    if (!p) {
        snprintf(err, errlen, "invalid argument");
        return GT_DB_EINVAL;
    }
    /* The plan's own context for the call: a thread whose only GPU work is this call has
     * none (the runtime binds one lazily, at a runtime call this thread may never have
     * made), and a thread of a multi-GPU program may have another GPU's current (PyTorch
     * sets the device per tensor, around its own kernels, and a call on cuda:1 may come
     * while cuda:0 is current): a function of this plan's module, or cuBLASLt's kernels
     * for its handle, launched then fail or run on the wrong GPU. The previous context is
     * current again on return. */
    CUcontext prev;
    if (gt_cu_ctx_enter(p->ctx, &prev, err, errlen) != 0)
        return GT_DB_EINVAL;
    int rc;
    if (gt_cu_stream_in_ctx((CUstream)stream, p->ctx, p->device, err, errlen) != 0)
        rc = GT_DB_EINVAL;
    else if (p->cutlass)
        rc = run_cutlass(p, stream, a, b, d, workspace, err, errlen);
    else if (!p->generated)
        rc = run_lt(p, stream, a, b, c, bias, d, scale_a, scale_b, scale_d, workspace, err, errlen);
    /* an fp8 kernel takes the scales as cuBLASLt does (scale_d: no fp8 D yet) */
    else
        rc = gt_db_kernel_cuda_launch_scaled(p->k, &p->mod, (struct CUstream_st *)stream, a, b, c,
                                             bias, d, scale_a, scale_b, workspace, (unsigned)flags,
                                             err, errlen) != 0
                 ? GT_DB_EINVAL
                 : GT_DB_OK;
    gt_cu_ctx_leave(p->ctx, prev);
    return rc;
}

void gt_db_plan_free(gt_db_plan *p)
{
    if (!p)
        return;
    /* the module is unloaded from, and the handle's resources freed in, the plan's own
     * context: a multi-GPU program frees a cuda:1 plan with whichever device current */
    char why[256];
    CUcontext prev = NULL;
    int entered = p->ctx && gt_cu_ctx_enter(p->ctx, &prev, why, sizeof why) == 0;
    if (p->generated) {
        gt_db_kernel_cuda_unload(&p->mod);
        gt_db_kernel_free(p->k);
    } else if (p->k) {
        gt_db_kernel_free(p->k);
    }
    if (p->have_desc)
        gt_cu_desc_destroy(&p->desc);
    if (p->lt)
        (void)cublasLtDestroy(p->lt); /* teardown: nothing to undo on failure */
    if (entered)
        gt_cu_ctx_leave(p->ctx, prev);
    if (p->have_lock)
        (void)pthread_mutex_destroy(&p->lock);
    free(p);
}

int gt_db_cuda_bind_device(int ordinal, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (ordinal < 0) {
        snprintf(err, errlen, "invalid argument");
        return GT_DB_EINVAL;
    }
    return gt_cu_bind_device(ordinal, err, errlen) == 0 ? GT_DB_OK : GT_DB_EINVAL;
}
