package push

import (
	"slices"
	"strconv"

	"github.com/stile-run/stile/api"
)

// Policy bounds the pushes of one tenant.
type Policy struct {
	// MaxParallel is the most pushes in flight at once: executors a deep
	// backlog gets in parallel. Each tenant has its own bound, and each
	// push is an executor invocation of its own, so a busy tenant takes no
	// executor from another.
	MaxParallel int
	// PerExecutor is how many ready jobs one executor is expected to take
	// before another is asked.
	PerExecutor int64
	// TTL is how long a push stays in flight without ending (ms): an
	// executor killed before it ended its push is replaced after TTL.
	TTL int64
	// RetryMin and RetryMax bound the backoff after a failed push (ms).
	RetryMin, RetryMax int64
}

// DefaultPolicy is the policy of a module that sets none: 4 executors per
// tenant at most, one more per 100 ready jobs, a push trusted for 35 s
// (an executor's budget is 25 s by default, and Cloudflare ends a
// Worker's work 30 s after its response: an older push is dead), failed
// pushes retried from 1 s doubling to 60 s.
var DefaultPolicy = Policy{MaxParallel: 4, PerExecutor: 100, TTL: 35_000, RetryMin: 1_000, RetryMax: 60_000}

// Flight is a push in flight.
type Flight struct {
	ID               string
	Started, Expires int64
}

// Tracker holds a tenant's pushes in flight.
type Tracker struct {
	Policy   Policy
	flights  []Flight
	pending  bool  // work became ready while no push could start
	retryAt  int64 // a failed push's retry (0: none)
	failures int64
	seq      int64
	prefix   string
}

// New returns a tracker whose push ids start with prefix (distinct per
// instance, so an id of a lost instance is never reused).
func New(p Policy, prefix string) *Tracker { return &Tracker{Policy: p, prefix: prefix} }

// Ready is what a tenant found ready to claim.
type Ready struct {
	Jobs      int64
	Reactions int // reactions with events to deliver
}

func (r Ready) empty() bool { return r.Jobs == 0 && r.Reactions == 0 }

// Due reports whether the tracker has something to do at now even if no
// work woke: a push expired or a retry came due. The runtime then counts
// what is ready and calls Start.
func (t *Tracker) Due(now int64) bool {
	if t.retryAt != 0 && now >= t.retryAt {
		return true
	}
	for _, f := range t.flights {
		if now >= f.Expires {
			return true
		}
	}
	return false
}

// Room reports whether a push could start at now (expired flights do not
// count). When work woke and there is none, the runtime calls Defer.
func (t *Tracker) Room(now int64) bool {
	t.expire(now)
	return len(t.flights) < t.Policy.MaxParallel && (t.retryAt == 0 || now >= t.retryAt)
}

// Defer records that work became ready that no new push covers: the next
// push to end looks again.
func (t *Tracker) Defer() { t.pending = true }

// Start decides the pushes to start at now for what is ready, records
// them in flight, and returns their ids (none: nothing to push, or the
// pushes in flight suffice). Work ready while pushes are in flight and no
// more are wanted is deferred to the next end.
func (t *Tracker) Start(now int64, r Ready) []string {
	t.expire(now)
	if t.retryAt != 0 && now < t.retryAt {
		t.pending = true
		return nil
	}
	t.retryAt = 0
	if r.empty() {
		return nil
	}
	want := 1
	if per := max(t.Policy.PerExecutor, 1); r.Jobs > per {
		want = int((r.Jobs + per - 1) / per)
	}
	want = min(want, t.Policy.MaxParallel) - len(t.flights)
	if want <= 0 {
		// The executors in flight may have just taken their last claim:
		// the first of them to end looks again.
		t.pending = true
		return nil
	}
	ids := make([]string, want)
	for i := range ids {
		t.seq++
		ids[i] = t.prefix + strconv.FormatInt(t.seq, 10)
		t.flights = append(t.flights, Flight{ID: ids[i], Started: now, Expires: now + t.Policy.TTL})
	}
	return ids
}

// End ends a push in flight (how: api.PushDrained, api.PushBudgetSpent or api.PushFailed); ended
// is false if it was not in flight (ended twice, or expired), and nothing
// changes. again says the runtime should count what is ready and Start:
// the executor left work, or work became ready while it ran. A failed push
// is retried after a backoff that doubles with each failure in a row.
func (t *Tracker) End(now int64, id, how string) (ended, again bool) {
	i := slices.IndexFunc(t.flights, func(f Flight) bool { return f.ID == id })
	if i < 0 {
		return false, false
	}
	t.flights = slices.Delete(t.flights, i, i+1)
	if how == api.PushFailed {
		t.failures++
		backoff := t.Policy.RetryMin
		for n := int64(1); n < t.failures && backoff < t.Policy.RetryMax; n++ {
			backoff *= 2
		}
		t.retryAt = now + min(backoff, t.Policy.RetryMax)
		return true, false
	}
	t.failures = 0
	again = how == api.PushBudgetSpent || t.pending
	t.pending = false
	return true, again
}

// NextAt is when the tracker next needs the alarm: the earliest expiry or
// retry (0: never).
func (t *Tracker) NextAt() int64 {
	at := t.retryAt
	for _, f := range t.flights {
		if at == 0 || f.Expires < at {
			at = f.Expires
		}
	}
	return at
}

// Flights are the pushes in flight (a copy).
func (t *Tracker) Flights() []Flight { return slices.Clone(t.flights) }

// Pending reports whether ready work waits for a push to end.
func (t *Tracker) Pending() bool { return t.pending }

// Retry is when a failed push is retried (0: none), after how many
// failures in a row.
func (t *Tracker) Retry() (at, failures int64) { return t.retryAt, t.failures }

// expire drops the flights whose time ran out: their work is looked at
// again (the runtime asked because Due said so).
func (t *Tracker) expire(now int64) {
	t.flights = slices.DeleteFunc(t.flights, func(f Flight) bool {
		if now >= f.Expires {
			t.pending = true
			return true
		}
		return false
	})
}
