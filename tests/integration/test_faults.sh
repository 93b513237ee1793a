#!/usr/bin/env bash
# Proves that candidates that crash or hang the bench process do not stop a
# run: each is killed, reported failed with its reason, never chosen, the
# bench process restarts and the job goes on. Two test-only configs of the
# CPU backend do it for real: bug=3 dereferences NULL (SIGSEGV), bug=4 spins
# forever. Submitted as extra candidates of every problem.
source "$(dirname "$0")/lib.sh"

start_coordinator --lease-timeout 20
start_worker w1 --candidate-timeout 3
body=$(sqlite3 :memory: "SELECT json_object('log', CAST(readfile('$GT_TEST_DATA/cpu_two_f32.log') AS TEXT),
  'name', 'faults', 'budget', 3, 'shard_size', 4, 'ncpu', 1, 'min_time_ms', 1, 'repeats', 3,
  'candidates', json('[{\"mc\":32,\"nc\":16,\"kc\":32,\"mr\":4,\"nr\":8,\"unroll\":1,\"threads\":1,\"bug\":3},
                       {\"mc\":32,\"nc\":16,\"kc\":32,\"mr\":4,\"nr\":8,\"unroll\":1,\"threads\":1,\"bug\":4},
                       {\"mc\":32,\"nc\":16,\"kc\":32,\"mr\":4,\"nr\":8,\"unroll\":1,\"threads\":1,\"bug\":1}]'));")
code=$(curl -s -o "$T/submit.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  --data-binary "$body" "$HTTP/v1/runs")
check "run with crashing and hanging candidates accepted (HTTP $code)" [ "$code" = 201 ]
RUN=$(json "$T/submit.json" '$.id')

state=$(wait_run "$RUN" 240)
check "run completed despite them (state=$state)" [ "$state" = done ]
check "the segfaulting candidate is recorded as crashed, per problem" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM results WHERE run_id = $RUN AND valid = 0
        AND config LIKE '%\"bug\":3%' AND reason LIKE 'crashed:%signal 11%'")" = 2 ]
check "the spinning candidate is recorded as hung, per problem" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM results WHERE run_id = $RUN AND valid = 0
        AND config LIKE '%\"bug\":4%' AND reason LIKE 'hung:%killed%'")" = 2 ]
check "the wrong-result candidate failed validation" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM results WHERE run_id = $RUN AND valid = 0
        AND config LIKE '%\"bug\":1%' AND reason LIKE 'wrong result%'")" = 2 ]
check "no bad candidate is ever valid or in a final phase" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM results WHERE run_id = $RUN AND config LIKE '%\"bug\"%'
        AND (valid = 1 OR phase = 'final')")" = 0 ]
check "every problem has a final best paired with its OpenBLAS baseline: OpenBLAS itself or a winner beyond the noise" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM problem_best WHERE run_id = $RUN AND phase = 'final'
        AND baseline_us > 0 AND ((is_baseline = 1 AND config LIKE '%\"lib\":\"openblas\"%') OR uplift_lo > 1)")" = 2 ]
check "the other candidates were all measured (each exactly once)" [ "$(sqlite3 "$DB" "
  SELECT (SELECT SUM(ncandidates) FROM jobs WHERE run_id = $RUN AND kind = 'screen')
       = (SELECT COUNT(*) FROM results WHERE run_id = $RUN AND phase = 'screen')")" = 1 ]
check "the worker survived (bench process restarted)" kill -0 "$WPID"
check "the worker logged the restarts" grep -q 'hung: no progress' "$T/w1.log"

finish
