// Package benchapp is the module `stile bench` measures projections on: two
// projections with the same handler, one upsert per event, in batches of
// 100 and 1000, over an event type of their own. It is the bench's alone,
// so that the shipped binary links no test module.
package benchapp

import (
	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/runtime"
)

// Tallied is the event type the bench's projections read.
const Tallied = "Tallied"

// The projections, by the batch each applies.
const (
	Tally100  = "tally100"
	Tally1000 = "tally1000"
)

// App registers the bench's projections.
func App() *runtime.App {
	app := runtime.NewApp()
	for _, p := range []struct {
		name  string
		batch int
	}{{Tally100, 100}, {Tally1000, 1000}} {
		app.RegisterProjection(runtime.Projection{
			Name:   p.name,
			Events: []string{Tallied},
			Tables: []string{`CREATE TABLE {tally} (stream TEXT PRIMARY KEY, count INTEGER NOT NULL) STRICT`},
			Batch:  p.batch,
			Handle: func(tx *runtime.ProjectionTx, e api.Event) error {
				return tx.Exec(`INSERT INTO {tally} (stream, count) VALUES (?, 1)
					ON CONFLICT (stream) DO UPDATE SET count = count + 1`, e.Stream)
			},
		})
	}
	return app
}
