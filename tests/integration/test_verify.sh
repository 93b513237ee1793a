#!/usr/bin/env bash
# Proves issue 17's trust path end to end on loopback: a real gemmtuned and a
# real CPU worker tune a small run whose final phase measures paired,
# interleaved rounds; every final entry carries uplift_lo <= uplift <=
# uplift_hi and rounds > 0 in GET /v1/runs/{id}, the results JSON and CSV,
# and the export, and is either a finalist beyond the noise (uplift_lo > 1)
# or the default with uplift 1 ("no significant gain"). Then `gemmtune
# verify` re-times every entry of the export in a fresh process: each is
# re-timed (its own interval and rounds), with a generous tolerance on this
# noisy machine. The verdict logic is pinned with synthetic exports whose
# stored uplifts the test chooses: an entry whose best is its own baseline
# re-times near 1 and passes against a stored 1.0, fails against a stored
# 3.0, passes again with --tolerance 100%; a cuda entry is refused where
# no GPU (or no CUDA build) can re-time it, and an entry tuned on another
# device model is refused rather than compared with this one.
source "$(dirname "$0")/lib.sh"

start_coordinator --lease-timeout 30
start_worker w1

submit "$GT_TEST_DATA/cpu_two_f32.log" \
  "name=verify&budget=4&shard_size=4&min_time_ms=1&repeats=3&ncpu=1&final_k=2&final_rounds=12&final_ci=0.05"
nprob=$(json "$T/submit.json" '$.problems')
check "submission accepted ($nprob problems)" [ "$nprob" -ge 1 ]
state=$(wait_run "$RUN" 400)
check "run finished (state=$state)" [ "$state" = done ]

bad=$(jsonq "$T/run.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.best')) e
       WHERE json_extract(e.value, '$.phase') != 'final'
          OR NOT json_extract(e.value, '$.rounds') > 0
          OR NOT (json_extract(e.value, '$.uplift_lo') <= json_extract(e.value, '$.uplift')
                  AND json_extract(e.value, '$.uplift') <= json_extract(e.value, '$.uplift_hi'));")
check "API: every best entry is final, rounds > 0, uplift_lo <= uplift <= uplift_hi" [ "$bad" = 0 ]
bad=$(jsonq "$T/run.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.best')) e
       WHERE NOT ((json_extract(e.value, '$.significant') = 1 AND json_extract(e.value, '$.uplift_lo') > 1
                   AND json_extract(e.value, '$.verdict') = 'significant gain')
               OR (json_extract(e.value, '$.significant') = 0 AND json_extract(e.value, '$.uplift') = 1
                   AND json_extract(e.value, '$.verdict') = 'no significant gain'));")
check "API: a winner is beyond the noise, else the default with uplift 1 (no significant gain)" [ "$bad" = 0 ]
check "the run's options carry final_rounds and final_ci" \
  [ "$(json "$T/run.json" '$.options.final_rounds')/$(json "$T/run.json" '$.options.final_ci')" = 12/0.05 ]
bad=$(jsonq "$T/run.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.best')) e
       WHERE json_extract(e.value, '$.rounds') > 12 OR json_extract(e.value, '$.rounds') < 8;")
check "rounds within [GT_PAIRED_MIN_ROUNDS, final_rounds]" [ "$bad" = 0 ]

curl -sf "$HTTP/v1/runs/$RUN/results" -o "$T/results.json"
bad=$(jsonq "$T/results.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.results')) e
       WHERE json_extract(e.value, '$.phase') = 'final' AND json_extract(e.value, '$.valid') = 1
         AND NOT (json_extract(e.value, '$.rounds') > 0
                  AND json_extract(e.value, '$.uplift_lo') <= json_extract(e.value, '$.uplift'));")
check "results JSON: every valid final result is paired" [ "$bad" = 0 ]
curl -sf "$HTTP/v1/runs/$RUN/results?format=csv" -o "$T/results.csv"
check "results CSV has the paired columns" grep -q ',job_id,rounds,uplift,uplift_lo,uplift_hi$' "$T/results.csv"

"$GT_BIN"/gemmtune --server "$HTTP" results "$RUN" >"$T/results.txt"
check "gemmtune results shows the interval column" grep -q '95% CI (ROUNDS)' "$T/results.txt"
# the run's two summary figures under their own names (issue 18: the workload speed-up was
# printed as "FLOP-weighted uplift")
su=$(jsonq "$T/run.json" "SELECT printf('%.3fx', json_extract(x, '$.weighted_uplift')) FROM j;")
fw=$(jsonq "$T/run.json" "SELECT printf('%.3fx', json_extract(x, '$.flop_weighted_uplift')) FROM j;")
check "gemmtune results: workload speed-up is weighted_uplift ($su)" grep -qF "workload speed-up: $su " "$T/results.txt"
check "gemmtune results: FLOP-weighted uplift is flop_weighted_uplift ($fw)" grep -qxF "FLOP-weighted uplift: $fw" "$T/results.txt"

curl -sf "$HTTP/v1/runs/$RUN/export" -o "$T/a.db"
check "export: a best row per problem" [ "$(sqlite3 "$T/a.db" 'SELECT COUNT(*) FROM best')" = "$nprob" ]
check "export: every best row has rounds > 0 and uplift_lo <= uplift <= uplift_hi" \
  [ "$(sqlite3 "$T/a.db" 'SELECT COUNT(*) FROM best WHERE NOT (rounds > 0 AND uplift_lo <= uplift AND uplift <= uplift_hi)')" = 0 ]
check "export: the API's uplifts" \
  [ "$(sqlite3 "$T/a.db" 'SELECT group_concat(round(uplift, 9)) FROM (SELECT uplift FROM best ORDER BY problem_id)')" = \
    "$(jsonq "$T/run.json" "SELECT group_concat(round(u, 9)) FROM (SELECT json_extract(e.value, '$.uplift') u FROM j, json_each(json_extract(j.x, '$.best')) e ORDER BY json_extract(e.value, '$.problem_id'));")" ]

# verify the export in a fresh process: every entry re-timed, with its interval
rc=0
"$GT_BIN"/gemmtune verify "$T/a.db" --json --tolerance 0.5 --rounds 10 --min-time-ms 2 \
  >"$T/verify.json" 2>"$T/verify.err" || rc=$?
check "verify --json answered (rc=$rc)" [ -s "$T/verify.json" ]
check "verify: one entry per best row" [ "$(json "$T/verify.json" '$.entries_total')" = "$nprob" ]
bad=$(jsonq "$T/verify.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.entries')) e
       WHERE json_extract(e.value, '$.retimed.rounds') IS NULL
          OR NOT json_extract(e.value, '$.retimed.rounds') >= 8
          OR NOT (json_extract(e.value, '$.retimed.uplift_lo') <= json_extract(e.value, '$.retimed.uplift')
                  AND json_extract(e.value, '$.retimed.uplift') <= json_extract(e.value, '$.retimed.uplift_hi'))
          OR json_extract(e.value, '$.result') NOT IN ('pass', 'fail')
          OR json_extract(e.value, '$.stored.uplift') IS NULL;")
check "verify: every entry re-timed with its interval and a verdict" [ "$bad" = 0 ]
bad=$(jsonq "$T/verify.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.entries')) e
       WHERE (json_extract(e.value, '$.result') = 'pass') !=
             (abs(json_extract(e.value, '$.retimed.uplift') / json_extract(e.value, '$.stored.uplift') - 1) <= 0.5);")
check "verify: pass exactly when within the tolerance" [ "$bad" = 0 ]
npass=$(json "$T/verify.json" '$.passed')
check "verify: exit status 0 exactly when all passed (passed=$npass, rc=$rc)" \
  [ "$([ "$npass" = "$nprob" ] && echo 0 || echo 1)" = "$rc" ]
check "verify: the re-tuned uplifts hold within 50 % here (passed $npass of $nprob)" [ "$npass" = "$nprob" ]

# Synthetic exports: the verdict with stored uplifts the test chooses. Every
# best row becomes the problem's own baseline config (a kernel against
# itself re-times near 1.0).
cp "$T/a.db" "$T/self.db"
sqlite3 "$T/self.db" "UPDATE best SET config = (SELECT r.config FROM results r WHERE r.problem_id = best.problem_id
                        AND r.is_baseline = 1 ORDER BY r.phase = 'final' DESC LIMIT 1), uplift = 1.0;"
rc=0
"$GT_BIN"/gemmtune verify "$T/self.db" --tolerance 0.25 --rounds 10 --min-time-ms 2 \
  >"$T/self.txt" 2>&1 || rc=$?
check "verify: the default against itself re-times within 25 % of 1.0 (rc=$rc)" [ "$rc" = 0 ]
check "verify: the text output has the summary line" grep -q "^verified $nprob GEMM(s) on .*: $nprob passed, 0 failed" "$T/self.txt"
sqlite3 "$T/self.db" "UPDATE best SET uplift = 3.0;"
rc=0
"$GT_BIN"/gemmtune verify "$T/self.db" --rounds 8 --min-time-ms 1 >"$T/bad.txt" 2>&1 || rc=$?
check "verify: a stored 3.0 that re-times near 1 fails, exit status 1 (rc=$rc)" [ "$rc" = 1 ]
check "verify: the failure says why" grep -q "FAIL: re-timed .* from the stored 3.0000x (tolerance 2.0%)" "$T/bad.txt"
rc=0
"$GT_BIN"/gemmtune verify "$T/self.db" --rounds 8 --min-time-ms 1 --tolerance 100% >/dev/null 2>&1 || rc=$?
check "verify: --tolerance 100% lets it pass (rc=$rc)" [ "$rc" = 0 ]
cp "$T/self.db" "$T/cuda.db"
sqlite3 "$T/cuda.db" "UPDATE best SET backend = 'cuda' WHERE problem_id = (SELECT MIN(problem_id) FROM best);"
rc=0
"$GT_BIN"/gemmtune verify "$T/cuda.db" --json --rounds 8 --min-time-ms 1 --tolerance 100% >"$T/cuda.json" 2>/dev/null || rc=$?
check "verify: a cuda entry is refused with a reason, exit status 1 (rc=$rc)" \
  [ "$rc/$(json "$T/cuda.json" '$.refused')" = 1/1 ]
# Without a GPU: "no cuda device here ..." (CUDA build) or "backend cuda is
# not built into ..."; on a GPU node: "tuned on <this CPU>, this cuda device
# is <the GPU>". Each names cuda and why.
check "verify: the refusal says why the cuda entry cannot be re-timed here" \
  [ "$(jsonq "$T/cuda.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.entries')) e
        WHERE json_extract(e.value, '$.result') = 'refused' AND (json_extract(e.value, '$.reason') LIKE 'no cuda device here%'
           OR json_extract(e.value, '$.reason') LIKE 'backend cuda is not built%'
           OR json_extract(e.value, '$.reason') LIKE 'tuned on %, this cuda device is %');")" = 1 ]
cp "$T/self.db" "$T/other.db"
sqlite3 "$T/other.db" "UPDATE best SET device_model = 'Other CPU 9000' WHERE problem_id = (SELECT MIN(problem_id) FROM best);"
rc=0
"$GT_BIN"/gemmtune verify "$T/other.db" --json --rounds 8 --min-time-ms 1 --tolerance 100% >"$T/other.json" 2>/dev/null || rc=$?
check "verify: an entry tuned on another device model is refused, exit status 1 (rc=$rc)" \
  [ "$rc/$(json "$T/other.json" '$.refused')/$(json "$T/other.json" '$.passed')" = "1/1/$(( $(sqlite3 "$T/other.db" 'SELECT COUNT(*) FROM best') - 1 ))" ]
check "verify: the refusal names both models" \
  [ "$(jsonq "$T/other.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.entries')) e
        WHERE json_extract(e.value, '$.reason') LIKE 'tuned on Other CPU 9000, this cpu device is %';")" = 1 ]
rc=0
"$GT_BIN"/gemmtune verify "$T/self.db" --tolerance abc >/dev/null 2>&1 || rc=$?
check "verify: a bad --tolerance is a usage error (rc=$rc)" [ "$rc" = 2 ]
rc=0
"$GT_BIN"/gemmtune verify "$T/nonexistent.db" >/dev/null 2>&1 || rc=$?
check "verify: a missing file is an error (rc=$rc)" [ "$rc" = 1 ]

# --launch: how the entries are re-timed (the run's option launch, which the export records)
check "export: meta launch is the run's (plain)" [ "$(sqlite3 "$T/a.db" "SELECT value FROM meta WHERE key = 'launch'")" = plain ]
rc=0
"$GT_BIN"/gemmtune verify "$T/self.db" --launch cudagraph >"$T/l1.txt" 2>&1 || rc=$?
check "verify: --launch cudagraph is a usage error naming the values (rc=$rc)" \
  bash -c "[ $rc = 2 ] && grep -q -- '--launch cudagraph: plain, chained or graph' '$T/l1.txt'"
rc=0
"$GT_BIN"/gemmtune verify "$T/self.db" --launch graph --json --rounds 8 --min-time-ms 1 --tolerance 100% \
  >"$T/l2.json" 2>"$T/l2.err" || rc=$?
check "verify --launch graph: cpu entries are refused, never timed another way (rc=$rc)" \
  [ "$rc/$(json "$T/l2.json" '$.refused')/$(json "$T/l2.json" '$.passed')" = "1/$nprob/0" ]
check "verify --launch graph: the refusal says why" \
  [ "$(jsonq "$T/l2.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.entries')) e
        WHERE json_extract(e.value, '$.reason') = 'launch=graph: only the cuda backend times in CUDA graphs (this entry is cpu)';")" = "$nprob" ]
check "verify --launch graph: says the export was timed with launch=plain" \
  grep -q "was timed with launch=plain; re-timing with launch=graph" "$T/l2.err"
rc=0
"$GT_BIN"/gemmtune verify "$T/self.db" --launch plain --rounds 8 --min-time-ms 1 --tolerance 100% \
  >"$T/l3.txt" 2>&1 || rc=$?
check "verify --launch plain on a plain export: passes, no launch note (rc=$rc)" \
  bash -c "[ $rc = 0 ] && ! grep -q 'was timed with launch=' '$T/l3.txt'"
# without --launch the entries are re-timed as the export's run timed them: a copy whose
# meta says graph has its cpu entries refused for graph, not timed plainly
cp "$T/self.db" "$T/g.db"
sqlite3 "$T/g.db" "UPDATE meta SET value = 'graph' WHERE key = 'launch'"
rc=0
"$GT_BIN"/gemmtune verify "$T/g.db" --json --rounds 8 --min-time-ms 1 --tolerance 100% \
  >"$T/l4.json" 2>"$T/l4.err" || rc=$?
check "verify without --launch re-times as the export says (graph: cpu entries refused, rc=$rc)" \
  [ "$rc/$(json "$T/l4.json" '$.refused')/$(json "$T/l4.json" '$.passed')" = "1/$nprob/0" ]
check "verify without --launch: no mismatch note" bash -c "! grep -q 'was timed with launch=' '$T/l4.err'"
# an entry whose final was launch-bound (best.launch 'graph': timed as CUDA graphs in a plain
# run) is re-timed as a graph without --launch, the others as the run says; --launch plain
# re-times every entry plainly (cpu entries cannot be graphs: that one is refused, say why)
check "export: best entries timed as the run says carry launch NULL" \
  [ "$(sqlite3 "$T/self.db" "SELECT COUNT(*) FROM best WHERE launch IS NULL")" = "$nprob" ]
cp "$T/self.db" "$T/lb.db"
sqlite3 "$T/lb.db" "UPDATE best SET launch = 'graph' WHERE problem_id = (SELECT MIN(problem_id) FROM best)"
rc=0
"$GT_BIN"/gemmtune verify "$T/lb.db" --json --rounds 8 --min-time-ms 1 --tolerance 100% \
  >"$T/l5.json" 2>"$T/l5.err" || rc=$?
check "verify: a launch-bound entry is re-timed as a graph, the others plainly (rc=$rc)" \
  [ "$rc/$(json "$T/l5.json" '$.refused')/$(json "$T/l5.json" '$.passed')" = "1/1/$((nprob - 1))" ]
check "verify --json: the launch-bound entry says graph, stored and re-timed" \
  [ "$(jsonq "$T/l5.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.entries')) e
        WHERE json_extract(e.value, '$.stored.launch') = 'graph' AND json_extract(e.value, '$.launch') = 'graph'
          AND json_extract(e.value, '$.reason') LIKE 'launch=graph: only the cuda backend%';")" = 1 ]
rc=0
"$GT_BIN"/gemmtune verify "$T/lb.db" --launch plain --json --rounds 8 --min-time-ms 1 --tolerance 100% \
  >"$T/l6.json" 2>"$T/l6.err" || rc=$?
check "verify --launch plain: every entry plainly, the launch-bound one too (rc=$rc)" \
  [ "$rc/$(json "$T/l6.json" '$.refused')/$(json "$T/l6.json" '$.passed')" = "0/0/$nprob" ]

# --against: two exports' winners timed in the same paired rounds, expected as fast. The
# export against itself: every GEMM timed (its winner against the same config), the ratio
# near 1 (the cpu's noise: a wide tolerance), nothing refused
rc=0
"$GT_BIN"/gemmtune verify "$T/a.db" --against "$T/a.db" --json --rounds 8 --min-time-ms 1 --tolerance 100% \
  >"$T/v1.json" 2>"$T/v1.err" || rc=$?
check "verify --against itself: every GEMM timed against its own winner, none refused (rc=$rc)" \
  [ "$rc/$(json "$T/v1.json" '$.passed')/$(json "$T/v1.json" '$.refused')/$(json "$T/v1.json" '$.against')" = "0/$nprob/0/$T/a.db" ]
check "verify --against: the expected ratio is 1 and each entry has a re-timed ratio" \
  [ "$(jsonq "$T/v1.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.entries')) e
        WHERE json_extract(e.value, '$.stored.uplift') = 1 AND json_extract(e.value, '$.retimed.uplift') > 0;")" = "$nprob" ]
# an export that lacks one GEMM: that one is refused with the reason, the others timed
cp "$T/a.db" "$T/less.db"
sqlite3 "$T/less.db" "DELETE FROM best WHERE problem_id = (SELECT MIN(problem_id) FROM best)"
rc=0
"$GT_BIN"/gemmtune verify "$T/a.db" --against "$T/less.db" --rounds 8 --min-time-ms 1 --tolerance 100% \
  >"$T/v2.txt" 2>&1 || rc=$?
check "verify --against an export without one GEMM: refused, naming why (rc=$rc)" \
  bash -c "[ $rc = 1 ] && grep -q 'refused: no entry for it in the other export' '$T/v2.txt' &&
           grep -q 'OTHER/THIS' '$T/v2.txt' && grep -q \"$((nprob - 1)) passed, 0 failed, 1 refused\" '$T/v2.txt'"
rc=0
"$GT_BIN"/gemmtune verify "$T/a.db" --against "$T/nonexistent.db" >"$T/v3.txt" 2>&1 || rc=$?
check "verify --against a missing file is an error (rc=$rc)" [ "$rc" = 1 ]

finish
