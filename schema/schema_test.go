package schema_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql"
	"github.com/stile-run/stile/schema"
)

// dbHost is a do.Host over a dosql.DB, enough for migrations.
type dbHost struct{ db *dosql.DB }

func (h dbHost) Query(sql string, p []byte) ([]byte, error) { return h.db.Query(sql, p) }
func (h dbHost) Now() int64                                 { return 1 }
func (h dbHost) Log(do.Level, string)                       {}
func (h dbHost) Tx(body func() error) error {
	if err := h.db.Begin(); err != nil {
		return err
	}
	if err := body(); err != nil {
		h.db.Rollback()
		return err
	}
	return h.db.Commit()
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
	db := do.NewDB(dbHost{sq})
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
	db := do.NewDB(dbHost{sq})
	bad := []schema.Migration{{Version: 1, Name: "bad", SQL: "CREATE TABLE x (a); CREATE TABLE x (a)"}}
	_, err = schema.Apply(db, "ledger", bad)
	require.ErrorContains(t, err, "apply migration 1_bad")
	rows, err := db.Query(`SELECT count(*) FROM sqlite_master WHERE name = 'x'`)
	require.NoError(t, err)
	require.True(t, rows.Next())
	require.Zero(t, rows.Int(0), "the migration's transaction rolled back")
}
