package stiletest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/executor"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/native"
	"github.com/stile-run/stile/host/wazerohost"
	"github.com/stile-run/stile/runtime"
	"github.com/stile-run/stile/server"
	"github.com/stile-run/stile/worker"
)

// Config says which module a Harness runs and how. Exactly one of App,
// Wasm, Package and Factory names the module.
type Config struct {
	// App runs the module natively, in-process: fast, and seen by the race
	// detector.
	App *runtime.App
	// Wasm runs a built tenant module under wazero.
	Wasm []byte
	// Package is a tenant main package (an import path, or a ./relative
	// directory from the test's package), built with BuildWasm once per
	// test binary and run under wazero.
	Package string
	// Factory is any other host.Factory (e.g. a wazerohost with options of
	// its own). The harness closes it; Logger and Fault do not reach it.
	Factory host.Factory

	// RealClock runs the tenant on the wall clock, and its alarms fire by
	// themselves when they come due (host.Config.ScheduleAlarms), as in
	// production: for a worker running in real time. By default the clock
	// is a host.ManualClock that only Advance moves, and alarms run only in
	// Advance.
	RealClock bool
	// Now is where the manual clock starts. Default: 2026-01-02 03:04:05
	// UTC, a fixed time easy to recognise in a failure.
	Now time.Time

	// Token is the bearer token of the API. Default DefaultToken.
	Token string
	// DataDir holds the tenants' SQLite files and the alarm schedule; a
	// second harness over the same directory is the same deployment
	// restarted. Default: a new directory, removed at the end.
	DataDir string
	// Logger receives the host's and the modules' log lines. Default: none
	// are shown, except in the log of a test that failed (the last 1000).
	Logger *slog.Logger
	// Fault, when set, is asked before each tenant statement; true traps
	// the module there, mid-transaction (the hosts' test-only option).
	Fault func(tenant, sql string) bool
	// MaxOpen, MaxMemory and CallTimeout are the host.Config's (default
	// 256 engines, no memory bound and 30 s).
	MaxOpen     int
	MaxMemory   int64
	CallTimeout time.Duration
	// Handlers registers the handlers WorkOne and WorkAll run, in the
	// test's goroutine: a handler package's Register.
	Handlers func(*worker.Worker)
	// Env, if set, is the environment the harness's workers give the
	// handlers (worker.Worker.Getenv) in place of the process's: a test
	// configures its handlers without t.Setenv, and may run in parallel.
	// A variable it lacks is unset.
	Env map[string]string
	// NextToken is a second secret accepted during a rotation, and Revoked
	// the ids of revoked scoped tokens (server.WithRotation, WithRevoked).
	NextToken string
	Revoked   []string
	// CreateRole says which writes create a tenant that does not exist
	// (host.Config.CreateRole; default writer), and TenantQuota bounds the
	// tenants a prefix-scoped token may have (server.WithTenantQuota; 0:
	// none).
	CreateRole  string
	TenantQuota int
	// Tenant is the tenant the helpers (RequireEnqueued, WorkOne, Query,
	// …) act on. Default "acme"; For gives a view on another.
	Tenant string

	// Pusher, if set, is told when a tenant has ready work for executors
	// (host.Config.Pusher): an executor.Local runs a worker's handlers on
	// each push, in-process, as the edge executor does on Cloudflare.
	Pusher host.Pusher
	// Pushed runs Config.Handlers as the tenants' executor, in-process:
	// every commit that makes work ready (an enqueue, an event, and from
	// the alarm a retry, a run_at, a scheduled command, a deadline) pushes
	// it to them, and they claim, run and report through the code the edge
	// executor and `stile dev --handlers` run. Use it with RealClock to see
	// an app run as in production, handlers in the background; wait for
	// outcomes (client.Wait, WaitIdle), not for WorkAll. Exclusive with
	// Pusher.
	Pushed bool
	// Concurrency is how many handlers the Pushed executor runs at once
	// (default 10, as `stile dev --handlers`).
	Concurrency int
}

// DefaultToken is the API token when Config.Token is empty: strong enough
// for the hosts that refuse a weak secret (the Worker).
const DefaultToken = "stiletest-0123456789-abcdefghijklmnop"

// defaultNow is the manual clock's start when Config.Now is zero.
var defaultNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Errors of a Config that names no module, or more than one.
var (
	ErrNoModule         = errors.New("stiletest: Config names no module: set App, Wasm, Package or Factory")
	ErrTwoModules       = errors.New("stiletest: Config names more than one module: set one of App, Wasm, Package and Factory")
	ErrPushedNoHandlers = errors.New("stiletest: Config.Pushed runs Config.Handlers: set it to your handler package's Register")
	ErrPushedAndPusher  = errors.New("stiletest: Config.Pushed brings its own executor: leave Config.Pusher unset")
)

// Harness is one tenant host behind HTTP on a loopback port.
type Harness struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:40123.
	URL string

	tb      testing.TB // nil when made by Start
	token   string
	clock   host.Clock
	manual  *host.ManualClock // nil on the real clock
	manager *host.Manager
	server  *httptest.Server
	client  *client.Client
	tempDir string // removed by Close: Start made it

	handlers func(*worker.Worker)
	// env is Config.Env as the workers read it (nil: the process's).
	env    func(string) string
	tenant string // the helpers' tenant
	log    *slog.Logger
	// executor runs pushes with Config.Pushed (nil without); pushedTo is
	// where pushes go, cleared when the harness closes.
	executor *executor.Handler
	pushedTo *atomic.Pointer[executor.Handler]

	created sync.Map // tenants Tenant created

	closeOnce sync.Once
	closeErr  error
}

// New starts a harness for the test and closes it when the test ends. A
// Config that does not start fails the test at once.
func New(tb testing.TB, cfg Config) *Harness {
	tb.Helper()
	if cfg.Logger == nil {
		logs := &logBuffer{max: 1000}
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
		// Registered first, so it runs last: after Close has logged too.
		tb.Cleanup(func() {
			if tb.Failed() {
				logs.dump(tb)
			}
		})
	}
	if cfg.DataDir == "" {
		cfg.DataDir = tb.TempDir()
	}
	h, err := start(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	h.tb = tb
	tb.Cleanup(func() {
		if err := h.Close(); err != nil {
			tb.Error(err)
		}
	})
	return h
}

// Start starts a harness outside a test (an Example, a benchmark's setup,
// a program); the caller closes it.
func Start(cfg Config) (*Harness, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	var tempDir string
	if cfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "stiletest-")
		if err != nil {
			return nil, fmt.Errorf("stiletest: data directory: %w", err)
		}
		cfg.DataDir, tempDir = dir, dir
	}
	h, err := start(cfg)
	if err != nil {
		if tempDir != "" {
			os.RemoveAll(tempDir)
		}
		return nil, err
	}
	h.tempDir = tempDir
	return h, nil
}

func start(cfg Config) (*Harness, error) {
	// With Pushed, pushes go to the executor once the server's URL is
	// known (its worker calls the API); none can come before.
	pushedTo := new(atomic.Pointer[executor.Handler])
	if cfg.Pushed {
		switch {
		case cfg.Handlers == nil:
			return nil, ErrPushedNoHandlers
		case cfg.Pusher != nil:
			return nil, ErrPushedAndPusher
		}
		cfg.Pusher = host.PushFunc(func(ctx context.Context, p api.PushRequest) error {
			ex := pushedTo.Load()
			if ex == nil {
				return errors.New("stiletest: the harness is closing")
			}
			if !cfg.RealClock {
				// A held claim waits on the manual clock, which only
				// Advance moves: the executor does not linger.
				p.LingerMs = 0
			}
			return executor.Local{H: ex}.Push(ctx, p)
		})
	}
	factory, err := openFactory(cfg)
	if err != nil {
		return nil, err
	}
	var clock host.Clock = host.RealClock{}
	var manual *host.ManualClock
	if !cfg.RealClock {
		now := cfg.Now
		if now.IsZero() {
			now = defaultNow
		}
		manual = host.NewManualClock(now.UnixMilli())
		clock = manual
	}
	m, err := host.NewManager(host.Config{Factory: factory, Clock: clock, DataDir: cfg.DataDir,
		MaxOpen: cfg.MaxOpen, MaxMemory: cfg.MaxMemory, CallTimeout: cfg.CallTimeout, ScheduleAlarms: cfg.RealClock, Logger: cfg.Logger,
		Pusher: cfg.Pusher, CreateRole: cfg.CreateRole})
	if err != nil {
		factory.Close()
		return nil, fmt.Errorf("stiletest: %w", err)
	}
	token := cfg.Token
	if token == "" {
		token = DefaultToken
	}
	revoked := map[string]bool{}
	for _, id := range cfg.Revoked {
		revoked[id] = true
	}
	opts := []server.Option{server.WithRevoked(func() (map[string]bool, error) { return revoked, nil })}
	if cfg.NextToken != "" {
		opts = append(opts, server.WithRotation(cfg.NextToken))
	}
	if cfg.TenantQuota > 0 {
		opts = append(opts, server.WithTenantQuota(cfg.TenantQuota))
	}
	srv, err := server.New(m, token, opts...)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("stiletest: %w", err)
	}
	ts := httptest.NewServer(srv)
	tenant := cfg.Tenant
	if tenant == "" {
		tenant = "acme"
	}
	h := &Harness{URL: ts.URL, token: token, clock: clock, manual: manual, manager: m, server: ts,
		client: client.New(ts.URL, token, nil), handlers: cfg.Handlers, tenant: tenant, log: cfg.Logger, pushedTo: pushedTo}
	if cfg.Env != nil {
		env := maps.Clone(cfg.Env)
		h.env = func(name string) string { return env[name] }
	}
	if cfg.Pushed {
		w, err := worker.New(worker.Config{URL: ts.URL, Token: token, ID: "stiletest-executor", Concurrency: cfg.Concurrency,
			Clock: h.WorkerClock(), Logger: cfg.Logger, Env: h.env})
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("stiletest: %w", err)
		}
		cfg.Handlers(w)
		h.executor = executor.New(w, executor.Config{Token: token, Logger: cfg.Logger})
		pushedTo.Store(h.executor)
	}
	return h, nil
}

// openFactory opens the host of the one module cfg names.
func openFactory(cfg Config) (host.Factory, error) {
	n := 0
	for _, set := range []bool{cfg.App != nil, cfg.Wasm != nil, cfg.Package != "", cfg.Factory != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return nil, ErrNoModule
	case n > 1:
		return nil, ErrTwoModules
	case cfg.Factory != nil:
		return cfg.Factory, nil
	case cfg.App != nil:
		f, err := native.New(native.Config{App: cfg.App, Logger: cfg.Logger, Fault: cfg.Fault})
		if err != nil {
			return nil, fmt.Errorf("stiletest: %w", err)
		}
		return f, nil
	}
	wasm := cfg.Wasm
	if cfg.Package != "" {
		var err error
		if wasm, err = buildWasm(cfg.Package); err != nil {
			return nil, err
		}
	}
	f, err := wazerohost.New(context.Background(), wazerohost.Config{Wasm: wasm, CacheDir: compileCache(),
		Logger: cfg.Logger, Fault: cfg.Fault})
	if err != nil {
		return nil, fmt.Errorf("stiletest: %w", err)
	}
	return f, nil
}

// compileCache keeps wazero's compiled code between test runs and
// processes (wazero writes it atomically and keys it by module and
// version), so each test does not compile the module again.
func compileCache() string { return filepath.Join(os.TempDir(), "stile-test-wazero-cache") }

// Client is a client of the harness's API, with its token.
func (h *Harness) Client() *client.Client { return h.client }

// Tenant is the client of one tenant, which it creates if it does not
// exist yet.
func (h *Harness) Tenant(name string) *client.Tenant {
	t := h.client.Tenant(name)
	if _, done := h.created.Load(name); done {
		return t
	}
	// Tenants exist once created (PUT /v1/t/{tenant}); a harness's tenants
	// are, on first use. Client().Tenant(name) is one that may not exist.
	if _, err := t.Create(context.Background()); err != nil {
		msg := fmt.Sprintf("stiletest: create tenant %s: %v", name, err)
		if h.tb == nil {
			panic(msg)
		}
		h.tb.Helper()
		h.tb.Fatal(msg)
	}
	h.created.Store(name, true)
	return t
}

// Token is the API's bearer token (for a worker.Config, say).
func (h *Harness) Token() string { return h.token }

// Manager is the host running the tenants, for calls below HTTP and the
// host's own state (AlarmAt, Restarts, FireDue).
func (h *Harness) Manager() *host.Manager { return h.manager }

// Clock is the manual clock the tenants see, to move it without running
// alarms (Advance does both); nil with Config.RealClock, where they see the
// wall clock. Now reads either.
func (h *Harness) Clock() *host.ManualClock { return h.manual }

// Now is the tenants' time.
func (h *Harness) Now() time.Time { return time.UnixMilli(h.clock.Now()).UTC() }

// Advance moves the manual clock by d and runs the alarms that came due,
// as a Durable Object runs its alarm, and returns how many tenants' alarms
// ran. Advance(0) runs what is due without moving the clock. On the real
// clock it fails the test: time passes by itself there.
func (h *Harness) Advance(d time.Duration) int {
	if h.manual == nil {
		const msg = "stiletest: Advance needs the manual clock; this harness runs on the real clock"
		if h.tb == nil {
			panic(msg)
		}
		h.tb.Helper()
		h.tb.Fatal(msg)
	}
	h.manual.Advance(d)
	return h.manager.FireDue(context.Background())
}

// Close stops the server (cutting the connections of requests still held
// open) and the host, closing every tenant's engine. It is safe to call
// more than once; New's harness closes itself when the test ends.
func (h *Harness) Close() error {
	h.closeOnce.Do(func() {
		if h.executor != nil {
			// No push is taken any more, and the handlers' work ends with
			// its reports, before the server that takes them closes.
			h.pushedTo.Store(nil)
			h.executor.Stop()
			h.executor.Wait()
		}
		h.server.CloseClientConnections()
		h.server.Close()
		err := h.manager.Close()
		if h.tempDir != "" {
			err = errors.Join(err, os.RemoveAll(h.tempDir))
		}
		if err != nil {
			h.closeErr = fmt.Errorf("stiletest: close: %w", err)
		}
	})
	return h.closeErr
}
