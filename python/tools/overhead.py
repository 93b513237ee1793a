"""Host overhead of gemmtune.torch.use() per GEMM call, on a CUDA GPU.

    python3 tools/overhead.py [tuned.db]

Times F.linear(x[1, 4096], W[4096, 4096]) in bf16 (the decode shape whose
generated gemv kernel the tests use): PyTorch alone; the gemmtune::linear op
called without a router; routed but not tuned (the export tunes another
GEMM); routed and tuned (the generated kernel via libgemmtune, ctypes), with
a 2-D and a contiguous 3-D input (both asked directly, _router._fast). "host" is the median host time of a call among 200 issued
back to back (fewer than the launch queue holds); "wall" adds the GPU. Without an argument it writes
a one-entry export itself (tests/_models.py: write_generated_export).
"""

import os
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

import gemmtune
import gemmtune.torch as gt

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


def per_call_us(fn, n=200, reps=25):
    """Median host time of a call (n calls in a row, fewer than CUDA's launch
    queue holds, so the host never waits for the GPU), and the GPU-bound
    time per call with a synchronize."""
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    host = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        host.append((time.perf_counter() - t0) / n * 1e6)
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / n * 1e6
    host.sort()
    return host[len(host) // 2], wall


def main():
    from _models import write_generated_export

    dev = torch.cuda.get_device_name()
    tmp = tempfile.mkdtemp()
    desc = gemmtune.GemmDesc(m=4096, n=1, k=4096, a_type="bf16", transa="T")
    tuned = sys.argv[1] if len(sys.argv) > 1 else write_generated_export(os.path.join(tmp, "t.db"), desc, dev)
    other = write_generated_export(
        os.path.join(tmp, "o.db"), gemmtune.GemmDesc(m=8192, n=1, k=4096, a_type="bf16", transa="T"), dev
    )
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    x3 = x.view(1, 1, 4096)
    rows = []
    with torch.no_grad():
        rows.append(("PyTorch F.linear", per_call_us(lambda: F.linear(x, w))))
        rows.append(("gemmtune::linear, no router", per_call_us(lambda: torch.ops.gemmtune.linear(x, w, None))))
        with gt.use(other) as r:
            rows.append(("use(): routed, not tuned", per_call_us(lambda: F.linear(x, w))))
            assert r.stats().get("not_tuned"), r.stats()
        with gt.use(tuned) as r:
            rows.append(("use(): routed, tuned (gemv kernel)", per_call_us(lambda: F.linear(x, w))))
            rows.append(("use(): tuned, 3-D input (reshape shortcut)", per_call_us(lambda: F.linear(x3, w))))
            assert r.stats().get("tuned_run"), r.stats()
    print(f"{dev}, torch {torch.__version__}, libgemmtune {gemmtune.library_path()}")
    print(f"{'path':40s} {'host us/call':>13s} {'wall us/call':>13s}")
    for name, (host, wall) in rows:
        print(f"{name:40s} {host:13.2f} {wall:13.2f}")


if __name__ == "__main__":
    main()
