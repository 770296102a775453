package host

import (
	"context"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/stile-run/stile/do"
)

// alarmSchedule is the manager's side of the tenants' alarms (each tenant
// keeps its own time, tenant.alarmAt): the file that keeps them across
// restarts, and the kick that wakes the scheduler when one moves.
type alarmSchedule struct {
	file *alarmFile
	kick chan struct{} // buffered: a kick is never lost, nor blocks
}

// setAlarm moves t's alarm to at, as its call answered (at is
// do.AlarmUnchanged: it stays).
func (m *Manager) setAlarm(t *tenant, at int64) {
	if at == do.AlarmUnchanged || t.alarmAt.Swap(at) == at {
		return
	}
	if err := m.alarms.file.note(t.name, at); err != nil {
		m.log.Warn("could not persist alarm", "tenant", t.name, "err", err)
	}
	select {
	case m.alarms.kick <- struct{}{}:
	default:
	}
}

// AlarmAt is the tenant's alarm time in Unix ms (0: none).
func (m *Manager) AlarmAt(name string) int64 { return m.tenant(name).alarmAt.Load() }

// FireDue runs the alarm of every tenant whose alarm time has come, as
// many tenants at once as there are cores, and returns how many ran once
// all have. A failed alarm is retried with a growing delay, as Durable
// Objects retry theirs.
func (m *Manager) FireDue(ctx context.Context) int {
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	var due []*tenant
	for _, t := range m.mu.tenants {
		if at := t.alarmAt.Load(); at > 0 && at <= now {
			due = append(due, t)
		}
	}
	m.mu.Unlock()
	// Tenants' alarms run in parallel, a core each: one tenant's long
	// alarm (a retention slice, a projection catching up) does not hold
	// back the others'.
	sem := make(chan struct{}, max(1, goruntime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for _, t := range due {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := m.Do(ctx, t.name, do.Request{Kind: do.KindAlarm}); err != nil {
				n := t.failures.Add(1)
				retry := now + min(int64(2000)<<min(n-1, 5), 60_000)
				t.alarmAt.Store(retry)
				m.log.Warn("alarm failed; retrying", "tenant", t.name, "attempt", n, "err", err)
				return
			}
			t.failures.Store(0)
		})
	}
	wg.Wait()
	if len(due) > 0 {
		if err := m.alarms.file.afterFiring(len(due), m.alarmSnapshot); err != nil {
			m.log.Warn("could not persist alarms", "err", err)
		}
	}
	return len(due)
}

func (m *Manager) alarmSnapshot() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.mu.tenants))
	for name, t := range m.mu.tenants {
		if at := t.alarmAt.Load(); at > 0 {
			out[name] = at
		}
	}
	return out
}

// schedule fires alarms on time with the real clock.
func (m *Manager) schedule() {
	for {
		next := int64(0)
		for _, at := range m.alarmSnapshot() {
			if next == 0 || at < next {
				next = at
			}
		}
		wait := time.Minute
		if next > 0 {
			wait = min(wait, time.Duration(next-m.cfg.Clock.Now())*time.Millisecond)
		}
		timer := time.NewTimer(max(wait, 0))
		select {
		case <-m.stop:
			timer.Stop()
			return
		case <-m.alarms.kick:
			timer.Stop()
			continue
		case <-timer.C:
		}
		m.FireDue(context.Background())
	}
}
