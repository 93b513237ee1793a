#!/usr/bin/env bash
# bench/gpu_checks.sh: the GPU measurements the open issues wait for, in one call on a GPU
# machine, each step time-boxed so one slow step cannot cost the others; everything under
# OUT. Made for a device machine without Debian's packages: run it over a bundle that
# scripts/gpu-bundle built here (BUNDLE/bin, BUNDLE/lib).
#
#   bench/gpu_checks.sh BUNDLE [OUT] [STEPS]
#     STEPS: a comma list of pip, verify, e2e, e2e_compile, pytest, gputests, fp8, mix, cutlass
#            (default pip,verify,e2e,pytest; e2e_compile is the slow one: max-autotune
#            compiles 100-180 s per batch size)
#   env: BATCHES (1,8,32: e2e decode batches), E2E_STATE (a folder with an earlier
#        tuned.db and e2e.json to reuse: record and tune are skipped when it has them),
#        COMPILE_PHASES (autotune_nocg,gemmtune_compile), COMPILE_PARTS (decode),
#        COMPILE_TIMEOUT (540 s): what e2e_compile runs; E2E_PHASES (default,gemmtune):
#        the configurations e2e times after record, tune and check; E2E_TIMEOUT (420 s: each measurement is a fresh process of e2e_llama.py);
#        E2E_ARGS: more e2e_llama.py arguments for both steps (e.g. --gt-launch chained);
#        E2E_LAUNCH: verify's --launch for the e2e export (unset: each entry as its run
#        timed it; set it as --gt-launch when E2E_ARGS has one);
#        E2E_VERIFY (1; 0: no verify of the e2e export);
#        VERIFY_TIMEOUT (420 s; with verify_llama.sh's TWICE=1 give it about 600);
#        GPUTESTS: the gputests step's tests, space-separated (default all five below)
#
#   pip          builds the Python package (its C++ extension against this torch) into
#                /tmp/site
#   verify       bench/verify_llama.sh: 25 Llama shapes tuned, exported, re-timed twice
#                (issue 17)
#   e2e          bench/e2e_llama.py record, tune, check, default, gemmtune at BATCHES,
#                then gemmtune verify of its export in a fresh process (issue 16)
#   e2e_compile  COMPILE_PHASES at BATCHES (issue 16's bar: the torch.compile configurations)
#   pytest       python/tests/test_gpu.py and test_native.py against the bundle
#   gputests     the unit tests' GPU sections (test_gen_kernels, test_gen_mma, test_cuda_host,
#                test_lib_kernels, test_cutlass_lib --gpu: every CUTLASS kernel against a
#                host reference, issue 19)
#   fp8          bench/llama3_8b_fp8_decode.log through the service, then verify, then
#                bench/f8_ab.py on its export: each GEMM's best gemv config with the
#                raw-byte fp8 mma and with f8 "cvt", paired against cuBLASLt (issue 18)
#   mix          tests/data/hipblaslt_cuda_mix.log through the service (issue 18)
#   cutlass      gt-cutlass-probe: libgemmtune_cutlass's kernels against cuBLASLt on the
#                15 Llama shapes with n >= 128, each configuration checked first (issue 19)
# OUT/all.tgz holds every small output file (the device tool returns a limited number)
set -uo pipefail
cd "$(dirname "$0")/.."
B=$(realpath "${1:?usage: bench/gpu_checks.sh BUNDLE [OUT] [STEPS]}")
OUT=$(realpath -m "${2:-${OUT:-/tmp/gpu_checks}}")
STEPS=",${3:-pip,verify,e2e,pytest},"
BATCHES=${BATCHES:-1,8,32}
COMPILE_PHASES=${COMPILE_PHASES:-autotune_nocg,gemmtune_compile}
COMPILE_PARTS=${COMPILE_PARTS:-decode}
COMPILE_TIMEOUT=${COMPILE_TIMEOUT:-540}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
T0=$(date +%s)
step() { echo "[$(($(date +%s) - T0)) s, $(date +%T)] $*" | tee -a "$OUT/steps.txt"; }
has() { [[ $STEPS == *",$1,"* ]]; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
  --format=csv >"$OUT/gpu.txt" 2>&1 || true
# SM clock, power, temperature and throttle reasons every 200 ms for the whole call, so a
# step's timings can be read beside the state the GPU was in (issue 17's long-kernel noise)
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,nounits -lms 200 >"$OUT/smi.csv" 2>/dev/null &
SMI=$!
trap 'kill $SMI 2>/dev/null' EXIT

if has pip; then
  step "pip: the package and its extension"
  GEMMTUNE_BUILD_DIR=$B python3 -m pip install --no-build-isolation --no-deps --no-index \
    --target /tmp/site ./python >"$OUT/pip.txt" 2>&1
  step "pip rc=$?"
fi
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}

if has verify; then
  step "verify: 25 Llama shapes tuned and re-timed twice"
  timeout "${VERIFY_TIMEOUT:-420}" bench/verify_llama.sh "$B/bin" "$OUT/verify" >"$OUT/verify.txt" 2>&1
  step "verify rc=$?"
fi

STATE=$OUT/e2e
if [ -n "${E2E_STATE:-}" ] && [ "$(realpath -m "$E2E_STATE")" != "$STATE" ]; then
  mkdir -p "$STATE" && cp -r "$E2E_STATE"/. "$STATE"/
fi
if has e2e; then
  phases=${E2E_PHASES:-default,gemmtune}
  [ -s "$STATE/tuned.db" ] || phases=record,tune,check,$phases
  step "e2e: $phases at batches $BATCHES"
  timeout "${E2E_TIMEOUT:-420}" python3 bench/e2e_llama.py --build "$B/bin" --state "$STATE" --phases "$phases" \
    --batches "$BATCHES" ${E2E_ARGS:-} >"$OUT/e2e.txt" 2>&1
  step "e2e rc=$?"
  if [ -s "$STATE/tuned.db" ] && [ "${E2E_VERIFY:-1}" = 1 ]; then
    # without E2E_LAUNCH each entry is re-timed as its run timed it (a launch-bound final as
    # CUDA graphs): a --launch given re-times every entry so, which measured the graph-timed
    # 1024x1x4096 and 64x1x1 plainly and failed them (+59 %, -54 %: h100_43_e2e_b1.txt)
    timeout 120 "$B/bin/gemmtune" verify "$STATE/tuned.db" ${E2E_LAUNCH:+--launch "$E2E_LAUNCH"} \
      >"$OUT/e2e_verify.txt" 2>&1
    step "e2e verify rc=$?"
  fi
fi
if has e2e_compile; then
  step "e2e_compile: $COMPILE_PHASES ($COMPILE_PARTS) at batches $BATCHES"
  timeout "$COMPILE_TIMEOUT" python3 bench/e2e_llama.py --build "$B/bin" --state "$STATE" \
    --phases "$COMPILE_PHASES" --parts "$COMPILE_PARTS" --batches "$BATCHES" ${E2E_ARGS:-} >>"$OUT/e2e_compile.txt" 2>&1
  step "e2e_compile rc=$?"
fi
if has gputests; then
  # the GPU sections of the unit tests (fp8 gemv, graph timing, NVML, libgemmtune launches)
  step "gputests: test_gen_kernels, test_gen_mma, test_cuda_host, test_lib_kernels, test_cutlass_lib --gpu"
  mkdir -p "$OUT/gputests"
  for t in ${GPUTESTS:-test_gen_kernels test_gen_mma test_cuda_host test_lib_kernels test_cutlass_lib}; do
    # test_cutlass_lib finds libgemmtune_cutlass.so in GT_BUILD_DIR: the bundle's lib/
    GT_BUILD_DIR=$B/lib timeout 200 "$B/bin/$t" --gpu >"$OUT/gputests/$t.txt" 2>&1
    echo "$t rc=$?" >>"$OUT/gputests/rc.txt"
  done
  step "gputests: $(tr '\n' ' ' <"$OUT/gputests/rc.txt")"
fi
if has fp8; then
  step "fp8: the fp8 decode GEMMs through the service, then verify"
  mkdir -p "$OUT/fp8"
  timeout 200 python3 bench/cuda_service.py --build "$B/bin" --log bench/llama3_8b_fp8_decode.log \
    --budget 120 --export --out "$OUT/fp8" >"$OUT/fp8/service.txt" 2>&1
  db=$(sed -n 's/^export: \(.*\.db\) (.*/\1/p' "$OUT/fp8/service.txt" | tail -1)
  [ -n "$db" ] && timeout 100 "$B/bin/gemmtune" verify "$db" >"$OUT/fp8/verify.txt" 2>&1
  [ -n "$db" ] && timeout 150 python3 bench/f8_ab.py --bin "$B/bin" "$db" >"$OUT/fp8/ab.txt" 2>&1
  step "fp8 rc=$?"
fi
if has mix; then
  # issue 18: a hipBLASLt log of every kind (bf16/f16/f32/fp8, batched, NN/NT/TN, bias +
  # GELU): every GEMM tuned against its default or a named substitute, none failed
  step "mix: tests/data/hipblaslt_cuda_mix.log through the service"
  mkdir -p "$OUT/mix"
  timeout 200 python3 bench/cuda_service.py --build "$B/bin" --log tests/data/hipblaslt_cuda_mix.log \
    --budget 120 --export --out "$OUT/mix" >"$OUT/mix/service.txt" 2>&1
  step "mix rc=$?"
fi
if has cutlass; then
  step "cutlass: gt-cutlass-probe, the 15 Llama shapes with n >= 128"
  timeout "${CUTLASS_TIMEOUT:-480}" "$B/bin/gt-cutlass-probe" --lib "$B/lib/libgemmtune_cutlass.so" \
    >"$OUT/cutlass_probe.txt" 2>&1
  step "cutlass rc=$?"
fi
if has pytest; then
  # the tests find gemmtuned, gemmtune-worker, gemmtune and libgemmtune through one folder
  gb=/tmp/gt-gpu-build
  mkdir -p "$gb/lib"
  for f in gemmtuned gemmtune-worker gemmtune; do ln -sf "$B/bin/$f" "$gb/$f"; done
  ln -sf "$B"/lib/libgemmtune* "$gb/lib/" && ln -sf "$B"/lib/libgemmtune* "$gb/"
  step "pytest: test_gpu.py, test_native.py"
  here=$PWD
  (cd /tmp && GEMMTUNE_BUILD_DIR=$gb timeout 150 python3 -m pytest -q \
    "$here/python/tests/test_gpu.py" "$here/python/tests/test_native.py" >"$OUT/pytest.txt" 2>&1)
  step "pytest rc=$?"
fi
[ -s "$STATE/e2e.json" ] && python3 bench/e2e_llama.py --report --state "$STATE" >"$OUT/e2e_report.txt" 2>&1
# the state in one file (the device tool brings back a limited number of files): what a
# later call's E2E_STATE takes, without the reference tensors
[ -s "$STATE/e2e.json" ] && tar -C "$STATE" -czf "$OUT/e2e_state.tgz" --exclude='*.pt' --exclude=svc .
# everything small in one file: the device tool brings back a limited number of files
tar -C "$OUT" -czf "$OUT/all.tgz" --exclude='*.db' --exclude='*.pt' --exclude=svc --exclude='*.tgz' . 2>/dev/null
step done
