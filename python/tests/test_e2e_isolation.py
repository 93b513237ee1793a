"""bench/e2e_llama.py runs each measurement in a fresh process (a configuration
timed after others in one process inherits their state: on the H100 the same
Inductor kernel ran 16.7 us a layer alone and 24 after max-autotune's compile).
Here: which processes it starts, with which arguments, and that a child that
dies is recorded while the others still run. The children are faked; no torch."""

import json
import sys


def _opt(cmd, name):
    return cmd[cmd.index(name) + 1]


def test_strip_options(e2e):
    argv = ["--build", "b", "--phases", "all", "--batches=8,1", "--profile", "4", "--state", "x", "--tiny"]
    assert e2e.strip_options(argv, e2e._PER_CHILD) == ["--build", "b", "--profile", "4", "--tiny"]


def test_units_one_per_measurement(e2e):
    units = e2e.isolated_units(["record", "tune", "default", "gemmtune_compile"], ["decode", "prefill"],
                               ["8", "1"], 2048)
    # record and tune share a process and see every part and batch size (record needs them)
    assert units[0] == ("record+tune", ["record", "tune"], "decode,prefill", "8,1")
    assert [u[0] for u in units[1:]] == [
        "default decode b8", "default decode b1", "default prefill",
        "gemmtune_compile decode b8", "gemmtune_compile decode b1", "gemmtune_compile prefill"]
    for label, ph, part, b in units[1:]:
        assert len(ph) == 1 and part in ("decode", "prefill")
        assert (b == "") == (part == "prefill")


def test_units_without_prefill(e2e):
    units = e2e.isolated_units(["autotune_nocg"], ["decode", "prefill"], ["1"], 0)
    assert units == [("autotune_nocg decode b1", ["autotune_nocg"], "decode", "1")]


def test_run_isolated_children_and_a_dead_one(e2e, tmp_path, monkeypatch, capsys):
    state = e2e.State(str(tmp_path))
    calls = []

    def fake_call(cmd):
        calls.append(cmd)
        assert cmd[0] == sys.executable and cmd[1].endswith("e2e_llama.py")
        assert "--child" in cmd and _opt(cmd, "--state") == str(tmp_path)
        ph = _opt(cmd, "--phases")
        if ph == "default":  # a child that measured and wrote its row
            e2e.State(str(tmp_path)).put("decode", "default", "b8", value={"batch": 8, "ms": 10.0,
                                                                           "tokens_per_s": 800.0})
            return 0
        return -11  # gemmtune_compile: killed by a signal before it wrote anything

    monkeypatch.setattr(e2e, "_run_child", fake_call)
    argv = ["--build", "bb", "--phases", "default,gemmtune_compile", "--batches", "8", "--profile", "2"]
    a = type("A", (), {"batches": "8", "prefill": 0, "tiny": False})()
    assert e2e.run_isolated(a, argv, state, ["default", "gemmtune_compile"], ["decode"]) == 0
    assert [(_opt(c, "--phases"), _opt(c, "--parts"), _opt(c, "--batches")) for c in calls] == [
        ("default", "decode", "8"), ("gemmtune_compile", "decode", "8")]
    # the options given pass through once; the per-child ones are replaced
    for c in calls:
        assert c.count("--phases") == 1 and c.count("--batches") == 1
        assert _opt(c, "--build") == "bb" and _opt(c, "--profile") == "2"
    data = json.load(open(tmp_path / "e2e.json"))
    assert data["decode"]["default"]["b8"]["ms"] == 10.0
    assert data["errors"] == {"gemmtune_compile decode b8": "process exited with -11"}
    out = capsys.readouterr().out
    assert "gemmtune_compile decode b8: the process exited with -11" in out


def test_repeat_keeps_the_median_run(e2e, tmp_path, monkeypatch, capsys):
    state = e2e.State(str(tmp_path))
    times = iter([9.3, None, 8.6, 8.9])  # run 2 dies before it writes its row
    runs = []

    def fake_call(cmd):
        runs.append(cmd)
        if _opt(cmd, "--phases") != "gemmtune_compile":
            return 0
        ms = next(times)
        if ms is None:
            return 1
        st = e2e.State(str(tmp_path))
        st.put("device", value={"name": "H"})  # as a child does: the device record whole
        st.put("decode", "gemmtune_compile", "b8",
               value={"batch": 8, "ms": ms, "tokens_per_s": 8e3 / ms, "tag": ms})
        return 0

    monkeypatch.setattr(e2e, "_run_child", fake_call)
    a = type("A", (), {"batches": "8", "prefill": 0, "tiny": False, "repeat": 4})()
    e2e.run_isolated(a, ["--repeat", "4"], state, ["record", "gemmtune_compile"], ["decode"])
    # the setup unit runs once, the measurement four times
    assert [_opt(c, "--phases") for c in runs] == ["record"] + ["gemmtune_compile"] * 4
    row = json.load(open(tmp_path / "e2e.json"))["decode"]["gemmtune_compile"]["b8"]
    assert row["ms_runs"] == [9.3, 8.6, 8.9]
    assert row["ms"] == 8.9 and row["tag"] == 8.9  # the median run's own row, not a blend
    errs = json.load(open(tmp_path / "e2e.json"))["errors"]
    assert errs == {"gemmtune_compile decode b8 run 2": "process exited with 1"}
    out = capsys.readouterr().out
    assert "| gemmtune_compile | 8.900 (8.600-9.300, 3 runs) |" in out
    assert "each measurement in a fresh process, 4 times" in out


def test_repeat_every_run_died(e2e, tmp_path, monkeypatch):
    state = e2e.State(str(tmp_path))
    state.put("decode", "autotune_nocg", "b1", value={"batch": 1, "ms": 6.0, "tokens_per_s": 166})  # stale
    monkeypatch.setattr(e2e, "_run_child", lambda cmd: -9)
    a = type("A", (), {"batches": "1", "prefill": 0, "tiny": False, "repeat": 2})()
    e2e.run_isolated(a, [], state, ["autotune_nocg"], ["decode"])
    data = json.load(open(tmp_path / "e2e.json"))
    assert "b1" not in data["decode"]["autotune_nocg"]  # an earlier run's row is not reported as this one's
    assert len(data["errors"]) == 2


def test_loaded_kernel_configs(e2e, tmp_path):
    """torch 2.11+ names .best_config files by a hash: the configs come off the kernel objects,
    and the report shows them beside the profiled kernels."""

    class Cfg:  # triton.Config's shape
        def __init__(self, kwargs, num_warps, num_stages):
            self.kwargs, self.num_warps, self.num_stages = kwargs, num_warps, num_stages

    class Launcher:
        def __init__(self, cfg):
            self.config = cfg

    class CachingAutotuner:  # Inductor's kernel object after autotuning (found by class name)
        def __init__(self, name, launchers, meta=True):
            self.fn = type("Fn", (), {"__name__": name})()
            self.launchers = launchers
            self.inductor_meta = {"kernel_name": name} if meta else {}

    Autotuner = CachingAutotuner
    coordesc = Cfg({"XBLOCK": 1, "R0_BLOCK": 64}, 2, 1)
    coordesc.found_by_coordesc = True
    objs = [Autotuner("triton_red_fused_rsqrt_13", [Launcher(Cfg({"XBLOCK": 1, "R0_BLOCK": 2048}, 8, 1))]),
            Autotuner("triton_red_fused_rsqrt_14", [Launcher(coordesc)]),
            Autotuner("triton_poi_fused_silu_8", [Launcher(Cfg({"XBLOCK": 256}, 4, 1))], meta=False),
            Autotuner("triton_poi_fused_cat_2", [Launcher(Cfg({"XBLOCK": 64}, 4, 1))] * 2),  # not yet tuned
            Autotuner("gt_gemv", [Launcher(Cfg({}, 4, 1))]),  # not Inductor's
            type("Other", (), {"launchers": [Launcher(Cfg({"XBLOCK": 1}, 1, 1))], "fn": None})(),
            object()]
    got = e2e.loaded_kernel_configs(objs)
    assert got == {"triton_red_fused_rsqrt_13": {"XBLOCK": 1, "R0_BLOCK": 2048, "num_warps": 8, "num_stages": 1},
                   "triton_red_fused_rsqrt_14": {"XBLOCK": 1, "R0_BLOCK": 64, "num_warps": 2, "num_stages": 1,
                                                 "found_by_coordesc": True},
                   "triton_poi_fused_silu_8": {"XBLOCK": 256, "num_warps": 4, "num_stages": 1}}
    assert e2e._cfg_text(got["triton_red_fused_rsqrt_13"]) == "R0_BLOCK=2048,XBLOCK=1,w8"
    assert isinstance(e2e.loaded_kernel_configs(), dict)  # the whole heap: no error

    # the report puts each profiled kernel's config beside it
    st = e2e.State(str(tmp_path / "st"))
    st.put("device", value={"name": "H", "gemmtune_native": {"loaded": False, "reason": "not built"}})
    st.put("decode", "gemmtune_compile", "b8", value={
        "batch": 8, "ms": 9.0, "tokens_per_s": 888, "inductor_configs": got,
        "profile": {"steps": 4, "kernel_us": 900, "gemm_us": 500, "kernels": 10,
                    "top": [{"name": "triton_red_fused_rsqrt_14", "us": 749, "calls": 15}]}})
    # a prefill's profile (per prefill, not per step), its configs beside its kernels
    st.put("prefill", "gemmtune_compile", value={
        "tokens": 2048, "ms": 56.2, "ms_reps": [56.2], "inductor_configs": got,
        "profile": {"steps": 2, "kernel_us": 55000, "gemm_us": 41000, "kernels": 700,
                    "top": [{"name": "triton_poi_fused_silu_8", "us": 1200, "calls": 32}]}})
    out = e2e.report(st)
    assert "triton_red_fused_rsqrt_14 749 us x15 [R0_BLOCK=64,XBLOCK=1,w2,cd]" in out
    assert "gemmtune's ops: the Python router (extension not loaded: not built)" in out
    assert ("kernels of gemmtune_compile (per prefill, 2 prefills profiled): 55000 us in 700 kernels, "
            "GEMM-named 41000 us, other 14000 us; top: triton_poi_fused_silu_8 1200 us x32 [XBLOCK=256,w4]") in out


def test_repeat_two_runs_reports_the_slower(e2e, tmp_path, monkeypatch):
    state = e2e.State(str(tmp_path))
    times = iter([6.2, 6.5])

    def fake_call(cmd):
        ms = next(times)
        e2e.State(str(tmp_path)).put("prefill", "default", value={"tokens": 64, "ms": ms, "ms_reps": [ms]})
        return 0

    monkeypatch.setattr(e2e, "_run_child", fake_call)
    a = type("A", (), {"batches": "", "prefill": 64, "tiny": False, "repeat": 2})()
    e2e.run_isolated(a, [], state, ["default"], ["prefill"])
    row = json.load(open(tmp_path / "e2e.json"))["prefill"]["default"]
    assert row["ms"] == 6.5 and row["ms_runs"] == [6.2, 6.5]
    assert "| default | 6.50 (6.20-6.50, 2 runs) |" in e2e.report(e2e.State(str(tmp_path)))


def test_run_child_status_and_stop(e2e, monkeypatch):
    assert e2e._run_child([sys.executable, "-c", "import sys; sys.exit(3)"]) == 3
    # this process stopped while a child runs (a time box's SIGTERM unwinds as SystemExit):
    # the child is terminated, not left holding the GPU, and the stop goes on
    seen = []

    class Child:
        def __init__(self, cmd):
            self.waits = 0

        def wait(self, timeout=None):
            self.waits += 1
            if self.waits == 1:
                raise SystemExit(143)
            seen.append(("waited", timeout))
            return -15

        def terminate(self):
            seen.append("terminate")

        def kill(self):
            seen.append("kill")

    monkeypatch.setattr(e2e.subprocess, "Popen", Child)
    try:
        e2e._run_child(["x"])
        raise AssertionError("the stop was swallowed")
    except SystemExit as e:
        assert e.code == 143
    assert seen == ["terminate", ("waited", 20)]

