-- 012_run_counts.sql: a run's screen progress kept on its row. Every GET of
-- /v1/runs and /v1/runs/{id} counted the run's screen results
-- (`COUNT(*), SUM(valid) FROM results WHERE run_id = ? AND phase = 'screen'`):
-- a walk of the run's whole index range, 20-45 ms at 261,000 results on the
-- 2-core machine, once per run in a page, and again whenever a view's cache
-- expired (bench/coord_bench.sh with WRK_DELAY_MS: a page of 50 runs polled
-- at 150 requests/s took 124 ms at p99 while 256 workers reported). The
-- report transaction (server/store_report.c, report_tx) adds the rows it
-- inserted, one UPDATE per results message; results are never deleted or
-- changed after their insert.
--   screen_done:  screen rows, less a default that could not run (valid = 0
--                 and is_baseline = 1: the reason it failed, no candidate)
--   screen_valid: valid screen rows
ALTER TABLE runs ADD COLUMN screen_done INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN screen_valid INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET
  screen_done = (SELECT COUNT(*) FROM results r WHERE r.run_id = runs.id AND r.phase = 'screen'
                   AND NOT (r.valid = 0 AND r.is_baseline = 1)),
  screen_valid = (SELECT COUNT(*) FROM results r WHERE r.run_id = runs.id AND r.phase = 'screen'
                    AND r.valid = 1);
