#!/usr/bin/env bash
# Proves GET /v1/runs/{id}/kernels/{problem} and `gemmtune kernel` end to end
# on a real gemmtuned over real HTTP: a generated ("gemv") winner is
# re-created on the coordinator from (problem, config, the measuring
# worker's arch) with its complete source, NVRTC options, launches, workspace
# and argument values; ?config_hash= fetches a non-winning candidate (a
# two-pass split-K one: second launch and workspace); the .cuh download is a
# header with the launch parameters; a cuBLASLt winner is 409, unknown runs,
# problems, hashes and problems without results are 404, bad queries 400;
# the read token guards it like every GET. No GPU runs here: the results a
# CUDA worker would report are written into the coordinator's database
# with sqlite3. Where nvcc is installed the downloaded header compiles.
source "$(dirname "$0")/lib.sh"

READ=rtok
start_coordinator --read-token "$READ"
AUTH=(-H "Authorization: Bearer $READ")
export GEMMTUNE_TOKEN=$READ
H100='NVIDIA H100 80GB HBM3'

# Three decode GEMMs of a cuda run bound to a device model with no worker,
# so nothing is leased: 4096x1x4096 gets a gemv winner, 6144x1x4096 a
# cuBLASLt winner, 2048x1x4096 no result at all.
line() { echo "- {function: matmul, M: $1, N: 1, K: 4096, lda: 4096, ldb: 4096, ldc: $1, ldd: $1, transA: T, transB: N, batch_count: 1, a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, scale_type: f32_r, compute_type: c_f32_r, call_count: 10}"; }
{ line 4096; line 6144; line 2048; } >"$T/decode.log"
# (lib.sh's submit sends no token)
code=$(curl -s -o "$T/submit.json" -w '%{http_code}' "${AUTH[@]}" -X POST --data-binary @"$T/decode.log" \
  -H 'Content-Type: text/plain' "$HTTP/v1/runs?backend=cuda&device_model=NVIDIA%20H100%2080GB%20HBM3")
check "run submitted (HTTP $code)" [ "$code" = 201 ]
RUN=$(json "$T/submit.json" '$.id')
pid() { sqlite3 "$DB" "SELECT id FROM problems WHERE run_id = $RUN AND m = $1"; }
P1=$(pid 4096) P2=$(pid 6144) P3=$(pid 2048)

GEMV='{"a_load":"na256","family":"gemv","k_unroll":4,"kwarps":2,"n_tile":8,"pipe":"async","reduction":"none","rows_per_cta":32,"splitk":1,"vec":8,"warps":4}'
TWOPASS='{"a_load":"nc","family":"gemv","k_unroll":2,"kwarps":1,"n_tile":8,"pipe":"reg","reduction":"twopass","rows_per_cta":32,"splitk":4,"vec":8,"warps":2}'
LT='{"algo_id":66,"cluster":2,"custom":0,"inner_shape":0,"reduction":0,"splitk":1,"stages":35,"swizzle":0,"tile":20}'
now=$(date +%s000)
sqlite3 "$DB" <<SQL
INSERT INTO workers (host, pid, device_index, backend, device_model, arch, mem_bytes, units,
  driver, version, state, registered_ms, last_heartbeat_ms)
  VALUES ('gpu1', 1, 0, 'cuda', '$H100', 'sm_90', 85000000000, 132, 'driver 13000', '0.1.0',
          'gone', $now, $now);
INSERT INTO results (run_id, problem_id, job_id, backend, phase, config, config_hash,
  is_baseline, time_us, spread, tflops, rel_err, valid, reason, worker_id, device_model, created_ms)
SELECT $RUN, p.id, (SELECT MIN(j.id) FROM jobs j WHERE j.problem_id = p.id), 'cuda', v.phase,
       v.config, v.hash, v.base, v.t, 0.01, 1.0, v.err, v.valid, NULL,
       (SELECT MAX(id) FROM workers), '$H100', $now
FROM problems p JOIN (
  SELECT $P1 AS pid, 'final' AS phase, '$GEMV' AS config, '00000000000000a1' AS hash, 0 AS base, 12.5 AS t, 0.002 AS err, 1 AS valid
  UNION ALL SELECT $P1, 'final', '$LT', '00000000000000b1', 1, 15.0, 0.001, 1
  UNION ALL SELECT $P1, 'screen', '$TWOPASS', '00000000000000c1', 0, 14.0, 0.002, 1
  UNION ALL SELECT $P1, 'screen', '$GEMV', '00000000000000a1', 0, 12.0, 0.002, 1
  UNION ALL SELECT $P2, 'final', '$LT', '00000000000000b2', 0, 20.0, 0.001, 1
) v ON v.pid = p.id;
SQL
check "results inserted" [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM results WHERE run_id = $RUN")" = 5 ]

# get URL OUT: HTTP status of a GET with the read token, body in OUT.
get() { curl -s -o "$2" -w '%{http_code}' "${AUTH[@]}" "$HTTP$1"; }

# --- the winner as JSON
code=$(get "/v1/runs/$RUN/kernels/$P1" "$T/k1.json")
check "gemv winner: 200 (got $code)" [ "$code" = 200 ]
check "family gemv, winner, final phase" \
  [ "$(jsonq "$T/k1.json" "SELECT json_extract(x,'$.family') || json_extract(x,'$.winner') || json_extract(x,'$.phase') FROM j;")" = gemv1final ]
check "the winner is the final phase's gemv row, not the faster screen row of the same config" \
  [ "$(json "$T/k1.json" '$.time_us')" = 12.5 ]
check "baseline, uplift, device model, problem id and key reported" \
  [ "$(jsonq "$T/k1.json" "SELECT json_extract(x,'$.baseline_us') || '|' || json_extract(x,'$.uplift') || '|' || json_extract(x,'$.device_model') || '|' || json_extract(x,'$.problem_id') || '|' || (json_extract(x,'$.problem_key') LIKE 'm=4096,n=1,k=4096,%') FROM j;")" = "15|1.2|$H100|$P1|1" ]
check "target from the measuring worker: sm_90 in the NVRTC options" \
  [ "$(jsonq "$T/k1.json" "SELECT json_extract(x,'$.target') || ' ' || json_extract(x,'$.nvrtc_options[0]') FROM j;")" = "sm_90 --gpu-architecture=sm_90" ]
check "worker options: arch, ptxas -v, then the -D definitions" \
  [ "$(jsonq "$T/k1.json" "SELECT json_extract(x,'$.worker_nvrtc_options[1]') || ' ' || json_extract(x,'$.worker_nvrtc_options[2]') FROM j;")" = "--ptxas-options=-v -DGT_HIP=0" ]
check "one launch of gt_gemv: grid 128x1x1 (4096 rows / 32), block 128" \
  [ "$(jsonq "$T/k1.json" "SELECT json_extract(x,'$.kernels') || json_extract(x,'$.launches[0].grid') || json_extract(x,'$.launches[0].block') FROM j;")" = '["gt_gemv"][128,1,1][128,1,1]' ]
check "no workspace without split-K" [ "$(json "$T/k1.json" '$.workspace.bytes')" = 0 ]
check "argument struct: 21 members of 8 bytes, lda=4096 at offset 80, kper=4096, alpha=1" \
  [ "$(jsonq "$T/k1.json" "SELECT json_extract(x,'$.args.bytes') || ' ' || json_extract(x,'$.args.members[10].name') || '=' || json_extract(x,'$.args.members[10].value') || '@' || json_extract(x,'$.args.members[10].offset') || ' ' || json_extract(x,'$.args.members[18].value') || ' ' || json_extract(x,'$.args.members[19].value') FROM j;")" = "168 lda=4096@80 4096 1" ]
json "$T/k1.json" '$.source' >"$T/k1.cu"
check "source: the config's definitions as #defines" \
  grep -q '^#define GT_RPC 32$' "$T/k1.cu"
check "source: the template with both kernels" \
  grep -q 'extern "C" __global__ void GT_BOUNDS gt_gemv(gt_gemv_args g)' "$T/k1.cu"
check "source: self-contained (no #include)" bash -c "! grep -q '#include' '$T/k1.cu'"

# --- by key (percent-encoded), the .cuh suffix and format=cuh
key=$(json "$T/k1.json" '$.problem_key')
enc=$(printf '%s' "$key" | sed -e 's|%|%25|g' -e 's|/|%2F|g' -e 's|=|%3D|g' -e 's|,|%2C|g' -e 's|:|%3A|g')
code=$(get "/v1/runs/$RUN/kernels/$enc" "$T/k1key.json")
check "the problem key finds the same kernel (HTTP $code)" \
  test "$code" = 200 -a "$(json "$T/k1key.json" '$.problem_id')" = "$P1"
curl -s -D "$T/cuh.hdr" -o "$T/k1.cuh" "${AUTH[@]}" "$HTTP/v1/runs/$RUN/kernels/$P1.cuh"
check ".cuh: text/plain attachment" \
  bash -c "grep -qi '^content-type: text/plain' '$T/cuh.hdr' && grep -qi \"^content-disposition: attachment; filename=\\\"gemmtune-run$RUN-problem$P1.cuh\\\"\" '$T/cuh.hdr'"
check ".cuh: comment block with problem, device, time, launch and arguments" \
  bash -c "grep -q 'run $RUN, problem $P1: ' '$T/k1.cuh' && grep -q 'device    $H100 (backend cuda)' '$T/k1.cuh' &&
           grep -q 'measured  12.500 us per call (final phase, the winner), baseline 15.000 us, uplift 1.200x' '$T/k1.cuh' &&
           grep -q '1. gt_gemv<<<dim3(128, 1, 1), dim3(128, 1, 1), 0>>>(struct gt_gemv_args args)' '$T/k1.cuh' &&
           grep -q '+80   long long    lda = 4096' '$T/k1.cuh' && grep -q '^#pragma once' '$T/k1.cuh'"
check ".cuh ends with the same source as the JSON" \
  bash -c "diff <(sed -n '/^#pragma once/,\$p' '$T/k1.cuh' | tail -n +2) <(sed '\$d' '$T/k1.cu') >/dev/null"
code=$(get "/v1/runs/$RUN/kernels/$P1?format=cuh" "$T/k1b.cuh")
check "format=cuh is the same header" bash -c "[ $code = 200 ] && cmp -s '$T/k1.cuh' '$T/k1b.cuh'"

# --- chained launch: what the kernel allows, and how the run timed it
# gemv_winner RUN PROBLEM: a valid final result of the gemv config $GEMV on the H100, as a
# worker of that run would report it (the kernel download's source)
gemv_winner() {
  sqlite3 "$DB" "INSERT INTO results (run_id, problem_id, job_id, backend, phase, config, config_hash, is_baseline,
    time_us, spread, tflops, rel_err, valid, reason, worker_id, device_model, created_ms)
    VALUES ($1, $2, (SELECT MIN(id) FROM jobs WHERE problem_id = $2), 'cuda', 'final', '$GEMV',
            '00000000000000a1', 0, 11.0, 0.01, 1.0, 0.002, 1, NULL, (SELECT MAX(id) FROM workers), '$H100', $now)"
}
check "gemv: may launch chained on sm_90+, reads nothing before its wait (pipe async); timed plain" \
  [ "$(jsonq "$T/k1.json" "SELECT json_extract(x,'$.chained.min_sm') || ' ' || json_extract(x,'$.chained.attribute') || ' ' || json_array_length(json_extract(x,'$.chained.reads_before_wait')) || ' ' || json_extract(x,'$.timed') FROM j;")" = "90 CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 0 plain" ]
code=$(curl -s -o "$T/sc.json" -w '%{http_code}' "${AUTH[@]}" -X POST --data-binary @"$T/decode.log" \
  -H 'Content-Type: text/plain' "$HTTP/v1/runs?backend=cuda&launch=chained&device_model=NVIDIA%20H100%2080GB%20HBM3")
check "launch=chained run submitted (HTTP $code)" [ "$code" = 201 ]
RUNC=$(json "$T/sc.json" '$.id')
check "the run's options say launch chained, jobs time chained" \
  [ "$(sqlite3 "$DB" "SELECT json_extract(options, '\$.launch') FROM runs WHERE id = $RUNC")" = chained ]
PC=$(sqlite3 "$DB" "SELECT id FROM problems WHERE run_id = $RUNC AND m = 4096")
gemv_winner "$RUNC" "$PC"
code=$(get "/v1/runs/$RUNC/kernels/$PC" "$T/kc.json")
check "a launch=chained run's gemv winner was timed chained (HTTP $code)" \
  [ "$(json "$T/kc.json" '$.timed')" = chained ]
code=$(get "/v1/runs/$RUNC/kernels/$PC.cuh" "$T/kc.cuh")
check ".cuh: measured launched chained, and how to launch it so" \
  bash -c "grep -q 'the winner, launched chained)' '$T/kc.cuh' && grep -q 'Chained launch (sm_90+): launch 1 may take the attribute' '$T/kc.cuh'"
code=$(curl -s -o "$T/e0.json" -w '%{http_code}' "${AUTH[@]}" -X POST --data-binary @"$T/decode.log" \
  -H 'Content-Type: text/plain' "$HTTP/v1/runs?backend=cpu&launch=chained")
check "launch=chained on the cpu backend: 400 with the reason (got $code)" \
  bash -c "[ $code = 400 ] && grep -q 'only backend cuda launches chained' '$T/e0.json'"
code=$(curl -s -o "$T/e0b.json" -w '%{http_code}' "${AUTH[@]}" -X POST --data-binary @"$T/decode.log" \
  -H 'Content-Type: text/plain' "$HTTP/v1/runs?backend=cuda&launch=pdl")
check "launch=pdl: 400 naming the values (got $code)" \
  bash -c "[ $code = 400 ] && grep -q 'launch=pdl: must be plain, chained or graph' '$T/e0b.json'"

# --- graph launch: every candidate timed as replays of a CUDA graph, and the run says so
code=$(curl -s -o "$T/sg.json" -w '%{http_code}' "${AUTH[@]}" -X POST --data-binary @"$T/decode.log" \
  -H 'Content-Type: text/plain' "$HTTP/v1/runs?backend=cuda&launch=graph&device_model=NVIDIA%20H100%2080GB%20HBM3")
check "launch=graph run submitted (HTTP $code)" [ "$code" = 201 ]
RUNG=$(json "$T/sg.json" '$.id')
check "the run's options say launch graph" \
  [ "$(sqlite3 "$DB" "SELECT json_extract(options, '\$.launch') FROM runs WHERE id = $RUNG")" = graph ]
code=$(get "/v1/runs/$RUNG" "$T/rg.json")
check "GET /v1/runs shows launch graph (HTTP $code)" [ "$(json "$T/rg.json" '$.options.launch')" = graph ]
PG=$(sqlite3 "$DB" "SELECT id FROM problems WHERE run_id = $RUNG AND m = 4096")
gemv_winner "$RUNG" "$PG"
code=$(get "/v1/runs/$RUNG/kernels/$PG" "$T/kg.json")
check "a launch=graph run's gemv winner was timed in a graph (HTTP $code)" \
  [ "$(json "$T/kg.json" '$.timed')" = graph ]
code=$(get "/v1/runs/$RUNG/kernels/$PG.cuh" "$T/kg.cuh")
check ".cuh: measured replayed in a CUDA graph" grep -q 'the winner, replayed in a CUDA graph)' "$T/kg.cuh"
curl -sf "${AUTH[@]}" "$HTTP/v1/runs/$RUNG/export" -o "$T/g.db"
check "the export records launch=graph (meta launch)" \
  [ "$(sqlite3 "$T/g.db" "SELECT value FROM meta WHERE key = 'launch'")" = graph ]
curl -sf "${AUTH[@]}" "$HTTP/v1/runs/$RUNC/export" -o "$T/c.db"
check "... and launch=chained for the chained run" \
  [ "$(sqlite3 "$T/c.db" "SELECT value FROM meta WHERE key = 'launch'")" = chained ]
code=$(curl -s -o "$T/e0c.json" -w '%{http_code}' "${AUTH[@]}" -X POST --data-binary @"$T/decode.log" \
  -H 'Content-Type: text/plain' "$HTTP/v1/runs?backend=cpu&launch=graph")
check "launch=graph on the cpu backend: 400 with the reason (got $code)" \
  bash -c "[ $code = 400 ] && grep -q 'only backend cuda times in CUDA graphs' '$T/e0c.json'"

# --- a non-winning candidate by config hash: two-pass split-K
code=$(get "/v1/runs/$RUN/kernels/$P1?config_hash=00000000000000c1" "$T/k2.json")
check "config_hash: 200, not the winner (got $code)" \
  test "$code" = 200 -a "$(json "$T/k2.json" '$.winner')" = 0
check "twopass: second launch gt_gemv_fin with nbatch=1, block 256" \
  [ "$(jsonq "$T/k2.json" "SELECT json_extract(x,'$.launches[1].kernel') || ' ' || json_extract(x,'$.launches[1].params[1].name') || '=' || json_extract(x,'$.launches[1].params[1].value') || ' ' || json_extract(x,'$.launches[1].block[0]') FROM j;")" = "gt_gemv_fin nbatch=1 256" ]
check "twopass: 4 slices of 4096 f32 in the workspace, no initialisation" \
  [ "$(jsonq "$T/k2.json" "SELECT json_extract(x,'$.workspace.bytes') || ' ' || json_extract(x,'$.workspace.buffers[0].init') || ' ' || json_extract(x,'$.launches[0].grid[2]') FROM j;")" = "65536 none 4" ]
code=$(get "/v1/runs/$RUN/kernels/$P1?arch=sm_80" "$T/k3.json")
check "arch= overrides the target" [ "$(json "$T/k3.json" '$.nvrtc_options[0]')" = --gpu-architecture=sm_80 ]

# --- errors
code=$(get "/v1/runs/$RUN/kernels/$P2" "$T/e1.json")
check "cuBLASLt winner: 409 (got $code)" [ "$code" = 409 ]
check "409 says to use the export database and carries the config" \
  bash -c "grep -q 'cuBLASLt configuration' '$T/e1.json' && grep -q 'export database' '$T/e1.json' &&
           [ \"\$(sqlite3 :memory: \"SELECT json_extract(readfile('$T/e1.json'), '\$.details.config.algo_id')\")\" = 66 ]"
code=$(get "/v1/runs/$RUN/kernels/$P1?config_hash=00000000000000b1" "$T/e2.json")
check "a cuBLASLt candidate by hash: 409 too" [ "$code" = 409 ]
code=$(get "/v1/runs/$RUN/kernels/$P3" "$T/e3.json")
check "no result yet: 404 with the reason (got $code)" \
  bash -c "[ $code = 404 ] && grep -q 'no valid result yet' '$T/e3.json'"
code=$(get "/v1/runs/$RUN/kernels/999999" "$T/e4.json")
check "unknown problem: 404" bash -c "[ $code = 404 ] && grep -q 'has no problem 999999' '$T/e4.json'"
code=$(get "/v1/runs/424242/kernels/$P1" "$T/e5.json")
check "unknown run: 404" bash -c "[ $code = 404 ] && grep -q 'run 424242 not found' '$T/e5.json'"
code=$(get "/v1/runs/$RUN/kernels/$P1?config_hash=00000000000000ff" "$T/e6.json")
check "unknown config hash: 404" \
  bash -c "[ $code = 404 ] && grep -q 'no result with config_hash' '$T/e6.json'"
code=$(get "/v1/runs/$RUN/kernels/$P1?config_hash=xyz" "$T/e7.json")
check "malformed config hash: 400" [ "$code" = 400 ]
code=$(get "/v1/runs/$RUN/kernels/$P1?format=pdf" "$T/e8.json")
check "unknown format: 400" [ "$code" = 400 ]
code=$(get "/v1/runs/$RUN/kernels/$P1?arch=gfx90a" "$T/e9.json")
check "a non-CUDA arch: 400" [ "$code" = 400 ]
code=$(curl -s -o "$T/e10.json" -w '%{http_code}' "$HTTP/v1/runs/$RUN/kernels/$P1")
check "without the read token: 401" [ "$code" = 401 ]
code=$(curl -s -o "$T/e11.json" -w '%{http_code}' "${AUTH[@]}" -X POST "$HTTP/v1/runs/$RUN/kernels/$P1")
check "POST: 405 (read-only resource)" [ "$code" = 405 ]

# --- the CLI
"$GT_BIN"/gemmtune kernel "$RUN" "$P1" -o "$T/cli.cuh" >"$T/cli.out" 2>&1
check "gemmtune kernel -o writes the header the endpoint serves" cmp -s "$T/cli.cuh" "$T/k1.cuh"
"$GT_BIN"/gemmtune kernel "$RUN" "$key" >"$T/cli2.cuh" 2>"$T/cli2.err"
check "gemmtune kernel by problem key, to stdout" cmp -s "$T/cli2.cuh" "$T/k1.cuh"
"$GT_BIN"/gemmtune kernel "$RUN" "$P1" --config-hash 00000000000000c1 --arch sm_80 >"$T/cli3.cuh" 2>"$T/cli3.err"
check "gemmtune kernel --config-hash --arch" \
  bash -c "grep -q 'gt_gemv_fin' '$T/cli3.cuh' && grep -q 'target    sm_80' '$T/cli3.cuh'"
rc=0
"$GT_BIN"/gemmtune kernel "$RUN" "$P2" -o "$T/lt.cuh" >"$T/cli4.out" 2>&1 || rc=$?
check "gemmtune kernel on a cuBLASLt winner: exit 1, the server's reason, no file" \
  bash -c "[ $rc = 1 ] && grep -q 'HTTP 409' '$T/cli4.out' && [ ! -e '$T/lt.cuh' ]"

# --- the header compiles as is (where the CUDA toolkit is installed)
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$NVCC" ]; then
  check "nvcc compiles the downloaded headers for sm_90 (winner and two-pass candidate)" \
    bash -c "printf '#include \"k1.cuh\"\n' >'$T/use1.cu' && printf '#include \"cli3.cuh\"\n' >'$T/use3.cu' &&
             cd '$T' && '$NVCC' -arch=sm_90 -cubin -o k1.cubin use1.cu && '$NVCC' -arch=sm_80 -cubin -o k3.cubin use3.cu"
else
  echo "     SKIP nvcc compile: no CUDA toolkit"
fi

finish
