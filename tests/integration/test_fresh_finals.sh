#!/usr/bin/env bash
# Proves the fresh finals (worker/gt_sup.h): with GT_WORKER_FRESH_FINAL=all every final job
# runs in a bench process that ran nothing before (the spare, started ahead while the
# screening one works), the run completes with the same checks as any other, the screening
# process keeps serving the screen jobs, and the worker leaves no process behind: while
# idle it holds its screening process and one spare, and none once stopped. (On cuda the
# default gives the finals of short GEMMs a fresh process: a CUDA context that has loaded
# many modules launches slower, which overstated small kernels' uplifts.) Then spares that
# cannot start: the finals run in the screening process, and the worker gives up on spares.
# Then cuda's rule (a fresh process for a final whose baseline is under 100 us) on the CPU.
source "$(dirname "$0")/lib.sh"

start_coordinator --lease-timeout 20
GT_WORKER_FRESH_FINAL=all start_worker w1
W1=$WPID

submit "$GT_TEST_DATA/cpu_small_f32.log" "name=fresh&budget=6&shard_size=3&min_time_ms=1&repeats=3&ncpu=1"
state=$(wait_run "$RUN" 400)
check "run finished (state=$state)" [ "$state" = done ]
check "every problem done" [ "$(json "$T/run.json" '$.problems.done')" = 6 ]
check_best_paired "$T/run.json"
finals=$(sqlite3 "$DB" "SELECT COUNT(*) FROM jobs WHERE run_id = $RUN AND kind = 'final' AND state = 'done'")
fresh=$(grep -c 'final phase in a fresh bench process' "$T/w1.log")
check "every final job ran in a fresh bench process ($fresh of $finals)" [ "$finals" = 6 ] && [ "$fresh" = "$finals" ]
check "each fresh process logged its job's cost line before it left ($(grep -c 'cost: final' "$T/w1.log") of $finals)" \
  [ "$(grep -c 'cost: final' "$T/w1.log")" = "$finals" ]
check "no spare failed to start" [ "$(grep -c 'spare bench process' "$T/w1.log")" = 0 ]
check "every final result is paired with its baseline" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM problem_best WHERE run_id = $RUN AND phase = 'final' AND baseline_us > 0")" = 6 ]
# the last final's process is killed at the job's end, and reaped while the worker idles
for _ in $(seq 25); do [ "$(pgrep -P "$W1" | wc -l)" = 2 ] && break; sleep 0.2; done
pids=$(pgrep -P "$W1" | tr '\n' ' ')
kids=$(echo $pids | wc -w)
check "idle, the worker holds its screening process and one spare, the used ones gone ($kids children)" \
  [ "$kids" = 2 ]
kill -TERM "$W1"
for _ in $(seq 50); do kill -0 "$W1" 2>/dev/null || break; sleep 0.2; done
check "the worker stopped" bash -c "! kill -0 $W1 2>/dev/null"
left=0
for p in $pids; do
  for _ in $(seq 25); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
  kill -0 "$p" 2>/dev/null && left=$((left + 1))
done
check "and left none of its bench processes behind ($left)" [ "$left" = 0 ]

# Spares that cannot start (a test hook makes every spare exit before its hello): the finals
# run in the screening process, and after three failures in a row the worker stops trying.
GT_WORKER_FRESH_FINAL=all GT_TEST_SPARE_FAIL=1 start_worker w2
submit "$GT_TEST_DATA/cpu_small_f32.log" "name=nospare&budget=6&shard_size=3&min_time_ms=1&repeats=3&ncpu=1"
state=$(wait_run "$RUN" 400)
check "with failing spares the run finished too (state=$state)" [ "$state" = done ]
check_best_paired "$T/run.json"
check "every final result is paired with its baseline" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM problem_best WHERE run_id = $RUN AND phase = 'final' AND baseline_us > 0")" = 6 ]
check "three spares failed, said so, and no final ran in one" \
  [ "$(grep -c 'spare bench process: .*ended at start' "$T/w2.log")" = 3 ] && \
  [ "$(grep -c 'final phase in a fresh bench process' "$T/w2.log")" = 0 ]
check "then the worker turned fresh finals off, once" \
  [ "$(grep -c 'fresh finals off' "$T/w2.log")" = 1 ]
kill -TERM "$WPID"
for _ in $(seq 50); do kill -0 "$WPID" 2>/dev/null || break; sleep 0.2; done

# GT_WORKER_FRESH_FINAL=1: cuda's default rule on any backend: a final gets a fresh process
# exactly when the screens timed its GEMM's baseline under GT_FRESH_FINAL_MAX_US (100 us).
# one GEMM of a few us and one of about a millisecond, on any machine
cat >"$T/rule.log" <<'EOF_LOG'
- {function: matmul, M: 128, N: 1, K: 128, lda: 128, ldb: 128, ldc: 128, ldd: 128, transA: T, transB: N, batch_count: 1, a_type: f32_r, b_type: f32_r, c_type: f32_r, d_type: f32_r, scale_type: f32_r, compute_type: c_f32_r, call_count: 10}
- {function: matmul, M: 320, N: 256, K: 320, lda: 320, ldb: 320, ldc: 320, ldd: 320, transA: T, transB: N, batch_count: 1, a_type: f32_r, b_type: f32_r, c_type: f32_r, d_type: f32_r, scale_type: f32_r, compute_type: c_f32_r, call_count: 10}
EOF_LOG
GT_WORKER_FRESH_FINAL=1 start_worker w3
submit "$T/rule.log" "name=rule&budget=4&shard_size=2&min_time_ms=1&repeats=3&ncpu=1"
state=$(wait_run "$RUN" 400)
check "the third run finished (state=$state)" [ "$state" = done ]
want=$(jsonq "$T/run.json" "SELECT COALESCE(group_concat(l, ','), '') FROM (SELECT json_extract(e.value, '\$.label') l
       FROM j, json_each(json_extract(j.x, '\$.best')) e WHERE json_extract(e.value, '\$.baseline_screen_us') < 100 ORDER BY l);")
ids=$(sed -n 's/.*job \([0-9]*\): final phase in a fresh bench process.*/\1/p' "$T/w3.log" | paste -sd, -)
got=$(sqlite3 "$DB" "SELECT COALESCE(group_concat(l, ','), '') FROM (SELECT p.label l FROM jobs j JOIN problems p ON p.id = j.problem_id
       WHERE j.id IN (${ids:-0}) AND j.run_id = $RUN ORDER BY l)")
check "fresh finals exactly for the GEMMs whose screen baseline is under 100 us ([$got] = [$want])" [ "$got" = "$want" ]
check "of the two, the small GEMM's final was fresh and the large one's was not" [ "$got" = "f32 TN 128x1x128" ]

finish
