// Package projection decides what a projection's SQL may touch, and names
// its tables per generation.
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
// The package is pure: no SQL is run here. Only package runtime imports
// it; runtime/internal/projectionstore keeps the generations.
package projection
