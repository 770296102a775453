package fencestore_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/host/dosql/dosqltest"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// A tenant's distinct queue names are bounded: an enqueue or a pause that
// names one more is refused, a known one always goes, and a new instance
// counts what is stored.
func TestQueueNamesAreBounded(t *testing.T) {
	db := dosqltest.Open(t)
	s := fencestore.New(db, nil)
	s.MaxQueues = 3
	const now = 10_000
	tx(t, db, func() error {
		_, err := s.Enqueue(now, []fencestore.NewJob{in("a", "x", 0, ""), in("b", "x", 0, "")})
		if err != nil {
			return err
		}
		return s.SetPaused(now, "c", true)
	})
	refused := func(err error) {
		t.Helper()
		var e *api.Error
		require.True(t, errors.As(err, &e), "%v", err)
		require.Equal(t, api.CodeTooManyQueues, e.Code)
		require.Contains(t, e.Message, "over the limit of 3")
	}
	refused(db.Tx(func() error { _, err := s.Enqueue(now, []fencestore.NewJob{in("d", "x", 0, "")}); return err }))
	refused(db.Tx(func() error { return s.SetPaused(now, "e", true) }))
	tx(t, db, func() error {
		_, err := s.Enqueue(now, []fencestore.NewJob{in("a", "x", 0, ""), in("c", "x", 0, "")})
		return err
	})

	fresh := fencestore.New(db, nil)
	fresh.MaxQueues = 3
	refused(db.Tx(func() error { _, err := fresh.Enqueue(now, []fencestore.NewJob{in("d", "x", 0, "")}); return err }))
}

// A commit's wake names the queues and kinds that got ready jobs, so that
// only the held claims they may satisfy look again.
func TestWokeSaysWhichQueuesAndKinds(t *testing.T) {
	db := dosqltest.Open(t)
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
