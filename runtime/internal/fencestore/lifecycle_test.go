package fencestore_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// labelled is a job whose kind names it in a test's expectations.
func labelled(label string, priority int, runAt int64) fencestore.NewJob {
	j := job(label)
	j.Priority, j.RunAt = priority, runAt
	return j
}

// A claim takes ready jobs in the claim order (priority, run time, id), of
// the queues and kinds it names, into free concurrency slots only, and
// stamps each with the next attempt, the worker, a fresh token and a lease
// of its own length.
func TestClaim(t *testing.T) {
	t.Parallel()
	const now = t0 + 100
	for _, tc := range []struct {
		name  string
		setup func(f *jobs)
		req   fencestore.ClaimRequest
		want  []string // kinds, in order
		inUse int64    // slots of key "acct" taken after the claim
	}{
		{name: "priority, then run time, then id",
			setup: func(f *jobs) {
				f.enqueue(t0, labelled("low", 1, t0-50), labelled("late", 0, t0-10), labelled("early", 0, t0-20),
					labelled("early2", 0, t0-20))
			},
			req: fencestore.ClaimRequest{Queues: []string{"default"}, Limit: 3}, want: []string{"early", "early2", "late"}},
		{name: "only the kinds asked",
			setup: func(f *jobs) { f.enqueue(t0, labelled("a", 0, t0), labelled("b", 0, t0), labelled("c", 0, t0)) },
			req:   fencestore.ClaimRequest{Queues: []string{"default"}, Kinds: []string{"c", "a"}, Limit: 10}, want: []string{"a", "c"}},
		{name: "only the queues asked, none paused",
			setup: func(f *jobs) {
				f.enqueue(t0, in("q1", "a", 0, ""), in("q2", "b", 0, ""), in("q3", "c", 0, ""))
				tx(f.t, f.db, func() error { return f.s.SetPaused(t0, "q3", true) })
			},
			req: fencestore.ClaimRequest{Queues: []string{"q3", "q2"}, Limit: 10}, want: []string{"b"}},
		{name: "not a job waiting for its time or its parents",
			setup: func(f *jobs) {
				p := f.enqueue(t0, labelled("due", 0, now), labelled("later", 0, now+1))[0]
				c := childOf(p.ID, false)
				c.Kind = "child"
				f.enqueue(t0, c)
				f.due(now)
			},
			req: fencestore.ClaimRequest{Queues: []string{"default"}, Limit: 10}, want: []string{"due"}},
		{name: "into a key's free slots only", inUse: 2,
			setup: func(f *jobs) {
				f.enqueue(t0, in("default", "k1", 0, "acct"), in("default", "k2", 0, "acct"), in("default", "k3", 0, "acct"),
					in("default", "free", 1, ""))
			},
			req: fencestore.ClaimRequest{Queues: []string{"default"}, Limit: 10}, want: []string{"k1", "k2", "free"}},
		{name: "nothing from a full key", inUse: 2,
			setup: func(f *jobs) {
				f.enqueue(t0, in("default", "k1", 0, "acct"), in("default", "k2", 0, "acct"), in("default", "k3", 0, "acct"))
				require.Len(f.t, f.claim(t0, "other", 2), 2)
			},
			req: fencestore.ClaimRequest{Queues: []string{"default"}, Limit: 10}},
		{name: "up to its limit",
			setup: func(f *jobs) { f.enqueue(t0, labelled("a", 0, t0), labelled("b", 0, t0), labelled("c", 0, t0)) },
			req:   fencestore.ClaimRequest{Queues: []string{"default"}, Limit: 2}, want: []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newJobs(t)
			f.s.Limits = map[string]int{"acct": 2}
			tc.setup(f)
			req := tc.req
			req.Worker = "w"
			var got []fencestore.Job
			tx(t, f.db, func() (err error) { got, _, err = f.s.Claim(now, req); return })

			var kinds []string
			tokens := map[string]bool{}
			for _, j := range got {
				kinds = append(kinds, j.Kind)
				stored := f.get(j.ID)
				require.Equal(t, stored, j, "the answer is the job as stored")
				require.Equal(t, fence.StateRunning, j.State)
				require.Equal(t, int64(1), j.Attempt)
				require.Equal(t, "w", j.Worker)
				require.Equal(t, now, j.ClaimedAt)
				require.Equal(t, now+j.LeaseMs, j.LeaseUntil)
				require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{32}$`), j.LeaseToken)
				require.False(t, tokens[j.LeaseToken], "a token per job")
				tokens[j.LeaseToken] = true
			}
			require.Equal(t, tc.want, kinds)
			limits, err := f.s.ListLimits()
			require.NoError(t, err)
			for _, l := range limits {
				require.Equal(t, tc.inUse, l.InUse, "slots of %s", l.Key)
			}
			// What the claim left is as it was: nothing else runs.
			running := dosqlCount(f, `SELECT count(*) FROM stile_jobs WHERE state = 'running' AND worker = 'w'`)
			require.Equal(t, int64(len(got)), running)
		})
	}
}

// A job claimed again after its lease ran out gets the next attempt
// number and a new token: the old claim's numbers never come back.
func TestAttemptNumbersNeverRepeat(t *testing.T) {
	t.Parallel()
	f := newJobs(t)
	first := f.running(job("k"))
	f.due(first.LeaseUntil)
	f.due(first.LeaseUntil + 100)
	again := f.claim(first.LeaseUntil+100, "w2", 1)
	require.Len(t, again, 1)
	require.Equal(t, int64(2), again[0].Attempt)
	require.NotEqual(t, first.LeaseToken, again[0].LeaseToken)
	tx(t, f.db, func() error {
		_, err := f.s.Cancel(first.LeaseUntil+200, first.ID, "")
		return err
	})
	f.due(again[0].LeaseUntil) // ends cancelled
	tx(t, f.db, func() error { _, err := f.s.Retry(again[0].LeaseUntil+10, first.ID); return err })
	third := f.claim(again[0].LeaseUntil+10, "w3", 1)
	require.Len(t, third, 1)
	require.Equal(t, int64(3), third[0].Attempt, "a retry's fresh budget keeps counting attempts")
	require.Equal(t, []int64{1, 2}, []int64{f.attempts(first.ID)[0].Attempt, f.attempts(first.ID)[1].Attempt})
}

// A cancel ends a waiting job at once (its dependents follow), asks a
// running one's worker to stop, and refuses a finished job, writing
// nothing.
func TestCancel(t *testing.T) {
	t.Parallel()
	const now = t0 + 100
	for _, tc := range []struct {
		name  string
		setup func(f *jobs) int64
		code  api.Code
		want  fence.State
		// running: the cancel is a request, not a state
		requested bool
	}{
		{name: "available", want: fence.StateCancelled,
			setup: func(f *jobs) int64 { return f.enqueue(t0, job("k"))[0].ID }},
		{name: "scheduled", want: fence.StateCancelled,
			setup: func(f *jobs) int64 { return f.enqueue(t0, labelled("k", 0, now+1_000))[0].ID }},
		{name: "pending", want: fence.StateCancelled,
			setup: func(f *jobs) int64 {
				p := f.enqueue(t0, job("k"))[0]
				return f.enqueue(t0, childOf(p.ID, false))[0].ID
			}},
		{name: "running", want: fence.StateRunning, requested: true,
			setup: func(f *jobs) int64 { return f.running(job("k")).ID }},
		{name: "running, already asked", want: fence.StateRunning, requested: true,
			setup: func(f *jobs) int64 { j := f.running(job("k")); f.cancel(t0+50, j.ID); return j.ID }},
		{name: "completed", code: api.CodeFinished,
			setup: func(f *jobs) int64 { j := f.running(job("k")); f.complete(t0+50, j); return j.ID }},
		{name: "cancelled", code: api.CodeFinished,
			setup: func(f *jobs) int64 { id := f.enqueue(t0, job("k"))[0].ID; f.cancel(t0+50, id); return id }},
		{name: "a job that does not exist", code: api.CodeNotFound,
			setup: func(f *jobs) int64 { return 99 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newJobs(t)
			id := tc.setup(f)
			// Dependents: one that needs id to complete, one that runs regardless.
			var child, regardless int64
			if tc.code == "" {
				cs := f.enqueue(t0, childOf(id, false), childOf(id, true))
				child, regardless = cs[0].ID, cs[1].ID
			}
			before := f.snapshot()
			var was fencestore.Job
			if tc.code != api.CodeNotFound {
				was = f.get(id)
			}

			var got fencestore.Job
			err := f.db.Tx(func() (err error) { got, err = f.s.Cancel(now, id, "no longer needed"); return })

			if tc.code != "" {
				requireCode(t, err, tc.code)
				require.Equal(t, before, f.snapshot(), "a refused cancel writes nothing")
				return
			}
			require.NoError(t, err)
			require.Equal(t, f.get(id), got, "the answer is the job as stored")
			require.Equal(t, tc.want, got.State)
			if tc.requested {
				require.True(t, got.CancelRequested)
				at := now
				if was.CancelRequested {
					at = was.CancelAt
				}
				require.Equal(t, at, got.CancelAt, "asked once, when first asked")
				require.Equal(t, was.LeaseUntil, got.LeaseUntil)
				require.Equal(t, fence.StatePending, f.get(child).State, "dependents wait for the attempt's end")
				return
			}
			require.Equal(t, "cancelled: no longer needed", got.LastError)
			require.Equal(t, now, got.FinishedAt)
			c := f.get(child)
			require.Equal(t, fence.StateCancelled, c.State, "a dependent that needed it is cancelled with it")
			require.Equal(t, now, c.FinishedAt)
			require.Equal(t, fence.StateAvailable, f.get(regardless).State, "one that runs regardless runs")
		})
	}
}

// A retry runs a dead or cancelled job again with a fresh budget, and
// refuses any other job, or one whose unique key another live job took,
// writing nothing.
func TestRetry(t *testing.T) {
	t.Parallel()
	const now = t0 + 100
	for _, tc := range []struct {
		name  string
		setup func(f *jobs) int64
		code  api.Code
	}{
		{name: "dead", setup: func(f *jobs) int64 {
			n := job("k")
			n.MaxAttempts = 1
			j := f.running(n)
			f.due(j.LeaseUntil)
			return j.ID
		}},
		{name: "cancelled while it waited for its parent", setup: func(f *jobs) int64 {
			p := f.enqueue(t0, job("k"))[0]
			c := f.enqueue(t0, childOf(p.ID, false))[0]
			f.cancel(t0+10, c.ID)
			return c.ID
		}},
		{name: "available", code: api.CodeNotRetryable, setup: func(f *jobs) int64 { return f.enqueue(t0, job("k"))[0].ID }},
		{name: "running", code: api.CodeNotRetryable, setup: func(f *jobs) int64 { return f.running(job("k")).ID }},
		{name: "completed", code: api.CodeNotRetryable,
			setup: func(f *jobs) int64 { j := f.running(job("k")); f.complete(t0+50, j); return j.ID }},
		{name: "its unique key held by a live job", code: api.CodeUniqueConflict, setup: func(f *jobs) int64 {
			id := f.enqueue(t0, unique("u", 0))[0].ID
			f.cancel(t0+10, id)
			f.enqueue(t0+20, unique("u", 0))
			return id
		}},
		{name: "a job that does not exist", code: api.CodeNotFound, setup: func(f *jobs) int64 { return 99 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newJobs(t)
			id := tc.setup(f)
			before := f.snapshot()
			var got fencestore.Job
			err := f.db.Tx(func() (err error) { got, err = f.s.Retry(now, id); return })
			if tc.code != "" {
				requireCode(t, err, tc.code)
				require.Equal(t, before, f.snapshot(), "a refused retry writes nothing")
				return
			}
			require.NoError(t, err)
			require.Equal(t, f.get(id), got, "the answer is the job as stored")
			require.Equal(t, fence.StateAvailable, got.State)
			require.Equal(t, [4]int64{0, 0, now, 0}, [4]int64{got.Failures, got.FinishedAt, got.RunAt, got.PendingParents})
			var claimed []int64
			for _, j := range f.claim(now, "w", 10) {
				claimed = append(claimed, j.ID)
			}
			require.Contains(t, claimed, id, "it runs")
		})
	}
}

// Only a finished job is deleted, with its history; and Fail ends a job
// only in the state it was read in.
func TestDeleteAndFail(t *testing.T) {
	t.Parallel()
	f := newJobs(t)
	j := f.running(job("k"))
	live := f.enqueue(t0, job("k"))[0]
	f.complete(t0+10, j)
	requireCode(t, f.db.Tx(func() error { return f.s.Delete(live.ID) }), api.CodeNotFinished)
	requireCode(t, f.db.Tx(func() error { return f.s.Delete(99) }), api.CodeNotFound)
	tx(t, f.db, func() error { return f.s.Delete(j.ID) })
	_, err := f.s.Get(j.ID)
	requireCode(t, err, api.CodeNotFound)
	require.Empty(t, f.attempts(j.ID), "its history goes with it")

	// Fail with the job as read before a claim took it: the guard finds it
	// moved, and nothing is written.
	require.Len(t, f.claim(t0+20, "w", 1), 1)
	before := f.snapshot()
	err = f.db.Tx(func() error { return f.s.Fail(t0+30, live.Job, "kind gone") })
	require.ErrorIs(t, err, do.ErrGuard)
	require.Equal(t, before, f.snapshot())

	waiting := f.enqueue(t0+40, labelled("k", 0, t0+1_000))[0]
	child := f.enqueue(t0+40, childOf(waiting.ID, false))[0]
	tx(t, f.db, func() error { return f.s.Fail(t0+50, f.get(waiting.ID), "kind gone") })
	got := f.get(waiting.ID)
	require.Equal(t, [3]any{fence.StateDead, "kind gone", t0 + 50}, [3]any{got.State, got.LastError, got.FinishedAt})
	require.Equal(t, fence.StateCancelled, f.get(child.ID).State, "its dependents follow")

	un, err := f.s.Unregistered([]string{"other"}, 10)
	require.NoError(t, err)
	require.Len(t, un, 1, "the running job: the only unfinished one")
	require.Equal(t, live.ID, un[0].ID)
}

// Due work expires lapsed leases, each a failed attempt noticed by the
// alarm (retried, dead, or cancelled when a cancel was asked), frees their
// slots, and makes due jobs available; what is not due yet stays.
func TestApplyDue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		job      func() fencestore.NewJob
		cancel   bool
		want     fence.State
		failures int64
		runAt    int64 // relative to the lease's end
		err      string
	}{
		{name: "budget left: retried after the backoff", job: func() fencestore.NewJob { j := job("k"); j.TimeoutMs = 5_000; return j },
			want: fence.StateRetryable, failures: 1, runAt: 100,
			err: "lease of attempt 1 expired (worker w held it until 11000)"},
		{name: "budget spent: dead", job: func() fencestore.NewJob {
			j := job("k")
			j.TimeoutMs, j.MaxAttempts = 5_000, 1
			return j
		}, want: fence.StateDead, failures: 1, err: "lease of attempt 1 expired (worker w held it until 11000)"},
		{name: "at the time limit", job: func() fencestore.NewJob { return job("k") },
			want: fence.StateRetryable, failures: 1, runAt: 100, err: "timed out: attempt 1 reached its time limit of 1000 ms"},
		{name: "after a cancel was asked: cancelled", job: func() fencestore.NewJob { j := job("k"); j.TimeoutMs = 5_000; return j },
			cancel: true, want: fence.StateCancelled, runAt: -1_000, // its run time stays t0
			err: "cancelled: the lease of attempt 1 ran out after the cancel was requested"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newJobs(t)
			f.s.Limits = map[string]int{"acct": 1}
			n := tc.job()
			n.ConcurrencyKey = "acct"
			j := f.running(n)
			if tc.cancel {
				f.cancel(t0+10, j.ID)
			}
			end := j.LeaseUntil

			require.Equal(t, fencestore.DueResult{}, f.due(end-1), "a live lease stays")
			require.Equal(t, fence.StateRunning, f.get(j.ID).State)

			require.Equal(t, fencestore.DueResult{Expired: 1}, f.due(end))
			got := f.get(j.ID)
			require.Equal(t, tc.want, got.State)
			require.Equal(t, tc.failures, got.Failures)
			require.Equal(t, end+tc.runAt, got.RunAt)
			require.Equal(t, tc.err, got.LastError)
			require.Equal(t, []fencestore.Attempt{{Attempt: 1, Worker: "w", ClaimedAt: t0, LeaseUntil: end, EndedAt: end,
				Outcome: string(fence.OutcomeLeaseExpired), Error: tc.err, NoticedBy: "alarm"}}, f.attempts(j.ID))
			limits, err := f.s.ListLimits()
			require.NoError(t, err)
			require.Equal(t, int64(0), limits[0].InUse, "the slot is free again")
			if tc.want == fence.StateRetryable {
				require.Equal(t, fencestore.DueResult{}, f.due(got.RunAt-1), "its backoff is not over")
				require.Equal(t, fencestore.DueResult{Promoted: 1}, f.due(got.RunAt))
				require.Equal(t, fence.StateAvailable, f.get(j.ID).State)
			}
		})
	}
}

// A schedule's period is handled once: the advance is guarded on the
// period read, and a paused schedule is not advanced; nothing is written
// by a refused advance. Replacing a schedule keeps what its last period
// did.
func TestSchedules(t *testing.T) {
	t.Parallel()
	f := newJobs(t)
	put := func(now int64, sc fencestore.Schedule) fencestore.Schedule {
		t.Helper()
		var out fencestore.Schedule
		tx(t, f.db, func() (err error) { out, err = f.s.PutSchedule(now, sc); return })
		return out
	}
	a := put(t0, fencestore.Schedule{Name: "a", Cron: "* * * * *", Job: []byte(`{"kind":"k"}`), NextAt: t0 + 60_000})
	require.Equal(t, fencestore.Schedule{Name: "a", Cron: "* * * * *", Job: []byte(`{"kind":"k"}`), NextAt: t0 + 60_000,
		CreatedAt: t0, UpdatedAt: t0, Owner: fencestore.OwnerTenant}, a)
	put(t0, fencestore.Schedule{Name: "b", Cron: "0 * * * *", Job: []byte(`{}`), NextAt: t0 + 30_000, Paused: true,
		Owner: fencestore.OwnerModule})

	due, err := f.s.DueSchedules(t0+60_000, 10)
	require.NoError(t, err)
	require.Len(t, due, 1, "not the paused one")
	require.Equal(t, "a", due[0].Name)
	due, err = f.s.DueSchedules(t0+59_999, 10)
	require.NoError(t, err)
	require.Empty(t, due)

	for _, tc := range []struct {
		name   string
		sched  string
		period int64
	}{
		{"a period already handled, or never due", "a", t0 + 1},
		{"a paused schedule", "b", t0 + 30_000},
		{"a schedule that does not exist", "c", t0 + 60_000},
	} {
		before := f.snapshot()
		err := f.db.Tx(func() error { return f.s.AdvanceSchedule(t0+60_000, tc.sched, tc.period, t0+120_000, 7, "") })
		require.ErrorIs(t, err, do.ErrGuard, tc.name)
		require.Equal(t, before, f.snapshot(), tc.name)
	}
	tx(t, f.db, func() error { return f.s.AdvanceSchedule(t0+60_001, "a", t0+60_000, t0+120_000, 7, "") })
	got, ok, err := f.s.GetSchedule("a")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, [4]int64{t0 + 120_000, t0 + 60_000, 7, t0 + 60_001}, [4]int64{got.NextAt, got.LastAt, got.LastJob, got.UpdatedAt})
	require.ErrorIs(t, f.db.Tx(func() error { return f.s.AdvanceSchedule(t0+60_002, "a", t0+60_000, t0+120_000, 8, "") }),
		do.ErrGuard, "the same period twice")
	tx(t, f.db, func() error { return f.s.AdvanceSchedule(t0+120_000, "a", t0+120_000, t0+180_000, 0, "queue paused") })
	got, _, _ = f.s.GetSchedule("a")
	require.Equal(t, [2]any{int64(7), "queue paused"}, [2]any{got.LastJob, got.LastError}, "a period without a job keeps the last job")

	replaced := put(t0+130_000, fencestore.Schedule{Name: "a", Cron: "*/5 * * * *", Job: []byte(`{"kind":"k2"}`), NextAt: t0 + 300_000})
	require.Equal(t, [5]any{"*/5 * * * *", t0 + 300_000, t0 + 120_000, int64(7), t0},
		[5]any{replaced.Cron, replaced.NextAt, replaced.LastAt, replaced.LastJob, replaced.CreatedAt})

	list, err := f.s.ListSchedules()
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, []string{list[0].Name, list[1].Name})
	var deleted bool
	tx(t, f.db, func() (err error) { deleted, err = f.s.DeleteSchedule("a"); return })
	require.True(t, deleted)
	tx(t, f.db, func() (err error) { deleted, err = f.s.DeleteSchedule("a"); return })
	require.False(t, deleted)
	_, ok, err = f.s.GetSchedule("a")
	require.NoError(t, err)
	require.False(t, ok)
}

// A job keeps its newest RejectionsKept refusals, oldest first.
func TestRejectionsAreBounded(t *testing.T) {
	t.Parallel()
	f := newJobs(t)
	j := f.running(job("k"))
	c := claimOf(j)
	c.Worker = "intruder"
	const n = fencestore.RejectionsKept + 5
	for i := range n {
		err := f.serve(func() error { _, _, err := f.s.Heartbeat(t0+int64(i), j.ID, c, nil); return err })
		requireCode(t, err, api.CodeOtherWorker)
	}
	rs := f.rejections(j.ID)
	require.Len(t, rs, fencestore.RejectionsKept)
	require.Equal(t, t0+5, rs[0].At, "the oldest went")
	require.Equal(t, t0+n-1, rs[len(rs)-1].At)
}
