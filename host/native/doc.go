// Package native runs a tenant module's Go packages in-process, with no
// Wasm: the same runtime.App, the same request frames, the same SQLite
// engine (host/dosql) as the wazero host, at Go speed and under the race
// detector. It is the fast first layer of the conformance suite and of a
// user's own tests. Package stiletest, `stile bench` and the contract
// suite import it (native.Config.Guest hosts any guest, not only an App).
package native
