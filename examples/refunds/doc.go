// Package refunds is an example Stile module with events: a payment
// aggregate, and a refund policy whose handler calls a payment provider
// with the delivery's idempotency key and records the refund with a
// command.
//
//	go run ./cmd/stile dev ./examples/refunds/tenant
//
// Like examples/emails, this package holds the registrations only (what
// the module compiles); the handler a worker runs is in package handler.
package refunds
