package process

import (
	"log/slog"
	"net/http"

	"github.com/stile-run/stile/worker/otelworker"
)

// tracing is the OpenTelemetry tracing the environment configures
// (OTEL_EXPORTER_OTLP_ENDPOINT and the rest, see otelworker.FromEnv): off
// without an endpoint. Spans are batched in the background and flushed at
// the end of each push (executor.Config.AfterPush) and at exit.
func tracing(log *slog.Logger) *otelworker.Env {
	t, err := otelworker.FromEnv(log, otelworker.ServiceName("stile-executor"))
	if err != nil {
		log.Warn("tracing is off", "err", err)
	}
	return t
}

// tracedClient is the worker's API client when tracing is on: the
// worker's default (connections kept for every handler) with a client span
// per request, whose traceparent it sends. Nil when tracing is off: the
// worker's default.
func tracedClient(t *otelworker.Env, concurrency int) *http.Client {
	if !t.On() {
		return nil
	}
	next := http.DefaultTransport
	if d, ok := next.(*http.Transport); ok {
		tr := d.Clone()
		tr.MaxIdleConnsPerHost = concurrency + 4
		next = tr
	}
	return &http.Client{Transport: t.Transport(next)}
}
