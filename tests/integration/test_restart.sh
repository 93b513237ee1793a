#!/usr/bin/env bash
# Proves durability: the coordinator killed with SIGKILL in the middle of a
# run and restarted on the same database continues the run; no result it had
# acknowledged is lost, no job is stuck, the workers reconnect on their own.
# Then a worker that stops heartbeating but keeps its connection (SIGSTOP)
# loses its lease to another worker and the run still completes; and SIGTERM
# hands a worker's job back at once and stops the coordinator cleanly.
source "$(dirname "$0")/lib.sh"

start_coordinator --lease-timeout 4 --max-attempts 6
wport=${WURL##*:}
start_worker w1
start_worker w2
submit "$GT_TEST_DATA/cpu_small_f32.log" "name=restart&budget=8&shard_size=4&ncpu=1&min_time_ms=3&repeats=3"

for _ in $(seq 300); do
  n=$(sqlite3 "$DB" "SELECT COUNT(*) FROM results WHERE run_id = $RUN" 2>/dev/null || echo 0)
  [ "$n" -ge 6 ] && break
  sleep 0.1
done
kill -9 "$COORD"
wait "$COORD" 2>/dev/null || true
sqlite3 "$DB" "SELECT problem_id || '/' || config_hash || '/' || phase FROM results ORDER BY 1" >"$T/before.txt"
check "results were in when the coordinator was killed ($(wc -l <"$T/before.txt"))" [ "$(wc -l <"$T/before.txt")" -ge 6 ]
sleep 1
# Same database, same worker port: the workers redial by themselves.
"$GT_BIN"/gemmtuned --db "$DB" --http 127.0.0.1:0 --listen "tcp://127.0.0.1:$wport" \
  --lease-timeout 4 --max-attempts 6 --port-file "$T/ports2" 2>>"$T/gemmtuned2.log" &
COORD=$!
PIDS+=("$COORD")
for _ in $(seq 100); do [ -s "$T/ports2" ] && break; sleep 0.1; done
HTTP="http://127.0.0.1:$(sed -n 's/^http=//p' "$T/ports2")"

state=$(wait_run "$RUN" 300)
check "run finished after the coordinator restart (state=$state)" [ "$state" = done ]
sqlite3 "$DB" "SELECT problem_id || '/' || config_hash || '/' || phase FROM results ORDER BY 1" >"$T/after.txt"
check "no acknowledged result was lost" [ -z "$(comm -23 "$T/before.txt" "$T/after.txt")" ]
check "no job is stuck" [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM jobs WHERE run_id = $RUN AND state IN ('queued','leased')")" = 0 ]
check "every problem has a final best" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM problem_best WHERE run_id = $RUN AND phase = 'final'")" = 6 ]
check "no duplicate results" [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM (SELECT 1 FROM results
  GROUP BY problem_id, backend, config_hash, device_model, phase HAVING COUNT(*) > 1)")" = 0 ]
check "the workers re-attached without a restart" kill -0 "${PIDS[1]}"
check "with their sessions: no worker registered anew" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM workers")" = 2 ]
check "and no request was refused for want of one" \
  bash -c "! grep -q 'refused (unknown_session\|refused (bad_' '$T/gemmtuned2.log'"

# A worker that stops heartbeating but keeps its connection.
submit "$GT_TEST_DATA/cpu_small_f32.log" "name=stopped&budget=8&shard_size=8&ncpu=1&min_time_ms=3&repeats=3"
for _ in $(seq 300); do
  leased=$(sqlite3 "$DB" "SELECT lease_owner FROM jobs WHERE run_id = $RUN AND state = 'leased' LIMIT 1")
  [ -n "$leased" ] && break
  sleep 0.05
done
victim=$(sqlite3 "$DB" "SELECT pid FROM workers WHERE id = $leased")
kill -STOP "$victim"
state=$(wait_run "$RUN" 300)
check "run finished while a worker was frozen (state=$state)" [ "$state" = done ]
check "the frozen worker's job was leased again" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM jobs WHERE run_id = $RUN AND attempts >= 2")" -ge 1 ]
kill -CONT "$victim"
sleep 2
check "its late results add no duplicates" [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM (SELECT 1 FROM results
  GROUP BY problem_id, backend, config_hash, device_model, phase HAVING COUNT(*) > 1)")" = 0 ]

# SIGTERM: a worker hands its job back at once (long before the lease would expire).
submit "$GT_TEST_DATA/cpu_small_f32.log" "name=term&budget=12&shard_size=12&ncpu=1&min_time_ms=10&repeats=5"
for _ in $(seq 300); do
  leased=$(sqlite3 "$DB" "SELECT id || ' ' || lease_owner FROM jobs WHERE run_id = $RUN AND state = 'leased' LIMIT 1")
  [ -n "$leased" ] && break
  sleep 0.05
done
job=${leased% *}
wpid=$(sqlite3 "$DB" "SELECT pid FROM workers WHERE id = ${leased#* }")
kill -TERM "$wpid"
rc=0
for _ in $(seq 100); do kill -0 "$wpid" 2>/dev/null || break; sleep 0.1; done
wait "$wpid" 2>/dev/null || rc=$?
check "SIGTERM: the worker left cleanly (rc=$rc)" [ "$rc" = 0 ]
check "SIGTERM: its job went back to the queue at once" \
  [ "$(sqlite3 "$DB" "SELECT state != 'leased' OR lease_owner != ${leased#* } FROM jobs WHERE id = $job")" = 1 ]
check "SIGTERM: the worker is marked gone" \
  [ "$(sqlite3 "$DB" "SELECT state FROM workers WHERE id = ${leased#* }")" = gone ]
# --device all: SIGTERM to the parent reaches every per-device worker.
before=$(sqlite3 "$DB" "SELECT MAX(id) FROM workers")
"$GT_BIN"/gemmtune-worker --server "$WURL" --backend cpu --device all 2>>"$T/all.log" &
allpid=$!
PIDS+=("$allpid")
for _ in $(seq 100); do
  child=$(sqlite3 "$DB" "SELECT id FROM workers WHERE id > $before")
  [ -n "$child" ] && break
  sleep 0.1
done
check "--device all: one worker per device registered" [ -n "$child" ]
kill -TERM "$allpid"
rc=0
wait "$allpid" || rc=$?
check "--device all: SIGTERM ends the set cleanly (rc=$rc)" [ "$rc" = 0 ]
check "--device all: the per-device worker said goodbye" \
  [ "$(sqlite3 "$DB" "SELECT state FROM workers WHERE id = $child")" = gone ]

kill -TERM "$COORD"
rc=0
wait "$COORD" || rc=$?
check "SIGTERM: the coordinator stopped cleanly (rc=$rc)" [ "$rc" = 0 ]
check "SIGTERM: the WAL was checkpointed" [ ! -s "$DB-wal" ]

finish
