"""Models the tests record, tune and route."""

import os

import torch


class Small(torch.nn.Module):
    """Linear layers with and without bias, a transposed matmul, a bmm."""

    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(64, 96)
        self.down = torch.nn.Linear(96, 32, bias=False)

    def forward(self, x, k, q):
        h = self.down(torch.relu(self.up(x)))  # x [2, 8, 64]: 16 tokens
        s = k.transpose(-1, -2) @ q  # k [48, 40], q [48, 24] -> [40, 24]
        att = torch.bmm(h.reshape(2, 8, 32), h.reshape(2, 8, 32).transpose(1, 2))  # [2, 8, 8]
        return h, s, att


def run_small(dev="cpu", times=3, dtype=torch.float32):
    torch.manual_seed(0)
    m = Small().to(dev, dtype)
    args = [torch.randn(*s, device=dev, dtype=dtype) for s in ((2, 8, 64), (48, 40), (48, 24))]
    with torch.no_grad():
        for _ in range(times):
            m(*args)


# ---- an export whose winner is a generated kernel --------------------------

import json  # noqa: E402
import os  # noqa: E402
import sqlite3  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The gemv config the H100 chose for bf16 TN 4096 x 1 x 4096 (tests/unit/test_lib_kernels.c).
GEMV_CFG = (
    '{"a_load":"na256","family":"gemv","k_unroll":2,"kwarps":4,"lanes":"warp","n_tile":1,'
    '"pipe":"reg","reduction":"none","rows_per_cta":1,"splitk":1,"vec":8,"warps":4}'
)


def write_generated_export(path, desc, device_model, config=GEMV_CFG, times=(12.0, 15.0)):
    """A format_version 1 export (schema/export.sql) holding one problem,
    desc (a bf16 TN GemmDesc without batch), whose cuda winner on
    device_model is the generated kernel `config`."""
    with open(os.path.join(REPO, "schema", "export.sql")) as f:
        schema = f.read()
    con = sqlite3.connect(path)
    con.executescript(schema)
    con.execute("INSERT INTO meta VALUES ('format_version', '1')")
    m, n, k = desc.m, desc.n, desc.k
    lda = desc.lda or k
    ldb = desc.ldb or k
    ldc = desc.ldc or m
    spec = {"m": m, "n": n, "k": k, "batch": 1, "trans_a": "T", "trans_b": "N", "lda": lda, "ldb": ldb,
            "ldc": ldc, "ldd": ldc, "stride_a": 0, "stride_b": 0, "stride_c": 0, "stride_d": 0,
            "a_type": "bf16", "b_type": "bf16", "c_type": "bf16", "d_type": "bf16", "compute_type": "f32",
            "scale_type": "f32", "alpha": 1, "beta": 0, "bias": False, "activation": "none", "call_count": 1}
    con.execute(
        "INSERT INTO problems (id, key, label, m, n, k, batch, trans_a, trans_b, lda, ldb, ldc, ldd, stride_a,"
        " stride_b, stride_c, stride_d, a_type, b_type, c_type, d_type, compute_type, scale_type, alpha, beta,"
        " bias, bias_type, activation, call_count, flops, weight, spec) VALUES (1, ?, ?, ?, ?, ?, 1, 'T', 'N',"
        " ?, ?, ?, ?, 0, 0, 0, 0, 'bf16', 'bf16', 'bf16', 'bf16', 'f32', 'f32', 1, 0, 0, '', 'none', 1, ?, 1, ?)",
        (desc.key(), f"bf16 TN {m}x{n}x{k}", m, n, k, lda, ldb, ldc, ldc, 2.0 * m * n * k, json.dumps(spec)),
    )
    con.execute(
        "INSERT INTO best (problem_id, backend, device_model, config, config_hash, time_us, baseline_us, uplift,"
        " source) VALUES (1, 'cuda', ?, ?, '00a1', ?, ?, ?, 'test')",
        (device_model, config, times[0], times[1], times[1] / times[0]),
    )
    con.commit()
    con.close()
    return path


def folded(stats):
    """A router's stats() with "no_gain" (tuned, but the tuning kept the baseline: PyTorch's
    path) counted as "tuned_no_runner": which of the two a real CPU tuning's GEMM lands in
    depends on that tuning's measurements; test_no_gain pins the rule itself down."""
    st = dict(stats)
    ng = st.pop("no_gain", 0)
    if ng:
        st["tuned_no_runner"] = st.get("tuned_no_runner", 0) + ng
    return st


def with_uplift(path, folder, uplift):
    """A copy of the export at path in folder with every best entry's uplift set to uplift
    (<= 1: the tuning kept the default), as a str path."""
    import shutil
    import sqlite3

    db = os.path.join(str(folder), f"uplift{uplift}.db")
    shutil.copy(path, db)
    con = sqlite3.connect(db)
    con.execute("UPDATE best SET uplift = ?", (uplift,))
    con.commit()
    con.close()
    return db
