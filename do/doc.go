// Package do is the host ABI of a Stile tenant module: the one definition
// of what a tenant module imports and exports, how values cross (codec.go),
// and the request and response frames (frame.go). Three hosts implement
// it: the Durable Object's JS shim (host/workerd/js/abi.mjs), the wazero host
// (host/wazerohost) and the in-process native host (host/native).
//
// Inside a module, tenant code sees the object through Host: SQL
// statements, transactions as host callbacks (a nested one is a savepoint),
// the host's clock and its log. A guest panic is never turned into a value:
// it traps, and the host rolls back the open transaction and discards the
// instance.
package do
