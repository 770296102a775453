// Package e2e is Stile's conformance suite: scenarios written once against
// the HTTP API (conformance_test.go) and run against three hosts — the
// native in-process host, the built tenant.wasm under wazero, and real
// workerd through Miniflare 4 from npm (which the suite installs with
// `npm ci` when it is missing). Under CI=true the workerd layer must run.
//
// It also holds the tenant module the suite runs (testapp) and the
// measurement of Durable Object SQLite that the local host imitates
// (dosqlite/). The hosts come from package stiletest; Miniflare's runner
// is host/workerd. Only `go test` runs it.
package e2e
