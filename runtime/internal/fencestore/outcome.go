package fencestore

import (
	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/internal/jsonwire"
	"github.com/stile-run/stile/internal/printf"
)

// claimHeld is the fence's guard on a job's row: it is still running the
// attempt read, held by the worker read under the token read (arguments:
// id, attempt, worker, token). Every write that a claim's holder commits,
// or that ends its attempt, repeats it, with the lease's side (argument:
// now): live for a heartbeat or a report, lapsed for an expiry. It is the
// last clause of each statement, so its arguments come last.
const (
	claimHeld   = `id = ? AND state = 'running' AND attempt = ? AND worker = ? AND lease_token = ?`
	liveLease   = claimHeld + ` AND lease_until > ?`
	lapsedLease = claimHeld + ` AND lease_until <= ?`
)

// Heartbeat extends the lease of a live claim, as far as fence.ExtendLease
// allows, and says whether a cancel was requested. A refused heartbeat is
// audited and returned as a *api.Error, and writes nothing else. progress,
// when not nil, is the handler's progress (JSON, checked by the caller),
// stored with the heartbeat under the same guard: fenced like an output.
func (s *Store) Heartbeat(now, id int64, c fence.Claim, progress []byte) (leaseUntil int64, cancel bool, err error) {
	j, err := s.getFence(id)
	if err != nil {
		return 0, false, err
	}
	if rej := fence.CheckHeartbeat(j.Job, c, now); rej != nil {
		if err := s.audit(now, id, "heartbeat", c, "", rej); err != nil {
			return 0, false, err
		}
		return 0, false, rej
	}
	// Written even when the lease cannot grow (it is cut at the time
	// limit): the heartbeat is counted for the attempt's timeline.
	until := fence.ExtendLease(j.Job, now)
	// A nil progress binds NULL: the coalesce keeps the last one.
	var p any
	if progress != nil {
		p = string(progress)
	}
	rows, err := s.db.Query(`UPDATE stile_jobs SET lease_until = ?, heartbeats = heartbeats + 1, last_heartbeat_at = ?,
		progress = coalesce(?, progress)
		WHERE `+liveLease+` RETURNING id`, until, now, p, id, j.Attempt, j.Worker, j.LeaseToken, now)
	if err != nil {
		return 0, false, printf.Errorf("extend lease of job %d: %w", id, err)
	}
	if !rows.Next() {
		return 0, false, printf.Errorf("extend lease of job %d: %w", id, do.ErrGuard)
	}
	s.due.Removed(j.LeaseUntil)
	s.due.Added(until)
	if progress != nil {
		s.changed(id, j.Kind, j.State, j.Attempt, progress)
	}
	return until, j.CancelRequested, nil
}

// Report is an outcome a worker reports for its claim.
type Report struct {
	Claim fence.Claim
	fence.Report
	Output []byte   // JSON, completed only
	Error  string   // failed and cancelled
	Tags   []string // added to the job's tags with the outcome
}

// ReportResult says what a report did.
type ReportResult struct {
	Job       Job
	Duplicate bool // the same outcome was already recorded by this claim
	// ClaimedAt is when the reported attempt was claimed (0 on a
	// duplicate): Job no longer holds it once the attempt ended.
	ClaimedAt int64
}

// Report records the outcome of a claim if the fence lets it. A refused
// report writes an audit row and nothing else, and returns a
// *api.Error. jitter in [0, 1) spreads the retry of a failure.
func (s *Store) Report(now, id int64, r Report, jitter float64) (ReportResult, error) {
	j, err := s.getFence(id)
	if err != nil {
		return ReportResult{}, err
	}
	var last *fence.Ended
	if j.State != fence.StateRunning && r.Claim.Attempt == j.Attempt && j.Attempt > 0 {
		if last, err = s.ended(id, j.Attempt); err != nil {
			return ReportResult{}, err
		}
	}
	v := fence.CheckReport(j.Job, last, r.Claim, r.Outcome, now)
	if v.Rejected != nil {
		if err := s.audit(now, id, "report", r.Claim, r.Outcome, v.Rejected); err != nil {
			return ReportResult{}, err
		}
		return ReportResult{}, v.Rejected
	}
	if v.Duplicate {
		return ReportResult{Job: j, Duplicate: true}, nil
	}
	next := fence.AfterReport(j.Job, r.Report, j.Backoff(), now, jitter)
	claimedAt := j.ClaimedAt
	j, err = s.finish(now, j, next, ending{outcome: r.Outcome, output: r.Output, err: r.Error,
		noticedBy: "report", tags: r.Tags})
	return ReportResult{Job: j, ClaimedAt: claimedAt}, err
}

// ending describes how an attempt ended.
type ending struct {
	outcome   fence.Outcome
	output    []byte   // completed only
	err       string   // failed, cancelled and lease_expired
	noticedBy string   // report, alarm or request
	tags      []string // to add to the job's tags
}

// finish ends the running attempt of j as next says, with all that follows
// from it in the same transaction: the guarded job update (the fence's
// write; a report is guarded by a live lease, an expiry by a lapsed one),
// which keeps the attempt on the row as the last to end (the one kept
// before moves to the history table), the concurrency slot released, and, when the
// job ended, its dependents unlatched or cancelled. It returns the job as
// now stored.
func (s *Store) finish(now int64, j Job, next fence.Next, e ending) (Job, error) {
	var finished, out, lastErr any
	if next.State.Terminal() {
		finished = now
	}
	if e.output != nil {
		out = string(e.output)
	}
	if e.err != "" {
		lastErr = e.err
	} else if j.LastError != "" {
		lastErr = j.LastError
	}
	tags, err := mergeTags(j.Tags, e.tags)
	if err != nil {
		return j, printf.Errorf("tags of job %d: %w", j.ID, err)
	}
	guard := liveLease
	if e.outcome == fence.OutcomeLeaseExpired {
		guard = lapsedLease
	}
	// The attempt kept on the row as the last to end moves to the history
	// table: this one takes its place. Only a retried job has one (a first
	// attempt costs no statement). Guarded like the update, so a stale
	// writer moves nothing. One the table holds already (an export read
	// while attempts ended has both) is kept as it is.
	if j.KeepsEnded {
		if err := s.db.Exec(`INSERT OR IGNORE INTO stile_job_attempts (job_id, attempt, worker, lease_token, claimed_at,
			lease_until, ended_at, outcome, error, noticed_by, heartbeats, last_heartbeat_at)
			SELECT id, ended_attempt, ended_worker, ended_token, ended_claimed_at, ended_lease_until, ended_at, ended_outcome,
			ended_error, ended_noticed_by, ended_heartbeats, ended_last_heartbeat_at FROM stile_jobs
			WHERE ended_attempt IS NOT NULL AND `+guard, j.ID, j.Attempt, j.Worker, j.LeaseToken, now); err != nil {
			return j, printf.Errorf("keep attempt %d of job %d: %w", j.Attempt-1, j.ID, err)
		}
	}
	var attemptErr any
	if e.err != "" {
		attemptErr = e.err
	}
	var lastBeat any
	if j.Heartbeats > 0 {
		lastBeat = j.LastHeartbeatAt
	}
	rows, err := s.db.Query(`UPDATE stile_jobs SET state = ?, failures = ?, run_at = ?, output = ?,
		last_error = ?, finished_at = ?, tags = ?, worker = NULL, lease_token = NULL, claimed_at = NULL,
		lease_until = NULL, cancel_requested = NULL,
		ended_attempt = attempt, ended_worker = worker, ended_token = lease_token, ended_claimed_at = claimed_at,
		ended_lease_until = lease_until, ended_heartbeats = heartbeats, ended_last_heartbeat_at = ?,
		ended_at = ?, ended_outcome = ?, ended_error = ?, ended_noticed_by = ?
		WHERE `+guard+` RETURNING id`,
		string(next.State), next.Failures, next.RunAt, out, lastErr, finished, string(tags),
		lastBeat, now, string(e.outcome), attemptErr, e.noticedBy,
		j.ID, j.Attempt, j.Worker, j.LeaseToken, now)
	if err != nil {
		return j, printf.Errorf("record %s of job %d attempt %d: %w", string(e.outcome), j.ID, j.Attempt, err)
	}
	if !rows.Next() {
		return j, printf.Errorf("record %s of job %d attempt %d: %w", string(e.outcome), j.ID, j.Attempt, do.ErrGuard)
	}
	s.changed(j.ID, j.Kind, next.State, j.Attempt, nil)
	s.due.Removed(j.LeaseUntil)
	if next.State == fence.StateRetryable || next.State == fence.StateDead {
		s.failing = true
	}
	switch next.State {
	case fence.StateRetryable, fence.StateScheduled:
		s.due.Added(next.RunAt)
	case fence.StateAvailable:
		s.wakeAll() // the fence's columns do not say its queue
	}
	if j.ConcurrencyKey != "" {
		if err := s.releaseSlot(now, j.ConcurrencyKey); err != nil {
			return j, err
		}
	}
	if next.State.Terminal() && j.Dependents {
		if err := s.settleChildren(now, j.ID, next.State); err != nil {
			return j, err
		}
	}
	j.State, j.Failures, j.RunAt = next.State, next.Failures, next.RunAt
	j.Output, j.FinishedAt, j.Tags, j.KeepsEnded = e.output, 0, tags, true
	if next.State.Terminal() {
		j.FinishedAt = now
	}
	if e.err != "" {
		j.LastError = e.err
	}
	j.Worker, j.LeaseToken, j.ClaimedAt, j.LeaseUntil, j.CancelRequested, j.CancelAt = "", "", 0, 0, false, 0
	return j, nil
}

// mergeTags adds tags to a JSON array of tags, keeping order, no repeats.
func mergeTags(have []byte, add []string) ([]byte, error) {
	if len(add) == 0 {
		if len(have) == 0 {
			return []byte("[]"), nil
		}
		return have, nil
	}
	var tags []string
	if len(have) > 0 {
		var err error
		if tags, err = jsonwire.DecodeStrings(have); err != nil {
			return nil, err
		}
	}
	seen := make(map[string]bool, len(tags)+len(add))
	for _, t := range tags {
		seen[t] = true
	}
	for _, t := range add {
		if !seen[t] {
			seen[t] = true
			tags = append(tags, t)
		}
	}
	return jsonwire.AppendStrings(nil, tags), nil
}

// settleChildren applies a parent's end to the jobs waiting for it, once:
// each waiting edge is resolved in one guarded UPDATE. A completed parent
// unlatches its children (ready when no parent is left); a dead or cancelled
// one unlatches children that run regardless and cancels the others, whose
// own children follow in turn.
func (s *Store) settleChildren(now int64, parent int64, state fence.State) error {
	type end struct {
		id    int64
		state fence.State
	}
	work := []end{{parent, state}}
	for len(work) > 0 {
		p := work[0]
		work = work[1:]
		resolved := "completed"
		if p.state != fence.StateCompleted {
			resolved = "failed"
		}
		rows, err := s.db.Query(`UPDATE stile_job_deps SET resolved = ?, resolved_at = ?
			WHERE parent_id = ? AND resolved IS NULL RETURNING child_id`, resolved, now, p.id)
		if err != nil {
			return printf.Errorf("settle the dependents of job %d: %w", p.id, err)
		}
		var children []int64
		for rows.Next() {
			children = append(children, rows.Int(0))
		}
		if len(children) == 0 {
			continue
		}
		ids := string(idList(nil, children))
		// Unlatch: a completed parent's children, or any parent's children
		// that run regardless. A child with no parent left becomes ready.
		regardless := ""
		if resolved == "failed" {
			regardless = " AND run_regardless = 1"
		}
		rows, err = s.db.Query(`UPDATE stile_jobs SET pending_parents = pending_parents - 1,
			state = CASE WHEN pending_parents > 1 THEN 'pending' WHEN run_at > ? THEN 'scheduled' ELSE 'available' END
			WHERE state = 'pending' AND id IN (SELECT value FROM json_each(?))`+regardless+`
			RETURNING state, run_at, queue, kind, id, attempt`, now, ids)
		if err != nil {
			return printf.Errorf("unlatch the dependents of job %d: %w", p.id, err)
		}
		for rows.Next() {
			s.changed(rows.Int(4), s.intern(rows.TextBytes(3)), fence.State(rows.TextBytes(0)), rows.Int(5), nil)
			switch fence.State(rows.TextBytes(0)) {
			case fence.StateAvailable:
				s.wake(s.intern(rows.TextBytes(2)), s.intern(rows.TextBytes(3)))
			case fence.StateScheduled:
				s.due.Added(rows.Int(1))
			}
		}
		if resolved == "completed" {
			continue
		}
		rows, err = s.db.Query(`UPDATE stile_jobs SET state = 'cancelled', finished_at = ?, last_error = ?
			WHERE state = 'pending' AND run_regardless = 0 AND id IN (SELECT value FROM json_each(?))
			RETURNING id, kind, attempt`, now, printf.Sprintf("parent job %d ended %s", p.id, string(p.state)), ids)
		if err != nil {
			return printf.Errorf("cancel the dependents of job %d: %w", p.id, err)
		}
		for rows.Next() {
			s.changed(rows.Int(0), s.intern(rows.TextBytes(1)), fence.StateCancelled, rows.Int(2), nil)
			work = append(work, end{rows.Int(0), fence.StateCancelled})
		}
	}
	return nil
}

// takeSlots counts n claimed jobs against key's limit.
func (s *Store) takeSlots(now int64, key string, n int) error {
	rows, err := s.db.Query(`UPDATE stile_concurrency SET in_use = in_use + ?1, updated_at = ?2
		WHERE key = ?3 AND in_use + ?1 <= slots RETURNING in_use`, n, now, key)
	if err != nil {
		return printf.Errorf("take %d slots of %q: %w", n, key, err)
	}
	if !rows.Next() {
		return printf.Errorf("take %d slots of %q: %w", n, key, do.ErrGuard)
	}
	return nil
}

// releaseSlot frees the slot a job held while running.
func (s *Store) releaseSlot(now int64, key string) error {
	rows, err := s.db.Query(`UPDATE stile_concurrency SET in_use = in_use - 1, updated_at = ?
		WHERE key = ? AND in_use > 0 RETURNING in_use`, now, key)
	if err != nil {
		return printf.Errorf("release a slot of %q: %w", key, err)
	}
	if !rows.Next() {
		return printf.Errorf("release a slot of %q: %w", key, do.ErrGuard)
	}
	s.wakeAll() // a job waiting for this key may run now
	return nil
}

// Cancel cancels a job: at once when it is not running (and its dependents
// follow), or by asking its worker, who learns at its next heartbeat. From
// then on heartbeats no longer extend the lease; if the worker never
// reports, the lease runs out and the job ends cancelled, not retried.
func (s *Store) Cancel(now, id int64, reason string) (Job, error) {
	j, err := s.getFence(id)
	if err != nil {
		return j, err
	}
	action, rej := fence.Cancel(j.Job)
	if rej != nil {
		return j, rej
	}
	switch action {
	case fence.CancelRequest:
		rows, err := s.db.Query(`UPDATE stile_jobs SET cancel_requested = ?
			WHERE id = ? AND state = 'running' AND cancel_requested IS NULL RETURNING id`, now, id)
		if err != nil {
			return j, printf.Errorf("request cancel of job %d: %w", id, err)
		}
		if !rows.Next() {
			return j, printf.Errorf("request cancel of job %d: %w", id, do.ErrGuard)
		}
		s.changed(id, j.Kind, j.State, j.Attempt, nil)
	case fence.CancelNow:
		msg := "cancelled"
		if reason != "" {
			msg = "cancelled: " + reason
		}
		rows, err := s.db.Query(`UPDATE stile_jobs SET state = 'cancelled', finished_at = ?, last_error = ?
			WHERE id = ? AND state = ? RETURNING id`, now, msg, id, string(j.State))
		if err != nil {
			return j, printf.Errorf("cancel job %d: %w", id, err)
		}
		if !rows.Next() {
			return j, printf.Errorf("cancel job %d: %w", id, do.ErrGuard)
		}
		s.changed(id, j.Kind, fence.StateCancelled, j.Attempt, nil)
		if j.State == fence.StateScheduled || j.State == fence.StateRetryable {
			s.due.Removed(j.RunAt)
		}
		s.failing = s.failing || j.State == fence.StateRetryable
		if j.Dependents {
			if err := s.settleChildren(now, id, fence.StateCancelled); err != nil {
				return j, err
			}
		}
	}
	return s.Get(id) // the whole job, as it is now
}

// Retry runs a dead or cancelled job again with a fresh retry budget (its
// attempt numbers go on). A job cancelled while it waited for parents runs
// without waiting any more. Its dependents that were cancelled with it stay
// cancelled.
func (s *Store) Retry(now, id int64) (Job, error) {
	j, err := s.getFence(id)
	if err != nil {
		return j, err
	}
	if j.State != fence.StateDead && j.State != fence.StateCancelled {
		return j, api.Refuse(api.CodeNotRetryable, "job %d is %s: only dead or cancelled jobs can be retried", id, string(j.State))
	}
	rows, err := s.db.Query(`UPDATE stile_jobs SET state = 'available', failures = 0, finished_at = NULL,
		run_at = ?, pending_parents = 0 WHERE id = ? AND state = ? RETURNING id`, now, id, string(j.State))
	if err != nil {
		if do.IsConstraint(err) {
			return j, api.Refuse(api.CodeUniqueConflict, "job %d cannot run again: another live job holds its unique key", id)
		}
		return j, printf.Errorf("retry job %d: %w", id, err)
	}
	if !rows.Next() {
		return j, printf.Errorf("retry job %d: %w", id, do.ErrGuard)
	}
	s.failing = s.failing || j.State == fence.StateDead
	s.changed(id, j.Kind, fence.StateAvailable, j.Attempt, nil)
	j, err = s.Get(id)
	if err == nil {
		s.wake(j.Queue, j.Kind)
	}
	return j, err
}

// Delete removes a finished job with its history.
func (s *Store) Delete(id int64) error {
	j, err := s.getFence(id)
	if err != nil {
		return err
	}
	if !j.State.Terminal() {
		return api.Refuse(api.CodeNotFinished, "job %d is %s: cancel it first; only finished jobs can be deleted", id, string(j.State))
	}
	rows, err := s.db.Query(`DELETE FROM stile_jobs WHERE id = ? AND state IN ('completed', 'cancelled', 'dead') RETURNING id`, id)
	if err != nil {
		return printf.Errorf("delete job %d: %w", id, err)
	}
	if !rows.Next() {
		return printf.Errorf("delete job %d: %w", id, do.ErrGuard)
	}
	s.failing = s.failing || j.State == fence.StateDead
	s.changed(id, j.Kind, api.JobDeleted, j.Attempt, nil)
	return nil
}

// Unregistered lists up to limit unfinished jobs whose kind is not among
// kinds, each with the fence's columns only (what Fail needs).
func (s *Store) Unregistered(kinds []string, limit int) ([]Job, error) {
	list := jsonwire.AppendStrings(nil, kinds)
	// The fence's columns only: a slice of jobs with their args and
	// outputs might not fit the module's memory.
	rows, err := s.db.Query(`SELECT `+fenceColumns+` FROM stile_jobs WHERE finished_at IS NULL
		AND kind NOT IN (SELECT value FROM json_each(?)) ORDER BY id`+do.Limit(limit), string(list))
	if err != nil {
		return nil, printf.Errorf("find jobs of kinds this module does not register: %w", err)
	}
	var out []Job
	for rows.Next() {
		var j Job
		s.scanFence(rows, &j)
		out = append(out, j)
	}
	return out, rows.Err()
}

// Fail ends a job that is not running as dead with msg (its kind is gone
// from the module): it stays listed with its error, and its dependents
// follow as after any dead parent.
func (s *Store) Fail(now int64, j Job, msg string) error {
	rows, err := s.db.Query(`UPDATE stile_jobs SET state = 'dead', finished_at = ?, last_error = ?
		WHERE id = ? AND state = ? RETURNING id`, now, msg, j.ID, string(j.State))
	if err != nil {
		return printf.Errorf("fail job %d: %w", j.ID, err)
	}
	if !rows.Next() {
		return printf.Errorf("fail job %d: %w", j.ID, do.ErrGuard)
	}
	s.failing = true
	s.changed(j.ID, j.Kind, fence.StateDead, j.Attempt, nil)
	if j.State == fence.StateScheduled || j.State == fence.StateRetryable {
		s.due.Removed(j.RunAt)
	}
	if !j.Dependents {
		return nil
	}
	return s.settleChildren(now, j.ID, fence.StateDead)
}
