package fencestore_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// Every state lists in id order and pages by id, whichever index (or
// none: completed jobs) it is read from; the counts agree with the lists.
func TestListAndCountEveryState(t *testing.T) {
	t.Parallel()
	f := newJobs(t)
	want := map[fence.State][]int64{}
	add := func(st fence.State, ids ...int64) { want[st] = append(want[st], ids...) }
	enqueue := func(n fencestore.NewJob) int64 { return f.enqueue(t0, n)[0].Job.ID }

	// A full key: its jobs stay available.
	tx(t, f.db, func() error { _, err := f.s.SetLimit(t0, "acct", 0); return err })
	// Interleaved, so that each state's ids are spread among the others'.
	// Available jobs wait in a queue of their own, which no claim here
	// takes from.
	for range 3 {
		add(fence.StateCompleted, f.runningDone(job("k")))
		ready := job("k")
		ready.Queue = "backlog"
		add(fence.StateAvailable, enqueue(ready))
		keyed := ready
		keyed.ConcurrencyKey = "acct"
		add(fence.StateAvailable, enqueue(keyed))
		later := job("k")
		later.RunAt = t0 + 60_000
		add(fence.StateScheduled, enqueue(later))
		add(fence.StateRunning, f.running(job("k")).ID)
		parent := enqueue(later)
		add(fence.StateScheduled, parent)
		child := job("k")
		child.Parents = []fencestore.Parent{{ID: parent, Batch: -1}}
		add(fence.StatePending, enqueue(child))
		add(fence.StateRetryable, f.runningFailed(job("k")))
		once := job("k")
		once.MaxAttempts = 1
		add(fence.StateDead, f.runningFailed(once))
		c := enqueue(job("k"))
		f.cancel(t0, c)
		add(fence.StateCancelled, c)
	}
	for st := range want {
		slices.Sort(want[st])
	}

	live, done, err := f.s.Counts()
	require.NoError(t, err)
	for _, st := range fence.States {
		var got []int64
		for after := int64(0); ; {
			page, _, err := f.s.List(fencestore.ListFilter{State: string(st), After: after, Limit: 2})
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			for _, j := range page {
				require.Equal(t, st, j.State, "listed as %s", st)
				got = append(got, j.ID)
			}
			after = page[len(page)-1].ID
		}
		require.Equal(t, want[st], got, "%s jobs, in id order, two a page", st)
		n := done[string(st)]
		for _, c := range live {
			if c.State == string(st) {
				n += c.Count
			}
		}
		require.Equal(t, int64(len(want[st])), n, "%s jobs counted", st)
	}
	_, _, err = f.s.List(fencestore.ListFilter{State: "finished", Limit: 2})
	require.ErrorContains(t, err, `no state "finished"`)
}

// runningDone enqueues n, claims it and reports it completed.
func (f *jobs) runningDone(n fencestore.NewJob) int64 {
	f.t.Helper()
	j := f.running(n)
	f.complete(t0, j)
	return j.ID
}

// runningFailed enqueues n, claims it and reports it failed: retryable,
// or dead at its last attempt.
func (f *jobs) runningFailed(n fencestore.NewJob) int64 {
	f.t.Helper()
	j := f.running(n)
	tx(f.t, f.db, func() error {
		_, err := f.s.Report(t0, j.ID, fencestore.Report{Claim: claimOf(j), Report: fence.Report{Outcome: fence.OutcomeFailed}, Error: "boom"}, 0)
		return err
	})
	return j.ID
}

// A search reads a bounded number of jobs per page, and says where it
// stopped: a match past the bound is on a later page, however many jobs
// before it match nothing.
func TestASearchReadsABoundedPage(t *testing.T) {
	f := newJobs(t)
	for b := 0; b < api.MaxSearchScan; b += 1000 {
		js := make([]fencestore.NewJob, 1000)
		for i := range js {
			js[i] = job("x")
		}
		f.enqueue(t0, js...)
	}
	wanted := job("x")
	wanted.Args = []byte(`{"customer":{"id":42}}`)
	id := f.enqueue(t0, wanted)[0].ID
	search := fencestore.ListFilter{Limit: 100, Matches: []fencestore.Match{{Column: "args", Path: `$."customer"."id"`, Value: "42"}}}
	var js []fencestore.Job
	var scanned int64
	tx(t, f.db, func() (err error) { js, _, scanned, err = f.s.Search(search); return })
	require.Empty(t, js, "the match is past the first page's bound")
	require.EqualValues(t, api.MaxSearchScan, scanned, "the page read up to job %d", api.MaxSearchScan)
	search.After = scanned
	tx(t, f.db, func() (err error) { js, _, scanned, err = f.s.Search(search); return })
	require.Len(t, js, 1)
	require.Equal(t, id, js[0].ID)
	require.Zero(t, scanned, "the second page read every job left")
}
