package fencestore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// A heartbeat extends the lease of the claim that holds it, never past the
// time limit nor after a cancel was requested, and counts itself; any
// other heartbeat is refused with the fence's code, audited, and changes
// nothing else.
func TestHeartbeat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		timeout int64                                                // the job's time limit (default 5,000 ms)
		setup   func(f *jobs, j fencestore.Job) (fence.Claim, int64) // the claim presented, and when
		code    api.Code                                             // "": accepted
		until   int64
		cancel  bool
	}{
		{name: "the holder, within its lease", setup: func(f *jobs, j fencestore.Job) (fence.Claim, int64) {
			return claimOf(j), t0 + 500
		}, until: t0 + 500 + 1_000},
		{name: "cut at the time limit", timeout: 1_200, setup: func(f *jobs, j fencestore.Job) (fence.Claim, int64) {
			return claimOf(j), t0 + 500
		}, until: t0 + 1_200},
		{name: "after a cancel was requested", setup: func(f *jobs, j fencestore.Job) (fence.Claim, int64) {
			tx(f.t, f.db, func() error { _, err := f.s.Cancel(t0+100, j.ID, "stop"); return err })
			return claimOf(j), t0 + 500
		}, until: t0 + 1_000, cancel: true},
		{name: "an attempt never claimed", setup: func(f *jobs, j fencestore.Job) (fence.Claim, int64) {
			c := claimOf(j)
			c.Attempt++
			return c, t0 + 500
		}, code: api.CodeStaleAttempt},
		{name: "another worker", setup: func(f *jobs, j fencestore.Job) (fence.Claim, int64) {
			c := claimOf(j)
			c.Worker = "intruder"
			return c, t0 + 500
		}, code: api.CodeOtherWorker},
		{name: "a wrong token", setup: func(f *jobs, j fencestore.Job) (fence.Claim, int64) {
			c := claimOf(j)
			c.Token = "0123456789abcdef0123456789abcdef"
			return c, t0 + 500
		}, code: api.CodeBadToken},
		{name: "at the end of the lease", setup: func(f *jobs, j fencestore.Job) (fence.Claim, int64) {
			return claimOf(j), j.LeaseUntil
		}, code: api.CodeLeaseExpired},
		{name: "after the attempt was reported", setup: func(f *jobs, j fencestore.Job) (fence.Claim, int64) {
			tx(f.t, f.db, func() error {
				_, err := f.s.Report(t0+100, j.ID, fencestore.Report{Claim: claimOf(j),
					Report: fence.Report{Outcome: fence.OutcomeCompleted}}, 0)
				return err
			})
			return claimOf(j), t0 + 200
		}, code: api.CodeLeaseExpired},
		{name: "of an attempt claimed over", setup: func(f *jobs, j fencestore.Job) (fence.Claim, int64) {
			f.due(j.LeaseUntil)
			f.due(j.LeaseUntil + 100) // the backoff is over
			again := f.claim(j.LeaseUntil+100, "w2", 1)
			require.Len(f.t, again, 1)
			return claimOf(j), j.LeaseUntil + 200
		}, code: api.CodeStaleAttempt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newJobs(t)
			n := job("k")
			n.TimeoutMs = 5_000
			if tc.timeout != 0 {
				n.TimeoutMs = tc.timeout
			}
			j := f.running(n)
			c, now := tc.setup(f, j)
			before, was := f.snapshot(), f.get(j.ID)

			var until int64
			var cancel bool
			err := f.serve(func() (err error) { until, cancel, err = f.s.Heartbeat(now, j.ID, c, nil); return })

			if tc.code != "" {
				requireCode(t, err, tc.code)
				require.ErrorIs(t, err, api.ErrStale)
				require.Equal(t, before, f.snapshot(), "a refused heartbeat changes nothing")
				rs := f.rejections(j.ID)
				require.NotEmpty(t, rs, "but it is audited")
				last := rs[len(rs)-1]
				require.Equal(t, fencestore.Rejection{At: now, Request: "heartbeat", Worker: c.Worker, Attempt: c.Attempt,
					Code: string(tc.code), Message: last.Message}, last)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.until, until)
			require.Equal(t, tc.cancel, cancel)
			got := f.get(j.ID)
			want := was
			want.LeaseUntil, want.Heartbeats, want.LastHeartbeatAt = tc.until, 1, now
			require.Equal(t, want, got, "the lease and the count move, nothing else")
			require.Empty(t, f.rejections(j.ID))
		})
	}
}

// A report the fence accepts ends the attempt as the outcome says, records
// it in the history, frees its concurrency slot and clears the claim; one
// it refuses is audited and changes nothing else. The same report again is
// answered as a duplicate and writes nothing.
func TestReport(t *testing.T) {
	t.Parallel()
	const now = t0 + 500
	type want struct {
		state    fence.State
		failures int64
		runAt    int64
		finished bool
		lastErr  string
		output   string
		tags     string
	}
	completed := fencestore.Report{Report: fence.Report{Outcome: fence.OutcomeCompleted}, Output: []byte(`{"ok":true}`)}
	failed := fencestore.Report{Report: fence.Report{Outcome: fence.OutcomeFailed}, Error: "provider down"}
	for _, tc := range []struct {
		name        string
		maxAttempts int64                                       // default 3
		before      func(f *jobs, j fencestore.Job) fence.Claim // what happened first; the claim reported (nil: the holder's)
		report      fencestore.Report
		at          int64 // when (default now)
		code        api.Code
		duplicate   bool
		want        want
	}{
		{name: "completed", report: completed,
			want: want{state: fence.StateCompleted, runAt: t0, finished: true, output: `{"ok":true}`}},
		{name: "completed with tags", report: fencestore.Report{Report: fence.Report{Outcome: fence.OutcomeCompleted},
			Tags: []string{"b", "a", "b"}},
			want: want{state: fence.StateCompleted, runAt: t0, finished: true, tags: `["b","a"]`}},
		{name: "failed, with budget left: retried after the backoff", report: failed,
			want: want{state: fence.StateRetryable, failures: 1, runAt: now + 100, lastErr: "provider down"}},
		{name: "failed, its last attempt: dead", maxAttempts: 1, report: failed,
			want: want{state: fence.StateDead, failures: 1, runAt: now, finished: true, lastErr: "provider down"}},
		{name: "failed for good: dead whatever the budget",
			report: fencestore.Report{Report: fence.Report{Outcome: fence.OutcomeFailed, Final: true}, Error: "bad input"},
			want:   want{state: fence.StateDead, failures: 1, runAt: now, finished: true, lastErr: "bad input"}},
		{name: "cancelled", report: fencestore.Report{Report: fence.Report{Outcome: fence.OutcomeCancelled}, Error: "gave up"},
			want: want{state: fence.StateCancelled, runAt: t0, finished: true, lastErr: "gave up"}},
		{name: "snoozed: later, without spending the budget",
			report: fencestore.Report{Report: fence.Report{Outcome: fence.OutcomeSnoozed, SnoozeMs: 5_000}},
			want:   want{state: fence.StateScheduled, runAt: now + 5_000}},
		{name: "snoozed for no time: available at once",
			report: fencestore.Report{Report: fence.Report{Outcome: fence.OutcomeSnoozed}},
			want:   want{state: fence.StateAvailable, runAt: now}},
		{name: "failed after a cancel was requested: cancelled, not retried", report: failed,
			before: func(f *jobs, j fencestore.Job) fence.Claim {
				tx(f.t, f.db, func() error { _, err := f.s.Cancel(t0+100, j.ID, ""); return err })
				return claimOf(j)
			},
			want: want{state: fence.StateCancelled, runAt: t0, finished: true, lastErr: "provider down"}},
		{name: "completed after a cancel was requested: the work finished first", report: completed,
			before: func(f *jobs, j fencestore.Job) fence.Claim {
				tx(f.t, f.db, func() error { _, err := f.s.Cancel(t0+100, j.ID, ""); return err })
				return claimOf(j)
			},
			want: want{state: fence.StateCompleted, runAt: t0, finished: true, output: `{"ok":true}`}},
		{name: "an attempt never claimed", report: completed, code: api.CodeStaleAttempt,
			before: func(f *jobs, j fencestore.Job) fence.Claim { c := claimOf(j); c.Attempt++; return c }},
		{name: "another worker", report: completed, code: api.CodeOtherWorker,
			before: func(f *jobs, j fencestore.Job) fence.Claim { c := claimOf(j); c.Worker = "intruder"; return c }},
		{name: "a wrong token", report: completed, code: api.CodeBadToken,
			before: func(f *jobs, j fencestore.Job) fence.Claim {
				c := claimOf(j)
				c.Token = "0123456789abcdef0123456789abcdef"
				return c
			}},
		{name: "at the end of the lease", report: completed, at: t0 + 1_000, code: api.CodeLeaseExpired},
		{name: "after the lease expired and was noticed", report: completed, at: t0 + 1_100, code: api.CodeLeaseExpired,
			before: func(f *jobs, j fencestore.Job) fence.Claim {
				f.due(t0 + 1_000)
				return claimOf(j)
			}},
		{name: "of an attempt claimed over", report: completed, at: t0 + 1_200, code: api.CodeStaleAttempt,
			before: func(f *jobs, j fencestore.Job) fence.Claim {
				f.due(t0 + 1_000)
				f.due(t0 + 1_100) // the backoff is over
				require.Len(f.t, f.claim(t0+1_100, "w2", 1), 1)
				return claimOf(j)
			}},
		{name: "another outcome of an attempt already reported", report: failed, code: api.CodeAlreadyReported,
			before: func(f *jobs, j fencestore.Job) fence.Claim {
				tx(f.t, f.db, func() error {
					_, err := f.s.Report(t0+100, j.ID, fencestore.Report{Claim: claimOf(j), Report: completed.Report}, 0)
					return err
				})
				return claimOf(j)
			}},
		{name: "the same outcome again: a duplicate", report: completed, duplicate: true,
			before: func(f *jobs, j fencestore.Job) fence.Claim {
				tx(f.t, f.db, func() error {
					_, err := f.s.Report(t0+100, j.ID, fencestore.Report{Claim: claimOf(j), Report: completed.Report}, 0)
					return err
				})
				return claimOf(j)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newJobs(t)
			f.s.Limits = map[string]int{"acct": 1}
			n := job("k")
			n.ConcurrencyKey = "acct"
			if tc.maxAttempts != 0 {
				n.MaxAttempts = tc.maxAttempts
			}
			j := f.running(n)
			c := claimOf(j)
			if tc.before != nil {
				c = tc.before(f, j)
			}
			at := now
			if tc.at != 0 {
				at = tc.at
			}
			r := tc.report
			r.Claim = c
			before, was := f.snapshot(), f.get(j.ID)

			var res fencestore.ReportResult
			err := f.serve(func() (err error) { res, err = f.s.Report(at, j.ID, r, 0); return })

			switch {
			case tc.code != "":
				requireCode(t, err, tc.code)
				require.ErrorIs(t, err, api.ErrStale)
				require.Equal(t, before, f.snapshot(), "a refused report changes nothing")
				rs := f.rejections(j.ID)
				require.Len(t, rs, 1, "but it is audited")
				require.Equal(t, fencestore.Rejection{At: at, Request: "report", Worker: c.Worker, Attempt: c.Attempt,
					Outcome: string(r.Outcome), Code: string(tc.code), Message: rs[0].Message}, rs[0])
				return
			case tc.duplicate:
				require.NoError(t, err)
				require.True(t, res.Duplicate)
				require.Equal(t, before, f.snapshot(), "a duplicate writes nothing")
				require.Empty(t, f.rejections(j.ID))
				return
			}
			require.NoError(t, err)
			require.False(t, res.Duplicate)
			got := f.get(j.ID)
			require.Equal(t, [4]any{got.State, got.Failures, got.RunAt, got.FinishedAt},
				[4]any{res.Job.State, res.Job.Failures, res.Job.RunAt, res.Job.FinishedAt}, "the result is the job as stored")
			w := tc.want
			require.Equal(t, w.state, got.State)
			require.Equal(t, w.failures, got.Failures)
			require.Equal(t, w.runAt, got.RunAt)
			require.Equal(t, w.lastErr, got.LastError)
			require.Equal(t, w.output, string(got.Output))
			finished := int64(0)
			if w.finished {
				finished = at
			}
			require.Equal(t, finished, got.FinishedAt)
			if w.tags == "" {
				w.tags = "[]"
			}
			require.JSONEq(t, w.tags, string(got.Tags))
			require.Equal(t, was.Attempt, got.Attempt, "the attempt number stays until the next claim")
			require.Equal(t, [4]any{"", "", int64(0), int64(0)}, [4]any{got.Worker, got.LeaseToken, got.ClaimedAt, got.LeaseUntil},
				"the claim is cleared")
			require.False(t, got.CancelRequested)
			require.Equal(t, []fencestore.Attempt{{Attempt: was.Attempt, Worker: "w", ClaimedAt: t0, LeaseUntil: was.LeaseUntil,
				EndedAt: at, Outcome: string(r.Outcome), Error: r.Error, NoticedBy: "report"}}, f.attempts(j.ID))
			limits, err := f.s.ListLimits()
			require.NoError(t, err)
			require.Equal(t, []fencestore.Limit{{Key: "acct", Slots: 1, InUse: 0}}, limits, "the slot is free again")
			require.Empty(t, f.rejections(j.ID))
		})
	}
}
