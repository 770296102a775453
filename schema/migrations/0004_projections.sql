-- Projections: one row per generation of a projection's read-model
-- tables. The live generation serves reads; a building one (a rebuild)
-- catches up from the start of the log and replaces it atomically.

CREATE TABLE stile_projection_generations (
  name        TEXT    NOT NULL,
  generation  INTEGER NOT NULL CHECK (generation >= 1),
  role        TEXT    NOT NULL CHECK (role IN ('live', 'building')),
  fingerprint TEXT    NOT NULL,           -- the version, types and schema it is built with
  checkpoint  INTEGER NOT NULL DEFAULT 0, -- the last event applied (or passed over)
  failures    INTEGER NOT NULL DEFAULT 0, -- tries of the event it is stalled on
  retry_at    INTEGER,                    -- stalled: when that event is tried again
  error       TEXT,
  error_seq   INTEGER,                    -- stalled: the event that failed
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  CHECK ((retry_at IS NULL) = (error_seq IS NULL)),
  PRIMARY KEY (name, generation)
) STRICT, WITHOUT ROWID;
CREATE UNIQUE INDEX stile_projection_roles ON stile_projection_generations (name, role);
