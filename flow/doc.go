// Package flow decides how fast a tenant's jobs may start: the rate limits
// of its keys (at most Limit starts in any window of Period), and when a
// debounced job starts (Debounce: at the end of its key's quiet window,
// never past its max wait).
//
// A key's recent starts are a Window: when they happened and how many at
// once. Allowance says how many more may start now, Next when the next may,
// Take records starts. The algorithm is a sliding log, exact to the
// millisecond: a start at t is allowed while fewer than Limit starts
// happened in (t-Period, t]. It never lets more than Limit start in any
// window of Period, however the starts bunch up, which a token bucket
// (Limit more after a full refill) does not promise.
//
// A window keeps at most MaxEntries entries: starts recorded when it is
// full are counted as if they happened a little later (at most Period /
// MaxEntries), which only ever delays a start, never lets one more in.
//
// The package is pure: no SQL, no clock. Time (Unix ms) comes in as
// values. The job store (runtime/internal/fencestore) persists its
// decisions in the same transaction as the claim they limit.
package flow
