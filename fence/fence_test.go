package fence_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stile-run/stile/api"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/fence"
)

const token = "0123456789abcdef0123456789abcdef"

func running() fence.Job {
	return fence.Job{ID: 7, State: fence.StateRunning, Attempt: 2, Failures: 1, MaxAttempts: 3,
		LeaseMs: 1000, Worker: "a", LeaseToken: token, LeaseUntil: 5000}
}

func holder() fence.Claim { return fence.Claim{Worker: "a", Attempt: 2, Token: token} }

func TestCheckReport(t *testing.T) {
	t.Parallel()
	ended := func(o fence.Outcome) fence.Job {
		j := running()
		j.State = fence.StateCompleted
		if o != fence.OutcomeCompleted {
			j.State = fence.StateRetryable
		}
		j.Worker, j.LeaseToken, j.LeaseUntil = "", "", 0
		return j
	}
	rec := func(o fence.Outcome) *fence.Ended {
		return &fence.Ended{Attempt: 2, Worker: "a", LeaseToken: token, Outcome: o}
	}
	tests := []struct {
		name string
		job  fence.Job
		last *fence.Ended
		mod  func(*fence.Claim)
		out  fence.Outcome
		now  int64
		code api.Code // "" = accepted
		dup  bool
	}{
		{name: "holder with live lease", job: running(), now: 4999},
		{name: "lease ends exactly at lease_until", job: running(), now: 5000, code: api.CodeLeaseExpired},
		{name: "older attempt", job: running(), mod: func(c *fence.Claim) { c.Attempt = 1 }, now: 10, code: api.CodeStaleAttempt},
		{name: "future attempt", job: running(), mod: func(c *fence.Claim) { c.Attempt = 3 }, now: 10, code: api.CodeStaleAttempt},
		{name: "other worker", job: running(), mod: func(c *fence.Claim) { c.Worker = "b" }, now: 10, code: api.CodeOtherWorker},
		{name: "forged token", job: running(), mod: func(c *fence.Claim) { c.Token = "guess" }, now: 10, code: api.CodeBadToken},
		{name: "empty token", job: running(), mod: func(c *fence.Claim) { c.Token = "" }, now: 10, code: api.CodeBadToken},
		{name: "token prefix", job: running(), mod: func(c *fence.Claim) { c.Token = token[:31] }, now: 10, code: api.CodeBadToken},
		{name: "expired and processed", job: ended(fence.OutcomeLeaseExpired), last: rec(fence.OutcomeLeaseExpired), now: 10, code: api.CodeLeaseExpired},
		{name: "duplicate of the same outcome", job: ended(fence.OutcomeCompleted), last: rec(fence.OutcomeCompleted), now: 9999, dup: true},
		{name: "different outcome after completion", job: ended(fence.OutcomeCompleted), last: rec(fence.OutcomeCompleted), out: fence.OutcomeFailed, now: 10, code: api.CodeAlreadyReported},
		{name: "duplicate from another worker", job: ended(fence.OutcomeCompleted), last: rec(fence.OutcomeCompleted), mod: func(c *fence.Claim) { c.Worker = "b" }, now: 10, code: api.CodeOtherWorker},
		{name: "duplicate with a forged token", job: ended(fence.OutcomeCompleted), last: rec(fence.OutcomeCompleted), mod: func(c *fence.Claim) { c.Token = "00" }, now: 10, code: api.CodeBadToken},
		{name: "ended without a record", job: ended(fence.OutcomeFailed), now: 10, code: api.CodeLeaseExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := holder()
			if tt.mod != nil {
				tt.mod(&c)
			}
			out := tt.out
			if out == "" {
				out = fence.OutcomeCompleted
			}
			v := fence.CheckReport(tt.job, tt.last, c, out, tt.now)
			require.Equal(t, tt.dup, v.Duplicate)
			if tt.code == "" {
				require.Nil(t, v.Rejected)
				return
			}
			require.NotNil(t, v.Rejected)
			require.Equal(t, tt.code, v.Rejected.Code)
			require.NotEmpty(t, v.Rejected.Message)
			require.True(t, errors.Is(v.Rejected, api.ErrStale))
		})
	}
}

func TestCheckHeartbeat(t *testing.T) {
	t.Parallel()
	j := running()
	require.Nil(t, fence.CheckHeartbeat(j, holder(), 4999))
	require.Equal(t, int64(5999), fence.ExtendLease(j, 4999))
	require.Equal(t, api.CodeLeaseExpired, fence.CheckHeartbeat(j, holder(), 5000).Code)

	j.State, j.Worker, j.LeaseToken = fence.StateRetryable, "", ""
	require.Equal(t, api.CodeLeaseExpired, fence.CheckHeartbeat(j, holder(), 10).Code)
	c := holder()
	c.Attempt = 1
	require.Equal(t, api.CodeStaleAttempt, fence.CheckHeartbeat(running(), c, 10).Code)
}

func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	b := fence.Backoff{BaseMs: 1000, MaxMs: 10_000}
	require.Equal(t, int64(1000), b.Delay(1, 0))
	require.Equal(t, int64(2000), b.Delay(2, 0))
	require.Equal(t, int64(8000), b.Delay(4, 0))
	require.Equal(t, int64(10_000), b.Delay(5, 0))
	require.Equal(t, int64(10_000), b.Delay(60, 0), "no overflow for large n")
	require.Equal(t, int64(751), b.Delay(1, 0.999999999), "jitter takes less than a quarter")
	require.Equal(t, int64(1750), b.Delay(2, 0.5))
	require.Equal(t, int64(1000), b.Delay(1, 7), "out-of-range jitter is ignored")
	require.Equal(t, int64(1000), b.Delay(1, -0.5), "negative jitter is ignored")
	require.Equal(t, int64(1000), b.Delay(1, math.NaN()), "NaN jitter is ignored")
}

func TestAfterFailure(t *testing.T) {
	t.Parallel()
	b := fence.Backoff{BaseMs: 100, MaxMs: 1000}
	j := running() // Failures 1 of MaxAttempts 3
	n := fence.AfterFailure(j, b, 50, 0)
	require.Equal(t, fence.Next{State: fence.StateRetryable, Failures: 2, RunAt: 250}, n)
	j.Failures = 2
	n = fence.AfterFailure(j, b, 50, 0)
	require.Equal(t, fence.Next{State: fence.StateDead, Failures: 3, RunAt: 50}, n)
}

// A job whose cancel was requested never runs again: a report that would
// retry or snooze it ends it cancelled; one that completes it stands.
func TestReportAfterACancelRequest(t *testing.T) {
	t.Parallel()
	b := fence.Backoff{BaseMs: 100, MaxMs: 1000}
	j := running() // Failures 1 of MaxAttempts 3
	j.CancelRequested = true
	j.RunAt = 20
	for _, r := range []fence.Report{{Outcome: fence.OutcomeFailed}, {Outcome: fence.OutcomeSnoozed, SnoozeMs: 500}} {
		n := fence.AfterReport(j, r, b, 50, 0)
		require.Equal(t, fence.Next{State: fence.StateCancelled, Failures: 1, RunAt: 20}, n,
			"%s after a cancel request ends the job cancelled, as an expiry after it does", r.Outcome)
		require.Equal(t, fence.AfterExpiry(j, b, 50, 0), n)
	}
	require.Equal(t, fence.StateCompleted, fence.AfterReport(j, fence.Report{Outcome: fence.OutcomeCompleted}, b, 50, 0).State)
	require.Equal(t, fence.StateDead, fence.AfterReport(j, fence.Report{Outcome: fence.OutcomeFailed, Final: true}, b, 50, 0).State)
	j.CancelRequested = false
	require.Equal(t, fence.StateScheduled, fence.AfterReport(j, fence.Report{Outcome: fence.OutcomeSnoozed, SnoozeMs: 500}, b, 50, 0).State)
}

// A snooze ends the attempt without spending the retry budget: the job is
// scheduled after the delay, or available at once for a snooze of no time
// (nothing would be due to release it later), unless a cancel was
// requested.
func TestSnooze(t *testing.T) {
	t.Parallel()
	b := fence.Backoff{BaseMs: 100, MaxMs: 1000}
	for _, tc := range []struct {
		name     string
		snoozeMs int64
		cancel   bool
		want     fence.Next
	}{
		{name: "for a while: scheduled after it", snoozeMs: 500,
			want: fence.Next{State: fence.StateScheduled, Failures: 1, RunAt: 550}},
		{name: "for a millisecond: scheduled", snoozeMs: 1,
			want: fence.Next{State: fence.StateScheduled, Failures: 1, RunAt: 51}},
		{name: "for no time: available at once", snoozeMs: 0,
			want: fence.Next{State: fence.StateAvailable, Failures: 1, RunAt: 50}},
		{name: "for less than no time: available at once", snoozeMs: -5,
			want: fence.Next{State: fence.StateAvailable, Failures: 1, RunAt: 50}},
		{name: "for no time after a cancel request: cancelled", snoozeMs: 0, cancel: true,
			want: fence.Next{State: fence.StateCancelled, Failures: 1, RunAt: 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j := running() // Failures 1 of MaxAttempts 3
			j.RunAt, j.CancelRequested = 20, tc.cancel
			got := fence.AfterReport(j, fence.Report{Outcome: fence.OutcomeSnoozed, SnoozeMs: tc.snoozeMs}, b, 50, 0)
			require.Equal(t, tc.want, got)
		})
	}
}
