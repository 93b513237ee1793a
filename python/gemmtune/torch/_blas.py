"""The cuBLAS/cuBLASLt call PyTorch's CUDA backend makes for one aten GEMM.

describe(func, args, kwargs) mirrors, step for step, how PyTorch turns
aten.mm / addmm / bmm / baddbmm / _scaled_mm into a column-major BLAS call
(aten/src/ATen/native/cuda/Blas.cpp and cuBlasCommonArgs.h:
prepare_matrix_for_cublas, cublasCommonArgs, prepare_batch_matrix_for_cublas,
baddbmm_out_cuda_impl, isInputCompliesAddmmCudaLt / useLtInterface, and
CUDABlas.cpp's _cublasAdjustLdLevel3), so that the description is what
cublasLtMatmul (or cublasGemmEx) sees, on any device, meta and fake tensors
included. A row-major Y[M,N] = X[M,K] @ W^T (nn.Linear) becomes the
column-major Y^T = W X^T: m = N (out_features), n = M (tokens), k = K,
transA = T, transB = N, lda = ldb = K, ldc = N, as TunableOp names it
(GemmTunableOp_BFloat16_TN,tn_<N>_<M>_<K>_ld_<K>_<K>_<N>).

Only the description lives here; whether a description is tuned is asked of
libgemmtune. An operand PyTorch would copy first (neither stride 1 with a
leading stride in range) is described as the contiguous copy PyTorch makes
and marked copy=True.
"""

import os
from dataclasses import dataclass
from typing import Optional

import torch

from ..desc import GemmDesc

__all__ = ["BlasCall", "describe", "GEMM_OPS", "dtype_name"]

_DTYPES = {
    torch.float32: "f32",
    torch.float64: "f64",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
}
for _n, _g in (
    ("float8_e4m3fn", "f8e4m3"),
    ("float8_e5m2", "f8e5m2"),
    ("float8_e4m3fnuz", "f8e4m3fnuz"),
    ("float8_e5m2fnuz", "f8e5m2fnuz"),
):
    if hasattr(torch, _n):
        _DTYPES[getattr(torch, _n)] = _g
_FP8 = {t for t, n in _DTYPES.items() if n.startswith("f8")}
_LT_ADDMM_TYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def dtype_name(dt):
    """gemmtune's name of a torch dtype; None when gemmtune has no such GEMM type."""
    return _DTYPES.get(dt)


@dataclass(frozen=True)
class Operand:
    """Where a BLAS operand comes from: the aten argument name, and whether
    PyTorch copies it to a contiguous tensor first."""

    arg: str
    copy: bool = False


@dataclass(frozen=True)
class BlasCall:
    """One GEMM as PyTorch hands it to cuBLAS(Lt)."""

    desc: GemmDesc
    a: Operand  # BLAS A (after PyTorch's operand swap)
    b: Operand
    bias: Optional[str]  # argument added by the bias epilogue (Lt path)
    c_from: Optional[str]  # argument copied into D before the GEMM (beta != 0: C is D)
    out_shape: tuple
    out_dtype: torch.dtype
    op: str  # aten op name: mm, addmm, bmm, baddbmm, _scaled_mm


class _Mat:
    """Sizes and strides of a tensor (or of the copy PyTorch would make)."""

    __slots__ = ("sizes", "strides", "contiguous", "dense", "copy")

    def __init__(self, sizes, strides, contiguous, copy=False):
        self.sizes = tuple(int(s) for s in sizes)
        self.strides = tuple(int(s) for s in strides)
        self.contiguous = bool(contiguous)
        self.dense = self.contiguous or _non_overlapping_and_dense(self.sizes, self.strides)
        self.copy = copy

    @classmethod
    def of(cls, t):
        return cls(t.shape, t.stride(), t.is_contiguous())

    @classmethod
    def fresh(cls, sizes):
        """A new contiguous tensor of these sizes (at::empty, clone(Contiguous))."""
        st, acc = [], 1
        for s in reversed(sizes):
            st.append(acc)
            acc *= max(int(s), 1)
        return cls(sizes, tuple(reversed(st)), True)

    def copied(self):
        m = _Mat.fresh(self.sizes)
        m.copy = True
        return m


def _non_overlapping_and_dense(sizes, strides):
    """c10's compute_non_overlapping_and_dense (TensorImpl.cpp)."""
    if len(sizes) == 1:
        return sizes[0] < 2 or strides[0] == 1
    perm = sorted(range(len(sizes)), key=lambda i: (sizes[i] < 2, strides[i] if sizes[i] >= 2 else 0))
    need = 1
    for i in perm:
        if sizes[i] < 2:
            return True
        if strides[i] != need:
            return False
        need *= sizes[i]
    return True


def _prep(m):
    """prepare_matrix_for_cublas: (transpose_tensor, the matrix cuBLAS reads)."""
    if m.dense:
        return m.contiguous, m
    (s0, s1), (n0, n1) = m.strides, m.sizes
    if s0 == 1 and s1 >= max(1, n0):
        return False, m
    if s1 == 1 and s0 >= max(1, n1):
        return True, m
    return True, m.copied()


class _Args:
    """cublasCommonArgs(mat1, mat2, result)."""

    def __init__(self, mat1, mat2, result):
        tr, res = _prep(result)
        ta, a = _prep(mat2 if tr else mat1)
        tb, b = _prep(mat1 if tr else mat2)
        if tr:
            ta, tb = not ta, not tb
        self.swapped = tr
        self.m = a.sizes[1 if tr else 0]
        self.k = a.sizes[0 if tr else 1]
        self.n = b.sizes[0 if tr else 1]
        self.lda = a.strides[1 if ta == tr else 0]
        self.ldb = b.strides[1 if tb == tr else 0]
        self.ldc = res.strides[0 if tr else 1]
        self.ta, self.tb = ta, tb
        self.a_copy, self.b_copy = a.copy, b.copy
        self.result_copy = res.copy


def _adjust_ld(ta, tb, m, n, k, lda, ldb, ldc):
    """_cublasAdjustLdLevel3 (CUDABlas.cpp), applied by gemm and bgemm."""
    if n <= 1:
        ldc = max(m, 1)
    if ta:
        if m <= 1:
            lda = max(k, 1)
    elif k <= 1:
        lda = max(m, 1)
    if tb:
        if k <= 1:
            ldb = max(n, 1)
    elif n <= 1:
        ldb = max(k, 1)
    return lda, ldb, ldc


class Args:
    """A call's arguments by schema name, read lazily (runners read three or
    four of them per call)."""

    __slots__ = ("args", "kwargs", "index")
    _index = {}

    def __init__(self, func, args, kwargs):
        idx = Args._index.get(func)
        if idx is None:
            idx = Args._index[func] = {a.name: i for i, a in enumerate(func._schema.arguments)}
        self.args, self.kwargs, self.index = args, kwargs, idx

    def __getitem__(self, name):
        i = self.index[name]
        return self.args[i] if i < len(self.args) else self.kwargs[name]


def _bind(func, args, kwargs):
    """The call's arguments by schema name (schemas differ across versions)."""
    out = {}
    for i, a in enumerate(func._schema.arguments):
        if i < len(args):
            out[a.name] = args[i]
        elif a.name in kwargs:
            out[a.name] = kwargs[a.name]
        elif a.has_default_value():
            out[a.name] = a.default_value
        else:
            out[a.name] = None
    return out


def _compute_type(dt):
    """PyTorch's cuBLAS compute type for f32 GEMMs: TF32 when allowed."""
    if dt == torch.float32 and torch._C._get_cublas_allow_tf32():
        return "tf32"
    return None  # libgemmtune's default: f64 for f64, else f32


def _lt_addmm(self_, mat1, mat2, beta, result):
    """Whether CUDA addmm takes the cuBLASLt bias-epilogue path
    (gemm_and_bias, beta 0); else it copies self into the result and runs a
    GEMM with beta (the non-Lt path). Blas.cpp (CUDA >= 12.1 builds): beta 1,
    a contiguous 1-D self of mat2's column count, a contiguous 2-D result,
    f64/f32/f16/bf16, mat2 with more than one row and column; and not with
    DISABLE_ADDMM_CUDA_LT=1. Checked on an H100 with torch 2.11 against the
    cuBLASLt calls themselves (tests/test_gpu.py): a one-row mat1 (one
    token) does take the Lt path; a [1, N] bias, a one-column mat2, K = 1 or
    beta != 1 do not. (A later refactor in PyTorch's main branch also asks
    mat1 for two rows; no release seen here has it.)"""
    if os.environ.get("DISABLE_ADDMM_CUDA_LT") == "1":
        return False
    if beta != 1 or not result.contiguous or len(result.sizes) != 2:
        return False
    if mat1.dtype not in _LT_ADDMM_TYPES:
        return False
    m2 = tuple(mat2.shape)
    return (
        self_.dim() == 1
        and int(self_.shape[0]) == m2[1]
        and self_.is_contiguous()
        and m2[0] > 1
        and m2[1] > 1
    )


def _types(a, b, out_dtype):
    names = [dtype_name(t) for t in (a, b, out_dtype)]
    if None in names:
        return None
    return names


def _mm_like(op, p, result_mat, out_dtype):
    mat1 = p["self"] if op == "mm" else p["mat1"]
    mat2 = p["mat2"]
    if mat1.dim() != 2 or mat2.dim() != 2:
        return None, "not 2-D"
    M, K = (int(s) for s in mat1.shape)
    N = int(mat2.shape[1])
    if M == 0 or N == 0 or K == 0:
        return None, "empty GEMM (PyTorch calls no BLAS)"
    if mat1.dtype != mat2.dtype:
        return None, "mixed input dtypes"
    if mat1.is_complex() or mat1.is_conj() or mat2.is_conj():
        return None, "complex"
    if mat1.is_neg() or mat2.is_neg():
        return None, "negative-bit view (PyTorch materializes it first)"
    res = result_mat or _Mat.fresh((M, N))
    args = _Args(_Mat.of(mat1), _Mat.of(mat2), res)
    if args.result_copy:
        return None, "non-dense output"
    types = _types(mat1.dtype, mat2.dtype, out_dtype)
    if types is None:
        return None, f"dtype {mat1.dtype} not a gemmtune GEMM type"
    if mat1.dtype in _FP8:
        return None, "fp8 through aten.mm (only _scaled_mm reaches cuBLASLt)"
    alpha = float(p.get("alpha", 1) if op == "addmm" else 1)
    beta = float(p.get("beta", 1) if op == "addmm" else 0)
    bias = None
    c_from = None
    lda, ldb, ldc = args.lda, args.ldb, args.ldc
    if op == "addmm" and beta != 0 and _lt_addmm(p["self"], mat1, mat2, beta, res):
        bias, beta = "self", 0.0
    else:
        if op == "addmm" and beta != 0:
            c_from = "self"
        lda, ldb, ldc = _adjust_ld(args.ta, args.tb, args.m, args.n, args.k, lda, ldb, ldc)
    a_arg, b_arg = ("mat2", "mat1") if args.swapped else ("mat1", "mat2")
    if op == "mm":
        a_arg, b_arg = ("mat2", "self") if args.swapped else ("self", "mat2")
    at, bt = (types[1], types[0]) if args.swapped else (types[0], types[1])
    desc = GemmDesc(
        m=args.m,
        n=args.n,
        k=args.k,
        a_type=at,
        b_type=bt,
        c_type=types[2],
        d_type=types[2],
        transa="T" if args.ta else "N",
        transb="T" if args.tb else "N",
        lda=lda,
        ldb=ldb,
        ldc=ldc,
        ldd=ldc,
        compute_type=_compute_type(mat1.dtype),
        alpha=alpha,
        beta=beta,
        bias=bias is not None,
    )
    return (
        BlasCall(desc, Operand(a_arg, args.a_copy), Operand(b_arg, args.b_copy), bias, c_from, (M, N), out_dtype, op),
        None,
    )


def _prep_batch(t, tr, m, n):
    """prepare_batch_matrix_for_cublas: (transpose, ld, matrix read)."""
    fast, lead = (2, 1) if tr else (1, 2)
    s = t.strides
    if s[fast] == 1 and s[lead] >= max(1, m):
        return False, s[lead], t
    if s[lead] == 1 and s[fast] >= max(1, n):
        return True, s[fast], t
    if not (t.contiguous and s[1] != 0 and s[2] != 0):
        t = t.copied()
    return not tr, t.strides[1], t


def _bmm_like(op, p, result_mat, out_dtype):
    b1, b2 = p["self"] if op == "bmm" else p["batch1"], p["mat2"] if op == "bmm" else p["batch2"]
    if b1.dim() != 3 or b2.dim() != 3:
        return None, "not 3-D"
    B, M, K = (int(s) for s in b1.shape)
    N = int(b2.shape[2])
    if B == 0 or M == 0 or N == 0 or K == 0:
        return None, "empty GEMM (PyTorch calls no BLAS)"
    if b1.dtype != b2.dtype:
        return None, "mixed input dtypes"
    if b1.is_complex():
        return None, "complex"
    if b1.is_neg() or b2.is_neg():
        return None, "negative-bit view (PyTorch materializes it first)"
    types = _types(b1.dtype, b2.dtype, out_dtype)
    if types is None or b1.dtype in _FP8:
        return None, f"dtype {b1.dtype} not a gemmtune GEMM type"
    res = result_mat or _Mat.fresh((B, M, N))
    rs, rz = res.strides, res.sizes
    if rs[1] == 1 and (rz[2] == 1 or rs[2] >= max(1, rz[1])):
        tr = False
    elif rs[2] == 1 and (rz[1] == 1 or rs[1] >= max(1, rz[2])):
        tr = True
    else:
        return None, "non-dense output"
    lead = 1 if tr else 2
    m = rz[2 if tr else 1]
    n = rz[lead]
    mb1, mb2 = _Mat.of(b1), _Mat.of(b2)
    k = (mb2 if tr else mb1).sizes[lead]
    ta, lda, ma = _prep_batch(mb2 if tr else mb1, tr, m, k)
    tb, ldb, mbm = _prep_batch(mb1 if tr else mb2, tr, k, n)
    ldc = rs[lead]
    lda, ldb, ldc = _adjust_ld(ta, tb, m, n, k, lda, ldb, ldc)
    alpha = float(p.get("alpha", 1) if op == "baddbmm" else 1)
    beta = float(p.get("beta", 1) if op == "baddbmm" else 0)
    names = ("batch1", "batch2") if op == "baddbmm" else ("self", "mat2")
    a_arg, b_arg = (names[1], names[0]) if tr else names
    at, bt = (types[1], types[0]) if tr else (types[0], types[1])
    extra = {}
    if B > 1:
        extra = dict(batch=B, stride_a=ma.strides[0], stride_b=mbm.strides[0], stride_c=rs[0], stride_d=rs[0])
    desc = GemmDesc(
        m=m,
        n=n,
        k=k,
        a_type=at,
        b_type=bt,
        c_type=types[2],
        d_type=types[2],
        transa="T" if ta else "N",
        transb="T" if tb else "N",
        lda=lda,
        ldb=ldb,
        ldc=ldc,
        ldd=ldc,
        compute_type=_compute_type(b1.dtype),
        alpha=alpha,
        beta=beta,
        **extra,
    )
    c_from = "self" if op == "baddbmm" and beta != 0 else None
    return (
        BlasCall(desc, Operand(a_arg, ma.copy), Operand(b_arg, mbm.copy), None, c_from, (B, M, N), out_dtype, op),
        None,
    )


def _scaled_mm(p, result_mat):
    mat1, mat2 = p["self"], p["mat2"]
    sa, sb = p.get("scale_a"), p.get("scale_b")
    if mat1.dtype not in _FP8 or mat2.dtype not in _FP8:
        return None, "_scaled_mm of non-fp8 inputs"
    if "fnuz" in str(mat1.dtype) or "fnuz" in str(mat2.dtype):
        return None, "FNUZ fp8 (ROCm): not a cuBLASLt type"
    if sa is None or sb is None:
        return None, "_scaled_mm without scales"
    if sa.numel() != 1 or sb.numel() != 1 or sa.dtype != torch.float32 or sb.dtype != torch.float32:
        return None, "row-wise or block scales (PyTorch runs them outside cuBLASLt's per-tensor mode)"
    if p.get("use_fast_accum"):
        return None, "fp8 fast accumulation is not modelled"
    out_dtype = p.get("out_dtype") or mat1.dtype
    if out_dtype in _FP8 and p.get("scale_result") is None:
        return None, "fp8 output without scale_result (no D scale pointer) is not modelled"
    M, K = (int(s) for s in mat1.shape)
    N = int(mat2.shape[1])
    res = result_mat or _Mat.fresh((M, N))
    args = _Args(_Mat.of(mat1), _Mat.of(mat2), res)
    if args.a_copy or args.b_copy or args.result_copy:
        return None, "_scaled_mm needs row-major mat1 and column-major mat2"
    bias = p.get("bias")
    # Blas.cpp: bias_dtype = bias ? bias's : (fp8 out ? Half : out); C has it.
    bias_dt = bias.dtype if bias is not None else (torch.float16 if out_dtype in _FP8 else out_dtype)
    names = [dtype_name(t) for t in (mat1.dtype, mat2.dtype, bias_dt, out_dtype)]
    if None in names:
        return None, "unsupported dtypes"
    at, bt = (names[1], names[0]) if args.swapped else (names[0], names[1])
    desc = GemmDesc(
        m=args.m,
        n=args.n,
        k=args.k,
        a_type=at,
        b_type=bt,
        c_type=names[2],
        d_type=names[3],
        transa="T" if args.ta else "N",
        transb="T" if args.tb else "N",
        lda=args.lda,
        ldb=args.ldb,
        ldc=args.ldc,
        ldd=args.ldc,
        bias=bias is not None,
        bias_type=names[2] if bias is not None else None,
    )
    a_arg, b_arg = ("mat2", "self") if args.swapped else ("self", "mat2")
    return (
        BlasCall(desc, Operand(a_arg), Operand(b_arg), "bias" if bias is not None else None, None, (M, N), out_dtype,
                 "_scaled_mm"),
        None,
    )


GEMM_OPS = ("mm", "addmm", "bmm", "baddbmm", "_scaled_mm")
# aten ops that compute a product but never reach a modelled cuBLAS GEMM
OTHER_PRODUCTS = ("mv", "addmv", "dot", "vdot", "addbmm", "_int_mm", "_addmm_activation", "addr")


def describe(func, args, kwargs=None):
    """(BlasCall, None) for an aten GEMM PyTorch's CUDA backend hands to
    cuBLAS(Lt); (None, reason) when it does not, or not in a way gemmtune
    models. func: an aten OpOverload (aten.mm.default, aten.addmm.out, ...)."""
    kwargs = kwargs or {}
    op = func._schema.name.split("::")[-1]
    if op.endswith("_") and op[:-1] in GEMM_OPS:
        return None, f"aten.{op} (in place) is not modelled"
    if op not in GEMM_OPS:
        return None, f"aten.{op}: no cuBLAS GEMM gemmtune models (gemv, dot, int8, fused activation: not recorded)"
    overload = func._overloadname
    if overload not in ("default", "out"):
        return None, f"aten.{op}.{overload} is not modelled"
    p = _bind(func, args, kwargs)
    out = p.get("out") if overload == "out" else None
    if op == "_scaled_mm":
        return _scaled_mm(p, _Mat.of(out) if out is not None else None)
    first = p["self"] if op in ("mm", "bmm") else (p["mat1"] if op == "addmm" else p["batch1"])
    out_dtype = first.dtype
    result_mat = None
    if out is not None:
        if out.dtype != first.dtype:
            return None, "output dtype differs from the inputs'"
        result_mat = _Mat.of(out)
    if op in ("mm", "addmm"):
        return _mm_like(op, p, result_mat, out_dtype)
    return _bmm_like(op, p, result_mat, out_dtype)
