package handler

import (
	"context"
	"errors"

	"github.com/stile-run/stile/examples/emails"
	"github.com/stile-run/stile/worker"
)

// Mailer is the provider the handler calls.
type Mailer interface {
	// Send sends once per idempotency key.
	Send(ctx context.Context, idempotencyKey, to, subject, body string) error
}

// Handler returns the worker's handler of welcome emails (emails.Args):
// register it with worker.Handle(w, Handler(m)).
func Handler(m Mailer) func(context.Context, *worker.JobOf[emails.Args]) (any, error) {
	return func(ctx context.Context, j *worker.JobOf[emails.Args]) (any, error) {
		a := j.Args
		if a.To == "" {
			return nil, errors.New("no recipient")
		}
		key := j.Tenant + "/" + j.JobID // the same on every attempt
		if err := m.Send(ctx, key, a.To, "Welcome, "+a.Name, "Glad to have you."); err != nil {
			return nil, err
		}
		return map[string]string{"sent_to": a.To}, nil
	}
}
