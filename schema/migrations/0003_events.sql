-- The event log, the command ledger, and the reactions' inbox.

-- The tenant's storage identity: a random id drawn once, so that
-- idempotency keys differ between tenants, and between a tenant and a
-- later one created under the same name.
CREATE TABLE stile_identity (
  id TEXT NOT NULL
) STRICT;
INSERT INTO stile_identity (id) VALUES (lower(hex(randomblob(16))));

-- One log per tenant. seq is the rowid: events are never deleted and a
-- rolled-back append takes no number, so the sequence has no gaps.
CREATE TABLE stile_events (
  seq        INTEGER PRIMARY KEY,
  stream     TEXT    NOT NULL,
  version    INTEGER NOT NULL CHECK (version >= 1),
  type       TEXT    NOT NULL,
  data       TEXT    NOT NULL,
  command_id TEXT,
  at         INTEGER NOT NULL,
  UNIQUE (stream, version)
) STRICT;
-- Reactions read their events by type, in log order.
CREATE INDEX stile_events_type ON stile_events (type, seq);

-- Every command applied, by id: a command id already here is acknowledged,
-- not applied again. digest fingerprints the command, to refuse an id
-- reused for another one.
CREATE TABLE stile_commands (
  id           TEXT    PRIMARY KEY,
  aggregate    TEXT    NOT NULL,
  aggregate_id TEXT    NOT NULL,
  type         TEXT    NOT NULL,
  digest       TEXT    NOT NULL,
  first_seq    INTEGER,             -- the events it appended, if any
  last_seq     INTEGER,
  version      INTEGER NOT NULL,    -- the stream's version after it
  job_ids      TEXT    NOT NULL DEFAULT '[]',
  source       TEXT    NOT NULL,    -- api, reaction:<handler>:<seq>, scheduled
  at           INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- Commands scheduled by reactions, applied by the alarm at their time.
CREATE TABLE stile_scheduled_commands (
  id         TEXT    PRIMARY KEY,   -- the command's id
  at         INTEGER NOT NULL,
  command    TEXT    NOT NULL,      -- the command (JSON)
  state      TEXT    NOT NULL DEFAULT 'scheduled' CHECK (state IN ('scheduled', 'applied', 'rejected')),
  error      TEXT,
  source     TEXT    NOT NULL,
  created_at INTEGER NOT NULL,
  done_at    INTEGER
) STRICT, WITHOUT ROWID;
CREATE INDEX stile_scheduled_commands_due ON stile_scheduled_commands (at) WHERE state = 'scheduled';

-- One row per registered reaction: its checkpoint is the last event it was
-- handed (moved by compare-and-set).
CREATE TABLE stile_reactions (
  name       TEXT    PRIMARY KEY,
  checkpoint INTEGER NOT NULL CHECK (checkpoint >= 0),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- The inbox: one row per (reaction, event) handed out.
CREATE TABLE stile_inbox (
  handler     TEXT    NOT NULL,
  seq         INTEGER NOT NULL,
  state       TEXT    NOT NULL CHECK (state IN ('pending', 'retry', 'ready', 'succeeded', 'skipped')),
  claim_id    TEXT    NOT NULL,
  worker      TEXT    NOT NULL,
  attempt     INTEGER NOT NULL CHECK (attempt >= 1),
  failures    INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
  claimed_at  INTEGER NOT NULL,
  lease_until INTEGER NOT NULL,
  run_at      INTEGER,
  error       TEXT,
  -- How the current claim ended, when it reported a failure or a delay:
  -- kept until the delivery is claimed again, so a repeat of that report
  -- is a duplicate and nothing else from the claim counts.
  outcome     TEXT    CHECK (outcome IN ('failed', 'delayed')),
  settled_at  INTEGER,
  CHECK ((state = 'retry') = (run_at IS NOT NULL)),
  CHECK (state <> 'retry' OR outcome IS NOT NULL),
  CHECK ((state IN ('succeeded', 'skipped')) = (settled_at IS NOT NULL)),
  PRIMARY KEY (handler, seq)
) STRICT, WITHOUT ROWID;
-- A handler's open deliveries, in order; and the due times of the alarm.
CREATE INDEX stile_inbox_open ON stile_inbox (handler, seq) WHERE state IN ('pending', 'retry', 'ready');
CREATE INDEX stile_inbox_lease ON stile_inbox (lease_until) WHERE state = 'pending';
CREATE INDEX stile_inbox_retry ON stile_inbox (run_at) WHERE state = 'retry';

-- Process state, per process and correlation id.
CREATE TABLE stile_process_state (
  process     TEXT    NOT NULL,
  correlation TEXT    NOT NULL,
  state       TEXT    NOT NULL,
  updated_at  INTEGER NOT NULL,
  PRIMARY KEY (process, correlation)
) STRICT, WITHOUT ROWID;

-- Process deadlines: at at, an event of type stile.deadline:<process> is
-- appended for the process to handle, and the row goes.
CREATE TABLE stile_deadlines (
  process     TEXT    NOT NULL,
  correlation TEXT    NOT NULL,
  name        TEXT    NOT NULL,
  at          INTEGER NOT NULL,
  PRIMARY KEY (process, correlation, name)
) STRICT, WITHOUT ROWID;
CREATE INDEX stile_deadlines_due ON stile_deadlines (at);
