"""gemmtune.torch.use / disable: route a model's GEMMs to tuned implementations.

    with gemmtune.torch.use("tuned.db"):            # or h = use(...); ...; disable()
        y = model(x)                                # eager or torch.compile'd

With the native path (the C++ extension's aten overrides) eager and compiled
calls are routed by the overrides, and no mode is entered unless
use(trace=True) asks. Otherwise (the Python router, or trace=True), while in
effect, a TorchFunctionMode on the calling thread (other threads:
`with routing.thread():`) replaces F.linear, torch.matmul / @, mm, bmm, addmm
and baddbmm (functions and Tensor methods) by the gemmtune:: custom ops
(ops.py) when their tensors are on the routed device type, have a float dtype
and no autograd graph is being recorded (inference: torch.no_grad /
inference_mode, or inputs that do not require grad); anything else is called
unchanged. Dynamo traces the mode, so a function compiled while it is in
effect holds gemmtune:: ops in its graph (no graph break) for the calls whose
GEMM has a tuned gain (decided at trace time from the call's layout); every
other GEMM stays the aten op, for Inductor to fuse and tune; in eager mode
on plain tensors the ops' implementation is called directly (the same code,
without the custom-op machinery's cost). The ops ask the process-wide
router, so disable() turns routing off for compiled graphs too: they then
run PyTorch's path.
"""

import contextlib

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from ..db import Database
from . import _native, _router, ops

__all__ = ["use", "disable", "enabled", "stats", "reset_stats", "Routing", "native_status"]

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_T = torch.Tensor


class _RouteMode(TorchFunctionMode):
    def __init__(self, routing):
        super().__init__()
        self.routing = routing  # shared by the modes of every thread; .on turns them all off
        self.device_type = routing.router.device_type
        # With the native path the aten overrides route eager calls: the mode
        # only matters to Dynamo, and passes everything else straight on.
        self.native = routing.router.native is not None

    def _ok(self, *ts):
        for t in ts:
            if t is None:
                continue
            if not isinstance(t, torch.Tensor):
                return False
            if t.dtype not in _FLOATS or t.device.type != self.device_type:
                return False
            if t.requires_grad and torch.is_grad_enabled():
                return False
        return True

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if self.native and not torch.compiler.is_compiling() and _plain(args):
            return func(*args, **(kwargs or {}))
        kwargs = kwargs or {}
        if self.routing.on and "out" not in kwargs:
            if func is F.linear:
                if args and set(kwargs) <= {"weight", "bias"}:
                    x = args[0]
                    w = args[1] if len(args) > 1 else kwargs.get("weight")
                    b = args[2] if len(args) > 2 else kwargs.get("bias")
                    if w is not None and self._ok(x, w, b):
                        return _route(func, args, kwargs, "linear", ops.linear, x, w, b)
            elif func is torch.matmul or func is _T.matmul or func is _T.__matmul__:
                if len(args) == 2 and not kwargs and self._ok(*args):
                    return _route(func, args, kwargs, "matmul", ops.matmul, args[0], args[1])
            elif func is _T.__rmatmul__:
                if len(args) == 2 and not kwargs and self._ok(*args):
                    return _route(func, args, kwargs, "matmul", ops.matmul, args[1], args[0])
            elif func is torch.mm or func is _T.mm:
                if len(args) == 2 and not kwargs and self._ok(*args):
                    return _route(func, args, kwargs, "mm", ops.mm, args[0], args[1])
            elif func is torch.bmm or func is _T.bmm:
                if len(args) == 2 and not kwargs and self._ok(*args):
                    return _route(func, args, kwargs, "bmm", ops.bmm, args[0], args[1])
            elif func is torch.addmm or func is _T.addmm:
                if len(args) == 3 and set(kwargs) <= {"beta", "alpha"} and self._ok(*args):
                    sc = (float(kwargs.get("beta", 1.0)), float(kwargs.get("alpha", 1.0)))
                    return _route(func, args, kwargs, "addmm", ops.addmm, *args, *sc)
            elif func is torch.baddbmm or func is _T.baddbmm:
                if len(args) == 3 and set(kwargs) <= {"beta", "alpha"} and self._ok(*args):
                    sc = (float(kwargs.get("beta", 1.0)), float(kwargs.get("alpha", 1.0)))
                    return _route(func, args, kwargs, "baddbmm", ops.baddbmm, *args, *sc)
        return func(*args, **kwargs)


def _plain(args):
    """Whether every tensor argument is a plain tensor (eager). Dynamo before torch 2.5 does
    not trace a TorchFunctionMode: it runs the mode's Python with fake tensors, where
    is_compiling() is False, so tracing is told apart by the tensors' types (torch 2.4.1:
    the native path's compiled graph held aten::linear instead of gemmtune::linear)."""
    for t in args:
        if isinstance(t, torch.Tensor) and type(t) is not torch.Tensor and type(t) is not torch.nn.Parameter:
            return False
    return True


@torch._dynamo.assume_constant_result
def _routes(name, spec):
    # Run at trace time with the call's layout (static under torch.compile's default
    # dynamic=False), not traced: its answer is a constant of the graph.
    return _router.routes(name, spec)


def _layout(args):
    return tuple((tuple(t.shape), tuple(t.stride()), t.dtype, t.device.type, t.device.index)
                 if isinstance(t, torch.Tensor) else t for t in args)


def _route(func, args, kwargs, name, op, *opargs):
    """When tracing (Dynamo, or the fake/functional tensors of AOTAutograd): the gemmtune::
    op where the call issues a GEMM with a tuned gain, so the graph holds it, and the
    original function elsewhere, so Inductor lowers that GEMM itself: it fuses it and,
    under max-autotune, tunes it, where an opaque gemmtune:: op running PyTorch's path
    would have kept both from it. In eager mode on plain tensors: the op's implementation
    directly, which skips the custom-op machinery's per-call cost and does the same."""
    if torch.compiler.is_compiling() or not _plain(opargs):
        lay = _layout(opargs)
        if _routes(name, lay):
            return op(*opargs)
        x = opargs[0]
        if (name in ("linear", "matmul") and x.dim() >= 3 and isinstance(opargs[1], torch.Tensor)
                and opargs[1].dim() == 2 and _routes_rows(name, lay)):
            # the same product over the input's rows as one 2-D GEMM, through a copy of the
            # input that Inductor may fuse into the kernel producing it (a contiguous
            # input's rows, a view, are taken by the router itself: _router._as_rows)
            out = op(x.reshape(-1, x.shape[-1]), *opargs[1:])
            return out.reshape(*x.shape[:-1], out.shape[-1])
        return func(*args, **kwargs)
    return _router.run(name, *opargs)


@torch._dynamo.assume_constant_result
def _routes_rows(name, spec):
    """Whether linear / matmul of a 3-or-more-dimensional input (spec[0]) by a 2-D weight
    routes when run as one 2-D GEMM over a copy of the input's rows. PyTorch runs such a
    call as a batched GEMM with the weight broadcast when it cannot fold the rows without a
    copy: a problem the tuning, which recorded eager mode's layout, may never have seen. (A
    contiguous input's rows are a view the router takes itself, _router._as_rows.) Run at
    trace time on meta tensors, not traced."""
    shape, stride, dtype, dev_type, index = spec[0]
    rows = torch.empty_strided(shape, stride, dtype=dtype, device="meta").reshape(-1, shape[-1])
    return _router.routes(name, ((tuple(rows.shape), tuple(rows.stride()), dtype, dev_type, index),)
                          + tuple(spec[1:]))


class Routing:
    """What use() returns: the router in effect. Its exit (or close(), or
    disable()) turns routing off in every thread. Other threads route
    inside `with routing.thread():`."""

    def __init__(self, router, owns_db):
        self.router = router
        self.on = True
        self.trace = True  # a TorchFunctionMode per routed thread (use(): the Python router's only)
        self._owns_db = owns_db
        self._mode = _RouteMode(self)

    def stats(self):
        """The router's counters (_router.Router.stats)."""
        return self.router.stats()

    def misses(self):
        """The problem keys that found no tuned entry (_router.Router.misses)."""
        return self.router.misses()

    def reset_stats(self):
        self.router.reset_stats()

    @contextlib.contextmanager
    def thread(self):
        """Routes the calling thread's GEMMs too while entered (the function
        mode is per thread; the router and its caches are shared)."""
        mode = _RouteMode(self) if self.trace else contextlib.nullcontext()
        native = self.router.native
        if native is not None:
            native.enter()
        try:
            with mode:
                yield self
        finally:
            if native is not None:
                native.exit()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if not self.on:
            return
        self.on = False  # every thread's mode passes everything through from now on
        if _router.active() is self.router:
            _router.set_active(None)
        if self.router.native is not None:
            self.router.native.uninstall()  # PyTorch's kernels again; the router's counters stay
        stack = torch.overrides._get_current_function_mode_stack()
        if stack and stack[-1] is self._mode:
            self._mode.__exit__(None, None, None)
        if self._owns_db:
            self.router.db.close()


_current = None


def _want_native(router, native):
    """The extension's overrides for router, installed; or None (the Python
    router routes). native: None (use it for CUDA routing when it loads),
    True (required; on a cpu router too: tests), False (never)."""
    if native is False or (native is None and router.device_type != "cuda"):
        return None
    if not _native.available():
        if native:
            raise RuntimeError(f"gemmtune torch extension: {_native.status()['reason']}")
        return None
    return _native.Native(router, "CUDA" if router.device_type == "cuda" else "CPU")


def native_status():
    """Whether the native path (the C++ extension) can be used, and if not
    why: {"loaded", "path", "reason", "installed"}."""
    return _native.status()


def use(db, device=None, *, device_model=None, backend=None, native=None, trace=None, launch="plain",
        min_uplift=1.0):
    """Routes every GEMM whose full problem key is tuned in db (a path to an
    export, or a gemmtune.Database) for this GPU model to the tuned
    implementation; everything else to PyTorch's own path unchanged.

    device: None (every CUDA device, each looked up with its own model),
    "cuda:N" (that device only), or "cpu" (tests: decisions are made and
    counted, PyTorch computes). device_model: the model name to look up
    instead of torch.cuda.get_device_name() (like GEMMTUNE_DEVICE_MODEL).
    backend: the export's backend to use ("cuda"; "cpu" for a CPU device).
    native: None (default: CUDA routing goes through the C++ extension's
    aten overrides when it loads, see native_status()), False (the Python
    router), True (the extension or an error; on "cpu" too, for tests).
    trace: whether a TorchFunctionMode places gemmtune:: ops (where a GEMM
    has a tuned gain, decided at trace time) in functions torch.compile'd
    meanwhile. None (default): only for the Python router, which routes
    through it. The native path routes eager and compiled calls alike
    through its aten overrides (a compiled graph's aten GEMMs reach them),
    and in eager mode the mode only passes calls on, at a Python call on
    every torch function (about 1.3 us, GEMM or not): that cost an eager
    2048-token Llama-3-8B prefill 0.2-1.3 % on an H100, the mode-less path
    was 0.2-1.1 % faster than PyTorch's, and under torch.compile the two
    measured level (bench/results/h100_40_e2e_prefill.txt). True: the mode
    with the native path too (compiled graphs hold gemmtune:: ops, which
    Inductor cannot replace by its own templates); False: no mode (native
    path only).
    launch: "plain" (default) or "chained": tuned generated kernels that can
    (the "gemv" family on sm_90+) launch with programmatic dependent launch,
    so their launch and first loads overlap the end of the kernel before,
    as a run tuned with launch=chained timed them. Such a kernel may read
    its BLAS A operand (F.linear's weight) before the kernel just before it
    has finished: use it only where no GEMM's A is written by the kernel
    right before it (inference with fixed weights). cuBLASLt winners and
    other kernels launch plainly either way.
    min_uplift: route only entries whose stored uplift over the library's
    default is at least this (default 1.0: every entry with a gain; one that
    kept the baseline never routes). Under torch.compile a routed GEMM is a
    custom op Inductor cannot fuse the surrounding norm or activation into,
    so a gain of a percent or two may cost more than it brings there.

    Enables routing now for this thread (other threads: Routing.thread()),
    and for the gemmtune ops of compiled graphs everywhere; returns a Routing
    usable as a context manager. A second use() replaces the first."""
    global _current
    if _current is not None:
        _current.close()
    owns = not isinstance(db, Database)
    database = Database(db) if owns else db
    try:
        router = _router.Router(database, device, device_model, backend, launch, min_uplift)
    except Exception:
        if owns:
            database.close()
        raise
    try:
        router.native = _want_native(router, native)
    except Exception:
        if owns:
            database.close()
        raise
    if trace is None:
        trace = router.native is None
    if not trace and router.native is None:
        if owns:
            database.close()
        raise ValueError("use(trace=False) needs the native path (native_status() says why it is not available)")
    routing = Routing(router, owns)
    routing.trace = trace
    if trace:
        routing._mode.__enter__()
    if router.native is not None:
        router.native.enter()
    _router.set_active(router)
    _current = routing
    return routing


def disable():
    """Turns routing off: every GEMM runs PyTorch's path again."""
    global _current
    if _current is not None:
        _current.close()
        _current = None
    _router.set_active(None)


def enabled():
    """Whether a router is in effect."""
    return _router.active() is not None


def stats():
    """The active router's counters (see _router.Router.stats); {} when off."""
    r = _router.active()
    return r.stats() if r is not None else {}


def reset_stats():
    r = _router.active()
    if r is not None:
        r.reset_stats()
