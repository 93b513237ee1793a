#!/usr/bin/env bash
# bench/scaling.sh: issue 20's real scaling on one node, in one call on a GPU machine: the
# four model logs submitted at once (bench/scaling.py) with one worker per GPU, then the
# same with one GPU, and the ratio. Over a bundle that scripts/gpu-bundle built here.
#
#   bench/scaling.sh BUNDLE [OUT]     env: BUDGET (200), ONE_TIMEOUT (380 s: the one-GPU
#                                     set is cut there and compared by throughput per GPU)
set -uo pipefail
cd "$(dirname "$0")/.."
B=$(realpath "${1:?usage: bench/scaling.sh BUNDLE [OUT]}")
OUT=$(realpath -m "${2:-${OUT:-/tmp/scaling}}")
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
LOGS="--log bench/llama3_8b_shapes.csv --log bench/llama3_1b_shapes.csv --log bench/llama3_70b_shapes.csv --log bench/mixtral_8x7b_shapes.csv"
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,power.limit --format=csv >"$OUT/gpu.txt" 2>&1
nvidia-smi topo -m >>"$OUT/gpu.txt" 2>&1
nproc >>"$OUT/gpu.txt"
# Each set starts with an empty compile cache of its own: the set run second
# must not find the first set's kernels compiled (both pay the NVRTC time)
GEMMTUNE_CACHE_DIR="$OUT/cache-all" python3 bench/scaling.py --build "$B/bin" --gpus all --budget "${BUDGET:-200}" $LOGS --out "$OUT/all" \
  --json "$OUT/all.json" >"$OUT/all.txt" 2>&1
echo "all rc=$?" >>"$OUT/rc.txt"
GEMMTUNE_CACHE_DIR="$OUT/cache-one" python3 bench/scaling.py --build "$B/bin" --gpus 0 --budget "${BUDGET:-200}" $LOGS --out "$OUT/one" \
  --timeout "${ONE_TIMEOUT:-380}" --json "$OUT/one.json" --ref "$OUT/all.json" >"$OUT/one.txt" 2>&1
echo "one rc=$?" >>"$OUT/rc.txt"
# the 1-GPU set is the reference: the ratio printed from it, the other way round
python3 - "$OUT/one.json" "$OUT/all.json" >"$OUT/ratio.txt" 2>&1 <<'PY'
import json, sys
one, al = (json.load(open(p)) for p in sys.argv[1:3])
if one["timed_out"] and not al["timed_out"] and one.get("jobs") and al.get("jobs"):
    # the 1-GPU set cut short: its wall projected from the N-GPU set's work (GPU-seconds of
    # jobs, lease to done) at the busy share the 1-GPU set kept; candidates/s is no measure
    # when a large GEMM's candidate costs thousands of times a small one's
    busy = one["jobs"]["work_gpu_s"] / one["jobs"]["wall_s"]
    proj = al["jobs"]["work_gpu_s"] / busy
    r = (proj / al["wall_s"]) / al["gpus"]
    print(f"{al['gpus']} GPUs against 1 (the 1-GPU set cut at {one['wall_s']:.0f} s after "
          f"{one['jobs']['work_gpu_s']:.1f} GPU-s of jobs, {100 * busy:.0f} % busy; projected to the "
          f"{al['gpus']}-GPU set's {al['jobs']['work_gpu_s']:.1f} GPU-s: {proj:.0f} s): "
          f"{proj / al['wall_s']:.2f}x, {r:.3f} of linear (projected)")
elif one["timed_out"] or al["timed_out"]:
    print("a set was cut short without the job report: no ratio")
else:
    r = (one["wall_s"] / al["wall_s"]) / al["gpus"]
    print(f"{al['gpus']} GPUs against 1: wall {one['wall_s']:.1f} -> {al['wall_s']:.1f} s = "
          f"{one['wall_s'] / al['wall_s']:.2f}x, {r:.3f} of linear")
PY
tar -C "$OUT" -czf "$OUT/all.tgz" --exclude='*.db' --exclude='*.db-*' --exclude='*.tgz' --exclude='cache-*' . 2>/dev/null
