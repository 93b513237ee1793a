#!/usr/bin/env python3
"""scaling.py: several tuning runs submitted at once to one coordinator, on 1..N GPUs of
one node (issue 20's real scaling).

Starts gemmtuned and one gemmtune-worker per GPU (gt_service.Service), submits every log
given with --log as its own cuda run back to back, and waits for all of them. Printed per
run, on the coordinator's clock (runs.created_ms and results.created_ms, so client and
server agree): GEMMs, candidates timed, the wait from submission to the run's first result
and to its last one. Then the whole set: wall time from the first submission to the last
result, candidates timed per second per GPU, and from the coordinator's database where the
GPUs' time went (each job from lease to done). With --ref JSON (this script's own --json
output of a run on fewer GPUs) it prints the scaling ratio against it:
  (ref wall / wall) / (gpus / ref gpus), 1.0 being linear.

  python3 bench/scaling.py --build BIN --gpus 0 --log A --log B ... --json one.json
  python3 bench/scaling.py --build BIN --gpus all --log A --log B ... --ref one.json
"""
import argparse
import json
import os
import sys
import time

from gt_service import Service, get, post, where_time_went, worker_costs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--log", action="append", required=True, help="workload log (repeatable)")
    ap.add_argument("--gpus", default="all", help="the worker's --device: 'all' (one worker per GPU) or one index")
    ap.add_argument("--backend", default="cuda", help="cuda (default); cpu runs the script without a GPU")
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--shard", type=int, default=50)
    ap.add_argument("--timeout", type=float, default=540)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--ref", help="an earlier --json summary to compute the scaling ratio against")
    a = ap.parse_args()

    want = 1
    if a.gpus == "all" and a.backend == "cuda":
        import torch  # only to count the GPUs the worker will open
        want = max(torch.cuda.device_count(), 1)
    with Service(a.build, os.path.join(a.out, "svc"), backend=a.backend, device=a.gpus) as svc:
        http = svc.url
        ws = svc.wait_workers(want)
        ngpu = len(ws)
        print(f"{ngpu} worker(s): " + ", ".join(f"{w['device_model']} [{w['device_index']}]" for w in ws),
              flush=True)
        runs = []
        t0 = time.time()
        for logf in a.log:
            sub = post(http + "/v1/runs", {
                "log": open(logf).read(), "name": os.path.basename(logf), "backend": a.backend,
                "budget": a.budget, "shard_size": a.shard})
            runs.append({"id": sub["id"], "log": logf, "problems": sub["problems"]})
        print(f"submitted {len(runs)} runs in {time.time() - t0:.1f} s: "
              + ", ".join(f"{r['id']} {os.path.basename(r['log'])} ({r['problems']} GEMMs)" for r in runs),
              flush=True)
        last = 0.0
        while True:
            states = [get(f"{http}/v1/runs/{r['id']}") for r in runs]
            if all(s["state"] != "running" for s in states) or time.time() - t0 > a.timeout:
                break
            if time.time() - last >= 15:
                last = time.time()
                print(f"  {time.time() - t0:6.1f}s  " + "  ".join(
                    f"run {s['id']} {s['candidates']['done']}/{s['candidates']['total']}" for s in states),
                    flush=True)
            time.sleep(0.5)
        timed_out = any(s["state"] == "running" for s in states)
        created0 = None
        total_c, t_last = 0, None
        rows = []
        for r, s in zip(runs, states):
            res = get(f"{http}/v1/runs/{r['id']}/results")["results"]
            stamps = [x["created_ms"] for x in res if x.get("created_ms") is not None]
            screen = sum(1 for x in res if x.get("phase") == "screen")
            created = s.get("created_ms")
            if created is None:
                created = get(f"{http}/v1/runs/{r['id']}/timeline")["created_ms"]
            created0 = created if created0 is None else min(created0, created)
            first = min(stamps) if stamps else None
            lastr = max(stamps) if stamps else None
            if lastr is not None:
                t_last = lastr if t_last is None else max(t_last, lastr)
            total_c += screen
            rows.append({"id": r["id"], "log": os.path.basename(r["log"]), "state": s["state"],
                         "problems": r["problems"], "screen": screen, "results": len(res),
                         "created_ms": created, "first_ms": first, "last_ms": lastr,
                         "uplift": s.get("weighted_uplift")})
        print(f"\n{'run':<5}{'log':<32}{'state':<10}{'GEMMs':>6}{'cands':>7}{'first s':>9}{'last s':>9}")
        for w in rows:
            f = (w["first_ms"] - w["created_ms"]) / 1e3 if w["first_ms"] else float("nan")
            l = (w["last_ms"] - created0) / 1e3 if w["last_ms"] else float("nan")
            print(f"{w['id']:<5}{w['log']:<32}{w['state']:<10}{w['problems']:>6}{w['screen']:>7}{f:9.1f}{l:9.1f}")
        wall = (t_last - created0) / 1e3 if t_last else float("nan")
        rate = total_c / wall / max(ngpu, 1) if t_last else 0.0
        print(f"\n{ngpu} GPU(s): {total_c} candidates timed, wall {wall:.1f} s from the first submission to "
              f"the last result, {rate:.1f} candidates/s/GPU" + ("  (TIMED OUT: runs still running)" if timed_out else ""))
        worst = max(((w["first_ms"] - w["created_ms"]) / 1e3 for w in rows if w["first_ms"]), default=float("nan"))
        print(f"longest wait for a run's first result: {worst:.1f} s")
        summary = {"gpus": ngpu, "workers": ws, "wall_s": wall, "candidates": total_c,
                   "rate_per_gpu": rate, "timed_out": timed_out, "runs": rows, "budget": a.budget}
        summary["jobs"] = where_time_went(os.path.join(a.out, "svc", "gemmtune.db"))
        summary["worker_costs"] = worker_costs(os.path.join(a.out, "svc", "worker.log"))
        # every result of every run, for a later look (the database stays on the machine)
        for w in rows:
            with open(os.path.join(a.out, f"run{w['id']}_results.json"), "w") as f:
                json.dump(get(f"{http}/v1/runs/{w['id']}/results")["results"], f)
        if a.ref and os.path.exists(a.ref):
            ref = json.load(open(a.ref))
            if ref["timed_out"] or timed_out:
                # candidates/s is no measure across sets cut at different points: a large GEMM's
                # candidate costs thousands of times a small one's (scaling.sh projects from the
                # job report instead)
                ratio = None
                print(f"scaling against {ref['gpus']} GPU(s): a set was cut short, no wall-time ratio")
            else:
                ratio = (ref["wall_s"] / wall) / (ngpu / ref["gpus"])
                print(f"scaling against {ref['gpus']} GPU(s): wall {ref['wall_s']:.1f} -> {wall:.1f} s, "
                      f"{ref['wall_s'] / wall:.2f}x on {ngpu / ref['gpus']:.0f}x the GPUs = {ratio:.3f} of linear")
            summary["scaling"] = ratio
        if a.json:
            with open(a.json, "w") as f:
                json.dump(summary, f, indent=1)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
