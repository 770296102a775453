package eventstore

import "github.com/stile-run/stile/internal/printf"

// Snapshot is an aggregate's folded state as stored: the fold of its
// stream's events 1..Version by the Evolve Fingerprint names, as JSON.
type Snapshot struct {
	Version     int64
	Fingerprint string
	State       []byte
}

// Snapshot reads the snapshot of stream, if one is kept.
func (s *Store) Snapshot(stream string) (Snapshot, bool, error) {
	rows, err := s.db.Query(`SELECT version, fingerprint, state FROM stile_snapshots WHERE stream = ?`, stream)
	if err != nil {
		return Snapshot{}, false, printf.Errorf("read the snapshot of %s: %w", stream, err)
	}
	if !rows.Next() {
		return Snapshot{}, false, rows.Err()
	}
	return Snapshot{Version: rows.Int(0), Fingerprint: rows.Text(1), State: []byte(rows.Text(2))}, true, rows.Err()
}

// SaveSnapshot keeps snap as stream's snapshot, in place of the one kept.
func (s *Store) SaveSnapshot(now int64, stream string, snap Snapshot) error {
	if err := s.db.Exec(`INSERT INTO stile_snapshots (stream, version, fingerprint, state, at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (stream) DO UPDATE SET version = excluded.version, fingerprint = excluded.fingerprint,
		state = excluded.state, at = excluded.at`, stream, snap.Version, snap.Fingerprint, string(snap.State), now); err != nil {
		return printf.Errorf("keep the snapshot of %s at version %d: %w", stream, snap.Version, err)
	}
	return nil
}
