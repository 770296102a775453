package schema_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql"
	"github.com/stile-run/stile/schema"
	"github.com/stile-run/stile/schema/internal/sqltext"
)

// Every file in migrations/ is listed by Migrations, in order, with its
// content compacted: a new or changed file that go generate did not
// compile in would never run.
func TestEveryMigrationFileIsListed(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("migrations/*.sql")
	require.NoError(t, err)
	ms := schema.Migrations()
	require.Len(t, ms, len(files))
	for i, m := range ms {
		name := fmt.Sprintf("migrations/%04d_%s.sql", m.Version, m.Name)
		require.Equal(t, name, files[i])
		body, err := os.ReadFile(name)
		require.NoError(t, err)
		require.Equal(t, sqltext.Compact(string(body)), m.SQL, "%s changed: run go generate ./schema", name)
		require.Equal(t, strings.HasPrefix(string(body), "-- destructive: "), m.Destructive, "%s's destructive line changed: run go generate ./schema", name)
		require.True(t, strings.Contains(m.SQL, "CREATE ") || strings.Contains(m.SQL, "ALTER TABLE") || strings.Contains(m.SQL, "DROP "), "%s changes the schema", name)
	}
}

func TestMigrationsAreNumberedAndIdempotent(t *testing.T) {
	t.Parallel()
	ms := schema.Migrations()
	require.NotEmpty(t, ms)
	for i, m := range ms {
		require.Equal(t, int64(i+1), m.Version)
	}
	sq, err := dosql.Open(filepath.Join(t.TempDir(), "m.sqlite"))
	require.NoError(t, err)
	defer sq.Close()
	db := do.NewDB(dosql.Host(sq, func() int64 { return 1 }))
	n, err := schema.Apply(db, schema.Ledger, ms)
	require.NoError(t, err)
	require.Equal(t, len(ms), n)
	n, err = schema.Apply(db, schema.Ledger, ms)
	require.NoError(t, err)
	require.Zero(t, n, "a second run applies nothing")

	_, err = schema.Apply(db, schema.Ledger, ms[:0])
	require.ErrorContains(t, err, "newer than this module", "an older module refuses a newer database")
}

func TestAFailedMigrationLeavesNothing(t *testing.T) {
	t.Parallel()
	sq, err := dosql.Open(filepath.Join(t.TempDir(), "m.sqlite"))
	require.NoError(t, err)
	defer sq.Close()
	db := do.NewDB(dosql.Host(sq, func() int64 { return 1 }))
	bad := []schema.Migration{{Version: 1, Name: "bad", SQL: "CREATE TABLE x (a); CREATE TABLE x (a)"}}
	_, err = schema.Apply(db, "ledger", bad)
	require.ErrorContains(t, err, "apply migration 1_bad")
	rows, err := db.Query(`SELECT count(*) FROM sqlite_master WHERE name = 'x'`)
	require.NoError(t, err)
	require.True(t, rows.Next())
	require.Zero(t, rows.Int(0), "the migration's transaction rolled back")
}

// A ledger from before checksums gets the column and its applied
// migrations' checksums as they are now; a later change is drift.
func TestChecksumsAreBackfilledThenCompared(t *testing.T) {
	sq, err := dosql.Open(filepath.Join(t.TempDir(), "m.sqlite"))
	require.NoError(t, err)
	defer sq.Close()
	db := do.NewDB(dosql.Host(sq, func() int64 { return 1 }))
	m := schema.Migration{Version: 1, Name: "a", SQL: `CREATE TABLE a (x INTEGER) STRICT`}
	require.NoError(t, db.Exec(`CREATE TABLE app_ledger (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`))
	require.NoError(t, db.Exec(m.SQL))
	require.NoError(t, db.Exec(`INSERT INTO app_ledger (version, name, applied_at) VALUES (1, 'a', 1)`))

	r, err := schema.ApplyChecked(db, "app_ledger", []schema.Migration{m})
	require.NoError(t, err)
	require.Zero(t, r.Applied)
	require.Empty(t, r.Drift, "filled in, not drift")
	rows, err := db.Query(`SELECT checksum, class FROM app_ledger WHERE version = 1`)
	require.NoError(t, err)
	require.True(t, rows.Next())
	require.Equal(t, m.Checksum(), rows.Text(0))
	require.Equal(t, schema.Additive, rows.Text(1), "the class is filled in too")

	changed := m
	changed.SQL = `CREATE TABLE a (x INTEGER, y TEXT) STRICT`
	r, err = schema.ApplyChecked(db, "app_ledger", []schema.Migration{changed})
	require.NoError(t, err)
	require.Zero(t, r.Applied, "not run again")
	require.Equal(t, []schema.Drift{{Version: 1, Name: "a", Applied: m.Checksum(), Current: changed.Checksum()}}, r.Drift)
}

func openDB(t *testing.T, now *int64) *do.DB {
	sq, err := dosql.Open(filepath.Join(t.TempDir(), "m.sqlite"))
	require.NoError(t, err)
	t.Cleanup(func() { sq.Close() })
	return do.NewDB(dosql.Host(sq, func() int64 { return *now }))
}

// A failing migration is rolled back and recorded in a transaction of its
// own; the next run tries it again, and a success clears the record.
func TestAFailingMigrationIsRecordedAndRetried(t *testing.T) {
	t.Parallel()
	now := int64(1)
	db := openDB(t, &now)
	ok := schema.Migration{Version: 1, Name: "a", SQL: `CREATE TABLE a (x INTEGER) STRICT`}
	bad := schema.Migration{Version: 2, Name: "b", SQL: `CREATE INDEX b_y ON b (y)`}
	r, err := schema.ApplyChecked(db, "app_ledger", []schema.Migration{ok, bad})
	require.NoError(t, err, "a migration's failure is a result, not an error")
	require.Equal(t, 1, r.Applied)
	require.Equal(t, int64(1), r.Version)
	require.NotNil(t, r.Failed)
	require.Equal(t, schema.Failure{Ledger: "app_ledger", Version: 2, Name: "b", Error: "no such table: main.b: SQLITE_ERROR", At: 1, Attempts: 1}, *r.Failed)
	now = 2
	r, err = schema.ApplyChecked(db, "app_ledger", []schema.Migration{ok, bad})
	require.NoError(t, err)
	require.Equal(t, int64(2), r.Failed.Attempts)

	fixed := bad
	fixed.SQL = `CREATE TABLE b (y TEXT) STRICT; CREATE INDEX b_y ON b (y)`
	r, err = schema.ApplyChecked(db, "app_ledger", []schema.Migration{ok, fixed})
	require.NoError(t, err)
	require.Nil(t, r.Failed)
	require.Equal(t, int64(2), r.Version)
	rows, err := db.Query(`SELECT count(*) FROM ` + schema.Failures)
	require.NoError(t, err)
	require.True(t, rows.Next())
	require.Zero(t, rows.Int(0), "the success cleared the failure")
}

// An older module over a newer schema is told what is ahead and of which
// class; a destructive migration must say so.
func TestAheadAndClasses(t *testing.T) {
	t.Parallel()
	now := int64(1)
	db := openDB(t, &now)
	ms := []schema.Migration{
		{Version: 1, Name: "a", SQL: `CREATE TABLE a (x INTEGER) STRICT`},
		{Version: 2, Name: "col", SQL: `ALTER TABLE a ADD COLUMN y TEXT`},
		{Version: 3, Name: "drop", SQL: `ALTER TABLE a DROP COLUMN y`, Destructive: true},
	}
	r, err := schema.ApplyChecked(db, "app_ledger", ms)
	require.NoError(t, err)
	require.Equal(t, 3, r.Applied)
	r, err = schema.ApplyChecked(db, "app_ledger", ms[:1])
	require.NoError(t, err)
	require.Equal(t, []schema.Ahead{{Version: 2, Name: "col", Class: schema.Additive}, {Version: 3, Name: "drop", Class: schema.Destructive}}, r.Ahead)
	require.True(t, r.AheadDestructive())
	db2 := openDB(t, &now)
	_, err = schema.ApplyChecked(db2, "app_ledger", ms[:2])
	require.NoError(t, err)
	r, err = schema.ApplyChecked(db2, "app_ledger", ms[:1])
	require.NoError(t, err)
	require.Len(t, r.Ahead, 1)
	require.False(t, r.AheadDestructive(), "only an added column is ahead")

	for sql, want := range map[string]string{
		`CREATE TABLE t (a)`:         schema.Additive,
		`ALTER TABLE t ADD COLUMN b`: schema.Additive,
		`INSERT INTO t VALUES (1)`:   schema.Additive,
		`CREATE TRIGGER g AFTER INSERT ON t BEGIN UPDATE u SET n = n + 1; DELETE FROM v; END; CREATE INDEX i ON t (a)`: schema.Additive,
		`DROP TABLE t`:                           schema.Destructive,
		`drop index i`:                           schema.Additive,
		`DROP TRIGGER g`:                         schema.Destructive,
		`DROP VIEW v`:                            schema.Destructive,
		`ALTER TABLE t RENAME TO u`:              schema.Destructive,
		`ALTER TABLE t RENAME COLUMN a TO b`:     schema.Destructive,
		`ALTER TABLE t DROP COLUMN a`:            schema.Destructive,
		`CREATE TABLE u (a); UPDATE t SET a = 1`: schema.Destructive,
		`DELETE FROM t`:                          schema.Destructive,
	} {
		m := schema.Migration{Version: 1, Name: "m", SQL: sql}
		got, _ := m.Class()
		require.Equal(t, want, got, sql)
		if want == schema.Destructive {
			require.ErrorContains(t, m.Check(), "migration 1_m is destructive", sql)
			m.Destructive = true
		}
		require.NoError(t, m.Check(), sql)
	}
}

// Stile's own migrations only add, so that an older Stile keeps serving
// over them, but for those that say why they cannot (a first line
// "-- destructive: why"): an older Stile refuses to serve over those.
func TestStileMigrationsAreAdditiveOrSayWhy(t *testing.T) {
	for _, m := range schema.Migrations() {
		class, why := m.Class()
		if m.Destructive {
			require.Equal(t, schema.Destructive, class, "%d_%s says it is destructive, and is not", m.Version, m.Name)
			continue
		}
		require.Equal(t, schema.Additive, class, "%d_%s: %s", m.Version, m.Name, why)
	}
}
