-- Bulk operations an operator started (POST /operations): an action
-- (retry, cancel, delete) on every job a filter finds, run in slices by the
-- alarm, each slice one transaction. after_id is where the next slice
-- reads from; matched counts the jobs found, done those the action took,
-- skipped those it refused (and last_skip says why, for the latest).
CREATE TABLE stile_operations (
  id         INTEGER PRIMARY KEY,
  action     TEXT    NOT NULL CHECK (action IN ('retry', 'cancel', 'delete')),
  filter     TEXT    NOT NULL,
  state      TEXT    NOT NULL CHECK (state IN ('running', 'done')),
  after_id   INTEGER NOT NULL DEFAULT 0,
  matched    INTEGER NOT NULL DEFAULT 0,
  done       INTEGER NOT NULL DEFAULT 0,
  skipped    INTEGER NOT NULL DEFAULT 0,
  last_skip  TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  done_at    INTEGER
) STRICT;
CREATE INDEX stile_operations_running ON stile_operations (updated_at) WHERE state = 'running';
