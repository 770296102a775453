package host

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// engines is what the manager counts of the open engines, for its bounds
// (Config.MaxOpen and MaxMemory) and Stats; each tenant keeps its own
// engine (tenant.go).
type engines struct {
	open      atomic.Int64   // engines open
	memory    atomic.Int64   // their Sized memory
	opened    atomic.Int64   // engines opened, ever
	evictions atomic.Int64   // idle engines closed to stay within MaxOpen or MaxMemory, or by Evict
	closing   sync.WaitGroup // evicted engines closing in the background
}

// Stats is a snapshot of a manager's engines.
type Stats struct {
	Tenants   int   // tenants seen since the manager started
	Open      int   // engines open now
	Memory    int64 // bytes the open engines reported (Sized): at open, and after each call under MaxMemory
	Opens     int64 // engines opened since the start (first uses and reopenings)
	Evictions int64 // idle engines closed to stay within MaxOpen or MaxMemory
}

// IsOpen says whether tenant's engine is open (a request would not need
// to open it).
func (m *Manager) IsOpen(name string) bool {
	t := m.seen(name)
	return t != nil && t.isOpen.Load()
}

// Stats reports the manager's engines.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	n := len(m.mu.tenants)
	m.mu.Unlock()
	e := &m.engines
	return Stats{Tenants: n, Open: int(e.open.Load()), Memory: e.memory.Load(), Opens: e.opened.Load(), Evictions: e.evictions.Load()}
}

func (m *Manager) open(ctx context.Context, t *tenant) error {
	if t.closing != nil {
		<-t.closing // its database must be closed before it opens again
		t.closing = nil
	}
	m.evict(t)
	e, err := m.cfg.Factory.Open(ctx, t.name, t.path, m.cfg.Clock)
	if err != nil {
		return fmt.Errorf("open tenant %s: %w", t.name, err)
	}
	t.engine = e
	t.isOpen.Store(true)
	m.engines.open.Add(1)
	m.engines.opened.Add(1)
	m.measure(t)
	return nil
}

// measure records what t's engine says it holds (t.mu is held); false if
// the engine does not say.
func (m *Manager) measure(t *tenant) bool {
	s, ok := t.engine.(Sized)
	if !ok {
		return false
	}
	n := s.MemoryBytes()
	m.engines.memory.Add(n - t.memory.Swap(n))
	return true
}

// closeEngine closes t's engine (t.mu is held) and forgets its memory.
func (m *Manager) closeEngine(t *tenant) error { return m.detach(t).Close() }

// evictEngine closes an engine that is expected to open again: with
// Evict, if it is Evictable.
func evictEngine(e Engine) error {
	if ev, ok := e.(Evictable); ok {
		return ev.Evict()
	}
	return e.Close()
}

// detach takes t's engine out of the open ones (t.mu is held) and returns
// it, for its caller to close.
func (m *Manager) detach(t *tenant) Engine {
	e := t.engine
	t.engine = nil
	t.isOpen.Store(false)
	m.engines.open.Add(-1)
	m.engines.memory.Add(-t.memory.Swap(0))
	return e
}

// over says whether the open engines exceed a bound (maxMemory 0: none),
// counting one more engine about to open when opening.
func (e *engines) over(opening bool, maxOpen int, maxMemory int64) bool {
	open, mem := e.open.Load(), e.memory.Load()
	if opening {
		open++
		if n := e.open.Load(); n > 0 {
			mem += mem / n // the newcomer costs about the average
		}
	}
	return open > int64(maxOpen) || (maxMemory > 0 && mem > maxMemory)
}

// evict closes least recently used idle engines until the open ones are
// within MaxOpen and MaxMemory, counting t: the tenant about to open (or
// that just grew), whose lock is held and which is never evicted.
func (m *Manager) evict(t *tenant) {
	skip := map[*tenant]bool{}
	for m.engines.over(!t.isOpen.Load(), m.cfg.MaxOpen, m.cfg.MaxMemory) {
		m.mu.Lock()
		var lru *tenant
		for _, o := range m.mu.tenants {
			if o == t || !o.isOpen.Load() || skip[o] {
				continue
			}
			if lru == nil || o.lastUse < lru.lastUse {
				lru = o
			}
		}
		m.mu.Unlock()
		if lru == nil {
			return // nothing idle to close: the bounds are soft
		}
		if !lru.mu.TryLock() {
			skip[lru] = true // busy: the next least recently used
			continue
		}
		if lru.engine != nil {
			// Detached now, closed in the background: recording the usage
			// it counted (a call and a transaction), then closing the
			// instance and its database, take time the request opening
			// another need not wait for (one reopening this tenant waits
			// on closing).
			e, count := m.detach(lru), lru.use.header("flush")
			m.engines.evictions.Add(1)
			done := make(chan struct{})
			lru.closing = done
			m.engines.closing.Go(func() {
				defer close(done)
				m.flushUsage(e, lru.name, count)
				if err := evictEngine(e); err != nil {
					m.log.Warn("closing an idle tenant failed", "tenant", lru.name, "err", err)
				}
			})
		}
		lru.mu.Unlock()
	}
}

// Evict closes tenant's engine if it is open and idle, as the bounds on
// open engines do, and says whether it did; the next request opens a new
// one over the same file. Tests use it to show that what an instance keeps
// in memory is rebuilt from storage.
func (m *Manager) Evict(name string) bool {
	t := m.seen(name)
	if t == nil || !t.mu.TryLock() {
		return false
	}
	defer t.mu.Unlock()
	if t.engine == nil {
		return false
	}
	m.flushUsage(t.engine, name, t.use.header("flush"))
	if err := evictEngine(m.detach(t)); err != nil {
		m.log.Warn("closing a tenant failed", "tenant", name, "err", err)
	}
	m.engines.evictions.Add(1)
	return true
}

// Restarts counts the engines of tenant discarded after a failure.
func (m *Manager) Restarts(name string) int64 { return m.tenant(name).restarts.Load() }
