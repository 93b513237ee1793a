"""The column-major description of PyTorch's GEMMs (gemmtune.torch.describe),
against values worked out by hand from PyTorch's CUDA sources (Blas.cpp,
cuBlasCommonArgs.h, CUDABlas.cpp) and against PyTorch's own TunableOp
signatures of Llama-3-8B (tests/data/tunableop_untuned_llama3_8b.csv)."""

import os

import pytest
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

import gemmtune.torch as gt

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def calls_of(fn, *args):
    """The GEMMs fn issues, in order, as (aten op, BlasCall or None, reason)."""
    with gt.record() as rec, torch.no_grad():
        fn(*args)
    return rec


def only(rec):
    g = rec.gemms
    assert len(g) == 1, g
    return g[0][0]


def check(d, **want):
    got = {k: getattr(d, k) for k in want}
    assert got == want


def test_linear_with_bias_is_the_lt_bias_epilogue():
    lin = torch.nn.Linear(64, 96)
    d = only(calls_of(lin, torch.randn(2, 8, 64)))
    # Y[16,96] = X[16,64] W^T + b  ->  D[96x16] = W(T)[96x64] X^T[64x16] + bias
    check(d, m=96, n=16, k=64, transa="T", transb="N", lda=64, ldb=64, ldc=96, ldd=96, batch=1,
          a_type="f32", b_type="f32", c_type="f32", d_type="f32", alpha=1.0, beta=0.0, bias=True)


def test_linear_without_bias():
    lin = torch.nn.Linear(96, 32, bias=False)
    d = only(calls_of(lin, torch.randn(16, 96)))
    check(d, m=32, n=16, k=96, transa="T", transb="N", lda=96, ldb=96, ldc=32, beta=0.0, bias=False)


def test_linear_one_token_with_bias():
    lin = torch.nn.Linear(64, 96)
    # a one-row mat1 still takes the cuBLASLt bias epilogue (seen on an H100, torch 2.11)
    d = only(calls_of(lin, torch.randn(1, 64)))
    check(d, m=96, n=1, k=64, transa="T", transb="N", lda=64, ldb=64, ldc=96, beta=0.0, bias=True)


def test_addmm_cases_outside_the_lt_path():
    # what the H100 (torch 2.11) sent to cuBLASLt as a plain GEMM with beta
    c = torch.randn
    d = only(calls_of(lambda: torch.addmm(c(1), c(8, 72), c(1, 72).t())))  # one output column
    check(d, m=1, n=8, k=72, transa="N", transb="N", lda=1, ldb=72, ldc=1, beta=1.0, bias=False)
    d = only(calls_of(lambda: torch.addmm(c(1, 120), c(8, 64), c(120, 64).t())))  # a [1, N] bias
    check(d, m=120, n=8, k=64, transa="T", transb="N", lda=64, ldb=64, ldc=120, beta=1.0, bias=False)
    d = only(calls_of(lambda: torch.addmm(c(128), c(8, 1), c(128, 1).t())))  # K = 1
    check(d, m=128, n=8, k=1, transa="N", transb="N", lda=128, ldb=1, ldc=128, beta=1.0, bias=False)
    d = only(calls_of(lambda: torch.addmm(c(152), c(8, 64), c(152, 64).t(), alpha=2.0)))
    check(d, m=152, n=8, k=64, alpha=2.0, beta=0.0, bias=True)


def test_transposed_operands():
    a, b = torch.randn(48, 40), torch.randn(48, 24)
    d = only(calls_of(lambda: a.t() @ b))
    check(d, m=24, n=40, k=48, transa="N", transb="T", lda=24, ldb=40, ldc=24)
    a2, b2 = torch.randn(40, 48), torch.randn(24, 48)
    d = only(calls_of(lambda: a2 @ b2.t()))
    check(d, m=24, n=40, k=48, transa="T", transb="N", lda=48, ldb=48, ldc=24)


def test_strided_input_keeps_its_leading_dimension():
    w = torch.randn(32, 64)
    big = torch.randn(16, 128)
    x = big[:, :64]  # rows 128 apart: cuBLAS reads it in place with ldb = 128
    rec = calls_of(lambda: F.linear(x, w))
    d = only(rec)
    check(d, m=32, n=16, k=64, transa="T", transb="N", lda=64, ldb=128, ldc=32)


def test_non_dense_input_is_what_pytorch_copies_to():
    w = torch.randn(32, 64)
    x = torch.randn(16, 128)[:, ::2]  # no unit stride: PyTorch clones it contiguous
    call, why = gt.describe(torch.ops.aten.mm.default, (x, w.t()))
    assert why is None
    check(call.desc, m=32, n=16, k=64, transa="T", transb="N", lda=64, ldb=64, ldc=32)
    assert call.b.copy and not call.a.copy
    assert (call.a.arg, call.b.arg) == ("mat2", "self")


def test_bmm_and_broadcast_batch():
    x, y = torch.randn(4, 16, 32), torch.randn(4, 32, 8)
    d = only(calls_of(torch.bmm, x, y))
    check(d, m=8, n=16, k=32, transa="N", transb="N", lda=8, ldb=32, ldc=8, batch=4,
          stride_a=256, stride_b=512, stride_c=128, stride_d=128)
    w = torch.randn(1, 32, 8).expand(4, 32, 8)
    d = only(calls_of(torch.bmm, x, w))
    check(d, m=8, n=16, k=32, batch=4, lda=8, stride_a=0, stride_b=512)


def test_baddbmm_scalars_and_batch_one():
    c, x, y = torch.randn(4, 16, 8), torch.randn(4, 16, 32), torch.randn(4, 32, 8)
    call, _ = gt.describe(torch.ops.aten.baddbmm.default, (c, x, y), {"beta": 0.5, "alpha": 2})
    check(call.desc, m=8, n=16, k=32, batch=4, alpha=2.0, beta=0.5)
    assert call.c_from == "self"
    # one batch: PyTorch calls gemm, not the strided-batched one
    d = only(calls_of(torch.bmm, x[:1], y[:1]))
    check(d, m=8, n=16, k=32, batch=1, stride_a=-1, stride_b=-1)


def test_addmm_2d_input_is_beta_gemm():
    c, a, b = torch.randn(16, 24), torch.randn(16, 32), torch.randn(32, 24)
    d = only(calls_of(lambda: torch.addmm(c, a, b, beta=0.5)))
    check(d, m=24, n=16, k=32, transa="N", transb="N", lda=24, ldb=32, ldc=24, beta=0.5, bias=False)


def test_disable_addmm_cuda_lt(monkeypatch):
    lin = torch.nn.Linear(64, 96)
    monkeypatch.setenv("DISABLE_ADDMM_CUDA_LT", "1")
    d = only(calls_of(lin, torch.randn(16, 64)))
    check(d, m=96, n=16, k=64, beta=1.0, bias=False)


def test_tf32_compute_type():
    old = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        d = only(calls_of(torch.mm, torch.randn(8, 16), torch.randn(16, 4)))
        assert d.compute_type == "tf32"
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    d = only(calls_of(torch.mm, torch.randn(8, 16), torch.randn(16, 4)))
    assert d.compute_type is None  # libgemmtune's default: f32


def test_meta_and_fake_tensors_describe_alike():
    def model(dev):
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.GELU(), torch.nn.Linear(96, 32, bias=False)).to(
            dev, torch.bfloat16
        )

    real = calls_of(model("cpu"), torch.randn(2, 8, 64, dtype=torch.bfloat16)).gemms
    meta = calls_of(model("meta"), torch.randn(2, 8, 64, dtype=torch.bfloat16, device="meta")).gemms
    m = model("cpu")
    with FakeTensorMode(allow_non_fake_inputs=True) as fm:
        x = fm.from_tensor(torch.randn(2, 8, 64, dtype=torch.bfloat16))
        fake = calls_of(m, x).gemms
    assert real == meta == fake
    assert [d.a_type for d, _ in real] == ["bf16", "bf16"]


def _fp8(t):
    return t.to(torch.float8_e4m3fn)


def test_scaled_mm_fp8():
    a = _fp8(torch.randn(16, 32, device="meta"))
    w = _fp8(torch.randn(48, 32, device="meta"))
    one = torch.ones((), device="meta")
    f = torch.ops.aten._scaled_mm.default
    call, why = gt.describe(f, (a, w.t()), dict(scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    assert why is None
    check(call.desc, m=48, n=16, k=32, transa="T", transb="N", lda=32, ldb=32, ldc=48,
          a_type="f8e4m3", b_type="f8e4m3", c_type="bf16", d_type="bf16", bias=False)
    bias = torch.zeros(48, dtype=torch.bfloat16, device="meta")
    call, _ = gt.describe(f, (a, w.t()), dict(scale_a=one, scale_b=one, bias=bias, out_dtype=torch.bfloat16))
    check(call.desc, bias=True, bias_type="bf16", c_type="bf16")
    w52 = torch.randn(48, 32, device="meta").to(torch.float8_e5m2)
    call, _ = gt.describe(f, (a, w52.t()), dict(scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    check(call.desc, a_type="f8e5m2", b_type="f8e4m3")  # A is mat2 after PyTorch's swap
    # fp8 output: C carries the Half bias type, D the output's
    call, _ = gt.describe(f, (a, w.t()), dict(scale_a=one, scale_b=one, scale_result=one, out_dtype=torch.float8_e4m3fn))
    check(call.desc, c_type="f16", d_type="f8e4m3")


def test_scaled_mm_not_modelled():
    a = _fp8(torch.randn(16, 32, device="meta"))
    w = _fp8(torch.randn(48, 32, device="meta"))
    one = torch.ones((), device="meta")
    f = torch.ops.aten._scaled_mm.default
    rows = torch.ones(16, 1, device="meta")
    cols = torch.ones(1, 48, device="meta")
    cases = [
        (dict(scale_a=rows, scale_b=cols, out_dtype=torch.bfloat16), "row-wise"),
        (dict(scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True), "fast accumulation"),
        (dict(scale_a=one, scale_b=one, out_dtype=torch.float8_e4m3fn), "scale_result"),
    ]
    for kw, word in cases:
        call, why = gt.describe(f, (a, w.t()), kw)
        assert call is None and word in why


def test_products_that_are_not_gemms_are_listed():
    rec = calls_of(lambda: (torch.mv(torch.randn(8, 4), torch.randn(4)), torch.mm(torch.ones(3, 4, dtype=torch.int32),
                                                                                 torch.ones(4, 5, dtype=torch.int32))))
    assert rec.gemms == []
    ops = sorted((op, n) for op, _, n in rec.skipped)
    assert ops == [("mm", 1), ("mv", 1)]


def tunableop_signature(d):
    """PyTorch's TunableOp GemmTunableOp_<T>_<AB> row for a description."""
    t = {"bf16": "BFloat16", "f16": "Half", "f32": "float"}[d.a_type]
    ab = d.transa + d.transb
    return f"GemmTunableOp_{t}_{ab},{ab.lower()}_{d.m}_{d.n}_{d.k}_ld_{d.lda}_{d.ldb}_{d.ldc}"


def test_llama3_8b_matches_pytorch_tunableop_signatures():
    # the Linear layers of Llama-3-8B (fused qkv, o, fused gate/up, down, lm_head)
    shapes = [(4096, 6144), (4096, 4096), (4096, 28672), (14336, 4096), (4096, 128256)]
    layers = [torch.nn.Linear(i, o, bias=False, device="meta", dtype=torch.bfloat16) for i, o in shapes]
    with gt.record() as rec, torch.no_grad():
        for tokens in (512, 4096, 1, 8, 32):
            for (i, _), layer in zip(shapes, layers):
                layer(torch.empty(1, tokens, i, device="meta", dtype=torch.bfloat16))
    got = [tunableop_signature(d) for d, _ in rec.gemms]
    with open(os.path.join(REPO, "tests", "data", "tunableop_untuned_llama3_8b.csv")) as f:
        want = [l.strip() for l in f if l.strip()]
    assert got == want


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_types(dtype):
    names = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64"}
    d = only(calls_of(torch.mm, torch.randn(8, 16, dtype=dtype), torch.randn(16, 4, dtype=dtype)))
    assert (d.a_type, d.b_type, d.c_type, d.d_type) == (names[dtype],) * 4
