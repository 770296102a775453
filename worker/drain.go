package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stile-run/stile/api"
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
// claims without waiting, runs what it claims on the worker's slots, and
// claims again as slots free up, until nothing is left to claim or the
// budget is near its end; it waits for the handlers it started, then ends
// the push (api.PushDrained, or api.PushBudgetSpent so the tenant pushes
// again at once). The claim, heartbeat, report and settlement are those of
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
	return w.drain(ctx, hctx, cancelHandlers, p, b)
}

// drain is Drain with the handlers' context given: Run's feed gives its
// own, which its shutdown grace cancels.
func (w *Worker) drain(ctx, hctx context.Context, cancelHandlers context.CancelCauseFunc, p api.PushRequest, b Budget) (DrainResult, error) {
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
		free := cap(w.slots) - len(w.slots)
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
		if slots := cap(w.slots) - len(w.slots); len(kinds) > 0 && slots < minClaim(cap(w.slots)) && running.Running() > 0 {
			// A few slots free while this drain's own jobs still run: claim
			// jobs once more are free (what the budget allows is not a slot
			// count: near its end this would wait for every job), not a job or two per request (several
			// drains sharing the slots would otherwise split them into
			// claims of one). Its own last job ending wakes it too, should
			// another drain take the freed slots' signal.
			select {
			case <-w.freed:
			case <-running.ended:
			case <-ctx.Done():
			}
			continue
		}
		got := 0
		var err error
		if n := 0; len(kinds) > 0 {
			if n = w.takeFree(free); n == 0 {
				continue // taken meanwhile: look again
			}
			resp, cerr := ten.Claim(ctx, api.ClaimRequest{Worker: w.cfg.ID, Queues: w.cfg.Queues, Kinds: kinds, Limit: n})
			received := w.cfg.Clock.Now()
			w.releaseSlots(n - len(resp.Jobs))
			if cerr == nil {
				w.startJobs(hctx, ten, resp, received, running)
				got += len(resp.Jobs)
				res.Jobs += len(resp.Jobs)
			}
			err = cerr
		}
		if len(names) > 0 && err == nil && cap(w.slots) > len(w.slots) && (b.Subrequests == 0 || b.Used()+4 < b.Subrequests) {
			resp, cerr := ten.ClaimReactions(ctx, api.ReactionClaimRequest{Worker: w.cfg.ID, Handlers: names, Limit: api.MaxDeliveries})
			if cerr == nil {
				if !w.startRuns(ctx, hctx, ten, resp, w.cfg.Clock.Now(), running) {
					res.End = api.PushBudgetSpent
				}
				got += len(resp.Deliveries)
				res.Deliveries += len(resp.Deliveries)
			}
			err = cerr
		}
		if err != nil {
			failures++
			w.log.Warn("claim for a push failed", "tenant", p.Tenant, "push", p.ID, "err", err)
			if failures >= 3 {
				running.Wait()
				return res, fmt.Errorf("drain %s for push %s: %w: %w", p.Tenant, p.ID, ErrUnreachable, err)
			}
			continue
		}
		failures = 0
		if got == 0 {
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
			case <-ctx.Done():
			}
		}
	}
	running.Wait()
	if p.ID == "" {
		return res, nil // work found in the directory, not pushed
	}
	ectx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ten.EndPush(ectx, p.ID, res.End, ""); err != nil {
		// The push expires instead: the tenant pushes again after its TTL.
		w.log.Warn("could not end the push", "tenant", p.Tenant, "push", p.ID, "err", err)
	}
	return res, nil
}

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

// waitFreed waits until a slot is given back, or ctx ends.
func (w *Worker) waitFreed(ctx context.Context) {
	select {
	case <-w.freed:
	case <-ctx.Done():
	}
}

// feed is Run without a tenant list: it long-polls the directory for
// tenants that became ready and drains each, one drain per tenant at a
// time (a tenant that becomes ready again while drained is drained once
// more), until ctx ends.
func (w *Worker) feed(ctx, hctx context.Context, cancelHandlers context.CancelCauseFunc, running *runGroup) {
	var mu sync.Mutex
	draining := map[string]bool{} // tenant -> ready again while drained
	start := func(tenant string) {
		mu.Lock()
		defer mu.Unlock()
		if again, busy := draining[tenant]; busy {
			if !again {
				draining[tenant] = true
			}
			return
		}
		draining[tenant] = false
		running.add()
		go func() {
			defer running.done()
			for {
				if _, err := w.drain(ctx, hctx, cancelHandlers, api.PushRequest{Tenant: tenant}, Budget{}); err != nil {
					w.log.Warn("drain failed", "tenant", tenant, "err", err)
				}
				mu.Lock()
				if !draining[tenant] || ctx.Err() != nil {
					delete(draining, tenant)
					mu.Unlock()
					return
				}
				draining[tenant] = false
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
