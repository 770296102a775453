package otelworker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/stiletest"
	"github.com/stile-run/stile/worker"
	"github.com/stile-run/stile/worker/otelworker"
)

// TestOneTraceFromEnqueueToTheHandlersEffect: a caller's span, its
// enqueue, the job's span and what the handler does form one trace.
func TestOneTraceFromEnqueueToTheHandlersEffect(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	h := stiletest.New(t, stiletest.Config{App: testapp.App()})
	hc := &http.Client{Transport: otelworker.Transport(nil, tp)}

	ctx, checkout := tp.Tracer("shop").Start(context.Background(), "checkout")
	_, err := client.New(h.URL, h.Token(), hc).Tenant("acme").Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"to":"ada"}`)})
	require.NoError(t, err)
	checkout.End()

	w, err := worker.New(worker.Config{URL: h.URL, Token: h.Token(), ID: "w1", HTTPClient: hc, Tracer: otelworker.Tracer(tp),
		Clock: h.WorkerClock(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	w.Handle("test.echo", func(ctx context.Context, j *worker.Job) (any, error) {
		_, s := tp.Tracer("shop").Start(ctx, "send email")
		s.End()
		return nil, nil
	})
	ran, ok, err := w.WorkOne(context.Background(), "acme")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, api.OutcomeCompleted, ran.Outcome)

	spans := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		spans[s.Name] = s
	}
	root := spans["checkout"]
	enqueue := spans["stile POST /v1/t/acme/jobs"]
	job := spans["stile.job test.echo"]
	effect := spans["send email"]
	report := spans["stile POST /v1/t/acme/jobs/1/report"]
	for name, s := range map[string]tracetest.SpanStub{"enqueue": enqueue, "job": job, "effect": effect, "report": report} {
		require.Equal(t, root.SpanContext.TraceID(), s.SpanContext.TraceID(), "%s is in the caller's trace", name)
	}
	require.Equal(t, root.SpanContext.SpanID(), enqueue.Parent.SpanID(), "the enqueue is the caller's child")
	require.Equal(t, enqueue.SpanContext.SpanID(), job.Parent.SpanID(), "the job's span is the enqueue's child, through the stored traceparent")
	require.True(t, job.Parent.IsRemote())
	require.Equal(t, job.SpanContext.SpanID(), effect.Parent.SpanID(), "the handler's work is the job's child")
	require.Equal(t, job.SpanContext.SpanID(), report.Parent.SpanID(), "so is its report")
	attrs := map[string]string{}
	for _, a := range job.Attributes {
		attrs[string(a.Key)] = a.Value.String()
	}
	require.Equal(t, map[string]string{"stile.tenant": "acme", "stile.job.id": "1", "stile.job.kind": "test.echo",
		"stile.job.queue": "default", "stile.job.attempt": "1", "stile.job.outcome": "completed"}, attrs)
}

func TestARefusedReportIsAnEventWithItsCode(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	_, end := otelworker.Tracer(tp).StartJob(context.Background(), &worker.Job{Kind: "k", Tenant: "acme"}, "")
	end(api.ReportRequest{Outcome: api.OutcomeCompleted}, time.Millisecond, api.Refuse(api.CodeLeaseExpired, "the lease of attempt 1 of job 1 expired before the report"))
	s := exp.GetSpans()[0]
	require.Len(t, s.Events, 1)
	require.Equal(t, "report refused", s.Events[0].Name)
	require.Equal(t, "lease_expired", s.Events[0].Attributes[0].Value.AsString())
}

// TestAReactionJoinsTheTraceOfTheCommandThatCausedIt: a command's span,
// the refund policy's delivery of its event, and the command the policy
// dispatches, in one trace.
func TestAReactionJoinsTheTraceOfTheCommandThatCausedIt(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	h := stiletest.New(t, stiletest.Config{App: testapp.App()})
	hc := &http.Client{Transport: otelworker.Transport(nil, tp)}
	acme := client.New(h.URL, h.Token(), hc).Tenant("acme")
	bg := context.Background()
	_, err := acme.Command(bg, api.Command{ID: "c1", Aggregate: "payment", AggregateID: "p1", Type: "Create", Data: json.RawMessage(`{"amount":5}`)})
	require.NoError(t, err)
	ctx, root := tp.Tracer("shop").Start(bg, "refund request")
	_, err = acme.Command(ctx, api.Command{ID: "r1", Aggregate: "payment", AggregateID: "p1", Type: "RequestRefund"})
	require.NoError(t, err)
	root.End()

	w, err := worker.New(worker.Config{URL: h.URL, Token: h.Token(), ID: "w1", HTTPClient: hc, Tracer: otelworker.Tracer(tp),
		Clock: h.WorkerClock(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	w.HandleReaction(testapp.RefundPolicy, func(ctx context.Context, r *worker.Reaction) error {
		r.Dispatch(api.Command{Aggregate: "payment", AggregateID: "p1", Type: "RecordRefund", Data: json.RawMessage(`{"refund_id":"re_1"}`)})
		return nil
	})
	ran, ok, err := w.WorkOne(bg, "acme")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, api.OutcomeSucceeded, ran.Outcome)

	spans := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		spans[s.Name] = s
	}
	command := spans["stile POST /v1/t/acme/commands"] // the last one: RequestRefund's
	reaction := spans["stile.reaction "+testapp.RefundPolicy]
	settle := spans["stile POST /v1/t/acme/reactions/settle"]
	require.Equal(t, spans["refund request"].SpanContext.TraceID(), reaction.SpanContext.TraceID(), "the reaction is in the command's trace")
	require.Equal(t, command.SpanContext.SpanID(), reaction.Parent.SpanID(), "child of the command that appended its event")
	require.Equal(t, reaction.SpanContext.SpanID(), settle.Parent.SpanID(), "its settlement is its child")
}

func TestHandlerMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tp := sdktrace.NewTracerProvider()
	x := otelworker.Tracer(tp, otelworker.WithMeterProvider(mp))
	_, end := x.StartJob(context.Background(), &worker.Job{Kind: "email.send", Tenant: "acme"}, "")
	end(api.ReportRequest{Outcome: api.OutcomeCompleted}, 250*time.Millisecond, nil)
	_, end = x.StartJob(context.Background(), &worker.Job{Kind: "email.send", Tenant: "acme"}, "")
	end(api.ReportRequest{Outcome: api.OutcomeFailed, Error: "503"}, time.Second, nil)
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	got := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = m.Data
		}
	}
	runs := got["stile.handler.runs"].(metricdata.Sum[int64])
	require.Len(t, runs.DataPoints, 2, "one series per outcome")
	hist := got["stile.handler.duration"].(metricdata.Histogram[float64])
	total := 0.0
	for _, dp := range hist.DataPoints {
		total += dp.Sum
	}
	require.InDelta(t, 1.25, total, 1e-9)
}
