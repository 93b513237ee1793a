"""gt_service.py: gemmtuned and gemmtune-worker on loopback, as a user runs them: the one
place the benchmark scripts (cuda_service.py, e2e_llama.py, scaling.py, preload_proof.py) start
the service from or talk to its API with (get, post).

    with Service(build, folder, backend="cuda", device="all") as svc:
        svc.wait_workers(n)
        ... svc.url (the HTTP API) ...

The coordinator's database, port file and logs live in folder (emptied of an earlier
service's database first); the workers run in their own session so that SIGTERM reaches
each process --device all started."""

import json
import os
import signal
import subprocess
import time
import urllib.request


def get(url, timeout=60):
    """The JSON answer of a GET."""
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def post(url, body, timeout=120):
    """The JSON answer of a POST of body as JSON."""
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


class Service:
    def __init__(self, build, folder, backend="cuda", device="0", batch=32, lease_timeout=120):
        self.build = build
        self.folder = folder
        self.backend = backend
        self.device = str(device)
        self.batch = batch
        self.lease_timeout = lease_timeout
        self.procs = []
        self.url = None

    def __enter__(self):
        os.makedirs(self.folder, exist_ok=True)
        portfile = os.path.join(self.folder, "ports")
        db = os.path.join(self.folder, "gemmtune.db")
        for p in (portfile, db, db + "-wal", db + "-shm"):
            if os.path.exists(p):
                os.unlink(p)
        dlog = open(os.path.join(self.folder, "gemmtuned.log"), "w")
        self.wlog = open(os.path.join(self.folder, "worker.log"), "w")
        self.procs.append(subprocess.Popen(
            [os.path.join(self.build, "gemmtuned"), "--db", db, "--http", "127.0.0.1:0", "--listen",
             "tcp://127.0.0.1:0", "--port-file", portfile, "--lease-timeout", str(self.lease_timeout)],
            stderr=dlog))
        try:
            for _ in range(200):
                if os.path.exists(portfile) and os.path.getsize(portfile):
                    break
                if self.procs[0].poll() is not None:
                    raise SystemExit(f"gemmtuned exited {self.procs[0].returncode}: see {dlog.name}")
                time.sleep(0.05)
            ports = dict(l.split("=", 1) for l in open(portfile).read().split())
            self.url = f"http://127.0.0.1:{ports['http']}"
            self.procs.append(subprocess.Popen(
                [os.path.join(self.build, "gemmtune-worker"), "--server", ports["worker"], "--backend",
                 self.backend, "--device", self.device, "--batch", str(self.batch)],
                stderr=self.wlog, start_new_session=True))
        except BaseException:
            self.__exit__()
            raise
        return self

    def workers(self):
        with urllib.request.urlopen(self.url + "/v1/workers", timeout=60) as r:
            return json.loads(r.read())["workers"]

    def wait_workers(self, n, timeout_s=60):
        """The registered workers once n have registered (or what registered by timeout_s)."""
        t0 = time.time()
        ws = self.workers()
        while len(ws) < n and time.time() - t0 < timeout_s:
            time.sleep(0.1)
            ws = self.workers()
        return ws

    def __exit__(self, *exc):
        for p in reversed(self.procs):
            try:
                if p is self.procs[0]:
                    p.terminate()
                else:
                    os.killpg(p.pid, signal.SIGTERM)
            except Exception:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except Exception:
                p.kill()
