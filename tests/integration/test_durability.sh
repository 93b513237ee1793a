#!/usr/bin/env bash
# Proves that the coordinator notices its database files vanishing under it
# instead of acknowledging work into them. With a worker on a run:
# 1. the -wal file is deleted: the next commit is refused, the daemon logs
#    why and exits with status 1; nothing is acknowledged after the
#    deletion, and nothing acknowledged before it is lost (the shutdown
#    checkpoints the WAL it still holds open into the database file); a
#    coordinator restarted on the file finishes the run.
# 2. the database file is replaced by another (a backup restored under the
#    running daemon): same refusal and exit; the replacement is left intact,
#    with no page of the old database written into it or left in a WAL
#    beside it.
# The worker is paused while the files are touched, so that no request is
# in flight: what the database held just before is exactly what was
# acknowledged.
source "$(dirname "$0")/lib.sh"

# wait_results N: until the run has N results (sqlite3 reads beside the daemon).
wait_results() {
  local n=0
  for _ in $(seq 600); do
    n=$(sqlite3 "$DB" "SELECT COUNT(*) FROM results WHERE run_id = $RUN" 2>/dev/null || echo 0)
    [ "$n" -ge "$1" ] && return 0
    sleep 0.1
  done
  echo "only $n results"
  return 1
}

# wait_exit PID: waits up to 20 s for the coordinator to exit; sets EXIT_RC
# (999: still running).
wait_exit() {
  EXIT_RC=999
  for _ in $(seq 200); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$1" 2>/dev/null && return 0
  EXIT_RC=0
  wait "$1" || EXIT_RC=$?
}

q="budget=8&shard_size=2&ncpu=1&min_time_ms=3&repeats=3"

# ---- 1. the WAL file deleted
DB=$T/wal.db
start_coordinator --lease-timeout 30 --max-attempts 6
start_worker w1
worker=$WPID
submit "$GT_TEST_DATA/cpu_small_f32.log" "name=wal&$q"
wait_results 4
kill -STOP "$worker"
sleep 1
sqlite3 "$DB" "SELECT problem_id || '/' || config_hash || '/' || phase FROM results ORDER BY 1" \
  >"$T/wal_before.txt"
before=$(wc -l <"$T/wal_before.txt")
check "results were in when the WAL was deleted ($before)" [ "$before" -ge 4 ]
rm "$DB-wal"
kill -CONT "$worker"
wait_exit "$COORD"
check "WAL deleted: the coordinator exited with status 1 (rc=$EXIT_RC)" [ "$EXIT_RC" = 1 ]
check "WAL deleted: it logged which file and why" \
  grep -q "the WAL file $DB-wal was removed under the running coordinator" "$T/gemmtuned.log"
check "WAL deleted: it said it stopped for it" grep -q 'exit status 1' "$T/gemmtuned.log"
sqlite3 "$DB" "SELECT problem_id || '/' || config_hash || '/' || phase FROM results ORDER BY 1" \
  >"$T/wal_after.txt"
check "WAL deleted: nothing was acknowledged after the deletion ($(wc -l <"$T/wal_after.txt") results)" \
  [ -z "$(comm -13 "$T/wal_before.txt" "$T/wal_after.txt")" ]
check "WAL deleted: nothing acknowledged before it was lost" \
  [ -z "$(comm -23 "$T/wal_before.txt" "$T/wal_after.txt")" ]
for _ in $(seq 100); do grep -Eq 'unreachable|refused' "$T/w1.log" && break; sleep 0.1; done
check "WAL deleted: the worker's requests were refused or failed" \
  grep -Eq 'unreachable|refused' "$T/w1.log"
check "WAL deleted: the database is intact" [ "$(sqlite3 "$DB" 'PRAGMA integrity_check')" = ok ]
kill -TERM "$worker" 2>/dev/null || true
wait "$worker" 2>/dev/null || true

# Restarted on the same file, the coordinator finishes the run (with a
# fresh worker: reconnecting is test_restart.sh's business).
cp "$T/gemmtuned.log" "$T/gemmtuned-wal.log"
start_coordinator --lease-timeout 30 --max-attempts 6
start_worker w1b
worker=$WPID
state=$(wait_run "$RUN" 300)
check "WAL deleted: restarted, the run finished (state=$state)" [ "$state" = done ]
sqlite3 "$DB" "SELECT problem_id || '/' || config_hash || '/' || phase FROM results ORDER BY 1" \
  >"$T/wal_done.txt"
check "WAL deleted: every result from before the deletion is in the finished run" \
  [ -z "$(comm -23 "$T/wal_before.txt" "$T/wal_done.txt")" ]
kill -TERM "$worker" "$COORD"
rc=0
wait "$COORD" || rc=$?
check "WAL deleted: the restarted coordinator stopped cleanly (rc=$rc)" [ "$rc" = 0 ]
wait "$worker" 2>/dev/null || true

# ---- 2. the database file replaced by another
DB=$T/replaced.db
: >"$T/gemmtuned.log"
start_coordinator --lease-timeout 30 --max-attempts 6
start_worker w2
worker=$WPID
submit "$GT_TEST_DATA/cpu_small_f32.log" "name=replaced&$q"
wait_results 4
kill -STOP "$worker"
sleep 1
sqlite3 "$DB" ".backup '$T/copy.db'"
copied=$(sqlite3 "$T/copy.db" "SELECT COUNT(*) FROM results")
check "a copy with results was taken ($copied)" [ "$copied" -ge 4 ]
mv "$T/copy.db" "$DB"
kill -CONT "$worker"
wait_exit "$COORD"
check "database replaced: the coordinator exited with status 1 (rc=$EXIT_RC)" [ "$EXIT_RC" = 1 ]
check "database replaced: it logged which file and why" \
  grep -q "the database file $DB was replaced" "$T/gemmtuned.log"
check "database replaced: the replacement is intact" \
  [ "$(sqlite3 "$DB" 'PRAGMA integrity_check')" = ok ]
check "database replaced: nothing was written into it (results $copied)" \
  [ "$(sqlite3 "$DB" 'SELECT COUNT(*) FROM results')" = "$copied" ]
check "database replaced: no WAL of the old database is left beside it" [ ! -s "$DB-wal" ]
kill -TERM "$worker" 2>/dev/null || true

finish
