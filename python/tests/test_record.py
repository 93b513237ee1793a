"""gemmtune.torch.record: the log a model's GEMMs produce, as the real
coordinator ingests it (POST /v1/runs, then the export's problems table)."""

import os
import sqlite3

import torch

import gemmtune
import gemmtune.torch as gt

from _models import run_small

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

COLS = ("m", "n", "k", "batch", "trans_a", "trans_b", "lda", "ldb", "ldc", "ldd", "stride_a", "stride_b",
        "stride_c", "stride_d", "a_type", "b_type", "c_type", "d_type", "compute_type", "scale_type", "alpha",
        "beta", "bias", "bias_type", "activation", "call_count")


# What the coordinator must read, worked out by hand (BLAS column-major, the
# operands swapped as PyTorch's CUDA backend does), f32 storage and compute.
_F = ("f32",) * 4 + ("f32", "f32")
EXPECTED = {
    # up: Y[16,96] = X W^T + b -> D[96x16] = W^T(T) X, cuBLASLt bias epilogue (beta 0)
    (96, 16, 64): (96, 16, 64, 1, "T", "N", 64, 64, 96, 96, 0, 0, 0, 0) + _F + (1.0, 0.0, 1, "f32", "none", 3),
    # down: no bias
    (32, 16, 96): (32, 16, 96, 1, "T", "N", 96, 96, 32, 32, 0, 0, 0, 0) + _F + (1.0, 0.0, 0, "", "none", 3),
    # k^T @ q: [40,48] (transposed view) x [48,24] -> D[24x40] = q(N) k(T)
    (24, 40, 48): (24, 40, 48, 1, "N", "T", 24, 40, 24, 24, 0, 0, 0, 0) + _F + (1.0, 0.0, 0, "", "none", 3),
    # bmm [2,8,32] x [2,32,8] (a transposed view, column-major in memory)
    (8, 8, 32): (8, 8, 32, 2, "T", "N", 32, 32, 8, 8, 256, 256, 64, 64) + _F + (1.0, 0.0, 0, "", "none", 3),
}


def ingest(coordinator, tmp_path, text, fmt="hipblaslt", backend="cuda"):
    """Submits a log (no worker needed) and returns its problems as the
    export holds them."""
    c = gemmtune.Client(coordinator.url)
    r = c.submit(text, backend=backend, format=fmt, name="ingest")
    assert r["format"] == fmt and r["skipped"] == [] and r["unsupported"] == []
    path = c.export(r["id"], tmp_path / f"run{r['id']}.db")
    c.cancel(r["id"])
    con = sqlite3.connect(path)
    try:
        return r, con.execute(f"SELECT key, {', '.join(COLS)} FROM problems").fetchall()
    finally:
        con.close()


def test_small_model_log_as_the_coordinator_reads_it(coordinator, tmp_path):
    log = tmp_path / "small.log"
    with gt.record(log) as rec:
        run_small()
    assert rec.skipped == []
    text = log.read_text()
    assert text.count("\n") == 4 and all(l.startswith("- {function: matmul, M: ") for l in text.splitlines())
    r, rows = ingest(coordinator, tmp_path, text)
    assert r["problems"] == 4 and r["gemm_lines"] == 4
    got = {tuple(row[1:4]): tuple(row[1:]) for row in rows}
    bias_col = COLS.index("bias_type")
    # the export writes "" or "-" for no bias type; compare only where a bias exists
    for shape, want in EXPECTED.items():
        g = list(got[shape])
        w = list(want)
        if not w[COLS.index("bias")]:
            g[bias_col] = w[bias_col] = ""
        assert g == w, shape
    assert set(got) == set(EXPECTED)


def test_libgemmtune_keys_equal_the_coordinators(coordinator, tmp_path):
    with gt.record() as rec:
        run_small(times=1)
    _, rows = ingest(coordinator, tmp_path, "".join(rec.lines()))
    assert sorted(k for k, *_ in rows) == sorted(d.key() for d, _ in rec.gemms)


def test_meta_fake_and_bf16_records(tmp_path):
    a, b = tmp_path / "cpu.log", tmp_path / "meta.log"
    with gt.record(a):
        run_small("cpu", dtype=torch.bfloat16)
    with gt.record(b):
        run_small("meta", dtype=torch.bfloat16)
    assert a.read_text() == b.read_text()
    assert "a_type: bf16_r" in a.read_text() and "compute_type: c_f32_r" in a.read_text()


def test_one_token_decode_line(coordinator, tmp_path):
    lin = torch.nn.Linear(64, 96, dtype=torch.bfloat16)
    with gt.record() as rec, torch.no_grad():
        for _ in range(5):
            lin(torch.randn(1, 1, 64, dtype=torch.bfloat16))
    _, rows = ingest(coordinator, tmp_path, "".join(rec.lines()))
    (row,) = rows
    got = dict(zip(COLS, row[1:]))
    assert (got["m"], got["n"], got["k"], got["trans_a"], got["trans_b"]) == (96, 1, 64, "T", "N")
    assert (got["lda"], got["ldb"], got["ldc"], got["call_count"]) == (64, 64, 96, 5)
    assert (got["beta"], got["bias"], got["bias_type"]) == (0.0, 1, "bf16")  # the Lt bias epilogue


def test_llama3_8b_record_equals_pytorch_tunableop_log(coordinator, tmp_path):
    shapes = [(4096, 6144), (4096, 4096), (4096, 28672), (14336, 4096), (4096, 128256)]
    layers = [torch.nn.Linear(i, o, bias=False, device="meta", dtype=torch.bfloat16) for i, o in shapes]
    with gt.record() as rec, torch.no_grad():
        for tokens in (512, 4096, 1, 8, 32):
            for (i, _), layer in zip(shapes, layers):
                layer(torch.empty(tokens, i, device="meta", dtype=torch.bfloat16))
    _, ours = ingest(coordinator, tmp_path, "".join(rec.lines()))
    with open(os.path.join(REPO, "tests", "data", "tunableop_untuned_llama3_8b.csv")) as f:
        _, theirs = ingest(coordinator, tmp_path, f.read(), fmt="tunableop")
    assert len(ours) == 25
    assert sorted(k for k, *_ in ours) == sorted(k for k, *_ in theirs)


def test_fp8_scaled_mm_line_is_accepted(coordinator, tmp_path):
    a = torch.randn(16, 32, device="meta").to(torch.float8_e4m3fn)
    w = torch.randn(48, 32, device="meta").to(torch.float8_e4m3fn)
    one = torch.ones((), device="meta")
    with gt.record() as rec:
        torch._scaled_mm(a, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    _, rows = ingest(coordinator, tmp_path, "".join(rec.lines()))
    (row,) = rows
    got = dict(zip(COLS, row[1:]))
    assert (got["m"], got["n"], got["k"], got["trans_a"], got["trans_b"]) == (48, 16, 32, "T", "N")
    assert (got["a_type"], got["b_type"], got["c_type"], got["d_type"]) == ("f8e4m3", "f8e4m3", "bf16", "bf16")
    assert row[0].endswith("act=none")  # per-tensor scales: the usual fp8 key, no ",scale=" suffix
