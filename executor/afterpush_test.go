package executor_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/executor"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/stiletest"
	"github.com/stile-run/stile/worker"
)

// TestWaitWaitsForAfterPush: AfterPush runs once a push's work is over,
// and Wait returns only after it. The edge executor's program ends when
// Wait returns, so its spans are flushed there or lost.
func TestWaitWaitsForAfterPush(t *testing.T) {
	t.Parallel()
	var ex atomic.Pointer[executor.Handler]
	h := stiletest.New(t, stiletest.Config{App: testapp.App(), RealClock: true, Pusher: host.PushFunc(func(ctx context.Context, r api.PushRequest) error {
		return executor.Local{H: ex.Load()}.Push(ctx, r)
	})})
	w, err := worker.New(worker.Config{URL: h.URL, Token: h.Token(), Logger: quiet})
	require.NoError(t, err)
	var ran atomic.Bool
	w.Handle("test.echo", func(ctx context.Context, j *worker.Job) (any, error) { ran.Store(true); return nil, nil })
	entered, release := make(chan struct{}), make(chan struct{})
	var after atomic.Int64
	ex.Store(executor.New(w, executor.Config{Token: h.Token(), Logger: quiet, AfterPush: func() {
		require.True(t, ran.Load(), "after the push's work")
		if after.Add(1) == 1 {
			close(entered)
			<-release
		}
	}}))
	ten := h.Tenant("acme")
	j := enqueue(t, ten, "test.echo")
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("AfterPush never ran")
	}
	require.Equal(t, "completed", waitState(t, ten, j.ID, "completed").State)
	waited := make(chan struct{})
	go func() { ex.Load().Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("Wait returned while AfterPush was running")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return once AfterPush had")
	}
}
