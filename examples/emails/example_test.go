package emails_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/examples/emails"
	"github.com/stile-run/stile/examples/emails/handler"
	"github.com/stile-run/stile/stiletest"
	"github.com/stile-run/stile/worker"
)

// mailer counts sends per idempotency key, as a provider would.
type mailer struct {
	mu   sync.Mutex
	sent map[string]int
	done chan struct{}
}

func (m *mailer) Send(_ context.Context, key, to, subject, _ string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent[key]++
	if m.sent[key] == 1 {
		fmt.Printf("sent %q to %s\n", subject, to)
	}
	close(m.done)
	return nil
}

// The module runs in-process (no Wasm) with its own API, a worker runs the
// handler, and the job ends completed with its output.
func Example() {
	h, _ := stiletest.Start(stiletest.Config{App: emails.App(), RealClock: true})
	defer h.Close()
	acme := h.Tenant("acme")
	ctx := context.Background()
	_, err := acme.Enqueue(ctx, api.EnqueueRequest{Kind: emails.Kind, Args: []byte(`{"to":"nobody"}`)})
	fmt.Println("bad args:", client.Code(err))
	job, _ := acme.Enqueue(ctx, api.EnqueueRequest{Kind: emails.Kind, Args: []byte(`{"to":"ada@example.com","name":"Ada"}`)})
	fmt.Println("enqueued:", job.State, "on queue", job.Queue)

	mail := &mailer{sent: map[string]int{}, done: make(chan struct{})}
	w, _ := worker.New(worker.Config{URL: h.URL, Token: h.Token(), Tenants: []string{"acme"}, Queues: []string{"email"},
		Logger: slog.New(slog.DiscardHandler)})
	worker.Handle(w, handler.Handler(mail))
	wctx, stop := context.WithCancel(ctx)
	go w.Run(wctx)
	<-mail.done
	for {
		j, _ := acme.Job(ctx, job.ID)
		if j.State == "completed" {
			fmt.Println("job:", j.State, "after", j.Attempt, "attempt, output", string(j.Output))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	// Output:
	// bad args: invalid_args
	// enqueued: available on queue email
	// sent "Welcome, Ada" to ada@example.com
	// job: completed after 1 attempt, output {"sent_to":"ada@example.com"}
}

// A signup writes the user and enqueues the welcome email in one storage
// transaction; a second signup of the same address fails its insert, and
// the email it enqueued goes with it.
func Example_signup() {
	h, _ := stiletest.Start(stiletest.Config{App: emails.App()})
	defer h.Close()
	acme := h.Tenant("acme")
	ctx := context.Background()

	var out map[string]string
	err := acme.Tx(ctx, "signup", map[string]string{"to": "ada@example.com", "name": "Ada"}, &out)
	fmt.Println("first signup:", err, "welcome job", out["welcome_job"])
	err = acme.Tx(ctx, "signup", map[string]string{"to": "ada@example.com", "name": "Ada"}, nil)
	fmt.Println("second signup:", client.Code(err))
	jobs, _ := acme.List(ctx, "", "email", emails.Kind, "", 10)
	fmt.Println("welcome emails enqueued:", len(jobs.Jobs))
	// Output:
	// first signup: <nil> welcome job 1
	// second signup: tx_failed
	// welcome emails enqueued: 1
}
