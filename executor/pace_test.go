package executor_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/worker"
)

// A drain starts no more jobs than its pace allows, whatever its free
// slots, and waits while the pace allows none: a backlog drains with at
// most three handlers at once out of twenty slots, each job run once, and
// the pace is told of the jobs that ended.
func TestAPacedDrainStartsWhatThePaceAllows(t *testing.T) {
	t.Parallel()
	var running, most, runs atomic.Int64
	var mu sync.Mutex
	var lastFinished int64
	pace := func(taken int, finished int64) int {
		mu.Lock()
		lastFinished = max(lastFinished, finished)
		mu.Unlock()
		return 3 - taken
	}
	p := setup(t, testapp.App(), nil, func(w *worker.Worker) {
		w.Handle("test.echo", func(ctx context.Context, j *worker.Job) (any, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			runs.Add(1)
			time.Sleep(5 * time.Millisecond)
			return nil, nil
		})
	}, worker.Config{ID: "edge-paced", Concurrency: 20, Pace: pace})
	var reqs []api.EnqueueRequest
	for range 30 {
		reqs = append(reqs, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
	}
	js, err := p.ten.EnqueueBatch(context.Background(), reqs)
	require.NoError(t, err)
	for _, j := range js {
		waitState(t, p.ten, j.ID, "completed")
	}
	require.Equal(t, int64(30), runs.Load(), "each job ran once")
	require.LessOrEqual(t, most.Load(), int64(3), "never more handlers at once than the pace allowed")
	require.Equal(t, int64(3), most.Load(), "as many as it allowed")
	mu.Lock()
	defer mu.Unlock()
	require.Greater(t, lastFinished, int64(20), "the pace was told of the jobs that ended")
	noPushesInFlight(t, p.ten)
}
