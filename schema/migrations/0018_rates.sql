-- Rate limits: at most max_starts job starts (claims) per key in any
-- window of period_ms. A job names its key in rate_key.
ALTER TABLE stile_jobs ADD COLUMN rate_key TEXT;

-- The ready jobs are three ranges now: without a key, under a concurrency
-- key only, and under a rate key (with or without a concurrency key). A
-- claim reads the third only for the keys whose limit has room, so a key
-- at its limit is never read, however many jobs wait on it.
DROP INDEX stile_jobs_ready;
CREATE INDEX stile_jobs_ready ON stile_jobs (queue, priority, run_at, id)
  WHERE state = 'available' AND concurrency_key IS NULL AND rate_key IS NULL;
DROP INDEX stile_jobs_ready_keyed;
CREATE INDEX stile_jobs_ready_keyed ON stile_jobs (concurrency_key, queue, priority, run_at, id)
  WHERE state = 'available' AND concurrency_key IS NOT NULL AND rate_key IS NULL;
CREATE INDEX stile_jobs_ready_rated ON stile_jobs (rate_key, queue, priority, run_at, id)
  WHERE state = 'available' AND rate_key IS NOT NULL;

-- One row per rate key. starts is the sliding log of the key's recent
-- starts ("at:n" pairs, oldest first; package flow), rewritten by the claim
-- that starts jobs of the key, in its transaction. open_at is when the key
-- next has room (<= now: it has room now); wake_at, when set, is when jobs
-- that wait on the key may start: the alarm is due then. source says who
-- set the limit: the module's default or the tenant (PUT /rates/{key}).
-- started and limited count the key's starts and the times a start had to
-- wait, for /metrics.
CREATE TABLE stile_rates (
  key        TEXT    PRIMARY KEY,
  max_starts INTEGER NOT NULL CHECK (max_starts >= 1),
  period_ms  INTEGER NOT NULL CHECK (period_ms >= 1),
  source     TEXT    NOT NULL CHECK (source IN ('module', 'tenant')),
  starts     TEXT    NOT NULL DEFAULT '',
  open_at    INTEGER NOT NULL DEFAULT 0,
  wake_at    INTEGER,
  started    INTEGER NOT NULL DEFAULT 0,
  limited    INTEGER NOT NULL DEFAULT 0,
  updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX stile_rates_wake ON stile_rates (wake_at) WHERE wake_at IS NOT NULL;
