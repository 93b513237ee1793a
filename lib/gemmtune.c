/* gemmtune.c: libgemmtune's database and lookups (see gemmtune.h).
 *
 * gt_db_open reads the whole best table of an export (joined with problems
 * for the key) into an open-addressing hash table keyed by (backend, device
 * model, problem key) and closes the file: a lookup is one FNV-1a hash of
 * the key built on the stack, a probe and three string compares, with no
 * SQLite and no allocation. cuda configs are decoded once at open; the
 * winners that are generated kernels keep their problem, from which
 * gemmtune_kernel.c re-creates the kernel (gen/gen_export.h). The key
 * is built by gt_problem_key of gemmtune's common/problem.c, compiled into
 * this library with hidden visibility. */
#include "gemmtune.h"
#include "gt_caps.h"
#include "gt_config.h"
#include "gt_lib.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KEY_MAX 512

typedef struct ent {
    uint64_t h;
    char *backend, *model, *key, *config;
    char *spec;                  /* problem JSON, kept for generated kernels only */
    double time_us, baseline_us, uplift;
    int generated;               /* the config names a kernel family (gemmtune_kernel.c) */
    int cuda_state;              /* 0 not cuda, 1 decoded, -1 undecodable */
    gt_cu_lt_cfg cuda;
} ent;

struct gt_db {
    ent *e;
    size_t n;
    uint32_t *slot;              /* index + 1, 0 = empty */
    size_t nslots;               /* power of two, >= 2n */
};

static uint64_t key_hash(const char *backend, const char *model, const char *key)
{
    uint64_t h = GT_FNV_SEED;
    h = gt_fnv1a64(backend, strlen(backend) + 1, h);
    h = gt_fnv1a64(model, strlen(model) + 1, h);
    return gt_fnv1a64(key, strlen(key), h);
}

static const ent *find(const gt_db *db, const char *backend, const char *model, const char *key)
{
    if (!db || !db->nslots)
        return NULL;
    uint64_t h = key_hash(backend, model, key);
    for (size_t i = (size_t)h & (db->nslots - 1);; i = (i + 1) & (db->nslots - 1)) {
        uint32_t s = db->slot[i];
        if (!s)
            return NULL;
        const ent *e = &db->e[s - 1];
        if (e->h == h && !strcmp(e->key, key) && !strcmp(e->model, model) &&
            !strcmp(e->backend, backend))
            return e;
    }
}

void gt_db_close(gt_db *db)
{
    if (!db)
        return;
    for (size_t i = 0; i < db->n; i++) {
        free(db->e[i].backend);
        free(db->e[i].model);
        free(db->e[i].key);
        free(db->e[i].config);
        free(db->e[i].spec);
    }
    free(db->e);
    free(db->slot);
    free(db);
}

/* A config with a "family" other than "cublaslt" is a generated kernel's
 * (worker/cuda/CONFIG.md); anything else is a library's configuration. */
static int is_generated(const char *config)
{
    if (!strstr(config, "\"family\""))
        return 0; /* most configs: no parse at open */
    cJSON *j = cJSON_Parse(config);
    const cJSON *f = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "family") : NULL;
    int gen = cJSON_IsString(f) && strcmp(f->valuestring, "cublaslt") != 0;
    cJSON_Delete(j);
    return gen;
}

static char *dupcol(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return strdup(t ? (const char *)t : "");
}

static double numcol(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

gt_db *gt_db_open(const char *path, char *err, size_t errlen)
{
    sqlite3 *sq = NULL;
    sqlite3_stmt *st = NULL;
    gt_db *db = calloc(1, sizeof *db);
    if (!db || !path) {
        snprintf(err, errlen, "%s", path ? "out of memory" : "no export path");
        free(db);
        return NULL;
    }
    size_t cap = 0;
    if (sqlite3_open_v2(path, &sq, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, sq ? sqlite3_errmsg(sq) : "cannot open");
        goto fail;
    }
    if (sqlite3_prepare_v2(sq, "SELECT value FROM meta WHERE key = 'format_version'", -1, &st,
                           NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        snprintf(err, errlen, "%s: not a gemmtune export (no meta.format_version)", path);
        goto fail;
    }
    long ver = atol((const char *)sqlite3_column_text(st, 0));
    if (ver < 1 || ver > 1) {
        snprintf(err, errlen, "%s: export format_version %ld, this libgemmtune reads 1", path,
                 ver);
        goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;
    /* baseline_us and uplift are against the untuned default (gemmtune.h);
     * a row paired with a substitute baseline (the default could not run,
     * schema/EXPORT.md baseline_kind) has neither: NAN, unknown. Exports
     * before baseline_kind had no substitutes. */
    static const char sql[] = "SELECT b.backend, b.device_model, p.key, b.config, b.time_us,"
                              " CASE WHEN %s THEN NULL ELSE b.baseline_us END,"
                              " CASE WHEN %s THEN NULL ELSE b.uplift END, p.spec FROM best b"
                              " JOIN problems p ON p.id = b.problem_id";
    static const char subst[] = "b.baseline_kind IS 'substitute'";
    char q[sizeof sql + 2 * sizeof subst];
    snprintf(q, sizeof q, sql, subst, subst);
    if (sqlite3_prepare_v2(sq, q, -1, &st, NULL) != SQLITE_OK) {
        st = NULL;
        snprintf(q, sizeof q, sql, "0", "0");
    }
    if (!st && sqlite3_prepare_v2(sq, q, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: not a gemmtune export: %s", path, sqlite3_errmsg(sq));
        goto fail;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (db->n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            ent *ne = realloc(db->e, nc * sizeof *ne);
            if (!ne) {
                snprintf(err, errlen, "out of memory");
                goto fail;
            }
            db->e = ne;
            cap = nc;
        }
        ent *e = &db->e[db->n];
        memset(e, 0, sizeof *e);
        db->n++;
        e->backend = dupcol(st, 0);
        e->model = dupcol(st, 1);
        e->key = dupcol(st, 2);
        e->config = dupcol(st, 3);
        if (!e->backend || !e->model || !e->key || !e->config) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        e->time_us = numcol(st, 4);
        e->baseline_us = numcol(st, 5);
        e->uplift = numcol(st, 6);
        e->h = key_hash(e->backend, e->model, e->key);
        /* A generated kernel is built from (problem, config) at lookup time:
         * keep its problem; a cuBLASLt config is decoded once, here. */
        if ((e->generated = is_generated(e->config)) != 0) {
            if (!(e->spec = dupcol(st, 7))) {
                snprintf(err, errlen, "out of memory");
                goto fail;
            }
        } else if (!strcmp(e->backend, "cuda")) {
            char why[160];
            e->cuda_state =
                gt_cu_lt_cfg_parse(e->config, &e->cuda, why, sizeof why) == 0 ? 1 : -1;
        }
    }
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "%s: reading best: %s", path, sqlite3_errmsg(sq));
        goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;
    sqlite3_close(sq);
    sq = NULL;
    db->nslots = 16;
    while (db->nslots < 2 * db->n)
        db->nslots *= 2;
    if (!(db->slot = calloc(db->nslots, sizeof *db->slot))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < db->n; i++) {
        const ent *e = &db->e[i];
        if (find(db, e->backend, e->model, e->key))
            continue; /* the primary key makes this impossible; keep the first */
        size_t j = (size_t)e->h & (db->nslots - 1);
        while (db->slot[j])
            j = (j + 1) & (db->nslots - 1);
        db->slot[j] = (uint32_t)(i + 1);
    }
    return db;
fail:
    if (st)
        sqlite3_finalize(st);
    if (sq)
        sqlite3_close(sq);
    gt_db_close(db);
    return NULL;
}

size_t gt_db_size(const gt_db *db)
{
    return db ? db->n : 0;
}

/* ---- GEMM descriptions ----------------------------------------------------- */

void gt_gemm_desc_init(gt_gemm_desc *d, int64_t m, int64_t n, int64_t k, const char *type)
{
    memset(d, 0, sizeof *d);
    d->m = m;
    d->n = n;
    d->k = k;
    d->batch = 1;
    d->transa = d->transb = 'N';
    d->stride_a = d->stride_b = d->stride_c = d->stride_d = -1;
    d->a_type = d->b_type = d->c_type = d->d_type = type;
    d->alpha = 1.0;
}

/* A type name in any spelling gt_dtype_parse knows, also with cuBLAS's
 * "CUDA_" / "CUBLAS_" prefixes. */
static gt_dtype type_of(const char *s)
{
    if (!s)
        return GT_DT_INVALID;
    if (!strncasecmp(s, "CUDA_", 5))
        s += 5;
    else if (!strncasecmp(s, "CUBLAS_", 7))
        s += 7;
    return gt_dtype_parse(s);
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return -1;                                                                                 \
    } while (0)

int gt_db_desc_problem(const gt_gemm_desc *d, gt_problem *p, char *err, size_t errlen)
{
    if (!d || !p)
        FAIL("no GEMM description");
    gt_problem_init(p, d->m, d->n, d->k);
    p->batch = d->batch;
    p->trans_a = (char)toupper((unsigned char)d->transa);
    p->trans_b = (char)toupper((unsigned char)d->transb);
    const struct {
        const char *what, *name;
        gt_dtype *out;
    } types[] = {{"a_type", d->a_type, &p->a_type},
                 {"b_type", d->b_type, &p->b_type},
                 {"c_type", d->c_type, &p->c_type},
                 {"d_type", d->d_type, &p->d_type}};
    for (size_t i = 0; i < 4; i++)
        if ((*types[i].out = type_of(types[i].name)) == GT_DT_INVALID ||
            *types[i].out == GT_DT_TF32)
            FAIL("%s '%s': unknown storage type", types[i].what,
                 types[i].name ? types[i].name : "(null)");
    if (d->compute_type) {
        if ((p->compute_type = type_of(d->compute_type)) == GT_DT_INVALID)
            FAIL("compute_type '%s': unknown", d->compute_type);
    } else {
        p->compute_type = p->a_type == GT_DT_F64 ? GT_DT_F64
                          : p->a_type == GT_DT_I8 ? GT_DT_I32
                                                  : GT_DT_F32;
    }
    if (d->scale_type) {
        if ((p->scale_type = type_of(d->scale_type)) == GT_DT_INVALID)
            FAIL("scale_type '%s': unknown", d->scale_type);
    } else {
        switch (p->compute_type) {
        case GT_DT_TF32: p->scale_type = GT_DT_F32; break;
        case GT_DT_I32: p->scale_type = p->d_type == GT_DT_I32 ? GT_DT_I32 : GT_DT_F32; break;
        default: p->scale_type = p->compute_type; break;
        }
    }
    gt_problem_default_ld(p);
    if (d->lda > 0)
        p->lda = d->lda;
    if (d->ldb > 0)
        p->ldb = d->ldb;
    if (d->ldc > 0)
        p->ldc = d->ldc;
    if (d->ldd > 0)
        p->ldd = d->ldd;
    if (p->batch > 1) {
        /* Tight strides for the leading dimensions in use (as the parsers). */
        p->stride_a = d->stride_a >= 0 ? d->stride_a
                                       : p->lda * (p->trans_a == 'N' ? p->k : p->m);
        p->stride_b = d->stride_b >= 0 ? d->stride_b
                                       : p->ldb * (p->trans_b == 'N' ? p->n : p->k);
        p->stride_c = d->stride_c >= 0 ? d->stride_c : p->ldc * p->n;
        p->stride_d = d->stride_d >= 0 ? d->stride_d : p->ldd * p->n;
    } else {
        p->stride_a = p->stride_b = p->stride_c = p->stride_d = 0;
    }
    p->alpha = d->alpha;
    p->beta = d->beta;
    const char *act = d->activation ? d->activation : "none";
    if (strcmp(act, "none") && strcmp(act, "relu") && strcmp(act, "gelu"))
        FAIL("activation '%s': none, relu or gelu", act);
    snprintf(p->activation, sizeof p->activation, "%s", act);
    p->bias = d->bias != 0;
    p->bias_type = GT_DT_INVALID;
    if (p->bias) {
        if (d->bias_type) {
            if ((p->bias_type = type_of(d->bias_type)) == GT_DT_INVALID)
                FAIL("bias_type '%s': unknown", d->bias_type);
        } else {
            p->bias_type = gt_caps_cuda_default_bias(p);
        }
    }
    gt_problem_finish(p);
    return gt_problem_check(p, err, errlen);
}

int gt_db_key(const gt_gemm_desc *d, char *key, size_t keylen, char *err, size_t errlen)
{
    gt_problem p;
    if (gt_db_desc_problem(d, &p, err, errlen) != 0)
        return -1;
    return gt_problem_key(&p, key, keylen);
}

int gt_db_record_line(const gt_gemm_desc *d, int64_t calls, char *line, size_t linelen,
                      char *err, size_t errlen)
{
    gt_problem p;
    if (gt_db_desc_problem(d, &p, err, errlen) != 0)
        return -1;
    const gt_dtype t[4] = {p.a_type, p.b_type, p.c_type, p.d_type};
    for (int i = 0; i < 4; i++)
        if (t[i] == GT_DT_F8E4M3FNUZ || t[i] == GT_DT_F8E5M2FNUZ)
            FAIL("%s: a hipBLASLt record line cannot spell FNUZ fp8", gt_dtype_name(t[i]));
    return gt_lib_record_line(&p, calls, line, linelen);
}

static void fill(const ent *e, gt_db_result *out)
{
    out->backend = e->backend;
    out->device_model = e->model;
    out->key = e->key;
    out->config = e->config;
    out->time_us = e->time_us;
    out->baseline_us = e->baseline_us;
    out->uplift = e->uplift;
}

int gt_db_lookup_key(const gt_db *db, const char *key, const char *backend,
                     const char *device_model, gt_db_result *out)
{
    if (!db || !key || !backend || !device_model)
        return GT_DB_EINVAL;
    const ent *e = find(db, backend, device_model, key);
    if (!e)
        return GT_DB_NOT_TUNED;
    if (out)
        fill(e, out);
    return e->generated ? GT_DB_GENERATED : GT_DB_OK;
}

int gt_db_lookup(const gt_db *db, const gt_gemm_desc *d, const char *backend,
                 const char *device_model, gt_db_result *out)
{
    char key[KEY_MAX], err[200];
    if (!db || !d || !backend || !device_model)
        return GT_DB_EINVAL;
    int n = gt_db_key(d, key, sizeof key, err, sizeof err);
    if (n < 0 || (size_t)n >= sizeof key)
        return GT_DB_EINVAL;
    return gt_db_lookup_key(db, key, backend, device_model, out);
}

int gt_db_cuda_cfg(const gt_db *db, const char *key, const char *model, gt_cu_lt_cfg *cfg)
{
    const ent *e = find(db, "cuda", model, key);
    if (!e)
        return GT_DB_NOT_TUNED;
    if (e->generated)
        return GT_DB_GENERATED;
    if (e->cuda_state != 1)
        return GT_DB_REJECTED;
    *cfg = e->cuda;
    return GT_DB_OK;
}

int gt_db_gen_entry(const gt_db *db, const char *key, const char *model, const char **spec,
                    gt_db_result *res)
{
    const ent *e = find(db, "cuda", model, key);
    if (!e)
        return GT_DB_NOT_TUNED;
    fill(e, res);
    if (!e->generated)
        return GT_DB_OK;
    *spec = e->spec;
    return GT_DB_GENERATED;
}

int gt_db_cuda_config_parse(const char *json, gt_db_cuda_config *out, char *err, size_t errlen)
{
    gt_cu_lt_cfg c;
    if (!out || gt_cu_lt_cfg_parse(json, &c, err, errlen) != 0)
        return -1;
    out->algo_id = c.algo_id;
    out->tile = c.tile;
    out->stages = c.stages;
    out->splitk = c.splitk;
    out->reduction = c.reduction;
    out->swizzle = c.swizzle;
    out->custom = c.custom;
    out->cluster = c.cluster;
    out->inner_shape = c.inner_shape;
    return 0;
}

const char *gt_db_cuda_type(int t)
{
    gt_dtype d = gt_cu_type_of(t);
    return d == GT_DT_INVALID ? NULL : gt_dtype_name(d);
}

const char *gt_db_cuda_compute(int c)
{
    gt_dtype d = gt_cu_compute_of(c);
    return d == GT_DT_INVALID ? NULL : gt_dtype_name(d);
}

const char *gt_db_strerror(int rc)
{
    switch (rc) {
    case GT_DB_OK: return "tuned";
    case GT_DB_NOT_TUNED: return "not tuned";
    case GT_DB_REJECTED: return "tuned config refused by cuBLASLt";
    case GT_DB_GENERATED: return "tuned: a generated kernel";
    case GT_DB_EINVAL: return "invalid argument";
    default: return "unknown";
    }
}
