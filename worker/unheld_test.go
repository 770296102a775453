package worker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/worker"
)

// stillClock is a worker clock whose time moves only by hand: its After
// fires once advance passed it.
type stillClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []stillWait
}

type stillWait struct {
	at time.Time
	ch chan struct{}
}

func (c *stillClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stillClock) After(d time.Duration) (<-chan struct{}, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	c.waiters = append(c.waiters, stillWait{c.now.Add(d), ch})
	return ch, func() {}
}

func (c *stillClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// A claim the tenant answered at once, empty, rather than hold (it holds
// as many as it may: retry_after_ms) is not sent again until that time
// passed: the worker does not spin on it.
func TestAnUnheldClaimPausesTheWorker(t *testing.T) {
	t.Parallel()
	var claims atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/claims") {
			claims.Add(1)
			_, _ = w.Write([]byte(`{"now":"2026-01-02T03:04:05Z","jobs":[],"retry_after_ms":1000}`))
			return
		}
		w.WriteHeader(404)
		_, _ = w.Write([]byte(`{"code":"not_found","message":"no route"}`))
	}))
	defer srv.Close()
	clock := &stillClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	stop, _ := start(t, worker.Config{URL: srv.URL, Token: token, Tenants: []string{"acme"}, Concurrency: 2, Clock: clock},
		map[string]worker.Handler{"test.echo": func(context.Context, *worker.Job) (any, error) { return nil, nil }})
	defer stop()

	require.Eventually(t, func() bool { return claims.Load() >= 1 }, 20*time.Second, time.Millisecond)
	require.Never(t, func() bool { return claims.Load() > 1 }, 300*time.Millisecond, 5*time.Millisecond,
		"the worker claimed again before retry_after_ms passed")
	clock.advance(999 * time.Millisecond)
	require.Never(t, func() bool { return claims.Load() > 1 }, 100*time.Millisecond, 5*time.Millisecond)
	clock.advance(time.Millisecond)
	require.Eventually(t, func() bool { return claims.Load() == 2 }, 20*time.Second, time.Millisecond,
		"it claims again once the time passed")
}
