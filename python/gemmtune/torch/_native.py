"""The native fast path of use(): the C++ extension (python/csrc/
gemmtune_torch.cpp, built against this torch at install) that overrides the
CUDA kernels of aten::mm, addmm, bmm and baddbmm while routing is on.

The extension holds no decision of its own. It keys each call by what
_blas.describe reads (the router's _signature) and caches, per key, the
answer of the resolver below: the call rebuilt on meta tensors from the key
alone, then the router's own describe + gt_db_lookup + gt_db_plan_create
(Router.native_answer). A hit runs the plan through the gt_db_plan_run of
the libgemmtune the package loaded (its address is handed over), or
PyTorch's kernel; the extension counts both, and Router.stats() adds its
counters to the router's.

Found in this order: $GEMMTUNE_TORCH_EXT (the .so), the copy the package's
build put next to libgemmtune (gemmtune/_lib/libgemmtune_torch.so, with the
torch version it was built against in TORCH_EXT). status() says whether it
loaded and, if not, why; GEMMTUNE_NATIVE=0 turns it off.
"""

import ctypes
import os
import threading
import warnings

import torch

from .. import _lib

__all__ = ["status", "available", "load", "Native"]

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUNDLED = os.path.join(_HERE, "_lib", "libgemmtune_torch.so")
_ABI = 2

_OPS = ("mm", "addmm", "bmm", "baddbmm")
_DTYPES = {1: torch.float16, 2: torch.bfloat16, 3: torch.float32, 4: torch.float64}
# counter slots the extension fills itself (gemmtune_torch.cpp GTN_R_*)
_FIXED = ("tuned_run", "fallback_misaligned", "fallback_error", "tuned_unrunnable", "fallback_out_layout")


class TensorC(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_int64 * 3),
        ("stride", ctypes.c_int64 * 3),
        ("dim", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
        ("neg", ctypes.c_int32),
        ("pad", ctypes.c_int32),
    ]


class KeyC(ctypes.Structure):
    _fields_ = [
        ("op", ctypes.c_int32),
        ("device", ctypes.c_int32),
        ("tf32", ctypes.c_int32),
        ("ntensors", ctypes.c_int32),
        ("beta", ctypes.c_double),
        ("alpha", ctypes.c_double),
        ("t", TensorC * 3),
    ]


class AnswerC(ctypes.Structure):
    _fields_ = [
        ("run", ctypes.c_int32),
        ("reason", ctypes.c_int32),
        ("count_gemm", ctypes.c_int32),
        ("cache", ctypes.c_int32),
        ("plan", ctypes.c_uint64),
        ("ws_bytes", ctypes.c_uint64),
        ("ws_zero", ctypes.c_int32),
        ("a", ctypes.c_int32),
        ("b", ctypes.c_int32),
        ("c", ctypes.c_int32),
        ("bias", ctypes.c_int32),
        ("out_dim", ctypes.c_int32),
        ("out_shape", ctypes.c_int64 * 3),
        ("flags", ctypes.c_int32),
        ("pad", ctypes.c_int32),
    ]


RESOLVE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(KeyC), ctypes.POINTER(AnswerC))

_lock = threading.Lock()
_ext = None
_why = None  # why it is not loaded
_ext_path = None


def _candidate():
    env = os.environ.get("GEMMTUNE_TORCH_EXT")
    if env:
        return env, None
    if not os.path.exists(BUNDLED):
        return None, ("not built: the package was installed without it (see the install's "
                      "'gemmtune: torch extension' line; it needs torch's headers and a C++ compiler)")
    stamp = os.path.join(os.path.dirname(BUNDLED), "TORCH_EXT")
    built = open(stamp).read().strip() if os.path.exists(stamp) else "?"
    if built != torch.__version__:
        return None, f"built for torch {built}, this is torch {torch.__version__}: reinstall the package"
    return BUNDLED, None


def _declare(ext):
    ext.gtn_abi.restype = ctypes.c_int
    ext.gtn_sizeof_key.restype = ctypes.c_size_t
    ext.gtn_sizeof_answer.restype = ctypes.c_size_t
    ext.gtn_reason_slots.restype = ctypes.c_int
    ext.gtn_install.argtypes = [ctypes.c_char_p, RESOLVE, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    ext.gtn_install.restype = ctypes.c_int
    ext.gtn_uninstall.restype = ctypes.c_int
    ext.gtn_installed.restype = ctypes.c_int
    ext.gtn_thread_enter.restype = None
    ext.gtn_thread_exit.restype = None
    ext.gtn_thread_routes.restype = ctypes.c_int
    ext.gtn_counts.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64)]
    ext.gtn_counts.restype = None
    ext.gtn_reset_counts.restype = None
    ext.gtn_cache_size.restype = ctypes.c_size_t
    if ext.gtn_abi() != _ABI:
        raise OSError(f"ABI {ext.gtn_abi()}, this package speaks {_ABI}: reinstall the package")
    if ext.gtn_sizeof_key() != ctypes.sizeof(KeyC) or ext.gtn_sizeof_answer() != ctypes.sizeof(AnswerC):
        raise OSError("its key/answer structs differ from _native.py's: reinstall the package")


def load():
    """The loaded extension (ctypes.CDLL), or None (status() says why)."""
    global _ext, _why, _ext_path
    if _ext is not None:
        return _ext
    with _lock:
        if _ext is not None:
            return _ext
        if os.environ.get("GEMMTUNE_NATIVE") == "0":
            _why = "turned off (GEMMTUNE_NATIVE=0)"
            return None
        if too_old():
            # torch 2.4.1's Dynamo ran the routing mode's Python on fake tensors instead of
            # tracing it, and a compiled graph then held aten::linear, not gemmtune::linear
            _why = (f"torch {torch.__version__}: the native path needs torch >= 2.5 (older Dynamo "
                    f"does not trace the routing mode); the Python router is used")
            return None
        path, why = _candidate()
        if path is None:
            _why = why
            return None
        try:
            ext = ctypes.CDLL(path)  # torch's libraries are loaded: `import torch` came first
            _declare(ext)
        except (OSError, AttributeError) as e:
            _why = f"{path}: {e}"
            return None
        _ext, _ext_path, _why = ext, path, None
        return ext


def too_old():
    """Whether this torch predates what the native path needs (2.5)."""
    v = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2] if x.isdigit())
    return v < (2, 5)


def available():
    return load() is not None


def status():
    """{"loaded": bool, "path": the extension or None, "reason": why not
    (None when loaded), "installed": whether its overrides are in effect}."""
    ext = load()
    return {
        "loaded": ext is not None,
        "path": _ext_path,
        "reason": _why,
        "installed": bool(ext is not None and ext.gtn_installed()),
    }


def _meta(t):
    sizes = tuple(t.size[i] for i in range(t.dim))
    strides = tuple(t.stride[i] for i in range(t.dim))
    m = torch.empty_strided(sizes, strides, dtype=_DTYPES[t.dtype], device="meta")
    return m._neg_view() if t.neg else m


class Native:
    """The extension's overrides, installed for one router: the resolver
    callback, the reason names of the counter slots."""

    def __init__(self, router, dispatch_key):
        ext = load()
        if ext is None:
            raise RuntimeError(f"gemmtune torch extension: {_why}")
        if not _lib.has("gt_db_plan_run"):
            raise RuntimeError(f"{_lib.path()} has no plan API (gt_db_plan_run)")
        self.ext = ext
        self.router = router
        self.key = dispatch_key
        self.device_type = "cuda" if dispatch_key == "CUDA" else "cpu"
        self.reasons = list(_FIXED)
        self.slots = ext.gtn_reason_slots()
        self._rlock = threading.Lock()
        self._warned = set()
        self._aten = {name: getattr(torch.ops.aten, name).default for name in _OPS}
        self._index = {
            name: {a.name: i for i, a in enumerate(f._schema.arguments)} for name, f in self._aten.items()
        }
        self._cb = RESOLVE(self._resolve)  # kept alive while installed
        err = ctypes.create_string_buffer(1024)
        if ext.gtn_install(dispatch_key.encode(), self._cb, _lib.address("gt_db_plan_run"), err, len(err)) != 0:
            raise RuntimeError(f"gemmtune torch extension: install: {err.value.decode(errors='replace')}")
        self.installed = True

    def uninstall(self):
        if self.installed:
            self.installed = False
            self.ext.gtn_uninstall()

    # ---- threads ----

    def enter(self):
        self.ext.gtn_thread_enter()

    def exit(self):
        self.ext.gtn_thread_exit()

    def call(self, fn, args):
        """fn(*args) with the calling thread routed (the gemmtune:: ops)."""
        self.ext.gtn_thread_enter()
        try:
            return fn(*args)
        finally:
            self.ext.gtn_thread_exit()

    # ---- counters ----

    def _slot(self, reason):
        with self._rlock:
            if reason not in self.reasons:
                if len(self.reasons) >= self.slots:
                    return _FIXED.index("fallback_error")
                self.reasons.append(reason)
            return self.reasons.index(reason)

    def counts(self):
        g = ctypes.c_uint64()
        arr = (ctypes.c_uint64 * self.slots)()
        self.ext.gtn_counts(ctypes.byref(g), arr)
        out = {"gemms": g.value} if g.value else {}
        for i, name in enumerate(list(self.reasons)):
            if arr[i]:
                out[name] = arr[i]
        return out

    def reset(self):
        self.ext.gtn_reset_counts()

    # ---- the resolver (a miss in the extension's cache) ----

    def _resolve(self, kp, ap):
        a = ap.contents
        try:
            self._answer(kp.contents, a)
        except Exception as e:  # never let the tuned path fail the model
            a.run, a.cache, a.count_gemm, a.reason = 0, 1, 1, self._slot("fallback_error")
            msg = f"{type(e).__name__}: {e}"
            if msg not in self._warned:
                self._warned.add(msg)
                warnings.warn(f"gemmtune: native resolver failed, this GEMM runs PyTorch's path: {msg}")
        return 0

    def _answer(self, k, a):
        name = _OPS[k.op]
        func = self._aten[name]
        args = tuple(_meta(k.t[i]) for i in range(k.ntensors))
        kwargs = {"beta": k.beta, "alpha": k.alpha} if name in ("addmm", "baddbmm") else {}
        if bool(k.tf32) != torch._C._get_cublas_allow_tf32():  # changed since the call: ask again
            a.run, a.cache, a.count_gemm, a.reason = 0, 0, 0, -1
            return
        dev = torch.device(self.device_type, k.device) if k.device >= 0 else torch.device("cpu")
        reason, run = self.router.native_answer(dev, func, args, kwargs)
        a.count_gemm = int(reason != "other_device")
        a.cache = 1
        if run is None:
            a.run, a.reason = 0, self._slot(reason)
            # a failed plan is "fallback_error" once, "tuned_unrunnable" after
            a.cache = int(reason != "fallback_error")
            return
        plan, call = run
        idx = self._index[name]
        a.run = 1
        a.plan = plan.p.value
        a.ws_bytes, a.ws_zero = plan.ws_bytes, int(plan.ws_zero)
        a.flags = self.router.launch_flags
        a.a, a.b = idx[call.a.arg], idx[call.b.arg]
        a.bias = idx[call.bias] if call.bias else -1
        a.c = idx[call.c_from] if call.c_from else -1
        a.out_dim = len(call.out_shape)
        for i, s in enumerate(call.out_shape):
            a.out_shape[i] = int(s)
