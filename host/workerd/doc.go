// Package workerd is the Durable Object host of a tenant module: the JS
// Worker entry with the Tenant class and the host ABI over ctx.storage
// (js/worker.mjs, js/abi.mjs, embedded here and versioned with the Go
// code), WriteWorker, which lays out the bundle wrangler deploys, and
// Start, which runs such a bundle locally in real workerd through
// Miniflare 4 from npm (js/serve.mjs), on a loopback port.
//
// It sits beside the Go hosts (host/wazerohost, host/native). `stile
// build`, `stile bench` and the e2e suite import it.
package workerd
