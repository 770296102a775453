package runtime

import (
	"slices"
	"strconv"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/runtime/internal/push"
)

// Pushes: when a commit makes work ready, the module asks its transport to
// wake an executor (the stile-push response header), if the transport said
// it can (the stile-executor request header). The module decides how many
// and when (package push); the transport only delivers, outside the
// storage transaction, and ends a push it could not deliver with
// api.PushFailed. An executor ends its push when it stops claiming.
// docs/DESIGN.md, "Why push", says why and what it costs.

// PushPolicy bounds a tenant's pushes to executors; the zero value of a
// field keeps its default (see App.Pushes).
type PushPolicy struct {
	// MaxParallel is the most pushes started for one tenant's backlog, the
	// pushes in flight that will claim it counted: how many executors a
	// deep backlog gets (default 4).
	MaxParallel int
	// MaxInFlight is the most pushes in flight for one tenant, those that
	// only finish the jobs they took included (default 16, at least
	// MaxParallel).
	MaxInFlight int
	// PerExecutor is how many ready jobs warrant one more executor
	// (default 100).
	PerExecutor int64
	// TTL is how long a push may stay in flight without its executor
	// ending it; then the tenant pushes again (default 35 s).
	TTL int64
	// RetryMin and RetryMax bound the backoff after a push the transport
	// could not deliver (default 1 s to 60 s).
	RetryMin, RetryMax int64
	// Linger is how long an executor that ran out of work holds a claim
	// for more jobs before it ends its push: jobs enqueued meanwhile start
	// at once, as a long-polling worker's would, with no push of their own
	// (default 1 s; negative: none). The tenant's object is active while a
	// claim is held: at most Linger per push.
	Linger int64
}

// Pushes sets the module's push policy (times in milliseconds).
func (a *App) Pushes(p PushPolicy) *App {
	d := push.DefaultPolicy
	pick := func(v, def int64) int64 {
		if v > 0 {
			return v
		}
		return def
	}
	if p.MaxParallel > 0 {
		d.MaxParallel = p.MaxParallel
	}
	if p.MaxInFlight > 0 {
		d.MaxInFlight = p.MaxInFlight
	}
	d.MaxInFlight = max(d.MaxInFlight, d.MaxParallel)
	d.PerExecutor, d.TTL = pick(p.PerExecutor, d.PerExecutor), pick(p.TTL, d.TTL)
	d.RetryMin, d.RetryMax = pick(p.RetryMin, d.RetryMin), pick(p.RetryMax, d.RetryMax)
	d.RetryMax = max(d.RetryMax, d.RetryMin)
	switch {
	case p.Linger < 0:
		d.Linger = 0
	case p.Linger > 0:
		d.Linger = min(p.Linger, api.MaxWait.Milliseconds())
	}
	a.pushPolicy = &d
	return a
}

func (a *App) pushes() push.Policy {
	if a.pushPolicy != nil {
		return *a.pushPolicy
	}
	return push.DefaultPolicy
}

// tracker is the tenant's push tracker, made on first use; its ids start
// with the instance's start time, so an id of a lost instance is never
// reused.
func (t *Tenant) tracker(now int64) *push.Tracker {
	if t.executors.pushes == nil {
		t.executors.pushes = push.New(t.app.pushes(), "p"+strconv.FormatInt(now, 36)+"-")
	}
	return t.executors.pushes
}

// maxPushNames bounds the bytes of kind and reaction names in a push, so
// it fits a frame header (do.MaxHeaderValue).
const maxPushNames = 640

// planPushes decides, after a committed request, the pushes its response
// asks the transport to deliver; nil for none. jobsWoke and reactionsWoke
// say the commit made work ready, one that it made one job ready (a
// single enqueue); again that an ended push asked to look again. What is
// ready is read only when a push could start, and only through what is
// ready (Store.Ready, inboxstore.Claimable): a tenant keeping a day of
// finished jobs decides as fast as a fresh one.
//
// idle says it counted what is ready and found nothing: the directory hears
// the tenant is idle, as from a claim that found nothing. A push that ends
// for its budget just as its work runs out makes no such claim, and the
// directory would list the tenant as ready until some claim did.
func (t *Tenant) planPushes(now int64, jobsWoke, reactionsWoke, again, one bool) (_ do.Header, ok, idle bool, _ error) {
	tr := t.tracker(now)
	woke, due := jobsWoke || reactionsWoke, tr.Due(now)
	if !woke && !again && !due {
		return do.Header{}, false, false, nil
	}
	if tr.Look(now) == push.Blocked {
		if woke {
			tr.Defer()
		}
		return do.Header{}, false, false, nil
	}
	if one && !again && !due && tr.TakesOne(now) {
		// A push about to claim, or lingering, takes the job: a steady
		// trickle of enqueues costs no count of what is ready.
		return do.Header{}, false, false, nil
	}
	jobs, counts, err := t.store.Ready(now, api.MaxPushCount)
	if err != nil {
		return do.Header{}, false, false, err
	}
	var reactions []string
	// Reactions are counted when they may have become ready: a push names
	// them only then, and its executor claims deliveries only then.
	if jobs == 0 || reactionsWoke || again || due {
		for _, h := range t.app.handlers() {
			ok, err := t.reactions.Claimable(now, h)
			if err != nil {
				return do.Header{}, false, false, err
			}
			if ok {
				reactions = append(reactions, h.Name)
			}
		}
	}
	ids := tr.Start(now, push.Ready{Jobs: jobs, Reactions: len(reactions)})
	if len(ids) == 0 {
		return do.Header{}, false, jobs == 0 && len(reactions) == 0 && !woke, nil
	}
	t.meter.pending.Pushed(len(ids), now)
	var kinds []string
	for _, c := range counts {
		if !slices.Contains(kinds, c.Kind) {
			kinds = append(kinds, c.Kind)
		}
	}
	slices.Sort(kinds)
	p := api.Push{Tenant: t.name, IDs: ids, Jobs: jobs, Kinds: fitNames(kinds), Reactions: fitNames(reactions), LingerMs: tr.Policy.Linger}
	return do.Header{Name: do.HeaderPush, Value: string(p.AppendJSON(nil))}, true, false, nil
}

// claimedFor records a claim made for a push (its id in the claim): more
// says the claim took all it asked for and left work it could take. A
// claim that took fewer found everything it could: its push only finishes
// what it took from then on.
func (t *Tenant) claimedFor(pushID string, jobs, more bool) {
	if pushID != "" && t.executors.pushes != nil {
		t.executors.pushes.Claimed(pushID, jobs, more)
	}
}

// fitNames keeps the names that fit maxPushNames bytes between them.
func fitNames(names []string) []string {
	n := 0
	for i, s := range names {
		if n += len(s) + 3; n > maxPushNames/2 {
			return names[:i]
		}
	}
	return names
}

// validPush refuses a claim's push id that cannot be one.
func validPush(id string) *api.Error {
	if id != "" && !api.ValidName(id) {
		return api.Refuse(api.CodeInvalidRequest, "push %q is invalid: pass the id of the push being drained (api.PushRequest.ID)", id)
	}
	return nil
}

// ---- routes ----

func (t *Tenant) listPushes() route {
	return func(now int64) (result, error) {
		tr := t.tracker(now)
		st := api.PushStatus{InFlight: []api.PushFlight{}, Pending: tr.Pending()}
		for _, f := range tr.Flights() {
			st.InFlight = append(st.InFlight, api.PushFlight{ID: f.ID, StartedAt: ts(f.Started), ExpiresAt: ts(f.Expires), State: string(f.State(now))})
		}
		at, failures := tr.Retry()
		st.RetryAt, st.Failures = tsPtr(at), failures
		return result{status: statusOK, body: st.AppendJSON}, nil
	}
}

func (t *Tenant) pushDone(c *call, id string, body []byte) (route, *api.Error) {
	if !api.ValidName(id) {
		return nil, api.Refuse(api.CodeInvalidRequest, "push id %q is invalid: use %s", id, api.NameRule)
	}
	r, err := api.DecodePushDone(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	switch r.End {
	case api.PushDrained, api.PushBudgetSpent, api.PushFailed:
	default:
		return nil, api.Refuse(api.CodeInvalidRequest, "end %q is not one of %q, %q, %q", r.End, api.PushDrained, api.PushBudgetSpent, api.PushFailed)
	}
	return func(now int64) (result, error) {
		ended, again := t.tracker(now).End(now, id, r.End)
		c.pushAgain = again
		return result{status: statusOK, body: api.PushDoneResponse{Ended: ended}.AppendJSON}, nil
	}, nil
}
