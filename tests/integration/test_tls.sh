#!/usr/bin/env bash
# Proves the TLS worker endpoint (nng's tls+tcp transport, mbedTLS in
# Debian's build): with a certificate signed by a test CA, workers that trust
# the CA tune a run; a worker trusting another CA, or speaking plain TCP,
# never registers.
source "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || { echo "skipped: openssl missing"; exit 77; }

mk_ca() { openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/$1.key" -out "$T/$1.pem" -days 2 -subj "/CN=$1" 2>/dev/null; }
mk_ca gt-test-ca
mk_ca other-ca
openssl req -newkey rsa:2048 -nodes -keyout "$T/srv.key" -out "$T/srv.csr" -subj "/CN=127.0.0.1" 2>/dev/null
openssl x509 -req -in "$T/srv.csr" -CA "$T/gt-test-ca.pem" -CAkey "$T/gt-test-ca.key" -CAcreateserial \
  -out "$T/srv.pem" -days 2 2>/dev/null
cat "$T/srv.pem" "$T/srv.key" >"$T/srv-bundle.pem"

DB=$T/gemmtune.db
"$GT_BIN"/gemmtuned --db "$DB" --http 127.0.0.1:0 --listen tls+tcp://127.0.0.1:0 \
  --tls-cert-key "$T/srv-bundle.pem" --port-file "$T/ports" 2>>"$T/gemmtuned.log" &
COORD=$!
PIDS+=("$COORD")
for _ in $(seq 100); do [ -s "$T/ports" ] && break; sleep 0.1; done
check "coordinator listens on tls+tcp" grep -q '^worker=tls+tcp://127.0.0.1:[1-9]' "$T/ports"
HTTP="http://127.0.0.1:$(sed -n 's/^http=//p' "$T/ports")"
WURL=$(sed -n 's/^worker=//p' "$T/ports")

timeout 6 "$GT_BIN"/gemmtune-worker --server "$WURL" --backend cpu --tls-ca "$T/other-ca.pem" 2>"$T/wrongca.log" || true
timeout 6 "$GT_BIN"/gemmtune-worker --server "tcp://${WURL#tls+tcp://}" --backend cpu 2>"$T/plain.log" || true
check "neither an untrusted-CA nor a plain-TCP worker registered" [ "$(sqlite3 "$DB" 'SELECT COUNT(*) FROM workers')" = 0 ]
rc=0
"$GT_BIN"/gemmtune-worker --server "$WURL" --backend cpu 2>"$T/noca.log" || rc=$?
check "a tls+tcp URL without --tls-ca is refused at start (rc=$rc)" [ "$rc" = 1 ] && grep -q 'needs --tls-ca' "$T/noca.log"

start_worker w1 --tls-ca "$T/gt-test-ca.pem"
submit "$GT_TEST_DATA/cpu_two_f32.log" "name=tls&budget=3&ncpu=1&min_time_ms=1&repeats=3"
check "a run completes over TLS" [ "$(wait_run "$RUN" 120)" = done ]
check "the TLS worker is the only one registered" [ "$(sqlite3 "$DB" 'SELECT COUNT(*) FROM workers')" = 1 ]

finish
