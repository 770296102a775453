package fence_test

import (
	"math"
	"testing"

	"github.com/stile-run/stile/fence"
)

// FuzzFence checks the fence's invariants over arbitrary jobs and claims:
//   - a report or heartbeat is accepted only with the job's current attempt,
//     its worker, a token minted from its nonce, and (unless it is a
//     duplicate of an already recorded outcome) a live lease;
//   - a duplicate is only ever recognised for an attempt that has ended with
//     that very outcome, by the same worker and token;
//   - a failure never decreases the failure count, and a retry is never
//     scheduled before now nor after now + MaxMs.
//
// Run longer with: go test ./fence -run=^$ -fuzz=FuzzFence -fuzztime=60s
func FuzzFence(f *testing.F) {
	f.Add(int64(2), int64(2), "a", "a", true, true, int64(4999), int64(5000), byte(0), int64(1), int64(3), byte(0), 0.5)
	f.Add(int64(2), int64(1), "a", "a", true, true, int64(10), int64(5000), byte(1), int64(2), int64(3), byte(2), 0.0)
	f.Add(int64(3), int64(3), "a", "b", false, true, int64(6000), int64(5000), byte(2), int64(0), int64(1), byte(1), 0.99)
	f.Fuzz(func(t *testing.T, jobAttempt, claimAttempt int64, holderW, claimW string, running, goodToken bool,
		now, leaseUntil int64, lastOutcome byte, failures, maxAttempts int64, reported byte, jitter float64) {
		if maxAttempts < 1 || failures < 0 || failures >= maxAttempts || maxAttempts > 1000 {
			return
		}
		outcomes := []fence.Outcome{fence.OutcomeCompleted, fence.OutcomeFailed, fence.OutcomeLeaseExpired}
		j := fence.Job{ID: 42, Attempt: jobAttempt, Failures: failures, MaxAttempts: maxAttempts, LeaseMs: 1000}
		var last *fence.Ended
		if running {
			j.State, j.Worker, j.LeaseToken, j.LeaseUntil = fence.StateRunning, holderW, "token", leaseUntil
		} else {
			j.State = fence.StateRetryable
			last = &fence.Ended{Attempt: jobAttempt, Worker: holderW, LeaseToken: "token", Outcome: outcomes[int(lastOutcome)%3]}
		}
		c := fence.Claim{Worker: claimW, Attempt: claimAttempt, Token: "token"}
		if !goodToken {
			c.Token = "forged"
		}
		o := outcomes[int(reported)%2]

		v := fence.CheckReport(j, last, c, o, now)
		accepted := v.Rejected == nil
		matches := claimAttempt == jobAttempt && claimW == holderW && goodToken
		if accepted && !matches {
			t.Fatalf("accepted a report that does not match the claim: %+v %+v", j, c)
		}
		if accepted && !v.Duplicate && !fence.Live(j, now) {
			t.Fatalf("accepted a non-duplicate report without a live lease: %+v now=%d", j, now)
		}
		if v.Duplicate && (running || last.Outcome != o) {
			t.Fatalf("duplicate recognised for a running job or another outcome: %+v %+v", j, last)
		}
		if running && matches && now < leaseUntil && !accepted {
			t.Fatalf("refused the live holder: %v", v.Rejected)
		}
		if hb := fence.CheckHeartbeat(j, c, now); hb == nil && !(matches && fence.Live(j, now)) {
			t.Fatalf("heartbeat accepted without a live matching claim: %+v %+v", j, c)
		}

		b := fence.Backoff{BaseMs: 100, MaxMs: 10_000}
		if now > 1<<50 || now < -(1<<50) {
			return
		}
		n := fence.AfterFailure(j, b, now, jitter)
		if n.Failures != failures+1 {
			t.Fatalf("failures %d -> %d", failures, n.Failures)
		}
		if n.State == fence.StateRetryable && (n.RunAt < now || n.RunAt > now+b.MaxMs) {
			t.Fatalf("retry at %d outside [%d, %d]", n.RunAt, now, now+b.MaxMs)
		}
		if (n.State == fence.StateDead) != (n.Failures >= maxAttempts) {
			t.Fatalf("dead=%v with %d of %d failures", n.State == fence.StateDead, n.Failures, maxAttempts)
		}
	})
}

// FuzzAfterReport checks what an accepted report leads to, over arbitrary
// jobs, reports and backoffs:
//   - a completion stands, even after a cancel request; any other outcome
//     that would run the job again ends it cancelled once one was requested
//     (a failure that spends the budget still ends it dead);
//   - a snooze spends no budget: it schedules the job after its delay, or
//     makes it available at once when the delay is none, so a scheduled
//     job is always due after now;
//   - a failure counts one more: retried after now and at most MaxMs later
//     while the budget lasts, dead after that or when final;
//   - the failure count never decreases, and the same inputs decide the same.
//
// Run longer with: go test ./fence -run=^$ -fuzz=FuzzAfterReport -fuzztime=60s
func FuzzAfterReport(f *testing.F) {
	f.Add(byte(3), int64(0), false, false, int64(1), int64(3), int64(50), int64(20), int64(100), int64(1000), 0.5)
	f.Add(byte(3), int64(500), false, true, int64(0), int64(1), int64(50), int64(20), int64(100), int64(1000), 0.0)
	f.Add(byte(1), int64(0), false, false, int64(1), int64(3), int64(50), int64(0), int64(1), int64(1), math.NaN())
	f.Add(byte(1), int64(0), true, false, int64(2), int64(3), int64(7), int64(5), int64(10), int64(100), 0.99)
	f.Add(byte(0), int64(0), false, true, int64(0), int64(5), int64(7), int64(5), int64(10), int64(100), 0.25)
	f.Add(byte(1), int64(500), false, true, int64(0), int64(1), int64(50), int64(20), int64(100), int64(1000), 0.0)
	f.Fuzz(func(t *testing.T, outcome byte, snoozeMs int64, final, cancel bool, failures, maxAttempts, now, runAt,
		baseMs, maxMs int64, jitter float64) {
		if maxAttempts < 1 || maxAttempts > 1000 || failures < 0 || failures >= maxAttempts || now < 1 || now > 1<<50 ||
			runAt < 0 || baseMs < 1 || maxMs < baseMs || maxMs > 1<<40 || snoozeMs > 1<<40 {
			return
		}
		outcomes := []fence.Outcome{fence.OutcomeCompleted, fence.OutcomeFailed, fence.OutcomeCancelled, fence.OutcomeSnoozed}
		r := fence.Report{Outcome: outcomes[int(outcome)%len(outcomes)], Final: final, SnoozeMs: snoozeMs}
		j := running()
		j.Failures, j.MaxAttempts, j.RunAt, j.CancelRequested = failures, maxAttempts, runAt, cancel
		b := fence.Backoff{BaseMs: baseMs, MaxMs: maxMs}

		n := fence.AfterReport(j, r, b, now, jitter)
		if again := fence.AfterReport(j, r, b, now, jitter); again != n {
			t.Fatalf("the same report decided %+v, then %+v", n, again)
		}
		if n.Failures < failures {
			t.Fatalf("failures went from %d to %d", failures, n.Failures)
		}
		if (n.State == fence.StateScheduled || n.State == fence.StateRetryable) && n.RunAt <= now {
			t.Fatalf("%s at %d, not after now (%d)", n.State, n.RunAt, now)
		}
		switch {
		case r.Outcome == fence.OutcomeCompleted:
			if n.State != fence.StateCompleted || n.Failures != failures {
				t.Fatalf("a completion led to %+v", n)
			}
		case r.Outcome == fence.OutcomeCancelled || cancel && r.Outcome == fence.OutcomeSnoozed ||
			cancel && r.Outcome == fence.OutcomeFailed && !final && failures+1 < maxAttempts:
			// A failure that spends the last attempt ends the job dead,
			// cancel or not: it would not run again either way.
			if n.State != fence.StateCancelled || n.Failures != failures {
				t.Fatalf("%s (cancel requested %v) led to %+v", r.Outcome, cancel, n)
			}
		case r.Outcome == fence.OutcomeSnoozed:
			want := fence.Next{State: fence.StateScheduled, Failures: failures, RunAt: now + snoozeMs}
			if snoozeMs <= 0 {
				want = fence.Next{State: fence.StateAvailable, Failures: failures, RunAt: now}
			}
			if n != want {
				t.Fatalf("a snooze of %d ms at %d led to %+v, want %+v", snoozeMs, now, n, want)
			}
		case final:
			if n.State != fence.StateDead || n.Failures != failures+1 {
				t.Fatalf("a final failure led to %+v", n)
			}
		default:
			if n.Failures != failures+1 || (n.State == fence.StateDead) != (n.Failures >= maxAttempts) {
				t.Fatalf("failure %d of %d led to %+v", failures+1, maxAttempts, n)
			}
			if n.State == fence.StateRetryable && n.RunAt > now+maxMs {
				t.Fatalf("retry at %d, after now + MaxMs (%d)", n.RunAt, now+maxMs)
			}
		}
	})
}
