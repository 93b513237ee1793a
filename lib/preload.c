/* preload.c: libgemmtune-preload.so, an LD_PRELOAD shim that gives an
 * unmodified cuBLASLt application gemmtune's tuned algorithms, and records
 * the GEMMs it runs.
 *
 *   GEMMTUNE_DB=tuned.db        look every GEMM up (cuda backend, this
 *                               device's model) and put the tuned algo first
 *                               in cublasLtMatmulAlgoGetHeuristic's results
 *   GEMMTUNE_RECORD=gemms.log   write every GEMM seen, with its call count,
 *                               at exit as hipBLASLt bench lines (the format
 *                               gemmtune ingests with ld, strides, types and
 *                               epilogue: `gemmtune submit gemms.log`)
 *   GEMMTUNE_VERBOSE=1|2        counters (1) and one line per GEMM (2) on
 *                               stderr at exit
 *   GEMMTUNE_DEVICE_MODEL=...   use this model instead of the device's name
 *   GEMMTUNE_CUBLASLT=path      the libcublasLt to forward to when it cannot
 *                               be found among the loaded objects
 *   GEMMTUNE_MAX_GEMMS=N        distinct GEMMs tracked (default 4096)
 *
 * Interposed: cublasLtMatmulAlgoGetHeuristic (lookups) and cublasLtMatmul
 * (call counts and the alpha/beta values, which the problem key contains
 * and the heuristic call does not see). Everything else, and every call the
 * shim cannot map exactly to a tuned problem, passes through untouched.
 *
 * The shim links no CUDA library. The real functions come from the
 * libcublasLt the application already loaded: dlsym(RTLD_NEXT) first; when
 * that library is not in the global scope (loaded RTLD_LOCAL), the loaded
 * objects are searched for libcublasLt.so*; every other cuBLASLt function is
 * taken from the same object as the real heuristic (cuda/'s gt_cu_lt_api
 * table, which the worker's own code reads and re-creates algos through).
 * The device model comes from the driver (cuda/'s table: cuCtxGetDevice +
 * cuDeviceGetName, the same string as cudaGetDeviceProperties().name, which
 * the worker reports).
 *
 * Hot path: the tuple of attributes of the call's descriptors (gt_cu_lt_tuple)
 * is read with ~30 attribute getters, hashed and found in a fixed table
 * allocated once; the first sight of a tuple maps it to the problem key,
 * looks it up and re-creates + checks the tuned algo (cublasLtMatmulAlgoInit
 * + config attributes + cublasLtMatmulAlgoCheck against the caller's
 * descriptors); later calls only compare the cached algo's workspace,
 * alignment and reduction needs with the call's preference. No allocation
 * after the first sight of a tuple. One mutex guards the table; no lock is
 * held while calling into cuBLASLt. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gemmtune.h"
#include "gt_config.h"
#include "gt_cu.h"
#include "gt_lib.h"

#define EXPORT __attribute__((visibility("default")))
#define NVAR 8
#define MAX_DEV 64
#define KEY_MAX 512

/* ---- the real cuBLASLt ------------------------------------------------------ */

typedef cublasStatus_t (*heur_fn)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                  cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                  cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
                                  cublasLtMatmulHeuristicResult_t[], int *);
typedef cublasStatus_t (*matmul_fn)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *,
                                    const void *, cublasLtMatrixLayout_t, const void *,
                                    cublasLtMatrixLayout_t, const void *, const void *,
                                    cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,
                                    const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t);

/* ---- the table --------------------------------------------------------------- */

enum { ST_UNKNOWN = 0, ST_TUNED, ST_NOT_TUNED, ST_REJECTED, ST_UNMAPPED };

typedef struct variant {
    double alpha, beta;
    int64_t calls;        /* cublasLtMatmul calls */
    int state;            /* ST_* of the lookup */
    int64_t applied;      /* heuristic calls answered with the tuned algo first */
    int64_t unfit;        /* ... that could not use it (workspace, alignment, reduction) */
    gt_cu_lt_algo algo;
} variant;

typedef struct slot {
    int used;
    int dev;
    uint64_t h;
    gt_cu_lt_tuple d;
    int nvar;
    int last;             /* the variant the last cublasLtMatmul used; -1 none */
    int64_t heur_calls;
    variant v[NVAR];
} slot;

static struct {
    pthread_once_t once;
    pthread_mutex_t mu;
    int active;           /* a db or a record file */
    int verbose;
    gt_db *db;
    char *record;
    char model_env[256];
    /* real functions */
    heur_fn heur;
    matmul_fn matmul;
    gt_cu_lt_api api;
    const gt_cu_drv *drv; /* NULL without a driver: no device model */
    char models[MAX_DEV][256];
    int model_state[MAX_DEV]; /* 0 unknown, 1 known, -1 failed */
    /* table */
    slot *t;
    size_t cap;
    size_t n;
    int written;
    /* counters */
    int64_t heur_calls, applied, not_tuned, rejected, unfit, unmapped, undescribed, full,
        variants_full;
} G = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

static __thread int t_busy;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gemmtune-preload: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- resolving --------------------------------------------------------------- */

static int find_lt(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *name = info->dlpi_name, *base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : name;
    if (base && !strncmp(base, "libcublasLt.so", 14)) {
        snprintf((char *)data, 4096, "%s", name);
        return 1;
    }
    return 0;
}

/* A handle on the libcublasLt that defines the real heuristic. */
static void *lt_handle(void)
{
    void *h = NULL;
    const char *env = getenv("GEMMTUNE_CUBLASLT");
    if (env && *env) {
        if (!(h = dlopen(env, RTLD_NOLOAD | RTLD_LAZY)))
            h = dlopen(env, RTLD_LAZY | RTLD_LOCAL);
        if (!h)
            logf_("GEMMTUNE_CUBLASLT=%s: %s", env, dlerror());
        return h;
    }
    void *sym = dlsym(RTLD_NEXT, "cublasLtMatmulAlgoGetHeuristic");
    Dl_info info;
    if (sym && dladdr(sym, &info) && info.dli_fname &&
        (h = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY))) {
        if (G.verbose >= 2)
            logf_("forwarding to %s (dlsym RTLD_NEXT)", info.dli_fname);
        return h;
    }
    /* Not in the global scope (dlopen'ed RTLD_LOCAL): search what is loaded. */
    char path[4096] = "";
    if (dl_iterate_phdr(find_lt, path) && path[0])
        h = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
    if (h && G.verbose >= 2)
        logf_("forwarding to %s (found among the loaded objects)", path);
    return h;
}

static void resolve(void)
{
    void *h = lt_handle();
    if (!h) {
        logf_("no libcublasLt found to forward to (set GEMMTUNE_CUBLASLT=path)");
        return;
    }
    /* The handle stays open for the process's lifetime: the library is in
     * use anyway, NOLOAD only took a reference. */
    *(void **)&G.heur = dlsym(h, "cublasLtMatmulAlgoGetHeuristic");
    *(void **)&G.matmul = dlsym(h, "cublasLtMatmul");
    gt_cu_lt_api_dlsym(h, &G.api);
    char err[256];
    if (!(G.drv = gt_cu_drv_get(err, sizeof err)) && G.verbose >= 2)
        logf_("no device model from the driver: %s", err);
}

static void write_record(void);

static void init(void)
{
    const char *v = getenv("GEMMTUNE_VERBOSE");
    G.verbose = v ? atoi(v) : 0;
    const char *m = getenv("GEMMTUNE_DEVICE_MODEL");
    if (m && *m)
        snprintf(G.model_env, sizeof G.model_env, "%s", m);
    resolve();
    const char *dbp = getenv("GEMMTUNE_DB"), *rec = getenv("GEMMTUNE_RECORD");
    if (dbp && *dbp) {
        char err[512];
        if (!(G.db = gt_db_open(dbp, err, sizeof err)))
            logf_("GEMMTUNE_DB: %s (passing everything through)", err);
        else if (G.verbose)
            logf_("%s: %zu tuned entries", dbp, gt_db_size(G.db));
    }
    if (rec && *rec)
        G.record = strdup(rec);
    if (!G.db && !G.record)
        return;
    if (!G.heur || !G.matmul || !G.api.layout_get || !G.api.desc_get || !G.api.pref_get ||
        !G.api.algo_init || !G.api.cfg_set || !G.api.algo_check) {
        logf_("cuBLASLt functions missing: passing everything through");
        return;
    }
    const char *cap = getenv("GEMMTUNE_MAX_GEMMS");
    G.cap = 4096;
    if (cap && atol(cap) > 0)
        G.cap = (size_t)atol(cap);
    size_t pow2 = 16;
    while (pow2 < G.cap * 2)
        pow2 *= 2;
    if (!(G.t = calloc(pow2, sizeof *G.t))) {
        logf_("out of memory for %zu GEMMs: passing everything through", G.cap);
        return;
    }
    G.cap = pow2;
    G.active = 1;
    atexit(write_record);
}

static void ensure_init(void)
{
    pthread_once(&G.once, init);
}

/* The model of the calling thread's current device; NULL when unknown. */
static const char *device_model(int *devp)
{
    CUdevice dev = 0;
    if (G.drv && G.drv->ctx_get_device(&dev) != CUDA_SUCCESS)
        dev = 0;
    *devp = dev;
    if (G.model_env[0])
        return G.model_env;
    if (dev < 0 || dev >= MAX_DEV || !G.drv)
        return NULL;
    pthread_mutex_lock(&G.mu);
    if (!G.model_state[dev]) {
        G.model_state[dev] = G.drv->device_get_name(G.models[dev], (int)sizeof G.models[dev], dev) ==
                                     CUDA_SUCCESS
                                 ? 1
                                 : -1;
    }
    const char *m = G.model_state[dev] == 1 ? G.models[dev] : NULL;
    pthread_mutex_unlock(&G.mu);
    return m;
}

/* The slot of (dev, d), inserted when new; NULL when the table is full.
 * Call with the mutex held. */
static slot *slot_of(int dev, const gt_cu_lt_tuple *d)
{
    uint64_t h = gt_fnv1a64(d, sizeof *d, gt_fnv1a64(&dev, sizeof dev, GT_FNV_SEED));
    size_t mask = G.cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        slot *s = &G.t[i];
        if (!s->used) {
            if (G.n * 2 >= G.cap) {
                G.full++;
                return NULL;
            }
            s->used = 1;
            s->dev = dev;
            s->h = h;
            s->d = *d;
            s->last = -1;
            G.n++;
            return s;
        }
        if (s->h == h && s->dev == dev && !memcmp(&s->d, d, sizeof *d))
            return s;
    }
}

/* The variant of (alpha, beta) in s, added when new; -1 when s is full. */
static int variant_of(slot *s, double alpha, double beta)
{
    for (int i = 0; i < s->nvar; i++)
        if (s->v[i].alpha == alpha && s->v[i].beta == beta)
            return i;
    if (s->nvar == NVAR) {
        G.variants_full++;
        return -1;
    }
    variant *v = &s->v[s->nvar];
    memset(v, 0, sizeof *v);
    v->alpha = alpha;
    v->beta = beta;
    return s->nvar++;
}

/* ---- the interposed functions ------------------------------------------------ */

/* 1 when the algo fits a matmul preference: its workspace within
 * MAX_WORKSPACE_BYTES, its alignment needs within MIN_ALIGNMENT_*_BYTES and
 * its split-K reduction inside REDUCTION_SCHEME_MASK; else 0 with the reason
 * in why. A NULL preference means cuBLASLt's defaults (no workspace). */
static int algo_fits(const gt_cu_lt_algo *a, cublasLtMatmulPreference_t pref, const char **why)
{
    uint64_t ws = 0, impl = ~(uint64_t)0;
    uint32_t mask = 0x7, al[4] = {256, 256, 256, 256}, search = 0;
    float waves = 0;
    if (pref) {
        size_t w = 0;
        const gt_cu_lt_api *api = &G.api;
        (void)api->pref_get(pref, CUBLASLT_MATMUL_PREF_SEARCH_MODE, &search, sizeof search, &w);
        (void)api->pref_get(pref, CUBLASLT_MATMUL_PREF_IMPL_MASK, &impl, sizeof impl, &w);
        (void)api->pref_get(pref, CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, &waves, sizeof waves, &w);
        static const cublasLtMatmulPreferenceAttributes_t attrs[4] = {
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
        (void)api->pref_get(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws, &w);
        (void)api->pref_get(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof mask,
                            &w);
        for (int i = 0; i < 4; i++)
            (void)api->pref_get(pref, attrs[i], &al[i], sizeof al[i], &w);
    }
    /* A caller that restricts the search (by algo id, by numerical
     * implementation, by waves) gets exactly what it asked for. */
    if (search != CUBLASLT_SEARCH_BEST_FIT || impl != ~(uint64_t)0 ||
        (waves > 0 && a->waves > waves)) {
        *why = "search restricted";
        return 0;
    }
    if (a->workspace > ws) {
        *why = "workspace";
        return 0;
    }
    for (int i = 0; i < 4; i++)
        if (a->align[i] > al[i]) {
            *why = "alignment";
            return 0;
        }
    if (a->splitk > 1 && !(a->reduction & mask)) {
        *why = "reduction scheme";
        return 0;
    }
    return 1;
}

static int same_algo(const cublasLtMatmulAlgo_t *a, const cublasLtMatmulAlgo_t *b)
{
    return !memcmp(a, b, sizeof *a);
}

/* Puts the tuned algo first in results[0..*ret), dropping its duplicate and,
 * when the array is full, the last entry. In place. */
static void put_first(const gt_cu_lt_algo *a, cublasLtMatmulHeuristicResult_t *res, int req,
                      int *ret)
{
    int n = *ret;
    for (int i = 0; i < n; i++)
        if (same_algo(&res[i].algo, &a->algo)) {
            memmove(&res[i], &res[i + 1], (size_t)(n - i - 1) * sizeof *res);
            n--;
            break;
        }
    if (n == req)
        n--;
    memmove(&res[1], &res[0], (size_t)n * sizeof *res);
    memset(&res[0], 0, sizeof res[0]);
    res[0].algo = a->algo;
    res[0].workspaceSize = a->workspace;
    res[0].state = CUBLAS_STATUS_SUCCESS;
    res[0].wavesCount = a->waves;
    *ret = n + 1;
}

EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t h, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
    cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
    cublasLtMatmulPreference_t pref, int req, cublasLtMatmulHeuristicResult_t results[],
    int *ret)
{
    ensure_init();
    if (!G.heur)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    cublasStatus_t st = G.heur(h, op, a, b, c, d, pref, req, results, ret);
    if (!G.active || t_busy || st != CUBLAS_STATUS_SUCCESS || req < 1 || !results || !ret)
        return st;
    t_busy = 1;
    const gt_cu_desc descs = {op, a, b, c, d};
    gt_cu_lt_tuple t;
    if (gt_cu_lt_describe(&G.api, &descs, &t) != 0) {
        __atomic_add_fetch(&G.undescribed, 1, __ATOMIC_RELAXED);
        goto out;
    }
    int dev;
    const char *model = G.db ? device_model(&dev) : NULL;
    if (!G.db)
        (void)device_model(&dev); /* the device only, for the record */
    pthread_mutex_lock(&G.mu);
    G.heur_calls++;
    slot *s = slot_of(dev, &t);
    int vi = -1;
    if (s) {
        s->heur_calls++;
        /* The scalars of the last cublasLtMatmul with this tuple, else the
         * usual 1/0 (the heuristic does not see alpha/beta). */
        vi = s->last >= 0 ? s->last : variant_of(s, 1.0, 0.0);
    }
    if (!s || vi < 0 || !G.db || !model) {
        pthread_mutex_unlock(&G.mu);
        goto out;
    }
    variant v = s->v[vi];
    pthread_mutex_unlock(&G.mu);

    if (v.state == ST_UNKNOWN) {
        /* First sight: map, look up, re-create and check (no lock held). */
        gt_problem p;
        char key[KEY_MAX], err[256];
        gt_cu_lt_cfg cfg;
        gt_cu_lt_types types = gt_cu_lt_tuple_types(&t);
        if (gt_cu_lt_to_problem(&t, v.alpha, v.beta, &p, err, sizeof err) != 0) {
            v.state = ST_UNMAPPED;
            if (G.verbose >= 2)
                logf_("not modelled: %s", err);
        } else {
            int n = gt_problem_key(&p, key, sizeof key);
            int rc = n > 0 && (size_t)n < sizeof key ? gt_db_cuda_cfg(G.db, key, model, &cfg)
                                                     : GT_DB_NOT_TUNED;
            if (rc == GT_DB_NOT_TUNED) {
                v.state = ST_NOT_TUNED;
            } else if (rc != GT_DB_OK ||
                       gt_cu_lt_algo_make(&G.api, h, &types, &cfg, &descs, &v.algo, err,
                                          sizeof err) != 0) {
                v.state = ST_REJECTED;
                if (G.verbose)
                    logf_("tuned config of %s refused: %s", key,
                          rc == GT_DB_OK          ? err
                          : rc == GT_DB_GENERATED ? "the winner is a generated kernel (libgemmtune's "
                                                    "gt_db_kernel_get runs it; cuBLASLt cannot)"
                                                  : "config does not decode");
            } else {
                v.state = ST_TUNED;
            }
        }
        pthread_mutex_lock(&G.mu);
        if (s->v[vi].state == ST_UNKNOWN) {
            s->v[vi].state = v.state;
            s->v[vi].algo = v.algo;
        }
        pthread_mutex_unlock(&G.mu);
    }
    const char *why = NULL;
    int fits = v.state == ST_TUNED && algo_fits(&v.algo, pref, &why);
    if (fits)
        put_first(&v.algo, results, req, ret);
    pthread_mutex_lock(&G.mu);
    switch (v.state) {
    case ST_TUNED:
        if (fits) {
            G.applied++;
            s->v[vi].applied++;
        } else {
            G.unfit++;
            s->v[vi].unfit++;
        }
        break;
    case ST_NOT_TUNED: G.not_tuned++; break;
    case ST_REJECTED: G.rejected++; break;
    default: G.unmapped++; break;
    }
    pthread_mutex_unlock(&G.mu);
out:
    t_busy = 0;
    return st;
}

EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t op,
                                     const void *alpha, const void *A, cublasLtMatrixLayout_t a,
                                     const void *B, cublasLtMatrixLayout_t b, const void *beta,
                                     const void *C, cublasLtMatrixLayout_t c, void *D,
                                     cublasLtMatrixLayout_t d, const cublasLtMatmulAlgo_t *algo,
                                     void *ws, size_t wsbytes, cudaStream_t stream)
{
    ensure_init();
    if (!G.matmul)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (G.active && !t_busy) {
        t_busy = 1;
        const gt_cu_desc descs = {op, a, b, c, d};
        gt_cu_lt_tuple t;
        if (gt_cu_lt_describe(&G.api, &descs, &t) == 0) {
            /* Device-side scalars cannot be read here: count them as 1/0. */
            double al = 1.0, be = 0.0;
            if (t.pointer_mode == GT_CU_POINTER_HOST) {
                al = gt_cu_scalar_get(t.scale, alpha);
                be = gt_cu_scalar_get(t.scale, beta);
            }
            int dev;
            (void)device_model(&dev);
            pthread_mutex_lock(&G.mu);
            slot *s = slot_of(dev, &t);
            int vi = s ? variant_of(s, al, be) : -1;
            if (vi >= 0) {
                s->v[vi].calls++;
                s->last = vi;
            }
            pthread_mutex_unlock(&G.mu);
        } else {
            __atomic_add_fetch(&G.undescribed, 1, __ATOMIC_RELAXED);
        }
        t_busy = 0;
    }
    return G.matmul(h, op, alpha, A, a, B, b, beta, C, c, D, d, algo, ws, wsbytes, stream);
}

/* ---- at exit ----------------------------------------------------------------- */

static const char *state_name(int s)
{
    switch (s) {
    case ST_TUNED: return "tuned";
    case ST_NOT_TUNED: return "not tuned";
    case ST_REJECTED: return "refused by cublasLtMatmulAlgoCheck";
    case ST_UNMAPPED: return "not modelled";
    default: return "not looked up";
    }
}

static void write_record(void)
{
    pthread_mutex_lock(&G.mu);
    if (G.written || !G.active) {
        pthread_mutex_unlock(&G.mu);
        return;
    }
    G.written = 1;
    FILE *f = NULL;
    char tmp[4200];
    if (G.record) {
        snprintf(tmp, sizeof tmp, "%s.tmp-%d", G.record, (int)getpid());
        if (!(f = fopen(tmp, "w")))
            logf_("GEMMTUNE_RECORD=%s: cannot write", G.record);
    }
    size_t lines = 0, unmodelled = 0;
    for (size_t i = 0; i < G.cap; i++) {
        slot *s = &G.t[i];
        if (!s->used)
            continue;
        int any = 0;
        for (int k = 0; k < s->nvar; k++)
            any |= s->v[k].calls > 0;
        /* A GEMM only the heuristic saw is written with 1/0 and its
         * heuristic calls. */
        int nv = any ? s->nvar : 1;
        for (int k = 0; k < nv; k++) {
            const variant *v = any ? &s->v[k] : NULL;
            if (v && v->calls == 0)
                continue;
            double al = v ? v->alpha : 1.0, be = v ? v->beta : 0.0;
            int64_t calls = v ? v->calls : s->heur_calls;
            gt_problem p;
            char err[256], line[1024], label[128];
            if (gt_cu_lt_to_problem(&s->d, al, be, &p, err, sizeof err) != 0) {
                unmodelled++;
                if (G.verbose)
                    logf_("GEMM not modelled, not recorded: %s", err);
                continue;
            }
            if (f) {
                gt_lib_record_line(&p, calls, line, sizeof line);
                fputs(line, f);
                lines++;
            }
            if (G.verbose >= 2) {
                gt_problem_label(&p, label, sizeof label);
                const variant *w = v ? v : (s->nvar ? &s->v[0] : NULL);
                logf_("dev %d %-28s alpha %g beta %g: %lld calls, %lld heuristic calls, %s, "
                      "tuned algo first %lld times%s",
                      s->dev, label, al, be, (long long)calls, (long long)s->heur_calls,
                      state_name(w ? w->state : ST_UNKNOWN), (long long)(w ? w->applied : 0),
                      w && w->unfit ? " (some calls' preference did not fit it)" : "");
            }
        }
    }
    if (f) {
        if (fclose(f) != 0 || rename(tmp, G.record) != 0)
            logf_("GEMMTUNE_RECORD=%s: write failed", G.record);
        else if (G.verbose)
            logf_("%zu GEMMs recorded to %s", lines, G.record);
    }
    if (G.verbose)
        logf_("heuristic calls %lld: tuned algo first %lld, not tuned %lld, refused by "
              "AlgoCheck %lld, preference did not fit %lld, not modelled %lld; "
              "undescribable %lld, table full %lld, unmodelled recorded GEMMs %zu",
              (long long)G.heur_calls, (long long)G.applied, (long long)G.not_tuned,
              (long long)G.rejected, (long long)G.unfit, (long long)G.unmapped,
              (long long)G.undescribed, (long long)(G.full + G.variants_full), unmodelled);
    pthread_mutex_unlock(&G.mu);
}

__attribute__((destructor)) static void fini(void)
{
    write_record();
}
