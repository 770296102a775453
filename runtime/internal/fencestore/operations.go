package fencestore

import (
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
)

// Operation is a bulk operation as stored: an action on every job a filter
// finds, run in slices (see stile_operations, migrations 0021 and 0022);
// or a replay of Reaction's deliveries from FromSeq to UntilSeq, AfterID
// its position.
type Operation struct {
	ID                     int64
	Action, Filter, State  string
	AfterID                int64
	Matched, Done, Skipped int64
	LastSkip               string
	CreatedAt, DoneAt      int64
	Reaction               string
	FromSeq, UntilSeq      int64
	// UpdatedAt is when its last slice ran, or when it is due again (a
	// deferred one).
	UpdatedAt int64
}

// Operation states.
const (
	OperationRunning = "running"
	OperationDone    = "done"
)

const operationColumns = `id, action, filter, state, after_id, matched, done, skipped, coalesce(last_skip, ''), created_at, coalesce(done_at, 0),
	coalesce(reaction, ''), coalesce(from_seq, 0), coalesce(until_seq, 0), updated_at`

func scanOperation(r *do.Rows) Operation {
	return Operation{ID: r.Int(0), Action: r.Text(1), Filter: r.Text(2), State: r.Text(3), AfterID: r.Int(4),
		Matched: r.Int(5), Done: r.Int(6), Skipped: r.Int(7), LastSkip: r.Text(8), CreatedAt: r.Int(9), DoneAt: r.Int(10),
		Reaction: r.Text(11), FromSeq: r.Int(12), UntilSeq: r.Int(13), UpdatedAt: r.Int(14)}
}

// StartOperation records a running operation; the alarm is due at once to
// run its first slice.
func (s *Store) StartOperation(now int64, action, filter string) (Operation, error) {
	rows, err := s.db.Query(`INSERT INTO stile_operations (action, filter, state, created_at, updated_at)
		VALUES (?, ?, 'running', ?, ?) RETURNING `+operationColumns, action, filter, now, now)
	if err != nil {
		return Operation{}, printf.Errorf("start a %s operation: %w", action, err)
	}
	if !rows.Next() {
		return Operation{}, printf.Errorf("start a %s operation: %w", action, do.ErrGuard)
	}
	s.due.Added(now)
	return scanOperation(rows), rows.Err()
}

// StartReplay records a running replay of reaction's deliveries from
// fromSeq to untilSeq; the alarm is due at once to run its first slice.
func (s *Store) StartReplay(now int64, reaction string, fromSeq, untilSeq int64) (Operation, error) {
	rows, err := s.db.Query(`INSERT INTO stile_operations (action, filter, state, after_id, reaction, from_seq, until_seq, created_at, updated_at)
		VALUES ('replay', '', 'running', ?, ?, ?, ?, ?, ?) RETURNING `+operationColumns, fromSeq-1, reaction, fromSeq, untilSeq, now, now)
	if err != nil {
		return Operation{}, printf.Errorf("start a replay of %s: %w", reaction, err)
	}
	if !rows.Next() {
		return Operation{}, printf.Errorf("start a replay of %s: %w", reaction, do.ErrGuard)
	}
	s.due.Added(now)
	return scanOperation(rows), rows.Err()
}

// DeferOperation makes op due again at at, having done nothing (a replay
// waiting for a delivery in flight). Guarded like AdvanceOperation.
func (s *Store) DeferOperation(op Operation, at int64) error {
	rows, err := s.db.Query(`UPDATE stile_operations SET updated_at = ? WHERE id = ? AND after_id = ? AND state = 'running'
		RETURNING id`, at, op.ID, op.AfterID)
	if err != nil {
		return printf.Errorf("defer operation %d: %w", op.ID, err)
	}
	if !rows.Next() {
		return printf.Errorf("defer operation %d: %w", op.ID, do.ErrGuard)
	}
	s.due.Unknown()
	return rows.Err()
}

// Operations reads operations: one (id > 0; ok false if none), or the
// newest limit.
func (s *Store) Operations(id int64, limit int) ([]Operation, error) {
	sql, args := `SELECT `+operationColumns+` FROM stile_operations ORDER BY id DESC`+do.Limit(limit), []any(nil)
	if id > 0 {
		sql, args = `SELECT `+operationColumns+` FROM stile_operations WHERE id = ?`, []any{id}
	}
	rows, err := s.db.Query(sql, args...)
	if err != nil {
		return nil, printf.Errorf("read operations: %w", err)
	}
	var out []Operation
	for rows.Next() {
		out = append(out, scanOperation(rows))
	}
	return out, rows.Err()
}

// RunningOperations reads the running operations, oldest update first.
func (s *Store) RunningOperations(limit int) ([]Operation, error) {
	rows, err := s.db.Query(`SELECT ` + operationColumns + ` FROM stile_operations WHERE state = 'running'
		ORDER BY updated_at` + do.Limit(limit))
	if err != nil {
		return nil, printf.Errorf("read running operations: %w", err)
	}
	var out []Operation
	for rows.Next() {
		out = append(out, scanOperation(rows))
	}
	return out, rows.Err()
}

// AdvanceOperation records a slice of op: where the next reads from, what
// it counted, and whether the operation is done; a running one is due
// again at once. The write is guarded by the slice's start (after_id), so
// a slice applied twice records once.
func (s *Store) AdvanceOperation(now int64, op Operation, after, matched, done, skipped int64, lastSkip string, finished bool) error {
	state, doneAt := OperationRunning, any(nil)
	if finished {
		state, doneAt = OperationDone, now
	}
	rows, err := s.db.Query(`UPDATE stile_operations SET after_id = ?, matched = matched + ?, done = done + ?, skipped = skipped + ?,
		last_skip = coalesce(?, last_skip), state = ?, updated_at = ?, done_at = ? WHERE id = ? AND after_id = ? AND state = 'running'
		RETURNING id`, after, matched, done, skipped, nullIfEmpty(lastSkip), state, now, doneAt, op.ID, op.AfterID)
	if err != nil {
		return printf.Errorf("record a slice of operation %d: %w", op.ID, err)
	}
	if !rows.Next() {
		return printf.Errorf("record a slice of operation %d: %w", op.ID, do.ErrGuard)
	}
	s.due.Unknown()
	return rows.Err()
}
