// Package process runs handler packages natively, in processes of their
// own, with the mains Stile generates for them.
//
// Main is a native executor: the main `stile dev --handlers` generates
// for a handler package calls it, and it serves the pushes of the local
// dev server on a loopback port (package executor), running the handlers
// natively. The dev server starts it as a child process (Start) and reads
// the line it prints (Ready) to learn its URL and what it handles.
// Environment: STILE_URL (the dev server) and STILE_TOKEN, both required;
// STILE_EXECUTOR_ADDR (default 127.0.0.1:0) and STILE_EXECUTOR_CONCURRENCY
// (default 10).
//
// Work is a worker that claims (worker.Run): the main `stile work
// --handlers` generates calls it. Environment: STILE_URL and STILE_TOKEN,
// both required; STILE_TENANTS (comma-separated, default every tenant
// that has work) and STILE_CONCURRENCY (default 10).
//
// In both, OTEL_EXPORTER_OTLP_ENDPOINT and the other OTEL_* variables turn
// on traces (otelworker.FromEnv).
package process
