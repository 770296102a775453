// Package fencestore persists the decisions of package fence: it is the
// job store of a tenant (enqueue, claim, heartbeat, report, cancel, retry,
// schedules, concurrency limits, due work and the attempt history) over the
// tenant's SQLite database through package do.
//
// Every decision comes from fence; this package reads the state it needs,
// asks fence, and persists the answer with guarded writes (UPDATE … WHERE
// <the fence still holds> RETURNING id), whose "no row" is do.ErrGuard. The
// caller runs each method inside the request's storage transaction, so a
// refused report writes nothing but its bounded audit row, and a failure
// rolls everything back.
//
// Only package runtime imports it.
package fencestore
