# lib.sh: helpers for integration tests: start a real gemmtuned and real
# workers on loopback with ephemeral ports, query JSON with sqlite3's JSON
# functions, and clean up every process on exit.
set -euo pipefail

: "${GT_BIN:?GT_BIN (build folder) must be set}"
: "${GT_TEST_DATA:?GT_TEST_DATA must be set}"
T=$(mktemp -d /tmp/gt-int.XXXXXX)
export GEMMTUNE_CACHE_DIR="$T/cache"
PIDS=()
FAILS=0
CHECKS=0

cleanup() {
  local rc=$?
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$rc" -ne 0 ] || [ "$FAILS" -ne 0 ]; then
    echo "--- logs in $T (kept) ---"
    for f in "$T"/*.log; do [ -f "$f" ] && { echo "== $f"; tail -n 30 "$f"; }; done
  else
    # a killed worker's compiler child (not ours to wait for) can still be
    # writing into $T/cache for a moment: retry instead of failing a test
    # whose checks all passed (seen once in CI: "Directory not empty")
    for _ in $(seq 50); do rm -rf "$T" 2>/dev/null && break; sleep 0.1; done
    [ ! -e "$T" ] || { echo "cleanup: could not remove $T"; return 1; }
  fi
}
trap cleanup EXIT

check() { # check "description" command...
  local what=$1; shift
  CHECKS=$((CHECKS + 1))
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; FAILS=$((FAILS + 1)); fi
}

finish() {
  echo "$((CHECKS - FAILS)) passed, $FAILS failed"
  [ "$CHECKS" -gt 0 ] && [ "$FAILS" -eq 0 ]
}

# json FILE PATH: value at a JSON path of a file (sqlite3 json_extract).
json() { sqlite3 :memory: "SELECT json_extract(readfile('$1'), '$2');"; }
# jsonq FILE SQL: runs SQL where the file's JSON is available as table j(x).
jsonq() { sqlite3 :memory: "WITH j(x) AS (SELECT readfile('$1')) $2"; }

# check_best_paired FILE: FILE (GET /v1/runs/ID) has, for every problem, a
# validated final best paired with the cpu backend's OpenBLAS baseline: a
# winner beyond the noise, or OpenBLAS itself at uplift 1; and a weighted
# uplift (> 0; below 1 where OpenBLAS beats the tuned kernels).
check_best_paired() {
  local bad
  bad=$(jsonq "$1" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '\$.best')) e
       WHERE json_extract(e.value, '\$.time_us') IS NULL OR json_extract(e.value, '\$.baseline_us') IS NULL
          OR json_extract(e.value, '\$.phase') != 'final' OR NOT json_extract(e.value, '\$.rounds') > 0
          OR NOT ((json_extract(e.value, '\$.significant') = 1 AND json_extract(e.value, '\$.uplift_lo') > 1)
                  OR (json_extract(e.value, '\$.significant') = 0 AND json_extract(e.value, '\$.uplift') = 1
                      AND json_extract(e.value, '\$.config.lib') = 'openblas'
                      AND json_extract(e.value, '\$.time_us') = json_extract(e.value, '\$.baseline_us')));")
  check "every problem has a validated final best, paired with the OpenBLAS baseline: a winner beyond the noise or OpenBLAS itself" [ "$bad" = 0 ]
  check "weighted uplift reported (> 0; below 1 where OpenBLAS beats the tuned kernels on a noisy screen)" \
    [ "$(jsonq "$1" "SELECT json_extract(x, '\$.weighted_uplift') > 0 FROM j;")" = 1 ]
}

# start_coordinator [extra args]: sets HTTP, WURL, DB.
start_coordinator() {
  DB=${DB:-$T/gemmtune.db}
  rm -f "$T/ports"
  "$GT_BIN"/gemmtuned --db "$DB" --http 127.0.0.1:0 --listen tcp://127.0.0.1:0 \
    --port-file "$T/ports" "$@" 2>>"$T/gemmtuned.log" &
  COORD=$!
  PIDS+=("$COORD")
  for _ in $(seq 100); do [ -s "$T/ports" ] && break; sleep 0.1; done
  [ -s "$T/ports" ] || { echo "coordinator did not start"; return 1; }
  HTTP="http://127.0.0.1:$(sed -n 's/^http=//p' "$T/ports")"
  WURL=$(sed -n 's/^worker=//p' "$T/ports")
  export GEMMTUNE_SERVER="$HTTP"
}

# start_worker NAME [extra args]: a CPU worker; its pid in WPID.
start_worker() {
  local name=$1; shift
  "$GT_BIN"/gemmtune-worker --server "$WURL" --backend cpu "$@" 2>>"$T/$name.log" &
  WPID=$!
  PIDS+=("$WPID")
}

# submit FILE QUERY: POSTs a log as text; sets RUN; the response in $T/submit.json.
submit() {
  local code
  code=$(curl -s -o "$T/submit.json" -w '%{http_code}' -X POST --data-binary @"$1" \
    -H 'Content-Type: text/plain' "$HTTP/v1/runs?$2")
  [ "$code" = 201 ] || { echo "submit: HTTP $code: $(cat "$T/submit.json")"; return 1; }
  RUN=$(json "$T/submit.json" '$.id')
}

# wait_run RUN TIMEOUT_S: polls until the run leaves 'running'; prints its state.
wait_run() {
  local state=running
  for _ in $(seq $(($2 * 2))); do
    curl -sf "$HTTP/v1/runs/$1" -o "$T/run.json" || true
    state=$(json "$T/run.json" '$.state' 2>/dev/null || echo running)
    [ "$state" != running ] && break
    sleep 0.5
  done
  echo "$state"
}
