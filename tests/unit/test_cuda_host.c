/* test_cuda_host.c: the cuda backend's host-side logic, which needs no GPU:
 * type/compute/epilogue mapping, the fp8 table, refusals with reasons,
 * descriptors, the element codecs shared with the NVRTC kernels, the
 * validation semantics (which columns the reference covers, the raw-bit
 * scan for non-finite / unwritten output, the host emulation of the GPU
 * comparison, sampled and full), the config encoding, NVRTC compilation of
 * the helper kernels, and `open` failing cleanly without a GPU. On a machine with a GPU it also runs a
 * small end-to-end smoke test through the vtable.
 * Built without CUDA it proves the backend is absent. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gt_backend.h"
#include "gt_bk_paired.h"
#include "gt_config.h"
#include "gt_problem.h"
#include "gt_test.h"

#ifdef GT_WITH_CUDA
#include "cuda_nvml.h"
#include "gen_cuda.h"
#include "gt_cuda.h"

/* A BLAS-style problem with tight leading dimensions. */
static gt_problem prob(int64_t m, int64_t n, int64_t k, char ta, char tb, gt_dtype in, gt_dtype out,
                       gt_dtype compute)
{
    gt_problem p;
    gt_problem_init(&p, m, n, k);
    p.trans_a = ta;
    p.trans_b = tb;
    p.a_type = p.b_type = in;
    p.c_type = p.d_type = out;
    p.compute_type = compute;
    p.scale_type = compute == GT_DT_TF32 ? GT_DT_F32 : compute;
    gt_problem_default_ld(&p);
    gt_problem_finish(&p);
    return p;
}

static void test_dtypes(void)
{
    const struct {
        gt_dtype t;
        cudaDataType_t want;
        int kt;
    } cases[] = {
        {GT_DT_F32, CUDA_R_32F, GT_CU_KT_F32},         {GT_DT_F64, CUDA_R_64F, GT_CU_KT_F64},
        {GT_DT_F16, CUDA_R_16F, GT_CU_KT_F16},         {GT_DT_BF16, CUDA_R_16BF, GT_CU_KT_BF16},
        {GT_DT_TF32, CUDA_R_32F, GT_CU_KT_F32},        {GT_DT_F8E4M3, CUDA_R_8F_E4M3, GT_CU_KT_E4M3},
        {GT_DT_F8E5M2, CUDA_R_8F_E5M2, GT_CU_KT_E5M2}, {GT_DT_I8, CUDA_R_8I, GT_CU_KT_I8},
        {GT_DT_I32, CUDA_R_32I, GT_CU_KT_I32},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cudaDataType_t got = (cudaDataType_t)-1;
        CHECK_MSG(gt_cu_dtype(cases[i].t, &got) == 0 && got == cases[i].want, "%s",
                  gt_dtype_name(cases[i].t));
        CHECK(gt_cu_kt_of(cases[i].t) == cases[i].kt);
        CHECK(strncmp(gt_cu_type_name(got), "CUDA_R_", 7) == 0);
    }
    cudaDataType_t x;
    CHECK(gt_cu_dtype(GT_DT_INVALID, &x) == -1);
    CHECK(gt_cu_kt_of(GT_DT_INVALID) == -1);
    CHECK(strcmp(gt_cu_status_name(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED") == 0);
}

static void test_compute(void)
{
    char err[256];
    gt_cu_map m;
    gt_problem p = prob(64, 32, 16, 'N', 'N', GT_DT_F32, GT_DT_F32, GT_DT_F32);
    CHECK(gt_cu_map_problem(&p, 90, &m, err, sizeof err) == 0);
    CHECK(m.compute == CUBLAS_COMPUTE_32F && m.scale == CUDA_R_32F);
    CHECK(m.opa == CUBLAS_OP_N && m.opb == CUBLAS_OP_N && !m.fp8);
    float one;
    memcpy(&one, m.alpha, 4);
    CHECK(one == 1.0f);

    p = prob(64, 32, 16, 'N', 'T', GT_DT_F32, GT_DT_F32, GT_DT_TF32);
    CHECK(gt_cu_map_problem(&p, 80, &m, err, sizeof err) == 0);
    CHECK(m.compute == CUBLAS_COMPUTE_32F_FAST_TF32 && m.scale == CUDA_R_32F && m.opb == CUBLAS_OP_T);

    p = prob(64, 32, 16, 'T', 'N', GT_DT_F16, GT_DT_F16, GT_DT_F16);
    p.beta = 0.5;
    CHECK(gt_cu_map_problem(&p, 90, &m, err, sizeof err) == 0);
    CHECK(m.compute == CUBLAS_COMPUTE_16F && m.scale == CUDA_R_16F);
    uint16_t h;
    memcpy(&h, m.alpha, 2);
    CHECK(h == 0x3c00);
    memcpy(&h, m.beta, 2);
    CHECK(h == 0x3800);

    p = prob(64, 32, 16, 'N', 'N', GT_DT_F64, GT_DT_F64, GT_DT_F64);
    CHECK(gt_cu_map_problem(&p, 90, &m, err, sizeof err) == 0);
    CHECK(m.compute == CUBLAS_COMPUTE_64F && m.scale == CUDA_R_64F);

    p = prob(64, 32, 16, 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32);
    CHECK(gt_cu_map_problem(&p, 90, &m, err, sizeof err) == 0);
    CHECK(m.compute == CUBLAS_COMPUTE_32F && m.a == CUDA_R_16BF && m.d == CUDA_R_16BF);
    p.c_type = p.d_type = GT_DT_F32;
    CHECK(gt_cu_map_problem(&p, 90, &m, err, sizeof err) == 0 && m.d == CUDA_R_32F);

    p = prob(64, 32, 16, 'T', 'N', GT_DT_F8E4M3, GT_DT_BF16, GT_DT_F32);
    CHECK(gt_cu_map_problem(&p, 90, &m, err, sizeof err) == 0);
    CHECK(m.fp8 && !m.d_scale && m.a == CUDA_R_8F_E4M3 && m.compute == CUBLAS_COMPUTE_32F);
    p.b_type = GT_DT_F8E5M2;
    p.d_type = GT_DT_F8E4M3;
    CHECK(gt_cu_map_problem(&p, 89, &m, err, sizeof err) == 0);
    CHECK(m.fp8 && m.d_scale && m.b == CUDA_R_8F_E5M2 && m.d == CUDA_R_8F_E4M3);

    p = prob(64, 32, 16, 'T', 'N', GT_DT_I8, GT_DT_I32, GT_DT_I32);
    p.alpha = 2;
    CHECK(gt_cu_map_problem(&p, 90, &m, err, sizeof err) == 0);
    CHECK(m.compute == CUBLAS_COMPUTE_32I && m.scale == CUDA_R_32I);
    int32_t ia;
    memcpy(&ia, m.alpha, 4);
    CHECK(ia == 2);
    p.c_type = p.d_type = GT_DT_I8;
    p.scale_type = GT_DT_F32;
    CHECK(gt_cu_map_problem(&p, 90, &m, err, sizeof err) == 0 && m.scale == CUDA_R_32F);
}

/* Each refusal must say why, naming the offending setting. */
static void refused(gt_problem p, int sm, const char *needle)
{
    char err[256] = "";
    gt_cu_map m;
    int rc = gt_cu_map_problem(&p, sm, &m, err, sizeof err);
    CHECK_MSG(rc == -1 && strstr(err, needle) != NULL, "want '%s', got rc %d '%s'", needle, rc, err);
    CHECK(strncmp(err, "cuda: ", 6) == 0);
}

static void test_unsupported(void)
{
    gt_problem p = prob(64, 32, 16, 'N', 'N', GT_DT_F8E4M3, GT_DT_BF16, GT_DT_F32);
    refused(p, 90, "fp8 requires transA=T transB=N on sm_90");
    char err[256];
    gt_cu_map m;
    CHECK_MSG(gt_cu_map_problem(&p, 100, &m, err, sizeof err) == 0, "%s", err); /* any layout on sm_100 */
    p.trans_a = 'T';
    p.trans_b = 'N';
    gt_problem_default_ld(&p);
    refused(p, 80, "fp8 requires sm_89");
    p.a_type = p.b_type = GT_DT_F8E5M2;
    refused(p, 90, "both be e5m2");

    refused(prob(64, 32, 16, 'N', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32), 75, "bf16 requires sm_80");
    refused(prob(64, 32, 16, 'N', 'N', GT_DT_F32, GT_DT_F32, GT_DT_TF32), 75, "tf32 requires sm_80");
    p = prob(64, 32, 16, 'N', 'N', GT_DT_F16, GT_DT_F16, GT_DT_F16);
    p.scale_type = GT_DT_F32;
    refused(p, 90, "needs scale_type f16");
    p = prob(64, 32, 16, 'N', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32);
    p.b_type = GT_DT_F16;
    refused(p, 90, "differ");
    p = prob(64, 32, 16, 'N', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_BF16);
    refused(p, 90, "compute type bf16 not supported");
    p = prob(64, 32, 16, 'N', 'N', GT_DT_BF16, GT_DT_F16, GT_DT_F32);
    refused(p, 90, "C/D both bf16 or both f32");
    p = prob(64, 32, 16, 'N', 'N', GT_DT_F32, GT_DT_F32, GT_DT_F64);
    refused(p, 90, "compute f64 needs f64");
    p = prob(64, 32, 16, 'T', 'N', GT_DT_I8, GT_DT_I32, GT_DT_I32);
    p.alpha = 0.5;
    refused(p, 90, "alpha=0.5 must be an integer");
    p = prob(64, 32, 16, 'N', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32);
    snprintf(p.activation, sizeof p.activation, "silu");
    refused(p, 90, "activation 'silu'");
    p = prob(64, 32, 16, 'N', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32);
    p.lda = 3; /* smaller than M */
    refused(p, 90, "bad problem: lda=3");
}

/* The documented FP8 table (common/caps.c map_fp8), row by row, and what the
 * descriptor gets for it. */
static void test_fp8(void)
{
    const gt_dtype E4 = GT_DT_F8E4M3, E5 = GT_DT_F8E5M2, BF = GT_DT_BF16, H = GT_DT_F16,
                   F = GT_DT_F32;
    const struct {
        gt_dtype a, b, c, d;
        int ok;
        gt_dtype bias; /* default bias type when ok */
    } rows[] = {
        {E4, E4, BF, BF, 1, BF}, {E4, E4, BF, E4, 1, BF}, {E4, E4, H, H, 1, H},
        {E4, E4, H, E4, 1, H},   {E4, E4, F, F, 1, BF},   {E4, E5, BF, BF, 1, BF},
        {E4, E5, BF, E4, 1, BF}, {E4, E5, BF, E5, 1, BF}, {E5, E4, H, E5, 1, H},
        {E5, E4, H, E4, 1, H},   {E5, E4, F, F, 1, BF},   {E4, E5, H, H, 1, H},
        {E4, E4, BF, E5, 0, 0},  /* e5m2 output needs an e5m2 input */
        {E4, E4, E4, E4, 0, 0},  /* C is never fp8 */
        {E4, E4, BF, F, 0, 0},   {E4, E4, F, BF, 0, 0},   {E4, E4, H, BF, 0, 0},
        {E5, E5, BF, BF, 0, 0},
    };
    char err[256];
    gt_cu_map m;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        gt_problem p = prob(256, 32, 128, 'T', 'N', rows[i].a, rows[i].c, GT_DT_F32);
        p.b_type = rows[i].b;
        p.d_type = rows[i].d;
        p.bias = 1;
        int rc = gt_cu_map_problem(&p, 90, &m, err, sizeof err);
        CHECK_MSG((rc == 0) == rows[i].ok, "row %zu: rc %d %s", i, rc, rc ? err : "");
        if (rc == 0) {
            cudaDataType_t bt;
            CHECK(gt_cu_dtype(rows[i].bias, &bt) == 0 && m.bias == bt);
            CHECK(m.fp8 && m.d_scale == (rows[i].d == E4 || rows[i].d == E5));
            CHECK(m.compute == CUBLAS_COMPUTE_32F && m.scale == CUDA_R_32F);
        } else {
            CHECK(strncmp(err, "cuda: ", 6) == 0);
        }
    }
    gt_problem p = prob(256, 32, 128, 'T', 'N', E4, BF, GT_DT_F32);
    p.d_type = E4;
    p.bias = 1;
    p.bias_type = H;
    refused(p, 90, "needs bias_type bf16");
    p.bias_type = BF;
    CHECK(gt_cu_map_problem(&p, 90, &m, err, sizeof err) == 0);
    /* Tensor Core alignment is required for fp8 (16-byte multiples). */
    refused(prob(256, 32, 120, 'T', 'N', E4, BF, GT_DT_F32), 90, "rows of A=120");
    refused(prob(100, 32, 128, 'T', 'N', E4, BF, GT_DT_F32), 90, "m (rows of C)=100");
    p = prob(256, 32, 128, 'T', 'N', E4, BF, GT_DT_F32);
    p.ldd = p.ldc = 260;
    refused(p, 90, "ldc=260");
    p = prob(256, 1, 128, 'T', 'N', E4, BF, GT_DT_F32); /* n = 1 (decode) is fine */
    CHECK_MSG(gt_cu_map_problem(&p, 90, &m, err, sizeof err) == 0, "%s", err);
    /* TN only on Ada, Hopper and GeForce Blackwell; any layout on sm_100. */
    p = prob(256, 32, 128, 'N', 'N', E4, BF, GT_DT_F32);
    refused(p, 89, "transA=T transB=N on sm_89");
    refused(p, 120, "transA=T transB=N on sm_120");
    CHECK(gt_cu_map_problem(&p, 100, &m, err, sizeof err) == 0);
    p = prob(256, 32, 128, 'T', 'N', E4, BF, GT_DT_F32);
    p.scale_type = GT_DT_F16;
    refused(p, 90, "needs scale_type f32");

    /* Descriptor: A/B scale pointers always, D scale only for an fp8 D. */
    gt_cu_desc d;
    gt_cu_ptrs ptrs = {NULL, (void *)(uintptr_t)0x1000, (void *)(uintptr_t)0x1004,
                       (void *)(uintptr_t)0x1008};
    for (int fp8_out = 0; fp8_out < 2; fp8_out++) {
        p = prob(256, 32, 128, 'T', 'N', E4, BF, GT_DT_F32);
        if (fp8_out)
            p.d_type = E4;
        CHECK(gt_cu_map_problem(&p, 90, &m, err, sizeof err) == 0);
        CHECK_MSG(gt_cu_desc_create(&p, &m, &ptrs, &d, err, sizeof err) == 0, "%s", err);
        const void *as = NULL, *bs = NULL, *ds = NULL;
        size_t w;
        CHECK(cublasLtMatmulDescGetAttribute(d.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &as,
                                             sizeof as, &w) == 0 && as == ptrs.a_scale);
        CHECK(cublasLtMatmulDescGetAttribute(d.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &bs,
                                             sizeof bs, &w) == 0 && bs == ptrs.b_scale);
        CHECK(cublasLtMatmulDescGetAttribute(d.op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &ds,
                                             sizeof ds, &w) == 0);
        CHECK(ds == (fp8_out ? ptrs.d_scale : NULL));
        gt_cu_desc_destroy(&d);
    }
}

static void test_epilogue(void)
{
    const struct {
        const char *act;
        int bias;
        cublasLtEpilogue_t want;
    } cases[] = {
        {"none", 0, CUBLASLT_EPILOGUE_DEFAULT}, {"relu", 0, CUBLASLT_EPILOGUE_RELU},
        {"gelu", 0, CUBLASLT_EPILOGUE_GELU},    {"none", 1, CUBLASLT_EPILOGUE_BIAS},
        {"relu", 1, CUBLASLT_EPILOGUE_RELU_BIAS}, {"gelu", 1, CUBLASLT_EPILOGUE_GELU_BIAS},
        {"", 0, CUBLASLT_EPILOGUE_DEFAULT},     {"gelu_tanh", 1, CUBLASLT_EPILOGUE_GELU_BIAS},
    };
    char err[256];
    gt_cu_map m;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gt_problem p = prob(64, 32, 16, 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32);
        snprintf(p.activation, sizeof p.activation, "%s", cases[i].act);
        p.bias = cases[i].bias;
        CHECK(gt_cu_map_problem(&p, 90, &m, err, sizeof err) == 0);
        CHECK_MSG(m.epilogue == cases[i].want, "%s bias=%d", cases[i].act, cases[i].bias);
        CHECK(m.has_bias == cases[i].bias);
        if (cases[i].bias)
            CHECK(m.bias_set && m.bias == CUDA_R_16BF && m.bias_kt == GT_CU_KT_BF16); /* D's type */
    }
    gt_problem p = prob(64, 32, 16, 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32);
    p.bias = 1;
    p.bias_type = GT_DT_F32;
    CHECK(gt_cu_map_problem(&p, 90, &m, err, sizeof err) == 0 && m.bias == CUDA_R_32F);
    p = prob(64, 32, 16, 'T', 'N', GT_DT_F8E4M3, GT_DT_F32, GT_DT_F32);
    p.bias = 1;
    CHECK(gt_cu_map_problem(&p, 90, &m, err, sizeof err) == 0 && m.bias == CUDA_R_16BF);
}

static void test_desc(void)
{
    char err[256];
    gt_cu_map m;
    gt_cu_desc d;
    gt_problem p = prob(6144, 16, 4096, 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32);
    p.batch = 3;
    gt_problem_default_ld(&p);
    p.bias = 1;
    snprintf(p.activation, sizeof p.activation, "gelu");
    CHECK(gt_cu_map_problem(&p, 90, &m, err, sizeof err) == 0);
    gt_cu_ptrs ptrs = {(void *)(uintptr_t)0x1000, NULL, NULL, NULL};
    CHECK_MSG(gt_cu_desc_create(&p, &m, &ptrs, &d, err, sizeof err) == 0, "%s", err);
    uint64_t rows = 0, cols = 0;
    int64_t ld = 0, stride = 0;
    int32_t bc = 0, ta = -1;
    uint32_t epi = 0;
    const void *bp = NULL;
    size_t w;
    CHECK(cublasLtMatrixLayoutGetAttribute(d.a, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows, &w) == 0);
    CHECK(cublasLtMatrixLayoutGetAttribute(d.a, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof cols, &w) == 0);
    CHECK(cublasLtMatrixLayoutGetAttribute(d.a, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof ld, &w) == 0);
    CHECK(rows == 4096 && cols == 6144 && ld == 4096); /* A stored k x m for T */
    CHECK(cublasLtMatrixLayoutGetAttribute(d.d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc, &w) == 0);
    CHECK(cublasLtMatrixLayoutGetAttribute(d.d, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                           sizeof stride, &w) == 0);
    CHECK(bc == 3 && stride == 6144 * 16);
    CHECK(cublasLtMatmulDescGetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta, &w) == 0);
    CHECK(cublasLtMatmulDescGetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi, &w) == 0);
    CHECK(cublasLtMatmulDescGetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp, &w) == 0);
    CHECK(ta == CUBLAS_OP_T && epi == CUBLASLT_EPILOGUE_GELU_BIAS && bp == ptrs.bias);
    gt_cu_desc_destroy(&d);
    CHECK(d.op == NULL && d.a == NULL);
    CHECK(gt_cu_span(4096, 6144, 3, 4096 * 6144) == 3LL * 4096 * 6144);
    CHECK(gt_cu_span(100, 7, 1, 999) == 700);
}

static void test_codecs(void)
{
    for (int kt = GT_CU_KT_F32; kt <= GT_CU_KT_I32; kt++) {
        int64_t qmax = gt_cuda_fill_qmax(kt);
        CHECK(qmax > 0);
        int64_t qs[] = {0, 1, -1, 2, 3, -3, 5, 7, qmax, -qmax, qmax / 2, -qmax / 3, qmax - 1};
        for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
            if (qs[i] > qmax || qs[i] < -qmax)
                continue;
            unsigned char buf[8];
            gt_cuda_fill_encode(kt, qs[i], buf);
            double got = gt_cu_decode(kt, buf, 0), want = gt_cuda_fill_value(kt, qs[i]);
            CHECK_MSG(got == want, "kt %d q %lld: %.17g != %.17g", kt, (long long)qs[i], got, want);
            CHECK(fabs(want) <= (kt >= GT_CU_KT_I8 ? (double)qmax : 1.0));
        }
    }
    /* The 0xff poison bytes read back as NaN in every float type. */
    unsigned char ff[8];
    memset(ff, 0xff, sizeof ff);
    for (int kt = GT_CU_KT_F32; kt <= GT_CU_KT_E5M2; kt++)
        CHECK_MSG(isnan(gt_cu_decode(kt, ff, 0)), "kt %d", kt);
    uint16_t h = 0x3c00;
    CHECK(gt_cu_decode(GT_CU_KT_F16, &h, 0) == 1.0);
    h = 0x0001;
    CHECK(gt_cu_decode(GT_CU_KT_F16, &h, 0) == ldexp(1, -24));
    h = 0x3f80;
    CHECK(gt_cu_decode(GT_CU_KT_BF16, &h, 0) == 1.0);
    uint8_t b = 0x7e; /* e4m3 max normal 448 */
    CHECK(gt_cu_decode(GT_CU_KT_E4M3, &b, 0) == 448.0);
    b = 0x01; /* e4m3 min subnormal 2^-9 */
    CHECK(gt_cu_decode(GT_CU_KT_E4M3, &b, 0) == ldexp(1, -9));
    b = 0x7b; /* e5m2 max normal 57344 */
    CHECK(gt_cu_decode(GT_CU_KT_E5M2, &b, 0) == 57344.0);
    CHECK(gt_cu_f32_to_f16(1.0f) == 0x3c00);
    CHECK(gt_cu_f32_to_f16(-2.0f) == 0xc000);
    CHECK(gt_cu_f32_to_f16(65504.0f) == 0x7bff);
    CHECK(gt_cu_f32_to_f16(1e6f) == 0x7c00);
    CHECK(gt_cu_f32_to_f16(0.1f) == 0x2e66);
    CHECK(gt_cu_f32_to_f16((float)ldexp(1, -24)) == 0x0001);
    CHECK(gt_cu_f32_to_f16(1e-9f) == 0x0000);
}

static void test_rel_err(void)
{
    /* Full reference (cols NULL, ns == n): m=3 n=2 batch=2, ldd=4 (one
     * padding row), stride 10: padding is NaN and must not count. */
    float out[20];
    double ref[12];
    for (int i = 0; i < 20; i++)
        out[i] = NAN;
    for (int b = 0; b < 2; b++)
        for (int j = 0; j < 2; j++)
            for (int i = 0; i < 3; i++) {
                double v = 1 + i + 3 * j + 6 * b;
                ref[(b * 2 + j) * 3 + i] = v;
                out[b * 10 + j * 4 + i] = (float)v;
            }
    CHECK(gt_cuda_rel_err(GT_CU_KT_F32, out, 3, 2, 4, 2, 10, NULL, 2, ref) == 0.0);
    out[10 + 4 + 2] += 1.0f; /* one element off by 1 */
    double den = 0;
    for (int i = 0; i < 12; i++)
        den += ref[i] * ref[i];
    double e = gt_cuda_rel_err(GT_CU_KT_F32, out, 3, 2, 4, 2, 10, NULL, 2, ref);
    CHECK(fabs(e - sqrt(1.0 / den)) < 1e-12);
    out[10] = NAN; /* an unwritten (poisoned) element */
    CHECK(isnan(gt_cuda_rel_err(GT_CU_KT_F32, out, 3, 2, 4, 2, 10, NULL, 2, ref)));
    out[10] = INFINITY;
    CHECK(isnan(gt_cuda_rel_err(GT_CU_KT_F32, out, 3, 2, 4, 2, 10, NULL, 2, ref)));

    /* bf16 and f16, with 0xffff poison in the padding that must be ignored. */
    uint16_t hb[8], hh[8];
    double r2[6];
    for (int i = 0; i < 8; i++)
        hb[i] = hh[i] = 0xffff;
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 3; i++) {
            int64_t q = 1 + i + 3 * j;
            r2[j * 3 + i] = gt_cuda_fill_value(GT_CU_KT_BF16, q);
            gt_cuda_fill_encode(GT_CU_KT_BF16, q, &hb[j * 4 + i]);
            gt_cuda_fill_encode(GT_CU_KT_F16, q * 8, &hh[j * 4 + i]); /* q*8/2048 == q/256 */
        }
    CHECK(gt_cuda_rel_err(GT_CU_KT_BF16, hb, 3, 2, 4, 1, 0, NULL, 2, r2) == 0.0);
    CHECK(gt_cuda_rel_err(GT_CU_KT_F16, hh, 3, 2, 4, 1, 0, NULL, 2, r2) == 0.0);
    hb[5] = 0xffff;
    CHECK(isnan(gt_cuda_rel_err(GT_CU_KT_BF16, hb, 3, 2, 4, 1, 0, NULL, 2, r2)));

    CHECK(gt_cuda_rel_from(4, 16, 0) == 0.5);
    CHECK(gt_cuda_rel_from(4, 0, 0) == 2.0); /* all-zero reference: absolute */
    CHECK(isnan(gt_cuda_rel_from(0, 1, 1)));
    CHECK(isnan(gt_cuda_rel_from(NAN, 1, 0)) && isnan(gt_cuda_rel_from(INFINITY, 1, 0)));
}

/* The scan's raw-bit test (mirrored on the GPU): poison and non-finite
 * values are bad in every type, finite values and the fill values never. */
static void test_is_bad(void)
{
    unsigned char ff[8], p80[8];
    memset(ff, 0xff, sizeof ff);
    memset(p80, 0x80, sizeof p80);
    for (int kt = GT_CU_KT_F32; kt <= GT_CU_KT_E5M2; kt++)
        CHECK_MSG(gt_cuda_is_bad(kt, ff, 0), "kt %d 0xff", kt);
    CHECK(gt_cuda_is_bad(GT_CU_KT_I8, p80, 0) && gt_cuda_is_bad(GT_CU_KT_I32, p80, 0));
    for (int kt = GT_CU_KT_F32; kt <= GT_CU_KT_I32; kt++) {
        int64_t qmax = gt_cuda_fill_qmax(kt);
        int64_t qs[] = {0, 1, -1, qmax, -qmax, qmax / 3};
        for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
            unsigned char buf[8];
            gt_cuda_fill_encode(kt, qs[i], buf);
            CHECK_MSG(!gt_cuda_is_bad(kt, buf, 0), "kt %d q %lld", kt, (long long)qs[i]);
        }
    }
    uint16_t h[4] = {0x7bff, 0x7c00, 0xfc00, 0x7e00}; /* f16 max, +inf, -inf, nan */
    CHECK(!gt_cuda_is_bad(GT_CU_KT_F16, h, 0) && gt_cuda_is_bad(GT_CU_KT_F16, h, 1) &&
          gt_cuda_is_bad(GT_CU_KT_F16, h, 2) && gt_cuda_is_bad(GT_CU_KT_F16, h, 3));
    uint16_t bf[3] = {0x7f7f, 0x7f80, 0xffc0}; /* bf16 max, inf, nan */
    CHECK(!gt_cuda_is_bad(GT_CU_KT_BF16, bf, 0) && gt_cuda_is_bad(GT_CU_KT_BF16, bf, 1) &&
          gt_cuda_is_bad(GT_CU_KT_BF16, bf, 2));
    uint8_t e4[3] = {0x7e, 0x7f, 0xfe}; /* e4m3 448 (finite), nan, -448 */
    CHECK(!gt_cuda_is_bad(GT_CU_KT_E4M3, e4, 0) && gt_cuda_is_bad(GT_CU_KT_E4M3, e4, 1) &&
          !gt_cuda_is_bad(GT_CU_KT_E4M3, e4, 2));
    uint8_t e5[3] = {0x7b, 0x7c, 0x7d}; /* e5m2 max, inf, nan */
    CHECK(!gt_cuda_is_bad(GT_CU_KT_E5M2, e5, 0) && gt_cuda_is_bad(GT_CU_KT_E5M2, e5, 1) &&
          gt_cuda_is_bad(GT_CU_KT_E5M2, e5, 2));
    float f[2] = {3.0e38f, INFINITY};
    CHECK(!gt_cuda_is_bad(GT_CU_KT_F32, f, 0) && gt_cuda_is_bad(GT_CU_KT_F32, f, 1));
    double d[2] = {1e308, -INFINITY};
    CHECK(!gt_cuda_is_bad(GT_CU_KT_F64, d, 0) && gt_cuda_is_bad(GT_CU_KT_F64, d, 1));
    int8_t i8 = -127;
    int32_t i32 = -2139062143; /* 0x80808081 */
    CHECK(!gt_cuda_is_bad(GT_CU_KT_I8, &i8, 0) && !gt_cuda_is_bad(GT_CU_KT_I32, &i32, 0));
}

/* Which columns the reference computes, and which ones it samples. */
static void test_sampling(void)
{
    /* Small problems: every column. */
    CHECK(gt_cuda_ref_columns(6144, 16, 4096, 1) == 16);
    CHECK(gt_cuda_ref_columns(512, 512, 512, 1) == 512);
    CHECK(gt_cuda_ref_columns(4096, 128, 4096, 1) == 128); /* 2^31 MACs */
    /* The large benchmark shapes: about 2^36 MACs, 64..256 columns. */
    CHECK(gt_cuda_ref_columns(128256, 8192, 4096, 1) == 130);
    CHECK(gt_cuda_ref_columns(28672, 8192, 4096, 1) == 256);
    CHECK(gt_cuda_ref_columns(4096, 8192, 14336, 1) == 256);
    CHECK(gt_cuda_ref_columns(128256, 1, 4096, 1) == 1);
    CHECK(gt_cuda_ref_columns(128256, 16, 4096, 1) == 16); /* sampled, but all 16 fit */
    CHECK(gt_cuda_ref_columns(1 << 20, 4096, 1 << 16, 1) == 64);
    /* The reference's memory stays bounded: 2^28 rows fit only 2 columns. */
    CHECK(gt_cuda_ref_columns((int64_t)1 << 28, 64, 16, 1) == 2);
    /* Batched: the same columns in every entry, the budget shared. */
    CHECK(gt_cuda_ref_columns(4096, 4096, 4096, 64) == 64);
    /* Full when small in MACs but the dense reference would not fit. */
    CHECK(gt_cuda_ref_columns(1 << 16, 1 << 12, 1, 1) < (1 << 12));
    for (int64_t b = 0; b < 16; b++)
        CHECK(gt_cuda_ref_columns(100 + b, 1000 + 7 * b, 10 + b, 1) == 1000 + 7 * b);

    const int64_t n = 8192, ns = 130;
    int64_t a[130], b2[130], c[130];
    gt_cuda_sample_columns(42, n, ns, a);
    gt_cuda_sample_columns(42, n, ns, b2);
    gt_cuda_sample_columns(43, n, ns, c);
    CHECK(memcmp(a, b2, sizeof a) == 0);  /* deterministic in the seed */
    CHECK(memcmp(a, c, sizeof a) != 0);   /* and drawn from it */
    CHECK(a[0] == 0 && a[ns - 1] == n - 1);
    int ok = 1;
    for (int64_t i = 1; i < ns; i++)
        ok &= a[i] > a[i - 1] && a[i] < n;
    CHECK(ok);
    /* One column in each of the 128 strata of [1, n-1): spread over D. */
    int64_t width = (n - 2) / (ns - 2) + 1;
    for (int64_t i = 1; i < ns; i++)
        ok &= a[i] - a[i - 1] <= 2 * width;
    CHECK(ok);
    int64_t id[5];
    gt_cuda_sample_columns(7, 5, 5, id);
    CHECK(id[0] == 0 && id[4] == 4 && id[2] == 2);
    int64_t two[2];
    gt_cuda_sample_columns(7, 1000, 2, two);
    CHECK(two[0] == 0 && two[1] == 999);
}

/* Sampled vs full comparison, as the GPU does it: the error counts only the
 * sampled columns; the scan sees every element of D. */
static void test_sampled_check(void)
{
    enum { M = 5, N = 40, B = 2, LDD = 8, SD = LDD * N, NS = 6 };
    uint16_t d[SD * B];
    double full[M * N * B], samp[M * NS * B];
    int64_t cols[NS];
    gt_cuda_sample_columns(99, N, NS, cols);
    for (int i = 0; i < SD * B; i++)
        d[i] = 0xffff; /* poison, left in the padding rows */
    for (int b = 0; b < B; b++)
        for (int j = 0; j < N; j++)
            for (int i = 0; i < M; i++) {
                int64_t q = (i * 7 + j * 3 + b * 11) % 255 - 127;
                full[(b * N + j) * M + i] = gt_cuda_fill_value(GT_CU_KT_BF16, q);
                gt_cuda_fill_encode(GT_CU_KT_BF16, q, &d[b * SD + j * LDD + i]);
            }
    for (int b = 0; b < B; b++)
        for (int c = 0; c < NS; c++)
            memcpy(&samp[(b * NS + c) * M], &full[(b * N + cols[c]) * M], M * sizeof(double));
    CHECK(gt_cuda_rel_err(GT_CU_KT_BF16, d, M, N, LDD, B, SD, NULL, N, full) == 0.0);
    CHECK(gt_cuda_rel_err(GT_CU_KT_BF16, d, M, N, LDD, B, SD, cols, NS, samp) == 0.0);

    /* A wrong value in a sampled column: both see the same error. */
    int64_t at = 1 * SD + cols[2] * LDD + 3;
    uint16_t keep = d[at];
    gt_cuda_fill_encode(GT_CU_KT_BF16, 200, &d[at]);
    double den = 0, want;
    for (int i = 0; i < M * NS * B; i++)
        den += samp[i] * samp[i];
    double diff = gt_cuda_fill_value(GT_CU_KT_BF16, 200) - full[(1 * N + cols[2]) * M + 3];
    want = sqrt(diff * diff / den);
    double got = gt_cuda_rel_err(GT_CU_KT_BF16, d, M, N, LDD, B, SD, cols, NS, samp);
    CHECK_MSG(fabs(got - want) < 1e-12, "%.17g vs %.17g", got, want);
    CHECK(gt_cuda_rel_err(GT_CU_KT_BF16, d, M, N, LDD, B, SD, NULL, N, full) > 0);
    d[at] = keep;

    /* Unsampled column 1 (between the first and the next sampled one). */
    int64_t un = 1;
    for (int c = 0; c < NS; c++)
        if (cols[c] == un)
            un = cols[c] + 1; /* not sampled by construction when the strata are wide */
    at = 0 * SD + un * LDD + 2;
    keep = d[at];
    gt_cuda_fill_encode(GT_CU_KT_BF16, 200, &d[at]); /* finite and wrong: the sample misses it */
    CHECK(gt_cuda_rel_err(GT_CU_KT_BF16, d, M, N, LDD, B, SD, cols, NS, samp) == 0.0);
    CHECK(gt_cuda_rel_err(GT_CU_KT_BF16, d, M, N, LDD, B, SD, NULL, N, full) > 0);
    d[at] = 0x7fc0; /* NaN outside the sample: the scan catches it */
    CHECK(isnan(gt_cuda_rel_err(GT_CU_KT_BF16, d, M, N, LDD, B, SD, cols, NS, samp)));
    d[at] = 0xffff; /* still poisoned (never written) */
    CHECK(isnan(gt_cuda_rel_err(GT_CU_KT_BF16, d, M, N, LDD, B, SD, cols, NS, samp)));
    d[at] = 0xff80; /* -inf */
    CHECK(isnan(gt_cuda_rel_err(GT_CU_KT_BF16, d, M, N, LDD, B, SD, cols, NS, samp)));
    d[at] = keep;
    /* The very last element of D (last batch, last column, last row). */
    at = (B - 1) * SD + (N - 1) * LDD + M - 1;
    keep = d[at];
    d[at] = 0xffff;
    CHECK(isnan(gt_cuda_rel_err(GT_CU_KT_BF16, d, M, N, LDD, B, SD, cols, NS, samp)));
    d[at] = keep;
    CHECK(gt_cuda_rel_err(GT_CU_KT_BF16, d, M, N, LDD, B, SD, cols, NS, samp) == 0.0);
}

static void test_config(void)
{
    char err[256], text[512];
    gt_cu_lt_cfg c = {.algo_id = 66, .tile = 20, .stages = 35, .splitk = 4, .reduction = 2,
                     .swizzle = 1, .custom = 3, .cluster = 2, .inner_shape = 0};
    cJSON *j = gt_cu_lt_cfg_to_json(&c);
    CHECK(j != NULL);
    char *printed = cJSON_PrintUnformatted(j);
    gt_cu_lt_cfg_text(&c, text, sizeof text);
    const char *want = "{\"algo_id\":66,\"cluster\":2,\"custom\":3,\"inner_shape\":0,\"reduction\":2,"
                       "\"splitk\":4,\"stages\":35,\"swizzle\":1,\"tile\":20}";
    CHECK_MSG(strcmp(text, want) == 0, "%s", text);
    CHECK(printed && strcmp(printed, want) == 0); /* JSON form is already canonical */
    char *canon = gt_cfg_canonical(j);
    CHECK_MSG(canon && strcmp(canon, want) == 0, "gt_cfg_canonical: %s", canon ? canon : "(null)");
    free(canon);
    char h16[17]; /* pinned: a change here orphans every stored cuda result */
    CHECK_MSG(gt_cfg_hash(j, h16) == 0 && strcmp(h16, "78d430424baf2ad2") == 0, "hash %s", h16);
    CHECK(cJSON_GetObjectItemCaseSensitive(j, "heur") == NULL);
    gt_cu_lt_cfg back;
    CHECK(gt_cu_lt_cfg_from_json(j, &back, err, sizeof err) == 0);
    CHECK(memcmp(&back, &c, sizeof c) == 0);
    free(printed);
    cJSON_Delete(j);

    /* Any key order gives the same config and the same canonical text. */
    j = cJSON_Parse("{\"tile\":20,\"swizzle\":1,\"stages\":35,\"splitk\":4,\"reduction\":2,"
                    "\"inner_shape\":0,\"custom\":3,\"cluster\":2,\"algo_id\":66}");
    CHECK(j && gt_cu_lt_cfg_from_json(j, &back, err, sizeof err) == 0);
    gt_cu_lt_cfg_text(&back, text, sizeof text);
    CHECK(strcmp(text, want) == 0);
    cJSON_Delete(j);
    /* Defaults for omitted keys. */
    j = cJSON_Parse("{\"algo_id\":7}");
    CHECK(j && gt_cu_lt_cfg_from_json(j, &back, err, sizeof err) == 0);
    CHECK(back.algo_id == 7 && back.splitk == 1 && back.tile == 0 && back.cluster == 0);
    cJSON_Delete(j);
    const char *bad[] = {
        "{\"algo_id\":66,\"heur\":0}",  "{\"tile\":20}",           "{\"algo_id\":1.5}",
        "{\"algo_id\":-1}",             "{\"algo_id\":66,\"reduction\":3}",
        "{\"algo_id\":66,\"swizzle\":2}", "{\"algo_id\":\"66\"}",   "[1,2]",
        "{\"algo_id\":66,\"cluster\":70000}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j = cJSON_Parse(bad[i]);
        err[0] = 0;
        CHECK_MSG(gt_cu_lt_cfg_from_json(j, &back, err, sizeof err) == -1 && strncmp(err, "cuda: ", 6) == 0,
                  "%s accepted", bad[i]);
        cJSON_Delete(j);
    }
    /* "family":"cublaslt" is what an absent family means: same config. */
    j = cJSON_Parse("{\"family\":\"cublaslt\",\"tile\":20,\"swizzle\":1,\"stages\":35,\"splitk\":4,"
                    "\"reduction\":2,\"inner_shape\":0,\"custom\":3,\"cluster\":2,\"algo_id\":66}");
    CHECK(j && gt_gen_family(j) == GT_FAM_CUBLASLT && gt_cu_lt_cfg_from_json(j, &back, err, sizeof err) == 0);
    gt_cu_lt_cfg_text(&back, text, sizeof text);
    CHECK(strcmp(text, want) == 0);
    cJSON_Delete(j);
    j = cJSON_Parse("{\"family\":\"gemv\",\"algo_id\":66}");
    CHECK(gt_cu_lt_cfg_from_json(j, &back, err, sizeof err) == -1);
    cJSON_Delete(j);
    /* Attributes survive a trip through an algo struct (host-only calls). */
    cublasLtMatmulAlgo_t algo;
    memset(&algo, 0, sizeof algo);
    c.algo_id = 0; /* the id is set by cublasLtMatmulAlgoInit only */
    c.inner_shape = 3;
    CHECK_MSG(gt_cu_lt_cfg_apply(&gt_cu_lt_linked, &c, &algo, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(gt_cu_lt_cfg_from_algo(&gt_cu_lt_linked, &algo, &back, err, sizeof err) == 0, "%s", err);
    CHECK(memcmp(&back, &c, sizeof c) == 0);
}

static void test_nvrtc(void)
{
    char err[512] = "", *img = NULL;
    size_t len = 0;
    int cubin = -1;
    CHECK_MSG(gt_cuda_kernels_compile(90, &img, &len, &cubin, err, sizeof err) == 0, "%s", err);
    CHECK(img && len > 1000 && cubin == 1);
    free(img);
    img = NULL;
    /* A device newer than NVRTC knows gets PTX for the driver to JIT. */
    CHECK_MSG(gt_cuda_kernels_compile(990, &img, &len, &cubin, err, sizeof err) == 0, "%s", err);
    CHECK(img && cubin == 0 && strstr(img, ".entry gt_ref") != NULL && strstr(img, ".entry gt_fill"));
    CHECK(strstr(img, ".entry gt_cmp") && strstr(img, ".entry gt_scan") && strstr(img, ".entry gt_fin"));
    free(img);
    CHECK(gt_cuda_kernels_compile(30, &img, &len, &cubin, err, sizeof err) == -1);
    CHECK(strstr(err, "sm_30") != NULL);
}

/* With a GPU: a few problems end to end through the vtable, as the job
 * runner drives them. */
static void smoke(const gt_backend *bk, gt_bk_ctx *ctx, gt_problem p)
{
    char err[512], label[64];
    gt_problem_label(&p, label, sizeof label);
    cJSON *cands = NULL, *base = NULL;
    gt_bk_prob *pp = NULL;
    int rc = bk->enumerate(ctx, &p, 0, &cands, &base, err, sizeof err);
    CHECK_MSG(rc == 0 && cJSON_GetArraySize(cands) > 0 && base, "%s: %s", label, err);
    if (rc != 0)
        return;
    rc = bk->prepare(ctx, &p, &pp, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: prepare: %s", label, err);
    int n = cJSON_GetArraySize(cands), tried = 0, passed = 0;
    for (int i = -1; rc == 0 && i < n && i < 12; i++) {
        gt_bk_cand *c = NULL;
        const cJSON *cfg = i < 0 ? base : cJSON_GetArrayItem(cands, i);
        if (bk->build(pp, cfg, &c, err, sizeof err) != 0) {
            CHECK_MSG(i >= 0, "%s: baseline build: %s", label, err);
            continue;
        }
        double e = NAN;
        gt_timing t;
        gt_timing_opts o = {.min_time_ms = 0.2, .warmup = 1, .repeats = 3};
        tried++;
        /* Another candidate may be refused at run time; the baseline may not. */
        if (bk->validate(pp, c, &e, err, sizeof err) != 0) {
            CHECK_MSG(i >= 0 && gt_cuda_alive(ctx, err, sizeof err) == 0, "%s: validate: %s", label, err);
            bk->release(c);
            continue;
        }
        if (e <= gt_bk_tolerance(&p))
            passed++;
        else
            CHECK_MSG(i >= 0, "%s: baseline rel err %.3g", label, e);
        CHECK_MSG(bk->time(pp, c, &o, &t, err, sizeof err) == 0 && t.median_us > 0, "%s: time: %s",
                  label, err);
        bk->release(c);
    }
    CHECK_MSG(tried > 0 && passed > 0, "%s: %d tried %d passed", label, tried, passed);
    bk->unprepare(pp);
    cJSON_Delete(cands);
    cJSON_Delete(base);
}

/* launch=graph on a GPU: the baseline (cuBLASLt's heuristic default), a few
 * other cuBLASLt configs and the first generated gemv config of a decode
 * GEMM, each timed plainly and as graph replays on the same prepared
 * problem. A graph repeat holds whole rotations through the input sets, the
 * two medians agree within reason (the graph may be faster: no launch gaps),
 * and a plain timing after a graph one still works (the stream left capture
 * mode). A cuBLASLt config that cannot be captured must say so. */
static void graph_check(const gt_backend *bk, gt_bk_ctx *ctx, gt_problem p)
{
    char err[512], label[64];
    gt_problem_label(&p, label, sizeof label);
    cJSON *cands = NULL, *base = NULL;
    gt_bk_prob *pp = NULL;
    int rc = bk->enumerate(ctx, &p, 0, &cands, &base, err, sizeof err);
    CHECK_MSG(rc == 0 && base, "%s: %s", label, err);
    if (rc != 0)
        return;
    rc = bk->prepare(ctx, &p, &pp, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: prepare: %s", label, err);
    int n = cJSON_GetArraySize(cands), lt = 0, gemv = 0, nofit = 0;
    for (int i = -1; rc == 0 && i < n; i++) {
        const cJSON *cfg = i < 0 ? base : cJSON_GetArrayItem(cands, i);
        const cJSON *fam = cJSON_GetObjectItemCaseSensitive(cfg, "family");
        int is_gemv = cJSON_IsString(fam) && !strcmp(fam->valuestring, "gemv");
        if (fam && !is_gemv)
            continue; /* mma: covered by its own GPU test */
        if ((is_gemv && gemv >= 1) || (!is_gemv && i >= 0 && lt >= 4))
            continue;
        gt_bk_cand *c = NULL;
        double e = NAN;
        if (bk->build(pp, cfg, &c, err, sizeof err) != 0) {
            CHECK_MSG(i >= 0, "%s: baseline build: %s", label, err);
            continue;
        }
        if (bk->validate(pp, c, &e, err, sizeof err) != 0 || !(e <= gt_bk_tolerance(&p))) {
            CHECK_MSG(i >= 0, "%s: baseline validate: %s (rel err %.3g)", label, err, e);
            bk->release(c);
            continue;
        }
        gt_timing tp, tg, tp2;
        gt_timing_opts op = {.min_time_ms = 2, .warmup = 2, .repeats = 7}, og = op;
        og.graph = 1;
        char *txt = cJSON_PrintUnformatted(cfg);
        CHECK_MSG(bk->time(pp, c, &op, &tp, err, sizeof err) == 0, "%s: plain: %s", label, err);
        int grc = bk->time(pp, c, &og, &tg, err, sizeof err);
        if (grc != 0) {
            /* a config whose calls cannot be captured fails, saying so; the
             * baseline and a generated kernel always capture */
            CHECK_MSG(i >= 0 && !is_gemv && strstr(err, "graph"), "%s %s: graph: %s", label, txt, err);
            fprintf(stderr, "  %s %s: not capturable: %s\n", label, txt, err);
            nofit++;
        } else {
            double r = tg.median_us / tp.median_us;
            fprintf(stderr, "  %s %s: plain %.3f us, graph %.3f us (%.3fx), %d calls per graph repeat over %d sets\n",
                    label, txt, tp.median_us, tg.median_us, r, tg.iters, pp->nsets);
            CHECK_MSG(r > 0.5 && r < 1.25, "%s %s: graph %.3f us against plain %.3f us", label, txt,
                      tg.median_us, tp.median_us);
            CHECK_MSG(tg.iters >= pp->nsets && tg.iters % pp->nsets == 0 && tg.repeats == 7,
                      "%s: %d calls per repeat, %d sets", label, tg.iters, pp->nsets);
            lt += !is_gemv;
            gemv += is_gemv;
        }
        CHECK_MSG(bk->time(pp, c, &op, &tp2, err, sizeof err) == 0 && tp2.median_us > 0,
                  "%s: plain after graph: %s", label, err);
        if (grc == 0) {
            /* timed as a graph again (a final's next round): the graph
             * captured the first time is replayed, not captured anew, and
             * times alike */
            cudaGraphExec_t ge = c->gexec;
            gt_timing tg2 = {0};
            CHECK_MSG(ge && bk->time(pp, c, &og, &tg2, err, sizeof err) == 0 && c->gexec == ge &&
                          fabs(tg2.median_us / tg.median_us - 1) < 0.1,
                      "%s %s: second graph timing: %s (%.3f against %.3f us)", label, txt, err, tg2.median_us,
                      tg.median_us);
        }
        cJSON_free(txt);
        bk->release(c);
    }
    CHECK_MSG(lt >= 1, "%s: no cuBLASLt config timed in a graph (%d not capturable)", label, nofit);
    if (ctx->sm >= 80)
        CHECK_MSG(gemv == 1, "%s: no gemv config timed in a graph", label);
    bk->unprepare(pp);
    cJSON_Delete(cands);
    cJSON_Delete(base);
}

/* The device's state through NVML (cuda_nvml.c, opened with dlopen): a
 * reading has an SM clock, power and temperature, and the paired rounds
 * over the backend (what the final phase and verify run) summarise one
 * reading per timing, grouped by round. A GPU node has the driver's
 * libnvidia-ml.so.1: its absence there is a failure. */
static void nvml_check(const gt_backend *bk, gt_bk_ctx *ctx)
{
    char err[512] = "";
    gt_problem p = prob(1024, 16, 1024, 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32);
    cJSON *cands = NULL, *base = NULL;
    gt_bk_prob *pp = NULL;
    gt_bk_cand *c[2] = {NULL, NULL};
    gt_gpu_sample s;
    CHECK(bk->state != NULL);
    int rc = bk->enumerate(ctx, &p, 0, &cands, &base, err, sizeof err);
    CHECK_MSG(rc == 0 && cJSON_GetArraySize(cands) > 0, "%s", err);
    if (rc != 0 || cJSON_GetArraySize(cands) < 1 || bk->prepare(ctx, &p, &pp, err, sizeof err) != 0) {
        CHECK_MSG(0, "prepare: %s", err);
        goto out;
    }
    rc = bk->state(pp, &s, err, sizeof err);
    CHECK_MSG(rc == 0, "state: %s", err);
    if (rc == 0) {
        fprintf(stderr, "  nvml: SM %.0f MHz, %.1f W, %.0f C, reasons 0x%llx\n", s.sm_mhz, s.power_w, s.temp_c,
                (unsigned long long)s.reasons);
        CHECK(s.sm_mhz > 0 && s.sm_mhz < 10000 && s.power_w > 0 && s.power_w < 10000 && s.temp_c > 0 &&
              s.temp_c < 150);
    }
    if (bk->build(pp, base, &c[0], err, sizeof err) != 0 ||
        bk->build(pp, cJSON_GetArrayItem(cands, 0), &c[1], err, sizeof err) != 0) {
        CHECK_MSG(0, "build: %s", err);
        goto out;
    }
    double rel = NAN;
    CHECK(bk->validate(pp, c[0], &rel, err, sizeof err) == 0 && bk->validate(pp, c[1], &rel, err, sizeof err) == 0);
    double times[2 * 8];
    gt_paired_stat st[2];
    int rounds = 0;
    gt_paired_opts po;
    gt_paired_opts_init(&po, 8, 0);
    gt_bk_paired bp = {.bk = bk, .pp = pp, .cands = c, .n = 2,
                       .timing = {.min_time_ms = 2, .warmup = 2, .repeats = 1}};
    CHECK(gt_bk_paired_run(&bp, &po, times, &rounds, st) == 0 && rounds == 8);
    fprintf(stderr, "  paired rounds: %d samples over %d rounds, SM %.0f/%.0f MHz min/median, %.1f W max, "
                    "%.0f C max, %.0f%% of rounds capped%s%s\n",
            bp.gpu.samples, bp.gpu.rounds, bp.gpu.sm_clock_min_mhz, bp.gpu.sm_clock_median_mhz,
            bp.gpu.power_max_w, bp.gpu.temp_max_c, bp.gpu.throttled_frac * 100, bp.gpu_why[0] ? ": " : "",
            bp.gpu_why);
    CHECK_MSG(bp.gpu.samples == 16 && bp.gpu.rounds == 8 && bp.gpu.sm_clock_min_mhz > 0 &&
                  bp.gpu.sm_clock_min_mhz <= bp.gpu.sm_clock_median_mhz && bp.gpu.power_max_w > 0 &&
                  bp.gpu.throttled_frac >= 0 && bp.gpu.throttled_frac <= 1,
              "gpu state: %d samples, %d rounds (%s)", bp.gpu.samples, bp.gpu.rounds, bp.gpu_why);
out:
    for (int i = 0; i < 2; i++)
        if (c[i])
            bk->release(c[i]);
    if (pp)
        bk->unprepare(pp);
    cJSON_Delete(cands);
    cJSON_Delete(base);
}

/* An enumeration limited to the coordinator's head (keep, issue 20): the
 * list holds at most keep entries; its heuristic and generated configs are
 * the whole list's, in the same order; the enumerated configs after them
 * are a sample of tile/stages pairs (one each, sampled when there are more
 * pairs than room) that checks far fewer configs than the whole pass, and
 * every one of them builds and validates. keep smaller than the heuristic's
 * and families' share: no AlgoCheck pass at all. */
static void keep_check(const gt_backend *bk, gt_bk_ctx *ctx, gt_problem p, int keep)
{
    char err[512], label[64];
    gt_problem_label(&p, label, sizeof label);
    cJSON *all = NULL, *head = NULL, *b0 = NULL, *b1 = NULL;
    gt_bk_prob *pp = NULL;
    gt_cuda_enum_stats sa, sh;
    gt_cuda_set_limits(ctx, 4000, 60);
    int rc = bk->enumerate(ctx, &p, 0, &all, &b0, err, sizeof err);
    gt_cuda_enum_stats_get(ctx, &sa);
    CHECK_MSG(rc == 0, "%s: %s", label, err);
    rc |= bk->enumerate(ctx, &p, keep, &head, &b1, err, sizeof err);
    gt_cuda_enum_stats_get(ctx, &sh);
    CHECK_MSG(rc == 0, "%s keep %d: %s", label, keep, err);
    if (rc != 0)
        goto out;
    int n = cJSON_GetArraySize(head), fixed = sh.heuristic + sh.gen;
    fprintf(stderr, "  %s keep %d: %d entries (heuristic %d, generated %d), %lld checks in %.3f s"
                    " (whole list: %d entries, %lld checks in %.3f s), %lld pairs, %lld live, sampled %d\n",
            label, keep, n, sh.heuristic, sh.gen, sh.checks, sh.seconds, cJSON_GetArraySize(all),
            sa.checks, sa.seconds, sh.pairs, sh.live_pairs, sh.sampled);
    CHECK(n <= keep && n > 0 && cJSON_Compare(b0, b1, 1));
    for (int i = 0; i < n && i < fixed; i++)
        CHECK_MSG(cJSON_Compare(cJSON_GetArrayItem(all, i), cJSON_GetArrayItem(head, i), 1),
                  "%s: entry %d differs", label, i);
    if (keep <= fixed) {
        CHECK(sh.checks == 0 && n == keep);
        goto out;
    }
    /* fewer checks than the whole list's when it samples pairs, leaves out
     * split-K or leaves out pairs for their waves; the same otherwise */
    CHECK_MSG(sh.checks > 0 && (sh.sampled || sh.no_splitk || sh.small_tiles ? sh.checks < sa.checks
                                                                             : sh.checks == sa.checks),
              "%lld checks against %lld (sampled %d, no split-K %d, %d pairs left out for their waves)",
              sh.checks, sa.checks, sh.sampled, sh.no_splitk, sh.small_tiles);
    /* sampled exactly when more pairs exist than the room; the list then
     * fills the room (one config per sampled pair) */
    CHECK_MSG(sh.sampled == (sh.live_pairs > keep - fixed), "%lld live pairs, room %d, sampled %d",
              sh.live_pairs, keep - fixed, sh.sampled);
    CHECK_MSG(!sh.sampled || n == keep, "%d entries for keep %d", n, keep);
    /* a sample gives the heuristic's algo ids (cuBLASLt's own kernels for the problem)
     * three quarters of the room, where their pairs can fill it: the enumerated entries of
     * those ids are the ones drawn from them */
    {
        int ids[64], nids = 0, lt = 0, mine = 0;
        for (int i = 0; i < n; i++) {
            const cJSON *c = cJSON_GetArrayItem(head, i);
            if (cJSON_GetObjectItemCaseSensitive(c, "family"))
                continue;
            int id = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "algo_id"));
            if (lt++ < sh.heuristic) {
                if (nids < 64)
                    ids[nids++] = id;
                continue;
            }
            int hit = 0;
            for (int j = 0; j < nids && !hit; j++)
                hit = ids[j] == id;
            mine += hit;
        }
        fprintf(stderr, "  %s keep %d: %d enumerated entries of the heuristic's algo ids (%lld drawn so)\n", label,
                keep, mine, sh.preferred);
        CHECK_MSG(!sh.sampled || mine == sh.preferred, "%d entries of the heuristic's ids, %lld drawn from them",
                  mine, sh.preferred);
        CHECK_MSG(!sh.sampled || sh.heuristic == 0 || sh.preferred >= (keep - fixed) / 2,
                  "%lld of a room of %d to the heuristic's ids", sh.preferred, keep - fixed);
    }
    if (bk->prepare(ctx, &p, &pp, err, sizeof err) != 0) {
        CHECK_MSG(0, "%s: prepare: %s", label, err);
        goto out;
    }
    /* a problem whose tiles fill the GPU gets no split-K in the head */
    CHECK(sh.no_splitk == (p.m / 128 * (p.n / 128) >= 4 * ctx->sms));
    for (int i = fixed; sh.no_splitk && i < n; i++)
        CHECK_MSG(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(head, i), "splitk")) == 1,
                  "%s: entry %d splits k", label, i);
    /* and leaves out the pairs of far smaller tiles than the heuristic's
     * pick (cuBLASLt has 64-wide tiles for every bf16 problem); the whole
     * list never does */
    fprintf(stderr, "  %s keep %d: %d pairs left out for their waves\n", label, keep, sh.small_tiles);
    CHECK(sa.small_tiles == 0 && (sh.no_splitk ? sh.small_tiles > 0 : sh.small_tiles == 0));
    CHECK(sh.live_pairs + sh.small_tiles <= sh.pairs);
    int built = 0, valid = 0;
    for (int i = fixed; i < n; i++) {
        gt_bk_cand *c = NULL;
        double e = NAN;
        CHECK_MSG(bk->build(pp, cJSON_GetArrayItem(head, i), &c, err, sizeof err) == 0,
                  "%s: sampled config %d: %s", label, i, err);
        if (!c)
            continue;
        built++;
        if (bk->validate(pp, c, &e, err, sizeof err) == 0 && e <= gt_bk_tolerance(&p))
            valid++;
        bk->release(c);
    }
    fprintf(stderr, "  %s keep %d: %d sampled configs built, %d valid\n", label, keep, built, valid);
    CHECK(built == n - fixed && valid > 0);
out:
    if (pp)
        bk->unprepare(pp);
    cJSON_Delete(all);
    cJSON_Delete(head);
    cJSON_Delete(b0);
    cJSON_Delete(b1);
}

static void test_open(void)
{
    const gt_backend *bk = gt_bk_find("cuda");
    CHECK(bk == &gt_bk_cuda && strcmp(bk->name, "cuda") == 0);
    CHECK(bk->open && bk->close && bk->enumerate && bk->prepare && bk->unprepare && bk->build &&
          bk->release && bk->validate && bk->time && bk->state);
    /* NVML through dlopen: without the library (the GPU-less CI) or for a
     * bus id with no GPU, no handle and a reason, never a crash */
    char why[200] = "";
    gt_cuda_nvml *nv = gt_cuda_nvml_open("00000000:FF:1F.7", why, sizeof why);
    CHECK_MSG(nv == NULL && strncmp(why, "nvml: ", 6) == 0, "%s", why);
    gt_cuda_nvml_close(nv);
    fprintf(stderr, "  (%s)\n", why);
    char err[512] = "";
    gt_bk_ctx *ctx = (gt_bk_ctx *)1;
    gt_bk_device dev;
    CHECK(bk->open(9999, &ctx, &dev, err, sizeof err) == -1 && ctx == NULL);
    CHECK(strncmp(err, "cuda: ", 6) == 0);
    err[0] = 0;
    if (bk->open(0, &ctx, &dev, err, sizeof err) != 0) {
        /* The GPU-less CI: a clear reason, no crash, no context. */
        fprintf(stderr, "  (no GPU: %s)\n", err);
        CHECK(ctx == NULL && strncmp(err, "cuda: ", 6) == 0 && strlen(err) > 20);
        return;
    }
    bk->close(ctx); /* a device: test_gpu uses it */
}

/* With a GPU: the backend end to end through the vtable. */
static void test_gpu(void)
{
    const gt_backend *bk = gt_bk_find("cuda");
    char err[512] = "";
    gt_bk_ctx *ctx = NULL;
    gt_bk_device dev;
    if (bk->open(0, &ctx, &dev, err, sizeof err) != 0) {
        gt_test_skip("gpu", err);
        return;
    }
    fprintf(stderr, "  device: %s %s %d SMs %s\n", dev.model, dev.arch, dev.units, dev.driver);
    CHECK(dev.model[0] && strncmp(dev.arch, "sm_", 3) == 0 && dev.units > 0 && dev.mem_bytes > 0);
    CHECK(strstr(dev.driver, "cublasLt") != NULL && strcmp(dev.backend, "cuda") == 0);
    gt_cuda_set_limits(ctx, 64, 20);
    smoke(bk, ctx, prob(256, 64, 128, 'N', 'N', GT_DT_F32, GT_DT_F32, GT_DT_F32));
    gt_problem p = prob(1024, 16, 512, 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32);
    p.bias = 1;
    snprintf(p.activation, sizeof p.activation, "gelu");
    smoke(bk, ctx, p);
    p = prob(512, 128, 256, 'N', 'T', GT_DT_F16, GT_DT_F16, GT_DT_F32);
    p.batch = 4;
    p.beta = 0.5;
    gt_problem_default_ld(&p);
    smoke(bk, ctx, p);
    /* launch=graph: a decode GEMM (4096x4096 weights, 16 tokens) */
    graph_check(bk, ctx, prob(4096, 16, 4096, 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32));
    /* the GPU's state next to the paired rounds' timings */
    nvml_check(bk, ctx);
    /* the enumeration limited to the coordinator's head: prefill (room for
     * a sample), decode (room for a few), and none */
    keep_check(bk, ctx, prob(4096, 2048, 4096, 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32), 100);
    keep_check(bk, ctx, prob(4096, 16, 4096, 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32), 100);
    keep_check(bk, ctx, prob(28672, 2048, 4096, 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32), 100);
    keep_check(bk, ctx, prob(4096, 16, 4096, 'T', 'N', GT_DT_BF16, GT_DT_BF16, GT_DT_F32), 20);
    bk->close(ctx);
}

int main(int argc, char **argv)
{
    gt_test_mode(argc, argv);
    if (gt_test_cpu()) {
        RUN(test_dtypes);
        RUN(test_compute);
        RUN(test_unsupported);
        RUN(test_epilogue);
        RUN(test_desc);
        RUN(test_codecs);
        RUN(test_rel_err);
        RUN(test_is_bad);
        RUN(test_sampling);
        RUN(test_sampled_check);
        RUN(test_fp8);
        RUN(test_config);
        RUN(test_nvrtc);
        RUN(test_open);
    }
    if (gt_test_gpu())
        RUN(test_gpu);
    return gt_test_done();
}

#else /* !GT_WITH_CUDA */

static void test_absent(void)
{
    /* Built without CUDA: the registry must not offer the backend. */
    CHECK(gt_bk_find("cuda") == NULL);
    CHECK(gt_bk_find("cpu") == &gt_bk_cpu);
}

int main(int argc, char **argv)
{
    gt_test_mode(argc, argv);
    if (gt_test_cpu())
        RUN(test_absent);
    if (gt_test_gpu())
        gt_test_skip("gpu", "built without CUDA");
    return gt_test_done();
}

#endif
