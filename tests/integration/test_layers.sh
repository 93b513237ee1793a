#!/usr/bin/env bash
# The include direction of the sources (no process is started): common <-
# proto, gen, cuda <- server, worker, lib <- cli, python, bench, and inside
# server/ run options, planner, search <- store <- dispatcher <- HTTP API
# (server/gt_store.h says why). A header included against the direction is
# how a layer starts to speak another's language again: the store decoding
# worker JSON, the dispatcher reading HTTP state, a policy constant living
# in the wire protocol. Each check names the offending lines.
set -euo pipefail
: "${GT_SRC:?GT_SRC (source folder) must be set}"
cd "$GT_SRC"
FAILS=0
CHECKS=0

# none "description" REGEX FILES...: no #include line of FILES matches REGEX.
none() {
  local what=$1 re=$2; shift 2
  CHECKS=$((CHECKS + 1))
  local hits
  hits=$(grep -nE "^#include [\"<]($re)[\">]" "$@" 2>/dev/null || true)
  if [ -z "$hits" ]; then
    echo "ok   $what"
  else
    echo "FAIL $what:"
    echo "$hits" | sed 's/^/       /'
    FAILS=$((FAILS + 1))
  fi
}

# The headers of a folder, as an alternation for none().
headers_of() { (cd "$1" && ls -- *.h 2>/dev/null || true) | sed 's/\./\\./g' | paste -sd'|' -; }

STORE=(server/store*.c server/store_priv.h server/gt_store*.h)
WIRE='gt_proto\.h|nng/.*|gt_dispatch\.h|gt_session\.h|gt_http\.h|http_priv\.h|gt_metrics\.h|microhttpd\.h'
none "the store includes no protocol, dispatcher or HTTP header" "$WIRE" "${STORE[@]}"

PURE=(server/plan.c server/gt_plan.h server/run_opts.c server/gt_run_opts.h server/search_evo.c
      server/gt_search_evo.h)
none "the planner, run options and search include no store or upper layer" \
  "gt_store[a-z_]*\.h|store_priv\.h|$WIRE" "${PURE[@]}"

none "the dispatcher includes no HTTP header" 'gt_http\.h|http_priv\.h|gt_metrics\.h|microhttpd\.h' \
  server/dispatch.c server/dispatch_loop.c server/dispatch_priv.h server/gt_dispatch.h server/session.c \
  server/gt_session.h

SERVER_NOT_DISPATCH=($(ls server/*.c server/*.h | grep -vE 'server/(dispatch|dispatch_loop|main_gemmtuned)\.c$'))
none "in server/, only the dispatcher and main() include the protocol" 'gt_proto\.h' \
  "${SERVER_NOT_DISPATCH[@]}"

UPPER="$(headers_of worker)|$(headers_of lib)|$(headers_of cli)"
none "server/ includes nothing of worker/, lib/ or cli/" "$UPPER" server/*.c server/*.h

none "the CLI includes no protocol header" 'gt_proto\.h' cli/*.c cli/*.h

# `gemmtune verify` re-times cpu entries with the worker's backend and its
# paired rounds (library gt_bk): of worker/ the CLI includes those two
# headers and nothing of the worker's protocol side (client, supervisor,
# runner), whose library links nng.
WORKER_NOT_BK=$(cd worker && ls -- *.h | grep -vxE 'gt_backend\.h|gt_bk_paired\.h' | sed 's/\./\\./g' | paste -sd'|' -)
none "the CLI includes of worker/ only gt_backend.h and gt_bk_paired.h" "$WORKER_NOT_BK" cli/*.c cli/*.h
none "library gt_bk (backends, registry, paired rounds) includes nothing of the protocol side" \
  'gt_proto\.h|gt_client\.h|gt_sup\.h|gt_runner\.h|nng/.*' \
  worker/bk_cpu.c worker/cpu_*.c worker/tolerance.c worker/bk_paired.c worker/backend.c \
  worker/gt_bk_paired.h worker/cuda/*.c worker/cuda/*.h

# The paired-rounds protocol is written once (common/paired.c): the worker's
# final phase and `gemmtune verify` both call it.
CHECKS=$((CHECKS + 1))
defs=$(grep -rlnE --include='*.c' '^int gt_paired_run\(' common proto server worker lib cli gen 2>/dev/null || true)
if [ "$defs" = "common/paired.c" ]; then
  echo "ok   gt_paired_run is defined in common/paired.c only"
else
  echo "FAIL gt_paired_run defined in: ${defs:-nowhere}"
  FAILS=$((FAILS + 1))
fi

CHECKS=$((CHECKS + 1))
defs=$(grep -rln --include='*.h' --include='*.c' '#define GT_BASELINE_DRIFT_MAX' \
         common proto server worker lib cli gen 2>/dev/null || true)
if [ "$defs" = "common/gt_policy.h" ]; then
  echo "ok   GT_BASELINE_DRIFT_MAX is a policy of common/gt_policy.h, defined there only"
else
  echo "FAIL GT_BASELINE_DRIFT_MAX defined in: ${defs:-nowhere}"
  FAILS=$((FAILS + 1))
fi

echo "$((CHECKS - FAILS)) passed, $FAILS failed"
[ "$FAILS" -eq 0 ]
