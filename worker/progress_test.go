package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/worker"
)

// TestProgressIsPublishedAndFenced: Job.Progress stores the handler's
// progress on the job and sends it to its watchers; once the attempt's
// lease is lost it is refused, writes nothing, and says ErrLeaseLost.
func TestProgressIsPublishedAndFenced(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	ctx := context.Background()
	j, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.fast"})
	require.NoError(t, err)
	w, err := ten.Watch(ctx, api.WatchFilter{Job: j.ID})
	require.NoError(t, err)
	defer w.Close()

	published, release, late := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	stop, _ := start(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}},
		map[string]worker.Handler{"test.fast": func(ctx context.Context, job *worker.Job) (any, error) {
			if err := job.Progress(ctx, map[string]int{"done": 1, "of": 2}); err != nil {
				return nil, err
			}
			close(published)
			<-release
			err := job.Progress(context.WithoutCancel(ctx), map[string]int{"done": 2, "of": 2})
			late <- err
			return nil, err
		}})
	defer stop()

	await(t, published, "the handler published its progress")
	got, err := ten.Job(ctx, j.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"done":1,"of":2}`, string(got.Progress))
	for {
		c, err := w.Next(ctx)
		require.NoError(t, err)
		if len(c.Jobs) == 1 && c.Jobs[0].Progress != nil {
			require.JSONEq(t, `{"done":1,"of":2}`, string(c.Jobs[0].Progress), "the watch received it")
			break
		}
	}

	h.Advance(2 * time.Second) // past the lease: the tenant expires the attempt
	close(release)
	err = await(t, late, "the handler published again")
	require.True(t, errors.Is(err, worker.ErrLeaseLost), "a lost lease's progress is refused: %v", err)
	got, err = ten.Job(ctx, j.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"done":1,"of":2}`, string(got.Progress), "the refused progress wrote nothing")
	require.Error(t, (&worker.Job{}).Progress(ctx, 1), "a job without a claim of its own cannot publish")
}
