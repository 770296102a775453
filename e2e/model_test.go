package e2e_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
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
	"github.com/stile-run/stile/stiletest"
)

var (
	modelOps  = flag.Int("model.ops", 0, "operations of the model test per host (default: 100000 native, 20000 wazero)")
	modelSeed = flag.Uint64("model.seed", 0, "seed of the model test (default: random, printed)")
)

// TestModel runs random interleavings of workers, claims, heartbeats,
// stalls past the lease, duplicate and late reports, cancels, dependency
// chains, concurrency keys and rate keys against a tenant, with a clock the test
// controls, and checks them against a reference model (see modelRun).
func TestModel(t *testing.T) {
	t.Parallel()
	bothHosts(t, modelRun, *modelSeed, pick(*modelOps, 100_000), pick(*modelOps, 20_000))
}

// shardOps is about how many operations one run of a model test makes: a
// host's operations are split into runs of at most this many, each on its
// own tenant with its own seed, which run in parallel. A seed given by flag
// makes one run of all the operations, to replay a failure.
const shardOps = 25_000

// bothHosts runs a model test over the test module natively and under
// wazero, in parallel, for the given numbers of operations.
func bothHosts(t *testing.T, run func(t *testing.T, p *inProcess, seed uint64, ops int), seed uint64, nativeOps, wazeroOps int) {
	for _, h := range []struct {
		name string
		cfg  stiletest.Config
		ops  int
	}{{"native", stiletest.Config{App: testapp.App()}, nativeOps}, {"wazero", stiletest.Config{Package: testTenant}, wazeroOps}} {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			n := 1
			if seed == 0 {
				n = (h.ops + shardOps - 1) / shardOps
			}
			for i := range n {
				t.Run(fmt.Sprintf("%dof%d", i+1, n), func(t *testing.T) {
					t.Parallel()
					s := seed
					if s == 0 {
						s = rand.Uint64()
					}
					ops := h.ops / n
					if i < h.ops%n {
						ops++
					}
					run(t, newInProcess(t, h.cfg, nil), s, ops)
				})
			}
		})
	}
}

// hostOf is the host a model run's test runs on: the name under the
// test's own (TestModel/native/2of4 runs natively).
func hostOf(t *testing.T) string { return strings.Split(t.Name(), "/")[1] }

func pick(flagValue, def int) int {
	if flagValue > 0 {
		return flagValue
	}
	return def
}

// mclaim is one claim of a job, as the worker that got it knows it.
type mclaim struct {
	worker     string
	attempt    int64
	token      string
	leaseUntil int64  // as last granted (claim or heartbeat)
	reported   string // the outcome the store accepted for it, if any
	output     string // the output it reported with an accepted completion
	tag        string // the tag it reported
}

// mjob is the model of one job.
type mjob struct {
	id   string
	key  string // concurrency key
	rate string // rate key
	// keep is a debounced job's keep, and collected the args (their
	// sequence numbers) of the enqueues it collected, in order.
	keep      string
	collected []int
	parents   []string
	children  []string
	regard    bool // run regardless of parents
	claims    []*mclaim
	cancelled bool            // an operator asked
	final     string          // a terminal state observed in an answer
	tags      map[string]bool // tags of accepted reports
}

func (j *mjob) current() *mclaim {
	if len(j.claims) == 0 {
		return nil
	}
	return j.claims[len(j.claims)-1]
}

// running reports whether the model knows the job to be running at now:
// its latest claim has not ended by an accepted report and its lease is
// live. (A lapsed lease is expired by the next request, before anything
// else it does.)
func (j *mjob) running(now int64) bool {
	c := j.current()
	return c != nil && c.reported == "" && now < c.leaseUntil
}

type model struct {
	t      *testing.T
	rng    *rand.Rand
	seed   uint64
	ops    int
	m      *host.Manager
	clock  *host.ManualClock
	tenant string
	jobs   map[string]*mjob
	order  []string
	slots  map[string]int64
	// held are jobs under a key whose latest claim has not reported: the
	// only ones that can hold a slot, so checks stay cheap.
	held   map[string]*mjob
	steps  int
	counts map[string]int
	// rates are the rate limits set, and starts every start (claim) of a
	// rate key's jobs, in time order; draining, the limits were raised
	// to let the drain finish.
	rates    map[string]api.SetRateRequest
	starts   map[string][]int64
	draining bool
	argSeq   int // the last debounced enqueue's args
}

func (md *model) fail(format string, args ...any) {
	md.t.Helper()
	md.t.Fatalf("model test, seed %d, step %d: %s\n(rerun: go test ./e2e -run 'TestModel/%s' -model.seed %d -model.ops %d)",
		md.seed, md.steps, fmt.Sprintf(format, args...), hostOf(md.t), md.seed, md.ops)
}

func (md *model) call(method, rest string, body any) (int, []byte) {
	md.t.Helper()
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			md.fail("marshal: %v", err)
		}
	}
	resp, err := md.m.Do(context.Background(), md.tenant, do.Request{Kind: do.KindAPI, Method: method,
		Path: "/v1/t/" + md.tenant + "/" + rest, Body: b})
	if err != nil {
		md.fail("%s %s: %v", method, rest, err)
	}
	if resp.Status >= 500 {
		md.fail("%s %s: %d %s", method, rest, resp.Status, resp.Body)
	}
	return resp.Status, resp.Body
}

func (md *model) decode(b []byte, v any) {
	if err := json.Unmarshal(b, v); err != nil {
		md.fail("decode %s: %v", b, err)
	}
}

func modelRun(t *testing.T, p *inProcess, seed uint64, ops int) {
	t.Logf("seed %d, %d operations", seed, ops)
	md := &model{t: t, rng: rand.New(rand.NewPCG(seed, seed>>1|1)), seed: seed, ops: ops, m: p.manager, clock: p.clock,
		tenant: "model", jobs: map[string]*mjob{}, slots: map[string]int64{"k1": 2, "k2": 1}, counts: map[string]int{},
		held: map[string]*mjob{}, starts: map[string][]int64{}, rates: map[string]api.SetRateRequest{
			"r1": {Limit: ptr(int64(3)), PeriodMs: ptr(int64(1000))}, "r2": {Limit: ptr(int64(1)), PeriodMs: ptr(int64(700))}}}
	for k, n := range md.slots {
		if st, b := md.call("PUT", "concurrency/"+k, api.SetLimitRequest{Slots: &n}); st != 200 {
			md.fail("set limit: %d %s", st, b)
		}
	}
	for k, r := range md.rates {
		if st, b := md.call("PUT", "rates/"+k, r); st != 200 {
			md.fail("set rate: %d %s", st, b)
		}
	}
	for md.steps = 0; md.steps < ops; md.steps++ {
		switch r := md.rng.IntN(100); {
		case r < 18:
			md.enqueue()
		case r < 38:
			md.claim()
		case r < 50:
			md.heartbeat()
		case r < 66:
			md.report()
		case r < 72:
			md.reportBatch()
		case r < 78:
			md.cancel()
		case r < 90:
			md.advance(time.Duration(md.rng.IntN(400)) * time.Millisecond)
		case r < 95:
			md.advance(time.Duration(500+md.rng.IntN(1500)) * time.Millisecond) // past leases: stalls
		case r < 99 || md.rng.IntN(5) > 0:
			md.counts["alarm"]++
			md.m.FireDue(context.Background())
		default: // one operation in 500
			// A new instance: what the old one kept in memory (the
			// earliest due time and how many share it, the store's
			// caches) must come back from storage alone.
			if !md.m.Evict(md.tenant) {
				md.fail("the idle tenant was not evicted")
			}
			md.counts["new instance"]++
		}
		md.checkAlarm()
	}
	// Drain: let every lease lapse and every backoff pass, run what is
	// left to the end, then check everything. The rate limits are raised
	// first (a raised limit lets waiting jobs start at once).
	md.draining = true
	for k := range md.rates {
		if st, b := md.call("PUT", "rates/"+k, api.SetRateRequest{Limit: ptr(int64(1_000_000)), PeriodMs: ptr(int64(1000))}); st != 200 {
			md.fail("raise rate: %d %s", st, b)
		}
	}
	for i := 0; i < 200 && md.live() > 0; i++ {
		md.advance(3 * time.Second)
		md.drain()
	}
	md.checkEnd()
	t.Logf("operations: %v; jobs: %d", md.counts, len(md.jobs))
}

// live counts jobs the model has not seen finished.
func (md *model) live() int {
	n := 0
	for _, j := range md.jobs {
		if j.final == "" {
			n++
		}
	}
	return n
}

func (md *model) advance(d time.Duration) {
	md.counts["advance"]++
	md.clock.Advance(d)
	md.m.FireDue(context.Background())
}

// randomJob picks a job the model knows, or nil.
func (md *model) randomJob() *mjob {
	if len(md.order) == 0 {
		return nil
	}
	return md.jobs[md.order[md.rng.IntN(len(md.order))]]
}

func (md *model) enqueue() {
	md.counts["enqueue"]++
	n := 1 + md.rng.IntN(3)
	reqs := make([]api.EnqueueRequest, n)
	for i := range reqs {
		r := api.EnqueueRequest{Kind: "test.fast", MaxAttempts: 1 + md.rng.IntN(3)}
		switch md.rng.IntN(5) {
		case 0:
			r.ConcurrencyKey = "k1"
		case 1:
			r.ConcurrencyKey = "k2"
		}
		switch md.rng.IntN(6) { // a job may hold both keys
		case 0:
			r.RateKey = "r1"
		case 1:
			r.RateKey = "r2"
		}
		if md.rng.IntN(6) == 0 {
			// Debounced: no run_at or parents of its own. The key says the
			// keep, so a key's enqueues always agree.
			keep := []string{"last", "first", "all"}[md.rng.IntN(3)]
			d := &api.Debounce{Key: "d-" + keep, Keep: keep, WindowMs: int64(100 + md.rng.IntN(700))}
			if md.rng.IntN(3) == 0 {
				d.MaxWaitMs = d.WindowMs + int64(md.rng.IntN(1000))
			}
			md.argSeq++
			r.Debounce, r.Args = d, json.RawMessage(`{"e":`+strconv.Itoa(md.argSeq)+`}`)
			reqs[i] = r
			continue
		}
		if md.rng.IntN(4) == 0 {
			at := time.UnixMilli(md.clock.Now() + int64(md.rng.IntN(2000)))
			r.RunAt = &at
		}
		// Parents: an earlier job of this batch, or a job the model knows.
		if i > 0 && md.rng.IntN(3) == 0 {
			r.DependsOn = append(r.DependsOn, "#"+strconv.Itoa(md.rng.IntN(i)))
		}
		if p := md.randomJob(); p != nil && md.rng.IntN(3) == 0 {
			r.DependsOn = append(r.DependsOn, p.id)
		}
		if len(r.DependsOn) > 0 && md.rng.IntN(4) == 0 {
			r.RunRegardless = true
		}
		reqs[i] = r
	}
	st, b := md.call("POST", "jobs/batch", api.EnqueueBatchRequest{Jobs: reqs})
	if st != 201 {
		md.fail("enqueue: %d %s", st, b)
	}
	var resp api.EnqueueBatchResponse
	md.decode(b, &resp)
	for i, j := range resp.Jobs {
		if d := reqs[i].Debounce; d != nil {
			var arg struct{ E int }
			md.decode(reqs[i].Args, &arg)
			if prev := md.jobs[j.ID]; prev != nil {
				// Collapsed into the job collecting the key.
				if !j.Existing || prev.keep != d.Keep {
					md.fail("debounced enqueue answered with job %s (existing %v), which the model knows as keep %q", j.ID, j.Existing, prev.keep)
				}
				if len(prev.claims) > 0 || prev.final != "" {
					md.fail("debounced enqueue collapsed into job %s, which already started", j.ID)
				}
				prev.collected = append(prev.collected, arg.E)
				md.counts["collapsed"]++
				continue
			}
			if j.Existing {
				md.fail("debounced enqueue answered with job %s, which the model never saw", j.ID)
			}
			md.jobs[j.ID] = &mjob{id: j.ID, key: reqs[i].ConcurrencyKey, rate: reqs[i].RateKey, tags: map[string]bool{},
				keep: d.Keep, collected: []int{arg.E}}
			md.order = append(md.order, j.ID)
			continue
		}
		mj := &mjob{id: j.ID, key: reqs[i].ConcurrencyKey, rate: reqs[i].RateKey, regard: reqs[i].RunRegardless, tags: map[string]bool{}}
		for _, d := range reqs[i].DependsOn {
			pid := d
			if d[0] == '#' {
				k, _ := strconv.Atoi(d[1:])
				pid = resp.Jobs[k].ID
			}
			if slices.Contains(mj.parents, pid) {
				continue // a parent named twice (by id and by "#n", or a debounce's job) is one dependency
			}
			mj.parents = append(mj.parents, pid)
			md.jobs[pid].children = append(md.jobs[pid].children, mj.id)
		}
		if j.State == "cancelled" {
			mj.final = "cancelled" // a parent had already ended dead or cancelled
		}
		md.jobs[j.ID] = mj
		md.order = append(md.order, j.ID)
	}
}

func (md *model) claim() {
	md.counts["claim"]++
	worker := "w" + strconv.Itoa(md.rng.IntN(5))
	st, b := md.call("POST", "claims", api.ClaimRequest{Worker: worker, Limit: 1 + md.rng.IntN(3)})
	if st != 200 {
		md.fail("claim: %d %s", st, b)
	}
	var resp api.ClaimResponse
	md.decode(b, &resp)
	now := md.clock.Now()
	for _, c := range resp.Jobs {
		j := md.jobs[c.ID]
		if j == nil {
			md.fail("claimed job %s the model never enqueued", c.ID)
		}
		if j.final != "" {
			md.fail("claimed job %s, which ended %s", c.ID, j.final)
		}
		if j.running(now) {
			md.fail("claimed job %s while attempt %d holds a live lease", c.ID, j.current().attempt)
		}
		if prev := j.current(); prev != nil && c.Attempt <= prev.attempt {
			md.fail("job %s claimed as attempt %d after attempt %d: attempts never repeat", c.ID, c.Attempt, prev.attempt)
		}
		for _, p := range j.parents {
			if pj := md.jobs[p]; pj.final != "completed" && !(j.regard && pj.final != "") {
				// The parent may have ended silently (expiry); ask.
				if st := md.state(p); st != "completed" && !(j.regard && (st == "dead" || st == "cancelled")) {
					md.fail("job %s claimed while its parent %s is %s", c.ID, p, st)
				}
			}
		}
		j.claims = append(j.claims, &mclaim{worker: worker, attempt: c.Attempt, token: c.LeaseToken, leaseUntil: c.LeaseUntil.UnixMilli()})
		if j.key != "" {
			md.held[j.id] = j
		}
		md.started(j, now)
		md.checkArgs(j, c)
	}
	md.checkSlots()
}

// checkArgs checks that a debounced job's claim hands the handler the
// args of the enqueues it collected as its keep says: the last, the
// first, or (all) every one, in order, none lost.
func (md *model) checkArgs(j *mjob, c api.ClaimedJob) {
	if j.keep == "" {
		return
	}
	arg := func(raw json.RawMessage) int {
		var a struct{ E int }
		md.decode(raw, &a)
		return a.E
	}
	want := j.collected[len(j.collected)-1]
	if j.keep == "first" {
		want = j.collected[0]
	}
	if got := arg(c.Args); got != want {
		md.fail("job %s (keep %s, collected %v) claimed with args %d", j.id, j.keep, j.collected, got)
	}
	var all []int
	for _, raw := range c.AllArgs {
		all = append(all, arg(raw))
	}
	if j.keep == "all" && !slices.Equal(all, j.collected) || j.keep != "all" && len(all) > 0 {
		md.fail("job %s (keep %s) claimed with all args %v, the model collected %v", j.id, j.keep, all, j.collected)
	}
}

// started records a start of j's rate key at now, and checks that the
// window of the key's period that ends now holds no more starts than its
// limit: every window is checked, since a window holds no more than the
// one ending at its last start.
func (md *model) started(j *mjob, now int64) {
	if j.rate == "" {
		return
	}
	md.starts[j.rate] = append(md.starts[j.rate], now)
	if md.draining {
		return
	}
	r := md.rates[j.rate]
	in := 0
	for _, at := range md.starts[j.rate] {
		if at > now-*r.PeriodMs {
			in++
		}
	}
	if int64(in) > *r.Limit {
		md.fail("rate key %s started %d jobs in the %d ms up to %d, over its limit of %d", j.rate, in, *r.PeriodMs, now, *r.Limit)
	}
}

func (md *model) state(id string) string {
	st, b := md.call("GET", "jobs/"+id, nil)
	if st != 200 {
		md.fail("get job %s: %d %s", id, st, b)
	}
	var j api.Job
	md.decode(b, &j)
	if j.State == "completed" || j.State == "dead" || j.State == "cancelled" {
		md.jobs[id].final = j.State
	}
	return j.State
}

// anyClaim picks a claim of a random job: usually the latest, sometimes an
// older, stale one, or a forged one.
func (md *model) anyClaim() (*mjob, *mclaim, bool) {
	j := md.randomJob()
	if j == nil || len(j.claims) == 0 {
		return nil, nil, false
	}
	c := j.current()
	if md.rng.IntN(4) == 0 {
		c = j.claims[md.rng.IntN(len(j.claims))]
	}
	forged := md.rng.IntN(15) == 0
	return j, c, forged
}

func (md *model) heartbeat() {
	md.counts["heartbeat"]++
	j, c, forged := md.anyClaim()
	if j == nil {
		return
	}
	claim := api.Claim{Worker: c.worker, Attempt: c.attempt, LeaseToken: c.token}
	if forged {
		claim.LeaseToken = "forged"
	}
	now := md.clock.Now()
	want := !forged && c == j.current() && j.running(now)
	st, b := md.call("POST", "jobs/"+j.id+"/heartbeat", api.HeartbeatRequest{Claim: claim})
	if (st == 200) != want {
		md.fail("heartbeat of job %s attempt %d (forged %v, current %v, live %v): got %d %s",
			j.id, c.attempt, forged, c == j.current(), j.running(now), st, b)
	}
	if st == 200 {
		var hb api.HeartbeatResponse
		md.decode(b, &hb)
		if hb.CancelRequested != j.cancelled {
			md.fail("heartbeat of job %s: cancel_requested %v, but the model says %v", j.id, hb.CancelRequested, j.cancelled)
		}
		c.leaseUntil = hb.LeaseUntil.UnixMilli()
	}
}

// mreport is a report the model sends, and what it expects of it.
type mreport struct {
	j       *mjob
	c       *mclaim
	r       api.ReportRequest
	outcome string
	tag     string
	forged  bool
	accept  bool // the fence takes it
	dup     bool // the same report again: answered as a duplicate
	now     int64
}

// newReport makes a report of a random claim: usually the latest, some
// stale, some forged, some the same again (nil: no job was claimed yet).
func (md *model) newReport() *mreport {
	j, c, forged := md.anyClaim()
	if j == nil {
		return nil
	}
	outcome := []string{api.OutcomeCompleted, api.OutcomeCompleted, api.OutcomeFailed, api.OutcomeSnoozed, api.OutcomeCancelled}[md.rng.IntN(5)]
	if c.reported != "" && md.rng.IntN(2) == 0 {
		outcome = c.reported // the same report again: its answer was lost
	}
	tag := fmt.Sprintf("%s-%d", c.worker, c.attempt)
	r := api.ReportRequest{Claim: api.Claim{Worker: c.worker, Attempt: c.attempt, LeaseToken: c.token},
		Outcome: outcome, Tags: []string{tag}}
	switch outcome {
	case api.OutcomeCompleted:
		r.Output = json.RawMessage(strconv.Quote(tag))
	case api.OutcomeFailed:
		r.Error = "failed by " + tag
	case api.OutcomeSnoozed:
		r.SnoozeMs = int64(md.rng.IntN(1000))
	}
	if forged {
		r.LeaseToken = "forged"
	}
	now := md.clock.Now()
	return &mreport{j: j, c: c, r: r, outcome: outcome, tag: tag, forged: forged, now: now,
		accept: !forged && c == j.current() && j.running(now),
		dup:    !forged && c.reported != "" && c.reported == outcome && c == j.current()}
}

func (md *model) report() {
	md.counts["report"]++
	p := md.newReport()
	if p == nil {
		return
	}
	st, b := md.call("POST", "jobs/"+p.j.id+"/report", p.r)
	if st != 200 && st != 409 {
		md.fail("report: %d %s", st, b)
	}
	var resp api.ReportResponse
	if st == 200 {
		md.decode(b, &resp)
	}
	md.answered(p, st == 200, resp.State, resp.Duplicate, string(b))
}

// reportBatch reports several claims of distinct jobs in one request
// (POST /reports): each is fenced on its own, so the stale and forged
// ones are refused and the others recorded, in one transaction.
func (md *model) reportBatch() {
	md.counts["batch report"]++
	var ps []*mreport
	var req api.BatchReportRequest
	seen := map[string]bool{}
	for range 2 + md.rng.IntN(4) {
		p := md.newReport()
		if p == nil || seen[p.j.id] {
			continue
		}
		seen[p.j.id] = true
		ps = append(ps, p)
		req.Reports = append(req.Reports, api.BatchReport{JobID: p.j.id, ReportRequest: p.r})
	}
	if len(ps) == 0 {
		return
	}
	st, b := md.call("POST", "reports", req)
	if st != 200 {
		md.fail("batch report: %d %s", st, b)
	}
	var resp api.BatchReportResponse
	md.decode(b, &resp)
	if len(resp.Results) != len(ps) {
		md.fail("batch report of %d answered %d results", len(ps), len(resp.Results))
	}
	for i, p := range ps {
		res := resp.Results[i]
		if res.JobID != p.j.id {
			md.fail("batch report result %d is job %s's, not %s's", i, res.JobID, p.j.id)
		}
		msg := ""
		if res.Error != nil {
			if res.Error.Code.Status() != 409 {
				md.fail("batch report of job %s: %s %s", p.j.id, res.Error.Code, res.Error.Message)
			}
			msg = string(res.Error.Code) + ": " + res.Error.Message
		}
		md.answered(p, res.Error == nil, res.State, res.Duplicate, msg)
	}
}

// answered checks the store's answer to report p (ok: recorded, or a
// duplicate) against the model, and records what it accepted.
func (md *model) answered(p *mreport, ok bool, state string, duplicate bool, body string) {
	j, c := p.j, p.c
	switch {
	case p.accept && !ok, p.dup && !ok:
		md.fail("report %s of job %s attempt %d should be accepted (dup %v): %s", p.outcome, j.id, c.attempt, p.dup, body)
	case !p.accept && !p.dup && ok:
		md.fail("report %s of job %s attempt %d (forged %v, current %v, live %v) was accepted: %s",
			p.outcome, j.id, c.attempt, p.forged, c == j.current(), j.running(p.now), body)
	}
	if !ok {
		return
	}
	if p.dup {
		if !duplicate {
			md.fail("job %s: a repeated report was not answered as a duplicate", j.id)
		}
		return
	}
	c.reported, c.tag = p.outcome, p.tag
	j.tags[p.tag] = true
	if p.outcome == api.OutcomeCompleted {
		c.output = string(p.r.Output)
	}
	switch state {
	case "completed", "dead", "cancelled":
		if j.final != "" {
			md.fail("job %s ended %s after it had ended %s: a second terminal transition", j.id, state, j.final)
		}
		j.final = state
	}
}

func (md *model) cancel() {
	md.counts["cancel"]++
	j := md.randomJob()
	if j == nil {
		return
	}
	st, b := md.call("POST", "jobs/"+j.id+"/cancel", api.CancelRequest{Reason: "model"})
	switch st {
	case 200:
		var got api.Job
		md.decode(b, &got)
		if got.State == "cancelled" {
			if j.final != "" {
				md.fail("job %s cancelled after it had ended %s", j.id, j.final)
			}
			j.final = "cancelled"
		} else {
			j.cancelled = true
		}
	case 409:
		if j.final == "" {
			md.state(j.id) // it ended silently (expiry, a parent); learn how
			if j.final == "" {
				md.fail("cancel of job %s refused, but it has not ended: %s", j.id, b)
			}
		}
	default:
		md.fail("cancel: %d %s", st, b)
	}
}

// checkAlarm: the alarm the host holds is the earliest due time in storage.
func (md *model) checkAlarm() {
	st, b := md.call("GET", "status", nil)
	if st != 200 {
		md.fail("status: %d", st)
	}
	var s struct { // the one field checked: decoding all of api.Status costs more than the request
		AlarmAt *time.Time `json:"alarm_at"`
	}
	md.decode(b, &s)
	want := int64(0)
	if s.AlarmAt != nil {
		want = s.AlarmAt.UnixMilli()
	}
	if got := md.m.AlarmAt(md.tenant); got != want {
		md.fail("the alarm is at %d, the earliest due work at %d", got, want)
	}
}

// checkSlots: right after a claim (due work applied), the slots in use are
// the model's running jobs per key, never above the limit.
func (md *model) checkSlots() {
	st, b := md.call("GET", "concurrency", nil)
	if st != 200 {
		md.fail("limits: %d", st)
	}
	var ls api.LimitsResponse
	md.decode(b, &ls)
	now := md.clock.Now()
	running := map[string]int64{}
	for id, j := range md.held {
		if !j.running(now) {
			delete(md.held, id) // reported, or its lease lapsed and was expired
			continue
		}
		running[j.key]++
	}
	for _, l := range ls.Limits {
		if l.InUse > l.Slots {
			md.fail("key %s has %d jobs in flight, over its %d slots", l.Key, l.InUse, l.Slots)
		}
		if l.InUse != running[l.Key] {
			md.fail("key %s counts %d slots in use, the model %d running", l.Key, l.InUse, running[l.Key])
		}
	}
}

// drain completes whatever can be claimed.
func (md *model) drain() {
	for {
		st, b := md.call("POST", "claims", api.ClaimRequest{Worker: "drain", Limit: 10})
		if st != 200 {
			md.fail("drain claim: %d %s", st, b)
		}
		var resp api.ClaimResponse
		md.decode(b, &resp)
		if len(resp.Jobs) == 0 {
			return
		}
		for _, c := range resp.Jobs {
			j := md.jobs[c.ID]
			mc := &mclaim{worker: "drain", attempt: c.Attempt, token: c.LeaseToken, leaseUntil: c.LeaseUntil.UnixMilli()}
			j.claims = append(j.claims, mc)
			md.started(j, md.clock.Now())
			md.checkArgs(j, c)
			tag := fmt.Sprintf("drain-%d", c.Attempt)
			st, b := md.call("POST", "jobs/"+c.ID+"/report", api.ReportRequest{Claim: api.Claim{Worker: "drain",
				Attempt: c.Attempt, LeaseToken: c.LeaseToken}, Outcome: api.OutcomeCompleted,
				Output: json.RawMessage(strconv.Quote(tag)), Tags: []string{tag}})
			if st != 200 {
				md.fail("drain report: %d %s", st, b)
			}
			mc.reported, mc.tag, mc.output = api.OutcomeCompleted, tag, strconv.Quote(tag)
			j.tags[tag] = true
			j.final = "completed"
		}
	}
}

func ptr[T any](v T) *T { return &v }

// checkEnd checks every job's record against the model.
func (md *model) checkEnd() {
	for k := range md.rates {
		st, b := md.call("GET", "rates/"+k, nil)
		if st != 200 {
			md.fail("get rate %s: %d %s", k, st, b)
		}
		var r api.Rate
		md.decode(b, &r)
		if r.Started != int64(len(md.starts[k])) {
			md.fail("rate key %s counts %d starts, the model saw %d claims of its jobs", k, r.Started, len(md.starts[k]))
		}
		md.counts["limited "+k] = int(r.Limited)
		if md.ops >= 5000 && r.Limited == 0 {
			md.fail("rate key %s never held a job back in %d operations: the run does not test its limit", k, md.ops)
		}
	}
	for _, id := range md.order {
		j := md.jobs[id]
		st, b := md.call("GET", "jobs/"+id, nil)
		if st != 200 {
			md.fail("get job %s: %d", id, st)
		}
		var got api.Job
		md.decode(b, &got)
		switch got.State {
		case "completed", "dead", "cancelled":
		default:
			md.fail("job %s is still %s after the drain", id, got.State)
		}
		// Each claim's end is recorded exactly once, as the model saw it.
		if len(got.Attempts) != len(j.claims) {
			md.fail("job %s: %d claims, %d attempts recorded", id, len(j.claims), len(got.Attempts))
		}
		completed := 0
		for i, a := range got.Attempts {
			c := j.claims[i]
			if a.Attempt != c.attempt || a.Worker != c.worker {
				md.fail("job %s attempt %d: recorded as %d by %s", id, c.attempt, a.Attempt, a.Worker)
			}
			want := c.reported
			if want == "" {
				want = "lease_expired"
			}
			if a.Outcome != want {
				md.fail("job %s attempt %d ended %s, the model saw %s", id, c.attempt, a.Outcome, want)
			}
			if a.Outcome == "completed" {
				completed++
				if string(got.Output) != c.output {
					md.fail("job %s: output %s, but the accepted completion reported %s", id, got.Output, c.output)
				}
			}
		}
		if completed > 1 || (got.State == "completed") != (completed == 1) {
			md.fail("job %s is %s with %d completed attempts: one terminal transition, exactly", id, got.State, completed)
		}
		// No annotation from a stale attempt.
		for _, tag := range got.Tags {
			if !j.tags[tag] {
				md.fail("job %s carries tag %q, which no accepted report sent", id, tag)
			}
		}
		// Each dependency resolved once, as its parent ended.
		if len(got.DependsOn) != len(j.parents) {
			md.fail("job %s: %d parents recorded, %d enqueued", id, len(got.DependsOn), len(j.parents))
		}
		for _, d := range got.DependsOn {
			pst := md.state(d.JobID)
			want := "completed"
			if pst != "completed" {
				want = "failed"
			}
			if d.Resolved != want {
				md.fail("job %s: its dependency on %s (%s) is resolved %q", id, d.JobID, pst, d.Resolved)
			}
		}
		if got.PendingParents != 0 && got.State != "cancelled" {
			md.fail("job %s ended %s with %d parents pending", id, got.State, got.PendingParents)
		}
		if !slices.Contains([]string{"", got.State}, j.final) {
			md.fail("job %s ended %s, but an answer said %s", id, got.State, j.final)
		}
	}
	st, b := md.call("GET", "concurrency", nil)
	if st != 200 {
		md.fail("limits: %d", st)
	}
	var ls api.LimitsResponse
	md.decode(b, &ls)
	for _, l := range ls.Limits {
		if l.InUse != 0 {
			md.fail("key %s leaked %d slots", l.Key, l.InUse)
		}
	}
}
