#!/usr/bin/env bash
# bench/cutlass_probe/build.sh: builds `probe`, a study of CUTLASS 3.x SM90 GEMMs against
# cuBLASLt on the 15 Llama-3-8B shapes with n >= 128 (issue 19: is CUTLASS, instantiated by
# this project, a road to generated kernels that beat cuBLASLt at prefill?). Not part of the
# build or the tests: gemmtune depends on nothing here.
#
# What it does, per shape (bf16 TN in BLAS terms: A m x k and B n x k, both K-contiguous,
# D m x n column-major; f32 accumulation; random inputs, 4 rotating sets where they fit in
# 200 MB): times cuBLASLt's heuristic list (up to 32 algos, the first is the default) and 12
# CUTLASS kernels (warp-specialized cooperative or ping-pong, persistent or stream-K, tiles
# 64-256, clusters 1x1/2x1/1x2) at every swizzle (1, 2, 4, 8), raster order (M, N) and, for
# stream-K, split count 1-4; median of 5 batches of CUDA-event timings. It prints each
# kernel's best and, per shape, the CUTLASS best against cuBLASLt's best.
# It does NOT validate outputs: it is a design study (which road to build). A family built
# from it validates every candidate against the reference like every other family.
#
# CUTLASS comes from the nvidia-cutlass package on the Python package index (its headers,
# cutlass_library/source/include), never copied into this repository.
# Usage: bench/cutlass_probe/build.sh [OUT_DIR]   (needs nvcc >= 12.x, CUDA 13 used; sm_90a)
# Then on an H100: OUT_DIR/probe
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "${1:-$here/out}")
mkdir -p "$out"
if [ ! -d "$out/whl/cutlass_library/source/include" ]; then
  python3 -m pip download --no-deps --dest "$out" nvidia-cutlass
  python3 -m zipfile -e "$out"/nvidia_cutlass-*.whl "$out/whl"
fi
inc="$out/whl/cutlass_library/source"
flags=(-std=c++17 -O3 -arch=sm_90a --expt-relaxed-constexpr -DNDEBUG -I"$inc/include" -I"$inc/tools/util/include")
for f in i1 i2 i3; do nvcc "${flags[@]}" -c "$here/$f.cu" -o "$out/$f.o" & done
wait
nvcc "${flags[@]}" "$here/main.cu" "$out"/i1.o "$out"/i2.o "$out"/i3.o -lcublasLt -o "$out/probe"
echo "built $out/probe"
