// Package host runs tenant modules outside Cloudflare: one engine per
// tenant (the built .wasm under wazero, or the same Go packages natively),
// calls into each serialized, the tenant's alarm scheduled and persisted,
// and claims held open until work arrives (long-poll). The HTTP server in
// package server, `stile dev`, `stile bench` and package stiletest drive a
// Manager; the engines live in host/wazerohost and host/native.
package host
