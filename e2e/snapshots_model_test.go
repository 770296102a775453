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
	"sync"
	"testing"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/e2e/testapp/ledger"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/stiletest"
)

var (
	smodelOps  = flag.Int("smodel.ops", 0, "operations of the snapshots model test per host (default: 1500 native, 600 wazero)")
	smodelSeed = flag.Uint64("smodel.seed", 0, "seed of the snapshots model test (default: random, printed)")
)

// TestSnapshotsModel runs random sequences of commands on a few ledger
// aggregates (package ledger), some appending dozens of events so that
// snapshots are kept often, with appends to their streams beside the
// commands, repeated commands, refused ones, commands whose module traps
// after keeping a snapshot (all of it is rolled back), new instances,
// and between them deployments of another variant of the module: one
// whose Evolve changed under a new snapshot version, one fingerprinted by
// its build, one with the same fold and version, one without snapshots,
// or the same variant again (a restart). Now and then
// several commands and an append race on one stream, often right after a
// deployment, so that the first of them to run rebuilds the snapshot.
//
// The model folds every stream from its start by the deployed Evolve:
// every command must decide on exactly that state, whatever snapshot it
// started from. It also knows which snapshot each stream keeps (its
// version and fingerprint), so it predicts which one a command starts
// from, which the ledger's Decide reports.
func TestSnapshotsModel(t *testing.T) {
	t.Parallel()
	for _, h := range []struct {
		name string
		wasm bool
		ops  int
	}{{"native", false, 1500}, {"wazero", true, 600}} {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			seed := *smodelSeed
			if seed == 0 {
				seed = rand.Uint64()
			}
			smRun(t, h.wasm, seed, pick(*smodelOps, h.ops))
		})
	}
}

// smStream is the model of one ledger's stream.
type smStream struct {
	id     string
	events []api.Event // Type, Version and Data: what Evolve reads
	// The snapshot the stream keeps: the fold of events 1..snapAt under
	// fingerprint snapFP ("": none is kept).
	snapAt int64
	snapFP string
	// folds is each Evolve's fold of events from the start: a stream only
	// grows, so the model folds each event once per Evolve.
	folds map[string]smFold
}

type smFold struct {
	st ledger.State
	n  int // events folded
}

// fold is the state of the whole stream by Evolve f.
func (s *smStream) fold(f string) ledger.State {
	c := s.folds[f]
	evolve := ledger.Evolve(f)
	for ; c.n < len(s.events); c.n++ {
		c.st = evolve(c.st, s.events[c.n])
	}
	s.folds[f] = c
	return c.st
}

func (s *smStream) name() string   { return ledger.Name + ":" + s.id }
func (s *smStream) version() int64 { return int64(len(s.events)) }

// smCommand is an applied command: what it was and the versions of the
// events it appended.
type smCommand struct {
	c        api.Command
	versions []int64
}

type smModel struct {
	t      *testing.T
	rng    *rand.Rand
	seed   uint64
	ops    int
	steps  int
	wasm   bool
	dir    string
	h      *stiletest.Harness
	m      *host.Manager
	tenant string
	racing bool // checking the answers of a race
	// open is whether the tenant's engine is open: a request was served
	// since the deployment or the last eviction.
	open bool

	v  ledger.Variant // the deployed variant
	fp string         // its snapshots' fingerprint ("": it keeps none)

	// trap is the prefix of the statement at which the tenant's module
	// traps next ("": none); trapped counts the traps. The host asks from
	// the goroutine of the call.
	mu      sync.Mutex
	trap    string
	trapped int

	streams  []*smStream
	applied  map[string]*smCommand
	ids      []string // applied command ids, in order
	nextID   int
	counts   map[string]int
	switches []string
}

func (md *smModel) fail(format string, args ...any) {
	md.t.Helper()
	md.t.Fatalf("snapshots model test, seed %d, step %d, variant %s: %s\n(deployments so far: %s)\n(rerun: go test ./e2e -run 'TestSnapshotsModel/%s' -smodel.seed %d -smodel.ops %d)",
		md.seed, md.steps, md.v.Name, fmt.Sprintf(format, args...), strings.Join(md.switches, " "), hostOf(md.t), md.seed, md.ops)
}

func smRun(t *testing.T, wasm bool, seed uint64, ops int) {
	t.Logf("seed %d, %d operations", seed, ops)
	md := &smModel{t: t, rng: rand.New(rand.NewPCG(seed, seed>>1|1)), seed: seed, ops: ops, wasm: wasm, dir: t.TempDir(),
		tenant: "smodel", applied: map[string]*smCommand{}, counts: map[string]int{}}
	for i := range 3 {
		md.streams = append(md.streams, &smStream{id: "l" + strconv.Itoa(i), folds: map[string]smFold{}})
	}
	md.deploy("a")
	resp, err := md.m.Do(context.Background(), md.tenant, do.Request{Kind: do.KindAPI, Method: "PUT", Path: "/v1/t/" + md.tenant})
	if err != nil || resp.Status != 201 {
		md.fail("create the tenant: %v %d %s", err, resp.Status, resp.Body)
	}
	md.open = true
	started := time.Now()
	for md.steps = 0; md.steps < ops; md.steps++ {
		switch r := md.rng.IntN(100); {
		case r < 40:
			md.add(md.stream())
		case r < 50:
			md.peek(md.stream())
		case r < 56:
			md.nothing(md.stream())
		case r < 64:
			md.appendRaw(md.stream())
		case r < 70:
			md.repeat()
		case r < 77:
			md.race(md.stream())
		case r < 84:
			md.redeploy()
			if md.rng.IntN(2) == 0 {
				md.race(md.longest())
			}
		case r < 87:
			md.crash(md.due())
		case r < 89:
			// A new instance: nothing of the old one's memory may count.
			if md.open {
				if !md.m.Evict(md.tenant) {
					md.fail("the idle tenant was not evicted")
				}
				md.open = false
				md.counts["new instance"]++
			}
		default:
			md.checkStorage()
		}
	}
	md.checkEnd()
	var lens []string
	for _, s := range md.streams {
		lens = append(lens, fmt.Sprintf("%s %d", s.id, len(s.events)))
	}
	t.Logf("%d operations in %v; streams: %s; deployments: %d", ops, time.Since(started).Round(time.Millisecond), strings.Join(lens, ", "), len(md.switches))
	t.Logf("counts: %v", md.counts)
}

// deploy replaces the module with variant v over the same storage (v
// again: the deployment restarted), the clock going on where it was.
func (md *smModel) deploy(v string) {
	now := start
	if md.h != nil {
		now = md.h.Now()
		if err := md.h.Close(); err != nil {
			md.fail("close the deployment: %v", err)
		}
	}
	cfg := stiletest.Config{DataDir: md.dir, Now: now, Token: token, Fault: md.fault}
	if md.wasm {
		cfg.Package = "github.com/stile-run/stile/e2e/testapp/ledger/" + v
	} else {
		cfg.App = ledger.App(v)
	}
	md.h = stiletest.New(md.t, cfg)
	md.m = md.h.Manager()
	md.open = false
	md.v = ledger.Variants[v]
	md.switches = append(md.switches, v)
	switch {
	case !md.v.Keeps:
		md.fp = ""
	case md.v.Version != "":
		md.fp = "version " + md.v.Version
	case md.wasm:
		md.fp = "build " + host.ModuleVersion(stiletest.BuildWasm(md.t, cfg.Package))
	default:
		md.fp = "" // a native host names no build: no snapshots
	}
}

func (md *smModel) redeploy() {
	names := []string{"a", "a2", "b", "c", "none"}
	v := names[md.rng.IntN(len(names))]
	md.counts["deploy "+v]++
	md.deploy(v)
}

func (md *smModel) stream() *smStream { return md.streams[md.rng.IntN(len(md.streams))] }

// due is a stream on which a command keeps a snapshot now, if one
// is, else any.
func (md *smModel) due() *smStream {
	for _, i := range md.rng.Perm(len(md.streams)) {
		if _, keepAt := md.expect(md.streams[i]); keepAt > 0 {
			return md.streams[i]
		}
	}
	return md.stream()
}

// longest is the longest stream: the one whose rebuild folds the most.
func (md *smModel) longest() *smStream {
	l := md.streams[0]
	for _, s := range md.streams[1:] {
		if len(s.events) > len(l.events) {
			l = s
		}
	}
	return l
}

func (md *smModel) request(method, rest string, body any) do.Request {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			md.fail("marshal: %v", err)
		}
	}
	path, query, _ := strings.Cut(rest, "?")
	return do.Request{Kind: do.KindAPI, Method: method, Path: "/v1/t/" + md.tenant + "/" + path, Query: query, Body: b}
}

func (md *smModel) call(method, rest string, body any) (int, []byte) {
	md.t.Helper()
	resp, err := md.m.Do(context.Background(), md.tenant, md.request(method, rest, body))
	md.open = true
	if err != nil {
		md.fail("%s %s: %v", method, rest, err)
	}
	if resp.Status >= 500 {
		md.fail("%s %s: %d %s", method, rest, resp.Status, resp.Body)
	}
	return resp.Status, resp.Body
}

func (md *smModel) decode(b []byte, v any) {
	md.t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		md.fail("decode %s: %v", b, err)
	}
}

// expect is the state a command on s decides on now, by the model: the
// fold of the whole stream by the deployed Evolve, started from the kept
// snapshot if it is this fold's; and the snapshot the command keeps, if
// one is due (at 0: none).
func (md *smModel) expect(s *smStream) (st ledger.State, keepAt int64) {
	st = s.fold(md.v.Fold)
	var kept int64
	if md.fp != "" && s.snapFP == md.fp {
		st.From, kept = s.snapAt, s.snapAt
	}
	if md.fp != "" && s.version()-kept >= int64(md.v.Every) {
		keepAt = s.version()
	}
	return st, keepAt
}

// keep records the snapshot a command kept.
func (md *smModel) keep(s *smStream, at int64) {
	if at > 0 {
		s.snapAt, s.snapFP = at, md.fp
		md.counts["snapshot kept"]++
	}
}

func (md *smModel) newID(kind string) string {
	md.nextID++
	return kind + "-" + strconv.Itoa(md.nextID)
}

// addCommand is an Add of 1 to 3 numbers, now and then of dozens: many
// snapshots' worth of events at once.
func (md *smModel) addCommand(s *smStream) api.Command {
	n := 1 + md.rng.IntN(3)
	if md.rng.IntN(6) == 0 {
		n = 10 + md.rng.IntN(20)
	}
	xs := make([]int64, n)
	for i := range xs {
		xs[i] = md.rng.Int64N(1 << 40)
	}
	data, _ := json.Marshal(ledger.AddData{Xs: xs})
	return api.Command{ID: md.newID("add"), Aggregate: ledger.Name, AggregateID: s.id, Type: "Add", Data: data}
}

func (md *smModel) add(s *smStream) {
	md.counts["add"]++
	c := md.addCommand(s)
	st, b := md.call("POST", "commands", c)
	md.checkAdd(s, c, st, b)
}

// checkAdd checks the answer of an Add on s, applied after every event
// the model holds, and records what it did.
func (md *smModel) checkAdd(s *smStream, c api.Command, status int, b []byte) {
	md.t.Helper()
	if status != 201 {
		md.fail("add %s on %s: %d %s", c.ID, s.id, status, b)
	}
	var res api.CommandResult
	md.decode(b, &res)
	var in ledger.AddData
	md.decode(c.Data, &in)
	want, keepAt := md.expect(s)
	v := s.version()
	if res.Duplicate || res.Version != v+1+int64(len(in.Xs)) || len(res.Events) != 1+len(in.Xs) {
		md.fail("add %s of %d numbers on %s at version %d answered version %d with %d events (duplicate %v)",
			c.ID, len(in.Xs), s.id, v, res.Version, len(res.Events), res.Duplicate)
	}
	var seen ledger.SeenData
	md.decode(res.Events[0].Data, &seen)
	got := ledger.State{N: seen.N, From: seen.From}
	got.H, _ = strconv.ParseUint(seen.H, 10, 64)
	if res.Events[0].Type != ledger.Seen || got != want {
		md.fail("add %s on %s at version %d decided on %s (%s), the model's fold is %s (its snapshot: version %d, %q)",
			c.ID, s.id, v, got, res.Events[0].Type, want, s.snapAt, s.snapFP)
	}
	if keepAt > 0 && s.snapFP != "" && s.snapFP != md.fp {
		// A snapshot of another fold was ignored and a new one kept.
		md.counts["rebuild"]++
		if md.racing {
			md.counts["rebuild in a race"]++
		}
	}
	md.keep(s, keepAt)
	cmd := &smCommand{c: c}
	for i, e := range res.Events {
		if e.Version != v+1+int64(i) || e.Stream != s.name() || e.CommandID != c.ID || i > 0 && e.Type != ledger.Added {
			md.fail("add %s: event %d is %s version %d of %s by %s", c.ID, i, e.Type, e.Version, e.Stream, e.CommandID)
		}
		if i > 0 {
			var d ledger.AddedData
			md.decode(e.Data, &d)
			if d.X != in.Xs[i-1] {
				md.fail("add %s: event %d adds %d, the command %d", c.ID, i, d.X, in.Xs[i-1])
			}
		}
		s.events = append(s.events, api.Event{Type: e.Type, Version: e.Version, Data: e.Data})
		cmd.versions = append(cmd.versions, e.Version)
	}
	md.applied[c.ID] = cmd
	md.ids = append(md.ids, c.ID)
}

// peekCommand asks for the state, which the aggregate refuses with.
func (md *smModel) peekCommand(s *smStream) api.Command {
	return api.Command{ID: md.newID("peek"), Aggregate: ledger.Name, AggregateID: s.id, Type: "Peek"}
}

func (md *smModel) peek(s *smStream) {
	md.counts["peek"]++
	c := md.peekCommand(s)
	st, b := md.call("POST", "commands", c)
	want, _ := md.expect(s)
	md.checkPeek(s, c, st, b, want)
}

// checkPeek checks a Peek's refusal says want; a refused command keeps
// no snapshot.
func (md *smModel) checkPeek(s *smStream, c api.Command, status int, b []byte, want ledger.State) {
	md.t.Helper()
	var e api.Error
	md.decode(b, &e)
	if status != 422 || e.Code != api.CodeCommandRejected || !strings.HasSuffix(e.Message, ": "+want.String()) {
		md.fail("peek %s on %s at version %d: %d %s; the model's fold is %s (its snapshot: version %d, %q)",
			c.ID, s.id, s.version(), status, b, want, s.snapAt, s.snapFP)
	}
}

// nothing is a command that appends nothing, and keeps a snapshot when
// one is due.
func (md *smModel) nothing(s *smStream) {
	md.counts["nothing"]++
	c := api.Command{ID: md.newID("nothing"), Aggregate: ledger.Name, AggregateID: s.id, Type: "Nothing"}
	st, b := md.call("POST", "commands", c)
	if st != 201 {
		md.fail("nothing %s on %s: %d %s", c.ID, s.id, st, b)
	}
	var res api.CommandResult
	md.decode(b, &res)
	if res.Version != s.version() || len(res.Events) != 0 || res.Duplicate {
		md.fail("nothing %s on %s at version %d: %s", c.ID, s.id, s.version(), b)
	}
	_, keepAt := md.expect(s)
	md.keep(s, keepAt)
	md.applied[c.ID] = &smCommand{c: c}
	md.ids = append(md.ids, c.ID)
}

// appendRequest is an append of Added events to a ledger's stream, past
// its aggregate: a fold must read them as any other.
func (md *smModel) appendRequest() api.AppendRequest {
	n := 1 + md.rng.IntN(4)
	if md.rng.IntN(8) == 0 {
		n = 15 + md.rng.IntN(30)
	}
	var r api.AppendRequest
	for range n {
		b, _ := json.Marshal(ledger.AddedData{X: md.rng.Int64N(1 << 40)})
		r.Events = append(r.Events, api.NewEvent{Type: ledger.Added, Data: b})
	}
	return r
}

func (md *smModel) appendRaw(s *smStream) {
	md.counts["append"]++
	r := md.appendRequest()
	st, b := md.call("POST", "streams/"+s.name(), r)
	md.checkAppend(s, r, st, b)
}

func (md *smModel) checkAppend(s *smStream, r api.AppendRequest, status int, b []byte) {
	md.t.Helper()
	if status != 201 {
		md.fail("append to %s: %d %s", s.id, status, b)
	}
	var resp api.AppendResponse
	md.decode(b, &resp)
	if resp.Version != s.version()+int64(len(r.Events)) {
		md.fail("append of %d events to %s at version %d answered version %d", len(r.Events), s.id, s.version(), resp.Version)
	}
	for _, e := range r.Events {
		s.events = append(s.events, api.Event{Type: e.Type, Version: s.version() + 1, Data: e.Data})
	}
}

// fault is the host's test-only hook: it traps the module at the
// statement trap names, once.
func (md *smModel) fault(_, sql string) bool {
	md.mu.Lock()
	defer md.mu.Unlock()
	if md.trap == "" || !strings.HasPrefix(strings.TrimSpace(sql), md.trap) {
		return false
	}
	md.trap = ""
	md.trapped++
	return true
}

// crash is an Add or a Nothing whose module traps at the command's last
// write, after the snapshot's: the transaction is rolled back whole, and
// a snapshot it kept must go with it.
func (md *smModel) crash(s *smStream) {
	md.counts["crash"]++
	c := md.addCommand(s)
	if md.rng.IntN(2) == 0 {
		c = api.Command{ID: md.newID("nothing"), Aggregate: ledger.Name, AggregateID: s.id, Type: "Nothing"}
	}
	md.mu.Lock()
	md.trap, md.trapped = "INSERT INTO stile_commands", 0
	md.mu.Unlock()
	resp, err := md.m.Do(context.Background(), md.tenant, md.request("POST", "commands", c))
	md.mu.Lock()
	trapped := md.trapped
	md.trap = ""
	md.mu.Unlock()
	if err == nil || !strings.Contains(err.Error(), "trapped") || trapped != 1 {
		md.fail("%s %s on %s, trapped at its record (%d traps), answered %d %s (%v)", c.Type, c.ID, s.id, trapped, resp.Status, resp.Body, err)
	}
	md.open = false // the trapped instance was discarded
	if _, keepAt := md.expect(s); keepAt > 0 {
		md.counts["crash after a snapshot"]++
	}
}

// repeat sends an applied command again: it is answered with what it did
// then, folding nothing and keeping no snapshot.
func (md *smModel) repeat() {
	if len(md.ids) == 0 {
		return
	}
	md.counts["repeat"]++
	prev := md.applied[md.ids[md.rng.IntN(len(md.ids))]]
	st, b := md.call("POST", "commands", prev.c)
	if st != 200 {
		md.fail("command %s again: %d %s", prev.c.ID, st, b)
	}
	var res api.CommandResult
	md.decode(b, &res)
	if !res.Duplicate || len(res.Events) != len(prev.versions) {
		md.fail("command %s again: %s; it appended versions %v", prev.c.ID, b, prev.versions)
	}
	for i, e := range res.Events {
		if e.Version != prev.versions[i] {
			md.fail("command %s again answered version %d, it appended %v", prev.c.ID, e.Version, prev.versions)
		}
	}
}

// race sends two to four Adds, a Peek and perhaps an append to one stream
// at once. The tenant serves them one at a time, in an order nobody
// chose: the answers must be those of that order run serially. The
// Adds' and the append's versions say the order; the Peek's state says
// where it ran.
func (md *smModel) race(s *smStream) {
	md.counts["race"]++
	type op struct {
		c      *api.Command       // a command, or
		append *api.AppendRequest // an append
		req    do.Request
		resp   do.Response
		err    error
		first  int64 // the first version it appended
	}
	var ops []*op
	for range 2 + md.rng.IntN(3) {
		c := md.addCommand(s)
		ops = append(ops, &op{c: &c, req: md.request("POST", "commands", c)})
	}
	if md.rng.IntN(2) == 0 {
		r := md.appendRequest()
		ops = append(ops, &op{append: &r, req: md.request("POST", "streams/"+s.name(), r)})
	}
	peek := md.peekCommand(s)
	ops = append(ops, &op{c: &peek, req: md.request("POST", "commands", peek)})
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for _, o := range ops {
		wg.Go(func() {
			<-gate
			o.resp, o.err = md.m.Do(context.Background(), md.tenant, o.req)
		})
	}
	close(gate)
	wg.Wait()
	md.open = true
	var placed []*op
	peekOp := ops[len(ops)-1]
	for _, o := range ops {
		if o.err != nil || o.resp.Status >= 500 {
			md.fail("racing request %s %s: %v %d %s", o.req.Method, o.req.Path, o.err, o.resp.Status, o.resp.Body)
		}
		switch {
		case o == peekOp:
		case o.c != nil:
			var res api.CommandResult
			md.decode(o.resp.Body, &res)
			if len(res.Events) == 0 {
				md.fail("racing add %s: %d %s", o.c.ID, o.resp.Status, o.resp.Body)
			}
			o.first = res.Events[0].Version
			placed = append(placed, o)
		default:
			var res api.AppendResponse
			md.decode(o.resp.Body, &res)
			o.first = res.Version - int64(len(o.append.Events)) + 1
			placed = append(placed, o)
		}
	}
	if !slices.IsSortedFunc(placed, func(a, b *op) int { return int(a.first - b.first) }) {
		md.counts["race served out of order"]++
	}
	slices.SortFunc(placed, func(a, b *op) int { return int(a.first - b.first) })
	md.racing = true
	defer func() { md.racing = false }()
	// The Peek ran after as many events as it saw.
	var e api.Error
	md.decode(peekOp.resp.Body, &e)
	n := int64(-1)
	if _, saw, ok := strings.Cut(e.Message, "saw n="); ok {
		fmt.Sscan(saw, &n)
	}
	if peekOp.resp.Status != 422 || n < 0 {
		md.fail("racing peek %s: %d %s", peek.ID, peekOp.resp.Status, peekOp.resp.Body)
	}
	peeked := false
	for i := 0; i <= len(placed); i++ {
		if !peeked && s.version() == n {
			want, _ := md.expect(s)
			md.checkPeek(s, peek, peekOp.resp.Status, peekOp.resp.Body, want)
			peeked = true
		}
		if i == len(placed) {
			break
		}
		o := placed[i]
		if o.first != s.version()+1 {
			md.fail("racing requests on %s at version %d: the next appended from version %d", s.id, s.version(), o.first)
		}
		if o.c != nil {
			md.checkAdd(s, *o.c, o.resp.Status, o.resp.Body)
		} else {
			md.checkAppend(s, *o.append, o.resp.Status, o.resp.Body)
		}
	}
	if !peeked {
		md.fail("racing peek %s saw %d events, which no order of the racing requests gives: %s", peek.ID, n, peekOp.resp.Body)
	}
}

// checkStorage: GET /storage counts a snapshot per stream that keeps one.
func (md *smModel) checkStorage() {
	md.counts["storage"]++
	st, b := md.call("GET", "storage", nil)
	if st != 200 {
		md.fail("storage: %d %s", st, b)
	}
	var resp api.StorageResponse
	md.decode(b, &resp)
	var want, got int64
	for _, s := range md.streams {
		if s.snapFP != "" {
			want++
		}
	}
	for _, k := range resp.Kinds {
		if k.Kind == "snapshots" {
			got = k.Rows
		}
	}
	if got != want {
		md.fail("GET /storage counts %d snapshots, the model %d", got, want)
	}
}

// checkEnd reads every stream back, and then decides on each once more.
func (md *smModel) checkEnd() {
	for _, s := range md.streams {
		var got []api.Event
		for from := int64(1); ; {
			st, b := md.call("GET", fmt.Sprintf("streams/%s?from_version=%d&limit=1000", s.name(), from), nil)
			if st != 200 {
				md.fail("read %s: %d %s", s.id, st, b)
			}
			var page api.EventsResponse
			md.decode(b, &page)
			got = append(got, page.Events...)
			if len(page.Events) == 0 || page.Next == 0 {
				break
			}
			from = got[len(got)-1].Version + 1
		}
		if len(got) != len(s.events) {
			md.fail("stream %s holds %d events, the model %d", s.id, len(got), len(s.events))
		}
		for _, f := range []string{"A", "B", "C"} {
			if s.fold(f) != ledger.Fold(f, got) {
				md.fail("stream %s: the model's fold %s, kept as the stream grew, is not the fold of its events", s.id, f)
			}
		}
		for i, e := range got {
			w := s.events[i]
			if e.Version != w.Version || e.Type != w.Type || rmCompact(e.Data) != rmCompact(w.Data) {
				md.fail("stream %s: event %d is %s %s, the model's %s %s", s.id, e.Version, e.Type, e.Data, w.Type, w.Data)
			}
		}
		md.peek(s)
	}
	md.checkStorage()
}
