// Package executor runs a worker's handlers when a tenant pushes work to
// it, instead of polling every tenant: the tenant's transport (the
// Worker's Tenant class on Cloudflare, host.Manager locally) posts an
// api.PushRequest to api.ExecutorPath, the executor answers 202 at once
// and drains the tenant's ready work in the background with
// worker.Drain, within a budget. The same Handler serves the edge
// executor (package executor/edge, GOOS=js under syumai/workers) and
// `stile dev --handlers`' child process; Local delivers pushes in-process.
package executor
