-- 010_results_indexes.sql: two fewer indexes to write per result. Every
-- result a worker reports is one row in results and one entry in each of
-- its indexes; the coordinator's ingest (bench/coord_bench.sh) spent a fifth
-- of its thread in those B-tree inserts. Two of the five are not needed:
--   results_by_run (run_id) is a prefix of results_by_run_phase
--   (run_id, phase, valid): `WHERE run_id = ?` seeks that one. The run's
--   fingerprint takes MAX(id) as one seek per (phase, valid) there
--   (server/store_stats.c), the export of a run sorts its rows by id.
--   results_by_problem_time (problem_id, valid, created_ms, time_us) served
--   only the timeline view, which now reads a problem's valid results
--   through results_by_problem (problem_id, phase, valid, time_us) and sorts
--   them by time (a few hundred rows per problem).
DROP INDEX results_by_run;
DROP INDEX results_by_problem_time;
