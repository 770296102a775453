package edge

// What the edge executor decides, apart from the platform: its settings,
// its budget and the counting of its subrequests. This file builds
// natively too, so that it is unit-tested like any Go code; edge_js.go
// binds it to the Worker.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/token"
	"github.com/stile-run/stile/worker"
)

// Defaults of the environment variables (see the package doc).
const (
	DefaultConcurrency = api.MaxClaim // a claim's most
	DefaultBudgetMs    = 25_000
	DefaultSubrequests = 1000
)

// Connections is how many of the handlers' outbound requests an
// invocation lets wait for their response's headers at once: Cloudflare
// lets an invocation have six connections waiting for headers, and queues
// the others. The executor holds the rest itself (gate), and starts more
// handlers than that only as quick handlers end without any request having
// waited (pacer): see docs/DESIGN.md, "Why does an edge invocation run a
// hundred handlers, and where does a backlog's time go?".
const Connections = 6

// LastCalls is how long after its budget's end an invocation may still
// call the tenant's object: the reports of the jobs released at the end,
// and the push's end. At the default budget it is what Cloudflare leaves of
// the 30 s it gives waitUntil work. A call to the object still waiting
// then is cut, so that an object that never answers cannot hold the
// invocation (and its push) for good.
const LastCalls = 5 * time.Second

// ErrMisconfigured is the cause of an edge executor that cannot start: a
// missing secret or binding, or a var that is not a positive number.
var ErrMisconfigured = errors.New("the edge executor is misconfigured")

// ErrNoTenant refuses a call to the object whose path names no tenant.
var ErrNoTenant = errors.New("the request's path names no tenant")

// settings are the edge executor's, read from the Worker's vars and
// secrets.
type settings struct {
	token       string
	next        string // STILE_TOKEN_NEXT, during a rotation
	revoked     string // STILE_REVOKED
	concurrency int
	budget      time.Duration
	subrequests int64
}

// readSettings reads the settings through getenv ("" for a var the
// Worker does not have).
func readSettings(getenv func(string) string) (settings, error) {
	s := settings{token: getenv("STILE_TOKEN"), next: getenv("STILE_TOKEN_NEXT"), revoked: getenv("STILE_REVOKED")}
	if s.token == "" {
		return s, fmt.Errorf("%w: the Worker has no STILE_TOKEN secret: run `npx wrangler secret put STILE_TOKEN`", ErrMisconfigured)
	}
	if err := token.CheckSecret("STILE_TOKEN", s.token); err != nil {
		return s, fmt.Errorf("%w: %w", ErrMisconfigured, err)
	}
	var err error
	if s.concurrency, err = envInt(getenv, "STILE_EXECUTOR_CONCURRENCY", DefaultConcurrency); err != nil {
		return s, err
	}
	ms, err := envInt(getenv, "STILE_EXECUTOR_BUDGET_MS", DefaultBudgetMs)
	if err != nil {
		return s, err
	}
	s.budget = time.Duration(ms) * time.Millisecond
	n, err := envInt(getenv, "STILE_EXECUTOR_SUBREQUESTS", DefaultSubrequests)
	if err != nil {
		return s, err
	}
	s.subrequests = int64(n)
	return s, nil
}

// envInt reads a positive whole number, def if the var is unset.
func envInt(getenv func(string) string, name string, def int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: %s is %q: set a positive whole number", ErrMisconfigured, name, v)
	}
	return n, nil
}

// budgetFrom is a push's budget, accepted at start: its time from then,
// and the invocation's subrequests counted by requests from then on, but
// for kept of them, which the invocation spends after the push (the spans'
// one request at the end): a push always keeps one to spend.
func (s settings) budgetFrom(start time.Time, requests *atomic.Int64, kept int) worker.Budget {
	before := requests.Load()
	return worker.Budget{Until: start.Add(s.budget), Subrequests: max(s.subrequests-int64(kept), 1),
		Used: func() int64 { return requests.Load() - before }}
}

// lastCall is when an invocation started at start cuts its calls to the
// object.
func (s settings) lastCall(start time.Time) time.Time { return start.Add(s.budget + LastCalls) }

// Secrets are the Worker's variables the handler code never sees in its
// environment: the deployment's secrets and its revoked list.
var Secrets = []string{"STILE_TOKEN", "STILE_TOKEN_NEXT", "STILE_REVOKED"}

// pushTokens authorizes pushes by the token each carries, a worker token
// for the push's tenant that the tenant's object minted for it, and keeps
// the latest per tenant: the push's calls to the object carry it. The
// handler code holds no other credential (not the secret).
type pushTokens struct {
	keys     token.Keys
	mu       sync.Mutex
	byTenant map[string]string
}

func newPushTokens(s settings) *pushTokens {
	return &pushTokens{keys: token.Keys{Secret: s.token, Next: s.next, Revoked: token.ParseRevoked(s.revoked)}, byTenant: map[string]string{}}
}

// authorize accepts a push whose bearer is a worker token covering its
// tenant (executor.Config.Authorize).
func (t *pushTokens) authorize(bearer string, p api.PushRequest, now time.Time) error {
	c, err := t.keys.Verify(bearer, now)
	if err != nil {
		return fmt.Errorf("a push carries a worker token for its tenant: %w", err)
	}
	if c.Role != api.RoleWorker || !c.Covers(p.Tenant) {
		return fmt.Errorf("a push carries a worker token for its tenant: this is a %s token for %s, and the push is for %s", c.Role, c.Scope, p.Tenant)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byTenant[p.Tenant] = bearer
	return nil
}

// forTenant is the token of the latest push for tenant ("" if none came).
func (t *pushTokens) forTenant(tenant string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byTenant[tenant]
}

// withPushToken makes each call to a tenant's object carry the token of
// that tenant's latest push.
type withPushToken struct {
	next   http.RoundTripper
	tokens *pushTokens
}

func (w *withPushToken) RoundTrip(r *http.Request) (*http.Response, error) {
	tenant, err := tenantOf(r)
	if err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+w.tokens.forTenant(tenant))
	return w.next.RoundTrip(r)
}

// tenantOf is the tenant an API request is for: its object is the one
// the request goes to.
func tenantOf(r *http.Request) (string, error) {
	tenant, _, ok := api.SplitTenantPath(r.URL.Path)
	if !ok || !api.ValidTenant(tenant) {
		return "", fmt.Errorf("edge: %s: %w", r.URL.Path, ErrNoTenant)
	}
	return tenant, nil
}

// counted counts the requests sent through it: each is a subrequest of
// the invocation.
type counted struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c *counted) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// gate holds the handlers' outbound requests to Connections waiting for
// their headers at once: a request past them waits for one to get its
// headers (or fail), or for its context to end. It counts the requests
// waiting now and every request that ever had to wait, which the pacer
// reads.
type gate struct {
	next    http.RoundTripper
	slots   chan struct{}
	waiting atomic.Int64 // requests waiting for a connection now
	waits   atomic.Int64 // requests that had to wait, ever
}

func newGate(next http.RoundTripper, connections int) *gate {
	return &gate{next: next, slots: make(chan struct{}, connections)}
}

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	select {
	case g.slots <- struct{}{}:
	default:
		g.waits.Add(1)
		g.waiting.Add(1)
		select {
		case g.slots <- struct{}{}:
			g.waiting.Add(-1)
		case <-r.Context().Done():
			g.waiting.Add(-1)
			if r.Body != nil {
				r.Body.Close()
			}
			return nil, context.Cause(r.Context())
		}
	}
	// The platform's fetch answers once the headers arrived: the
	// connection no longer counts then, though its body is still read.
	resp, err := g.next.RoundTrip(r)
	<-g.slots
	return resp, err
}

// QuickRun is how long a handler may run and still count as quick: the
// pacer starts more handlers only as quick ones end.
const QuickRun = 100 * time.Millisecond

// pacer decides how many more jobs an invocation starts (a worker.Pacer):
// Connections at first, and two more for each quick job (its handler ran
// at most QuickRun) that ended since a handler's request last had to wait
// at the gate, up to the worker's concurrency; a job that ran longer halves
// that count. While a request waits at the gate, none: a handler started
// then would only wait for a connection, its time limit running. And while
// jobs run, none until a quarter of what it allows is free, so that a busy
// invocation claims in batches, not a job or two per request, and claims
// again while the reports of its other jobs are in flight. So handlers
// that call no provider, or a fast one, soon run as many at once as the
// concurrency allows; those that each call a slow provider start about as
// fast as connections free up; and those that compute, which share the
// invocation's one thread (more at once only make each take longer, its
// time limit running), stay about Connections at once.
type pacer struct {
	gate        *gate
	connections int
	concurrency int

	mu    sync.Mutex
	seen  int64 // the gate's waits when last paced
	quick int   // quick jobs ended since a request waited (halved by slow ones)
}

func (p *pacer) Ran(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d <= QuickRun {
		p.quick++
	} else {
		p.quick /= 2
	}
}

func (p *pacer) Pace(taken int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w := p.gate.waits.Load(); w != p.seen {
		p.seen, p.quick = w, 0
	}
	if p.gate.waiting.Load() > 0 {
		return 0
	}
	allowed := min(p.concurrency, p.connections+2*p.quick)
	n := max(allowed-taken, 0)
	if taken > 0 && n < max(1, allowed/4) {
		return 0
	}
	return n
}

// lines is the console the executor and its handlers log to: what is
// written up to its last newline is emitted at once (without that
// newline), the rest kept until its line ends, as Go's os.Stderr does at
// the edge. It spares each line the platform's file calls, which Go makes
// asynchronous under GOOS=js: a callback, and the Go runtime resumed, per
// line (a handler's log line per job was a quarter of the object's
// thread in `stile bench --only edge`).
type lines struct {
	emit func(string)
	mu   sync.Mutex
	buf  []byte
}

// maxPartialLine bounds what lines keeps of a line not yet ended: past it,
// the part is emitted as a line of its own.
const maxPartialLine = 64 << 10

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
		l.emit(string(l.buf[:i]))
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	if len(l.buf) > maxPartialLine {
		l.emit(string(l.buf))
		l.buf = l.buf[:0]
	}
	return len(p), nil
}
