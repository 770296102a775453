// Package handler is the example's job handler, run by a worker process.
//
// It keys its side effect on the job's id, which is the same for every
// attempt: a provider that honours idempotency keys sends once even when the
// handler runs twice (see docs/GUARANTEES.md).
package handler
