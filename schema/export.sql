-- export.sql: the format of an exported result database (format_version 1).
-- A standalone SQLite file: one row per distinct GEMM (problems, keyed by the
-- canonical key), every measured candidate (results) and the best valid
-- configuration per problem, backend and device model (best). Written by
-- `gemmtune export` / GET /v1/runs/{id}/export, combined by `gemmtune merge`.
-- Documented in schema/EXPORT.md.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE problems (
    id           INTEGER PRIMARY KEY,
    key          TEXT    NOT NULL UNIQUE,
    label        TEXT    NOT NULL,
    m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, batch INTEGER NOT NULL,
    trans_a TEXT NOT NULL, trans_b TEXT NOT NULL,
    lda INTEGER NOT NULL, ldb INTEGER NOT NULL, ldc INTEGER NOT NULL, ldd INTEGER NOT NULL,
    stride_a INTEGER NOT NULL, stride_b INTEGER NOT NULL, stride_c INTEGER NOT NULL, stride_d INTEGER NOT NULL,
    a_type TEXT NOT NULL, b_type TEXT NOT NULL, c_type TEXT NOT NULL, d_type TEXT NOT NULL,
    compute_type TEXT NOT NULL, scale_type TEXT NOT NULL,
    alpha REAL NOT NULL, beta REAL NOT NULL,
    bias INTEGER NOT NULL, bias_type TEXT NOT NULL, activation TEXT NOT NULL,
    call_count   INTEGER NOT NULL,
    flops        REAL    NOT NULL,
    weight       REAL    NOT NULL,
    spec         TEXT    NOT NULL
);

CREATE TABLE results (
    id           INTEGER PRIMARY KEY,
    problem_id   INTEGER NOT NULL REFERENCES problems(id),
    backend      TEXT    NOT NULL,
    device_model TEXT    NOT NULL,
    phase        TEXT    NOT NULL,
    config       TEXT    NOT NULL,
    config_hash  TEXT    NOT NULL,
    is_baseline  INTEGER NOT NULL,
    time_us      REAL,
    spread       REAL,
    tflops       REAL,
    rel_err      REAL,
    valid        INTEGER NOT NULL,
    reason       TEXT,
    source       TEXT    NOT NULL,             -- "<coordinator host>/run/<id>"
    created_ms   INTEGER NOT NULL,
    rounds       INTEGER,                      -- final phase: paired rounds (NULL: not paired)
    uplift       REAL,                         -- median of per-round baseline / this
    uplift_lo    REAL,                         -- its confidence interval
    uplift_hi    REAL,
    -- 'graph': timed as CUDA graph replays although meta launch says plain
    -- (a launch-bound final); NULL: as meta launch says (and in exports
    -- before it)
    launch       TEXT,
    UNIQUE (problem_id, backend, device_model, config_hash, phase, source)
);

CREATE TABLE best (
    problem_id   INTEGER NOT NULL REFERENCES problems(id),
    backend      TEXT    NOT NULL,
    device_model TEXT    NOT NULL,
    config       TEXT    NOT NULL,
    config_hash  TEXT    NOT NULL,
    time_us      REAL    NOT NULL,
    baseline_us  REAL,                         -- the default, timed next to the winner
    uplift       REAL,                         -- paired median ratio, else baseline_us / time_us
    tflops       REAL,
    rel_err      REAL,
    source       TEXT    NOT NULL,
    uplift_lo    REAL,                         -- the uplift's confidence interval
    uplift_hi    REAL,                         -- (NULL: not from paired final rounds)
    rounds       INTEGER,
    -- what baseline_us and uplift are against (NULL in exports before it):
    -- 'default' (the vendor library's choice) or 'substitute' (the default
    -- could not run: the fastest library-like candidate stood in)
    baseline_kind   TEXT,
    baseline_config TEXT,                      -- the substitute's config (NULL: the default)
    baseline_reason TEXT,                      -- why the default could not run
    -- how time_us, baseline_us and uplift were timed when not as meta launch
    -- says: 'graph' (a launch-bound final of a plain run); NULL: meta launch
    launch          TEXT,
    PRIMARY KEY (problem_id, backend, device_model)
);
