package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/inbox"
)

var (
	rmodelOps  = flag.Int("rmodel.ops", 0, "operations of the reactions model test per host (default: 20000 native, 4000 wazero)")
	rmodelSeed = flag.Uint64("rmodel.seed", 0, "seed of the reactions model test (default: random, printed)")
	// The model holds a claim to its report: once it settled a delivery
	// failed or delayed (or its success was refused by a command), the
	// same report again is a duplicate and anything else is refused
	// already_settled, until another claim takes the delivery over — also
	// after the retry time came and the delivery is ready again.
	rmodelTrace = flag.Bool("rmodel.trace", false, "log every request of the reactions model test and its answer")
)

// TestReactionsModel runs random interleavings of appends, commands,
// executors claiming reaction deliveries and settling them (succeeded,
// failed, delayed, twice, out of order, late after a takeover, with forged
// claims, or never: a crash after the provider's refund), with a clock the
// test controls, and checks every answer against a reference model of the
// inbox (see rmRun). It ends with a drain and a full check of the log, the
// commands, the streams, the provider and the reactions' status.
func TestReactionsModel(t *testing.T) {
	t.Parallel()
	bothHosts(t, rmRun, *rmodelSeed, pick(*rmodelOps, 20_000), pick(*rmodelOps, 4_000))
}

// The test module's reactions: their time limit, and the backoff of a
// failed delivery (200 ms doubling to 1 s, less up to a quarter of jitter).
const (
	rmTimeoutMs    = int64(testapp.ReactionTimeout / time.Millisecond)
	rmBackoffMs    = 200
	rmMaxBackoffMs = 1000
)

// rmLease is how long a claim holds the i-th delivery (from 0) of its run:
// twice the time limit for each delivery up to and including it.
func rmLease(i int) int64 { return 2 * rmTimeoutMs * int64(i+1) }

// Inbox states as the model keeps them (the ledger's names).
const (
	rmPending   = string(inbox.Pending)
	rmRetry     = string(inbox.Retry)
	rmReady     = string(inbox.Ready)
	rmSucceeded = string(inbox.Succeeded)
)

// rmEntry is the model of one (handler, event) delivery in the inbox.
type rmEntry struct {
	h         *rmHandler
	seq       int64
	state     string
	claimID   string
	worker    string
	attempt   int64
	failures  int64
	claimedAt int64
	lease     int64 // while pending
	// While retry: run_at lies in [runLo, runHi] (the backoff's jitter is
	// the tenant's); retryReq is the request that set it.
	runLo, runHi int64
	retryReq     int
	lastErr      string
	key          string // the idempotency key, the same on every attempt
	successes    int    // accepted, non-duplicate successes
	reported     string // how its claim settled it: failed or delayed (a command refusing its success: failed)
}

// rmHandler is the model of one reaction.
type rmHandler struct {
	name    string
	kind    string
	batch   int
	types   map[string]bool
	seqs    []int64 // the log's events of its types, in order
	next    int     // seqs[:next] were delivered; the checkpoint is seqs[next-1]
	entries map[int64]*rmEntry
	open    []*rmEntry // the unsettled entries, by seq (succeeded ones are a prefix)
}

func (h *rmHandler) checkpoint() int64 {
	if h.next == 0 {
		return 0
	}
	return h.seqs[h.next-1]
}

// rmEvent is the model of one event of the log.
type rmEvent struct {
	seq       int64
	stream    string
	typ       string
	commandID string
	data      string // compact JSON
}

// rmPayment is the model of one payment aggregate.
type rmPayment struct {
	id                                 string
	created, refundRequested, captured bool
	amount                             int64
	refundID                           string
	seqs                               []int64 // its stream
}

// rmCommand is an applied command: its content and the events it appended.
type rmCommand struct {
	digest string
	seqs   []int64
}

// rmProvider is an in-memory payment provider that honours idempotency
// keys: a repeated key answers the refund it made the first time.
type rmProvider struct {
	calls   int
	refunds map[string]string // key -> refund id
}

func (p *rmProvider) refund(key string) string {
	p.calls++
	id, ok := p.refunds[key]
	if !ok {
		id = fmt.Sprintf("re_%d", len(p.refunds)+1)
		p.refunds[key] = id
	}
	return id
}

// rmHeld is a delivery an executor holds: claimed, not settled yet.
type rmHeld struct {
	d        api.Delivery
	refundID string // the provider's answer, once called
}

// rmWorker is a simulated executor.
type rmWorker struct {
	name string
	held []*rmHeld
	sent []api.Settlement // its last settlements, to send again
}

func (w *rmWorker) drop(hd *rmHeld) {
	if i := slices.Index(w.held, hd); i >= 0 {
		w.held = slices.Delete(w.held, i, i+1)
	}
}

type rmModel struct {
	t      *testing.T
	rng    *rand.Rand
	seed   uint64
	label  string
	m      *host.Manager
	clock  *host.ManualClock
	tenant string
	steps  int
	phase  string // after the steps: the drain, the final check
	ops    int
	counts map[string]int

	req     int   // requests the tenant served (as far as the model knows)
	lastNow int64 // the time of the last one
	// The module's projections catch up from the alarm, which a request
	// that appended events sets to its time, unless the catch-up is due
	// already: projDue is the time of the first such request since an
	// alarm ran (0: none), projMaybe the first time it may be.
	projDue, projMaybe int64

	log      []rmEvent
	handlers map[string]*rmHandler
	order    []*rmHandler // registration order: a claim without handlers goes through them so
	payments map[string]*rmPayment
	pids     []string
	notes    int
	versions map[string]int64 // the notes streams' versions
	jittered bool             // a settlement failed a delivery: its retry time is the tenant's draw
	workers  []*rmWorker
	prov     *rmProvider
	keys     map[string]string     // idempotency key -> handler/seq
	claimIDs map[string]bool       // every claim id handed out
	applied  map[string]*rmCommand // command id -> what it did
	refused  map[string]bool       // command ids of refused settlements and rejected commands
	proc     map[string]string     // the expiry process's state per payment (compact JSON)
	// nudges are the Nudge commands applied, per debounce key (the
	// payment's): each one's job args, in order. A Nudge's job collapses
	// into the job collecting its key, so each applied command's args
	// must reach a job exactly once, however often it is sent.
	nudges map[string][]int
	nudged int // nudge ids below it were sent
	// nudgeDue is when each key's collecting job comes due (the alarm's
	// business until a request at or after it makes the job ready).
	nudgeDue map[string]int64
	// lookLo and lookHi bound when the tenant looks at what is failing,
	// for the directory (api.FailingNoteDelay after a delivery failed or
	// succeeded after failing, at most every api.FailingNoteEvery): the
	// alarm may be set for it (0: no look pending).
	lookLo, lookHi int64
}

// failingChanged notes that what is failing changed at now.
func (md *rmModel) failingChanged(now int64) {
	if md.lookLo == 0 {
		md.lookLo = now + api.FailingNoteDelay.Milliseconds()
	}
	md.lookHi = max(md.lookHi, now+(api.FailingNoteDelay+api.FailingNoteEvery).Milliseconds())
}

func (md *rmModel) fail(format string, args ...any) {
	md.t.Helper()
	step := "step " + strconv.Itoa(md.steps)
	if md.phase != "" {
		step = md.phase
	}
	// The tenant draws its retry jitter itself: a rerun takes the same
	// steps until a retry time decides differently.
	md.t.Fatalf("reactions model test (%s), seed %d, %s, clock %s: %s\n(rerun: go test ./e2e -run 'TestReactionsModel/%s' -v -rmodel.seed %d -rmodel.ops %d)",
		md.label, md.seed, step, md.at(md.clock.Now()), fmt.Sprintf(format, args...), md.label, md.seed, md.ops)
}

// at shows a time of the model's clock as an offset from its start.
func (md *rmModel) at(ms int64) string {
	return fmt.Sprintf("+%.3fs", float64(ms-start.UnixMilli())/1000)
}

// begin is the start of a request at the clock's time: the tenant first
// applies due work (leases run out, retries come due), as the model does.
func (md *rmModel) begin() int64 {
	now := md.clock.Now()
	md.req++
	md.lastNow = now
	if md.lookHi != 0 && now > md.lookHi {
		md.lookLo, md.lookHi = 0, 0 // every look there was to do is done
	}
	for k, at := range md.nudgeDue {
		if at <= now {
			delete(md.nudgeDue, k) // the job is ready: nothing more is due of it
		}
	}
	for _, h := range md.order {
		for _, e := range h.open {
			switch {
			case e.state == rmPending && e.lease <= now:
				e.state = rmReady
				e.lastErr = fmt.Sprintf("the lease of attempt %d ran out", e.attempt) // the latest news
			case e.state == rmRetry && e.runHi <= now:
				e.state = rmReady
			}
		}
	}
	return now
}

func (md *rmModel) call(method, rest string, body any) (int, []byte) {
	md.t.Helper()
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			md.fail("marshal: %v", err)
		}
	}
	path, query, _ := strings.Cut(rest, "?")
	md.begin()
	resp, err := md.m.Do(context.Background(), md.tenant, do.Request{Kind: do.KindAPI, Method: method,
		Path: "/v1/t/" + md.tenant + "/" + path, Query: query, Body: b})
	if err != nil {
		md.fail("%s %s: %v", method, rest, err)
	}
	if *rmodelTrace {
		md.t.Logf("step %d, %s: %s %s %s -> %d %s", md.steps, md.at(md.lastNow), method, rest, b, resp.Status, resp.Body)
	}
	if resp.Status >= 500 {
		md.fail("%s %s: %d %s", method, rest, resp.Status, resp.Body)
	}
	return resp.Status, resp.Body
}

func (md *rmModel) decode(b []byte, v any) {
	md.t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		md.fail("decode %s: %v", b, err)
	}
}

func rmCompact(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}

// rmRun drives one tenant through ops random steps and checks it.
//
// The model keeps, per reaction, what its inbox must hold: the events of
// its types in the log, its checkpoint, and per delivered event the state
// (pending in a lease, retry within its jitter, ready, succeeded), claim,
// worker, attempt, failures, last error and idempotency key. From it every
// claim's deliveries are predicted exactly (the run its open head allows
// again, then new events, with their leases) and every settlement's
// answer: refused (unknown_claim, claim_taken_over, out_of_order,
// already_settled), a duplicate, or accepted (failed, delayed, succeeded
// with its commands, or failed command_rejected and nothing of it stored).
// A retry time the tenant drew with jitter is an interval until an answer
// or the status tells it. After every step the host's alarm must be the
// earliest lease or retry time; now and then GET reactions must match.
//
// At the end a drain succeeds everything, and checkEnd checks the whole
// log, every command, every payment's stream and the provider.
func rmRun(t *testing.T, p *inProcess, seed uint64, ops int) {
	label := hostOf(t)
	t.Logf("seed %d, %d operations", seed, ops)
	md := &rmModel{t: t, rng: rand.New(rand.NewPCG(seed, seed>>1|1)), seed: seed, label: label, m: p.manager, clock: p.clock,
		tenant: "rmodel", ops: ops, counts: map[string]int{}, handlers: map[string]*rmHandler{},
		payments: map[string]*rmPayment{}, prov: &rmProvider{refunds: map[string]string{}},
		keys: map[string]string{}, claimIDs: map[string]bool{}, applied: map[string]*rmCommand{}, nudges: map[string][]int{}, nudgeDue: map[string]int64{},
		refused: map[string]bool{}, proc: map[string]string{}, versions: map[string]int64{}}
	for _, h := range []*rmHandler{
		{name: testapp.RefundPolicy, kind: api.ReactionKindPolicy, batch: 10, types: map[string]bool{testapp.RefundRequested: true}},
		{name: testapp.AuditPolicy, kind: api.ReactionKindPolicy, batch: 5, types: map[string]bool{testapp.PaymentCreated: true, testapp.Noted: true}},
		{name: testapp.ExpiryProcess, kind: api.ReactionKindProcess, batch: 1, types: map[string]bool{testapp.PaymentCreated: true,
			testapp.PaymentCaptured: true, api.DeadlineEventPrefix + testapp.ExpiryProcess: true}},
	} {
		h.entries = map[int64]*rmEntry{}
		md.handlers[h.name] = h
		md.order = append(md.order, h)
	}
	for i := range 4 {
		md.workers = append(md.workers, &rmWorker{name: "w" + strconv.Itoa(i)})
	}
	// The model's alarm is the inbox's and the projections': this tenant
	// keeps everything, so no retention look joins it (retention's own
	// planning is checked by its tests and the Retention scenario).
	if status, body := md.call("PUT", "retention", api.Retention{}); status != 200 {
		md.fail("keep everything: %d %s", status, body)
	}
	started := time.Now()
	for md.steps = 0; md.steps < ops; md.steps++ {
		switch r := md.rng.IntN(100); {
		case r < 3:
			md.appendNotes()
		case r < 6:
			md.createPayment()
		case r < 10:
			md.requestRefund()
		case r < 11:
			md.otherCommand()
		case r < 12:
			md.nudge()
		case r < 37:
			md.claim()
		case r < 68:
			md.settle()
		case r < 73:
			md.repeat()
		case r < 85:
			md.advance(time.Duration(md.rng.IntN(1501)) * time.Millisecond)
		case r < 88:
			md.fireDue()
		case r < 90:
			md.checkStatus()
		default:
			md.lateSettle()
		}
		md.checkAlarm()
	}
	ran := time.Since(started)
	var left []string
	for _, h := range md.order {
		left = append(left, fmt.Sprintf("%s %d of %d", h.name, len(h.open)+len(h.seqs)-h.next, len(h.seqs)))
	}
	md.phase = "the drain"
	md.drain()
	md.checkEnd()
	md.checkNudges()
	t.Logf("%d operations in %v, drain and checks in %v; %d events, %d payments, provider: %d calls, %d refunds; left to the drain: %s",
		ops, ran.Round(time.Millisecond), (time.Since(started) - ran).Round(time.Millisecond), len(md.log), len(md.pids),
		md.prov.calls, len(md.prov.refunds), strings.Join(left, ", "))
	t.Logf("counts: %v", md.counts)
}

// ---- the log and the payments ----

func (md *rmModel) head() int64 { return int64(len(md.log)) }

// addEvent records an event the tenant appended.
func (md *rmModel) addEvent(stream, typ, commandID, data string) int64 {
	seq := md.head() + 1
	md.log = append(md.log, rmEvent{seq: seq, stream: stream, typ: typ, commandID: commandID, data: data})
	for _, h := range md.order {
		if h.types[typ] {
			h.seqs = append(h.seqs, seq)
		}
	}
	if p := md.payments[strings.TrimPrefix(stream, "payment:")]; p != nil && strings.HasPrefix(stream, "payment:") {
		p.seqs = append(p.seqs, seq)
	}
	return seq
}

func (md *rmModel) appendNotes() {
	md.counts["append"]++
	stream := "notes-" + strconv.Itoa(md.rng.IntN(4))
	n := 1 + md.rng.IntN(2)
	var evs []api.NewEvent
	for range n {
		md.notes++
		evs = append(evs, api.NewEvent{Type: testapp.Noted, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, md.notes))})
	}
	st, b := md.call("POST", "streams/"+stream, api.AppendRequest{Events: evs})
	if st != 201 {
		md.fail("append: %d %s", st, b)
	}
	var resp api.AppendResponse
	md.decode(b, &resp)
	if resp.FirstSeq != md.head()+1 || resp.LastSeq != md.head()+int64(n) || resp.Version != md.versions[stream]+int64(n) {
		md.fail("append of %d events to %s went to seqs %d-%d, version %d; the log's head was %d, the stream's version %d",
			n, stream, resp.FirstSeq, resp.LastSeq, resp.Version, md.head(), md.versions[stream])
	}
	md.versions[stream] = resp.Version
	md.projectionsDue(md.lastNow)
	for _, e := range evs {
		md.addEvent(stream, e.Type, "", string(e.Data))
	}
}

func rmDigest(c api.Command) string {
	return c.Aggregate + "\x00" + c.AggregateID + "\x00" + c.Type + "\x00" + rmCompact(c.Data)
}

// rmNew is an event a command decides.
type rmNew struct {
	stream, typ, commandID, data string
}

// decide applies commands, in order, to copies of the payments as the
// aggregate would: code is "" if every one was accepted (then evs are the
// events they append and ps the payments after them), else the code of the
// refusal of the first refused one, at index bad (and evs are the events
// the commands before it appended, to be rolled back).
func (md *rmModel) decide(cmds []api.Command) (evs []rmNew, ps map[string]*rmPayment, code api.Code, bad int) {
	ps = map[string]*rmPayment{}
	seen := map[string]string{}
	for i, c := range cmds {
		if prev, ok := md.applied[c.ID]; ok {
			if prev.digest != rmDigest(c) {
				return evs, nil, api.CodeCommandIDReused, i
			}
			continue // applied before: acknowledged, appends nothing
		}
		if d, ok := seen[c.ID]; ok {
			// An id twice in one settlement: the second is a repeat.
			if d != rmDigest(c) {
				return evs, nil, api.CodeCommandIDReused, i
			}
			continue
		}
		seen[c.ID] = rmDigest(c)
		p := ps[c.AggregateID]
		if p == nil {
			p = &rmPayment{id: c.AggregateID}
			if orig := md.payments[c.AggregateID]; orig != nil {
				cp := *orig
				p = &cp
			}
			ps[c.AggregateID] = p
		}
		ev := rmNew{stream: "payment:" + c.AggregateID, commandID: c.ID}
		switch c.Type {
		case "Create":
			if p.created {
				return evs, nil, api.CodeCommandRejected, i
			}
			var d struct {
				Amount int64 `json:"amount"`
			}
			_ = json.Unmarshal(c.Data, &d)
			p.created, p.amount = true, d.Amount
			ev.typ, ev.data = testapp.PaymentCreated, fmt.Sprintf(`{"amount":%d}`, d.Amount)
		case "RequestRefund":
			if !p.created || p.refundRequested {
				return evs, nil, api.CodeCommandRejected, i
			}
			p.refundRequested = true
			ev.typ, ev.data = testapp.RefundRequested, fmt.Sprintf(`{"amount":%d}`, p.amount)
		case "RecordRefund":
			if p.refundID != "" {
				return evs, nil, api.CodeCommandRejected, i
			}
			var d struct {
				RefundID string `json:"refund_id"`
			}
			_ = json.Unmarshal(c.Data, &d)
			p.refundID = d.RefundID
			ev.typ, ev.data = testapp.RefundRecorded, fmt.Sprintf(`{"refund_id":%q}`, d.RefundID)
		case "Nudge": // no event: a debounced job
			continue
		case "Capture":
			if !p.created || p.captured {
				return evs, nil, api.CodeCommandRejected, i
			}
			p.captured = true
			ev.typ, ev.data = testapp.PaymentCaptured, `{}`
		default:
			md.fail("the model does not know command type %s", c.Type)
		}
		evs = append(evs, ev)
	}
	return evs, ps, "", -1
}

// commit stores what decide decided for cmds.
func (md *rmModel) commit(cmds []api.Command, evs []rmNew, ps map[string]*rmPayment) []int64 {
	for id, p := range ps {
		if orig := md.payments[id]; orig != nil {
			p.seqs = orig.seqs
			*orig = *p
		} else {
			md.payments[id] = p
			md.pids = append(md.pids, id)
		}
	}
	var seqs []int64
	byID := map[string][]int64{}
	for _, ev := range evs {
		seq := md.addEvent(ev.stream, ev.typ, ev.commandID, ev.data)
		byID[ev.commandID] = append(byID[ev.commandID], seq)
		seqs = append(seqs, seq)
	}
	for _, c := range cmds {
		if _, ok := md.applied[c.ID]; ok {
			continue
		}
		md.applied[c.ID] = &rmCommand{digest: rmDigest(c), seqs: byID[c.ID]}
	}
	return seqs
}

// command sends one command through the API and checks its answer.
func (md *rmModel) command(c api.Command) {
	evs, ps, code, _ := md.decide([]api.Command{c})
	prev, dup := md.applied[c.ID]
	st, b := md.call("POST", "commands", c)
	switch {
	case code == api.CodeCommandRejected:
		if st != 422 || !strings.Contains(string(b), string(api.CodeCommandRejected)) {
			md.fail("command %s %s on %s should be rejected by the aggregate: %d %s", c.ID, c.Type, c.AggregateID, st, b)
		}
		md.refused[c.ID] = true
		md.counts["command rejected"]++
		return
	case code == api.CodeCommandIDReused:
		if st != 409 || !strings.Contains(string(b), string(api.CodeCommandIDReused)) {
			md.fail("command %s reuses an id: %d %s", c.ID, st, b)
		}
		md.counts["command id reused"]++
		return
	case dup:
		if st != 200 {
			md.fail("command %s again should be a duplicate: %d %s", c.ID, st, b)
		}
		var res api.CommandResult
		md.decode(b, &res)
		if !res.Duplicate || len(res.Events) != len(prev.seqs) {
			md.fail("command %s again: %s; first applied with events %v", c.ID, b, prev.seqs)
		}
		for i, e := range res.Events {
			if e.Seq != prev.seqs[i] {
				md.fail("command %s again answered event %d, first applied as %v", c.ID, e.Seq, prev.seqs)
			}
		}
		md.counts["command duplicate"]++
		return
	}
	if st != 201 {
		md.fail("command %s %s on %s should be applied: %d %s", c.ID, c.Type, c.AggregateID, st, b)
	}
	var res api.CommandResult
	md.decode(b, &res)
	seqs := md.commit([]api.Command{c}, evs, ps)
	if len(seqs) > 0 {
		md.projectionsDue(md.lastNow)
	}
	if res.Duplicate || len(res.Events) != len(seqs) {
		md.fail("command %s: %s, the model appended %v", c.ID, b, seqs)
	}
	for i, e := range res.Events {
		if e.Seq != seqs[i] || e.Type != evs[i].typ || e.CommandID != c.ID {
			md.fail("command %s appended %d %s (command %s), the model %d %s", c.ID, e.Seq, e.Type, e.CommandID, seqs[i], evs[i].typ)
		}
	}
	if c.Type == "Nudge" {
		var d struct{ N int }
		md.decode(c.Data, &d)
		if len(res.JobIDs) != 1 {
			md.fail("nudge %s answered jobs %v: one job, new or collecting", c.ID, res.JobIDs)
		}
		md.nudges["nudge-"+c.AggregateID] = append(md.nudges["nudge-"+c.AggregateID], d.N)
		md.nudgeDue["nudge-"+c.AggregateID] = md.lastNow + 1000 // the end of a new window
	}
	md.counts["command "+c.Type]++
}

// nudge sends a Nudge command, new or one sent before (a duplicate if it
// was applied): its job is debounced by the payment with keep "all".
func (md *rmModel) nudge() {
	p := md.randomPayment()
	if p == nil {
		return
	}
	n := md.steps
	if md.rng.IntN(4) == 0 && md.nudged > 0 {
		n = md.rng.IntN(md.nudged) // again, under its id
	} else {
		md.nudged = max(md.nudged, n+1)
	}
	md.command(api.Command{ID: fmt.Sprintf("nudge-%d", n), Aggregate: "payment", AggregateID: fmt.Sprintf("p%d", n%max(1, len(md.pids))),
		Type: "Nudge", Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))})
}

// checkNudges claims the debounced jobs of the Nudge commands once their
// windows passed, and checks that each key's jobs hold the args of the
// key's applied commands, each once, in order.
func (md *rmModel) checkNudges() {
	md.clock.Advance(2 * time.Second) // past every window
	md.fireDue()
	got := map[string][]int{}
	for {
		st, b := md.call("POST", "claims", api.ClaimRequest{Worker: "nudges", Kinds: []string{"test.echo"}, Limit: 100})
		if st != 200 {
			md.fail("claim the nudges' jobs: %d %s", st, b)
		}
		var resp api.ClaimResponse
		md.decode(b, &resp)
		if len(resp.Jobs) == 0 {
			break
		}
		slices.SortFunc(resp.Jobs, func(a, b api.ClaimedJob) int { // ids grow with creation
			x, _ := strconv.ParseInt(a.ID, 10, 64)
			y, _ := strconv.ParseInt(b.ID, 10, 64)
			return int(x - y)
		})
		for _, c := range resp.Jobs {
			st, b := md.call("GET", "jobs/"+c.ID, nil)
			if st != 200 {
				md.fail("get job %s: %d %s", c.ID, st, b)
			}
			var j api.Job
			md.decode(b, &j)
			if !strings.HasPrefix(j.DebounceKey, "nudge-") {
				continue
			}
			for _, raw := range c.AllArgs {
				var d struct{ N int }
				md.decode(raw, &d)
				got[j.DebounceKey] = append(got[j.DebounceKey], d.N)
			}
		}
	}
	for key, want := range md.nudges {
		if !slices.Equal(got[key], want) {
			md.fail("debounce key %s: its jobs collected %v, the applied nudges were %v", key, got[key], want)
		}
	}
	md.counts["nudge jobs checked"] = len(got)
}

func (md *rmModel) randomPayment() *rmPayment {
	if len(md.pids) == 0 {
		return nil
	}
	return md.payments[md.pids[md.rng.IntN(len(md.pids))]]
}

// createdPayment picks a created payment, or nil.
func (md *rmModel) createdPayment() *rmPayment {
	for range 4 {
		if p := md.randomPayment(); p != nil && p.created {
			return p
		}
	}
	return nil
}

func (md *rmModel) createPayment() {
	id := "p" + strconv.Itoa(len(md.pids))
	md.command(api.Command{ID: "create-" + id, Aggregate: "payment", AggregateID: id, Type: "Create",
		Data: json.RawMessage(fmt.Sprintf(`{"amount":%d}`, 1+md.rng.IntN(1000)))})
}

func (md *rmModel) requestRefund() {
	p := md.randomPayment()
	if p == nil {
		md.createPayment()
		return
	}
	md.command(api.Command{ID: "refund-" + p.id, Aggregate: "payment", AggregateID: p.id, Type: "RequestRefund"})
}

// otherCommand sends a command the aggregate refuses, a command again, or
// an id reused for another command.
func (md *rmModel) otherCommand() {
	p := md.randomPayment()
	if p == nil {
		return
	}
	md.counts["other"]++
	switch md.rng.IntN(4) {
	case 0: // a second create
		md.command(api.Command{ID: fmt.Sprintf("again-%s-%d", p.id, md.steps), Aggregate: "payment", AggregateID: p.id, Type: "Create"})
	case 1: // a refund of a payment that does not exist
		md.command(api.Command{ID: fmt.Sprintf("refund-nobody-%d", md.steps), Aggregate: "payment",
			AggregateID: "nobody" + strconv.Itoa(md.steps), Type: "RequestRefund"})
	case 2: // the refund request again, under its id (a duplicate if applied)
		md.command(api.Command{ID: "refund-" + p.id, Aggregate: "payment", AggregateID: p.id, Type: "RequestRefund"})
	default: // the create's id for a refund request: reused
		md.command(api.Command{ID: "create-" + p.id, Aggregate: "payment", AggregateID: p.id, Type: "RequestRefund"})
	}
}

// ---- time ----

func (md *rmModel) advance(d time.Duration) {
	md.counts["advance"]++
	md.clock.Advance(d)
	md.fireDue()
}

func (md *rmModel) fireDue() {
	md.counts["fire"]++
	if md.m.FireDue(context.Background()) > 0 {
		md.begin()                      // the alarm's request applied what was due
		md.projDue, md.projMaybe = 0, 0 // and caught the projections up
		md.counts["alarm ran"]++
	}
}

// projectionsDue notes events appended at now: the catch-up is due then,
// unless it was due already.
func (md *rmModel) projectionsDue(now int64) {
	if md.projDue == 0 {
		md.projDue = now
	}
}

// checkAlarm: the host's alarm is the earliest lease or retry time of the
// inbox as the last request left it (within a retry's jitter), the
// projections' catch-up, or a nudge's debounced job coming due.
func (md *rmModel) checkAlarm() {
	got := md.m.AlarmAt(md.tenant)
	lower, upper := int64(math.MaxInt64), int64(math.MaxInt64)
	if md.projDue != 0 {
		lower, upper = md.projDue, md.projDue
	}
	if md.projMaybe != 0 {
		lower = min(lower, md.projMaybe)
	}
	for _, at := range md.nudgeDue {
		lower, upper = min(lower, at), min(upper, at)
	}
	for _, h := range md.order {
		for _, e := range h.open {
			switch e.state {
			case rmPending:
				lower, upper = min(lower, e.lease), min(upper, e.lease)
			case rmRetry:
				if e.retryReq == md.req || e.runLo > md.lastNow {
					lower, upper = min(lower, e.runLo), min(upper, e.runHi)
				} else {
					// It may have come due at the last request, and be ready.
					lower = min(lower, max(e.runLo, md.lastNow+1))
				}
			}
		}
	}
	switch {
	case got == 0 && upper != math.MaxInt64:
		md.fail("no alarm is set, but a lease, a retry or the projections' catch-up is due by %s", md.at(upper))
	case got != 0 && (got < lower || got > upper) && (md.lookLo == 0 || got < md.lookLo || got > md.lookHi):
		hi := "never"
		if upper != math.MaxInt64 {
			hi = md.at(upper)
		}
		md.fail("the alarm is at %s; the earliest lease, retry or catch-up is due in [%s, %s] (the last request was at %s)",
			md.at(got), md.at(lower), hi, md.at(md.lastNow))
	}
}

// ---- claims ----

// due says whether an open entry may be delivered again now: 1 yes, 0 no,
// -1 perhaps (a retry time within its jitter).
func (md *rmModel) due(e *rmEntry, now int64) int {
	switch e.state {
	case rmPending:
		if now < e.lease {
			return 0
		}
		return 1
	case rmRetry:
		switch {
		case now < e.runLo:
			return 0
		case now >= e.runHi:
			return 1
		}
		return -1
	}
	return 1
}

func (md *rmModel) claim() {
	md.counts["claim"]++
	w := md.workers[md.rng.IntN(len(md.workers))]
	hs := md.order
	var names []string
	if md.rng.IntN(4) != 0 {
		hs = nil
		perm := md.rng.Perm(len(md.order))
		for _, i := range perm[:1+md.rng.IntN(len(perm))] {
			hs = append(hs, md.order[i])
			names = append(names, md.order[i].name)
		}
	}
	for _, d := range md.claimFor(w.name, hs, names, 1+md.rng.IntN(5)) {
		w.held = append(w.held, &rmHeld{d: d})
	}
}

// claimFor claims for worker and checks the deliveries against the
// model: per handler, in the claim's order, the run its open head allows
// again, else its next new events.
func (md *rmModel) claimFor(worker string, hs []*rmHandler, names []string, limit int) []api.Delivery {
	st, b := md.call("POST", "reactions/claims", api.ReactionClaimRequest{Worker: worker, Handlers: names, Limit: limit})
	if st != 200 {
		md.fail("claim: %d %s", st, b)
	}
	var resp api.ReactionClaimResponse
	md.decode(b, &resp)
	now := md.lastNow
	if resp.Now.UnixMilli() != now {
		md.fail("claim answered now=%d, the clock says %d", resp.Now.UnixMilli(), now)
	}
	ds := resp.Deliveries
	pos := 0
	at := func(i int) *api.Delivery {
		if i < len(ds) {
			return &ds[i]
		}
		return nil
	}
	count := 0
	for _, h := range hs {
		if count >= limit {
			break
		}
		n := min(limit-count, h.batch)
		open := h.open[:min(n, len(h.open))]
		var take []*rmEntry
		if len(open) > 0 {
			headWorker, headClaimed := open[0].worker, open[0].claimedAt
			for i, e := range open {
				v := md.due(e, now)
				if v < 0 { // learn from the answer whether its retry time had come
					if d := at(pos + len(take)); d != nil && d.Handler == h.name && d.Event.Seq == e.seq {
						v, e.runHi, e.state = 1, now, rmReady
					} else {
						v, e.runLo = 0, now+1
					}
				}
				sameRun := i > 0 && e.worker == headWorker && e.claimedAt == headClaimed && (e.state == rmPending || e.state == rmReady)
				if v == 0 && !sameRun {
					break
				}
				take = append(take, e)
			}
			for i, e := range take {
				d := at(pos)
				if d == nil || d.Handler != h.name || d.Event.Seq != e.seq {
					md.fail("claim by %s of %v (limit %d): expected event %d of %s again as delivery %d, got %s",
						worker, names, limit, e.seq, h.name, pos, rmShow(ds))
				}
				md.checkDelivery(d, e, e.attempt+1, now+rmLease(i))
				e.state, e.claimID, e.worker, e.attempt, e.claimedAt, e.lease = rmPending, d.ClaimID, worker, e.attempt+1, now, now+rmLease(i)
				e.reported = ""
				pos++
				md.counts["redelivered"]++
			}
			count += len(take)
			if len(take) < len(open) || len(take) == n {
				continue
			}
		}
		for i := 0; len(take)+i < n && h.next < len(h.seqs); i++ {
			seq := h.seqs[h.next]
			d := at(pos)
			if d == nil || d.Handler != h.name || d.Event.Seq != seq {
				md.fail("claim by %s of %v (limit %d): expected new event %d for %s as delivery %d, got %s",
					worker, names, limit, seq, h.name, pos, rmShow(ds))
			}
			e := &rmEntry{h: h, seq: seq, key: d.IdempotencyKey}
			md.checkDelivery(d, e, 1, now+rmLease(len(take)+i))
			e.state, e.claimID, e.worker, e.attempt, e.claimedAt, e.lease = rmPending, d.ClaimID, worker, 1, now, now+rmLease(len(take)+i)
			h.entries[seq] = e
			h.open = append(h.open, e)
			h.next++
			pos++
			count++
			md.counts["delivered"]++
		}
	}
	if pos != len(ds) {
		md.fail("claim by %s of %v (limit %d): %d deliveries expected, got %s", worker, names, limit, pos, rmShow(ds))
	}
	return ds
}

func rmShow(ds []api.Delivery) string {
	var b strings.Builder
	b.WriteString("[")
	for i, d := range ds {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s/%d#%d", d.Handler, d.Event.Seq, d.Attempt)
	}
	b.WriteString("]")
	return b.String()
}

// checkDelivery checks one delivery of e against the model.
func (md *rmModel) checkDelivery(d *api.Delivery, e *rmEntry, attempt, lease int64) {
	ev := md.log[e.seq-1]
	where := fmt.Sprintf("delivery of event %d to %s", e.seq, e.h.name)
	switch {
	case d.Kind != e.h.kind || d.TimeoutMs != rmTimeoutMs:
		md.fail("%s: kind %s, timeout %d", where, d.Kind, d.TimeoutMs)
	case d.Event.Type != ev.typ || d.Event.Stream != ev.stream || d.Event.CommandID != ev.commandID:
		md.fail("%s: event %s on %s (command %q), the log has %s on %s (command %q)", where, d.Event.Type, d.Event.Stream,
			d.Event.CommandID, ev.typ, ev.stream, ev.commandID)
	case d.Attempt != attempt:
		md.fail("%s: attempt %d, the model expects %d", where, d.Attempt, attempt)
	case d.Failures != e.failures:
		md.fail("%s: %d failures, the model counts %d", where, d.Failures, e.failures)
	case d.LeaseUntil.UnixMilli() != lease:
		md.fail("%s: lease until %s, the model expects %s", where, md.at(d.LeaseUntil.UnixMilli()), md.at(lease))
	case d.LastError != e.lastErr:
		md.fail("%s: last error %q, the model expects %q", where, d.LastError, e.lastErr)
	case d.IdempotencyKey != e.key || d.IdempotencyKey == "":
		md.fail("%s: idempotency key %q, first delivered with %q", where, d.IdempotencyKey, e.key)
	case d.ClaimID == "" || md.claimIDs[d.ClaimID]:
		md.fail("%s: claim id %q is empty or was handed out before", where, d.ClaimID)
	}
	md.claimIDs[d.ClaimID] = true
	want := e.h.name + "/" + strconv.FormatInt(e.seq, 10)
	if got, ok := md.keys[d.IdempotencyKey]; ok && got != want {
		md.fail("%s: idempotency key %s is also the key of %s", where, d.IdempotencyKey, got)
	}
	md.keys[d.IdempotencyKey] = want
	if e.h.kind == api.ReactionKindProcess {
		corr := strings.TrimPrefix(ev.stream, "payment:")
		if d.Correlation != corr {
			md.fail("%s: correlation %q, want %q", where, d.Correlation, corr)
		}
		if got := rmCompact(d.State); got != md.proc[corr] {
			md.fail("%s: process state %s, the last accepted settlement left %q", where, got, md.proc[corr])
		}
	}
}

// ---- settlements ----

func (md *rmModel) settle() {
	var w *rmWorker
	for _, i := range md.rng.Perm(len(md.workers)) {
		if len(md.workers[i].held) > 0 {
			w = md.workers[i]
			break
		}
	}
	if w == nil {
		md.claim()
		return
	}
	// The executor works through some of what it holds, in order but for
	// a slip now and then, each delivery its own way.
	for n := 1 + md.rng.IntN(len(w.held)); n > 0 && len(w.held) > 0; n-- {
		md.settleNext(w)
	}
}

func (md *rmModel) settleNext(w *rmWorker) {
	i := 0
	if md.rng.IntN(8) == 0 {
		i = md.rng.IntN(len(w.held)) // perhaps out of order
	}
	hd := w.held[i]
	d := hd.d
	base := api.Settlement{Handler: d.Handler, Seq: d.Event.Seq, ClaimID: d.ClaimID}
	switch r := md.rng.IntN(100); {
	case r < 49:
		md.counts["settle succeeded"]++
		md.settleHeld(w, []*rmHeld{hd}, []api.Settlement{md.success(w, hd, false)})
	case r < 57:
		md.counts["settle failed"]++
		base.Outcome, base.Error = api.OutcomeFailed, fmt.Sprintf("boom %s %d", w.name, md.steps)
		md.settleHeld(w, []*rmHeld{hd}, []api.Settlement{base})
	case r < 64:
		md.counts["settle delayed"]++
		base.Outcome, base.DelayMs = api.OutcomeDelayed, int64(md.rng.IntN(1201))
		md.settleHeld(w, []*rmHeld{hd}, []api.Settlement{base})
	case r < 67:
		// Failed or delayed, the answer lost: the executor sends the same
		// settlement again after a pause, perhaps past the retry time.
		md.counts["settle lost answer"]++
		base.Outcome, base.Error = api.OutcomeFailed, fmt.Sprintf("lost %s %d", w.name, md.steps)
		if md.rng.IntN(3) == 0 {
			base.Outcome, base.Error, base.DelayMs = api.OutcomeDelayed, "", int64(md.rng.IntN(300))
		}
		md.settleHeld(w, []*rmHeld{hd}, []api.Settlement{base})
		md.advance(time.Duration(md.rng.IntN(401)) * time.Millisecond)
		md.settleReq(w, []api.Settlement{base})
	case r < 72:
		// The executor dies after the provider's refund, before settling:
		// the lease runs out and another one takes over.
		md.counts["crash"]++
		if d.Handler == testapp.RefundPolicy {
			md.prov.refund(inbox.KeyFor(d.IdempotencyKey, "refund"))
		}
		w.drop(hd)
	case r < 74:
		md.counts["crash all"]++
		w.held = nil
	case r < 83:
		// A batch: its first deliveries in one request, mostly succeeded.
		md.counts["settle batch"]++
		hds := w.held[:1+md.rng.IntN(len(w.held))]
		var ss []api.Settlement
		for _, hd := range hds {
			s := md.success(w, hd, false)
			if md.rng.IntN(6) == 0 {
				s = api.Settlement{Handler: hd.d.Handler, Seq: hd.d.Event.Seq, ClaimID: hd.d.ClaimID, Outcome: api.OutcomeFailed, Error: "batch boom"}
			}
			ss = append(ss, s)
		}
		md.settleHeld(w, slices.Clone(hds), ss)
	case r < 88:
		md.counts["settle forged"]++
		base.Outcome, base.ClaimID = []string{api.OutcomeSucceeded, api.OutcomeFailed}[md.rng.IntN(2)], fmt.Sprintf("forged-%d", md.steps)
		if base.Outcome == api.OutcomeFailed {
			base.Error = "forged"
		}
		md.settleReq(w, []api.Settlement{base})
	case r < 92:
		// A seq the claim was not given: never delivered to the handler,
		// or another delivery (then it is another claim's).
		md.counts["settle wrong seq"]++
		base.Outcome, base.Seq = api.OutcomeSucceeded, 1+md.rng.Int64N(md.head()+3)
		if base.Seq == d.Event.Seq {
			base.Seq++ // not its own: that would succeed without the handler's commands
		}
		md.settleReq(w, []api.Settlement{base})
	default:
		// Twice in one request: the second is a duplicate (or refused the
		// same way).
		md.counts["settle twice"]++
		s := md.success(w, hd, false)
		if md.rng.IntN(3) == 0 {
			s = api.Settlement{Handler: d.Handler, Seq: d.Event.Seq, ClaimID: d.ClaimID, Outcome: api.OutcomeFailed, Error: "twice"}
		}
		md.settleHeld(w, []*rmHeld{hd, hd}, []api.Settlement{s, s})
	}
}

// lateSettle settles the oldest delivery any executor still holds: often
// one whose lease ran out, perhaps taken over by another.
func (md *rmModel) lateSettle() {
	var w *rmWorker
	var hd *rmHeld
	for _, x := range md.workers {
		for _, h := range x.held {
			if hd == nil || h.d.LeaseUntil.Before(hd.d.LeaseUntil) {
				w, hd = x, h
			}
		}
	}
	if hd == nil {
		md.claim()
		return
	}
	md.counts["settle late"]++
	md.settleHeld(w, []*rmHeld{hd}, []api.Settlement{md.success(w, hd, false)})
}

// repeat sends one of an executor's settlements again, as after a lost
// answer.
func (md *rmModel) repeat() {
	w := md.workers[md.rng.IntN(len(md.workers))]
	if len(w.sent) == 0 {
		return
	}
	md.counts["settle again"]++
	md.settleReq(w, []api.Settlement{w.sent[md.rng.IntN(len(w.sent))]})
}

// success builds the settlement of a delivery the handler ran: the refund
// policy refunds through the provider and records it; the audit policy
// sometimes captures a payment, or sends a command the aggregate refuses;
// the expiry process keeps state, captures its payment or ends.
func (md *rmModel) success(w *rmWorker, hd *rmHeld, plain bool) api.Settlement {
	d := hd.d
	s := api.Settlement{Handler: d.Handler, Seq: d.Event.Seq, ClaimID: d.ClaimID, Outcome: api.OutcomeSucceeded}
	pay := func(id, typ string, n int) api.Command {
		return api.Command{ID: inbox.CommandID(d.IdempotencyKey, n), Aggregate: "payment", AggregateID: id, Type: typ}
	}
	switch d.Handler {
	case testapp.RefundPolicy:
		if hd.refundID == "" {
			hd.refundID = md.prov.refund(inbox.KeyFor(d.IdempotencyKey, "refund"))
		}
		c := pay(strings.TrimPrefix(d.Event.Stream, "payment:"), "RecordRefund", 0)
		c.Data = json.RawMessage(fmt.Sprintf(`{"refund_id":%q}`, hd.refundID))
		s.Commands = []api.Command{c}
	case testapp.AuditPolicy:
		if plain {
			break
		}
		switch md.rng.IntN(8) {
		case 0:
			if p := md.createdPayment(); p != nil {
				s.Commands = []api.Command{pay(p.id, "Capture", 0)}
			}
		case 1:
			// The second command is refused (the payment exists): the first
			// goes with it, and the delivery fails.
			if p := md.createdPayment(); p != nil {
				q := md.randomPayment()
				c := pay(p.id, "Create", 1)
				c.Data = json.RawMessage(`{"amount":1}`)
				s.Commands = []api.Command{pay(q.id, "Capture", 0), c}
			}
		}
	case testapp.ExpiryProcess:
		if plain {
			break
		}
		state := json.RawMessage(fmt.Sprintf(`{"seen":%d,"by":%q}`, d.Event.Seq, w.name))
		switch md.rng.IntN(5) {
		case 0, 1:
			s.State = state
		case 2:
			s.State = state
			s.Commands = []api.Command{pay(d.Correlation, "Capture", 0)}
		case 3:
			s.Done = true
		}
	}
	return s
}

// settleHeld sends settlements of held deliveries (hds[i] for ss[i]); the
// executor forgets each, unless it was refused out of order.
func (md *rmModel) settleHeld(w *rmWorker, hds []*rmHeld, ss []api.Settlement) {
	res := md.settleReq(w, ss)
	for i, hd := range hds {
		switch {
		case res[i].Error != nil && res[i].Error.Code == api.CodeOutOfOrder:
			if md.rng.IntN(2) == 0 {
				continue // tried again later
			}
		case res[i].State == rmRetry && md.rng.IntN(5) != 0:
			// The delivery failed: the executor mostly gives up the rest of
			// the handler's run (the tenant put it back), else it stays
			// and settles stale.
			for _, x := range slices.Clone(w.held) {
				if x.d.Handler == hd.d.Handler && x.d.Event.Seq > hd.d.Event.Seq {
					w.drop(x)
				}
			}
		}
		w.drop(hd)
	}
}

func (md *rmModel) settleReq(w *rmWorker, ss []api.Settlement) []api.SettleResult {
	st, b := md.call("POST", "reactions/settle", api.SettleRequest{Settlements: ss})
	if st != 200 {
		md.fail("settle: %d %s", st, b)
	}
	var resp api.SettleResponse
	md.decode(b, &resp)
	if len(resp.Results) != len(ss) {
		md.fail("settle of %d: %d results", len(ss), len(resp.Results))
	}
	md.jittered = false
	for i, s := range ss {
		md.settled(w, s, resp.Results[i])
	}
	if md.jittered && md.rng.IntN(2) == 0 {
		md.checkStatus() // and learn the retry times it drew
	}
	w.sent = append(w.sent, ss...)
	if len(w.sent) > 16 {
		w.sent = w.sent[len(w.sent)-16:]
	}
	return resp.Results
}

// settled checks one settlement's answer against the model, and applies
// it: fenced by claim (taken over, unknown, out of order, already settled,
// duplicate), then failed, delayed or succeeded with its commands.
func (md *rmModel) settled(w *rmWorker, s api.Settlement, res api.SettleResult) {
	now := md.lastNow
	h := md.handlers[s.Handler]
	e := h.entries[s.Seq]
	var code api.Code
	if res.Error != nil {
		code = res.Error.Code
	}
	where := fmt.Sprintf("settlement %s of event %d for %s by %s (claim %s)", s.Outcome, s.Seq, s.Handler, w.name, s.ClaimID)
	if res.Handler != s.Handler || res.Seq != s.Seq {
		md.fail("%s: answered for %s/%d", where, res.Handler, res.Seq)
	}
	refuse := func(want api.Code, why string) {
		md.t.Helper()
		if code != want || res.State != "" || res.Duplicate || res.Events != 0 {
			md.fail("%s should be refused %s (%s): got %+v %+v", where, want, why, res, res.Error)
		}
		for _, c := range s.Commands {
			md.refused[c.ID] = true
		}
		md.counts["refused "+string(want)]++
	}
	duplicate := func(states ...string) {
		md.t.Helper()
		if code != "" || !res.Duplicate || !slices.Contains(states, res.State) || res.Events != 0 {
			md.fail("%s should be answered as a duplicate (%v): got %+v %+v", where, states, res, res.Error)
		}
		md.counts["duplicate"]++
	}
	if e == nil {
		refuse(api.CodeUnknownClaim, "never delivered to the handler")
		return
	}
	if s.ClaimID != e.claimID {
		refuse(api.CodeClaimTakenOver, fmt.Sprintf("attempt %d holds it now, %s", e.attempt, e.state))
		return
	}
	if e.state == rmSucceeded {
		if s.Outcome == api.OutcomeSucceeded {
			duplicate(rmSucceeded)
		} else {
			refuse(api.CodeAlreadySettled, "it succeeded")
		}
		return
	}
	if e.reported != "" {
		// This claim reported a failure or a delay (or a command refused
		// its success): the report stands until another claim takes the
		// delivery over, before and after its retry time came. A repeat of
		// it is a duplicate; anything else is refused.
		states := []string{rmRetry}
		if e.state == rmReady || e.retryReq != md.req && md.due(e, now) != 0 {
			md.counts["settled again after the retry came due"]++
			where += fmt.Sprintf(" at %s, after the retry time its failure or delay set (%s-%s) came and before any other claim",
				md.at(now), md.at(e.runLo), md.at(e.runHi))
			states = append(states, rmReady)
		}
		if s.Outcome == e.reported {
			duplicate(states...)
		} else {
			refuse(api.CodeAlreadySettled, "this claim reported it "+e.reported+", and nobody took the delivery over")
		}
		return
	}
	// Pending or ready under this claim.
	if s.Outcome == api.OutcomeSucceeded && h.open[0].seq < e.seq {
		refuse(api.CodeOutOfOrder, fmt.Sprintf("event %d of the handler is open", h.open[0].seq))
		return
	}
	switch s.Outcome {
	case api.OutcomeFailed:
		if code != "" || res.Duplicate || res.State != rmRetry {
			md.fail("%s should be accepted (retry): got %+v %+v", where, res, res.Error)
		}
		md.retry(e, now, s.Error, -1)
		md.counts["accepted failed"]++
		return
	case api.OutcomeDelayed:
		if code != "" || res.Duplicate || res.State != rmRetry {
			md.fail("%s should be accepted (retry): got %+v %+v", where, res, res.Error)
		}
		md.retry(e, now, "", s.DelayMs)
		md.counts["accepted delayed"]++
		return
	}
	evs, ps, ccode, bad := md.decide(s.Commands)
	if ccode != "" {
		// The aggregate refused a command: nothing of the settlement is
		// stored and the delivery failed.
		if code != ccode || res.Duplicate || res.State != rmRetry || res.Events != 0 {
			md.fail("%s: command %d (%s %s on %s) should be refused %s and the delivery fail: got %+v %+v", where, bad,
				s.Commands[bad].ID, s.Commands[bad].Type, s.Commands[bad].AggregateID, ccode, res, res.Error)
		}
		for _, c := range s.Commands {
			md.refused[c.ID] = true
		}
		md.retry(e, now, res.Error.Message, -1)
		if len(evs) > 0 && md.projDue == 0 && md.projMaybe == 0 {
			// The commands before the refused one appended in the
			// settlement's savepoint, rolled back: the projections may be
			// called to catch up on nothing.
			md.projMaybe = now
		}
		md.counts["failed "+string(ccode)]++
		return
	}
	if code != "" || res.Duplicate || res.State != rmSucceeded || res.Events != len(evs) {
		md.fail("%s should succeed with %d events: got %+v %+v", where, len(evs), res, res.Error)
	}
	if e.successes > 0 {
		md.fail("%s: event %d of %s succeeded a second time", where, s.Seq, s.Handler)
	}
	if e.failures > 0 {
		md.failingChanged(now) // a failing delivery no longer is
	}
	if len(md.commit(s.Commands, evs, ps)) > 0 {
		md.projectionsDue(now)
	}
	e.successes++
	e.state = rmSucceeded
	if h.open[0] != e {
		md.fail("%s: the model's open list is not in order", where)
	}
	h.open = h.open[1:]
	if h.kind == api.ReactionKindProcess {
		corr := strings.TrimPrefix(md.log[e.seq-1].stream, "payment:")
		switch {
		case s.Done:
			delete(md.proc, corr)
		case len(s.State) > 0:
			md.proc[corr] = rmCompact(s.State)
		}
	}
	md.counts["accepted succeeded "+s.Handler]++
}

// retry ends e's attempt: failed (delay < 0) with the handler's backoff
// and msg, or delayed by delay ms; the deliveries its claim was handed
// after it, still in their leases, are put back.
func (md *rmModel) retry(e *rmEntry, now int64, msg string, delay int64) {
	if delay >= 0 {
		e.runLo, e.runHi, e.lastErr = now+delay, now+delay, ""
	} else {
		e.failures++
		md.failingChanged(now)
		d := int64(rmBackoffMs)
		for i := int64(1); i < e.failures && d < rmMaxBackoffMs; i++ {
			d *= 2
		}
		d = min(d, rmMaxBackoffMs)
		if msg == "" {
			msg = "failed"
		}
		e.runLo, e.runHi, e.lastErr = now+d-d/4, now+d, msg
		md.jittered = true
	}
	reported := api.OutcomeFailed
	if delay >= 0 {
		reported = api.OutcomeDelayed
	}
	e.state, e.retryReq, e.reported = rmRetry, md.req, reported
	for _, x := range e.h.open {
		if x.seq > e.seq && x.state == rmPending && x.worker == e.worker && x.claimedAt == e.claimedAt {
			x.state = rmReady
		}
	}
}

// ---- status ----

// checkStatus compares GET reactions with the model: checkpoints, lags
// and the first open deliveries of every handler.
func (md *rmModel) checkStatus() {
	md.counts["status"]++
	st, b := md.call("GET", "reactions", nil)
	if st != 200 {
		md.fail("reactions: %d %s", st, b)
	}
	now := md.lastNow
	var resp api.ReactionsResponse
	md.decode(b, &resp)
	if resp.Head != md.head() || len(resp.Reactions) != len(md.order) {
		md.fail("reactions: head %d and %d reactions, the model has %d and %d", resp.Head, len(resp.Reactions), md.head(), len(md.order))
	}
	for _, r := range resp.Reactions {
		h := md.handlers[r.Name]
		if h == nil {
			md.fail("reactions: unknown reaction %s", r.Name)
		}
		lag := min(int64(len(h.seqs)-h.next), api.MaxLagCount)
		if r.Checkpoint != h.checkpoint() || r.Lag != lag {
			md.fail("%s: checkpoint %d, lag %d; the model %d, %d", h.name, r.Checkpoint, r.Lag, h.checkpoint(), lag)
		}
		want := h.open[:min(len(h.open), api.MaxOpenShown)]
		if len(r.Open) != len(want) {
			md.fail("%s: %d open deliveries shown, the model has %d open", h.name, len(r.Open), len(h.open))
		}
		for i, o := range r.Open {
			e := want[i]
			if o.Seq != e.seq || o.Attempt != e.attempt || o.Failures != e.failures || o.Worker != e.worker || o.Error != e.lastErr {
				md.fail("%s: open delivery %+v, the model has event %d, attempt %d, %d failures, worker %s, error %q",
					h.name, o, e.seq, e.attempt, e.failures, e.worker, e.lastErr)
			}
			switch e.state {
			case rmPending:
				if o.State != rmPending || o.LeaseUntil == nil || o.LeaseUntil.UnixMilli() != e.lease {
					md.fail("%s: event %d is %s (lease %v), the model has it pending until %s", h.name, e.seq, o.State, o.LeaseUntil, md.at(e.lease))
				}
			case rmReady:
				if o.State != rmReady {
					md.fail("%s: event %d is %s, the model has it ready", h.name, e.seq, o.State)
				}
			case rmRetry:
				switch {
				case o.State == rmReady && e.runLo <= now:
					e.state, e.runHi = rmReady, now
				case o.State == rmRetry && o.RunAt != nil && o.RunAt.UnixMilli() > now &&
					o.RunAt.UnixMilli() >= e.runLo && o.RunAt.UnixMilli() <= e.runHi:
					e.runLo, e.runHi = o.RunAt.UnixMilli(), o.RunAt.UnixMilli()
				default:
					md.fail("%s: event %d is %s (run at %v), the model has it retry at %s-%s", h.name, e.seq, o.State, o.RunAt, md.at(e.runLo), md.at(e.runHi))
				}
			}
		}
	}
}

// ---- the end ----

// drain lets every lease and retry come due, then claims everything left
// and settles it succeeded, until nothing is open and nothing lags.
func (md *rmModel) drain() {
	w := &rmWorker{name: "drain"}
	md.advance(11 * time.Second)
	idle := 0
	for round := 0; ; round++ {
		left := 0
		for _, h := range md.order {
			left += len(h.open) + len(h.seqs) - h.next
		}
		if left == 0 {
			return
		}
		if round > 100_000 {
			md.fail("the drain did not end: %d deliveries left", left)
		}
		ds := md.claimFor(w.name, md.order, nil, 10)
		if len(ds) == 0 {
			if idle++; idle > 3 {
				md.fail("the drain claims nothing, but %d deliveries are left", left)
			}
			md.advance(11 * time.Second)
			continue
		}
		idle = 0
		md.counts["drained"] += len(ds)
		var ss []api.Settlement
		for _, d := range ds {
			ss = append(ss, md.success(w, &rmHeld{d: d}, true))
		}
		for i, r := range md.settleReq(w, ss) {
			if r.Error != nil || r.State != rmSucceeded {
				md.fail("the drain's settlement of %s/%d: %+v %+v", ss[i].Handler, ss[i].Seq, r, r.Error)
			}
		}
		md.counts["drain round"]++
	}
}

func (md *rmModel) checkEnd() {
	md.phase = "the final check"
	// Every delivery of every handler succeeded once; nothing is open.
	md.checkStatus()
	for _, h := range md.order {
		if len(h.entries) != len(h.seqs) || h.next != len(h.seqs) || len(h.open) != 0 {
			md.fail("%s: %d events, %d delivered, %d open after the drain", h.name, len(h.seqs), len(h.entries), len(h.open))
		}
		for seq, e := range h.entries {
			if e.state != rmSucceeded || e.successes != 1 {
				md.fail("%s: event %d is %s after %d successes", h.name, seq, e.state, e.successes)
			}
		}
	}
	st, b := md.call("GET", "reactions", nil)
	if st != 200 {
		md.fail("reactions: %d", st)
	}
	var rs api.ReactionsResponse
	md.decode(b, &rs)
	for _, r := range rs.Reactions {
		h := md.handlers[r.Name]
		last := int64(0)
		if len(h.seqs) > 0 {
			last = h.seqs[len(h.seqs)-1]
		}
		if len(r.Open) != 0 || r.Lag != 0 || r.Checkpoint != last {
			md.fail("%s after the drain: %d open, lag %d, checkpoint %d (its last event is %d)", r.Name, len(r.Open), r.Lag, r.Checkpoint, last)
		}
	}

	// The log: seqs gapless from 1 to the head, each event as the model
	// has it; an event with a command id only from an applied command.
	var after int64
	for {
		st, b := md.call("GET", fmt.Sprintf("events?after=%d&limit=1000", after), nil)
		if st != 200 {
			md.fail("events: %d %s", st, b)
		}
		var page api.EventsResponse
		md.decode(b, &page)
		if page.Head != md.head() {
			md.fail("the log's head is %d, the model's %d", page.Head, md.head())
		}
		for _, e := range page.Events {
			if e.Seq != after+1 {
				md.fail("the log goes from seq %d to %d", after, e.Seq)
			}
			after = e.Seq
			want := md.log[e.Seq-1]
			if e.Stream != want.stream || e.Type != want.typ || e.CommandID != want.commandID {
				md.fail("event %d is %s on %s (command %q), the model has %s on %s (command %q)", e.Seq, e.Type, e.Stream,
					e.CommandID, want.typ, want.stream, want.commandID)
			}
			if want.data != "" && rmCompact(e.Data) != want.data {
				md.fail("event %d has data %s, the model %s", e.Seq, e.Data, want.data)
			}
			if e.CommandID != "" {
				if c := md.applied[e.CommandID]; c == nil || !slices.Contains(c.seqs, e.Seq) {
					md.fail("event %d carries command %s, which the model never saw applied (refused: %v)", e.Seq, e.CommandID, md.refused[e.CommandID])
				}
			}
		}
		if page.Next == 0 {
			break
		}
	}
	if after != md.head() {
		md.fail("the log ends at %d, its head is %d", after, md.head())
	}

	// Every applied command is stored once, with its events; every refused
	// one that no later settlement applied is not stored at all.
	for id, c := range md.applied {
		st, b := md.call("GET", "commands/"+id, nil)
		if st != 200 {
			md.fail("command %s: %d %s", id, st, b)
		}
		var got api.CommandResult
		md.decode(b, &got)
		if len(got.Events) != len(c.seqs) {
			md.fail("command %s: events %s, the model %v", id, b, c.seqs)
		}
		for i, e := range got.Events {
			if e.Seq != c.seqs[i] || e.CommandID != id {
				md.fail("command %s: event %d (%s), the model %v", id, e.Seq, e.CommandID, c.seqs)
			}
		}
	}
	for id := range md.refused {
		if md.applied[id] != nil {
			continue
		}
		if st, b := md.call("GET", "commands/"+id, nil); st != 404 {
			md.fail("command %s of a refused settlement or rejected command: %d %s", id, st, b)
		}
	}

	// Each payment's stream, as the model has it: a refund requested is
	// recorded exactly once, with the refund the provider made for its
	// delivery's key.
	refunds := map[string]bool{}
	for _, id := range md.pids {
		p := md.payments[id]
		st, b := md.call("GET", "streams/payment:"+id+"?limit=1000", nil)
		if st != 200 {
			md.fail("stream of %s: %d %s", id, st, b)
		}
		var page api.EventsResponse
		md.decode(b, &page)
		if len(page.Events) != len(p.seqs) {
			md.fail("stream of %s has %d events, the model %v", id, len(page.Events), p.seqs)
		}
		recorded := 0
		for i, e := range page.Events {
			if e.Seq != p.seqs[i] || e.Version != int64(i+1) {
				md.fail("stream of %s: event %d version %d, the model has %d at version %d", id, e.Seq, e.Version, p.seqs[i], i+1)
			}
			if e.Type != testapp.RefundRecorded {
				continue
			}
			recorded++
			var data struct {
				RefundID string `json:"refund_id"`
			}
			md.decode(e.Data, &data)
			rr := md.refundEntry(p)
			if rr == nil {
				md.fail("payment %s recorded refund %s, but no refund request of it was delivered", id, data.RefundID)
			}
			if want := md.prov.refunds[inbox.KeyFor(rr.key, "refund")]; data.RefundID != want || want == "" {
				md.fail("payment %s recorded refund %q, the provider made %q for its delivery", id, data.RefundID, want)
			}
			if refunds[data.RefundID] {
				md.fail("refund %s is recorded on two payments", data.RefundID)
			}
			refunds[data.RefundID] = true
		}
		if p.refundRequested != (recorded == 1) || recorded > 1 {
			md.fail("payment %s: refund requested %v, %d refunds recorded", id, p.refundRequested, recorded)
		}
	}
	// The provider refunded once per refund request, however often it was
	// called.
	requests := len(md.handlers[testapp.RefundPolicy].seqs)
	if len(md.prov.refunds) != requests || len(refunds) != requests || md.prov.calls < requests {
		md.fail("%d refund requests: the provider was called %d times for %d keys, %d refunds recorded",
			requests, md.prov.calls, len(md.prov.refunds), len(refunds))
	}
	md.fireDue() // the projections catch up on the drain's events
	md.checkAlarm()
	if md.lookHi != 0 {
		// The tenant's last look at what is failing, for the directory.
		md.clock.Advance(time.Duration(md.lookHi-md.clock.Now()+1) * time.Millisecond)
		md.fireDue()
	}
	if at := md.m.AlarmAt(md.tenant); at != 0 {
		md.fail("after the drain an alarm is still set at %s", md.at(at))
	}
}

// refundEntry is the refund policy's delivery of p's refund request.
func (md *rmModel) refundEntry(p *rmPayment) *rmEntry {
	h := md.handlers[testapp.RefundPolicy]
	for _, seq := range p.seqs {
		if md.log[seq-1].typ == testapp.RefundRequested {
			return h.entries[seq]
		}
	}
	return nil
}
