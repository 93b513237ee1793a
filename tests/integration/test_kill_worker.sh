#!/usr/bin/env bash
# Proves that a worker killed with SIGKILL in the middle of a job loses
# nothing: its lease expires, the job is leased again by another worker, the
# run completes, every problem has its result and no result is duplicated.
source "$(dirname "$0")/lib.sh"

start_coordinator --lease-timeout 3 --max-attempts 5
# Long screen jobs (12 candidates of >= 5 x 8 ms each) so the kill lands mid-job.
submit "$GT_TEST_DATA/cpu_small_f32.log" "name=kill&budget=12&shard_size=12&min_time_ms=8&repeats=5"
start_worker victim
victim=$WPID

# Wait until the victim has reported part of a job, then kill it.
for _ in $(seq 600); do
  n=$(sqlite3 "$DB" "SELECT COUNT(*) FROM results WHERE run_id = $RUN" 2>/dev/null || echo 0)
  [ "$n" -gt 0 ] && break
  sleep 0.1
done
leased=$(sqlite3 "$DB" "SELECT id FROM jobs WHERE run_id = $RUN AND state = 'leased' LIMIT 1")
check "victim was mid-job (job $leased leased, $n results in)" [ -n "$leased" ]
kill -9 "$victim"
start_worker rescuer

state=$(wait_run "$RUN" 400)
check "run finished after the kill (state=$state)" [ "$state" = done ]
check "the killed job was leased again" \
  [ "$(sqlite3 "$DB" "SELECT attempts >= 2 AND state = 'done' FROM jobs WHERE id = $leased")" = 1 ]
check "every problem has a final best" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM problem_best WHERE run_id = $RUN AND phase = 'final'")" = 6 ]
check "no duplicate results" [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM (SELECT 1 FROM results
  GROUP BY problem_id, backend, config_hash, device_model, phase HAVING COUNT(*) > 1)")" = 0 ]
check "each screen candidate measured exactly once" [ "$(sqlite3 "$DB" "
  SELECT (SELECT SUM(ncandidates) FROM jobs WHERE run_id = $RUN AND kind = 'screen')
       = (SELECT COUNT(*) FROM results WHERE run_id = $RUN AND phase = 'screen')")" = 1 ]
finish
