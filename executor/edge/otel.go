//go:build js && wasm

package edge

import (
	"log/slog"

	"github.com/stile-run/stile/worker/otelworker"
)

// tracing is the OpenTelemetry tracing the Worker's vars configure
// (OTEL_EXPORTER_OTLP_ENDPOINT and the rest, see otelworker.FromEnv): off
// without an endpoint. A push's spans are sent once its work is done
// (executor.Config.AfterPush, which Serve waits for: the program ends when
// it returns), in one subrequest, which its budget keeps (FlushRequests): a
// collector never takes a request that a report needs.
func tracing(log *slog.Logger) *otelworker.Env {
	t, err := otelworker.FromEnv(log, otelworker.ExportOnFlush(), otelworker.ServiceName("stile-executor"))
	if err != nil {
		log.Warn("tracing is off", "err", err)
	}
	return t
}
