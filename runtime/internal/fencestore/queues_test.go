package fencestore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/runtime/internal/fencestore"
	"github.com/stile-run/stile/runtime/internal/storetest"
)

// A commit's wake names the queues and kinds that got ready jobs, so that
// only the held claims they may satisfy look again.
func TestWokeSaysWhichQueuesAndKinds(t *testing.T) {
	db := storetest.Open(t)
	s := fencestore.New(db, nil)
	const now = 10_000
	require.False(t, s.Woke().Any)
	tx(t, db, func() error {
		_, err := s.Enqueue(now, []fencestore.NewJob{in("a", "x", 0, ""), in("b", "y", 0, ""), in("a", "y", 0, "")})
		return err
	})
	w := s.Woke()
	require.True(t, w.Any)
	require.False(t, w.All)
	require.Equal(t, []string{"a", "b"}, w.Queues)
	require.Equal(t, []string{"x", "y"}, w.Kinds)
	require.False(t, s.Woke().Any, "Woke forgets")

	tx(t, db, func() error { return s.SetPaused(now, "c", false) })
	w = s.Woke()
	require.Equal(t, []string{"c"}, w.Queues)
	require.True(t, w.AnyKind, "a resumed queue's jobs of any kind")
}
