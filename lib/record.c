/* record.c: the preload shim's record file (GEMMTUNE_RECORD): one
 * hipBLASLt bench line per GEMM seen, the format gemmtune ingests with every
 * field. Pure host, tested in every build (test_libgemmtune.c). */
#include "gt_lib.h"

#include <stdio.h>

/* hipBLASLt's spelling of a storage / compute type. */
static const char *hip_name(gt_dtype t, int compute)
{
    switch (t) {
    case GT_DT_F32: return compute ? "c_f32_r" : "f32_r";
    case GT_DT_TF32: return compute ? "c_xf32_r" : "xf32_r";
    case GT_DT_F64: return compute ? "c_f64_r" : "f64_r";
    case GT_DT_F16: return compute ? "c_f16_r" : "f16_r";
    case GT_DT_BF16: return "bf16_r";
    case GT_DT_F8E4M3: return "f8_r";
    case GT_DT_F8E5M2: return "bf8_r";
    case GT_DT_I8: return "i8_r";
    case GT_DT_I32: return compute ? "c_i32_r" : "i32_r";
    default: return "invalid";
    }
}

int gt_lib_record_line(const gt_problem *p, int64_t calls, char *buf, size_t len)
{
    return snprintf(
        buf, len,
        "- {function: matmul, M: %lld, N: %lld, K: %lld, lda: %lld, ldb: %lld, ldc: %lld, "
        "ldd: %lld, stride_a: %lld, stride_b: %lld, stride_c: %lld, stride_d: %lld, "
        "alpha: %.17g, beta: %.17g, transA: %c, transB: %c, batch_count: %lld, "
        "bias_vector: %s, a_type: %s, b_type: %s, c_type: %s, d_type: %s, scale_type: %s, "
        "bias_type: %s, compute_type: %s, activation_type: %s, call_count: %lld}\n",
        (long long)p->m, (long long)p->n, (long long)p->k, (long long)p->lda, (long long)p->ldb,
        (long long)p->ldc, (long long)p->ldd, (long long)p->stride_a, (long long)p->stride_b,
        (long long)p->stride_c, (long long)p->stride_d, p->alpha, p->beta, p->trans_a,
        p->trans_b, (long long)p->batch, p->bias ? "true" : "false", hip_name(p->a_type, 0),
        hip_name(p->b_type, 0), hip_name(p->c_type, 0), hip_name(p->d_type, 0),
        hip_name(p->scale_type, 0),
        hip_name(p->bias && p->bias_type != GT_DT_INVALID ? p->bias_type : p->d_type, 0),
        hip_name(p->compute_type, 1), p->activation, (long long)(calls > 0 ? calls : 1));
}
