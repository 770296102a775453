package testapp

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/runtime"
)

// NotesProjection is the projection of Noted events.
const NotesProjection = "notes"

// NoteData is the data of a Noted event. The notes projection fails on it
// while the projection's clock is before PoisonUntil, writes outside its
// tables when Sneaky, and panics when Panic.
type NoteData struct {
	N           int64 `json:"n"`
	PoisonUntil int64 `json:"poison_until,omitempty"` // Unix ms
	Sneaky      bool  `json:"sneaky,omitempty"`
	Panic       bool  `json:"panic,omitempty"`
}

func registerProjections(app *runtime.App) *runtime.App {
	app.RegisterProjection(runtime.Projection{
		Name:   NotesProjection,
		Events: []string{Noted},
		Tables: []string{
			`CREATE TABLE {notes} (seq INTEGER PRIMARY KEY, stream TEXT NOT NULL, n INTEGER NOT NULL, generation INTEGER NOT NULL) STRICT`,
			`CREATE TABLE {totals} (stream TEXT PRIMARY KEY, count INTEGER NOT NULL, sum INTEGER NOT NULL) STRICT`,
			`CREATE INDEX {notes_by_stream} ON {notes} (stream, seq)`,
		},
		Batch:   10,
		Backoff: 200 * time.Millisecond, MaxBackoff: time.Second,
		Handle: func(tx *runtime.ProjectionTx, e api.Event) error {
			var d NoteData
			if err := json.Unmarshal(e.Data, &d); err != nil {
				return err
			}
			switch {
			case d.Panic:
				panic("the projection exploded")
			case d.Sneaky:
				return tx.Exec(`DELETE FROM stile_jobs`)
			case d.PoisonUntil > 0 && tx.Now().UnixMilli() < d.PoisonUntil:
				return fmt.Errorf("poisoned until %d", d.PoisonUntil)
			}
			if err := tx.Exec(`INSERT INTO {notes} (seq, stream, n, generation) VALUES (?, ?, ?, ?)`,
				e.Seq, e.Stream, d.N, tx.Generation()); err != nil {
				return err
			}
			return tx.Exec(`INSERT INTO {totals} (stream, count, sum) VALUES (?, 1, ?)
				ON CONFLICT (stream) DO UPDATE SET count = count + 1, sum = sum + excluded.sum`, e.Stream, d.N)
		},
	})
	app.RegisterQuery(runtime.Query{Name: "note_totals", Projection: NotesProjection,
		SQL: `SELECT stream, count, sum FROM {totals} ORDER BY stream`, Columns: []string{"stream", "count", "sum"}, MaxRows: 1000})
	app.RegisterQuery(runtime.Query{Name: "notes_of", Projection: NotesProjection,
		SQL:    `SELECT seq, n, generation FROM {notes} WHERE stream = ? ORDER BY seq`,
		Params: []string{"stream"}, Columns: []string{"seq", "n", "generation"}, MaxRows: 1000})
	return app
}
