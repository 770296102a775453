// Command defaultapp is the tenant module `stile dev` and `stile build` use
// when no package is named: a few general-purpose job kinds to try Stile
// with. Your own module replaces it (see examples/).
package main

import (
	"time"

	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(App()) }

// App registers the default kinds.
func App() *runtime.App {
	return runtime.NewApp().
		// A job whose handler echoes its args back as output.
		RegisterJob(runtime.JobKind{Name: "echo"}).
		// A job that sleeps for args.ms milliseconds in the worker.
		RegisterJob(runtime.JobKind{Name: "sleep", Lease: 30 * time.Second}).
		// A job that calls args.url from the worker.
		RegisterJob(runtime.JobKind{Name: "webhook", MaxAttempts: 10, Backoff: 5 * time.Second})
}

func main() {}
