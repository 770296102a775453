// Package server is the HTTP transport of the local host: it checks the
// bearer token, routes /v1/t/{tenant}/… to that tenant's module through a
// host.Manager, and writes back what the module answered. It adds nothing
// to the API of its own; the Worker's JS entry does the same in Cloudflare.
// `stile dev` and package stiletest import it.
package server
