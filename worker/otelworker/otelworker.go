// Package otelworker traces Stile's workers with OpenTelemetry, opt-in,
// as otelriver does River's: the worker library links none of it unless a
// program imports this package. The executors Stile generates do, and
// turn it on from the environment (FromEnv).
//
//   - Tracer (worker.Config.Tracer) makes a span per job a handler runs,
//     child of the span of the request that enqueued the job (its
//     traceparent is stored with the job and handed to each claim), with
//     the tenant, job id, kind, attempt and outcome; a report the fence
//     refused is an event with its code. A reaction's delivery gets one
//     too, child of the request that appended the event (a command, an
//     append, a settlement that dispatched a command).
//   - Transport (an http.Client's Transport, for the worker's and any
//     caller's client.Client) makes a client span per API request and
//     sends its traceparent, so an enqueue's trace goes on in the job.
//
// One trace then runs from the caller's enqueue to the handler's effect.
//
// FromEnv sets both up from the standard OTEL_* variables, exporting with
// Exporter, Stile's own OTLP/HTTP protobuf exporter (the OTLP exporters of
// OpenTelemetry-Go would add megabytes of gRPC and generated code to the
// edge executor).
package otelworker

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/worker"
)

// Name is the instrumentation's name.
const Name = "github.com/stile-run/stile/worker/otelworker"

var tc = propagation.TraceContext{}

// Option configures Tracer.
type Option func(*tracer)

// WithMeterProvider also records handler metrics: stile.handler.duration
// (seconds, a histogram) and stile.handler.runs, by kind or reaction and
// outcome.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(x *tracer) {
		m := mp.Meter(Name)
		x.duration, _ = m.Float64Histogram("stile.handler.duration", metric.WithUnit("s"),
			metric.WithDescription("How long handlers ran, by job kind or reaction and outcome."))
		x.runs, _ = m.Int64Counter("stile.handler.runs", metric.WithDescription("Handler runs, by job kind or reaction and outcome."))
	}
}

// Tracer returns a worker.Tracer over tp.
func Tracer(tp trace.TracerProvider, opts ...Option) worker.Tracer {
	x := &tracer{t: tp.Tracer(Name)}
	for _, o := range opts {
		o(x)
	}
	return x
}

type tracer struct {
	t        trace.Tracer
	duration metric.Float64Histogram // nil without a meter provider
	runs     metric.Int64Counter
}

func (x *tracer) record(ctx context.Context, ran time.Duration, attrs ...attribute.KeyValue) {
	if x.duration == nil {
		return
	}
	set := metric.WithAttributes(attrs...)
	x.duration.Record(ctx, ran.Seconds(), set)
	x.runs.Add(ctx, 1, set)
}

func (x *tracer) StartJob(ctx context.Context, job *worker.Job, traceparent string) (context.Context, func(api.ReportRequest, time.Duration, error)) {
	if traceparent != "" {
		ctx = tc.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
	}
	ctx, span := x.t.Start(ctx, "stile.job "+job.Kind, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("stile.tenant", job.Tenant),
			attribute.String("stile.job.id", job.JobID),
			attribute.String("stile.job.kind", job.Kind),
			attribute.String("stile.job.queue", job.Queue),
			attribute.Int64("stile.job.attempt", job.Attempt)))
	return ctx, func(r api.ReportRequest, ran time.Duration, err error) {
		x.record(ctx, ran, attribute.String("stile.job.kind", job.Kind), attribute.String("stile.outcome", r.Outcome))
		span.SetAttributes(attribute.String("stile.job.outcome", r.Outcome))
		if r.Outcome == api.OutcomeFailed {
			span.SetStatus(codes.Error, r.Error)
		}
		var refused *api.Error
		switch {
		case errors.As(err, &refused):
			span.AddEvent("report refused", trace.WithAttributes(attribute.String("stile.code", string(refused.Code)),
				attribute.String("stile.reason", refused.Message)))
		case err != nil:
			span.AddEvent("report not delivered", trace.WithAttributes(attribute.String("error", err.Error())))
		}
		span.End()
	}
}

func (x *tracer) StartDelivery(ctx context.Context, r *worker.Reaction, traceparent string) (context.Context, func(api.Settlement, time.Duration, error)) {
	if traceparent != "" {
		ctx = tc.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
	}
	ctx, span := x.t.Start(ctx, "stile.reaction "+r.Handler, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("stile.tenant", r.Tenant),
			attribute.String("stile.reaction", r.Handler),
			attribute.Int64("stile.event.seq", r.Event.Seq),
			attribute.String("stile.event.type", r.Event.Type),
			attribute.String("stile.event.stream", r.Event.Stream),
			attribute.Int64("stile.delivery.attempt", r.Attempt)))
	return ctx, func(s api.Settlement, ran time.Duration, err error) {
		x.record(ctx, ran, attribute.String("stile.reaction", r.Handler), attribute.String("stile.outcome", s.Outcome))
		span.SetAttributes(attribute.String("stile.delivery.outcome", s.Outcome), attribute.Int("stile.delivery.commands", len(s.Commands)))
		if s.Outcome == api.OutcomeFailed {
			span.SetStatus(codes.Error, s.Error)
		}
		var refused *api.Error
		switch {
		case errors.As(err, &refused):
			span.AddEvent("settlement refused", trace.WithAttributes(attribute.String("stile.code", string(refused.Code)),
				attribute.String("stile.reason", refused.Message)))
		case err != nil:
			span.AddEvent("settlement not delivered", trace.WithAttributes(attribute.String("error", err.Error())))
		}
		span.End()
	}
}

// Transport returns an http.RoundTripper over next (nil: the default)
// that makes a client span per request, child of the request context's
// span, and sends the span's traceparent.
func Transport(next http.RoundTripper, tp trace.TracerProvider) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{next: next, t: tp.Tracer(Name)}
}

type transport struct {
	next http.RoundTripper
	t    trace.Tracer
}

func (x *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	attrs := []attribute.KeyValue{attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)}
	if tenant, _, ok := api.SplitTenantPath(r.URL.Path); ok {
		attrs = append(attrs, attribute.String("stile.tenant", tenant))
	}
	ctx, span := x.t.Start(r.Context(), "stile "+r.Method+" "+r.URL.Path, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attrs...))
	defer span.End()
	r = r.Clone(ctx)
	tc.Inject(ctx, propagation.HeaderCarrier(r.Header))
	resp, err := x.next.RoundTrip(r)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetStatus(codes.Error, strconv.Itoa(resp.StatusCode))
	}
	return resp, nil
}
