-- 005_worker_sessions.sql: authenticated worker sessions (proto/PROTOCOL.md,
-- "Sessions"). session_digest is SHA-256(credential "\n" token) of the
-- session the worker got at registration: the credential itself is never
-- stored, and a coordinator restarted with another token finds no earlier
-- session valid. NULL for workers registered before this version: they
-- must register again. job_leases records every worker a job was leased to,
-- so results are taken only for jobs their sender held.
ALTER TABLE workers ADD COLUMN session_digest TEXT;
CREATE INDEX workers_by_session ON workers(session_digest);
CREATE TABLE job_leases (
    job_id    INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    worker_id INTEGER NOT NULL,
    leased_ms INTEGER NOT NULL,
    PRIMARY KEY (job_id, worker_id)
) WITHOUT ROWID;
-- Jobs leased before this version: their holder may still report them.
INSERT OR IGNORE INTO job_leases(job_id, worker_id, leased_ms)
    SELECT id, lease_owner, updated_ms FROM jobs WHERE lease_owner IS NOT NULL;
