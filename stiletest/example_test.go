package stiletest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/runtime"
	"github.com/stile-run/stile/stiletest"
	"github.com/stile-run/stile/worker"
)

// A module with one job kind runs in-process behind HTTP; a job is
// enqueued, a worker runs its handler, and the job reads back completed,
// at the times of the harness's clock. In a test, stiletest.New(t, cfg)
// does what Start and Close do here.
func Example() {
	app := runtime.NewApp().RegisterJob(runtime.JobKind{Name: "greet"})
	h, err := stiletest.Start(stiletest.Config{App: app})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	ctx := context.Background()
	acme := h.Tenant("acme")

	job, err := acme.Enqueue(ctx, api.EnqueueRequest{Kind: "greet", Args: json.RawMessage(`{"name":"Ada"}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("enqueued job", job.ID, job.State, "at", job.CreatedAt.Format(time.DateTime))

	w, err := worker.New(worker.Config{URL: h.URL, Token: h.Token(), Tenants: []string{"acme"},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	w.Handle("greet", func(_ context.Context, j *worker.Job) (any, error) {
		var args struct{ Name string }
		if err := j.Decode(&args); err != nil {
			return nil, err
		}
		return map[string]string{"greeting": "Hello, " + args.Name}, nil
	})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	for range 2000 {
		if job, err = acme.Job(ctx, job.ID); err != nil || job.State == "completed" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	<-done
	fmt.Println("job", job.ID, job.State, "after", job.Attempt, "attempt:", string(job.Output))
	// Output:
	// enqueued job 1 available at 2026-01-02 03:04:05
	// job 1 completed after 1 attempt: {"greeting":"Hello, Ada"}
}

// With Pushed, the handlers run as the tenant's executor, as they do at
// the edge: the enqueue pushes the job to them, and nothing polls. The
// job's queue is the kind's own; an executor claims from every queue.
func Example_pushed() {
	app := runtime.NewApp().RegisterJob(runtime.JobKind{Name: "greet", Queue: "email"})
	h, err := stiletest.Start(stiletest.Config{App: app, RealClock: true, Pushed: true, Handlers: func(w *worker.Worker) {
		w.Handle("greet", func(_ context.Context, j *worker.Job) (any, error) {
			var args struct{ Name string }
			if err := j.Decode(&args); err != nil {
				return nil, err
			}
			return map[string]string{"greeting": "Hello, " + args.Name}, nil
		})
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	ctx := context.Background()
	acme := h.Tenant("acme")
	job, err := acme.Enqueue(ctx, api.EnqueueRequest{Kind: "greet", Args: json.RawMessage(`{"name":"Ada"}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if job, err = acme.Wait(wctx, job.ID); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("job", job.ID, "of queue", job.Queue, job.State+":", string(job.Output))
	// Output:
	// job 1 of queue email completed: {"greeting":"Hello, Ada"}
}
