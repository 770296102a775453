package fencestore

import (
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/internal/printf"
)

// Due work is what time alone makes happen: leases that lapsed and jobs
// whose run_at arrived. Every request applies it lazily before doing its
// own work, and the tenant's alarm applies it when nobody calls; either
// way it happens in the storage transaction, never in a timer of the guest.

// Batch sizes of due work per request, so one request never runs long; the
// alarm is then due at once and continues.
const (
	expireBatch  = 256
	promoteBatch = 1000
)

// DueResult says what ApplyDue did.
type DueResult struct {
	Expired  int // running attempts whose lease lapsed
	Promoted int // scheduled or retryable jobs made available
}

// ApplyDue expires lapsed leases (each a failed attempt: retried after its
// backoff, or dead when the budget is spent) and makes due jobs available.
// noticedBy is "alarm" or "request"; jitter yields values in [0, 1).
func (s *Store) ApplyDue(now int64, noticedBy string, jitter func() float64) (DueResult, error) {
	var res DueResult
	rows, err := s.db.Query(`SELECT `+fenceColumns+` FROM stile_jobs
		WHERE state = 'running' AND lease_until <= ? ORDER BY lease_until`+do.Limit(expireBatch), now)
	if err != nil {
		return res, printf.Errorf("find lapsed leases: %w", err)
	}
	var lapsed []Job
	for rows.Next() {
		var j Job
		s.scanFence(rows, &j)
		lapsed = append(lapsed, j)
	}
	if err := rows.Err(); err != nil {
		return res, printf.Errorf("find lapsed leases: %w", err)
	}
	for _, j := range lapsed {
		next := fence.AfterExpiry(j.Job, j.Backoff(), now, jitter())
		var msg string
		switch {
		case j.CancelRequested:
			msg = printf.Sprintf("cancelled: the lease of attempt %d ran out after the cancel was requested", j.Attempt)
		case fence.TimedOut(j.Job):
			msg = printf.Sprintf("timed out: attempt %d reached its time limit of %d ms", j.Attempt, j.TimeoutMs)
		default:
			msg = printf.Sprintf("lease of attempt %d expired (worker %s held it until %d)", j.Attempt, j.Worker, j.LeaseUntil)
		}
		if _, err := s.finish(now, j, next, ending{outcome: fence.OutcomeLeaseExpired, err: msg, noticedBy: noticedBy}); err != nil {
			return res, err
		}
		res.Expired++
	}
	rows, err = s.db.Query(`UPDATE stile_jobs SET state = 'available'
		WHERE id IN (SELECT id FROM stile_jobs WHERE state IN ('scheduled', 'retryable') AND run_at <= ?
		             ORDER BY run_at`+do.Limit(promoteBatch)+`)
		RETURNING queue, kind, id, attempt, failures`, now)
	if err != nil {
		return res, printf.Errorf("make due jobs available: %w", err)
	}
	res.Promoted = rows.Len()
	for rows.Next() {
		s.wake(s.intern(rows.TextBytes(0)), s.intern(rows.TextBytes(1)))
		s.changed(rows.Int(2), s.intern(rows.TextBytes(1)), fence.StateAvailable, rows.Int(3), nil)
		s.failing = s.failing || rows.Int(4) > 0 // a retryable job that is due leaves the failing view
	}
	if err := rows.Err(); err != nil {
		return res, printf.Errorf("make due jobs available: %w", err)
	}
	if err := s.wakeRates(now); err != nil {
		return res, err
	}
	if res.Expired > 0 || res.Promoted > 0 {
		s.due.Unknown()
	}
	return res, nil
}

// noAlarm is the sentinel of NextDue's query for "nothing is due ever".
const noAlarm = 1<<53 - 1

// NextDue is the earliest time due work exists (a lease to expire, a job to
// make available, a schedule's period, a rate key that opens, a bulk
// operation's next slice), or 0 if none, and how many of the
// store's items are due at exactly that time (so a tracker can let all but
// the last of them go without reading again: jobs claimed together share
// their lease's end). The tenant's alarm is set to it after every request,
// from committed state. Each count is a range of a partial index.
func (s *Store) NextDue() (at, n int64, err error) {
	rows, err := s.db.Query(`WITH m(t) AS (SELECT MIN(
		COALESCE((SELECT MIN(run_at) FROM stile_jobs WHERE state IN ('scheduled', 'retryable')), ?1),
		COALESCE((SELECT MIN(lease_until) FROM stile_jobs WHERE state = 'running'), ?1),
		COALESCE((SELECT MIN(next_at) FROM stile_schedules WHERE paused = 0), ?1),
		COALESCE((SELECT MIN(wake_at) FROM stile_rates WHERE wake_at IS NOT NULL), ?1),
		COALESCE((SELECT MIN(updated_at) FROM stile_operations WHERE state = 'running'), ?1)))
		SELECT t,
			(SELECT count(*) FROM stile_jobs WHERE state IN ('scheduled', 'retryable') AND run_at = t) +
			(SELECT count(*) FROM stile_jobs WHERE state = 'running' AND lease_until = t) +
			(SELECT count(*) FROM stile_schedules WHERE paused = 0 AND next_at = t) +
			(SELECT count(*) FROM stile_rates WHERE wake_at IS NOT NULL AND wake_at = t) +
			(SELECT count(*) FROM stile_operations WHERE state = 'running' AND updated_at = t)
		FROM m`, noAlarm)
	if err != nil {
		return 0, 0, printf.Errorf("compute next due time: %w", err)
	}
	if !rows.Next() {
		return 0, 0, printf.Errorf("compute next due time: %w", do.ErrNoRow)
	}
	at, n = rows.Int(0), rows.Int(1)
	if at >= noAlarm {
		return 0, 0, rows.Err()
	}
	return at, n, rows.Err()
}
