// Package client is a Go client of the Stile HTTP API: enqueue and inspect
// jobs, and the claim / heartbeat / report protocol that package worker
// builds on. It talks to any host: `stile dev`, a deployed Worker, or a
// test server. Package worker, `stile`'s commands and users' services
// import it; the tenant module does not.
package client
