/* cpu_codegen.c: the CPU backend's kernel generator: config parsing and
 * range checks, the problem types the backend runs, and the C source of one
 * candidate, a GotoBLAS/BLIS-structured packed GEMM:
 *
 *   for each batch, nc block (jc), kc block (pc):
 *       pack op(B)[pc.., jc..] into nr-wide panels      (threads share it)
 *       for each (mc row block, group of nr panels)       (threads split these)
 *           pack op(A)[ic.., pc..] into mr-tall panels    (per thread)
 *           for each nr panel, mr panel: mr x nr micro-kernel, epilogue
 *
 * Everything the kernel specialises on (blocking, unroll, threads, element
 * types, transposes) is a compile-time constant; sizes, leading dimensions,
 * strides, alpha and beta are run-time arguments, so one compiled object
 * serves every problem with the same config, types and transposes.
 * Packing converts f16/bf16 to f32 and pads fringes with zeros, so the
 * micro-kernel always runs a full tile; the epilogue writes the valid part.
 * The micro-kernel keeps a fixed-size accumulator array and restrict
 * pointers so gcc/clang vectorise the nr loop and keep the tile in registers.
 *
 * Test hook: the attribute "bug" (never emitted by the coordinator's space,
 * gt_space_cpu) breaks the kernel on purpose so the tests can prove the
 * validation and error paths work: bug=1 skips the last column of D,
 * bug=2 makes the source fail to compile, bug=3 crashes the process with a
 * segmentation fault and bug=4 never returns (the worker's isolation of
 * crashing and hanging candidates is tested with these two). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gt_bk_cpu.h"
#include "gt_caps.h"

static const struct {
    const char *name;
    int lo, hi;
    int required;
} k_attrs[] = {
    {"mc", 1, 4096, 1},  {"nc", 1, 8192, 1},    {"kc", 1, 4096, 1},      {"mr", 1, 32, 1},
    {"nr", 1, 64, 1},    {"unroll", 1, 16, 1}, {"threads", 1, 1024, 1}, {"bug", 0, 4, 0},
};
#define NATTR (sizeof k_attrs / sizeof k_attrs[0])

int gt_cpu_cfg_parse(const cJSON *j, gt_cpu_cfg *c, char *err, size_t errlen)
{
    int v[NATTR] = {0}, seen[NATTR] = {0};
    if (!cJSON_IsObject(j)) {
        snprintf(err, errlen, "cpu backend: config is not a JSON object");
        return -1;
    }
    for (const cJSON *it = j->child; it; it = it->next) {
        size_t a = 0;
        while (a < NATTR && strcmp(k_attrs[a].name, it->string ? it->string : "") != 0)
            a++;
        if (a == NATTR) {
            snprintf(err, errlen, "cpu backend: unknown config attribute '%s'",
                     it->string ? it->string : "?");
            return -1;
        }
        double d = cJSON_IsNumber(it) ? it->valuedouble : NAN;
        if (!(d == floor(d)) || d < k_attrs[a].lo || d > k_attrs[a].hi) {
            char *txt = cJSON_PrintUnformatted(it);
            snprintf(err, errlen, "cpu backend: config %s=%s: must be an integer in %d..%d",
                     k_attrs[a].name, txt ? txt : "?", k_attrs[a].lo, k_attrs[a].hi);
            cJSON_free(txt);
            return -1;
        }
        v[a] = (int)d;
        seen[a] = 1;
    }
    for (size_t a = 0; a < NATTR; a++) {
        if (k_attrs[a].required && !seen[a]) {
            snprintf(err, errlen, "cpu backend: config attribute '%s' missing", k_attrs[a].name);
            return -1;
        }
    }
    *c = (gt_cpu_cfg){.mc = v[0], .nc = v[1], .kc = v[2], .mr = v[3], .nr = v[4],
                      .unroll = v[5], .threads = v[6], .bug = v[7]};
    /* The packed blocks are whole micro-panels; a bigger tile than this
     * would spill the accumulators and take minutes to compile. */
    if (c->mc % c->mr) {
        snprintf(err, errlen, "cpu backend: config mc=%d is not a multiple of mr=%d", c->mc, c->mr);
        return -1;
    }
    if (c->nc % c->nr) {
        snprintf(err, errlen, "cpu backend: config nc=%d is not a multiple of nr=%d", c->nc, c->nr);
        return -1;
    }
    if (c->mr * c->nr > 512) {
        snprintf(err, errlen, "cpu backend: config micro-tile %dx%d larger than 512 elements",
                 c->mr, c->nr);
        return -1;
    }
    return 0;
}

/* ---- generated source ---- */

/* Conversions of the generated code. The same algorithms as the host's in
 * cpu_data.c (the kernel is a separate object and cannot link them). Only
 * the ones a kernel uses are emitted: clang warns about unused ones. */
static const char k_bits_to_f32_src[] =
    "static inline float gt_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }\n";
static const char k_f32_to_bits_src[] =
    "static inline uint32_t gt_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }\n";
static const char k_bf16_load_src[] =
    "static inline float gt_bf16_to_f32(uint16_t h) { return gt_bits_f32((uint32_t)h << 16); }\n";
static const char k_bf16_store_src[] =
    "static inline uint16_t gt_f32_to_bf16(float f)\n"
    "{\n"
    "    uint32_t x = gt_f32_bits(f);\n"
    "    if ((x & 0x7fffffffu) > 0x7f800000u)\n"
    "        return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */\n"
    "    x += 0x7fffu + ((x >> 16) & 1u);          /* round to nearest even */\n"
    "    return (uint16_t)(x >> 16);\n"
    "}\n";
static const char k_f16_load_src[] =
    "static inline float gt_f16_to_f32(uint16_t h)\n"
    "{\n"
    "    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
    "    if (e == 0x1f)\n"
    "        return gt_bits_f32(sign | 0x7f800000u | (m << 13));\n"
    "    if (e)\n"
    "        return gt_bits_f32(sign | ((e + 112u) << 23) | (m << 13));\n"
    "    float v = (float)m * 0x1p-24f; /* subnormal: exact */\n"
    "    return sign ? -v : v;\n"
    "}\n";
static const char k_f16_store_src[] =
    "static inline uint16_t gt_f32_to_f16(float f)\n"
    "{\n"
    "    uint32_t x = gt_f32_bits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;\n"
    "    if (ax >= 0x7f800000u)\n"
    "        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));\n"
    "    if (ax >= 0x477ff000u) /* rounds to 65536 or more */\n"
    "        return (uint16_t)(sign | 0x7c00u);\n"
    "    if (ax < 0x38800000u) { /* f16 subnormal or zero */\n"
    "        uint32_t e = ax >> 23;\n"
    "        if (e < 102u)\n"
    "            return (uint16_t)sign;\n"
    "        uint32_t m = (ax & 0x7fffffu) | 0x800000u, sh = 126u - e;\n"
    "        uint32_t q = m >> sh, rem = m & ((1u << sh) - 1u), half = 1u << (sh - 1u);\n"
    "        if (rem > half || (rem == half && (q & 1u)))\n"
    "            q++;\n"
    "        return (uint16_t)(sign | q);\n"
    "    }\n"
    "    uint32_t r = ax - 0x38000000u;\n"
    "    r += 0xfffu + ((r >> 13) & 1u);\n"
    "    return (uint16_t)(sign | (r >> 13));\n"
    "}\n";

static void emit_conversions(gt_str *o, const gt_problem *p)
{
    const gt_dtype in[] = {p->a_type, p->b_type, p->c_type};
    int bf16_in = 0, f16_in = 0;
    for (int i = 0; i < 3; i++) {
        bf16_in |= in[i] == GT_DT_BF16;
        f16_in |= in[i] == GT_DT_F16;
    }
    int bf16_out = p->d_type == GT_DT_BF16, f16_out = p->d_type == GT_DT_F16;
    if (bf16_in || f16_in)
        gt_str_append(o, k_bits_to_f32_src, strlen(k_bits_to_f32_src));
    if (bf16_out || f16_out)
        gt_str_append(o, k_f32_to_bits_src, strlen(k_f32_to_bits_src));
    if (bf16_in)
        gt_str_append(o, k_bf16_load_src, strlen(k_bf16_load_src));
    if (f16_in)
        gt_str_append(o, k_f16_load_src, strlen(k_f16_load_src));
    if (bf16_out)
        gt_str_append(o, k_bf16_store_src, strlen(k_bf16_store_src));
    if (f16_out)
        gt_str_append(o, k_f16_store_src, strlen(k_f16_store_src));
}

/* Element type, load-as-f32 and store-from-f32 expressions of one operand. */
static const char *ctype(gt_dtype t) { return t == GT_DT_F32 ? "float" : "uint16_t"; }
static const char *load_fn(gt_dtype t)
{
    return t == GT_DT_F32 ? "" : t == GT_DT_F16 ? "gt_f16_to_f32" : "gt_bf16_to_f32";
}
static const char *store_fn(gt_dtype t)
{
    return t == GT_DT_F32 ? "" : t == GT_DT_F16 ? "gt_f32_to_f16" : "gt_f32_to_bf16";
}

static const char k_body_src[] =
    "static inline int64_t gt_min(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "\n"
    "const int gt_cpu_abi = GT_CPU_ABI;\n"
    "size_t gt_cpu_ws_bytes(int64_t m, int64_t n, int64_t k);\n"
    "int gt_cpu_gemm(const gt_cpu_args *g);\n"
    "\n"
    "/* Packed B panel, one packed A block per thread, and for a low-precision D\n"
    " * with more than one kc block an f32 accumulator for the m x nc block. */\n"
    "size_t gt_cpu_ws_bytes(int64_t m, int64_t n, int64_t k)\n"
    "{\n"
    "    (void)n;\n"
    "    size_t f = (size_t)GT_KC * GT_NC + (size_t)GT_THREADS * GT_MC * GT_KC;\n"
    "    if (!GT_D_IS_F32 && k > GT_KC)\n"
    "        f += (size_t)m * GT_NC;\n"
    "    return f * sizeof(float);\n"
    "}\n"
    "\n"
    "/* op(A)[i0.., p0..] -> mr-tall panels, each kcur x GT_MR, zero-padded rows. */\n"
    "static void gt_pack_a(const gt_a_t *restrict A, int64_t lda, int64_t i0, int64_t mcur,\n"
    "                      int64_t p0, int64_t kcur, float *restrict dst)\n"
    "{\n"
    "    for (int64_t ir = 0; ir < mcur; ir += GT_MR) {\n"
    "        const int64_t mrc = gt_min(GT_MR, mcur - ir);\n"
    "        float *restrict d = dst + ir * kcur;\n"
    "#if GT_TRANS_A == 0\n"
    "        for (int64_t p = 0; p < kcur; p++) { /* columns of A are contiguous */\n"
    "            const gt_a_t *s = A + (i0 + ir) + (p0 + p) * lda;\n"
    "            int64_t i = 0;\n"
    "            for (; i < mrc; i++)\n"
    "                d[p * GT_MR + i] = GT_LD_A(s[i]);\n"
    "            for (; i < GT_MR; i++)\n"
    "                d[p * GT_MR + i] = 0.0f;\n"
    "        }\n"
    "#else\n"
    "        for (int64_t i = 0; i < GT_MR; i++) { /* rows of op(A) are contiguous */\n"
    "            if (i < mrc) {\n"
    "                const gt_a_t *s = A + p0 + (i0 + ir + i) * lda;\n"
    "                for (int64_t p = 0; p < kcur; p++)\n"
    "                    d[p * GT_MR + i] = GT_LD_A(s[p]);\n"
    "            } else {\n"
    "                for (int64_t p = 0; p < kcur; p++)\n"
    "                    d[p * GT_MR + i] = 0.0f;\n"
    "            }\n"
    "        }\n"
    "#endif\n"
    "    }\n"
    "}\n"
    "\n"
    "/* op(B)[p0.., j0..] -> nr-wide panels, each kcur x GT_NR, zero-padded\n"
    " * columns. Called by every thread of the team: the panels are shared out. */\n"
    "static void gt_pack_b(const gt_b_t *restrict B, int64_t ldb, int64_t j0, int64_t ncur,\n"
    "                      int64_t p0, int64_t kcur, float *restrict dst)\n"
    "{\n"
    "    const int64_t np = (ncur + GT_NR - 1) / GT_NR;\n"
    "#if GT_THREADS > 1\n"
    "#pragma omp for schedule(static)\n"
    "#endif\n"
    "    for (int64_t jp = 0; jp < np; jp++) {\n"
    "        const int64_t jr = jp * GT_NR, nrc = gt_min(GT_NR, ncur - jr);\n"
    "        float *restrict d = dst + jr * kcur;\n"
    "#if GT_TRANS_B == 0\n"
    "        for (int64_t j = 0; j < GT_NR; j++) { /* columns of B are contiguous */\n"
    "            if (j < nrc) {\n"
    "                const gt_b_t *s = B + p0 + (j0 + jr + j) * ldb;\n"
    "                for (int64_t p = 0; p < kcur; p++)\n"
    "                    d[p * GT_NR + j] = GT_LD_B(s[p]);\n"
    "            } else {\n"
    "                for (int64_t p = 0; p < kcur; p++)\n"
    "                    d[p * GT_NR + j] = 0.0f;\n"
    "            }\n"
    "        }\n"
    "#else\n"
    "        for (int64_t p = 0; p < kcur; p++) { /* rows of op(B) are contiguous */\n"
    "            const gt_b_t *s = B + (j0 + jr) + (p0 + p) * ldb;\n"
    "            int64_t j = 0;\n"
    "            for (; j < nrc; j++)\n"
    "                d[p * GT_NR + j] = GT_LD_B(s[j]);\n"
    "            for (; j < GT_NR; j++)\n"
    "                d[p * GT_NR + j] = 0.0f;\n"
    "        }\n"
    "#endif\n"
    "    }\n"
    "}\n"
    "\n"
    "/* gcc fully unrolls short constant loops before vectorising, then\n"
    " * SLP-vectorises across rows with broadcasts (4 GF/s on AVX-512): keeping\n"
    " * the nr loop a loop lets the loop vectoriser turn it into whole-register\n"
    " * FMAs with the tile in registers (115 GF/s, one Zen 4 core). */\n"
    "#if defined(__GNUC__) && !defined(__clang__)\n"
    "#define GT_VECTOR_LOOP _Pragma(\"GCC unroll 1\")\n"
    "#else\n"
    "#define GT_VECTOR_LOOP\n"
    "#endif\n"
    "/* Inlined into the big driver loop, gcc keeps the accumulators on the\n"
    " * stack (measured 15 instead of 48 GF/s for 4x8); as its own function\n"
    " * they stay in registers. One call per tile costs nothing against kc steps. */\n"
    "#if defined(__GNUC__)\n"
    "#define GT_NOINLINE __attribute__((noinline))\n"
    "#else\n"
    "#define GT_NOINLINE\n"
    "#endif\n"
    "\n"
    "/* One rank-1 update of the register tile. */\n"
    "#define GT_STEP(P)                                                   \\\n"
    "    do {                                                             \\\n"
    "        const float *restrict ap_ = a + (P) * GT_MR;                 \\\n"
    "        const float *restrict bp_ = b + (P) * GT_NR;                 \\\n"
    "        for (int i_ = 0; i_ < GT_MR; i_++) {                         \\\n"
    "            GT_VECTOR_LOOP                                           \\\n"
    "            for (int j_ = 0; j_ < GT_NR; j_++)                       \\\n"
    "                acc[i_][j_] += ap_[i_] * bp_[j_];                    \\\n"
    "        }                                                            \\\n"
    "    } while (0)\n"
    "\n"
    "/* mr x nr micro-kernel over kc: out = sum_p a[p][:] (x) b[p][:]. */\n"
    "static GT_NOINLINE void gt_ukernel(int64_t kc, const float *restrict a,\n"
    "                                   const float *restrict b, float *restrict out)\n"
    "{\n"
    "    float acc[GT_MR][GT_NR];\n"
    "    for (int i = 0; i < GT_MR; i++)\n"
    "        for (int j = 0; j < GT_NR; j++)\n"
    "            acc[i][j] = 0.0f;\n"
    "    int64_t p = 0;\n"
    "    for (; p + GT_UNROLL <= kc; p += GT_UNROLL) {\n"
    "        GT_UNROLLED_STEPS\n"
    "    }\n"
    "    for (; p < kc; p++)\n"
    "        GT_STEP(p);\n"
    "    for (int i = 0; i < GT_MR; i++)\n"
    "        for (int j = 0; j < GT_NR; j++)\n"
    "            out[i * GT_NR + j] = acc[i][j];\n"
    "}\n"
    "\n"
    "/* D (+)= alpha * tile (+ beta * C on the first kc block) for the valid\n"
    " * mrc x nrc part. f32 D accumulates across kc blocks in place; a\n"
    " * low-precision D goes through the f32 buffer w and is rounded once. */\n"
    "static void gt_store(const gt_cpu_args *g, const float *restrict tile, const gt_c_t *C,\n"
    "                     gt_d_t *D, float *w, int64_t row0, int64_t mrc, int64_t col0,\n"
    "                     int64_t nrc, int64_t jc, int first, int last)\n"
    "{\n"
    "    const float alpha = (float)g->alpha, beta = (float)g->beta;\n"
    "    (void)w;\n"
    "    (void)jc;\n"
    "    (void)last;\n"
    "    for (int64_t j = 0; j < nrc; j++) {\n"
    "        const int64_t col = col0 + j;\n"
    "GT_BUG_HOOK"
    "        gt_d_t *dcol = D + col * g->ldd;\n"
    "        for (int64_t i = 0; i < mrc; i++) {\n"
    "            const int64_t row = row0 + i;\n"
    "            float v = alpha * tile[i * GT_NR + j];\n"
    "            if (first) {\n"
    "                if (beta != 0.0f) /* beta == 0: C is never read (may be NULL) */\n"
    "                    v += beta * GT_LD_C(C[row + col * g->ldc]);\n"
    "            } else {\n"
    "#if GT_D_IS_F32\n"
    "                v += dcol[row];\n"
    "#else\n"
    "                v += w[row + (col - jc) * g->m];\n"
    "#endif\n"
    "            }\n"
    "#if GT_D_IS_F32\n"
    "            dcol[row] = v;\n"
    "#else\n"
    "            if (last)\n"
    "                dcol[row] = GT_ST_D(v);\n"
    "            else\n"
    "                w[row + (col - jc) * g->m] = v;\n"
    "#endif\n"
    "        }\n"
    "    }\n"
    "}\n"
    "\n"
    "int gt_cpu_gemm(const gt_cpu_args *g)\n"
    "{\n"
    "    if (!g || g->abi != GT_CPU_ABI || g->m < 1 || g->n < 1 || g->k < 1 || g->batch < 1)\n"
    "        return -1;\n"
    "    if (!g->ws || g->ws_bytes < 0 || (size_t)g->ws_bytes < gt_cpu_ws_bytes(g->m, g->n, g->k))\n"
    "        return -2;\n"
    "    if (g->beta != 0.0 && !g->c)\n"
    "        return -3;\n"
    "    float *const bp = (float *)g->ws;\n"
    "    float *const ap_all = bp + (size_t)GT_KC * GT_NC;\n"
    "    float *const w = ap_all + (size_t)GT_THREADS * GT_MC * GT_KC;\n"
    "#if GT_THREADS > 1\n"
    "#pragma omp parallel num_threads(GT_THREADS)\n"
    "#endif\n"
    "    {\n"
    "#if GT_THREADS > 1\n"
    "        const int tid = omp_get_thread_num();\n"
    "#else\n"
    "        const int tid = 0;\n"
    "#endif\n"
    "        float *const ap = ap_all + (size_t)tid * GT_MC * GT_KC;\n"
    "        /* Every thread walks the same batch/jc/pc loops; the two work-shared\n"
    "         * loops inside (B panels, A blocks) end in barriers. */\n"
    "        for (int64_t bi = 0; bi < g->batch; bi++) {\n"
    "            const gt_a_t *A = (const gt_a_t *)g->a + bi * g->stride_a;\n"
    "            const gt_b_t *B = (const gt_b_t *)g->b + bi * g->stride_b;\n"
    "            const gt_c_t *C = g->c ? (const gt_c_t *)g->c + bi * g->stride_c : 0;\n"
    "            gt_d_t *D = (gt_d_t *)g->d + bi * g->stride_d;\n"
    "            for (int64_t jc = 0; jc < g->n; jc += GT_NC) {\n"
    "                const int64_t ncur = gt_min(GT_NC, g->n - jc);\n"
    "                const int64_t njp = (ncur + GT_NR - 1) / GT_NR;\n"
    "                for (int64_t pc = 0; pc < g->k; pc += GT_KC) {\n"
    "                    const int64_t kcur = gt_min(GT_KC, g->k - pc);\n"
    "                    const int first = pc == 0, last = pc + kcur >= g->k;\n"
    "                    gt_pack_b(B, g->ldb, jc, ncur, pc, kcur, bp);\n"
    "                    /* Work items: row blocks, each split into groups of nr\n"
    "                     * panels when there are fewer row blocks than threads. */\n"
    "                    const int64_t nib = (g->m + GT_MC - 1) / GT_MC;\n"
    "                    int64_t groups = 1;\n"
    "                    if (nib < GT_THREADS) {\n"
    "                        groups = (GT_THREADS + nib - 1) / nib;\n"
    "                        if (groups > njp)\n"
    "                            groups = njp;\n"
    "                    }\n"
    "                    int64_t packed = -1;\n"
    "#if GT_THREADS > 1\n"
    "#pragma omp for schedule(static)\n"
    "#endif\n"
    "                    for (int64_t it = 0; it < nib * groups; it++) {\n"
    "                        const int64_t ib = it / groups, gi = it % groups;\n"
    "                        const int64_t i0 = ib * GT_MC, mcur = gt_min(GT_MC, g->m - i0);\n"
    "                        if (ib != packed) { /* consecutive items share the A block */\n"
    "                            gt_pack_a(A, g->lda, i0, mcur, pc, kcur, ap);\n"
    "                            packed = ib;\n"
    "                        }\n"
    "                        float tile[GT_MR * GT_NR];\n"
    "                        for (int64_t jp = njp * gi / groups; jp < njp * (gi + 1) / groups; jp++) {\n"
    "                            const int64_t jr = jp * GT_NR, nrc = gt_min(GT_NR, ncur - jr);\n"
    "                            for (int64_t ir = 0; ir < mcur; ir += GT_MR) {\n"
    "                                gt_ukernel(kcur, ap + ir * kcur, bp + jr * kcur, tile);\n"
    "                                gt_store(g, tile, C, D, w, i0 + ir, gt_min(GT_MR, mcur - ir),\n"
    "                                         jc + jr, nrc, jc, first, last);\n"
    "                            }\n"
    "                        }\n"
    "                    }\n"
    "                }\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "    return 0;\n"
    "}\n";

/* Appends s with every occurrence of `from` replaced by `to`. */
static void append_replaced(gt_str *o, const char *s, const char *from, const char *to)
{
    size_t fl = strlen(from);
    const char *q;
    while ((q = strstr(s, from)) != NULL) {
        gt_str_append(o, s, (size_t)(q - s));
        gt_str_append(o, to, strlen(to));
        s = q + fl;
    }
    gt_str_append(o, s, strlen(s));
}

int gt_cpu_codegen(const gt_cpu_cfg *c, const gt_problem *p, gt_str *o, char *err, size_t errlen)
{
    if (gt_caps_check("cpu", p, err, errlen) != 0)
        return -1;
    /* Appends are checked once at the end through the sticky oom flag. */
    gt_str_printf(o,
                  "/* gemmtune CPU candidate, generated by worker/cpu_codegen.c: do not edit.\n"
                  " * mc=%d nc=%d kc=%d mr=%d nr=%d unroll=%d threads=%d\n"
                  " * a=%s b=%s c=%s d=%s op(A)=%c op(B)=%c */\n",
                  c->mc, c->nc, c->kc, c->mr, c->nr, c->unroll, c->threads,
                  gt_dtype_name(p->a_type), gt_dtype_name(p->b_type), gt_dtype_name(p->c_type),
                  gt_dtype_name(p->d_type), p->trans_a, p->trans_b);
    if (c->bug == 2)
        gt_str_printf(o, "#error \"gemmtune test hook: deliberate compile error (bug=2)\"\n");
    gt_str_printf(o, "#include <stddef.h>\n#include <stdint.h>\n#include <string.h>\n");
    if (c->threads > 1)
        gt_str_printf(o, "#include <omp.h>\n");
    gt_str_printf(o,
                  "\n#define GT_CPU_ABI %d\n"
                  "#define GT_MC %d\n#define GT_NC %d\n#define GT_KC %d\n"
                  "#define GT_MR %d\n#define GT_NR %d\n#define GT_UNROLL %d\n"
                  "#define GT_THREADS %d\n#define GT_TRANS_A %d\n#define GT_TRANS_B %d\n"
                  "#define GT_D_IS_F32 %d\n\n",
                  GT_CPU_ABI, c->mc, c->nc, c->kc, c->mr, c->nr, c->unroll, c->threads,
                  p->trans_a == 'T', p->trans_b == 'T', p->d_type == GT_DT_F32);
    gt_str_printf(o,
                  "typedef struct gt_cpu_args {\n"
                  "    int64_t abi;\n"
                  "    int64_t m, n, k, batch;\n"
                  "    int64_t lda, ldb, ldc, ldd;\n"
                  "    int64_t stride_a, stride_b, stride_c, stride_d;\n"
                  "    double alpha, beta;\n"
                  "    const void *a, *b, *c;\n"
                  "    void *d;\n"
                  "    void *ws;\n"
                  "    int64_t ws_bytes;\n"
                  "} gt_cpu_args;\n\n");
    emit_conversions(o, p);
    gt_str_printf(o,
                  "\ntypedef %s gt_a_t;\ntypedef %s gt_b_t;\ntypedef %s gt_c_t;\ntypedef %s gt_d_t;\n"
                  "#define GT_LD_A(x) %s(x)\n#define GT_LD_B(x) %s(x)\n#define GT_LD_C(x) %s(x)\n"
                  "#define GT_ST_D(x) %s(x)\n\n",
                  ctype(p->a_type), ctype(p->b_type), ctype(p->c_type), ctype(p->d_type),
                  load_fn(p->a_type), load_fn(p->b_type), load_fn(p->c_type), store_fn(p->d_type));
    /* The k loop body repeated `unroll` times: a manual unroll that does not
     * depend on the compiler honouring an unroll pragma. */
    gt_str steps;
    gt_str_init(&steps);
    for (int u = 0; u < c->unroll; u++)
        gt_str_printf(&steps, "%sGT_STEP(p + %d);", u ? "\n        " : "", u);
    const char *hook = c->bug == 1   ? "        if (col == g->n - 1) /* test hook bug=1 */\n"
                                         "            continue;\n"
                       : c->bug == 3 ? "        { volatile int *volatile gt_null = 0; *gt_null = 1; } /* bug=3 */\n"
                       : c->bug == 4 ? "        { volatile int gt_spin = 1; while (gt_spin) { } } /* bug=4 */\n"
                                     : "";
    /* Two placeholders in the body: the unrolled steps and the bug hook. */
    gt_str tmp;
    gt_str_init(&tmp);
    append_replaced(&tmp, k_body_src, "GT_UNROLLED_STEPS", steps.s ? steps.s : "");
    if (!tmp.oom && tmp.s)
        append_replaced(o, tmp.s, "GT_BUG_HOOK", hook);
    int oom = steps.oom || tmp.oom || o->oom || !tmp.s;
    gt_str_free(&steps);
    gt_str_free(&tmp);
    if (oom) {
        snprintf(err, errlen, "cpu backend: out of memory generating the kernel source");
        return -1;
    }
    return 0;
}
