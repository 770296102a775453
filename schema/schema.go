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

// Checksum identifies a migration's SQL (FNV-1a, 64 bits: it detects a
// changed migration; nothing depends on it resisting forgery).
func (m Migration) Checksum() string {
	h := uint64(14695981039346656037)
	for i := 0; i < len(m.SQL); i++ {
		h ^= uint64(m.SQL[i])
		h *= 1099511628211
	}
	const hex = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = hex[h&0xf]
		h >>= 4
	}
	return string(b[:])
}

// Drift is an applied migration whose SQL the module changed since: it is
// reported, never run again.
type Drift struct {
	Version          int64
	Name             string
	Applied, Current string // checksums
}

// Apply runs every migration the database has not seen yet, each in its own
// transaction with its ledger row and checksum. It returns the number
// applied, and the applied migrations whose SQL changed since (a ledger
// from before checksums gets them filled in as they are now).
func Apply(db *do.DB, ledger string, ms []Migration) (int, error) {
	n, _, err := ApplyChecked(db, ledger, ms)
	return n, err
}

// ApplyChecked is Apply, also returning the drift.
func ApplyChecked(db *do.DB, ledger string, ms []Migration) (int, []Drift, error) {
	if err := db.Exec(`CREATE TABLE IF NOT EXISTS ` + ledger + ` (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL, checksum TEXT) STRICT`); err != nil {
		return 0, nil, printf.Errorf("create migration ledger %s: %w", ledger, err)
	}
	if _, err := db.Query(`SELECT checksum FROM ` + ledger + ` LIMIT 0`); err != nil {
		// A ledger from before checksums.
		if err := db.Exec(`ALTER TABLE ` + ledger + ` ADD COLUMN checksum TEXT`); err != nil {
			return 0, nil, printf.Errorf("add checksums to migration ledger %s: %w", ledger, err)
		}
	}
	drift, err := checkApplied(db, ledger, ms)
	if err != nil {
		return 0, nil, err
	}
	rows, err := db.Query(`SELECT COALESCE(MAX(version), 0) FROM ` + ledger)
	if err != nil {
		return 0, nil, printf.Errorf("read migration ledger %s: %w", ledger, err)
	}
	rows.Next()
	current := rows.Int(0)
	if current > int64(len(ms)) {
		return 0, drift, printf.Errorf("database %s is at version %d, newer than this module's %d: deploy the newer module", ledger, current, len(ms))
	}
	applied := 0
	for _, m := range ms[current:] {
		err := db.Tx(func() error {
			if err := db.Exec(m.SQL); err != nil {
				return err
			}
			return db.Exec(`INSERT INTO `+ledger+` (version, name, applied_at, checksum) VALUES (?, ?, ?, ?)`, m.Version, m.Name, db.Now(), m.Checksum())
		})
		if err != nil {
			return applied, drift, printf.Errorf("apply migration %d_%s: %w", m.Version, m.Name, err)
		}
		applied++
	}
	return applied, drift, nil
}

// checkApplied compares the applied migrations' checksums with the
// module's, filling in those a ledger from before checksums lacks.
func checkApplied(db *do.DB, ledger string, ms []Migration) ([]Drift, error) {
	rows, err := db.Query(`SELECT version, checksum FROM ` + ledger + ` ORDER BY version`)
	if err != nil {
		return nil, printf.Errorf("read migration ledger %s: %w", ledger, err)
	}
	type row struct {
		version int64
		sum     string
		null    bool
	}
	var applied []row
	for rows.Next() {
		applied = append(applied, row{rows.Int(0), rows.Text(1), rows.Null(1)})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var drift []Drift
	for _, a := range applied {
		if a.version < 1 || a.version > int64(len(ms)) {
			continue
		}
		m := ms[a.version-1]
		switch {
		case a.null:
			if err := db.Exec(`UPDATE `+ledger+` SET checksum = ? WHERE version = ?`, m.Checksum(), a.version); err != nil {
				return nil, printf.Errorf("fill in the checksum of migration %d_%s: %w", m.Version, m.Name, err)
			}
		case a.sum != m.Checksum():
			drift = append(drift, Drift{Version: m.Version, Name: m.Name, Applied: a.sum, Current: m.Checksum()})
		}
	}
	return drift, nil
}
