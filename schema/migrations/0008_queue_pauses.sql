-- Queues an operator paused: claims take no job from them until resumed.
-- A queue without a row runs.

CREATE TABLE stile_queues (
name TEXT PRIMARY KEY,
paused INTEGER NOT NULL CHECK (paused IN (0, 1)),
updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
