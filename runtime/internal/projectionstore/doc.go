// Package projectionstore is the store beside package projection (which
// decides which statements a projection may run): it keeps the
// generations of a tenant's projections in its SQLite storage: which
// generation serves reads, which one a rebuild is building, how far each
// has applied the log, and where one is stalled. Its writes are guarded by
// the checkpoint the caller read, so a batch planned against a checkpoint
// that moved since (a rebuild, a reset) commits nothing (do.ErrGuard).
//
// Only package runtime imports it.
package projectionstore
