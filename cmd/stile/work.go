package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/stile-run/stile/worker"
)

// runWork runs a worker with handlers for the built-in module's kinds, so
// the quick start can see a job go round. Your own workers use package
// worker with your handlers (see examples/).
func runWork(args []string) error {
	fs := flag.NewFlagSet("work", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8787", "Stile API")
	tenants := fs.String("tenant", "acme", "comma-separated tenants to work for")
	tokenFlag := fs.String("token", "", "bearer token (default: $STILE_TOKEN, else <data>/token of `stile dev`)")
	data := fs.String("data", ".stile", "the data directory of `stile dev`, to find its token")
	concurrency := fs.Int("concurrency", 10, "handlers running at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	token, err := findToken(*data, *tokenFlag, false)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	w, err := worker.New(worker.Config{URL: *url, Token: token, Tenants: strings.Split(*tenants, ","),
		Concurrency: *concurrency, Logger: log})
	if err != nil {
		return err
	}
	w.Handle("echo", func(ctx context.Context, j *worker.Job) (any, error) {
		log.Info("echo", "tenant", j.Tenant, "job", j.JobID, "attempt", j.Attempt, "args", string(j.Args))
		return j.Args, nil
	})
	w.Handle("sleep", func(ctx context.Context, j *worker.Job) (any, error) {
		var a struct {
			Ms int64 `json:"ms"`
		}
		if err := j.Decode(&a); err != nil {
			return nil, err
		}
		select {
		case <-time.After(time.Duration(a.Ms) * time.Millisecond):
			return map[string]int64{"slept_ms": a.Ms}, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	w.Handle("webhook", func(ctx context.Context, j *worker.Job) (any, error) {
		var a struct {
			URL  string          `json:"url"`
			Body json.RawMessage `json:"body"`
		}
		if err := j.Decode(&a); err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL, bytes.NewReader(a.Body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		// The same on every attempt: a receiver that honours it applies the
		// call once although the handler may run more than once.
		req.Header.Set("Idempotency-Key", j.Tenant+"/"+j.JobID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode >= 300 {
			return nil, fmt.Errorf("webhook answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
		}
		return map[string]any{"status": resp.StatusCode}, nil
	})
	w.HandleReaction("log", func(ctx context.Context, r *worker.Reaction) error {
		log.Info("event", "tenant", r.Tenant, "seq", r.Event.Seq, "stream", r.Event.Stream, "type", r.Event.Type,
			"data", string(r.Event.Data), "attempt", r.Attempt, "idempotency_key", r.IdempotencyKey)
		return nil
	})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(os.Stderr, "stile work: worker %s claiming echo, sleep and webhook jobs and the log policy's events of %s from %s (Ctrl-C to stop)\n", w.ID(), *tenants, *url)
	return w.Run(ctx)
}
