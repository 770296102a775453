package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/internal/bearer"
	"github.com/stile-run/stile/worker"
)

// Config configures a Handler.
type Config struct {
	// Token is the bearer token a push must carry, unless Authorize is
	// set.
	Token string
	// Authorize, if set, decides instead of Token whether a push may run:
	// it is given the push's bearer token and the push, and its error
	// refuses the push with a 401 in its words. The edge executor accepts
	// a worker token for the push's tenant there.
	Authorize func(bearer string, p api.PushRequest) error
	// Budget is the budget of one push's work, asked when it is accepted.
	// Default: 25 s and no subrequest limit (DefaultBudget).
	Budget func() worker.Budget
	// Background runs a push's work after its 202 was answered. Default:
	// a goroutine. The edge executor uses the platform's waitUntil.
	Background func(func())
	// Logger receives the executor's log lines. Default: slog.Default().
	Logger *slog.Logger
	// AfterPush, if set, runs after each push's work, as part of it: Wait
	// waits for it too. The executors flush the push's spans there.
	AfterPush func()
}

// DefaultTime is a push's default time budget: Cloudflare lets work go
// on for 30 s after a Worker's response (waitUntil).
const DefaultTime = 25 * time.Second

// DefaultBudget is 25 s from now, no subrequest limit.
func DefaultBudget() worker.Budget { return worker.Budget{Until: time.Now().Add(DefaultTime)} }

// Handler serves pushes at api.ExecutorPath: POST, the deployment's
// bearer token, an api.PushRequest body. It answers 202 once the push is
// accepted and its work started in the background; the work ends the push
// (worker.Drain). Bad input is refused with the API's error bodies and
// starts nothing.
type Handler struct {
	w       *worker.Worker
	cfg     Config
	token   []byte
	running sync.WaitGroup
	busy    atomic.Int64 // accepted pushes whose work runs
	// stopping ends the claims of accepted pushes (Stop).
	stopping context.Context
	stop     context.CancelFunc
}

// New returns the handler of pushes for w, whose handlers are registered.
func New(w *worker.Worker, cfg Config) *Handler {
	if cfg.Budget == nil {
		cfg.Budget = DefaultBudget
	}
	if cfg.Background == nil {
		cfg.Background = func(f func()) { go f() }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &Handler{w: w, cfg: cfg, token: []byte(cfg.Token)}
	h.stopping, h.stop = context.WithCancel(context.Background())
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	cred, hasBearer := bearerOf(r)
	switch {
	case h.cfg.Authorize == nil && !bearer.Matches(r, h.token), h.cfg.Authorize != nil && !hasBearer:
		refuse(rw, &api.Unauthorized)
		return
	case r.URL.Path != api.ExecutorPath:
		refuse(rw, api.NoRoute(r.Method, r.URL.Path))
		return
	case r.Method != http.MethodPost:
		rw.Header().Set("Allow", http.MethodPost)
		refuse(rw, api.Refuse(api.CodeMethodNotAllowed, "%s %s: use POST", r.Method, r.URL.Path))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		refuse(rw, api.Refuse(api.CodeInvalidRequest, "could not read the push: %v", err))
		return
	}
	p, err := api.DecodePushRequest(body)
	if err != nil {
		refuse(rw, api.Refuse(api.CodeInvalidJSON, "the push is not an api.PushRequest: %v", err))
		return
	}
	if e := Validate(p); e != nil {
		refuse(rw, e)
		return
	}
	if h.cfg.Authorize != nil {
		if err := h.cfg.Authorize(cred, p); err != nil {
			refuse(rw, api.Refuse(api.CodeUnauthorized, "%s", err.Error()))
			return
		}
	}
	h.Accept(p)
	rw.WriteHeader(http.StatusAccepted)
}

// bearerOf is the credential of a request's one Authorization header.
func bearerOf(r *http.Request) (string, bool) {
	v := r.Header.Values("Authorization")
	if len(v) != 1 {
		return "", false
	}
	cred, ok := strings.CutPrefix(v[0], "Bearer ")
	return cred, ok && cred != ""
}

// Validate refuses a push that names no valid tenant or push id.
func Validate(p api.PushRequest) *api.Error {
	switch {
	case !api.ValidTenant(p.Tenant):
		return &api.InvalidTenant
	case p.ID == "" || len(p.ID) > api.MaxNameBytes:
		return api.Refuse(api.CodeInvalidRequest, "missing or overlong field \"id\": the push id from the tenant")
	case p.LingerMs < 0 || p.LingerMs > api.MaxWait.Milliseconds():
		return api.Refuse(api.CodeInvalidRequest, "linger_ms %d is outside 0-%d", p.LingerMs, api.MaxWait.Milliseconds())
	}
	return nil
}

// Accept starts a push's work in the background, with a budget of its own.
func (h *Handler) Accept(p api.PushRequest) {
	b := h.cfg.Budget()
	h.running.Add(1)
	h.busy.Add(1)
	h.cfg.Background(func() {
		defer h.running.Done()
		defer h.busy.Add(-1)
		if h.cfg.AfterPush != nil {
			defer h.cfg.AfterPush()
		}
		res, err := h.w.Drain(h.stopping, p, b)
		if err != nil {
			h.cfg.Logger.Warn("push not drained", "tenant", p.Tenant, "push", p.ID, "err", err)
			return
		}
		h.cfg.Logger.Debug("push drained", "tenant", p.Tenant, "push", p.ID, "jobs", res.Jobs, "deliveries", res.Deliveries, "end", res.End)
	})
}

// Stop makes the pushes being worked on stop claiming (a lingering claim
// ends at once): they let their running handlers finish and report, then
// end, as when their budget is spent. Wait waits for them.
func (h *Handler) Stop() { h.stop() }

// Wait waits for the work of every accepted push.
func (h *Handler) Wait() { h.running.Wait() }

// Busy is how many accepted pushes have work running.
func (h *Handler) Busy() int64 { return h.busy.Load() }

func refuse(rw http.ResponseWriter, e *api.Error) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(e.Status)
	rw.Write(e.AppendJSON(nil))
}

// Local is a host.Pusher that runs pushes in this process: each push is
// validated and drained by the Handler in the background. Use it with
// stiletest.Config.Pusher or host.Config.Pusher.
type Local struct{ H *Handler }

// Push implements host.Pusher.
func (l Local) Push(_ context.Context, p api.PushRequest) error {
	if e := Validate(p); e != nil {
		return e
	}
	l.H.Accept(p)
	return nil
}

// Remote is a host.Pusher that posts pushes to an executor's Handler over
// HTTP (a child process's, in `stile dev --handlers`).
type Remote struct {
	URL    string // the executor's base URL
	Token  string
	Client *http.Client // default http.DefaultClient
}

// Push implements host.Pusher.
func (r Remote) Push(ctx context.Context, p api.PushRequest) error {
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL+api.ExecutorPath, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+r.Token)
	req.Header.Set("Content-Type", "application/json")
	hc := r.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return &pushRefused{status: resp.StatusCode, body: string(b)}
	}
	return nil
}

type pushRefused struct {
	status int
	body   string
}

func (e *pushRefused) Error() string {
	return "the executor refused the push: " + strconv.Itoa(e.status) + " " + e.body
}
