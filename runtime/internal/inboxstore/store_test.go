package inboxstore_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql/dosqltest"
	"github.com/stile-run/stile/inbox"
	"github.com/stile-run/stile/runtime/internal/eventstore"
	"github.com/stile-run/stile/runtime/internal/inboxstore"
)

type fixture struct {
	t  *testing.T
	db *do.DB
	ev *eventstore.Store
	s  *inboxstore.Store
}

func open(t *testing.T) *fixture {
	db := dosqltest.Open(t)
	ev := eventstore.New(db)
	return &fixture{t: t, db: db, ev: ev, s: inboxstore.New(db, ev, nil)}
}

func (f *fixture) append(types ...string) {
	f.t.Helper()
	for _, typ := range types {
		_, _, _, err := f.ev.Append(0, "s", eventstore.Any, []eventstore.Draft{{Type: typ}}, "")
		require.NoError(f.t, err)
	}
}

func (f *fixture) claim(now int64, worker string, h inboxstore.Handler, limit int) []inboxstore.Delivery {
	f.t.Helper()
	var ds []inboxstore.Delivery
	require.NoError(f.t, f.db.Tx(func() error {
		var err error
		ds, err = f.s.Claim(now, worker, []inboxstore.Handler{h}, limit, 0)
		return err
	}))
	return ds
}

func seqsOf(ds []inboxstore.Delivery) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.Event.Seq
	}
	return out
}

// timeout 1 s: a claim's first delivery is held 2 s, its second 4 s.
var audit = inboxstore.Handler{Name: "audit", Kind: api.ReactionKindPolicy, Types: []string{"a", "b"}, TimeoutMs: 1_000, Batch: 2}

// A new handler starts at the log's head, or at its start with FromStart;
// registering again keeps the checkpoint it has.
func TestSyncStartsNewHandlersAtTheHead(t *testing.T) {
	t.Parallel()
	f := open(t)
	f.append("a", "a")
	fromStart := inboxstore.Handler{Name: "replay", Types: []string{"a"}, TimeoutMs: 1_000, FromStart: true}
	require.NoError(t, f.s.Sync(0, []inboxstore.Handler{audit, fromStart}))
	cp, err := f.s.Checkpoint("audit")
	require.NoError(t, err)
	require.Equal(t, int64(2), cp)
	cp, err = f.s.Checkpoint("replay")
	require.NoError(t, err)
	require.Equal(t, int64(0), cp)
	require.Equal(t, []int64{1}, seqsOf(f.claim(0, "w", fromStart, 1)))

	f.append("a")
	require.NoError(t, f.s.Sync(0, []inboxstore.Handler{audit, fromStart}))
	cp, err = f.s.Checkpoint("audit")
	require.NoError(t, err)
	require.Equal(t, int64(2), cp, "registering again moves nothing")
	_, err = f.s.Checkpoint("nope")
	require.ErrorIs(t, err, do.ErrNoRow)
}

// The inbox's rules, one write at a time: deliveries in event order, of
// the handler's types only; nothing overtakes an open head; a lease that
// ran out is taken over under a new claim id, and the old claim's settle
// is stale; a failure waits for its backoff and puts back the rest of its
// claim.
func TestInboxClaimsInOrderAndFencesSettlesByClaimID(t *testing.T) {
	t.Parallel()
	f := open(t)
	require.NoError(t, f.s.Sync(0, []inboxstore.Handler{audit}))
	f.append("a", "other", "b", "a", "b")

	first := f.claim(100, "w1", audit, 10)
	require.Equal(t, []int64{1, 3}, seqsOf(first), "a batch of 2, types a and b only")
	require.Equal(t, int64(100+2_000), first[0].Entry.LeaseUntil)
	require.Equal(t, int64(100+4_000), first[1].Entry.LeaseUntil, "the second waits behind the first")
	require.NotEqual(t, first[0].Entry.ClaimID, first[1].Entry.ClaimID)
	require.Empty(t, f.claim(200, "w2", audit, 10), "events 4 and 5 wait behind the open head")
	next, err := f.s.NextDue()
	require.NoError(t, err)
	require.Equal(t, int64(2_100), next, "the earliest lease")

	// w1 stalls; at 2,100 its first lease ran out and w2 takes over the
	// whole run, with new claim ids and the next attempt.
	again := f.claim(2_100, "w2", audit, 10)
	require.Equal(t, []int64{1, 3}, seqsOf(again))
	for i, d := range again {
		require.NotEqual(t, first[i].Entry.ClaimID, d.Entry.ClaimID)
		require.Equal(t, int64(2), d.Entry.Attempt)
		require.Equal(t, "w2", d.Entry.Worker)
	}
	// w1's settle names a claim that is gone: refused, nothing written.
	require.ErrorIs(t, f.db.Tx(func() error { return f.s.Succeed(2_200, first[0].Entry) }), do.ErrGuard)
	e, err := f.s.Entry("audit", 1)
	require.NoError(t, err)
	require.Equal(t, inbox.Pending, e.State)
	require.Equal(t, again[0].Entry.ClaimID, e.ClaimID)

	// w2's settles commit, once.
	require.NoError(t, f.db.Tx(func() error { return f.s.Succeed(2_200, again[0].Entry) }))
	require.ErrorIs(t, f.db.Tx(func() error { return f.s.Succeed(2_200, again[0].Entry) }), do.ErrGuard, "a second settle is stale")
	// Event 3 fails: it waits for its backoff; nothing overtakes it.
	require.NoError(t, f.db.Tx(func() error { return f.s.Retry(2_300, again[1].Entry, 5_000, 1, "provider down") }))
	require.Empty(t, f.claim(4_999, "w3", audit, 10))
	next, err = f.s.NextDue()
	require.NoError(t, err)
	require.Equal(t, int64(5_000), next)
	retried := f.claim(5_000, "w3", audit, 10)
	require.Equal(t, []int64{3, 4}, seqsOf(retried), "the retry, then the next new event in the same run")
	require.Equal(t, int64(1), retried[0].Entry.Failures)
	require.Equal(t, int64(3), retried[0].Entry.Attempt)

	// A failure of the head puts back the delivery handed out after it:
	// the next claim starts at the head again.
	require.NoError(t, f.db.Tx(func() error { return f.s.Retry(5_100, retried[0].Entry, 6_000, 2, "still down") }))
	e, err = f.s.Entry("audit", 4)
	require.NoError(t, err)
	require.Equal(t, inbox.Ready, e.State)
	earlier, err := f.s.EarlierOpen("audit", 4)
	require.NoError(t, err)
	require.True(t, earlier, "a success of event 4 now would overtake event 3: settles refuse it (out_of_order)")
	require.Equal(t, []int64{3, 4}, seqsOf(f.claim(6_000, "w4", audit, 10)))
}

// Skipping the open head lets the handler go on; only the head can be
// skipped.
func TestSkipTheHead(t *testing.T) {
	t.Parallel()
	f := open(t)
	one := audit
	one.Batch = 1
	require.NoError(t, f.s.Sync(0, []inboxstore.Handler{one}))
	f.append("a", "a")
	d := f.claim(0, "w", one, 1)
	require.Equal(t, []int64{1}, seqsOf(d))
	var skipped bool
	require.NoError(t, f.db.Tx(func() (err error) { skipped, err = f.s.Skip(10, "audit", 2, "not the head"); return }))
	require.False(t, skipped)
	require.NoError(t, f.db.Tx(func() (err error) { skipped, err = f.s.Skip(10, "audit", 1, "poison"); return }))
	require.True(t, skipped)
	e, err := f.s.Entry("audit", 1)
	require.NoError(t, err)
	require.Equal(t, inbox.Skipped, e.State)
	require.Equal(t, "skipped: poison", e.Error)
	require.ErrorIs(t, f.db.Tx(func() error { return f.s.Succeed(20, d[0].Entry) }), do.ErrGuard)
	require.Equal(t, []int64{2}, seqsOf(f.claim(20, "w", one, 1)))
}

// An aggregate's override applies to the events of its streams: each
// delivery carries its own time limit, and a claim's leases add twice
// each limit in turn.
func TestOverridesSetEachDeliverysTimeLimit(t *testing.T) {
	t.Parallel()
	f := open(t)
	h := inboxstore.Handler{Name: "audit", Types: []string{"a"}, TimeoutMs: 1_000, Batch: 3,
		Overrides: func(agg string) int64 { return map[string]int64{"bulk": 5_000}[agg] }}
	require.Equal(t, int64(5_000), h.TimeoutOf("bulk:7"))
	require.Equal(t, int64(1_000), h.TimeoutOf("bulk"), "a stream without an id is no aggregate's")
	require.Equal(t, int64(1_000), h.TimeoutOf("bulky:7"))
	require.NoError(t, f.s.Sync(0, []inboxstore.Handler{h}))
	for _, stream := range []string{"order:1", "bulk:1", "notes"} {
		_, _, _, err := f.ev.Append(0, stream, eventstore.Any, []eventstore.Draft{{Type: "a"}}, "")
		require.NoError(t, err)
	}
	check := func(ds []inboxstore.Delivery, at int64) {
		t.Helper()
		require.Equal(t, []int64{1_000, 5_000, 1_000}, []int64{ds[0].TimeoutMs, ds[1].TimeoutMs, ds[2].TimeoutMs})
		require.Equal(t, []int64{at + 2_000, at + 12_000, at + 14_000},
			[]int64{ds[0].Entry.LeaseUntil, ds[1].Entry.LeaseUntil, ds[2].Entry.LeaseUntil})
	}
	check(f.claim(100, "w1", h, 10), 100)
	check(f.claim(2_100, "w2", h, 10), 2_100) // taken over when the first lease ran out
}

// dueLog records what a store tells its due tracker.
type dueLog struct{ added []int64 }

func (d *dueLog) Added(at int64) { d.added = append(d.added, at) }
func (d *dueLog) Removed(int64)  {}
func (d *dueLog) Unknown()       {}

// A command id scheduled again is stored once, and only what was stored
// is reported due: the alarm never waits for a command that is not there.
func TestScheduleAnIDOnce(t *testing.T) {
	t.Parallel()
	f := open(t)
	due := &dueLog{}
	s := inboxstore.New(f.db, f.ev, due)
	require.NoError(t, f.db.Tx(func() error { return s.Schedule(1, "remind", 5_000, []byte(`{"id":"remind"}`), "a") }))
	require.NoError(t, f.db.Tx(func() error { return s.Schedule(2, "remind", 3_000, []byte(`{"id":"remind"}`), "b") }))
	require.Equal(t, []int64{5_000}, due.added)
	next, err := s.NextDue()
	require.NoError(t, err)
	require.Equal(t, int64(5_000), next)
	cmds, err := s.DueCommands(5_000, 10)
	require.NoError(t, err)
	require.Len(t, cmds, 1)
	require.Equal(t, int64(5_000), cmds[0].At, "the first one stays")
}

// Another command under a scheduled id is refused; the same one again is
// stored once.
func TestScheduleRefusesAReusedID(t *testing.T) {
	t.Parallel()
	f := open(t)
	require.NoError(t, f.db.Tx(func() error { return f.s.Schedule(1, "remind", 5_000, []byte(`{"id":"remind","type":"A"}`), "a") }))
	require.NoError(t, f.db.Tx(func() error { return f.s.Schedule(2, "remind", 6_000, []byte(`{"id":"remind","type":"A"}`), "a") }))
	err := f.db.Tx(func() error { return f.s.Schedule(3, "remind", 5_000, []byte(`{"id":"remind","type":"B"}`), "b") })
	require.ErrorIs(t, err, inboxstore.ErrScheduledIDReused)
}

// Claimable says whether a claim would hand the handler a delivery: an
// event waiting past its checkpoint, a lease run out, a retry come due;
// not a run still in flight, nor a retry waiting for its time.
func TestClaimableFollowsWhatAClaimWouldHandOut(t *testing.T) {
	t.Parallel()
	f := open(t)
	require.NoError(t, f.s.Sync(0, []inboxstore.Handler{audit}))
	claimable := func(now int64) bool {
		t.Helper()
		ok, err := f.s.Claimable(now, audit)
		require.NoError(t, err)
		return ok
	}
	require.False(t, claimable(0), "nothing appended")
	f.append("a", "c")
	require.True(t, claimable(0), "an event of its types waits")
	ds := f.claim(0, "w", audit, 1)
	require.Len(t, ds, 1)
	require.False(t, claimable(100), "its run is in flight: the rest waits behind it")
	require.True(t, claimable(ds[0].Entry.LeaseUntil), "the lease ran out: delivered again")

	require.NoError(t, f.db.Tx(func() error { return f.s.Retry(100, ds[0].Entry, 5_000, 1, "boom") }))
	require.False(t, claimable(4_999), "a retry waits for its time")
	require.True(t, claimable(5_000), "and is due then")
}

// A claim over two handlers stops handing out new events at its byte
// budget: the first handler's run is cut where it fills the budget, the
// second gets nothing, and a later claim goes on where each stopped.
func TestAReactionClaimStopsAtItsByteBudget(t *testing.T) {
	t.Parallel()
	f := open(t)
	h1 := inboxstore.Handler{Name: "one", Types: []string{"big"}, TimeoutMs: 1_000, Batch: 10, FromStart: true}
	h2 := inboxstore.Handler{Name: "two", Types: []string{"big"}, TimeoutMs: 1_000, Batch: 10, FromStart: true}
	require.NoError(t, f.s.Sync(0, []inboxstore.Handler{h1, h2}))
	data := []byte(`"` + strings.Repeat("x", 998) + `"`) // 1,000 bytes; an event weighs 1,000 + 1 + 3 + 64
	for range 4 {
		_, _, _, err := f.ev.Append(0, "s", eventstore.Any, []eventstore.Draft{{Type: "big", Data: data}}, "")
		require.NoError(t, err)
	}
	claim := func(maxBytes int64) (one, two []int64) {
		var ds []inboxstore.Delivery
		require.NoError(t, f.db.Tx(func() error {
			var err error
			ds, err = f.s.Claim(0, "w", []inboxstore.Handler{h1, h2}, 100, maxBytes)
			return err
		}))
		for _, d := range ds {
			if d.Entry.Handler == "one" {
				one = append(one, d.Event.Seq)
			} else {
				two = append(two, d.Event.Seq)
			}
		}
		return one, two
	}
	one, two := claim(2200)
	require.Equal(t, []int64{1, 2}, one, "two events of 1,068 bytes fit 2,200")
	require.Empty(t, two, "the budget is spent")
	one, two = claim(2200)
	require.Empty(t, one, "its run is in flight")
	require.Equal(t, []int64{1, 2}, two)
}
