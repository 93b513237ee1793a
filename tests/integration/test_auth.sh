#!/usr/bin/env bash
# Proves authentication: with a token, POST requests without it or with a
# wrong one get 401 and change nothing, read-only requests still work, a
# worker without the token cannot register, and one with it tunes the run.
source "$(dirname "$0")/lib.sh"

GEMMTUNE_TOKEN=s3cret-token start_coordinator
post() { curl -s -o "$T/post.json" -w '%{http_code}' -X POST --data-binary @"$GT_TEST_DATA/cpu_two_f32.log" "$@"; }
check "POST without a token is 401" [ "$(post "$HTTP/v1/runs")" = 401 ]
check "POST with a wrong token is 401" [ "$(post -H 'Authorization: Bearer nope' "$HTTP/v1/runs")" = 401 ]
check "the 401 says why" grep -q unauthorized "$T/post.json"
check "nothing was created" [ "$(sqlite3 "$DB" 'SELECT COUNT(*) FROM runs')" = 0 ]
check "cancel without a token is 401" [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$HTTP/v1/runs/1/cancel")" = 401 ]
check "GET needs no token" [ "$(curl -s -o /dev/null -w '%{http_code}' "$HTTP/v1/runs")" = 200 ]
check "POST with the token is 201" \
  [ "$(post -H 'Authorization: Bearer s3cret-token' "$HTTP/v1/runs?budget=2&ncpu=1&min_time_ms=1&repeats=3")" = 201 ]
RUN=$(json "$T/post.json" '$.id')

rc=0
GEMMTUNE_TOKEN= timeout 30 "$GT_BIN"/gemmtune-worker --server "$WURL" --backend cpu 2>"$T/notoken.log" || rc=$?
check "a worker without the token exits with an error (rc=$rc)" [ "$rc" = 1 ]
check "and says it was refused" grep -q 'registration refused: unauthorized' "$T/notoken.log"
check "it was never registered" [ "$(sqlite3 "$DB" 'SELECT COUNT(*) FROM workers')" = 0 ]
start_worker w1 --token s3cret-token
check "a worker with the token tunes the run" [ "$(wait_run "$RUN" 120)" = done ]
check "CLI with the token can submit" \
  "$GT_BIN"/gemmtune --token s3cret-token submit "$GT_TEST_DATA/cpu_two_f32.log" --budget 1 >/dev/null
check "CLI without the token is refused" bash -c "! GEMMTUNE_TOKEN= '$GT_BIN'/gemmtune submit '$GT_TEST_DATA/cpu_two_f32.log' 2>/dev/null"

# The coordinator restarted with another token on the same port and
# database: the worker's session (and token) are void, it is refused and
# exits instead of leasing; metrics count the refusals.
W1=${PIDS[-1]}
wport=${WURL##*:}
kill -9 "$COORD"; wait "$COORD" 2>/dev/null || true
# (the killed coordinator may leave a job leased to w1: only leases from
# the restart on are the new token's)
restart_ms=$(date +%s%3N)
GEMMTUNE_TOKEN=n3w-token "$GT_BIN"/gemmtuned --db "$DB" --http 127.0.0.1:0 \
  --listen "tcp://127.0.0.1:$wport" --port-file "$T/ports2" 2>>"$T/gemmtuned2.log" &
COORD=$!
PIDS+=("$COORD")
for _ in $(seq 100); do [ -s "$T/ports2" ] && break; sleep 0.1; done
HTTP="http://127.0.0.1:$(sed -n 's/^http=//p' "$T/ports2")"
for _ in $(seq 200); do kill -0 "$W1" 2>/dev/null || break; sleep 0.1; done
check "the worker with the old token left" bash -c "! kill -0 $W1 2>/dev/null"
check "it says it was refused" grep -q 'registration refused: unauthorized' "$T/w1.log"
check "no job was leased under the new token" \
  [ "$(sqlite3 "$DB" "SELECT (SELECT COUNT(*) FROM job_leases WHERE leased_ms >= $restart_ms)
      + (SELECT COUNT(*) FROM jobs WHERE state = 'leased' AND updated_ms >= $restart_ms)")" = 0 ]
curl -s "$HTTP/metrics" >"$T/metrics.txt"
check "metrics count the refusals" \
  grep -Eq '^gemmtune_worker_refused_total\{reason="bad_token"\} [1-9]' "$T/metrics.txt"
check "metrics time the dispatcher's answers (the refusals' queue)" \
  grep -Eq '^gemmtune_worker_answer_seconds_count\{queue="lease"\} [1-9]' "$T/metrics.txt"

finish
