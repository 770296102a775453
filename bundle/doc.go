// Package bundle builds what Stile runs: a user's tenant package compiled
// to a WASI reactor module (tenant.wasm), and the Worker bundle around it
// (the JS entry with the Durable Object class, embedded here and versioned
// with the Go code) that wrangler deploys.
package bundle
