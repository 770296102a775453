-- Retention: what the alarm may delete once it is old enough, and the
-- counters GET /storage reads (Durable Object SQLite has no dbstat and
-- refuses page_count, so sizes are kept on write, by triggers: no write
-- path can forget them).

-- A finished job with a unique key is kept until its unique window ends
-- (the window it was enqueued with; 0: none).
ALTER TABLE stile_jobs ADD COLUMN unique_window_ms INTEGER NOT NULL DEFAULT 0;

-- What the purge looks for, oldest first.
CREATE INDEX stile_jobs_finished ON stile_jobs (state, finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX stile_inbox_settled ON stile_inbox (settled_at) WHERE settled_at IS NOT NULL;
CREATE INDEX stile_commands_at ON stile_commands (at);
CREATE INDEX stile_scheduled_commands_done ON stile_scheduled_commands (done_at) WHERE done_at IS NOT NULL;
CREATE INDEX stile_audit_at ON stile_audit (at);
-- Deleting a job cascades to the edges naming it as parent.
CREATE INDEX stile_job_deps_parent_all ON stile_job_deps (parent_id);

-- A tenant's settings: its retention overrides (JSON), for now.
CREATE TABLE stile_settings (
  key        TEXT    PRIMARY KEY,
  value      TEXT    NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- Rows and estimated bytes per kind of row: the bytes are the row's text
-- and blob lengths plus a fixed cost per row for its integers, keys and
-- index entries.
CREATE TABLE stile_storage (
  kind  TEXT    PRIMARY KEY,
  rows  INTEGER NOT NULL,
  bytes INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

INSERT INTO stile_storage (kind, rows, bytes)
  SELECT 'jobs', COUNT(*), COALESCE(SUM(160 + length(kind) + length(queue) + length(args) + length(tags)
    + COALESCE(length(output), 0) + COALESCE(length(last_error), 0) + COALESCE(length(unique_key), 0)), 0) FROM stile_jobs;
INSERT INTO stile_storage (kind, rows, bytes)
  SELECT 'job_attempts', COUNT(*), COALESCE(SUM(72 + length(worker) + length(lease_token) + COALESCE(length(error), 0)), 0) FROM stile_job_attempts;
INSERT INTO stile_storage (kind, rows, bytes)
  SELECT 'job_refusals', COUNT(*), COALESCE(SUM(64 + length(worker) + length(code) + length(message) + COALESCE(length(outcome), 0)), 0) FROM stile_job_rejections;
INSERT INTO stile_storage (kind, rows, bytes)
  SELECT 'events', COUNT(*), COALESCE(SUM(64 + 2 * length(stream) + 2 * length(type) + length(data) + COALESCE(length(command_id), 0)), 0) FROM stile_events;
INSERT INTO stile_storage (kind, rows, bytes)
  SELECT 'deliveries', COUNT(*), COALESCE(SUM(96 + length(handler) + length(claim_id) + length(worker) + COALESCE(length(error), 0)), 0) FROM stile_inbox;
INSERT INTO stile_storage (kind, rows, bytes)
  SELECT 'commands', COUNT(*), COALESCE(SUM(64 + 2 * length(id) + length(aggregate) + length(aggregate_id) + length(type) + length(digest) + length(job_ids) + length(source)), 0) FROM stile_commands;
INSERT INTO stile_storage (kind, rows, bytes)
  SELECT 'scheduled_commands', COUNT(*), COALESCE(SUM(64 + length(id) + length(command) + length(source) + COALESCE(length(error), 0)), 0) FROM stile_scheduled_commands;
INSERT INTO stile_storage (kind, rows, bytes)
  SELECT 'audit', COUNT(*), COALESCE(SUM(48 + length(role) + length(token_id) + length(route) + length(path)), 0) FROM stile_audit;

CREATE TRIGGER stile_storage_jobs_insert AFTER INSERT ON stile_jobs BEGIN
  UPDATE stile_storage SET rows = rows + 1, bytes = bytes + 160 + length(NEW.kind) + length(NEW.queue) + length(NEW.args) + length(NEW.tags)
    + COALESCE(length(NEW.output), 0) + COALESCE(length(NEW.last_error), 0) + COALESCE(length(NEW.unique_key), 0) WHERE kind = 'jobs';
END;
CREATE TRIGGER stile_storage_jobs_update AFTER UPDATE OF output, last_error, tags ON stile_jobs BEGIN
  UPDATE stile_storage SET bytes = bytes + length(NEW.tags) - length(OLD.tags)
    + COALESCE(length(NEW.output), 0) - COALESCE(length(OLD.output), 0)
    + COALESCE(length(NEW.last_error), 0) - COALESCE(length(OLD.last_error), 0) WHERE kind = 'jobs';
END;
CREATE TRIGGER stile_storage_jobs_delete AFTER DELETE ON stile_jobs BEGIN
  UPDATE stile_storage SET rows = rows - 1, bytes = bytes - (160 + length(OLD.kind) + length(OLD.queue) + length(OLD.args) + length(OLD.tags)
    + COALESCE(length(OLD.output), 0) + COALESCE(length(OLD.last_error), 0) + COALESCE(length(OLD.unique_key), 0)) WHERE kind = 'jobs';
END;

CREATE TRIGGER stile_storage_attempts_insert AFTER INSERT ON stile_job_attempts BEGIN
  UPDATE stile_storage SET rows = rows + 1, bytes = bytes + 72 + length(NEW.worker) + length(NEW.lease_token) + COALESCE(length(NEW.error), 0) WHERE kind = 'job_attempts';
END;
CREATE TRIGGER stile_storage_attempts_delete AFTER DELETE ON stile_job_attempts BEGIN
  UPDATE stile_storage SET rows = rows - 1, bytes = bytes - (72 + length(OLD.worker) + length(OLD.lease_token) + COALESCE(length(OLD.error), 0)) WHERE kind = 'job_attempts';
END;

CREATE TRIGGER stile_storage_refusals_insert AFTER INSERT ON stile_job_rejections BEGIN
  UPDATE stile_storage SET rows = rows + 1, bytes = bytes + 64 + length(NEW.worker) + length(NEW.code) + length(NEW.message) + COALESCE(length(NEW.outcome), 0) WHERE kind = 'job_refusals';
END;
CREATE TRIGGER stile_storage_refusals_delete AFTER DELETE ON stile_job_rejections BEGIN
  UPDATE stile_storage SET rows = rows - 1, bytes = bytes - (64 + length(OLD.worker) + length(OLD.code) + length(OLD.message) + COALESCE(length(OLD.outcome), 0)) WHERE kind = 'job_refusals';
END;

CREATE TRIGGER stile_storage_events_insert AFTER INSERT ON stile_events BEGIN
  UPDATE stile_storage SET rows = rows + 1, bytes = bytes + 64 + 2 * length(NEW.stream) + 2 * length(NEW.type) + length(NEW.data) + COALESCE(length(NEW.command_id), 0) WHERE kind = 'events';
END;
CREATE TRIGGER stile_storage_events_delete AFTER DELETE ON stile_events BEGIN
  UPDATE stile_storage SET rows = rows - 1, bytes = bytes - (64 + 2 * length(OLD.stream) + 2 * length(OLD.type) + length(OLD.data) + COALESCE(length(OLD.command_id), 0)) WHERE kind = 'events';
END;

CREATE TRIGGER stile_storage_inbox_insert AFTER INSERT ON stile_inbox BEGIN
  UPDATE stile_storage SET rows = rows + 1, bytes = bytes + 96 + length(NEW.handler) + length(NEW.claim_id) + length(NEW.worker) + COALESCE(length(NEW.error), 0) WHERE kind = 'deliveries';
END;
CREATE TRIGGER stile_storage_inbox_update AFTER UPDATE OF error, worker ON stile_inbox BEGIN
  UPDATE stile_storage SET bytes = bytes + length(NEW.worker) - length(OLD.worker)
    + COALESCE(length(NEW.error), 0) - COALESCE(length(OLD.error), 0) WHERE kind = 'deliveries';
END;
CREATE TRIGGER stile_storage_inbox_delete AFTER DELETE ON stile_inbox BEGIN
  UPDATE stile_storage SET rows = rows - 1, bytes = bytes - (96 + length(OLD.handler) + length(OLD.claim_id) + length(OLD.worker) + COALESCE(length(OLD.error), 0)) WHERE kind = 'deliveries';
END;

CREATE TRIGGER stile_storage_commands_insert AFTER INSERT ON stile_commands BEGIN
  UPDATE stile_storage SET rows = rows + 1, bytes = bytes + 64 + 2 * length(NEW.id) + length(NEW.aggregate) + length(NEW.aggregate_id) + length(NEW.type) + length(NEW.digest) + length(NEW.job_ids) + length(NEW.source) WHERE kind = 'commands';
END;
CREATE TRIGGER stile_storage_commands_delete AFTER DELETE ON stile_commands BEGIN
  UPDATE stile_storage SET rows = rows - 1, bytes = bytes - (64 + 2 * length(OLD.id) + length(OLD.aggregate) + length(OLD.aggregate_id) + length(OLD.type) + length(OLD.digest) + length(OLD.job_ids) + length(OLD.source)) WHERE kind = 'commands';
END;

CREATE TRIGGER stile_storage_scheduled_insert AFTER INSERT ON stile_scheduled_commands BEGIN
  UPDATE stile_storage SET rows = rows + 1, bytes = bytes + 64 + length(NEW.id) + length(NEW.command) + length(NEW.source) + COALESCE(length(NEW.error), 0) WHERE kind = 'scheduled_commands';
END;
CREATE TRIGGER stile_storage_scheduled_update AFTER UPDATE OF error ON stile_scheduled_commands BEGIN
  UPDATE stile_storage SET bytes = bytes + COALESCE(length(NEW.error), 0) - COALESCE(length(OLD.error), 0) WHERE kind = 'scheduled_commands';
END;
CREATE TRIGGER stile_storage_scheduled_delete AFTER DELETE ON stile_scheduled_commands BEGIN
  UPDATE stile_storage SET rows = rows - 1, bytes = bytes - (64 + length(OLD.id) + length(OLD.command) + length(OLD.source) + COALESCE(length(OLD.error), 0)) WHERE kind = 'scheduled_commands';
END;

CREATE TRIGGER stile_storage_audit_insert AFTER INSERT ON stile_audit BEGIN
  UPDATE stile_storage SET rows = rows + 1, bytes = bytes + 48 + length(NEW.role) + length(NEW.token_id) + length(NEW.route) + length(NEW.path) WHERE kind = 'audit';
END;
CREATE TRIGGER stile_storage_audit_delete AFTER DELETE ON stile_audit BEGIN
  UPDATE stile_storage SET rows = rows - 1, bytes = bytes - (48 + length(OLD.role) + length(OLD.token_id) + length(OLD.route) + length(OLD.path)) WHERE kind = 'audit';
END;
