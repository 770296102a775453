package executor_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/executor"
	"github.com/stile-run/stile/worker"
)

// lockedLog is a log written from several goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A handler stuck in a call when its push's budget ends is cancelled with
// worker.ErrShutdown, its call aborted, and its job released without
// spending a retry; the push ends as budget_spent, and the job runs again
// on the next push.
func TestAHandlerStuckAtTheBudgetsEndIsReleased(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(provider.Close)
	t.Cleanup(func() { close(release) })

	var calls atomic.Int64
	handler := func(ctx context.Context, j *worker.Job) (any, error) {
		if calls.Add(1) > 1 {
			return "ok", nil
		}
		req, err := http.NewRequestWithContext(ctx, "POST", provider.URL, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req) // never answered
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		return "answered", nil
	}
	budget := func() worker.Budget { return worker.Budget{Until: time.Now().Add(1500 * time.Millisecond)} }
	p := setup(t, testapp.App(), budget, func(w *worker.Worker) { w.Handle("test.echo", handler) }, worker.Config{ID: "edge-8"})
	// An executor whose worker's log the test reads takes the pushes.
	logs := &lockedLog{}
	w, err := worker.New(worker.Config{URL: p.h.URL, Token: p.h.Token(), ID: "edge-8", Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	w.Handle("test.echo", handler)
	ex := executor.New(w, executor.Config{Token: p.h.Token(), Budget: budget, Logger: quiet})
	t.Cleanup(ex.Wait)
	p.ex.Store(ex)

	j := enqueue(t, p.ten, "test.echo")
	done := waitState(t, p.ten, j.ID, "completed")
	require.Equal(t, int64(2), calls.Load())
	require.Len(t, done.Attempts, 2)
	require.Equal(t, "snoozed", done.Attempts[0].Outcome, "released at the budget's end")
	require.Equal(t, "completed", done.Attempts[1].Outcome)
	require.Zero(t, done.Failures, "no retry spent")
	require.GreaterOrEqual(t, p.pushes.Load(), int64(2), "the push ended budget_spent, and the tenant pushed again")
	noPushesInFlight(t, p.ten)
	require.Contains(t, logs.String(), `msg="job released: the worker is stopping"`)
	require.Contains(t, logs.String(), "job="+j.ID)
}
