"""Running a tuned GEMM on a CUDA device through libgemmtune (ctypes).

One Runner per device. A tuned entry becomes a plan the first time it runs,
under the runner's lock, and is kept for the process: for a generated kernel
(GT_DB_GENERATED) gt_db_kernel_get re-creates it and
gt_db_kernel_cuda_load compiles it with NVRTC for this device and loads it
(once per device); each call enqueues gt_db_kernel_cuda_launch_ex on the
current stream, with a workspace per stream from PyTorch's allocator.

A tuned cuBLASLt configuration (GT_DB_OK) runs through libgemmtune's plan
API: gt_db_plan_create builds the descriptors and layouts exactly as the
tuning built them, re-creates and checks the algo and keeps a cublasLt
handle; each call enqueues gt_db_plan_run (cublasLtMatmul with that algo) on
the current stream, with the bias pointer when the GEMM has one and a
workspace per stream. A config this device's cuBLASLt refuses
(GT_DB_REJECTED) runs PyTorch's path ("fallback_cublaslt_rejected"), and so
does every tuned cuBLASLt GEMM with a libgemmtune too old for plans
("fallback_cublaslt_no_plan_api").
"""

import ctypes
import threading

import torch

from .. import _lib
from ..db import GENERATED, OK, REJECTED

__all__ = ["Runner"]

_ALIGN = 16


def _bind(device):
    """The device's primary context current on this thread. torch.cuda.device() calls
    cudaSetDevice only when the thread's device differs, so a new thread whose first GPU
    work is a tuned GEMM has no current context, and libgemmtune's driver calls would fail
    (seen on the H100: CUDA_ERROR_INVALID_CONTEXT from a plan made on a worker thread)."""
    lib = _lib.load()
    if not _lib.has("gt_db_cuda_bind_device"):
        return
    err = ctypes.create_string_buffer(512)
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if lib.gt_db_cuda_bind_device(idx, err, len(err)) != 0:
        raise RuntimeError(f"gt_db_cuda_bind_device({idx}): {err.value.decode(errors='replace')}")


class _KernelPlan:
    def __init__(self, db, desc, model, device):
        lib = _lib.load()
        for fn in ("gt_db_kernel_cuda_load", "gt_db_kernel_cuda_launch_ex"):
            if not _lib.has(fn):
                raise RuntimeError(f"{_lib.path()} is not a CUDA build of libgemmtune (no {fn})")
        rc, k = db.kernel_c(desc, model)
        if k is None:
            raise RuntimeError(f"gt_db_kernel_get: {lib.gt_db_strerror(rc).decode()}")
        self._db = db
        self.k = k
        self.mod = _lib.ModuleC()
        err = ctypes.create_string_buffer(4096)
        with torch.cuda.device(device):
            _bind(device)
            if lib.gt_db_kernel_cuda_load(k, ctypes.byref(self.mod), err, len(err)) != 0:
                db.free_kernel(k)
                self.k = None
                raise RuntimeError(f"gt_db_kernel_cuda_load: {err.value.decode(errors='replace')}")
        self.ws_bytes = k.contents.workspace_bytes
        self.ws_zero = bool(k.contents.workspace_zero)
        self._ws = {}  # stream handle -> workspace tensor (launches sharing one must not overlap)
        self._lock = threading.Lock()
        self.device = device

    def workspace(self, stream):
        if not self.ws_bytes:
            return None
        w = self._ws.get(stream)
        if w is None:
            with self._lock:
                w = self._ws.get(stream)
                if w is None:
                    alloc = torch.zeros if self.ws_zero else torch.empty
                    w = alloc(self.ws_bytes, dtype=torch.uint8, device=self.device)
                    self._ws[stream] = w
        return w.data_ptr()

    def launch(self, stream, a, b, c, bias, d, flags=0):
        lib = _lib.load()
        err = ctypes.create_string_buffer(512)
        ws = self.workspace(stream)
        # the module's functions launch only in its context: this device's, which a call on
        # another GPU's tensors need not find current (a plan switches by itself)
        with torch.cuda.device(self.device):
            rc = lib.gt_db_kernel_cuda_launch_ex(
                self.k, ctypes.byref(self.mod), stream, a, b, c, bias, d, ws, flags, err, len(err)
            )
        if rc != 0:
            raise RuntimeError(f"gt_db_kernel_cuda_launch: {err.value.decode(errors='replace')}")


class _LtPlan:
    """A tuned cuBLASLt config as a libgemmtune plan (gt_db_plan_create)."""

    def __init__(self, db, desc, model, device):
        lib = _lib.load()
        self.p = None
        c = desc.to_c()
        out = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        with torch.cuda.device(device):
            _bind(device)
            rc = lib.gt_db_plan_create(db.handle, ctypes.byref(c), model.encode(), ctypes.byref(out), err, len(err))
        self.rc = rc
        if rc != OK:
            # REJECTED is the device's answer, not a failure: the caller falls back
            if rc == REJECTED:
                self.why = err.value.decode(errors="replace")
                return
            raise RuntimeError(f"gt_db_plan_create: {lib.gt_db_strerror(rc).decode()}: "
                               f"{err.value.decode(errors='replace')}")
        self.p = out
        nbytes, zero = ctypes.c_size_t(), ctypes.c_int()
        lib.gt_db_plan_workspace(out, ctypes.byref(nbytes), ctypes.byref(zero))
        self.ws_bytes = nbytes.value
        self.ws_zero = bool(zero.value)
        self._ws = {}  # stream handle -> workspace tensor (runs sharing one must not overlap)
        self._lock = threading.Lock()
        self.device = device

    workspace = _KernelPlan.workspace

    def launch(self, stream, a, b, c, bias, d, flags=0):
        lib = _lib.load()
        err = ctypes.create_string_buffer(512)
        ws = self.workspace(stream)
        rc = lib.gt_db_plan_run(self.p, stream, a, b, c, bias, d, None, None, None, ws, flags, err, len(err))
        if rc != OK:
            raise RuntimeError(f"gt_db_plan_run: {err.value.decode(errors='replace')}")

    def __del__(self):
        try:
            if self.p:
                _lib.load().gt_db_plan_free(self.p)
                self.p = None
        except Exception:
            pass


class Runner:
    """Tuned GEMMs of one CUDA device."""

    def __init__(self, db, device, flags=0):
        self.db = db
        self.flags = flags  # gt_db_plan_run's: GT_DB_LAUNCH_CHAINED for use(launch="chained")
        self.device = torch.device(device)
        self.index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        self._lock = threading.Lock()

    def _plan(self, decision, desc, model):
        if decision.plan is None:
            with self._lock:
                if decision.plan is None and decision.broken is None:
                    try:
                        # the plan API runs either kind of winner and binds the plan's
                        # device on the thread that runs it; a library without it runs
                        # only generated kernels
                        make = _LtPlan if _lib.has("gt_db_plan_create") or decision.lookup.rc != GENERATED \
                            else _KernelPlan
                        decision.plan = make(self.db, desc, model, self.device)
                    except Exception as e:
                        decision.broken = str(e)
                        raise
        return decision.plan

    def native_plan(self, decision, call, model):
        """(plan, None): the gt_db_plan (_LtPlan, for either kind of winner)
        the native path runs, the decision's one plan (_plan); or (None,
        reason) to run PyTorch's path. Raises when the plan cannot be made."""
        rc = decision.lookup.rc
        if rc not in (OK, GENERATED):
            return None, "not_runnable"
        if not _lib.has("gt_db_plan_create"):
            return None, "cublaslt_no_plan_api" if rc == OK else "no_plan_api"
        plan = self._plan(decision, call.desc, model)  # the Python path's plan too: made once
        if plan is None:
            raise RuntimeError(decision.broken or "no plan")
        if plan.p is None:  # cuBLASLt refused the config here, or a kernel this library cannot build
            return None, "cublaslt_rejected" if rc == OK else "generated_rejected"
        return plan, None

    def run(self, decision, call, p, model):
        """(output, None) after enqueueing the tuned implementation on the
        current stream, or (None, reason) to run PyTorch's path."""
        if decision.lookup.rc == OK and not _lib.has("gt_db_plan_create"):
            return None, "cublaslt_no_plan_api"
        if decision.lookup.rc not in (OK, GENERATED):
            return None, "not_runnable"
        a, b = p[call.a.arg], p[call.b.arg]
        bias = p[call.bias] if call.bias else None
        c = None
        if call.c_from:
            # beta != 0: C is the input broadcast to D's shape, in its own buffer
            c = p[call.c_from].expand(call.out_shape).contiguous()
        d = torch.empty(call.out_shape, dtype=call.out_dtype, device=self.device)
        ptrs = [t.data_ptr() for t in (a, b, c, bias, d) if t is not None]
        if any(x % _ALIGN for x in ptrs):
            return None, "misaligned"
        plan = self._plan(decision, call.desc, model)
        if getattr(plan, "p", True) is None:  # an _LtPlan cuBLASLt refused on this device
            return None, "cublaslt_rejected"
        stream = torch._C._cuda_getCurrentRawStream(self.index)
        plan.launch(
            stream,
            a.data_ptr(),
            b.data_ptr(),
            None if c is None else c.data_ptr(),
            None if bias is None else bias.data_ptr(),
            d.data_ptr(),
            self.flags,
        )
        return d, None
