package host

import (
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

func (t *tenant) finishChan() <-chan struct{} {
	t.wakeMu.Lock()
	defer t.wakeMu.Unlock()
	return t.finish
}

// finished wakes the held waits for jobs to end.
func (t *tenant) finished() {
	t.wakeMu.Lock()
	defer t.wakeMu.Unlock()
	close(t.finish)
	t.finish = make(chan struct{})
}

// hold enters w among the held claims, waiting for the work header (the
// module's stile-hold) describes.
func (t *tenant) hold(w *waiter, header string) {
	w.hold, w.any = do.Hold{}, false
	if h, ok := do.ParseHold(header); ok {
		w.hold = h
	} else {
		w.any = true
	}
	select {
	case <-w.woken: // a wake of an earlier hold is spent
	default:
	}
	t.heldMu.Lock()
	defer t.heldMu.Unlock()
	if _, ok := t.held[w]; !ok {
		t.held[w] = struct{}{}
		t.heldBy[w.token]++
	}
}

// unhold takes w out of the held claims, if it is one.
func (t *tenant) unhold(w *waiter) {
	t.heldMu.Lock()
	defer t.heldMu.Unlock()
	if _, ok := t.held[w]; !ok {
		return
	}
	delete(t.held, w)
	if t.heldBy[w.token]--; t.heldBy[w.token] <= 0 {
		delete(t.heldBy, w.token)
	}
}

// heldCounts are the claims held for the tenant and for token.
func (t *tenant) heldCounts(token string) (all, mine int) {
	t.heldMu.Lock()
	defer t.heldMu.Unlock()
	return len(t.held), t.heldBy[token]
}

// wakeHeld signals the held claims that the work header (the module's
// stile-woke) describes may satisfy; without one, every held claim.
func (t *tenant) wakeHeld(header string) {
	woke, targeted := do.ParseHold(header)
	t.heldMu.Lock()
	defer t.heldMu.Unlock()
	for w := range t.held {
		if targeted && !w.any && !w.hold.Matches(woke) {
			continue
		}
		select {
		case w.woken <- struct{}{}:
		default:
		}
	}
}
