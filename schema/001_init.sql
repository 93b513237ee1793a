-- 001_init.sql: the coordinator's database, version 1.
-- Applied by server/store.c inside one transaction; PRAGMA user_version records
-- the last migration applied. Times are Unix milliseconds; JSON columns hold
-- compact cJSON text.

CREATE TABLE runs (
    id            INTEGER PRIMARY KEY,
    name          TEXT    NOT NULL,
    source_format TEXT    NOT NULL,            -- hipblaslt, tunableop, cublaslt, csv, yaml
    backend       TEXT    NOT NULL,            -- cpu, cuda, hip
    device_model  TEXT,                        -- target model; bound by the first lease when NULL
    strategy      TEXT    NOT NULL,            -- exhaustive, random
    budget        INTEGER NOT NULL,            -- max candidates per problem (0 = all)
    options       TEXT    NOT NULL,            -- JSON: shard_size, threshold, final_k, timing ...
    state         TEXT    NOT NULL CHECK (state IN ('running', 'done', 'cancelled', 'failed')),
    total_calls   INTEGER NOT NULL DEFAULT 0,
    total_flops   REAL    NOT NULL DEFAULT 0,
    dropped       INTEGER NOT NULL DEFAULT 0,  -- problems below the threshold
    skipped       TEXT,                        -- JSON array of skipped bad lines (skip_invalid)
    created_ms    INTEGER NOT NULL,
    started_ms    INTEGER,                     -- first lease
    finished_ms   INTEGER
);

CREATE TABLE problems (
    id           INTEGER PRIMARY KEY,
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key          TEXT    NOT NULL,             -- canonical key (gt_problem_key)
    label        TEXT    NOT NULL,
    m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, batch INTEGER NOT NULL,
    trans_a TEXT NOT NULL, trans_b TEXT NOT NULL,
    lda INTEGER NOT NULL, ldb INTEGER NOT NULL, ldc INTEGER NOT NULL, ldd INTEGER NOT NULL,
    stride_a INTEGER NOT NULL, stride_b INTEGER NOT NULL, stride_c INTEGER NOT NULL, stride_d INTEGER NOT NULL,
    a_type TEXT NOT NULL, b_type TEXT NOT NULL, c_type TEXT NOT NULL, d_type TEXT NOT NULL,
    compute_type TEXT NOT NULL, scale_type TEXT NOT NULL,
    alpha REAL NOT NULL, beta REAL NOT NULL,
    bias INTEGER NOT NULL, bias_type TEXT NOT NULL, activation TEXT NOT NULL,
    rotating_mb  INTEGER NOT NULL,
    call_count   INTEGER NOT NULL,
    flops        REAL    NOT NULL,             -- per call
    bytes        REAL    NOT NULL,             -- per call
    weight       REAL    NOT NULL,             -- share of the run's flops*calls
    spec         TEXT    NOT NULL,             -- problem JSON, what workers receive
    state        TEXT    NOT NULL CHECK (state IN ('enumerating', 'screening', 'final', 'done', 'failed', 'cancelled')),
    error        TEXT,
    UNIQUE (run_id, key)
);

CREATE TABLE workers (
    id                INTEGER PRIMARY KEY,
    host              TEXT    NOT NULL,
    pid               INTEGER NOT NULL,
    device_index      INTEGER NOT NULL,
    backend           TEXT    NOT NULL,
    device_model      TEXT    NOT NULL,
    arch              TEXT    NOT NULL,
    mem_bytes         INTEGER NOT NULL,
    units             INTEGER NOT NULL,
    driver            TEXT    NOT NULL,
    version           TEXT    NOT NULL,
    state             TEXT    NOT NULL CHECK (state IN ('idle', 'busy', 'lost', 'gone')),
    registered_ms     INTEGER NOT NULL,
    last_heartbeat_ms INTEGER NOT NULL,
    results           INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE jobs (
    id                INTEGER PRIMARY KEY,
    run_id            INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    problem_id        INTEGER NOT NULL REFERENCES problems(id) ON DELETE CASCADE,
    backend           TEXT    NOT NULL,
    kind              TEXT    NOT NULL CHECK (kind IN ('enumerate', 'screen', 'final')),
    candidates        TEXT    NOT NULL,        -- JSON array of config objects ([] for enumerate)
    ncandidates       INTEGER NOT NULL,
    baseline          TEXT,                    -- JSON config of the untuned default (NULL until enumerated)
    state             TEXT    NOT NULL CHECK (state IN ('queued', 'leased', 'done', 'failed', 'cancelled')),
    lease_owner       INTEGER REFERENCES workers(id),
    lease_deadline_ms INTEGER,
    attempts          INTEGER NOT NULL DEFAULT 0,
    error             TEXT,
    created_ms        INTEGER NOT NULL,
    updated_ms        INTEGER NOT NULL
);
CREATE INDEX jobs_by_state ON jobs(state, id);
CREATE INDEX jobs_by_run ON jobs(run_id, state);
CREATE INDEX jobs_by_problem ON jobs(problem_id, kind, state);

-- One measured candidate. The unique key makes reporting idempotent: a batch
-- re-sent after a lost acknowledgement, or a job re-run after its lease
-- expired, does not add rows. phase separates the quick screen from the
-- precise re-timing of the top candidates next to the baseline.
CREATE TABLE results (
    id           INTEGER PRIMARY KEY,
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    problem_id   INTEGER NOT NULL REFERENCES problems(id) ON DELETE CASCADE,
    job_id       INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    backend      TEXT    NOT NULL,
    phase        TEXT    NOT NULL CHECK (phase IN ('screen', 'final')),
    config       TEXT    NOT NULL,             -- canonical JSON
    config_hash  TEXT    NOT NULL,             -- FNV-1a 64 of config, hex
    is_baseline  INTEGER NOT NULL DEFAULT 0,
    time_us      REAL,                         -- median per call; NULL when it did not run
    spread       REAL,                         -- (p75-p25)/median
    tflops       REAL,
    rel_err      REAL,
    valid        INTEGER NOT NULL,             -- 1: validated, timed, usable
    reason       TEXT,                         -- why not valid (compile error, rel_err, crash)
    worker_id    INTEGER REFERENCES workers(id),
    device_model TEXT    NOT NULL,
    created_ms   INTEGER NOT NULL,
    UNIQUE (problem_id, backend, config_hash, device_model, phase)
);
CREATE INDEX results_by_problem ON results(problem_id, phase, valid, time_us);
CREATE INDEX results_by_run ON results(run_id);

-- The untuned default, re-timed inside every job next to that job's candidates.
CREATE TABLE baselines (
    id           INTEGER PRIMARY KEY,
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    problem_id   INTEGER NOT NULL REFERENCES problems(id) ON DELETE CASCADE,
    job_id       INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    backend      TEXT    NOT NULL,
    device_model TEXT    NOT NULL,
    config       TEXT    NOT NULL,
    time_us      REAL    NOT NULL,
    spread       REAL,
    worker_id    INTEGER REFERENCES workers(id),
    created_ms   INTEGER NOT NULL,
    UNIQUE (job_id)
);
CREATE INDEX baselines_by_problem ON baselines(problem_id);

-- The best valid result per problem, backend and device model, with the
-- baseline it is compared against. A problem whose final phase ran is judged
-- by the final phase alone (winner and baseline re-timed side by side in one
-- job); before that, by the best screen result against the mean of the
-- baselines timed in its screen jobs.
CREATE VIEW problem_best AS
WITH ranked AS (
    SELECT r.*, ROW_NUMBER() OVER (
               PARTITION BY r.problem_id, r.backend, r.device_model
               ORDER BY (r.phase = 'final') DESC, r.time_us ASC, r.id ASC) AS rn
    FROM results r
    WHERE r.valid = 1 AND r.time_us IS NOT NULL
)
SELECT ranked.run_id, ranked.problem_id, ranked.backend, ranked.device_model, ranked.phase,
       ranked.config, ranked.config_hash, ranked.is_baseline, ranked.time_us, ranked.spread,
       ranked.tflops, ranked.rel_err, ranked.worker_id,
       CASE WHEN ranked.phase = 'final' THEN
           (SELECT b.time_us FROM results b
             WHERE b.problem_id = ranked.problem_id AND b.backend = ranked.backend
               AND b.device_model = ranked.device_model AND b.phase = 'final'
               AND b.is_baseline = 1 AND b.valid = 1)
       ELSE
           (SELECT AVG(bl.time_us) FROM baselines bl
             WHERE bl.problem_id = ranked.problem_id AND bl.backend = ranked.backend
               AND bl.device_model = ranked.device_model)
       END AS baseline_us
FROM ranked
WHERE ranked.rn = 1;
