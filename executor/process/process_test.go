package process_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/executor/process"
	"github.com/stile-run/stile/stiletest"
	"github.com/stile-run/stile/worker"
)

// syncBuffer is a buffer RunWorker writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunWorkerRunsTheRegisteredHandlersUntilItsContextEnds(t *testing.T) {
	h := stiletest.New(t, stiletest.Config{App: testapp.App(), RealClock: true})
	ten := h.Tenant("acme")
	ctx, stop := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- process.RunWorker(ctx, process.WorkConfig{URL: h.URL, Token: h.Token(), Tenants: []string{"acme"},
			Logger: slog.New(slog.DiscardHandler)}, func(w *worker.Worker) {
			w.Handle("test.echo", func(ctx context.Context, j *worker.Job) (any, error) { return j.Args, nil })
		}, &out)
	}()
	j, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := ten.Job(context.Background(), j.ID)
		return err == nil && got.State == "completed" && string(got.Output) == `{"n":1}`
	}, 20*time.Second, 10*time.Millisecond)
	require.Contains(t, out.String(), "running jobs test.echo for acme from "+h.URL)
	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("RunWorker did not return once its context ended")
	}
}

func TestRunWorkerRefusesAPackageWithNoHandlers(t *testing.T) {
	err := process.RunWorker(context.Background(), process.WorkConfig{URL: "http://127.0.0.1:1", Token: "t"}, func(*worker.Worker) {}, &bytes.Buffer{})
	require.ErrorContains(t, err, "registered no handlers")
}

func TestHandlesNamesWhatIsHandled(t *testing.T) {
	require.Equal(t, "jobs a, b and reactions p", process.Handles([]string{"a", "b"}, []string{"p"}))
	require.Equal(t, "reactions p", process.Handles(nil, []string{"p"}))
	require.Equal(t, "nothing", process.Handles(nil, nil))
}
