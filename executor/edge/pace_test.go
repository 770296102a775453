//go:build !js

package edge

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// held is a transport whose requests wait until the test answers them,
// as a slow provider's headers would.
type held struct {
	arrived chan *http.Request
	answer  chan struct{}
}

func newHeld() *held {
	return &held{arrived: make(chan *http.Request, 16), answer: make(chan struct{})}
}

func (h *held) RoundTrip(r *http.Request) (*http.Response, error) {
	h.arrived <- r
	select {
	case <-h.answer:
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
}

// The gate lets two requests wait for headers at once (here), holds the
// third until one of them has its answer, and counts it as waiting and as
// having waited; a request whose context ends while it waits is dropped
// without reaching the network.
func TestTheGateHoldsRequestsPastItsConnections(t *testing.T) {
	t.Parallel()
	h := newHeld()
	g := newGate(h, 2)
	var wg sync.WaitGroup
	send := func(ctx context.Context) (err error) {
		r := httptest.NewRequestWithContext(ctx, "GET", "https://provider.example/", nil)
		resp, err := g.RoundTrip(r)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); require.NoError(t, send(context.Background())) }()
	}
	<-h.arrived
	<-h.arrived
	wg.Add(1)
	go func() { defer wg.Done(); require.NoError(t, send(context.Background())) }()
	require.Eventually(t, func() bool { return g.waiting.Load() == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, int64(1), g.waits.Load())
	select {
	case <-h.arrived:
		t.Fatal("a third request reached the network while two waited for headers")
	case <-time.After(20 * time.Millisecond):
	}

	// One waiting with a context that ends: dropped.
	ctx, cancel := context.WithCancelCause(context.Background())
	cut := make(chan error, 1)
	go func() { cut <- send(ctx) }()
	require.Eventually(t, func() bool { return g.waiting.Load() == 2 }, 5*time.Second, time.Millisecond)
	why := errors.New("the handler's time limit")
	cancel(why)
	require.ErrorIs(t, <-cut, why)
	require.Equal(t, int64(1), g.waiting.Load())
	require.Equal(t, int64(2), g.waits.Load())

	h.answer <- struct{}{} // one of the two has its headers: the third goes
	<-h.arrived
	require.Eventually(t, func() bool { return g.waiting.Load() == 0 }, 5*time.Second, time.Millisecond)
	h.answer <- struct{}{}
	h.answer <- struct{}{}
	wg.Wait()
}

// ran tells p of n jobs that ran d each.
func ran(p *pacer, n int, d time.Duration) {
	for range n {
		p.Ran(d)
	}
}

func TestThePacerRampsUpAsQuickJobsEndWithoutWaiting(t *testing.T) {
	t.Parallel()
	g := newGate(newHeld(), Connections)
	p := &pacer{gate: g, connections: 6, concurrency: 100}
	require.Equal(t, 6, p.Pace(0), "the connections at first")
	require.Equal(t, 0, p.Pace(6), "nothing more until jobs end")
	ran(p, 6, time.Millisecond)
	require.Equal(t, 18, p.Pace(0), "two more for each quick job that ended")
	require.Equal(t, 0, p.Pace(15), "while jobs run, not fewer than a quarter of what it allows")
	require.Equal(t, 4, p.Pace(14))
	ran(p, 18, time.Millisecond)
	require.Equal(t, 54, p.Pace(0))
	ran(p, 100, QuickRun)
	require.Equal(t, 100, p.Pace(0), "up to the concurrency")
	require.Equal(t, 0, p.Pace(76))
	require.Equal(t, 25, p.Pace(75))

	// Jobs that run long (they compute, or wait on a slow provider) halve
	// the count each: the invocation goes back to about its connections.
	ran(p, 5, QuickRun+time.Millisecond)
	require.Equal(t, 12, p.Pace(0), "124 quick jobs halved five times: 3")
	ran(p, 10, time.Second)
	require.Equal(t, 6, p.Pace(0))

	// A request waits at the gate: nothing starts while it waits, and the
	// count starts again from zero.
	ran(p, 50, time.Millisecond)
	require.Equal(t, 100, p.Pace(0))
	g.waits.Add(1)
	g.waiting.Add(1)
	require.Equal(t, 0, p.Pace(0))
	g.waiting.Add(-1)
	require.Equal(t, 6, p.Pace(0))
	require.Equal(t, 0, p.Pace(6))
	p.Ran(time.Millisecond)
	require.Equal(t, 8, p.Pace(0))

	small := &pacer{gate: newGate(newHeld(), Connections), connections: 6, concurrency: 2}
	require.Equal(t, 2, small.Pace(0), "never past the concurrency")
	require.Equal(t, 1, small.Pace(1), "one at a time, below eight")
}

func TestLinesEmitsWholeLines(t *testing.T) {
	t.Parallel()
	var got []string
	l := &lines{emit: func(s string) { got = append(got, s) }}
	for _, w := range []string{"time=1 msg=a", "\n", "time=2 msg=b\ntime=3 ", "msg=c\n", "no end yet"} {
		n, err := l.Write([]byte(w))
		require.NoError(t, err)
		require.Equal(t, len(w), n)
	}
	require.Equal(t, []string{"time=1 msg=a", "time=2 msg=b", "time=3 msg=c"}, got)
	long := strings.Repeat("x", maxPartialLine+1)
	l.Write([]byte(long))
	require.Equal(t, "no end yet"+long, got[3], "a partial line past the bound goes as it is")
	l.Write([]byte("\n"))
	require.Equal(t, "", got[4])
}
