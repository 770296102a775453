package app

import (
	"time"

	"github.com/stile-run/stile/runtime"
)

// App registers the default kinds.
func App() *runtime.App {
	return runtime.NewApp().
		// A job whose handler (stile work) echoes its args back as output.
		RegisterJob(runtime.JobKind{Name: "echo"}).
		// A job that sleeps for args.ms milliseconds in the worker.
		RegisterJob(runtime.JobKind{Name: "sleep", Lease: 30 * time.Second}).
		// A job that POSTs args.body to args.url from the worker, with an
		// Idempotency-Key header that is the same on every attempt.
		RegisterJob(runtime.JobKind{Name: "webhook", MaxAttempts: 10, Backoff: 5 * time.Second})
}
