#!/usr/bin/env bash
# bench/preload_proof.sh [BUILD_DIR] [preload_proof.py options]
#
# The H100 proof of libgemmtune-preload.so (bench/preload_proof.py): builds
# the CUDA targets it needs into BUILD_DIR (default build-proof; an existing
# CUDA build is reused), then records a PyTorch program's Linear GEMMs, tunes
# them with gemmtuned + one cuda worker, and times/compares the program with
# and without the shim. Results and logs go to $OUT (default
# /tmp/preload-proof). About 4-5 minutes on one H100 with a warm build.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-proof}
[ $# -gt 0 ] && shift
out=${OUT:-/tmp/preload-proof}
mkdir -p "$out"
if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log"
fi
grep -q '^GT_WITH_CUDA:BOOL=ON' "$build/CMakeCache.txt" ||
    { echo "$build was configured without CUDA (GT_WITH_CUDA=OFF)" >&2; exit 1; }
cmake --build "$build" -j"$(nproc)" --target gemmtuned gemmtune gemmtune-worker \
    gemmtune-preload gt-lt-linear gemmtune-lookup-example >"$out/build.log" 2>&1 ||
    { tail -30 "$out/build.log" >&2; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
exec python3 bench/preload_proof.py --build "$build" --out "$out" "$@"
