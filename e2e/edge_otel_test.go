package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/internal/otlptest"
	"github.com/stile-run/stile/worker/otelworker"
)

// edgeCollector is the OpenTelemetry collector the edge executor's vars
// name (OTEL_EXPORTER_OTLP_ENDPOINT, see theEdge): it listens before
// Miniflare starts, so every edge test runs with tracing on.
var edgeCollector = otlptest.New()

// edgeTraced: a job enqueued with a traceparent is pushed to the edge
// executor in workerd, whose job span reaches the collector through the
// platform's fetch, in the enqueue's trace and its child.
func edgeTraced(t *testing.T, e *edge) {
	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	ten := client.New(e.url, token, &http.Client{Transport: otelworker.Transport(nil, tp)}).Tenant("edge-traced")
	j, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.Len(t, spans.GetSpans(), 1)
	enqueue := spans.GetSpans()[0].SpanContext
	done := waitFinal(t, e.cl.Tenant("edge-traced"), j.ID)
	require.Equal(t, "completed", done.State, done.LastError)

	job := edgeCollector.Wait(t, 20*time.Second, "of the job", func(s otlptest.Span) bool {
		return s.Name == "stile.job test.echo" && s.Attrs()["stile.tenant"] == "edge-traced"
	})
	require.Equal(t, enqueue.TraceID().String(), job.TraceID(), "the job is in the enqueue's trace")
	require.Equal(t, enqueue.SpanID().String(), job.ParentID(), "and the enqueue's child")
	require.Equal(t, map[string]string{"stile.tenant": "edge-traced", "stile.job.id": j.ID, "stile.job.kind": "test.echo",
		"stile.job.queue": "default", "stile.job.attempt": "1", "stile.job.outcome": "completed"}, job.Attrs())
	require.Equal(t, "stile-executor", job.Service)
	require.Equal(t, uint32(0x301), job.Flags, "sampled, with a remote parent")
	_, refused := edgeCollector.Requests()
	require.Empty(t, refused, "every export was well-formed")
	noPushes(t, ten)
}
