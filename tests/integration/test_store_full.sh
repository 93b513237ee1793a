#!/usr/bin/env bash
# Proves that a store that cannot write is visible, and that the coordinator
# recovers by itself: the database lives on a small tmpfs that is filled up
# while a worker runs a run. Writes (leases, results, a submitted run) fail
# with "database or disk is full"; /readyz answers 503 with the reason while
# /healthz stays 200 (the process is alive); /metrics counts the failures
# (gemmtune_store_errors_total{kind="full"}) and shows gemmtune_store_writable
# 0. Once the filler is removed, /readyz is 200 again, the store is writable
# and the run finishes with every result measured once and none lost.
# Needs root for the mount: skipped (77) without it.
source "$(dirname "$0")/lib.sh"

# skip WHY: reported as skipped (77); nothing was started, nothing to keep.
skip() {
  echo "skipped: $1"
  trap - EXIT
  rm -rf "$T"
  exit 77
}
[ "$(id -u)" = 0 ] || skip "mounting a tmpfs needs root"
MNT=$(mktemp -d /tmp/gt-full.XXXXXX)
if ! mount -t tmpfs -o size=16m tmpfs "$MNT" 2>"$T/mount.err"; then
  rmdir "$MNT"
  skip "cannot mount a tmpfs: $(cat "$T/mount.err")"
fi
# The processes (which hold the database open) go first, then the mount;
# lib.sh's cleanup then reports and removes $T.
unmount() {
  local rc=$?
  set +e # a trap runs under set -e too: nothing here may end it early
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
  rmdir "$MNT" 2>/dev/null || true
  (exit "$rc") # cleanup reads the script's status from $?
  cleanup
}
trap unmount EXIT

# http_code URL [curl args]: the status code only.
http_code() { curl -s -o "$T/last.json" -w '%{http_code}' "$@"; }
# metric SERIES: its value on /metrics (the sample line of exactly that series).
metric() {
  curl -s "$HTTP/metrics" -o "$T/metrics.txt"
  awk -v s="$1" '$1 == s {print $2; exit}' "$T/metrics.txt"
}
# until_seen VALUE CMD...: polls CMD's output for VALUE for up to 15 s.
until_seen() {
  local want=$1; shift
  for _ in $(seq 150); do [ "$("$@")" = "$want" ] && return 0; sleep 0.1; done
  return 1
}

DB=$MNT/gemmtune.db
start_coordinator --lease-timeout 4 --max-attempts 8
start_worker w1
submit "$GT_TEST_DATA/cpu_small_f32.log" "name=full&budget=8&shard_size=2&ncpu=1&min_time_ms=3&repeats=3"
for _ in $(seq 600); do
  n=$(sqlite3 "$DB" "SELECT COUNT(*) FROM results WHERE run_id = $RUN" 2>/dev/null || echo 0)
  [ "$n" -ge 2 ] && break
  sleep 0.1
done
check "ready while the disk has room" [ "$(http_code "$HTTP/readyz")" = 200 ]
check "/readyz says ready" [ "$(json "$T/last.json" '$.status')" = ready ]
check "gemmtune_store_writable is 1" [ "$(metric gemmtune_store_writable)" = 1 ]
check "no store error yet" [ "$(metric 'gemmtune_store_errors_total{kind="full"}')" = 0 ]
check "the last write's time is there" [ -n "$(metric gemmtune_store_last_write_timestamp_seconds)" ]

# Fill the file system (dd stops at ENOSPC).
dd if=/dev/zero of="$MNT/filler" bs=64k 2>/dev/null || true
check "the file system is full" [ "$(df --output=avail -B1 "$MNT" | tail -n 1 | tr -d ' ')" -lt 65536 ]
sqlite3 "$DB" "SELECT problem_id || '/' || config_hash || '/' || phase FROM results ORDER BY 1" \
  >"$T/before.txt" 2>/dev/null || true
# An API write that must grow the database: refused.
awk '{print} END {for (i = 0; i < 400; i++) printf "%d,%d,%d\n", 64 + i, 16, 64}' \
  <(echo "M,N,K") >"$T/big.csv"
code=$(http_code -X POST --data-binary @"$T/big.csv" -H 'Content-Type: text/plain' \
  "$HTTP/v1/runs?name=big&budget=4&ncpu=1")
check "a submitted run is refused while the disk is full (HTTP $code)" [ "$code" -ge 500 ]
check "with the reason" grep -q 'database or disk is full' "$T/last.json"
# The worker's leases and results fail too. Readiness follows the last
# write attempt: a small write may still fit in the WAL space a failed large
# one allocated (the store can write then), so poll for what must be seen.
ready503() {
  local c
  c=$(http_code "$HTTP/readyz")
  [ "$c" = 503 ] && cp "$T/last.json" "$T/readyz503.json"
  echo "$c"
}
check "/readyz is 503 while the store cannot write" until_seen 503 ready503
check "/readyz gives the reason" \
  [ "$(json "$T/readyz503.json" '$.status')/$(json "$T/readyz503.json" '$.reason')" = \
    "unavailable/store cannot write: database or disk is full" ]
check "/healthz stays 200 (liveness)" [ "$(http_code "$HTTP/healthz")" = 200 ]
check "gemmtune_store_writable is 0" until_seen 0 metric gemmtune_store_writable
full=$(metric 'gemmtune_store_errors_total{kind="full"}')
check "gemmtune_store_errors_total{kind=\"full\"} counts the failures ($full)" [ "${full:-0}" -ge 1 ]
check "the coordinator logged it" grep -q 'store: writes fail (full: database or disk is full)' \
  "$T/gemmtuned.log"
curl -s "$HTTP/metrics" >"$T/metrics.txt"
if command -v promtool >/dev/null; then
  check "promtool accepts the page" promtool check metrics <"$T/metrics.txt"
fi

# Space again: the next write commits and everything carries on.
rm -f "$MNT/filler"
check "/readyz is 200 again once a write succeeds" until_seen 200 http_code "$HTTP/readyz"
check "/readyz says ready" [ "$(json "$T/last.json" '$.status')" = ready ]
check "gemmtune_store_writable is 1 again" [ "$(metric gemmtune_store_writable)" = 1 ]
check "the coordinator logged the recovery" grep -q 'store: writes succeed again' "$T/gemmtuned.log"
# A worker whose results were refused abandons the job, but its heartbeats
# go on extending every lease it holds (gt_store_heartbeat), so that job
# would wait for the worker to leave: a restarted worker says bye (its
# leases go back to the queue) and a fresh one takes over.
kill -TERM "$WPID"
wait "$WPID" 2>/dev/null || true
start_worker w2
state=$(wait_run "$RUN" 300)
check "the run finished (state=$state)" [ "$state" = done ]
sqlite3 "$DB" "SELECT problem_id || '/' || config_hash || '/' || phase FROM results ORDER BY 1" \
  >"$T/after.txt"
check "no result acknowledged before was lost ($(wc -l <"$T/before.txt"))" \
  [ -s "$T/before.txt" ] && [ -z "$(comm -23 "$T/before.txt" "$T/after.txt")" ]
check "every candidate was measured exactly once" [ "$(sqlite3 "$DB" "
  SELECT (SELECT SUM(ncandidates) FROM jobs WHERE run_id = $RUN AND kind = 'screen')
       = (SELECT COUNT(*) FROM results WHERE run_id = $RUN AND phase = 'screen')")" = 1 ]
check "every problem has a final best" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM problem_best WHERE run_id = $RUN AND phase = 'final'")" = 6 ]
check "no job failed" [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM jobs WHERE run_id = $RUN AND state = 'failed'")" = 0 ]
code=$(http_code -X POST --data-binary @"$T/big.csv" -H 'Content-Type: text/plain' \
  "$HTTP/v1/runs?name=big2&budget=4&ncpu=1")
check "a run can be submitted again (HTTP $code)" [ "$code" = 201 ]
kill -TERM "$COORD"
rc=0
wait "$COORD" || rc=$?
check "the coordinator stopped cleanly (rc=$rc)" [ "$rc" = 0 ]

finish
