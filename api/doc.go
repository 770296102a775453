// Package api defines Stile's HTTP API once: paths, JSON shapes, error codes,
// limits and the tenant name rule. The tenant module serves it, the Go
// client and the worker speak it, and the transports (the Worker's JS entry,
// the Go dev server) use its error shapes, so a 400 or a 409 reads the same
// in every host. docs/API.md documents it for people. Every package of
// Stile imports it, the tenant module included: it stays free of net/http,
// reflection and encoding/json's codec (its JSON is generated).
package api

//go:generate go run gen.go
