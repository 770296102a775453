// Package wazerohost runs a built tenant.wasm under wazero, the way the
// Durable Object's JS shim runs it in workerd: the same exports and
// imports (package do), one instance per tenant, its SQL through
// host/dosql. It is the local host of `stile dev` and the wasm layer of
// the conformance suite.
//
// The module is compiled once per process (with an on-disk compilation
// cache, so a restart takes milliseconds). A trap rolls back the open
// transaction and the instance is discarded; the next request gets a new
// one. A call that outlives its context is stopped: the module is rewritten
// so its loops check in with the host (internal/loopguard; see
// docs/DESIGN.md, "How a runaway call is stopped"). `stile dev`, `stile
// bench`, stiletest and the suites import it.
package wazerohost
