#!/usr/bin/env python3
"""bench/cuda_service.py's reading of GEMM labels (gt_problem_label): fp8 and other type
names, batched GEMMs' work counted per batch times the batch. Issue 18: an fp8 label
crashed the script (int('f8e4m3')), and a batched GEMM's TFLOP/s and % of roofline left
out its batch count."""

from _bench_check import check, done  # bench/ on the import path first

import cuda_service  # noqa: E402

lab, m, n, k, b, flops, byts = cuda_service.label_work("bf16 TN 4096x1x4096")
check("bf16: short label", lab == "4096x1x4096")
check("bf16: sizes", (m, n, k, b) == (4096, 1, 4096, 1))
check("bf16: flops", flops == 2.0 * 4096 * 4096)
check("bf16: bytes (A, B, D in 2 bytes)", byts == 2.0 * (4096 * 4096 + 4096 + 4096))

lab, m, n, k, b, flops, byts = cuda_service.label_work("f8e4m3 TN 14336x1x4096")
check("fp8: label kept whole", lab == "f8e4m3 TN 14336x1x4096")
check("fp8: sizes", (m, n, k, b) == (14336, 1, 4096, 1))
check("fp8: bytes (A, B in 1 byte, D as bf16)", byts == 14336 * 4096 + 4096 + 2.0 * 14336)

lab, m, n, k, b, flops, byts = cuda_service.label_work("bf16 NT 4096x2048x4096 b8")
check("batched: sizes and batch", (m, n, k, b) == (4096, 2048, 4096, 8))
check("batched: flops times the batch", flops == 8 * 2.0 * 4096 * 2048 * 4096)
check("batched: bytes times the batch", byts == 8 * 2.0 * (4096 * 4096 + 4096 * 2048 + 4096 * 2048))

# the family columns: the library, the generated families, and the mma family's persistent
# (mma_p), clustered (mma_c) and pingpong (mma_pp) kernels apart, from the JSON text or the parsed config
check("family: cuBLASLt config", cuda_service.family('{"algo_id":66,"tile":20}') == "cublaslt")
check("family: gemv", cuda_service.family({"family": "gemv", "vec": 8}) == "gemv")
check("family: mma, a CTA per tile", cuda_service.family('{"family":"mma","inst":"wgmma","bn":256}') == "mma")
check("family: mma, persistent", cuda_service.family('{"family":"mma","ctas":132}') == "mma_p")
check("family: mma, clusters", cuda_service.family({"family": "mma", "ctas": 132, "cluster": 2}) == "mma_c")
check("family: mma, pingpong", cuda_service.family('{"family":"mma","ctas":132,"pingpong":1}') == "mma_pp")
check("family: not JSON", cuda_service.family("{") == "?")

lab, m, n, k, b, flops, byts = cuda_service.label_work("f32 NN 2048x64x1")
check("f32: 4-byte elements", byts == 4.0 * (2048 + 64 + 2048 * 64))

done()
