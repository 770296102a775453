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

// setup starts a native host on the real clock with alarms, behind HTTP.
func setup(t *testing.T) (string, *client.Tenant) {
	t.Helper()
	h := stiletest.New(t, stiletest.Config{App: testapp.App(), RealClock: true, Token: token})
	return h.URL, h.Tenant("acme")
}

// start runs a worker with job handlers until stop.
func start(t *testing.T, cfg worker.Config, handlers map[string]worker.Handler) (stop func()) {
	t.Helper()
	return run(t, cfg, func(w *worker.Worker) {
		for k, h := range handlers {
			w.Handle(k, h)
		}
	})
}

// run runs a worker, with the handlers register gives it, until stop.
func run(t *testing.T, cfg worker.Config, register func(*worker.Worker)) (stop func()) {
	t.Helper()
	cfg.Logger = quiet
	w, err := worker.New(cfg)
	require.NoError(t, err)
	register(w)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
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
	url, ten := setup(t)
	var running, peak atomic.Int64
	stop := start(t, worker.Config{URL: url, Token: token, Tenants: []string{"acme"}, Concurrency: 4, ID: "w1"},
		map[string]worker.Handler{"test.echo": func(ctx context.Context, j *worker.Job) (any, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(20 * time.Millisecond)
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
	url, ten := setup(t)
	var calls atomic.Int64
	stop := start(t, worker.Config{URL: url, Token: token, Tenants: []string{"acme"}},
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
	done := waitState(t, ten, j.ID, "completed")
	require.Len(t, done.Attempts, 3)
	require.Equal(t, "first try fails", done.Attempts[0].Error)
	require.Contains(t, done.Attempts[1].Error, "handler panicked: second try panics")
	require.Contains(t, done.Attempts[1].Error, "worker_test.go", "the panic's stack is in the error")
	require.JSONEq(t, `"third time lucky"`, string(done.Output))
}

// slowHeartbeats delays heartbeat requests past the lease, so the store
// answers "lease expired".
type slowHeartbeats struct {
	delay time.Duration
	once  sync.Once
}

func (s *slowHeartbeats) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/heartbeat") {
		s.once.Do(func() { time.Sleep(s.delay) })
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestLostLeaseCancelsTheHandler(t *testing.T) {
	t.Parallel()
	url, ten := setup(t)
	causes := make(chan error, 4)
	var calls atomic.Int64
	stop := start(t, worker.Config{URL: url, Token: token, Tenants: []string{"acme"},
		HTTPClient: &http.Client{Transport: &slowHeartbeats{delay: 1500 * time.Millisecond}}},
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
	select {
	case cause := <-causes:
		require.ErrorIs(t, cause, worker.ErrLeaseLost)
	case <-time.After(20 * time.Second):
		t.Fatal("the handler's context was never cancelled")
	}
	done := waitState(t, ten, j.ID, "completed")
	require.JSONEq(t, `"second attempt"`, string(done.Output), "the late report of attempt 1 was fenced out")
	require.Equal(t, "lease_expired", done.Attempts[0].Outcome)
	require.Eventually(t, func() bool {
		j, err := ten.Job(context.Background(), j.ID)
		return err == nil && len(j.Rejections) > 0 && j.Rejections[len(j.Rejections)-1].Request == "report"
	}, 20*time.Second, 20*time.Millisecond, "attempt 1's late report is refused and on record")
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
	url, ten := setup(t)
	causes := make(chan error, 1)
	stop := start(t, worker.Config{URL: url, Token: token, Tenants: []string{"acme"},
		HTTPClient: &http.Client{Transport: forgedHeartbeats{}}},
		map[string]worker.Handler{"test.fast": func(ctx context.Context, j *worker.Job) (any, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		}})
	defer stop()
	_, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.fast", MaxAttempts: 1})
	require.NoError(t, err)
	select {
	case cause := <-causes:
		require.ErrorIs(t, cause, worker.ErrLeaseLost)
		require.ErrorContains(t, cause, "bad_token", "the store's refusal is the cause")
	case <-time.After(20 * time.Second):
		t.Fatal("the handler's context was never cancelled")
	}
}

func TestShutdownFinishesRunningJobs(t *testing.T) {
	t.Parallel()
	url, ten := setup(t)
	started := make(chan struct{})
	release := make(chan struct{})
	stop := start(t, worker.Config{URL: url, Token: token, Tenants: []string{"acme"}},
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
	select {
	case <-stopped:
		t.Fatal("Run returned while a handler was still running")
	case <-time.After(200 * time.Millisecond):
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
	url, ten := setup(t)
	started := make(chan string, 1)
	causes := make(chan error, 1)
	stop := start(t, worker.Config{URL: url, Token: token, Tenants: []string{"acme"}},
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
	select {
	case cause := <-causes:
		require.ErrorIs(t, cause, worker.ErrCancelled, "the next heartbeat cancels the handler's context")
	case <-time.After(20 * time.Second):
		t.Fatal("the handler was never told")
	}
	done := waitState(t, ten, j.ID, "cancelled")
	require.Equal(t, "cancelled", done.Attempts[0].Outcome, "the worker reported cancelled")
}

func TestSnoozeFinalAndTags(t *testing.T) {
	t.Parallel()
	url, ten := setup(t)
	var calls atomic.Int64
	stop := start(t, worker.Config{URL: url, Token: token, Tenants: []string{"acme"}},
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
	done := waitState(t, ten, j.ID, "dead")
	require.Len(t, done.Attempts, 2)
	require.Equal(t, "snoozed", done.Attempts[0].Outcome)
	require.Equal(t, "failed", done.Attempts[1].Outcome)
	require.Equal(t, int64(1), done.Failures, "the snooze spent nothing; the final failure ended it")
	require.Equal(t, []string{"x", "attempt-1", "attempt-2"}, done.Tags)
}

func TestShutdownReleasesUnfinishedJobs(t *testing.T) {
	t.Parallel()
	url, ten := setup(t)
	started := make(chan struct{})
	w, err := worker.New(worker.Config{URL: url, Token: token, Tenants: []string{"acme"}, ShutdownGrace: 100 * time.Millisecond, Logger: quiet})
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

// slowFirstReport holds the first report in transit, so the reports made
// meanwhile are sent together after it, in one batch.
type slowFirstReport struct {
	once sync.Once
	next http.RoundTripper
}

func (s *slowFirstReport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/report") {
		s.once.Do(func() { time.Sleep(500 * time.Millisecond) })
	}
	return s.next.RoundTrip(r)
}

// TestABatchWithARefusedReportAnswersTheOthers: one job's output is over
// the API's limit, which refuses a batch of reports as a whole; the batch's
// other reports are each sent again alone and recorded on their first
// attempt, and only the oversized one is refused.
func TestABatchWithARefusedReportAnswersTheOthers(t *testing.T) {
	t.Parallel()
	url, ten := setup(t)
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
	stop := start(t, worker.Config{URL: url, Token: token, Tenants: []string{"acme"}, Concurrency: 10, ID: "w1",
		HTTPClient: &http.Client{Transport: &slowFirstReport{next: transport}}},
		map[string]worker.Handler{"test.echo": func(ctx context.Context, j *worker.Job) (any, error) {
			var args map[string]bool
			if err := j.Decode(&args); err != nil {
				return nil, err
			}
			if args["big"] {
				return strings.Repeat("x", api.MaxOutputBytes+1), nil
			}
			if !args["first"] {
				time.Sleep(50 * time.Millisecond) // report while the first is held
			}
			return "ok", nil
		}})
	defer stop()
	first, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"first":true}`)})
	require.NoError(t, err)
	reqs := []api.EnqueueRequest{{Kind: "test.echo", Args: json.RawMessage(`{"big":true}`), MaxAttempts: 1}}
	for range 5 {
		reqs = append(reqs, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
	}
	time.Sleep(30 * time.Millisecond) // the first is claimed and reporting
	js, err := ten.EnqueueBatch(context.Background(), reqs)
	require.NoError(t, err)
	waitState(t, ten, first.ID, "completed")
	for _, j := range js[1:] {
		done := waitState(t, ten, j.ID, "completed")
		require.Equal(t, int64(1), done.Attempt, "recorded on its first attempt, not refused with the big one")
	}
	require.Positive(t, refusedBatches.Load(), "the batch holding the oversized output was refused as a whole")
	require.GreaterOrEqual(t, singlesAfter.Load(), int64(len(js)), "then each of its reports went alone")
	big, err := ten.Job(context.Background(), js[0].ID)
	require.NoError(t, err)
	require.Equal(t, "running", big.State, "the oversized output was refused: the job waits out its lease")
	require.Empty(t, big.Output)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
