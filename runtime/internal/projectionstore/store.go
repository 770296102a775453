package projectionstore

import (
	"strings"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/projection"
)

// Roles of a generation.
const (
	Live     = "live"     // serves reads
	Building = "building" // a rebuild catching up; replaces the live one at the head
)

// Generation is one generation of a projection's tables.
type Generation struct {
	Name        string
	Generation  int64
	Role        string
	Fingerprint string
	Checkpoint  int64 // the last event applied or passed over
	Failures    int64 // failed tries of the event it is stalled on
	RetryAt     int64 // stalled: when that event is tried again (0: not stalled)
	Error       string
	ErrorSeq    int64
	CreatedAt   int64
	UpdatedAt   int64
}

// Stalled reports whether g waits to retry an event that failed.
func (g Generation) Stalled() bool { return g.RetryAt != 0 }

// Advanced is g as Advance to checkpoint to leaves it.
func (g Generation) Advanced(now, to int64) Generation {
	g.Checkpoint, g.Failures, g.RetryAt, g.Error, g.ErrorSeq, g.UpdatedAt = to, 0, 0, "", 0, now
	return g
}

// Store reads and writes projection generations.
type Store struct{ db *do.DB }

// New returns a store over db.
func New(db *do.DB) *Store { return &Store{db: db} }

const columns = `name, generation, role, fingerprint, checkpoint, failures, COALESCE(retry_at, 0), COALESCE(error, ''),
	COALESCE(error_seq, 0), created_at, updated_at`

func scan(r *do.Rows) Generation {
	return Generation{Name: r.Text(0), Generation: r.Int(1), Role: r.Text(2), Fingerprint: r.Text(3), Checkpoint: r.Int(4),
		Failures: r.Int(5), RetryAt: r.Int(6), Error: r.Text(7), ErrorSeq: r.Int(8), CreatedAt: r.Int(9), UpdatedAt: r.Int(10)}
}

// All reads every generation, by name, live first.
func (s *Store) All() ([]Generation, error) {
	rows, err := s.db.Query(`SELECT ` + columns + ` FROM stile_projection_generations ORDER BY name, role DESC`)
	if err != nil {
		return nil, printf.Errorf("read projections: %w", err)
	}
	var out []Generation
	for rows.Next() {
		out = append(out, scan(rows))
	}
	return out, rows.Err()
}

// Get reads one generation; ok is false if it does not exist.
func (s *Store) Get(name string, gen int64) (Generation, bool, error) {
	rows, err := s.db.Query(`SELECT `+columns+` FROM stile_projection_generations WHERE name = ? AND generation = ?`, name, gen)
	if err != nil {
		return Generation{}, false, printf.Errorf("read projection %s generation %d: %w", name, gen, err)
	}
	if !rows.Next() {
		return Generation{}, false, rows.Err()
	}
	return scan(rows), true, rows.Err()
}

// Next is the number of a new generation of name.
func (s *Store) Next(name string) (int64, error) {
	rows, err := s.db.Query(`SELECT COALESCE(MAX(generation), 0) + 1 FROM stile_projection_generations WHERE name = ?`, name)
	if err != nil {
		return 0, printf.Errorf("number a generation of %s: %w", name, err)
	}
	rows.Next()
	return rows.Int(0), rows.Err()
}

// Create records a new generation at checkpoint 0.
func (s *Store) Create(now int64, name string, gen int64, role, fingerprint string, tables []string) error {
	if err := s.db.Exec(`INSERT INTO stile_projection_generations (name, generation, role, fingerprint, tables, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, name, gen, role, fingerprint, strings.Join(tables, ","), now, now); err != nil {
		return printf.Errorf("create generation %d of %s: %w", gen, name, err)
	}
	return nil
}

// Tables are the logical names of the tables generation gen of name was
// created with; known is false for a generation created before they were
// recorded.
func (s *Store) Tables(name string, gen int64) (tables []string, known bool, err error) {
	rows, err := s.db.Query(`SELECT tables FROM stile_projection_generations WHERE name = ? AND generation = ?`, name, gen)
	if err != nil {
		return nil, false, printf.Errorf("read the tables of projection %s generation %d: %w", name, gen, err)
	}
	if !rows.Next() || rows.Null(0) {
		return nil, false, rows.Err()
	}
	if t := rows.Text(0); t != "" {
		tables = strings.Split(t, ",")
	}
	return tables, true, rows.Err()
}

// Delete removes a generation's row (its tables are the caller's to drop).
func (s *Store) Delete(name string, gen int64) error {
	if err := s.db.Exec(`DELETE FROM stile_projection_generations WHERE name = ? AND generation = ?`, name, gen); err != nil {
		return printf.Errorf("delete generation %d of %s: %w", gen, name, err)
	}
	return nil
}

// Promote makes a building generation live, if it is still building at
// checkpoint cp. The caller deleted the live one first.
func (s *Store) Promote(now int64, name string, gen, cp int64) error {
	return s.guarded(`UPDATE stile_projection_generations SET role = 'live', updated_at = ?
		WHERE name = ? AND generation = ? AND role = 'building' AND checkpoint = ? RETURNING 1`, now, name, gen, cp)
}

// Advance moves a generation's checkpoint from from to to and clears any
// stall: the batch up to to committed.
func (s *Store) Advance(now int64, name string, gen, from, to int64) error {
	return s.guarded(`UPDATE stile_projection_generations SET checkpoint = ?, failures = 0, retry_at = NULL, error = NULL,
		error_seq = NULL, updated_at = ? WHERE name = ? AND generation = ? AND checkpoint = ? RETURNING 1`, to, now, name, gen, from)
}

// Stall records that event seq failed (the failures-th time) at
// checkpoint cp, to be tried again at retryAt.
func (s *Store) Stall(now int64, name string, gen, cp, seq, failures, retryAt int64, msg string) error {
	return s.guarded(`UPDATE stile_projection_generations SET failures = ?, retry_at = ?, error = ?, error_seq = ?, updated_at = ?
		WHERE name = ? AND generation = ? AND checkpoint = ? RETURNING 1`, failures, retryAt, msg, seq, now, name, gen, cp)
}

func (s *Store) guarded(sql string, args ...any) error {
	rows, err := s.db.Query(sql, args...)
	if err != nil {
		return printf.Errorf("update a projection generation: %w", err)
	}
	if rows.Len() != 1 {
		return do.ErrGuard
	}
	return nil
}

// Progress is how far g has applied the log, as package projection
// decides from it.
func (g Generation) Progress() projection.Checkpoint {
	return projection.Checkpoint{Seq: g.Checkpoint, Failures: g.Failures, RetryAt: g.RetryAt, ErrorSeq: g.ErrorSeq, Error: g.Error}
}

// After is g as Record of n at now leaves it.
func (g Generation) After(now int64, n projection.Next) Generation {
	if !n.Advanced && !n.Failed {
		return g
	}
	g.Checkpoint, g.Failures, g.RetryAt, g.ErrorSeq, g.Error, g.UpdatedAt = n.Seq, n.Failures, n.RetryAt, n.ErrorSeq, n.Error, now
	return g
}

// Record writes where a batch read after checkpoint from left generation
// gen of name, as projection.AfterBatch decided: the checkpoint advanced
// past the events that committed, then the stall on the event that failed.
// Each write is guarded by the checkpoint it moves from.
func (s *Store) Record(now int64, name string, gen, from int64, n projection.Next) error {
	if n.Advanced {
		if err := s.Advance(now, name, gen, from, n.Seq); err != nil {
			return err
		}
	}
	if n.Failed {
		return s.Stall(now, name, gen, n.Seq, n.ErrorSeq, n.Failures, n.RetryAt, n.Error)
	}
	return nil
}
