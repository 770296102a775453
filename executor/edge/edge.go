package edge

// What the edge executor decides, apart from the platform: its settings,
// its budget and the counting of its subrequests. This file builds
// natively too, so that it is unit-tested like any Go code; edge_js.go
// binds it to the Worker.

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/worker"
)

// Defaults of the environment variables (see the package doc).
const (
	DefaultConcurrency = 6
	DefaultBudgetMs    = 25_000
	DefaultSubrequests = 1000
)

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
	concurrency int
	budget      time.Duration
	subrequests int64
}

// readSettings reads the settings through getenv ("" for a var the
// Worker does not have).
func readSettings(getenv func(string) string) (settings, error) {
	s := settings{token: getenv("STILE_TOKEN")}
	if s.token == "" {
		return s, fmt.Errorf("%w: the Worker has no STILE_TOKEN secret: run `npx wrangler secret put STILE_TOKEN`", ErrMisconfigured)
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
// and the invocation's subrequests counted by requests from then on.
func (s settings) budgetFrom(start time.Time, requests *atomic.Int64) worker.Budget {
	before := requests.Load()
	return worker.Budget{Until: start.Add(s.budget), Subrequests: s.subrequests,
		Used: func() int64 { return requests.Load() - before }}
}

// lastCall is when an invocation started at start cuts its calls to the
// object.
func (s settings) lastCall(start time.Time) time.Time { return start.Add(s.budget + LastCalls) }

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
