"""gemmtune.torch.record: the GEMMs a model issues, as a log gemmtune ingests.

    with gemmtune.torch.record("gemms.log") as rec:
        model(x)                       # CPU, CUDA, meta or fake tensors
    rec.gemms                          # [(GemmDesc, calls), ...]
    rec.skipped                        # [(op, reason, calls), ...]

A TorchDispatchMode on the calling thread sees every aten operator the model
really runs (after F.linear, matmul, ... decompose): each aten.mm, addmm,
bmm, baddbmm and _scaled_mm is described as the cuBLAS/cuBLASLt call
PyTorch's CUDA backend makes for it (_blas.py) and counted; identical calls
add up. On exit the log is written: one hipBLASLt bench line per GEMM with
every field (sizes, leading dimensions, batch strides, types, alpha/beta,
epilogue, call_count), produced by libgemmtune (gt_db_record_line, the writer
of libgemmtune-preload.so's GEMMTUNE_RECORD) and merged on libgemmtune's
problem key. Products PyTorch runs outside a modelled GEMM (mv, dot,
_int_mm, row-wise fp8 scales, ...) are listed in `skipped` with the reason.
"""

import os
import threading

from torch.utils._python_dispatch import TorchDispatchMode

from .._files import write_atomic
from . import _blas, _router, ops

__all__ = ["record", "Recorder"]

_WATCHED = set(_blas.GEMM_OPS) | set(_blas.OTHER_PRODUCTS) | {op + "_" for op in _blas.GEMM_OPS}


class _RecordMode(TorchDispatchMode):
    def __init__(self, rec):
        super().__init__()
        self.rec = rec

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        ref = ops.reference(func)
        if ref is not None:
            # a routed gemmtune:: op (record inside use()): record what it runs
            with self:
                return ref(*args, **kwargs)
        if func._schema.name in _router.DECOMPOSE:
            # reached whole (below autograd, e.g. inside a custom op): decompose it here
            with self:
                out = func.decompose(*args, **kwargs)
            if out is not NotImplemented:
                return out
        ns, _, name = func._schema.name.partition("::")
        call = why = None
        if ns == "aten" and name in _WATCHED:
            call, why = _blas.describe(func, args, kwargs)
        out = func(*args, **kwargs)
        if ns == "aten" and name in _WATCHED:
            self.rec._add(name, call, why)
        return out


class Recorder:
    """The GEMMs seen while it was entered (this thread only)."""

    def __init__(self, path=None):
        self.path = None if path is None else os.fspath(path)
        self._lock = threading.Lock()
        self._calls = {}  # GemmDesc -> calls, in first-seen order
        self._skipped = {}  # (op, reason) -> calls
        self._mode = None

    def _add(self, op, call, why):
        with self._lock:
            if call is not None:
                self._calls[call.desc] = self._calls.get(call.desc, 0) + 1
            else:
                k = (op, why or "not modelled")
                self._skipped[k] = self._skipped.get(k, 0) + 1

    @property
    def gemms(self):
        """[(GemmDesc, calls)] in first-seen order."""
        with self._lock:
            return list(self._calls.items())

    @property
    def skipped(self):
        """[(aten op, reason, calls)] of products not recorded."""
        with self._lock:
            return [(op, why, n) for (op, why), n in self._skipped.items()]

    def lines(self):
        """The log's lines: one per distinct problem key (libgemmtune's),
        call counts added up."""
        merged = {}
        for desc, n in self.gemms:
            key = desc.key()
            if key in merged:
                merged[key] = (merged[key][0], merged[key][1] + n)
            else:
                merged[key] = (desc, n)
        return [desc.record_line(n) for desc, n in merged.values()]

    def write(self, path=None):
        """Writes the log (atomically) to path or the recorder's path; returns it."""
        path = os.fspath(path) if path is not None else self.path
        if path is None:
            raise ValueError("no path to write the record to")
        return write_atomic(path, "".join(self.lines()), ".gemmtune-record-")

    def __enter__(self):
        if self._mode is not None:
            raise RuntimeError("this recorder is already recording")
        self._mode = _RecordMode(self)
        self._mode.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        mode, self._mode = self._mode, None
        mode.__exit__(exc_type, exc, tb)
        if exc_type is None and self.path is not None:
            self.write()
        return False


def record(path=None):
    """A Recorder (context manager): records the GEMMs run inside it and, when
    path is given, writes them there on a normal exit."""
    return Recorder(path)

