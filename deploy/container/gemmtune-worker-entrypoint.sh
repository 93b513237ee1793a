#!/bin/sh
# gemmtune-worker-entrypoint COMMAND [ARGS...]: runs COMMAND (gemmtune-worker
# and its options) in a container, as PID 1 does, and turns the container's
# stop signal into a clean hand-back. The image's entrypoint is
#   gemmtune-worker-entrypoint gemmtune-worker --backend cuda --device all
#
# Why a wrapper: with `--device all`, gemmtune-worker forks one worker per
# device and waits for them, but does not pass SIGTERM on to them; as PID 1 it
# would not even see SIGTERM (the kernel drops signals that PID 1 has no
# handler for), so `docker stop` / a pod deletion would end in SIGKILL and the
# jobs in flight would come back only when their leases expire. This wrapper
# sends SIGTERM to each per-device worker (never to their bench processes,
# which their worker stops itself), waits for them to report what they
# measured and hand their jobs back, and exits with the worker's status.
# With `--device N` it sends SIGTERM to that worker directly.
set -u
if [ $# -lt 1 ]; then
  echo "usage: gemmtune-worker-entrypoint gemmtune-worker [OPTIONS]" >&2
  exit 2
fi

all=0
prev=
for a in "$@"; do
  if [ "$a" = --device=all ] || { [ "$prev" = --device ] && [ "$a" = all ]; }; then all=1; fi
  prev=$a
done

# children PID: the PIDs of the processes whose parent is PID (read from
# /proc, so that the image needs no procps).
children() {
  want=$1
  for s in /proc/[0-9]*/stat; do
    st=$(cat "$s" 2>/dev/null) || continue
    st=${st##*) }   # skip "pid (command name)": the name may hold spaces
    set -- $st      # state ppid ...
    if [ "${2:-}" = "$want" ]; then p=${s#/proc/}; echo "${p%/stat}"; fi
  done
}

main=
stopping=0
on_stop() {
  [ "$stopping" = 1 ] && return
  stopping=1
  [ -n "$main" ] || exit 143
  if [ "$all" = 1 ]; then
    kids=$(children "$main")
    # shellcheck disable=SC2086
    [ -n "$kids" ] && kill -TERM $kids 2>/dev/null
  else
    kill -TERM "$main" 2>/dev/null
  fi
}

trap on_stop TERM INT
"$@" &
main=$!
[ "$stopping" = 0 ] || kill -TERM "$main" 2>/dev/null
rc=0
while :; do
  wait "$main"
  rc=$?
  # wait returns early (status > 128) when a trapped signal arrives.
  kill -0 "$main" 2>/dev/null || break
done
exit "$rc"
