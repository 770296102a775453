-- Periodic jobs: a cron expression and the job it enqueues each period.

CREATE TABLE stile_schedules (
  name       TEXT    PRIMARY KEY,
  cron       TEXT    NOT NULL,
  job        TEXT    NOT NULL,             -- the enqueue request each period makes (JSON)
  paused     INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
  next_at    INTEGER NOT NULL CHECK (next_at > 0), -- the next period to enqueue
  last_at    INTEGER,                      -- the period last enqueued
  last_job   INTEGER,                      -- the job it enqueued
  last_error TEXT,                         -- why the last period enqueued nothing
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX stile_schedules_due ON stile_schedules (next_at) WHERE paused = 0;
