"""GemmDesc: one GEMM as libgemmtune's gt_gemm_desc describes it.

Plain data, hashable, no logic of its own: sizes are BLAS column-major
(op(A) is m x k, op(B) is k x n, C and D are m x n), types are names in any
spelling libgemmtune reads ("bf16", "f32", "tf32" for compute, "f8e4m3" ...).
Defaults are gt_gemm_desc_init's: batch 1, NN, tight leading dimensions (0)
and batch strides (-1), compute/scale types implied by the inputs, alpha 1,
beta 0, no epilogue. Whether two descriptions are the same GEMM is decided by
libgemmtune (Database.key, Database.lookup), never here.
"""

import ctypes
from dataclasses import dataclass, fields, replace
from typing import Optional

from . import _lib

__all__ = ["GemmDesc"]


@dataclass(frozen=True)
class GemmDesc:
    m: int
    n: int
    k: int
    a_type: str = "f32"
    b_type: Optional[str] = None  # None: a_type
    c_type: Optional[str] = None  # None: d_type, else a_type
    d_type: Optional[str] = None  # None: a_type
    batch: int = 1
    transa: str = "N"
    transb: str = "N"
    lda: int = 0
    ldb: int = 0
    ldc: int = 0
    ldd: int = 0
    stride_a: int = -1
    stride_b: int = -1
    stride_c: int = -1
    stride_d: int = -1
    compute_type: Optional[str] = None
    scale_type: Optional[str] = None
    alpha: float = 1.0
    beta: float = 0.0
    bias: bool = False
    bias_type: Optional[str] = None
    activation: Optional[str] = None

    def replace(self, **changes):
        """A copy with some fields changed."""
        return replace(self, **changes)

    def as_dict(self):
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_c(self):
        """The gt_gemm_desc of this description (owns its strings)."""
        d = _lib.GemmDescC()
        a = self.a_type
        dt = self.d_type or a
        enc = lambda s: None if s is None else s.encode()  # noqa: E731
        d.m, d.n, d.k, d.batch = self.m, self.n, self.k, self.batch
        d.transa, d.transb = self.transa.encode(), self.transb.encode()
        d.lda, d.ldb, d.ldc, d.ldd = self.lda, self.ldb, self.ldc, self.ldd
        d.stride_a, d.stride_b = self.stride_a, self.stride_b
        d.stride_c, d.stride_d = self.stride_c, self.stride_d
        d.a_type = enc(a)
        d.b_type = enc(self.b_type or a)
        d.c_type = enc(self.c_type or dt)
        d.d_type = enc(dt)
        d.compute_type = enc(self.compute_type)
        d.scale_type = enc(self.scale_type)
        d.alpha, d.beta = float(self.alpha), float(self.beta)
        d.bias = 1 if self.bias else 0
        d.bias_type = enc(self.bias_type)
        d.activation = enc(self.activation)
        return d

    def key(self):
        """gemmtune's canonical problem key of this GEMM (gt_db_key)."""
        lib = _lib.load()
        c = self.to_c()
        buf = ctypes.create_string_buffer(1024)
        err = ctypes.create_string_buffer(256)
        n = lib.gt_db_key(ctypes.byref(c), buf, len(buf), err, len(err))
        if n < 0:
            raise ValueError(f"not a GEMM gemmtune can describe: {err.value.decode()}")
        return buf.value.decode()

    def record_line(self, calls=1):
        """This GEMM, called `calls` times, as the hipBLASLt bench line
        libgemmtune's recorder writes (gt_db_record_line); ValueError with
        libgemmtune's reason when it is not a GEMM gemmtune describes."""
        lib = _lib.load()
        if not _lib.has("gt_db_record_line"):
            raise _lib.LibraryNotFound(
                f"{_lib.path()} has no gt_db_record_line: rebuild libgemmtune from this tree"
            )
        c = self.to_c()
        buf = ctypes.create_string_buffer(2048)
        err = ctypes.create_string_buffer(256)
        n = lib.gt_db_record_line(ctypes.byref(c), int(calls), buf, len(buf), err, len(err))
        if n < 0:
            raise ValueError(err.value.decode())
        if n >= len(buf):
            raise ValueError("record line longer than 2 KiB")
        return buf.value.decode()
