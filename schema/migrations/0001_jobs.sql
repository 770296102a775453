-- Jobs, their dependencies, concurrency limits, attempt history and the
-- audit of rejected reports.
-- Every job state exists from this first migration; later migrations only add.
-- Times are Unix milliseconds; every integer stays below 2^53.

CREATE TABLE stile_jobs (
  id           INTEGER PRIMARY KEY,
  kind         TEXT    NOT NULL,
  queue        TEXT    NOT NULL,
  priority     INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 9),
  args         TEXT    NOT NULL,
  state        TEXT    NOT NULL CHECK (state IN ('pending', 'scheduled', 'available', 'running',
                                                 'retryable', 'completed', 'cancelled', 'dead')),
  attempt      INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0),
  failures     INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
  max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1),
  lease_ms     INTEGER NOT NULL CHECK (lease_ms > 0),
  -- The handler's time limit: heartbeats never extend a lease past
  -- claimed_at + timeout_ms.
  timeout_ms   INTEGER NOT NULL CHECK (timeout_ms >= lease_ms),
  backoff_ms   INTEGER NOT NULL CHECK (backoff_ms > 0),
  backoff_max_ms INTEGER NOT NULL CHECK (backoff_max_ms >= backoff_ms),
  run_at       INTEGER NOT NULL,
  created_at   INTEGER NOT NULL,
  worker       TEXT,
  lease_token  TEXT,
  claimed_at   INTEGER,
  lease_until  INTEGER,
  output       TEXT,
  last_error   TEXT,
  finished_at  INTEGER,
  -- A JSON array of strings: set at enqueue, added to by fenced reports.
  tags         TEXT    NOT NULL DEFAULT '[]',
  -- Unique enqueue: at most one live job per key (index below).
  unique_key   TEXT,
  -- The concurrency limit this job counts against (stile_concurrency).
  concurrency_key TEXT,
  -- Parents not finished yet; a pending job becomes ready at zero.
  pending_parents INTEGER NOT NULL DEFAULT 0 CHECK (pending_parents >= 0),
  -- 1: run even when a parent ends dead or cancelled.
  run_regardless  INTEGER NOT NULL DEFAULT 0 CHECK (run_regardless IN (0, 1)),
  -- When an operator asked to cancel this running job.
  cancel_requested INTEGER,
  -- A running job holds exactly one lease; no other state holds one.
  CHECK ((state = 'running') = (worker IS NOT NULL AND lease_token IS NOT NULL
                                AND claimed_at IS NOT NULL AND lease_until IS NOT NULL)),
  -- Terminal states, and only they, have a finish time.
  CHECK ((state IN ('completed', 'cancelled', 'dead')) = (finished_at IS NOT NULL)),
  -- Output is recorded only by a completed attempt.
  CHECK (output IS NULL OR state = 'completed'),
  CHECK (state <> 'running' OR attempt >= 1),
  CHECK (failures <= max_attempts),
  -- Only a pending job waits for parents, and it waits for at least one.
  CHECK ((state = 'pending') = (pending_parents > 0) OR state = 'cancelled'),
  -- Only a running job carries a cancel request.
  CHECK (cancel_requested IS NULL OR state = 'running')
) STRICT;

-- Claim: ready jobs of one queue in claim order, without scanning others;
-- jobs under a concurrency limit by key, so a full key is never scanned.
CREATE INDEX stile_jobs_ready ON stile_jobs (queue, priority, run_at, id)
  WHERE state = 'available' AND concurrency_key IS NULL;
CREATE INDEX stile_jobs_ready_keyed ON stile_jobs (concurrency_key, queue, priority, run_at, id)
  WHERE state = 'available' AND concurrency_key IS NOT NULL;
-- Due work: scheduled and retryable jobs by the time they become ready.
CREATE INDEX stile_jobs_due ON stile_jobs (run_at) WHERE state IN ('scheduled', 'retryable');
-- Lease expiry: running jobs by lease deadline.
CREATE INDEX stile_jobs_lease ON stile_jobs (lease_until) WHERE state = 'running';
-- Unique enqueue: one live job per key; and finished ones by age, for windows.
CREATE UNIQUE INDEX stile_jobs_unique_live ON stile_jobs (unique_key)
  WHERE unique_key IS NOT NULL AND state NOT IN ('completed', 'cancelled', 'dead');
CREATE INDEX stile_jobs_unique ON stile_jobs (unique_key, created_at) WHERE unique_key IS NOT NULL;
-- Listing and counting by state. Running jobs are left out (the lease
-- index finds them): every index entry costs each write that moves a job,
-- and claim and report both move one through running.
CREATE INDEX stile_jobs_state ON stile_jobs (state, id) WHERE state <> 'running';

-- Dependencies: child waits for parent. resolved says how the parent ended
-- (completed, or failed: dead or cancelled); NULL while it has not.
CREATE TABLE stile_job_deps (
  child_id    INTEGER NOT NULL REFERENCES stile_jobs (id) ON DELETE CASCADE,
  parent_id   INTEGER NOT NULL REFERENCES stile_jobs (id) ON DELETE CASCADE,
  resolved    TEXT CHECK (resolved IN ('completed', 'failed')),
  resolved_at INTEGER,
  CHECK ((resolved IS NULL) = (resolved_at IS NULL)),
  CHECK (child_id <> parent_id),
  PRIMARY KEY (child_id, parent_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX stile_job_deps_parent ON stile_job_deps (parent_id, child_id) WHERE resolved IS NULL;

-- Concurrency limits: at most slots running jobs per key. in_use counts
-- them; it moves only with a job entering or leaving running.
CREATE TABLE stile_concurrency (
  key        TEXT    PRIMARY KEY,
  slots      INTEGER NOT NULL CHECK (slots >= 0),
  in_use     INTEGER NOT NULL DEFAULT 0 CHECK (in_use >= 0),
  updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- One row per ended attempt. The attempt in progress lives on stile_jobs.
CREATE TABLE stile_job_attempts (
  job_id      INTEGER NOT NULL REFERENCES stile_jobs (id) ON DELETE CASCADE,
  attempt     INTEGER NOT NULL CHECK (attempt >= 1),
  worker      TEXT    NOT NULL,
  lease_token TEXT    NOT NULL,
  claimed_at  INTEGER NOT NULL,
  lease_until INTEGER NOT NULL,
  ended_at    INTEGER NOT NULL,
  outcome     TEXT    NOT NULL CHECK (outcome IN ('completed', 'failed', 'lease_expired',
                                                  'cancelled', 'snoozed')),
  error       TEXT,
  -- Who noticed the end: the worker's report, the alarm, or a request that
  -- applied due work lazily.
  noticed_by  TEXT    NOT NULL CHECK (noticed_by IN ('report', 'alarm', 'request')),
  PRIMARY KEY (job_id, attempt)
) STRICT, WITHOUT ROWID;

-- Heartbeats and reports the fence refused, newest kept, bounded per job.
CREATE TABLE stile_job_rejections (
  id        INTEGER PRIMARY KEY,
  job_id    INTEGER NOT NULL REFERENCES stile_jobs (id) ON DELETE CASCADE,
  at        INTEGER NOT NULL,
  request   TEXT    NOT NULL CHECK (request IN ('heartbeat', 'report')),
  worker    TEXT    NOT NULL,
  attempt   INTEGER NOT NULL,
  outcome   TEXT,
  code      TEXT    NOT NULL,
  message   TEXT    NOT NULL
) STRICT;
CREATE INDEX stile_job_rejections_job ON stile_job_rejections (job_id, id);
