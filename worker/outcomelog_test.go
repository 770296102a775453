package worker_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/worker"
)

// logLines captures a worker's log as JSON lines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// warnings are the lines at Warn or above whose attributes include match.
func (l *logLines) warnings(t *testing.T, match map[string]any) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		if line["level"] != "WARN" && line["level"] != "ERROR" {
			continue
		}
		matches := true
		for k, v := range match {
			matches = matches && fmt.Sprint(line[k]) == fmt.Sprint(v)
		}
		if matches {
			out = append(out, line)
		}
	}
	return out
}

// oneLine waits for the attempt to end (ended waits), after which nothing
// more is logged for it, and checks its line is the only one.
func (l *logLines) oneLine(t *testing.T, ended func(), match map[string]any) map[string]any {
	t.Helper()
	ended()
	lines := l.warnings(t, match)
	require.Len(t, lines, 1, "one line per attempt:\n%s", l.String())
	return lines[0]
}

// firstAttempts are the first attempts that ended, by job id or reaction.
type firstAttempts struct {
	sig   *worker.TestSignals
	ended map[string]bool
}

// await waits until the first attempt of key ended.
func (f *firstAttempts) await(t *testing.T, key string) func() {
	return func() {
		t.Helper()
		for !f.ended[key] {
			if e := f.sig.AttemptEnded.Wait(t); e.Attempt == 1 {
				f.ended[e.JobID+e.Reaction] = true
			}
		}
	}
}

// awaitHeartbeats waits until the heartbeat loops of the jobs wait on
// the clock.
func awaitHeartbeats(t *testing.T, sig *worker.TestSignals, ids ...string) {
	t.Helper()
	waiting := map[string]bool{}
	for len(waiting) < len(ids) {
		if id := sig.HeartbeatWaiting.Wait(t); slices.Contains(ids, id) {
			waiting[id] = true
		}
	}
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// A failed, panicked or timed-out attempt, and a failed delivery, are each
// logged once, at Warn, with the tenant, the kind or reaction, the job or
// event, the attempt and the error; a successful one is not.
func TestEachFailedAttemptIsLoggedOnce(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	logs := &logLines{}
	w, err := worker.New(worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}, PollWait: time.Second,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	sig := w.TestSignals()
	hanging := make(chan string, 2)
	w.Handle("test.echo", func(ctx context.Context, j *worker.Job) (any, error) {
		var a struct{ Do string }
		require.NoError(t, j.Decode(&a))
		switch a.Do {
		case "fail":
			return nil, errors.New("the provider said no")
		case "panic":
			panic("the provider's answer was nil")
		case "hang":
			hanging <- j.JobID
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return "ok", nil
	})
	w.HandleReaction(testapp.RefundPolicy, func(ctx context.Context, r *worker.Reaction) error {
		return errors.New("the refund provider is down")
	})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		stop()
		require.NoError(t, <-done)
	}()

	enqueue := func(do string, r api.EnqueueRequest) api.Job {
		r.Kind, r.Args, r.MaxAttempts = "test.echo", json.RawMessage(`{"do":"`+do+`"}`), 1
		j, err := ten.Enqueue(ctx, r)
		require.NoError(t, err)
		return j
	}
	failed, panicked := enqueue("fail", api.EnqueueRequest{}), enqueue("panic", api.EnqueueRequest{})
	hung := enqueue("hang", api.EnqueueRequest{LeaseMs: 1000, TimeoutMs: 1000})
	// A time limit shorter than the lease: the claim's lease is cut at it.
	hungLongLease := enqueue("hang", api.EnqueueRequest{LeaseMs: 60_000, TimeoutMs: 1000})
	succeeded := enqueue("succeed", api.EnqueueRequest{})
	command(t, ten, api.Command{ID: "c1", Aggregate: "payment", AggregateID: "p1", Type: "Create", Data: json.RawMessage(`{"amount":5}`)})
	command(t, ten, api.Command{ID: "r1", Aggregate: "payment", AggregateID: "p1", Type: "RequestRefund"})

	// Both hung handlers run, then their time limit passes (a worker cuts
	// a handler a tenth of its limit early: reportTime in worker.go).
	hung1, hung2 := await(t, hanging, "a hung handler started"), await(t, hanging, "the other hung handler started")
	for _, d := range []time.Duration{333, 333, 234} {
		awaitHeartbeats(t, sig, hung1, hung2) // both wait on the clock
		h.Advance(d * time.Millisecond)       // a heartbeat each, and at 900 ms the time limit
	}

	job := func(j api.Job) map[string]any {
		return map[string]any{"tenant": "acme", "kind": "test.echo", "job": j.ID, "attempt": 1}
	}
	first := &firstAttempts{sig: sig, ended: map[string]bool{}}
	ended := func(j api.Job) func() { return first.await(t, j.ID) }
	line := logs.oneLine(t, ended(failed), job(failed))
	require.Equal(t, "job failed", line["msg"])
	require.Equal(t, "the provider said no", line["err"])

	line = logs.oneLine(t, ended(panicked), job(panicked))
	require.Equal(t, "job handler panicked", line["msg"])
	require.Equal(t, "handler panicked: the provider's answer was nil", line["err"], "the error's first line")
	require.Contains(t, line["stack"], "outcomelog_test.go", "the stack apart")

	line = logs.oneLine(t, ended(hung), job(hung))
	require.Equal(t, "job timed out", line["msg"])
	require.Equal(t, "timed out after 1000 ms: context deadline exceeded", line["err"])
	timedOut := waitState(t, ten, hung.ID, "dead")
	require.Equal(t, "failed", timedOut.Attempts[0].Outcome,
		"the report arrived while the attempt still held its lease, not after the tenant expired it")

	line = logs.oneLine(t, ended(hungLongLease), job(hungLongLease))
	require.Equal(t, "job timed out", line["msg"], "not a report refused by the fence")
	timedOut = waitState(t, ten, hungLongLease.ID, "dead")
	require.Equal(t, "failed", timedOut.Attempts[0].Outcome)
	require.Equal(t, int64(1000), timedOut.Attempts[0].LeaseUntil.Sub(timedOut.Attempts[0].ClaimedAt).Milliseconds(),
		"the lease ran to the time limit, not the 60 s lease")
	require.Equal(t, "timed out after 1000 ms: context deadline exceeded", timedOut.Attempts[0].Error)

	line = logs.oneLine(t, first.await(t, testapp.RefundPolicy), map[string]any{"tenant": "acme", "reaction": testapp.RefundPolicy, "attempt": 1})
	require.Equal(t, "reaction failed", line["msg"])
	require.Equal(t, "the refund provider is down", line["err"])
	require.NotZero(t, line["seq"])

	waitState(t, ten, succeeded.ID, "completed")
	require.Empty(t, logs.warnings(t, map[string]any{"job": succeeded.ID}), "a successful attempt is quiet")
}
