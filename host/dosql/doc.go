// Package dosql runs SQL the way a Durable Object's SQLite storage does, on a
// local SQLite file: the same refusals with the same messages (transaction
// statements, PRAGMAs outside the allowlist, ATTACH, reserved names), the
// same limits (100 bound parameters, 100 KB statements, 2 MB values), the
// same error format, and transactions only through the host (Begin, with
// nesting as savepoints). The wazero host and the native host both run
// tenant SQL through it, so a statement that fails in workerd fails locally.
//
// The behaviour it copies was measured in workerd; see e2e/dosqlite. Only
// host/native and host/wazerohost import it, and the stores' tests through
// dosqltest, which opens a migrated tenant database over it.
package dosql
