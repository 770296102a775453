package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/e2e/testhandlers"
	"github.com/stile-run/stile/stiletest"
)

// Pushed work, as each host runs it: the tenants push their ready work to
// the handlers of e2e/testhandlers, which run as the executor (in-process
// here, the edge executor in workerd: TestEdge runs the same suite), on
// the real clock.

// The suite's parts run at once, each in a tenant of its own: the
// executor has slots enough for each to linger (a lingering drain holds
// two, and lingering drains hold at most half of the slots).
const pushedConcurrency = 40

func TestPushedNative(t *testing.T) {
	t.Parallel()
	h := stiletest.New(t, stiletest.Config{App: testapp.App(), Handlers: testhandlers.Register, Pushed: true, RealClock: true, Token: token,
		Concurrency: pushedConcurrency})
	pushedSuite(t, h.Client(), "native", true)
}

func TestPushedWazero(t *testing.T) {
	t.Parallel()
	h := stiletest.New(t, stiletest.Config{Package: testTenant, Handlers: testhandlers.Register, Pushed: true, RealClock: true, Token: token,
		Concurrency: pushedConcurrency})
	pushedSuite(t, h.Client(), "wazero", true)
}

// pushedSuite is what pushed work must do in every host, each part in a
// tenant of its own named after prefix; parallel runs its parts at once.
func pushedSuite(t *testing.T, cl *client.Client, prefix string, parallel bool) {
	run := func(name string, f func(t *testing.T, ten *client.Tenant)) {
		t.Run(name, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			f(t, cl.Tenant(prefix+"-"+strings.ToLower(name)))
		})
	}
	run("EveryQueue", pushedEveryQueue)
	run("NoWaitBehindASlowJob", pushedBehindASlowJob)
	run("NoReactionWaitsBehindASlowJob", pushedReactionBehindASlowJob)
	run("ALingeringPushTakesTheNextJob", pushedLinger)
	run("JobRetryIsPushedWhenDue", pushedJobRetry)
	run("RunAtIsPushedWhenDue", pushedRunAt)
	run("ReactionRetryIsPushedWhenDue", pushedReactionRetry)
	run("ScheduledCommandIsPushedWhenDue", pushedScheduledCommand)
	run("DeadlineIsPushedWhenDue", pushedDeadline)
	run("WaitingJobsSayWhy", pushedWaitingSaysWhy)
}

func pushedEveryQueue(t *testing.T, ten *client.Tenant) {
	ctx := context.Background()
	// test.email is registered on queue "email"; test.echo is enqueued on
	// a queue no registration names.
	email, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.email", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.Equal(t, "email", email.Queue)
	other, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Queue: "other", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	for _, j := range []api.Job{email, other} {
		done := waitEnded(t, ten, j.ID)
		require.Equal(t, "completed", done.State, "job %s of queue %s", j.ID, j.Queue)
	}
	noPushes(t, ten)
}

func pushedBehindASlowJob(t *testing.T, ten *client.Tenant) {
	ctx := context.Background()
	slow, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"sleep_ms":2500}`)})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		j, err := ten.Job(ctx, slow.ID)
		return err == nil && j.State == "running"
	}, 30*time.Second, 5*time.Millisecond, "the slow job starts")
	// Its push holds a claim for more (it lingers) for a while, then only
	// finishes the slow job: the new job needs a push of its own.
	require.Eventually(t, func() bool {
		st, err := ten.Pushes(ctx)
		return err == nil && len(st.InFlight) == 1 && st.InFlight[0].State == api.PushFinishing
	}, 10*time.Second, 5*time.Millisecond, "the slow job's push took all there was: it only finishes it")

	fast, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	done := waitEnded(t, ten, fast.ID)
	require.Equal(t, "completed", done.State)
	j, err := ten.Job(ctx, slow.ID)
	require.NoError(t, err)
	require.Equal(t, "running", j.State, "the new job completed while the slow one still ran")
	require.Less(t, done.Attempts[0].ClaimedAt.Sub(fast.CreatedAt), 2*time.Second,
		"the new job was claimed at once, not after the slow one")
	require.Equal(t, "completed", waitEnded(t, ten, slow.ID).State)
	noPushes(t, ten)
}

func pushedReactionBehindASlowJob(t *testing.T, ten *client.Tenant) {
	ctx := context.Background()
	slow, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"sleep_ms":2500}`)})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		j, err := ten.Job(ctx, slow.ID)
		return err == nil && j.State == "running"
	}, 30*time.Second, 5*time.Millisecond, "the slow job starts")
	p := newWatchedProvider(t)
	data, _ := json.Marshal(testhandlers.NoteArgs{Provider: p.URL, Mark: "behind"})
	_, err = ten.Command(ctx, api.Command{ID: "n1", Aggregate: "bulk", AggregateID: "b1", Type: "Note", Data: data})
	require.NoError(t, err)
	p.wait(t, "behind")
	j, err := ten.Job(ctx, slow.ID)
	require.NoError(t, err)
	require.Equal(t, "running", j.State, "the reaction ran while the slow job still ran")
	require.Equal(t, "completed", waitEnded(t, ten, slow.ID).State)
	noPushes(t, ten)
}

func pushedLinger(t *testing.T, ten *client.Tenant) {
	ctx := context.Background()
	first, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.Equal(t, "completed", waitEnded(t, ten, first.ID).State)
	var st api.PushStatus
	require.Eventually(t, func() bool {
		var err error
		st, err = ten.Pushes(ctx)
		return err == nil && len(st.InFlight) == 1 && st.InFlight[0].State == api.PushLingering
	}, 10*time.Second, time.Millisecond, "the push lingers once its job is done")
	lingering := st.InFlight[0].ID

	next, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	done := waitEnded(t, ten, next.ID)
	require.Equal(t, "completed", done.State)
	st, err = ten.Pushes(ctx)
	require.NoError(t, err)
	require.Len(t, st.InFlight, 1, "no other push was started for the next job")
	require.Equal(t, lingering, st.InFlight[0].ID, "the lingering push took the next job")
	noPushes(t, ten) // the linger ends, and so does the push
}

func pushedJobRetry(t *testing.T, ten *client.Tenant) {
	p := newWatchedProvider(t)
	args, _ := json.Marshal(map[string]any{"fail_times": 1, "provider": p.URL})
	j, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.fast", Args: args})
	require.NoError(t, err)
	// Waiting on the provider, not the tenant: a request to the tenant
	// applies its due work itself, and would push what the alarm must.
	p.wait(t, j.ID)
	done := waitEnded(t, ten, j.ID)
	require.Equal(t, "completed", done.State)
	require.Equal(t, int64(2), done.Attempt)
	require.Equal(t, "failed", done.Attempts[0].Outcome)
}

func pushedRunAt(t *testing.T, ten *client.Tenant) {
	p := newWatchedProvider(t)
	args, _ := json.Marshal(map[string]any{"provider": p.URL})
	at := time.Now().Add(700 * time.Millisecond)
	j, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.echo", Args: args, RunAt: &at})
	require.NoError(t, err)
	require.Equal(t, "scheduled", j.State)
	p.wait(t, j.ID)
	done := waitEnded(t, ten, j.ID)
	require.Equal(t, "completed", done.State)
	require.False(t, done.Attempts[0].ClaimedAt.Before(at), "not before its run_at")
}

func pushedReactionRetry(t *testing.T, ten *client.Tenant) {
	p := newWatchedProvider(t)
	data, _ := json.Marshal(testhandlers.NoteArgs{FailFirst: true, Provider: p.URL, Mark: "retried"})
	_, err := ten.Command(context.Background(), api.Command{ID: "n1", Aggregate: "bulk", AggregateID: "b1", Type: "Note", Data: data})
	require.NoError(t, err)
	p.wait(t, "retried")
	noPushes(t, ten)
	rs, err := ten.Reactions(context.Background())
	require.NoError(t, err)
	for _, r := range rs.Reactions {
		if r.Name == testapp.AuditPolicy {
			require.Empty(t, r.Open, "the audit delivery settled on its second attempt")
		}
	}
}

func pushedScheduledCommand(t *testing.T, ten *client.Tenant) {
	p := newWatchedProvider(t)
	data, _ := json.Marshal(testhandlers.NoteArgs{ScheduleMs: 700, Provider: p.URL, Mark: "sched"})
	_, err := ten.Command(context.Background(), api.Command{ID: "n1", Aggregate: "bulk", AggregateID: "b1", Type: "Note", Data: data})
	require.NoError(t, err)
	p.wait(t, "sched")
	// The scheduled command is applied by the alarm; its event's delivery
	// is pushed from there.
	p.wait(t, "sched-fired")
	es, err := ten.Stream(context.Background(), "bulk:scheduled", 0, 10)
	require.NoError(t, err)
	require.Len(t, es.Events, 1)
}

func pushedDeadline(t *testing.T, ten *client.Tenant) {
	p := newWatchedProvider(t)
	data, _ := json.Marshal(map[string]any{"amount": testhandlers.ExpireAmount, "provider": p.URL})
	_, err := ten.Command(context.Background(), api.Command{ID: "c1", Aggregate: "payment", AggregateID: "d1", Type: "Create", Data: data})
	require.NoError(t, err)
	p.wait(t, "expired:d1")
	require.Eventually(t, func() bool {
		es, err := ten.Stream(context.Background(), "payment:d1", 0, 10)
		return err == nil && len(es.Events) == 2 && es.Events[1].Type == testapp.PaymentExpired
	}, 30*time.Second, 10*time.Millisecond, "the process expired the payment at its deadline")
}

func pushedWaitingSaysWhy(t *testing.T, ten *client.Tenant) {
	ctx := context.Background()
	// The handlers have no test.other: its job waits, and says why once an
	// executor has claimed without it.
	other, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.other", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	echo, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.Equal(t, "completed", waitEnded(t, ten, echo.ID).State)
	j, err := ten.Job(ctx, other.ID)
	require.NoError(t, err)
	require.Equal(t, "available", j.State)
	require.Contains(t, j.Waiting, `no executor handles kind "test.other"`)
	require.Contains(t, j.Waiting, "test.echo", "it names the kinds the executors take")
	qs, err := ten.Queues(ctx)
	require.NoError(t, err)
	i := slices.IndexFunc(qs.Queues, func(q api.QueueCounts) bool { return q.Queue == "other" })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, []string{"test.other"}, qs.Queues[i].Unhandled)

	// A paused queue says so instead; resumed, its job runs.
	_, err = ten.PauseQueue(ctx, "email", true)
	require.NoError(t, err)
	email, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.email", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	j, err = ten.Job(ctx, email.ID)
	require.NoError(t, err)
	require.Contains(t, j.Waiting, `its queue "email" is paused`)
	_, err = ten.PauseQueue(ctx, "email", false)
	require.NoError(t, err)
	j = waitEnded(t, ten, email.ID)
	require.Equal(t, "completed", j.State)
	require.Empty(t, j.Waiting)
	noPushes(t, ten)
}

// waitEnded waits for a job to end, with the long-poll GET /jobs/{id}
// offers (client.Wait).
func waitEnded(t *testing.T, ten *client.Tenant, id string) api.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	j, err := ten.Wait(ctx, id)
	require.NoError(t, err, "job %s did not end", id)
	return j
}

// watchedProvider is a provider double the handlers call once their work
// is done (the key names what), so that a test learns of it without a
// request to the tenant.
type watchedProvider struct {
	URL   string
	mu    sync.Mutex
	calls map[string]chan struct{}
}

func newWatchedProvider(t *testing.T) *watchedProvider {
	p := &watchedProvider{calls: map[string]chan struct{}{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		close(p.called(r.Header.Get("Idempotency-Key"), true))
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// called is the channel of key, closed on its first call (fresh is true
// when the caller closes it now).
func (p *watchedProvider) called(key string, fresh bool) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := p.calls[key]
	if !ok {
		ch = make(chan struct{})
		p.calls[key] = ch
	}
	if fresh {
		select {
		case <-ch:
			return make(chan struct{}) // called before: a throwaway to close
		default:
		}
	}
	return ch
}

func (p *watchedProvider) wait(t *testing.T, key string) {
	t.Helper()
	select {
	case <-p.called(key, false):
	case <-time.After(30 * time.Second):
		t.Fatalf("the provider was not called with key %q in 30 s", key)
	}
}
