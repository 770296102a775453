-- The attempt that ended last is kept on its job's row instead of as a
-- row of stile_job_attempts: most jobs run once, and that history row (with
-- its storage counter's update) was two of the twelve rows a job cycle
-- wrote. When the next attempt of the job ends, the one kept here moves to
-- stile_job_attempts in the same transaction. ended_attempt is NULL while
-- no attempt has ended since this migration; a job's history is the table's
-- rows and this one. A module from before this migration, serving over it,
-- still writes every attempt to the table; the history stays whole.
ALTER TABLE stile_jobs ADD COLUMN ended_attempt INTEGER CHECK (ended_attempt IS NULL OR ended_attempt >= 1);
ALTER TABLE stile_jobs ADD COLUMN ended_worker TEXT;
ALTER TABLE stile_jobs ADD COLUMN ended_token TEXT;
ALTER TABLE stile_jobs ADD COLUMN ended_claimed_at INTEGER;
ALTER TABLE stile_jobs ADD COLUMN ended_lease_until INTEGER;
ALTER TABLE stile_jobs ADD COLUMN ended_at INTEGER;
ALTER TABLE stile_jobs ADD COLUMN ended_outcome TEXT CHECK (ended_outcome IS NULL OR ended_outcome IN ('completed', 'failed',
'lease_expired', 'cancelled', 'snoozed'));
ALTER TABLE stile_jobs ADD COLUMN ended_error TEXT;
ALTER TABLE stile_jobs ADD COLUMN ended_noticed_by TEXT;
ALTER TABLE stile_jobs ADD COLUMN ended_heartbeats INTEGER;
ALTER TABLE stile_jobs ADD COLUMN ended_last_heartbeat_at INTEGER;
