#!/usr/bin/env bash
# bench/view_render.sh BIN DB [N]: how long gemmtuned takes to render the views of a database
# it did not render before: N times (default 5), a fresh gemmtuned on a copy of DB (127.0.0.1,
# ephemeral ports), the first GET /v1/runs/1 (the run view: rendered in the request, nothing
# cached yet) and GET /v1/runs?limit=50, timed by curl (the response included).
# DB: e.g. the database bench/coord_bench.sh keeps with KEEP_DB=PATH
# (WORKERS=256 BATCH=64 GEMMS=1000: 1000 problems, 261,000 results).
set -euo pipefail
bin=$1 db=$2 n=${3:-5}
for _ in $(seq "$n"); do
  t=$(mktemp -d)
  cp "$db" "$t/coord.db"
  "$bin" --db "$t/coord.db" --http 127.0.0.1:0 --listen tcp://127.0.0.1:0 --port-file "$t/ports" \
    --log-level warn 2>"$t/log" &
  pid=$!
  for _ in $(seq 200); do [ -s "$t/ports" ] && break; sleep 0.05; done
  h=127.0.0.1:$(grep -o 'http=[0-9]*' "$t/ports" | cut -d= -f2)
  a=$(curl -sf -o /dev/null -w '%{time_total}' "http://$h/v1/runs/1")
  b=$(curl -sf -o /dev/null -w '%{time_total}' "http://$h/v1/runs?limit=50")
  echo "run view first render ${a} s, run list ${b} s"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$t"
done
