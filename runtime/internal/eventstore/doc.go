// Package eventstore is a tenant's event log and command ledger in its
// SQLite storage.
//
// The log numbers events with a gapless sequence (seq) across the tenant,
// and each stream with versions from 1. An append names the version it
// expects the stream to be at; any other version is refused (409 version_conflict) and
// nothing is written. The command ledger records every command applied, by
// id, so that a command applied twice is acknowledged the second time, not
// applied again.
//
// Like the other stores under runtime/internal, it runs inside the
// request's transaction and only persists what the caller decided. Package
// runtime and inboxstore import it.
package eventstore
