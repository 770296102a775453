package fence

import "github.com/stile-run/stile/api"

// Backoff is an exponential retry delay: Base after the first failure,
// doubling after each further one, never above Max.
type Backoff struct {
	BaseMs int64
	MaxMs  int64
}

// DefaultBackoff waits 1 s after the first failure, up to 1 h.
var DefaultBackoff = Backoff{BaseMs: 1_000, MaxMs: 3_600_000}

// JitterFraction is how much of a delay jitter may take away: delays fall
// in (75%, 100%] of the exponential value, so retries of jobs that failed
// together spread out without ever waiting longer than the schedule says.
const JitterFraction = 0.25

// Delay is the wait after the n-th failure (n >= 1). jitter in [0, 1) comes
// from the caller, so the decision stays deterministic.
func (b Backoff) Delay(n int64, jitter float64) int64 {
	if n < 1 {
		n = 1
	}
	d := b.BaseMs
	for i := int64(1); i < n && d < b.MaxMs; i++ {
		d *= 2
	}
	if d > b.MaxMs {
		d = b.MaxMs
	}
	if !(jitter >= 0 && jitter < 1) { // NaN too
		jitter = 0
	}
	return d - int64(float64(d)*JitterFraction*jitter)
}

// Next is where a job goes after its attempt ended: reported, or its lease
// expired.
type Next struct {
	State    State // the job's state after the attempt
	Failures int64 // the new count of failed attempts
	RunAt    int64 // when a retryable or scheduled job may run again
}

// AfterFailure decides the job's next state once one more attempt failed at
// now: retry after the backoff while the budget lasts, dead after that.
func AfterFailure(j Job, b Backoff, now int64, jitter float64) Next {
	failures := j.Failures + 1
	if failures >= j.MaxAttempts {
		return Next{State: StateDead, Failures: failures, RunAt: now}
	}
	return Next{State: StateRetryable, Failures: failures, RunAt: now + b.Delay(failures, jitter)}
}

// Report is what an accepted report asks for.
type Report struct {
	Outcome Outcome // completed, failed, cancelled or snoozed
	// Final, with a failure: do not retry, end the job dead.
	Final bool
	// SnoozeMs, with snoozed: run again after this long.
	SnoozeMs int64
}

// AfterReport decides the job's next state once a report was accepted at
// now. A snooze runs the job again later without spending its retry budget
// (the next claim still takes a new attempt number): scheduled after the
// delay, or available at once for a snooze of no time; a final failure ends
// it dead whatever its budget; a cancelled report ends it cancelled. Once a
// cancel was requested the job never runs again: a report that would retry
// or snooze it ends it cancelled, as a lease running out after the request
// does (a cancel is not a failure), while one that completes it stands,
// since the work finished first.
func AfterReport(j Job, r Report, b Backoff, now int64, jitter float64) Next {
	n := afterReport(j, r, b, now, jitter)
	if j.CancelRequested && !n.State.Terminal() {
		return Next{State: StateCancelled, Failures: j.Failures, RunAt: j.RunAtOr(now)}
	}
	return n
}

func afterReport(j Job, r Report, b Backoff, now int64, jitter float64) Next {
	switch r.Outcome {
	case OutcomeCompleted:
		return Next{State: StateCompleted, Failures: j.Failures, RunAt: j.RunAtOr(now)}
	case OutcomeCancelled:
		return Next{State: StateCancelled, Failures: j.Failures, RunAt: j.RunAtOr(now)}
	case OutcomeSnoozed:
		if r.SnoozeMs <= 0 {
			// A snooze of no time releases the job at once: nothing is
			// due to make it available later.
			return Next{State: StateAvailable, Failures: j.Failures, RunAt: now}
		}
		return Next{State: StateScheduled, Failures: j.Failures, RunAt: now + r.SnoozeMs}
	}
	if r.Final {
		return Next{State: StateDead, Failures: min(j.Failures+1, j.MaxAttempts), RunAt: now}
	}
	return AfterFailure(j, b, now, jitter)
}

// AfterExpiry decides the next state of a job whose lease ran out at now:
// a failed attempt, retried or dead; but a job whose cancel was requested
// ends cancelled, never retried.
func AfterExpiry(j Job, b Backoff, now int64, jitter float64) Next {
	if j.CancelRequested {
		return Next{State: StateCancelled, Failures: j.Failures, RunAt: j.RunAtOr(now)}
	}
	return AfterFailure(j, b, now, jitter)
}

// TimedOut reports whether the lease that ran out was the handler's time
// limit rather than a missed heartbeat.
func TimedOut(j Job) bool {
	return j.TimeoutMs > 0 && j.LeaseUntil >= j.ClaimedAt+j.TimeoutMs
}

// CancelAction is what a cancel request does to a job.
type CancelAction int

// Cancel actions.
const (
	// CancelNow: the job is not running; it ends cancelled at once.
	CancelNow CancelAction = iota + 1
	// CancelRequest: the job is running; its worker learns at the next
	// heartbeat, and the lease is no longer extended.
	CancelRequest
	// CancelAlreadyRequested: nothing more to do.
	CancelAlreadyRequested
)

// Cancel decides what cancelling j does.
func Cancel(j Job) (CancelAction, *api.Error) {
	switch {
	case j.State.Terminal():
		return 0, reject(api.CodeFinished, "job %d already ended %s", j.ID, string(j.State))
	case j.State != StateRunning:
		return CancelNow, nil
	case j.CancelRequested:
		return CancelAlreadyRequested, nil
	}
	return CancelRequest, nil
}
