package push

import (
	"slices"
	"strconv"

	"github.com/stile-run/stile/api"
)

// Policy bounds the pushes of one tenant.
type Policy struct {
	// MaxParallel is the most pushes started for a backlog, those in flight
	// that will claim it counted: executors a deep backlog gets in
	// parallel. Each tenant has its own bound, and each
	// push is an executor invocation of its own, so a busy tenant takes no
	// executor from another.
	MaxParallel int
	// MaxInFlight is the most pushes in flight at once, counting those
	// that only finish the work they took (their claims found nothing
	// more): how many invocations a tenant may have running.
	MaxInFlight int
	// PerExecutor is how many ready jobs one executor is expected to take
	// before another is asked.
	PerExecutor int64
	// TTL is how long a push stays in flight without ending (ms): an
	// executor killed before it ended its push is replaced after TTL.
	TTL int64
	// RetryMin and RetryMax bound the backoff after a failed push (ms).
	RetryMin, RetryMax int64
	// Linger is how long an executor that ran out of work holds a claim
	// for more before it ends its push (ms; 0: it ends at once).
	Linger int64
}

// DefaultPolicy is the policy of a module that sets none: 4 executors
// claiming per tenant at most, 16 pushes in flight in all, one more
// claiming executor per 100 ready jobs, a push trusted for 35 s (an
// executor's budget is 25 s by default, and Cloudflare ends a Worker's
// work 30 s after its response: an older push is dead), failed pushes
// retried from 1 s doubling to 60 s, and an executor lingering 1 s for
// more jobs before it ends its push.
var DefaultPolicy = Policy{MaxParallel: 4, MaxInFlight: 16, PerExecutor: 100, TTL: 35_000, RetryMin: 1_000, RetryMax: 60_000,
	Linger: 1_000}

// State is where a push in flight is, as far as its tenant knows: what
// decides whether work that becomes ready needs a push of its own.
type State string

const (
	// Starting: the push was sent and its executor has not claimed yet.
	// Its first claim will see everything ready by then.
	Starting State = "starting"
	// Claiming: its last claim took all it asked for and left work it
	// could have taken: it claims again as its handler slots free up.
	Claiming State = "claiming"
	// Finishing: its claims took everything it could; it only runs what
	// it took, and claims again only when some of that ends. Work that
	// becomes ready now is not its to see.
	Finishing State = "finishing"
	// Lingering: it ran out of work and holds a claim for more jobs (its
	// host wakes the claim when a commit makes work ready), up to the
	// policy's Linger; then it ends.
	Lingering State = "lingering"
)

// Flight is a push in flight.
type Flight struct {
	ID               string
	Started, Expires int64
	// reactions says the push named reactions: its executor claims
	// deliveries as well as jobs (a push for jobs alone spares it the
	// request).
	reactions bool
	// jobsClaimed and reactionsClaimed say its executor claimed each at
	// least once; jobsMore and reactionsMore that its last claim of each
	// took all it asked for and left work it could have taken.
	jobsClaimed, reactionsClaimed bool
	jobsMore, reactionsMore       bool
	// lingering says its last claim of jobs found nothing and is held by
	// the host until lingerUntil (the first time that hold found nothing,
	// plus its wait); lingerSeq numbers the hold, as its drain does.
	lingering   bool
	lingerUntil int64
	lingerSeq   int64
}

// State is the flight's state at now.
func (f Flight) State(now int64) State {
	switch {
	case !f.jobsClaimed && !f.reactionsClaimed:
		return Starting
	case f.jobsMore || f.reactionsMore:
		return Claiming
	case f.lingers(now):
		return Lingering
	}
	return Finishing
}

// lingerMargin is how long before its end a held claim no longer counts
// as covering new jobs: the host may give it up a little earlier than the
// tenant reckons, and a job must not wait for the push's next claim.
const lingerMargin = 50

// lingers says the push's held claim still waits at now.
func (f Flight) lingers(now int64) bool { return f.lingering && now < f.lingerUntil-lingerMargin }

// seesReactions says the push claims deliveries and will see every one
// ready now: it has not claimed them yet, or its last claim left more.
func (f Flight) seesReactions() bool { return f.reactions && (!f.reactionsClaimed || f.reactionsMore) }

// Tracker holds a tenant's pushes in flight.
type Tracker struct {
	Policy   Policy
	flights  []Flight
	pending  bool  // work became ready that no push covered
	retryAt  int64 // a failed push's retry (0: none)
	failures int64
	seq      int64
	prefix   string
}

// New returns a tracker whose push ids start with prefix (distinct per
// instance, so an id of a lost instance is never reused).
func New(p Policy, prefix string) *Tracker {
	p.MaxParallel = max(p.MaxParallel, 1)
	p.MaxInFlight = max(p.MaxInFlight, p.MaxParallel)
	return &Tracker{Policy: p, prefix: prefix}
}

// Ready is what a tenant found ready to claim.
type Ready struct {
	Jobs      int64
	Reactions int // reactions with a delivery a claim would hand out
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

// Cover says, before the runtime counts what is ready, whether new work
// could get a push.
type Cover byte

const (
	// Open: a push may start; count what is ready and call Start.
	Open Cover = iota
	// Blocked: no push may start (a failed push's backoff, or MaxInFlight
	// pushes in flight); the runtime calls Defer so the next end looks
	// again.
	Blocked
)

// Look says whether work that became ready at now could get a push.
func (t *Tracker) Look(now int64) Cover {
	t.expire(now)
	if t.retryAt != 0 && now < t.retryAt || len(t.flights) >= t.Policy.MaxInFlight {
		return Blocked
	}
	return Open
}

// TakesOne reports whether one job that became ready at now is taken by
// a push in flight without counting what is ready: one that has not
// claimed jobs yet, or one whose claim is held (then the next end looks
// again, should the hold have been given up). It is Start's answer for one
// more job beside work the pushes in flight already cover.
func (t *Tracker) TakesOne(now int64) bool {
	t.expire(now)
	if slices.ContainsFunc(t.flights, func(f Flight) bool { return !f.jobsClaimed }) {
		return true
	}
	if slices.ContainsFunc(t.flights, func(f Flight) bool { return f.lingers(now) }) {
		t.pending = true
		return true
	}
	return false
}

// Defer records that work became ready that no new push covers: the next
// push to end looks again.
func (t *Tracker) Defer() { t.pending = true }

// Start decides the pushes to start at now for what is ready, records
// them in flight, and returns their ids (none: nothing to push, or the
// pushes in flight suffice).
//
// Jobs: a backlog wants one executor per PerExecutor ready jobs, up to
// MaxParallel. Each push that will claim what is ready counts as one of
// them: one that has not claimed jobs yet (its first claim sees them),
// one whose claim is held (it lingers: its host wakes it), one whose last
// claim left work (it claims again as its slots free). A finishing push
// counts for nothing: work ready now gets a push of its own, up to
// MaxInFlight in all. Reaction deliveries: a push that named reactions and
// has not claimed them yet, or whose last claim left more, covers them.
// Work covered only by pushes that may miss it (a claiming push's claims,
// a held claim its host may just have given up) or left waiting by the
// bounds is pending: the next end looks again.
func (t *Tracker) Start(now int64, r Ready) []string {
	t.expire(now)
	if t.retryAt != 0 && now < t.retryAt {
		t.pending = true
		return nil
	}
	t.retryAt = 0
	if r.empty() {
		t.pending = false // nothing is left to look for
		return nil
	}
	want, unsure := 0, false
	if r.Jobs > 0 {
		covering := 0
		for _, f := range t.flights {
			switch {
			case !f.jobsClaimed:
				covering++
			case f.lingers(now) || f.jobsMore:
				covering++
				unsure = true
			}
		}
		want = 1
		if per := max(t.Policy.PerExecutor, 1); r.Jobs > per {
			want = int((r.Jobs + per - 1) / per)
		}
		want = min(want, t.Policy.MaxParallel) - covering
	}
	if r.Reactions > 0 && !slices.ContainsFunc(t.flights, Flight.seesReactions) {
		want = max(want, 1)
	}
	bounded := min(want, t.Policy.MaxInFlight-len(t.flights))
	if bounded <= 0 {
		if unsure || want > 0 {
			t.pending = true
		}
		return nil
	}
	want = bounded
	t.pending = false // the new pushes see everything ready by then
	ids := make([]string, want)
	for i := range ids {
		t.seq++
		ids[i] = t.prefix + strconv.FormatInt(t.seq, 10)
		t.flights = append(t.flights, Flight{ID: ids[i], Started: now, Expires: now + t.Policy.TTL, reactions: r.Reactions > 0})
	}
	return ids
}

// Claimed records a claim made for push id (of jobs, or of reaction
// deliveries): more says it took all it asked for and left work it could
// have taken. A claim for a push no longer in flight changes nothing.
func (t *Tracker) Claimed(id string, jobs, more bool) {
	i := slices.IndexFunc(t.flights, func(f Flight) bool { return f.ID == id })
	if i < 0 {
		return
	}
	f := &t.flights[i]
	if jobs {
		f.jobsClaimed, f.jobsMore, f.lingering = true, more, false
	} else {
		f.reactionsClaimed, f.reactionsMore = true, more
	}
}

// Lingers records that a claim of jobs for push id, the push's hold seq,
// found nothing at now and is held by its host for waitMs: the push waits
// for more, and covers jobs that become ready until the hold ends. The
// host asks a held claim again whenever a commit may have made work ready:
// the first time a hold finds nothing starts it, and a new seq is a new
// hold.
func (t *Tracker) Lingers(id string, seq, now, waitMs int64) {
	i := slices.IndexFunc(t.flights, func(f Flight) bool { return f.ID == id })
	if i < 0 {
		return
	}
	f := &t.flights[i]
	if !f.lingering || f.lingerSeq != seq {
		f.lingering, f.lingerUntil, f.lingerSeq = true, now+waitMs, seq
	}
	f.jobsClaimed, f.jobsMore = true, false
}

// End ends a push in flight (how: api.PushDrained, api.PushBudgetSpent or api.PushFailed); ended
// is false if it was not in flight (ended twice, or expired), and nothing
// changes. again says the runtime should count what is ready and Start:
// the executor left work, or work became ready while it ran that no push
// took. A failed push is retried after a backoff that doubles with each
// failure in a row.
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
