// Package reactions is the inbox ledger of a tenant's reactions (policies
// and processes) in its SQLite storage: checkpoints, claims, settlement
// marks, process state and deadlines, and scheduled commands.
//
// It asks package inbox what each delivery's state means and persists the
// answer with guarded writes ("0 rows" means the state moved). Applying a
// settlement's commands is the runtime's part: it runs the module's
// aggregates.
package reactions
