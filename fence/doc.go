// Package fence decides who may record a job's outcome.
//
// Handler bodies run at least once; recorded outcomes happen exactly once.
// The bridge is this fence: a claim stamps a job with the claiming worker,
// the next attempt number and a lease, and hands the worker a token. A
// heartbeat or an outcome report commits only while the worker, the
// attempt, the token and a live lease all still match. Anything else is a
// refusal, an *api.Error with a stale code (errors.Is(err, api.ErrStale)),
// and the caller writes none of what the report asked for.
//
// The package is pure: no SQL, no clock, no randomness. Time (Unix ms),
// tokens and jitter come in as values, so every decision is reproducible
// and fuzzed (see fence_fuzz_test.go). The store persists its decisions as
// guarded writes (runtime/internal/fencestore, its only caller in the
// module); the worker library and the client use its types.
package fence
