#!/usr/bin/env bash
# bench/fairness.sh: runs submitted together share the workers (issue 20). Submits three
# runs at once (the f32 cpu logs of tests/data and examples: different GEMMs, so no run
# reuses another's compiled kernels) to one coordinator with two cpu workers, waits for
# all, and prints per run when its first result came and when it finished, in ms from
# the first lease. Before the lease order shared the workers, the third run waited for
# the first two to drain their queues.
#   bench/fairness.sh [BUILD]     (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-build}")
T=$(mktemp -d /tmp/gt-fairness.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$T"' EXIT
LOGS=(tests/data/cpu_small_f32.log tests/data/cpu_two_f32.log examples/llama3_8b_cpu_f32.log)
"$BIN"/gemmtuned --db "$T/g.db" --http 127.0.0.1:0 --listen tcp://127.0.0.1:0 --port-file "$T/ports" \
  2>"$T/gemmtuned.log" &
for _ in $(seq 100); do [ -s "$T/ports" ] && break; sleep 0.1; done
H=http://127.0.0.1:$(sed -n 's/^http=//p' "$T/ports")
W=$(sed -n 's/^worker=//p' "$T/ports")
for i in 0 1 2; do
  curl -sf -o /dev/null -X POST --data-binary @"${LOGS[$i]}" \
    "$H/v1/runs?name=$(basename "${LOGS[$i]}" .log)&budget=16&shard_size=4&ncpu=1&min_time_ms=1&repeats=3"
done
for w in 1 2; do
  GEMMTUNE_CACHE_DIR=$T/cache "$BIN"/gemmtune-worker --server "$W" --backend cpu 2>"$T/w$w.log" &
done
for _ in $(seq 1200); do
  [ "$(sqlite3 "$T/g.db" "SELECT COUNT(*) FROM runs WHERE state = 'running'")" = 0 ] && break
  sleep 0.5
done
echo "# $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, 2 cpu workers, 3 runs submitted together"
sqlite3 -header -column "$T/g.db" "SELECT r.id, r.name, r.state,
  (SELECT MIN(created_ms) FROM results x WHERE x.run_id = r.id) - (SELECT MIN(started_ms) FROM runs) AS first_result_ms,
  r.finished_ms - (SELECT MIN(started_ms) FROM runs) AS done_ms FROM runs r"
