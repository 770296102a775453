-- How many heartbeats the running attempt sent, and the last one's time,
-- kept with each ended attempt: a job's timeline shows them.

ALTER TABLE stile_jobs ADD COLUMN heartbeats INTEGER NOT NULL DEFAULT 0 CHECK (heartbeats >= 0);
ALTER TABLE stile_jobs ADD COLUMN last_heartbeat_at INTEGER;
ALTER TABLE stile_job_attempts ADD COLUMN heartbeats INTEGER NOT NULL DEFAULT 0 CHECK (heartbeats >= 0);
ALTER TABLE stile_job_attempts ADD COLUMN last_heartbeat_at INTEGER;
