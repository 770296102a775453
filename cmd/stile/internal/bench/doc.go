// Package bench (for `stile bench` only) measures Stile's job cycle: enqueue, claim and report, each
// its own request, driven through the same entry the HTTP server uses
// (host.Manager.Do), natively and under wazero, and over loopback HTTP. The
// `stile bench` command and the Go benchmarks in this package share it.
package bench
