package otelworker_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/worker"
	"github.com/stile-run/stile/worker/otelworker"
)

var quiet = slog.New(slog.DiscardHandler)

// otelVars are the variables FromEnv reads: each test starts with none.
var otelVars = []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
	"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_BSP_MAX_QUEUE_SIZE",
	"OTEL_BSP_SCHEDULE_DELAY"}

func setenv(t *testing.T, kv map[string]string) {
	for _, k := range otelVars {
		t.Setenv(k, "")
	}
	for k, v := range kv {
		t.Setenv(k, v)
	}
}

func runJob(e *otelworker.Env, kind string) {
	_, end := e.Tracer.StartJob(context.Background(), &worker.Job{Tenant: "acme", Kind: kind, Queue: "default"},
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	end(api.ReportRequest{Outcome: api.OutcomeCompleted}, time.Millisecond, nil)
}

// spanNames are the names of the spans of an ExportTraceServiceRequest,
// and its resource's service.name.
func spanNames(t *testing.T, body []byte) (names []string, service string) {
	t.Helper()
	var d tracepb.TracesData
	require.NoError(t, proto.Unmarshal(body, &d))
	for _, rs := range d.ResourceSpans {
		for _, kv := range rs.Resource.Attributes {
			if kv.Key == "service.name" {
				service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				names = append(names, s.Name)
			}
		}
	}
	return names, service
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

func TestFromEnvIsOffWithoutAnEndpoint(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"no endpoint":   {"OTEL_SERVICE_NAME": "x"},
		"SDK disabled":  {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
		"exporter none": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"},
	} {
		t.Run(name, func(t *testing.T) {
			setenv(t, vars)
			e, err := otelworker.FromEnv(quiet, otelworker.ExportOnFlush())
			require.NoError(t, err)
			require.False(t, e.On())
			require.Nil(t, e.Tracer, "no tracer: the worker traces nothing")
			require.Zero(t, e.FlushRequests(), "no request for the budget to keep")
			next := http.DefaultTransport
			require.Equal(t, next, e.Transport(next), "the worker's requests are not wrapped")
			e.Flush()
			e.Shutdown()
		})
	}
}

func TestFromEnvRefusesWhatItCannotDo(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"grpc":             {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		"no scheme":        {"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318"},
		"bad header":       {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_HEADERS": "no-equals-sign"},
		"bad timeout":      {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"},
		"zstd":             {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"},
		"another exporter": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "zipkin"},
	} {
		t.Run(name, func(t *testing.T) {
			setenv(t, vars)
			e, err := otelworker.FromEnv(quiet)
			require.Error(t, err)
			require.False(t, e.On(), "tracing is off, and the Env usable")
			require.Nil(t, e.Tracer)
		})
	}
}

// TestFromEnvExportsOnFlushOnly: with ExportOnFlush, ended spans wait for
// Flush, which sends them all in one request to {endpoint}/v1/traces with
// the configured headers and resource.
func TestFromEnvExportsOnFlushOnly(t *testing.T) {
	r := &receiver{}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	setenv(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":       srv.URL + "/otlp/",
		"OTEL_EXPORTER_OTLP_HEADERS":        "authorization=Basic%20YWRhOnNlY3JldA==, x-team = pay",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-team=traces",
		"OTEL_EXPORTER_OTLP_COMPRESSION":    "gzip",
		"OTEL_BSP_SCHEDULE_DELAY":           "1", // would export at once, were it batching on a timer
	})
	e, err := otelworker.FromEnv(quiet, otelworker.ExportOnFlush(), otelworker.ServiceName("stile-executor"))
	require.NoError(t, err)
	require.True(t, e.On())
	require.Equal(t, 1, e.FlushRequests())
	runJob(e, "email.send")
	runJob(e, "email.send")
	time.Sleep(50 * time.Millisecond)
	require.Zero(t, r.count(), "nothing sent before the flush")
	e.Flush()
	require.Equal(t, 1, r.count(), "one request for both spans")
	req := r.reqs[0]
	require.Equal(t, "/otlp/v1/traces", req.URL.Path)
	require.Equal(t, "Basic YWRhOnNlY3JldA==", req.Header.Get("Authorization"), "values are URL-decoded")
	require.Equal(t, "traces", req.Header.Get("X-Team"), "the traces' own headers win")
	require.Equal(t, "gzip", req.Header.Get("Content-Encoding"))
	names, service := spanNames(t, r.bodies[0])
	require.Equal(t, []string{"stile.job email.send", "stile.job email.send"}, names)
	require.Equal(t, "stile-executor", service)
	e.Flush()
	require.Equal(t, 1, r.count(), "an empty flush sends nothing")
	e.Shutdown()
}

func TestFromEnvHonoursTheServiceNameAndTracesEndpoint(t *testing.T) {
	r := &receiver{}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	setenv(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://127.0.0.1:1", // not used: the traces endpoint wins
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv.URL + "/custom",
		"OTEL_SERVICE_NAME":                  "shop-jobs",
	})
	e, err := otelworker.FromEnv(quiet) // batching in the background, as the process executor does
	require.NoError(t, err)
	require.Zero(t, e.FlushRequests(), "exports are not tied to flushes")
	runJob(e, "k")
	e.Flush()
	require.Equal(t, 1, r.count())
	require.Equal(t, "/custom", r.reqs[0].URL.Path, "the traces endpoint is used as it is")
	names, service := spanNames(t, r.bodies[0])
	require.Equal(t, []string{"stile.job k"}, names)
	require.Equal(t, "shop-jobs", service)
	e.Shutdown()
}

func TestFromEnvSamplesAsConfigured(t *testing.T) {
	r := &receiver{}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	setenv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_TRACES_SAMPLER": "always_off"})
	e, err := otelworker.FromEnv(quiet, otelworker.ExportOnFlush())
	require.NoError(t, err)
	runJob(e, "k")
	e.Flush()
	require.Zero(t, r.count(), "a span not sampled is not sent")
}

func TestFromEnvDropsWhatExceedsTheQueue(t *testing.T) {
	r := &receiver{}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	setenv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_BSP_MAX_QUEUE_SIZE": "2"})
	e, err := otelworker.FromEnv(quiet, otelworker.ExportOnFlush())
	require.NoError(t, err)
	for range 3 {
		runJob(e, "k")
	}
	e.Flush()
	names, _ := spanNames(t, r.bodies[0])
	require.Len(t, names, 2, "the third span was dropped")
}
