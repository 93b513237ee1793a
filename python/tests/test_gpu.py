"""On a CUDA GPU: the recorded GEMMs are exactly what cuBLASLt sees (the
LD_PRELOAD shim's own record of the same program), and use() runs a tuned
generated kernel and a tuned cuBLASLt config (its plan) through libgemmtune
with PyTorch's answer. Skipped without a GPU."""

import os
import subprocess
import sys
import threading

import pytest
import torch

import gemmtune
import gemmtune.torch as gt

from _models import run_small, write_generated_export

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

HERE = os.path.dirname(os.path.abspath(__file__))

# The program both recorders watch: Small in bf16, a one-token Linear with
# bias, the edges of addmm's cuBLASLt path (each its own m), and (sm_89+) an
# fp8 _scaled_mm.
PROGRAM = r"""
import sys, torch
sys.path.insert(0, %(here)r)
from _models import run_small
def c(*s, dt=torch.bfloat16):
    return torch.randn(*s, device="cuda", dtype=dt)
def program():
    run_small("cuda", times=2, dtype=torch.bfloat16)
    lin = torch.nn.Linear(256, 512, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        for _ in range(3):
            lin(torch.randn(1, 256, device="cuda", dtype=torch.bfloat16))
        torch.addmm(c(112), c(1, 64), c(112, 64).t())              # one row, 1-D bias
        torch.addmm(c(1), c(8, 72), c(1, 72).t())                  # one output column
        torch.addmm(c(1, 120), c(8, 64), c(120, 64).t())           # a [1, N] bias
        torch.addmm(c(128), c(8, 1), c(128, 1).t())                # K = 1
        torch.addmm(c(136), c(8, 64), c(136, 64).t(), beta=0.5)
        torch.addmm(c(8, 144), c(8, 64), c(144, 64).t())           # 2-D C
        torch.addmm(c(152), c(8, 64), c(152, 64).t(), alpha=2.0)
        torch.addmm(c(168, dt=torch.float32), c(1, 64, dt=torch.float32), c(168, 64, dt=torch.float32).t())
        torch.nn.functional.linear(c(1, 1, 64), c(176, 64), c(176))
        torch.mm(c(1, 64), c(184, 64).t())
        torch.bmm(c(1, 8, 64), c(1, 64, 192))
    if torch.cuda.get_device_capability() >= (8, 9):
        a = torch.randn(32, 64, device="cuda").to(torch.float8_e4m3fn)
        w = torch.randn(48, 64, device="cuda").to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda")
        torch._scaled_mm(a, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    torch.cuda.synchronize()
"""


def _preload():
    p = os.environ.get("GEMMTUNE_PRELOAD")
    if p:
        return p
    lib = os.path.realpath(gemmtune.library_path())
    cand = os.path.join(os.path.dirname(lib), "libgemmtune-preload.so")
    return cand if os.path.exists(cand) else None


def test_record_equals_what_cublaslt_sees(tmp_path):
    shim = _preload()
    if shim is None:
        pytest.skip("no libgemmtune-preload.so (a CUDA build's, or GEMMTUNE_PRELOAD)")
    ns = {}
    exec(PROGRAM % {"here": HERE}, ns)
    torch.backends.cuda.preferred_blas_library("cublaslt")
    try:
        with gt.record() as rec:
            ns["program"]()
    finally:
        torch.backends.cuda.preferred_blas_library("default")
    ours = sorted(rec.lines())
    shim_log = tmp_path / "shim.log"
    code = PROGRAM % {"here": HERE} + "\ntorch.backends.cuda.preferred_blas_library('cublaslt')\nprogram()\n"
    env = dict(os.environ, LD_PRELOAD=shim, GEMMTUNE_RECORD=str(shim_log), GEMMTUNE_VERBOSE="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    theirs = sorted(shim_log.read_text().splitlines(keepends=True))
    assert ours == theirs, f"ours:\n{''.join(ours)}\ncuBLASLt (shim):\n{''.join(theirs)}\n{r.stderr}"


def test_record_on_cuda_equals_meta():
    with gt.record() as a:
        run_small("cuda", dtype=torch.bfloat16)
    with gt.record() as b:
        run_small("meta", dtype=torch.bfloat16)
    assert a.lines() == b.lines()


@pytest.fixture
def gemv_db(tmp_path):
    """An export whose winner for bf16 TN 4096 x 1 x 4096 on this GPU is a generated gemv kernel."""
    desc = gemmtune.GemmDesc(m=4096, n=1, k=4096, a_type="bf16", transa="T")
    model = torch.cuda.get_device_name()
    return write_generated_export(str(tmp_path / "gemv.db"), desc, model), desc, model


def _close(got, want):
    err = (got.float() - want.float()).norm() / want.float().norm()
    assert err < 1e-2, err


def test_use_runs_the_generated_kernel(gemv_db):
    path, desc, model = gemv_db
    torch.manual_seed(0)
    lin = torch.nn.Linear(4096, 4096, bias=False, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    x3 = torch.randn(1, 1, 4096, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        want, want3 = lin(x), lin(x3)
        with gemmtune.Database(path) as db:
            assert db.kernel(desc, model).family == "gemv"
        with gt.use(path) as r:
            got = lin(x)
            got3 = lin(x3)
            other = lin(torch.randn(2, 4096, device="cuda", dtype=torch.bfloat16))  # n = 2: not tuned
            torch.cuda.synchronize()
            st = r.stats()
    _close(got, want)
    _close(got3, want3)
    assert other.shape == (2, 4096)
    assert st["tuned_run"] == 2 and st["not_tuned"] == 1, st


@pytest.mark.parametrize("native", [False, True], ids=["python", "native"])
def test_compiled_model_runs_the_generated_kernel(gemv_db, native, request):
    if native:
        request.getfixturevalue("torch_ext")
    path, _, _ = gemv_db
    lin = torch.nn.Linear(4096, 4096, bias=False, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        want = lin(x)
        with gt.use(path, native=native) as r:
            torch._dynamo.reset()
            f = torch.compile(lambda t: lin(t) * 2, backend="inductor", fullgraph=True)
            got = f(x)
            got = f(x)
            torch.cuda.synchronize()
            st = r.stats()
    _close(got, want * 2)
    assert st["tuned_run"] == 2, st


def test_misaligned_falls_back(gemv_db):
    path, desc, model = gemv_db
    lin = torch.nn.Linear(4096, 4096, bias=False, device="cuda", dtype=torch.bfloat16)
    buf = torch.randn(4097, device="cuda", dtype=torch.bfloat16)
    x = buf[1:].view(1, 4096)  # 2 bytes off: the kernel's vector loads would be misaligned
    with torch.no_grad():
        want = lin(x)
        with gt.use(path) as r:
            got = lin(x)
            st = r.stats()
    assert torch.equal(got, want) and st == {"gemms": 1, "fallback_misaligned": 1}, st


# An H100 cuBLASLt winner of bf16 TN 6144x1x4096 (tests/unit/test_lib_kernels.c)
LT_CFG = ('{"algo_id":66,"cluster":2,"custom":0,"inner_shape":0,"reduction":0,"splitk":1,"stages":35,'
          '"swizzle":0,"tile":20}')


def test_cublaslt_winner_runs_tuned(gemv_db, tmp_path):
    """A tuned cuBLASLt config runs through libgemmtune's plan (gt_db_plan_run)
    on the current stream, twice and on a side stream, and matches PyTorch."""
    _, desc, model = gemv_db
    torch.manual_seed(0)
    lt = write_generated_export(str(tmp_path / "lt.db"), desc, model, config=LT_CFG)
    lin = torch.nn.Linear(4096, 4096, bias=False, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    s = torch.cuda.Stream()
    with torch.no_grad():
        want = lin(x)
        with gt.use(lt) as r:
            got = lin(x)
            got2 = lin(x)
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                got3 = lin(x)
            torch.cuda.synchronize()
            st = r.stats()
    assert st == {"gemms": 3, "tuned_run": 3}, st
    for g in (got, got2, got3):
        _close(g, want)


def test_threads_and_streams(gemv_db):
    path, _, _ = gemv_db
    torch.manual_seed(0)
    lin = torch.nn.Linear(4096, 4096, bias=False, device="cuda", dtype=torch.bfloat16)
    xs = [torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
    with torch.no_grad():
        wants = [lin(x) for x in xs]
    results, errors = {}, []
    with gt.use(path) as r:

        def work(i):
            try:
                s = torch.cuda.Stream()
                with torch.no_grad(), r.thread(), torch.cuda.stream(s):  # the mode is per thread
                    for _ in range(20):
                        results[i] = lin(xs[i])
                    s.synchronize()
            except Exception as e:  # reported below
                errors.append(e)

        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert errors == []
    for i in range(4):
        _close(results[i], wants[i])
    assert r.stats()["tuned_run"] == 80


# ---- the native path (python/csrc, the aten overrides) -----------------------
# Each test says which path it ran (use(native=...)) and compares the native
# path's results with the Python router's tuned results and with PyTorch's.


def _same(got, want, what):
    if not torch.equal(got, want):
        diff = (got.float() - want.float()).abs().max().item()
        raise AssertionError(f"{what}: native and Python tuned paths differ (max abs diff {diff}, shapes "
                             f"{tuple(got.shape)} vs {tuple(want.shape)})")


@pytest.fixture(params=["generated", "cublaslt"])
def tuned_db(request, gemv_db, tmp_path):
    path, desc, model = gemv_db
    if request.param == "cublaslt":
        path = write_generated_export(str(tmp_path / "lt.db"), desc, model, config=LT_CFG)
    return request.param, path


def _routed(path, native, fn, n=2):
    with torch.no_grad(), gt.use(path, native=native) as r:
        assert (r.router.native is not None) == native, gt.native_status()
        assert gt.native_status()["installed"] == native, gt.native_status()
        outs = [fn() for _ in range(n)]
        torch.cuda.synchronize()
        st = r.stats()
    return outs, st


def test_native_equals_the_python_tuned_path(tuned_db, torch_ext):
    kind, path = tuned_db
    torch.manual_seed(0)
    lin = torch.nn.Linear(4096, 4096, bias=False, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    x3 = torch.randn(1, 1, 4096, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        want = lin(x)
    py, st_py = _routed(path, False, lambda: (lin(x), lin(x3), x @ lin.weight.t()))
    nat, st_nat = _routed(path, True, lambda: (lin(x), lin(x3), x @ lin.weight.t()))
    assert st_py == {"gemms": 6, "tuned_run": 6}, f"{kind}: Python path stats {st_py}"
    assert st_nat == {"gemms": 6, "tuned_run": 6}, f"{kind}: native path stats {st_nat}"
    for i, (p, q) in enumerate(zip(py, nat)):
        for j, (a, b) in enumerate(zip(p, q)):
            _same(b, a, f"{kind} call {i} form {j}")
    _close(nat[0][0], want)


def test_native_untuned_and_misaligned_fall_back(gemv_db, torch_ext):
    path, _, _ = gemv_db
    lin = torch.nn.Linear(4096, 4096, bias=False, device="cuda", dtype=torch.bfloat16)
    buf = torch.randn(4097, device="cuda", dtype=torch.bfloat16)
    x = buf[1:].view(1, 4096)  # 2 bytes off
    x2 = torch.randn(2, 4096, device="cuda", dtype=torch.bfloat16)  # n = 2: not tuned
    with torch.no_grad():
        want, want2 = lin(x), lin(x2)
    (outs,), st = _routed(path, True, lambda: (lin(x), lin(x2)), n=1)
    assert torch.equal(outs[0], want) and torch.equal(outs[1], want2), "fallbacks must be PyTorch's own result"
    assert st == {"gemms": 2, "fallback_misaligned": 1, "not_tuned": 1}, st


def test_native_under_cuda_graph_capture(tuned_db, torch_ext):
    """Warm up, capture, replay with new input: the tuned GEMM runs inside
    the graph (workspace from the caching allocator, no sync)."""
    kind, path = tuned_db
    torch.manual_seed(0)
    lin = torch.nn.Linear(4096, 4096, bias=False, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad(), gt.use(path, native=True) as r:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            lin(x)  # warm-up: plan, workspace of this stream
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = lin(x)
        st = r.stats()
        outs = []
        for seed in (1, 2):
            torch.manual_seed(seed)
            x.copy_(torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16))
            g.replay()
            torch.cuda.synchronize()
            outs.append((y.clone(), x.clone()))
    assert st == {"gemms": 2, "tuned_run": 2}, f"{kind}: stats after capture {st}"
    with torch.no_grad():
        for i, (got, xi) in enumerate(outs):
            want = lin(xi)
            err = (got.float() - want.float()).norm() / want.float().norm()
            assert err < 1e-2, f"{kind}: replay {i}: relative error {err} against PyTorch"


@pytest.mark.parametrize("native", [False, True], ids=["python", "native"])
def test_chained_launch_equals_plain(gemv_db, native, request):
    """use(launch="chained"): two tuned gemvs back to back, the second reading
    the first's output (its B), eager and inside a captured graph, give what
    the plain launches give: the chained kernel waits for the one before it
    before it reads B."""
    if native:
        request.getfixturevalue("torch_ext")
    path, _, _ = gemv_db
    torch.manual_seed(0)
    lin = torch.nn.Linear(4096, 4096, bias=False, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    got = {}
    for launch in ("plain", "chained"):
        with torch.no_grad(), gt.use(path, native=native, launch=launch) as r:
            eager = lin(lin(x))
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                lin(lin(x))
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                y = lin(lin(x))
            g.replay()
            torch.cuda.synchronize()
            st = r.stats()
        assert st.get("tuned_run") == st.get("gemms") == 6, f"{launch}: {st}"
        got[launch] = (eager, y.clone())
    for i in range(2):
        _same(got["chained"][i], got["plain"][i], f"chained vs plain, {('eager', 'graph')[i]}")


def test_native_two_threads(tuned_db, torch_ext):
    kind, path = tuned_db
    torch.manual_seed(0)
    lin = torch.nn.Linear(4096, 4096, bias=False, device="cuda", dtype=torch.bfloat16)
    xs = [torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    with torch.no_grad():
        wants = [lin(x) for x in xs]
    results, errors = {}, []
    with gt.use(path, native=True) as r:
        assert r.router.native is not None

        def work(i):
            try:
                s = torch.cuda.Stream()
                with torch.no_grad(), r.thread(), torch.cuda.stream(s):
                    for _ in range(50):
                        results[i] = lin(xs[i])
                    s.synchronize()
            except Exception as e:  # reported below
                errors.append(f"thread {i}: {type(e).__name__}: {e}")

        ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        st = r.stats()
    assert errors == [], errors
    for i in range(2):
        err = (results[i].float() - wants[i].float()).norm() / wants[i].float().norm()
        assert err < 1e-2, f"{kind}: thread {i}: relative error {err}"
    assert st == {"gemms": 100, "tuned_run": 100}, f"{kind}: {st}"


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
@pytest.mark.parametrize("native", [False, True], ids=["python", "native"])
def test_second_device(tuned_db, native, request):
    """Per-device modules and plans: the same tuned entry on cuda:0 and cuda:1, each
    device's answer PyTorch's, eagerly, on a side stream of cuda:1, captured in a CUDA
    graph on cuda:1 and replayed, and under torch.compile on cuda:1."""
    if native:
        request.getfixturevalue("torch_ext")
    kind, path = tuned_db
    outs, wants, mods = {}, {}, {}
    torch._dynamo.reset()
    with torch.no_grad():
        for dev in ("cuda:0", "cuda:1"):
            torch.manual_seed(0)
            mods[dev] = (torch.nn.Linear(4096, 4096, bias=False, device=dev, dtype=torch.bfloat16),
                         torch.randn(1, 4096, device=dev, dtype=torch.bfloat16))
            wants[dev] = mods[dev][0](mods[dev][1])  # PyTorch's own answer, before use()
    with torch.no_grad(), gt.use(path, native=native) as r:
        assert (r.router.native is not None) == native, gt.native_status()
        for dev in ("cuda:0", "cuda:1"):
            lin, x = mods[dev]
            outs[dev] = [lin(x)]
            if dev == "cuda:1":
                with torch.cuda.device(1):
                    s = torch.cuda.Stream()
                    s.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(s):
                        outs[dev].append(lin(x))
                    torch.cuda.current_stream().wait_stream(s)
                    # a capture stream of cuda:1's own: torch.cuda.graph's default one is made
                    # once per process, on the device current then (cuda:0 after the tests
                    # before), and its capture would see none of cuda:1's work
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g, stream=torch.cuda.Stream(device=1)):
                        y = lin(x)
                    y.zero_()
                    g.replay()
                    outs[dev].append(y)
                    outs[dev].append(torch.compile(lambda t: lin(t))(x))
            torch.cuda.synchronize(dev)
        st = r.stats()
    # cuda:0 once; cuda:1 eager, on the side stream, the graph's capture (its replay is the
    # GPU's) and the compiled call
    assert st.get("tuned_run") == 5 and st.get("gemms") == 5, f"{kind}: {st}"
    for dev, got in outs.items():
        for i, o in enumerate(got):
            assert o.device == torch.device(dev), (dev, i, o.device)
            _close(o, wants[dev])
    _same(outs["cuda:1"][0].cpu(), outs["cuda:0"][0].cpu(), "cuda:1 vs cuda:0")
