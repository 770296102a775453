-- Debounce and throttle at enqueue.
--
-- A debounced job collects the enqueues of its key while it is scheduled
-- and never claimed: each one moves its run_at to the end of a new window
-- (never past debounce_until, the first enqueue's max wait) and, by
-- debounce_keep, replaces its args (last), leaves them (first) or appends
-- them to all_args (all: a JSON array of every enqueued args, in order).
-- collapsed counts the enqueues it holds.
ALTER TABLE stile_jobs ADD COLUMN debounce_key TEXT;
ALTER TABLE stile_jobs ADD COLUMN debounce_keep TEXT CHECK (debounce_keep IN ('last', 'first', 'all'));
ALTER TABLE stile_jobs ADD COLUMN debounce_until INTEGER;
ALTER TABLE stile_jobs ADD COLUMN collapsed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE stile_jobs ADD COLUMN all_args TEXT;
-- A throttled job answers the enqueues of its key for a window from its
-- creation: the first runs, the others get it.
ALTER TABLE stile_jobs ADD COLUMN throttle_key TEXT;

-- The job collecting a debounce key's enqueues: one seek.
CREATE INDEX stile_jobs_debounce ON stile_jobs (debounce_key, id)
  WHERE state = 'scheduled' AND debounce_key IS NOT NULL;
-- A throttle key's latest job.
CREATE INDEX stile_jobs_throttle ON stile_jobs (throttle_key, created_at)
  WHERE throttle_key IS NOT NULL;
