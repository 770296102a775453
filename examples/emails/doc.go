// Package emails is an example Stile module: a tenant that sends welcome
// emails through a job kind, and the handler a worker runs for it.
//
//	go run ./cmd/stile dev ./examples/emails/tenant      # the module, locally
//	go run ./examples/emails/worker --tenant acme        # a worker for it
//
// This package is what the tenant module compiles: registrations only. The
// handler lives in package handler, which the worker process imports, so
// the module never links the worker's HTTP client.
package emails
