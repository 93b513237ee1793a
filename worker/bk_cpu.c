/* bk_cpu.c: the CPU backend (gt_bk_cpu): describes the host, prepares a
 * problem's inputs and double-precision reference, builds candidates by
 * generating, compiling (cached) and loading a packed GEMM kernel per config,
 * validates them against the reference with a NaN-poisoned output and times
 * them over rotating input sets. Kernel source: cpu_codegen.c; compile
 * cache: cpu_cache.c; host data and reference: cpu_data.c. The baseline,
 * OpenBLAS ({"lib":"openblas"}, cpu_blas.c), is a candidate like the others:
 * the same validation and the same timing loop, only its call differs. */
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "gt_backend.h"
#include "gt_bk_cpu.h"
#include "gt_caps.h"

#define MIB ((int64_t)1 << 20)
#define ROT_MAX_BYTES ((int64_t)1 << 30) /* cap of all rotating sets together */
#define ROT_MAX_SETS 64
/* Reference work in multiply-adds. Beyond it the reference covers a sample
 * of D's columns (always the first and the last); NaNs are still looked for
 * in all of D. 2^28 double MACs take well under a second. */
#define REF_MAX_MACS ((int64_t)1 << 28)

struct gt_bk_ctx {
    gt_cpu_tool tool;
    int ncpu;
    uint64_t seed_counter;
};

/* One copy of the operands. Set 0 is the validation set. */
typedef struct cpu_set {
    void *a, *b, *c, *d;
} cpu_set;

enum { OP_A, OP_B, OP_C, OP_D };

struct gt_bk_prob {
    gt_bk_ctx *ctx;
    gt_problem p;
    int64_t ext[4];     /* elements spanned by A, B, C, D (C: 0 when beta == 0) */
    size_t bytes[4];
    cpu_set *sets;
    int nsets;
    int64_t sets_target; /* rotating bytes the sets were sized for */
    int64_t *cols;       /* reference columns, as bi * n + j */
    int64_t ncols;
    double *ref;         /* ncols x m */
};

struct gt_bk_cand {
    gt_bk_prob *pp;
    void *dl;
    gt_cpu_gemm_fn gemm; /* a generated kernel, or */
    gt_cpu_blas *blas;   /* the library baseline */
    void *ws;
    size_t ws_bytes;
};

/* One call of candidate c: the kernel or the library, same arguments. */
static inline int cand_call(const gt_bk_cand *c, const gt_cpu_args *a)
{
    return c->blas ? gt_cpu_blas_run(c->blas, a) : c->gemm(a);
}

static void *alloc64(size_t bytes)
{
    /* aligned_alloc wants a non-zero multiple of the alignment. */
    return aligned_alloc(64, bytes ? (bytes + 63) / 64 * 64 : 64);
}

/* ---- device ---- */

static void cpuinfo_field(const char *key, char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[8192];
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) == 0 && (line[kl] == ' ' || line[kl] == '\t' || line[kl] == ':')) {
            char *v = strchr(line, ':');
            if (!v)
                continue;
            v++;
            while (*v == ' ' || *v == '\t')
                v++;
            v[strcspn(v, "\n")] = '\0';
            snprintf(out, len, "%s", v);
            break;
        }
    }
    fclose(f);
}

static int has_word(const char *list, const char *w)
{
    size_t l = strlen(w);
    for (const char *p = list; (p = strstr(p, w)) != NULL; p += l)
        if ((p == list || p[-1] == ' ') && (p[l] == ' ' || p[l] == '\0'))
            return 1;
    return 0;
}

static int cpu_open(int index, gt_bk_ctx **out, gt_bk_device *dev, char *err, size_t errlen)
{
    *out = NULL;
    if (index != 0) {
        snprintf(err, errlen, "cpu backend: device %d does not exist (the host is device 0)",
                 index);
        return -1;
    }
    gt_bk_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        snprintf(err, errlen, "cpu backend: out of memory");
        return -1;
    }
    if (gt_cpu_tool_init(&ctx->tool, err, errlen) != 0)
        goto fail;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    ctx->ncpu = ncpu > 0 ? (int)ncpu : 1;

    memset(dev, 0, sizeof *dev);
    snprintf(dev->backend, sizeof dev->backend, "cpu");
    dev->index = 0;
    struct utsname u;
    if (uname(&u) != 0)
        snprintf(u.machine, sizeof u.machine, "unknown");
    char model[256], flags[8192];
    cpuinfo_field("model name", model, sizeof model);
    if (!model[0])
        snprintf(model, sizeof model, "%s", u.machine);
    snprintf(dev->model, sizeof dev->model, "%.127s", model);
    /* The best vector ISA: what -march=native will use. */
    const char *isa = "";
    cpuinfo_field("flags", flags, sizeof flags);
    if (flags[0]) {
        isa = has_word(flags, "avx512f") ? "-avx512" : has_word(flags, "avx2") ? "-avx2" : "";
    } else {
        cpuinfo_field("Features", flags, sizeof flags);
        isa = has_word(flags, "sve") ? "-sve" : has_word(flags, "asimd") ? "-neon" : "";
    }
    snprintf(dev->arch, sizeof dev->arch, "%.48s%s", u.machine, isa);
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
    dev->mem_bytes = pages > 0 && psz > 0 ? (int64_t)pages * psz : 0;
    dev->units = ctx->ncpu;
    snprintf(dev->driver, sizeof dev->driver, "%.63s", ctx->tool.version);
    ctx->seed_counter = (uint64_t)getpid() << 32;
    *out = ctx;
    return 0;
fail:
    free(ctx);
    return -1;
}

static void cpu_close(gt_bk_ctx *ctx) { free(ctx); }

/* ---- problem ---- */

static void free_sets(gt_bk_prob *pp, int from)
{
    for (int i = from; i < pp->nsets; i++) {
        free(pp->sets[i].a);
        free(pp->sets[i].b);
        free(pp->sets[i].c);
        free(pp->sets[i].d);
        memset(&pp->sets[i], 0, sizeof pp->sets[i]);
    }
    if (pp->nsets > from)
        pp->nsets = from;
}

static void cpu_unprepare(gt_bk_prob *pp)
{
    if (!pp)
        return;
    free_sets(pp, 0);
    free(pp->sets);
    free(pp->cols);
    free(pp->ref);
    free(pp);
}

static int alloc_set(gt_bk_prob *pp, cpu_set *s, char *err, size_t errlen)
{
    void **bufs[4] = {&s->a, &s->b, &s->c, &s->d};
    for (int i = 0; i < 4; i++) {
        if (!pp->bytes[i])
            continue;
        if (!(*bufs[i] = alloc64(pp->bytes[i]))) {
            snprintf(err, errlen, "cpu backend: out of memory allocating %zu bytes of %c",
                     pp->bytes[i], "ABCD"[i]);
            return -1;
        }
    }
    return 0;
}

/* Columns of D the reference covers: all of them when affordable, else an
 * evenly spread random sample that always has the first and the last. */
static int pick_columns(gt_bk_prob *pp, uint64_t *rs)
{
    const gt_problem *p = &pp->p;
    int64_t total = p->batch * p->n, per = p->m * p->k;
    int64_t want = per > 0 ? REF_MAX_MACS / per : total;
    if (want < 4)
        want = 4;
    if (want > total)
        want = total;
    pp->cols = malloc((size_t)want * sizeof *pp->cols);
    if (!pp->cols)
        return -1;
    for (int64_t t = 0; t < want; t++) {
        int64_t lo = t * total / want, hi = (t + 1) * total / want; /* stratum [lo, hi) */
        *rs = *rs * 6364136223846793005ULL + 1442695040888963407ULL; /* 64-bit LCG */
        pp->cols[t] = lo + (int64_t)((*rs >> 33) % (uint64_t)(hi - lo));
    }
    pp->cols[0] = 0;
    pp->cols[want - 1] = total - 1;
    pp->ncols = want;
    return 0;
}

static int cpu_prepare(gt_bk_ctx *ctx, const gt_problem *p, gt_bk_prob **out, char *err,
                       size_t errlen)
{
    char perr[200];
    double *tmp = NULL, *bcol = NULL;
    *out = NULL;
    if (gt_problem_check(p, perr, sizeof perr) != 0) {
        snprintf(err, errlen, "cpu backend: %s", perr);
        return -1;
    }
    if (gt_caps_check("cpu", p, err, errlen) != 0)
        return -1;
    gt_bk_prob *pp = calloc(1, sizeof *pp);
    if (!pp)
        goto oom;
    pp->ctx = ctx;
    pp->p = *p;
    int ta = p->trans_a == 'T', tb = p->trans_b == 'T';
    pp->ext[OP_A] = gt_cpu_extent(ta ? p->k : p->m, ta ? p->m : p->k, p->lda, p->batch, p->stride_a);
    pp->ext[OP_B] = gt_cpu_extent(tb ? p->n : p->k, tb ? p->k : p->n, p->ldb, p->batch, p->stride_b);
    pp->ext[OP_C] = p->beta != 0.0 ? gt_cpu_extent(p->m, p->n, p->ldc, p->batch, p->stride_c) : 0;
    pp->ext[OP_D] = gt_cpu_extent(p->m, p->n, p->ldd, p->batch, p->stride_d);
    gt_dtype types[4] = {p->a_type, p->b_type, p->c_type, p->d_type};
    for (int i = 0; i < 4; i++)
        pp->bytes[i] = (size_t)pp->ext[i] * gt_dtype_size(types[i]);
    pp->sets = calloc(ROT_MAX_SETS, sizeof *pp->sets);
    if (!pp->sets)
        goto oom;
    pp->nsets = 1;
    pp->sets_target = -1;
    if (alloc_set(pp, &pp->sets[0], err, errlen) != 0)
        goto fail;

    /* Fresh inputs for every prepare: a kernel cannot pass by matching one
     * fixed data set. */
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        ts = (struct timespec){0}; /* pid and counter still vary the seed */
    uint64_t rs = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ++ctx->seed_counter;
    cpu_set *v = &pp->sets[0];
    gt_cpu_fill_random(v->a, p->a_type, pp->ext[OP_A], &rs);
    gt_cpu_fill_random(v->b, p->b_type, pp->ext[OP_B], &rs);
    if (v->c)
        gt_cpu_fill_random(v->c, p->c_type, pp->ext[OP_C], &rs);
    if (pick_columns(pp, &rs) != 0)
        goto oom;
    pp->ref = malloc((size_t)pp->ncols * (size_t)p->m * sizeof *pp->ref);
    tmp = malloc((size_t)(p->m > p->k ? p->m : p->k) * sizeof *tmp);
    bcol = malloc((size_t)p->k * sizeof *bcol);
    if (!pp->ref || !tmp || !bcol)
        goto oom;
    for (int64_t c = 0; c < pp->ncols; c++) {
        int64_t bi = pp->cols[c] / p->n, j = pp->cols[c] % p->n;
        if (gt_cpu_ref_column(p, v->a, v->b, v->c, bi, j, pp->ref + c * p->m, tmp, bcol) != 0) {
            snprintf(err, errlen, "cpu backend: reference failed");
            goto fail;
        }
    }
    free(tmp);
    free(bcol);
    *out = pp;
    return 0;
oom:
    snprintf(err, errlen, "cpu backend: out of memory preparing the problem");
fail:
    free(tmp);
    free(bcol);
    cpu_unprepare(pp);
    return -1;
}

/* Sizes the rotating sets so together they exceed target bytes (so every
 * timed call reads its inputs from memory, not from a warm cache), within
 * ROT_MAX_SETS and ROT_MAX_BYTES. Copies of set 0, allocated and touched
 * here, outside any timed region. */
static int ensure_sets(gt_bk_prob *pp, int64_t target, char *err, size_t errlen)
{
    if (pp->sets_target == target)
        return 0;
    free_sets(pp, 1);
    pp->sets_target = -1;
    int64_t set_bytes = 0;
    for (int i = 0; i < 4; i++)
        set_bytes += (int64_t)pp->bytes[i];
    int64_t n = target / set_bytes + 1;
    if (n > ROT_MAX_SETS)
        n = ROT_MAX_SETS;
    if (n * set_bytes > ROT_MAX_BYTES)
        n = ROT_MAX_BYTES / set_bytes;
    if (n < 1)
        n = 1;
    for (int i = 1; i < n; i++) {
        cpu_set *s = &pp->sets[i];
        if (alloc_set(pp, s, err, errlen) != 0) {
            pp->nsets = i + 1;
            free_sets(pp, 1);
            return -1;
        }
        pp->nsets = i + 1;
        memcpy(s->a, pp->sets[0].a, pp->bytes[OP_A]);
        memcpy(s->b, pp->sets[0].b, pp->bytes[OP_B]);
        if (s->c)
            memcpy(s->c, pp->sets[0].c, pp->bytes[OP_C]);
        memset(s->d, 0, pp->bytes[OP_D]);
    }
    pp->sets_target = target;
    return 0;
}

/* ---- candidates ---- */

static void cpu_release(gt_bk_cand *c)
{
    if (!c)
        return;
    if (c->dl)
        dlclose(c->dl);
    gt_cpu_blas_free(c->blas);
    free(c->ws);
    free(c);
}

/* Kernels with threads > 1 pull in the compiler's OpenMP runtime, whose
 * thread pool outlives every parallel region. When the last kernel using it
 * is dlclosed the runtime would be unmapped under its idle threads: pin it
 * (RTLD_NODELETE on the already loaded copy; RTLD_NOLOAD loads nothing). */
static void pin_openmp_runtime(void)
{
    static const char *const names[] = {"libgomp.so.1", "libomp.so", "libomp.so.5", "libiomp5.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
        if (h)
            dlclose(h); /* drops our reference; NODELETE keeps it mapped */
    }
}

static int cpu_build(gt_bk_prob *pp, const cJSON *cfg, gt_bk_cand **out, char *err, size_t errlen)
{
    gt_cpu_cfg k;
    gt_str src;
    gt_str_init(&src);
    *out = NULL;
    gt_bk_cand *c = NULL;
    if (gt_cpu_blas_is_cfg(cfg)) {
        if (!(c = calloc(1, sizeof *c))) {
            snprintf(err, errlen, "cpu backend: out of memory");
            return -1;
        }
        c->pp = pp;
        if (gt_cpu_blas_build(&pp->p, cfg, &c->blas, err, errlen) != 0) {
            free(c);
            return -1;
        }
        *out = c;
        return 0;
    }
    if (gt_cpu_cfg_parse(cfg, &k, err, errlen) != 0)
        return -1;
    if (gt_cpu_codegen(&k, &pp->p, &src, err, errlen) != 0)
        goto fail;
    c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "cpu backend: out of memory");
        goto fail;
    }
    c->pp = pp;
    if (gt_cpu_cache_load(&pp->ctx->tool, src.s, src.len, &c->dl, err, errlen) != 0)
        goto fail;
    pin_openmp_runtime();
    const int *abi = dlsym(c->dl, "gt_cpu_abi");
    gt_cpu_ws_fn ws_fn = (gt_cpu_ws_fn)dlsym(c->dl, "gt_cpu_ws_bytes");
    c->gemm = (gt_cpu_gemm_fn)dlsym(c->dl, "gt_cpu_gemm");
    if (!abi || !ws_fn || !c->gemm || *abi != GT_CPU_ABI) {
        snprintf(err, errlen, "cpu backend: kernel object lacks the ABI %d entry points",
                 GT_CPU_ABI);
        goto fail;
    }
    c->ws_bytes = ws_fn(pp->p.m, pp->p.n, pp->p.k);
    if (!(c->ws = alloc64(c->ws_bytes))) {
        snprintf(err, errlen, "cpu backend: out of memory for a %zu-byte workspace", c->ws_bytes);
        goto fail;
    }
    /* Touch it now: page faults belong to neither validation nor timing. */
    memset(c->ws, 0, c->ws_bytes);
    gt_str_free(&src);
    *out = c;
    return 0;
fail:
    gt_str_free(&src);
    cpu_release(c);
    return -1;
}

static gt_cpu_args make_args(const gt_bk_prob *pp, const gt_bk_cand *c, const cpu_set *s)
{
    const gt_problem *p = &pp->p;
    return (gt_cpu_args){
        .abi = GT_CPU_ABI, .m = p->m, .n = p->n, .k = p->k, .batch = p->batch,
        .lda = p->lda, .ldb = p->ldb, .ldc = p->ldc, .ldd = p->ldd,
        .stride_a = p->stride_a, .stride_b = p->stride_b, .stride_c = p->stride_c,
        .stride_d = p->stride_d, .alpha = p->alpha, .beta = p->beta,
        .a = s->a, .b = s->b, .c = s->c, .d = s->d,
        .ws = c->ws, .ws_bytes = (int64_t)c->ws_bytes,
    };
}

/* Whether D element e lies inside some batch's m x n block. */
static int in_block(const gt_problem *p, int64_t e)
{
    int64_t bi = p->batch > 1 && p->stride_d > 0 ? e / p->stride_d : 0;
    if (bi >= p->batch)
        return 0;
    int64_t r = e - bi * p->stride_d;
    return r / p->ldd < p->n && r % p->ldd < p->m;
}

static int cpu_validate(gt_bk_prob *pp, gt_bk_cand *c, double *rel_err, char *err, size_t errlen)
{
    const gt_problem *p = &pp->p;
    cpu_set *v = &pp->sets[0];
    gt_cpu_poison(v->d, p->d_type, pp->ext[OP_D]);
    gt_cpu_args a = make_args(pp, c, v);
    int rc = cand_call(c, &a);
    if (rc != 0) {
        snprintf(err, errlen, "cpu backend: kernel rejected its arguments (%d)", rc);
        return -1;
    }
    /* Every element of D must be written (no poison left, no NaN), and
     * nothing between the blocks (ld padding, batch gaps) touched. */
    int nan = 0, stray = 0;
    for (int64_t e = 0; e < pp->ext[OP_D] && !stray; e++) {
        if (in_block(p, e))
            nan |= isnan(gt_cpu_get(v->d, p->d_type, e));
        else
            stray |= !gt_cpu_is_poison(v->d, p->d_type, e);
    }
    double e2 = 0, r2 = 0;
    for (int64_t ci = 0; ci < pp->ncols; ci++) {
        int64_t bi = pp->cols[ci] / p->n, j = pp->cols[ci] % p->n;
        const double *ref = pp->ref + ci * p->m;
        int64_t base = bi * p->stride_d + j * p->ldd;
        for (int64_t i = 0; i < p->m; i++) {
            double o = gt_cpu_get(v->d, p->d_type, base + i), d = o - ref[i];
            e2 += d * d;
            r2 += ref[i] * ref[i];
        }
    }
    if (nan)
        *rel_err = NAN;
    else if (stray)
        *rel_err = INFINITY;
    else
        *rel_err = r2 > 0 ? sqrt(e2 / r2) : sqrt(e2);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Linear-interpolated quantile of sorted v. */
static double quantile(const double *v, int n, double q)
{
    double pos = q * (n - 1);
    int i = (int)pos;
    if (i >= n - 1)
        return v[n - 1];
    return v[i] + (pos - i) * (v[i + 1] - v[i]);
}

static int cpu_time(gt_bk_prob *pp, gt_bk_cand *c, const gt_timing_opts *o, gt_timing *t,
                    char *err, size_t errlen)
{
    double min_ms = o && o->min_time_ms > 0 ? o->min_time_ms : 1.0;
    int warmup = o && o->warmup > 0 ? o->warmup : 2;
    int repeats = o && o->repeats > 0 ? o->repeats : 5;
    if (repeats > 10000)
        repeats = 10000;
    int64_t target;
    if (o && o->rotating_bytes > 0) {
        target = o->rotating_bytes;
    } else if (pp->p.rotating_mb > 0) {
        target = pp->p.rotating_mb * MIB;
    } else {
        long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
        target = llc > 0 ? (int64_t)llc : 32 * MIB;
    }
    if (ensure_sets(pp, target, err, errlen) != 0)
        return -1;
    gt_cpu_args args[ROT_MAX_SETS];
    for (int i = 0; i < pp->nsets; i++)
        args[i] = make_args(pp, c, &pp->sets[i]);
    double *rep = malloc((size_t)repeats * sizeof *rep);
    if (!rep) {
        snprintf(err, errlen, "cpu backend: out of memory");
        return -1;
    }
    int next = 0, bad = 0;
#define CALL()                                                                                     \
    do {                                                                                           \
        bad |= cand_call(c, &args[next]);                                                          \
        next = next + 1 == pp->nsets ? 0 : next + 1;                                               \
    } while (0)
    for (int i = 0; i < warmup; i++)
        CALL();
    /* Calibrate: enough calls per repeat to last min_ms. */
    double t0 = gt_mono_ms();
    CALL();
    double one = gt_mono_ms() - t0;
    if (o && o->prune_above_us > 0 && one * 1000.0 > o->prune_above_us && !bad) {
        /* the screen's early exit: far slower than the job's best already */
        free(rep);
        memset(t, 0, sizeof *t);
        t->median_us = t->min_us = t->max_us = one * 1000.0;
        t->iters = 1;
        t->repeats = 1;
        t->pruned = 1;
        return 0;
    }
    int64_t iters = one > 0 ? (int64_t)ceil(min_ms / one) : 1000;
    if (iters < 1)
        iters = 1;
    if (iters > 10000000)
        iters = 10000000;
    for (int r = 0; r < repeats; r++) {
        double s = gt_mono_ms();
        for (int64_t i = 0; i < iters; i++)
            CALL();
        rep[r] = (gt_mono_ms() - s) * 1000.0 / (double)iters;
    }
#undef CALL
    if (bad) {
        free(rep);
        snprintf(err, errlen, "cpu backend: kernel rejected its arguments while timing");
        return -1;
    }
    qsort(rep, (size_t)repeats, sizeof *rep, cmp_double);
    memset(t, 0, sizeof *t);
    t->median_us = quantile(rep, repeats, 0.5);
    t->min_us = rep[0];
    t->max_us = rep[repeats - 1];
    t->spread = t->median_us > 0
                    ? (quantile(rep, repeats, 0.75) - quantile(rep, repeats, 0.25)) / t->median_us
                    : 0;
    t->iters = (int)iters;
    t->repeats = repeats;
    free(rep);
    return 0;
}

const gt_backend gt_bk_cpu = {
    .name = "cpu",
    .open = cpu_open,
    .close = cpu_close,
    .enumerate = NULL, /* the coordinator builds the CPU space (gt_space_cpu) */
    .prepare = cpu_prepare,
    .unprepare = cpu_unprepare,
    .build = cpu_build,
    .release = cpu_release,
    .validate = cpu_validate,
    .time = cpu_time,
};
