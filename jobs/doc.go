// Package jobs is the job store of a tenant: enqueue, claim, heartbeat,
// report, due work (lease expiry, scheduled and retried jobs) and the
// attempt history, over the tenant's SQLite database through package do.
//
// Every decision comes from package fence; this package reads the state it
// needs, asks fence, and persists the answer with guarded writes (UPDATE …
// WHERE <the fence still holds> RETURNING id). The caller runs each method
// inside the request's storage transaction, so a refused report writes
// nothing but its bounded audit row, and a failure rolls everything back.
package jobs
