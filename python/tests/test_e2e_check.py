"""bench/e2e_llama.py's check phase: each tuned GEMM as the model calls it, its accuracy
and, on a GPU, PyTorch's own call timed against the routed one (the tuner's baseline is
cuBLASLt's default; in the model a routed call must beat PyTorch's). Runs on the CPU with
the routing faked."""

import pytest

torch = pytest.importorskip("torch")


def test_check_times_pytorch_against_routed(e2e, tmp_path, monkeypatch):
    """check on a GPU times PyTorch's own F.linear against the routed call (what a routed call
    must beat in the model), interleaved, on enough copies to leave L2; the report shows both
    beside the tuner's claim over cuBLASLt's default."""
    import contextlib

    entered = []

    @contextlib.contextmanager
    def fake_routing(a, cfg, state):
        entered.append(cfg)
        yield None

    monkeypatch.setattr(e2e, "routing", fake_routing)
    a = type("A", (), {"device": "cpu"})()
    w, x = torch.randn(64, 32), torch.randn(4, 32)
    got = e2e.torch_timing(torch, a, None, w, x, rounds=3)
    assert entered == ["gemmtune"] * 3  # one routed block per round (after an untimed call), between PyTorch's
    assert got["torch_us"] > 0 and got["routed_us"] > 0 and got["timing_rounds"] == 3
    assert got["timing_sets"] == 8  # 8 KB of weights: the most copies
    big = e2e.torch_timing(torch, a, None, torch.randn(4096, 4096), torch.randn(1, 4096), rounds=1)
    assert big["timing_sets"] == 2  # 64 MB of weights: two copies pass 100 MB

    st = e2e.State(str(tmp_path / "st"))
    st.put("device", value={"name": "H", "gemmtune_native": {"loaded": True}})
    st.put("check", value=[
        {"m": 14336, "n": 2048, "k": 4096, "default_err": 1e-3, "tuned_err": 1e-3, "tuned_vs_default": 2e-3,
         "routed": True, "torch_us": 330.0, "routed_us": 343.2, "claimed_uplift": 1.052},
        {"m": 64, "n": 1, "k": 64, "default_err": 1e-3, "tuned_err": 1e-3, "tuned_vs_default": 0.0,
         "routed": False}])
    out = e2e.report(st)
    assert "| 14336x2048x4096 | 1.00e-03 | 1.00e-03 | 2.00e-03 | True | 330.00 | 343.20 | 0.962 | 1.052 |" in out
    assert "| 64x1x64 | 1.00e-03 | 1.00e-03 | 0.00e+00 | False | - | - | - | - |" in out
