#!/usr/bin/env python3
"""cuda_service.py: the CUDA backend benchmark, run through the real service.

Starts gemmtuned and one gemmtune-worker per GPU (--device all), submits a
workload log with backend=cuda, waits for the run, and prints per GEMM:
baseline us (cuBLASLt heuristic top-1, re-timed in the final job next to the
winner), tuned us, uplift, TFLOP/s, % of the measured roofline, candidates
timed, tuning seconds; then the geomean and FLOP-weighted uplift and the
candidates timed per second per GPU.

The roofline is measured on the same GPU before the run (PyTorch: a large
device-to-device copy counting bytes read + written, and an 8192^3 bf16
matmul); a GEMM's floor is max(bytes / copy bandwidth, flops / matmul rate).

With --launch chained the run times generated gemv kernels with programmatic
dependent launch (each call may start before the one before it ends, as in
an application whose kernels all launch that way); cuBLASLt and the baseline
are timed plainly, so the uplift then includes that overlap.

Usage (repository built in build/ with CUDA):
  python3 bench/cuda_service.py [--log FILE] [--budget N] [--gpus N] [--out DIR]
                                [--launch plain|chained]
"""
import argparse
import json
import math
import os
import sys
import time
import urllib.request

from gt_service import Service, get, post, screen_by_gemm, where_time_went, worker_costs


def roofline():
    """Measured copy bandwidth (B/s) and bf16 matmul rate (FLOP/s) of GPU 0."""
    try:
        import torch
    except ImportError:
        return None, None
    dev = torch.device("cuda", 0)
    x = torch.empty(1 << 30, dtype=torch.uint8, device=dev).random_(0, 255)
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(10):
        s.record()
        y.copy_(x)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    times.sort()
    bw = 2 * x.numel() / times[len(times) // 2]
    del x, y
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device=dev)
    b = torch.randn(8192, 8192, dtype=torch.bfloat16, device=dev)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(10):
        s.record()
        a @ b
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    times.sort()
    rate = 2 * 8192 ** 3 / times[len(times) // 2]
    del a, b
    torch.cuda.empty_cache()
    return bw, rate


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--log", action="append", help="workload log (repeatable)")
    ap.add_argument("--budget", type=int, default=400)
    ap.add_argument("--strategy", default="random")
    ap.add_argument("--shard", type=int, default=50)
    ap.add_argument("--min-time-ms", type=float, default=0.25)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--final-k", type=int, default=5)
    ap.add_argument("--gpus", default="all", help="'all' or a device index")
    ap.add_argument("--launch", default="plain", choices=["plain", "chained", "graph"],
                    help="the run's launch option: chained times generated gemv kernels with "
                         "programmatic dependent launch (sm_90+), the baseline plain; graph times "
                         "every candidate and the baseline inside a CUDA graph")
    ap.add_argument("--timeout", type=float, default=480)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    ap.add_argument("--export", action="store_true", help="also write each run's export as OUT/runN.db")
    a = ap.parse_args()
    logs = a.log or ["bench/llama3_8b_shapes.csv"]

    bw, rate = roofline()
    if bw:
        print(f"roofline (GPU 0): copy {bw / 1e12:.2f} TB/s, bf16 matmul {rate / 1e12:.0f} TFLOP/s",
              flush=True)

    want = 1
    if a.gpus == "all":
        try:
            import torch
            want = max(torch.cuda.device_count(), 1)
        except ImportError:
            pass
    with Service(a.build, os.path.join(a.out, "svc"), backend="cuda", device=a.gpus) as svc:
        http = svc.url
        ws = svc.wait_workers(want)
        ngpu = len(ws)
        print(f"{ngpu} worker(s): " + ", ".join(f"{w['device_model']} [{w['device_index']}] {w['driver']}"
                                                for w in ws), flush=True)
        for logf in logs:
            text = open(logf).read()
            t0 = time.time()
            sub = post(http + "/v1/runs", {
                "log": text, "name": os.path.basename(logf), "backend": "cuda",
                "budget": a.budget, "strategy": a.strategy, "shard_size": a.shard,
                "final_k": a.final_k, "min_time_ms": a.min_time_ms, "repeats": a.repeats,
                "warmup": 1, "launch": a.launch})
            rid = sub["id"]
            print(f"\nrun {rid}: {logf}: {sub['problems']} GEMMs, launch {a.launch}", flush=True)
            last = 0.0
            while True:
                run = get(f"{http}/v1/runs/{rid}")
                if run["state"] != "running" or time.time() - t0 > a.timeout:
                    break
                if time.time() - last >= 10:
                    last = time.time()
                    c = run["candidates"]
                    print(f"  {time.time() - t0:6.1f}s  candidates {c['done']}/{c['total']}  problems "
                          f"{run['problems']['done']}/{run['problems']['total']}", flush=True)
                time.sleep(0.25)
            # The coordinator's own clock: first lease to last result.
            wall = run.get("elapsed_s") or (time.time() - t0)
            res = get(f"{http}/v1/runs/{rid}/results")["results"]
            # the coordinator's clock for "first result" (results.created_ms is on it too)
            created = get(f"{http}/v1/runs/{rid}/timeline").get("created_ms")
            report(run, res, bw, rate, ngpu, wall, created)
            with open(os.path.join(a.out, f"run{rid}.json"), "w") as f:
                json.dump({"run": run, "results": res}, f)
            if a.export:
                # the run's export database, for `gemmtune verify` in a fresh process
                with urllib.request.urlopen(f"{http}/v1/runs/{rid}/export", timeout=120) as r:
                    blob = r.read()
                path = os.path.join(a.out, f"run{rid}.db")
                with open(path, "wb") as f:
                    f.write(blob)
                print(f"export: {path} ({len(blob)} bytes)", flush=True)
        # where the GPUs' time went: each job from lease to done (the coordinator's database),
        # and inside the jobs (the worker's cost lines): compile, check, timing, pruned
        where_time_went(os.path.join(a.out, "svc", "gemmtune.db"))
        worker_costs(os.path.join(a.out, "svc", "worker.log"))
        screen_by_gemm(os.path.join(a.out, "svc", "gemmtune.db"), os.path.join(a.out, "svc", "worker.log"))


# element bytes of the type names labels use (gt_dtype_name)
_ELEM = {"f64": 8, "f32": 4, "tf32": 4, "bf16": 2, "f16": 2, "i8": 1, "f8e4m3": 1, "f8e5m2": 1,
         "f8e4m3fnuz": 1, "f8e5m2fnuz": 1}


def label_work(label):
    """(short label, m, n, k, batch, flops, bytes) of a GEMM label "TYPE TT MxNxK[ bB]"
    (gt_problem_label). Bytes count A and B in the label's type and D in it too, except
    that an 8-bit input's D is counted as bf16 (fp8 GEMMs write bf16 or wider); every
    count is per batch times the batch."""
    parts = label.split()
    typ = parts[0]
    dims = next(p for p in parts[1:] if "x" in p)
    m, n, k = (int(x) for x in dims.split("x"))
    batch = 1
    for p in parts[1:]:
        if p.startswith("b") and p[1:].isdigit():
            batch = int(p[1:])
    ea = _ELEM.get(typ, 2)
    ed = 2 if ea == 1 else ea
    flops = 2.0 * m * n * k * batch
    byts = float(batch) * (ea * (m * k + k * n) + ed * m * n)
    short = label.replace("bf16 TN ", "")
    return short, m, n, k, batch, flops, byts


def family(cfg):
    """The candidate family of a config: "cublaslt" (the library) or a generated one."""
    if isinstance(cfg, str):
        try:
            cfg = json.loads(cfg)
        except ValueError:
            return "?"
    if not isinstance(cfg, dict):
        return "?"
    fam = (cfg or {}).get("family", "cublaslt")
    # the persistent wgmma kernels apart (mma_c: in clusters of two, mma_pp:
    # pingpong), so one run compares them with the rest
    if fam == "mma" and cfg.get("ctas"):
        return "mma_c" if cfg.get("cluster") == 2 else "mma_pp" if cfg.get("pingpong") == 1 else "mma_p"
    return fam


def final_gen_lib(res):
    """Per GEMM (problem_id), from its final phase's paired re-times (results of phase 'final'):
    the best cuBLASLt config's time over the best generated config's, lib/gen (> 1: the
    generated kernel is faster). The final's baseline, cuBLASLt's heuristic choice, counts as a
    cuBLASLt config. Only GEMMs whose final timed both sides validly are in the answer."""
    lib, gen = {}, {}
    for r in res:
        if r.get("phase") != "final" or not r.get("valid") or not r.get("time_us"):
            continue
        fam = family(r.get("config"))
        if fam == "?":
            continue
        side = lib if fam == "cublaslt" else gen
        pid = r["problem_id"]
        side[pid] = min(side.get(pid, float("inf")), r["time_us"])
    return {pid: lib[pid] / gen[pid] for pid in lib if pid in gen}


def final_gen_lib_counts(best, ratios, min_n=128):
    """(at least 1.0, at least 0.95, GEMMs counted): final_gen_lib's ratios over the run's best
    entries whose n is at least min_n and whose final timed both sides."""
    rs = [ratios[b["problem_id"]] for b in best
          if b["problem_id"] in ratios and label_work(b["label"])[2] >= min_n]
    return sum(r >= 1.0 for r in rs), sum(r >= 0.95 for r in rs), len(rs)


def report(run, res, bw, rate, ngpu, wall, created=None):
    per = {}
    fams = {}  # problem -> family -> best valid time (screen and final alike)
    for r in res:
        d = per.setdefault(r["problem_id"], {"screen": 0, "t0": None, "t1": None})
        if r["phase"] == "screen":
            d["screen"] += 1
        if r.get("valid") and r.get("time_us"):
            f = fams.setdefault(r["problem_id"], {})
            fam = family(r.get("config"))
            f[fam] = min(f.get(fam, float("inf")), r["time_us"])
        t = r.get("created_ms")
        if t is not None:
            d["t0"] = t if d["t0"] is None else min(d["t0"], t)
            d["t1"] = t if d["t1"] is None else max(d["t1"], t)
    # problem metadata from the best table
    print(f"\n{'GEMM (m x n x k)':<28}{'base us':>10}{'tuned us':>10}{'uplift':>8}{'TFLOP/s':>9}"
          f"{'%roof':>7}{'cands':>7}{'tune s':>8}{'first s':>8}")
    firsts = []
    ups, wsum, wup, suspect = [], 0.0, 0.0, []
    small_c, small_s = 0, 0.0
    for b in sorted(run["best"], key=lambda b: b["problem_id"]):
        lab, m, n, k, batch, flops, byts = label_work(b["label"])
        t, bu = b.get("time_us"), b.get("baseline_us")
        if not t or not bu:
            print(f"{lab:<28}{'-':>10}{'-':>10}  {b.get('state')} {b.get('error') or ''}")
            continue
        # the paired final's uplift (median of per-round ratios) where there is one
        up = b.get("uplift") or bu / t
        roof = ""
        if bw and rate:
            # 8-bit tensor cores run at twice the bf16 rate measured
            r = rate * (2 if _ELEM.get(b["label"].split()[0], 2) == 1 else 1)
            floor = max(byts / bw, flops / r)
            roof = f"{100 * floor / (t * 1e-6):6.1f}"
        d = per.get(b["problem_id"], {"screen": 0, "t0": None, "t1": None})
        span = (d["t1"] - d["t0"]) / 1e3 if d["t0"] is not None else 0.0
        if n <= 128:
            small_c += d["screen"]
            small_s += span
        copy_at = ""
        if n <= 16 and bw:
            copy_at = f"   {byts / (t * 1e-6) / 1e9:6.0f} GB/s = {100 * byts / (t * 1e-6) / bw:5.1f} % of copy"

        # the final phase's baseline far from the screen jobs' (baseline_suspect):
        # that uplift is flagged and left out of the geomean below
        sus = b.get("baseline_suspect") is True
        if sus:
            suspect.append(f"{lab} (final baseline {bu:.2f} us, screen jobs {b.get('baseline_screen_us') or 0:.2f})")
        else:
            ups.append(up)
            wsum += b["weight"]
            wup += b["weight"] * up
        # from the run's submission to the GEMM's first result (issue 19: within 15 s)
        first = (d["t0"] - created) / 1e3 if created and d["t0"] is not None else None
        if first is not None:
            firsts.append(first)
        # '#': a launch-bound final, timed as CUDA graphs (launch "graph": the kernels' own times)
        mark = "!" if sus else "#" if b.get("launch") == "graph" else " "
        print(f"{lab:<28}{bu:10.2f}{t:10.2f}{up:8.3f}{mark}{flops / (t * 1e-6) / 1e12:8.1f}{roof:>7}"
              f"{d['screen']:7d}{span:8.2f}{first if first is not None else float('nan'):8.1f}{copy_at}")
    # Library vs generated: the best valid time of each family per GEMM (a
    # family's best may come from the quick screen, the winner's from the
    # precise final re-timing, so compare the family columns to each other).
    # final g/l: the same comparison inside the final's paired rounds alone (lib/gen, '-' when
    # the final timed only one side): the screen's brief timings favour the family with the
    # most configs, the paired rounds do not (server/store_phases.c, final_family_ratio)
    gen_names = sorted({f for d in fams.values() for f in d if f != "cublaslt"})
    if gen_names:
        fgl = final_gen_lib(res)
        print(f"\n{'GEMM (m x n x k)':<28}{'lib us':>10}" + "".join(f"{g + ' us':>11}" for g in gen_names)
              + f"{'gen/lib':>9}{'final g/l':>10}  winner (final)")
        wins = {}
        for b in sorted(run["best"], key=lambda b: b["problem_id"]):
            lab = label_work(b["label"])[0]
            f = fams.get(b["problem_id"], {})
            lib = f.get("cublaslt")
            gbest = min((f[g] for g in gen_names if g in f), default=None)
            win = family(b.get("config")) if b.get("time_us") else "-"
            wins[win] = wins.get(win, 0) + 1
            cols = "".join(f"{f[g]:11.2f}" if g in f else f"{'-':>11}" for g in gen_names)
            ratio = f"{lib / gbest:9.3f}" if lib and gbest else f"{'-':>9}"
            fr = fgl.get(b["problem_id"])
            fcol = f"{fr:10.3f}" if fr else f"{'-':>10}"
            print(f"{lab:<28}{lib if lib else float('nan'):10.2f}{cols}{ratio}{fcol}  {win}")
        print("winners by family: " + ", ".join(f"{k} {v}" for k, v in sorted(wins.items())))
        ge1, ge95, nfin = final_gen_lib_counts(run["best"], fgl)
        print(f"final, generated vs cuBLASLt's best finalist: >= 1.0 on {ge1}, >= 0.95 on {ge95} "
              f"of {nfin} GEMMs with n >= 128")
    ngraph = sum(1 for b in run["best"] if b.get("launch") == "graph")
    if ngraph:
        print(f"\n# {ngraph} GEMM(s) launch-bound: their final timed as CUDA graphs (base and tuned us "
              f"are the kernels' own)")
    if suspect:
        print(f"\n! {len(suspect)} GEMM(s) whose final baseline is more than 1.25x from their screen jobs' "
              f"(left out of the geomean): " + "; ".join(suspect))
    if ups:
        geo = math.exp(sum(math.log(u) for u in ups) / len(ups))
        ncand = sum(d["screen"] for d in per.values())
        print(f"\nGEMMs {len(ups)}: geomean uplift {geo:.4f}, min {min(ups):.4f}, max {max(ups):.4f}, "
              f"FLOP-weighted {wup / wsum:.4f}, workload (calls-weighted) {run.get('weighted_uplift')}")
        print(f"candidates timed {ncand} in {wall:.1f} s wall on {ngpu} GPU(s): "
              f"{ncand / wall / max(ngpu, 1):.1f} candidates/s/GPU (whole run: enumeration, "
              f"validation, screen, final)")
        if firsts:
            print(f"first result per GEMM after submission: median {sorted(firsts)[len(firsts) // 2]:.1f} s, "
                  f"longest {max(firsts):.1f} s")
        if small_s > 0:
            print(f"GEMMs with n <= 128: {small_c} candidates in {small_s:.1f} s of tuning "
                  f"(first to last result per GEMM): {small_c / small_s:.0f} candidates/s/GPU")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
