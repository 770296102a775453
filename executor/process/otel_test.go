package process_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/executor"
	"github.com/stile-run/stile/executor/process"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/internal/otlptest"
	"github.com/stile-run/stile/internal/wasmbuild"
	"github.com/stile-run/stile/stiletest"
	"github.com/stile-run/stile/worker/otelworker"
)

// TestTheExecutorTracesAJobToItsEnqueue: the native executor `stile dev
// --handlers` runs, given an OTLP endpoint in its environment, exports the
// span of each job it runs, child of the enqueue's span (its traceparent,
// stored with the job) and in the same trace.
func TestTheExecutorTracesAJobToItsEnqueue(t *testing.T) {
	ctx := context.Background()
	bin := filepath.Join(t.TempDir(), "executor")
	require.NoError(t, wasmbuild.BuildExecutor(ctx, ".", "github.com/stile-run/stile/e2e/testhandlers", wasmbuild.Process, bin))

	var remote atomic.Pointer[executor.Remote]
	h := stiletest.New(t, stiletest.Config{App: testapp.App(), RealClock: true, Pusher: host.PushFunc(func(ctx context.Context, p api.PushRequest) error {
		r := remote.Load()
		if r == nil {
			return errors.New("the executor is starting")
		}
		return r.Push(ctx, p)
	})})
	collector := otlptest.New()
	t.Cleanup(collector.Close)
	// The child inherits the test's environment.
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_TRACES_SAMPLER"} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	var stderr bytes.Buffer
	child, err := process.Start(ctx, bin, h.URL, h.Token(), &stderr)
	require.NoError(t, err)
	t.Cleanup(func() {
		child.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("executor log:\n%s", stderr.String())
		}
	})
	remote.Store(&executor.Remote{URL: child.URL, Token: h.Token()})

	// A caller traced in-process enqueues; its transport sends the traceparent.
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	caller := client.New(h.URL, h.Token(), &http.Client{Transport: otelworker.Transport(nil, tp)})
	j, err := caller.Tenant("acme").Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.Len(t, spans.GetSpans(), 1)
	enqueue := spans.GetSpans()[0].SpanContext

	job := collector.Wait(t, 20*time.Second, "of the job", func(s otlptest.Span) bool { return s.Name == "stile.job test.echo" })
	require.Equal(t, enqueue.TraceID().String(), job.TraceID(), "the job is in the enqueue's trace")
	require.Equal(t, enqueue.SpanID().String(), job.ParentID(), "and the enqueue's child")
	require.Equal(t, map[string]string{"stile.tenant": "acme", "stile.job.id": j.ID, "stile.job.kind": "test.echo",
		"stile.job.queue": "default", "stile.job.attempt": "1", "stile.job.outcome": "completed"}, job.Attrs())
	require.Equal(t, "stile-executor", job.Service)
	require.Equal(t, otelworker.Name, job.Scope)
	require.Equal(t, uint32(0x301), job.Flags, "sampled, with a remote parent")
}
