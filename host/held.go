package host

import (
	"context"
	"sync"

	"github.com/stile-run/stile/do"
)

// waiter is one held claim: the work it waits for (hold; any: whatever
// wakes), its token, and the channel a matching wake signals.
type waiter struct {
	hold  do.Hold
	any   bool
	token string
	woken chan struct{} // buffered: a wake is never lost, nor blocks
}

// holds are a tenant's requests held by the host (Manager.Do): its
// claims held for work, and its waits for jobs to end.
type holds struct {
	finishMu sync.Mutex
	finish   chan struct{} // closed and replaced to wake held waits for jobs

	// held are the claims held for the tenant, and by their count for each
	// token. A claim is entered by the call that answered it empty, with
	// the tenant's t.mu held, so a later call's wake never misses it.
	mu   sync.Mutex
	held map[*waiter]struct{}
	by   map[string]int
}

// finishChan is the channel the next finished closes: taken before a
// call, it misses no job that ends after.
func (h *holds) finishChan() <-chan struct{} {
	h.finishMu.Lock()
	defer h.finishMu.Unlock()
	return h.finish
}

// finished wakes the held waits for jobs to end.
func (h *holds) finished() {
	h.finishMu.Lock()
	defer h.finishMu.Unlock()
	close(h.finish)
	h.finish = make(chan struct{})
}

// hold enters w among the held claims, waiting for the work header (the
// module's stile-hold) describes.
func (h *holds) hold(w *waiter, header string) {
	w.hold, w.any = do.Hold{}, false
	if hold, ok := do.ParseHold(header); ok {
		w.hold = hold
	} else {
		w.any = true
	}
	select {
	case <-w.woken: // a wake of an earlier hold is spent
	default:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.held[w]; !ok {
		h.held[w] = struct{}{}
		h.by[w.token]++
	}
}

// unhold takes w out of the held claims, if it is one.
func (h *holds) unhold(w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.held[w]; !ok {
		return
	}
	delete(h.held, w)
	if h.by[w.token]--; h.by[w.token] <= 0 {
		delete(h.by, w.token)
	}
}

// counts are the claims held for the tenant and for token.
func (h *holds) counts(token string) (all, mine int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held), h.by[token]
}

// wake signals the held claims that the work header (the module's
// stile-woke) describes may satisfy; without one, every held claim.
func (h *holds) wake(header string) {
	woke, targeted := do.ParseHold(header)
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.held {
		if targeted && !w.any && !w.hold.Matches(woke) {
			continue
		}
		select {
		case w.woken <- struct{}{}:
		default:
		}
	}
}

// callHeld calls t for req until its answer is not one to hold (Do): a
// claim that found nothing and asked to wait (Response.HoldMs) is held
// here, and called again when a call of the tenant wakes it, when the
// tenant's alarm comes due, or finally when its wait runs out.
func (m *Manager) callHeld(ctx context.Context, t *tenant, req do.Request, creates bool) (do.Response, error) {
	w := &waiter{token: tokenOf(req.Headers), woken: make(chan struct{}, 1)}
	defer t.holds.unhold(w)
	var deadline int64
	for {
		finish := t.holds.finishChan() // before the call, so no wake-up is missed
		resp, err := m.call(ctx, t, req, w, creates)
		if err != nil {
			return do.Response{}, err
		}
		if resp.HoldMs <= 0 {
			return resp, nil
		}
		now := m.cfg.Clock.Now()
		if deadline == 0 {
			deadline = now + resp.HoldMs
		}
		if now >= deadline {
			return resp, nil
		}
		until := deadline
		if at := t.alarmAt.Load(); at > 0 && at < until {
			until = max(at, now+1)
		}
		wake := (<-chan struct{})(w.woken)
		if resp.Flags&do.FlagHoldFinished != 0 {
			wake = finish // a wait for a job to end
		}
		select {
		case <-wake:
		case <-m.cfg.Clock.After(until):
		case <-ctx.Done():
			return resp, nil
		case <-m.stop:
			return resp, nil
		}
		if ctx.Err() != nil {
			// The caller left as the wake came (select picks either): a
			// claim made now would hold jobs no one receives until their
			// leases end.
			return resp, nil
		}
	}
}

// tokenOf is whose held claims a request's count among: its token's, else
// its principal's.
func tokenOf(hs do.Headers) string {
	if id := hs.Get(do.HeaderTokenID); id != "" {
		return id
	}
	return hs.Get(do.HeaderPrincipal)
}
