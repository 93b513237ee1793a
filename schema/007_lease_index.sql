-- 007_lease_index.sql: the lease picks the next job with index seeks
-- (server/store_lease.c next_job): the running runs in their share order
-- (fewest jobs leased now, then the longest since their last lease), and in
-- the first that has one, the first queued job of each kind in priority order. Before, one query sorted every
-- queued job of every run by a computed key, the job's texts carried through
-- the sort: with 3,300 queued jobs a lease took about 3 ms and was 57 % of
-- the dispatcher's time under 256 simulated workers (bench/coord_bench.sh).
CREATE INDEX jobs_queue ON jobs(run_id, state, kind, backend, id);
CREATE INDEX runs_by_state ON runs(state, id);
-- When a job of the run was last leased: runs with as many jobs leased take
-- turns by it, so none waits for another to drain its queue.
ALTER TABLE runs ADD COLUMN last_lease_ms INTEGER;
