-- destructive: rebuilds stile_operations so an operation may be a replay, which an older Stile would run as a job filter.
-- Replays (POST /operations, action "replay"): a reaction is handed the
-- events from from_seq on that it already handled again. A replay reads
-- its reaction's deliveries after after_id up to until_seq (the reaction's
-- checkpoint when it started) in slices, opening the settled ones again.
-- SQLite cannot change a CHECK in place: the table is built anew, its
-- rows copied.
CREATE TABLE stile_operations_new (
  id         INTEGER PRIMARY KEY,
  action     TEXT    NOT NULL CHECK (action IN ('retry', 'cancel', 'delete', 'replay')),
  filter     TEXT    NOT NULL,
  state      TEXT    NOT NULL CHECK (state IN ('running', 'done')),
  after_id   INTEGER NOT NULL DEFAULT 0,
  matched    INTEGER NOT NULL DEFAULT 0,
  done       INTEGER NOT NULL DEFAULT 0,
  skipped    INTEGER NOT NULL DEFAULT 0,
  last_skip  TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  done_at    INTEGER,
  reaction   TEXT,
  from_seq   INTEGER,
  until_seq  INTEGER,
  CHECK ((action = 'replay') = (reaction IS NOT NULL AND from_seq IS NOT NULL AND until_seq IS NOT NULL))
) STRICT;
INSERT INTO stile_operations_new (id, action, filter, state, after_id, matched, done, skipped, last_skip, created_at, updated_at, done_at)
  SELECT id, action, filter, state, after_id, matched, done, skipped, last_skip, created_at, updated_at, done_at FROM stile_operations;
DROP TABLE stile_operations;
ALTER TABLE stile_operations_new RENAME TO stile_operations;
CREATE INDEX stile_operations_running ON stile_operations (updated_at) WHERE state = 'running';

-- While a replay of a reaction runs, claims hand out none of its
-- deliveries after replay_to (the replay's position) and no new event, so
-- the reaction sees its events again in order.
ALTER TABLE stile_reactions ADD COLUMN replay_to INTEGER;

-- How many replays opened a delivery again: a replayed delivery is a new
-- one, with its own idempotency key (and so its own command ids).
ALTER TABLE stile_inbox ADD COLUMN replays INTEGER NOT NULL DEFAULT 0 CHECK (replays >= 0);
