// Package inboxstore persists the decisions of package inbox: the ledger
// of a tenant's reactions (policies and processes) in its SQLite storage:
// checkpoints, claims, settlement marks, process state and deadlines, and
// scheduled commands.
//
// It asks inbox what each delivery's state means and persists the answer
// with guarded writes (do.ErrGuard: the state moved). Applying a
// settlement's commands is the runtime's part: it runs the module's
// aggregates. Only package runtime imports it.
package inboxstore
