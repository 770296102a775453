// Command worker runs the example's handler against a Stile deployment,
// with a mailer that prints instead of sending.
//
//	go run ./examples/emails/worker --url http://127.0.0.1:8787 --tenant acme
package main
