#!/usr/bin/env bash
# Proves the service across real network links: two workers run in network
# namespaces of their own (separate hosts, joined to the coordinator by veth
# pairs with addresses of this test's own). One host's link is cut in the
# middle of a job and restored later: its lease expires, another host
# finishes the job, the cut host reconnects by itself, and the run completes
# with every result once. Needs root and iproute2 (skipped with 77 without).
source "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! ip netns add gt-probe-$$ 2>/dev/null; then
  echo "skipped: needs root and ip netns"
  exit 77
fi
ip netns del gt-probe-$$

sfx=$$
NS=()
teardown() {
  for ns in "${NS[@]}"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true; ip netns del "$ns" 2>/dev/null || true; done
  for i in 1 2; do ip link del "gth$i-$sfx" 2>/dev/null || true; done
}
trap 'teardown; cleanup' EXIT

# Host i: namespace gtw<i>, link gth<i> (coordinator side, 10.213.<i>.1) <-> gtn<i> (10.213.<i>.2).
for i in 1 2; do
  ns="gtw$i-$sfx"
  ip netns add "$ns"
  NS+=("$ns")
  ip link add "gth$i-$sfx" type veth peer name "gtn$i-$sfx"
  ip link set "gtn$i-$sfx" netns "$ns"
  ip addr add "10.213.$i.1/24" dev "gth$i-$sfx"
  ip link set "gth$i-$sfx" up
  ip netns exec "$ns" ip addr add "10.213.$i.2/24" dev "gtn$i-$sfx"
  ip netns exec "$ns" ip link set "gtn$i-$sfx" up
  ip netns exec "$ns" ip link set lo up
done

DB=$T/gemmtune.db
"$GT_BIN"/gemmtuned --db "$DB" --http 127.0.0.1:0 --listen tcp://0.0.0.0:0 --lease-timeout 4 \
  --max-attempts 6 --port-file "$T/ports" 2>>"$T/gemmtuned.log" &
COORD=$!
PIDS+=("$COORD")
for _ in $(seq 100); do [ -s "$T/ports" ] && break; sleep 0.1; done
HTTP="http://127.0.0.1:$(sed -n 's/^http=//p' "$T/ports")"
wport=$(sed -n 's/^worker=.*://p' "$T/ports")

for i in 1 2; do
  ip netns exec "gtw$i-$sfx" env GEMMTUNE_CACHE_DIR="$GEMMTUNE_CACHE_DIR" \
    "$GT_BIN"/gemmtune-worker --server "tcp://10.213.$i.1:$wport" --backend cpu 2>>"$T/host$i.log" &
  PIDS+=($!)
  HOSTPID[$i]=$!
done
for _ in $(seq 100); do
  [ "$(sqlite3 "$DB" 'SELECT COUNT(*) FROM workers' 2>/dev/null)" = 2 ] && break
  sleep 0.1
done
check "both hosts registered over their links" [ "$(sqlite3 "$DB" 'SELECT COUNT(*) FROM workers')" = 2 ]
check "worker addresses are distinct hosts' processes" [ "$(sqlite3 "$DB" 'SELECT COUNT(DISTINCT pid) FROM workers')" = 2 ]

submit "$GT_TEST_DATA/cpu_small_f32.log" "name=netns&budget=8&shard_size=8&ncpu=1&min_time_ms=5&repeats=3"
# Wait until host 1 holds a lease, then cut its link.
w1=$(sqlite3 "$DB" "SELECT id FROM workers WHERE pid = ${HOSTPID[1]}")
w2=$(sqlite3 "$DB" "SELECT id FROM workers WHERE pid = ${HOSTPID[2]}")
h1=""
for _ in $(seq 400); do
  h1=$(sqlite3 "$DB" "SELECT id FROM jobs WHERE run_id = $RUN AND state = 'leased'
        AND lease_owner = $w1 LIMIT 1" 2>/dev/null)
  [ -n "$h1" ] && break
  sleep 0.05
done
check "host 1 was mid-job when its link was cut (job $h1)" [ -n "$h1" ]
ip link set "gth1-$sfx" down
# Its lease (4 s) expires and the other host takes the job over.
for _ in $(seq 300); do
  [ "$(sqlite3 "$DB" "SELECT attempts >= 2 FROM jobs WHERE id = $h1")" = 1 ] && break
  sleep 0.1
done
check "the cut host's job was leased again" \
  [ "$(sqlite3 "$DB" "SELECT attempts >= 2 FROM jobs WHERE id = $h1")" = 1 ]
for _ in $(seq 300); do
  [ "$(sqlite3 "$DB" "SELECT state FROM jobs WHERE id = $h1")" = done ] && break
  sleep 0.1
done
check "and finished by the other host while the link was down" \
  [ "$(sqlite3 "$DB" "SELECT state = 'done' AND COUNT(r.id) > 0 FROM jobs j LEFT JOIN results r
        ON r.job_id = j.id AND r.worker_id = $w2 WHERE j.id = $h1")" = 1 ]
ip link set "gth1-$sfx" up
state=$(wait_run "$RUN" 300)
check "run completed (state=$state)" [ "$state" = done ]
check "every problem has a final best" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM problem_best WHERE run_id = $RUN AND phase = 'final'")" = 6 ]
check "no duplicate results" [ "$(sqlite3 "$DB" "SELECT COUNT(*) FROM (SELECT 1 FROM results
  GROUP BY problem_id, backend, config_hash, device_model, phase HAVING COUNT(*) > 1)")" = 0 ]
# The restored host works again: a second run is taken by both hosts.
submit "$GT_TEST_DATA/cpu_small_f32.log" "name=netns2&budget=4&shard_size=1&ncpu=1&min_time_ms=1&repeats=3&seed=7"
check "second run completed" [ "$(wait_run "$RUN" 300)" = done ]
check "the restored host took jobs again" \
  [ "$(sqlite3 "$DB" "SELECT COUNT(DISTINCT worker_id) FROM results WHERE run_id = $RUN")" = 2 ]

finish
