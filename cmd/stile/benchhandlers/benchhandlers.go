// Package benchhandlers is the handler package `stile bench --only edge`
// compiles as the edge executor: the built-in module's handlers
// (cmd/stile/defaultapp/handlers), but for echo, which is Noop, the
// handler the worker library's drains in the bench run
// (cmd/stile/internal/bench). The edge backlog is compared with the
// library's, so both run the same handler: the built-in echo logs a line
// per job, which at the edge is written on the thread the tenant's object
// runs on, and that line is the handler's work, not the drain's.
//
// It is not internal: the edge executor's generated main, which imports
// it, lives outside cmd/stile.
package benchhandlers

import (
	"context"

	"github.com/stile-run/stile/cmd/stile/defaultapp/handlers"
	"github.com/stile-run/stile/worker"
)

// Register adds the built-in module's handlers to w, echo replaced by
// Noop.
func Register(w *worker.Worker) {
	handlers.Register(w)
	w.Handle("echo", Noop)
}

// Noop is the bench's job handler: it does nothing and returns no output.
func Noop(context.Context, *worker.Job) (any, error) { return nil, nil }
