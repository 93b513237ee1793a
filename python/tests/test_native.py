"""The native fast path (python/csrc/gemmtune_torch.cpp) on CPU: it builds
with the package's backend against this torch, installs its aten overrides
and uninstalls them (PyTorch's kernels again), keys each call by exactly
what describe() reads, caches the resolver's answers, counts as the Python
router does, and falls back where the TorchFunctionMode would not route.
The CUDA run itself is in test_gpu.py."""

import threading
import warnings

import pytest
import torch

import gemmtune.torch as gt
from gemmtune.torch import _native, _router

from _models import Small, folded

from conftest import backend

ATEN = torch.ops.aten


@pytest.fixture
def native_cpu(tuned, torch_ext):
    path, model, _, _ = tuned
    with gt.use(path, device="cpu", device_model=model, backend="cpu", native=True) as r:
        assert r.router.native is not None and gt.native_status()["installed"]
        yield r
    assert not gt.native_status()["installed"]


def small_args():
    torch.manual_seed(1)
    return [torch.randn(2, 8, 64), torch.randn(48, 40), torch.randn(48, 24)]


def kernels(op, key):
    """The dispatcher's registrations of op for dispatch key `key`."""
    return [l for l in torch._C._dispatch_dump(op).splitlines() if l.split(":")[0].split(" ")[0] == key]


def test_build_reports_why_without_torch_ext(monkeypatch):
    monkeypatch.setenv("GEMMTUNE_BUILD_TORCH_EXT", "0")
    path, version, secs, why = backend().build_torch_ext("/nonexistent")
    assert path is None and why == "GEMMTUNE_BUILD_TORCH_EXT=0"


def test_status_says_why_it_is_not_loaded(monkeypatch, tmp_path):
    monkeypatch.delenv("GEMMTUNE_TORCH_EXT", raising=False)
    monkeypatch.setattr(_native, "BUNDLED", str(tmp_path / "libgemmtune_torch.so"))
    path, why = _native._candidate()
    assert path is None and "not built" in why
    (tmp_path / "libgemmtune_torch.so").write_bytes(b"")
    (tmp_path / "TORCH_EXT").write_text("1.0.0\n")
    path, why = _native._candidate()
    assert path is None and "built for torch 1.0.0" in why


def test_install_and_uninstall_restore_pytorchs_kernels(tuned, torch_ext):
    path, model, _, _ = tuned
    ops = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::mm.out", "aten::addmm.out")
    before = {op: torch._C._dispatch_dump(op) for op in ops}
    for key, device in (("CPU", "cpu"), ("CUDA", "cuda")):
        with gemmtune_db(path) as db:
            router = _router.Router(db, device, model, "cpu" if device == "cpu" else "cuda")
            n = _native.Native(router, key)
            try:
                for op in ops:
                    k = kernels(op, key)
                    assert "gemmtune_torch.cpp" in k[0], f"{op} {key} after install: {k}"
                    assert any("(inactive)" in l for l in k[1:]), k
                assert _native.status()["installed"]
            finally:
                n.uninstall()
        for op in ops:
            assert torch._C._dispatch_dump(op) == before[op], f"{op}: dispatcher differs after uninstall ({key})"
    assert not _native.status()["installed"]


def gemmtune_db(path):
    import gemmtune

    return gemmtune.Database(path)


def test_native_cpu_routes_and_counts_like_the_python_router(tuned, torch_ext):
    path, model, _, _ = tuned
    got = {}
    for native in (False, True):
        with torch.no_grad(), gt.use(path, device="cpu", device_model=model, backend="cpu", native=native) as r:
            assert (r.router.native is not None) == native
            out = Small()(*small_args())
            got[native] = (r.stats(), out)
    assert folded(got[True][0]) == folded(got[False][0]) == {"gemms": 4, "not_tuned": 1, "tuned_no_runner": 3}
    torch.manual_seed(0)
    m = Small()
    with torch.no_grad():
        want = m(*small_args())
        torch.manual_seed(0)
        m = Small()
        with gt.use(path, device="cpu", device_model=model, backend="cpu", native=True):
            have = m(*small_args())
    for a, b in zip(have, want):
        assert torch.equal(a, b)


def calls():
    """aten GEMMs in the layouts describe() tells apart. (A negative-bit view
    never reaches the kernel: the Negative dispatch key materializes it.)"""
    a, b = torch.randn(6, 5), torch.randn(5, 7)
    x, y = torch.randn(3, 6, 5), torch.randn(3, 5, 7)
    return [
        (ATEN.mm.default, (a, b), {}),
        (ATEN.mm.default, (a, b.t().contiguous().t()), {}),
        (ATEN.mm.default, (torch.randn(5, 6).t(), b), {}),
        (ATEN.mm.default, (a[:, :4], b[:4]), {}),
        (ATEN.addmm.default, (torch.randn(7), a, b), {"beta": 1.0, "alpha": 1.0}),
        (ATEN.addmm.default, (torch.randn(1, 7), a, b), {"beta": 0.5, "alpha": 2.0}),
        (ATEN.addmm.default, (torch.randn(6, 7), a, b), {"beta": 0.0, "alpha": 1.0}),
        (ATEN.bmm.default, (x, y), {}),
        (ATEN.bmm.default, (x.transpose(1, 2).contiguous().transpose(1, 2), y[:1].expand(3, 5, 7)), {}),
        (ATEN.baddbmm.default, (torch.randn(3, 6, 7), x, y), {"beta": 0.5, "alpha": 1.0}),
        (ATEN.baddbmm.default, (torch.randn(7), x, y), {"beta": 1.0, "alpha": 3.0}),
    ]


def test_keys_hold_what_describe_reads(native_cpu, monkeypatch):
    """The resolver sees the call rebuilt from the key alone: its signature
    (what describe reads) equals the real call's, and so does describe's
    answer."""
    from gemmtune.torch import _blas

    seen = []
    orig = _router.Router.native_answer

    def spy(self, dev, func, args, kwargs):
        seen.append((func, args, kwargs))
        return orig(self, dev, func, args, kwargs)

    monkeypatch.setattr(_router.Router, "native_answer", spy)
    cs = calls()
    with torch.no_grad():
        for func, args, kwargs in cs:
            before = len(seen)
            func(*args, **kwargs)
            assert len(seen) == before + 1, f"{func} {[a.shape for a in args]}: not resolved"
            mfunc, margs, mkw = seen[-1]
            assert all(t.device.type == "meta" for t in margs)
            assert _router._signature(mfunc, margs, mkw) == _router._signature(func, args, kwargs)
            assert _blas.describe(mfunc, margs, mkw) == _blas.describe(func, args, kwargs)
        # each call again: answered from the cache
        for func, args, kwargs in cs:
            func(*args, **kwargs)
    assert len(seen) == len(cs)
    assert native_cpu.router.native.ext.gtn_cache_size() == len(cs)


def test_what_the_native_path_does_not_route(native_cpu):
    a, b = torch.randn(6, 5), torch.randn(5, 7)
    w = torch.randn(5, 7, requires_grad=True)
    native_cpu.reset_stats()
    torch.mm(a, w)  # an autograd graph is recorded: the mode never routed it either
    torch.mm(a.int(), b.int())  # not a float GEMM
    torch.mm(a.double(), b.double())  # routed (counted), untuned
    assert folded(native_cpu.stats()) == {"gemms": 1, "not_tuned": 1}
    with torch.no_grad():
        torch.mm(a, w)  # no graph: routed
    assert folded(native_cpu.stats()) == {"gemms": 2, "not_tuned": 2}


def test_out_variants_are_routed(native_cpu):
    """torch.mm / addmm with out= (what Inductor's generated code calls for a GEMM it leaves
    to aten, and what max-autotune times as its aten choice) reach the override and are
    decided like the functional calls of the same layout; PyTorch's out kernel computes here
    (no CPU runner), into out."""
    _, k, q = small_args()
    a, b = k.t(), q  # Small()'s tuned mm: [40, 48] x [48, 24]
    with torch.no_grad():
        outcome = {}
        for how in ("functional", "out"):
            native_cpu.reset_stats()
            out = torch.empty(40, 24)
            got = torch.mm(a, b) if how == "functional" else torch.mm(a, b, out=out)
            outcome[how] = folded(native_cpu.stats())
            assert torch.equal(got, torch.mm(a.contiguous(), b))
        assert outcome["out"] == outcome["functional"] == {"gemms": 1, "tuned_no_runner": 1}, outcome
        assert got.data_ptr() == out.data_ptr()
        # addmm.out: counted (its layout is untuned here), computed right
        c = torch.randn(24)
        native_cpu.reset_stats()
        out = torch.empty(40, 24)
        torch.addmm(c, a, b, out=out)
        assert folded(native_cpu.stats())["gemms"] == 1
        torch.testing.assert_close(out, torch.addmm(c, a.contiguous(), b))
        # an out= of another shape (PyTorch resizes an empty one): its out kernel, the right answer
        odd = torch.empty(0)
        torch.mm(a, b, out=odd)
        assert torch.equal(odd, torch.mm(a.contiguous(), b))


def test_threads_route_only_inside_thread(native_cpu):
    seen = {}

    def work(name, enter):
        with torch.no_grad():
            if enter:
                with native_cpu.thread():
                    Small()(*small_args())
            else:
                Small()(*small_args())
        seen[name] = True

    native_cpu.reset_stats()
    for name, enter in (("plain", False), ("routed", True)):
        t = threading.Thread(target=work, args=(name, enter))
        t.start()
        t.join()
    assert seen == {"plain": True, "routed": True}
    assert folded(native_cpu.stats()) == {"gemms": 4, "not_tuned": 1, "tuned_no_runner": 3}


def test_many_threads_share_the_cache(native_cpu):
    errors = []
    a, b = torch.randn(6, 5), torch.randn(5, 7)
    want = torch.mm(a, b)
    native_cpu.reset_stats()

    def work():
        try:
            with native_cpu.thread(), torch.no_grad():
                for _ in range(200):
                    assert torch.equal(torch.mm(a, b), want)
        except Exception as e:  # reported below
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
    assert native_cpu.stats()["gemms"] == 1600


def test_a_failing_resolver_falls_back_and_warns_once(native_cpu, monkeypatch):
    def boom(self, dev, func, args, kwargs):
        raise RuntimeError("resolver test failure")

    monkeypatch.setattr(_router.Router, "native_answer", boom)
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    native_cpu.reset_stats()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with torch.no_grad():
            outs = [torch.mm(a, b) for _ in range(3)]
    assert sum("resolver test failure" in str(x.message) for x in w) == 1
    assert folded(native_cpu.stats()) == {"gemms": 3, "fallback_error": 3}
    native_cpu.router.native.uninstall()
    for out in outs:  # PyTorch's own result
        assert torch.equal(out, torch.mm(a, b))


def test_disable_uninstalls_and_the_ops_still_work(tuned, torch_ext):
    path, model, _, _ = tuned
    r = gt.use(path, device="cpu", device_model=model, backend="cpu", native=True)
    assert gt.native_status()["installed"]
    gt.disable()
    assert not gt.native_status()["installed"] and not r.on
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    assert torch.equal(torch.ops.gemmtune.mm(a, b), torch.mm(a, b))


def compiled_targets(r):
    """The call_function targets of Small compiled (backend "eager") under routing r, after
    checking its outputs against the uncompiled model's."""
    torch._dynamo.reset()
    from torch._dynamo.testing import CompileCounterWithBackend

    cnt = CompileCounterWithBackend("eager")
    m = Small()
    f = torch.compile(lambda *a: m(*a), backend=cnt, fullgraph=True)
    with torch.no_grad():
        r.reset_stats()
        for g, w in zip(f(*small_args()), m(*small_args())):
            torch.testing.assert_close(g, w)
    return [str(n.target) for g in cnt.graphs for n in g.graph.nodes if n.op == "call_function"]


def test_compiled_graph_holds_gemmtune_ops_with_native_and_trace(tuned, torch_ext):
    path, model, _, _ = tuned
    with gt.use(path, device="cpu", device_model=model, backend="cpu", native=True, trace=True) as r:
        assert r.trace and torch.overrides._get_current_function_mode_stack()
        targets = compiled_targets(r)
        # the tuned GEMMs (down, the matmul, the bmm) as gemmtune:: ops; up is not tuned
        assert sum("gemmtune" in t for t in targets) == 3, targets
        assert r.stats().get("gemms", 0) >= 1  # the op's aten GEMM went through the override


def test_native_default_enters_no_mode_and_routes_compiled_aten_gemms(native_cpu):
    """use()'s default with the native path: no TorchFunctionMode (its Python call on every
    torch function cost an eager prefill 0.2-1.3 %, h100_40_e2e_prefill.txt); a compiled
    graph holds aten GEMMs, and running it routes each through the overrides as eager does."""
    assert native_cpu.trace is False and not torch.overrides._get_current_function_mode_stack()
    targets = compiled_targets(native_cpu)
    assert not any("gemmtune" in t for t in targets), targets
    # the compiled graph's four GEMMs and the uncompiled reference's four, routed alike
    assert folded(native_cpu.stats()) == {"gemms": 8, "not_tuned": 2, "tuned_no_runner": 6}


def test_trace_false_routes_without_a_mode(tuned, torch_ext):
    path, model, _, _ = tuned
    with torch.no_grad(), gt.use(path, device="cpu", device_model=model, backend="cpu", native=True,
                                 trace=False) as r:
        assert not torch.overrides._get_current_function_mode_stack()
        Small()(*small_args())
        assert folded(r.stats()) == {"gemms": 4, "not_tuned": 1, "tuned_no_runner": 3}
    with pytest.raises(ValueError, match="trace=False"):
        gt.use(path, device="cpu", device_model=model, backend="cpu", native=False, trace=False)
    # the Python router routes through the mode: its default enters one
    with gt.use(path, device="cpu", device_model=model, backend="cpu", native=False) as r:
        assert r.trace is True and torch.overrides._get_current_function_mode_stack()


def test_rows_whose_fold_pytorch_refuses_route_as_one_gemm(native_cpu, monkeypatch):
    """A contiguous 3-D input whose size-1 dimension has an odd stride: at::matmul of torch
    2.11 does not fold it (a batched GEMM with the weight broadcast, never tuned; later
    versions fold it); the gemmtune op hands aten its rows as one 2-D input, whatever the
    version, and the tuned 2-D GEMM is decided on, with PyTorch's result."""
    seen = []
    ref = _router.REFS["linear"]

    def spy(x, *rest):
        seen.append(x.dim())
        return ref(x, *rest)

    monkeypatch.setitem(_router.REFS, "linear", spy)
    m = Small()
    base = torch.randn(16 * 96 + 8)
    x = base.as_strided((16, 1, 96), (96, 7, 1))  # is_contiguous(), but stride 7 on the size-1 dim
    assert x.is_contiguous()
    with torch.no_grad():
        want = torch.nn.functional.linear(x.clone(), m.down.weight)
        native_cpu.reset_stats()
        got = torch.ops.gemmtune.linear(x, m.down.weight)
    torch.testing.assert_close(got, want)
    assert got.shape == (16, 1, 32)
    # the tuned 32 x 16 x 96 GEMM was asked for, not the batched form
    assert folded(native_cpu.stats()) == {"gemms": 1, "tuned_no_runner": 1}, native_cpu.stats()
    assert native_cpu.misses() == {}
    assert seen == [2]
