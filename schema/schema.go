package schema

import (
	_ "embed"
	"fmt"

	"github.com/stile-run/stile/do"
)

// Each migration file is embedded as a string: an embed.FS would bring
// io/fs and path into every tenant module (12 KB gzipped). schema_test.go
// checks that every file in migrations/ is listed here, in order.
var (
	//go:embed migrations/0001_jobs.sql
	m0001 string
	//go:embed migrations/0002_schedules.sql
	m0002 string
	//go:embed migrations/0003_events.sql
	m0003 string
	//go:embed migrations/0004_projections.sql
	m0004 string
	//go:embed migrations/0005_projection_tables.sql
	m0005 string
)

// Migration is one numbered schema step.
type Migration struct {
	Version int64
	Name    string
	SQL     string
}

// Migrations returns Stile's migrations in order.
func Migrations() []Migration {
	return []Migration{
		{Version: 1, Name: "jobs", SQL: m0001},
		{Version: 2, Name: "schedules", SQL: m0002},
		{Version: 3, Name: "events", SQL: m0003},
		{Version: 4, Name: "projections", SQL: m0004},
		{Version: 5, Name: "projection_tables", SQL: m0005},
	}
}

// Ledger names the table that records applied migrations.
const Ledger = "stile_migrations"

// Apply runs every migration the database has not seen yet, each in its own
// transaction with its ledger row. It returns the number applied.
func Apply(db *do.DB, ledger string, ms []Migration) (int, error) {
	if err := db.Exec(`CREATE TABLE IF NOT EXISTS ` + ledger + ` (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		return 0, fmt.Errorf("create migration ledger %s: %w", ledger, err)
	}
	rows, err := db.Query(`SELECT COALESCE(MAX(version), 0) FROM ` + ledger)
	if err != nil {
		return 0, fmt.Errorf("read migration ledger %s: %w", ledger, err)
	}
	rows.Next()
	current := rows.Int(0)
	if current > int64(len(ms)) {
		return 0, fmt.Errorf("database %s is at version %d, newer than this module's %d: deploy the newer module", ledger, current, len(ms))
	}
	applied := 0
	for _, m := range ms[current:] {
		err := db.Tx(func() error {
			if err := db.Exec(m.SQL); err != nil {
				return err
			}
			return db.Exec(`INSERT INTO `+ledger+` (version, name, applied_at) VALUES (?, ?, ?)`, m.Version, m.Name, db.Now())
		})
		if err != nil {
			return applied, fmt.Errorf("apply migration %d_%s: %w", m.Version, m.Name, err)
		}
		applied++
	}
	return applied, nil
}
