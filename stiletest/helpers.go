package stiletest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/inbox"
	"github.com/stile-run/stile/worker"
)

// Scope is the harness's helpers on one tenant: Harness's own methods act
// on Config.Tenant ("acme"), For(name) on another. Every helper that
// checks fails tb with what it expected and what was there.
type Scope struct {
	h      *Harness
	tenant string
}

// For is the helpers on tenant.
func (h *Harness) For(tenant string) *Scope { return &Scope{h: h, tenant: tenant} }

func (h *Harness) scope() *Scope { return h.For(h.tenant) }

// RequireEnqueued, RequireNotEnqueued, WorkOne, WorkAll, CatchUp, Query and
// RequireEvent on the harness's tenant: see Scope.
func (h *Harness) RequireEnqueued(tb testing.TB, kind string, args any) api.Job {
	tb.Helper()
	return h.scope().RequireEnqueued(tb, kind, args)
}

func (h *Harness) RequireNotEnqueued(tb testing.TB, kind string, args any) {
	tb.Helper()
	h.scope().RequireNotEnqueued(tb, kind, args)
}

func (h *Harness) WorkOne(tb testing.TB) (worker.Ran, bool) {
	tb.Helper()
	return h.scope().WorkOne(tb)
}

func (h *Harness) WorkAll(tb testing.TB) []worker.Ran {
	tb.Helper()
	return h.scope().WorkAll(tb)
}

func (h *Harness) WaitIdle(tb testing.TB) {
	tb.Helper()
	h.scope().WaitIdle(tb)
}

func (h *Harness) CatchUp(tb testing.TB) {
	tb.Helper()
	h.scope().CatchUp(tb)
}

func (h *Harness) Query(tb testing.TB, name string, params map[string]string) []map[string]any {
	tb.Helper()
	return h.scope().Query(tb, name, params)
}

func (h *Harness) RequireEvent(tb testing.TB, typ string, data any) api.Event {
	tb.Helper()
	return h.scope().RequireEvent(tb, typ, data)
}

// Client is the tenant's API client.
func (s *Scope) Client() *client.Tenant { return s.h.Tenant(s.tenant) }

// RequireEnqueued finds a job of kind whose args contain args (a JSON
// subset: every key args has, with the same value, recursively; nil
// matches any), in any state, and returns the newest such job.
func (s *Scope) RequireEnqueued(tb testing.TB, kind string, args any) api.Job {
	tb.Helper()
	js, want := s.jobsOf(tb, kind, args)
	for i := len(js) - 1; i >= 0; i-- {
		if contains(js[i].Args, want) {
			return js[i]
		}
	}
	tb.Fatalf("stiletest: tenant %s has no job of kind %q with args containing %s\n%s", s.tenant, kind, want, s.describe(js, kind))
	return api.Job{}
}

// RequireNotEnqueued fails if a job of kind with args containing args
// exists, in any state.
func (s *Scope) RequireNotEnqueued(tb testing.TB, kind string, args any) {
	tb.Helper()
	js, want := s.jobsOf(tb, kind, args)
	for _, j := range js {
		if contains(j.Args, want) {
			tb.Fatalf("stiletest: tenant %s has job %s of kind %q (%s) with args %s, containing %s; expected none",
				s.tenant, j.ID, kind, j.State, j.Args, want)
		}
	}
}

// jobsOf reads every job of kind with its args (GET /jobs lists them
// without), oldest first.
func (s *Scope) jobsOf(tb testing.TB, kind string, args any) ([]api.Job, []byte) {
	tb.Helper()
	want := []byte("null")
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			tb.Fatalf("stiletest: args %v are not JSON: %v", args, err)
		}
		want = b
	}
	ctx := context.Background()
	ten := s.Client()
	var out []api.Job
	after := ""
	for {
		page, err := ten.List(ctx, "", "", kind, after, api.MaxList)
		if err != nil {
			tb.Fatalf("stiletest: list jobs of %s: %v", s.tenant, err)
		}
		for _, j := range page.Jobs {
			full, err := ten.Job(ctx, j.ID)
			if err != nil {
				tb.Fatalf("stiletest: read job %s of %s: %v", j.ID, s.tenant, err)
			}
			out = append(out, full)
		}
		if page.Next == "" {
			return out, want
		}
		after = page.Next
	}
}

// describe says what jobs there were, for a failure.
func (s *Scope) describe(js []api.Job, kind string) string {
	if len(js) == 0 {
		kinds := map[string]bool{}
		if l, err := s.Client().List(context.Background(), "", "", "", "", api.MaxList); err == nil {
			for _, j := range l.Jobs {
				kinds[j.Kind] = true
			}
		}
		if len(kinds) == 0 {
			return "it has no job at all"
		}
		names := make([]string, 0, len(kinds))
		for k := range kinds {
			names = append(names, k)
		}
		slices.Sort(names)
		return fmt.Sprintf("it has no job of kind %q; its jobs are of kinds %s", kind, strings.Join(names, ", "))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "its %d jobs of kind %q:", len(js), kind)
	for i, j := range js {
		if i == 10 {
			fmt.Fprintf(&b, "\n  … and %d more", len(js)-10)
			break
		}
		fmt.Fprintf(&b, "\n  job %s (%s): %s", j.ID, j.State, j.Args)
	}
	return b.String()
}

// WorkOne runs one ready job (else one reaction delivery) of the tenant
// with Config.Handlers, in this goroutine, through the worker library's
// own claim, heartbeat and report; false if nothing was ready. Its clock
// is the harness's, so Advance drives its leases and time limits.
func (s *Scope) WorkOne(tb testing.TB) (worker.Ran, bool) {
	tb.Helper()
	w := s.worker(tb)
	r, ok, err := w.WorkOne(context.Background(), s.tenant)
	if err != nil {
		tb.Fatalf("stiletest: WorkOne on %s: %v", s.tenant, err)
	}
	return r, ok
}

// WorkAll runs ready jobs and deliveries until none is left (a job that
// snoozes or retries later is not ready until Advance moves the clock),
// and returns what ran, in order.
func (s *Scope) WorkAll(tb testing.TB) []worker.Ran {
	tb.Helper()
	w := s.worker(tb)
	rs, err := w.WorkAll(context.Background(), s.tenant)
	if err != nil {
		tb.Fatalf("stiletest: WorkAll on %s: %v", s.tenant, err)
	}
	return rs
}

// worker is a worker with Config.Handlers, as an executor builds it: it
// claims from every queue, the kinds and reactions it has handlers for.
func (s *Scope) worker(tb testing.TB) *worker.Worker {
	tb.Helper()
	if s.h.handlers == nil {
		tb.Fatal("stiletest: WorkOne and WorkAll run Config.Handlers: set it to your handler package's Register")
	}
	w, err := worker.New(worker.Config{URL: s.h.URL, Token: s.h.token, ID: "stiletest", Clock: s.h.WorkerClock(), Logger: s.h.log, Env: s.h.env})
	if err != nil {
		tb.Fatalf("stiletest: %v", err)
	}
	s.h.handlers(w)
	return w
}

// WaitIdle waits, with Config.Pushed, until the tenant has no push in
// flight or pending and the executor runs nothing: what was ready has run
// (work due later, a retry's backoff say, is not waited for). It fails
// after 30 s with what was still in flight.
func (s *Scope) WaitIdle(tb testing.TB) {
	tb.Helper()
	if s.h.executor == nil {
		tb.Fatal("stiletest: WaitIdle waits for the pushed executor: set Config.Pushed")
	}
	var st api.PushStatus
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		st, err = s.Client().Pushes(context.Background())
		if err == nil && len(st.InFlight) == 0 && !st.Pending && s.h.executor.Busy() == 0 {
			return
		}
	}
	tb.Fatalf("stiletest: tenant %s did not go idle in 30 s: pushes %+v (err %v), %d pushes running in the executor", s.tenant, st, err, s.h.executor.Busy())
}

// CatchUp brings the tenant's projections to the head of its event log
// (they catch up from the tenant's alarm, which it runs), and fails if one
// is stalled on an event.
func (s *Scope) CatchUp(tb testing.TB) {
	tb.Helper()
	ctx := context.Background()
	for range 1000 {
		ps, err := s.Client().Projections(ctx)
		if err != nil {
			tb.Fatalf("stiletest: read the projections of %s: %v", s.tenant, err)
		}
		behind := false
		for _, p := range ps.Projections {
			for _, g := range []*api.GenerationStatus{p.Live, p.Rebuild} {
				switch {
				case g == nil:
				case g.Status == "stalled":
					tb.Fatalf("stiletest: projection %s of %s is stalled at event %d: %s (retried at %v)", p.Name, s.tenant, g.ErrorSeq, g.Error, g.RetryAt)
				case g.Lag > 0 || g.Status != "current":
					behind = true
				}
			}
			if p.Rebuild != nil {
				behind = true
			}
		}
		if !behind {
			return
		}
		if s.h.manual != nil {
			s.h.manager.FireDue(ctx)
		} else {
			time.Sleep(5 * time.Millisecond)
		}
	}
	tb.Fatalf("stiletest: the projections of %s did not catch up", s.tenant)
}

// Query catches the projections up (CatchUp), then runs a registered
// query and returns its rows, each a column → value map.
func (s *Scope) Query(tb testing.TB, name string, params map[string]string) []map[string]any {
	tb.Helper()
	s.CatchUp(tb)
	q := url.Values{}
	for k, v := range params {
		q.Set(k, v)
	}
	res, err := s.Client().Query(context.Background(), name, q)
	if err != nil {
		tb.Fatalf("stiletest: query %s of %s: %v", name, s.tenant, err)
	}
	rows := make([]map[string]any, len(res.Rows))
	for i, r := range res.Rows {
		if err := json.Unmarshal(r, &rows[i]); err != nil {
			tb.Fatalf("stiletest: query %s: row %s: %v", name, r, err)
		}
	}
	return rows
}

// RequireEvent finds the newest event of type typ whose data contains
// data (a JSON subset, as RequireEnqueued's args).
func (s *Scope) RequireEvent(tb testing.TB, typ string, data any) api.Event {
	tb.Helper()
	want := []byte("null")
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			tb.Fatalf("stiletest: data %v is not JSON: %v", data, err)
		}
		want = b
	}
	var all []api.Event
	after := int64(0)
	for {
		page, err := s.Client().Events(context.Background(), after, 1000)
		if err != nil {
			tb.Fatalf("stiletest: read the events of %s: %v", s.tenant, err)
		}
		all = append(all, page.Events...)
		if len(page.Events) < 1000 {
			break
		}
		after = page.Events[len(page.Events)-1].Seq
	}
	var ofType []api.Event
	for _, e := range all {
		if e.Type == typ {
			ofType = append(ofType, e)
		}
	}
	for i := len(ofType) - 1; i >= 0; i-- {
		if contains(ofType[i].Data, want) {
			return ofType[i]
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "stiletest: tenant %s has no event of type %q with data containing %s\n", s.tenant, typ, want)
	list := ofType
	if len(list) == 0 {
		list = all
		fmt.Fprintf(&b, "it has no event of that type; its %d events:", len(all))
	} else {
		fmt.Fprintf(&b, "its %d events of that type:", len(ofType))
	}
	for i, e := range list {
		if i == 10 {
			fmt.Fprintf(&b, "\n  … and %d more", len(list)-10)
			break
		}
		fmt.Fprintf(&b, "\n  %d %s %s: %s", e.Seq, e.Stream, e.Type, e.Data)
	}
	tb.Fatal(b.String())
	return api.Event{}
}

// WorkerClock is the clock a worker of this harness keeps leases,
// heartbeats and time limits by: the manual clock (Advance moves both the
// tenants and the worker), or the wall clock with Config.RealClock.
func (h *Harness) WorkerClock() worker.Clock {
	if h.manual == nil {
		return nil // worker.Config's default: the wall clock
	}
	return manualWorkerClock{h}
}

type manualWorkerClock struct{ h *Harness }

func (c manualWorkerClock) Now() time.Time { return time.UnixMilli(c.h.manual.Now()) }

func (c manualWorkerClock) After(d time.Duration) (<-chan struct{}, func()) {
	return c.h.manual.Timer(c.h.manual.Now() + d.Milliseconds())
}

// contains reports whether the JSON have contains want: every key of an
// object in want is in have with a value that contains want's, arrays
// hold the same number of elements each containing want's, and other
// values are equal. A want of null matches anything.
func contains(have json.RawMessage, want []byte) bool {
	var h, w any
	if bytes.Equal(bytes.TrimSpace(want), []byte("null")) {
		return true
	}
	dec := func(b []byte, v *any) bool {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		return d.Decode(v) == nil
	}
	if !dec(have, &h) || !dec(want, &w) {
		return false
	}
	return subset(h, w)
}

func subset(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok || !subset(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !subset(h[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return fmt.Sprint(have) == fmt.Sprint(want)
	}
}

// TryJob runs a job handler alone (no tenant, no worker) with args, and
// returns the report a worker would send: its outcome, error and output.
func TryJob(tb testing.TB, h worker.Handler, kind string, args any) api.ReportRequest {
	tb.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		tb.Fatalf("stiletest: args %v are not JSON: %v", args, err)
	}
	j := &worker.Job{JobContext: worker.JobContext{JobID: "1", Attempt: 1}, Tenant: "acme", Kind: kind, Queue: api.DefaultQueue,
		Args: b, MaxAttempts: 25}
	return worker.TryJob(context.Background(), h, j)
}

// Delivery is a fake delivery of an event to a reaction handler, for
// Deliver. Zero fields get defaults: tenant "acme", attempt 1, and an
// idempotency key derived as the inbox derives it.
type Delivery struct {
	Tenant      string
	Handler     string
	Event       api.Event
	Attempt     int64
	Correlation string
	State       json.RawMessage
}

// Deliver runs a reaction handler alone on a fake delivery and returns the
// settlement a worker would send: on success, the commands it dispatched,
// the commands it scheduled, its state and deadlines.
func Deliver(tb testing.TB, h worker.ReactionHandler, d Delivery) api.Settlement {
	tb.Helper()
	if d.Tenant == "" {
		d.Tenant = "acme"
	}
	if d.Attempt == 0 {
		d.Attempt = 1
	}
	if d.Event.Seq == 0 {
		d.Event.Seq = 1
	}
	r := &worker.Reaction{Tenant: d.Tenant, Handler: d.Handler, Kind: api.ReactionKindPolicy, Event: d.Event,
		IdempotencyKey: inbox.Key(d.Tenant, d.Handler, d.Event.Seq), Attempt: d.Attempt, Deadline: time.Now().Add(time.Minute),
		Correlation: d.Correlation, State: d.State}
	if d.Correlation != "" {
		r.Kind = api.ReactionKindProcess
	}
	return worker.TryReaction(context.Background(), h, r)
}
