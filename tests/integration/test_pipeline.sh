#!/usr/bin/env bash
# Proves the whole pipeline end to end on loopback: a real gemmtuned and two
# real CPU workers; a log submitted with curl is tuned to completion; every
# GEMM gets a validated best that is not slower than its baseline, OpenBLAS
# (both timed in the same final job); the results and export endpoints work;
# two exports merge into a file the sqlite3 command line reads; bad requests
# get clear errors with the right status codes. A GEMM OpenBLAS has no
# routine for (bf16 in Debian 12's 0.3.21) and a worker without OpenBLAS
# still end done with their tuned best, paired with a substitute baseline,
# and the reason the default is missing shows in the API, `gemmtune results`,
# `gemmtune report` and the export.
source "$(dirname "$0")/lib.sh"

start_coordinator --lease-timeout 20
start_worker w1
W1=$WPID
start_worker w2
W2=$WPID

# f32: OpenBLAS (cblas_sgemm) is every GEMM's baseline.
submit "$GT_TEST_DATA/cpu_small_f32.log" "name=it&budget=6&shard_size=3&min_time_ms=1&repeats=3&ncpu=1"
nprob=$(json "$T/submit.json" '$.problems')
check "submission accepted with 6 problems" [ "$nprob" = 6 ]
check "format detected as hipblaslt" [ "$(json "$T/submit.json" '$.format')" = hipblaslt ]

state=$(wait_run "$RUN" 400)
check "run 1 finished (state=$state)" [ "$state" = done ]
check "every problem done" [ "$(json "$T/run.json" '$.problems.done')" = 6 ]
# the workers' heartbeat connections attach before their first heartbeat (every 3.3 s
# here): a normal run has no refused worker request in the coordinator's log
check "no worker request refused in a normal run ($(grep -c 'dispatch: refused' "$T/gemmtuned.log") in gemmtuned.log)" \
  [ "$(grep -c 'dispatch: refused' "$T/gemmtuned.log")" = 0 ]
check_best_paired "$T/run.json"
check "f32: every GEMM's uplift is against the default, OpenBLAS (baseline_kind default, no reason)" \
  [ "$(jsonq "$T/run.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.best')) e
       WHERE json_extract(e.value, '$.baseline_kind') = 'default'
         AND json_extract(e.value, '$.baseline_config.lib') = 'openblas'
         AND json_extract(e.value, '$.baseline_reason') IS NULL;")/$(json "$T/run.json" '$.substitute_baselines')" = 6/0 ]
check "the database agrees: all problems done" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM problems WHERE run_id = $RUN AND state = 'done'")" = 6 ]
check "no result is valid without a time and an error within tolerance" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM results WHERE valid = 1 AND (time_us IS NULL OR rel_err IS NULL OR rel_err > 0.05)")" = 0 ]

curl -sf "$HTTP/v1/runs/$RUN/results" -o "$T/results.json"
check "results JSON lists results" [ "$(jsonq "$T/results.json" "SELECT json_array_length(x, '$.results') > 6 FROM j;")" = 1 ]
check "every GEMM's final baseline is OpenBLAS on ncpu threads, valid and timed" \
  [ "$(jsonq "$T/results.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.results')) r
       WHERE json_extract(r.value, '$.phase') = 'final' AND json_extract(r.value, '$.baseline') = 1
         AND json_extract(r.value, '$.config.lib') = 'openblas' AND json_extract(r.value, '$.config.threads') = 1
         AND json_extract(r.value, '$.valid') = 1 AND json_extract(r.value, '$.time_us') > 0;")" = 6 ]
check "no baseline is a generated kernel" \
  [ "$(jsonq "$T/results.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.results')) r
       WHERE json_extract(r.value, '$.baseline') = 1 AND json_extract(r.value, '$.config.lib') IS NULL;")" = 0 ]
curl -sf "$HTTP/v1/runs/$RUN/results?format=csv" -o "$T/results.csv"
check "results CSV has a header" grep -q '^problem_id,label,backend,phase,config' "$T/results.csv"
curl -sf "$HTTP/v1/workers" -o "$T/workers.json"
check "two workers registered" [ "$(jsonq "$T/workers.json" "SELECT json_array_length(x, '$.workers') FROM j;")" = 2 ]

curl -sf "$HTTP/v1/runs/$RUN/export" -o "$T/a.db"
check "export is an SQLite file with all problems" [ "$(sqlite3 "$T/a.db" 'SELECT COUNT(*) FROM problems')" = 6 ]
check "export has a best row per problem" [ "$(sqlite3 "$T/a.db" 'SELECT COUNT(*) FROM best')" = 6 ]
check "export: every best row's baseline is the default" \
  [ "$(sqlite3 "$T/a.db" "SELECT COUNT(*) FROM best WHERE baseline_kind = 'default' AND baseline_config IS NULL AND baseline_reason IS NULL")" = 6 ]
check "export meta has format_version 1" \
  [ "$(sqlite3 "$T/a.db" "SELECT value FROM meta WHERE key = 'format_version'")" = 1 ]

# A second run of an overlapping workload (JSON body this time), then merge.
printf '%s\n' '- {function: matmul, M: 64, N: 4, K: 64, transA: T, transB: N, a_type: f32_r, b_type: f32_r, c_type: f32_r, d_type: f32_r, compute_type: c_f32_r, call_count: 3}' >"$T/extra.log"
head -n 2 "$GT_TEST_DATA/cpu_small_f32.log" >>"$T/extra.log"
body=$(sqlite3 :memory: "SELECT json_object('log', CAST(readfile('$T/extra.log') AS TEXT), 'name', 'second', 'budget', 4, 'ncpu', 1, 'shard_size', 4, 'min_time_ms', 1, 'repeats', 3);")
code=$(curl -s -o "$T/submit2.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  --data-binary "$body" "$HTTP/v1/runs")
check "JSON submission accepted (HTTP $code)" [ "$code" = 201 ]
RUN2=$(json "$T/submit2.json" '$.id')
check "run 2 finished" [ "$(wait_run "$RUN2" 300)" = done ]
"$GT_BIN"/gemmtune export "$RUN2" -o "$T/b.db" >/dev/null
check "gemmtune export wrote run 2" [ "$(sqlite3 "$T/b.db" 'SELECT COUNT(*) FROM best')" = 3 ]
"$GT_BIN"/gemmtune merge "$T/a.db" "$T/b.db" -o "$T/merged.db" >/dev/null
check "merged file has the union of problems (6 + 1 new)" \
  [ "$(sqlite3 "$T/merged.db" 'SELECT COUNT(*) FROM problems')" = 7 ]
check "merged file has one best per problem" \
  [ "$(sqlite3 "$T/merged.db" 'SELECT COUNT(*) FROM best')" = 7 ]
check "merged best is the faster of the two inputs" [ "$(sqlite3 "$T/merged.db" "
  ATTACH '$T/a.db' AS a; ATTACH '$T/b.db' AS b;
  SELECT COUNT(*) FROM best m JOIN problems mp ON mp.id = m.problem_id
   WHERE m.time_us > COALESCE((SELECT ab.time_us FROM a.best ab JOIN a.problems ap ON ap.id = ab.problem_id WHERE ap.key = mp.key), 1e300)
      OR m.time_us > COALESCE((SELECT bb.time_us FROM b.best bb JOIN b.problems bp ON bp.id = bb.problem_id WHERE bp.key = mp.key), 1e300);")" = 0 ]

# Errors: a bad log names the line and the field; unknown runs are 404.
printf '%s\n' '- {function: matmul, M: 16, N: 16, K: 16, transA: N, transB: N, a_type: f32_r, b_type: f32_r, c_type: f32_r, d_type: f32_r, compute_type: c_f32_r}' \
  '- {function: matmul, M: 16, N: 16, K: 16, lda: 1, transA: N, transB: N, a_type: f32_r, b_type: f32_r, c_type: f32_r, d_type: f32_r, compute_type: c_f32_r}' >"$T/bad.log"
code=$(curl -s -o "$T/bad.json" -w '%{http_code}' -X POST --data-binary @"$T/bad.log" "$HTTP/v1/runs")
check "bad log rejected with 422 (got $code)" [ "$code" = 422 ]
check "error names line 2 and field lda" \
  [ "$(jsonq "$T/bad.json" "SELECT json_extract(x, '$.details[0].line') || ':' || json_extract(x, '$.details[0].field') FROM j;")" = "2:lda" ]
# (bound to a device model no worker has, so it stays queued until cancelled)
code=$(curl -s -o "$T/skip.json" -w '%{http_code}' -X POST --data-binary @"$T/bad.log" "$HTTP/v1/runs?skip_invalid=true&budget=2&device_model=none-such")
check "skip_invalid accepts it and reports the skipped line" \
  [ "$code" = 201 ] && [ "$(json "$T/skip.json" '$.skipped[0].line')" = 2 ]
curl -s -o "$T/cancel.json" -X POST "$HTTP/v1/runs/$(json "$T/skip.json" '$.id')/cancel"
check "cancel answers with the cancelled run" [ "$(json "$T/cancel.json" '$.state')" = cancelled ]
curl -s -o "$T/cancelled.json" "$HTTP/v1/runs/$(json "$T/skip.json" '$.id')"
check "cancelled run stays cancelled with no queued job" \
  [ "$(json "$T/cancelled.json" '$.state'):$(json "$T/cancelled.json" '$.jobs.queued')" = cancelled:0 ]
check "unknown run is 404" [ "$(curl -s -o /dev/null -w '%{http_code}' "$HTTP/v1/runs/999")" = 404 ]
check "unknown option is 400" [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary @"$T/bad.log" "$HTTP/v1/runs?bogus=1")" = 400 ]
check "healthz is ok" grep -q '"ok"' <(curl -s "$HTTP/healthz")

# The run list pages, newest first (three runs now: RUN, RUN2 and the cancelled one).
CANC=$(json "$T/skip.json" '$.id')
curl -sf "$HTTP/v1/runs?limit=2" -o "$T/p1.json"
check "GET /v1/runs?limit=2: the two newest, newest first, and a cursor" \
  [ "$(jsonq "$T/p1.json" "SELECT group_concat(json_extract(r.value, '$.id')) FROM j, json_each(json_extract(x, '$.runs')) r;")/$(json "$T/p1.json" '$.next')" = "$CANC,$RUN2/$RUN2" ]
curl -sf "$HTTP/v1/runs?limit=2&before=$RUN2" -o "$T/p2.json"
check "the next page holds the oldest run and ends the list" \
  [ "$(jsonq "$T/p2.json" "SELECT group_concat(json_extract(r.value, '$.id')) FROM j, json_each(json_extract(x, '$.runs')) r;")/$(json "$T/p2.json" '$.next')" = "$RUN/" ]
curl -sf "$HTTP/v1/runs?state=cancelled&backend=cpu" -o "$T/pc.json"
check "filtered by state and backend" \
  [ "$(jsonq "$T/pc.json" "SELECT group_concat(json_extract(r.value, '$.id')) FROM j, json_each(json_extract(x, '$.runs')) r;")" = "$CANC" ]
curl -sf "$HTTP/v1/runs?name=second" -o "$T/pn.json"
check "filtered by name" \
  [ "$(jsonq "$T/pn.json" "SELECT group_concat(json_extract(r.value, '$.id')) FROM j, json_each(json_extract(x, '$.runs')) r;")" = "$RUN2" ]
for q in limit=0 limit=1001 limit=x before=0 state=bogus backend=tpu status=done; do
  code=$(curl -s -o "$T/q.json" -w '%{http_code}' "$HTTP/v1/runs?$q")
  check "GET /v1/runs?$q is a 400 naming ${q%%=*}" bash -c "[ $code = 400 ] && grep -q '${q%%=*}' '$T/q.json'"
done
"$GT_BIN"/gemmtune --server "$HTTP" status --limit 1 >"$T/list1.txt"
check "gemmtune status --limit 1 lists the newest run only" \
  [ "$(grep -c cancelled "$T/list1.txt"):$(grep -c -w second "$T/list1.txt")" = 1:0 ]

# bf16 (cpu_two.log: a bf16 and an f32 GEMM): Debian 12's OpenBLAS has no bf16
# GEMM, so that GEMM's default cannot run (issue 18): its candidates still
# compete, the final pairs them with a substitute baseline (the fastest valid
# screen candidate, the default blocking when it was screened), and the API,
# the CLI and the export say so, with the reason. The f32 GEMM keeps OpenBLAS.
submit "$GT_TEST_DATA/cpu_two.log" "name=bf16&budget=3&shard_size=3&min_time_ms=1&repeats=3&ncpu=1&final_k=1"
check "bf16 run finished" [ "$(wait_run "$RUN" 300)" = done ]
check "bf16 run: both GEMMs done with a valid final best" \
  [ "$(jsonq "$T/run.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.best')) e
       WHERE json_extract(e.value, '$.state') = 'done' AND json_extract(e.value, '$.phase') = 'final'
         AND json_extract(e.value, '$.time_us') > 0;")" = 2 ]
check "bf16 GEMM: paired with a substitute (a generated config, timed, an uplift); f32: the default" \
  [ "$(jsonq "$T/run.json" "SELECT group_concat((json_extract(e.value, '$.label') LIKE 'bf16%') || ':' ||
         json_extract(e.value, '$.baseline_kind') || ':' ||
         (json_extract(e.value, '$.baseline_us') > 0) || (json_extract(e.value, '$.uplift') > 0) ||
         (json_extract(e.value, '$.rounds') > 0) || ':' ||
         COALESCE(json_extract(e.value, '$.baseline_config.lib'), 'gen'), ',')
       FROM (SELECT e.value FROM j, json_each(json_extract(j.x, '$.best')) e ORDER BY json_extract(e.value, '$.label')) e;")" = "1:substitute:111:gen,0:default:111:openblas" ]
check "bf16 GEMM: baseline_reason names cblas_sbgemm; the f32 GEMM has none" \
  [ "$(jsonq "$T/run.json" "SELECT group_concat((json_extract(e.value, '$.label') LIKE 'bf16%') || ':' ||
         COALESCE(json_extract(e.value, '$.baseline_reason') LIKE 'build: openblas baseline: %no bf16 GEMM (cblas_sbgemm absent%', 'null'), ',')
       FROM (SELECT e.value FROM j, json_each(json_extract(j.x, '$.best')) e ORDER BY json_extract(e.value, '$.label')) e;")" = "1:1,0:null" ]
check "the headline uplifts are the f32 GEMM's alone; the substitute's is apart" \
  [ "$(jsonq "$T/run.json" "SELECT json_extract(x, '$.substitute_baselines') || ':' ||
         (abs(json_extract(x, '$.flop_weighted_uplift') - (SELECT json_extract(e.value, '$.uplift')
            FROM json_each(json_extract(x, '$.best')) e WHERE json_extract(e.value, '$.label') NOT LIKE 'bf16%')) < 1e-9) || ':' ||
         (abs(json_extract(x, '$.substitute_flop_weighted_uplift') - (SELECT json_extract(e.value, '$.uplift')
            FROM json_each(json_extract(x, '$.best')) e WHERE json_extract(e.value, '$.label') LIKE 'bf16%')) < 1e-9) FROM j;")" = "1:1:1" ]
curl -sf "$HTTP/v1/runs/$RUN/results" -o "$T/results_bf16.json"
check "bf16 GEMM: the screens' default rows are invalid and name cblas_sbgemm; the final's baseline is the substitute, valid" \
  [ "$(jsonq "$T/results_bf16.json" "SELECT
         (SELECT COUNT(*) > 0 AND SUM(json_extract(r.value, '$.valid') = 0
            AND json_extract(r.value, '$.config.lib') = 'openblas'
            AND json_extract(r.value, '$.reason') LIKE '%no bf16 GEMM (cblas_sbgemm absent%') = COUNT(*)
          FROM json_each(json_extract(j.x, '$.results')) r WHERE json_extract(r.value, '$.phase') = 'screen'
            AND json_extract(r.value, '$.baseline') = 1 AND json_extract(r.value, '$.label') LIKE 'bf16%') || ':' ||
         (SELECT COUNT(*) FROM json_each(json_extract(j.x, '$.results')) r WHERE json_extract(r.value, '$.phase') = 'final'
            AND json_extract(r.value, '$.baseline') = 1 AND json_extract(r.value, '$.label') LIKE 'bf16%'
            AND json_extract(r.value, '$.valid') = 1 AND json_extract(r.value, '$.config.lib') IS NULL) FROM j;")" = "1:1" ]
check "bf16 run: progress counts candidates only (the failed defaults are none)" \
  [ "$(jsonq "$T/run.json" "SELECT json_extract(x, '$.candidates.done') <= json_extract(x, '$.candidates.total') FROM j;")" = 1 ]
"$GT_BIN"/gemmtune --server "$HTTP" results "$RUN" >"$T/results_bf16.txt"
check "gemmtune results marks the bf16 uplift * and footnotes the substitute and the reason" \
  bash -c "grep -q '^bf16.*x[=!]*\*' '$T/results_bf16.txt' &&
           grep -q '^1 GEMM(s) marked \*: uplift against a substitute baseline' '$T/results_bf16.txt' &&
           grep -q '^  \* bf16.*: substitute {.*}; default: build: openblas baseline: .*no bf16 GEMM' '$T/results_bf16.txt'"
"$GT_BIN"/gemmtune --server "$HTTP" report "$RUN" >"$T/report_bf16.txt"
check "gemmtune report marks it, footnotes the reason and counts only the f32 GEMM" \
  bash -c "grep -q '^bf16.*x\*' '$T/report_bf16.txt' && grep -q '^  bf16.*: build: openblas baseline: .*no bf16 GEMM' '$T/report_bf16.txt' &&
           grep -q '^GEMMs tuned  *1 of 2' '$T/report_bf16.txt'"
curl -sf "$HTTP/v1/runs/$RUN/export" -o "$T/bf16.db"
check "export: the bf16 best row is against a substitute, named with the reason; the f32 one the default" \
  [ "$(sqlite3 "$T/bf16.db" "SELECT group_concat(x, ',') FROM (SELECT (p.a_type = 'bf16') || ':' || b.baseline_kind || ':' ||
         (b.baseline_config IS NOT NULL AND json_extract(b.baseline_config, '$.lib') IS NULL) || ':' ||
         COALESCE(b.baseline_reason LIKE '%cblas_sbgemm absent%', 'null') AS x
       FROM best b JOIN problems p ON p.id = b.problem_id ORDER BY p.a_type)")" = "1:substitute:1:1,0:default:0:null" ]
"$GT_BIN"/gemmtune report --db "$T/bf16.db" >"$T/report_bf16_db.txt"
check "gemmtune report --db reads the marker from the export" \
  bash -c "grep -q '^bf16.*x\*' '$T/report_bf16_db.txt' && grep -q '^GEMMs tuned  *1 of 2' '$T/report_bf16_db.txt'"
# a launch-bound entry (best.launch 'graph', a plain run's final timed as CUDA graphs) is
# marked # and footnoted, and still counted; an export without the column reads as before
cp "$T/bf16.db" "$T/graph.db"
sqlite3 "$T/graph.db" "UPDATE best SET launch = 'graph' WHERE problem_id IN (SELECT id FROM problems WHERE a_type = 'f32')"
"$GT_BIN"/gemmtune report --db "$T/graph.db" >"$T/report_graph_db.txt"
check "gemmtune report --db marks a graph-timed entry # and counts it" \
  bash -c "grep -q '^f32.*x# ' '$T/report_graph_db.txt' && grep -q '^# 1 GEMM(s): launch-bound, timed as CUDA graphs' '$T/report_graph_db.txt' &&
           grep -q '^GEMMs tuned  *1 of 2' '$T/report_graph_db.txt'"
sqlite3 "$T/graph.db" "ALTER TABLE best DROP COLUMN launch"
"$GT_BIN"/gemmtune report --db "$T/graph.db" >"$T/report_old_db.txt"
check "gemmtune report --db reads an export without best.launch (no mark, the substitute still marked)" \
  bash -c "! grep -q 'x#' '$T/report_old_db.txt' && grep -q '^bf16.*x\*' '$T/report_old_db.txt'"

# A worker without OpenBLAS: the baseline fails naming libopenblas; the GEMM
# still ends done with its tuned best and the reason.
kill -TERM "$W1" "$W2"
wait "$W1" "$W2" 2>/dev/null || true
GEMMTUNE_OPENBLAS=/nonexistent/libopenblas.so.0 start_worker w3
head -n 1 "$GT_TEST_DATA/cpu_small_f32.log" >"$T/one.log"
submit "$T/one.log" "name=nolib&budget=3&shard_size=3&min_time_ms=1&repeats=3&ncpu=1&final_k=1"
check "run without OpenBLAS finished" [ "$(wait_run "$RUN" 300)" = done ]
check "without OpenBLAS: a valid final best against a substitute baseline naming libopenblas" \
  [ "$(jsonq "$T/run.json" "SELECT COUNT(*) FROM j, json_each(json_extract(j.x, '$.best')) e
       WHERE json_extract(e.value, '$.state') = 'done' AND json_extract(e.value, '$.time_us') > 0
         AND json_extract(e.value, '$.baseline_us') > 0 AND json_extract(e.value, '$.baseline_kind') = 'substitute'
         AND json_extract(e.value, '$.baseline_reason') LIKE '%cannot load libopenblas%';")" = 1 ]
"$GT_BIN"/gemmtune --server "$HTTP" results "$RUN" >"$T/results_nolib.txt"
check "gemmtune results names the missing libopenblas" \
  grep -q 'openblas baseline: cannot load libopenblas from GEMMTUNE_OPENBLAS=' "$T/results_nolib.txt"

finish
