-- 013_view_indexes.sql: the run view's per-problem lookups as index seeks.
-- GET /v1/runs/{id} (server/store_query.c, gt_store_add_best) asks each of
-- a run's problems, among others, whether its default failed and which
-- baseline its screen and final jobs timed (store_priv.h:
-- GT_STORE_DEFAULT_FAILED_SQL, GT_STORE_SCREEN_BASE_SQL,
-- GT_STORE_FINAL_BASE_SQL). On bench/coord_bench.sh's database (1000
-- problems, 261,000 results, 6,000 jobs) the first walked every result of
-- the problem (results_by_problem has phase before is_baseline): 28 ms of a
-- 72 ms render; the other two sorted the problem's jobs by id (jobs_by_problem
-- has state before id).
--   results_failed_default: the rows of a default that could not run, a few
--                           in a whole database, so it costs the ingest
--                           nothing
--   jobs_baseline:          a problem's jobs of one kind that name a
--                           baseline, by id (written once per job, at plan time)
CREATE INDEX results_failed_default ON results(problem_id, id) WHERE is_baseline = 1 AND valid = 0;
CREATE INDEX jobs_baseline ON jobs(problem_id, kind, id) WHERE baseline IS NOT NULL;
