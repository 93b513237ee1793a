-- 003_evolutionary.sql: the state of strategy=evolutionary.
-- The search breeds each generation from the results of the ones before, so
-- what it needs between generations lives here, written in the transaction
-- that queues the generation: a coordinator killed between two generations
-- restarts with the next one already queued, or breeds it when the last job
-- of the current one reports (server/store_evo.c).

-- One row per problem of an evolutionary run: its whole candidate space (the
-- search only ever proposes members of it, so a cuBLASLt config has passed
-- AlgoCheck and a generated one the pruning rules) and the search's counters.
CREATE TABLE spaces (
    problem_id  INTEGER PRIMARY KEY REFERENCES problems(id) ON DELETE CASCADE,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    configs     TEXT    NOT NULL,   -- JSON array of config objects, the backend's order
                                    -- (heuristic picks first)
    size        INTEGER NOT NULL,   -- distinct members of configs
    seed        INTEGER NOT NULL,   -- the problem's search seed (run seed x problem key)
    budget      INTEGER NOT NULL,   -- configs the search proposes in all (<= size)
    population  INTEGER NOT NULL,   -- configs per generation
    generations INTEGER NOT NULL,   -- most generations
    generation  INTEGER NOT NULL DEFAULT 0,  -- the generation queued last (0-based)
    issued      INTEGER NOT NULL DEFAULT 0,  -- configs proposed so far (all generations)
    best_us     REAL,                        -- best valid screen time when the last
                                             -- generation was bred
    stale       INTEGER NOT NULL DEFAULT 0,  -- generations in a row without a better best
    state       TEXT    NOT NULL CHECK (state IN ('searching', 'done')),
    stop_reason TEXT                         -- budget, generations, converged, exhausted
);
CREATE INDEX spaces_by_run ON spaces(run_id, state);

-- The generation a screen job belongs to (NULL: not an evolutionary run).
ALTER TABLE jobs ADD COLUMN generation INTEGER;
