package fence

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
	if jitter < 0 || jitter >= 1 {
		jitter = 0
	}
	return d - int64(float64(d)*JitterFraction*jitter)
}

// Next is where a job goes after an attempt failed or its lease expired.
type Next struct {
	State    State // StateRetryable or StateDead
	Failures int64 // the new count of failed attempts
	RunAt    int64 // when a retryable job may run again
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
