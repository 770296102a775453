package worker_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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

// oneLine waits for the attempt's line and checks it is the only one.
func (l *logLines) oneLine(t *testing.T, match map[string]any) map[string]any {
	t.Helper()
	require.Eventually(t, func() bool { return len(l.warnings(t, match)) > 0 }, 10*time.Second, 10*time.Millisecond,
		"a line with %v:\n%s", match, l.String())
	time.Sleep(100 * time.Millisecond) // room for a second line, were there one
	lines := l.warnings(t, match)
	require.Len(t, lines, 1, "one line per attempt:\n%s", l.String())
	return lines[0]
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
	url, ten := setup(t)
	logs := &logLines{}
	w, err := worker.New(worker.Config{URL: url, Token: token, Tenants: []string{"acme"}, PollWait: time.Second,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	w.Handle("test.echo", func(ctx context.Context, j *worker.Job) (any, error) {
		var a struct{ Do string }
		require.NoError(t, j.Decode(&a))
		switch a.Do {
		case "fail":
			return nil, errors.New("the provider said no")
		case "panic":
			panic("the provider's answer was nil")
		case "hang":
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

	job := func(j api.Job) map[string]any {
		return map[string]any{"tenant": "acme", "kind": "test.echo", "job": j.ID, "attempt": 1}
	}
	line := logs.oneLine(t, job(failed))
	require.Equal(t, "job failed", line["msg"])
	require.Equal(t, "the provider said no", line["err"])

	line = logs.oneLine(t, job(panicked))
	require.Equal(t, "job handler panicked", line["msg"])
	require.Equal(t, "handler panicked: the provider's answer was nil", line["err"], "the error's first line")
	require.Contains(t, line["stack"], "outcomelog_test.go", "the stack apart")

	line = logs.oneLine(t, job(hung))
	require.Equal(t, "job timed out", line["msg"])
	require.Equal(t, "timed out after 1000 ms: context deadline exceeded", line["err"])
	timedOut := waitState(t, ten, hung.ID, "dead")
	require.Equal(t, "failed", timedOut.Attempts[0].Outcome,
		"the report arrived while the attempt still held its lease, not after the tenant expired it")

	line = logs.oneLine(t, job(hungLongLease))
	require.Equal(t, "job timed out", line["msg"], "not a report refused by the fence")
	timedOut = waitState(t, ten, hungLongLease.ID, "dead")
	require.Equal(t, "failed", timedOut.Attempts[0].Outcome)
	require.Equal(t, int64(1000), timedOut.Attempts[0].LeaseUntil.Sub(timedOut.Attempts[0].ClaimedAt).Milliseconds(),
		"the lease ran to the time limit, not the 60 s lease")
	require.Equal(t, "timed out after 1000 ms: context deadline exceeded", timedOut.Attempts[0].Error)

	line = logs.oneLine(t, map[string]any{"tenant": "acme", "reaction": testapp.RefundPolicy, "attempt": 1})
	require.Equal(t, "reaction failed", line["msg"])
	require.Equal(t, "the refund provider is down", line["err"])
	require.NotZero(t, line["seq"])

	waitState(t, ten, succeeded.ID, "completed")
	require.Empty(t, logs.warnings(t, map[string]any{"job": succeeded.ID}), "a successful attempt is quiet")
}
