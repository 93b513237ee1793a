"""The router: for each aten GEMM a gemmtune:: op issues, run the tuned
implementation or PyTorch's own.

The decision is libgemmtune's: the GemmDesc of the call (_blas.describe, what
PyTorch would hand cuBLAS) is looked up with gt_db_lookup for this device's
model; the answer is cached per (device, description), thread-safe, and the
description per call signature (dtypes, sizes, strides, scalars: all that
describe reads), so a repeated call costs a tuple and two dict probes. The
aten GEMMs of mm/bmm/addmm/baddbmm and of the common linear/matmul shapes
are known directly (_fast); other calls are decomposed under a
TorchDispatchMode that sees each aten GEMM (exact, ~100 us dearer). A tuned
GEMM runs through the device's runner (_cuda.py) when its inputs are exactly
what the tuning saw (no copy PyTorch would make first, 16-byte aligned
pointers); anything else, including every failure, runs the aten operator
unchanged, so the result is never other than PyTorch's path or the tuned
kernel's.
"""

import threading
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import _blas

__all__ = ["Router", "run", "active", "set_active"]

_WATCH = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}
# CompositeImplicitAutograd operators whose decomposition issues GEMMs. Inside
# a custom op (below autograd) they reach a dispatch mode whole; the mode
# decomposes them itself to see the GEMMs.
DECOMPOSE = {"aten::linear", "aten::matmul"}
_CACHE_MAX = 1 << 16
_MISSES_MAX = 256  # distinct keys kept by misses()
# use(launch=...): gt_db_plan_run's flags (libgemmtune's GT_DB_LAUNCH_CHAINED is 1)
LAUNCHES = {"plain": 0, "chained": 1}

_aten = torch.ops.aten


# ---- the aten operators the gemmtune:: ops stand for ------------------------


def _ref_linear(input, weight, bias=None):
    return _aten.linear.default(input, weight, bias)


def _ref_matmul(input, other):
    return _aten.matmul.default(input, other)


def _ref_mm(input, mat2):
    return _aten.mm.default(input, mat2)


def _ref_bmm(input, mat2):
    return _aten.bmm.default(input, mat2)


def _ref_addmm(input, mat1, mat2, beta=1.0, alpha=1.0):
    return _aten.addmm.default(input, mat1, mat2, beta=beta, alpha=alpha)


def _ref_baddbmm(input, batch1, batch2, beta=1.0, alpha=1.0):
    return _aten.baddbmm.default(input, batch1, batch2, beta=beta, alpha=alpha)


REFS = {
    "linear": _ref_linear,
    "matmul": _ref_matmul,
    "mm": _ref_mm,
    "bmm": _ref_bmm,
    "addmm": _ref_addmm,
    "baddbmm": _ref_baddbmm,
}


def _gemm(r, func, args, kwargs=None):
    kwargs = kwargs or {}
    out = r.maybe_run(func, args, kwargs)
    return out if out is not None else func(*args, **kwargs)


# Calls whose aten GEMM is known without decomposing, so the router is asked
# directly (a dispatch mode costs ~100 us a call); exactly what aten runs:
# aten::linear of a 2-D input: addmm(bias, input, weight.t()), or without a
# bias matmul(input, weight.t()), i.e. mm for two 2-D tensors. (A contiguous
# input of more dimensions arrives here as its 2-D rows: _as_rows.) None:
# decompose under the dispatch mode (exact for anything else).
def _fast(r, op, args):
    if op == "mm":
        return _gemm(r, _aten.mm.default, args)
    if op == "bmm":
        return _gemm(r, _aten.bmm.default, args)
    if op == "addmm":
        return _gemm(r, _aten.addmm.default, args[:3], {"beta": args[3], "alpha": args[4]})
    if op == "baddbmm":
        return _gemm(r, _aten.baddbmm.default, args[:3], {"beta": args[3], "alpha": args[4]})
    if op == "linear":
        x, w, b = args
        if w.dim() != 2:
            return None
        if x.dim() == 2:
            if b is None:
                return _gemm(r, _aten.mm.default, (x, w.t()))
            return _gemm(r, _aten.addmm.default, (b, x, w.t()))
        return None
    if op == "matmul" and args[0].dim() == 2 and args[1].dim() == 2:
        return _gemm(r, _aten.mm.default, args)
    return None


# _verdict's reasons that mean "tuned with a gain": the GEMM runs (or, without a runner or
# with a broken plan, would run) the tuned implementation
_TUNED = (None, "tuned_no_runner", "tuned_unrunnable")


class _Probe:
    """A stand-in router for _fast and _RouteDispatch: notes each aten GEMM's verdict and
    lets the aten operator run (on meta tensors, so nothing is computed)."""

    def __init__(self, router, dev):
        self.router = router
        self.dev = dev
        self.tuned = []

    def maybe_run(self, func, args, kwargs):
        reason, _, _ = self.router._verdict(self.dev, func, args, kwargs)
        self.tuned.append(reason in _TUNED)
        return None


def routes(op, spec):
    """Whether gemmtune::<op> on tensors of this layout issues a GEMM the active router
    runs tuned: what torch.compile's trace asks (routing.py), so that a compiled graph
    holds gemmtune:: ops only where gemmtune has a tuned gain and leaves every other GEMM
    to Inductor (which fuses it, and under max-autotune tunes it). spec: per argument
    (shape, stride, dtype, device type, device index) for a tensor, else the value."""
    r = _active
    if r is None:
        return False
    args, dev = [], None
    for a in spec:
        if isinstance(a, tuple) and len(a) == 5 and isinstance(a[2], torch.dtype):
            shape, stride, dtype, dtype_dev, index = a
            args.append(torch.empty_strided(shape, stride, dtype=dtype, device="meta"))
            if dev is None:
                dev = torch.device(dtype_dev, index) if index is not None else torch.device(dtype_dev)
        else:
            args.append(a)
    if dev is None:
        return False
    args, _ = _as_rows(op, tuple(args))
    probe = _Probe(r, dev)
    if _fast(probe, op, args) is None:
        with _RouteDispatch(probe):
            REFS[op](*args)
    return any(probe.tuned)


_active = None
_active_lock = threading.Lock()


def active():
    """The router in effect, or None."""
    return _active


def set_active(router):
    global _active
    with _active_lock:
        prev, _active = _active, router
    return prev


def run(op, *args):
    """Runs gemmtune::<op>'s aten operator, its GEMMs routed by the active router."""
    r = _active
    if r is None:
        return REFS[op](*args)
    args, lead = _as_rows(op, args)
    if r.native is not None:  # the extension's aten overrides route the GEMMs
        out = r.native.call(REFS[op], args)
    else:
        out = _fast(r, op, args)
        if out is None:
            with _RouteDispatch(r):
                out = REFS[op](*args)
    return out if lead is None else out.view(*lead, out.shape[-1])


def _as_rows(op, args):
    """(args, lead): a linear / matmul call whose input (3 or more dimensions, contiguous,
    so its rows are a view) meets a 2-D weight, with that input handed over as its 2-D
    rows, and the leading sizes to view the result back with; (args, None) for any other
    call. Linear with a bias only for a 3-D input, as at::linear folds it (its bias
    epilogue then is PyTorch's). The one GEMM over the rows is what at::linear and
    at::matmul run for a contiguous input, also where their fold test refuses it for a
    size-1 dimension's stride alone (then they run a batched GEMM with the weight
    broadcast, a problem the tuning never saw: o_proj at batch 8 under torch.compile,
    whose buffers Inductor lays out, ran so at 2.7x the tuned GEMM's time on the H100).
    Both the run and the trace-time decision (routes) take calls through here."""
    if op not in ("linear", "matmul") or len(args) < 2:
        return args, None
    x, w = args[0], args[1]
    if not (isinstance(x, torch.Tensor) and isinstance(w, torch.Tensor)):
        return args, None
    if x.dim() < 3 or w.dim() != 2 or not x.is_contiguous():
        return args, None
    if op == "linear" and len(args) > 2 and args[2] is not None and x.dim() != 3:
        return args, None
    return (x.reshape(-1, x.shape[-1]),) + tuple(args[1:]), x.shape[:-1]


def _signature(func, args, kwargs):
    """Everything _blas.describe reads of a call, as a hashable tuple."""
    sig = [func, torch._C._get_cublas_allow_tf32()]
    for a in args:
        if isinstance(a, torch.Tensor):
            sig.append((a.dtype, tuple(a.shape), a.stride(), a.is_neg()))
        else:
            sig.append(a)
    for k in sorted(kwargs):
        sig.append((k, kwargs[k]))
    return tuple(sig)


class _RouteDispatch(TorchDispatchMode):
    def __init__(self, router):
        super().__init__()
        self.router = router

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name
        if name in _WATCH and func._overloadname == "default":
            out = self.router.maybe_run(func, args, kwargs)
            if out is not None:
                return out
        elif name in DECOMPOSE:
            with self:
                out = func.decompose(*args, **kwargs)
            if out is not NotImplemented:
                return out
        return func(*args, **kwargs)


class _Decision:
    __slots__ = ("lookup", "plan", "broken")

    def __init__(self, lookup):
        self.lookup = lookup
        self.plan = None  # the runner's plan, made at the first tuned call
        self.broken = None  # why the plan could not be made or run


class Router:
    """Routes GEMMs on one kind of device: "cuda" (every CUDA device, or the
    one given), or "cpu" (tests: libgemmtune has no CPU runner, so a tuned CPU
    GEMM is counted and runs PyTorch's path)."""

    def __init__(self, db, device=None, device_model=None, backend=None, launch="plain", min_uplift=1.0):
        if launch not in LAUNCHES:
            raise ValueError(f"launch={launch!r}: one of {', '.join(LAUNCHES)}")
        if not min_uplift >= 1.0:
            raise ValueError(f"min_uplift={min_uplift!r}: at least 1.0 (an entry that kept the baseline never routes)")
        dev = torch.device(device) if device is not None else torch.device("cuda")
        if dev.type not in ("cuda", "cpu"):
            raise ValueError(f"device {dev}: gemmtune routes cuda (or, for tests, cpu) GEMMs")
        if dev.type == "cpu" and not device_model:
            raise ValueError("routing cpu GEMMs needs device_model= (the model the export was tuned on)")
        self.db = db
        self.device_type = dev.type
        self.device_index = dev.index
        self.device_model = device_model
        self.backend = backend or ("cuda" if dev.type == "cuda" else "cpu")
        self._lock = threading.Lock()
        self._cache = {}  # (device, GemmDesc) -> _Decision: libgemmtune's answer
        self._memo = {}  # (device, call signature) -> (BlasCall, why, _Decision)
        self._models = {}
        self._runners = {}
        self._stats = {}
        # the problem keys that found no tuned entry, with how many decisions met each
        # (misses()): why a GEMM the user tuned does not run tuned is read off here (a
        # layout or leading dimension the model uses only under torch.compile, say)
        self._misses = {}
        self.native = None  # _native.Native while the extension's overrides route
        # gt_db_plan_run's flags for every tuned call: chained launches a generated kernel
        # that can (the "gemv" family on sm_90+) with programmatic dependent launch
        self.launch = launch
        self.launch_flags = LAUNCHES[launch]
        # entries tuned to less than this uplift run PyTorch's path ("below_min_uplift"):
        # under torch.compile a routed GEMM is opaque to Inductor, which then cannot fuse
        # the norm or activation around it, and a small tuned gain can cost more than that
        self.min_uplift = float(min_uplift)

    # ---- bookkeeping ----

    def _count(self, what, gemm=True):
        with self._lock:
            st = self._stats
            if gemm:
                st["gemms"] = st.get("gemms", 0) + 1
            st[what] = st.get(what, 0) + 1

    def stats(self):
        """Counters: calls seen, tuned GEMMs run tuned, and every reason a
        GEMM ran PyTorch's path."""
        with self._lock:
            st = dict(self._stats)
        if self.native is not None:
            for k, v in self.native.counts().items():
                st[k] = st.get(k, 0) + v
        return st

    def _miss(self, desc):
        try:
            key = desc.key()  # libgemmtune's canonical key, as the recorded log and export spell it
        except Exception:
            key = str(desc)
        with self._lock:
            if key in self._misses or len(self._misses) < _MISSES_MAX:
                self._misses[key] = self._misses.get(key, 0) + 1

    def misses(self):
        """{problem key: decisions} of the GEMMs that found no tuned entry for this GPU
        model (at most _MISSES_MAX keys). A decision is one call on the Python path, one
        call signature on the native path and under torch.compile (decided once, then
        cached), so compare keys here, and count calls with stats()."""
        with self._lock:
            return dict(self._misses)

    def reset_stats(self):
        with self._lock:
            self._stats.clear()
            self._misses.clear()
        if self.native is not None:
            self.native.reset()

    def model(self, dev):
        if self.device_model:
            return self.device_model
        m = self._models.get(dev.index)
        if m is None:
            m = torch.cuda.get_device_name(dev)
            self._models[dev.index] = m
        return m

    # ---- decisions ----

    def decide(self, dev, desc):
        """libgemmtune's answer for desc on dev's model (cached)."""
        ck = (dev.type, dev.index, desc)
        d = self._cache.get(ck)
        if d is None:
            d = _Decision(self.db.lookup(desc, self.model(dev), self.backend))
            with self._lock:
                if len(self._cache) < _CACHE_MAX:
                    d = self._cache.setdefault(ck, d)
        return d

    def _runner(self, dev):
        r = self._runners.get(dev.index)
        if r is None:
            from . import _cuda

            with self._lock:
                r = self._runners.get(dev.index)
                if r is None:
                    r = _cuda.Runner(self.db, dev, self.launch_flags)
                    self._runners[dev.index] = r
        return r

    def _entry(self, dev, func, args, kwargs):
        """(BlasCall or None, why, _Decision or None) of a call, memoized on
        its signature (describe is a pure function of it)."""
        mk = (dev.index, _signature(func, args, kwargs))
        e = self._memo.get(mk)
        if e is None:
            call, why = _blas.describe(func, args, kwargs)
            d = None
            if call is not None and not (call.a.copy or call.b.copy):
                d = self.decide(dev, call.desc)
            e = (call, why, d)
            with self._lock:
                if len(self._memo) < _CACHE_MAX:
                    self._memo[mk] = e
        return e

    def _verdict(self, dev, func, args, kwargs):
        """(reason, BlasCall, _Decision) of a call: reason is why it runs
        PyTorch's path (a stats() counter), None when it is tuned and may
        run tuned."""
        if dev.type != self.device_type or (self.device_index is not None and dev.index != self.device_index):
            return "other_device", None, None
        call, why, d = self._entry(dev, func, args, kwargs)
        if call is None:
            return "not_modelled", call, d
        if d is None:
            return "operand_copied", call, d  # PyTorch copies it first: not the tuned layout
        if not d.lookup.hit:
            self._miss(call.desc)
            return "not_tuned", call, d
        if d.lookup.uplift is not None and d.lookup.uplift <= 1.0:
            # the tuning kept the baseline (no configuration beat cuBLASLt's default): PyTorch's
            # own path is at least as good, and routing it could only add host time
            return "no_gain", call, d
        if d.lookup.uplift is not None and d.lookup.uplift < self.min_uplift:
            return "below_min_uplift", call, d
        if self.device_type != "cuda":
            return "tuned_no_runner", call, d
        if d.broken:
            return "tuned_unrunnable", call, d
        return None, call, d

    def maybe_run(self, func, args, kwargs):
        """The tuned result of this aten GEMM, or None: run PyTorch's path."""
        first = args[0] if args else None
        if not isinstance(first, torch.Tensor):
            return None
        dev = first.device
        reason, call, d = self._verdict(dev, func, args, kwargs)
        if reason is not None:
            self._count(reason, gemm=reason != "other_device")
            return None
        runner = self._runner(dev)
        try:
            out, why = runner.run(d, call, _blas.Args(func, args, kwargs), self.model(dev))
        except Exception as e:  # never let a tuned path fail the model
            d.broken = f"{type(e).__name__}: {e}"
            warnings.warn(f"gemmtune: {d.lookup.key}: tuned path failed, using PyTorch's: {d.broken}")
            out, why = None, "error"
        if out is None:
            self._count(f"fallback_{why}")
            return None
        self._count("tuned_run")
        return out

    def native_answer(self, dev, func, args, kwargs):
        """The native path's answer for a call (args may be meta tensors of
        the call's layout): (reason, None) to run PyTorch's path, counted as
        reason, or ("tuned_run", (plan, BlasCall)) with the gt_db_plan
        (_cuda._LtPlan) to run. The same decisions as maybe_run."""
        reason, call, d = self._verdict(dev, func, args, kwargs)
        if reason is not None:
            return reason, None
        try:
            plan, why = self._runner(dev).native_plan(d, call, self.model(dev))
        except Exception as e:  # never let a tuned path fail the model
            d.broken = f"{type(e).__name__}: {e}"
            warnings.warn(f"gemmtune: {d.lookup.key}: tuned path failed, using PyTorch's: {d.broken}")
            return "fallback_error", None
        if plan is None:
            return f"fallback_{why}", None
        return "tuned_run", (plan, call)
