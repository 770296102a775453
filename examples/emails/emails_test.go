package emails_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/examples/emails"
	"github.com/stile-run/stile/examples/emails/handler"
	"github.com/stile-run/stile/stiletest"
	"github.com/stile-run/stile/worker"
)

// The welcome email, tested with the harness's helpers: the job is
// enqueued with the right args, the handler runs in the test, once.
func TestWelcomeEmail(t *testing.T) {
	mail := &mailer{sent: map[string]int{}, done: make(chan struct{})}
	h := stiletest.New(t, stiletest.Config{App: emails.App(), Handlers: func(w *worker.Worker) {
		worker.Handle(w, handler.Handler(mail))
	}})
	_, err := h.Tenant("acme").Enqueue(context.Background(), api.EnqueueRequest{Kind: emails.Kind,
		Args: []byte(`{"to":"ada@example.com","name":"Ada"}`)})
	require.NoError(t, err)

	h.RequireEnqueued(t, emails.Kind, map[string]string{"to": "ada@example.com"})
	ran := h.WorkAll(t)
	require.Len(t, ran, 1)
	require.Equal(t, api.OutcomeCompleted, ran[0].Outcome)
	require.JSONEq(t, `{"sent_to":"ada@example.com"}`, string(ran[0].Output))
	require.Equal(t, "completed", h.RequireEnqueued(t, emails.Kind, nil).State)
	require.Equal(t, map[string]int{"acme/1": 1}, mail.sent, "sent once, keyed by tenant and job")
}
