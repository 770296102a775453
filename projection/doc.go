// Package projection decides what a projection's SQL may touch, names its
// tables per generation, and decides where each batch leaves its
// checkpoint.
//
// A projection writes only its own read-model tables. Its code names them
// as placeholders — {orders} — which this package replaces with the
// generation's physical table, and it refuses any statement that names a
// table another way, so a handler cannot write (or read) a table that is
// not its own: Stile's tables, the module's, another projection's. It is
// a lexical check of the statement's table positions (after FROM, JOIN,
// INTO, UPDATE, and in a FROM list), not a sandbox: the module is the
// user's own code, and the check is there to make a mistake fail loudly
// and roll the batch back.
//
// # The checkpoint
//
// Each generation of a projection has a checkpoint: the seq of the last
// event it applied. It is the only record of what was applied, and it is
// stored in the same SQLite database as the projection's tables, so the
// two commit together. A batch is one storage transaction: the checkpoint
// is read again inside it and compared with the one the batch was planned
// from, the events after it are read and applied, and the checkpoint is
// moved past them by a write guarded by the checkpoint read. A batch
// planned against a checkpoint that moved since (a rebuild, a reset)
// commits nothing, so an event is applied exactly once per generation.
//
// AfterBatch is the decision about a batch's outcome, given the checkpoint
// and what the batch did. When every event committed, the checkpoint moves
// past the last one and any stall is cleared; a batch shorter than its
// count and not cut at its byte bound is at the head, where a rebuilt
// generation can be swapped in. When a handler failed, the batch rolled
// back and the events before the failing one were committed again on their
// own: the checkpoint moves past those, and the generation stalls on the
// failing event, never skipping it. Its failures are counted (from one for
// an event it was not already stalled on), and it is tried again after
// the projection's backoff (fence.Backoff: doubling, at most its maximum),
// while the events after it wait. A batch whose events do not follow the
// checkpoint in log order is ErrOutOfOrder and may not move it. That the
// checkpoint is still the one the batch was read after is the caller's
// check, in the batch's transaction, and the store's guard on its writes.
//
// The store's side is runtime/internal/projectionstore: Store.Record
// writes the decision (Advance, then Stall), each write guarded by the
// checkpoint it moves from, and refused with do.ErrGuard when that moved.
// runtime/projections.go runs the batch's transaction and calls both.
//
// The package is pure: no SQL is run here, and time and jitter come in as
// values, so every decision is reproducible and fuzzed
// (checkpoint_fuzz_test.go). Package runtime and its projectionstore
// import it.
package projection
