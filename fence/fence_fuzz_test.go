package fence_test

import (
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
