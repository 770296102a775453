package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/inbox"
	"github.com/stile-run/stile/worker"
)

// startReactions runs a worker with reaction handlers until stop.
func startReactions(t *testing.T, cfg worker.Config, handlers map[string]worker.ReactionHandler) (stop func(), sig *worker.TestSignals) {
	t.Helper()
	if cfg.PollWait == 0 {
		cfg.PollWait = 2 * time.Second
	}
	return run(t, cfg, func(w *worker.Worker) {
		for name, h := range handlers {
			w.HandleReaction(name, h)
		}
	})
}

// awaitEnd waits for the end of an attempt that match says is the one;
// ends that come first are kept for later waits (attempts of different
// reactions end in either order).
func awaitEnd(t *testing.T, sig *worker.TestSignals, match func(worker.AttemptEnd) bool) worker.AttemptEnd {
	t.Helper()
	return sig.AttemptEnded.Await(t, match)
}

// ofReaction matches the end of a delivery of the reaction with the outcome.
func ofReaction(name, outcome string) func(worker.AttemptEnd) bool {
	return func(e worker.AttemptEnd) bool { return e.Reaction == name && e.Outcome == outcome }
}

// allSettled says the tenant's reactions have no delivery open: what the
// clock made due has run and settled.
func allSettled(t *testing.T, ten *client.Tenant) bool {
	t.Helper()
	st, err := ten.Reactions(context.Background())
	require.NoError(t, err)
	for _, r := range st.Reactions {
		if len(r.Open) > 0 {
			return false
		}
	}
	return true
}

// The reactions' longest backoff (e2e/testapp).
const reactionMaxBackoff = time.Second

func streamTypes(t *testing.T, ten *client.Tenant, stream string) []string {
	t.Helper()
	r, err := ten.Stream(context.Background(), stream, 1, 100)
	require.NoError(t, err)
	var out []string
	for _, e := range r.Events {
		out = append(out, e.Type)
	}
	return out
}

func command(t *testing.T, ten *client.Tenant, c api.Command) {
	t.Helper()
	_, err := ten.Command(context.Background(), c)
	require.NoError(t, err)
}

// The seed's refund story with the worker library and a real HTTP
// provider that honours Idempotency-Key: attempt 1 dies after the refund
// and before settling; attempt 2 sends the same key, gets the same
// refund, and RecordRefund commits once.
func TestRefundStoryWithTheWorker(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	var mu sync.Mutex
	calls, refunds := 0, map[string]string{}
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		key := r.Header.Get("Idempotency-Key")
		id, ok := refunds[key]
		if !ok {
			id = fmt.Sprintf("re_%d", len(refunds)+1)
			refunds[key] = id
		}
		fmt.Fprintf(w, `{"refund_id":%q}`, id)
	}))
	defer provider.Close()

	var attempts atomic.Int64
	died := make(chan struct{})
	refund := func(ctx context.Context, r *worker.Reaction) error {
		req, _ := http.NewRequestWithContext(ctx, "POST", provider.URL, nil)
		req.Header.Set("Idempotency-Key", r.IdempotencyKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var out struct {
			RefundID string `json:"refund_id"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return err
		}
		if attempts.Add(1) == 1 {
			close(died)
			runtime.Goexit() // the attempt dies after the provider's refund, before settling
		}
		id, _ := json.Marshal(map[string]string{"refund_id": out.RefundID})
		r.Dispatch(api.Command{Aggregate: "payment", AggregateID: r.Event.Stream[len("payment:"):], Type: "RecordRefund", Data: id})
		return nil
	}
	stop, _ := startReactions(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}, ID: "w1"},
		map[string]worker.ReactionHandler{testapp.RefundPolicy: refund})
	defer stop()

	command(t, ten, api.Command{ID: "c1", Aggregate: "payment", AggregateID: "p1", Type: "Create", Data: json.RawMessage(`{"amount":5}`)})
	command(t, ten, api.Command{ID: "r1", Aggregate: "payment", AggregateID: "p1", Type: "RequestRefund"})
	await(t, died, "attempt 1 died")
	// Its lease runs out: the delivery is claimed again at once (moving the
	// clock further could run out attempt 2's lease too).
	h.Advance(2 * testapp.ReactionTimeout)
	require.Eventually(t, func() bool { return len(streamTypes(t, ten, "payment:p1")) == 3 }, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{testapp.PaymentCreated, testapp.RefundRequested, testapp.RefundRecorded}, streamTypes(t, ten, "payment:p1"))
	mu.Lock()
	require.Equal(t, 2, calls, "the provider was called by both attempts")
	require.Len(t, refunds, 1, "and refunded once")
	mu.Unlock()
	require.Equal(t, int64(2), attempts.Load())
	st, err := ten.Reactions(context.Background())
	require.NoError(t, err)
	for _, r := range st.Reactions {
		if r.Name == testapp.RefundPolicy {
			require.Empty(t, r.Open)
		}
	}
}

// A failing delivery is retried after the backoff with its error, and the
// handler's later events wait behind it: they run in event order.
func TestReactionsRunInOrderAndRetry(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	var mu sync.Mutex
	var seen []string
	var failed atomic.Bool
	audit := func(ctx context.Context, r *worker.Reaction) error {
		var d struct{ N int }
		if err := r.Decode(&d); err != nil {
			return err
		}
		if d.N == 1 && failed.CompareAndSwap(false, true) {
			return errors.New("provider down")
		}
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%d:%d:%q", d.N, r.Failures, r.LastError))
		return nil
	}
	stop, sig := startReactions(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}, Concurrency: 4},
		map[string]worker.ReactionHandler{testapp.AuditPolicy: audit})
	defer stop()
	for i := range 4 {
		_, err := ten.Append(context.Background(), "notes", api.AppendRequest{Events: []api.NewEvent{{Type: testapp.Noted,
			Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}}})
		require.NoError(t, err)
	}
	awaitEnd(t, sig, ofReaction(testapp.AuditPolicy, api.OutcomeFailed))
	h.Advance(reactionMaxBackoff)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 4 }, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{`0:0:""`, `1:1:"provider down"`, `2:0:""`, `3:0:""`}, seen)
}

// A process keeps state per payment and a deadline; when the deadline
// fires, the process expires the payment and ends.
func TestProcessDeadlineWithTheWorker(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	expiry := func(ctx context.Context, r *worker.Reaction) error {
		switch r.Event.Type {
		case testapp.PaymentCreated:
			if err := r.SetState(map[string]string{"waiting": "capture"}); err != nil {
				return err
			}
			r.SetDeadline("capture", r.Event.At.Add(300*time.Millisecond))
		case api.DeadlineEventPrefix + testapp.ExpiryProcess:
			var st map[string]string
			ok, err := r.DecodeState(&st)
			if err != nil || !ok || st["waiting"] != "capture" {
				return fmt.Errorf("state %v %v %v", st, ok, err)
			}
			r.Dispatch(api.Command{Aggregate: "payment", AggregateID: r.Correlation, Type: "Expire"})
			r.Done()
		}
		return nil
	}
	stop, sig := startReactions(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}},
		map[string]worker.ReactionHandler{testapp.ExpiryProcess: expiry})
	defer stop()
	command(t, ten, api.Command{ID: "c1", Aggregate: "payment", AggregateID: "p1", Type: "Create"})
	awaitEnd(t, sig, ofReaction(testapp.ExpiryProcess, api.OutcomeSucceeded))
	h.Advance(300 * time.Millisecond) // the deadline fires
	require.Eventually(t, func() bool { return len(streamTypes(t, ten, "payment:p1")) == 2 }, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{testapp.PaymentCreated, testapp.PaymentExpired}, streamTypes(t, ten, "payment:p1"))
}

// A settlement the API refuses (here: state from a policy) fails the
// delivery with why, so it backs off and counts a failure, instead of
// running again at every lease.
func TestARefusedSettlementFailsTheDelivery(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	var mu sync.Mutex
	var seen []string
	audit := func(ctx context.Context, r *worker.Reaction) error {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%d:%q", r.Failures, r.LastError))
		first := len(seen) == 1
		mu.Unlock()
		if first {
			return r.SetState(map[string]int{"n": 1}) // a policy has no state: the settlement is refused
		}
		return nil
	}
	stop, sig := startReactions(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}},
		map[string]worker.ReactionHandler{testapp.AuditPolicy: audit})
	defer stop()
	_, err := ten.Append(context.Background(), "notes", api.AppendRequest{Events: []api.NewEvent{{Type: testapp.Noted, Data: json.RawMessage(`{"n":1}`)}}})
	require.NoError(t, err)
	awaitEnd(t, sig, ofReaction(testapp.AuditPolicy, api.OutcomeFailed))
	h.Advance(reactionMaxBackoff)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 2 }, 20*time.Second, 20*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, `0:""`, seen[0])
	require.Regexp(t, `^1:"the settlement was refused: .*state`, seen[1], "the next attempt counts the failure and says why")
}

// Once Run's context ends, a run finishes the handler it is in and starts
// no more: the rest of the run is released for the next claim.
func TestShutdownStartsNoMoreDeliveries(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	for i := range 5 {
		_, err := ten.Append(context.Background(), "notes", api.AppendRequest{Events: []api.NewEvent{{Type: testapp.Noted,
			Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}}})
		require.NoError(t, err)
	}
	var calls atomic.Int64
	started := make(chan struct{})
	release := make(chan struct{})
	w, err := worker.New(worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}, Logger: quiet, PollWait: time.Second})
	require.NoError(t, err)
	sig := w.TestSignals()
	w.HandleReaction(testapp.AuditPolicy, func(ctx context.Context, r *worker.Reaction) error {
		if calls.Add(1) == 1 {
			close(started)
			<-release
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-started
	cancel()
	require.Equal(t, int64(1), sig.Stopped.Wait(t), "Run stopped claiming; the run is in its handler")
	close(release)
	require.NoError(t, <-done)
	require.Equal(t, int64(1), calls.Load(), "no delivery started after the stop")

	st, err := ten.Reactions(context.Background())
	require.NoError(t, err)
	for _, r := range st.Reactions {
		if r.Name == testapp.AuditPolicy {
			require.NotEmpty(t, r.Open, "the rest of the run is open again")
			require.NotEqual(t, "pending", r.Open[0].State, "released, not held until its lease runs out")
		}
	}
}

// A run that waited for a slot until its next delivery could no longer
// finish inside its lease does not start it (another worker may hold it
// by then): it is released, and runs once, under a new claim.
func TestAStaleDeliveryIsNotStarted(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	_, err := ten.Append(context.Background(), "notes", api.AppendRequest{Events: []api.NewEvent{{Type: testapp.Noted, Data: json.RawMessage(`{"n":1}`)}}})
	require.NoError(t, err)
	command(t, ten, api.Command{ID: "c1", Aggregate: "payment", AggregateID: "p1", Type: "Create", Data: json.RawMessage(`{"amount":5}`)})
	command(t, ten, api.Command{ID: "c2", Aggregate: "payment", AggregateID: "p1", Type: "RequestRefund"})
	var mu sync.Mutex
	var refunds []int64
	slowStarted, release := make(chan struct{}, 4), make(chan struct{})
	slow := func(ctx context.Context, r *worker.Reaction) error {
		slowStarted <- struct{}{}
		<-release // held while the clock passes the refund delivery's lease
		return nil
	}
	refund := func(ctx context.Context, r *worker.Reaction) error {
		mu.Lock()
		defer mu.Unlock()
		refunds = append(refunds, r.Attempt)
		return nil
	}
	stop, sig := startReactions(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}, Concurrency: 1},
		map[string]worker.ReactionHandler{testapp.AuditPolicy: slow, testapp.RefundPolicy: refund})
	defer stop()
	await(t, slowStarted, "the audit's run took the only slot")
	h.Advance(3 * testapp.ReactionTimeout) // longer than the refund delivery's lease
	close(release)
	// The audit ends and the refund's turn comes: released, it is claimed
	// again at once.
	awaitEnd(t, sig, func(e worker.AttemptEnd) bool { return e.Reaction == testapp.AuditPolicy })
	awaitEnd(t, sig, ofReaction(testapp.RefundPolicy, api.OutcomeSucceeded))
	// Nothing can run the refund again once its delivery settled.
	require.Eventually(t, func() bool { return allSettled(t, ten) }, 20*time.Second, 20*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, refunds, 1, "the refund ran once")
	require.Greater(t, refunds[0], int64(1), "not under the claim whose lease ran out")
}

// The staging calls the process test does not use: KeyFor is the same on
// every attempt and differs from the delivery's key; a command scheduled
// without an id gets one derived from the key, so the tenant's alarm
// applies it once; a cancelled deadline never fires.
func TestKeyForScheduleAndCancelDeadline(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	command(t, ten, api.Command{ID: "c1", Aggregate: "payment", AggregateID: "p1", Type: "Create"})
	var mu sync.Mutex
	var keys []string
	var fired []string
	var deliveryKey string
	audit := func(ctx context.Context, r *worker.Reaction) error {
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, r.KeyFor("capture"))
		deliveryKey = r.IdempotencyKey
		r.Schedule(r.Event.At.Add(100*time.Millisecond), api.Command{Aggregate: "payment", AggregateID: "p1", Type: "Capture"})
		if len(keys) == 1 {
			return errors.New("fails once, after staging")
		}
		return nil
	}
	expiry := func(ctx context.Context, r *worker.Reaction) error {
		switch r.Event.Type {
		case testapp.PaymentCreated:
			r.SetDeadline("expire", r.Event.At.Add(400*time.Millisecond))
			r.SetDeadline("remind", r.Event.At.Add(100*time.Millisecond))
			return r.SetState(map[string]bool{"open": true})
		case api.DeadlineEventPrefix + testapp.ExpiryProcess:
			var d api.DeadlineFired
			if err := r.Decode(&d); err != nil {
				return err
			}
			mu.Lock()
			fired = append(fired, d.Name)
			mu.Unlock()
			r.CancelDeadline("expire")
		}
		return nil
	}
	stop, sig := startReactions(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}, Concurrency: 4},
		map[string]worker.ReactionHandler{testapp.AuditPolicy: audit, testapp.ExpiryProcess: expiry})
	defer stop()
	awaitEnd(t, sig, ofReaction(testapp.AuditPolicy, api.OutcomeFailed))
	awaitEnd(t, sig, ofReaction(testapp.ExpiryProcess, api.OutcomeSucceeded)) // the deadlines are set
	h.Advance(100 * time.Millisecond)                                         // the reminder is due, not yet the audit's retry
	awaitEnd(t, sig, ofReaction(testapp.ExpiryProcess, api.OutcomeSucceeded)) // it cancelled the expiry
	h.Advance(reactionMaxBackoff)                                             // past the cancelled deadline, and the audit's retry is due
	awaitEnd(t, sig, ofReaction(testapp.AuditPolicy, api.OutcomeSucceeded))
	h.Advance(0) // the command it scheduled is due
	require.Eventually(t, func() bool { return len(streamTypes(t, ten, "payment:p1")) == 2 }, 20*time.Second, 20*time.Millisecond)
	// Every delivery the clock made due has run: the expiry's too, had it fired.
	require.Eventually(t, func() bool { return allSettled(t, ten) }, 20*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{testapp.PaymentCreated, testapp.PaymentCaptured}, streamTypes(t, ten, "payment:p1"),
		"captured once by the scheduled command, never expired")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, keys, 2)
	require.Equal(t, keys[0], keys[1], "KeyFor is the same on every attempt")
	require.NotEqual(t, deliveryKey, keys[0])
	require.Equal(t, []string{"remind"}, fired, "the cancelled deadline never fired")
	got, err := ten.GetCommand(context.Background(), inbox.KeyFor(deliveryKey, "scheduled/0"))
	require.NoError(t, err, "the scheduled command's id is derived from the delivery's key")
	require.Equal(t, testapp.PaymentCaptured, got.Events[0].Type)
}

// countedSettles counts the settle requests with more than one
// settlement, and those of them refused as a whole (400).
type countedSettles struct {
	next    http.RoundTripper
	batches atomic.Int64
	refused atomic.Int64
}

func (s *countedSettles) RoundTrip(r *http.Request) (*http.Response, error) {
	batch := false
	if strings.HasSuffix(r.URL.Path, "/settle") && r.ContentLength > 0 {
		body, _ := io.ReadAll(r.Body)
		if batch = strings.Count(string(body), `"claim_id"`) > 1; batch {
			s.batches.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := s.next.RoundTrip(r)
	if batch && err == nil && resp.StatusCode == http.StatusBadRequest {
		s.refused.Add(1)
	}
	return resp, err
}

// TestABatchWithARefusedSettlementAnswersTheOthers: three runs settle at
// once; the two that wait behind the first go in one request, which the
// API refuses as a whole for the one that is invalid. Each is then sent
// alone: the valid one succeeds on its first run, the invalid one fails.
func TestABatchWithARefusedSettlementAnswersTheOthers(t *testing.T) {
	t.Parallel()
	h, ten := setup(t)
	// The first settlement is held in transit, so the ones made meanwhile
	// are sent together after it.
	first := holdFirst("/settle", http.DefaultTransport)
	transport := &countedSettles{next: first}
	var expiryRuns, auditRuns atomic.Int64
	stop, sig := startReactions(t, worker.Config{URL: h.URL, Token: token, Clock: h.WorkerClock(), Tenants: []string{"acme"}, Concurrency: 6,
		HTTPClient: &http.Client{Transport: transport}},
		map[string]worker.ReactionHandler{
			testapp.RefundPolicy: func(ctx context.Context, r *worker.Reaction) error { return nil }, // settles first, held
			testapp.AuditPolicy: func(ctx context.Context, r *worker.Reaction) error {
				<-first.inTransit // settles behind the refund's
				if auditRuns.Add(1) == 1 {
					return r.SetState(map[string]int{"n": 1}) // a policy has no state: refused
				}
				return nil
			},
			testapp.ExpiryProcess: func(ctx context.Context, r *worker.Reaction) error {
				<-first.inTransit // settles behind the refund's
				expiryRuns.Add(1)
				return nil
			},
		})
	defer stop()
	_, err := ten.Append(context.Background(), "payment:p1", api.AppendRequest{Events: []api.NewEvent{
		{Type: testapp.RefundRequested, Data: json.RawMessage(`{}`)}, {Type: testapp.PaymentCreated, Data: json.RawMessage(`{}`)}}})
	require.NoError(t, err)
	sig.SettlementQueued.Wait(t)
	sig.SettlementQueued.Wait(t) // the audit's and the expiry's wait behind the refund's
	close(first.release)
	awaitEnd(t, sig, ofReaction(testapp.AuditPolicy, api.OutcomeFailed))
	h.Advance(reactionMaxBackoff)
	require.Eventually(t, func() bool { return auditRuns.Load() == 2 }, 20*time.Second, 20*time.Millisecond, "the refused audit ran again")
	require.Eventually(t, func() bool {
		rs, err := ten.Reactions(context.Background())
		if err != nil {
			return false
		}
		for _, r := range rs.Reactions {
			if r.Name == testapp.ExpiryProcess {
				return r.Checkpoint >= 2
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "the expiry delivery settled")
	require.Equal(t, int64(1), expiryRuns.Load(), "the valid settlement was not refused with the invalid one")
	require.Positive(t, transport.batches.Load(), "two settlements went in one request")
	require.Positive(t, transport.refused.Load(), "the batch was refused as a whole, so its settlements went alone")
}
