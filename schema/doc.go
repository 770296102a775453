// Package schema owns Stile's own tables in a tenant's SQLite database: the
// numbered migrations in migrations/ and the ledger that records which ran.
//
// Migrations only add (SQLite cannot change a CHECK constraint without
// rebuilding a table), each runs in its own transaction, and all of Stile's
// tables are prefixed stile_. User tables keep a ledger of their own.
//
// The .sql files are the documented source; after adding or changing one,
// run go generate ./schema, which compiles them in without their comments
// (the tests fail until it has run). Package runtime applies them; the
// store tests open a migrated database through host/dosql/dosqltest.
package schema
