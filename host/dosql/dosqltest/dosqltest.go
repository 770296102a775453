// Package dosqltest gives a test a tenant database as a Durable Object runs
// it: a real SQLite file behind package dosql (its refusals and limits),
// with Stile's migrations applied, in the test's temporary directory,
// behind the same do.DB the tenant module uses.
//
// The stores' tests under runtime/internal import it.
package dosqltest

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql"
	"github.com/stile-run/stile/schema"
)

// Open returns a migrated tenant database, closed when t ends. Its clock
// reads 1: the stores take time as arguments.
func Open(t testing.TB) *do.DB {
	t.Helper()
	sq, err := dosql.Open(filepath.Join(t.TempDir(), "tenant.sqlite"))
	require.NoError(t, err)
	t.Cleanup(func() { sq.Close() })
	db := do.NewDB(dosql.Host(sq, func() int64 { return 1 }))
	_, err = schema.Apply(db, schema.Ledger, schema.Migrations())
	require.NoError(t, err)
	return db
}

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
