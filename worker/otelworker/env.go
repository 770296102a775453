package otelworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/stile-run/stile/worker"
)

// FlushTimeout bounds Env.Flush: how long the end of a push waits for its
// spans to be sent, so that a slow collector cannot hold it.
const FlushTimeout = 3 * time.Second

// Env is tracing configured by the standard OpenTelemetry environment
// variables (FromEnv), as Stile's executors use it: a worker's tracer and
// transport, and the flush an executor calls at the end of each push.
type Env struct {
	// Tracer is the worker's (worker.Config.Tracer); nil when tracing is off.
	Tracer  worker.Tracer
	tp      *sdktrace.TracerProvider // nil when off
	onFlush bool
	log     *slog.Logger
}

// On says whether spans are exported.
func (e *Env) On() bool { return e.tp != nil }

// Transport is Transport(next, …) when tracing is on, else next: the
// transport of the worker's API client.
func (e *Env) Transport(next http.RoundTripper) http.RoundTripper {
	if e.tp == nil {
		return next
	}
	return Transport(next, e.tp)
}

// FlushRequests is how many requests a Flush makes at most: 1 when
// tracing is on with ExportOnFlush, so a budget keeps it; else 0 (spans go
// in the background, when OTEL_BSP_SCHEDULE_DELAY says).
func (e *Env) FlushRequests() int {
	if e.tp != nil && e.onFlush {
		return 1
	}
	return 0
}

// Flush sends the spans ended so far, waiting at most FlushTimeout; a
// failure is logged (tracing never fails a push).
func (e *Env) Flush() {
	if e.tp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), FlushTimeout)
	defer cancel()
	if err := e.tp.ForceFlush(ctx); err != nil {
		e.log.Warn("spans not exported", "err", err)
	}
}

// Shutdown flushes, as Flush, and stops tracing.
func (e *Env) Shutdown() {
	if e.tp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), FlushTimeout)
	defer cancel()
	if err := e.tp.Shutdown(ctx); err != nil {
		e.log.Warn("spans not exported", "err", err)
	}
}

// EnvOption configures FromEnv.
type EnvOption func(*envConfig)

type envConfig struct {
	service string
	onFlush bool
}

// ServiceName is the service.name of the spans' resource when
// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) does not
// say. Default "stile-worker".
func ServiceName(name string) EnvOption { return func(c *envConfig) { c.service = name } }

// ExportOnFlush keeps ended spans until Flush, which sends them in one
// request (at most OTEL_BSP_MAX_QUEUE_SIZE, default 2048, are kept between
// two flushes; more are dropped and counted): nothing is sent on a timer.
// The edge executor flushes at the end of each push, so its spans cost the
// invocation one subrequest, which its budget keeps, and never take one
// its reports need.
func ExportOnFlush() EnvOption { return func(c *envConfig) { c.onFlush = true } }

// FromEnv sets up tracing from the standard OpenTelemetry environment
// variables, with Stile's own OTLP/HTTP exporter (Exporter):
//
//   - OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as it is), or
//     OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces): where spans go; without
//     either, tracing is off;
//   - OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TRACES_HEADERS:
//     key=value,… (values URL-encoded) sent with each export;
//   - OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT (ms, default 10000),
//     OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION (gzip or none), and
//     OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL (only http/protobuf);
//   - OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES: the resource;
//   - OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG: the sampler (default
//     parentbased_always_on), and OTEL_BSP_*: the batching, as the SDK
//     reads them;
//   - OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none: off.
//
// The returned Env is usable in every case; with an error (a variable it
// cannot use) tracing is off.
func FromEnv(log *slog.Logger, opts ...EnvOption) (*Env, error) {
	cfg := envConfig{service: "stile-worker"}
	for _, o := range opts {
		o(&cfg)
	}
	if log == nil {
		log = slog.Default()
	}
	off := &Env{log: log}
	exp, err := exporterFromEnv()
	if exp == nil || err != nil {
		return off, err
	}
	res, err := resource.New(context.Background(), resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", cfg.service)), resource.WithFromEnv())
	if err != nil {
		// A malformed OTEL_RESOURCE_ATTRIBUTES: what could be read is kept.
		log.Warn("tracing: the resource is partial", "err", err)
	}
	var sp sdktrace.SpanProcessor
	if cfg.onFlush {
		limit := 2048
		if v := os.Getenv("OTEL_BSP_MAX_QUEUE_SIZE"); v != "" {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				limit = n
			}
		}
		sp = &flushProcessor{exp: exp, limit: limit}
	} else {
		sp = sdktrace.NewBatchSpanProcessor(exp)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(sp))
	return &Env{Tracer: Tracer(tp), tp: tp, onFlush: cfg.onFlush, log: log}, nil
}

// exporterFromEnv is the exporter the OTEL_* variables describe, nil if
// tracing is off.
func exporterFromEnv() (*Exporter, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	switch v := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); v {
	case "", "otlp":
	case "none":
		return nil, nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER is %q: Stile's executors export only otlp (or none)", v)
	}
	endpoint := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	name := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	if endpoint == "" {
		base := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
		if base == "" {
			return nil, nil
		}
		endpoint, name = strings.TrimSuffix(base, "/")+"/v1/traces", "OTEL_EXPORTER_OTLP_ENDPOINT"
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s is %q: set an http:// or https:// URL", name, endpoint)
	}
	exp := &Exporter{URL: endpoint, Headers: map[string]string{}}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		if err := parseHeaders(exp.Headers, os.Getenv(name)); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	switch name, v := otlpEnv("PROTOCOL"); v {
	case "", "http/protobuf":
	default:
		return nil, fmt.Errorf("%s is %q: Stile's exporter speaks http/protobuf only", name, v)
	}
	switch name, v := otlpEnv("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		exp.Gzip = true
	default:
		return nil, fmt.Errorf("%s is %q: set gzip or none", name, v)
	}
	if name, v := otlpEnv("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("%s is %q: set a positive number of milliseconds", name, v)
		}
		exp.Timeout = time.Duration(ms) * time.Millisecond
	}
	return exp, nil
}

// otlpEnv is OTEL_EXPORTER_OTLP_TRACES_<key>, else OTEL_EXPORTER_OTLP_<key>,
// and the name of the variable that said it.
func otlpEnv(key string) (name, value string) {
	name = "OTEL_EXPORTER_OTLP_TRACES_" + key
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return name, v
	}
	name = "OTEL_EXPORTER_OTLP_" + key
	return name, strings.TrimSpace(os.Getenv(name))
}

// parseHeaders adds the headers of s (key=value pairs separated by
// commas, values URL-encoded) to h.
func parseHeaders(h map[string]string, s string) error {
	for pair := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return fmt.Errorf("%q is not key=value", pair)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("the value of %s: %w", k, err)
		}
		h[k] = dv
	}
	return nil
}

// flushProcessor keeps ended, sampled spans until ForceFlush (up to limit;
// more are counted and dropped), then exports them at once.
type flushProcessor struct {
	exp     sdktrace.SpanExporter
	limit   int
	mu      sync.Mutex
	spans   []sdktrace.ReadOnlySpan
	dropped int
	export  sync.Mutex // one export at a time
}

func (p *flushProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (p *flushProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.spans) >= p.limit {
		p.dropped++
		return
	}
	p.spans = append(p.spans, s)
}

func (p *flushProcessor) ForceFlush(ctx context.Context) error {
	p.export.Lock()
	defer p.export.Unlock()
	p.mu.Lock()
	spans, dropped := p.spans, p.dropped
	p.spans, p.dropped = nil, 0
	p.mu.Unlock()
	var err error
	if len(spans) > 0 {
		err = p.exp.ExportSpans(ctx, spans)
	}
	if dropped > 0 {
		err = errors.Join(err, fmt.Errorf("otelworker: %d spans dropped: more than %d ended between two flushes (OTEL_BSP_MAX_QUEUE_SIZE)", dropped, p.limit))
	}
	return err
}

func (p *flushProcessor) Shutdown(ctx context.Context) error {
	return errors.Join(p.ForceFlush(ctx), p.exp.Shutdown(ctx))
}
