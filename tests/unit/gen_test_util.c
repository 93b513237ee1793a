/* gen_test_util.c: helpers the generated-family tests share
 * (gen_test_util.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_test_util.h"
#include "gt_test.h"

#ifdef GT_WITH_HIP
#include "gen_hip.h"
#endif

gt_problem gen_test_prob(int64_t m, int64_t n, int64_t k, gt_dtype in, gt_dtype out)
{
    gt_problem p;
    gt_problem_init(&p, m, n, k);
    p.trans_a = 'T';
    p.trans_b = 'N';
    p.a_type = p.b_type = in;
    p.c_type = p.d_type = out;
    p.compute_type = p.scale_type = GT_DT_F32;
    gt_problem_default_ld(&p);
    gt_problem_finish(&p);
    return p;
}

gt_problem gen_test_prob_f8(int64_t m, int64_t n, int64_t k, gt_dtype a, gt_dtype b, gt_dtype out)
{
    gt_problem p = gen_test_prob(m, n, k, GT_DT_F8E4M3, out);
    p.a_type = a;
    p.b_type = b;
    gt_problem_finish(&p);
    return p;
}

const int64_t gen_test_llama[5][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336},
                                      {128256, 4096}};

int gen_test_hiprtc_ready(char *why, size_t len)
{
#ifdef GT_WITH_HIP
    why[0] = 0;
    if (!gt_hip_rtc_available(why, len)) {
        /* scripts/test installs HIP and sets GT_REQUIRE_HIP=1: there a
         * missing hipRTC is a broken setup, not a reason to skip. */
        const char *req = getenv("GT_REQUIRE_HIP");
        CHECK_MSG(!(req && !strcmp(req, "1")), "GT_REQUIRE_HIP=1 but hipRTC is missing: %s", why);
        gt_test_skip("hip", why);
        CHECK(why[0] != 0); /* the skip names its reason */
        return 0;
    }
    fprintf(stderr, "     %s\n", why);
    return 1;
#else
    snprintf(why, len, "the HIP port is not built");
    return 0;
#endif
}

void gen_test_fill(double *x, long long rows, long long ld, long long k, uint64_t *seed)
{
    for (long long i = 0; i < rows * ld; i++)
        x[i] = i % ld < k ? (double)((*seed = *seed * 6364136223846793005ULL + 1) >> 60) - 8 : 1e9;
}

long long gen_test_wrong(const double *out, const double *A, const double *B, long long m, long long n,
                         long long k, long long lda, long long ldb)
{
    long long wrong = 0;
    for (long long i = 0; i < m; i++)
        for (long long j = 0; j < n; j++) {
            double want = 0;
            for (long long kk = 0; kk < k; kk++)
                want += A[i * lda + kk] * B[j * ldb + kk];
            wrong += out[j * m + i] != want;
        }
    return wrong;
}

void gen_test_mma_pruned(gt_problem p, const gt_gen_dev *d, gt_mma_cfg c, const char *needle)
{
    char why[GT_GEN_REASON] = "", text[256];
    gt_problem_finish(&p);
    gt_mma_cfg_text(&c, text, sizeof text);
    CHECK_MSG(gt_mma_check(&p, d, &c, why, sizeof why) == 1 && strstr(why, needle), "%s: want '%s', got '%s'",
              text, needle, why);
}
