package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
)

// Budget bounds what one executor invocation may spend (a Worker
// invocation on Cloudflare has a time limit after its response and a
// subrequest limit).
type Budget struct {
	// Until is when the invocation must be over (zero: no limit). Drain
	// stops claiming when less than Reserve is left, and cancels handlers
	// still running at Until with ErrShutdown (their jobs are released, no
	// retry spent).
	Until time.Time
	// Reserve is the time kept for running handlers to finish and report.
	// Default: a fifth of the time left when Drain starts, at most 5 s.
	Reserve time.Duration
	// Subrequests is how many requests the invocation may make, the
	// worker's and its handlers' (zero: no limit). Drain counts two per job
	// it starts (a heartbeat and the report) and keeps three for its last
	// claims and for ending the push.
	Subrequests int64
	// Used counts the requests made so far; default: the worker's own
	// since Drain started.
	Used func() int64
}

// DrainResult is what one Drain did.
type DrainResult struct {
	Jobs       int    // jobs started
	Deliveries int    // reaction deliveries claimed
	End        string // how the push ended: api.PushDrained or api.PushBudgetSpent
}

// ErrUnreachable is returned by Drain when it could not reach the tenant.
var ErrUnreachable = errors.New("the tenant could not be reached")

// Drain runs a tenant's ready work for one push (api.PushRequest; with no
// ID, work the worker found in the directory, and no push to end): it
// claims without waiting (every queue, the kinds and reactions it has
// handlers for, deliveries only for a push that names reactions), runs
// what it claims on the worker's slots, and claims again as slots free up.
// Once its claims take all there is, a pushed drain lingers: it holds one
// claim for the push's LingerMs, so a job enqueued meanwhile starts at
// once, and lingers again whenever some of its work ends. It stops when
// nothing is left and its linger passed, or when the budget is near its
// end; it waits for the handlers it started, then ends the push
// (api.PushDrained, or api.PushBudgetSpent so the tenant pushes again at
// once). The claim, heartbeat, report and settlement are those of
// Run: a Drain killed midway is fenced like any stalled worker (its leases
// run out, the tenant's alarm makes the work ready and pushes again).
func (w *Worker) Drain(ctx context.Context, p api.PushRequest, b Budget) (DrainResult, error) {
	if !api.ValidTenant(p.Tenant) {
		return DrainResult{}, fmt.Errorf("drain: tenant %q: %s", p.Tenant, api.InvalidTenant.Message)
	}
	kinds, names := w.kinds(), w.reactionNames()
	if len(kinds) == 0 && len(names) == 0 {
		return DrainResult{}, errors.New("worker: no handlers registered")
	}
	if b.Used == nil && b.Subrequests > 0 {
		start := w.requests.Load()
		b.Used = func() int64 { return w.requests.Load() - start }
	}
	if !b.Until.IsZero() && b.Reserve <= 0 {
		b.Reserve = min(time.Until(b.Until)/5, 5*time.Second)
	}
	hctx, cancelHandlers := context.WithCancelCause(context.Background())
	defer cancelHandlers(nil)
	return w.drain(ctx, hctx, cancelHandlers, p, b, drainMode{})
}

// drainMode is how a drain runs what it claims: by default on the
// worker's slots, in goroutines of their own, claiming as many as slots are
// free; inline (WorkOne, WorkAll) one at a time in the calling goroutine,
// a job if any is ready, else a delivery, until max ran (0: no bound), each
// recorded in ran.
type drainMode struct {
	inline bool
	max    int
	ran    *[]Ran
}

// drain is Drain with the handlers' context given: Run's feed gives its
// own, which its shutdown grace cancels.
func (w *Worker) drain(ctx, hctx context.Context, cancelHandlers context.CancelCauseFunc, p api.PushRequest, b Budget, mode drainMode) (DrainResult, error) {
	kinds, names := w.kinds(), w.reactionNames()
	ten := w.cl.Tenant(p.Tenant)
	if !b.Until.IsZero() {
		stop := time.AfterFunc(time.Until(b.Until), func() { cancelHandlers(ErrShutdown) })
		defer stop.Stop()
	}
	var res DrainResult
	running := newRunGroup()
	res.End = api.PushDrained
	failures := 0
	// hold is how long the next claim of jobs is held (the push lingers:
	// linger), and held says the last one was.
	var hold time.Duration
	held := false
	lingers := int64(0) // the holds so far: each held claim names its own
	defer func() {
		if hold > 0 {
			w.lingering.Add(-1) // a linger that never claimed
		}
	}()
	for {
		if ctx.Err() != nil {
			res.End = api.PushBudgetSpent // stopped early: the rest is pushed again
			break
		}
		// What the budget still allows: time to claim, and two requests
		// per job to start beyond those already running.
		if !b.Until.IsZero() && time.Until(b.Until) < b.Reserve {
			res.End = api.PushBudgetSpent
			break
		}
		if mode.inline && mode.max > 0 && len(*mode.ran) >= mode.max {
			break
		}
		// The drain's jobs that are about to end end first (on one thread:
		// yieldToReady), so that it claims for all the slots they free.
		yieldToReady()
		free := cap(w.slots) - len(w.slots)
		if mode.inline {
			free = min(free, 1)
		}
		if b.Subrequests > 0 {
			free = min(free, int((b.Subrequests-b.Used()-2*int64(len(w.slots))-3)/2))
		}
		if free <= 0 {
			if len(w.slots) == 0 {
				res.End = api.PushBudgetSpent
				break
			}
			w.waitFreed(ctx)
			continue
		}
		if w.cfg.Pacer != nil && !mode.inline && len(kinds) > 0 {
			// The pace bounds what starts now; with nothing of the
			// worker's running, one job may always start.
			n := w.cfg.Pacer.Pace(len(w.slots))
			if n <= 0 && len(w.slots) > 0 {
				w.waitEnded(ctx, running)
				continue
			}
			free = min(free, max(n, 1))
		}
		if slots := cap(w.slots) - len(w.slots); len(kinds) > 0 && slots < minClaim(cap(w.slots)) && running.Running() > 0 {
			// A few slots free while this drain's own jobs still run: claim
			// jobs once more are free (what the budget allows is not a slot
			// count: near its end this would wait for every job), not a job or two per request (several
			// drains sharing the slots would otherwise split them into
			// claims of one). Its own last job ending wakes it too, should
			// another drain take the freed slots' signal.
			w.waitEnded(ctx, running)
			continue
		}
		got := 0
		short := true // every claim of this round took fewer than it asked for
		var err error
		if n := 0; len(kinds) > 0 {
			if hold > 0 {
				// A lingering claim holds a few slots, not all of them: the
				// worker's other drains need theirs. Two, so that the usual
				// job that ends a linger comes back short (the drain lingers
				// again at once), and two at once are a burst to claim for.
				free = min(free, lingerSlots)
			}
			if n = w.takeFree(free); n == 0 {
				continue // taken meanwhile: look again
			}
			// The push's id tells the tenant whether this push still claims
			// (pushes.go in package runtime); every queue, so a kind runs
			// whatever queue it was put on.
			req := api.ClaimRequest{Worker: w.cfg.ID, Queues: w.cfg.Queues, Kinds: kinds, Limit: n, Push: p.ID}
			if hold > 0 {
				lingers++
				req.WaitMs, req.Linger = hold.Milliseconds(), lingers
			}
			resp, cerr := ten.Claim(ctx, req)
			if held = hold > 0; held {
				w.lingering.Add(-1)
				hold = 0
			}
			received := w.cfg.Clock.Now()
			if mode.inline {
				// Its slot is held while it runs here, and given back after.
				for _, c := range resp.Jobs {
					rep := w.run(hctx, ten, c, received.Add(c.LeaseUntil.Sub(resp.Now)))
					*mode.ran = append(*mode.ran, Ran{Tenant: p.Tenant, JobID: c.ID, Kind: c.Kind, Outcome: rep.Outcome, Error: rep.Error, Output: rep.Output})
				}
				w.releaseSlots(n)
			} else {
				w.releaseSlots(n - len(resp.Jobs))
			}
			if cerr == nil {
				if !mode.inline {
					w.startJobs(hctx, ten, resp, received, running)
				}
				got += len(resp.Jobs)
				res.Jobs += len(resp.Jobs)
				short = short && len(resp.Jobs) < n && !resp.More
			}
			err = cerr
		}
		wantDeliveries := len(names) > 0 && (p.ID == "" || len(p.Reactions) > 0) && err == nil && !(mode.inline && got > 0)
		if wantDeliveries && b.Subrequests > 0 && b.Used()+4 >= b.Subrequests {
			// Too few requests left for deliveries: the push ends with
			// work left, and the tenant pushes again at once.
			res.End, wantDeliveries = api.PushBudgetSpent, false
		}
		if wantDeliveries && cap(w.slots) > len(w.slots) {
			limit := api.MaxDeliveries
			if mode.inline {
				limit = 1
			}
			resp, cerr := ten.ClaimReactions(ctx, api.ReactionClaimRequest{Worker: w.cfg.ID, Handlers: names, Limit: limit, Push: p.ID})
			if cerr == nil {
				if mode.inline {
					for _, d := range resp.Deliveries {
						s, _ := w.runReaction(hctx, ten, d, w.cfg.Clock.Now().Add(d.LeaseUntil.Sub(resp.Now)))
						*mode.ran = append(*mode.ran, Ran{Tenant: p.Tenant, Reaction: d.Handler, Seq: d.Event.Seq, Outcome: s.Outcome, Error: s.Error, Settlement: &s})
					}
				} else if !w.startRuns(ctx, hctx, ten, resp, w.cfg.Clock.Now(), running) {
					res.End = api.PushBudgetSpent
				}
				got += len(resp.Deliveries)
				res.Deliveries += len(resp.Deliveries)
				short = short && len(resp.Deliveries) < limit
			}
			err = cerr
		}
		if err != nil {
			if !client.Retryable(err) {
				// The tenant refused the claim itself (a kind or reaction the
				// module does not register, say): asking again cannot help.
				// The push ends, so the tenant is not pushed again for it.
				w.log.Error("the tenant refused the claim", "tenant", p.Tenant, "push", p.ID, "err", err)
				running.Wait()
				w.endPush(ten, p, api.PushDrained)
				return res, fmt.Errorf("%s: the claim was refused: %w", drainOf(p), err)
			}
			failures++
			w.log.Warn("claim for a push failed", "tenant", p.Tenant, "push", p.ID, "err", err)
			if failures >= 3 {
				running.Wait()
				return res, fmt.Errorf("%s: %w: %w", drainOf(p), ErrUnreachable, err)
			}
			continue
		}
		failures = 0
		// A pushed drain whose claims all came back short has taken all
		// there was: claiming again at once would find nothing (the tenant
		// pushes again for work that becomes ready meanwhile). It lingers:
		// its next claim is held by the tenant's host until a job comes,
		// or for the push's linger (a held claim with work ready returns at
		// once). Once a linger passed with nothing, it waits for what it
		// runs, and lingers again when some of that ends, before it ends
		// its push. A drain of work found in the directory claims until a
		// claim finds nothing: that claim is what tells the directory the
		// tenant is idle, so that new work is heard of.
		pushed := p.ID != "" && !mode.inline
		if got == 0 || short && pushed {
			if pushed && !(held && got == 0) && len(kinds) > 0 {
				if hold = w.lingerFor(p, b); hold > 0 {
					continue
				}
			}
			if running.Running() == 0 {
				break // drained
			}
			// What this drain runs may make more ready (a retry, a
			// dependent, a dispatched command's reactions): look again when
			// a part of it ends. (Waiting for any slot to free instead made
			// drains of several tenants wake each other in a loop: a claim
			// that finds nothing gives its slots back.)
			select {
			case <-running.ended:
				// It lingers again once some of its work ended: the next
				// claim is held (it returns at once if work is ready).
				held = false
				if pushed && len(kinds) > 0 {
					hold = w.lingerFor(p, b)
				}
			case <-ctx.Done():
			}
		}
	}
	running.Wait()
	w.endPush(ten, p, res.End)
	return res, nil
}

// drainOf names a drain in its errors.
func drainOf(p api.PushRequest) string {
	if p.ID == "" {
		return "work for tenant " + p.Tenant
	}
	return "drain " + p.Tenant + " for push " + p.ID
}

// endPush ends p (none: work found in the directory, or run by WorkOne).
func (w *Worker) endPush(ten *client.Tenant, p api.PushRequest, end string) {
	if p.ID == "" {
		return
	}
	ectx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ten.EndPush(ectx, p.ID, end, ""); err != nil {
		// The push expires instead: the tenant pushes again after its TTL.
		w.log.Warn("could not end the push", "tenant", p.Tenant, "push", p.ID, "err", err)
	}
}

// lingerFor is how long a pushed drain that ran out of work may hold a
// claim for more before it ends its push (0: not at all): the push's
// linger, within what the budget leaves, and only while lingering drains
// hold at most half of the worker's slots (lingerSlots each: the slots are
// shared by every push the worker runs, and lingering tenants must not
// keep them from busy ones). A drain given a duration counts as lingering
// until its claim returns.
func (w *Worker) lingerFor(p api.PushRequest, b Budget) time.Duration {
	d := min(time.Duration(p.LingerMs)*time.Millisecond, api.MaxWait)
	if p.ID == "" || d <= 0 {
		return 0
	}
	if !b.Until.IsZero() {
		d = min(d, time.Until(b.Until)-b.Reserve)
	}
	if b.Subrequests > 0 && b.Used()+4 > b.Subrequests {
		return 0 // the claim, and what a job it brings would need
	}
	if d < lingerMin {
		return 0
	}
	if n := w.lingering.Add(1); int(n) > max(cap(w.slots)/(2*lingerSlots), 1) {
		w.lingering.Add(-1)
		return 0
	}
	return d
}

// lingerMin is the shortest linger worth a held claim.
const lingerMin = 10 * time.Millisecond

// lingerSlots is how many slots a lingering claim holds.
const lingerSlots = 2

// takeFree takes up to n free slots without blocking (at least one, which
// the caller saw free) and at most api.MaxClaim.
func (w *Worker) takeFree(n int) int {
	n = min(n, api.MaxClaim)
	taken := 0
	for taken < n {
		select {
		case w.slots <- struct{}{}:
			taken++
		default:
			return taken
		}
	}
	return taken
}

// minClaim is the fewest free slots a drain claims for while its own
// jobs still run: an eighth of the worker's concurrency.
func minClaim(concurrency int) int { return max(1, concurrency/8) }

// waitEnded waits until a slot is given back or one of the drain's own
// jobs ends (another drain may take the freed slot's signal), or ctx ends.
func (w *Worker) waitEnded(ctx context.Context, running *runGroup) {
	select {
	case <-w.freed:
	case <-running.ended:
	case <-ctx.Done():
	}
}

// waitFreed waits until a slot is given back, or ctx ends.
func (w *Worker) waitFreed(ctx context.Context) {
	select {
	case <-w.freed:
	case <-ctx.Done():
	}
}

// maxFeedDrains bounds the drains of one tenant that feed runs at once.
const maxFeedDrains = 4

// feed is Run without a tenant list: it long-polls the directory for
// tenants that became ready and drains each, until ctx ends. A tenant that
// becomes ready again while drained gets another drain, up to
// maxFeedDrains at once (the directory says a tenant is ready again only
// after a claim of it found nothing: the drains running then only finish
// what they took, and the new work would wait behind them); beyond that,
// it is drained once more when one ends.
func (w *Worker) feed(ctx, hctx context.Context, cancelHandlers context.CancelCauseFunc, running *runGroup) {
	var mu sync.Mutex
	type drains struct {
		n     int
		again bool // ready again while maxFeedDrains ran
	}
	draining := map[string]*drains{}
	start := func(tenant string) {
		mu.Lock()
		defer mu.Unlock()
		d := draining[tenant]
		if d == nil {
			d = &drains{}
			draining[tenant] = d
		}
		if d.n >= maxFeedDrains {
			d.again = true
			return
		}
		d.n++
		running.add()
		go func() {
			defer running.done()
			for {
				if _, err := w.drain(ctx, hctx, cancelHandlers, api.PushRequest{Tenant: tenant}, Budget{}, drainMode{}); err != nil {
					w.log.Warn("drain failed", "tenant", tenant, "err", err)
				}
				mu.Lock()
				if !d.again || ctx.Err() != nil {
					if d.n--; d.n == 0 {
						delete(draining, tenant)
					}
					mu.Unlock()
					return
				}
				d.again = false
				mu.Unlock()
			}
		}()
	}
	backoff := time.Duration(0)
	seq, after := int64(0), ""
	for ctx.Err() == nil {
		// The first query takes every tenant ready now; later ones wait for
		// tenants that become ready after the last change seen.
		resp, err := w.cl.Tenants(ctx, api.TenantsQuery{Ready: true, After: after, Limit: api.MaxTenantsPage,
			AfterSeq: seq, WaitMs: w.cfg.PollWait.Milliseconds()})
		if err != nil {
			if !w.waitAfter(ctx, &backoff, "directory poll failed; retrying", "", err) {
				return
			}
			continue
		}
		backoff = 0
		for _, t := range resp.Tenants {
			start(t.Name)
		}
		if after = resp.Next; after == "" {
			seq = max(seq, resp.Seq)
		}
	}
}
