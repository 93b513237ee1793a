"""gemmtune.torch.use / disable on CPU: the gemmtune:: ops, which calls are
routed and which fall back, torch.compile tracing, thread safety."""

import threading

import pytest
import torch
import torch.nn.functional as F

import gemmtune
import gemmtune.torch as gt

from _models import Small, folded, with_uplift

OPS = ("linear", "matmul", "mm", "bmm", "addmm", "baddbmm")


@pytest.fixture
def cpu_routing(tuned):
    path, model, _, _ = tuned
    with gt.use(path, device="cpu", device_model=model, backend="cpu") as r:
        yield r
    assert not gt.enabled()


def small_args():
    torch.manual_seed(1)
    return [torch.randn(2, 8, 64), torch.randn(48, 40), torch.randn(48, 24)]


def test_ops_exist_and_equal_aten_without_a_router():
    assert not gt.enabled() and gt.stats() == {}
    for name in OPS:
        assert hasattr(torch.ops.gemmtune, name)
    a, b, c = torch.randn(6, 5), torch.randn(5, 7), torch.randn(6, 7)
    x, y, z = torch.randn(3, 6, 5), torch.randn(3, 5, 7), torch.randn(3, 6, 7)
    w, bias = torch.randn(7, 5), torch.randn(7)
    g = torch.ops.gemmtune
    assert torch.equal(g.linear(a, w, bias), F.linear(a, w, bias))
    assert torch.equal(g.linear(x, w, None), F.linear(x, w))
    assert torch.equal(g.matmul(x, b), torch.matmul(x, b))
    assert torch.equal(g.mm(a, b), torch.mm(a, b))
    assert torch.equal(g.bmm(x, y), torch.bmm(x, y))
    assert torch.equal(g.addmm(c, a, b, 0.5, 2.0), torch.addmm(c, a, b, beta=0.5, alpha=2.0))
    assert torch.equal(g.baddbmm(z, x, y, 0.5, 2.0), torch.baddbmm(z, x, y, beta=0.5, alpha=2.0))


def test_every_gemm_form_is_routed(tuned):
    a, b, c = torch.randn(6, 5), torch.randn(5, 7), torch.randn(6, 7)
    x, y, z = torch.randn(3, 6, 5), torch.randn(3, 5, 7), torch.randn(3, 6, 7)
    w, bias = torch.randn(7, 5), torch.randn(7)
    forms = [
        (lambda: F.linear(a, w, bias), 1),
        (lambda: F.linear(a, weight=w), 1),
        (lambda: torch.matmul(x, b), 1),
        (lambda: x.matmul(b), 1),
        (lambda: a @ b, 1),
        (lambda: torch.mm(a, b), 1),
        (lambda: a.mm(b), 1),
        (lambda: torch.bmm(x, y), 1),
        (lambda: x.bmm(y), 1),
        (lambda: torch.addmm(c, a, b, beta=0.5, alpha=2.0), 1),
        (lambda: c.addmm(a, b), 1),
        (lambda: torch.baddbmm(z, x, y, alpha=3), 1),
        (lambda: z.baddbmm(x, y), 1),
    ]
    with torch.no_grad(), gemmtune.Database(tuned[0]) as db:
        for fn, n in forms:
            want = fn()
            with gt.use(db, device="cpu", device_model=tuned[1], backend="cpu") as r:
                got = fn()
            assert torch.equal(got, want)
            assert r.stats() == {"gemms": n, "not_tuned": n}
        assert len(db) == 3  # a Database passed in stays open


def test_what_is_not_routed(cpu_routing):
    lin = torch.nn.Linear(5, 7)  # parameters require grad
    a = torch.randn(6, 5)
    lin(a)  # grad enabled: an autograd graph is being built
    torch.mm(a, torch.randn(5, 7), out=torch.empty(6, 7))  # out=
    torch.mm(torch.ones(6, 5, dtype=torch.int64), torch.ones(5, 7, dtype=torch.int64))  # not a float GEMM
    torch.mv(torch.randn(6, 5), torch.randn(5))  # not a GEMM
    assert folded(cpu_routing.stats()) == {}
    with torch.no_grad():
        lin(a)
    assert folded(cpu_routing.stats()) == {"gemms": 1, "not_tuned": 1}
    # the key it missed with, as libgemmtune spells it (7x6x5: F.linear's TN form)
    misses = cpu_routing.misses()
    assert len(misses) == 1
    (key, n), = misses.items()
    assert key.startswith("m=7,n=6,k=5,") and ",op=TN," in key and n == 1
    cpu_routing.reset_stats()
    assert cpu_routing.misses() == {}


def test_operands_pytorch_copies_fall_back(cpu_routing):
    w = torch.randn(32, 64)
    x = torch.randn(16, 128)[:, ::2]
    with torch.no_grad():
        assert torch.equal(F.linear(x, w), F.linear(x.contiguous(), w))
    # the strided one is what PyTorch copies first; the contiguous one is looked up
    assert folded(cpu_routing.stats()) == {"gemms": 2, "operand_copied": 1, "not_tuned": 1}


def test_disable_and_nesting(tuned):
    path, model, _, _ = tuned
    args = small_args()
    m = Small()
    with torch.no_grad():
        r = gt.use(path, device="cpu", device_model=model, backend="cpu")
        assert gt.enabled()
        m(*args)
        assert gt.stats()["gemms"] == 4
        gt.disable()
        assert not gt.enabled() and gt.stats() == {}
        m(*args)  # nothing routed, nothing counted
        assert r.stats()["gemms"] == 4
        with gt.use(path, device="cpu", device_model=model, backend="cpu"):
            with gt.use(path, device="cpu", device_model=model, backend="cpu") as inner:
                m(*args)
                assert inner.stats()["gemms"] == 4
            assert not gt.enabled()  # a second use() replaces the first; its exit turns routing off
        assert torch.overrides._get_current_function_mode_stack() == []


def test_use_arguments(tuned, tmp_path):
    path, model, _, _ = tuned
    with pytest.raises(ValueError):
        gt.use(path, device="cpu")  # a cpu router needs the model name
    with pytest.raises(ValueError):
        gt.use(path, device="meta")
    with pytest.raises(OSError):
        gt.use(str(tmp_path / "missing.db"), device="cpu", device_model=model)
    assert not gt.enabled()


def _compiled(backend, args, m):
    torch._dynamo.reset()
    return torch.compile(lambda *a: m(*a), backend=backend, fullgraph=True)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_torch_compile_traces_the_ops_without_graph_breaks(cpu_routing, backend):
    args = small_args()
    m = Small()
    with torch.no_grad():
        want = m(*args)
        cpu_routing.reset_stats()
        f = _compiled(backend, args, m)
        got = f(*args)
        got2 = f(*args)
    for g, g2, w in zip(got, got2, want):
        torch.testing.assert_close(g, w)
        torch.testing.assert_close(g2, w)
    # the compiled code holds gemmtune:: ops for the tuned GEMMs only (down, the matmul, the
    # bmm) and consulted the router for them in both calls; up (a bias epilogue, not tuned)
    # was left to the backend: the "eager" backend runs the graph's torch functions, which
    # the routing mode (still entered) sees and finds untuned, the others run aten
    want_st = {"gemms": 6, "tuned_no_runner": 6}
    if backend == "eager":
        want_st = {"gemms": 8, "not_tuned": 2, "tuned_no_runner": 6}
    assert folded(cpu_routing.stats()) == want_st


def test_dynamo_graph_holds_gemmtune_ops(cpu_routing):
    args = small_args()
    m = Small()
    torch._dynamo.reset()
    with torch.no_grad():
        ex = torch._dynamo.explain(lambda *a: m(*a))(*args)
    assert ex.graph_break_count == 0 and ex.graph_count == 1
    V = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    if V >= (2, 5):  # Dynamo traces TorchFunctionModes; 2.4 leaves that to AOTAutograd
        code = ex.graphs[0].code
        for op in ("gemmtune.linear", "gemmtune.matmul", "gemmtune.bmm"):
            assert op in code, code
        # up's GEMM (bias epilogue) is not tuned: its linear stays PyTorch's, for Inductor
        assert code.count("gemmtune.linear") == 1 and "torch._C._nn.linear" in code, code


def test_untuned_or_no_gain_gemms_stay_aten_under_compile(tuned, tmp_path):
    """A compiled graph holds a gemmtune:: op only where the GEMM has a tuned gain: with
    every uplift set to 1 (no gain), none; with gains, the tuned ones."""
    from torch._dynamo.testing import CompileCounterWithBackend

    path, model, _, _ = tuned
    args = small_args()
    m = Small()
    for uplift, want in ((1.0, 0), (1.5, 3)):
        db = with_uplift(path, tmp_path, uplift)
        torch._dynamo.reset()
        cnt = CompileCounterWithBackend("eager")
        with torch.no_grad(), gt.use(str(db), device="cpu", device_model=model, backend="cpu"):
            f = torch.compile(lambda *a: m(*a), backend=cnt, fullgraph=True)
            for g, w in zip(f(*args), m(*args)):
                torch.testing.assert_close(g, w)
        V = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
        if V >= (2, 5):  # Dynamo traces TorchFunctionModes; 2.4 leaves that to AOTAutograd
            targets = [str(n.target) for g in cnt.graphs for n in g.graph.nodes if n.op == "call_function"]
            assert sum("gemmtune" in t for t in targets) == want, (uplift, targets)


def test_compiled_graph_after_disable_runs_pytorch(tuned):
    path, model, _, _ = tuned
    args = small_args()
    m = Small()
    with torch.no_grad():
        want = m(*args)
        r = gt.use(path, device="cpu", device_model=model, backend="cpu")
        f = _compiled("aot_eager", args, m)
        f(*args)
        gt.disable()
        got = f(*args)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    assert r.stats()["gemms"] == 3  # only the call made while routing: its 3 tuned GEMMs


def test_gemmtune_ops_compile_directly():
    w, b = torch.randn(7, 5), torch.randn(7)
    torch._dynamo.reset()
    f = torch.compile(lambda x: torch.ops.gemmtune.linear(x, w, b).relu(), backend="aot_eager", fullgraph=True)
    x = torch.randn(3, 5)
    torch.testing.assert_close(f(x), F.linear(x, w, b).relu())


def test_decisions_are_thread_safe(tuned):
    path, model, gemms, _ = tuned
    with gemmtune.Database(path) as db:
        from gemmtune.torch._router import Router

        router = Router(db, "cpu", model, "cpu")
        dev = torch.device("cpu")
        want = {d: db.lookup(d, model, "cpu").rc for d, _ in gemms}
        errors = []

        def work():
            try:
                for _ in range(200):
                    for d, _ in gemms:
                        assert router.decide(dev, d).lookup.rc == want[d]
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(router._cache) == len(gemms)
        assert sorted(want.values()) == [0, 0, 0, 1]


def test_other_threads_route_inside_thread(cpu_routing):
    seen = {}

    def work(name, enter):
        with torch.no_grad():
            if enter:
                with cpu_routing.thread():
                    Small()(*small_args())
            else:
                Small()(*small_args())
        seen[name] = True

    for name, enter in (("plain", False), ("routed", True)):
        t = threading.Thread(target=work, args=(name, enter))
        t.start()
        t.join()
    assert seen == {"plain": True, "routed": True}
    # only the thread that entered routing.thread() was routed
    assert folded(cpu_routing.stats()) == {"gemms": 4, "not_tuned": 1, "tuned_no_runner": 3}


def test_record_inside_use_records_the_aten_gemms(cpu_routing):
    with torch.no_grad(), gt.record() as rec:
        Small()(*small_args())
    assert len(rec.gemms) == 4 and rec.skipped == []


@pytest.mark.parametrize(
    "shape,bias",
    [((16, 96), True), ((16, 96), False), ((2, 8, 96), True), ((2, 8, 96), False), ((2, 2, 4, 96), False),
     ((1, 1, 96), True), ((2, 2, 4, 96), True), ((8, 2, 96), "strided")],
)
def test_router_sees_the_gemms_aten_runs(tuned, shape, bias, monkeypatch):
    """The router's shortcuts (no dispatch mode for 2-D, contiguous 3-D, and
    bias-free N-D inputs) describe exactly the GEMM aten's own decomposition
    issues, which the recorder sees."""
    from gemmtune.torch import _router

    path, model, _, _ = tuned
    w, b = torch.randn(32, 96), torch.randn(32)
    x = torch.randn(*shape)
    if bias == "strided":
        x = torch.randn(2, 8, 96).transpose(0, 1)  # not contiguous: decomposed under the mode
        bias = True
    bb = b if bias else None
    with torch.no_grad():
        with gt.record() as rec:
            want = F.linear(x, w, bb)
        modes = []
        orig = _router._RouteDispatch.__torch_dispatch__

        def spy(self, func, types, args=(), kwargs=None):
            modes.append(func)
            return orig(self, func, types, args, kwargs)

        monkeypatch.setattr(_router._RouteDispatch, "__torch_dispatch__", spy)
        with gt.use(path, device="cpu", device_model=model, backend="cpu") as r:
            got = F.linear(x, w, bb)
            seen = [e[0].desc for e in r.router._memo.values()]
    assert torch.equal(got, want) and got.shape == want.shape and got.stride() == want.stride()
    assert seen == [d for d, _ in rec.gemms]
    shortcut = len(shape) == 2 or (x.is_contiguous() and (not bias or len(shape) == 3))
    assert (modes == []) == shortcut


def test_compiled_linear_of_unfoldable_rows_routes_its_rows(cpu_routing):
    """A linear whose 3-D input's rows PyTorch cannot fold without a copy runs as a batched
    GEMM with the weight broadcast, a problem the tuning never saw; under torch.compile the
    router traces it as the tuned 2-D GEMM over the input's rows instead (the graph holds
    gemmtune.linear), with the same result."""
    from torch._dynamo.testing import CompileCounterWithBackend

    m = Small()
    args = small_args()
    with torch.no_grad():
        h = torch.relu(m.up(args[0]))  # [2, 8, 96]

        def f(h):
            # [2, 8, 96] with strides (96, 192, 1): at::matmul's should_fold says no
            odd = h.transpose(0, 1).contiguous().transpose(0, 1)
            return m.down(odd)

        want = f(h)
        cpu_routing.reset_stats()
        torch._dynamo.reset()
        cnt = CompileCounterWithBackend("eager")
        got = torch.compile(f, backend=cnt, fullgraph=True)(h)
    torch.testing.assert_close(got, want)
    V = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    if V >= (2, 5):  # Dynamo traces TorchFunctionModes; 2.4 leaves that to AOTAutograd
        targets = [str(n.target) for g in cnt.graphs for n in g.graph.nodes if n.op == "call_function"]
        assert sum("gemmtune" in t for t in targets) == 1, targets
    # the tuned 2-D GEMM was decided on; the batched form is what eager mode missed with
    assert cpu_routing.stats().get("tuned_no_runner", 0) >= 1
    assert any(",b=2," in k for k in cpu_routing.misses()), cpu_routing.misses()
