/* gen_export.c: a generated kernel as a self-contained download (see
 * gen_export.h): the family dispatcher, the "gemv" family's filler, and the
 * JSON and header renderings. Pure host C; no gemmtune utility library
 * either (libgemmtune compiles this file with only common/problem.c), so
 * the small text builder below is local.
 *
 * The source is the template with the config's definitions written in as
 * #defines, exactly the values gt_gen_defines gives the worker's -D
 * options, so NVRTC or nvcc compile it without gemmtune. The argument
 * values (sizes, strides, kper, alpha, beta) and the geometry come from the
 * functions the worker launches with (gt_gen_geometry and gen_run.c's
 * argument struct), never from a second copy of their rules. */
#include "gen_export.h"
#include "src_common.h"
#include "gen_mma.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The exported layout is gt_gen_args' (gen_run.c passes that struct to the
 * templates' gt_gemv_args and gt_mma_args): 21 members of 8 bytes in this
 * order, and for an fp8 gemv kernel 2 more (scale_a, scale_b). */
_Static_assert(sizeof(gt_gen_args) == 23 * 8, "gt_gen_args is no longer 23 x 8 bytes");
_Static_assert(offsetof(gt_gen_args, m) == 7 * 8 && offsetof(gt_gen_args, kper) == 18 * 8 &&
                   offsetof(gt_gen_args, beta) == 20 * 8 && offsetof(gt_gen_args, scale_b) == 22 * 8,
               "gt_gen_args members moved: update gen_args()");

/* ---- a growing string (NULL after any failure) ------------------------------------ */

typedef struct sbuf {
    char *s;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *t, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            free(b->s);
            memset(b, 0, sizeof *b);
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->len, t, n);
    b->len += n;
    b->s[b->len] = 0;
}

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Comment text: a "*" followed by "/" would end the block early. */
static void sb_comment(sbuf *b, const char *t)
{
    for (; *t; t++) {
        sb_put(b, t, 1);
        if (t[0] == '*' && t[1] == '/')
            sb_put(b, " ", 1);
    }
}

/* ---- the "gemv" family ------------------------------------------------------------- */

/* The rules of gt_gen_check without which the kernel computes a wrong
 * result or fails to launch (the others only decide what is worth timing,
 * and depend on the SM count): a config measured valid passes them all, a
 * hand-written one is refused here rather than exported broken. */
static int gemv_runnable(const gt_problem *p, const gt_gen_cfg *c, const gt_gen_geom *g, char *why,
                         size_t len)
{
    int64_t batch = p->batch > 0 ? p->batch : 1;
    if (gt_gen_check_shape(c, why, len) || gt_gen_check_vec(p, c, why, len))
        return -1;
    if (c->warps * 32 > 1024)
        snprintf(why, len, "threads: %d warps > 1024 threads per block", c->warps);
    else if (p->lda % c->vec || p->ldb % c->vec ||
             (batch > 1 && (p->stride_a % c->vec || p->stride_b % c->vec)))
        snprintf(why, len, "alignment: lda=%lld, ldb=%lld (or the batch strides) not multiples of "
                           "vec=%d", (long long)p->lda, (long long)p->ldb, c->vec);
    else if ((long long)batch * c->splitk > 65535)
        snprintf(why, len, "grid z = batch x splitk = %lld > 65535", (long long)batch * c->splitk);
    else if (g->smem_bytes > 48 * 1024)
        snprintf(why, len, "%zu bytes of static shared memory > 48 KiB", g->smem_bytes);
    else
        return 0;
    return -1;
}

/* The template's argument struct for p, in gt_gen_args' order: both
 * families declare the same 21 members (gt_gemv_args, gt_mma_args);
 * kper_doc says what a split-K slice is a multiple of. */
static void gen_args(gt_gen_kernel *k, const gt_problem *p, const gt_gen_geom *g,
                     const char *args_struct, const char *kper_doc)
{
    int batched = p->batch > 1;
    const gt_gen_arg a[] = {
        {"a", "const void *", GT_GEN_ARG_PTR, 0, 0, "A, stored k x m (column-major, op(A) = A^T), leading dimension lda"},
        {"b", "const void *", GT_GEN_ARG_PTR, 0, 0, "B, stored k x n, leading dimension ldb"},
        {"c", "const void *", GT_GEN_ARG_PTR, 0, 0, "C, m x n, leading dimension ldc; read only when beta != 0"},
        {"bias", "const void *", GT_GEN_ARG_PTR, 0, 0, "the bias vector (m elements) when the epilogue has one, else NULL"},
        {"d", "void *", GT_GEN_ARG_PTR, 0, 0, "D, m x n, leading dimension ldd"},
        {"ws", "float *", GT_GEN_ARG_PTR, 0, 0, "the split-K workspace (buffer ws), NULL without split-K"},
        {"cnt", "unsigned *", GT_GEN_ARG_PTR, 0, 0, "the split-K tile counters (buffer cnt), NULL unless reduction is atomic"},
        {"m", "long long", GT_GEN_ARG_I64, p->m, 0, "rows of D"},
        {"n", "long long", GT_GEN_ARG_I64, p->n, 0, "columns of D"},
        {"k", "long long", GT_GEN_ARG_I64, p->k, 0, "the reduction length"},
        {"lda", "long long", GT_GEN_ARG_I64, p->lda, 0, "leading dimension of A"},
        {"ldb", "long long", GT_GEN_ARG_I64, p->ldb, 0, "leading dimension of B"},
        {"ldc", "long long", GT_GEN_ARG_I64, p->ldc, 0, "leading dimension of C"},
        {"ldd", "long long", GT_GEN_ARG_I64, p->ldd, 0, "leading dimension of D"},
        {"sa", "long long", GT_GEN_ARG_I64, batched ? p->stride_a : 0, 0, "batch stride of A in elements (0: one batch)"},
        {"sb", "long long", GT_GEN_ARG_I64, batched ? p->stride_b : 0, 0, "batch stride of B"},
        {"sc", "long long", GT_GEN_ARG_I64, batched ? p->stride_c : 0, 0, "batch stride of C"},
        {"sd", "long long", GT_GEN_ARG_I64, batched ? p->stride_d : 0, 0, "batch stride of D"},
        {"kper", "long long", GT_GEN_ARG_I64, g->kper, 0, kper_doc},
        {"alpha", "double", GT_GEN_ARG_F64, 0, p->alpha, "alpha"},
        {"beta", "double", GT_GEN_ARG_F64, 0, p->beta, "beta"},
        /* fp8 inputs (the gemv template declares them then only) */
        {"scale_a", "const float *", GT_GEN_ARG_PTR, 0, 0, "A's scale: a device f32 (cuBLASLt's A scale pointer); D = alpha x scale_a x scale_b x A.B + ..."},
        {"scale_b", "const float *", GT_GEN_ARG_PTR, 0, 0, "B's scale: a device f32 (cuBLASLt's B scale pointer)"},
    };
    k->args_struct = args_struct;
    k->nargs = (int)(sizeof a / sizeof a[0]) - (gt_gen_elem_size(p) == 1 ? 0 : 2);
    memcpy(k->args, a, (size_t)k->nargs * sizeof a[0]);
    k->args_bytes = 8 * (size_t)k->nargs;
}

/* The workspace of gen_run.c's workspace(): "atomic" zeroes its f32 sums and
 * tile counters once and every launch leaves them zero; "twopass" slices are
 * written whole by the main kernel before the second pass reads them. */
static void gen_bufs(gt_gen_kernel *k, int splitk, int reduction, const gt_gen_geom *g)
{
    if (splitk <= 1)
        return;
    if (reduction == GT_GEN_RED_ATOMIC) {
        size_t cnt_off = (g->ws_bytes + GT_GEN_WS_ALIGN - 1) / GT_GEN_WS_ALIGN * GT_GEN_WS_ALIGN;
        k->bufs[0] = (gt_gen_buf){"ws", 0, g->ws_bytes, 1,
                                  "zero before the first launch; every launch leaves it zero (the "
                                  "last CTA of a tile sums and clears its part)"};
        k->bufs[1] = (gt_gen_buf){"cnt", cnt_off, g->cnt_bytes, 1,
                                  "zero before the first launch; every launch leaves it zero"};
        k->nbufs = 2;
        k->workspace_bytes = cnt_off + g->cnt_bytes;
        return;
    }
    k->bufs[0] = (gt_gen_buf){"ws", 0, g->ws_bytes, 0,
                              "none: the main kernel writes every element before the second "
                              "pass reads it"};
    k->nbufs = 1;
    k->workspace_bytes = g->ws_bytes;
}

/* "#define NAME VALUE" for every "-DNAME=VALUE". */
static void put_defines(sbuf *b, const gt_gen_kernel *k)
{
    for (int i = 0; i < k->ndefs; i++) {
        const char *d = k->defs[i] + 2, *eq = strchr(d, '=');
        if (eq)
            sb_printf(b, "#define %.*s %s\n", (int)(eq - d), d, eq + 1);
        else
            sb_printf(b, "#define %s 1\n", d);
    }
}

/* What differs between the families once a config is known good: the
 * template, its kernels and argument struct, and where shared memory comes
 * from (gemv declares it statically; mma's is dynamic and above 48 KiB needs
 * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first, which gen_run.c
 * sets when the module loads). */
typedef struct fam_desc {
    const char *name, *tmpl, *main_fn, *fin_fn, *args_struct, *kper_doc;
    int dynamic_smem;
} fam_desc;

static const fam_desc k_gemv_desc = {"gemv", gt_gen_gemv_src, "gt_gemv", "gt_gemv_fin", "gt_gemv_args",
                                     "k per split-K slice (a multiple of 4 x vec, or 32 x vec with lanes warp)", 0};
static const fam_desc k_mma_desc = {"mma", gt_gen_mma_src, "gt_mma", "gt_mma_fin", "gt_mma_args",
                                    "k per split-K slice (a multiple of bk)", 1};

/* Fills the family-neutral rest of *k for a config already checked and
 * whose defines are in k->defs: launches, arguments, workspace, source. */
static int finish(gt_gen_kernel *k, const fam_desc *f, const gt_problem *p, const gt_gen_geom *g,
                  const char *cfg_text, int splitk, int reduction, char *err, size_t errlen)
{
    k->family_name = f->name;
    k->template_src = f->tmpl;
    k->min_sm = 80;
    if (!(k->config = strdup(cfg_text)))
        goto nomem;
    k->launch[0] = (gt_gen_launch){f->main_fn, {g->gx, g->gy, g->gz}, {g->threads, 1, 1},
                                   f->dynamic_smem ? g->smem_bytes : 0,
                                   f->dynamic_smem ? 0 : g->smem_bytes, NULL, 0};
    k->nlaunch = 1;
    if (g->fin_blocks) /* twopass: gen_run.c passes the batch count after the struct */
        k->launch[k->nlaunch++] = (gt_gen_launch){f->fin_fn, {g->fin_blocks, 1, 1}, {256, 1, 1},
                                                  0, 0, "nbatch", (long long)(p->batch > 0 ? p->batch : 1)};
    gen_args(k, p, g, f->args_struct, f->kper_doc);
    gen_bufs(k, splitk, reduction, g);
    sbuf b = {0};
    sb_printf(&b, "/* gemmtune generated kernel: family %s, config ", f->name);
    sb_comment(&b, k->config);
    sb_printf(&b, ".\n * The template's parameters (the worker passes them as -D options): */\n");
    put_defines(&b, k);
    sb_put(&b, f->tmpl, strlen(f->tmpl));
    if (b.oom)
        goto nomem;
    k->source = b.s;
    return GT_GEN_EXPORT_OK;
nomem:
    snprintf(err, errlen, "out of memory");
    return GT_GEN_EXPORT_NOMEM;
}

static int gemv_kernel(const gt_problem *p, const cJSON *cfg, gt_gen_kernel *k, char *err,
                       size_t errlen)
{
    gt_gen_cfg c;
    gt_gen_dev d;
    gt_gen_geom g;
    char why[GT_GEN_REASON];
    if (gt_gen_cfg_from_json(cfg, &c, err, errlen) != 0)
        return GT_GEN_EXPORT_BAD;
    /* Applicability is a property of the problem; the device here only has
     * to pass the family's sm_80 rule, the real target is k->arch. */
    gt_gen_dev_default(&d, 90, 0);
    gt_gen_geometry(p, &c, 32, &g);
    if (gt_gen_applicable(p, &d, why, sizeof why) != 0 ||
        gemv_runnable(p, &c, &g, why, sizeof why) != 0) {
        snprintf(err, errlen, "gemv: config cannot run this problem: %s", why);
        return GT_GEN_EXPORT_BAD;
    }
    k->ndefs = gt_gen_defines(p, &c, 0, k->defs);
    if (k->ndefs < 0) {
        snprintf(err, errlen, "gemv: no encoding of this problem's types");
        return GT_GEN_EXPORT_BAD;
    }
    char text[512];
    int tn = gt_gen_cfg_text(&c, text, sizeof text);
    if (tn < 0 || tn >= (int)sizeof text) {
        snprintf(err, errlen, "gemv: config text too long");
        return GT_GEN_EXPORT_BAD;
    }
    /* the template's griddepcontrol (sm_90+); dbuf's first block of A
     * comes before the wait */
    k->chain_min_sm = 90;
    k->chain_reads_a = c.pipe == GT_GEN_PIPE_DBUF;
    int rc = finish(k, &k_gemv_desc, p, &g, text, c.splitk, c.reduction, err, errlen);
    if (gt_gen_elem_size(p) == 1) /* cvt.rn.f16x2.e4m3x2/e5m2x2 */
        k->min_sm = 89;
    return rc;
}

/* The rules of gt_mma_check without which the mma kernel computes a wrong
 * result or fails to launch on the target (the others, split-K worth and
 * occupancy among them, depend on the measuring device's SM count and only
 * decide what is worth timing). */
static int mma_runnable(const gt_problem *p, const gt_mma_cfg *c, const gt_gen_geom *g, int sm,
                        char *why, size_t len)
{
    int64_t batch = p->batch > 0 ? p->batch : 1;
    gt_gen_dev d;
    gt_gen_dev_default(&d, sm > 0 ? sm : 90, 0);
    long long optin = d.smem_optin > 0 ? d.smem_optin : d.smem_block;
    int ae = 16 / gt_gen_elem_size(p); /* 16-byte chunks */
    if (gt_mma_elem_check(p, c, why, len) != 0)
        ; /* why says which */
    else if (c->inst == GT_MMA_INST_WGMMA && sm > 0 && sm != 90)
        snprintf(why, len, "inst wgmma: sm_90a instructions (wgmma, TMA); the target is sm_%d", sm);
    else if (c->inst == GT_MMA_INST_WGMMA && gt_mma_tma_check(p, why, len) != 0)
        ; /* why says which */
    else if (c->bm < 16 || c->bn < 16 || c->bk < 16 || c->warps_m < 1 || c->warps_n < 1 ||
             c->bm % (16 * c->warps_m) || c->bn % (16 * c->warps_n))
        snprintf(why, len, "shape: warp tile (bm/warps_m x bn/warps_n) is not a multiple of 16x16");
    else if ((c->splitk > 1) != (c->reduction != GT_GEN_RED_NONE))
        snprintf(why, len, "shape: reduction=%s with splitk=%d (a reduction exactly when splitk > 1)",
                 gt_gen_red_name(c->reduction), c->splitk);
    else if (g->threads > 1024) /* the launch's, a producer warp included */
        snprintf(why, len, "threads: %u threads > 1024 per block", g->threads);
    else if (p->lda % ae || p->ldb % ae || (batch > 1 && (p->stride_a % ae || p->stride_b % ae)))
        snprintf(why, len, "alignment: lda=%lld, ldb=%lld (or the batch strides) not multiples of %d",
                 (long long)p->lda, (long long)p->ldb, ae);
    else if (c->splitk > 1 && (long long)(c->splitk - 1) * g->kper >= p->k)
        snprintf(why, len, "split-K: splitk=%d leaves empty splits", c->splitk);
    else if ((long long)batch * c->splitk > 65535)
        snprintf(why, len, "grid z = batch x splitk = %lld > 65535", (long long)batch * c->splitk);
    else if ((long long)g->smem_bytes + 16 > optin)
        snprintf(why, len, "%zu bytes of dynamic shared memory > %lld per block on sm_%d", g->smem_bytes,
                 optin, sm > 0 ? sm : 90);
    else
        return 0;
    return -1;
}

static int mma_kernel(const gt_problem *p, const cJSON *cfg, int sm, gt_gen_kernel *k, char *err,
                      size_t errlen)
{
    gt_mma_cfg c;
    gt_gen_dev d;
    gt_gen_geom g;
    char why[GT_GEN_REASON];
    if (gt_mma_cfg_from_json(cfg, &c, err, errlen) != 0)
        return GT_GEN_EXPORT_BAD;
    gt_gen_dev_default(&d, 90, 0);
    gt_mma_geometry(p, &c, &g);
    if (gt_mma_applicable(p, &d, why, sizeof why) != 0 ||
        mma_runnable(p, &c, &g, sm, why, sizeof why) != 0) {
        snprintf(err, errlen, "mma: config cannot run this problem: %s", why);
        return GT_GEN_EXPORT_BAD;
    }
    k->ndefs = gt_mma_defines(p, &c, k->defs);
    if (k->ndefs < 0) {
        snprintf(err, errlen, "mma: no encoding of this problem's types");
        return GT_GEN_EXPORT_BAD;
    }
    char text[512];
    int tn = gt_mma_cfg_text(&c, text, sizeof text);
    if (tn < 0 || tn >= (int)sizeof text) {
        snprintf(err, errlen, "mma: config text too long");
        return GT_GEN_EXPORT_BAD;
    }
    /* the template by inst; wgmma runs on sm_90a only and takes the tensor
     * maps of A and B after its argument struct */
    fam_desc f = k_mma_desc;
    f.tmpl = gt_mma_src_of(&c);
    int rc = finish(k, &f, p, &g, text, c.splitk, c.reduction, err, errlen);
    if (rc == GT_GEN_EXPORT_OK && c.inst == GT_MMA_INST_WGMMA) {
        k->min_sm = 90;
        k->arch_specific = 1;
        snprintf(k->arch, sizeof k->arch, "sm_90a");
        k->ntmaps = gt_mma_tmaps(p, &c, k->tmaps);
    }
    return rc;
}

/* ---- dispatcher --------------------------------------------------------------------- */

void gt_gen_kernel_free(gt_gen_kernel *k)
{
    if (!k)
        return;
    free(k->config);
    free(k->source);
    memset(k, 0, sizeof *k);
}

int gt_gen_kernel_make(const gt_problem *p, const cJSON *cfg, int sm, gt_gen_kernel *k, char *err,
                       size_t errlen)
{
    memset(k, 0, sizeof *k);
    k->family = gt_gen_family(cfg);
    if (sm > 0)
        snprintf(k->arch, sizeof k->arch, "sm_%d", sm);
    /* A family adds one case: a filler that fills *k as gemv_kernel does. */
    switch (k->family) {
    case GT_FAM_GEMV:
        return gemv_kernel(p, cfg, k, err, errlen);
    case GT_FAM_MMA:
        return mma_kernel(p, cfg, sm, k, err, errlen);
    case GT_FAM_CUBLASLT:
        snprintf(err, errlen, "a cuBLASLt configuration, not a generated kernel: there is no "
                              "source (use the export database and cublasLtMatmul)");
        return GT_GEN_EXPORT_LIBRARY;
    case GT_FAM_CUTLASS:
        snprintf(err, errlen, "a kernel of libgemmtune_cutlass, built ahead of time: there is no "
                              "source (gt_db_plan_create runs it, with that library installed)");
        return GT_GEN_EXPORT_LIBRARY;
    case GT_FAM_FAULT:
        snprintf(err, errlen, "family \"fault\" is test-only fault injection: nothing to export");
        return GT_GEN_EXPORT_BAD;
    default: {
        const cJSON *f = cJSON_IsObject(cfg) ? cJSON_GetObjectItemCaseSensitive(cfg, "family") : NULL;
        snprintf(err, errlen, "unknown kernel family %s%s%s: this gemmtune exports gemv and mma",
                 cJSON_IsString(f) ? "\"" : "", cJSON_IsString(f) ? f->valuestring : "(not a string)",
                 cJSON_IsString(f) ? "\"" : "");
        return GT_GEN_EXPORT_BAD;
    }
    }
}

int gt_gen_kernel_nvrtc_opts(const gt_gen_kernel *k, char arch_buf[48],
                             const char *opts[GT_GEN_MAX_OPTS + 1])
{
    int n = 0;
    if (k->arch[0]) {
        snprintf(arch_buf, 48, "--gpu-architecture=%s", k->arch);
        opts[n++] = arch_buf;
    }
    for (int i = 0; i < k->nopts && i < GT_GEN_MAX_OPTS; i++)
        opts[n++] = k->opts[i];
    return n;
}

int gt_gen_kernel_args(const gt_gen_kernel *k, const void *a, const void *b, const void *c,
                       const void *bias, void *d, const void *scale_a, const void *scale_b, void *ws,
                       void *out, size_t len)
{
    if (len < k->args_bytes)
        return -1;
    unsigned char *o = out;
    for (int i = 0; i < k->nargs; i++) {
        const gt_gen_arg *x = &k->args[i];
        if (x->kind == GT_GEN_ARG_I64) {
            memcpy(o + 8 * i, &x->i, 8);
            continue;
        }
        if (x->kind == GT_GEN_ARG_F64) {
            memcpy(o + 8 * i, &x->f, 8);
            continue;
        }
        const void *v = NULL;
        int known = 1;
        if (!strcmp(x->name, "a"))
            v = a;
        else if (!strcmp(x->name, "b"))
            v = b;
        else if (!strcmp(x->name, "c"))
            v = c;
        else if (!strcmp(x->name, "bias"))
            v = bias;
        else if (!strcmp(x->name, "d"))
            v = d;
        else if (!strcmp(x->name, "scale_a") || !strcmp(x->name, "scale_b")) {
            /* the kernel reads them unconditionally: refused, never a fault */
            v = x->name[6] == 'a' ? scale_a : scale_b;
            if (!v)
                return -1;
        } else {
            known = 0;
            for (int j = 0; j < k->nbufs; j++)
                if (!strcmp(x->name, k->bufs[j].arg)) {
                    v = ws ? (const unsigned char *)ws + k->bufs[j].offset : NULL;
                    known = 1;
                }
            /* a buffer member the config does not use stays NULL */
            if (!known && (!strcmp(x->name, "ws") || !strcmp(x->name, "cnt")))
                known = 1;
        }
        if (!known)
            return -1;
        memcpy(o + 8 * i, &v, sizeof v);
    }
    return 0;
}

/* ---- renderings ---------------------------------------------------------------------- */

static cJSON *uint3(const unsigned v[3])
{
    int x[3] = {(int)v[0], (int)v[1], (int)v[2]};
    return cJSON_CreateIntArray(x, 3);
}

static int add(cJSON *o, const char *name, cJSON *v)
{
    if (!v)
        return -1;
    if (!cJSON_AddItemToObject(o, name, v)) {
        cJSON_Delete(v);
        return -1;
    }
    return 0;
}

static int push(cJSON *arr, cJSON *v)
{
    if (!v)
        return -1;
    if (!cJSON_AddItemToArray(arr, v)) {
        cJSON_Delete(v);
        return -1;
    }
    return 0;
}

static cJSON *launch_json(const gt_gen_kernel *k, const gt_gen_launch *l)
{
    char st[64];
    snprintf(st, sizeof st, "struct %s", k->args_struct);
    cJSON *o = cJSON_CreateObject(), *params = NULL, *p = NULL;
    if (!o || !cJSON_AddStringToObject(o, "kernel", l->kernel) || add(o, "grid", uint3(l->grid)) ||
        add(o, "block", uint3(l->block)) ||
        !cJSON_AddNumberToObject(o, "dynamic_smem_bytes", (double)l->smem_dynamic) ||
        !cJSON_AddNumberToObject(o, "static_smem_bytes", (double)l->smem_static) ||
        /* above 48 KiB of dynamic shared memory the function must opt in first */
        !cJSON_AddBoolToObject(o, "smem_optin", l->smem_dynamic > 48 * 1024) ||
        !(params = cJSON_AddArrayToObject(o, "params")) || push(params, p = cJSON_CreateObject()) ||
        !cJSON_AddStringToObject(p, "type", st) || !cJSON_AddStringToObject(p, "passed", "by value"))
        goto fail;
    for (int i = 0; l == &k->launch[0] && i < k->ntmaps; i++)
        if (push(params, p = cJSON_CreateObject()) || !cJSON_AddStringToObject(p, "type", "CUtensorMap") ||
            !cJSON_AddStringToObject(p, "passed", "by value (__grid_constant__)") ||
            !cJSON_AddNumberToObject(p, "tensor_map", i))
            goto fail;
    if (l->extra_name &&
        (push(params, p = cJSON_CreateObject()) || !cJSON_AddStringToObject(p, "name", l->extra_name) ||
         !cJSON_AddStringToObject(p, "type", "long long") ||
         !cJSON_AddNumberToObject(p, "value", (double)l->extra_value)))
        goto fail;
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

static cJSON *workspace_json(const gt_gen_kernel *k)
{
    cJSON *o = cJSON_CreateObject(), *arr = NULL;
    if (!o || !cJSON_AddNumberToObject(o, "bytes", (double)k->workspace_bytes) ||
        !(arr = cJSON_AddArrayToObject(o, "buffers")) ||
        !cJSON_AddStringToObject(o, "rule", "one device allocation for all buffers; launches "
                                            "sharing it must not overlap (one stream)"))
        goto fail;
    for (int i = 0; i < k->nbufs; i++) {
        const gt_gen_buf *b = &k->bufs[i];
        cJSON *e = cJSON_CreateObject();
        if (push(arr, e) != 0 || !cJSON_AddStringToObject(e, "arg", b->arg) ||
            !cJSON_AddNumberToObject(e, "offset", (double)b->offset) ||
            !cJSON_AddNumberToObject(e, "bytes", (double)b->bytes) ||
            !cJSON_AddStringToObject(e, "init", b->zero ? "zero" : "none") ||
            !cJSON_AddStringToObject(e, "rule", b->init))
            goto fail;
    }
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

static cJSON *u64s(const unsigned long long *v, int n)
{
    double x[3];
    for (int i = 0; i < n; i++)
        x[i] = (double)v[i];
    return cJSON_CreateDoubleArray(x, n);
}

/* cuTensorMapEncodeTiled's arguments for each map (gen_mma.h: gt_mma_tmap) */
static cJSON *tmaps_json(const gt_gen_kernel *k)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < k->ntmaps; i++) {
        const gt_mma_tmap *t = &k->tmaps[i];
        unsigned long long box[3] = {t->box[0], t->box[1], t->box[2]}, es[3] = {1, 1, 1};
        cJSON *e = cJSON_CreateObject();
        if (push(arr, e) != 0 || !cJSON_AddStringToObject(e, "operand", t->operand) ||
            !cJSON_AddStringToObject(e, "data_type", gt_mma_tmap_type_name(t)) ||
            !cJSON_AddNumberToObject(e, "rank", 3) || add(e, "global_dim", u64s(t->dims, 3)) ||
            add(e, "global_strides_bytes", u64s(t->strides, 2)) || add(e, "box_dim", u64s(box, 3)) ||
            add(e, "element_strides", u64s(es, 3)) ||
            !cJSON_AddStringToObject(e, "interleave", "CU_TENSOR_MAP_INTERLEAVE_NONE") ||
            !cJSON_AddStringToObject(e, "swizzle", "CU_TENSOR_MAP_SWIZZLE_128B") ||
            !cJSON_AddStringToObject(e, "l2_promotion", "CU_TENSOR_MAP_L2_PROMOTION_L2_256B") ||
            !cJSON_AddStringToObject(e, "oob_fill", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE") ||
            !cJSON_AddStringToObject(e, "global_address", "the call's pointer of this operand (16-byte aligned)")) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

static cJSON *args_json(const gt_gen_kernel *k)
{
    cJSON *o = cJSON_CreateObject(), *arr = NULL;
    if (!o || !cJSON_AddStringToObject(o, "struct", k->args_struct) ||
        !cJSON_AddNumberToObject(o, "bytes", (double)k->args_bytes) ||
        !(arr = cJSON_AddArrayToObject(o, "members")))
        goto fail;
    for (int i = 0; i < k->nargs; i++) {
        const gt_gen_arg *a = &k->args[i];
        cJSON *e = cJSON_CreateObject();
        if (push(arr, e) != 0 || !cJSON_AddStringToObject(e, "name", a->name) ||
            !cJSON_AddStringToObject(e, "type", a->ctype) ||
            !cJSON_AddNumberToObject(e, "offset", 8.0 * i) ||
            (a->kind == GT_GEN_ARG_I64 && !cJSON_AddNumberToObject(e, "value", (double)a->i)) ||
            (a->kind == GT_GEN_ARG_F64 && !cJSON_AddNumberToObject(e, "value", a->f)) ||
            !cJSON_AddStringToObject(e, "doc", a->doc))
            goto fail;
    }
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

/* How launch 1 may launch chained; JSON null when it may not. */
static cJSON *chained_json(const gt_gen_kernel *k)
{
    if (!k->chain_min_sm)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject(), *rb = NULL;
    if (!o || !cJSON_AddNumberToObject(o, "min_sm", k->chain_min_sm) ||
        !cJSON_AddNumberToObject(o, "launch", 0) ||
        !cJSON_AddStringToObject(o, "attribute", "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION") ||
        !(rb = cJSON_AddArrayToObject(o, "reads_before_wait")) ||
        (k->chain_reads_a && push(rb, cJSON_CreateString("a"))) ||
        !cJSON_AddStringToObject(o, "rule", k->chain_reads_a
            ? "launch 1 may start before the kernel before it ends; it waits for it before it reads b, c "
              "or bias or writes anything, but reads a first: the kernel before it must not write a"
            : "launch 1 may start before the kernel before it ends; it waits for it before it reads or "
              "writes anything")) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *gt_gen_kernel_json(const gt_gen_kernel *k)
{
    char arch[48];
    const char *opts[GT_GEN_MAX_OPTS + 1];
    int nopts = gt_gen_kernel_nvrtc_opts(k, arch, opts);
    cJSON *o = cJSON_CreateObject(), *kern = NULL, *no = NULL, *wo = NULL, *defs = NULL,
          *launches = NULL;
    if (!o || !cJSON_AddStringToObject(o, "family", k->family_name) ||
        add(o, "config", cJSON_Parse(k->config)) ||
        !(k->arch[0] ? cJSON_AddStringToObject(o, "target", k->arch) : cJSON_AddNullToObject(o, "target")) ||
        !cJSON_AddNumberToObject(o, "min_sm", k->min_sm) ||
        !(kern = cJSON_AddArrayToObject(o, "kernels")) ||
        !cJSON_AddStringToObject(o, "program_name", GT_GEN_PROGRAM_NAME) ||
        !cJSON_AddStringToObject(o, "source", k->source) ||
        !(no = cJSON_AddArrayToObject(o, "nvrtc_options")) ||
        !(wo = cJSON_AddArrayToObject(o, "worker_nvrtc_options")) ||
        !(defs = cJSON_AddArrayToObject(o, "defines")) ||
        !(launches = cJSON_AddArrayToObject(o, "launches")) ||
        add(o, "workspace", workspace_json(k)) || add(o, "args", args_json(k)) ||
        add(o, "tensor_maps", tmaps_json(k)) || add(o, "chained", chained_json(k)))
        goto fail;
    for (int i = 0; i < k->nlaunch; i++)
        if (push(kern, cJSON_CreateString(k->launch[i].kernel)) ||
            push(launches, launch_json(k, &k->launch[i])))
            goto fail;
    /* cuda/nvrtc.c (gt_cu_nvrtc_compile, as the worker's compile cache
     * calls it): the arch, ptxas statistics when it makes a cubin, the
     * family's options, the -D options */
    for (int i = 0; i < nopts; i++)
        if (push(no, cJSON_CreateString(opts[i])) || push(wo, cJSON_CreateString(opts[i])) ||
            (i == 0 && k->arch[0] && push(wo, cJSON_CreateString("--ptxas-options=-v"))))
            goto fail;
    for (int i = 0; i < k->ndefs; i++)
        if (push(wo, cJSON_CreateString(k->defs[i])) || push(defs, cJSON_CreateString(k->defs[i])))
            goto fail;
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

char *gt_gen_kernel_cuh(const gt_gen_kernel *k, const char *about)
{
    sbuf b = {0};
    sb_printf(&b, "/* gemmtune generated kernel (family %s)\n *\n", k->family_name);
    for (const char *l = about; l && *l;) {
        size_t n = strcspn(l, "\n");
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), l);
        sb_printf(&b, " * ");
        sb_comment(&b, line);
        sb_printf(&b, "\n");
        l += n + (l[n] == '\n');
    }
    sb_printf(&b, " * config    ");
    sb_comment(&b, k->config);
    if (k->arch[0] && k->arch_specific)
        sb_printf(&b, "\n * target    %s: nvrtc --gpu-architecture=%s, nvcc -arch=%s (sm_%d only)\n",
                  k->arch, k->arch, k->arch, k->min_sm);
    else if (k->arch[0])
        sb_printf(&b, "\n * target    %s: nvrtc --gpu-architecture=%s, nvcc -arch=%s (needs sm_%d+)\n",
                  k->arch, k->arch, k->arch, k->min_sm);
    else
        sb_printf(&b, "\n * target    unknown: compile for the device's arch (sm_%d or newer)\n",
                  k->min_sm);
    sb_printf(&b, " *\n * Launches, in this order on one stream:\n");
    /* launch 1's tensor-map parameters, one per map */
    char maps[GT_MMA_MAX_TMAPS * 20 + 1] = "";
    for (int t = 0; t < k->ntmaps && t < GT_MMA_MAX_TMAPS; t++)
        snprintf(maps + strlen(maps), sizeof maps - strlen(maps), ", CUtensorMap map%d", t);
    for (int i = 0; i < k->nlaunch; i++) {
        const gt_gen_launch *l = &k->launch[i];
        sb_printf(&b, " *   %d. %s<<<dim3(%u, %u, %u), dim3(%u, %u, %u), %zu>>>(struct %s args%s%s%s)\n",
                  i + 1, l->kernel, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                  l->block[2], l->smem_dynamic, k->args_struct, i == 0 ? maps : "",
                  l->extra_name ? ", long long " : "", l->extra_name ? l->extra_name : "");
        if (l->extra_name)
            sb_printf(&b, " *      with %s = %lld\n", l->extra_name, l->extra_value);
        if (l->smem_dynamic > 48 * 1024)
            sb_printf(&b, " *      first: cudaFuncSetAttribute(%s, "
                          "cudaFuncAttributeMaxDynamicSharedMemorySize, %zu)\n",
                      l->kernel, l->smem_dynamic);
        sb_printf(&b, " *      (static shared memory %zu bytes)\n", l->smem_static);
    }
    for (int i = 0; i < k->ntmaps; i++) {
        const gt_mma_tmap *t = &k->tmaps[i];
        if (i == 0)
            sb_printf(&b, " *\n * Launch 1 takes %d CUtensorMap after the struct (by value), encoded for each\n"
                          " * call's pointers: cuTensorMapEncodeTiled(&map, %s, 3, pointer, dims, strides,\n"
                          " * box, {1, 1, 1}, INTERLEAVE_NONE, SWIZZLE_128B, L2_PROMOTION_L2_256B,\n"
                          " * FLOAT_OOB_FILL_NONE) with:\n", k->ntmaps,
                      gt_mma_tmap_type_name(t));
        sb_printf(&b, " *   map %d: pointer %s, dims {%llu, %llu, %llu}, strides {%llu, %llu} bytes, "
                      "box {%u, %u, %u}\n", i, t->operand, t->dims[0], t->dims[1], t->dims[2], t->strides[0],
                  t->strides[1], t->box[0], t->box[1], t->box[2]);
    }
    if (k->chain_min_sm)
        sb_printf(&b, " *\n * Chained launch (sm_%d+): launch 1 may take the attribute\n"
                      " * cudaLaunchAttributeProgrammaticStreamSerialization; it waits for the kernel\n"
                      " * before it (griddepcontrol.wait) before it reads %s or writes anything%s.\n",
                  k->chain_min_sm, k->chain_reads_a ? "b, c or bias" : "anything",
                  k->chain_reads_a ? "; it reads a\n * first: the kernel before it must not write a" : "");
    sb_printf(&b, " *\n * Workspace: %zu bytes, one allocation; launches sharing it must not overlap\n",
              k->workspace_bytes);
    for (int i = 0; i < k->nbufs; i++)
        sb_printf(&b, " *   %-4s offset %zu, %zu bytes: %s\n", k->bufs[i].arg, k->bufs[i].offset,
                  k->bufs[i].bytes, k->bufs[i].init);
    sb_printf(&b, " *\n * struct %s (by value, %zu bytes, 8 per member):\n", k->args_struct,
              k->args_bytes);
    for (int i = 0; i < k->nargs; i++) {
        const gt_gen_arg *a = &k->args[i];
        char val[64] = "";
        if (a->kind == GT_GEN_ARG_I64)
            snprintf(val, sizeof val, " = %lld", a->i);
        else if (a->kind == GT_GEN_ARG_F64)
            snprintf(val, sizeof val, " = %.17g", a->f);
        sb_printf(&b, " *   +%-4d %-12s %s%s: %s\n", 8 * i, a->ctype, a->name, val, a->doc);
    }
    sb_printf(&b, " */\n#pragma once\n");
    sb_put(&b, k->source, strlen(k->source));
    return b.oom ? NULL : b.s;
}

int gt_gen_kernel_scaled(const gt_gen_kernel *k)
{
    for (int i = 0; i < k->nargs; i++)
        if (!strcmp(k->args[i].name, "scale_a"))
            return 1;
    return 0;
}
