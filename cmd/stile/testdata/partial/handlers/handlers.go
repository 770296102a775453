// Package handlers handles part of the partial test module: the greet job
// and the audit policy.
package handlers

import (
	"context"
	"os"

	"github.com/stile-run/stile/cmd/stile/testdata/partial"
	"github.com/stile-run/stile/worker"
)

// Register adds the handlers to w.
func Register(w *worker.Worker) {
	w.Handle(partial.Greet, func(ctx context.Context, j *worker.Job) (any, error) {
		var a struct {
			Name       string `json:"name"`
			Credential bool   `json:"credential"`
		}
		if err := j.Decode(&a); err != nil {
			return nil, err
		}
		if a.Credential {
			// What the handler code holds as its credential, for
			// TestDevHandlersRunAsAWorker: a worker token, not the secret.
			return map[string]string{"greeting": "hello, " + a.Name, "credential": os.Getenv("STILE_TOKEN")}, nil
		}
		return map[string]string{"greeting": "hello, " + a.Name}, nil
	})
	w.HandleReaction(partial.Audit, func(ctx context.Context, r *worker.Reaction) error { return nil })
}
