package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/stiletest"
	"github.com/stile-run/stile/worker"
)

const token = "worker-test"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// setup starts a native host behind HTTP on the manual clock: the test
// moves time (h.Advance) for the tenant, and for a worker given
// h.WorkerClock() alike.
func setup(t *testing.T) (*stiletest.Harness, *client.Tenant) {
	t.Helper()
	h := stiletest.New(t, stiletest.Config{App: testapp.App(), Token: token})
	return h, h.Tenant("acme")
}

// start runs a worker with job handlers until stop; its test signals are
// on.
func start(t *testing.T, cfg worker.Config, handlers map[string]worker.Handler) (stop func(), sig *worker.TestSignals) {
	t.Helper()
	return run(t, cfg, func(w *worker.Worker) {
		for k, h := range handlers {
			w.Handle(k, h)
		}
	})
}

// run runs a worker, with the handlers register gives it, until stop; its
// test signals are on.
func run(t *testing.T, cfg worker.Config, register func(*worker.Worker)) (stop func(), sig *worker.TestSignals) {
	t.Helper()
	cfg.Logger = quiet
	w, err := worker.New(cfg)
	require.NoError(t, err)
	register(w)
	sig = w.TestSignals()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
	}, sig
}

// await receives from ch, and fails the test if nothing comes: a worker
// that never gets there fails the test instead of hanging it.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("never: %s", what)
		var zero T
		return zero
	}
}

func waitState(t *testing.T, ten *client.Tenant, id, state string) api.Job {
	t.Helper()
	var j api.Job
	require.Eventually(t, func() bool {
		var err error
		j, err = ten.Job(context.Background(), id)
		return err == nil && j.State == state
	}, 20*time.Second, 20*time.Millisecond, "job %s never reached %s (last: %+v)", id, state, j)
	return j
}

func TestRunsJobsConcurrently(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	var running, peak atomic.Int64
	started, release := make(chan struct{}, 20), make(chan struct{})
	stop, _ := start(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}, Concurrency: 4, ID: "w1"},
		map[string]worker.Handler{"test.echo": func(ctx context.Context, j *worker.Job) (any, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			started <- struct{}{}
			<-release // held until as many run as may
			var args map[string]int
			if err := j.Decode(&args); err != nil {
				return nil, err
			}
			return map[string]any{"i": args["i"], "job": j.JobID, "attempt": j.Attempt}, nil
		}})
	defer stop()

	reqs := make([]api.EnqueueRequest, 20)
	for i := range reqs {
		reqs[i] = api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	}
	js, err := ten.EnqueueBatch(context.Background(), reqs)
	require.NoError(t, err)
	for range 4 {
		await(t, started, "four handlers running at once")
	}
	close(release)
	for i, j := range js {
		done := waitState(t, ten, j.ID, "completed")
		require.JSONEq(t, fmt.Sprintf(`{"i":%d,"job":%q,"attempt":1}`, i, j.ID), string(done.Output))
		require.Equal(t, "w1", done.Attempts[0].Worker)
	}
	require.LessOrEqual(t, peak.Load(), int64(4), "never more handlers than Concurrency")
	require.Greater(t, peak.Load(), int64(1), "handlers ran concurrently")
}

func TestFailureIsRetriedAndPanicsCarryTheStack(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	var calls atomic.Int64
	stop, sig := start(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}},
		map[string]worker.Handler{"test.fast": func(ctx context.Context, j *worker.Job) (any, error) {
			switch calls.Add(1) {
			case 1:
				return nil, errors.New("first try fails")
			case 2:
				panic("second try panics")
			}
			return "third time lucky", nil
		}})
	defer stop()
	j, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.fast", MaxAttempts: 5})
	require.NoError(t, err)
	for range 2 { // the failure, then the panic: each runs again after its backoff
		require.Equal(t, api.OutcomeFailed, sig.AttemptEnded.Wait(t).Outcome)
		h.Advance(fastMaxBackoff)
	}
	done := waitState(t, ten, j.ID, "completed")
	require.Len(t, done.Attempts, 3)
	require.Equal(t, "first try fails", done.Attempts[0].Error)
	require.Contains(t, done.Attempts[1].Error, "handler panicked: second try panics")
	require.Contains(t, done.Attempts[1].Error, "worker_test.go", "the panic's stack is in the error")
	require.JSONEq(t, `"third time lucky"`, string(done.Output))
}

// test.fast's lease and longest backoff (e2e/testapp).
const (
	fastLease      = time.Second
	fastMaxBackoff = time.Second
)

// heldFirstRequest holds the first request whose path ends in suffix in
// transit (inTransit is closed once it is) until release is closed.
type heldFirstRequest struct {
	suffix             string
	once               sync.Once
	inTransit, release chan struct{}
	next               http.RoundTripper
}

func holdFirst(suffix string, next http.RoundTripper) *heldFirstRequest {
	return &heldFirstRequest{suffix: suffix, inTransit: make(chan struct{}), release: make(chan struct{}), next: next}
}

func (s *heldFirstRequest) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, s.suffix) {
		s.once.Do(func() {
			close(s.inTransit)
			<-s.release
		})
	}
	return s.next.RoundTrip(r)
}

func TestLostLeaseCancelsTheHandler(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	causes := make(chan error, 4)
	var calls atomic.Int64
	// The first heartbeat is held in transit past the lease, so the store
	// answers "lease expired".
	heartbeats := holdFirst("/heartbeat", http.DefaultTransport)
	stop, sig := start(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"},
		HTTPClient: &http.Client{Transport: heartbeats}},
		map[string]worker.Handler{"test.fast": func(ctx context.Context, j *worker.Job) (any, error) {
			if calls.Add(1) == 1 {
				<-ctx.Done() // a handler that waits for its lease to go
				causes <- context.Cause(ctx)
				return "too late", nil
			}
			return "second attempt", nil
		}})
	defer stop()
	j, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.fast"})
	require.NoError(t, err)
	require.Equal(t, j.ID, sig.HeartbeatWaiting.Wait(t))
	h.Advance(fastLease / 3) // the first heartbeat is due
	await(t, heartbeats.inTransit, "the first heartbeat was sent")
	h.Advance(fastLease) // the lease runs out meanwhile, and the tenant's alarm expires it
	close(heartbeats.release)
	require.ErrorIs(t, await(t, causes, "the handler's context was cancelled"), worker.ErrLeaseLost)
	require.Equal(t, "completed", sig.AttemptEnded.Wait(t).Outcome, "attempt 1 reported what it returned")
	h.Advance(fastMaxBackoff) // the expired attempt's backoff
	done := waitState(t, ten, j.ID, "completed")
	require.JSONEq(t, `"second attempt"`, string(done.Output), "the late report of attempt 1 was fenced out")
	require.Equal(t, "lease_expired", done.Attempts[0].Outcome)
	got, err := ten.Job(context.Background(), j.ID)
	require.NoError(t, err)
	require.NotEmpty(t, got.Rejections, "attempt 1's late report is refused and on record")
	require.Equal(t, "report", got.Rejections[len(got.Rejections)-1].Request)
}

// On the wall clock (the edge executor's), a job's heartbeats start with
// a timer, not a goroutine of their own: one slower than a third of its
// lease still heartbeats, every third of it, until it returns; a quick one
// sends none.
func TestHeartbeatsOnTheWallClock(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	const lease = 300 * time.Millisecond
	stop, sig := start(t, worker.Config{URL: h.URL, Token: token, Tenants: []string{"acme"}},
		map[string]worker.Handler{"test.fast": func(ctx context.Context, j *worker.Job) (any, error) {
			if string(j.Args) == `"slow"` {
				time.Sleep(3*lease + lease/2)
			}
			return nil, ctx.Err()
		}})
	defer stop()
	slow, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.fast", Args: json.RawMessage(`"slow"`), LeaseMs: lease.Milliseconds()})
	require.NoError(t, err)
	quick, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.fast", Args: json.RawMessage(`"quick"`), LeaseMs: lease.Milliseconds()})
	require.NoError(t, err)
	for range 2 {
		require.Equal(t, "completed", sig.AttemptEnded.Wait(t).Outcome)
	}
	j := waitState(t, ten, slow.ID, "completed")
	require.GreaterOrEqual(t, j.Attempts[0].Heartbeats, int64(3), "a heartbeat every third of the lease while it ran")
	require.LessOrEqual(t, j.Attempts[0].Heartbeats, int64(11))
	j = waitState(t, ten, quick.ID, "completed")
	require.Zero(t, j.Attempts[0].Heartbeats)
}

// forgedHeartbeats corrupts the lease token of heartbeats, so the store
// refuses them with 409.
type forgedHeartbeats struct{}

func (forgedHeartbeats) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/heartbeat") {
		var hb api.HeartbeatRequest
		if err := json.NewDecoder(r.Body).Decode(&hb); err != nil {
			return nil, err
		}
		hb.LeaseToken = strings.Repeat("0", 32)
		b, _ := json.Marshal(hb)
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestRefusedHeartbeatCancelsTheHandler(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	causes := make(chan error, 1)
	stop, sig := start(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"},
		HTTPClient: &http.Client{Transport: forgedHeartbeats{}}},
		map[string]worker.Handler{"test.fast": func(ctx context.Context, j *worker.Job) (any, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		}})
	defer stop()
	j, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.fast", MaxAttempts: 1})
	require.NoError(t, err)
	require.Equal(t, j.ID, sig.HeartbeatWaiting.Wait(t))
	h.Advance(fastLease / 3) // the first heartbeat is due
	cause := await(t, causes, "the handler's context was cancelled")
	require.ErrorIs(t, cause, worker.ErrLeaseLost)
	require.ErrorContains(t, cause, "bad_token", "the store's refusal is the cause")
}

func TestShutdownFinishesRunningJobs(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	started := make(chan struct{})
	release := make(chan struct{})
	stop, sig := start(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}},
		map[string]worker.Handler{"test.echo": func(ctx context.Context, j *worker.Job) (any, error) {
			close(started)
			<-release
			return "finished during shutdown", nil
		}})
	j, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.echo"})
	require.NoError(t, err)
	<-started
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	require.Equal(t, int64(1), sig.Stopped.Wait(t), "Run stopped claiming, and waits for the running handler")
	select {
	case <-stopped:
		t.Fatal("Run returned while a handler was still running")
	default:
	}
	close(release)
	<-stopped
	done, err := ten.Job(context.Background(), j.ID)
	require.NoError(t, err)
	require.Equal(t, "completed", done.State, "the in-flight job was reported before Run returned")
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	_, err := worker.New(worker.Config{Tenants: []string{"a"}})
	require.ErrorContains(t, err, "URL")
	_, err = worker.New(worker.Config{URL: "http://x", Tenants: []string{"Bad Tenant"}})
	require.ErrorContains(t, err, "invalid tenant name")
	w, err := worker.New(worker.Config{URL: "http://x", Tenants: []string{"a"}})
	require.NoError(t, err)
	require.ErrorContains(t, w.Run(context.Background()), "no handlers")
}

func TestCancelReachesTheHandler(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	started := make(chan string, 1)
	causes := make(chan error, 1)
	stop, sig := start(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}},
		map[string]worker.Handler{"test.fast": func(ctx context.Context, j *worker.Job) (any, error) {
			started <- j.JobID
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		}})
	defer stop()
	j, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.fast"})
	require.NoError(t, err)
	<-started
	_, err = ten.Cancel(context.Background(), j.ID, "operator said so")
	require.NoError(t, err)
	require.Equal(t, j.ID, sig.HeartbeatWaiting.Wait(t))
	h.Advance(fastLease / 3) // the next heartbeat is due
	require.ErrorIs(t, await(t, causes, "the handler was told"), worker.ErrCancelled, "the next heartbeat cancels the handler's context")
	done := waitState(t, ten, j.ID, "cancelled")
	require.Equal(t, "cancelled", done.Attempts[0].Outcome, "the worker reported cancelled")
}

func TestSnoozeFinalAndTags(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	var calls atomic.Int64
	stop, sig := start(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}},
		map[string]worker.Handler{"test.fast": func(ctx context.Context, j *worker.Job) (any, error) {
			j.Tag(fmt.Sprintf("attempt-%d", j.Attempt))
			if calls.Add(1) == 1 {
				return nil, worker.Snooze(100 * time.Millisecond)
			}
			return nil, worker.Final(errors.New("the address bounced"))
		}})
	defer stop()
	j, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.fast", MaxAttempts: 10, Tags: []string{"x"}})
	require.NoError(t, err)
	require.Equal(t, api.OutcomeSnoozed, sig.AttemptEnded.Wait(t).Outcome)
	h.Advance(100 * time.Millisecond) // the snooze
	done := waitState(t, ten, j.ID, "dead")
	require.Len(t, done.Attempts, 2)
	require.Equal(t, "snoozed", done.Attempts[0].Outcome)
	require.Equal(t, "failed", done.Attempts[1].Outcome)
	require.Equal(t, int64(1), done.Failures, "the snooze spent nothing; the final failure ended it")
	require.Equal(t, []string{"x", "attempt-1", "attempt-2"}, done.Tags)
}

func TestShutdownReleasesUnfinishedJobs(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	started := make(chan struct{})
	w, err := worker.New(worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}, ShutdownGrace: 100 * time.Millisecond, Logger: quiet})
	require.NoError(t, err)
	w.Handle("test.echo", func(ctx context.Context, j *worker.Job) (any, error) {
		close(started)
		<-ctx.Done() // a handler that only stops when told
		return nil, context.Cause(ctx)
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	j, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.echo"})
	require.NoError(t, err)
	<-started
	cancel()
	require.NoError(t, <-done)
	got, err := ten.Job(context.Background(), j.ID)
	require.NoError(t, err)
	require.Equal(t, "available", got.State, "released for another worker at once")
	require.Equal(t, int64(0), got.Failures, "without spending its retry budget")
	require.Equal(t, "snoozed", got.Attempts[0].Outcome)
}

// TestABatchWithARefusedReportAnswersTheOthers: one job's output is over
// the API's limit, which refuses a batch of reports as a whole; the batch's
// other reports are each sent again alone and recorded on their first
// attempt, and only the oversized one is refused.
func TestABatchWithARefusedReportAnswersTheOthers(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	var refusedBatches, singlesAfter atomic.Int64
	transport := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		switch {
		case err != nil:
		case strings.HasSuffix(r.URL.Path, "/reports") && resp.StatusCode >= 400:
			refusedBatches.Add(1)
		case strings.HasSuffix(r.URL.Path, "/report") && refusedBatches.Load() > 0:
			singlesAfter.Add(1)
		}
		return resp, err
	})
	// The first report is held in transit, so the reports made meanwhile
	// are sent together after it, in one batch.
	first := holdFirst("/report", transport)
	stop, sig := start(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}, Concurrency: 10, ID: "w1",
		HTTPClient: &http.Client{Transport: first}},
		map[string]worker.Handler{"test.echo": func(ctx context.Context, j *worker.Job) (any, error) {
			var args map[string]bool
			if err := j.Decode(&args); err != nil {
				return nil, err
			}
			if args["big"] {
				return strings.Repeat("x", api.MaxOutputBytes+1), nil
			}
			return "ok", nil
		}})
	defer stop()
	firstJob, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"first":true}`)})
	require.NoError(t, err)
	reqs := []api.EnqueueRequest{{Kind: "test.echo", Args: json.RawMessage(`{"big":true}`), MaxAttempts: 1}}
	for range 5 {
		reqs = append(reqs, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
	}
	await(t, first.inTransit, "the first job was reported")
	js, err := ten.EnqueueBatch(context.Background(), reqs)
	require.NoError(t, err)
	for range js {
		sig.ReportQueued.Wait(t) // each report waits behind the first
	}
	close(first.release)
	waitState(t, ten, firstJob.ID, "completed")
	for _, j := range js[1:] {
		done := waitState(t, ten, j.ID, "completed")
		require.Equal(t, int64(1), done.Attempt, "recorded on its first attempt, not refused with the big one")
	}
	// The oversized report's answer came (a request cut short in transit
	// is sent again): every report has been answered.
	awaitEnd(t, sig, func(e worker.AttemptEnd) bool { return e.JobID == js[0].ID })
	require.Positive(t, refusedBatches.Load(), "the batch holding the oversized output was refused as a whole")
	require.GreaterOrEqual(t, singlesAfter.Load(), int64(len(js)), "then each of its reports went alone")
	big, err := ten.Job(context.Background(), js[0].ID)
	require.NoError(t, err)
	require.Equal(t, "running", big.State, "the oversized output was refused: the job waits out its lease")
	require.Empty(t, big.Output)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
