-- 011_results_launch.sql: how a result was timed when not as its job said.
-- 'graph': a plain run's final found the GEMM launch-bound (a call's plain
-- time more than GT_LAUNCH_BOUND_RATIO its time replayed in a CUDA graph,
-- common/gt_policy.h) and timed its rounds as graphs, so time_us and the
-- uplift are the kernels' own (worker/runner.c). NULL: the run's launch
-- option (runs.options.launch). problem_best carries the winner's, which
-- the export's best.launch and `gemmtune verify` read. A paired finalist is
-- eligible only when its interval lies above 1.02 (GT_MIN_GAIN,
-- common/gt_policy.h; 006 said 1): a smaller gain did not survive re-timing
-- in another process.
ALTER TABLE results ADD COLUMN launch TEXT;
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
       END AS baseline_us,
       r.uplift AS paired_uplift, r.uplift_lo, r.uplift_hi, r.rounds, r.launch
FROM problems p
JOIN results r ON r.id = COALESCE(
    (SELECT r2.id FROM results r2
      WHERE r2.problem_id = p.id AND r2.phase = 'final' AND r2.valid = 1
        AND r2.time_us IS NOT NULL
        AND (r2.rounds IS NULL OR r2.is_baseline = 1 OR r2.uplift_lo > 1.02)
      ORDER BY r2.uplift DESC, r2.time_us, r2.id LIMIT 1),
    (SELECT r2.id FROM results r2
      WHERE r2.problem_id = p.id AND r2.phase = 'screen' AND r2.valid = 1
        AND r2.time_us IS NOT NULL ORDER BY r2.time_us, r2.id LIMIT 1));
