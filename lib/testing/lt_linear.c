/* lt_linear.c: gt-lt-linear, Llama-3-8B Linear layers through cuBLASLt the
 * way PyTorch calls it (bench/preload_proof.py uses it when PyTorch is not
 * installed; it needs a GPU).
 *
 *   gt-lt-linear record OUTDIR T1,T2,...            10 calls of every layer
 *   gt-lt-linear time OUTDIR T1,T2,... TAG [BASETAG] time every layer, save
 *                                                   its output as TAG, compare
 *                                                   with BASETAG's
 *
 * Every call creates its descriptors, asks cublasLtMatmulAlgoGetHeuristic
 * for one algorithm (32 MiB workspace, alignments of the actual pointers)
 * and runs cublasLtMatmul with it, then destroys the descriptors: what
 * PyTorch's bf16 F.linear does with preferred_blas_library('cublaslt'), so
 * libgemmtune-preload.so sees the same calls. Timing: a CUDA graph of `reps`
 * calls (the host-side heuristic runs at capture), 3 warm replays, the
 * median of 9 timed replays. Prints one line per layer and token count:
 *   RESULT {"layer":"qkv","m":6144,"n":1,"k":4096,"us":12.34,"rel_err":0}
 * (BLAS terms: m = out features, n = tokens, k = in features). */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CKB(x)                                                                                     \
    do {                                                                                           \
        cublasStatus_t s_ = (x);                                                                   \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            fprintf(stderr, "%s: status %d\n", #x, (int)s_);                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static const struct {
    const char *name;
    int out_f, in_f;
} k_layers[] = {{"qkv", 6144, 4096}, {"o", 4096, 4096}, {"gate_up", 28672, 4096},
                {"down", 4096, 14336}};

static cublasLtHandle_t g_lt;
static void *g_ws;
static const size_t k_ws = (size_t)32 << 20;

static uint32_t align_of(const void *p)
{
    uint32_t a = 256;
    while (a > 1 && ((uintptr_t)p % a))
        a /= 2;
    return a;
}

/* One F.linear: D[m x n] = W^T X in BLAS terms, bf16, f32 accumulation. */
static void linear(cudaStream_t s, const void *w, const void *x, void *d, int m, int n, int k)
{
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulPreference_t pref;
    CKB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    int32_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CKB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CKB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    CKB(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, (uint64_t)k, (uint64_t)m, k));
    CKB(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, (uint64_t)k, (uint64_t)n, k));
    CKB(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, (uint64_t)m, (uint64_t)n, m));
    CKB(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = k_ws;
    uint32_t al[3] = {align_of(w), align_of(x), align_of(d)};
    CKB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                             sizeof ws));
    CKB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                             &al[0], sizeof al[0]));
    CKB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                             &al[1], sizeof al[1]));
    CKB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                             &al[2], sizeof al[2]));
    cublasLtMatmulHeuristicResult_t r;
    int nr = 0;
    CKB(cublasLtMatmulAlgoGetHeuristic(g_lt, op, la, lb, ld, ld, pref, 1, &r, &nr));
    if (nr < 1) {
        fprintf(stderr, "no algorithm for %dx%dx%d\n", m, n, k);
        exit(1);
    }
    const float alpha = 1.0f, beta = 0.0f;
    CKB(cublasLtMatmul(g_lt, op, &alpha, w, la, x, lb, &beta, d, ld, d, ld, &r.algo, g_ws,
                       r.workspaceSize, s));
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(op);
}

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Deterministic N(0,1)-ish values times scale (sum of uniforms). */
static void *make_input(size_t n, float scale, uint64_t seed)
{
    uint16_t *h = malloc(n * 2);
    uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    for (size_t i = 0; i < n; i++) {
        float acc = 0;
        for (int j = 0; j < 4; j++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            acc += (float)(s >> 40) / (float)(1 << 24) - 0.5f;
        }
        h[i] = to_bf16(acc * 1.7320508f * scale);
    }
    void *d;
    CK(cudaMalloc(&d, n * 2));
    CK(cudaMemcpy(d, h, n * 2, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "record") && strcmp(argv[1], "time")) ||
        (!strcmp(argv[1], "time") && argc < 5)) {
        fprintf(stderr, "usage: %s record|time OUTDIR T1,T2,... [TAG [BASETAG]]\n", argv[0]);
        return 2;
    }
    int record = !strcmp(argv[1], "record");
    const char *dir = argv[2], *tag = argc > 4 ? argv[4] : NULL, *base = argc > 5 ? argv[5] : NULL;
    int tokens[16], nt = 0;
    for (char *p = argv[3]; *p && nt < 16;) {
        tokens[nt++] = (int)strtol(p, &p, 10);
        if (*p == ',')
            p++;
    }
    CKB(cublasLtCreate(&g_lt));
    CK(cudaMalloc(&g_ws, k_ws));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    uint64_t seed = 1;
    for (int t = 0; t < nt; t++) {
        for (size_t l = 0; l < sizeof k_layers / sizeof k_layers[0]; l++) {
            int m = k_layers[l].out_f, n = tokens[t], k = k_layers[l].in_f;
            void *w = make_input((size_t)m * k, 1.0f / sqrtf((float)k), seed++);
            void *x = make_input((size_t)k * n, 1.0f, seed++);
            void *d;
            CK(cudaMalloc(&d, (size_t)m * n * 2));
            if (record) {
                for (int i = 0; i < 10; i++)
                    linear(s, w, x, d, m, n, k);
                CK(cudaStreamSynchronize(s));
                printf("recorded %s %dx%dx%d\n", k_layers[l].name, m, n, k);
            } else {
                for (int i = 0; i < 3; i++)
                    linear(s, w, x, d, m, n, k);
                CK(cudaStreamSynchronize(s));
                double est = 2.0 * m * n * k / 400e12 + (double)m * k * 2 / 2.5e12; /* s */
                int reps = (int)(2e-3 / est);
                reps = reps < 5 ? 5 : reps > 200 ? 200 : reps;
                cudaGraph_t g;
                cudaGraphExec_t ge;
                CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
                for (int i = 0; i < reps; i++)
                    linear(s, w, x, d, m, n, k);
                CK(cudaStreamEndCapture(s, &g));
                CK(cudaGraphInstantiate(&ge, g, 0));
                for (int i = 0; i < 3; i++)
                    CK(cudaGraphLaunch(ge, s));
                double us[9];
                for (int i = 0; i < 9; i++) {
                    CK(cudaEventRecord(e0, s));
                    CK(cudaGraphLaunch(ge, s));
                    CK(cudaEventRecord(e1, s));
                    CK(cudaEventSynchronize(e1));
                    float ms;
                    CK(cudaEventElapsedTime(&ms, e0, e1));
                    us[i] = ms * 1000.0 / reps;
                }
                qsort(us, 9, sizeof us[0], cmp_double);
                CK(cudaGraphExecDestroy(ge));
                CK(cudaGraphDestroy(g));
                size_t nd = (size_t)m * n;
                uint16_t *out = malloc(nd * 2), *ref = malloc(nd * 2);
                CK(cudaMemcpy(out, d, nd * 2, cudaMemcpyDeviceToHost));
                char path[1024];
                snprintf(path, sizeof path, "%s/%s_%s_%d.bin", dir, tag, k_layers[l].name, n);
                FILE *f = fopen(path, "wb");
                if (!f || fwrite(out, 2, nd, f) != nd || fclose(f)) {
                    fprintf(stderr, "%s: cannot write\n", path);
                    return 1;
                }
                double rel = -1;
                if (base) {
                    snprintf(path, sizeof path, "%s/%s_%s_%d.bin", dir, base, k_layers[l].name, n);
                    f = fopen(path, "rb");
                    if (f && fread(ref, 2, nd, f) == nd) {
                        double md = 0, mv = 0;
                        for (size_t i = 0; i < nd; i++) {
                            double a = from_bf16(ref[i]), b = from_bf16(out[i]);
                            md = fmax(md, fabs(a - b));
                            mv = fmax(mv, fabs(a));
                            if (!isfinite(b))
                                md = INFINITY;
                        }
                        rel = mv > 0 ? md / mv : md;
                    }
                    if (f)
                        fclose(f);
                }
                free(out);
                free(ref);
                printf("RESULT {\"layer\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,\"us\":%.4f,"
                       "\"rel_err\":%.6g}\n",
                       k_layers[l].name, m, n, k, us[4], rel);
                fflush(stdout);
            }
            CK(cudaFree(w));
            CK(cudaFree(x));
            CK(cudaFree(d));
        }
    }
    cublasLtDestroy(g_lt);
    return 0;
}
