package fencestore

import (
	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/internal/printf"
)

// PausedQueues are the queues claims take nothing from, read once per
// instance and again after a pause or resume (the instance is the only
// writer).
func (s *Store) PausedQueues() (map[string]bool, error) {
	if s.paused != nil {
		return s.paused, nil
	}
	paused, err := s.db.TextSet(`SELECT name FROM stile_queues WHERE paused = 1`)
	if err != nil {
		return nil, printf.Errorf("read paused queues: %w", err)
	}
	s.paused = paused
	return paused, nil
}

// SetPaused pauses or resumes a queue. Resuming wakes held claims.
func (s *Store) SetPaused(now int64, queue string, paused bool) error {
	if err := s.AdmitQueue(queue); err != nil {
		return err
	}
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

// AdmitQueue refuses a queue name that would be one too many: the
// tenant's distinct queues (those of its unfinished jobs and of its
// paused or resumed queues, what GET …/queues lists and the metrics
// count) are bounded (MaxQueues). A known name costs nothing; a new one
// under the bound costs nothing but the first read of the names.
func (s *Store) AdmitQueue(queue string) error {
	limit := s.MaxQueues
	if limit <= 0 {
		limit = api.MaxQueues
	}
	if s.queues == nil {
		if err := s.readQueues(); err != nil {
			return err
		}
	}
	if _, ok := s.queues[queue]; ok {
		return nil
	}
	if len(s.queues) >= limit {
		// What is known may be stale: count again before refusing.
		if err := s.readQueues(); err != nil {
			return err
		}
		if _, ok := s.queues[queue]; !ok && len(s.queues) >= limit {
			return api.Refuse(api.CodeTooManyQueues, "queue %q would be queue %d of this tenant, over the limit of %d: use one of its queues (GET /v1/t/{tenant}/queues lists them)", queue, len(s.queues)+1, limit)
		}
	}
	s.queues[queue] = struct{}{}
	return nil
}

// readQueues reads the names AdmitQueue counts, from the indexes of the
// unfinished jobs' states (in two compound statements: Cloudflare allows
// five terms to one).
func (s *Store) readQueues() error {
	rows, err := s.db.Query(`SELECT queue FROM ` + readyAll + `
		UNION SELECT queue FROM stile_jobs WHERE state = 'running'
		UNION SELECT queue FROM stile_jobs WHERE ` + listed + ` AND state IN ('pending', 'scheduled', 'retryable')
		UNION SELECT name FROM stile_queues`)
	if err != nil {
		return printf.Errorf("read queue names: %w", err)
	}
	qs := map[string]struct{}{}
	for rows.Next() {
		qs[rows.Text(0)] = struct{}{}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.queues = qs
	return nil
}
