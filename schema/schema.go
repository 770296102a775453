package schema

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/stile-run/stile/do"
)

//go:embed migrations/*.sql
var files embed.FS

// Migration is one numbered schema step.
type Migration struct {
	Version int64
	Name    string
	SQL     string
}

// Migrations returns Stile's migrations in order.
func Migrations() []Migration {
	entries, err := fs.Glob(files, "migrations/*.sql")
	if err != nil {
		panic(err) // the pattern is a constant
	}
	ms := make([]Migration, 0, len(entries))
	for _, path := range entries {
		base := strings.TrimSuffix(strings.TrimPrefix(path, "migrations/"), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil {
			panic(fmt.Sprintf("schema: migration file %q is not named NNNN_name.sql", path))
		}
		body, err := files.ReadFile(path)
		if err != nil {
			panic(err)
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != int64(i+1) {
			panic(fmt.Sprintf("schema: migration %d is numbered %d; numbers must run 1, 2, 3 …", i+1, m.Version))
		}
	}
	return ms
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
