package host

import (
	"context"
	"errors"
	"sync"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
)

// watchBuffer is how many changes a watcher may fall behind before the
// host drops them; the next one it reads then says More.
const watchBuffer = 64

// watchers are a tenant's live watches (GET …/watch): each receives the
// changes (stile-changes) of every later call of the tenant that its
// filter lets through.
type watchers struct {
	mu  sync.Mutex
	set map[*Watcher]struct{}
}

// Watcher is one watch of a tenant. Next returns its changes in order;
// Close ends it.
type Watcher struct {
	filter api.WatchFilter
	c      chan api.Change
	ws     *watchers
	stop   <-chan struct{} // the manager's: closing it ends the watch
	ended  chan struct{}   // closed when the tenant was erased

	mu   sync.Mutex
	lost bool // changes were dropped: the next one says More
}

// Watch starts a watch of tenant name's changes that filter lets through
// (the module's answer to the watch request, which checked the caller's
// role and the filter). Close it when done.
func (m *Manager) Watch(name string, filter api.WatchFilter) *Watcher {
	t := m.tenant(name)
	w := &Watcher{filter: filter, c: make(chan api.Change, watchBuffer), ws: &t.watchers, stop: m.stop, ended: make(chan struct{})}
	t.watchers.mu.Lock()
	if t.watchers.set == nil {
		t.watchers.set = map[*Watcher]struct{}{}
	}
	t.watchers.set[w] = struct{}{}
	t.watchers.mu.Unlock()
	return w
}

// ErrErased ends the watches of a tenant that was erased.
var ErrErased = errors.New("host: the tenant was erased")

// Next waits for the watch's next change, ctx's end, the manager's
// (ErrClosed) or the tenant's erasure (ErrErased).
func (w *Watcher) Next(ctx context.Context) (api.Change, error) {
	select {
	case c := <-w.c:
		w.mu.Lock()
		if w.lost {
			c.More, w.lost = true, false
		}
		w.mu.Unlock()
		return c, nil
	case <-ctx.Done():
		return api.Change{}, ctx.Err()
	case <-w.stop:
		return api.Change{}, ErrClosed
	case <-w.ended:
		return api.Change{}, ErrErased
	}
}

// Close ends the watch.
func (w *Watcher) Close() {
	w.ws.mu.Lock()
	delete(w.ws.set, w)
	w.ws.mu.Unlock()
}

// send gives each watcher the part of a call's changes (the stile-changes
// header of its response) that its filter lets through. It never waits:
// a watcher that fell behind loses changes and learns it (More).
func (ws *watchers) send(header string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if len(ws.set) == 0 {
		return
	}
	c, err := api.DecodeChange([]byte(header))
	if err != nil {
		c = api.Change{More: true} // a change it cannot read: watchers read again
	}
	for w := range ws.set {
		part, ok := c.For(w.filter)
		if !ok {
			continue
		}
		select {
		case w.c <- part:
		default:
			w.mu.Lock()
			w.lost = true
			w.mu.Unlock()
		}
	}
}

// any says whether the tenant has watches (its calls then keep changes).
func (ws *watchers) any() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.set) > 0
}

// erased ends every watch of the tenant: nothing of it is left to follow.
func (ws *watchers) erased() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.set {
		close(w.ended)
		delete(ws.set, w)
	}
}

// changed sends a response's changes to the tenant's watchers.
func (t *tenant) changed(resp do.Response) {
	if h := resp.Headers.Get(do.HeaderChanges); h != "" {
		t.watchers.send(h)
	}
}
