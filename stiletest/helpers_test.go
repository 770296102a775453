package stiletest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/stiletest"
	"github.com/stile-run/stile/worker"
)

// fakeTB records a helper's failure instead of failing the test: the
// helpers are tested for what they say, too.
type fakeTB struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) { f.Errorf(format, args...); f.FailNow() }
func (f *fakeTB) Fatal(args ...any)                 { f.Errorf("%s", fmt.Sprint(args...)); f.FailNow() }
func (f *fakeTB) FailNow()                          { panic(fakeFailNow{}) }

type fakeFailNow struct{}

// fails runs a helper with a fake TB and returns what it failed with ("" if
// it passed).
func fails(t *testing.T, helper func(tb testing.TB)) string {
	t.Helper()
	f := &fakeTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(fakeFailNow); !ok {
					panic(r)
				}
			}
		}()
		helper(f)
	}()
	return strings.Join(f.failures, "\n")
}

func register(w *worker.Worker) {
	w.Handle("test.echo", func(ctx context.Context, j *worker.Job) (any, error) { return j.Args, nil })
	w.Handle("test.fast", func(ctx context.Context, j *worker.Job) (any, error) { return nil, errors.New("always fails") })
	w.Handle("test.other", func(ctx context.Context, j *worker.Job) (any, error) {
		<-ctx.Done() // until its time limit, on the harness's clock
		return nil, context.Cause(ctx)
	})
	w.HandleReaction(testapp.RefundPolicy, func(ctx context.Context, r *worker.Reaction) error {
		payment := strings.TrimPrefix(r.Event.Stream, "payment:")
		r.Dispatch(api.Command{Aggregate: "payment", AggregateID: payment, Type: "RecordRefund",
			Data: json.RawMessage(`{"refund_id":"re_` + r.KeyFor("refund")[:6] + `"}`)})
		return nil
	})
}

func TestRequireEnqueuedMatchesArgsAsASubsetAndSaysWhatWasThere(t *testing.T) {
	t.Parallel()
	h := stiletest.New(t, stiletest.Config{App: testapp.App(), Handlers: register})
	ctx := context.Background()
	_, err := h.Tenant("acme").Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"to":"ada@example.com","n":1,"tags":["a","b"]}`)})
	require.NoError(t, err)

	j := h.RequireEnqueued(t, "test.echo", map[string]any{"to": "ada@example.com"})
	require.Equal(t, "available", j.State)
	h.RequireEnqueued(t, "test.echo", nil)
	h.RequireEnqueued(t, "test.echo", map[string]any{"n": 1, "tags": []string{"a", "b"}})
	h.RequireNotEnqueued(t, "test.echo", map[string]any{"to": "bob@example.com"})
	h.RequireNotEnqueued(t, "test.fast", nil)

	msg := fails(t, func(tb testing.TB) { h.RequireEnqueued(tb, "test.echo", map[string]any{"to": "bob@example.com"}) })
	require.Contains(t, msg, `no job of kind "test.echo" with args containing {"to":"bob@example.com"}`)
	require.Contains(t, msg, `job 1 (available): {"to":"ada@example.com","n":1,"tags":["a","b"]}`, "what was there")
	msg = fails(t, func(tb testing.TB) { h.RequireEnqueued(tb, "test.fast", nil) })
	require.Contains(t, msg, `no job of kind "test.fast"; its jobs are of kinds test.echo`)
	msg = fails(t, func(tb testing.TB) { h.RequireNotEnqueued(tb, "test.echo", map[string]any{"n": 1}) })
	require.Contains(t, msg, `has job 1 of kind "test.echo" (available)`)
	msg = fails(t, func(tb testing.TB) { h.For("globex").RequireEnqueued(tb, "test.echo", nil) })
	require.Contains(t, msg, "tenant globex has no job", "For acts on another tenant")
	require.Contains(t, msg, "it has no job at all")
}

func TestWorkOneAndWorkAllRunTheHandlersInTheTest(t *testing.T) {
	t.Parallel()
	h := stiletest.New(t, stiletest.Config{App: testapp.App(), Handlers: register})
	ctx := context.Background()
	acme := h.Tenant("acme")
	_, ok := h.WorkOne(t)
	require.False(t, ok, "nothing ready")
	a, err := acme.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"x":1}`)})
	require.NoError(t, err)
	// Another queue; a 60 s lease and a 90 s time limit.
	other, err := acme.Enqueue(ctx, api.EnqueueRequest{Kind: "test.other", LeaseMs: 60_000, TimeoutMs: 90_000})
	require.NoError(t, err)

	ran, ok := h.WorkOne(t)
	require.True(t, ok)
	require.Equal(t, worker.Ran{Tenant: "acme", JobID: a.ID, Kind: "test.echo", Outcome: api.OutcomeCompleted,
		Output: json.RawMessage(`{"x":1}`)}, ran)
	require.Equal(t, "completed", h.RequireEnqueued(t, "test.echo", nil).State, "reported through the API")

	// test.other waits for its time limit. The harness's clock keeps the
	// worker's heartbeats and time limit: each Advance of 25 s sends a
	// heartbeat that extends the lease, until the 90 s limit.
	done := make(chan []worker.Ran, 1)
	go func() { done <- h.WorkAll(t) }()
	var lease time.Time
	require.Eventually(t, func() bool {
		j, err := acme.Job(ctx, other.ID)
		if err == nil && j.Running != nil {
			lease = j.Running.LeaseUntil
		}
		return !lease.IsZero()
	}, 5*time.Second, time.Millisecond)
	// The worker waits on the clock for its next heartbeat, its lease and
	// its time limit before each move.
	waiting := func() {
		// Its next heartbeat and its time limit.
		require.Eventually(t, func() bool { return h.Clock().Waiting() == 2 }, 5*time.Second, time.Millisecond)
	}
	// Two heartbeats (the second's lease is cut at the time limit).
	for range 2 {
		waiting()
		h.Advance(25 * time.Second)
		require.Eventually(t, func() bool {
			j, err := acme.Job(ctx, other.ID)
			return err == nil && j.Running != nil && j.Running.LeaseUntil.After(lease)
		}, 5*time.Second, time.Millisecond, "a heartbeat on the harness's clock extended the lease")
		j, _ := acme.Job(ctx, other.ID)
		lease = j.Running.LeaseUntil
	}
	waiting()
	h.Advance(40 * time.Second) // 90 s: the time limit
	rs := <-done
	require.Len(t, rs, 1)
	require.Equal(t, api.OutcomeFailed, rs[0].Outcome)
	require.Contains(t, rs[0].Error, "timed out after 90000 ms", "the time limit fired on the harness's clock")
	_, err = acme.Cancel(ctx, other.ID, "its retry would wait for the clock again")
	require.NoError(t, err)

	// A retry becomes ready only when the clock reaches it.
	f, err := acme.Enqueue(ctx, api.EnqueueRequest{Kind: "test.fast"})
	require.NoError(t, err)
	rs = h.WorkAll(t)
	require.Len(t, rs, 1)
	require.Equal(t, "always fails", rs[0].Error)
	require.Empty(t, h.WorkAll(t), "the retry waits for its backoff")
	h.Advance(time.Second)
	rs = h.WorkAll(t)
	require.Len(t, rs, 1)
	require.Equal(t, f.ID, rs[0].JobID)
	require.Equal(t, "retryable", h.RequireEnqueued(t, "test.fast", nil).State)
}

// WorkAll runs what its handlers make ready while it runs, in any queue:
// a job a handler enqueues into a queue that did not exist before it ran.
func TestWorkAllFindsQueuesMadeWhileItRuns(t *testing.T) {
	t.Parallel()
	var h *stiletest.Harness
	h = stiletest.New(t, stiletest.Config{App: testapp.App(), Handlers: func(w *worker.Worker) {
		w.Handle("test.echo", func(ctx context.Context, j *worker.Job) (any, error) {
			if string(j.Args) == `{"then":"email"}` {
				_, err := h.Tenant(j.Tenant).Enqueue(ctx, api.EnqueueRequest{Kind: "test.email", Args: json.RawMessage(`{}`)})
				return nil, err
			}
			return nil, nil
		})
		w.Handle("test.email", func(ctx context.Context, j *worker.Job) (any, error) { return j.Queue, nil })
	}})
	_, err := h.Tenant("acme").Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.echo", Queue: "first", Args: json.RawMessage(`{"then":"email"}`)})
	require.NoError(t, err)
	rs := h.WorkAll(t)
	require.Len(t, rs, 2, "one WorkAll runs the job in queue first and the one it enqueued in queue email")
	require.Equal(t, "test.echo", rs[0].Kind)
	require.Equal(t, "test.email", rs[1].Kind)
	require.JSONEq(t, `"email"`, string(rs[1].Output))
}

func TestWorkOneRunsReactionsAndRequireEventFindsWhatTheyCaused(t *testing.T) {
	t.Parallel()
	h := stiletest.New(t, stiletest.Config{App: testapp.App(), Handlers: register})
	ctx := context.Background()
	acme := h.Tenant("acme")
	_, err := acme.Command(ctx, api.Command{ID: "c1", Aggregate: "payment", AggregateID: "p1", Type: "Create", Data: json.RawMessage(`{"amount":5}`)})
	require.NoError(t, err)
	_, err = acme.Command(ctx, api.Command{ID: "r1", Aggregate: "payment", AggregateID: "p1", Type: "RequestRefund"})
	require.NoError(t, err)
	var refunds []worker.Ran
	for _, r := range h.WorkAll(t) {
		if r.Reaction == testapp.RefundPolicy {
			refunds = append(refunds, r)
		}
	}
	require.Len(t, refunds, 1)
	require.Equal(t, api.OutcomeSucceeded, refunds[0].Outcome)
	require.Equal(t, "RecordRefund", refunds[0].Settlement.Commands[0].Type)
	e := h.RequireEvent(t, testapp.RefundRecorded, nil)
	require.Equal(t, "payment:p1", e.Stream)
	msg := fails(t, func(tb testing.TB) { h.RequireEvent(tb, testapp.RefundRecorded, map[string]any{"refund_id": "nope"}) })
	require.Contains(t, msg, `no event of type "RefundRecorded" with data containing {"refund_id":"nope"}`)
	require.Contains(t, msg, "payment:p1 RefundRecorded: {\"refund_id\":\"re_", "what was there")
	msg = fails(t, func(tb testing.TB) { h.RequireEvent(tb, "Nothing", nil) })
	require.Contains(t, msg, "it has no event of that type; its 3 events:")
}

func TestQueryCatchesTheProjectionsUp(t *testing.T) {
	t.Parallel()
	h := stiletest.New(t, stiletest.Config{App: testapp.App()})
	ctx := context.Background()
	for i := range 3 {
		_, err := h.Tenant("acme").Append(ctx, "notes:a", api.AppendRequest{Events: []api.NewEvent{
			{Type: testapp.Noted, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i+1))}}})
		require.NoError(t, err)
	}
	rows := h.Query(t, "note_totals", nil)
	require.Equal(t, []map[string]any{{"stream": "notes:a", "count": float64(3), "sum": float64(6)}}, rows,
		"the test's writes are in the projection without calling FireDue")
	_, err := h.Tenant("acme").Append(ctx, "notes:b", api.AppendRequest{Events: []api.NewEvent{
		{Type: testapp.Noted, Data: json.RawMessage(`{"n":1,"poison_until":9999999999999}`)}}})
	require.NoError(t, err)
	msg := fails(t, func(tb testing.TB) { h.CatchUp(tb) })
	require.Contains(t, msg, "projection notes of acme is stalled at event 4: event 4 (Noted): poisoned until")
}

func TestDeliverRunsAReactionHandlerAlone(t *testing.T) {
	t.Parallel()
	handler := func(ctx context.Context, r *worker.Reaction) error {
		if r.Event.Type != testapp.RefundRequested {
			return errors.New("not a refund request")
		}
		r.Dispatch(api.Command{Aggregate: "payment", AggregateID: "p1", Type: "RecordRefund", Data: json.RawMessage(`{"refund_id":"re_1"}`)})
		r.Schedule(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), api.Command{Aggregate: "payment", AggregateID: "p1", Type: "Capture"})
		r.SetDeadline("expire", time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC))
		return r.SetState(map[string]int{"refunds": 1})
	}
	ev := api.Event{Seq: 7, Stream: "payment:p1", Type: testapp.RefundRequested, Data: json.RawMessage(`{"amount":5}`)}
	s := stiletest.Deliver(t, handler, stiletest.Delivery{Handler: testapp.RefundPolicy, Event: ev})
	require.Equal(t, api.OutcomeSucceeded, s.Outcome)
	require.Len(t, s.Commands, 1)
	require.Equal(t, "RecordRefund", s.Commands[0].Type)
	require.NotEmpty(t, s.Commands[0].ID, "a dispatched command gets its id from the delivery's key")
	again := stiletest.Deliver(t, handler, stiletest.Delivery{Handler: testapp.RefundPolicy, Event: ev, Attempt: 2})
	require.Equal(t, s.Commands[0].ID, again.Commands[0].ID, "the same on a retry: it is applied once")
	require.Len(t, s.Scheduled, 1)
	require.Len(t, s.Deadlines, 1)
	require.JSONEq(t, `{"refunds":1}`, string(s.State))

	failed := stiletest.Deliver(t, handler, stiletest.Delivery{Handler: testapp.RefundPolicy, Event: api.Event{Type: "Other"}})
	require.Equal(t, api.OutcomeFailed, failed.Outcome)
	require.Equal(t, "not a refund request", failed.Error)
	require.Empty(t, failed.Commands, "a failure stages nothing")

	rep := stiletest.TryJob(t, func(ctx context.Context, j *worker.Job) (any, error) { return map[string]string{"ok": j.Kind}, nil }, "k", nil)
	require.Equal(t, api.OutcomeCompleted, rep.Outcome)
	require.JSONEq(t, `{"ok":"k"}`, string(rep.Output))
	rep = stiletest.TryJob(t, func(ctx context.Context, j *worker.Job) (any, error) { return nil, worker.Snooze(time.Minute) }, "k", nil)
	require.Equal(t, api.OutcomeSnoozed, rep.Outcome)
	require.Equal(t, int64(60000), rep.SnoozeMs)
}

// TestEachHarnessGivesItsHandlersItsOwnEnv: two harnesses in parallel,
// each with its own Env, and a variable only the process has: the
// handlers see their harness's configuration alone, as WorkOne runs them
// and as the pushed executor does.
func TestEachHarnessGivesItsHandlersItsOwnEnv(t *testing.T) {
	t.Parallel()
	readEnv := func(w *worker.Worker) {
		w.Handle("test.echo", func(ctx context.Context, j *worker.Job) (any, error) {
			return map[string]string{"url": w.Getenv("PROVIDER_URL"), "path": w.Getenv("PATH")}, nil
		})
	}
	for _, url := range []string{"http://one.example", "http://two.example"} {
		for _, pushed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s pushed=%v", url, pushed), func(t *testing.T) {
				t.Parallel()
				h := stiletest.New(t, stiletest.Config{App: testapp.App(), Handlers: readEnv, Pushed: pushed,
					Env: map[string]string{"PROVIDER_URL": url}})
				j, err := h.Tenant("acme").Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.echo"})
				require.NoError(t, err)
				if pushed {
					h.WaitIdle(t)
				} else {
					_, ok := h.WorkOne(t)
					require.True(t, ok)
				}
				got := h.RequireEnqueued(t, "test.echo", nil)
				require.Equal(t, "completed", got.State)
				require.JSONEq(t, `{"url":"`+url+`","path":""}`, string(got.Output), "job %s", j.ID)
			})
		}
	}
}
