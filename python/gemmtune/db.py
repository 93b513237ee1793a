"""Database: an exported result database (tuned.db) opened by libgemmtune.

Every answer comes from the C library: gt_db_open loads the best table,
gt_db_lookup matches a GemmDesc on its full canonical problem key for one
backend and device model, gt_db_kernel_get re-creates a generated winner.
This module only converts between Python and the C structs.
"""

import ctypes
import threading
from dataclasses import dataclass
from typing import Optional

from . import _lib
from .desc import GemmDesc

__all__ = ["Database", "Lookup", "KernelInfo", "OK", "NOT_TUNED", "REJECTED", "GENERATED", "EINVAL"]

# gemmtune.h return codes
OK = 0
NOT_TUNED = 1
REJECTED = 2
GENERATED = 3
EINVAL = -1

_STATUS = {OK: "tuned", NOT_TUNED: "not_tuned", REJECTED: "rejected", GENERATED: "generated", EINVAL: "invalid"}


def _s(b):
    return None if b is None else b.decode()


@dataclass(frozen=True)
class Lookup:
    """libgemmtune's answer for one GEMM, backend and device model."""

    rc: int
    backend: str
    device_model: str
    key: Optional[str] = None
    config: Optional[str] = None
    time_us: Optional[float] = None
    baseline_us: Optional[float] = None
    uplift: Optional[float] = None

    @property
    def status(self):
        """"tuned" (a library config), "generated" (a generated kernel),
        "not_tuned", "rejected" or "invalid"."""
        return _STATUS.get(self.rc, "unknown")

    @property
    def hit(self):
        """True when the GEMM is tuned here (library config or generated kernel)."""
        return self.rc in (OK, GENERATED)

    def __bool__(self):
        return self.hit


@dataclass(frozen=True)
class KernelInfo:
    """The host-side description of a generated winner (gt_db_kernel)."""

    family: str
    key: str
    device_model: str
    config: str
    time_us: float
    baseline_us: float
    uplift: float
    source: str
    program_name: str
    options: tuple
    min_sm: int
    launches: tuple  # ({kernel, grid, block, shared_bytes, extra_param, extra_value}, ...)
    args_bytes: int
    workspace_bytes: int
    workspace_zero: bool
    arch_specific: bool
    tensor_maps: int
    chain_min_sm: int
    chain_reads_a: bool


def kernel_info(k):
    """KernelInfo of a gt_db_kernel (a ctypes KernelC)."""
    launches = []
    for i in range(k.nlaunch):
        l = k.launch[i]
        launches.append(
            {
                "kernel": _s(l.kernel),
                "grid": tuple(l.grid),
                "block": tuple(l.block),
                "shared_bytes": l.shared_bytes,
                "extra_param": _s(l.extra_param),
                "extra_value": l.extra_value,
            }
        )
    return KernelInfo(
        family=_s(k.family),
        key=_s(k.key),
        device_model=_s(k.device_model),
        config=_s(k.config),
        time_us=k.time_us,
        baseline_us=k.baseline_us,
        uplift=k.uplift,
        source=_s(k.source),
        program_name=_s(k.program_name),
        options=tuple(_s(k.options[i]) for i in range(k.noptions)),
        min_sm=k.min_sm,
        launches=tuple(launches),
        args_bytes=k.args_bytes,
        workspace_bytes=k.workspace_bytes,
        workspace_zero=bool(k.workspace_zero),
        arch_specific=bool(k.arch_specific),
        tensor_maps=k.tensor_maps,
        chain_min_sm=k.chain_min_sm,
        chain_reads_a=bool(k.chain_reads_a),
    )


class Database:
    """An export file opened read-only (gt_db_open). Lookups are thread-safe
    (the C table is read-only after open). Use as a context manager or close()."""

    def __init__(self, path):
        lib = _lib.load()
        err = ctypes.create_string_buffer(512)
        self.path = str(path)
        h = lib.gt_db_open(self.path.encode(), err, len(err))
        if not h:
            raise OSError(err.value.decode())
        self._h = h
        self._lock = threading.Lock()

    @property
    def handle(self):
        """The gt_db pointer (an int) for other libgemmtune calls."""
        if self._h is None:
            raise ValueError("database is closed")
        return self._h

    def close(self):
        with self._lock:
            if self._h is not None:
                _lib.load().gt_db_close(self._h)
                self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __len__(self):
        """Tuned (problem, backend, device model) entries."""
        return _lib.load().gt_db_size(self.handle)

    def lookup(self, desc: GemmDesc, device_model: str, backend: str = "cuda") -> Lookup:
        """The tuned configuration of desc on device_model for backend."""
        lib = _lib.load()
        c = desc.to_c()
        r = _lib.ResultC()
        rc = lib.gt_db_lookup(self.handle, ctypes.byref(c), backend.encode(), device_model.encode(), ctypes.byref(r))
        if rc in (OK, GENERATED):
            return Lookup(
                rc, _s(r.backend), _s(r.device_model), _s(r.key), _s(r.config), r.time_us, r.baseline_us, r.uplift
            )
        return Lookup(rc, backend, device_model)

    def lookup_key(self, key: str, device_model: str, backend: str = "cuda") -> Lookup:
        """The same by canonical problem key (schema/EXPORT.md)."""
        lib = _lib.load()
        r = _lib.ResultC()
        rc = lib.gt_db_lookup_key(self.handle, key.encode(), backend.encode(), device_model.encode(), ctypes.byref(r))
        if rc in (OK, GENERATED):
            return Lookup(
                rc, _s(r.backend), _s(r.device_model), _s(r.key), _s(r.config), r.time_us, r.baseline_us, r.uplift
            )
        return Lookup(rc, backend, device_model)

    def kernel_c(self, desc: GemmDesc, device_model: str):
        """(rc, pointer to a new gt_db_kernel or None): gt_db_kernel_get.
        Free a returned kernel with free_kernel()."""
        lib = _lib.load()
        c = desc.to_c()
        out = ctypes.POINTER(_lib.KernelC)()
        rc = lib.gt_db_kernel_get(self.handle, ctypes.byref(c), device_model.encode(), ctypes.byref(out))
        return rc, (out if rc == OK else None)

    @staticmethod
    def free_kernel(k):
        if k:
            _lib.load().gt_db_kernel_free(k)

    def kernel(self, desc: GemmDesc, device_model: str) -> Optional[KernelInfo]:
        """The generated kernel tuned for desc (backend cuda) on device_model,
        host side only (source, options, launches, workspace); None when the
        winner is not a generated kernel or desc is not tuned there."""
        rc, k = self.kernel_c(desc, device_model)
        if k is None:
            return None
        try:
            return kernel_info(k.contents)
        finally:
            self.free_kernel(k)
