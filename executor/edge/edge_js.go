//go:build js && wasm

package edge

// The edge executor's glue to the Worker (syscall/js, syumai/workers):
// what it decides is in edge.go.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	stdlog "log"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall/js"
	"time"

	"github.com/syumai/workers"
	"github.com/syumai/workers/cloudflare"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/executor"
	"github.com/stile-run/stile/executor/edge/internal/jsfetch"
	"github.com/stile-run/stile/worker"
)

// Serve runs the edge executor for one invocation: register gives the
// worker its handlers (the handler package's Register). It returns after
// the push's work is done; a generated main calls it.
func Serve(register func(*worker.Worker)) {
	start := time.Now()
	// The executor's lines, and the handlers' through the standard logger
	// (log, and slog's default), go to the console: `wrangler tail` shows
	// them.
	console := js.Global().Get("console")
	out := &lines{emit: func(s string) { console.Call("log", s) }}
	stdlog.SetOutput(out)
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	importEnv()
	var requests atomic.Int64 // subrequests of this invocation
	// Handlers' outbound requests (net/http's default client) go through
	// the platform's fetch, at most Connections of them waiting for
	// headers at once (the gate), counted against the budget as they pass
	// it (one whose context ended at the gate was never sent), and are
	// aborted when their context ends (a handler's time limit, the
	// budget's end).
	g := newGate(&counted{next: jsfetch.Platform(), n: &requests}, Connections)
	http.DefaultTransport = g
	h, err := newHandler(register, start, &requests, g, log)
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

func newHandler(register func(*worker.Worker), start time.Time, requests *atomic.Int64, g *gate, log *slog.Logger) (*executor.Handler, error) {
	s, err := readSettings(getenv)
	if err != nil {
		return nil, err
	}
	ns := cloudflare.GetBinding("TENANT")
	if ns.Type() != js.TypeObject {
		return nil, fmt.Errorf("%w: the Worker has no TENANT Durable Object binding", ErrMisconfigured)
	}
	var id [4]byte
	rand.Read(id[:])
	tr := tracing(log)
	// The worker calls each tenant with the worker token of its push (the
	// placeholder below is replaced on every call): never the secret.
	tokens := newPushTokens(s)
	w, err := worker.New(worker.Config{URL: "https://stile.internal", Token: "the-push-token", ID: "edge-" + hex.EncodeToString(id[:]),
		Concurrency: s.concurrency, Logger: log, Tracer: tr.Tracer,
		// More handlers than connections start as quick handlers end
		// without a request waiting at the gate (pacer).
		Pacer:      &pacer{gate: g, connections: Connections, concurrency: s.concurrency},
		HTTPClient: &http.Client{Transport: tr.Transport(&counted{next: &withPushToken{next: &stubs{ns: ns, limit: s.lastCall(start)}, tokens: tokens}, n: requests})}})
	if err != nil {
		return nil, err
	}
	register(w)
	var bg sync.WaitGroup
	return executor.New(w, executor.Config{Logger: log, AfterPush: tr.Flush,
		Authorize: func(bearer string, p api.PushRequest) error { return tokens.authorize(bearer, p, time.Now()) },
		Budget:    func() worker.Budget { return s.budgetFrom(time.Now(), requests, tr.FlushRequests()) },
		Background: func(f func()) {
			bg.Add(1)
			cloudflare.WaitUntil(func() { defer bg.Done(); f() })
		}}), nil
}

// importEnv makes the Worker's string vars and secrets the process
// environment, so a handler package reads its configuration with
// os.Getenv alike natively and at the edge; but for the deployment's own
// secrets (Secrets), which handler code has no use for.
func importEnv() {
	env := js.Global().Get("context").Get("env") // syumai/workers' runtime context
	if env.Type() != js.TypeObject {
		return
	}
	keys := js.Global().Get("Object").Call("keys", env)
	for i := range keys.Length() {
		k := keys.Index(i).String()
		if slices.Contains(Secrets, k) {
			continue
		}
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
// token and its identity itself. A call is aborted when its context ends,
// and at the invocation's last call at the latest (LastCalls).
type stubs struct {
	ns    js.Value // the TENANT namespace
	limit time.Time
}

func (s *stubs) RoundTrip(r *http.Request) (resp *http.Response, err error) {
	tenant, err := tenantOf(r)
	if err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	var stub js.Value
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("edge: the object of tenant %s: %v", tenant, p)
			}
		}()
		stub = s.ns.Call("get", s.ns.Call("idFromName", tenant))
	}()
	if err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	t := jsfetch.On(stub)
	t.Limit = s.limit
	t.Whole = true // the API's answers, which the client reads whole anyway
	return t.RoundTrip(r)
}
