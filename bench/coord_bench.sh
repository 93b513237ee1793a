#!/usr/bin/env bash
# coord_bench.sh: the coordinator's own performance benchmark (issue 6).
# Starts a real gemmtuned on 127.0.0.1 (ephemeral ports, a temporary database),
# submits a big CPU workload (200 GEMMs, budget 256, shard 64), then for
# DURATION seconds runs gt-coord-bench (N simulated workers reporting fake
# results as fast as they can) and wrk on the HTTP API (GET /v1/runs/1 and
# GET /v1/runs) side by side; gt-coord-bench goes on until the run is done.
#
#   bench/coord_bench.sh [--save] [--build DIR]
#   env: WORKERS (4, at most 1024) BATCH (16) DURATION (20) GEMMS (200) BUDGET (256) SHARD (64)
#        RATE (0: each worker reports as fast as it is answered, the coordinator's
#        capacity; R: at most R results/s per worker, an offered load to read
#        latencies at)
#        MAX_TIME (120) STRACE (1: strace -c the coordinator for 5 s after the window)
#        WRK_PATHS, WRK_DELAY_MS (0: wrk floods; D: each connection pauses D ms, a polling load), NO_WRK
#        KEEP_DB, KEEP_LOG (files to copy the coordinator's database and log to at the end)
#        TRACE (a file: every round trip of the window, gt-coord-bench --trace)
#        ASYNC (0: a thread per simulated worker; 1: the workers stepped by nng's callbacks,
#        a few threads in all: the load of remote workers without 256 threads on these cores)
# --save writes what it prints to bench/results/coord_bench.txt.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-cb
SAVE=0
while [ $# -gt 0 ]; do
  case $1 in
    --save) SAVE=1 ;;
    --build) BUILD=$2; shift ;;
    *) echo "usage: $0 [--save] [--build DIR]" >&2; exit 2 ;;
  esac
  shift
done
if [ "$SAVE" = 1 ]; then
  mkdir -p "$ROOT/bench/results"
  exec > >(tee "$ROOT/bench/results/coord_bench.txt") 2>&1
fi
WORKERS=${WORKERS:-4} BATCH=${BATCH:-16} DURATION=${DURATION:-20} GEMMS=${GEMMS:-200} RATE=${RATE:-0}
BUDGET=${BUDGET:-256} SHARD=${SHARD:-64} MAX_TIME=${MAX_TIME:-120} STRACE=${STRACE:-1} ASYNC=${ASYNC:-0}

if ! command -v wrk >/dev/null; then
  echo "installing wrk (Debian package)"
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get install -y -qq wrk >/dev/null || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq wrk >/dev/null; }
fi
if [ ! -x "$BUILD/gemmtuned" ] || [ ! -x "$BUILD/bench/gt-coord-bench" ]; then
  cmake -S "$ROOT" -B "$BUILD" >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" --target gt-coord-bench gemmtuned >/dev/null
fi

T=$(mktemp -d /tmp/gt-coord-bench.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.3
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "${KEEP_DB:-}" ] && [ -f "$T/coord.db" ]; then cp "$T/coord.db" "$KEEP_DB"; fi
  if [ -n "${KEEP_LOG:-}" ] && [ -f "$T/gemmtuned.log" ]; then cp "$T/gemmtuned.log" "$KEEP_LOG"; fi
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The workload: GEMMS distinct M,N,K (M: 10 sizes, N: the next index, K: 7
# sizes; all distinct for GEMMS <= 1000), as a CSV log.
awk -v n="$GEMMS" 'BEGIN { print "M,N,K"; for (i = 0; i < n; i++)
  printf "%d,%d,%d\n", 512 + 64 * (i % 10), 256 + 32 * int(i / 10), 512 + 128 * (i % 7) }' >"$T/gemms.csv"

"$BUILD/gemmtuned" --db "$T/coord.db" --http 127.0.0.1:0 --listen tcp://127.0.0.1:0 \
  --port-file "$T/ports" --log-level warn 2>>"$T/gemmtuned.log" &
COORD=$!
PIDS+=("$COORD")
for _ in $(seq 100); do [ -s "$T/ports" ] && break; sleep 0.1; done
[ -s "$T/ports" ] || { echo "gemmtuned did not start"; cat "$T/gemmtuned.log"; exit 1; }
HTTP="http://127.0.0.1:$(sed -n 's/^http=//p' "$T/ports")"
WURL=$(sed -n 's/^worker=//p' "$T/ports")

echo "# gt-coord-bench $(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "machine: $(nproc) CPU cores ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
if [ "$ASYNC" = 1 ]; then
  echo "NOTE: gemmtuned, $WORKERS simulated workers (stepped by nng's callback threads) and wrk (2 threads) all share these $(nproc) cores;"
else
  echo "NOTE: gemmtuned, $WORKERS simulated worker threads and wrk (2 threads) all share these $(nproc) cores;"
fi
echo "      the numbers are what the coordinator achieves while competing with its own load generators."
t0=$(date +%s.%N)
code=$(curl -s -o "$T/submit.json" -w '%{http_code}' -X POST --data-binary @"$T/gemms.csv" \
  -H 'Content-Type: text/plain' \
  "$HTTP/v1/runs?name=coord-bench&format=csv&backend=cpu&budget=$BUDGET&shard_size=$SHARD&ncpu=2")
t1=$(date +%s.%N)
[ "$code" = 201 ] || { echo "submit: HTTP $code: $(cat "$T/submit.json")"; exit 1; }
RUN=$(sqlite3 :memory: "SELECT json_extract(readfile('$T/submit.json'), '\$.id')")
CPU0=$(awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$COORD/stat")
echo "workload: $GEMMS GEMMs (CSV), backend cpu, budget $BUDGET, shard_size $SHARD -> $(sqlite3 :memory: \
  "SELECT json_extract(x,'\$.problems') || ' problems, ' || json_extract(x,'\$.jobs') || ' jobs, ' || json_extract(x,'\$.candidates') || ' candidates' FROM (SELECT readfile('$T/submit.json') x)"); submitted in $(echo "$t1 - $t0" | bc) s"

# WRK_PATHS (default "/v1/runs/RUN /v1/runs"), requested round-robin.
# WRK_DELAY_MS (0): each of wrk's 16 connections waits that long after an answer
# before its next request (wrk's Lua delay()): users polling the API, so its
# latency is read at that load; 0 is wrk's flood (as many requests as answered),
# which measures throughput and makes the latency a queue of wrk's own making.
WRK_PATHS=${WRK_PATHS:-"/v1/runs/$RUN /v1/runs"}
WRK_DELAY_MS=${WRK_DELAY_MS:-0}
{
  printf 'local paths = {'
  for p in $WRK_PATHS; do printf '"%s", ' "$p"; done
  printf '}\nlocal i = 0\nrequest = function()\n  i = i + 1\n  return wrk.format("GET", paths[(i %% #paths) + 1])\nend\n'
  if [ "$WRK_DELAY_MS" != 0 ]; then printf 'delay = function()\n  return %d\nend\n' "$WRK_DELAY_MS"; fi
} >"$T/urls.lua"
echo "load: $WORKERS workers x batch $BATCH$([ "$RATE" != 0 ] && echo ", at most $RATE results/s each") on $WURL for ${DURATION} s; wrk -t2 -c16 --latency on GET $WRK_PATHS$([ "$WRK_DELAY_MS" != 0 ] && echo ", each connection pausing $WRK_DELAY_MS ms between requests")"
echo
WRK=
if [ "${NO_WRK:-0}" != 1 ]; then
  wrk -t2 -c16 -d"${DURATION}s" --latency -s "$T/urls.lua" "$HTTP" >"$T/wrk.txt" 2>&1 &
  WRK=$!
  PIDS+=("$WRK")
fi
"$BUILD/bench/gt-coord-bench" --server "$WURL" --db "$T/coord.db" --run "$RUN" --workers "$WORKERS" \
  --batch "$BATCH" --duration "$DURATION" --max-time "$MAX_TIME" --rate "$RATE" \
  $([ "$ASYNC" = 1 ] && echo --async) ${TRACE:+--trace "$TRACE"} &
BENCH=$!
PIDS+=("$BENCH")
# After the window: strace -c the coordinator for 5 s while the workers go on
# alone (no wrk), to see where its time goes (syscalls: fsync, futex, ...).
if [ "$STRACE" = 1 ] && command -v strace >/dev/null; then
  sleep $((DURATION + 1))
  if kill -0 "$BENCH" 2>/dev/null; then
    timeout -s INT 5 strace -c -f -p "$COORD" -o "$T/strace.txt" 2>/dev/null || true
  fi
fi
wait "$BENCH" || true
[ -n "$WRK" ] && { wait "$WRK" || true; }
# The coordinator's own CPU time and memory over the whole bench (submission
# included): on a shared 2-core machine its results/s depend on what else
# runs; its CPU time per result does not.
if [ -r "/proc/$COORD/stat" ]; then
  TCK=$(getconf CLK_TCK)
  CPU_S=$(awk -v t="$TCK" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$COORD/stat")
  RSS_MB=$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$COORD/status")
  NRES=$(sqlite3 "$T/coord.db" "SELECT COUNT(*) FROM results" 2>/dev/null || echo 0)
  echo
  awk -v a="$CPU0" -v b="$CPU_S" -v n="$NRES" -v r="$RSS_MB" 'BEGIN {
    printf "coordinator CPU: %.2f s for the submission, then %.2f s for %d results (%.1f us per result;" \
      " user+system, HTTP load included), peak RSS %s MB\n", a, b - a, n, n ? (b - a) * 1e6 / n : 0, r }'
fi
# The coordinator's side of the worker round trips: /metrics's histogram of
# arrival-to-answer per queue (no network, no client threads in it).
echo
echo "== coordinator side: a worker request's arrival to its answer (/metrics, whole bench) =="
curl -s "$HTTP/metrics" | awk '
  /^gemmtune_worker_answer_seconds_bucket/ {
    match($0, /queue="[a-z]+"/); q = substr($0, RSTART + 7, RLENGTH - 8)
    match($0, /le="[^"]+"/); le = substr($0, RSTART + 4, RLENGTH - 5)
    c[q, le] = $NF; if (le == "+Inf") n[q] = $NF }
  END { for (q in n) if (n[q] > 0)
    printf "  %-8s %7d requests: <= 5 ms %5.1f %%, <= 10 ms %5.1f %%, <= 25 ms %5.1f %%, <= 50 ms %5.1f %%, <= 100 ms %5.1f %%\n",
      q, n[q], 100 * c[q, "0.005"] / n[q], 100 * c[q, "0.01"] / n[q], 100 * c[q, "0.025"] / n[q],
      100 * c[q, "0.05"] / n[q], 100 * c[q, "0.1"] / n[q] }'
echo
echo "== HTTP API under load (wrk, same window) =="
[ -s "$T/wrk.txt" ] && grep -v '^Running\|^  2 threads' "$T/wrk.txt"
if [ -s "$T/strace.txt" ]; then
  echo
  echo "== strace -c -f of gemmtuned, 5 s after the window (workers only; strace slows it) =="
  head -n 14 "$T/strace.txt"
fi
echo
echo "== HTTP service time, idle coordinator, run finished ($(sqlite3 "$T/coord.db" "SELECT COUNT(*) FROM results") results rows): 10 sequential curls each =="
for p in $WRK_PATHS /healthz; do
  for _ in $(seq 10); do curl -s -o /dev/null -w '%{time_total}\n' "$HTTP$p"; done | sort -n |
    awk -v p="$p" '{ v[NR] = $1 * 1000 } END { printf "  GET %-14s median %6.2f ms  max %6.2f ms\n", p, v[int((NR + 1) / 2)], v[NR] }'
done
echo
echo "== coordinator log (warnings) =="
echo "lines: $(wc -l <"$T/gemmtuned.log")"
tail -n 5 "$T/gemmtuned.log"
