// Package miniflare starts a Worker bundle in real workerd through
// Miniflare 4 from npm (e2e/miniflare/serve.mjs), listening on a loopback
// port. The conformance suite and `stile bench` use it.
package miniflare
