"""gemmtune.client: the coordinator's HTTP API (README "HTTP API"), urllib only.

    c = Client("http://127.0.0.1:8470", token=None)     # token: env GEMMTUNE_TOKEN
    run = c.submit("gemms.log", backend="cuda", budget=32)
    c.wait(run["id"], progress=True)                     # SSE events, polling fallback
    c.export(run["id"], "tuned.db")
"""

import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from ._files import write_atomic

__all__ = ["Client", "HTTPError", "TERMINAL_STATES"]

TERMINAL_STATES = ("done", "cancelled", "failed", "deleted")


class HTTPError(Exception):
    """An error answer of the coordinator: status, its "error" text and "details"."""

    def __init__(self, status, error, details=None, url=None):
        super().__init__(f"HTTP {status}: {error}" + (f" ({url})" if url else ""))
        self.status = status
        self.error = error
        self.details = details
        self.url = url


def _opt(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class Client:
    """One coordinator. token: sent as 'Authorization: Bearer' on every request
    (POSTs need it with --token, GETs with --read-token); default $GEMMTUNE_TOKEN."""

    def __init__(self, url="http://127.0.0.1:8470", token=None, timeout=60.0):
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("GEMMTUNE_TOKEN") or None
        self.timeout = timeout

    # ---- plumbing ----

    def _request(self, method, path, body=None, content_type=None, query=None, timeout=None, stream=False):
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: _opt(v) for k, v in query.items() if v is not None})
        req = urllib.request.Request(url, data=body, method=method)
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        if content_type:
            req.add_header("Content-Type", content_type)
        try:
            resp = urllib.request.urlopen(req, timeout=timeout if timeout is not None else self.timeout)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                j = json.loads(raw)
                raise HTTPError(e.code, j.get("error", raw.decode(errors="replace")), j.get("details"), url) from None
            except (ValueError, AttributeError):
                raise HTTPError(e.code, raw.decode(errors="replace").strip() or e.reason, None, url) from None
        if stream:
            return resp
        with resp:
            return resp.read()

    def _json(self, method, path, **kw):
        return json.loads(self._request(method, path, **kw))

    # ---- the API ----

    def health(self):
        """GET /healthz."""
        return self._json("GET", "/healthz")

    def submit(self, log, candidates=None, **options):
        """POST /v1/runs: submit a log and create a run; returns the 201 answer
        (id, format, problems, jobs, skipped, unsupported, ...).

        log: the log's text (str/bytes) or a path to it. options: the run
        options of the README (name, format, backend, device_model, budget,
        strategy, threshold, skip_invalid, seed, ...); candidates (a list of
        config dicts) sends a JSON body. A 422 (bad lines, GEMMs the backend
        cannot run) raises HTTPError with the coordinator's details."""
        if isinstance(log, os.PathLike) or (isinstance(log, str) and "\n" not in log and os.path.isfile(log)):
            with open(log, "rb") as f:
                log = f.read()
        if isinstance(log, str):
            log = log.encode()
        if candidates is not None:
            body = dict(options)
            body["log"] = log.decode()
            body["candidates"] = candidates
            return self._json("POST", "/v1/runs", body=json.dumps(body).encode(), content_type="application/json")
        return self._json("POST", "/v1/runs", body=log, content_type="text/plain", query=options)

    def runs(self):
        """GET /v1/runs: the list of runs."""
        return self._json("GET", "/v1/runs")["runs"]

    def run(self, run_id):
        """GET /v1/runs/{id}: state, counts, progress, ETA, uplift and best per GEMM."""
        return self._json("GET", f"/v1/runs/{int(run_id)}")

    def results(self, run_id, csv=False):
        """GET /v1/runs/{id}/results (every measured candidate); text with csv=True."""
        if csv:
            return self._request("GET", f"/v1/runs/{int(run_id)}/results", query={"format": "csv"}).decode()
        return self._json("GET", f"/v1/runs/{int(run_id)}/results")

    def cancel(self, run_id):
        """POST /v1/runs/{id}/cancel."""
        return self._json("POST", f"/v1/runs/{int(run_id)}/cancel", body=b"")

    def verify(self, run_id, tolerance=None):
        """POST /v1/runs/{id}/verify: re-time a done run's winners on the
        coordinator's workers (the coordinator's `gemmtune verify`). Creates a
        verify run and returns the 201 answer {"id", "verifies", "problems",
        "skipped", "tolerance"}; follow it with wait(answer["id"]), whose run
        has "verifies", per best entry "stored_uplift", "uplift", "diff" and
        "verify" ("pass"/"fail"), and the summary "verify": {"passed",
        "failed", "tolerance"}.

        tolerance: the largest |re-timed / stored uplift - 1| that passes (a
        fraction; None: the coordinator's default, 0.02). HTTPError 404 for an
        unknown run, 409 a run that is not done, 422 no tuned winner to
        re-time, 400 a bad tolerance."""
        if tolerance is None:
            return self._json("POST", f"/v1/runs/{int(run_id)}/verify", body=b"")
        body = json.dumps({"tolerance": float(tolerance)}).encode()
        return self._json("POST", f"/v1/runs/{int(run_id)}/verify", body=body, content_type="application/json")

    def workers(self):
        """GET /v1/workers."""
        return self._json("GET", "/v1/workers")

    def events(self, run_id, timeout=None):
        """GET /v1/runs/{id}/events: yields (event, data) pairs, data parsed
        from JSON ("progress" summaries, then "end"); stops after "end" or when
        the server closes the stream. timeout: socket timeout per read (the
        server sends a keepalive every 15 s)."""
        resp = self._request(
            "GET", f"/v1/runs/{int(run_id)}/events", timeout=timeout if timeout is not None else 60.0, stream=True
        )
        with resp:
            event, data = None, []
            for raw in resp:
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if not line:
                    if data:
                        payload = "\n".join(data)
                        try:
                            payload = json.loads(payload)
                        except ValueError:
                            pass
                        ev = event or "message"
                        yield ev, payload
                        if ev == "end":
                            return
                    event, data = None, []
                    continue
                if line.startswith(":"):
                    continue
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "event":
                    event = value
                elif name == "data":
                    data.append(value)

    def wait(self, run_id, timeout=None, progress=None, poll=1.0, use_events=True):
        """Blocks until the run leaves "running"; returns GET /v1/runs/{id}.

        progress: None; True (a line per change on stderr); or a callable
        given each summary dict. Follows the SSE stream when use_events, else
        (or when the stream is refused or drops) polls every `poll` seconds.
        timeout: seconds in all (TimeoutError when exceeded)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        report = _printer(run_id) if progress is True else (progress or (lambda s: None))

        def left():
            if deadline is None:
                return None
            t = deadline - time.monotonic()
            if t <= 0:
                raise TimeoutError(f"run {run_id} still running after {timeout} s")
            return t

        if use_events:
            try:
                for ev, data in self.events(run_id, timeout=min(60.0, left() or 60.0)):
                    if isinstance(data, dict):
                        report(data)
                        if ev == "end" or data.get("state") in TERMINAL_STATES:
                            return self.run(run_id)
                    left()
            except HTTPError as e:
                if e.status == 404:
                    raise
            except (OSError, ValueError):
                pass  # stream dropped or timed out: poll below
        last = None
        while True:
            r = self.run(run_id)
            summary = {k: v for k, v in r.items() if k != "best"}
            if summary != last:
                report(summary)
                last = summary
            if r.get("state") in TERMINAL_STATES:
                return r
            t = left()
            time.sleep(poll if t is None else min(poll, t))

    def export(self, run_id, path):
        """GET /v1/runs/{id}/export into path (written under a temporary name,
        renamed when complete). Returns path."""
        data = self._request("GET", f"/v1/runs/{int(run_id)}/export", timeout=max(self.timeout, 300.0))
        return write_atomic(path, data, ".gemmtune-export-")


def _printer(run_id):
    def show(s):
        p = s.get("progress") or 0.0
        probs = s.get("problems") or {}
        eta = s.get("eta_s")
        up = s.get("weighted_uplift")
        sys.stderr.write(
            f"run {run_id}: {s.get('state', '?')} {100.0 * p:5.1f}%"
            f"  GEMMs {probs.get('done', 0)}/{probs.get('total', 0)}"
            + (f"  eta {eta:.0f}s" if isinstance(eta, (int, float)) else "")
            + (f"  uplift {up:.3f}x" if isinstance(up, (int, float)) else "")
            + "\n"
        )

    return show
