#!/usr/bin/env bash
# GPU fault test (run by hand on a CUDA machine; not part of ctest): a real
# gemmtuned and a real cuda worker, a small bf16 TN log, and two test-only
# candidates of the cuda backend added to every problem through the run
# option "candidates":
#   {"family":"fault","kind":"oob"}   a kernel storing 1 TiB past D: an illegal
#                                     address, a sticky CUDA error; the bench
#                                     process exits (status 70) and restarts
#   {"family":"fault","kind":"hang"}  a kernel spinning on a flag nobody sets;
#                                     the supervisor kills the bench process
#                                     after --candidate-timeout
# The run must complete, both must be recorded failed with 'crashed:' /
# 'hung:' (or a CUDA error) reasons, never valid, and every problem must have
# a valid final best; the generated gemv family must have run too.
#   GT_BIN=build bash tests/gpu/test_cuda_faults.sh      (exit 77: no GPU)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export GT_BIN=${GT_BIN:-$here/../../build}
export GT_TEST_DATA=${GT_TEST_DATA:-$here/../data}
if ! "$GT_BIN/gemmtune-worker" --help 2>&1 | grep -q cuda || ! command -v nvidia-smi >/dev/null ||
   ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no CUDA build or no GPU"; exit 77
fi
source "$here/../integration/lib.sh"

# Small enumeration: the worker's first silence limit also covers it.
export GT_CUDA_ENUM_SECONDS=3 GT_CUDA_MAX_CANDIDATES=200
start_coordinator --lease-timeout 60
"$GT_BIN"/gemmtune-worker --server "$WURL" --backend cuda --device 0 --candidate-timeout 5 \
  2>>"$T/w1.log" &
WPID=$!
PIDS+=("$WPID")

cat >"$T/decode.log" <<'LOG'
- {function: matmul, M: 4096, N: 1, K: 4096, lda: 4096, ldb: 4096, ldc: 4096, ldd: 4096, transA: T, transB: N, batch_count: 1, a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, scale_type: f32_r, compute_type: c_f32_r, call_count: 10}
- {function: matmul, M: 2048, N: 16, K: 1024, lda: 1024, ldb: 1024, ldc: 2048, ldd: 2048, transA: T, transB: N, batch_count: 1, a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, scale_type: f32_r, compute_type: c_f32_r, call_count: 10}
LOG
body=$(sqlite3 :memory: "SELECT json_object('log', CAST(readfile('$T/decode.log') AS TEXT),
  'name', 'cuda-faults', 'backend', 'cuda', 'budget', 16, 'shard_size', 4, 'min_time_ms', 1,
  'repeats', 3, 'final_k', 2,
  'candidates', json('[{\"family\":\"fault\",\"kind\":\"oob\"},{\"family\":\"fault\",\"kind\":\"hang\"}]'));")
code=$(curl -s -o "$T/submit.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  --data-binary "$body" "$HTTP/v1/runs")
check "run with the fault candidates accepted (HTTP $code)" [ "$code" = 201 ]
RUN=$(json "$T/submit.json" '$.id')

state=$(wait_run "$RUN" 900)
check "run completed despite them (state=$state)" [ "$state" = "done" ]
q() { sqlite3 "$DB" "$1"; }
check "the out-of-bounds kernel is recorded failed, per problem, as a crash or CUDA error" \
  [ "$(q "SELECT COUNT(*) FROM results WHERE run_id = $RUN AND valid = 0
        AND config LIKE '%\"kind\":\"oob\"%' AND (reason LIKE 'crashed:%' OR reason LIKE '%illegal%'
        OR reason LIKE '%sticky%')")" = 2 ]
check "the spinning kernel is recorded as hung, per problem" \
  [ "$(q "SELECT COUNT(*) FROM results WHERE run_id = $RUN AND valid = 0
        AND config LIKE '%\"kind\":\"hang\"%' AND reason LIKE 'hung:%'")" = 2 ]
check "no fault candidate is ever valid or in a final phase" \
  [ "$(q "SELECT COUNT(*) FROM results WHERE run_id = $RUN AND config LIKE '%\"family\":\"fault\"%'
        AND (valid = 1 OR phase = 'final')")" = 0 ]
check "every problem has a valid final best, not slower than its baseline" \
  [ "$(q "SELECT COUNT(*) FROM problem_best WHERE run_id = $RUN AND phase = 'final'
        AND time_us > 0 AND time_us <= baseline_us")" = 2 ]
check "generated gemv candidates ran and validated" \
  [ "$(q "SELECT COUNT(*) FROM results WHERE run_id = $RUN AND valid = 1
        AND config LIKE '%\"family\":\"gemv\"%'")" -gt 0 ]
check "candidates after a fault were measured (no sticky error leaked into them)" \
  [ "$(q "SELECT COUNT(*) FROM results WHERE run_id = $RUN AND reason LIKE '%sticky%'
        AND config NOT LIKE '%\"family\":\"fault\"%'")" = 0 ]
check "the worker survived (bench process restarted)" kill -0 "$WPID"
check "the worker logged both restarts" \
  bash -c "grep -q 'hung: no progress' '$T/w1.log' && grep -q 'crashed' '$T/w1.log'"
q "SELECT phase, valid, substr(reason, 1, 90), substr(config, 1, 60) FROM results WHERE run_id = $RUN
   AND config LIKE '%fault%'" | sed 's/^/    /'
q "SELECT p.label, b.time_us, b.baseline_us, substr(b.config, 1, 80) FROM problem_best b
   JOIN problems p ON p.id = b.problem_id WHERE b.run_id = $RUN" | sed 's/^/    /'
finish
