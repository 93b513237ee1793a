-- 006_final_rounds.sql: final phases measured in paired, interleaved rounds
-- (common/gt_paired.h). A final result paired with the baseline carries the
-- median of its per-round ratios baseline / result (uplift), that median's
-- distribution-free confidence interval (uplift_lo, uplift_hi) and the
-- rounds it came from; the baseline's own row has 1, 1, 1. NULL: not paired
-- (screen results, finals measured before this version, or a final whose
-- baseline did not run).
ALTER TABLE results ADD COLUMN rounds INTEGER;
ALTER TABLE results ADD COLUMN uplift REAL;
ALTER TABLE results ADD COLUMN uplift_lo REAL;
ALTER TABLE results ADD COLUMN uplift_hi REAL;

-- problem_best: a paired finalist is eligible only when its interval lies
-- above 1 (beyond the noise); otherwise the final's baseline row, the
-- default, is the entry ("no significant gain", uplift 1). Among eligible
-- paired rows the largest paired uplift wins (the baseline's 1 is below every
-- eligible finalist's); unpaired rows keep version 2's fastest-time order.
-- The store's own queries use the same rule (GT_STORE_BEST_FINAL_SQL in
-- server/store_priv.h); uplift is the paired median where there is one.
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
       r.uplift AS paired_uplift, r.uplift_lo, r.uplift_hi, r.rounds
FROM problems p
JOIN results r ON r.id = COALESCE(
    (SELECT r2.id FROM results r2
      WHERE r2.problem_id = p.id AND r2.phase = 'final' AND r2.valid = 1
        AND r2.time_us IS NOT NULL
        AND (r2.rounds IS NULL OR r2.is_baseline = 1 OR r2.uplift_lo > 1)
      ORDER BY r2.uplift DESC, r2.time_us, r2.id LIMIT 1),
    (SELECT r2.id FROM results r2
      WHERE r2.problem_id = p.id AND r2.phase = 'screen' AND r2.valid = 1
        AND r2.time_us IS NOT NULL ORDER BY r2.time_us, r2.id LIMIT 1));
