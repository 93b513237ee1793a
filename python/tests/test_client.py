"""gemmtune.client against a real coordinator: submit, follow (SSE and
polling), export, cancel, verify, errors, tokens."""

import os
import sqlite3

import pytest

import gemmtune
from gemmtune.client import Client, HTTPError

from conftest import FAST, REPO

LOG = "64,32,48,f32,N,N,1,10\n32,16,64,f32,T,N,1,5\n"


def test_health_and_lists(coordinator):
    c = Client(coordinator.url)
    assert c.health()["status"] == "ok"
    assert isinstance(c.runs(), list)
    assert "workers" in c.workers()


def test_submit_follow_export(coordinator, tmp_path):
    c = Client(coordinator.url)
    log = tmp_path / "two.csv"
    log.write_text(LOG)
    run = c.submit(log, backend="cpu", name="client-test", **FAST)
    assert run["format"] == "csv" and run["problems"] == 2 and run["backend"] == "cpu"
    assert c.run(run["id"])["state"] == "running"
    w = coordinator.run_worker()
    try:
        events = list(c.events(run["id"], timeout=120))
    finally:
        w.wait(60)
    kinds = [e for e, _ in events]
    assert kinds[-1] == "end" and set(kinds) <= {"progress", "end"}
    assert events[-1][1]["state"] == "done" and events[-1][1]["progress"] == 1
    # a finished run: wait() returns at once, by events and by polling
    seen = []
    r = c.wait(run["id"], progress=seen.append, timeout=30)
    assert r["state"] == "done" and len(r["best"]) == 2 and seen[-1]["state"] == "done"
    r = c.wait(run["id"], use_events=False, timeout=30)
    assert r["state"] == "done"
    res = c.results(run["id"])
    assert res["run_id"] == run["id"] and res["results"]
    assert all(row["backend"] == "cpu" and "valid" in row for row in res["results"])
    csv = c.results(run["id"], csv=True).splitlines()
    assert csv[0].startswith("problem_id,label,backend") and len(csv) == len(res["results"]) + 1
    out = c.export(run["id"], tmp_path / "e.db")
    con = sqlite3.connect(out)
    assert con.execute("SELECT COUNT(*) FROM best").fetchone()[0] == 2
    con.close()
    assert not list(tmp_path.glob(".gemmtune-export-*"))


def test_wait_polls_and_reports_progress(coordinator, capsys):
    c = Client(coordinator.url)
    run = c.submit(LOG, backend="cpu", **FAST)
    w = coordinator.run_worker()
    try:
        r = c.wait(run["id"], progress=True, use_events=False, poll=0.2, timeout=120)
    finally:
        w.wait(60)
    assert r["state"] == "done"
    err = capsys.readouterr().err
    assert f"run {run['id']}: done 100.0%" in err and "GEMMs 2/2" in err


def test_wait_timeout_and_cancel(coordinator):
    c = Client(coordinator.url)
    run = c.submit(LOG, backend="cpu", **FAST)
    with pytest.raises(TimeoutError):
        c.wait(run["id"], timeout=0.5, use_events=False, poll=0.1)
    with pytest.raises(TimeoutError):
        c.wait(run["id"], timeout=1.0)
    assert c.cancel(run["id"])["state"] == "cancelled"
    assert c.wait(run["id"], timeout=10)["state"] == "cancelled"


def test_errors_carry_the_coordinators_details(coordinator):
    c = Client(coordinator.url)
    with pytest.raises(HTTPError) as e:
        c.submit("- {function: matmul, M: 16, N: 16}\n", format="hipblaslt")
    assert e.value.status == 422 and e.value.details
    with pytest.raises(HTTPError) as e:
        c.submit(LOG, nonsense_option=1)
    assert e.value.status == 400
    with pytest.raises(HTTPError) as e:
        c.run(999999)
    assert e.value.status == 404


def test_verify(coordinator):
    """POST /v1/runs/{id}/verify: a verify run re-times a done run's tuned
    winners on the workers; wait() follows it like any run."""
    c = Client(coordinator.url)
    # the integration tests' small cpu workload: its 192x8x128 GEMM has a
    # tuned winner over OpenBLAS (the others mostly keep the default)
    run = c.submit(os.path.join(REPO, "tests", "data", "cpu_small_f32.log"), backend="cpu",
                   name="verify-me", budget=12, shard_size=4, min_time_ms=1, repeats=3, ncpu=1)
    w = coordinator.run_worker()
    try:
        tuned = c.wait(run["id"], timeout=240)
        assert tuned["state"] == "done", tuned
        winners = {b["label"]: b["uplift"] for b in tuned["best"] if b["config"] != b["baseline_config"]}
        if not winners:
            with pytest.raises(HTTPError) as e:
                c.verify(run["id"])
            assert e.value.status == 422
            pytest.skip("no tuned winner beat OpenBLAS on this machine: nothing to re-time")
        v = c.verify(run["id"], tolerance=0.05)
        assert v["verifies"] == run["id"] and v["id"] != run["id"]
        assert v["problems"] == len(winners) and v["skipped"] == len(tuned["best"]) - len(winners)
        assert v["tolerance"] == 0.05
        r = c.wait(v["id"], timeout=120)
    finally:
        w.wait(60)
    assert r["state"] == "done" and r["verifies"] == run["id"]
    assert r["name"] == f"verify of run {run['id']}"
    summary = r["verify"]
    assert summary["tolerance"] == 0.05
    assert summary["passed"] + summary["failed"] == len(winners) == len(r["best"])
    for b in r["best"]:
        assert b["stored_uplift"] == winners[b["label"]]
        assert b["uplift"] > 0 and abs(b["diff"] - (b["uplift"] / b["stored_uplift"] - 1)) < 1e-9
        assert b["verify"] == ("pass" if abs(b["diff"]) <= 0.05 else "fail")
    assert summary["passed"] == sum(b["verify"] == "pass" for b in r["best"])
    # the coordinator's default tolerance without one; errors as HTTPError
    d = c.verify(run["id"])
    assert d["tolerance"] == 0.02
    c.cancel(d["id"])  # no worker left to run it: not for the session's later tests
    with pytest.raises(HTTPError) as e:
        c.verify(999999)
    assert e.value.status == 404 and "not found" in e.value.error
    with pytest.raises(HTTPError) as e:
        c.verify(run["id"], tolerance=-1)
    assert e.value.status == 400 and "tolerance" in e.value.error


def test_json_body_with_candidates(coordinator):
    c = Client(coordinator.url)
    cand = {"mc": 32, "nc": 32, "kc": 32, "mr": 4, "nr": 8, "threads": 1, "unroll": 1}
    run = c.submit(LOG, candidates=[cand], backend="cpu", budget=2)
    assert run["problems"] == 2
    c.cancel(run["id"])


def test_token(make_coordinator, monkeypatch):
    co = make_coordinator(token="s3cret")
    with pytest.raises(HTTPError) as e:
        Client(co.url, token="").submit(LOG, backend="cpu")
    assert e.value.status == 401
    with pytest.raises(HTTPError) as e:
        Client(co.url, token="wrong").submit(LOG, backend="cpu")
    assert e.value.status == 401
    run = Client(co.url, token="s3cret").submit(LOG, backend="cpu")
    assert run["id"] >= 1
    monkeypatch.setenv("GEMMTUNE_TOKEN", "s3cret")
    c = gemmtune.Client(co.url)
    assert c.token == "s3cret" and c.cancel(run["id"])["state"] == "cancelled"
