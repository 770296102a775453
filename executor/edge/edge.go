//go:build js && wasm

package edge

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall/js"
	"time"

	"github.com/syumai/workers"
	"github.com/syumai/workers/cloudflare"
	"github.com/syumai/workers/cloudflare/fetch"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/executor"
	"github.com/stile-run/stile/worker"
)

// Defaults of the environment variables (see the package doc).
const (
	DefaultConcurrency = 6
	DefaultBudgetMs    = 25_000
	DefaultSubrequests = 1000
)

// Serve runs the edge executor for one invocation: register gives the
// worker its handlers (the handler package's Register). It returns after
// the push's work is done; a generated main calls it.
func Serve(register func(*worker.Worker)) {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	importEnv()
	var requests atomic.Int64 // subrequests of this invocation
	// Handlers' outbound requests (net/http's default client) go through
	// the platform's fetch, counted against the budget: Go's own js
	// transport calls fetch with a this the runtime refuses.
	http.DefaultTransport = &counted{next: fetch.NewClient().HTTPClient(fetch.RedirectModeFollow).Transport, n: &requests}
	h, err := newHandler(register, &requests, log)
	if err != nil {
		log.Error("the edge executor cannot start", "err", err)
		workers.ServeNonBlock(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
			e := api.Internal("the edge executor cannot start: " + err.Error())
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(e.Status)
			rw.Write(e.AppendJSON(nil))
		}))
	} else {
		workers.ServeNonBlock(h)
	}
	workers.Ready()
	<-workers.Done()
	if h != nil {
		h.Wait()
	}
}

func newHandler(register func(*worker.Worker), requests *atomic.Int64, log *slog.Logger) (*executor.Handler, error) {
	token := getenv("STILE_TOKEN")
	if token == "" {
		return nil, errors.New("the Worker has no STILE_TOKEN secret: run `npx wrangler secret put STILE_TOKEN`")
	}
	ns, err := cloudflare.NewDurableObjectNamespace("TENANT")
	if err != nil {
		return nil, errors.New("the Worker has no TENANT Durable Object binding: " + err.Error())
	}
	concurrency, err := envInt("STILE_EXECUTOR_CONCURRENCY", DefaultConcurrency)
	if err != nil {
		return nil, err
	}
	budgetMs, err := envInt("STILE_EXECUTOR_BUDGET_MS", DefaultBudgetMs)
	if err != nil {
		return nil, err
	}
	subrequests, err := envInt("STILE_EXECUTOR_SUBREQUESTS", DefaultSubrequests)
	if err != nil {
		return nil, err
	}
	var id [4]byte
	rand.Read(id[:])
	tr := tracing(log)
	w, err := worker.New(worker.Config{URL: "https://stile.internal", Token: token, ID: "edge-" + hex.EncodeToString(id[:]), Tracer: tr.Tracer,
		Concurrency: concurrency, HTTPClient: &http.Client{Transport: tr.Transport(&counted{next: &stubs{ns: ns}, n: requests})}, Logger: log})
	if err != nil {
		return nil, err
	}
	register(w)
	var bg sync.WaitGroup
	return executor.New(w, executor.Config{Token: token, Logger: log, AfterPush: tr.Flush,
		Budget: func() worker.Budget {
			start := requests.Load()
			return worker.Budget{Until: time.Now().Add(time.Duration(budgetMs) * time.Millisecond), Subrequests: int64(max(subrequests-tr.FlushRequests(), 1)),
				Used: func() int64 { return requests.Load() - start }}
		},
		Background: func(f func()) {
			bg.Add(1)
			cloudflare.WaitUntil(func() { defer bg.Done(); f() })
		}}), nil
}

func envInt(name string, def int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, errors.New(name + " is " + strconv.Quote(v) + ": set a positive whole number")
	}
	return n, nil
}

// importEnv makes the Worker's string vars and secrets the process
// environment, so a handler package reads its configuration with
// os.Getenv alike natively and at the edge.
func importEnv() {
	env := js.Global().Get("context").Get("env") // syumai/workers' runtime context
	if env.Type() != js.TypeObject {
		return
	}
	keys := js.Global().Get("Object").Call("keys", env)
	for i := range keys.Length() {
		k := keys.Index(i).String()
		if v := env.Get(k); v.Type() == js.TypeString {
			os.Setenv(k, v.String())
		}
	}
}

// getenv is a var or secret of the Worker ("" if it has none).
func getenv(name string) string {
	v := cloudflare.GetBinding(name)
	if v.Type() != js.TypeString {
		return ""
	}
	return v.String()
}

// stubs sends the worker's requests to the tenant's Durable Object
// through its stub, as the Worker's entry would: the object checks the
// token and its identity itself.
type stubs struct {
	ns *cloudflare.DurableObjectNamespace
}

func (s *stubs) RoundTrip(r *http.Request) (*http.Response, error) {
	tenant, _, ok := api.SplitTenantPath(r.URL.Path)
	if !ok || !api.ValidTenant(tenant) {
		return nil, errors.New("edge: " + r.URL.Path + " names no tenant")
	}
	stub, err := s.ns.Get(s.ns.IdFromName(tenant))
	if err != nil {
		return nil, err
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		r = r.Clone(r.Context())
		r.Body = nil // a GET with a body cannot cross a stub
	}
	return stub.Fetch(r)
}

// counted counts the requests sent through it.
type counted struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c *counted) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}
