#!/usr/bin/env python3
"""The gemv family's two fp8 paths side by side, in one process per GEMM.

    python3 bench/f8_ab.py --bin BUILD/bin EXPORT.db [--rounds R]

For every fp8 GEMM of an exported database (e.g. bench/llama3_8b_fp8_decode.log
tuned through the service), takes the fastest valid gemv config with lanes
"quad" that the run measured, and times it with `gt-cuda-one --paired R` next
to cuBLASLt's default ("lib", the first entry: the uplifts are against it)
and to the same config with "f8":"cvt" (every element decoded to f16 for the
16-bit mma, the family's kernel before the raw-byte m16n8k32 mma), and the
run's winner when it is another config. Prints per GEMM each entry's median
time over the paired rounds, its uplift over the default and the bytes it
moves (A and B once, D written) per second.
"""
import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys


def quad_best(db, pid):
    best = None
    for cfg, t in db.execute(
            "SELECT config, time_us FROM results WHERE problem_id = ? AND valid = 1"
            " AND time_us > 0 ORDER BY time_us", (pid,)):
        c = json.loads(cfg)
        if c.get("family") == "gemv" and c.get("lanes", "quad") == "quad" and "f8" not in c:
            best = c
            break
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args()
    db = sqlite3.connect(a.db)
    one = os.path.join(a.bin, "gt-cuda-one")
    rows = db.execute(
        "SELECT p.id, p.label, p.m, p.n, p.k, p.a_type, b.config FROM problems p"
        " JOIN best b ON b.problem_id = p.id WHERE p.a_type LIKE 'f8%' ORDER BY p.n, p.m, p.k").fetchall()
    if not rows:
        print("no fp8 GEMM in", a.db)
        return 1
    bad = 0
    for pid, label, m, n, k, at, win in rows:
        q = quad_best(db, pid)
        if not q:
            print(f"{label}: no valid lanes=quad gemv result")
            continue
        cvt = dict(q, f8="cvt")
        cfgs = ["lib", json.dumps(q, separators=(",", ":")), json.dumps(cvt, separators=(",", ":"))]
        names = ["cuBLASLt default", "gemv f8 mma", "gemv f8 cvt"]
        wj = json.loads(win)
        if wj != q and wj.get("family") != "cublaslt" and "family" in wj:
            cfgs.append(json.dumps(wj, separators=(",", ":")))
            names.append("run's winner")
        elif "family" not in wj or wj.get("family") == "cublaslt":
            cfgs.append(win)
            names.append("run's winner (cuBLASLt)")
        cmd = [one, "--type", "e4m3", "--paired", str(a.rounds), str(m), str(n), str(k)] + cfgs
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        lines = [l for l in r.stdout.splitlines() if re.match(r"\s*[0-9.]+ us median over", l)]
        nbytes = m * k + k * n + 2 * m * n
        print(f"== {label}  ({nbytes / 1e6:.1f} MB moved)")
        if r.returncode != 0 or len(lines) != len(cfgs):
            bad += 1
            print(f"   gt-cuda-one rc {r.returncode}\n{r.stdout[-1500:]}\n{r.stderr[-1500:]}")
            continue
        for name, l in zip(names, lines):
            us = float(l.split()[0])
            up = re.search(r"uplift ([0-9.]+) \[([0-9.]+), ([0-9.]+)\]", l)
            print(f"   {name:26s} {us:9.2f} us  uplift {up.group(1)} [{up.group(2)}, {up.group(3)}]"
                  f"  {nbytes / (us * 1e-6) / 1e12:5.2f} TB/s")
        print(f"   config: {cfgs[1]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
