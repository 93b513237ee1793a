/* cpu_blas.c: the CPU backend's library baseline, OpenBLAS through its CBLAS
 * interface. A config {"lib":"openblas","threads":N} (gt_space_cpu_baseline)
 * builds into a gt_cpu_blas that runs the problem with cblas_sgemm (f32),
 * cblas_dgemm (f64) or cblas_sbgemm (bf16 A and B, f32 C and D) and is then
 * validated and timed exactly like a generated kernel (bk_cpu.c).
 *
 * OpenBLAS is opened at run time (dlopen), never linked: a worker without it
 * still starts, and only the baseline fails, naming the library and the
 * Debian package. GEMMTUNE_OPENBLAS names another build (a path or soname),
 * e.g. one with bf16 GEMMs; the tests point it at a file that does not exist
 * to play a worker without OpenBLAS.
 *
 * The mapping is exact or refused: a problem OpenBLAS cannot express (a type
 * it has no GEMM for, mixed input types, a bf16 C/D where sbgemm writes f32,
 * an epilogue, a size beyond its 32-bit integers) fails the build with the
 * reason, so nothing else is ever timed as "the baseline". */
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_bk_cpu.h"

/* CBLAS enum values (cblas.h); the header is not needed to call by pointer. */
enum { CB_COL_MAJOR = 102, CB_NO_TRANS = 111, CB_TRANS = 112 };

/* Debian's libopenblas0 uses 32-bit integers (the 64-bit one is
 * libopenblas64_.so.0, with suffixed symbols). */
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int,
                         const double *, int, double, double *, int);
typedef void (*sbgemm_fn)(int, int, int, int, int, int, float, const uint16_t *, int,
                          const uint16_t *, int, float, float *, int);
typedef void (*set_threads_fn)(int);
typedef char *(*get_config_fn)(void);

typedef enum blas_kind { BLAS_S, BLAS_D, BLAS_SB } blas_kind;

/* The library, opened once per process and never closed: its thread pool
 * outlives every call (closing it under parked threads would unmap their
 * code, as pin_openmp_runtime in bk_cpu.c avoids for OpenMP), and what it
 * allocates stays reachable from its globals, so LeakSanitizer has nothing
 * to report. */
static struct {
    pthread_mutex_t mu;
    int tried;
    void *dl;
    char name[256];
    char why[256]; /* when dl is NULL */
    sgemm_fn sgemm;
    dgemm_fn dgemm;
    sbgemm_fn sbgemm;
    set_threads_fn set_threads;
    int threads; /* last set; 0 = never */
} g_lib = {.mu = PTHREAD_MUTEX_INITIALIZER};

struct gt_cpu_blas {
    gt_problem p;
    blas_kind kind;
    int threads;
};

static int lib_open(char *err, size_t errlen)
{
    pthread_mutex_lock(&g_lib.mu);
    if (!g_lib.tried) {
        g_lib.tried = 1;
        const char *env = getenv("GEMMTUNE_OPENBLAS");
        const char *names[] = {"libopenblas.so.0", "libopenblas.so"};
        const char *one[] = {env};
        const char **try = env && env[0] ? one : names;
        size_t ntry = env && env[0] ? 1 : 2;
        char first_err[160] = "";
        for (size_t i = 0; i < ntry && !g_lib.dl; i++) {
            g_lib.dl = dlopen(try[i], RTLD_NOW | RTLD_LOCAL);
            if (g_lib.dl)
                snprintf(g_lib.name, sizeof g_lib.name, "%s", try[i]);
            else if (!first_err[0]) {
                const char *e = dlerror();
                snprintf(first_err, sizeof first_err, "%s", e ? e : "?");
            }
        }
        if (!g_lib.dl) {
            if (env && env[0])
                snprintf(g_lib.why, sizeof g_lib.why,
                         "cannot load libopenblas from GEMMTUNE_OPENBLAS=%.60s (%.120s)", env, first_err);
            else
                snprintf(g_lib.why, sizeof g_lib.why,
                         "libopenblas not found (libopenblas.so.0, libopenblas.so): install Debian's "
                         "libopenblas0 (apt-get install libopenblas0-pthread)");
        } else {
            g_lib.sgemm = (sgemm_fn)dlsym(g_lib.dl, "cblas_sgemm");
            g_lib.dgemm = (dgemm_fn)dlsym(g_lib.dl, "cblas_dgemm");
            g_lib.sbgemm = (sbgemm_fn)dlsym(g_lib.dl, "cblas_sbgemm");
            g_lib.set_threads = (set_threads_fn)dlsym(g_lib.dl, "openblas_set_num_threads");
            if (!g_lib.sgemm) {
                snprintf(g_lib.why, sizeof g_lib.why, "%.100s has no cblas_sgemm: not an OpenBLAS",
                         g_lib.name);
                dlclose(g_lib.dl); /* nothing of it was called: safe to unmap */
                g_lib.dl = NULL;
            }
        }
    }
    int ok = g_lib.dl != NULL;
    if (!ok)
        snprintf(err, errlen, "openblas baseline: %s", g_lib.why);
    pthread_mutex_unlock(&g_lib.mu);
    return ok ? 0 : -1;
}

int gt_cpu_blas_is_cfg(const cJSON *cfg)
{
    return cJSON_IsObject(cfg) && cJSON_GetObjectItemCaseSensitive(cfg, "lib") != NULL;
}

/* {"lib":"openblas","threads":N}: nothing else, N in 1..1024. */
static int parse_cfg(const cJSON *cfg, int *threads, char *err, size_t errlen)
{
    const cJSON *lib = cJSON_GetObjectItemCaseSensitive(cfg, "lib");
    if (!cJSON_IsString(lib) || strcmp(lib->valuestring, "openblas") != 0) {
        snprintf(err, errlen, "cpu backend: config lib must be \"openblas\"");
        return -1;
    }
    *threads = 1;
    for (const cJSON *it = cfg->child; it; it = it->next) {
        const char *k = it->string ? it->string : "?";
        if (!strcmp(k, "lib"))
            continue;
        if (strcmp(k, "threads") != 0) {
            snprintf(err, errlen, "cpu backend: unknown openblas config attribute '%s'", k);
            return -1;
        }
        double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
        if (!(d >= 1 && d <= 1024 && d == (int)d)) {
            snprintf(err, errlen, "cpu backend: openblas config threads must be an integer in 1..1024");
            return -1;
        }
        *threads = (int)d;
    }
    return 0;
}

/* Which CBLAS routine computes p exactly, or -1 with what is missing. */
static int pick_routine(const gt_problem *p, blas_kind *kind, char *err, size_t errlen)
{
    gt_dtype a = p->a_type, b = p->b_type, c = p->c_type, d = p->d_type;
    if (p->bias || (p->activation[0] && strcmp(p->activation, "none") != 0)) {
        snprintf(err, errlen, "openblas baseline: CBLAS GEMMs have no epilogue (bias=%d activation=%s)",
                 p->bias, p->activation);
        return -1;
    }
    if (a != b) {
        snprintf(err, errlen, "openblas baseline: mixed input types a=%s b=%s: CBLAS GEMMs take one",
                 gt_dtype_name(a), gt_dtype_name(b));
        return -1;
    }
    if (a == GT_DT_F32 || a == GT_DT_F64) {
        if (c != a || d != a) {
            snprintf(err, errlen, "openblas baseline: mixed types a/b=%s c=%s d=%s: cblas_%cgemm takes one",
                     gt_dtype_name(a), gt_dtype_name(c), gt_dtype_name(d), a == GT_DT_F32 ? 's' : 'd');
            return -1;
        }
        *kind = a == GT_DT_F32 ? BLAS_S : BLAS_D;
        if (*kind == BLAS_D && !g_lib.dgemm) {
            snprintf(err, errlen, "openblas baseline: %.100s has no cblas_dgemm", g_lib.name);
            return -1;
        }
        return 0;
    }
    if (a == GT_DT_BF16) {
        if (!g_lib.sbgemm) {
            snprintf(err, errlen,
                     "openblas baseline: %.80s has no bf16 GEMM (cblas_sbgemm absent: Debian's "
                     "libopenblas 0.3.21 is built without BUILD_BFLOAT16)",
                     g_lib.name);
            return -1;
        }
        if (c != GT_DT_F32 || d != GT_DT_F32) {
            snprintf(err, errlen,
                     "openblas baseline: cblas_sbgemm writes an f32 C; this problem has c=%s d=%s",
                     gt_dtype_name(c), gt_dtype_name(d));
            return -1;
        }
        *kind = BLAS_SB;
        return 0;
    }
    snprintf(err, errlen, "openblas baseline: OpenBLAS has no %s GEMM", gt_dtype_name(a));
    return -1;
}

int gt_cpu_blas_build(const gt_problem *p, const cJSON *cfg, gt_cpu_blas **out, char *err,
                      size_t errlen)
{
    *out = NULL;
    int threads;
    blas_kind kind;
    if (parse_cfg(cfg, &threads, err, errlen) != 0 || lib_open(err, errlen) != 0 ||
        pick_routine(p, &kind, err, errlen) != 0)
        return -1;
    const int64_t dims[] = {p->m, p->n, p->k, p->lda, p->ldb, p->ldc, p->ldd};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i] > INT_MAX) {
            snprintf(err, errlen, "openblas baseline: a size or leading dimension beyond %d "
                                  "(libopenblas0's integers are 32-bit)", INT_MAX);
            return -1;
        }
    gt_cpu_blas *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errlen, "cpu backend: out of memory");
        return -1;
    }
    b->p = *p;
    b->kind = kind;
    b->threads = threads;
    *out = b;
    return 0;
}

void gt_cpu_blas_free(gt_cpu_blas *b) { free(b); }

/* C's m x n block into D's, column by column (ldc and ldd may differ). */
static void copy_c(const gt_problem *p, const char *c, char *d, size_t es)
{
    for (int64_t j = 0; j < p->n; j++)
        memcpy(d + (size_t)(j * p->ldd) * es, c + (size_t)(j * p->ldc) * es, (size_t)p->m * es);
}

int gt_cpu_blas_run(gt_cpu_blas *b, const gt_cpu_args *g)
{
    const gt_problem *p = &b->p;
    if (g->m != p->m || g->n != p->n || g->k != p->k || g->batch != p->batch)
        return -1;
    /* One global setting in OpenBLAS: set it when another thread count ran
     * last, so every call runs on the threads its config says. Only the
     * bench thread calls here, one candidate at a time. */
    if (g_lib.set_threads && g_lib.threads != b->threads) {
        g_lib.set_threads(b->threads);
        g_lib.threads = b->threads;
    }
    int ta = p->trans_a == 'T' ? CB_TRANS : CB_NO_TRANS;
    int tb = p->trans_b == 'T' ? CB_TRANS : CB_NO_TRANS;
    size_t ea = gt_dtype_size(p->a_type), ed = gt_dtype_size(p->d_type);
    int m = (int)p->m, n = (int)p->n, k = (int)p->k;
    int lda = (int)p->lda, ldb = (int)p->ldb, ldd = (int)p->ldd;
    /* BLAS updates C in place: D starts as a copy of C when beta reads it
     * and D is another buffer (the copy is part of the timed call, as it is
     * for an application that keeps C). With beta == 0 C is never read and
     * OpenBLAS overwrites D. */
    int need_copy = g->beta != 0.0 && g->c && g->c != g->d;
    for (int64_t bi = 0; bi < g->batch; bi++) {
        const char *a = (const char *)g->a + (size_t)(bi * g->stride_a) * ea;
        const char *bb = (const char *)g->b + (size_t)(bi * g->stride_b) * ea;
        char *d = (char *)g->d + (size_t)(bi * g->stride_d) * ed;
        if (need_copy)
            copy_c(p, (const char *)g->c + (size_t)(bi * g->stride_c) * ed, d, ed);
        switch (b->kind) {
        case BLAS_S:
            g_lib.sgemm(CB_COL_MAJOR, ta, tb, m, n, k, (float)g->alpha, (const float *)a, lda,
                        (const float *)bb, ldb, (float)g->beta, (float *)d, ldd);
            break;
        case BLAS_D:
            g_lib.dgemm(CB_COL_MAJOR, ta, tb, m, n, k, g->alpha, (const double *)a, lda,
                        (const double *)bb, ldb, g->beta, (double *)d, ldd);
            break;
        case BLAS_SB:
            g_lib.sbgemm(CB_COL_MAJOR, ta, tb, m, n, k, (float)g->alpha, (const uint16_t *)a, lda,
                         (const uint16_t *)bb, ldb, (float)g->beta, (float *)d, ldd);
            break;
        }
    }
    return 0;
}
