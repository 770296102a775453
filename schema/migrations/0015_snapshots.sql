-- An aggregate's folded state, kept so a command reads it and the events
-- after it instead of its whole stream. It is derived data: the fold of
-- the stream's events 1..version by the Evolve that fingerprint names (the
-- aggregate's SnapshotVersion, or the module's build), stored as JSON. A
-- snapshot of another fingerprint is ignored and replaced; it is never
-- exported.
CREATE TABLE stile_snapshots (
stream TEXT PRIMARY KEY,
version INTEGER NOT NULL CHECK (version >= 1),
fingerprint TEXT NOT NULL,
state TEXT NOT NULL,
at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
INSERT INTO stile_storage (kind, rows, bytes) VALUES ('snapshots', 0, 0);
CREATE TRIGGER stile_storage_snapshots_insert AFTER INSERT ON stile_snapshots BEGIN
UPDATE stile_storage SET rows = rows + 1, bytes = bytes + 32 + length(NEW.stream) + length(NEW.fingerprint) + length(NEW.state) WHERE kind = 'snapshots';
END;
CREATE TRIGGER stile_storage_snapshots_update AFTER UPDATE ON stile_snapshots BEGIN
UPDATE stile_storage SET bytes = bytes + length(NEW.fingerprint) + length(NEW.state) - length(OLD.fingerprint) - length(OLD.state) WHERE kind = 'snapshots';
END;
CREATE TRIGGER stile_storage_snapshots_delete AFTER DELETE ON stile_snapshots BEGIN
UPDATE stile_storage SET rows = rows - 1, bytes = bytes - (32 + length(OLD.stream) + length(OLD.fingerprint) + length(OLD.state)) WHERE kind = 'snapshots';
END;
