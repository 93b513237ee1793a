"""bench/e2e_llama.py's kernel timeline (--profile): the idle time between a
replayed step's kernels, split by whether a GEMM is on either side, the
boundaries that overlapped, and one layer's kernels in order. The GPU run
feeds it torch.profiler's events; here a fake profiler with known kernel
times checks the arithmetic."""

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")


def _ev(name, start, end, cuda=True):
    dt = torch.autograd.DeviceType.CUDA if cuda else torch.autograd.DeviceType.CPU
    return SimpleNamespace(name=name, device_type=dt, time_range=SimpleNamespace(start=start, end=end))


def _prof(events):
    return SimpleNamespace(events=lambda: events)


def test_gaps_by_side_and_overlap(e2e):
    # two steps of four kernels; the host's 1000 us between the steps is not a boundary
    step = [("triton_poi_norm", 0, 2), ("gt_gemv", 3, 13), ("gt_gemv", 12.5, 20),  # overlap -0.5
            ("triton_poi_silu", 21.5, 22)]
    evs = [_ev(n, s, t) for n, s, t in step] + [_ev(n, s + 1000, t + 1000) for n, s, t in step]
    evs += [_ev("cudaLaunchKernel", 5, 6, cuda=False), _ev("Memcpy DtoD", 30, 31)]
    tl = e2e.kernel_timeline(torch, _prof(evs), 2)
    # per step: norm->gemv 1, gemv->gemv -0.5, gemv->silu 1.5, all next to a GEMM
    assert tl["gap_us_gemm_side"] == pytest.approx(2.0)
    assert tl["gap_us_other"] == pytest.approx(0.0)
    assert tl["overlapping_boundaries"] == pytest.approx(1.0)
    # the last step from its second GEMM-named kernel on
    seq = tl["sequence"]
    assert [k["name"] for k in seq] == ["gt_gemv", "triton_poi_silu"]
    assert seq[0]["us"] == pytest.approx(7.5) and seq[0]["gap_us"] == pytest.approx(-0.5)
    assert seq[1]["gap_us"] == pytest.approx(1.5)


def test_gaps_elsewhere(e2e):
    evs = [_ev("a", 0, 1), _ev("b", 3, 4), _ev("c", 4.5, 5)]
    tl = e2e.kernel_timeline(torch, _prof(evs), 1)
    assert tl["gap_us_other"] == pytest.approx(2.5)
    assert tl["gap_us_gemm_side"] == 0
    assert tl["overlapping_boundaries"] == 0


def test_too_few_kernels_and_errors(e2e):
    assert e2e.kernel_timeline(torch, _prof([_ev("a", 0, 1)]), 1) is None

    def broken():
        raise RuntimeError("no events")

    out = e2e._timeline_or_error(torch, SimpleNamespace(events=broken), 1)
    assert out == {"error": "RuntimeError: no events"}
