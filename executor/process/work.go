package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/stile-run/stile/worker"
	"github.com/stile-run/stile/worker/otelworker"
)

// WorkConfig configures RunWorker.
type WorkConfig struct {
	URL   string // the Stile API
	Token string
	// Tenants to work for; none: every tenant that has work, followed
	// through the tenant directory.
	Tenants []string
	// Concurrency is how many handlers run at once (default 10).
	Concurrency int
	// Logger receives the worker's log lines. Default: text on stderr.
	Logger *slog.Logger
}

// Work runs a worker with the handlers register registers until SIGINT or
// SIGTERM, then lets running handlers finish; it exits the process on an
// error. It is the main `stile work --handlers` generates, configured by
// the environment: STILE_URL and STILE_TOKEN (required), STILE_TENANTS
// (comma-separated; default every tenant that has work) and
// STILE_CONCURRENCY (default 10).
func Work(register func(*worker.Worker)) {
	if err := work(register); err != nil {
		fmt.Fprintln(os.Stderr, "stile worker:", err)
		os.Exit(1)
	}
}

func work(register func(*worker.Worker)) error {
	cfg := WorkConfig{URL: os.Getenv("STILE_URL"), Token: os.Getenv("STILE_TOKEN")}
	if cfg.URL == "" || cfg.Token == "" {
		return errors.New("STILE_URL and STILE_TOKEN must be set (stile work sets them)")
	}
	if v := os.Getenv("STILE_TENANTS"); v != "" {
		cfg.Tenants = strings.Split(v, ",")
	}
	n, err := positive("STILE_CONCURRENCY", 10)
	if err != nil {
		return err
	}
	cfg.Concurrency = n
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return RunWorker(ctx, cfg, register, os.Stderr)
}

// RunWorker runs a worker with the handlers register registers until ctx
// ends, then lets running handlers finish (worker.Run). It first writes a
// line to out saying what it claims, for which tenants, from where.
func RunWorker(ctx context.Context, cfg WorkConfig, register func(*worker.Worker), out io.Writer) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	tr := tracing(cfg.Logger)
	defer tr.Shutdown()
	w, err := newWorker(cfg, tr)
	if err != nil {
		return err
	}
	register(w)
	if len(w.Kinds()) == 0 && len(w.Reactions()) == 0 {
		return errors.New("the handler package registered no handlers: its Register must call w.Handle or w.HandleReaction")
	}
	of := strings.Join(cfg.Tenants, ", ")
	if of == "" {
		of = "every tenant that has work (from the tenant directory)"
	}
	fmt.Fprintf(out, "stile work: worker %s running %s for %s from %s (Ctrl-C to stop)\n", w.ID(), Handles(w.Kinds(), w.Reactions()), of, cfg.URL)
	return w.Run(ctx)
}

// newWorker is the worker of an executor or of RunWorker, traced as tr
// says (the environment's OTEL_* variables).
func newWorker(cfg WorkConfig, tr *otelworker.Env) (*worker.Worker, error) {
	return worker.New(worker.Config{URL: cfg.URL, Token: cfg.Token, Tenants: cfg.Tenants, Concurrency: cfg.Concurrency, Logger: cfg.Logger,
		Tracer: tr.Tracer, HTTPClient: tracedClient(tr, cfg.Concurrency)})
}

// Handles says what a handler package handles: "jobs a, b and reactions
// c", for a log line.
func Handles(kinds, reactions []string) string {
	var parts []string
	if len(kinds) > 0 {
		parts = append(parts, "jobs "+strings.Join(kinds, ", "))
	}
	if len(reactions) > 0 {
		parts = append(parts, "reactions "+strings.Join(reactions, ", "))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " and ")
}
