package fencestore_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// complete has job id, running as claimed, report success at now.
func (f *jobs) complete(now int64, j fencestore.Job) {
	f.t.Helper()
	tx(f.t, f.db, func() error {
		_, err := f.s.Report(now, j.ID, fencestore.Report{Claim: claimOf(j), Report: fence.Report{Outcome: fence.OutcomeCompleted}}, 0)
		return err
	})
}

func (f *jobs) cancel(now, id int64) {
	f.t.Helper()
	tx(f.t, f.db, func() error { _, err := f.s.Cancel(now, id, ""); return err })
}

func (f *jobs) count() int {
	f.t.Helper()
	return int(dosqlCount(f, `SELECT count(*) FROM stile_jobs`))
}

func dosqlCount(f *jobs, sql string, args ...any) int64 {
	f.t.Helper()
	rows, err := f.db.Query(sql, args...)
	require.NoError(f.t, err)
	require.True(f.t, rows.Next())
	return rows.Int(0)
}

func unique(key string, windowMs int64) fencestore.NewJob {
	j := job("k")
	j.UniqueKey, j.UniqueWindowMs = key, windowMs
	return j
}

func childOf(parent int64, regardless bool) fencestore.NewJob {
	j := job("k")
	j.Parents, j.RunRegardless = []fencestore.Parent{{ID: parent, Batch: -1}}, regardless
	return j
}

// An enqueue stores each job in the state its parents, run time and unique
// key give it, records its dependencies, and refuses (writing nothing) a
// job whose key has no limit or whose parent does not exist.
func TestEnqueue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(f *jobs) int64 // an earlier job the case refers to
		jobs  func(earlier int64) []fencestore.NewJob
		code  api.Code // the refusal
		at    string   // where in the batch it points
		// The last job of the batch:
		existing bool // the earlier job, returned again
		state    fence.State
		lastErr  string
		deps     func(earlier int64) []fencestore.Dep
	}{
		{name: "ready now", jobs: one(job("k")), state: fence.StateAvailable},
		{name: "later", jobs: func(int64) []fencestore.NewJob { j := job("k"); j.RunAt = t0 + 500; return []fencestore.NewJob{j} },
			state: fence.StateScheduled},
		{name: "a unique key a live job holds", existing: true,
			setup: func(f *jobs) int64 { return f.enqueue(t0-100, unique("u", 0))[0].ID },
			jobs:  one(unique("u", 0))},
		{name: "a unique key a finished job held", state: fence.StateAvailable,
			setup: func(f *jobs) int64 { id := f.enqueue(t0-100, unique("u", 0))[0].ID; f.cancel(t0-50, id); return id },
			jobs:  one(unique("u", 0))},
		{name: "a unique key a finished job holds within its window", existing: true,
			setup: func(f *jobs) int64 {
				id := f.enqueue(t0+20-1_000, unique("u", 0))[0].ID
				f.cancel(t0-50, id)
				return id
			},
			jobs: one(unique("u", 1_000))},
		{name: "a unique key whose window has passed", state: fence.StateAvailable,
			setup: func(f *jobs) int64 {
				id := f.enqueue(t0+20-1_001, unique("u", 0))[0].ID
				f.cancel(t0-50, id)
				return id
			},
			jobs: one(unique("u", 1_000))},
		{name: "a concurrency key with no limit", code: api.CodeInvalidRequest,
			jobs: one(in("default", "k", 0, "nolimit"))},
		{name: "a concurrency key with the module's limit", state: fence.StateAvailable,
			jobs: one(in("default", "k", 0, "acct"))},
		{name: "a parent not finished: pending", state: fence.StatePending,
			setup: func(f *jobs) int64 { return f.enqueue(t0-100, job("k"))[0].ID },
			jobs:  func(p int64) []fencestore.NewJob { return []fencestore.NewJob{childOf(p, false)} },
			deps:  func(p int64) []fencestore.Dep { return []fencestore.Dep{{ParentID: p}} }},
		{name: "a parent completed: ready", state: fence.StateAvailable,
			setup: func(f *jobs) int64 { j := f.running(job("k")); f.complete(t0+10, j); return j.ID },
			jobs:  func(p int64) []fencestore.NewJob { return []fencestore.NewJob{childOf(p, false)} },
			deps: func(p int64) []fencestore.Dep {
				return []fencestore.Dep{{ParentID: p, Resolved: "completed", ResolvedAt: t0 + 20}}
			}},
		{name: "a parent cancelled: cancelled too", state: fence.StateCancelled,
			setup: func(f *jobs) int64 { id := f.enqueue(t0-100, job("k"))[0].ID; f.cancel(t0-50, id); return id },
			jobs:  func(p int64) []fencestore.NewJob { return []fencestore.NewJob{childOf(p, false)} },
			deps: func(p int64) []fencestore.Dep {
				return []fencestore.Dep{{ParentID: p, Resolved: "failed", ResolvedAt: t0 + 20}}
			}},
		{name: "a parent dead, run regardless: ready", state: fence.StateAvailable,
			setup: func(f *jobs) int64 {
				j := f.enqueue(t0-100, job("k"))[0]
				tx(f.t, f.db, func() error { return f.s.Fail(t0-50, j.Job, "gone") })
				return j.ID
			},
			jobs: func(p int64) []fencestore.NewJob { return []fencestore.NewJob{childOf(p, true)} },
			deps: func(p int64) []fencestore.Dep {
				return []fencestore.Dep{{ParentID: p, Resolved: "failed", ResolvedAt: t0 + 20}}
			}},
		{name: "a parent that does not exist", code: api.CodeInvalidRequest,
			jobs: func(int64) []fencestore.NewJob { return []fencestore.NewJob{childOf(99, false)} }},
		{name: "a parent earlier in the batch", state: fence.StatePending,
			jobs: func(int64) []fencestore.NewJob {
				c := job("k")
				c.Parents = []fencestore.Parent{{Batch: 0}}
				return []fencestore.NewJob{job("k"), c}
			},
			deps: func(int64) []fencestore.Dep { return []fencestore.Dep{{ParentID: 1}} }},
		{name: "a parent later in the batch", code: api.CodeInvalidRequest, at: "jobs[1]",
			jobs: func(int64) []fencestore.NewJob {
				c := job("k")
				c.Parents = []fencestore.Parent{{Batch: 1}}
				return []fencestore.NewJob{job("k"), c, job("k")}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newJobs(t)
			f.s.Limits = map[string]int{"acct": 2}
			var earlier int64
			if tc.setup != nil {
				earlier = tc.setup(f)
			}
			const now = t0 + 20
			js := tc.jobs(earlier)
			before, n := f.snapshot(), f.count()

			var out []fencestore.Enqueued
			err := f.db.Tx(func() (err error) { out, err = f.s.Enqueue(now, js); return })

			if tc.code != "" {
				requireCode(t, err, tc.code)
				if tc.at != "" {
					require.ErrorContains(t, err, ": "+tc.at+": ", "the refusal names the job in the batch")
				}
				require.Equal(t, before, f.snapshot(), "a refused enqueue writes nothing")
				return
			}
			require.NoError(t, err)
			require.Len(t, out, len(js))
			last := out[len(out)-1]
			if tc.existing {
				require.True(t, last.Existing)
				require.Equal(t, earlier, last.ID)
				require.Equal(t, n, f.count(), "no new job")
				return
			}
			require.False(t, last.Existing)
			require.Equal(t, n+len(js), f.count())
			got := f.get(last.ID)
			require.Equal(t, tc.state, got.State)
			require.Equal(t, tc.state, last.State, "the answer says what was stored")
			require.Equal(t, now, got.CreatedAt)
			require.Equal(t, js[len(js)-1].RunAt, got.RunAt)
			require.Zero(t, got.Attempt)
			if tc.state == fence.StateCancelled {
				require.Equal(t, fmt.Sprintf("parent job %d ended cancelled", earlier), got.LastError)
				require.Equal(t, now, got.FinishedAt)
			} else {
				require.Zero(t, got.FinishedAt)
			}
			deps, err := f.s.Deps(last.ID)
			require.NoError(t, err)
			var want []fencestore.Dep
			if tc.deps != nil {
				want = tc.deps(earlier)
			}
			require.Equal(t, want, deps)
			for _, d := range deps {
				if d.Resolved == "" {
					require.True(t, f.get(d.ParentID).Dependents, "an unresolved edge marks its parent")
				}
			}
			if key := js[len(js)-1].ConcurrencyKey; key != "" {
				limits, err := f.s.ListLimits()
				require.NoError(t, err)
				require.Equal(t, []fencestore.Limit{{Key: key, Slots: 2}}, limits, "the module's limit, stored")
			}
		})
	}
}

func one(j fencestore.NewJob) func(int64) []fencestore.NewJob {
	return func(int64) []fencestore.NewJob { return []fencestore.NewJob{j} }
}

// A parent named twice (by id and by "#n", or twice by id) is one
// dependency, not a constraint failure.
func TestAParentNamedTwiceIsOneDependency(t *testing.T) {
	f := newJobs(t)
	parent := f.enqueue(t0, job("x"))[0]
	child := job("x")
	child.Parents = []fencestore.Parent{{ID: parent.ID, Batch: -1}, {ID: parent.ID, Batch: -1}}
	got := f.enqueue(t0, child)[0]
	require.EqualValues(t, 1, got.PendingParents)
	var deps []fencestore.Dep
	tx(t, f.db, func() (err error) { deps, err = f.s.Deps(got.ID); return })
	require.Len(t, deps, 1)
}
