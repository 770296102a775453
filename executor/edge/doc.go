// Package edge is the edge executor: the worker library running a
// module's handlers inside a Cloudflare Worker (GOOS=js GOARCH=wasm, under
// github.com/syumai/workers), woken by the tenant's pushes. `stile build
// --handlers ./handlers ./tenant` generates its main from the handler
// package's Register function and writes the bundle; docs/DEPLOY.md says
// how to deploy it.
//
// Each push is one invocation: the Worker answers the push at once and
// drains the tenant's ready work in waitUntil, calling the tenant's
// Durable Object through its namespace binding (TENANT) with the
// deployment's token, until nothing is left or its budget is near its end.
// Handlers call providers with outbound fetch (net/http's default
// client); those requests count against the budget too. A call is aborted
// when its context ends (the handler's time limit, the budget's end), also
// while its answer is read, and a call to the object still waiting
// LastCalls after the budget's end is cut: nothing the invocation waits
// for can hold it, its job or its push past its time.
//
// The executor logs to the console (`wrangler tail`): a line per attempt
// that failed, panicked, timed out or whose report was refused
// (package worker), and configuration errors.
//
// The Worker's string vars and secrets are the process environment of the
// handlers (os.Getenv), as natively, but for the deployment's secrets
// (Secrets): handler code runs as a worker. A push carries a worker token
// for its tenant that the tenant's object minted for it (api.PushTokenTTL);
// the executor verifies it and its calls to that tenant carry it. Stile
// reads: STILE_TOKEN (required, to verify pushes; STILE_TOKEN_NEXT and
// STILE_REVOKED too), and
// optionally STILE_EXECUTOR_CONCURRENCY (handlers at once, default 100: the
// most jobs in a claim; the handlers' outbound requests are held to six
// waiting for headers at once, Cloudflare's limit per invocation, and
// handlers past six start only as jobs end without a request having waited,
// see Connections), STILE_EXECUTOR_BUDGET_MS
// (default 25000: Cloudflare ends waitUntil work 30 s after the response)
// and STILE_EXECUTOR_SUBREQUESTS (default 1000, the paid plan's limit per
// invocation; 50 on the free plan). OTEL_EXPORTER_OTLP_ENDPOINT and the
// other OTEL_* variables turn on traces (otelworker.FromEnv), sent at the
// end of each push in one subrequest that the budget keeps.
package edge
