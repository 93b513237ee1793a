#!/usr/bin/env bash
# Proves strategy=evolutionary end to end on loopback: a real gemmtuned and two
# real CPU workers tune three GEMMs with a budget of 10 configs each,
# 4 per generation. The run completes; every problem ran more than one
# generation, measured at most its budget, all of it from its stored space and
# nothing twice, and has a validated final best; the uplift is reported; while
# it ran, the progress never claimed 100 % and the job total grew with the
# generations. The CLI accepts --strategy evolutionary and a bad strategy is
# a 400 that names the choices.
source "$(dirname "$0")/lib.sh"

start_coordinator --lease-timeout 20
start_worker w1
start_worker w2

head -n 3 "$GT_TEST_DATA/cpu_small_f32.log" >"$T/three.log" # f32: OpenBLAS is the baseline
BUDGET=10
submit "$T/three.log" "name=evo&strategy=evolutionary&budget=$BUDGET&population=4&generations=4&seed=5&shard_size=2&min_time_ms=1&repeats=3&ncpu=1"
check "submission accepted with 3 problems" [ "$(json "$T/submit.json" '$.problems')" = 3 ]
check "the whole budget is announced" [ "$(json "$T/submit.json" '$.candidates')" = $((3 * BUDGET)) ]

# Poll like wait_run, but remember what the run said while it was running.
first_jobs=$(json "$T/submit.json" '$.jobs')
state=running; max_progress=0; polls=0
for _ in $(seq 240); do
  curl -sf "$HTTP/v1/runs/$RUN" -o "$T/run.json" || true
  state=$(json "$T/run.json" '$.state' 2>/dev/null || echo running)
  [ "$state" != running ] && break
  p=$(json "$T/run.json" '$.progress')
  max_progress=$(sqlite3 :memory: "SELECT MAX($max_progress, ${p:-0})")
  polls=$((polls + 1))
  sleep 0.25
done
check "run finished (state=$state)" [ "$state" = done ]
check "strategy reported as evolutionary" [ "$(json "$T/run.json" '$.strategy')" = evolutionary ]
check "progress stayed below 100 % while running (max $max_progress in $polls polls)" \
  [ "$polls" -gt 0 ] && [ "$(sqlite3 :memory: "SELECT $max_progress < 1")" = 1 ]
final_jobs=$(json "$T/run.json" '$.jobs.total')
check "job total grew with the generations ($first_jobs -> $final_jobs)" [ "$final_jobs" -gt "$first_jobs" ]
check "every problem done" [ "$(json "$T/run.json" '$.problems.done')" = 3 ]

check "every problem ran more than one generation" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM spaces WHERE run_id = $RUN AND generation >= 1 AND state = 'done'")" = 3 ]
check "and has its screen jobs tagged with them" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(DISTINCT problem_id) FROM jobs WHERE run_id = $RUN AND generation >= 1")" = 3 ]
check "no problem measured more than its budget" \
  [ "$(sqlite3 "$DB" "SELECT COALESCE(MAX(n), 0) <= $BUDGET FROM (SELECT COUNT(*) AS n FROM results
        WHERE run_id = $RUN AND phase = 'screen' GROUP BY problem_id)")" = 1 ]
check "the budget was used: more than one generation's worth measured" \
  [ "$(sqlite3 "$DB" "SELECT MIN(n) > 4 FROM (SELECT COUNT(*) AS n FROM results
        WHERE run_id = $RUN AND phase = 'screen' GROUP BY problem_id)")" = 1 ]
check "no config proposed twice for a problem" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM (SELECT j.problem_id, e.value FROM jobs j, json_each(j.candidates) e
        WHERE j.run_id = $RUN AND j.kind = 'screen' GROUP BY j.problem_id, e.value HAVING COUNT(*) > 1)")" = 0 ]
check "every proposal is a member of the problem's stored space" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM jobs j, json_each(j.candidates) e
        WHERE j.run_id = $RUN AND j.kind = 'screen' AND NOT EXISTS (SELECT 1 FROM spaces s, json_each(s.configs) m
        WHERE s.problem_id = j.problem_id AND m.value = e.value)")" = 0 ]
check_best_paired "$T/run.json"
check "candidates done match the screen results" \
  [ "$(json "$T/run.json" '$.candidates.done')" = "$(sqlite3 "$DB" "SELECT COUNT(*) FROM results WHERE run_id = $RUN AND phase = 'screen'")" ]
check "the coordinator logged why each search stopped" \
  [ "$(grep -c 'evolutionary search done after generation' "$T/gemmtuned.log")" -ge 3 ]

# The CLI passes the strategy through (bound to a model no worker has, so the
# run stays queued), and a bad strategy names the choices.
cli_submit() {
  "$GT_BIN"/gemmtune submit "$T/three.log" --strategy evolutionary --budget 6 \
    --device-model none-such >"$T/cli.out" 2>&1
}
check "gemmtune submit --strategy evolutionary accepted" cli_submit
RUN2=$(sqlite3 "$DB" "SELECT MAX(id) FROM runs")
check "stored as evolutionary with generation 0 (the budget: population >= budget) queued" \
  [ "$(sqlite3 "$DB" "SELECT r.strategy || ':' || (SELECT SUM(ncandidates) FROM jobs WHERE run_id = r.id
        AND generation = 0) FROM runs r WHERE r.id = $RUN2")" = "evolutionary:18" ]
curl -s -o /dev/null -X POST "$HTTP/v1/runs/$RUN2/cancel"
code=$(curl -s -o "$T/bad.json" -w '%{http_code}' -X POST --data-binary @"$T/three.log" "$HTTP/v1/runs?strategy=annealing")
check "unknown strategy is 400 naming evolutionary (got $code)" \
  [ "$code" = 400 ] && grep -q evolutionary "$T/bad.json"

finish
