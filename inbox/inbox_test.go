package inbox_test

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stile-run/stile/api"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/inbox"
)

func TestHead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		entry   *inbox.Entry
		now     int64
		verdict inbox.Verdict
		wake    int64
	}{
		{name: "nothing open", entry: nil, now: 100, verdict: inbox.Deliver},
		{name: "pending inside its lease", entry: &inbox.Entry{State: inbox.Pending, LeaseUntil: 5000}, now: 4999,
			verdict: inbox.Hold, wake: 5000},
		{name: "pending long before its lease ends", entry: &inbox.Entry{State: inbox.Pending, LeaseUntil: 5000, RunAt: 9000}, now: 0,
			verdict: inbox.Hold, wake: 5000},
		{name: "pending exactly at lease end", entry: &inbox.Entry{State: inbox.Pending, LeaseUntil: 5000}, now: 5000,
			verdict: inbox.Redeliver},
		{name: "pending after lease end", entry: &inbox.Entry{State: inbox.Pending, LeaseUntil: 5000}, now: 7000,
			verdict: inbox.Redeliver},
		{name: "retry before run_at", entry: &inbox.Entry{State: inbox.Retry, RunAt: 8000, LeaseUntil: 3000}, now: 7999,
			verdict: inbox.Hold, wake: 8000},
		{name: "retry exactly at run_at", entry: &inbox.Entry{State: inbox.Retry, RunAt: 8000}, now: 8000,
			verdict: inbox.Redeliver},
		{name: "retry after run_at, old lease in the future", entry: &inbox.Entry{State: inbox.Retry, RunAt: 8000, LeaseUntil: 99999}, now: 9000,
			verdict: inbox.Redeliver},
		{name: "ready", entry: &inbox.Entry{State: inbox.Ready}, now: 1, verdict: inbox.Redeliver},
		{name: "ready with a lease still in the future", entry: &inbox.Entry{State: inbox.Ready, LeaseUntil: 5000, RunAt: 5000}, now: 1,
			verdict: inbox.Redeliver},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, wake := inbox.Head(tt.entry, tt.now)
			require.Equal(t, tt.verdict, v)
			require.Equal(t, tt.wake, wake)
		})
	}
}

const (
	handler = "refunds"
	seq     = int64(42)
	claim   = "claim-0123456789abcdef"
)

func entry(s inbox.State) *inbox.Entry {
	return &inbox.Entry{Handler: handler, Seq: seq, State: s, ClaimID: claim, Worker: "w", Attempt: 3,
		Failures: 1, ClaimedAt: 1000, LeaseUntil: 5000, RunAt: 6000}
}

// reported is an entry whose current claim reported o.
func reported(s inbox.State, o inbox.Outcome) *inbox.Entry {
	e := entry(s)
	e.Reported = o
	return e
}

func TestCheckSettle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		entry   *inbox.Entry
		claimID string // "" = claim
		outcome inbox.Outcome
		earlier bool
		code    api.Code // "" = not rejected
		dup     bool
		msgHas  []string // besides handler and seq
	}{
		{name: "never delivered", entry: nil, outcome: inbox.OutcomeSucceeded, code: api.CodeUnknownClaim,
			msgHas: []string{"never delivered", "claim it first"}},
		{name: "never delivered, failed", entry: nil, outcome: inbox.OutcomeFailed, code: api.CodeUnknownClaim},

		{name: "pending taken over", entry: entry(inbox.Pending), claimID: "other", outcome: inbox.OutcomeSucceeded,
			code: api.CodeClaimTakenOver, msgHas: []string{"was taken over", "attempt 3 holds it now"}},
		{name: "retry taken over", entry: entry(inbox.Retry), claimID: "other", outcome: inbox.OutcomeFailed,
			code: api.CodeClaimTakenOver, msgHas: []string{"was taken over", "attempt 3"}},
		{name: "ready taken over", entry: entry(inbox.Ready), claimID: "other", outcome: inbox.OutcomeDelayed,
			code: api.CodeClaimTakenOver, msgHas: []string{"was taken over"}},
		{name: "empty claim id against a claimed entry", entry: entry(inbox.Pending), claimID: "-", outcome: inbox.OutcomeSucceeded,
			code: api.CodeClaimTakenOver},
		{name: "claim id prefix", entry: entry(inbox.Pending), claimID: claim[:len(claim)-1], outcome: inbox.OutcomeSucceeded,
			code: api.CodeClaimTakenOver},
		{name: "succeeded under another claim", entry: entry(inbox.Succeeded), claimID: "other", outcome: inbox.OutcomeSucceeded,
			code: api.CodeClaimTakenOver, msgHas: []string{"was succeeded under another claim (attempt 3)"}},
		{name: "skipped under another claim", entry: entry(inbox.Skipped), claimID: "other", outcome: inbox.OutcomeFailed,
			code: api.CodeClaimTakenOver, msgHas: []string{"was skipped under another claim (attempt 3)"}},

		{name: "succeeded twice", entry: entry(inbox.Succeeded), outcome: inbox.OutcomeSucceeded, dup: true},
		{name: "succeeded twice with earlier open", entry: entry(inbox.Succeeded), outcome: inbox.OutcomeSucceeded, earlier: true, dup: true},
		{name: "failed after success", entry: entry(inbox.Succeeded), outcome: inbox.OutcomeFailed,
			code: api.CodeAlreadySettled, msgHas: []string{"already succeeded under this claim"}},
		{name: "delayed after success", entry: entry(inbox.Succeeded), outcome: inbox.OutcomeDelayed,
			code: api.CodeAlreadySettled, msgHas: []string{"already succeeded"}},
		{name: "skipped, same claim, succeeded", entry: entry(inbox.Skipped), outcome: inbox.OutcomeSucceeded,
			code: api.CodeAlreadySettled, msgHas: []string{"skipped by an operator"}},
		{name: "skipped, same claim, failed", entry: entry(inbox.Skipped), outcome: inbox.OutcomeFailed,
			code: api.CodeAlreadySettled, msgHas: []string{"skipped by an operator"}},

		{name: "failed twice", entry: reported(inbox.Retry, inbox.OutcomeFailed), outcome: inbox.OutcomeFailed, dup: true},
		{name: "delayed twice", entry: reported(inbox.Retry, inbox.OutcomeDelayed), outcome: inbox.OutcomeDelayed, dup: true},
		{name: "delayed after failed", entry: reported(inbox.Retry, inbox.OutcomeFailed), outcome: inbox.OutcomeDelayed, earlier: true,
			code: api.CodeAlreadySettled, msgHas: []string{"already reported failed"}},
		{name: "succeeded after failed", entry: reported(inbox.Retry, inbox.OutcomeFailed), outcome: inbox.OutcomeSucceeded,
			code: api.CodeAlreadySettled, msgHas: []string{"already reported failed"}},
		// The retry's time came and nobody claimed the delivery again: the
		// claim's report still stands (found by the reactions model test).
		{name: "failed again once ready", entry: reported(inbox.Ready, inbox.OutcomeFailed), outcome: inbox.OutcomeFailed, dup: true},
		{name: "succeeded once ready after failed", entry: reported(inbox.Ready, inbox.OutcomeFailed), outcome: inbox.OutcomeSucceeded,
			code: api.CodeAlreadySettled, msgHas: []string{"already reported failed"}},
		{name: "delayed again once ready", entry: reported(inbox.Ready, inbox.OutcomeDelayed), outcome: inbox.OutcomeDelayed, dup: true},

		{name: "pending succeeds past an open earlier event", entry: entry(inbox.Pending), outcome: inbox.OutcomeSucceeded, earlier: true,
			code: api.CodeOutOfOrder, msgHas: []string{"cannot succeed before"}},
		{name: "ready succeeds past an open earlier event", entry: entry(inbox.Ready), outcome: inbox.OutcomeSucceeded, earlier: true,
			code: api.CodeOutOfOrder, msgHas: []string{"cannot succeed before"}},

		{name: "pending succeeded", entry: entry(inbox.Pending), outcome: inbox.OutcomeSucceeded},
		{name: "pending failed", entry: entry(inbox.Pending), outcome: inbox.OutcomeFailed},
		{name: "pending delayed", entry: entry(inbox.Pending), outcome: inbox.OutcomeDelayed},
		{name: "ready (lease ran out, not taken over) succeeded", entry: entry(inbox.Ready), outcome: inbox.OutcomeSucceeded},
		{name: "ready failed", entry: entry(inbox.Ready), outcome: inbox.OutcomeFailed},
		{name: "ready delayed", entry: entry(inbox.Ready), outcome: inbox.OutcomeDelayed},
		{name: "pending failed with earlier open", entry: entry(inbox.Pending), outcome: inbox.OutcomeFailed, earlier: true},
		{name: "ready failed with earlier open", entry: entry(inbox.Ready), outcome: inbox.OutcomeFailed, earlier: true},
		{name: "pending delayed with earlier open", entry: entry(inbox.Pending), outcome: inbox.OutcomeDelayed, earlier: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := tt.claimID
			switch id {
			case "":
				id = claim
			case "-":
				id = ""
			}
			dup, rej := inbox.CheckSettle(tt.entry, handler, seq, id, tt.outcome, tt.earlier)
			require.Equal(t, tt.dup, dup)
			if tt.code == "" {
				require.Nil(t, rej)
				return
			}
			require.NotNil(t, rej)
			require.Equal(t, tt.code, rej.Code)
			require.True(t, errors.Is(rej, api.ErrStale))
			require.Equal(t, string(rej.Code)+": "+rej.Message, rej.Error())
			require.Equal(t, 409, rej.Status)
			require.NotContains(t, rej.Message, "\n", "one line")
			require.Contains(t, rej.Message, handler)
			require.Contains(t, rej.Message, "event "+strconv.FormatInt(seq, 10)+" ")
			for _, s := range tt.msgHas {
				require.Contains(t, rej.Message, s)
			}
		})
	}
}

// A settlement under another claim is told whether the delivery is still
// open (taken over) or was settled by someone else.
func TestCheckSettleTakenOverMessages(t *testing.T) {
	t.Parallel()
	msg := func(s inbox.State) string {
		_, rej := inbox.CheckSettle(entry(s), handler, seq, "stale", inbox.OutcomeSucceeded, false)
		require.NotNil(t, rej)
		require.Equal(t, api.CodeClaimTakenOver, rej.Code)
		return rej.Message
	}
	open := msg(inbox.Pending)
	require.Equal(t, open, msg(inbox.Retry))
	require.Equal(t, open, msg(inbox.Ready))
	require.NotEqual(t, open, msg(inbox.Succeeded))
	require.NotEqual(t, open, msg(inbox.Skipped))
	require.NotEqual(t, msg(inbox.Succeeded), msg(inbox.Skipped))
}

func TestStateOpen(t *testing.T) {
	t.Parallel()
	for s, open := range map[inbox.State]bool{inbox.Pending: true, inbox.Retry: true, inbox.Ready: true,
		inbox.Succeeded: false, inbox.Skipped: false, "": false, "bogus": false} {
		require.Equal(t, open, s.Open(), "%q", s)
	}
}

func TestHeld(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(1000), inbox.Held(500))
	require.Equal(t, int64(0), inbox.Held(0))
}

func TestAfterFailure(t *testing.T) {
	t.Parallel()
	b := fence.Backoff{BaseMs: 100, MaxMs: 1000}
	tests := []struct {
		name     string
		failures int64
		now      int64
		jitter   float64
		runAt    int64
	}{
		{name: "first failure", failures: 0, now: 50, runAt: 150},
		{name: "second failure", failures: 1, now: 50, runAt: 250},
		{name: "third failure with jitter", failures: 2, now: 1000, jitter: 0.5, runAt: 1350},
		{name: "capped", failures: 30, now: 0, runAt: 1000},
		{name: "out-of-range jitter ignored", failures: 0, now: 0, jitter: 3, runAt: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := *entry(inbox.Pending)
			e.Failures = tt.failures
			runAt, failures := inbox.AfterFailure(e, b, tt.now, tt.jitter)
			require.Equal(t, tt.failures+1, failures)
			require.Equal(t, tt.now+b.Delay(tt.failures+1, tt.jitter), runAt, "backoff of the new failure count")
			require.Equal(t, tt.runAt, runAt)
			require.Equal(t, tt.failures, e.Failures, "the entry is not changed")
		})
	}
}

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestKey(t *testing.T) {
	t.Parallel()
	k := inbox.Key("tenant-1", "refunds", 42)
	require.Regexp(t, hex32, k)
	require.Equal(t, k, inbox.Key("tenant-1", "refunds", 42), "deterministic")

	seen := map[string]string{}
	for _, c := range []struct {
		tenant, handler string
		seq             int64
	}{
		{"tenant-1", "refunds", 42},
		{"tenant-2", "refunds", 42},
		{"tenant-1", "refund", 42},
		{"tenant-1", "refunds", 43},
		{"tenant-1", "refunds", -42},
		{"tenant-1", "refunds", 0},
		{"", "refunds", 42},
		{"tenant-1", "", 42},
		// Concatenations that would collide without the length prefixes.
		{"t", "a", 12},
		{"t", "a1", 2},
		{"ta", "", 12},
		{"", "ta", 12},
		{"t", "a12", 0},
		{"tenant", "1refunds", 42},
		{"tenant1", "refunds", 42},
	} {
		got := inbox.Key(c.tenant, c.handler, c.seq)
		require.Regexp(t, hex32, got)
		desc := c.tenant + "|" + c.handler + "|" + strconv.FormatInt(c.seq, 10)
		prev, dup := seen[got]
		require.False(t, dup, "%s and %s share key %s", desc, prev, got)
		seen[got] = desc
	}
}

// A delivery no replay opened keeps its key; each replay gives it one of
// its own, unlike every other delivery's.
func TestReplayKey(t *testing.T) {
	t.Parallel()
	require.Equal(t, inbox.Key("tenant-1", "refunds", 42), inbox.ReplayKey("tenant-1", "refunds", 42, 0))
	seen := map[string]bool{inbox.Key("tenant-1", "refunds", 42): true, inbox.Key("tenant-1", "refunds", 1): true}
	for _, k := range []string{inbox.ReplayKey("tenant-1", "refunds", 42, 1), inbox.ReplayKey("tenant-1", "refunds", 42, 2),
		inbox.ReplayKey("tenant-1", "refunds", 4, 21), inbox.ReplayKey("tenant-2", "refunds", 42, 1)} {
		require.Regexp(t, hex32, k)
		require.False(t, seen[k], k)
		seen[k] = true
	}
}

func TestKeyForAndCommandID(t *testing.T) {
	t.Parallel()
	k := inbox.Key("tenant-1", "refunds", 42)
	refund := inbox.KeyFor(k, "refund")
	require.Regexp(t, hex32, refund)
	require.Equal(t, refund, inbox.KeyFor(k, "refund"), "deterministic")
	require.NotEqual(t, k, refund)
	require.NotEqual(t, refund, inbox.KeyFor(k, "email"))
	require.NotEqual(t, refund, inbox.KeyFor(k, ""))
	require.NotEqual(t, refund, inbox.KeyFor(inbox.Key("tenant-1", "refunds", 43), "refund"), "per delivery")
	require.NotEqual(t, k, inbox.KeyFor(k, ""))
	// An effect key is not the delivery key of some other delivery whose
	// parts spell the same bytes: the derivations are domain-separated.
	require.NotEqual(t, inbox.Key(k, "refund", 0), inbox.KeyFor(k, "refund"))

	ids := map[string]bool{}
	for n := range 12 {
		id := inbox.CommandID(k, n)
		require.Equal(t, inbox.KeyFor(k, "command/"+strconv.Itoa(n)), id)
		require.Regexp(t, hex32, id)
		require.False(t, ids[id], "command %d repeats an id", n)
		ids[id] = true
	}
	require.NotEqual(t, inbox.CommandID(k, 1), inbox.CommandID(inbox.Key("tenant-1", "refunds", 43), 1))
}

// Neighbouring deliveries (seq n and n+1) and effects get keys that differ
// throughout, not in a few hex digits.
func TestKeysOfNeighboursDifferThroughout(t *testing.T) {
	t.Parallel()
	differing := func(a, b string) int {
		n := 0
		for i := range a {
			if a[i] != b[i] {
				n++
			}
		}
		return n
	}
	prev := inbox.Key("tenant-1", "refunds", 0)
	for s := int64(1); s <= 200; s++ {
		k := inbox.Key("tenant-1", "refunds", s)
		require.GreaterOrEqual(t, differing(prev, k), 16, "seq %d: %s vs %s", s, prev, k)
		require.GreaterOrEqual(t, differing(inbox.CommandID(prev, 0), inbox.CommandID(prev, 1)), 16)
		prev = k
	}
}

// The derivations are pinned: providers deduplicate effects by these keys
// and the runtime stores command ids derived from them, so changing the
// derivation (prefixes, encoding of the parts, hash, truncation) would make
// every in-flight delivery look new after a deploy and repeat its effects.
// If this test fails, the change is a breaking one: do not just update the
// constants. (The values are FNV-1a 128 over the length-prefixed parts,
// mixed with MurmurHash3's fmix64, as of commit 090d35c; they were checked
// against an independent implementation.)
func TestKeyGolden(t *testing.T) {
	t.Parallel()
	k := inbox.Key("tenant-1", "refunds", 42)
	require.Equal(t, "d6227950e188c07af8373e5232b4bce2", k)
	require.Equal(t, "8d89e2cb45403f7635d339411a933a7e", inbox.KeyFor(k, "refund"))
	require.Equal(t, "975156ee74350b7491f059d5b420f233", inbox.CommandID(k, 0))
}

// FuzzCheckSettle checks CheckSettle's invariants over arbitrary entries
// and settlements:
//   - a rejection and a duplicate are never both reported;
//   - a duplicate is only ever recognised for the entry's own claim id;
//   - a claim id other than the entry's is always rejected (taken over),
//     and a missing entry always with unknown_claim;
//   - a success never commits while an earlier event is open;
//   - a settled (succeeded or skipped) entry never commits again;
//   - every rejection is a api.ErrStale with a known code.
//
// Run longer with: go test ./inbox -run=^$ -fuzz=FuzzCheckSettle -fuzztime=60s
func FuzzCheckSettle(f *testing.F) {
	f.Add(false, byte(0), "c1", "c1", byte(0), false, "h", int64(1))
	f.Add(false, byte(1), "c1", "c1", byte(1), true, "h", int64(2))
	f.Add(false, byte(3), "c1", "c2", byte(0), false, "refunds", int64(42))
	f.Add(true, byte(0), "", "", byte(2), true, "", int64(-1))
	f.Add(false, byte(2), "", "", byte(0), true, "h", int64(0))
	f.Fuzz(func(t *testing.T, nilEntry bool, state byte, entryClaim, claimID string, outcome byte, earlierOpen bool,
		h string, s int64) {
		states := []inbox.State{inbox.Pending, inbox.Retry, inbox.Ready, inbox.Succeeded, inbox.Skipped}
		outcomes := []inbox.Outcome{inbox.OutcomeSucceeded, inbox.OutcomeFailed, inbox.OutcomeDelayed}
		o := outcomes[int(outcome)%len(outcomes)]
		var e *inbox.Entry
		if !nilEntry {
			e = &inbox.Entry{Handler: h, Seq: s, State: states[int(state)%len(states)], ClaimID: entryClaim, Attempt: 1}
			if e.State == inbox.Retry || e.State == inbox.Ready && state >= 128 {
				e.Reported = outcomes[1+int(state/8)%2] // the claim reported a failure or a delay
			}
		}
		dup, rej := inbox.CheckSettle(e, h, s, claimID, o, earlierOpen)
		commits := !dup && rej == nil
		if dup && rej != nil {
			t.Fatalf("both duplicate and rejected: %v", rej)
		}
		if e == nil {
			if rej == nil || rej.Code != api.CodeUnknownClaim {
				t.Fatalf("no entry: got dup=%v rej=%v", dup, rej)
			}
			return
		}
		if dup && claimID != e.ClaimID {
			t.Fatalf("duplicate under claim %q of an entry claimed by %q", claimID, e.ClaimID)
		}
		if claimID != e.ClaimID && (rej == nil || rej.Code != api.CodeClaimTakenOver) {
			t.Fatalf("claim %q settled an entry claimed by %q: dup=%v rej=%v", claimID, e.ClaimID, dup, rej)
		}
		if o == inbox.OutcomeSucceeded && earlierOpen && commits {
			t.Fatalf("a success overtook an open earlier event: %+v", e)
		}
		if !e.State.Open() && commits {
			t.Fatalf("a settled entry was settled again: %+v outcome %s", e, o)
		}
		if commits && e.Reported != "" {
			t.Fatalf("a claim that reported %s settled again: %+v outcome %s", e.Reported, e, o)
		}
		if commits && (claimID != e.ClaimID || !e.State.Open()) {
			t.Fatalf("committed %s for %+v under claim %q", o, e, claimID)
		}
		if rej != nil {
			if !errors.Is(rej, api.ErrStale) {
				t.Fatalf("rejection %v is not api.ErrStale", rej)
			}
			switch rej.Code {
			case api.CodeClaimTakenOver, api.CodeOutOfOrder, api.CodeAlreadySettled:
			default:
				t.Fatalf("unexpected code %q", rej.Code)
			}
			if !strings.Contains(rej.Message, strconv.FormatInt(s, 10)) {
				t.Fatalf("message %q does not name seq %d", rej.Message, s)
			}
		}
	})
}
