// Package contract is the host ABI's contract suite: a small guest that
// answers requests by calling the ABI (do.Host, do.DB) and saying what
// happened, and one table of cases that every host must pass alike — the
// in-process native host, the built guest under wazero, and workerd.
//
// The guest serves POST /v1/t/{tenant}/contract/{case}?{args}; Guest is its
// logic, package guest its wasip1 module. Natively host/native hosts it
// through native.Config.Guest, directly and through the guest's side of the
// ABI (do.OverABI).
//
// The suite pins what crosses the ABI (savepoints and their rollback, traps,
// limits, integers, refusal messages, the alarm, headers). What SQLite
// does with a statement is pinned elsewhere, by the parity replay of
// host/dosql against measurements taken in workerd (e2e/dosqlite); the
// contract checks only a few of those refusals, end to end.
package contract
