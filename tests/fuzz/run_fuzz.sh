#!/usr/bin/env bash
# tests/fuzz/run_fuzz.sh: runs one libFuzzer target over a temp copy of its
# seed corpus and prints one summary line; used by ctest (tests/fuzz) and by
# scripts/fuzz. What it proves: the target ran the given time / number of
# inputs with ASan + UBSan + LeakSanitizer and nothing fired (exit 0), or it
# says what fired and where the reproducer was written (exit non-zero).
#
#   run_fuzz.sh FUZZER SEED_DIR DICT|- ARTIFACT_DIR [libFuzzer flags...]
#
# The seeds are copied so the inputs libFuzzer adds never land in the source
# tree; the temp folder (also TMPDIR of the fuzzer, where fuzz_http keeps its
# database) is removed afterwards. Crash, leak, timeout and OOM inputs go to
# ARTIFACT_DIR. Flags given after ARTIFACT_DIR override the defaults here.
# GT_FUZZ_REPLAY=DIR: the reproducers of known crashes in DIR are run first
# (regression check: each must run clean); a failure there fails the run.
set -uo pipefail
if (($# < 4)); then
  echo "usage: $0 FUZZER SEED_DIR DICT|- ARTIFACT_DIR [libFuzzer flags...]" >&2
  exit 2
fi
bin=$1 seeds=$2 dict=$3 art=$4
shift 4
name=$(basename "$bin")
[ -x "$bin" ] || { echo "run_fuzz: $bin is not an executable" >&2; exit 2; }
[ -d "$seeds" ] || { echo "run_fuzz: no seed corpus $seeds" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gt-$name.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/corpus" "$art" || exit 2
cp -R "$seeds"/. "$tmp/corpus/" || exit 2
# Artifacts of an earlier run stay; count only what this run adds.
before=$(find "$art" -maxdepth 1 -type f | wc -l)

args=(-rss_limit_mb=2048 -timeout=10 -print_final_stats=1 "-artifact_prefix=$art/")
[ "$dict" != - ] && args+=("-dict=$dict")
# LeakSanitizer is on by default with ASan on Linux; say so explicitly so an
# inherited ASAN_OPTIONS cannot switch it off unnoticed (later keys win).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1:halt_on_error=1"
export TMPDIR=$tmp

touch "$tmp/.start"
replay=none
replay_dir=${GT_FUZZ_REPLAY:-}
if [ -n "$replay_dir" ] && [ -d "$replay_dir" ]; then
  mapfile -t repro < <(find "$replay_dir" -maxdepth 1 -type f ! -name '*.md' | sort)
  if ((${#repro[@]})); then
    replay=ok
    for f in "${repro[@]}"; do
      # A reproducer of a fixed bug runs clean; one still open fails here.
      if ! "$bin" "${args[@]}" "-artifact_prefix=$tmp/" "$f" >"$tmp/replay.log" 2>&1; then
        replay=FAILED
        echo "---- $name: reproducer $f still fails:"
        grep -E 'runtime error|ERROR: |SUMMARY' "$tmp/replay.log" | head -n 5
      fi
    done
  fi
fi

t0=$(date +%s)
"$bin" "${args[@]}" "$@" "$tmp/corpus" >"$tmp/log" 2>&1
rc=$?
t1=$(date +%s)

stat() { sed -n "s/^stat::$1: *\([0-9]*\).*/\1/p" "$tmp/log" | tail -n1; }
execs=$(stat number_of_executed_units)
eps=$(stat average_exec_per_sec)
rss=$(stat peak_rss_mb)
covline=$(grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$tmp/log" | tail -n1)
cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$covline")
ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$covline")
if [ -z "$execs" ]; then # killed before the final stats: the last status line
  execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$covline")
fi
after=$(find "$art" -maxdepth 1 -type f | wc -l)
found=$((after - before))
status=ok
if ((rc != 0)); then
  status="FAILED(rc=$rc)"
  ((found == 0)) && found=1
  grep -qE 'ERROR: LeakSanitizer' "$tmp/log" && status="LEAK(rc=$rc)"
  grep -qE 'runtime error:' "$tmp/log" && status="UB(rc=$rc)"
  grep -qE 'ERROR: AddressSanitizer' "$tmp/log" && status="ASAN(rc=$rc)"
  grep -qE 'ERROR: libFuzzer: timeout' "$tmp/log" && status="TIMEOUT(rc=$rc)"
  grep -qE 'ERROR: libFuzzer: out-of-memory' "$tmp/log" && status="OOM(rc=$rc)"
  echo "---- $name: last 60 lines of its output ----"
  tail -n 60 "$tmp/log"
  echo "---- artifacts: $art"
  find "$art" -maxdepth 1 -type f -newer "$tmp/.start" -printf '  %p\n'
fi
printf 'FUZZ %-11s executions=%s exec/s=%s cov=%s ft=%s crashes=%d peak_rss_mb=%s time_s=%d status=%s replay=%s\n' \
  "$name" "${execs:-?}" "${eps:-?}" "${cov:-?}" "${ft:-?}" "$found" "${rss:-?}" $((t1 - t0)) "$status" "$replay"
((rc == 0)) && [ "$replay" = FAILED ] && rc=1
exit "$rc"
