#!/usr/bin/env python3
"""preload_proof.py: an unmodified PyTorch program runs gemmtune's tuned cuBLASLt
algorithms through libgemmtune-preload.so. One GPU, a few minutes.

  1. record   the program (bf16 Llama-3-8B Linear layers, F.linear with
              torch.backends.cuda.preferred_blas_library('cublaslt')) runs under
              LD_PRELOAD=libgemmtune-preload.so with GEMMTUNE_RECORD: its GEMMs
              and call counts land in gemms.log (hipBLASLt lines)
  2. tune     gemmtuned + one cuda worker from --build tune that log (backend
              cuda, a small budget), the result database is exported
  3. default  the program times every layer (CUDA graph of N calls, warm-up,
              median of 9 replays) and saves its outputs; no shim
  4. shim     the same with LD_PRELOAD + GEMMTUNE_DB=tuned.db; outputs compared
              with step 3 (max |diff| / max |default| within bf16 tolerance)
  5. (only when this PyTorch's TunableOp has cuBLASLt solutions and the CLI
     has `export --tunableop`) the same through a TunableOp results file
  then the before/after table. Same seeded inputs in every run. Without
  PyTorch, the C program build/lib/gt-lt-linear makes the same cuBLASLt calls.

Exit status 0 when the outputs agree and the shim put a tuned algo first for at
least one GEMM. Usage (bench/preload_proof.sh builds and runs it):
  python3 bench/preload_proof.py --build BUILD [--out DIR] [--tokens 1,512]
"""
import argparse
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

from gt_service import get, post

LAYERS = [("qkv", 6144, 4096), ("o", 4096, 4096), ("gate_up", 28672, 4096), ("down", 4096, 14336)]
TOL = 2e-2  # bf16 outputs of two algorithms (split-K, other tile order) differ by a few ulps
T0 = time.time()


def say(msg):
    print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)


# ---------------------------------------------------------------------------
# The PyTorch program (run in its own process: LD_PRELOAD must be set at start)

def program(a):
    import torch
    import torch.nn.functional as F
    try:
        torch.backends.cuda.preferred_blas_library("cublaslt")
    except Exception as e:  # older PyTorch: TORCH_BLAS_PREFER_CUBLASLT=1 is set too
        print(f"preferred_blas_library: {e}", file=sys.stderr)
    dev = torch.device("cuda", 0)
    gen = torch.Generator(device=dev)
    gen.manual_seed(1234)
    tokens = [int(t) for t in a.tokens.split(",")]
    if a.program == "time" and a.tag == "default":
        try:
            torch.cuda.tunable.enable(True)
            v = torch.cuda.tunable.get_validators()
            torch.cuda.tunable.enable(False)
            items = v.items() if hasattr(v, "items") else v
            with open(os.path.join(a.out, "validators.txt"), "w") as f:
                for k, val in items:
                    f.write(f"Validator,{k},{val}\n")
        except Exception as e:
            print(f"tunable validators: {e}", file=sys.stderr)
    print(f"torch {torch.__version__} cuda {torch.version.cuda} {torch.cuda.get_device_name(0)}",
          file=sys.stderr)
    for n in tokens:
        for name, out_f, in_f in LAYERS:
            w = torch.randn(out_f, in_f, device=dev, dtype=torch.bfloat16, generator=gen) * in_f ** -0.5
            x = torch.randn(n, in_f, device=dev, dtype=torch.bfloat16, generator=gen)
            if a.program == "record":
                for _ in range(10):
                    F.linear(x, w)
                torch.cuda.synchronize()
                continue
            for _ in range(3):
                y = F.linear(x, w)
            torch.cuda.synchronize()
            est = 2.0 * out_f * n * in_f / 400e12 + out_f * in_f * 2 / 2.5e12
            reps = max(5, min(200, int(2e-3 / est)))
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            times = []
            try:
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    for _ in range(reps):
                        yg = F.linear(x, w)
                for _ in range(3):
                    g.replay()
                for _ in range(9):
                    s.record()
                    g.replay()
                    e.record()
                    e.synchronize()
                    times.append(s.elapsed_time(e) * 1000 / reps)
                y = yg
                mode = "graph"
            except Exception as ex:  # no graphs: eager loop (CPU launch cost included)
                print(f"graph capture failed ({ex}); timing eagerly", file=sys.stderr)
                times = []
                for _ in range(9):
                    s.record()
                    for _ in range(reps):
                        y = F.linear(x, w)
                    e.record()
                    e.synchronize()
                    times.append(s.elapsed_time(e) * 1000 / reps)
                mode = "eager"
            times.sort()
            path = os.path.join(a.out, f"{a.tag}_{name}_{n}.pt")
            torch.save(y.float().cpu(), path)
            rel = -1.0
            if a.base:
                ref = torch.load(os.path.join(a.out, f"{a.base}_{name}_{n}.pt"))
                diff = (y.float().cpu() - ref).abs().max().item()
                rel = diff / max(ref.abs().max().item(), 1e-30)
                if not math.isfinite(rel):
                    rel = float("inf")
            print("RESULT " + json.dumps({"layer": name, "m": out_f, "n": n, "k": in_f,
                                          "us": times[4], "rel_err": rel, "mode": mode}), flush=True)


# ---------------------------------------------------------------------------
# The driver

def run_program(a, use_torch, phase, tag=None, base=None, env=None, label=""):
    e = dict(os.environ)
    e.update({"CUBLASLT_WORKSPACE_SIZE": "32768", "TORCH_BLAS_PREFER_CUBLASLT": "1"})
    e.update(env or {})
    if use_torch:
        cmd = [sys.executable, os.path.abspath(__file__), "--program", phase, "--out", a.out,
               "--tokens", a.tokens] + (["--tag", tag] if tag else []) + (["--base", base] if base else [])
    else:
        cmd = [os.path.join(a.build, "lib", "gt-lt-linear"), phase, a.out, a.tokens] + \
              ([tag] if tag else []) + ([base] if base else [])
    say(f"{label}: {' '.join(k + '=' + v for k, v in (env or {}).items())} {' '.join(cmd[-6:])}")
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=300)
    res = {}
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[7:])
            res[(r["layer"], r["n"])] = r
    if p.returncode != 0:
        print(p.stdout[-3000:], p.stderr[-3000:], sep="\n")
        raise SystemExit(f"{label} failed (exit {p.returncode})")
    return res, p.stderr


def tune(a, log_text):
    """Runs gemmtuned + one cuda worker on GPU 0, tunes the log, exports tuned.db."""
    svc = os.path.join(a.out, "svc")
    os.makedirs(svc, exist_ok=True)
    portfile, db = os.path.join(svc, "ports"), os.path.join(svc, "gemmtune.db")
    for f in (portfile, db, db + "-wal", db + "-shm"):
        if os.path.exists(f):
            os.unlink(f)
    coord = subprocess.Popen([os.path.join(a.build, "gemmtuned"), "--db", db, "--http", "127.0.0.1:0",
                              "--listen", "tcp://127.0.0.1:0", "--port-file", portfile,
                              "--lease-timeout", "120"], stderr=open(os.path.join(svc, "gemmtuned.log"), "w"))
    procs = [coord]
    try:
        for _ in range(100):
            if os.path.exists(portfile) and os.path.getsize(portfile):
                break
            time.sleep(0.1)
        ports = dict(l.split("=", 1) for l in open(portfile).read().split())
        http = f"http://127.0.0.1:{ports['http']}"
        wenv = dict(os.environ, GT_CUDA_ENUM_SECONDS=str(a.enum_seconds), GT_CUDA_MAX_CANDIDATES="1500")
        worker = subprocess.Popen([os.path.join(a.build, "gemmtune-worker"), "--server", ports["worker"],
                                   "--backend", "cuda", "--device", "0", "--batch", "32"], env=wenv,
                                  stderr=open(os.path.join(svc, "worker.log"), "w"), start_new_session=True)
        procs.append(worker)
        ws = []
        for _ in range(600):
            ws = get(http + "/v1/workers")["workers"]
            if ws:
                break
            time.sleep(0.1)
        if not ws:
            raise SystemExit("the cuda worker did not register (see " + svc + "/worker.log)")
        w = ws[0]
        say(f"worker: {w.get('device_model')} [{w.get('device_index')}] {w.get('driver')}")
        sub = post(http + "/v1/runs", {"log": log_text, "name": "preload-proof", "backend": "cuda",
                                       "budget": a.budget, "strategy": "random", "shard_size": 16,
                                       "final_k": 3, "min_time_ms": 0.25, "repeats": 3, "warmup": 1})
        rid = sub["id"]
        say(f"run {rid}: {sub['problems']} GEMMs, {sub['jobs']} jobs")
        t0, last = time.time(), 0
        while True:
            run = get(f"{http}/v1/runs/{rid}")
            if run["state"] != "running":
                break
            if time.time() - t0 > a.tune_timeout:
                say(f"tuning budget {a.tune_timeout}s spent: cancelling, exporting what is measured")
                run = post(f"{http}/v1/runs/{rid}/cancel", {})
                break
            if time.time() - last >= 15:
                last = time.time()
                c = run["candidates"]
                say(f"  candidates {c['done']}/{c['total']}, GEMMs {run['problems']['done']}/"
                    f"{run['problems']['total']}")
            time.sleep(0.5)
        run = get(f"{http}/v1/runs/{rid}")
        with urllib.request.urlopen(f"{http}/v1/runs/{rid}/export", timeout=120) as r:
            data = r.read()
        path = os.path.join(a.out, "tuned.db")
        with open(path, "wb") as f:
            f.write(data)
        say(f"exported {path} ({len(data)} bytes), run {run['state']}, "
            f"workload uplift {run.get('weighted_uplift')}")
        return path, run, w
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM) if p is not coord else p.terminate()
            except Exception:
                pass
        for p in procs:
            try:
                p.wait(timeout=20)
            except Exception:
                p.kill()


def shim_states(stderr):
    """Per GEMM label: the shim's verdict and how often its tuned algo went first."""
    st = {}
    for m in re.finditer(r"dev \d+ (\S+ \S\S \d+x\d+x\d+)\s+alpha \S+ beta \S+: .*?, (tuned|not tuned|"
                         r"refused by cublasLtMatmulAlgoCheck|not modelled|not looked up), "
                         r"tuned algo first (\d+) times", stderr):
        st[m.group(1)] = (m.group(2), int(m.group(3)))
    return st


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=os.environ.get("OUT") or "/tmp/preload-proof")
    ap.add_argument("--tokens", default="1,512", help="token counts (GEMM n), comma-separated")
    ap.add_argument("--budget", type=int, default=40, help="candidates per GEMM")
    ap.add_argument("--enum-seconds", type=int, default=8)
    ap.add_argument("--tune-timeout", type=float, default=200)
    ap.add_argument("--no-torch", action="store_true", help="use the C program even if PyTorch is there")
    ap.add_argument("--program", choices=["record", "time"], help=argparse.SUPPRESS)
    ap.add_argument("--tag", help=argparse.SUPPRESS)
    ap.add_argument("--base", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.program:
        return program(a)

    a.build, a.out = os.path.abspath(a.build), os.path.abspath(a.out)
    os.makedirs(a.out, exist_ok=True)
    shim = os.path.join(a.build, "lib", "libgemmtune-preload.so")
    for f in (shim, os.path.join(a.build, "gemmtuned"), os.path.join(a.build, "gemmtune-worker")):
        if not os.path.exists(f):
            raise SystemExit(f"{f} missing: build with CUDA first (bench/preload_proof.sh does)")
    use_torch = False
    if not a.no_torch:
        p = subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available(); "
                            "print(torch.__version__, torch.version.cuda)"], capture_output=True, text=True)
        use_torch = p.returncode == 0
        say(f"PyTorch {p.stdout.strip()}" if use_torch else
            "PyTorch with CUDA not available: using build/lib/gt-lt-linear (same cuBLASLt calls)")
    if not use_torch and not os.path.exists(os.path.join(a.build, "lib", "gt-lt-linear")):
        raise SystemExit("neither PyTorch nor build/lib/gt-lt-linear")

    # 1. record
    rec = os.path.join(a.out, "gemms.log")
    if os.path.exists(rec):
        os.unlink(rec)
    _, err = run_program(a, use_torch, "record", env={"LD_PRELOAD": shim, "GEMMTUNE_RECORD": rec,
                                                      "GEMMTUNE_VERBOSE": "2"}, label="record")
    fwd = re.search(r"forwarding to (\S+)", err)
    say(f"shim forwards to {fwd.group(1) if fwd else '?'}")
    if not os.path.exists(rec):
        print(err[-3000:])
        raise SystemExit("no record written: did the program call cublasLtMatmul through the shim?")
    log_text = open(rec).read()
    say(f"recorded {len(log_text.splitlines())} GEMMs into {rec}")
    if not log_text.strip():
        print(err[-3000:])
        raise SystemExit("the record is empty: the program's GEMMs did not reach cublasLtMatmul "
                         "through the shim (is cuBLASLt the preferred BLAS library?)")

    # 2. tune
    tuned, run, worker = tune(a, log_text)
    lt_major = re.search(r"libcublasLt\.so\.(\d+)", fwd.group(1) if fwd else "")
    w_lt = re.search(r"cublasLt (\d+)", worker.get("driver") or "")
    if lt_major and w_lt and int(w_lt.group(1)) // 10000 != int(lt_major.group(1)):
        say(f"NOTE: tuned with cuBLASLt {w_lt.group(1)}, the program uses libcublasLt.so.{lt_major.group(1)}: "
            "algo ids may not carry over (the shim then passes through: 'refused')")
    tuning = {}
    for b in run.get("best", []):
        m = re.search(r"(\d+)x(\d+)x(\d+)", b.get("label", ""))
        if m and b.get("uplift"):
            tuning[(int(m.group(1)), int(m.group(2)), int(m.group(3)))] = b["uplift"]

    # 3. default, 4. shim
    default, _ = run_program(a, use_torch, "time", "default", label="default (no shim)")
    shimmed, serr = run_program(a, use_torch, "time", "shim", "default",
                                env={"LD_PRELOAD": shim, "GEMMTUNE_DB": tuned, "GEMMTUNE_VERBOSE": "2"},
                                label="shim")
    for line in serr.splitlines():
        if line.startswith("gemmtune-preload:") and ("heuristic calls" in line or "refused" in line
                                                      or "GEMMTUNE" in line):
            say(line)
    states = shim_states(serr)

    # 5. TunableOp, when this PyTorch reads cuBLASLt solutions
    top = {}
    vfile = os.path.join(a.out, "validators.txt")
    if use_torch and os.path.exists(vfile) and "CUBLASLT_VERSION" in open(vfile).read():
        csv = os.path.join(a.out, "tunableop0.csv")
        if os.path.exists(csv):
            os.unlink(csv)
        p = subprocess.run([os.path.join(a.build, "gemmtune"), "export", "--db", tuned, "--tunableop",
                            "-o", csv, "--validators", vfile], capture_output=True, text=True)
        if p.returncode == 0:
            say(p.stdout.strip())
            top, _ = run_program(a, use_torch, "time", "tunableop", "default", label="TunableOp",
                                 env={"PYTORCH_TUNABLEOP_ENABLED": "1", "PYTORCH_TUNABLEOP_TUNING": "0",
                                      "PYTORCH_TUNABLEOP_FILENAME": os.path.join(a.out, "tunableop%d.csv")})
        else:
            say(f"TunableOp step skipped: gemmtune export --tunableop: {p.stderr.strip()[:200]}")
    elif use_torch:
        say("TunableOp step skipped: this PyTorch's TunableOp has no cuBLASLt solutions on CUDA "
            "(no CUBLASLT_VERSION validator)")

    # the table
    print()
    hdr = f"{'layer':<8}{'GEMM m x n x k':>18}{'default us':>12}{'shim us':>10}{'speed-up':>10}" \
          f"{'tuning':>9}{'rel err':>10}  shim"
    if top:
        hdr += f"{'':>16}tunableop us"
    print(hdr)
    sum_d = sum_s = fl_w = fl_up = 0.0
    worst, applied = 0.0, 0
    for (name, n), d in sorted(default.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        s = shimmed.get((name, n))
        if not s:
            continue
        m, k = d["m"], d["k"]
        lab = f"bf16 TN {m}x{n}x{k}"
        state, cnt = states.get(lab, ("?", 0))
        applied += cnt > 0
        up = d["us"] / s["us"]
        flops = 2.0 * m * n * k
        sum_d += d["us"]
        sum_s += s["us"]
        fl_w += flops
        fl_up += flops * up
        worst = max(worst, s["rel_err"])
        t = tuning.get((m, n, k))
        line = f"{name:<8}{f'{m}x{n}x{k}':>18}{d['us']:12.2f}{s['us']:10.2f}{up:9.3f}x" \
               f"{(f'{t:.3f}x' if t else '-'):>9}{s['rel_err']:10.1e}  {state}" + (f" ({cnt}x)" if cnt else "")
        if top and (name, n) in top:
            line += f"{'':>4}{top[(name, n)]['us']:10.2f}"
        print(line)
    ok_num = worst <= TOL
    print(f"\nall layers: {sum_d:.1f} us -> {sum_s:.1f} us ({sum_d / sum_s:.3f}x), FLOP-weighted speed-up "
          f"{fl_up / fl_w:.3f}x; GEMMs with the tuned algo applied: {applied}/{len(default)}")
    print(f"outputs: max |shim - default| / max |default| = {worst:.2e} (bf16 tolerance {TOL:g}): "
          f"{'PASS' if ok_num else 'FAIL'}")
    ex = os.path.join(a.build, "lib", "gemmtune-lookup-example")
    if os.path.exists(ex):
        p = subprocess.run([ex, tuned, "6144", "1", "4096"], capture_output=True, text=True)
        print("\nlibgemmtune example (direct API, qkv at 1 token):\n" + (p.stdout + p.stderr).strip())
    say("done")
    return 0 if ok_num and applied > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
