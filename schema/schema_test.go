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
		require.True(t, strings.Contains(m.SQL, "CREATE TABLE") || strings.Contains(m.SQL, "ALTER TABLE"), "%s makes tables", name)
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

	n, drift, err := schema.ApplyChecked(db, "app_ledger", []schema.Migration{m})
	require.NoError(t, err)
	require.Zero(t, n)
	require.Empty(t, drift, "filled in, not drift")
	rows, err := db.Query(`SELECT checksum FROM app_ledger WHERE version = 1`)
	require.NoError(t, err)
	require.True(t, rows.Next())
	require.Equal(t, m.Checksum(), rows.Text(0))

	changed := m
	changed.SQL = `CREATE TABLE a (x INTEGER, y TEXT) STRICT`
	n, drift, err = schema.ApplyChecked(db, "app_ledger", []schema.Migration{changed})
	require.NoError(t, err)
	require.Zero(t, n, "not run again")
	require.Equal(t, []schema.Drift{{Version: 1, Name: "a", Applied: m.Checksum(), Current: changed.Checksum()}}, drift)
}
