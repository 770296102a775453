package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/executor"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/runtime"
	"github.com/stile-run/stile/stiletest"
	"github.com/stile-run/stile/worker"
)

var quiet = slog.New(slog.DiscardHandler)

// pushed is a tenant host whose pushes go to an in-process executor over
// a worker made by newWorker; no worker polls.
type pushed struct {
	h      *stiletest.Harness
	ten    *client.Tenant
	ex     atomic.Pointer[executor.Handler]
	pushes atomic.Int64
	refuse atomic.Int64 // pushes still to refuse
}

func setup(t *testing.T, app *runtime.App, budget func() worker.Budget, register func(*worker.Worker), cfg worker.Config) *pushed {
	t.Helper()
	p := &pushed{}
	p.h = stiletest.New(t, stiletest.Config{App: app, RealClock: true, Pusher: host.PushFunc(func(ctx context.Context, r api.PushRequest) error {
		p.pushes.Add(1)
		if p.refuse.Add(-1) >= 0 {
			return errors.New("503 the executor is not there yet")
		}
		return executor.Local{H: p.ex.Load()}.Push(ctx, r)
	})})
	cfg.URL, cfg.Token, cfg.Logger = p.h.URL, p.h.Token(), quiet
	w, err := worker.New(cfg)
	require.NoError(t, err)
	register(w)
	ex := executor.New(w, executor.Config{Token: p.h.Token(), Budget: budget, Logger: quiet})
	p.ex.Store(ex)
	t.Cleanup(ex.Wait)
	p.ten = p.h.Tenant("acme")
	return p
}

func waitState(t *testing.T, ten *client.Tenant, id, state string) api.Job {
	t.Helper()
	var j api.Job
	require.Eventually(t, func() bool {
		var err error
		j, err = ten.Job(context.Background(), id)
		return err == nil && j.State == state
	}, 20*time.Second, 10*time.Millisecond, "job %s never reached %s (last: %+v)", id, state, j)
	return j
}

func enqueue(t *testing.T, ten *client.Tenant, kind string) api.Job {
	t.Helper()
	j, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: kind, Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	return j
}

func noPushesInFlight(t *testing.T, ten *client.Tenant) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := ten.Pushes(context.Background())
		return err == nil && len(st.InFlight) == 0 && !st.Pending
	}, 10*time.Second, 10*time.Millisecond, "every push ends")
}

func TestAnEnqueuedJobRunsOnAPushAndThePushEnds(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	p := setup(t, testapp.App(), nil, func(w *worker.Worker) {
		w.Handle("test.echo", func(ctx context.Context, j *worker.Job) (any, error) {
			runs.Add(1)
			return map[string]int{"ok": 1}, nil
		})
	}, worker.Config{ID: "edge-1"})
	j := enqueue(t, p.ten, "test.echo")
	done := waitState(t, p.ten, j.ID, "completed")
	require.JSONEq(t, `{"ok":1}`, string(done.Output))
	require.Equal(t, int64(1), runs.Load())
	noPushesInFlight(t, p.ten)
	require.Equal(t, int64(1), p.pushes.Load(), "one enqueue, one push")
}

func TestAReactionRunsOnAPushAndItsCommandIsStoredOnce(t *testing.T) {
	t.Parallel()
	var seen sync.Map
	p := setup(t, testapp.App(), nil, func(w *worker.Worker) {
		w.HandleReaction(testapp.RefundPolicy, func(ctx context.Context, r *worker.Reaction) error {
			seen.Store(r.Event.Seq, true)
			r.Dispatch(api.Command{Aggregate: "payment", AggregateID: "p1", Type: "RecordRefund", Data: json.RawMessage(`{"refund_id":"rf-1"}`)})
			return nil
		})
	}, worker.Config{ID: "edge-2"})
	ctx := context.Background()
	_, err := p.ten.Command(ctx, api.Command{ID: "c1", Aggregate: "payment", AggregateID: "p1", Type: "Create", Data: json.RawMessage(`{"amount":5}`)})
	require.NoError(t, err)
	_, err = p.ten.Command(ctx, api.Command{ID: "r1", Aggregate: "payment", AggregateID: "p1", Type: "RequestRefund"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		es, err := p.ten.Stream(ctx, "payment:p1", 0, 100)
		return err == nil && len(es.Events) == 3
	}, 20*time.Second, 10*time.Millisecond, "the refund's dispatched command is applied")
	es, err := p.ten.Stream(ctx, "payment:p1", 0, 100)
	require.NoError(t, err)
	require.Equal(t, "RefundRecorded", es.Events[2].Type, "stored once: created, requested, recorded")
}

func TestARefusedPushIsRetriedAndTheJobStillRuns(t *testing.T) {
	t.Parallel()
	p := setup(t, testapp.App().Pushes(runtime.PushPolicy{RetryMin: 50}), nil, func(w *worker.Worker) {
		w.Handle("test.echo", func(ctx context.Context, j *worker.Job) (any, error) { return nil, nil })
	}, worker.Config{ID: "edge-3"})
	p.refuse.Store(2)
	j := enqueue(t, p.ten, "test.echo")
	waitState(t, p.ten, j.ID, "completed")
	require.Equal(t, int64(3), p.pushes.Load(), "two refused, retried from the alarm after a backoff, the third ran it")
	noPushesInFlight(t, p.ten)
}

func TestABacklogLargerThanOneBudgetDrains(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	budget := func() worker.Budget { return worker.Budget{Until: time.Now().Add(time.Minute), Subrequests: 12} }
	p := setup(t, testapp.App(), budget, func(w *worker.Worker) {
		w.Handle("test.echo", func(ctx context.Context, j *worker.Job) (any, error) { runs.Add(1); return nil, nil })
	}, worker.Config{ID: "edge-4", Concurrency: 2})
	var reqs []api.EnqueueRequest
	for range 40 {
		reqs = append(reqs, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
	}
	js, err := p.ten.EnqueueBatch(context.Background(), reqs)
	require.NoError(t, err)
	for _, j := range js {
		waitState(t, p.ten, j.ID, "completed")
	}
	require.Equal(t, int64(40), runs.Load(), "each job ran once")
	require.Greater(t, p.pushes.Load(), int64(4), "12 subrequests take at most 4 jobs: the rest came with later pushes")
	noPushesInFlight(t, p.ten)
	// The last push ended for its budget as the work ran out, without a
	// claim that found nothing: the tenant, finding nothing ready to push,
	// tells the directory it is idle all the same, so a worker following the
	// directory does not drain it for nothing.
	require.Eventually(t, func() bool {
		ready, err := p.h.Client().Tenants(context.Background(), api.TenantsQuery{Ready: true})
		return err == nil && len(ready.Tenants) == 0
	}, 10*time.Second, 10*time.Millisecond, "the directory lists the tenant as idle")
}

func TestAKilledInvocationIsFencedAndTheJobRunsAgainOnAPush(t *testing.T) {
	t.Parallel()
	// The first invocation loses its network once it has claimed: to the
	// tenant it is dead (no heartbeat, no report, its push never ends),
	// like an invocation Cloudflare killed. Later pushes reach a new one.
	var cut atomic.Bool
	hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		if cut.Load() {
			return nil, errors.New("the invocation was killed")
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	var calls atomic.Int64
	var second *executor.Handler
	p := setup(t, testapp.App().Pushes(runtime.PushPolicy{TTL: 2000}), nil, func(w *worker.Worker) {
		w.Handle("test.fast", func(ctx context.Context, j *worker.Job) (any, error) {
			calls.Add(1)
			return nil, nil
		})
	}, worker.Config{ID: "edge-5b"})
	second = p.ex.Load()
	first, err := worker.New(worker.Config{URL: p.h.URL, Token: p.h.Token(), ID: "edge-5a", HTTPClient: hc, Logger: quiet})
	require.NoError(t, err)
	first.Handle("test.fast", func(ctx context.Context, j *worker.Job) (any, error) {
		calls.Add(1)
		cut.Store(true)
		p.ex.Store(second)
		<-ctx.Done() // the lease runs out locally too
		return nil, ctx.Err()
	})
	killed := executor.New(first, executor.Config{Token: p.h.Token(), Logger: quiet})
	t.Cleanup(killed.Wait)
	p.ex.Store(killed)

	j := enqueue(t, p.ten, "test.fast")
	done := waitState(t, p.ten, j.ID, "completed")
	require.Equal(t, int64(2), done.Attempt)
	require.Equal(t, int64(2), calls.Load(), "the handler ran twice, its outcome was recorded once")
	require.GreaterOrEqual(t, p.pushes.Load(), int64(2), "the dead push expired and the tenant pushed again")
	require.Len(t, done.Attempts, 2)
	require.Equal(t, "lease_expired", done.Attempts[0].Outcome)
	require.Equal(t, "completed", done.Attempts[1].Outcome)
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTheHandlerRefusesBadPushesAndStartsNothing(t *testing.T) {
	t.Parallel()
	p := setup(t, testapp.App(), nil, func(w *worker.Worker) {
		w.Handle("test.echo", func(ctx context.Context, j *worker.Job) (any, error) { return nil, nil })
	}, worker.Config{ID: "edge-6"})
	srv := httptestServer(t, p.ex.Load())
	for _, c := range []struct {
		method, path, token, body string
		status                    int
		code                      api.Code
	}{
		{"POST", api.ExecutorPath, "wrong", `{"tenant":"acme","id":"p1"}`, 401, api.CodeUnauthorized},
		{"GET", api.ExecutorPath, p.h.Token(), ``, 405, api.CodeMethodNotAllowed},
		{"POST", "/elsewhere", p.h.Token(), `{}`, 404, api.CodeNotFound},
		{"POST", api.ExecutorPath, p.h.Token(), `{"tenant":"acme"`, 400, api.CodeInvalidJSON},
		{"POST", api.ExecutorPath, p.h.Token(), `{"tenant":"acme","id":"p1","x":1}`, 400, api.CodeInvalidJSON},
		{"POST", api.ExecutorPath, p.h.Token(), `{"tenant":"../etc","id":"p1"}`, 400, api.CodeInvalidTenant},
		{"POST", api.ExecutorPath, p.h.Token(), `{"tenant":"acme"}`, 400, api.CodeInvalidRequest},
	} {
		req, err := http.NewRequest(c.method, srv+c.path, stringsReader(c.body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, c.status, resp.StatusCode, "%s %s %s: %s", c.method, c.path, c.body, b)
		var e api.Error
		require.NoError(t, json.Unmarshal(b, &e))
		require.Equal(t, c.code, e.Code, string(b))
		require.NotEmpty(t, e.Message)
	}
	st, err := p.ten.Pushes(context.Background())
	require.NoError(t, err)
	require.Empty(t, st.InFlight, "nothing was pushed or started")
}

func TestAPausedQueueIsNotPushed(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	p := setup(t, testapp.App(), nil, func(w *worker.Worker) {
		w.Handle("test.echo", func(ctx context.Context, j *worker.Job) (any, error) { runs.Add(1); return nil, nil })
	}, worker.Config{ID: "edge-7"})
	ctx := context.Background()
	_, err := p.ten.PauseQueue(ctx, "default", true)
	require.NoError(t, err)
	j := enqueue(t, p.ten, "test.echo")
	noPushesInFlight(t, p.ten)
	require.Zero(t, p.pushes.Load(), "a paused queue's job makes no push")
	_, err = p.ten.PauseQueue(ctx, "default", false)
	require.NoError(t, err)
	waitState(t, p.ten, j.ID, "completed")
	require.Equal(t, int64(1), runs.Load(), "resuming pushes it")
}
