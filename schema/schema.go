package schema

import (
	"strings"

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
	// Destructive says the migration drops, renames or rewrites on
	// purpose (Class): without it, Check refuses such a migration.
	Destructive bool
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

// The classes of a migration, kept in the ledger.
const (
	// Additive migrations only add (tables, columns, indexes, rows): a
	// module that predates them keeps working over the schema.
	Additive = "additive"
	// Destructive migrations drop or rename: a module that predates them
	// may read what is gone. Stile refuses one unless it says so
	// (Migration.Destructive).
	Destructive = "destructive"
)

// Class is the migration's class and, for a destructive one, the
// statement that makes it so: a top-level DROP of a table or view, a
// RENAME or DROP COLUMN in an ALTER TABLE, or a DELETE or UPDATE rewriting
// rows (a trigger's body is not top-level). Dropping an index is
// additive: no row or column goes, and an older module reads the same rows
// (only a statement naming the index in INDEXED BY would fail, which is
// the module's own to mark Destructive). Dropping a trigger is not: what
// it kept (a counter, a derived column) an older module still relies on.
func (m Migration) Class() (string, string) {
	inTrigger := false
	for _, stmt := range strings.Split(strings.ToUpper(m.SQL), ";") {
		t := strings.Join(strings.Fields(stmt), " ")
		switch {
		case inTrigger:
			if t == "END" {
				inTrigger = false
			}
			continue
		case strings.HasPrefix(t, "CREATE TRIGGER"), strings.HasPrefix(t, "CREATE TEMP TRIGGER"):
			inTrigger = !strings.HasSuffix(t, " END")
			continue
		}
		destructive := strings.HasPrefix(t, "DROP ") && !strings.HasPrefix(t, "DROP INDEX ") || strings.HasPrefix(t, "DELETE ") || strings.HasPrefix(t, "UPDATE ") ||
			strings.HasPrefix(t, "ALTER TABLE") && (strings.Contains(t, " RENAME ") || strings.Contains(t, " DROP "))
		if destructive {
			if len(t) > 60 {
				t = t[:60] + "…"
			}
			return Destructive, t
		}
	}
	return Additive, ""
}

// Check refuses a destructive migration that does not say it is one.
func (m Migration) Check() error {
	if class, why := m.Class(); class == Destructive && !m.Destructive {
		return printf.Errorf("migration %d_%s is destructive (%s): a module deployed before it may read what it removes; set Destructive: true once none runs", m.Version, m.Name, why)
	}
	return nil
}

// Failure is a migration that failed: it was rolled back, recorded in a
// transaction of its own, and is tried again when the tenant next
// migrates (a new instance, or POST /migrations).
type Failure struct {
	Ledger   string
	Version  int64
	Name     string
	Error    string
	At       int64
	Attempts int64
}

// Ahead is an applied migration this module does not know (an older
// module over a newer schema).
type Ahead struct {
	Version int64
	Name    string
	Class   string
}

// Result is what ApplyChecked found and did.
type Result struct {
	Applied int
	// Version is the ledger's highest applied version after the run.
	Version int64
	Drift   []Drift
	// Ahead lists the applied migrations past this module's (it serves
	// over them when all are additive).
	Ahead []Ahead
	// Failed is the migration that failed in this run, if any.
	Failed *Failure
}

// Destructive reports whether a migration ahead of the module is
// destructive.
func (r Result) AheadDestructive() bool {
	for _, a := range r.Ahead {
		if a.Class != Additive {
			return true
		}
	}
	return false
}

// Failures names the table of failed migrations, shared by every ledger.
const Failures = "stile_migration_failures"

// Apply runs every migration the database has not seen yet, each in its own
// transaction with its ledger row, checksum and class. It returns the
// number applied; a failed migration is an error (ApplyChecked records it
// instead).
func Apply(db *do.DB, ledger string, ms []Migration) (int, error) {
	r, err := ApplyChecked(db, ledger, ms)
	if err == nil && r.Failed != nil {
		err = printf.Errorf("apply migration %d_%s: %s", r.Failed.Version, r.Failed.Name, r.Failed.Error)
	}
	if err == nil && len(r.Ahead) > 0 {
		err = printf.Errorf("database %s is at version %d, newer than this module's %d: deploy the newer module", ledger, r.Version, len(ms))
	}
	return r.Applied, err
}

// ApplyChecked runs the migrations the database has not seen yet, each in
// its own transaction. A migration that fails is rolled back and recorded
// in Failures in a transaction of its own, and the run stops there; one
// that succeeds clears its failure. Applied migrations are checked
// against the module's (Drift; a ledger from before checksums and classes
// gets them filled in), and those past the module's are listed (Ahead).
// The error is the ledger's own failure, not a migration's.
func ApplyChecked(db *do.DB, ledger string, ms []Migration) (Result, error) {
	var res Result
	if err := prepareLedger(db, ledger); err != nil {
		return res, err
	}
	drift, ahead, version, err := checkApplied(db, ledger, ms)
	if err != nil {
		return res, err
	}
	res.Drift, res.Ahead, res.Version = drift, ahead, version
	if res.Version >= int64(len(ms)) {
		return res, nil
	}
	for _, m := range ms[res.Version:] {
		class, _ := m.Class()
		err := db.Tx(func() error {
			if err := db.Exec(m.SQL); err != nil {
				return err
			}
			if err := db.Exec(`INSERT INTO `+ledger+` (version, name, applied_at, checksum, class) VALUES (?, ?, ?, ?, ?)`,
				m.Version, m.Name, db.Now(), m.Checksum(), class); err != nil {
				return err
			}
			return db.Exec(`DELETE FROM `+Failures+` WHERE ledger = ? AND version = ?`, ledger, m.Version)
		})
		if err != nil {
			f, rerr := recordFailure(db, ledger, m, err.Error())
			if rerr != nil {
				return res, rerr
			}
			res.Failed = &f
			return res, nil
		}
		res.Applied++
		res.Version = m.Version
	}
	return res, nil
}

// prepareLedger creates the ledger and the failures table, and adds the
// columns a ledger from before checksums and classes lacks.
func prepareLedger(db *do.DB, ledger string) error {
	// One read when both tables are there as this version makes them (as
	// on every open but a tenant's first): a reopened tenant's first
	// request runs no DDL.
	rows, err := db.Query(`SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)`, ledger, Failures)
	if err != nil {
		return printf.Errorf("look for migration ledger %s: %w", ledger, err)
	}
	current := 0
	for rows.Next() {
		if name, sql := rows.Text(0), rows.Text(1); name == Failures ||
			strings.Contains(sql, "checksum TEXT") && strings.Contains(sql, "class TEXT") {
			current++
		}
	}
	if err := rows.Err(); err != nil {
		return printf.Errorf("look for migration ledger %s: %w", ledger, err)
	}
	if current == 2 {
		return nil
	}
	if err := db.Exec(`CREATE TABLE IF NOT EXISTS ` + ledger + ` (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL, checksum TEXT, class TEXT) STRICT`); err != nil {
		return printf.Errorf("create migration ledger %s: %w", ledger, err)
	}
	for _, col := range []string{"checksum", "class"} {
		if _, err := db.Query(`SELECT ` + col + ` FROM ` + ledger + ` LIMIT 0`); err != nil {
			if err := db.Exec(`ALTER TABLE ` + ledger + ` ADD COLUMN ` + col + ` TEXT`); err != nil {
				return printf.Errorf("add %s to migration ledger %s: %w", col, ledger, err)
			}
		}
	}
	if err := db.Exec(`CREATE TABLE IF NOT EXISTS ` + Failures + ` (
		ledger TEXT NOT NULL, version INTEGER NOT NULL, name TEXT NOT NULL, error TEXT NOT NULL,
		at INTEGER NOT NULL, attempts INTEGER NOT NULL, PRIMARY KEY (ledger, version)) STRICT, WITHOUT ROWID`); err != nil {
		return printf.Errorf("create %s: %w", Failures, err)
	}
	return nil
}

func recordFailure(db *do.DB, ledger string, m Migration, msg string) (Failure, error) {
	f := Failure{Ledger: ledger, Version: m.Version, Name: m.Name, Error: msg, At: db.Now()}
	err := db.Tx(func() error {
		rows, err := db.Query(`INSERT INTO `+Failures+` (ledger, version, name, error, at, attempts) VALUES (?, ?, ?, ?, ?, 1)
			ON CONFLICT (ledger, version) DO UPDATE SET name = excluded.name, error = excluded.error, at = excluded.at,
			attempts = attempts + 1 RETURNING attempts`, ledger, m.Version, m.Name, msg, f.At)
		if err != nil {
			return err
		}
		if rows.Next() {
			f.Attempts = rows.Int(0)
		}
		return rows.Err()
	})
	if err != nil {
		return f, printf.Errorf("record the failure of migration %d_%s: %w", m.Version, m.Name, err)
	}
	return f, nil
}

// checkApplied compares the applied migrations' checksums with the
// module's, filling in the checksums and classes a ledger from before
// them lacks, and lists the applied migrations past the module's.
func checkApplied(db *do.DB, ledger string, ms []Migration) ([]Drift, []Ahead, int64, error) {
	rows, err := db.Query(`SELECT version, name, checksum, class FROM ` + ledger + ` ORDER BY version`)
	if err != nil {
		return nil, nil, 0, printf.Errorf("read migration ledger %s: %w", ledger, err)
	}
	type row struct {
		version        int64
		name, sum, cls string
		noSum, noClass bool
	}
	var applied []row
	for rows.Next() {
		applied = append(applied, row{rows.Int(0), rows.Text(1), rows.Text(2), rows.Text(3), rows.Null(2), rows.Null(3)})
	}
	if err := rows.Err(); err != nil {
		return nil, nil, 0, err
	}
	var version int64
	if len(applied) > 0 {
		version = applied[len(applied)-1].version
	}
	var drift []Drift
	var ahead []Ahead
	for _, a := range applied {
		if a.version > int64(len(ms)) {
			cls := a.cls
			if a.noClass {
				cls = "unknown"
			}
			ahead = append(ahead, Ahead{Version: a.version, Name: a.name, Class: cls})
			continue
		}
		if a.version < 1 {
			continue
		}
		m := ms[a.version-1]
		if a.noSum {
			if err := db.Exec(`UPDATE `+ledger+` SET checksum = ? WHERE version = ?`, m.Checksum(), a.version); err != nil {
				return nil, nil, 0, printf.Errorf("fill in the checksum of migration %d_%s: %w", m.Version, m.Name, err)
			}
		} else if a.sum != m.Checksum() {
			drift = append(drift, Drift{Version: m.Version, Name: m.Name, Applied: a.sum, Current: m.Checksum()})
		}
		if a.noClass {
			class, _ := m.Class()
			if err := db.Exec(`UPDATE `+ledger+` SET class = ? WHERE version = ?`, class, a.version); err != nil {
				return nil, nil, 0, printf.Errorf("fill in the class of migration %d_%s: %w", m.Version, m.Name, err)
			}
		}
	}
	return drift, ahead, version, nil
}
