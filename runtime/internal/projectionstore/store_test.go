package projectionstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql/dosqltest"
	"github.com/stile-run/stile/runtime/internal/projectionstore"
)

func open(t *testing.T) (*do.DB, *projectionstore.Store) {
	db := dosqltest.Open(t)
	return db, projectionstore.New(db)
}

// A batch planned against a checkpoint that moved since (a reset, a
// rebuild, another writer) commits nothing: its rows roll back with it.
func TestABatchWhoseCheckpointMovedRollsBack(t *testing.T) {
	t.Parallel()
	db, s := open(t)
	// No key on seq: a batch applied twice would show as duplicate rows.
	require.NoError(t, db.Exec(`CREATE TABLE rows (seq INTEGER NOT NULL)`))
	require.NoError(t, s.Create(1, "orders", 1, projectionstore.Live, "f", []string{"rows"}))

	batch := func(planned, to int64) error {
		return db.Tx(func() error {
			for q := planned + 1; q <= to; q++ {
				if err := db.Exec(`INSERT INTO rows (seq) VALUES (?)`, q); err != nil {
					return err
				}
			}
			return s.Advance(2, "orders", 1, planned, to)
		})
	}
	require.NoError(t, batch(0, 5))
	// Planned from checkpoint 0 again (a stale read): refused, and its
	// rows roll back with it: nothing is applied twice.
	require.ErrorIs(t, batch(0, 5), do.ErrGuard)
	rows, err := db.Query(`SELECT count(*) FROM rows`)
	require.NoError(t, err)
	rows.Next()
	require.Equal(t, int64(5), rows.Int(0))
	g, ok, err := s.Get("orders", 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(5), g.Checkpoint)

	// A stall is guarded the same way, and an advance clears it.
	require.ErrorIs(t, s.Stall(4, "orders", 1, 4, 6, 1, 100, "boom"), do.ErrGuard)
	require.NoError(t, s.Stall(4, "orders", 1, 5, 6, 1, 100, "boom"))
	g, _, _ = s.Get("orders", 1)
	require.True(t, g.Stalled())
	require.Equal(t, int64(6), g.ErrorSeq)
	stalled := g
	require.NoError(t, s.Advance(5, "orders", 1, 5, 6))
	g, _, _ = s.Get("orders", 1)
	require.False(t, g.Stalled())
	require.Equal(t, stalled.Advanced(5, 6), g, "Advanced derives what Advance stores")
	require.Empty(t, g.Error)

	// Only a building generation at the checkpoint read is promoted.
	require.NoError(t, s.Create(6, "orders", 2, projectionstore.Building, "g", []string{"rows", "totals"}))
	tables, known, err := s.Tables("orders", 2)
	require.NoError(t, err)
	require.True(t, known)
	require.Equal(t, []string{"rows", "totals"}, tables, "a generation keeps the tables it was made with")
	require.ErrorIs(t, s.Promote(7, "orders", 2, 3), do.ErrGuard)
	require.NoError(t, s.Delete("orders", 1))
	require.NoError(t, s.Promote(7, "orders", 2, 0))
	n, err := s.Next("orders")
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
}
