package inbox

import (
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"hash/fnv"
	"math/bits"
	"strconv"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/internal/printf"
)

// State is a delivery's state in the ledger.
type State string

// Delivery states.
const (
	Pending   State = "pending"   // claimed; its lease is out
	Retry     State = "retry"     // failed or delayed; runs again at RunAt
	Ready     State = "ready"     // to be delivered again now (lease ran out, or RunAt came)
	Succeeded State = "succeeded" // settled: never run again
	Skipped   State = "skipped"   // an operator skipped it
)

// Open reports whether s still has to be settled.
func (s State) Open() bool { return s == Pending || s == Retry || s == Ready }

// Entry is what the ledger holds for one (handler, event).
type Entry struct {
	Handler    string
	Seq        int64
	State      State
	ClaimID    string
	Worker     string
	Attempt    int64 // claims of this delivery so far; never repeats
	Failures   int64 // failed attempts (a delay is not one)
	ClaimedAt  int64
	LeaseUntil int64 // while pending: the claim holds until then
	RunAt      int64 // while retry: when it is due
	Error      string
	// Reported is how the current claim ended if it reported a failure or
	// a delay ("" while it has not): kept until the delivery is claimed
	// again.
	Reported Outcome
	// Replays counts the replays that opened the delivery again after it
	// was settled: each is a new delivery, with a key of its own.
	Replays int64
}

// Verdict is what the handler's lowest open entry means for a claim.
type Verdict int

const (
	// Deliver: nothing is open; deliver the handler's next new events.
	Deliver Verdict = iota
	// Redeliver: run the open entry again under a new claim.
	Redeliver
	// Hold: the entry is in flight or waits for its time; the handler's
	// later events wait behind it until Head's second result.
	Hold
)

// Head decides for a handler whose lowest open entry is e (nil: none).
func Head(e *Entry, now int64) (Verdict, int64) {
	switch {
	case e == nil:
		return Deliver, 0
	case e.State == Pending && now < e.LeaseUntil:
		return Hold, e.LeaseUntil
	case e.State == Retry && now < e.RunAt:
		return Hold, e.RunAt
	}
	return Redeliver, 0
}

// Held is how much one delivery adds to the leases of a claim: twice its
// time limit. A claim's deliveries run one after the other, so the i-th
// is held until the claim's time plus the holds of it and all before it.
func Held(timeoutMs int64) int64 { return 2 * timeoutMs }

// Outcome is how a settlement ends a delivery.
type Outcome string

// Settlement outcomes.
const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
	OutcomeDelayed   Outcome = "delayed"
)

// CheckSettle decides whether a settlement with claimID and outcome o may
// commit for entry e (nil: the event was never delivered to the handler).
// earlierOpen says whether an earlier event of the same handler is still
// open: a success may not overtake it. duplicate means the same claim
// already settled the same way: answer success, write nothing.
func CheckSettle(e *Entry, handler string, seq int64, claimID string, o Outcome, earlierOpen bool) (duplicate bool, rej *api.Error) {
	if e == nil {
		return false, api.Refuse(api.CodeUnknownClaim, "event %d was never delivered to %s: claim it first", seq, handler)
	}
	if subtle.ConstantTimeCompare([]byte(e.ClaimID), []byte(claimID)) != 1 {
		msg := printf.Sprintf("the claim on event %d of %s was taken over: attempt %d holds it now", seq, handler, e.Attempt)
		if e.State == Succeeded || e.State == Skipped {
			msg = printf.Sprintf("event %d of %s was %s under another claim (attempt %d)", seq, handler, string(e.State), e.Attempt)
		}
		return false, api.Refuse(api.CodeClaimTakenOver, "%s", msg)
	}
	switch {
	case e.State == Succeeded:
		if o == OutcomeSucceeded {
			return true, nil
		}
		return false, alreadySettled(handler, seq, "succeeded")
	case e.State == Skipped:
		return false, alreadySettled(handler, seq, "skipped by an operator")
	case e.Reported != "":
		// This claim already reported a failure or a delay (the delivery
		// waits for its retry, or its time came and nobody claimed it yet).
		if o == e.Reported {
			return true, nil
		}
		return false, alreadySettled(handler, seq, "reported "+string(e.Reported))
	}
	// Pending or ready under this claim: a lease that ran out with nobody
	// taking the delivery over does not void the claim.
	if o == OutcomeSucceeded && earlierOpen {
		return false, api.Refuse(api.CodeOutOfOrder, "event %d of %s cannot succeed before the handler's earlier events are settled", seq, handler)
	}
	return false, nil
}

func alreadySettled(handler string, seq int64, how string) *api.Error {
	return api.Refuse(api.CodeAlreadySettled, "event %d of %s was already %s under this claim", seq, handler, how)
}

// AfterFailure is the entry's next RunAt and failure count after a failed
// attempt: the handler's backoff, from the failure count.
func AfterFailure(e Entry, b fence.Backoff, now int64, jitter float64) (runAt, failures int64) {
	failures = e.Failures + 1
	return now + b.Delay(failures, jitter), failures
}

// Key is the idempotency key of the delivery of event seq to handler in
// the tenant whose storage identity is tenantID: the same on every retry,
// different for every (tenant, handler, event).
func Key(tenantID, handler string, seq int64) string {
	return derive("stile/v1/delivery", tenantID, handler, strconv.FormatInt(seq, 10))
}

// ReplayKey is the idempotency key of a delivery opened again by its
// replays-th replay: Key for none, else a key of its own, so a replayed
// delivery's effects and commands are new ones, not repeats of the
// delivery it replays.
func ReplayKey(tenantID, handler string, seq, replays int64) string {
	if replays == 0 {
		return Key(tenantID, handler, seq)
	}
	return derive("stile/v1/replay", tenantID, handler, strconv.FormatInt(seq, 10), strconv.FormatInt(replays, 10))
}

// KeyFor derives the key of one effect of a handler from its delivery's
// key: KeyFor(key, "refund"). Same inputs, same key.
func KeyFor(key, label string) string { return derive("stile/v1/effect", key, label) }

// CommandID is the id of the n-th command (from 0) a handler dispatches
// under key, so a rerun that dispatches the same commands stores them once.
func CommandID(key string, n int) string { return KeyFor(key, "command/"+strconv.Itoa(n)) }

// derive hashes length-prefixed parts, so no two part lists collide,
// with 128-bit FNV-1a, then mixes the digest so that inputs differing in
// one byte give keys differing throughout (FNV alone changes a few
// nibbles). The mixing is a bijection: it adds no collisions. The inputs
// are Stile's own (a random tenant id, names, numbers), not an
// adversary's, so a cryptographic hash would buy nothing; crypto/sha256
// would add 100 KB of FIPS code to every module. Changing this function
// changes every key: providers would see retries after a deploy as new
// requests (inbox_test.go pins it).
func derive(parts ...string) string {
	h := fnv.New128a()
	var n [8]byte
	for _, p := range parts {
		binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	var sum [16]byte
	h.Sum(sum[:0])
	a, b := binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:])
	a = fmix64(a ^ bits.RotateLeft64(b, 29))
	b = fmix64(b ^ a)
	a = fmix64(a ^ b)
	binary.BigEndian.PutUint64(sum[:8], a)
	binary.BigEndian.PutUint64(sum[8:], b)
	return hex.EncodeToString(sum[:])
}

// fmix64 is MurmurHash3's finalizer: a bijection of uint64 with full
// avalanche.
func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}
