package fence

import (
	"crypto/subtle"

	"github.com/stile-run/stile/api"
)

// State is a job's state. Every state exists from the first schema
// migration; see docs/state_machine.md for the transitions.
type State string

// Job states.
const (
	StatePending   State = "pending"   // waits for its parent jobs
	StateScheduled State = "scheduled" // waits for run_at
	StateAvailable State = "available" // ready to be claimed
	StateRunning   State = "running"   // claimed; a lease is out
	StateRetryable State = "retryable" // failed; waits for its backoff
	StateCompleted State = "completed" // terminal: succeeded
	StateCancelled State = "cancelled" // terminal: cancelled
	StateDead      State = "dead"      // terminal: retry budget spent
)

// States lists every state, in the order the docs draw them.
var States = []State{StatePending, StateScheduled, StateAvailable, StateRunning,
	StateRetryable, StateCompleted, StateCancelled, StateDead}

// Terminal reports whether s is a final state.
func (s State) Terminal() bool {
	return s == StateCompleted || s == StateCancelled || s == StateDead
}

// Valid reports whether s is one of States.
func (s State) Valid() bool {
	for _, x := range States {
		if s == x {
			return true
		}
	}
	return false
}

// Job is what the fence needs to know about one job.
type Job struct {
	ID          int64
	State       State
	RunAt       int64  // when the job is (or was) due
	Attempt     int64  // the latest claim's attempt number; 0 before the first claim
	Failures    int64  // failed attempts counted against MaxAttempts
	MaxAttempts int64  // retry budget
	LeaseMs     int64  // how long a claim or heartbeat keeps the lease
	Worker      string // while running: the claiming worker
	LeaseToken  string // while running: the claim's secret token
	LeaseUntil  int64  // while running: the lease is live iff now < LeaseUntil
	ClaimedAt   int64  // while running: when this attempt was claimed
	TimeoutMs   int64  // the handler's time limit: no lease extends past ClaimedAt + TimeoutMs
	// CancelRequested: an operator asked to cancel this running job.
	CancelRequested bool
}

// Ended is the recorded end of one attempt, from the attempt history.
type Ended struct {
	Attempt    int64
	Worker     string
	LeaseToken string
	Outcome    Outcome
}

// Outcome is how an attempt ended.
type Outcome string

// Attempt outcomes.
const (
	OutcomeCompleted    Outcome = "completed"
	OutcomeFailed       Outcome = "failed"
	OutcomeCancelled    Outcome = "cancelled"
	OutcomeSnoozed      Outcome = "snoozed"
	OutcomeLeaseExpired Outcome = "lease_expired"
)

// Claim is what a worker presents with a heartbeat or a report: who it is,
// which attempt it holds, and the token that proves it was given that claim.
type Claim struct {
	Worker  string
	Attempt int64
	Token   string
}

// A refusal is an *api.Error with one of the stale codes of package api
// (api.CodeStaleAttempt, api.CodeOtherWorker, api.CodeBadToken,
// api.CodeLeaseExpired, api.CodeAlreadyReported): errors.Is(err,
// api.ErrStale) is true for each.
func reject(code api.Code, format string, args ...any) *api.Error {
	return api.Refuse(code, format, args...)
}

// tokenMatches compares a presented token with the claim's in constant
// time. A token is a fresh random value per claimed job (the store draws it
// when it stamps the claim), so it proves the claim and nothing else.
func tokenMatches(want, got string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(want), []byte(got)) == 1
}

// RunAtOr is the job's run_at, or now when it has none.
func (j Job) RunAtOr(now int64) int64 {
	if j.RunAt != 0 {
		return j.RunAt
	}
	return now
}

// Live reports whether the job's lease is live at now.
func Live(j Job, now int64) bool {
	return j.State == StateRunning && now < j.LeaseUntil
}

// CheckHeartbeat decides whether c still holds a live lease on j at now.
// nil means the heartbeat may extend the lease to ExtendLease(j, now).
func CheckHeartbeat(j Job, c Claim, now int64) *api.Error {
	if c.Attempt != j.Attempt {
		return staleAttempt(j, c)
	}
	if j.State != StateRunning {
		return reject(api.CodeLeaseExpired, "attempt %d of job %d no longer holds a lease (the job is %s)", c.Attempt, j.ID, string(j.State))
	}
	return checkRunning(j, c, now)
}

// ExtendLease is the lease deadline a successful heartbeat at now grants:
// now + the lease, but never past the handler's time limit, and not at all
// once a cancel was requested (the worker must stop, not carry on).
func ExtendLease(j Job, now int64) int64 {
	if j.CancelRequested {
		return j.LeaseUntil
	}
	until := now + j.LeaseMs
	if limit := j.ClaimedAt + j.TimeoutMs; j.TimeoutMs > 0 && until > limit {
		until = limit
	}
	return max(until, j.LeaseUntil)
}

// ReportVerdict is the fence's answer to an outcome report.
type ReportVerdict struct {
	// Duplicate: the same claim already recorded this same outcome; the
	// report is answered as accepted and writes nothing.
	Duplicate bool
	// Rejected is non-nil when the report must write nothing of what it
	// asked for.
	Rejected *api.Error
}

// CheckReport decides whether a report of outcome o by c may commit on j at
// now. last is the recorded end of attempt c.Attempt, if it has one.
func CheckReport(j Job, last *Ended, c Claim, o Outcome, now int64) ReportVerdict {
	if c.Attempt != j.Attempt {
		return ReportVerdict{Rejected: staleAttempt(j, c)}
	}
	if j.State == StateRunning {
		return ReportVerdict{Rejected: checkRunning(j, c, now)}
	}
	// The attempt has ended already: by an earlier report or by expiry.
	if last == nil || last.Attempt != c.Attempt {
		return ReportVerdict{Rejected: reject(api.CodeLeaseExpired, "attempt %d of job %d holds no lease (the job is %s)", c.Attempt, j.ID, string(j.State))}
	}
	if c.Worker != last.Worker {
		return ReportVerdict{Rejected: otherWorker(j.ID, c, last.Worker)}
	}
	if !tokenMatches(last.LeaseToken, c.Token) {
		return ReportVerdict{Rejected: badToken(j.ID, c)}
	}
	switch last.Outcome {
	case OutcomeLeaseExpired:
		return ReportVerdict{Rejected: reject(api.CodeLeaseExpired, "the lease of attempt %d of job %d expired before the report", c.Attempt, j.ID)}
	case o:
		return ReportVerdict{Duplicate: true}
	}
	return ReportVerdict{Rejected: reject(api.CodeAlreadyReported, "attempt %d of job %d already reported %s", c.Attempt, j.ID, string(last.Outcome))}
}

func checkRunning(j Job, c Claim, now int64) *api.Error {
	if c.Worker != j.Worker {
		return otherWorker(j.ID, c, j.Worker)
	}
	if !tokenMatches(j.LeaseToken, c.Token) {
		return badToken(j.ID, c)
	}
	if now >= j.LeaseUntil {
		return reject(api.CodeLeaseExpired, "the lease of attempt %d of job %d expired %d ms ago", c.Attempt, j.ID, now-j.LeaseUntil)
	}
	return nil
}

func staleAttempt(j Job, c Claim) *api.Error {
	if c.Attempt > j.Attempt {
		return reject(api.CodeStaleAttempt, "attempt %d of job %d was never claimed (the latest is %d)", c.Attempt, j.ID, j.Attempt)
	}
	return reject(api.CodeStaleAttempt, "attempt %d of job %d is stale: the job was claimed again as attempt %d", c.Attempt, j.ID, j.Attempt)
}

func otherWorker(id int64, c Claim, holder string) *api.Error {
	return reject(api.CodeOtherWorker, "attempt %d of job %d belongs to worker %q, not %q", c.Attempt, id, holder, c.Worker)
}

func badToken(id int64, c Claim) *api.Error {
	return reject(api.CodeBadToken, "the lease token does not match attempt %d of job %d", c.Attempt, id)
}
