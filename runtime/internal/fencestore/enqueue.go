package fencestore

import (
	"errors"
	"strconv"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/flow"
	"github.com/stile-run/stile/internal/printf"
)

// NewJob is a validated job to insert.
type NewJob struct {
	Kind         string
	Queue        string
	Priority     int
	Args         []byte // JSON
	RunAt        int64  // Unix ms; <= now runs at once
	MaxAttempts  int64
	LeaseMs      int64
	TimeoutMs    int64
	BackoffMs    int64
	BackoffMaxMs int64
	Tags         []byte // a JSON array of strings

	// UniqueKey, if set, returns the live job with this key (or one created
	// within UniqueWindowMs, whatever its state) instead of a new one.
	UniqueKey      string
	UniqueWindowMs int64

	// ConcurrencyKey names the limit the job counts against.
	ConcurrencyKey string
	// RateKey names the rate limit the job's starts count against.
	RateKey string

	// Debounce, if set, collapses the enqueue into the job collecting its
	// key, if one is (see flow.Debounce); else the job is the one that
	// collects, ready at the end of its window.
	Debounce *flow.Debounce
	// ThrottleKey, if set, answers the enqueue with the key's job created
	// within ThrottleWindowMs, if there is one.
	ThrottleKey      string
	ThrottleWindowMs int64

	// Parents the job waits for, and whether it runs even when one of them
	// ends dead or cancelled.
	Parents       []Parent
	RunRegardless bool
}

// Parent names a job to wait for: an existing job, or (Batch >= 0) an
// earlier job of the same enqueue.
type Parent struct {
	ID    int64
	Batch int
}

// Enqueued is a job as enqueued; Existing when a unique key returned an
// earlier job instead of a new one.
type Enqueued struct {
	Job
	Existing bool
}

// Enqueue inserts jobs at now, in order. A job waiting for unfinished
// parents is pending; one whose parent already ended dead or cancelled is
// cancelled at once (unless RunRegardless); otherwise it is available, or
// scheduled when RunAt is later than now.
func (s *Store) Enqueue(now int64, jobs []NewJob) ([]Enqueued, error) {
	out := make([]Enqueued, 0, len(jobs))
	for i, n := range jobs {
		e, err := s.enqueue(now, n, out)
		var refused *api.Error
		switch {
		case len(jobs) > 1 && errors.As(err, &refused):
			return nil, refused.At(printf.Sprintf("jobs[%d]", i))
		case err != nil:
			return nil, printf.Errorf("jobs[%d]: %w", i, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func (s *Store) enqueue(now int64, n NewJob, batch []Enqueued) (Enqueued, error) {
	if err := s.AdmitQueue(n.Queue); err != nil {
		return Enqueued{}, err
	}
	if n.UniqueKey != "" {
		if j, ok, err := s.findUnique(now, n.UniqueKey, n.UniqueWindowMs); err != nil || ok {
			return Enqueued{Job: j, Existing: ok}, err
		}
	}
	if n.ThrottleKey != "" {
		if j, ok, err := s.findThrottled(now, n.Kind, n.ThrottleKey, n.ThrottleWindowMs); err != nil || ok {
			return Enqueued{Job: j, Existing: ok}, err
		}
	}
	var debounceUntil int64
	if d := n.Debounce; d != nil {
		if j, ok, err := s.collapse(now, n); err != nil || ok {
			return Enqueued{Job: j, Existing: ok}, err
		}
		n.RunAt, debounceUntil = d.Open(now)
	}
	if n.ConcurrencyKey != "" {
		if err := s.ensureLimit(now, n.ConcurrencyKey); err != nil {
			return Enqueued{}, err
		}
	}
	open := true // the job's rate key, if any, has room now
	if n.RateKey != "" {
		var err error
		if open, err = s.ensureRate(now, n.RateKey); err != nil {
			return Enqueued{}, err
		}
	}
	type edge struct {
		parent   int64
		resolved string // "", completed or failed
	}
	var edges []edge
	pending, cancelled := int64(0), ""
	seen := map[int64]bool{}
	for _, p := range n.Parents {
		id := p.ID
		if p.Batch >= 0 {
			if p.Batch >= len(batch) {
				return Enqueued{}, api.Refuse(api.CodeInvalidRequest, "depends_on #%d: a job may depend only on jobs before it in the batch", p.Batch)
			}
			id = batch[p.Batch].ID
		}
		if seen[id] {
			// Named twice (by id and by "#n", or an earlier job of the
			// batch that a unique key or a debounce answered with this
			// one): one dependency.
			continue
		}
		seen[id] = true
		parent, err := s.getFence(id)
		if err != nil {
			if isNotFound(err) {
				return Enqueued{}, api.Refuse(api.CodeInvalidRequest, "depends_on: job %d does not exist", id)
			}
			return Enqueued{}, err
		}
		switch {
		case parent.State == fence.StateCompleted:
			edges = append(edges, edge{id, "completed"})
		case parent.State.Terminal():
			edges = append(edges, edge{id, "failed"})
			if !n.RunRegardless && cancelled == "" {
				cancelled = printf.Sprintf("parent job %d ended %s", id, string(parent.State))
			}
		default:
			edges = append(edges, edge{id, ""})
			pending++
		}
	}
	state := fence.StateAvailable
	var finished, lastErr any
	switch {
	case cancelled != "":
		state, finished, lastErr = fence.StateCancelled, now, cancelled
	case pending > 0:
		state = fence.StatePending
	case n.RunAt > now:
		state = fence.StateScheduled
	}
	unique, key, rate := nullIfEmpty(n.UniqueKey), nullIfEmpty(n.ConcurrencyKey), nullIfEmpty(n.RateKey)
	var debounceKey, keep, allArgs any
	collapsed := int64(0)
	if d := n.Debounce; d != nil {
		debounceKey, keep, collapsed = d.Key, d.Keep, 1
		if d.Keep == flow.KeepAll {
			allArgs = "[" + string(n.Args) + "]"
		}
	}
	tags := n.Tags
	if len(tags) == 0 {
		tags = []byte("[]")
	}
	rows, err := s.db.Query(`INSERT INTO stile_jobs (kind, queue, priority, args, state, max_attempts,
		lease_ms, timeout_ms, backoff_ms, backoff_max_ms, run_at, created_at, finished_at, last_error,
		tags, unique_key, unique_window_ms, concurrency_key, pending_parents, run_regardless, traceparent, dependents, rate_key,
		debounce_key, debounce_keep, debounce_until, collapsed, all_args, throttle_key)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		n.Kind, n.Queue, n.Priority, string(n.Args), string(state), n.MaxAttempts,
		n.LeaseMs, n.TimeoutMs, n.BackoffMs, n.BackoffMaxMs, n.RunAt, now, finished, lastErr,
		string(tags), unique, n.UniqueWindowMs, key, pending, n.RunRegardless, nullIfEmpty(s.Traceparent), rate,
		debounceKey, keep, nullIfZero(debounceUntil), collapsed, allArgs, nullIfEmpty(n.ThrottleKey))
	if err != nil {
		return Enqueued{}, printf.Errorf("enqueue job of kind %s: %w", n.Kind, err)
	}
	if !rows.Next() {
		return Enqueued{}, printf.Errorf("enqueue job of kind %s: %w", n.Kind, do.ErrGuard)
	}
	id := rows.Int(0)
	s.changed(id, n.Kind, state, 0, nil)
	for _, e := range edges {
		var resolved, at any
		if e.resolved != "" {
			resolved, at = e.resolved, now
		}
		if err := s.db.Exec(`INSERT INTO stile_job_deps (child_id, parent_id, resolved, resolved_at) VALUES (?, ?, ?, ?)`,
			id, e.parent, resolved, at); err != nil {
			return Enqueued{}, printf.Errorf("enqueue job %d: record its dependency on job %d: %w", id, e.parent, err)
		}
		// An unresolved edge marks the parent as waited for (a trigger of
		// migration 0013), so its end settles this job.
	}
	switch state {
	case fence.StateScheduled:
		s.due.Added(n.RunAt)
	case fence.StateAvailable:
		if open { // else the alarm wakes the claims when the key opens
			s.wake(n.Queue, n.Kind)
		}
	}
	j := Job{Kind: n.Kind, Queue: n.Queue, Priority: n.Priority, Args: n.Args, CreatedAt: now,
		BackoffMs: n.BackoffMs, BackoffMaxMs: n.BackoffMaxMs, Tags: tags, UniqueKey: n.UniqueKey,
		ConcurrencyKey: n.ConcurrencyKey, RateKey: n.RateKey, PendingParents: pending, RunRegardless: n.RunRegardless,
		DebounceUntil: debounceUntil, Collapsed: collapsed, ThrottleKey: n.ThrottleKey}
	if d := n.Debounce; d != nil {
		j.DebounceKey, j.DebounceKeep = d.Key, d.Keep
		if allArgs != nil {
			j.AllArgs = []byte(allArgs.(string))
		}
	}
	j.ID, j.State, j.MaxAttempts, j.LeaseMs, j.TimeoutMs, j.RunAt = id, state, n.MaxAttempts, n.LeaseMs, n.TimeoutMs, n.RunAt
	if cancelled != "" {
		j.FinishedAt, j.LastError = now, cancelled
	}
	return Enqueued{Job: j}, nil
}

// findUnique returns the job holding key: a live one, or one created
// within windowMs of now whatever its state.
func (s *Store) findUnique(now int64, key string, windowMs int64) (Job, bool, error) {
	since := now + 1 // no window: live jobs only
	if windowMs > 0 {
		since = now - windowMs
	}
	rows, err := s.db.Query(`SELECT `+jobColumns+` FROM stile_jobs WHERE unique_key = ?
		AND (state NOT IN ('completed', 'cancelled', 'dead') OR created_at >= ?) ORDER BY id DESC LIMIT 1`, key, since)
	if err != nil {
		return Job{}, false, printf.Errorf("look up unique key %q: %w", key, err)
	}
	if !rows.Next() {
		return Job{}, false, rows.Err()
	}
	return s.scanJob(rows), true, rows.Err()
}

// MaxAllArgsBytes bounds the args a debounced job collects with keep
// "all" (a JSON array): the args of one enqueue fill it, brackets around;
// an enqueue that does not fit starts a new job.
const MaxAllArgsBytes = api.MaxArgsBytes + 2

// findThrottled returns the job of throttle key created within windowMs
// of now, whatever its state; a job of another kind under the key refuses
// the enqueue.
func (s *Store) findThrottled(now int64, kind, key string, windowMs int64) (Job, bool, error) {
	rows, err := s.db.Query(`SELECT `+jobColumns+` FROM stile_jobs WHERE throttle_key = ? AND created_at > ?
		ORDER BY created_at DESC LIMIT 1`, key, now-windowMs)
	if err != nil {
		return Job{}, false, printf.Errorf("look up throttle key %q: %w", key, err)
	}
	if !rows.Next() {
		return Job{}, false, rows.Err()
	}
	j := s.scanJob(rows)
	if err := rows.Err(); err != nil {
		return Job{}, false, err
	}
	if j.Kind != kind {
		return Job{}, false, api.Refuse(api.CodeInvalidRequest, "throttle key %q holds job %d of kind %s in its window: a key throttles one kind", key, j.ID, j.Kind)
	}
	return j, true, nil
}

// collapse folds the enqueue n into the job collecting its debounce key,
// if one is: scheduled and never claimed. It moves the job's start to the
// end of a new window and keeps the args n.Debounce.Keep says. ok false:
// no job collects (or its collected args are full), n makes a new one.
func (s *Store) collapse(now int64, n NewJob) (j Job, ok bool, err error) {
	d := n.Debounce
	// A job due already is no longer collecting, promoted or not (a
	// request promotes a bounded number of due jobs).
	rows, err := s.db.Query(`SELECT `+jobColumns+` FROM stile_jobs WHERE debounce_key = ? AND state = 'scheduled'
		AND attempt = 0 AND run_at > ? ORDER BY id DESC LIMIT 1`, d.Key, now)
	if err != nil {
		return Job{}, false, printf.Errorf("look up debounce key %q: %w", d.Key, err)
	}
	if !rows.Next() {
		return Job{}, false, rows.Err()
	}
	j = s.scanJob(rows)
	if err := rows.Err(); err != nil {
		return Job{}, false, err
	}
	if j.DebounceKeep != d.Keep {
		return Job{}, false, api.Refuse(api.CodeInvalidRequest, "debounce key %q collects with keep %q in job %d: enqueue with the same keep, or another key", d.Key, j.DebounceKeep, j.ID)
	}
	if j.Kind != n.Kind {
		return Job{}, false, api.Refuse(api.CodeInvalidRequest, "debounce key %q collects jobs of kind %s in job %d: a key collects one kind", d.Key, j.Kind, j.ID)
	}
	args, all := n.Args, any(nil)
	switch d.Keep {
	case flow.KeepFirst:
		args = j.Args
	case flow.KeepAll:
		if len(j.AllArgs)+len(n.Args)+1 > MaxAllArgsBytes {
			return Job{}, false, nil // full: a new job collects what comes next
		}
		all = string(j.AllArgs[:len(j.AllArgs)-1]) + "," + string(n.Args) + "]"
	}
	runAt := d.Collapse(j.RunAt, j.DebounceUntil, now)
	rows, err = s.db.Query(`UPDATE stile_jobs SET run_at = ?, args = ?, all_args = coalesce(?, all_args), collapsed = collapsed + 1
		WHERE id = ? AND state = 'scheduled' AND attempt = 0 RETURNING `+jobColumns, runAt, string(args), all, j.ID)
	if err != nil {
		return Job{}, false, printf.Errorf("collapse an enqueue into job %d: %w", j.ID, err)
	}
	if !rows.Next() {
		return Job{}, false, printf.Errorf("collapse an enqueue into job %d: %w", j.ID, do.ErrGuard)
	}
	if runAt != j.RunAt {
		s.due.Removed(j.RunAt)
		s.due.Added(runAt)
	}
	collapsed := s.scanJob(rows)
	s.changed(collapsed.ID, collapsed.Kind, collapsed.State, collapsed.Attempt, nil)
	return collapsed, true, rows.Err()
}

// idList is a JSON array of ids, for json_each.
func idList(b []byte, ids []int64) []byte {
	b = append(b[:0], '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return append(b, ']')
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
