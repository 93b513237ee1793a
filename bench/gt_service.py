"""gt_service.py: gemmtuned and gemmtune-worker on loopback, as a user runs them: the one
place the benchmark scripts (cuda_service.py, e2e_llama.py, scaling.py, preload_proof.py) start
the service from or talk to its API with (get, post).

    with Service(build, folder, backend="cuda", device="all") as svc:
        svc.wait_workers(n)
        ... svc.url (the HTTP API) ...

The coordinator's database, port file and logs live in folder (emptied of an earlier
service's database first); the workers run in their own session so that SIGTERM reaches
each process --device all started."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import time
import urllib.request


def get(url, timeout=60):
    """The JSON answer of a GET."""
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def post(url, body, timeout=120):
    """The JSON answer of a POST of body as JSON."""
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def where_time_went(db):
    """Each GPU's jobs from the coordinator's database (read-only, WAL): lease to last
    update per job, so the gap to linear can be read off: how busy each worker was, what
    the job kinds cost, the longest jobs, and each worker's idle tail at the end."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        rows = _job_rows(con)
        con.close()
    except sqlite3.Error as e:
        print(f"where the time went: {db}: {e}")
        return {}
    return _job_report(rows)


def _job_rows(con):
    return con.execute(
        "SELECT j.id, j.kind, j.run_id, p.label, l.worker_id, l.leased_ms, j.updated_ms, j.ncandidates,"
        " j.state, w.device_index FROM jobs j JOIN problems p ON p.id = j.problem_id"
        " JOIN job_leases l ON l.job_id = j.id JOIN workers w ON w.id = l.worker_id"
        " WHERE j.state = 'done' ORDER BY l.leased_ms").fetchall()


def _job_report(rows):
    if not rows:
        return {}
    t0 = min(r[5] for r in rows)
    t1 = max(r[6] for r in rows)
    wall = (t1 - t0) / 1e3
    per_w, per_k, jobs = {}, {}, []
    for jid, kind, run, label, wid, a, b, ncand, state, dev in rows:
        d = (b - a) / 1e3
        w = per_w.setdefault(dev, {"busy": 0.0, "jobs": 0, "first": a, "last": b})
        w["busy"] += d
        w["jobs"] += 1
        w["first"], w["last"] = min(w["first"], a), max(w["last"], b)
        k = per_k.setdefault(kind, {"n": 0, "s": 0.0, "max": 0.0})
        k["n"] += 1
        k["s"] += d
        k["max"] = max(k["max"], d)
        jobs.append((d, kind, run, label, dev, (a - t0) / 1e3))
        w.setdefault("spans", []).append((a, b))
    # idle between a GPU's jobs: the round trips (report, lease) are short; a gap of
    # 300 ms or more is a worker that found no job and slept before asking again
    for w in per_w.values():
        sp = sorted(w["spans"])
        gaps = [max(0, sp[i][0] - sp[i - 1][1]) / 1e3 for i in range(1, len(sp))]
        w["gaps"] = gaps
    total = sum(w["busy"] for w in per_w.values())
    print(f"\nwhere the time went (jobs from lease to done, coordinator clock; wall {wall:.1f} s):")
    for dev in sorted(per_w):
        w = per_w[dev]
        print(f"  GPU {dev}: {w['jobs']} jobs, busy {w['busy']:.1f} s = {100 * w['busy'] / wall:.0f} % of the wall, "
              f"first lease at {(w['first'] - t0) / 1e3:.1f} s, last job done {(t1 - w['last']) / 1e3:.1f} s before the end")
        g = sorted(w["gaps"])
        if g:
            long_ = [x for x in g if x >= 0.3]
            print(f"         idle between jobs {sum(g):.1f} s: {len(g)} gaps, median {1e3 * g[len(g) // 2]:.0f} ms, "
                  f"{len(long_)} of 300 ms or more ({sum(long_):.1f} s)")
    for kind in ("enumerate", "screen", "final"):
        if kind in per_k:
            k = per_k[kind]
            print(f"  {kind:9s}: {k['n']} jobs, {k['s']:.1f} GPU-s ({100 * k['s'] / total:.0f} %), "
                  f"mean {k['s'] / k['n']:.2f} s, longest {k['max']:.1f} s")
    n = len(per_w)
    print(f"  work {total:.1f} GPU-s: on {n} GPU(s) that is {total / n:.1f} s if spread evenly, against "
          f"{wall:.1f} s measured ({100 * total / n / wall:.0f} % busy)")
    print("  longest jobs:")
    for d, kind, run, label, dev, at in sorted(jobs, reverse=True)[:12]:
        print(f"    {d:7.1f} s  {kind:9s} run {run}  {label:28s} GPU {dev}  leased at {at:.1f} s")
    return {"wall_s": wall, "work_gpu_s": total, "per_gpu": {str(k): v["busy"] for k, v in per_w.items()},
            "idle_s": {str(k): sum(v["gaps"]) for k, v in per_w.items()},
            "kinds": per_k}


_COST = re.compile(r"job (\d+) cost: (\w+), (\d+) built, wall (\d+) ms: prepare (\d+), build (\d+), "
                   r"check (\d+), time (\d+), other (-?\d+) ms; (\d+) pruned")


def worker_costs(logpath):
    """What the worker's jobs spent their time on, summed per job kind from the 'job N cost:'
    lines gemmtune-worker logs (worker/runner.c): prepare (inputs, reference), build (compile
    and load), check (the validation run against the reference), time (the timed calls and
    the final's paired rounds), other; and the candidates the screen's early exit stopped."""
    kinds = {}
    try:
        text = open(logpath, errors="replace").read()
    except OSError:
        return {}
    for m in _COST.finditer(text):
        kind = m.group(2)
        k = kinds.setdefault(kind, {"jobs": 0, "built": 0, "wall": 0, "prepare": 0, "build": 0, "check": 0,
                                    "time": 0, "other": 0, "pruned": 0})
        k["jobs"] += 1
        for i, name in ((3, "built"), (4, "wall"), (5, "prepare"), (6, "build"), (7, "check"), (8, "time"),
                        (9, "other"), (10, "pruned")):
            k[name] += int(m.group(i))
    if kinds:
        print("\nwhere the workers' time went (their 'job N cost' lines, seconds):")
        print(f"  {'kind':<10}{'jobs':>5}{'built':>7}{'wall':>8}{'prepare':>9}{'build':>8}{'check':>8}{'time':>8}"
              f"{'other':>8}{'pruned':>8}")
        for kind, k in sorted(kinds.items()):
            print(f"  {kind:<10}{k['jobs']:5d}{k['built']:7d}" + "".join(
                f"{k[n] / 1e3:8.1f}" for n in ("wall", "prepare", "build", "check", "time", "other"))
                + f"{k['pruned']:8d}")
    return kinds


# a screen result's time against its GEMM's best screen time: the bins screen_by_gemm counts
SCREEN_BINS = (1.02, 1.05, 1.10, 1.25, 1.5)


def screen_by_gemm(db, logpath, show=True):
    """Per GEMM, largest default time first: its screen jobs' costs (the worker's 'job N
    cost' lines joined to the jobs' problems: build, check, time, pruned, in seconds) and
    how its fully timed screen results sit against the GEMM's best valid screen time (the
    counts within 2, 5, 10, 25, 50 % and beyond): what a tighter early exit would have
    spared, and what the validation runs cost (one full call per candidate). Returns
    {label: {...}}."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        job_label = dict(con.execute("SELECT j.id, p.label FROM jobs j JOIN problems p ON p.id = j.problem_id"))
        base = dict(con.execute("SELECT p.label, MIN(b.time_us) FROM baselines b JOIN problems p"
                                " ON p.id = b.problem_id GROUP BY p.id"))
        rows = con.execute("SELECT p.label, r.time_us, r.valid, r.reason FROM results r JOIN problems p"
                           " ON p.id = r.problem_id WHERE r.phase = 'screen'").fetchall()
        con.close()
        text = open(logpath, errors="replace").read()
    except (sqlite3.Error, OSError) as e:
        print(f"screen by GEMM: {e}")
        return {}
    out = {}
    for label, t, valid, reason in rows:
        g = out.setdefault(label, {"base_us": base.get(label) or 0.0, "results": 0, "valid": 0, "times": [],
                                   "build": 0.0, "check": 0.0, "time": 0.0, "pruned": 0, "jobs": 0})
        g["results"] += 1
        if valid and t and t > 0:
            g["valid"] += 1
            if not (reason or "").startswith("pruned"):
                g["times"].append(t)
            g.setdefault("best", t)
            g["best"] = min(g["best"], t)
    for m in _COST.finditer(text):
        if m.group(2) != "screen":
            continue
        g = out.get(job_label.get(int(m.group(1))))
        if g is None:
            continue
        g["jobs"] += 1
        g["build"] += int(m.group(6)) / 1e3
        g["check"] += int(m.group(7)) / 1e3
        g["time"] += int(m.group(8)) / 1e3
        g["pruned"] += int(m.group(10))
    for g in out.values():
        bins = [0] * (len(SCREEN_BINS) + 1)
        for t in g.pop("times"):
            x = t / g["best"]
            bins[next((i for i, b in enumerate(SCREEN_BINS) if x <= b), len(SCREEN_BINS))] += 1
        g["timed_fully"] = bins
    if show and out:
        print("\nthe screen per GEMM (seconds from the workers' cost lines; fully timed results against the "
              "GEMM's best screen time):")
        heads = "".join(f"{'<=' + format(b, 'g'):>7}" for b in SCREEN_BINS) + f"{'>' + format(SCREEN_BINS[-1], 'g'):>7}"
        print(f"  {'GEMM':<28}{'base us':>10}{'check':>7}{'time':>7}{'build':>7}{'pruned':>7}{'valid':>6} |{heads}")
        for label, g in sorted(out.items(), key=lambda kv: -kv[1]["base_us"]):
            print(f"  {label:<28}{g['base_us']:10.1f}{g['check']:7.1f}{g['time']:7.1f}{g['build']:7.1f}"
                  f"{g['pruned']:7d}{g['valid']:6d} |" + "".join(f"{c:7d}" for c in g["timed_fully"]))
    return out



class Service:
    def __init__(self, build, folder, backend="cuda", device="0", batch=32, lease_timeout=120):
        self.build = build
        self.folder = folder
        self.backend = backend
        self.device = str(device)
        self.batch = batch
        self.lease_timeout = lease_timeout
        self.procs = []
        self.url = None

    def __enter__(self):
        os.makedirs(self.folder, exist_ok=True)
        portfile = os.path.join(self.folder, "ports")
        db = os.path.join(self.folder, "gemmtune.db")
        for p in (portfile, db, db + "-wal", db + "-shm"):
            if os.path.exists(p):
                os.unlink(p)
        dlog = open(os.path.join(self.folder, "gemmtuned.log"), "w")
        self.wlog = open(os.path.join(self.folder, "worker.log"), "w")
        self.procs.append(subprocess.Popen(
            [os.path.join(self.build, "gemmtuned"), "--db", db, "--http", "127.0.0.1:0", "--listen",
             "tcp://127.0.0.1:0", "--port-file", portfile, "--lease-timeout", str(self.lease_timeout)],
            stderr=dlog))
        try:
            for _ in range(200):
                if os.path.exists(portfile) and os.path.getsize(portfile):
                    break
                if self.procs[0].poll() is not None:
                    raise SystemExit(f"gemmtuned exited {self.procs[0].returncode}: see {dlog.name}")
                time.sleep(0.05)
            ports = dict(l.split("=", 1) for l in open(portfile).read().split())
            self.url = f"http://127.0.0.1:{ports['http']}"
            self.procs.append(subprocess.Popen(
                [os.path.join(self.build, "gemmtune-worker"), "--server", ports["worker"], "--backend",
                 self.backend, "--device", self.device, "--batch", str(self.batch)],
                stderr=self.wlog, start_new_session=True))
        except BaseException:
            self.__exit__()
            raise
        return self

    def workers(self):
        with urllib.request.urlopen(self.url + "/v1/workers", timeout=60) as r:
            return json.loads(r.read())["workers"]

    def wait_workers(self, n, timeout_s=60):
        """The registered workers once n have registered (or what registered by timeout_s)."""
        t0 = time.time()
        ws = self.workers()
        while len(ws) < n and time.time() - t0 < timeout_s:
            time.sleep(0.1)
            ws = self.workers()
        return ws

    def __exit__(self, *exc):
        for p in reversed(self.procs):
            try:
                if p is self.procs[0]:
                    p.terminate()
                else:
                    os.killpg(p.pid, signal.SIGTERM)
            except Exception:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except Exception:
                p.kill()
