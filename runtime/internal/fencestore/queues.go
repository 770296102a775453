package fencestore

import (
	"github.com/stile-run/stile/internal/printf"
)

// PausedQueues are the queues claims take nothing from, read once per
// instance and again after a pause or resume (the instance is the only
// writer).
func (s *Store) PausedQueues() (map[string]bool, error) {
	if s.paused != nil {
		return s.paused, nil
	}
	rows, err := s.db.Query(`SELECT name FROM stile_queues WHERE paused = 1`)
	if err != nil {
		return nil, printf.Errorf("read paused queues: %w", err)
	}
	paused := map[string]bool{}
	for rows.Next() {
		paused[rows.Text(0)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s.paused = paused
	return paused, nil
}

// SetPaused pauses or resumes a queue. Resuming wakes held claims.
func (s *Store) SetPaused(now int64, queue string, paused bool) error {
	s.paused = nil // read again from what commits
	p := 0
	if paused {
		p = 1
	}
	if err := s.db.Exec(`INSERT INTO stile_queues (name, paused, updated_at) VALUES (?1, ?2, ?3)
		ON CONFLICT (name) DO UPDATE SET paused = ?2, updated_at = ?3`, queue, p, now); err != nil {
		return printf.Errorf("pause queue %q: %w", queue, err)
	}
	if !paused {
		s.wake(queue, "")
	}
	return nil
}
