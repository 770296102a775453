package app

import (
	"errors"
	"strconv"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/runtime"
)

// Counter is the state of the built-in counter aggregate.
type Counter struct{ Value int64 }

// App registers the default kinds, a counter aggregate, a policy and a
// projection.
func App() *runtime.App {
	app := runtime.NewApp().
		// A job whose handler (stile work) echoes its args back as output.
		RegisterJob(runtime.JobKind{Name: "echo"}).
		// A job that sleeps for args.ms milliseconds in the worker.
		RegisterJob(runtime.JobKind{Name: "sleep", Lease: 30 * time.Second}).
		// A job that POSTs args.body to args.url from the worker, with an
		// Idempotency-Key header that is the same on every attempt.
		RegisterJob(runtime.JobKind{Name: "webhook", MaxAttempts: 10, Backoff: 5 * time.Second}).
		// A policy that stile work runs for every "note" event appended
		// (POST /v1/t/{tenant}/streams/{stream}) and every counter change:
		// it logs the event.
		RegisterPolicy(runtime.Policy{Name: "log", Events: []string{"note", "Incremented", "Decremented"}, Batch: 100})
	// A projection that counts the events of each stream the log policy
	// sees, read with GET /v1/t/{tenant}/queries/event_counts.
	app.RegisterProjection(runtime.Projection{
		Name:   "event_counts",
		Events: []string{"note", "Incremented", "Decremented"},
		Tables: []string{`CREATE TABLE {counts} (stream TEXT PRIMARY KEY, events INTEGER NOT NULL, last_seq INTEGER NOT NULL) STRICT`},
		Handle: func(tx *runtime.ProjectionTx, e api.Event) error {
			return tx.Exec(`INSERT INTO {counts} (stream, events, last_seq) VALUES (?, 1, ?)
				ON CONFLICT (stream) DO UPDATE SET events = events + 1, last_seq = excluded.last_seq`, e.Stream, e.Seq)
		},
	}).RegisterQuery(runtime.Query{Name: "event_counts", Projection: "event_counts",
		SQL: `SELECT stream, events, last_seq FROM {counts} ORDER BY stream`, Columns: []string{"stream", "events", "last_seq"}})
	// A counter per id (stream counter:<id>): commands Increment and
	// Decrement; a Decrement below zero is refused.
	return runtime.RegisterAggregate(app, runtime.Aggregate[Counter]{
		Name: "counter",
		// A command reads the counter from a snapshot kept every 100
		// events, not its whole stream. The state is one number, so a
		// hand-written codec (JSONSnapshots would link encoding/json).
		Snapshots: &runtime.Snapshots[Counter]{
			Encode: func(c Counter) ([]byte, error) { return strconv.AppendInt(nil, c.Value, 10), nil },
			Decode: func(b []byte) (Counter, error) {
				v, err := strconv.ParseInt(string(b), 10, 64)
				return Counter{Value: v}, err
			},
		},
		Evolve: func(c Counter, e api.Event) Counter {
			switch e.Type {
			case "Incremented":
				c.Value++
			case "Decremented":
				c.Value--
			}
			return c
		},
		Decide: func(c Counter, cmd runtime.Command) (runtime.Decision, error) {
			switch cmd.Type {
			case "Increment":
				return runtime.Emit(api.NewEvent{Type: "Incremented"}), nil
			case "Decrement":
				if c.Value == 0 {
					return runtime.Decision{}, errors.New("the counter is at zero")
				}
				return runtime.Emit(api.NewEvent{Type: "Decremented"}), nil
			}
			return runtime.Decision{}, errors.New("unknown command: use Increment or Decrement")
		},
	})
}
