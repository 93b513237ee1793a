/* lt_tuple.c: a cuBLASLt descriptor tuple -> the gemmtune problem, the
 * inverse of cu_map.c (gt_cu_map_problem + gt_cu_desc_create), through the
 * same code tables (cu_types.c). Pure host: libgemmtune's
 * gt_db_cublaslt_algo_for and the preload shim map an application's
 * descriptors with it, in builds without CUDA too. */
#include <stdio.h>
#include <string.h>

#include "gt_caps.h"
#include "gt_cu_host.h"

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return -1;                                                                                 \
    } while (0)

static int isf8(gt_dtype t) { return t == GT_DT_F8E4M3 || t == GT_DT_F8E5M2; }

int gt_cu_lt_to_problem(const gt_cu_lt_tuple *d, double alpha, double beta, gt_problem *p, char *err,
                        size_t errlen)
{
    static const char *const names[4] = {"A", "B", "C", "D"};
    gt_dtype t[4];
    for (int i = 0; i < 4; i++) {
        const gt_cu_lt_layout *l = &d->l[i];
        if (l->order != GT_CU_ORDER_COL)
            FAIL("layout %s: order %d is not column-major", names[i], (int)l->order);
        if (l->plane != 0)
            FAIL("layout %s: planar complex", names[i]);
        if ((t[i] = gt_cu_type_of(l->type)) == GT_DT_INVALID)
            FAIL("layout %s: data type %d not modelled", names[i], (int)l->type);
        if (l->rows == 0 || l->cols == 0 || l->rows > INT64_MAX / 2 || l->cols > INT64_MAX / 2)
            FAIL("layout %s: empty or huge (%llu x %llu)", names[i], (unsigned long long)l->rows,
                 (unsigned long long)l->cols);
        if (l->batch < 1)
            FAIL("layout %s: batch count %d", names[i], (int)l->batch);
    }
    if (d->fill != GT_CU_FILL_FULL)
        FAIL("fill mode %d: only full matrices", (int)d->fill);
    if (d->transc != GT_CU_OP_N)
        FAIL("transc %d: only N", (int)d->transc);
    if ((d->transa != GT_CU_OP_N && d->transa != GT_CU_OP_T) ||
        (d->transb != GT_CU_OP_N && d->transb != GT_CU_OP_T))
        FAIL("transa/transb %d/%d: only N or T", (int)d->transa, (int)d->transb);
    if (d->sm_count != 0)
        FAIL("SM count target %d: tuned on the whole device", (int)d->sm_count);
    if (d->fast_accum != 0)
        FAIL("fp8 fast accumulation is not modelled");
    if (d->a_scale_mode != 0 || d->b_scale_mode != 0)
        FAIL("A/B scale mode %d/%d: only scalar f32 scales", (int)d->a_scale_mode,
             (int)d->b_scale_mode);
    if (d->ptr_flags & GT_CU_HAS_AUX)
        FAIL("epilogue aux output is not modelled");
    if (d->pointer_mode != GT_CU_POINTER_HOST && d->pointer_mode != GT_CU_POINTER_DEVICE)
        FAIL("pointer mode %d: alpha/beta vectors are not modelled", (int)d->pointer_mode);

    const gt_cu_lt_layout *A = &d->l[0], *B = &d->l[1], *C = &d->l[2], *D = &d->l[3];
    int64_t m = (int64_t)D->rows, n = (int64_t)D->cols;
    int an = d->transa == GT_CU_OP_N, bn = d->transb == GT_CU_OP_N;
    int64_t k = (int64_t)(an ? A->cols : A->rows);
    if ((int64_t)(an ? A->rows : A->cols) != m)
        FAIL("layout A %llux%llu does not fit D %lldx%lld (trans %c)",
             (unsigned long long)A->rows, (unsigned long long)A->cols, (long long)m,
             (long long)n, an ? 'N' : 'T');
    if ((int64_t)(bn ? B->rows : B->cols) != k || (int64_t)(bn ? B->cols : B->rows) != n)
        FAIL("layout B %llux%llu does not fit k=%lld n=%lld (trans %c)",
             (unsigned long long)B->rows, (unsigned long long)B->cols, (long long)k, (long long)n,
             bn ? 'N' : 'T');
    if ((int64_t)C->rows != m || (int64_t)C->cols != n)
        FAIL("layout C %llux%llu differs from D %lldx%lld", (unsigned long long)C->rows,
             (unsigned long long)C->cols, (long long)m, (long long)n);
    int32_t batch = D->batch;
    if (A->batch != batch || B->batch != batch || C->batch != batch)
        FAIL("batch counts differ (%d/%d/%d/%d)", (int)A->batch, (int)B->batch, (int)C->batch,
             (int)batch);

    gt_problem_init(p, m, n, k);
    p->trans_a = an ? 'N' : 'T';
    p->trans_b = bn ? 'N' : 'T';
    p->batch = batch;
    p->lda = A->ld;
    p->ldb = B->ld;
    p->ldc = C->ld;
    p->ldd = D->ld;
    if (batch > 1) {
        p->stride_a = A->stride;
        p->stride_b = B->stride;
        p->stride_c = C->stride;
        p->stride_d = D->stride;
    } else {
        /* The tuning never sets strides for one batch (gt_cu_desc_create)
         * and the log parsers zero them: they mean nothing then. */
        p->stride_a = p->stride_b = p->stride_c = p->stride_d = 0;
    }
    p->a_type = t[0];
    p->b_type = t[1];
    p->c_type = t[2];
    p->d_type = t[3];
    if ((p->compute_type = gt_cu_compute_of(d->compute)) == GT_DT_INVALID)
        FAIL("compute type %d not modelled", (int)d->compute);
    if ((p->scale_type = gt_cu_type_of(d->scale)) == GT_DT_INVALID)
        FAIL("scale type %d not modelled", (int)d->scale);
    if (isf8(p->a_type) || isf8(p->b_type)) {
        /* The tuning gives fp8 A/B scale pointers always and a D scale
         * pointer exactly when D is fp8 (common/caps.c: map_fp8). */
        if (!(d->ptr_flags & GT_CU_HAS_A_SCALE) || !(d->ptr_flags & GT_CU_HAS_B_SCALE))
            FAIL("fp8 without A/B scale pointers");
        if (!!(d->ptr_flags & GT_CU_HAS_D_SCALE) != isf8(p->d_type))
            FAIL("fp8 D scale pointer %s for d_type %s",
                 (d->ptr_flags & GT_CU_HAS_D_SCALE) ? "set" : "missing", gt_dtype_name(p->d_type));
    } else if (d->ptr_flags & (GT_CU_HAS_A_SCALE | GT_CU_HAS_B_SCALE | GT_CU_HAS_D_SCALE)) {
        FAIL("scale pointers with non-fp8 inputs are not modelled");
    }
    p->alpha = alpha;
    p->beta = beta;
    int bias = 0;
    gt_caps_act act = GT_CAPS_ACT_NONE;
    if (gt_cu_epilogue_of(d->epilogue, &bias, &act) != 0)
        FAIL("epilogue %u not modelled", (unsigned)d->epilogue);
    snprintf(p->activation, sizeof p->activation, "%s",
             act == GT_CAPS_ACT_RELU ? "relu" : act == GT_CAPS_ACT_GELU ? "gelu" : "none");
    p->bias = bias;
    p->bias_type = GT_DT_INVALID;
    if (bias) {
        if (d->bias_type == -1)
            p->bias_type = gt_caps_cuda_default_bias(p);
        else if ((p->bias_type = gt_cu_type_of(d->bias_type)) == GT_DT_INVALID)
            FAIL("bias data type %d not modelled", (int)d->bias_type);
    }
    gt_problem_finish(p);
    char why[200];
    if (gt_problem_check(p, why, sizeof why) != 0)
        FAIL("%s", why);
    return 0;
}
