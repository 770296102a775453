// Package upgrade is a tenant module in four versions, for the tests of
// upgrades and rollbacks: v1 has a notes table and two job kinds; v2bad
// adds a migration that fails; v2 fixes it (an added column) and drops the
// kind report.build; v2changed is v2 with its migration edited after it
// ran; v3 drops the column again, a destructive migration. Each version
// also registers package ledger's aggregate: v1 at variant a; v2bad, v2
// and v2changed at b, whose Evolve changed under a new snapshot version;
// v3 at none, without snapshots. Each version's main package serves it
// as wasm.
package upgrade

import (
	"encoding/json"

	"github.com/stile-run/stile/e2e/testapp/ledger"
	"github.com/stile-run/stile/runtime"
	"github.com/stile-run/stile/schema"
)

var (
	notes = schema.Migration{Version: 1, Name: "notes", SQL: `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT`}
	bad   = schema.Migration{Version: 2, Name: "tags", SQL: `CREATE INDEX notes_tags ON notes (tags)`}
	tags  = schema.Migration{Version: 2, Name: "tags", SQL: `ALTER TABLE notes ADD COLUMN tags TEXT NOT NULL DEFAULT ''`}
	// edited is tags changed after it was applied: reported, never re-run.
	edited = schema.Migration{Version: 2, Name: "tags", SQL: `ALTER TABLE notes ADD COLUMN tags TEXT NOT NULL DEFAULT 'none'`}
	drop   = schema.Migration{Version: 3, Name: "untag", SQL: `ALTER TABLE notes DROP COLUMN tags`, Destructive: true}
)

// App is the module at version v.
func App(v string) *runtime.App {
	app := runtime.NewApp().RegisterJob(runtime.JobKind{Name: "mail.send"})
	switch v {
	case "v1":
		ledger.Register(app.Migrations(notes).RegisterJob(runtime.JobKind{Name: "report.build"}), "a")
	case "v2bad":
		ledger.Register(app.Migrations(notes, bad).RegisterJob(runtime.JobKind{Name: "report.build"}), "b")
	case "v2":
		ledger.Register(app.Migrations(notes, tags), "b")
	case "v2changed":
		ledger.Register(app.Migrations(notes, edited), "b")
	case "v3":
		ledger.Register(app.Migrations(notes, tags, drop), "none")
	default:
		panic("upgrade: no version " + v)
	}
	return app.RegisterTx("note", func(tx *runtime.Tx, input json.RawMessage) (any, error) {
		var in struct{ Body string }
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		if err := tx.Exec(`INSERT INTO notes (body) VALUES (?)`, in.Body); err != nil {
			return nil, err
		}
		rows, err := tx.Query(`SELECT count(*) FROM notes`)
		if err != nil {
			return nil, err
		}
		rows.Next()
		return map[string]int64{"notes": rows.Int(0)}, rows.Err()
	})
}
