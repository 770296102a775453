package schema

import (
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
)

// The migrations in migrations/*.sql are compiled in by go generate
// (gen.go writes migrations_gen.go, without their comments);
// schema_test.go checks that the two agree.
//
//go:generate go run gen.go

// Migration is one numbered schema step.
type Migration struct {
	Version int64
	Name    string
	SQL     string
}

// Migrations returns Stile's migrations in order.
func Migrations() []Migration { return append([]Migration(nil), migrations...) }

// Ledger names the table that records applied migrations.
const Ledger = "stile_migrations"

// Apply runs every migration the database has not seen yet, each in its own
// transaction with its ledger row. It returns the number applied.
func Apply(db *do.DB, ledger string, ms []Migration) (int, error) {
	if err := db.Exec(`CREATE TABLE IF NOT EXISTS ` + ledger + ` (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		return 0, printf.Errorf("create migration ledger %s: %w", ledger, err)
	}
	rows, err := db.Query(`SELECT COALESCE(MAX(version), 0) FROM ` + ledger)
	if err != nil {
		return 0, printf.Errorf("read migration ledger %s: %w", ledger, err)
	}
	rows.Next()
	current := rows.Int(0)
	if current > int64(len(ms)) {
		return 0, printf.Errorf("database %s is at version %d, newer than this module's %d: deploy the newer module", ledger, current, len(ms))
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
			return applied, printf.Errorf("apply migration %d_%s: %w", m.Version, m.Name, err)
		}
		applied++
	}
	return applied, nil
}
