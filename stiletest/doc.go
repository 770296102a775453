// Package stiletest runs a Stile tenant behind HTTP inside a Go test: the
// module (natively, as an *runtime.App in-process, or as a built .wasm
// under wazero), a host.Manager with a clock the test moves by hand, the
// HTTP server on a loopback port and a client for it, all closed when the
// test ends.
//
// It is for tests of code that talks to Stile: a tenant module's own tests,
// a worker's handlers, the examples, and Stile's own suites (e2e, host,
// worker), which all build their test host with it. Production code does
// not import it; nor can a tenant module (GOOS=wasip1) use it, since it
// starts hosts and servers.
//
//	h := stiletest.New(t, stiletest.Config{App: myapp.App()})
//	job, err := h.Tenant("acme").Enqueue(ctx, api.EnqueueRequest{Kind: "email.send", RunAt: &later})
//	h.Advance(time.Minute) // the clock moves and the due alarm runs: the job is available
//
// The native engine is fast and runs under the race detector; the wazero
// engine runs the very module that is deployed (Config.Package builds it
// once per test binary). Both answer the same request the same way.
package stiletest
