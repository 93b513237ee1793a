#!/usr/bin/env bash
# The coordinator's `gemmtune verify` (issue 17): POST /v1/runs/{id}/verify
# makes a verify run that re-times a done run's winners on its workers, one
# final job per GEMM with a tuned winner ([winner] beside the baseline it was
# paired with), and its view reports per GEMM the stored and the re-timed
# uplift, their difference and pass/fail against the tolerance. A real
# gemmtuned and one cpu worker on loopback; errors: 404 unknown run, 409 a
# run still running, 400 a bad body naming the field. And the CLI's
# `gemmtune verify-run` (exit 0 all passed, 1 one failed, 2 an error) and
# `gemmtune results` of a verify run.
source "$(dirname "$0")/lib.sh"

start_coordinator --lease-timeout 20
start_worker w1

submit "$GT_TEST_DATA/cpu_small_f32.log" "name=vr&budget=12&shard_size=4&min_time_ms=1&repeats=3&ncpu=1"
RUN1=$RUN
state=$(wait_run "$RUN1" 200)
check "tuned run finished (state=$state)" [ "$state" = done ]
cp "$T/run.json" "$T/tuned.json"
nbest=$(jsonq "$T/tuned.json" "SELECT json_array_length(x, '\$.best') FROM j;")
# entries with a tuned winner: the config is not the baseline it was paired with
ntuned=$(jsonq "$T/tuned.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '\$.best')) e
     WHERE json_extract(e.value, '\$.config') IS NOT NULL
       AND json(json_extract(e.value, '\$.config')) IS NOT json(json_extract(e.value, '\$.baseline_config'));")
echo "tuned run $RUN1: $nbest best entries, $ntuned with a tuned winner"

# errors
code=$(curl -s -o "$T/e404.json" -w '%{http_code}' -X POST "$HTTP/v1/runs/99999/verify")
check "verify of an unknown run is 404 (HTTP $code)" [ "$code" = 404 ]
rc=0
"$GT_BIN"/gemmtune verify-run 999999 >"$T/cli404.out" 2>"$T/cli404.err" || rc=$?
check "gemmtune verify-run 999999 exits 2 with the server's 404 text (rc=$rc: $(cat "$T/cli404.err"))" \
  bash -c "[ $rc = 2 ] && grep -q 'run 999999 not found (HTTP 404)' '$T/cli404.err'"
code=$(curl -s -o "$T/e400.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  --data-binary '{"tolerance": "x"}' "$HTTP/v1/runs/$RUN1/verify")
check "tolerance \"x\" is a 400 naming the field (HTTP $code: $(cat "$T/e400.json"))" \
  bash -c "[ $code = 400 ] && grep -q tolerance '$T/e400.json'"
code=$(curl -s -o "$T/e400b.json" -w '%{http_code}' -X POST --data-binary '{"tol": 1}' "$HTTP/v1/runs/$RUN1/verify")
check "an unknown field is a 400 naming it (HTTP $code)" bash -c "[ $code = 400 ] && grep -q tol '$T/e400b.json'"
code=$(curl -s -o /dev/null -w '%{http_code}' "$HTTP/v1/runs/$RUN1/verify")
check "GET verify is 405 (HTTP $code)" [ "$code" = 405 ]

code=$(curl -s -o "$T/verify.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  --data-binary '{"tolerance": 0.05}' "$HTTP/v1/runs/$RUN1/verify")
if [ "$ntuned" = 0 ]; then
  # nothing beat OpenBLAS beyond the noise on this machine: nothing to re-time
  check "no tuned winner: verify is a 422 (HTTP $code)" [ "$code" = 422 ]
  rc=0
  "$GT_BIN"/gemmtune verify-run "$RUN1" >"$T/cli422.out" 2>"$T/cli422.err" || rc=$?
  check "no tuned winner: gemmtune verify-run exits 2 with the 422 (rc=$rc: $(cat "$T/cli422.err"))" \
    bash -c "[ $rc = 2 ] && grep -q 'HTTP 422' '$T/cli422.err'"
  finish
  exit $?
fi
check "POST /v1/runs/$RUN1/verify is 201 (HTTP $code: $(cat "$T/verify.json"))" [ "$code" = 201 ]
check "the answer says verifies $RUN1" [ "$(json "$T/verify.json" '$.verifies')" = "$RUN1" ]
VRUN=$(json "$T/verify.json" '$.id')
check "a new run ($VRUN)" [ -n "$VRUN" ] && [ "$VRUN" != "$RUN1" ]
check "one problem per tuned winner ($(json "$T/verify.json" '$.problems') of $ntuned; skipped $(json "$T/verify.json" '$.skipped'))" \
  [ "$(json "$T/verify.json" '$.problems')/$(( $(json "$T/verify.json" '$.problems') + $(json "$T/verify.json" '$.skipped') ))" = "$ntuned/$nbest" ]
check "the store: one queued or leased final job per problem, candidates [winner], no screen" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) || '/' || SUM(kind = 'final' AND ncandidates = 1) FROM jobs WHERE run_id = $VRUN")" = "$ntuned/$ntuned" ]

state=$(wait_run "$VRUN" 120)
check "verify run finished (state=$state)" [ "$state" = done ]
cp "$T/run.json" "$T/vrun.json"
check "verify run says verifies $RUN1" [ "$(json "$T/vrun.json" '$.verifies')" = "$RUN1" ]
check "verify run is named and runs on the same backend" \
  [ "$(json "$T/vrun.json" '$.name')/$(json "$T/vrun.json" '$.backend')" = "verify of run $RUN1/cpu" ]
check "verify run has one best entry per tuned winner" \
  [ "$(jsonq "$T/vrun.json" "SELECT json_array_length(x, '\$.best') FROM j;")" = "$ntuned" ]
check "every problem done" [ "$(json "$T/vrun.json" '$.problems.done')" = "$ntuned" ]
# stored_uplift is the tuned run's uplift of the same label
bad=$(sqlite3 :memory: "WITH v(x) AS (SELECT readfile('$T/vrun.json')), t(x) AS (SELECT readfile('$T/tuned.json'))
  SELECT COUNT(*) FROM v, json_each(json_extract(v.x, '\$.best')) ve
  WHERE NOT EXISTS (SELECT 1 FROM t, json_each(json_extract(t.x, '\$.best')) te
                    WHERE json_extract(te.value, '\$.label') = json_extract(ve.value, '\$.label')
                      AND json_extract(te.value, '\$.uplift') = json_extract(ve.value, '\$.stored_uplift'));")
check "every entry's stored_uplift is the tuned run's uplift of the same label" [ "$bad" = 0 ]
check "every entry has a re-timed uplift > 0, its diff and a verdict pass or fail" \
  [ "$(jsonq "$T/vrun.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '\$.best')) e
       WHERE json_extract(e.value, '\$.uplift') > 0 AND json_extract(e.value, '\$.verify') IN ('pass', 'fail')
         AND abs(json_extract(e.value, '\$.diff') - (json_extract(e.value, '\$.uplift')
             / json_extract(e.value, '\$.stored_uplift') - 1)) < 1e-9;")" = "$ntuned" ]
check "each verdict is |diff| against the tolerance 0.05" \
  [ "$(jsonq "$T/vrun.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '\$.best')) e
       WHERE (json_extract(e.value, '\$.verify') = 'pass') = (abs(json_extract(e.value, '\$.diff')) <= 0.05);")" = "$ntuned" ]
check "the summary adds up: passed + failed = $ntuned, tolerance 0.05" \
  [ "$(jsonq "$T/vrun.json" "SELECT (json_extract(x, '\$.verify.passed') + json_extract(x, '\$.verify.failed'))
       || '/' || json_extract(x, '\$.verify.tolerance') FROM j;")" = "$ntuned/0.05" ]
check "the summary's passed count is the entries that pass" \
  [ "$(jsonq "$T/vrun.json" "SELECT json_extract(x, '\$.verify.passed') = (SELECT COUNT(*) FROM json_each(json_extract(x, '\$.best')) e
       WHERE json_extract(e.value, '\$.verify') = 'pass') FROM j;")" = 1 ]
check "the verify run's results are finals only (winner and baseline per GEMM)" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) || '/' || SUM(phase = 'final') FROM results WHERE run_id = $VRUN")" = "$((2 * ntuned))/$((2 * ntuned))" ]
check "the tuned run's view has no verify fields" [ "$(json "$T/tuned.json" '$.verifies')" = "" ]

# the CLI: gemmtune verify-run makes another verify run, waits for it, and
# prints one line per GEMM and the summary; pass and fail are both real
# measurements (exit 0 or 1), never an error (2)
rc=0
"$GT_BIN"/gemmtune verify-run "$RUN1" --tolerance 0.05 >"$T/cli.out" 2>"$T/cli.err" || rc=$?
cat "$T/cli.out"
check "gemmtune verify-run $RUN1 exits 0 or 1 (rc=$rc: $(cat "$T/cli.err"))" bash -c "[ $rc = 0 ] || [ $rc = 1 ]"
CRUN=$(sed -n "s/^run \([0-9]*\): verify of run $RUN1, $ntuned GEMM(s) to re-time.*tolerance 5%\$/\1/p" "$T/cli.out")
check "it names the new verify run ($CRUN), its GEMM count and tolerance" \
  bash -c "[ -n '$CRUN' ] && [ '$CRUN' != '$VRUN' ]"
summary=$(grep '^verified ' "$T/cli.out" || true)
check "it prints the summary line for $ntuned GEMM(s) ($summary)" \
  bash -c "echo '$summary' | grep -Eq '^verified $ntuned GEMM\(s\): [0-9]+ passed, [0-9]+ failed \(tolerance 5%\)\$'"
curl -sf "$HTTP/v1/runs/$CRUN" -o "$T/crun.json"
check "the summary's counts are the verify run's, and exit 1 exactly when one failed" \
  [ "$summary/$rc" = "verified $ntuned GEMM(s): $(json "$T/crun.json" '$.verify.passed') passed, $(json "$T/crun.json" '$.verify.failed') failed (tolerance 5%)/$([ "$(json "$T/crun.json" '$.verify.failed')" = 0 ] && echo 0 || echo 1)" ]
check "one line per GEMM with its verdict" \
  [ "$(grep -cE ' (pass|FAIL)(:|$)' "$T/cli.out")" = "$ntuned" ]
"$GT_BIN"/gemmtune results "$CRUN" >"$T/cresults.out" 2>&1 || true
check "gemmtune results of a verify run shows STORED and VERIFY columns and the summary" \
  bash -c "grep -q STORED '$T/cresults.out' && grep -q VERIFY '$T/cresults.out' && grep -q '^verify of run $RUN1: ' '$T/cresults.out'"

# a run still running is a 409
submit "$GT_TEST_DATA/cpu_small_f32.log" "name=busy&budget=32&ncpu=1"
code=$(curl -s -o "$T/e409.json" -w '%{http_code}' -X POST "$HTTP/v1/runs/$RUN/verify")
check "verify of a running run is 409 (HTTP $code: $(cat "$T/e409.json"))" [ "$code" = 409 ]
# and the default tolerance when no body is sent
code=$(curl -s -o "$T/verify2.json" -w '%{http_code}' -X POST "$HTTP/v1/runs/$RUN1/verify")
check "verify without a body: 201, tolerance GT_VERIFY_TOLERANCE (0.02)" \
  [ "$code/$(json "$T/verify2.json" '$.tolerance')" = "201/0.02" ]

finish
