package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/console"
	"github.com/stile-run/stile/executor"
	"github.com/stile-run/stile/executor/process"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/metrics"
	"github.com/stile-run/stile/host/wazerohost"
	"github.com/stile-run/stile/internal/wasmbuild"
	"github.com/stile-run/stile/server"
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
	maxMemory := fs.String("max-memory", defaultMaxMemory, "bound on the memory of open tenant instances (least recently used idle ones close beyond it; 0: none)")
	if err := fs.Parse(args); err != nil {
		return err
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

	token, err := findToken(*data, *tokenFlag, true)
	if err != nil {
		return err
	}
	started := time.Now()
	wasmPath := filepath.Join(*data, "build", "tenant.wasm")
	if err := wasmbuild.BuildWasm(ctx, ".", pkg, wasmPath); err != nil {
		return err
	}
	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		return err
	}
	factory, err := wazerohost.New(ctx, wazerohost.Config{Wasm: wasm, CacheDir: cacheDir(*data), Logger: log})
	if err != nil {
		return err
	}
	// Pushes go to the executor once it runs; one before is refused, and
	// the tenant retries it.
	var remote atomic.Pointer[executor.Remote]
	var pusher host.Pusher
	if *handlers != "" {
		pusher = host.PushFunc(func(ctx context.Context, p api.PushRequest) error {
			r := remote.Load()
			if r == nil {
				return errors.New("the executor is starting")
			}
			return r.Push(ctx, p)
		})
	}
	m, err := host.NewManager(host.Config{Factory: factory, DataDir: *data, ScheduleAlarms: true, Logger: log, Pusher: pusher,
		MaxMemory: memBound})
	if err != nil {
		factory.Close()
		return err
	}
	defer m.Close()
	mx := metrics.New(m)
	opts := []server.Option{server.WithRequestLog(log), server.WithObserver(mx), server.WithRevoked(revokedFile(filepath.Join(*data, "revoked")))}
	if *nextToken != "" {
		opts = append(opts, server.WithRotation(*nextToken))
	}
	srv, err := server.New(m, token, opts...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", mx.Handler(token))
	mux.Handle(console.Path, console.Handler())
	mux.Handle(console.Path+"/", console.Handler())
	mux.Handle("/", srv)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// Claims long-poll for up to a minute.
		WriteTimeout: 2 * time.Minute}
	name := pkg
	if name == "" {
		name = "the built-in module (" + wasmbuild.DefaultPackage + ")"
	}
	base := "http://" + ln.Addr().String()
	runIt := "go run ./cmd/stile work      # runs it and reports back"
	if *handlers != "" {
		runIt = "# the handlers run it at once: the tenant pushes its ready work to them"
	}
	job := `{"kind":"echo","args":{"hello":"world"}}`
	if pkg != "" {
		job = `{"kind":"<a kind your module registers>","args":{}}`
		if *handlers == "" {
			runIt = "# your worker (worker.Run) or stile dev --handlers <your handler package> runs it"
		}
	}
	fmt.Fprintf(os.Stderr, `stile dev: serving %s
  module built and compiled in %s (%d KiB)
  API    %s/v1/t/{tenant}/…
  console %s/console
  token  %s
  data   %s (one SQLite file per tenant)

try it:
  export STILE_TOKEN=%s
  curl -s -H "Authorization: Bearer $STILE_TOKEN" -d '%s' %s/v1/t/acme/jobs
  %s
  curl -s -H "Authorization: Bearer $STILE_TOKEN" %s/v1/t/acme/jobs/1

`, name, time.Since(started).Round(time.Millisecond), len(wasm)>>10, base, base, token, *data, token, job, base, runIt, base)

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	if *handlers != "" {
		bin := filepath.Join(*data, "build", "executor")
		if err := wasmbuild.BuildExecutor(ctx, ".", *handlers, wasmbuild.Process, bin); err != nil {
			return err
		}
		child, err := process.Start(ctx, bin, base, token, os.Stderr)
		if err != nil {
			return err
		}
		defer child.Stop(10 * time.Second)
		remote.Store(&executor.Remote{URL: child.URL, Token: token})
		fmt.Fprintf(os.Stderr, "  handlers of %s run at %s, pushed by the tenants\n\n", *handlers, child.URL)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(os.Stderr, "stile dev: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	return nil
}

// findToken is the flag, else $STILE_TOKEN, else the token `stile dev`
// keeps in <data>/token, which it generates on first use.
func findToken(data, flagValue string, generate bool) (string, error) {
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
	if !generate {
		return "", errors.New("no token: pass --token, set STILE_TOKEN, or start `stile dev` in this directory first")
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	token := hex.EncodeToString(b[:])
	if err := os.MkdirAll(data, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", err
	}
	return token, nil
}

// defaultMaxMemory is stile dev's bound on open instances' memory.
const defaultMaxMemory = "1GiB"

// cacheDir keeps wazero's compiled code: the user cache, else <data>/cache.
func cacheDir(data string) string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "stile", "wazero")
	}
	return filepath.Join(data, "cache", "wazero")
}
