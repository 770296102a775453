package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/console"
	"github.com/stile-run/stile/executor"
	"github.com/stile-run/stile/executor/process"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/dosql"
	"github.com/stile-run/stile/host/metrics"
	"github.com/stile-run/stile/host/wazerohost"
	"github.com/stile-run/stile/internal/atomicfile"
	"github.com/stile-run/stile/internal/wasmbuild"
	"github.com/stile-run/stile/server"
	"github.com/stile-run/stile/token"
)

func runDev(args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: stile dev [flags] [pkg]\n\nServes the tenant module of pkg (default: the built-in module) on a local HTTP API,\none wazero instance and one SQLite file per tenant. With --handlers, tenants push their\nready work to that handler package, run natively in a child process.\n\nflags:")
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:8787", "address to listen on")
	data := fs.String("data", ".stile", "directory for tenant databases, the alarm schedule and build output")
	tokenFlag := fs.String("token", "", "bearer token clients must send (default: $STILE_TOKEN, else generated once and kept in <data>/token)")
	quiet := fs.Bool("quiet", false, "log warnings and errors only (no line per request)")
	logFormat := fs.String("log-format", "text", "text or json")
	nextToken := fs.String("next-token", os.Getenv("STILE_TOKEN_NEXT"), "a second secret accepted while you rotate the token (default $STILE_TOKEN_NEXT)")
	handlers := fs.String("handlers", "", "a handler package (exports Register(*worker.Worker)) run natively in a child process, pushed work as the edge executor is")
	createRole := fs.String("create-tenants", os.Getenv("STILE_CREATE_TENANTS"), "which writes create a tenant that does not exist: a role (its writes and those of the roles above it) or none, where only PUT /v1/t/{tenant} does (default $STILE_CREATE_TENANTS, else writer)")
	quotaFlag := fs.String("tenant-quota", os.Getenv("STILE_TENANT_QUOTA"), "the most tenants a token scoped to a prefix (acme-*) may create; 0: no quota (default $STILE_TENANT_QUOTA)")
	maxMemory := fs.String("max-memory", defaultMaxMemory, "bound on the memory of open tenant instances (least recently used idle ones close beyond it; 0: none)")
	syncFlag := fs.String("sync", "normal", "SQLite's synchronous setting for tenant databases: normal (a power loss may lose the last commits) or full (a sync per commit; nothing committed is lost)")
	bodyTimeout := fs.Duration("body-timeout", server.DefaultBodyTimeout, "bound on receiving a request's body (a slower one is answered 408 body_timeout)")
	idleTimeout := fs.Duration("idle-timeout", defaultIdleTimeout, "how long an idle keep-alive connection stays open")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if _, err := api.ParseCreateRole(*createRole); err != nil {
		return fmt.Errorf("--create-tenants: %w", err)
	}
	quota := 0
	if *quotaFlag != "" {
		var err error
		if quota, err = strconv.Atoi(*quotaFlag); err != nil || quota < 0 {
			return fmt.Errorf("--tenant-quota %q (or $STILE_TENANT_QUOTA): use a number, 0 for no quota", *quotaFlag)
		}
	}
	syncMode, err := dosql.ParseSync(*syncFlag)
	if err != nil {
		return fmt.Errorf("--sync %w", err)
	}
	memBound, err := parseBytes(*maxMemory)
	if err != nil {
		return fmt.Errorf("--max-memory: %w", err)
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return errors.New("at most one package")
	}
	pkg := fs.Arg(0)
	level := slog.LevelInfo
	if *quiet {
		level = slog.LevelWarn
	}
	var handler slog.Handler
	switch *logFormat {
	case "text":
		handler = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})
	case "json":
		handler = slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})
	default:
		return fmt.Errorf("--log-format %q: use text or json", *logFormat)
	}
	log := slog.New(handler)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	secret, secretFrom, err := devSecret(*data, *tokenFlag)
	if err != nil {
		return err
	}
	if err := token.CheckSecret(secretFrom, secret); err != nil {
		return fmt.Errorf("stile dev will not start with a weak secret: %w", err)
	}
	if *nextToken != "" {
		if err := token.CheckSecret("--next-token", *nextToken); err != nil {
			return fmt.Errorf("stile dev will not start with a weak secret: %w", err)
		}
	}
	revokedPath := filepath.Join(*data, "revoked")
	if err := ensureRevokedFile(revokedPath); err != nil {
		return err
	}
	started := time.Now()
	wasmPath := filepath.Join(*data, "build", "tenant.wasm")
	exePath := filepath.Join(*data, "build", "executor")
	// The handler package builds with the module, and its executor runs
	// before the API serves: a push is never refused for want of one.
	builds := []func(context.Context) error{func(ctx context.Context) error { return wasmbuild.BuildWasm(ctx, ".", pkg, wasmPath) }}
	if *handlers != "" {
		builds = append(builds, func(ctx context.Context) error {
			return wasmbuild.BuildExecutor(ctx, ".", *handlers, wasmbuild.Process, exePath)
		})
	}
	if err := firstError(ctx, builds...); err != nil {
		return err
	}
	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		return err
	}
	factory, err := wazerohost.New(ctx, wazerohost.Config{Wasm: wasm, CacheDir: cacheDir(*data), Logger: log, Sync: syncMode})
	if err != nil {
		return err
	}
	var registered api.Status
	if *handlers != "" {
		if registered, err = host.Registrations(ctx, factory); err != nil {
			factory.Close()
			return err
		}
	}
	// Bound now, served once the handlers run: a request that comes
	// meanwhile waits for its answer.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		factory.Close()
		return err
	}
	defer ln.Close()
	base := "http://" + ln.Addr().String()
	var pusher host.Pusher
	var running string
	var warnings []string
	stopChild := func() {}
	if *handlers != "" {
		// The handlers run as a worker, not as the admin: their code gets
		// a worker token for every tenant, minted for this run, never the
		// secret. Pushes to them carry it too.
		workerToken, err := token.Mint(secret, token.Claims{ID: "stile-dev-handlers", Scope: "*", Role: api.RoleWorker,
			Exp: time.Now().Add(handlersTokenTTL).Unix()})
		if err != nil {
			factory.Close()
			return err
		}
		child, err := process.Start(ctx, exePath, base, workerToken, os.Stderr)
		if err != nil {
			factory.Close()
			return fmt.Errorf("start the handlers of %s: %w", *handlers, err)
		}
		var once sync.Once
		stopChild = func() { once.Do(func() { child.Stop(10 * time.Second) }) }
		defer stopChild()
		pusher = executor.Remote{URL: child.URL, Token: workerToken}
		running = fmt.Sprintf("  handlers of %s running: %s, pushed by the tenants to %s\n", *handlers,
			process.Handles(child.Kinds, child.Reactions), child.URL)
		warnings = unhandled(registered, child.Ready, *handlers)
	}
	m, err := host.NewManager(host.Config{Factory: factory, DataDir: *data, ScheduleAlarms: true, Logger: log, Pusher: pusher,
		MaxMemory: memBound, CreateRole: *createRole})
	if err != nil {
		factory.Close()
		return err
	}
	defer m.Close()
	mx := metrics.New(m)
	opts := []server.Option{server.WithRequestLog(log), server.WithObserver(mx), server.WithRevoked(revokedFile(revokedPath)),
		server.WithBodyTimeout(*bodyTimeout)}
	if *nextToken != "" {
		opts = append(opts, server.WithRotation(*nextToken))
	}
	if quota > 0 {
		opts = append(opts, server.WithTenantQuota(quota))
	}
	srv, err := server.New(m, secret, opts...)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", mx.Handler(secret))
	mux.Handle(console.Path, console.Handler())
	mux.Handle(console.Path+"/", console.Handler())
	mux.Handle(console.FaviconPath, console.Handler())
	mux.Handle("/", srv)
	// Every phase of a connection is bounded, so that slow or idle
	// clients, authenticated or not, cannot hold connections open: its
	// headers, its body (the server's body timeout, which answers 408),
	// the answer (claims long-poll for up to a minute) and the wait for
	// its next request. Ambiguous paths are refused before the mux,
	// which would redirect them.
	hs := &http.Server{Handler: server.CheckPaths(mux), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		WriteTimeout: 2 * time.Minute, IdleTimeout: *idleTimeout}
	name := pkg
	if name == "" {
		name = "the built-in module (" + wasmbuild.DefaultPackage + ")"
	}
	runIt := "go run ./cmd/stile work      # runs it and reports back"
	if *handlers != "" {
		runIt = "# the handlers run it at once: the tenant pushes its ready work to them"
	}
	job := `{"kind":"echo","args":{"hello":"world"}}`
	if pkg != "" {
		job = `{"kind":"<a kind your module registers>","args":{}}`
		if *handlers == "" {
			runIt = "go tool stile work --handlers <your handler package>   # runs it and reports back"
		}
	}
	// The banner names where the secret is, never the secret: a terminal
	// or a CI log is no place for the admin token.
	tokenLine, exportToken := "from "+secretFrom, "<the secret>"
	if secretFrom != "--token" && secretFrom != "STILE_TOKEN" {
		tokenLine, exportToken = "in "+secretFrom+" (the admin secret; mint scoped tokens with `stile token mint`)", "$(cat "+secretFrom+")"
	} else if secretFrom == "STILE_TOKEN" {
		exportToken = "$STILE_TOKEN"
	}
	built := "module"
	if *handlers != "" {
		built = "module and handlers"
	}
	fmt.Fprintf(os.Stderr, `stile dev: serving %s
  %s built and compiled in %s (%d KiB)
%s  API    %s/v1/t/{tenant}/…
  console %s/console
  token  %s
  data   %s (one SQLite file per tenant)

try it:
  export STILE_TOKEN=%s
  curl -s -H "Authorization: Bearer $STILE_TOKEN" -d '%s' %s/v1/t/acme/jobs
  %s
  curl -s -H "Authorization: Bearer $STILE_TOKEN" %s/v1/t/acme/jobs/1

`, name, built, time.Since(started).Round(time.Millisecond), len(wasm)>>10, running, base, base, tokenLine, *data, exportToken, job, base, runIt, base)
	for _, w := range warnings {
		fmt.Fprintln(os.Stderr, "stile dev: warning:", w)
	}
	if len(warnings) > 0 {
		fmt.Fprintln(os.Stderr)
	}

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(os.Stderr, "stile dev: shutting down")
	// The handlers finish first, while the API still takes their reports.
	stopChild()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	return nil
}

// firstError runs fns at once and returns the first error; it cancels the
// others' context then, so their own errors (their cancellation) are not
// reported.
func firstError(ctx context.Context, fns ...func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, len(fns))
	for _, f := range fns {
		go func() { errc <- f(ctx) }()
	}
	var first error
	for range fns {
		if err := <-errc; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

// unhandled says, a line each, what the module registers that the
// handler package pkg does not handle: job kinds, then policies and
// processes.
func unhandled(module api.Status, handlers process.Ready, pkg string) []string {
	var out []string
	for _, k := range module.Kinds {
		if !slices.Contains(handlers.Kinds, k.Name) {
			out = append(out, fmt.Sprintf("job kind %q (queue %s) has no handler in %s: its jobs wait until a worker handles them", k.Name, k.Queue, pkg))
		}
	}
	for _, r := range module.Reactions {
		if !slices.Contains(handlers.Reactions, r.Name) {
			out = append(out, fmt.Sprintf("%s %q has no handler in %s: its events wait until a worker handles them", r.Kind, r.Name, pkg))
		}
	}
	// The other way round is worse: a claim naming a kind or reaction the
	// module does not register is refused whole, so nothing runs.
	for _, k := range handlers.Kinds {
		if !slices.ContainsFunc(module.Kinds, func(m api.ModuleKind) bool { return m.Name == k }) {
			out = append(out, fmt.Sprintf("%s handles job kind %q, which the module does not register: the tenants refuse its claims, and none of its jobs run; register the kind or drop its handler", pkg, k))
		}
	}
	for _, r := range handlers.Reactions {
		if !slices.ContainsFunc(module.Reactions, func(m api.ModuleReaction) bool { return m.Name == r }) {
			out = append(out, fmt.Sprintf("%s handles reaction %q, which the module does not register: the tenants refuse its claims of deliveries; register it or drop its handler", pkg, r))
		}
	}
	return out
}

// findToken is a client's credential: the flag, else $STILE_TOKEN, else
// the secret `stile dev` keeps in <data>/token.
func findToken(data, flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if env := os.Getenv("STILE_TOKEN"); env != "" {
		return env, nil
	}
	path := filepath.Join(data, "token")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	return "", fmt.Errorf("no token: pass --token, set STILE_TOKEN, or run `stile dev` here first (it keeps its secret in %s)", path)
}

// defaultIdleTimeout is how long stile dev keeps an idle keep-alive
// connection.
const defaultIdleTimeout = time.Minute

// devSecret is stile dev's secret and where it is from: --token, else
// $STILE_TOKEN, else <data>/token, which it generates (`stile token
// secret`) on first use.
func devSecret(data, flagValue string) (secret, from string, err error) {
	if flagValue != "" {
		return flagValue, "--token", nil
	}
	if env := os.Getenv("STILE_TOKEN"); env != "" {
		return env, "STILE_TOKEN", nil
	}
	path := filepath.Join(data, "token")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), path, nil
	}
	if secret, err = newSecret(); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(data, 0o755); err != nil {
		return "", "", err
	}
	return secret, path, atomicfile.Write(path, []byte(secret+"\n"), 0o600)
}

// handlersTokenTTL is how long the worker token of stile dev's handlers
// lasts: longer than any one run.
const handlersTokenTTL = 365 * 24 * time.Hour

// defaultMaxMemory is stile dev's bound on open instances' memory.
const defaultMaxMemory = "1GiB"

// cacheDir keeps wazero's compiled code: the user cache, else <data>/cache.
func cacheDir(data string) string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "stile", "wazero")
	}
	return filepath.Join(data, "cache", "wazero")
}
