-- 002_fast_best.sql: problem_best without a window over every result.
-- Version 1 ranked all results of the database before a caller could filter
-- by run: 0.5 s per query at 100k results. Here each problem's best is one
-- indexed lookup (results_by_problem), so `WHERE run_id = ?` stays cheap.
-- A run is tuned for one backend and device model, so one best per problem
-- is the same as one per (problem, backend, device model).

DROP VIEW problem_best;
CREATE VIEW problem_best AS
SELECT r.run_id, r.problem_id, r.backend, r.device_model, r.phase, r.config, r.config_hash,
       r.is_baseline, r.time_us, r.spread, r.tflops, r.rel_err, r.worker_id,
       CASE WHEN r.phase = 'final' THEN
           (SELECT b.time_us FROM results b
             WHERE b.problem_id = r.problem_id AND b.backend = r.backend
               AND b.device_model = r.device_model AND b.phase = 'final'
               AND b.is_baseline = 1 AND b.valid = 1)
       ELSE
           (SELECT AVG(bl.time_us) FROM baselines bl
             WHERE bl.problem_id = r.problem_id AND bl.backend = r.backend
               AND bl.device_model = r.device_model)
       END AS baseline_us
FROM problems p
JOIN results r ON r.id = COALESCE(
    (SELECT r2.id FROM results r2
      WHERE r2.problem_id = p.id AND r2.phase = 'final' AND r2.valid = 1
        AND r2.time_us IS NOT NULL ORDER BY r2.time_us, r2.id LIMIT 1),
    (SELECT r2.id FROM results r2
      WHERE r2.problem_id = p.id AND r2.phase = 'screen' AND r2.valid = 1
        AND r2.time_us IS NOT NULL ORDER BY r2.time_us, r2.id LIMIT 1));

-- Progress counts per run and phase (count_run), and the timeline per problem.
CREATE INDEX results_by_run_phase ON results(run_id, phase, valid);
CREATE INDEX results_by_problem_time ON results(problem_id, valid, created_ms, time_us);
