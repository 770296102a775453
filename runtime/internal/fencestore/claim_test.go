package fencestore_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/host/dosql/dosqltest"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

func in(queue, kind string, priority int, key string) fencestore.NewJob {
	j := job(kind)
	j.Queue, j.Priority, j.ConcurrencyKey = queue, priority, key
	return j
}

func queuesOf(js []fencestore.Job) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.Queue+"/"+j.Kind)
	}
	return out
}

// A claim of every queue ("*") takes ready jobs from each queue that has
// some, in the claim order, through free concurrency slots only, and none
// from a paused queue; MoreReady says whether it left any.
func TestAClaimOfEveryQueue(t *testing.T) {
	db := dosqltest.Open(t)
	s := fencestore.New(db, nil)
	s.Limits = map[string]int{"k": 1}
	const now = 10_000
	tx(t, db, func() error {
		_, err := s.Enqueue(now, []fencestore.NewJob{in("b", "x", 2, ""), in("a", "x", 1, ""), in("c", "x", 0, ""),
			in("d", "x", 0, "k"), in("d", "x", 0, "k"), in("a", "y", 0, "")})
		if err != nil {
			return err
		}
		return s.SetPaused(now, "c", true)
	})
	any := fencestore.ClaimRequest{Worker: "w", Queues: []string{api.AnyQueue}, Kinds: []string{"x"}, Limit: 2}
	var got []fencestore.Job
	tx(t, db, func() error {
		var err error
		got, _, err = s.Claim(now, any)
		return err
	})
	require.Equal(t, []string{"d/x", "a/x"}, queuesOf(got), "priority first, across queues; one of the key's two jobs")
	more := false
	tx(t, db, func() (err error) { more, err = s.MoreReady(now, any); return })
	require.True(t, more, "b's job is left")

	any.Limit = 10
	tx(t, db, func() error {
		var err error
		got, _, err = s.Claim(now, any)
		return err
	})
	require.Equal(t, []string{"b/x"}, queuesOf(got), "not the paused queue's, not a full key's, not another kind")
	tx(t, db, func() (err error) { more, err = s.MoreReady(now, any); return })
	require.False(t, more)

	total, counts := int64(0), []fencestore.ReadyCount(nil)
	tx(t, db, func() (err error) { total, counts, err = s.Ready(now, 1000); return })
	require.Equal(t, int64(1), total, "a's y job; c is paused, and the key is full")
	require.Equal(t, []fencestore.ReadyCount{{Queue: "a", Kind: "y", Count: 1}}, counts)
}

// Every queue is the first MaxAnyQueues queues with ready jobs, by name,
// paused queues passed over rather than counted.
func TestEveryQueueReadsPastPausedOnes(t *testing.T) {
	db := dosqltest.Open(t)
	s := fencestore.New(db, nil)
	const now = 10_000
	var js []fencestore.NewJob
	const queues, paused = fencestore.MaxAnyQueues + 30, 20
	for i := range queues {
		js = append(js, in(fmt.Sprintf("q%03d", i), "x", 0, ""))
	}
	tx(t, db, func() error {
		if _, err := s.Enqueue(now, js); err != nil {
			return err
		}
		for i := range paused {
			if err := s.SetPaused(now, fmt.Sprintf("q%03d", i), true); err != nil {
				return err
			}
		}
		return nil
	})
	var got []fencestore.Job
	tx(t, db, func() error {
		var err error
		got, _, err = s.Claim(now, fencestore.ClaimRequest{Worker: "w", Queues: []string{api.AnyQueue}, Limit: 100})
		return err
	})
	qs := queuesOf(got)
	require.Len(t, qs, fencestore.MaxAnyQueues, "the cap counts only queues a claim may take from")
	slices.Sort(qs)
	require.Equal(t, fmt.Sprintf("q%03d/x", paused), qs[0], "the paused ones were passed over")
	require.Equal(t, fmt.Sprintf("q%03d/x", paused+fencestore.MaxAnyQueues-1), qs[len(qs)-1])
	total := int64(0)
	tx(t, db, func() (err error) { total, _, err = s.Ready(now, 1000); return })
	require.Equal(t, int64(queues-paused-fencestore.MaxAnyQueues), total, "the next claim takes the rest")
}

// A claim stops at its byte budget, one job going whatever its size, and
// says when it left ready jobs for that reason: along the one-statement
// path (one queue) and the other (every queue) alike.
func TestAClaimStopsAtItsByteBudget(t *testing.T) {
	for _, queues := range [][]string{{"default"}, {api.AnyQueue}} {
		t.Run(queues[0], func(t *testing.T) {
			db := dosqltest.Open(t)
			s := fencestore.New(db, nil)
			const now = 10_000
			var js []fencestore.NewJob
			for range 5 {
				j := job("x")
				j.Args = []byte(`"` + strings.Repeat("a", 998) + `"`) // 1,000 bytes, 1,258 in a claim
				js = append(js, j)
			}
			tx(t, db, func() error { _, err := s.Enqueue(now, js); return err })
			claim := func(maxBytes int64) (n int, cut bool) {
				tx(t, db, func() error {
					got, c, err := s.Claim(now, fencestore.ClaimRequest{Worker: "w", Queues: queues, Limit: 10, MaxBytes: maxBytes})
					n, cut = len(got), c
					return err
				})
				return n, cut
			}
			n, cut := claim(2600)
			require.Equal(t, 2, n, "two jobs fit 2,600 bytes")
			require.True(t, cut, "three are left")
			n, cut = claim(100)
			require.Equal(t, 1, n, "one job goes whatever its size")
			require.True(t, cut)
			n, cut = claim(1 << 20)
			require.Equal(t, 2, n)
			require.False(t, cut, "none is left: the claim was short of ready jobs, not of bytes")
		})
	}
}
