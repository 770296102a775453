package fencestore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/host/dosql/dosqltest"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// The store's statements are planned once and reused whatever they are
// bound to: a LIMIT bound as a parameter would make SQLite plan the claim
// again at every run (about a tenth of a request's time).
func TestStatementsArePlannedOnce(t *testing.T) {
	db, sq := dosqltest.OpenSQL(t)
	s := fencestore.New(db, nil)
	s.Limits = map[string]int{"k": 2}
	var batch []fencestore.NewJob
	for range 10 {
		batch = append(batch, in("a", "x", 0, ""), in("b", "x", 0, ""), in("a", "x", 0, "k"))
	}
	tx(t, db, func() error { _, err := s.Enqueue(t0, batch); return err })
	for round := range 3 {
		now := t0 + int64(round)*5000
		tx(t, db, func() error {
			_, err := s.ApplyDue(now, "alarm", func() float64 { return 0 })
			return err
		})
		for _, req := range []fencestore.ClaimRequest{
			{Worker: "w", Queues: []string{"b"}, Limit: 1 + round},                       // one queue, no key with room
			{Worker: "w", Queues: []string{"b"}, Limit: 2 + round, MaxBytes: 1 << 20},    // the same, within bytes
			{Worker: "w", Queues: []string{"a", "b"}, Limit: 1 + round},                  // queue by queue, with the key
			{Worker: "w", Queues: []string{"*"}, Limit: 1 + round, Kinds: []string{"x"}}, // every queue
		} {
			tx(t, db, func() error { _, _, err := s.Claim(now, req); return err })
		}
		tx(t, db, func() error {
			if _, _, err := s.List(fencestore.ListFilter{State: "available", Limit: 2 + round}); err != nil {
				return err
			}
			if _, _, err := s.Ready(now, 3+round); err != nil {
				return err
			}
			if _, err := s.DueSchedules(now, 4+round); err != nil {
				return err
			}
			_, err := s.Unregistered([]string{"x"}, 5+round)
			return err
		})
	}
	require.Zero(t, sq.Replanned(), "no kept statement was planned again")
}
