package inboxstore

import (
	"errors"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
)

// ProcessState reads a process's state for a correlation id (nil: none).
func (s *Store) ProcessState(process, correlation string) ([]byte, error) {
	rows, err := s.db.Query(`SELECT state FROM stile_process_state WHERE process = ? AND correlation = ?`, process, correlation)
	if err != nil {
		return nil, printf.Errorf("read the state of process %s/%s: %w", process, correlation, err)
	}
	if !rows.Next() {
		return nil, rows.Err()
	}
	return rows.Bytes(0), rows.Err()
}

// SetProcessState stores a process's state for a correlation id.
func (s *Store) SetProcessState(now int64, process, correlation string, state []byte) error {
	if err := s.db.Exec(`INSERT INTO stile_process_state (process, correlation, state, updated_at) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (process, correlation) DO UPDATE SET state = ?3, updated_at = ?4`, process, correlation, string(state), now); err != nil {
		return printf.Errorf("store the state of process %s/%s: %w", process, correlation, err)
	}
	return nil
}

// EndProcess deletes a process instance's state and its deadlines.
func (s *Store) EndProcess(process, correlation string) error {
	if err := s.db.Exec(`DELETE FROM stile_process_state WHERE process = ? AND correlation = ?`, process, correlation); err != nil {
		return printf.Errorf("end process %s/%s: %w", process, correlation, err)
	}
	if err := s.db.Exec(`DELETE FROM stile_deadlines WHERE process = ? AND correlation = ?`, process, correlation); err != nil {
		return printf.Errorf("end process %s/%s: %w", process, correlation, err)
	}
	s.due.Unknown()
	return nil
}

// SetDeadline sets (or moves) a process instance's named deadline.
func (s *Store) SetDeadline(process, correlation, name string, at int64) error {
	if err := s.db.Exec(`INSERT INTO stile_deadlines (process, correlation, name, at) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (process, correlation, name) DO UPDATE SET at = ?4`, process, correlation, name, at); err != nil {
		return printf.Errorf("set deadline %s of process %s/%s: %w", name, process, correlation, err)
	}
	s.due.Unknown() // a moved deadline may have been the earliest
	return nil
}

// CancelDeadline removes a deadline; one that is not set is no error.
func (s *Store) CancelDeadline(process, correlation, name string) error {
	if err := s.db.Exec(`DELETE FROM stile_deadlines WHERE process = ? AND correlation = ? AND name = ?`,
		process, correlation, name); err != nil {
		return printf.Errorf("cancel deadline %s of process %s/%s: %w", name, process, correlation, err)
	}
	s.due.Unknown()
	return nil
}

// DueDeadline is a deadline whose time came.
type DueDeadline struct {
	Process, Correlation, Name string
	At                         int64
}

// TakeDueDeadlines removes and returns up to limit deadlines due by now,
// earliest first: the caller appends their events in the same
// transaction, so each fires once.
func (s *Store) TakeDueDeadlines(now int64, limit int) ([]DueDeadline, error) {
	rows, err := s.db.Query(`DELETE FROM stile_deadlines WHERE (process, correlation, name) IN (
		SELECT process, correlation, name FROM stile_deadlines WHERE at <= ? ORDER BY at`+do.Limit(limit)+`)
		RETURNING process, correlation, name, at`, now)
	if err != nil {
		return nil, printf.Errorf("take due deadlines: %w", err)
	}
	var out []DueDeadline
	for rows.Next() {
		out = append(out, DueDeadline{Process: rows.Text(0), Correlation: rows.Text(1), Name: rows.Text(2), At: rows.Int(3)})
	}
	if len(out) > 0 {
		s.due.Unknown()
	}
	return out, rows.Err()
}

// ErrScheduledIDReused refuses a command scheduled under an id that was
// scheduled before with a different command.
var ErrScheduledIDReused = errors.New("scheduled command id reused")

// Schedule stores a command to apply at at. The same command scheduled
// again under its id is left as it was (a settlement repeated stores it
// once); another command under that id is ErrScheduledIDReused.
func (s *Store) Schedule(now int64, id string, at int64, command []byte, source string) error {
	rows, err := s.db.Query(`INSERT INTO stile_scheduled_commands (id, at, command, source, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING RETURNING 1`, id, at, string(command), source, now)
	if err != nil {
		return printf.Errorf("schedule command %s: %w", id, err)
	}
	if rows.Len() == 1 { // only a stored command is due
		s.due.Added(at)
		return nil
	}
	rows, err = s.db.Query(`SELECT 1 FROM stile_scheduled_commands WHERE id = ? AND command = ?`, id, string(command))
	if err != nil {
		return printf.Errorf("schedule command %s: %w", id, err)
	}
	if rows.Len() == 0 {
		return printf.Errorf("schedule command %s: %w", id, ErrScheduledIDReused)
	}
	return nil
}

// ScheduledCommand is a command whose time came.
type ScheduledCommand struct {
	ID      string
	At      int64
	Command []byte
	Source  string
}

// DueCommands reads up to limit scheduled commands due by now.
func (s *Store) DueCommands(now int64, limit int) ([]ScheduledCommand, error) {
	rows, err := s.db.Query(`SELECT id, at, command, source FROM stile_scheduled_commands
		WHERE state = 'scheduled' AND at <= ? ORDER BY at`+do.Limit(limit), now)
	if err != nil {
		return nil, printf.Errorf("read due commands: %w", err)
	}
	var out []ScheduledCommand
	for rows.Next() {
		out = append(out, ScheduledCommand{ID: rows.Text(0), At: rows.Int(1), Command: rows.Bytes(2), Source: rows.Text(3)})
	}
	return out, rows.Err()
}

// FinishScheduled records a due command applied (msg "") or rejected.
func (s *Store) FinishScheduled(now int64, id string, msg string) error {
	state, m := "applied", any(nil)
	if msg != "" {
		state, m = "rejected", msg
	}
	rows, err := s.db.Query(`UPDATE stile_scheduled_commands SET state = ?, error = ?, done_at = ?
		WHERE id = ? AND state = 'scheduled' RETURNING at`, state, m, now, id)
	if err != nil {
		return printf.Errorf("finish scheduled command %s: %w", id, err)
	}
	if !rows.Next() {
		return printf.Errorf("finish scheduled command %s: %w", id, do.ErrGuard)
	}
	s.due.Removed(rows.Int(0))
	return rows.Err()
}
