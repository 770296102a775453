package inboxstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/inbox"
	"github.com/stile-run/stile/runtime/internal/inboxstore"
)

// A replay in slices hands the handler its events again in event order:
// claims get nothing past the replay's position (not a delivery still
// open from before, not a new event) until it ends, and a delivery still
// open is delivered once, not twice.
func TestReplayInSlicesKeepsEventOrder(t *testing.T) {
	t.Parallel()
	f := open(t)
	f.append("a", "a", "a", "a", "a", "a")
	h := audit
	h.FromStart = true
	require.NoError(t, f.s.Sync(0, []inboxstore.Handler{h}))
	settle := func(ds []inboxstore.Delivery) {
		t.Helper()
		for _, d := range ds {
			require.NoError(t, f.db.Tx(func() error { return f.s.Succeed(0, d.Entry) }))
		}
	}
	settle(f.claim(0, "w", h, 2))
	settle(f.claim(0, "w", h, 2))
	last := f.claim(0, "w", h, 2)
	require.Equal(t, []int64{5, 6}, seqsOf(last))
	settle(last[:1])
	require.NoError(t, f.db.Tx(func() error { return f.s.Retry(0, last[1].Entry, 0, 1, "down") }), "event 6 waits for a retry")
	f.append("a") // 7: never delivered

	replay := func(after int64) inboxstore.Reopened {
		t.Helper()
		var r inboxstore.Reopened
		require.NoError(t, f.db.Tx(func() error {
			held, err := f.s.InFlightAfter(0, h.Name, after)
			require.Zero(t, held)
			if err != nil {
				return err
			}
			if r, err = f.s.Reopen(0, h, after, 6, 2); err != nil {
				return err
			}
			return f.s.MoveReplay(0, h.Name, after, r.Last, !r.More)
		}))
		return r
	}
	require.NoError(t, f.db.Tx(func() error { return f.s.HoldForReplay(0, h.Name, 1) }))
	require.ErrorContains(t, f.db.Tx(func() error { return f.s.HoldForReplay(0, h.Name, 1) }), "guard", "one replay at a time")
	require.Empty(t, f.claim(0, "w", h, 2), "held at the replay's start: 6 and 7 wait")

	r := replay(1)
	require.Equal(t, inboxstore.Reopened{Found: 2, Reopened: 2, Last: 3, More: true}, r)
	again := f.claim(0, "x", h, 10)
	require.Equal(t, []int64{2, 3}, seqsOf(again))
	require.NotEqual(t, last[0].Entry.ClaimID, again[0].Entry.ClaimID)
	require.NoError(t, f.db.Tx(func() error {
		ok, err := f.s.Claimable(0, h)
		require.False(t, ok, "in flight")
		return err
	}))
	settle(again)
	require.Empty(t, f.claim(0, "x", h, 10), "4 is not open yet: 6 and 7 wait behind it")

	r = replay(3)
	require.Equal(t, inboxstore.Reopened{Found: 2, Reopened: 2, Last: 5, More: true}, r)
	again = f.claim(0, "x", h, 10)
	require.Equal(t, []int64{4, 5}, seqsOf(again))
	settle(again)

	r = replay(5)
	require.Equal(t, inboxstore.Reopened{Found: 1, Reopened: 0, Last: 6, FirstOpen: 6}, r, "6 is still open: left as it is")
	e, err := f.s.Entry(h.Name, 6)
	require.NoError(t, err)
	require.Equal(t, inbox.Retry, e.State)
	require.Equal(t, []int64{6, 7}, seqsOf(f.claim(0, "x", h, 10)), "ended: the open delivery, then the new event")
}
