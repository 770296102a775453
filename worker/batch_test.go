package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp/receipt"
	"github.com/stile-run/stile/worker"
)

// batchCalls records a batch handler's calls: the args' "i" of each.
type batchCalls struct {
	mu    sync.Mutex
	calls [][]int
	ran   chan int
}

func (b *batchCalls) record(jobs []*worker.Job) {
	var is []int
	for _, j := range jobs {
		var a struct{ I int }
		_ = j.Decode(&a)
		is = append(is, a.I)
	}
	slices.Sort(is)
	b.mu.Lock()
	b.calls = append(b.calls, is)
	b.mu.Unlock()
	b.ran <- len(jobs)
}

// A batch handler gets the kind's ready jobs in one call; each job's
// outcome is its own: the failed one is retried alone, the final one ends
// dead, the others complete with the output set for them.
func TestABatchHandlerGetsTheJobsTogetherAndEachOutcomeIsItsOwn(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	calls := &batchCalls{ran: make(chan int, 10)}
	stop, _ := run(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}, Concurrency: 10, ID: "w1"},
		func(w *worker.Worker) {
			w.HandleBatch("test.echo", worker.Batch{Max: 5, Wait: 10 * time.Second}, func(ctx context.Context, jobs []*worker.Job) []error {
				calls.record(jobs)
				errs := make([]error, len(jobs))
				for k, j := range jobs {
					var a struct{ I int }
					if err := j.Decode(&a); err != nil {
						errs[k] = err
						continue
					}
					switch {
					case a.I == 1 && j.Attempt == 1:
						errs[k] = errors.New("the provider refused this one")
					case a.I == 3:
						errs[k] = worker.Final(errors.New("no such address"))
					default:
						j.SetOutput(map[string]int{"sent": a.I, "batch": len(jobs)})
					}
				}
				return errs
			})
		})
	defer stop()
	reqs := make([]api.EnqueueRequest, 5)
	for i := range reqs {
		reqs[i] = api.EnqueueRequest{Kind: "test.echo", MaxAttempts: 3, Args: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	}
	js, err := ten.EnqueueBatch(context.Background(), reqs)
	require.NoError(t, err)
	require.Equal(t, 5, await(t, calls.ran, "the batch runs once full, before its wait"))
	dead := waitState(t, ten, js[3].ID, "dead")
	require.Equal(t, "no such address", dead.LastError)
	for _, i := range []int{0, 2, 4} {
		done := waitState(t, ten, js[i].ID, "completed")
		require.JSONEq(t, fmt.Sprintf(`{"sent":%d,"batch":5}`, i), string(done.Output))
	}
	failed := waitState(t, ten, js[1].ID, "retryable")
	require.Equal(t, "the provider refused this one", failed.LastError)

	h.Advance(time.Second) // the failed job is due again (its backoff is at most 1 s)
	waitState(t, ten, js[1].ID, "running")
	require.Equal(t, 1, advanceUntil(t, h.Advance, calls.ran, "the retry's batch of one, after its wait"))
	done := waitState(t, ten, js[1].ID, "completed")
	require.Len(t, done.Attempts, 2)
	calls.mu.Lock()
	defer calls.mu.Unlock()
	require.Equal(t, [][]int{{0, 1, 2, 3, 4}, {1}}, calls.calls, "only the failed job ran again")
}

// advanceUntil moves the clock a second at a time until ch receives (the
// worker's timers are set a moment after the claims the test sees).
func advanceUntil[T any](t *testing.T, advance func(time.Duration) int, ch <-chan T, what string) T {
	t.Helper()
	var v T
	require.Eventually(t, func() bool {
		advance(time.Second)
		select {
		case v = <-ch:
			return true
		default:
			return false
		}
	}, 20*time.Second, 50*time.Millisecond, "never: %s", what)
	return v
}

// A batch short of its size waits for more, up to its wait; a typed batch
// handler gets decoded args and never a job whose args do not decode.
func TestABatchWaitsForMoreUpToItsWait(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	got := make(chan []string, 4)
	stop, _ := run(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}, Concurrency: 10, ID: "w1"},
		func(w *worker.Worker) {
			worker.HandleBatch(w, worker.Batch{Max: 10, Wait: 2 * time.Second}, func(ctx context.Context, jobs []*worker.JobOf[receipt.Receipt]) []error {
				var orders []string
				for _, j := range jobs {
					orders = append(orders, j.Args.Order)
				}
				got <- orders
				return nil
			})
		})
	defer stop()
	ctx := context.Background()
	var ids []string
	for _, order := range []string{"a", "b", "c"} {
		j, err := ten.EnqueueArgs(ctx, receipt.Receipt{Order: order, Cents: 1}, api.EnqueueRequest{})
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	for _, id := range ids {
		waitState(t, ten, id, "running") // claimed, waiting for more
	}
	h.Advance(time.Second)
	select {
	case b := <-got:
		t.Fatalf("a batch of %d ran before its wait", len(b))
	default:
	}
	b := advanceUntil(t, h.Advance, got, "the batch after its wait")
	slices.Sort(b)
	require.Equal(t, []string{"a", "b", "c"}, b)
	for _, id := range ids {
		waitState(t, ten, id, "completed")
	}
}

// A worker that stops while a batch gathers releases the waiting jobs at
// the end of its grace period and never hands them to the handler.
func TestAStoppingWorkerReleasesAGatheringBatch(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	var calls atomic.Int64
	stop, _ := run(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}, Concurrency: 10, ID: "w1",
		ShutdownGrace: 50 * time.Millisecond},
		func(w *worker.Worker) {
			w.HandleBatch("test.echo", worker.Batch{Max: 10, Wait: time.Hour}, func(ctx context.Context, jobs []*worker.Job) []error {
				calls.Add(1)
				return nil
			})
		})
	j, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.echo"})
	require.NoError(t, err)
	waitState(t, ten, j.ID, "running") // gathering: its batch waits an hour
	// The worker holds the job (not only the tenant: a claim's answer can
	// be lost to the stop): it heartbeats it.
	require.Eventually(t, func() bool {
		h.Advance(2 * time.Second) // a heartbeat is due every 20 s of its 60 s lease
		got, err := ten.Job(context.Background(), j.ID)
		return err == nil && got.Running != nil && got.Running.Heartbeats > 0
	}, 20*time.Second, 20*time.Millisecond, "the worker heartbeats the gathered job")
	stop() // returns: the batch's job left at the grace period's end
	require.Zero(t, calls.Load(), "the handler never saw the released job")
	got := waitState(t, ten, j.ID, "available")
	require.EqualValues(t, 0, got.Failures, "released, not failed")
}
