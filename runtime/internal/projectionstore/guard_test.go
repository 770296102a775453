package projectionstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql/dosqltest"
	"github.com/stile-run/stile/projection"
	"github.com/stile-run/stile/runtime/internal/projectionstore"
)

// Each write of a generation is guarded by what its caller read: the
// checkpoint (and, for a promotion, the building role). A write planned
// against anything else is do.ErrGuard and changes nothing; one that holds
// changes only what it says.
func TestGenerationWritesAreGuarded(t *testing.T) {
	t.Parallel()
	const now = 100
	type write func(s *projectionstore.Store) error
	// Decisions of projection.AfterBatch for a batch read after 5.
	advancedThenStalled := projection.Next{Advanced: true, Failed: true,
		Checkpoint: projection.Checkpoint{Seq: 8, Failures: 1, RetryAt: 900, ErrorSeq: 9, Error: "event 9: boom"}}
	stalledAgain := projection.Next{Failed: true,
		Checkpoint: projection.Checkpoint{Seq: 5, Failures: 2, RetryAt: 900, ErrorSeq: 6, Error: "event 6: again"}}
	readNothing := projection.Next{AtHead: true,
		Checkpoint: projection.Checkpoint{Seq: 5, Failures: 1, RetryAt: 500, ErrorSeq: 6, Error: "first"}}
	for _, tc := range []struct {
		name  string
		write write
		ok    bool
		want  func(g projectionstore.Generation) projectionstore.Generation // the live generation after
		// decided, for a Record, is the decision it wrote.
		decided *projection.Next
	}{
		{name: "advance from the checkpoint read", ok: true,
			write: func(s *projectionstore.Store) error { return s.Advance(now, "orders", 1, 5, 9) },
			want:  func(g projectionstore.Generation) projectionstore.Generation { return g.Advanced(now, 9) }},
		{name: "advance from a checkpoint that moved",
			write: func(s *projectionstore.Store) error { return s.Advance(now, "orders", 1, 4, 9) }},
		{name: "advance of a generation that does not exist",
			write: func(s *projectionstore.Store) error { return s.Advance(now, "orders", 3, 5, 9) }},
		{name: "stall at the checkpoint read", ok: true,
			write: func(s *projectionstore.Store) error { return s.Stall(now, "orders", 1, 5, 6, 2, 900, "boom") },
			want: func(g projectionstore.Generation) projectionstore.Generation {
				g.Failures, g.RetryAt, g.Error, g.ErrorSeq, g.UpdatedAt = 2, 900, "boom", 6, now
				return g
			}},
		{name: "stall at a checkpoint that moved",
			write: func(s *projectionstore.Store) error { return s.Stall(now, "orders", 1, 6, 7, 1, 900, "boom") }},
		{name: "record a batch that advanced, then stalled", ok: true,
			write:   func(s *projectionstore.Store) error { return s.Record(now, "orders", 1, 5, advancedThenStalled) },
			decided: &advancedThenStalled,
			want: func(g projectionstore.Generation) projectionstore.Generation {
				g.Checkpoint, g.Failures, g.RetryAt, g.Error, g.ErrorSeq, g.UpdatedAt = 8, 1, 900, "event 9: boom", 9, now
				return g
			}},
		{name: "record a batch that stalled again where it was", ok: true,
			write:   func(s *projectionstore.Store) error { return s.Record(now, "orders", 1, 5, stalledAgain) },
			decided: &stalledAgain,
			want: func(g projectionstore.Generation) projectionstore.Generation {
				g.Failures, g.RetryAt, g.Error, g.ErrorSeq, g.UpdatedAt = 2, 900, "event 6: again", 6, now
				return g
			}},
		{name: "record a batch that read nothing", ok: true,
			write:   func(s *projectionstore.Store) error { return s.Record(now, "orders", 1, 5, readNothing) },
			decided: &readNothing,
			want:    func(g projectionstore.Generation) projectionstore.Generation { return g }},
		{name: "record a batch read after a checkpoint that moved",
			write: func(s *projectionstore.Store) error { return s.Record(now, "orders", 1, 4, advancedThenStalled) }},
		{name: "promote the building generation at the checkpoint read", ok: true,
			write: func(s *projectionstore.Store) error {
				if err := s.Delete("orders", 1); err != nil { // the caller deletes the live one first
					return err
				}
				return s.Promote(now, "orders", 2, 3)
			}},
		{name: "promote the building generation from a checkpoint that moved",
			write: func(s *projectionstore.Store) error { return s.Promote(now, "orders", 2, 2) }},
		{name: "promote a live generation",
			write: func(s *projectionstore.Store) error { return s.Promote(now, "orders", 1, 5) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, s := open(t)
			// Generation 1 is live at 5, stalled on event 6; 2 is building at 3.
			require.NoError(t, s.Create(1, "orders", 1, projectionstore.Live, "f1", []string{"rows"}))
			require.NoError(t, s.Advance(2, "orders", 1, 0, 5))
			require.NoError(t, s.Stall(3, "orders", 1, 5, 6, 1, 500, "first"))
			require.NoError(t, s.Create(4, "orders", 2, projectionstore.Building, "f2", []string{"rows"}))
			require.NoError(t, s.Advance(5, "orders", 2, 0, 3))
			const all = `SELECT * FROM stile_projection_generations ORDER BY generation`
			before := dosqltest.Rows(t, db, all)
			live, _, err := s.Get("orders", 1)
			require.NoError(t, err)
			building, _, err := s.Get("orders", 2)
			require.NoError(t, err)

			err = db.Tx(func() error { return tc.write(s) })

			if !tc.ok {
				require.ErrorIs(t, err, do.ErrGuard)
				require.Equal(t, before, dosqltest.Rows(t, db, all), "a write planned against another state changes nothing")
				return
			}
			require.NoError(t, err)
			g1, ok1, err := s.Get("orders", 1)
			require.NoError(t, err)
			g2, _, err := s.Get("orders", 2)
			require.NoError(t, err)
			if tc.want != nil {
				require.Equal(t, tc.want(live), g1)
				if tc.decided != nil {
					require.Equal(t, live.After(now, *tc.decided), g1, "After derives what Record stores")
				}
				require.Equal(t, building, g2, "the other generation is untouched")
				return
			}
			promoted := building
			promoted.Role, promoted.UpdatedAt = projectionstore.Live, now
			require.Equal(t, promoted, g2)
			require.False(t, ok1)
		})
	}
}

// All lists every generation by name, the live one first; Next numbers a
// new one after the highest there is; Tables reads what a generation was
// made with.
func TestGenerationsAreListedAndNumbered(t *testing.T) {
	t.Parallel()
	_, s := open(t)
	n, err := s.Next("orders")
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.NoError(t, s.Create(1, "orders", 1, projectionstore.Live, "f1", []string{"rows"}))
	require.NoError(t, s.Create(2, "orders", 2, projectionstore.Building, "f2", nil))
	require.NoError(t, s.Create(3, "carts", 1, projectionstore.Live, "f3", []string{"a", "b"}))
	all, err := s.All()
	require.NoError(t, err)
	var got [][3]any
	for _, g := range all {
		got = append(got, [3]any{g.Name, g.Generation, g.Role})
	}
	require.Equal(t, [][3]any{{"carts", int64(1), projectionstore.Live}, {"orders", int64(1), projectionstore.Live},
		{"orders", int64(2), projectionstore.Building}}, got)

	tables, known, err := s.Tables("orders", 2)
	require.NoError(t, err)
	require.True(t, known)
	require.Empty(t, tables, "a generation with no tables")
	_, known, err = s.Tables("orders", 9)
	require.NoError(t, err)
	require.False(t, known)

	require.NoError(t, s.Delete("orders", 2))
	_, ok, err := s.Get("orders", 2)
	require.NoError(t, err)
	require.False(t, ok)
	n, err = s.Next("orders")
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
}
