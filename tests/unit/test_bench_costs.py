#!/usr/bin/env python3
"""bench/gt_service.py's screen_by_gemm: a GEMM's screen costs from the workers' 'job N
cost' lines joined to the jobs' problems, and its fully timed screen results binned
against the GEMM's best screen time (pruned, invalid and final results left out of the
bins). A coordinator database of the columns it reads, and a worker log of the lines
worker/runner.c writes."""

import os
import sqlite3
import tempfile

from _bench_check import check, done  # bench/ on the import path first

import gt_service  # noqa: E402


with tempfile.TemporaryDirectory() as d:
    db, log = os.path.join(d, "c.db"), os.path.join(d, "worker.log")
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE problems (id INTEGER PRIMARY KEY, label TEXT);
        CREATE TABLE jobs (id INTEGER PRIMARY KEY, problem_id INTEGER, kind TEXT);
        CREATE TABLE baselines (problem_id INTEGER, time_us REAL);
        CREATE TABLE results (problem_id INTEGER, phase TEXT, time_us REAL, valid INTEGER, reason TEXT);
        INSERT INTO problems VALUES (1, 'bf16 TN 4096x1x4096'), (2, 'bf16 TN 128256x8192x4096');
        INSERT INTO jobs VALUES (10, 1, 'screen'), (11, 1, 'screen'), (12, 2, 'screen'), (13, 2, 'final');
        INSERT INTO baselines VALUES (1, 15.5), (1, 15.7), (2, 10400);
        -- GEMM 1: best 10; 10.1 (<=1.02), 10.4 (<=1.05), 12 (<=1.25), 20 (>1.5); a pruned
        -- one, an invalid one and a final result stay out of the bins
        INSERT INTO results VALUES (1, 'screen', 10.0, 1, NULL), (1, 'screen', 10.1, 1, NULL),
            (1, 'screen', 10.4, 1, NULL), (1, 'screen', 12.0, 1, NULL), (1, 'screen', 20.0, 1, NULL),
            (1, 'screen', 16.0, 1, 'pruned: 16 us in calibration'), (1, 'screen', NULL, 0, 'wrong result'),
            (1, 'final', 9.0, 1, NULL);
        INSERT INTO results VALUES (2, 'screen', 10000, 1, NULL), (2, 'screen', 10900, 1, NULL);
    """)
    con.commit()
    con.close()
    with open(log, "w") as f:
        for j, kind, build, chk, tm, pruned in ((10, "screen", 5, 300, 200, 1), (11, "screen", 0, 100, 50, 0),
                                                (12, "screen", 0, 7000, 9000, 3), (13, "final", 0, 10, 5000, 0)):
            f.write(f'ts=x level=info prog=gemmtune-bench pid=1 msg="job {j} cost: {kind}, 4 built, wall 9 ms: '
                    f'prepare 1, build {build}, check {chk}, time {tm}, other 0 ms; {pruned} pruned"\n')
        f.write('ts=x level=info msg="job 99 cost: screen, 1 built, wall 1 ms: prepare 0, build 0, check 1, time 1, '
                'other 0 ms; 0 pruned"\n')  # a job the database does not hold: left out
    g = gt_service.screen_by_gemm(db, log)
    a, b = g.get("bf16 TN 4096x1x4096", {}), g.get("bf16 TN 128256x8192x4096", {})
    check("both GEMMs reported", set(g) == {"bf16 TN 4096x1x4096", "bf16 TN 128256x8192x4096"})
    check("default time: the fastest baseline", a.get("base_us") == 15.5 and b.get("base_us") == 10400)
    check("screen results counted, the final's left out", a.get("results") == 7 and a.get("valid") == 6)
    check("best: the fastest valid screen time", a.get("best") == 10.0)
    check("bins of the fully timed results", a.get("timed_fully") == [2, 1, 0, 1, 0, 1])
    check("costs: both screen jobs summed, in seconds",
          abs(a["check"] - 0.4) < 1e-9 and abs(a["time"] - 0.25) < 1e-9 and abs(a["build"] - 0.005) < 1e-9)
    check("pruned counts from the cost lines", a.get("pruned") == 1 and b.get("pruned") == 3)
    check("the final job's cost is not the screen's", abs(b["time"] - 9.0) < 1e-9 and b.get("jobs") == 1)
    check("a GEMM's bins: 10900 / 10000 is within 10 %", b.get("timed_fully") == [1, 0, 1, 0, 0, 0])
    check("a missing database: an empty answer", gt_service.screen_by_gemm(os.path.join(d, "none.db"), log) == {})

done()
