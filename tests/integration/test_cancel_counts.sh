#!/usr/bin/env bash
# Proves that a cancelled run reports its problems and jobs as cancelled, not
# failed, and that its progress counts only the work done: a run cancelled
# before any worker came has progress 0 and every problem and job under
# "cancelled"; a run cancelled midway keeps the share it had measured.
source "$(dirname "$0")/lib.sh"

start_coordinator
submit "$GT_TEST_DATA/cpu_small_f32.log" "name=early&budget=8&shard_size=4&ncpu=1"
code=$(curl -s -o "$T/cancel.json" -w '%{http_code}' -X POST "$HTTP/v1/runs/$RUN/cancel")
check "cancel accepted (HTTP $code)" [ "$code" = 200 ]
curl -sf "$HTTP/v1/runs/$RUN" -o "$T/run.json"
check "state is cancelled" [ "$(json "$T/run.json" '$.state')" = cancelled ]
np=$(json "$T/run.json" '$.problems.total')
nj=$(json "$T/run.json" '$.jobs.total')
check "every problem counts as cancelled ($np)" \
  [ "$np" -gt 0 ] && [ "$(json "$T/run.json" '$.problems.cancelled')" = "$np" ]
check "no problem counts as failed or done" \
  [ "$(json "$T/run.json" '$.problems.failed')$(json "$T/run.json" '$.problems.done')" = 00 ]
check "every job counts as cancelled ($nj)" \
  [ "$nj" -gt 0 ] && [ "$(json "$T/run.json" '$.jobs.cancelled')" = "$nj" ]
check "no job counts as failed, queued or done" [ "$(jsonq "$T/run.json" "SELECT
  json_extract(x, '$.jobs.failed') || json_extract(x, '$.jobs.queued')
  || json_extract(x, '$.jobs.done') FROM j")" = 000 ]
check "the database agrees" [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM jobs
  WHERE run_id = $RUN AND state = 'cancelled'")" = "$nj" ]
check "progress is 0: nothing was done" [ "$(json "$T/run.json" '$.progress')" = 0 ]
check "no ETA" [ "$(json "$T/run.json" '$.eta_s')" = "" ]
check "the cancel answer says the same" \
  [ "$(json "$T/cancel.json" '$.problems.cancelled')/$(json "$T/cancel.json" '$.progress')" = "$np/0" ]
curl -sf "$HTTP/v1/runs" -o "$T/runs.json"
check "the run list's progress is 0 too" [ "$(jsonq "$T/runs.json" "SELECT json_extract(r.value,
  '$.progress') FROM j, json_each(json_extract(x, '$.runs')) r
  WHERE json_extract(r.value, '$.id') = $RUN")" = 0 ]
rc=0
"$GT_BIN"/gemmtune status "$RUN" >"$T/status.txt" 2>&1 || rc=$?
check "the CLI says the problems were cancelled, not failed" \
  bash -c "grep -q '($np cancelled)' '$T/status.txt' && ! grep -q failed '$T/status.txt'"
curl -sf -N --max-time 5 "$HTTP/v1/runs/$RUN/events" -o "$T/sse.txt" || true
end=$(grep -A2 '^event: end$' "$T/sse.txt" | sed -n 's/^data: //p' | head -n 1)
check "the event stream's summary counts them as cancelled" [ "$(sqlite3 :memory: "SELECT
  json_extract('$end', '$.problems.cancelled') || '/' || json_extract('$end', '$.progress')")" = "$np/0" ]

# Cancelled midway: the progress stays at the share measured.
start_worker w1
submit "$GT_TEST_DATA/cpu_small_f32.log" "name=midway&budget=8&shard_size=2&ncpu=1&min_time_ms=3&repeats=3"
for _ in $(seq 600); do
  n=$(sqlite3 "$DB" "SELECT COUNT(*) FROM results WHERE run_id = $RUN" 2>/dev/null || echo 0)
  [ "$n" -ge 4 ] && break
  sleep 0.1
done
curl -s -o /dev/null -X POST "$HTTP/v1/runs/$RUN/cancel"
sleep 1 # a batch in flight may still land
curl -sf "$HTTP/v1/runs/$RUN" -o "$T/mid.json"
check "midway: cancelled" [ "$(json "$T/mid.json" '$.state')" = cancelled ]
check "midway: progress is the share of the work done, between 0 and 1" [ "$(jsonq "$T/mid.json" "
  SELECT abs(json_extract(x, '$.progress') -
     (json_extract(x, '$.candidates.done') + json_extract(x, '$.problems.done')
      + json_extract(x, '$.problems.failed')) * 1.0
     / (json_extract(x, '$.candidates.total') + json_extract(x, '$.problems.total'))) < 1e-9
  AND json_extract(x, '$.progress') > 0 AND json_extract(x, '$.progress') < 1 FROM j")" = 1 ]
check "midway: the jobs add up (done + failed + cancelled = total)" [ "$(jsonq "$T/mid.json" "
  SELECT json_extract(x, '$.jobs.done') + json_extract(x, '$.jobs.failed')
       + json_extract(x, '$.jobs.cancelled') = json_extract(x, '$.jobs.total')
     AND json_extract(x, '$.jobs.cancelled') > 0 FROM j")" = 1 ]

finish
