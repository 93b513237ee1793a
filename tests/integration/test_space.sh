#!/usr/bin/env bash
# Proves GET /v1/runs/{id}/space/{problem} end to end on a real gemmtuned
# over real HTTP, without a GPU or a worker (the space is computed on the
# coordinator from gen/; tests/unit/test_http_space.c proves it is exactly
# gt_gen_prune's / gt_mma_prune's for sm_90 with 132 SMs and the default
# caps): both families' counts add up (kept + pruned == raw, by_rule sums
# to pruned); ?config= tells why a config is pruned (kwarps not dividing
# warps: shape; vec=8 on lda=4100: alignment) and that a kept one is kept,
# with its rank; ?family=, ?rule=, offset/limit; the device comes from the
# newest worker of the run's model, from ?arch=/?sms=, else H100 defaults,
# and the response says which; the limits are the worker's registered
# gen_device when it has one (limits_from: worker; mma keeps other configs
# with its smaller shared memory), the defaults otherwise or for another
# arch; GET /v1/workers shows gen_device; the problem by key; 404, 400,
# 405, 422 and 401 without the read token.
source "$(dirname "$0")/lib.sh"

READ=rtok
start_coordinator --read-token "$READ"
AUTH=(-H "Authorization: Bearer $READ")
H100='NVIDIA H100 80GB HBM3'

# A decode GEMM, the same with n=8 and a misaligned lda (4100: a multiple of
# 4, not of 8), and a prefill GEMM (n=512: beyond gemv's n <= 32).
line() { echo "- {function: matmul, M: 4096, N: $1, K: 4096, lda: $2, ldb: 4096, ldc: 4096, ldd: 4096, transA: T, transB: N, batch_count: 1, a_type: bf16_r, b_type: bf16_r, c_type: bf16_r, d_type: bf16_r, scale_type: f32_r, compute_type: c_f32_r, call_count: 10}"; }
{ line 1 4096; line 8 4100; line 512 4096; } >"$T/gemms.log"
post() { # post QUERY OUT: HTTP status
  curl -s -o "$2" -w '%{http_code}' "${AUTH[@]}" -X POST --data-binary @"$T/gemms.log" \
    -H 'Content-Type: text/plain' "$HTTP/v1/runs?$1"
}
code=$(post "backend=cuda&device_model=NVIDIA%20H100%2080GB%20HBM3" "$T/submit.json")
check "cuda run submitted (HTTP $code)" [ "$code" = 201 ]
RUN=$(json "$T/submit.json" '$.id')
code=$(post "backend=cpu" "$T/submit_cpu.json")
check "cpu run submitted (HTTP $code)" [ "$code" = 201 ]
CPU_RUN=$(json "$T/submit_cpu.json" '$.id')
pid() { sqlite3 "$DB" "SELECT id FROM problems WHERE run_id = $RUN AND n = $1"; }
PDEC=$(pid 1) PMIS=$(pid 8) PPRE=$(pid 512)

# get PATH OUT [curl args]: HTTP status of a GET with the read token, body in OUT.
get() { local u=$1 o=$2; shift 2; curl -s -o "$o" -w '%{http_code}' "${AUTH[@]}" -G "$@" "$HTTP$u"; }
# q FILE SQL-EXPR: an expression over the response x (sqlite3 JSON functions).
q() { jsonq "$1" "SELECT $2 FROM j;"; }
# counts_add_up FILE FAMILY: kept + pruned == raw and by_rule sums to pruned.
counts_add_up() {
  [ "$(q "$1" "json_extract(x,'$.families.$2.kept.count') + json_extract(x,'$.families.$2.pruned.count') = json_extract(x,'$.families.$2.raw')
     AND (SELECT SUM(value) FROM json_each(json_extract(x,'$.families.$2.pruned.by_rule'))) = json_extract(x,'$.families.$2.pruned.count')
     AND json_array_length(json_extract(x,'$.families.$2.kept.configs')) = json_extract(x,'$.families.$2.kept.count')")" = 1 ]
}

# --- the decode GEMM, no worker: H100 defaults
code=$(get "/v1/runs/$RUN/space/$PDEC" "$T/dec.json")
check "decode space: 200 (got $code)" [ "$code" = 200 ]
check "device: sm_90, 132 SMs, from the defaults (no worker of the model yet)" \
  [ "$(q "$T/dec.json" "json_extract(x,'$.device.arch') || ' ' || json_extract(x,'$.device.sms') || ' ' || json_extract(x,'$.device.arch_from') || ' ' || json_extract(x,'$.device.sms_from') || ' ' || json_type(x,'$.device.worker_id')")" = "sm_90 132 default default null" ]
check "problem, run and device model reported" \
  [ "$(q "$T/dec.json" "json_extract(x,'$.problem_id') || '|' || json_extract(x,'$.run_id') || '|' || json_extract(x,'$.device_model') || '|' || json_extract(x,'$.problem.n')")" = "$PDEC|$RUN|$H100|1" ]
check "gemv: applicable, kept + pruned == raw, by_rule sums to pruned" counts_add_up "$T/dec.json" gemv
check "mma: applicable, kept + pruned == raw, by_rule sums to pruned" counts_add_up "$T/dec.json" mma
check "the default caps: 48 gemv and 32 mma configs kept, ranked 1.. with a model estimate" \
  [ "$(q "$T/dec.json" "json_extract(x,'$.families.gemv.kept.count') || ' ' || json_extract(x,'$.families.mma.kept.count') || ' ' || json_extract(x,'$.families.gemv.kept.configs[0].rank') || ' ' || (json_extract(x,'$.families.gemv.kept.configs[47].rank') = 48) || ' ' || (json_extract(x,'$.families.mma.kept.configs[0].model_us') > 0)")" = "48 32 1 1 1" ]
check "the rank cap is one of the rules, raw is the cross product" \
  [ "$(q "$T/dec.json" "(json_extract(x,'$.families.gemv.pruned.by_rule.rank') > 0) || (json_extract(x,'$.families.gemv.raw') > 1000)")" = 11 ]
check "50 pruned examples by default, each with its rule and reason" \
  [ "$(q "$T/dec.json" "json_array_length(json_extract(x,'$.families.gemv.pruned.examples')) || ' ' || json_extract(x,'$.families.gemv.pruned.limit') || ' ' || (SELECT COUNT(*) FROM json_each(json_extract(x,'$.families.gemv.pruned.examples')) e WHERE json_extract(e.value,'$.reason') LIKE json_extract(e.value,'$.rule') || '%')")" = "50 50 50" ]

# --- the verdict on one config
KEPT=$(q "$T/dec.json" "json(json_extract(x,'$.families.gemv.kept.configs[4].config'))")
code=$(get "/v1/runs/$RUN/space/$PDEC" "$T/v1.json" --data-urlencode "config=$KEPT")
check "a kept config: kept, rank 5, runnable (HTTP $code)" \
  [ "$(q "$T/v1.json" "json_extract(x,'$.kept') || json_extract(x,'$.rank') || json_extract(x,'$.runnable') || json_extract(x,'$.family') || COALESCE(json_type(x,'$.reason'), 'absent')")" = "151gemvabsent" ]
BADK='{"a_load":"nc","family":"gemv","k_unroll":4,"kwarps":3,"n_tile":8,"pipe":"reg","reduction":"none","rows_per_cta":32,"splitk":1,"vec":8,"warps":4}'
code=$(get "/v1/runs/$RUN/space/$PDEC" "$T/v2.json" --data-urlencode "config=$BADK")
check "kwarps=3 with warps=4: pruned by the shape rule, with the reason (HTTP $code)" \
  [ "$(q "$T/v2.json" "json_extract(x,'$.kept') || ' ' || json_extract(x,'$.rule') || ' ' || json_extract(x,'$.reason') || ' ' || json_extract(x,'$.runnable')")" = "0 shape shape: kwarps=3 does not divide warps=4 0" ]
VEC8='{"a_load":"nc","family":"gemv","k_unroll":4,"kwarps":2,"n_tile":8,"pipe":"reg","reduction":"none","rows_per_cta":32,"splitk":1,"vec":8,"warps":4}'
code=$(get "/v1/runs/$RUN/space/$PMIS" "$T/v3.json" --data-urlencode "config=$VEC8")
check "vec=8 on lda=4100: pruned by the alignment rule (HTTP $code)" \
  [ "$(q "$T/v3.json" "json_extract(x,'$.kept') || ' ' || json_extract(x,'$.rule') || ' ' || (json_extract(x,'$.reason') LIKE 'alignment: lda=4100,%') || ' ' || json_extract(x,'$.in_raw')")" = "0 alignment 1 1" ]
# (a 128x16 tile, 4x1 warps: passes the shape and tile rules for n=8)
MMA='{"bk":64,"bm":128,"bn":16,"family":"mma","reduction":"none","splitk":1,"stages":3,"swizzle":1,"warps_m":4,"warps_n":1}'
code=$(get "/v1/runs/$RUN/space/$PMIS" "$T/v4.json" --data-urlencode "config=$MMA")
check "an mma config on lda=4100: alignment (HTTP $code)" \
  [ "$(q "$T/v4.json" "json_extract(x,'$.family') || ' ' || json_extract(x,'$.kept') || ' ' || json_extract(x,'$.rule')")" = "mma 0 alignment" ]

# --- ?family=, ?rule=, offset and limit
code=$(get "/v1/runs/$RUN/space/$PMIS?family=mma" "$T/f1.json")
check "family=mma: only mma; on lda=4100 nothing kept, alignment among the rules (HTTP $code)" \
  [ "$(q "$T/f1.json" "COALESCE(json_type(x,'$.families.gemv'), 'absent') || ' ' || json_extract(x,'$.families.mma.kept.count') || ' ' || (json_extract(x,'$.families.mma.pruned.by_rule.alignment') > 0)")" = "absent 0 1" ]
check "family=mma: the counts add up" counts_add_up "$T/f1.json" mma
code=$(get "/v1/runs/$RUN/space/$PMIS?family=gemv&rule=alignment&limit=10" "$T/r1.json")
check "rule=alignment: 10 examples, all alignment, matching = by_rule's count (HTTP $code)" \
  [ "$(q "$T/r1.json" "json_array_length(json_extract(x,'$.families.gemv.pruned.examples')) || ' ' || (SELECT COUNT(*) FROM json_each(json_extract(x,'$.families.gemv.pruned.examples')) e WHERE json_extract(e.value,'$.rule') = 'alignment' AND json_extract(e.value,'$.reason') LIKE 'alignment: lda=4100%') || ' ' || (json_extract(x,'$.families.gemv.pruned.matching') = json_extract(x,'$.families.gemv.pruned.by_rule.alignment'))")" = "10 10 1" ]
code=$(get "/v1/runs/$RUN/space/$PMIS?family=gemv&rule=alignment&offset=5&limit=5" "$T/r2.json")
check "offset=5&limit=5 is the second half of limit=10" \
  [ "$(q "$T/r1.json" "json(json_extract(x,'$.families.gemv.pruned.examples[5]'))")" = "$(q "$T/r2.json" "json(json_extract(x,'$.families.gemv.pruned.examples[0]'))")" ]
code=$(get "/v1/runs/$RUN/space/$PPRE" "$T/pre.json")
check "n=512: gemv not applicable with the reason, mma applies (HTTP $code)" \
  [ "$(q "$T/pre.json" "json_extract(x,'$.families.gemv.applicable') || ' ' || (json_extract(x,'$.families.gemv.reason') LIKE 'n=512 > 32%') || ' ' || json_extract(x,'$.families.mma.applicable') || ' ' || (json_extract(x,'$.families.mma.kept.count') > 0)")" = "0 1 1 1" ]

# --- by problem key
key=$(json "$T/dec.json" '$.problem_key')
enc=$(printf '%s' "$key" | sed -e 's|%|%25|g' -e 's|/|%2F|g' -e 's|=|%3D|g' -e 's|,|%2C|g' -e 's|:|%3A|g')
code=$(get "/v1/runs/$RUN/space/$enc?family=gemv" "$T/key.json")
check "the problem key finds the same problem and space (HTTP $code)" \
  [ "$(q "$T/key.json" "json_extract(x,'$.problem_id') || ' ' || json(json_extract(x,'$.families.gemv.kept'))")" = "$PDEC $(q "$T/dec.json" "json(json_extract(x,'$.families.gemv.kept'))")" ]

# --- the device: a worker of the run's model, then the query
now=$(date +%s000)
sqlite3 "$DB" "INSERT INTO workers (host, pid, device_index, backend, device_model, arch, mem_bytes,
  units, driver, version, state, registered_ms, last_heartbeat_ms) VALUES
  ('a100', 1, 0, 'cuda', 'NVIDIA A100-SXM4-80GB', 'sm_80', 1, 108, 'd', 'v', 'gone', $now, $now),
  ('gpu1', 1, 0, 'cuda', '$H100', 'sm_90', 85000000000, 114, 'd', 'v', 'gone', $now, $now);"
W=$(sqlite3 "$DB" "SELECT id FROM workers WHERE host = 'gpu1'")
code=$(get "/v1/runs/$RUN/space/$PDEC?family=gemv" "$T/w.json")
check "device from the model's worker: sm_90, its 114 SMs, its id (HTTP $code)" \
  [ "$(q "$T/w.json" "json_extract(x,'$.device.arch') || ' ' || json_extract(x,'$.device.sms') || ' ' || json_extract(x,'$.device.arch_from') || ' ' || json_extract(x,'$.device.sms_from') || ' ' || json_extract(x,'$.device.worker_id')")" = "sm_90 114 worker worker $W" ]
code=$(get "/v1/runs/$RUN/space/$PDEC?family=gemv&arch=sm_90&sms=132" "$T/qd.json")
check "?arch=sm_90&sms=132 override the worker, and give the default device's space" \
  [ "$(q "$T/qd.json" "json_extract(x,'$.device.arch_from') || ' ' || json_extract(x,'$.device.sms_from') || ' ' || json(json_extract(x,'$.families.gemv.kept'))")" = "query query $(q "$T/dec.json" "json(json_extract(x,'$.families.gemv.kept'))")" ]
code=$(get "/v1/runs/$RUN/space/$PDEC?arch=sm_75" "$T/t4.json")
check "?arch=sm_75: neither family applies (sm_80+)" \
  [ "$(q "$T/t4.json" "json_extract(x,'$.families.gemv.applicable') || json_extract(x,'$.families.mma.applicable') || ' ' || json_extract(x,'$.device.sms_from')")" = "00 worker" ]

# --- a worker that registered its limits (gen_device): used exactly
check "a worker without gen_device: default limits" \
  [ "$(q "$T/w.json" "json_extract(x,'$.device.limits_from') || ' ' || json_extract(x,'$.device.limits.dram_bw')")" = "default 2950000000000" ]
# an sm_86-sized shared memory and 2 % more DRAM bandwidth than the H100 defaults
GD='{"hip":0,"sm":90,"sms":114,"warp_size":32,"max_threads_block":1024,"smem_block":49152,"regs_sm":65536,"max_regs_thread":255,"max_warps_sm":64,"dram_bw":3009000012345.5,"smem_optin":101376,"smem_sm":102400,"l2_bytes":52428800,"tc_flops":600000000000000}'
code=$(get "/v1/runs/$RUN/space/$PDEC?family=mma" "$T/wm.json") # gpu1: sm_90 defaults, 114 SMs
now=$((now + 1))
sqlite3 "$DB" "INSERT INTO workers (host, pid, device_index, backend, device_model, arch, mem_bytes,
  units, driver, version, state, registered_ms, last_heartbeat_ms, gen_device) VALUES
  ('gpu2', 1, 0, 'cuda', '$H100', 'sm_90', 85000000000, 114, 'd', 'v', 'gone', $now, $now, '$GD');"
W2=$(sqlite3 "$DB" "SELECT id FROM workers WHERE host = 'gpu2'")
code=$(get "/v1/runs/$RUN/space/$PDEC?family=mma" "$T/g.json")
check "device from the worker's gen_device: limits_from worker, its dram_bw and smem_optin, its id (HTTP $code)" \
  [ "$(q "$T/g.json" "json_extract(x,'$.device.limits_from') || ' ' || json_extract(x,'$.device.limits.dram_bw') || ' ' || json_extract(x,'$.device.limits.smem_optin') || ' ' || json_extract(x,'$.device.worker_id')")" = "worker 3009000012345.5 101376 $W2" ]
code=$(get "/v1/runs/$RUN/space/$PDEC?family=mma&arch=sm_90&sms=114" "$T/gq.json")
check "its mma kept list differs from the default limits' (smaller shared memory)" \
  [ "$(q "$T/g.json" "json(json_extract(x,'$.families.mma.kept'))")" != "$(q "$T/wm.json" "json(json_extract(x,'$.families.mma.kept'))")" ]
check "?arch= of the worker's arch keeps its limits" \
  [ "$(q "$T/gq.json" "json_extract(x,'$.device.limits_from') || ' ' || json(json_extract(x,'$.families.mma.kept'))")" = "worker $(q "$T/g.json" "json(json_extract(x,'$.families.mma.kept'))")" ]
code=$(get "/v1/runs/$RUN/space/$PDEC?family=mma&arch=sm_80" "$T/ga.json")
check "?arch=sm_80: that arch's default limits, and why the worker's are not used" \
  [ "$(q "$T/ga.json" "json_extract(x,'$.device.limits_from') || ' ' || (json_extract(x,'$.device.limits_ignored') LIKE '%sm_90%sm_80%')")" = "default 1" ]
code=$(get "/v1/workers" "$T/workers.json")
check "GET /v1/workers: gen_device of the worker that sent it, null for the others" \
  [ "$(q "$T/workers.json" "(SELECT json_extract(value,'$.gen_device.dram_bw') FROM json_each(json_extract(x,'$.workers')) WHERE json_extract(value,'$.host') = 'gpu2') || ' ' || (SELECT json_type(value,'$.gen_device') FROM json_each(json_extract(x,'$.workers')) WHERE json_extract(value,'$.host') = 'gpu1')")" = "3009000012345.5 null" ]

# --- errors
code=$(get "/v1/runs/424242/space/$PDEC" "$T/e1.json")
check "unknown run: 404" bash -c "[ $code = 404 ] && grep -q 'run 424242 not found' '$T/e1.json'"
code=$(get "/v1/runs/$RUN/space/999999" "$T/e2.json")
check "unknown problem: 404" bash -c "[ $code = 404 ] && grep -q 'has no problem 999999' '$T/e2.json'"
code=$(get "/v1/runs/$RUN/space/$PDEC" "$T/e3.json" --data-urlencode 'config={"family":"gemv",')
check "config that is not JSON: 400 (got $code)" [ "$code" = 400 ]
code=$(get "/v1/runs/$RUN/space/$PDEC" "$T/e4.json" --data-urlencode 'config={"family":"gemv","vec":8}')
check "gemv config with attributes missing: 400 with the parser's reason" \
  bash -c "[ $code = 400 ] && grep -q 'missing' '$T/e4.json'"
code=$(get "/v1/runs/$RUN/space/$PDEC" "$T/e5.json" --data-urlencode 'config={"algo_id":66,"tile":20}')
check "a cuBLASLt config: 400 (no pruning rules)" bash -c "[ $code = 400 ] && grep -q 'cuBLASLt' '$T/e5.json'"
code=$(get "/v1/runs/$RUN/space/$PDEC?family=mma" "$T/e6.json" --data-urlencode "config=$BADK")
check "a gemv config with family=mma: 400" [ "$code" = 400 ]
for bad in "limit=1001" "limit=x" "offset=-1" "sms=0" "arch=gfx90a" "family=cublaslt" "colour=red" "rule="; do
  code=$(get "/v1/runs/$RUN/space/$PDEC?$bad" "$T/e7.json")
  check "?$bad: 400 (got $code)" [ "$code" = 400 ]
done
P_CPU=$(sqlite3 "$DB" "SELECT MIN(id) FROM problems WHERE run_id = $CPU_RUN")
code=$(get "/v1/runs/$CPU_RUN/space/$P_CPU" "$T/e8.json")
check "a cpu run: 422 with the reason (got $code)" \
  bash -c "[ $code = 422 ] && grep -q 'backend cpu' '$T/e8.json'"
code=$(curl -s -o "$T/e9.json" -w '%{http_code}' "$HTTP/v1/runs/$RUN/space/$PDEC")
check "without the read token: 401" [ "$code" = 401 ]
code=$(curl -s -o "$T/e10.json" -w '%{http_code}' "${AUTH[@]}" -X POST "$HTTP/v1/runs/$RUN/space/$PDEC")
check "POST: 405" [ "$code" = 405 ]
code=$(get "/v1/runs/$RUN/space/" "$T/e11.json")
check "no problem in the path: 404" [ "$code" = 404 ]

finish
