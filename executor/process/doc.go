// Package process is a native executor process: the main `stile dev
// --handlers` generates for a handler package calls Main, which serves the
// pushes of the local dev server on a loopback port (package executor),
// running the handlers natively. The dev server starts it as a child
// process and reads the line it prints to learn its URL.
//
// Environment: STILE_URL (the dev server) and STILE_TOKEN, both required;
// STILE_EXECUTOR_ADDR (default 127.0.0.1:0) and STILE_EXECUTOR_CONCURRENCY
// (default 10); OTEL_EXPORTER_OTLP_ENDPOINT and the other OTEL_* variables
// turn on traces (otelworker.FromEnv).
package process
