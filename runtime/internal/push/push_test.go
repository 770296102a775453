package push

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

var policy = Policy{MaxParallel: 3, MaxInFlight: 5, PerExecutor: 10, TTL: 1000, RetryMin: 100, RetryMax: 350}

func TestStartSizesToTheBacklogUpToTheBound(t *testing.T) {
	tr := New(policy, "p")
	require.Empty(t, tr.Start(0, Ready{}), "nothing ready: no push")
	require.Equal(t, []string{"p1", "p2", "p3"}, tr.Start(0, Ready{Jobs: 500}), "a deep backlog: MaxParallel executors")
	require.Empty(t, tr.Start(0, Ready{Jobs: 500}), "pushes that have not claimed see what becomes ready")
	require.False(t, tr.Pending(), "their first claims see it: nothing to look for later")
	for _, id := range []string{"p1", "p2", "p3"} {
		tr.Claimed(id, true, true)
	}
	require.Equal(t, Open, tr.Look(1))
	require.Empty(t, tr.Start(1, Ready{Jobs: 500}), "claiming executors cover the backlog")
	require.True(t, tr.Pending(), "work the bound left waiting is looked at when a push ends")

	small := New(policy, "q")
	require.Equal(t, []string{"q1"}, small.Start(0, Ready{Reactions: 1}), "reactions alone: one executor")
	small.Claimed("q1", true, false)
	small.Claimed("q1", false, false)
	require.Equal(t, []string{"q2", "q3"}, small.Start(0, Ready{Jobs: 20}), "20 jobs at 10 each: two claiming")
}

// A batch that comes while a push has not claimed yet gets the executors
// its size wants, the starting push counted as one of them.
func TestABatchBesideAStartingPushGetsItsExecutors(t *testing.T) {
	tr := New(policy, "p")
	require.Equal(t, []string{"p1"}, tr.Start(0, Ready{Jobs: 1}))
	require.Equal(t, []string{"p2", "p3"}, tr.Start(1, Ready{Jobs: 1000}), "three executors for the backlog, the first counted")
	require.Empty(t, tr.Start(2, Ready{Jobs: 1000}))
}

func TestAFinishingPushCoversNothing(t *testing.T) {
	tr := New(policy, "p")
	ids := tr.Start(0, Ready{Jobs: 1})
	require.Equal(t, Starting, tr.Flights()[0].State(0))
	tr.Claimed(ids[0], true, false)
	require.Equal(t, Finishing, tr.Flights()[0].State(0), "its claim took everything: it only runs what it took")
	// A job that becomes ready behind a slow one gets a push of its own.
	require.Equal(t, Open, tr.Look(5))
	require.Equal(t, []string{"p2"}, tr.Start(5, Ready{Jobs: 1}))
	require.False(t, tr.Pending())

	// A push whose claim of jobs left more claims again: it covers them.
	tr.Claimed("p2", true, true)
	require.Equal(t, Claiming, tr.Flights()[1].State(0))
	require.Empty(t, tr.Start(6, Ready{Jobs: 3}))
	// Its reactions claim does not undo what its jobs claim said.
	tr.Claimed("p2", false, false)
	require.Equal(t, Claiming, tr.Flights()[1].State(0))
	tr.Claimed("p2", true, false)
	require.Equal(t, Finishing, tr.Flights()[1].State(0))

	// Finishing pushes count against MaxInFlight.
	for range 3 {
		ids := tr.Start(7, Ready{Jobs: 1})
		require.Len(t, ids, 1)
		tr.Claimed(ids[0], true, false)
	}
	require.Equal(t, Blocked, tr.Look(7), "MaxInFlight pushes in flight")
	require.Empty(t, tr.Start(7, Ready{Jobs: 1}))
	require.True(t, tr.Pending())
	_, again := tr.End(8, ids[0], api.PushDrained)
	require.True(t, again, "the first end looks again")

	tr.Claimed("unknown", true, true)
	tr.Claimed(ids[0], true, true) // ended: nothing changes
	require.Len(t, tr.Flights(), 4)
}

func TestReactionsAreCoveredOnlyByPushesThatClaimThem(t *testing.T) {
	tr := New(policy, "p")
	require.Equal(t, []string{"p1"}, tr.Start(0, Ready{Jobs: 1}), "a push for jobs alone")
	require.Empty(t, tr.Start(1, Ready{Jobs: 1}))
	ids := tr.Start(1, Ready{Jobs: 1, Reactions: 1})
	require.Equal(t, []string{"p2"}, ids, "its executor claims no deliveries: one push for them, the jobs still covered by the first")
	require.Empty(t, tr.Start(2, Ready{Reactions: 2}))

	// Its claims took every delivery: new ones need another push; a claim
	// that filled its limit keeps covering them.
	tr.Claimed("p2", true, false)
	tr.Claimed("p2", false, false)
	require.Equal(t, []string{"p3"}, tr.Start(3, Ready{Reactions: 1}))
	tr.Claimed("p3", true, false)
	tr.Claimed("p3", false, true)
	require.Equal(t, Claiming, tr.Flights()[2].State(0))
	require.Empty(t, tr.Start(4, Ready{Reactions: 3}))
}

func TestALingeringPushCoversJobsUntilItsHoldEnds(t *testing.T) {
	long := policy
	long.TTL = 10_000
	tr := New(long, "p")
	ids := tr.Start(0, Ready{Jobs: 1})
	tr.Claimed(ids[0], true, false)
	tr.Lingers(ids[0], 1, 0, 1000)
	require.Equal(t, Lingering, tr.Flights()[0].State(10))
	// The host asks the held claim again on every commit: the hold still
	// ends 1000 ms after it began.
	tr.Lingers(ids[0], 1, 500, 1000)
	require.Empty(t, tr.Start(600, Ready{Jobs: 1}), "its held claim takes the next job")
	require.True(t, tr.Pending(), "should the hold be given up first, the push's end looks again")
	require.Equal(t, []string{"p2"}, tr.Start(600, Ready{Jobs: 1, Reactions: 1}), "a held claim of jobs takes no deliveries")

	// Near and past its end the push only finishes what it runs: a job
	// gets a push of its own.
	require.Equal(t, Finishing, tr.Flights()[0].State(1000-lingerMargin))
	tr.Claimed("p2", true, false)
	tr.Claimed("p2", false, false)
	require.Equal(t, []string{"p3"}, tr.Start(1000, Ready{Jobs: 1}))

	// A claim that takes a job ends the linger; the next hold starts anew.
	tr.Claimed("p3", true, false)
	tr.Lingers("p3", 1, 1100, 1000)
	tr.Claimed("p3", true, false)
	require.Equal(t, Finishing, tr.Flights()[2].State(1200))
	tr.Lingers("p3", 2, 1300, 1000)
	require.Equal(t, Lingering, tr.Flights()[2].State(2200))

	// A hold that ended with nothing, then a new one (its drain's slow job
	// ended): the new hold is seen by its number, not mistaken for the old.
	tr.Lingers(ids[0], 1, 3000, 1000)
	require.Equal(t, Finishing, tr.Flights()[0].State(3000), "the first hold ended long ago")
	tr.Lingers(ids[0], 2, 3000, 1000)
	require.Equal(t, Lingering, tr.Flights()[0].State(3100))
	require.Equal(t, Finishing, tr.Flights()[0].State(4000-lingerMargin))
}

func TestEndLooksAgainWhenWorkWasLeftOrDeferred(t *testing.T) {
	tr := New(policy, "p")
	ids := tr.Start(0, Ready{Jobs: 1})
	ended, again := tr.End(5, ids[0], api.PushDrained)
	require.True(t, ended)
	require.False(t, again, "drained with nothing deferred: done")
	ended, _ = tr.End(6, ids[0], api.PushDrained)
	require.False(t, ended, "a push ends once")

	ids = tr.Start(10, Ready{Jobs: 1})
	tr.Claimed(ids[0], true, true)
	require.Empty(t, tr.Start(11, Ready{Jobs: 1}), "a claiming push covers one more job")
	_, again = tr.End(12, ids[0], api.PushDrained)
	require.True(t, again, "work woke while it ran: its last claim may have missed it")

	ids = tr.Start(20, Ready{Jobs: 1})
	_, again = tr.End(21, ids[0], api.PushBudgetSpent)
	require.True(t, again, "the executor left work")
}

func TestFailedPushBacksOffAndExpiryReplacesALostOne(t *testing.T) {
	tr := New(policy, "p")
	ids := tr.Start(0, Ready{Jobs: 1})
	_, again := tr.End(0, ids[0], api.PushFailed)
	require.False(t, again)
	require.Equal(t, int64(100), tr.NextAt(), "the alarm retries the failed push")
	require.Equal(t, Blocked, tr.Look(50))
	require.Empty(t, tr.Start(50, Ready{Jobs: 1}), "no push before the retry is due")
	require.True(t, tr.Due(100))
	ids = tr.Start(100, Ready{Jobs: 1})
	require.Len(t, ids, 1)
	tr.End(100, ids[0], api.PushFailed)
	require.Equal(t, int64(300), tr.NextAt(), "the backoff doubles")
	last := int64(0)
	for range 3 {
		last = tr.NextAt()
		ids = tr.Start(last, Ready{Jobs: 1})
		tr.End(last, ids[0], api.PushFailed)
	}
	at, failures := tr.Retry()
	require.Equal(t, int64(5), failures)
	require.Equal(t, int64(350), at-last, "the backoff stops at RetryMax")
	ids = tr.Start(at, Ready{Jobs: 1})
	_, _ = tr.End(at+1, ids[0], api.PushDrained)
	at, failures = tr.Retry()
	require.Zero(t, at)
	require.Zero(t, failures, "a push that reached an executor resets the backoff")

	ok := New(policy, "q")
	ids = ok.Start(0, Ready{Jobs: 1})
	require.Equal(t, int64(1000), ok.NextAt(), "a push in flight expires at its TTL")
	require.False(t, ok.Due(999))
	require.True(t, ok.Due(1000), "an executor that never ended its push is replaced")
	require.Equal(t, []string{"q2"}, ok.Start(1000, Ready{Jobs: 1}))
	ended, _ := ok.End(1001, ids[0], api.PushDrained)
	require.False(t, ended, "the expired push's late end changes nothing")
}

func TestPendingLastsOnlyWhileSomethingIsLeftToLookFor(t *testing.T) {
	tr := New(policy, "p")
	ids := tr.Start(0, Ready{Jobs: 1})
	tr.Claimed(ids[0], true, true)
	require.Empty(t, tr.Start(1, Ready{Jobs: 1}))
	require.True(t, tr.Pending())
	// The push outlives its TTL (a job longer than it): it expires, and
	// the look that follows finds nothing ready. Nothing is pending then:
	// no push is left to end and look again.
	require.True(t, tr.Due(1000))
	require.Empty(t, tr.Start(1000, Ready{}))
	require.False(t, tr.Pending())
	require.Empty(t, tr.Flights())

	tr.Defer()
	require.Len(t, tr.Start(1001, Ready{Jobs: 1}), 1)
	require.False(t, tr.Pending(), "a new push sees what was deferred")
}

func TestNewKeepsTheBoundsConsistent(t *testing.T) {
	tr := New(Policy{MaxParallel: 8, MaxInFlight: 2, PerExecutor: 1, TTL: 10}, "p")
	require.Equal(t, 8, tr.Policy.MaxInFlight, "MaxInFlight is at least MaxParallel")
	require.Len(t, tr.Start(0, Ready{Jobs: 100}), 8)
}

// One more job is taken by a push about to claim, or by a lingering one
// (then the next end looks again), without counting what is ready.
func TestOneJobIsTakenByAStartingOrLingeringPush(t *testing.T) {
	tr := New(policy, "p")
	require.False(t, tr.TakesOne(0), "no push in flight")
	ids := tr.Start(0, Ready{Jobs: 1})
	require.True(t, tr.TakesOne(1), "its first claim sees it")
	require.False(t, tr.Pending())
	tr.Claimed(ids[0], true, false)
	require.False(t, tr.TakesOne(2), "a finishing push takes nothing")
	tr.Lingers(ids[0], 1, 3, 500)
	require.True(t, tr.TakesOne(4), "its held claim takes it")
	require.True(t, tr.Pending(), "should the hold have been given up, its end looks again")
	require.False(t, tr.TakesOne(500), "past the hold")
}
