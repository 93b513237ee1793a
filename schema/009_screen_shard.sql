-- 009_screen_shard.sql: every GEMM gets a first result early. A problem's
-- screen candidates are cut into several jobs (server/plan.c gt_plan_shard),
-- written problem by problem, and the lease (server/store_lease.c next_job)
-- took a run's screen jobs oldest first: the last GEMM's first screen job
-- waited for every earlier GEMM's shards (25 Llama shapes on a GPU: the last
-- one's first result after minutes, big GEMMs' several shards ran first).
-- A job's shard is its index among its problem's screen jobs as they were
-- written (0, 1, ...; for strategy=evolutionary, among its generation's
-- jobs); enumerate and final jobs are 0. The lease takes screen jobs by
-- (shard > 0, id): every GEMM's first screen job before any GEMM's other
-- ones, which then go oldest first, GEMM by GEMM as before, so each GEMM's
-- screen still ends, and its final starts, as early as it can (ordering
-- all by (shard, id) held every final until the last shards of all GEMMs:
-- on several GPUs the largest GEMM's final then ran last, its critical
-- path). The queue index orders by that expression before id, so the lease
-- stays one index seek (no sort); jobs from before this version are all
-- shard 0 (oldest first, as before).
ALTER TABLE jobs ADD COLUMN shard INTEGER NOT NULL DEFAULT 0;
DROP INDEX jobs_queue;
CREATE INDEX jobs_queue ON jobs(run_id, state, kind, backend, shard > 0, id);
