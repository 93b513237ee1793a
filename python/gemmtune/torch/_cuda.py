"""Running a tuned GEMM on a CUDA device through libgemmtune (ctypes).

One Runner per device. A tuned entry becomes a plan the first time it runs,
under the runner's lock, and is kept for the process: for a generated kernel
(GT_DB_GENERATED) gt_db_kernel_get re-creates it and
gt_db_kernel_cuda_load compiles it with NVRTC for this device and loads it
(once per device); each call enqueues gt_db_kernel_cuda_launch_ex on the
current stream, with a workspace per stream from PyTorch's allocator.

A tuned cuBLASLt configuration (GT_DB_OK) needs descriptors built exactly as
the tuning built them, which libgemmtune keeps internal: this first version
runs PyTorch's path for those and says so in the router's counters
("fallback_cublaslt_no_run_api") until libgemmtune exports a run call for
them (the package's README describes the one needed).
"""

import ctypes
import threading

import torch

from .. import _lib
from ..db import GENERATED, OK

__all__ = ["Runner"]

_ALIGN = 16


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
            torch.cuda.current_stream(device)  # the primary context is current on this thread
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

    def launch(self, stream, a, b, c, bias, d):
        lib = _lib.load()
        err = ctypes.create_string_buffer(512)
        ws = self.workspace(stream)
        rc = lib.gt_db_kernel_cuda_launch_ex(
            self.k, ctypes.byref(self.mod), stream, a, b, c, bias, d, ws, 0, err, len(err)
        )
        if rc != 0:
            raise RuntimeError(f"gt_db_kernel_cuda_launch: {err.value.decode(errors='replace')}")


class Runner:
    """Tuned GEMMs of one CUDA device."""

    def __init__(self, db, device):
        self.db = db
        self.device = torch.device(device)
        self.index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        self._lock = threading.Lock()

    def _plan(self, decision, desc, model):
        if decision.plan is None:
            with self._lock:
                if decision.plan is None and decision.broken is None:
                    try:
                        decision.plan = _KernelPlan(self.db, desc, model, self.device)
                    except Exception as e:
                        decision.broken = str(e)
                        raise
        return decision.plan

    def run(self, decision, call, p, model):
        """(output, None) after enqueueing the tuned implementation on the
        current stream, or (None, reason) to run PyTorch's path."""
        if decision.lookup.rc == OK:
            return None, "cublaslt_no_run_api"
        if decision.lookup.rc != GENERATED:
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
        stream = torch._C._cuda_getCurrentRawStream(self.index)
        plan.launch(
            stream,
            a.data_ptr(),
            b.data_ptr(),
            None if c is None else c.data_ptr(),
            None if bias is None else bias.data_ptr(),
            d.data_ptr(),
        )
        return d, None
