package fencestore

import (
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
)

// Schedule is a stored schedule.
type Schedule struct {
	Name      string
	Cron      string
	Job       []byte // the enqueue request, JSON
	Paused    bool
	NextAt    int64
	LastAt    int64
	LastJob   int64
	LastError string
	CreatedAt int64
	UpdatedAt int64
	// Owner is OwnerTenant or OwnerModule.
	Owner string
}

// Owners of a schedule.
const (
	OwnerTenant = "tenant" // PUT /schedules/{name}
	OwnerModule = "module" // declared by the tenant module
)

const scheduleColumns = `name, cron, job, paused, next_at, last_at, last_job, last_error, created_at, updated_at, owner`

func scanSchedule(r interface {
	Text(int) string
	Bytes(int) []byte
	Int(int) int64
}) Schedule {
	return Schedule{Name: r.Text(0), Cron: r.Text(1), Job: r.Bytes(2), Paused: r.Int(3) == 1, NextAt: r.Int(4),
		LastAt: r.Int(5), LastJob: r.Int(6), LastError: r.Text(7), CreatedAt: r.Int(8), UpdatedAt: r.Int(9), Owner: r.Text(10)}
}

// PutSchedule creates or replaces a schedule; its first period is
// sc.NextAt. Replacing one keeps its history of the last period.
func (s *Store) PutSchedule(now int64, sc Schedule) (Schedule, error) {
	old, found, err := s.GetSchedule(sc.Name)
	if err != nil {
		return sc, err
	}
	if sc.Owner == "" {
		sc.Owner = OwnerTenant
	}
	rows, err := s.db.Query(`INSERT INTO stile_schedules (name, cron, job, paused, next_at, created_at, updated_at, owner)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)
		ON CONFLICT (name) DO UPDATE SET cron = ?2, job = ?3, paused = ?4, next_at = ?5, updated_at = ?6, owner = ?7
		RETURNING `+scheduleColumns, sc.Name, sc.Cron, string(sc.Job), sc.Paused, sc.NextAt, now, sc.Owner)
	if err != nil {
		return sc, printf.Errorf("put schedule %q: %w", sc.Name, err)
	}
	if !rows.Next() {
		return sc, printf.Errorf("put schedule %q: %w", sc.Name, do.ErrGuard)
	}
	stored := scanSchedule(rows)
	if found && !old.Paused {
		s.due.Removed(old.NextAt)
	}
	if !stored.Paused {
		s.due.Added(stored.NextAt)
	}
	return stored, nil
}

// GetSchedule reads a schedule.
func (s *Store) GetSchedule(name string) (Schedule, bool, error) {
	rows, err := s.db.Query(`SELECT `+scheduleColumns+` FROM stile_schedules WHERE name = ?`, name)
	if err != nil {
		return Schedule{}, false, printf.Errorf("read schedule %q: %w", name, err)
	}
	if !rows.Next() {
		return Schedule{}, false, rows.Err()
	}
	return scanSchedule(rows), true, rows.Err()
}

// ListSchedules reads every schedule, by name.
func (s *Store) ListSchedules() ([]Schedule, error) {
	rows, err := s.db.Query(`SELECT ` + scheduleColumns + ` FROM stile_schedules ORDER BY name`)
	if err != nil {
		return nil, printf.Errorf("read schedules: %w", err)
	}
	var out []Schedule
	for rows.Next() {
		out = append(out, scanSchedule(rows))
	}
	return out, rows.Err()
}

// DeleteSchedule removes a schedule; the jobs it enqueued stay.
func (s *Store) DeleteSchedule(name string) (bool, error) {
	sc, found, err := s.GetSchedule(name)
	if err != nil || !found {
		return false, err
	}
	if err := s.db.Exec(`DELETE FROM stile_schedules WHERE name = ?`, name); err != nil {
		return false, printf.Errorf("delete schedule %q: %w", name, err)
	}
	if !sc.Paused {
		s.due.Removed(sc.NextAt)
	}
	return true, nil
}

// DueSchedules reads up to limit schedules whose next period has come.
func (s *Store) DueSchedules(now int64, limit int) ([]Schedule, error) {
	rows, err := s.db.Query(`SELECT `+scheduleColumns+` FROM stile_schedules
		WHERE paused = 0 AND next_at <= ? ORDER BY next_at`+do.Limit(limit), now)
	if err != nil {
		return nil, printf.Errorf("read due schedules: %w", err)
	}
	var out []Schedule
	for rows.Next() {
		out = append(out, scanSchedule(rows))
	}
	return out, rows.Err()
}

// AdvanceSchedule records that the period at `period` was handled (a job,
// or why not) and moves the schedule to next, guarded on the period it
// read: a period is handled once, however often the alarm fires.
func (s *Store) AdvanceSchedule(now int64, name string, period, next, job int64, lastErr string) error {
	var jobID, errText any
	if job != 0 {
		jobID = job
	}
	if lastErr != "" {
		errText = lastErr
	}
	rows, err := s.db.Query(`UPDATE stile_schedules SET next_at = ?, last_at = ?, last_job = coalesce(?, last_job),
		last_error = ?, updated_at = ? WHERE name = ? AND next_at = ? AND paused = 0 RETURNING name`,
		next, period, jobID, errText, now, name, period)
	if err != nil {
		return printf.Errorf("advance schedule %q: %w", name, err)
	}
	if !rows.Next() {
		return printf.Errorf("advance schedule %q: %w", name, do.ErrGuard)
	}
	s.due.Removed(period)
	s.due.Added(next)
	return nil
}
