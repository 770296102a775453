// Package schema owns Stile's own tables in a tenant's SQLite database: the
// numbered migrations embedded in migrations/ and the ledger that records
// which ran.
//
// Migrations only add (SQLite cannot change a CHECK constraint without
// rebuilding a table), each runs in its own transaction, and all of Stile's
// tables are prefixed stile_. User tables keep a ledger of their own.
package schema
