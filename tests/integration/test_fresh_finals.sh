#!/usr/bin/env bash
# Proves the fresh finals (worker/gt_sup.h): with GT_WORKER_FRESH_FINAL=all every final job
# runs in a bench process that ran nothing before (the spare, started ahead while the
# screening one works), the run completes with the same checks as any other, the screening
# process keeps serving the screen jobs, and the worker leaves no process behind: while
# idle it holds its screening process and one spare, and none once stopped. (On cuda the
# default gives the finals of short GEMMs a fresh process: a CUDA context that has loaded
# many modules launches slower, which overstated small kernels' uplifts.) Then spares that
# cannot start: the finals run in the screening process, and the worker gives up on spares.
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

finish
