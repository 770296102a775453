package e2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/inbox"
)

// Scenarios of the event log, commands and reactions (policies,
// processes, the inbox).

// reactionLease is how long a claim holds one delivery of the test
// reactions: twice their time limit.
const reactionLease = 2 * testapp.ReactionTimeout

func (s *scenario) command(c api.Command) api.CommandResult {
	s.t.Helper()
	r, err := s.ten.Command(s.ctx, c)
	require.NoError(s.t, err, "command %s %s", c.Type, c.ID)
	return r
}

// createPayment applies Create on payment id.
func (s *scenario) createPayment(id string, amount int) api.CommandResult {
	return s.command(api.Command{ID: "create-" + id, Aggregate: "payment", AggregateID: id, Type: "Create",
		Data: json.RawMessage(fmt.Sprintf(`{"amount":%d}`, amount))})
}

// deliveries claims up to limit deliveries for worker of the handlers,
// requiring exactly want (long-polling in real time when want > 0).
func (s *scenario) deliveries(worker string, limit, want int, handlers ...string) []api.Delivery {
	s.t.Helper()
	r := api.ReactionClaimRequest{Worker: worker, Handlers: handlers, Limit: limit}
	if s.tg.realTime() && want > 0 {
		r.WaitMs = 15_000
	}
	resp, err := s.ten.ClaimReactions(s.ctx, r)
	require.NoError(s.t, err)
	require.Len(s.t, resp.Deliveries, want, "deliveries to %s of %v", worker, handlers)
	return resp.Deliveries
}

func (s *scenario) settleOne(st api.Settlement) api.SettleResult {
	s.t.Helper()
	res, err := s.ten.Settle(s.ctx, st)
	require.NoError(s.t, err)
	require.Len(s.t, res, 1)
	return res[0]
}

func succeeded(d api.Delivery, cmds ...api.Command) api.Settlement {
	return api.Settlement{Handler: d.Handler, Seq: d.Event.Seq, ClaimID: d.ClaimID, Outcome: api.OutcomeSucceeded, Commands: cmds}
}

// quiet lets the tenant's due alarms run until none is due at its now:
// neither by its committed state (the status) nor by the alarm its host
// holds (in process, where the test can see it).
func (s *scenario) quiet() {
	s.t.Helper()
	cond := func() bool {
		st, err := s.ten.Status(s.ctx)
		require.NoError(s.t, err)
		if p := s.tg.inProcess(); p != nil {
			if at := p.manager.AlarmAt(s.ten.Name()); at != 0 && at <= p.clock.Now() {
				return false
			}
		}
		return st.AlarmAt == nil || st.AlarmAt.After(st.Now)
	}
	if !s.tg.realTime() {
		for i := 0; i < 10 && !cond(); i++ {
			s.tg.advance(s.t, 0)
		}
	}
	eventually(s.t, s.tg, cond, "no alarm is due")
}

func (s *scenario) stream(name string) []api.Event {
	s.t.Helper()
	r, err := s.ten.Stream(s.ctx, name, 1, 1000)
	require.NoError(s.t, err)
	return r.Events
}

func (s *scenario) eventTypes(name string) []string {
	var out []string
	for _, e := range s.stream(name) {
		out = append(out, e.Type)
	}
	return out
}

func scenarioEventLog(s *scenario) {
	t := s.t
	zero := int64(0)
	a, err := s.ten.Append(s.ctx, "orders-1", api.AppendRequest{ExpectedVersion: &zero, Events: []api.NewEvent{
		{Type: "OrderPlaced", Data: json.RawMessage(`{"total":12}`)}, {Type: "OrderPaid"}}})
	require.NoError(t, err)
	require.Equal(t, api.AppendResponse{Stream: "orders-1", Version: 2, FirstSeq: 1, LastSeq: 2}, a)

	// A writer that decided on version 0 again is refused with the current
	// version, and writes nothing.
	_, err = s.ten.Append(s.ctx, "orders-1", api.AppendRequest{ExpectedVersion: &zero, Events: []api.NewEvent{{Type: "OrderPlaced"}}})
	requireCode(t, err, http.StatusConflict, api.CodeVersionConflict)
	require.Equal(t, int64(2), *clientErr(t, err).CurrentVersion)
	two := int64(2)
	b, err := s.ten.Append(s.ctx, "orders-2", api.AppendRequest{Events: []api.NewEvent{{Type: "OrderPlaced"}}})
	require.NoError(t, err)
	require.Equal(t, int64(3), b.FirstSeq, "seqs are gapless across streams, refused appends take none")
	c, err := s.ten.Append(s.ctx, "orders-1", api.AppendRequest{ExpectedVersion: &two, Events: []api.NewEvent{{Type: "OrderShipped"}}})
	require.NoError(t, err)
	require.Equal(t, int64(3), c.Version)

	all, err := s.ten.Events(s.ctx, 0, 2)
	require.NoError(t, err)
	require.Len(t, all.Events, 2)
	require.Equal(t, int64(4), all.Head)
	require.Equal(t, int64(2), all.Next)
	rest, err := s.ten.Events(s.ctx, all.Next, 100)
	require.NoError(t, err)
	require.Equal(t, []int64{3, 4}, []int64{rest.Events[0].Seq, rest.Events[1].Seq})
	placed, err := s.ten.Events(s.ctx, 0, 100, "OrderPlaced")
	require.NoError(t, err)
	require.Len(t, placed.Events, 2)
	require.Equal(t, []string{"OrderPlaced", "OrderPaid", "OrderShipped"}, s.eventTypes("orders-1"))
	require.JSONEq(t, `{"total":12}`, string(s.stream("orders-1")[0].Data))
	require.Equal(t, "null", string(s.stream("orders-1")[1].Data))

	// Bad input: a clear 400 and nothing written.
	raw := func(method, path, body string) int {
		status, _, err := s.tg.client().Raw(s.ctx, method, "/v1/t/"+s.ten.Name()+"/"+path, []byte(body), nil)
		require.NoError(t, err)
		return status
	}
	for _, bad := range []struct{ path, body string }{
		{"streams/orders-1", `{"events":[]}`},
		{"streams/orders-1", `{"events":[{"type":"bad type"}]}`},
		{"streams/orders-1", `{"events":[{"type":"stile.fake"}]}`},
		{"streams/stile.deadline:x", `{"events":[{"type":"A"}]}`},
		{"streams/orders-1", `{"events":[{"type":"A","data":{"x":}}]}`},
		{"streams/orders-1", `{"events":[{"type":"A"}],"expected_version":-1}`},
		{"streams/orders-1", `{"events":[{"type":"A","colour":1}]}`},
		{"streams/" + strings.Repeat("s", 300), `{"events":[{"type":"A"}]}`},
		{"commands", `{"id":"c1","aggregate":"nope","aggregate_id":"1","type":"Create"}`},
		{"commands", `{"aggregate":"payment","aggregate_id":"1","type":"Create"}`},
		{"commands", `{"id":"c1","aggregate":"payment","aggregate_id":"a b","type":"Create"}`},
	} {
		require.Equal(t, http.StatusBadRequest, raw("POST", bad.path, bad.body), "%s %s", bad.path, bad.body)
	}
	require.Equal(t, http.StatusBadRequest, raw("GET", "events?after=-1", ""))
	require.Equal(t, http.StatusBadRequest, raw("GET", "events?limit=5000", ""))
	after, err := s.ten.Events(s.ctx, 0, 100)
	require.NoError(t, err)
	require.Equal(t, int64(4), after.Head, "refused requests appended nothing")
}

func scenarioCommands(s *scenario) {
	t := s.t
	r := s.createPayment("p1", 500)
	require.Equal(t, "payment:p1", r.Stream)
	require.Equal(t, int64(1), r.Version)
	require.Len(t, r.Events, 1)
	require.Equal(t, testapp.PaymentCreated, r.Events[0].Type)
	require.False(t, r.Duplicate)

	// The same id again: acknowledged with what it did, not applied twice.
	again := s.createPayment("p1", 500)
	require.True(t, again.Duplicate)
	require.Equal(t, r.Events[0].Seq, again.Events[0].Seq)
	require.Len(t, s.stream("payment:p1"), 1)

	// The id reused for another command is refused.
	_, err := s.ten.Command(s.ctx, api.Command{ID: "create-p1", Aggregate: "payment", AggregateID: "p2", Type: "Create"})
	requireCode(t, err, http.StatusConflict, api.CodeCommandIDReused)
	// The aggregate refuses: 422, nothing written, the id stays free.
	_, err = s.ten.Command(s.ctx, api.Command{ID: "create-again", Aggregate: "payment", AggregateID: "p1", Type: "Create"})
	requireCode(t, err, http.StatusUnprocessableEntity, api.CodeCommandRejected)
	_, err = s.ten.GetCommand(s.ctx, "create-again")
	requireCode(t, err, http.StatusNotFound, api.CodeNotFound)
	// A panic in Decide is a bug in the module, not a refusal: 500
	// decide_panicked, and nothing is written either.
	_, err = s.ten.Command(s.ctx, api.Command{ID: "boom", Aggregate: "payment", AggregateID: "p1", Type: "Explode"})
	requireCode(t, err, http.StatusInternalServerError, api.CodeDecidePanicked)
	require.Contains(t, err.Error(), "the aggregate exploded")
	_, err = s.ten.GetCommand(s.ctx, "boom")
	requireCode(t, err, http.StatusNotFound, api.CodeNotFound)
	require.Len(t, s.stream("payment:p1"), 1)

	// A command's jobs are enqueued in its transaction.
	withJob := s.command(api.Command{ID: "create-p3", Aggregate: "payment", AggregateID: "p3", Type: "CreateWithReceipt",
		Data: json.RawMessage(`{"amount":7}`)})
	require.Len(t, withJob.JobIDs, 1)
	job := s.job(withJob.JobIDs[0])
	require.Equal(t, "test.echo", job.Kind)
	require.JSONEq(t, `{"amount":7}`, string(job.Args))
	got, err := s.ten.GetCommand(s.ctx, "create-p3")
	require.NoError(t, err)
	require.Equal(t, withJob.JobIDs, got.JobIDs)
	require.Equal(t, withJob.Events[0].Seq, got.Events[0].Seq)
}

// provider is a local payment provider that honours Idempotency-Key: a
// repeated key answers the refund it made the first time.
type provider struct {
	mu      sync.Mutex
	calls   int
	refunds map[string]string // key -> refund id
	srv     *httptest.Server
}

func newProvider(t interface{ Cleanup(func()) }) *provider {
	p := &provider{refunds: map[string]string{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		_, _ = io.Copy(io.Discard, r.Body)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.calls++
		id, ok := p.refunds[key]
		if !ok || key == "" {
			id = fmt.Sprintf("re_%d", len(p.refunds)+1)
			p.refunds[key] = id
		}
		_, _ = fmt.Fprintf(w, `{"refund_id":%q}`, id)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) refund(key string) (string, error) {
	req, _ := http.NewRequest("POST", p.srv.URL+"/refunds", strings.NewReader(`{}`))
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		RefundID string `json:"refund_id"`
	}
	return out.RefundID, json.NewDecoder(resp.Body).Decode(&out)
}

func (p *provider) counts() (calls, refunds int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls, len(p.refunds)
}

// scenarioRefundStory is the seed's story: the attempt dies after the
// provider's refund and before it settles; the next attempt calls with
// the same key, gets the same refund, and RecordRefund commits once.
func scenarioRefundStory(s *scenario) {
	t := s.t
	prov := newProvider(t)
	s.createPayment("p1", 500)
	s.command(api.Command{ID: "refund-p1", Aggregate: "payment", AggregateID: "p1", Type: "RequestRefund"})

	first := s.deliveries("a", 10, 1, testapp.RefundPolicy)[0]
	require.Equal(t, testapp.RefundRequested, first.Event.Type)
	refundID, err := prov.refund(first.IdempotencyKey)
	require.NoError(t, err)
	// … and attempt 1 dies here, before settling.

	s.deliveries("b", 10, 0, testapp.RefundPolicy) // still held by a's lease
	s.tg.advance(t, reactionLease+100*time.Millisecond)
	second := s.deliveries("b", 10, 1, testapp.RefundPolicy)[0]
	require.Equal(t, first.Event.Seq, second.Event.Seq)
	require.Equal(t, int64(2), second.Attempt)
	require.Equal(t, first.IdempotencyKey, second.IdempotencyKey, "the key is the same on every retry")
	require.NotEqual(t, first.ClaimID, second.ClaimID)
	again, err := prov.refund(second.IdempotencyKey)
	require.NoError(t, err)
	require.Equal(t, refundID, again, "the provider answered the refund it already made")

	record := api.Command{ID: "", Aggregate: "payment", AggregateID: "p1", Type: "RecordRefund",
		Data: json.RawMessage(fmt.Sprintf(`{"refund_id":%q}`, again))}
	record.ID = commandIDFor(second, 0)
	res := s.settleOne(succeeded(second, record))
	require.Nil(t, res.Error)
	require.Equal(t, "succeeded", res.State)
	require.Equal(t, 1, res.Events)

	calls, refunds := prov.counts()
	require.Equal(t, 2, calls, "the provider was called twice")
	require.Equal(t, 1, refunds, "and refunded once")
	require.Equal(t, []string{testapp.PaymentCreated, testapp.RefundRequested, testapp.RefundRecorded}, s.eventTypes("payment:p1"))

	// The settlement repeated (its answer lost): a duplicate, nothing new.
	dup := s.settleOne(succeeded(second, record))
	require.True(t, dup.Duplicate)
	require.Len(t, s.stream("payment:p1"), 3)
	s.deliveries("c", 10, 0, testapp.RefundPolicy)
}

// commandIDFor is the id the worker library gives the n-th command a
// delivery dispatches.
func commandIDFor(d api.Delivery, n int) string {
	return inbox.CommandID(d.IdempotencyKey, n)
}

// scenarioTakeover: a stalled attempt whose claim was taken over settles;
// its settlement is refused and nothing it decided is stored; the new
// holder's settlement commits.
func scenarioTakeover(s *scenario) {
	t := s.t
	s.createPayment("p1", 10)
	s.command(api.Command{ID: "rr", Aggregate: "payment", AggregateID: "p1", Type: "RequestRefund"})
	stalled := s.deliveries("stalled", 10, 1, testapp.RefundPolicy)[0]
	s.tg.advance(t, reactionLease+100*time.Millisecond)
	holder := s.deliveries("holder", 10, 1, testapp.RefundPolicy)[0]

	late := s.settleOne(succeeded(stalled, api.Command{ID: "from-stalled", Aggregate: "payment", AggregateID: "p1",
		Type: "RecordRefund", Data: json.RawMessage(`{"refund_id":"re_stalled"}`)}))
	require.NotNil(t, late.Error)
	require.Equal(t, api.CodeClaimTakenOver, late.Error.Code)
	require.Len(t, s.stream("payment:p1"), 2, "nothing the stalled attempt decided is stored")
	_, err := s.ten.GetCommand(s.ctx, "from-stalled")
	requireCode(t, err, http.StatusNotFound, api.CodeNotFound)
	// A failure report of the stalled attempt is refused too.
	failed := s.settleOne(api.Settlement{Handler: stalled.Handler, Seq: stalled.Event.Seq, ClaimID: stalled.ClaimID,
		Outcome: api.OutcomeFailed, Error: "late"})
	require.Equal(t, api.CodeClaimTakenOver, failed.Error.Code)

	ok := s.settleOne(succeeded(holder, api.Command{ID: "from-holder", Aggregate: "payment", AggregateID: "p1",
		Type: "RecordRefund", Data: json.RawMessage(`{"refund_id":"re_holder"}`)}))
	require.Nil(t, ok.Error)
	evs := s.stream("payment:p1")
	require.Len(t, evs, 3)
	require.JSONEq(t, `{"refund_id":"re_holder"}`, string(evs[2].Data))
	require.Equal(t, "from-holder", evs[2].CommandID)

	// A claim id nobody was given, and an event never delivered.
	forged := s.settleOne(api.Settlement{Handler: holder.Handler, Seq: holder.Event.Seq, ClaimID: "forged", Outcome: api.OutcomeSucceeded})
	require.Equal(t, api.CodeClaimTakenOver, forged.Error.Code)
	never := s.settleOne(api.Settlement{Handler: holder.Handler, Seq: 1, ClaimID: holder.ClaimID, Outcome: api.OutcomeSucceeded})
	require.Equal(t, api.CodeUnknownClaim, never.Error.Code)
}

// scenarioAggregateTimeout: an aggregate's override of the policies' time
// limit applies to the events of its streams: their deliveries carry it,
// and the claim's staggered leases add twice it, on the first claim and
// on a takeover alike.
func scenarioAggregateTimeout(s *scenario) {
	t := s.t
	s.createPayment("p1", 10)
	s.command(api.Command{ID: "bulk-1", Aggregate: "bulk", AggregateID: "b1", Type: "Note", Data: json.RawMessage(`{"n":1}`)})
	s.note("notes", testapp.NoteData{N: 2})
	check := func(ds []api.Delivery) {
		t.Helper()
		require.Equal(t, []string{"payment:p1", "bulk:b1", "notes"}, []string{ds[0].Event.Stream, ds[1].Event.Stream, ds[2].Event.Stream})
		require.Equal(t, []int64{testapp.ReactionTimeout.Milliseconds(), testapp.BulkTimeout.Milliseconds(), testapp.ReactionTimeout.Milliseconds()},
			[]int64{ds[0].TimeoutMs, ds[1].TimeoutMs, ds[2].TimeoutMs})
		require.Equal(t, 2*testapp.BulkTimeout, ds[1].LeaseUntil.Sub(ds[0].LeaseUntil), "the bulk event is held twice its override")
		require.Equal(t, reactionLease, ds[2].LeaseUntil.Sub(ds[1].LeaseUntil))
	}
	first := s.deliveries("w1", 10, 3, testapp.AuditPolicy)
	check(first)
	s.tg.advance(t, reactionLease+100*time.Millisecond) // w1 stalls: its first lease runs out
	again := s.deliveries("w2", 10, 3, testapp.AuditPolicy)
	require.Equal(t, int64(2), again[0].Attempt, "taken over")
	check(again)

	// The expiry process gets no override from bulk (it sets none for
	// processes) and handles no Noted events anyway; the payment's
	// creation reaches it with its own time limit.
	p := s.deliveries("w3", 10, 1, testapp.ExpiryProcess)[0]
	require.Equal(t, testapp.ReactionTimeout.Milliseconds(), p.TimeoutMs)
}

// scenarioReactionOrder: a handler's event k+1 waits while k is pending in
// its lease or waiting for a retry, and cannot be settled before k.
func scenarioReactionOrder(s *scenario) {
	t := s.t
	var notes []string
	for i := range 3 {
		a, err := s.ten.Append(s.ctx, "notes", api.AppendRequest{Events: []api.NewEvent{{Type: testapp.Noted,
			Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}}})
		require.NoError(t, err)
		notes = append(notes, fmt.Sprint(a.FirstSeq))
	}
	k := s.deliveries("a", 1, 1, testapp.AuditPolicy)[0]
	require.Equal(t, notes[0], fmt.Sprint(k.Event.Seq))
	s.deliveries("b", 5, 0, testapp.AuditPolicy) // k is pending: k+1 waits

	// A batch claim gets the next two; the second cannot succeed first.
	s.tg.advance(t, reactionLease+100*time.Millisecond)
	run := s.deliveries("b", 5, 3, testapp.AuditPolicy)
	require.Equal(t, k.Event.Seq, run[0].Event.Seq, "the expired head comes first")
	require.True(t, run[1].LeaseUntil.After(run[0].LeaseUntil), "later deliveries of a run are held longer")
	early := s.settleOne(succeeded(run[1]))
	require.Equal(t, api.CodeOutOfOrder, early.Error.Code)

	// The head fails: the rest of the run is put back behind it.
	res := s.settleOne(api.Settlement{Handler: run[0].Handler, Seq: run[0].Event.Seq, ClaimID: run[0].ClaimID,
		Outcome: api.OutcomeFailed, Error: "provider down"})
	require.Equal(t, "retry", res.State)
	s.deliveries("c", 5, 0, testapp.AuditPolicy) // the head waits for its backoff, the rest behind it
	st, err := s.ten.Reactions(s.ctx)
	require.NoError(t, err)
	audit := reactionStatus(t, st, testapp.AuditPolicy)
	require.Equal(t, "retry", audit.Open[0].State)
	require.Equal(t, "provider down", audit.Open[0].Error)
	require.Equal(t, int64(1), audit.Open[0].Failures)

	s.tg.advance(t, time.Second+100*time.Millisecond) // past the backoff (at most 200 ms) and any lease
	again := s.deliveries("c", 5, 3, testapp.AuditPolicy)
	require.Equal(t, k.Event.Seq, again[0].Event.Seq)
	require.Equal(t, "provider down", again[0].LastError)
	require.Equal(t, int64(1), again[0].Failures)
	for _, d := range again {
		require.Nil(t, s.settleOne(succeeded(d)).Error)
	}
	st, err = s.ten.Reactions(s.ctx)
	require.NoError(t, err)
	audit = reactionStatus(t, st, testapp.AuditPolicy)
	require.Empty(t, audit.Open)
	require.Equal(t, int64(0), audit.Lag)
	require.Equal(t, again[2].Event.Seq, audit.Checkpoint)
}

func clientErr(t require.TestingT, err error) *api.Error {
	var ce *api.Error
	require.ErrorAs(t, err, &ce)
	return ce
}

func reactionStatus(t require.TestingT, st api.ReactionsResponse, name string) api.ReactionStatus {
	for _, r := range st.Reactions {
		if r.Name == name {
			return r
		}
	}
	require.Fail(t, "no reaction "+name)
	return api.ReactionStatus{}
}

// scenarioDelayAndSkip: a delay runs the delivery again later without
// counting a failure; an operator skips a delivery that keeps failing.
func scenarioDelayAndSkip(s *scenario) {
	t := s.t
	for i := range 2 {
		_, err := s.ten.Append(s.ctx, "notes", api.AppendRequest{Events: []api.NewEvent{{Type: testapp.Noted,
			Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}}})
		require.NoError(t, err)
	}
	d := s.deliveries("a", 1, 1, testapp.AuditPolicy)[0]
	res := s.settleOne(api.Settlement{Handler: d.Handler, Seq: d.Event.Seq, ClaimID: d.ClaimID, Outcome: api.OutcomeDelayed, DelayMs: 600})
	require.Equal(t, "retry", res.State)
	s.deliveries("a", 1, 0, testapp.AuditPolicy)
	s.tg.advance(t, 700*time.Millisecond)
	d2 := s.deliveries("a", 1, 1, testapp.AuditPolicy)[0]
	require.Equal(t, d.Event.Seq, d2.Event.Seq)
	require.Equal(t, int64(0), d2.Failures, "a delay is not a failure")

	// Skipping needs a reason and the stuck head.
	err := s.ten.Skip(s.ctx, testapp.AuditPolicy, d2.Event.Seq+1, "wrong one")
	requireCode(t, err, http.StatusConflict, api.CodeNotStuck)
	require.NoError(t, s.ten.Skip(s.ctx, testapp.AuditPolicy, d2.Event.Seq, "poison event, see ticket 42"))
	late := s.settleOne(succeeded(d2))
	require.Equal(t, api.CodeAlreadySettled, late.Error.Code)
	next := s.deliveries("a", 5, 1, testapp.AuditPolicy)[0]
	require.Equal(t, d2.Event.Seq+1, next.Event.Seq, "the handler moved on")
}

// scenarioProcessDeadline: a process keeps state per payment and sets a
// deadline; the alarm fires it as an event delivered to the process with
// its state, and the process ends.
func scenarioProcessDeadline(s *scenario) {
	t := s.t
	s.createPayment("p1", 10)
	d := s.deliveries("w", 10, 1, testapp.ExpiryProcess)[0]
	require.Equal(t, api.ReactionKindProcess, d.Kind)
	require.Equal(t, "p1", d.Correlation)
	require.Empty(t, d.State)
	claimed, err := s.ten.ClaimReactions(s.ctx, api.ReactionClaimRequest{Worker: "probe", Handlers: []string{testapp.ExpiryProcess}})
	require.NoError(t, err)
	require.Empty(t, claimed.Deliveries)
	at := d.LeaseUntil.Add(-reactionLease).Add(1500 * time.Millisecond) // the claim's time + 1.5 s
	res := s.settleOne(api.Settlement{Handler: d.Handler, Seq: d.Event.Seq, ClaimID: d.ClaimID, Outcome: api.OutcomeSucceeded,
		State: json.RawMessage(`{"waiting":"capture"}`), Deadlines: []api.Deadline{{Name: "capture", At: at}}})
	require.Nil(t, res.Error)
	status, err := s.ten.Status(s.ctx)
	require.NoError(t, err)
	require.NotNil(t, status.AlarmAt)
	require.False(t, status.AlarmAt.After(at), "the alarm covers the deadline")

	s.deliveries("w", 10, 0, testapp.ExpiryProcess)
	s.tg.advance(t, 1600*time.Millisecond)
	fired := s.deliveries("w", 10, 1, testapp.ExpiryProcess)[0]
	require.Equal(t, api.DeadlineEventPrefix+testapp.ExpiryProcess, fired.Event.Type)
	require.Equal(t, "p1", fired.Correlation)
	require.JSONEq(t, `{"waiting":"capture"}`, string(fired.State))
	var data api.DeadlineFired
	require.NoError(t, json.Unmarshal(fired.Event.Data, &data))
	require.Equal(t, "capture", data.Name)

	res = s.settleOne(api.Settlement{Handler: fired.Handler, Seq: fired.Event.Seq, ClaimID: fired.ClaimID, Outcome: api.OutcomeSucceeded,
		Commands: []api.Command{{ID: commandIDFor(fired, 0), Aggregate: "payment", AggregateID: "p1", Type: "Expire"}}, Done: true})
	require.Nil(t, res.Error)
	require.Equal(t, []string{testapp.PaymentCreated, testapp.PaymentExpired}, s.eventTypes("payment:p1"))
	// The deadline fired once: no second event, however often the alarm runs.
	s.tg.advance(t, 1600*time.Millisecond)
	evs, err := s.ten.Events(s.ctx, 0, 100, api.DeadlineEventPrefix+testapp.ExpiryProcess)
	require.NoError(t, err)
	require.Len(t, evs.Events, 1)
	// PaymentExpired is not the process's; the next payment starts a fresh instance.
	s.createPayment("p2", 10)
	next := s.deliveries("w", 10, 1, testapp.ExpiryProcess)[0]
	require.Equal(t, "p2", next.Correlation)
	require.Empty(t, next.State)
}

// scenarioScheduledCommand: a settlement schedules a command; the alarm
// applies it at its time, once.
func scenarioScheduledCommand(s *scenario) {
	t := s.t
	s.createPayment("p1", 10)
	d := s.deliveries("w", 10, 1, testapp.AuditPolicy)[0]
	at := d.LeaseUntil.Add(-reactionLease).Add(time.Second)
	capture := api.Command{ID: "capture-p1", Aggregate: "payment", AggregateID: "p1", Type: "Capture"}
	res := s.settleOne(api.Settlement{Handler: d.Handler, Seq: d.Event.Seq, ClaimID: d.ClaimID, Outcome: api.OutcomeSucceeded,
		Scheduled: []api.ScheduledCommand{{At: at, Command: capture}}})
	require.Nil(t, res.Error)
	require.Len(t, s.stream("payment:p1"), 1)
	s.tg.advance(t, 1100*time.Millisecond)
	eventually(t, s.tg, func() bool { return len(s.stream("payment:p1")) == 2 }, "the alarm applied the scheduled command")
	got, err := s.ten.GetCommand(s.ctx, "capture-p1")
	require.NoError(t, err)
	require.Equal(t, testapp.PaymentCaptured, got.Events[0].Type)
	s.tg.advance(t, time.Second)
	require.Len(t, s.stream("payment:p1"), 2)

	// The same id scheduled again (another run of the policy, a reused
	// id) is stored once: nothing new is due, and the alarm does not wait
	// for a command that is not there.
	s.createPayment("p2", 10)
	d = s.deliveries("w", 10, 1, testapp.AuditPolicy)[0]
	res = s.settleOne(api.Settlement{Handler: d.Handler, Seq: d.Event.Seq, ClaimID: d.ClaimID, Outcome: api.OutcomeSucceeded,
		Scheduled: []api.ScheduledCommand{{At: d.LeaseUntil.Add(-reactionLease).Add(100 * time.Millisecond), Command: capture}}})
	require.Nil(t, res.Error)
	s.tg.advance(t, 200*time.Millisecond)
	s.quiet()
	require.Len(t, s.stream("payment:p1"), 2)

	// Another command under that id is refused: the delivery fails.
	s.createPayment("p3", 10)
	d = s.deliveries("w", 10, 1, testapp.AuditPolicy)[0]
	other := api.Command{ID: "capture-p1", Aggregate: "payment", AggregateID: "p3", Type: "Capture"}
	res = s.settleOne(api.Settlement{Handler: d.Handler, Seq: d.Event.Seq, ClaimID: d.ClaimID, Outcome: api.OutcomeSucceeded,
		Scheduled: []api.ScheduledCommand{{At: d.LeaseUntil, Command: other}}})
	require.NotNil(t, res.Error)
	require.Equal(t, api.CodeCommandIDReused, res.Error.Code, res.Error.Message)
	require.Equal(t, "retry", res.State)
}

// scenarioRejectedCommandFailsDelivery: a command the aggregate refuses
// fails the settlement: nothing of it is written, the delivery retries.
func scenarioRejectedCommandFailsDelivery(s *scenario) {
	t := s.t
	s.createPayment("p1", 10)
	s.quiet() // the projections caught up with the payment's event
	d := s.deliveries("w", 10, 1, testapp.AuditPolicy)[0]
	res := s.settleOne(succeeded(d,
		api.Command{ID: "ok-one", Aggregate: "payment", AggregateID: "p1", Type: "Capture"},
		api.Command{ID: "bad-one", Aggregate: "payment", AggregateID: "p1", Type: "Create"}))
	require.NotNil(t, res.Error)
	require.Equal(t, api.CodeCommandRejected, res.Error.Code)
	require.Equal(t, "retry", res.State)
	require.Len(t, s.stream("payment:p1"), 1, "the first command's event went with the rest")
	_, err := s.ten.GetCommand(s.ctx, "ok-one")
	requireCode(t, err, http.StatusNotFound, api.CodeNotFound)
	// The rolled-back event gives the projections no work: the alarm
	// waits for the delivery's backoff, not for a catch-up due now.
	status, err := s.ten.Status(s.ctx)
	require.NoError(t, err)
	require.NotNil(t, status.AlarmAt, "the alarm covers the delivery's retry")
	require.True(t, status.AlarmAt.After(status.Now), "the alarm is due at %v, not after the tenant's now %v", status.AlarmAt, status.Now)

	// Bad settlements are refused whole, before anything is read.
	for _, bad := range []api.Settlement{
		{Handler: "nope", Seq: d.Event.Seq, ClaimID: d.ClaimID, Outcome: api.OutcomeSucceeded},
		{Handler: d.Handler, Seq: d.Event.Seq, ClaimID: d.ClaimID, Outcome: "maybe"},
		{Handler: d.Handler, Seq: d.Event.Seq, ClaimID: d.ClaimID, Outcome: api.OutcomeSucceeded, State: json.RawMessage(`{}`)},
		{Handler: d.Handler, Seq: d.Event.Seq, ClaimID: d.ClaimID, Outcome: api.OutcomeFailed,
			Commands: []api.Command{{ID: "x", Aggregate: "payment", AggregateID: "p1", Type: "Capture"}}},
		{Handler: d.Handler, Seq: d.Event.Seq, ClaimID: d.ClaimID, Outcome: api.OutcomeSucceeded,
			Commands: []api.Command{{Aggregate: "payment", AggregateID: "p1", Type: "Capture"}}},
	} {
		_, err := s.ten.Settle(s.ctx, bad)
		require.Error(t, err)
		require.Equal(t, http.StatusBadRequest, clientErr(t, err).Status, "%+v", bad)
	}
}

// scenarioPauseAReaction: a paused reaction hands out none of its
// deliveries, whoever claims (by name or every reaction), and says so in
// its status while its events wait; resumed, a held claim gets them.
func scenarioPauseAReaction(s *scenario) {
	t := s.t
	err := s.ten.PauseReaction(s.ctx, "nope", true)
	requireCode(t, err, http.StatusNotFound, api.CodeNotFound)
	status, _, err := s.tg.client().Raw(s.ctx, "PUT", "/v1/t/"+s.ten.Name()+"/reactions/"+testapp.AuditPolicy, []byte(`{"paused":"yes"}`), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, status)
	require.NoError(t, s.ten.PauseReaction(s.ctx, testapp.AuditPolicy, true))
	_, err = s.ten.Append(s.ctx, "notes", api.AppendRequest{Events: []api.NewEvent{{Type: testapp.Noted, Data: json.RawMessage(`{}`)}}})
	require.NoError(t, err)

	s.deliveries("a", 10, 0, testapp.AuditPolicy)
	resp, err := s.ten.ClaimReactions(s.ctx, api.ReactionClaimRequest{Worker: "a", Limit: 10})
	require.NoError(t, err)
	for _, d := range resp.Deliveries {
		require.NotEqual(t, testapp.AuditPolicy, d.Handler, "a claim of every reaction passes the paused one over")
	}
	st, err := s.ten.Reactions(s.ctx)
	require.NoError(t, err)
	for _, r := range st.Reactions {
		require.Equal(t, r.Name == testapp.AuditPolicy, r.Paused, r.Name)
		if r.Name == testapp.AuditPolicy {
			require.EqualValues(t, 1, r.Lag, "its event waits")
		}
	}

	type claimed struct {
		ds  []api.Delivery
		err error
	}
	got := make(chan claimed, 1)
	go func() {
		r := api.ReactionClaimRequest{Worker: "a", Handlers: []string{testapp.AuditPolicy}, Limit: 10}
		if s.tg.realTime() {
			r.WaitMs = 15_000
		}
		resp, err := s.ten.ClaimReactions(s.ctx, r)
		got <- claimed{resp.Deliveries, err}
	}()
	if s.tg.realTime() {
		time.Sleep(200 * time.Millisecond) // the claim is held before the resume
	} else {
		c := <-got
		require.NoError(t, c.err)
		require.Empty(t, c.ds, "still paused: nothing (the controlled clock holds no claim)")
	}
	require.NoError(t, s.ten.PauseReaction(s.ctx, testapp.AuditPolicy, false))
	var ds []api.Delivery
	if s.tg.realTime() {
		c := <-got
		require.NoError(t, c.err)
		ds = c.ds
	} else {
		ds = s.deliveries("a", 10, 1, testapp.AuditPolicy)
	}
	require.Len(t, ds, 1, "resumed, the reaction's event is delivered")
	require.Equal(t, testapp.Noted, ds[0].Event.Type)
}
