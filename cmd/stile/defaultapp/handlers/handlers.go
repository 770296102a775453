// Package handlers holds the handlers of the built-in module's job kinds
// (echo, sleep, webhook) and its log policy: what `stile work` runs, and
// the handler package `stile dev --handlers` and `stile build --handlers`
// take for the built-in module.
package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/stile-run/stile/worker"
)

// Register adds the built-in module's handlers to w.
func Register(w *worker.Worker) {
	log := slog.Default()
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
}
