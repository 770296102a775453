package executor_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/worker"
)

// threeAtOnce is a worker.Pacer that lets three jobs run at once, and
// counts the jobs it was told ran.
type threeAtOnce struct{ ran atomic.Int64 }

func (p *threeAtOnce) Pace(taken int) int { return 3 - taken }
func (p *threeAtOnce) Ran(time.Duration)  { p.ran.Add(1) }

// A drain starts no more jobs than its pacer allows, whatever its free
// slots, and waits while it allows none: a backlog drains with at most
// three handlers at once out of twenty slots, each job run once, and the
// pacer is told of each job that ran.
func TestAPacedDrainStartsWhatThePacerAllows(t *testing.T) {
	t.Parallel()
	var running, most, runs atomic.Int64
	pacer := &threeAtOnce{}
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
	}, worker.Config{ID: "edge-paced", Concurrency: 20, Pacer: pacer})
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
	require.LessOrEqual(t, most.Load(), int64(3), "never more handlers at once than the pacer allowed")
	require.Equal(t, int64(3), most.Load(), "as many as it allowed")
	require.Equal(t, int64(30), pacer.ran.Load(), "the pacer was told of each job that ran")
	noPushesInFlight(t, p.ten)
}
