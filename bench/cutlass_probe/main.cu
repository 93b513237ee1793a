/* bench/cutlass_probe/main.cu: times cuBLASLt's heuristic list and the CUTLASS instances of
 * i1-i3.cu on the 15 Llama-3-8B shapes with n >= 128 (a design study, no validation: build.sh). */
#include "inst.h"
#include <cublasLt.h>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_bf16.h>
extern probe_inst insts1[4], insts2[4], insts3[4];
#define CK(x) do { cudaError_t e_ = (x); if (e_) { printf("cuda %s line %d\n", cudaGetErrorString(e_), __LINE__); exit(1);} } while (0)
static const int NSET = 4;
__global__ void fill(__nv_bfloat16 *p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995; h ^= h >> 15;
    p[i] = __float2bfloat16(((h & 0xffff) / 65536.0f - 0.5f));
  }
}
template <class F> static float time_it(F f, int reps) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; i++) f(i);
  std::vector<float> t;
  for (int r = 0; r < 5; r++) {
    cudaEventRecord(a);
    for (int i = 0; i < reps; i++) f(i);
    cudaEventRecord(b); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms * 1000 / reps);
  }
  std::sort(t.begin(), t.end()); return t[2];
}
int main(int argc, char **argv) {
  int shapes[][3] = {{6144,128,4096},{4096,128,4096},{28672,128,4096},{4096,128,14336},{128256,128,4096},
                     {6144,2048,4096},{4096,2048,4096},{28672,2048,4096},{4096,2048,14336},{128256,2048,4096},
                     {6144,8192,4096},{4096,8192,4096},{28672,8192,4096},{4096,8192,14336},{128256,8192,4096}};
  std::vector<probe_inst> all;
  for (int i = 0; i < 4; i++) { all.push_back(insts1[i]); all.push_back(insts2[i]); all.push_back(insts3[i]); }
  cublasLtHandle_t lt; cublasLtCreate(&lt);
  size_t wsn = 256 << 20; void *ws; CK(cudaMalloc(&ws, wsn));
  for (auto &s : shapes) {
    int m = s[0], n = s[1], k = s[2];
    size_t na = (size_t)m * k, nb = (size_t)k * n, nd = (size_t)m * n;
    int sets = std::max(1, std::min(NSET, (int)((200ull << 20) / ((na + nb + nd) * 2) + 1)));
    std::vector<__nv_bfloat16*> A(sets), B(sets), D(sets);
    for (int i = 0; i < sets; i++) { CK(cudaMalloc(&A[i], na*2)); CK(cudaMalloc(&B[i], nb*2)); CK(cudaMalloc(&D[i], nd*2));
      fill<<<1024,256>>>(A[i], na, 1+i); fill<<<1024,256>>>(B[i], nb, 100+i); }
    CK(cudaDeviceSynchronize());
    double flop = 2.0 * m * n * k;
    int reps = std::max(3, std::min(50, (int)(2e12 / flop * 20)));
    // cuBLASLt: TN, A k x m (lda k), B k x n (ldb k), D m x n
    cublasLtMatmulDesc_t op; cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasOperation_t tA = CUBLAS_OP_T, tB = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tA, sizeof tA);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tB, sizeof tB);
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, k, m, k); cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, n, k);
    cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, m, n, m);
    cublasLtMatmulPreference_t pref; cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsn, sizeof wsn);
    cublasLtMatmulHeuristicResult_t hr[32]; int nr = 0;
    cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 32, hr, &nr);
    float alpha = 1, beta = 0, lt_def = 0, lt_best = 1e30; int lt_bi = -1;
    for (int h = 0; h < nr; h++) {
      float t = time_it([&](int i) { int j = i % sets; cublasLtMatmul(lt, op, &alpha, A[j], la, B[j], lb, &beta, D[j], ld, D[j], ld, &hr[h].algo, ws, wsn, 0); }, reps);
      if (cudaGetLastError()) continue;
      if (h == 0) lt_def = t;
      if (t < lt_best) { lt_best = t; lt_bi = h; }
    }
    float cb = 1e30; const char *cbn = "-"; int cbs = 0, cbr = 0, cbsp = 0;
    for (auto &in : all) {
      float best_i = 1e30; int bs = 0, br = 0, bsp = 0;
      for (int swz : {1, 2, 4, 8}) for (int ro : {1, 2}) for (int sp : {1, 2, 3, 4}) {
        bool sk = strncmp(in.name, "sk_", 3) == 0;
        if (!sk && sp > 1) continue;
        probe_args pa{m, n, k, A[0], B[0], D[0], swz, ro, sp};
        if (in.fn(pa, ws, wsn, 0) != 0) { cudaGetLastError(); continue; }
        if (cudaDeviceSynchronize()) { printf("fault %s\n", in.name); return 1; }
        float t = time_it([&](int i) { int j = i % sets; probe_args q{m, n, k, A[j], B[j], D[j], swz, ro, sp}; in.fn(q, ws, wsn, 0); }, reps);
        if (t < best_i) { best_i = t; bs = swz; br = ro; bsp = sp; }
      }
      printf("  %dx%dx%d %-22s %8.1f us  %.3f of lt_best (swz %d ro %d sp %d)\n", m, n, k, in.name, best_i, lt_best / best_i, bs, br, bsp);
      if (best_i < cb) { cb = best_i; cbn = in.name; cbs = bs; cbr = br; cbsp = bsp; }
    }
    printf("SHAPE %dx%dx%d lt_default %.1f lt_best %.1f (algo %d of %d) cutlass_best %.1f %s swz %d ro %d sp %d  ratio %.3f  %.0f TFLOP/s\n",
           m, n, k, lt_def, lt_best, lt_bi, nr, cb, cbn, cbs, cbr, cbsp, lt_best / cb, flop / cb / 1e6);
    fflush(stdout);
    for (int i = 0; i < sets; i++) { cudaFree(A[i]); cudaFree(B[i]); cudaFree(D[i]); }
  }
  return 0;
}
