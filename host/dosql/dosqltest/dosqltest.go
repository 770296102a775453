// Package dosqltest gives a test a tenant database as a Durable Object runs
// it: a real SQLite file behind package dosql (its refusals and limits),
// with Stile's migrations applied, in the test's temporary directory,
// behind the same do.DB the tenant module uses.
//
// The stores' tests under runtime/internal import it.
package dosqltest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql"
	"github.com/stile-run/stile/schema"
)

// Open returns a migrated tenant database, closed when t ends. Its clock
// reads 1: the stores take time as arguments.
//
// The migrations run once per test binary, and each database starts as a
// copy of that file (running them takes a tenth of a second, a copy
// nothing), so every database of a run has the same stile_identity.
func Open(t testing.TB) *do.DB {
	t.Helper()
	db, _ := OpenSQL(t)
	return db
}

// OpenSQL is Open, with the SQLite connection under the do.DB too, for a
// test of what the statements cost.
func OpenSQL(t testing.TB) (*do.DB, *dosql.DB) {
	t.Helper()
	image, err := migrated()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "tenant.sqlite")
	require.NoError(t, os.WriteFile(path, image, 0o600))
	sq, err := dosql.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { sq.Close() })
	return do.NewDB(dosql.Host(sq, func() int64 { return 1 })), sq
}

// migrated is the file of a database with Stile's migrations applied,
// made once.
var migrated = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "dosqltest")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tenant.sqlite")
	sq, err := dosql.Open(path)
	if err != nil {
		return nil, err
	}
	if _, err := schema.Apply(do.NewDB(dosql.Host(sq, func() int64 { return 1 })), schema.Ledger, schema.Migrations()); err != nil {
		sq.Close()
		return nil, err
	}
	// Close checkpoints the write-ahead log into the file.
	if err := sq.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
})

// Rows runs a query and returns its rows as Go values (nil, int64, float64,
// or string for text and blobs), for a test to compare what a store wrote
// with what it expects, or with what was there before.
func Rows(t testing.TB, db *do.DB, sql string, args ...any) [][]any {
	t.Helper()
	rows, err := db.Query(sql, args...)
	require.NoError(t, err)
	var out [][]any
	for rows.Next() {
		row := make([]any, rows.Columns())
		for i := range row {
			switch v := rows.Value(i); v.Kind {
			case do.KindInt:
				row[i] = v.Int
			case do.KindFloat:
				row[i] = v.Float
			case do.KindText, do.KindBlob:
				row[i] = string(v.Bytes)
			}
		}
		out = append(out, row)
	}
	require.NoError(t, rows.Err())
	return out
}
