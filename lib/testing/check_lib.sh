#!/usr/bin/env bash
# check_lib.sh symbols BUILD_DIR
#   libgemmtune.so exports exactly gemmtune.h's functions; libgemmtune.a
#   defines no other global symbol (hidden ones were localized);
#   libgemmtune-preload.so (CUDA builds) exports only the two interposed
#   cuBLASLt functions and needs no CUDA library.
# check_lib.sh install BUILD_DIR CC
#   installs the libgemmtune component into a temporary prefix and builds a
#   consumer through pkg-config against the shared and the static library.
set -euo pipefail
mode=$1 build=$2
lib=$build/lib
fail() { echo "FAIL: $*" >&2; exit 1; }

# Public functions: every GT_DB_API declaration of gemmtune.h.
hdr=$(dirname "$0")/../gemmtune.h
want=$(grep -A1 -h 'GT_DB_API' "$hdr" | grep -o '\bgt_[a-z_]*(' | tr -d '(' | sort -u)
if [ "${GT_WITH_CUDA:-0}" != 1 ]; then
    want=$(echo "$want" | grep -v -e cublaslt -e kernel_cuda || true)
fi

case $mode in
symbols)
    got=$(nm -D --defined-only "$lib/libgemmtune.so" | awk '$2 ~ /[TDBR]/ {print $3}' | sort -u)
    [ "$got" = "$want" ] || fail "libgemmtune.so exports:
$got
expected:
$want"
    got=$(nm --defined-only "$lib/libgemmtune.a" | awk '$2 ~ /^[TDBRC]$/ {print $3}' | sort -u)
    [ "$got" = "$want" ] || fail "libgemmtune.a global symbols:
$got
expected:
$want"
    echo "ok: libgemmtune.so and libgemmtune.a export $(echo "$want" | wc -l) functions"
    if [ "${GT_WITH_CUDA:-0}" = 1 ]; then
        pre=$lib/libgemmtune-preload.so
        got=$(nm -D --defined-only "$pre" | awk '$2 ~ /[TDBR]/ {print $3}' | sort -u | tr '\n' ' ')
        [ "$got" = "cublasLtMatmul cublasLtMatmulAlgoGetHeuristic " ] ||
            fail "preload exports: $got"
        if readelf -d "$pre" | grep NEEDED | grep -Ei 'cublas|cudart|libcuda'; then
            fail "preload links a CUDA library"
        fi
        echo "ok: libgemmtune-preload.so exports the two interposers and needs no CUDA library"
    fi
    ;;
install)
    cc=$3
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    cmake --install "$build" --prefix "$tmp/prefix" --component libgemmtune >/dev/null
    pc=$(find "$tmp/prefix" -name gemmtune.pc | head -1)
    [ -n "$pc" ] || fail "gemmtune.pc not installed"
    export PKG_CONFIG_PATH=$(dirname "$pc")
    [ -f "$(pkg-config --variable=includedir gemmtune)/gemmtune.h" ] || fail "header not installed"
    libdir=$(pkg-config --variable=libdir gemmtune)
    cat >"$tmp/consumer.c" <<'EOF'
#include <gemmtune.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    char err[256], key[512];
    gt_gemm_desc d;
    gt_gemm_desc_init(&d, 64, 32, 16, "bf16");
    if (gt_db_key(&d, key, sizeof key, err, sizeof err) < 0)
        return 1;
    gt_db *db = gt_db_open("/nonexistent/x.db", err, sizeof err);
    printf("%s|%s\n", key, db ? "opened" : "refused");
    return db != NULL;
}
EOF
    # shellcheck disable=SC2046
    "$cc" -Wall -Werror -o "$tmp/shared" "$tmp/consumer.c" $(pkg-config --cflags --libs gemmtune) \
        -Wl,-rpath,"$libdir"
    # shellcheck disable=SC2046
    "$cc" -Wall -Werror -o "$tmp/static" "$tmp/consumer.c" $(pkg-config --cflags gemmtune) \
        "$libdir/libgemmtune.a" $(pkg-config --static --libs-only-L --libs-only-l gemmtune | \
        sed 's/-lgemmtune//')
    want_out='m=64,n=32,k=16,b=1,op=NN,ld=64/16/64/64,st=0/0/0/0,t=bf16/bf16/bf16/bf16,ct=f32,st=f32,ab=1/0,bias=0:-,act=none|refused'
    for b in shared static; do
        out=$("$tmp/$b") || fail "$b consumer failed"
        [ "$out" = "$want_out" ] || fail "$b consumer printed '$out'"
    done
    readelf -d "$tmp/static" | grep -q 'libgemmtune' && fail "static consumer needs libgemmtune.so"
    readelf -d "$tmp/shared" | grep -q 'libgemmtune.so.0' || fail "shared consumer lacks libgemmtune.so.0"
    echo "ok: installed libgemmtune (shared + static) builds and runs through pkg-config"
    ;;
*) fail "mode $mode" ;;
esac
