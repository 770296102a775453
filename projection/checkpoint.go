package projection

import (
	"errors"

	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/internal/printf"
)

// Checkpoint is how far a generation of a projection has applied the event
// log, and whether it waits to retry an event that failed.
type Checkpoint struct {
	Seq      int64  // the last event applied (0: none yet)
	Failures int64  // failed tries of the event it is stalled on
	RetryAt  int64  // stalled: when that event is tried again (0: not stalled)
	ErrorSeq int64  // stalled: the event that failed
	Error    string // stalled: why it failed
}

// Stalled reports whether c waits to retry an event that failed.
func (c Checkpoint) Stalled() bool { return c.RetryAt != 0 }

// Batch is what one transaction did with the events it read after the
// checkpoint (the caller's transaction read both, so they agree): it
// applied them in order, and committed all of them or, when a handler
// failed, the ones before the failing event.
type Batch struct {
	Seqs    []int64 // the events read, in log order
	Cut     bool    // the read stopped at its bound on the events' bytes, before its count
	Applied int     // how many of them, from the first, committed
	// Error, when Applied < len(Seqs), is why the event Seqs[Applied]
	// failed, as the projection's status shows it.
	Error string
}

// Policy is a projection's registration as the decision needs it.
type Policy struct {
	Batch   int           // the most events one batch reads
	Backoff fence.Backoff // the wait before a failed event is tried again
}

// Next is a generation's checkpoint as a batch leaves it.
type Next struct {
	Checkpoint
	// Advanced: the checkpoint moved past events that committed, and
	// any stall before them was cleared.
	Advanced bool
	// Failed: the event after the checkpoint failed, and the generation
	// is stalled on it.
	Failed bool
	// AtHead: the batch applied every event there is; the generation is
	// caught up (a building one can be swapped in).
	AtHead bool
}

// ErrOutOfOrder is what AfterBatch answers for a batch whose events do not
// follow its checkpoint in log order, or that committed more events than
// it read: taking it would move the checkpoint backwards, or past an event
// that was never applied. The event log cannot produce one; the check
// keeps a fault in the store from moving a checkpoint the wrong way.
var ErrOutOfOrder = errors.New("the batch does not follow the projection's checkpoint")

// AfterBatch decides where the batch b leaves a generation whose stored
// checkpoint, read again in the batch's transaction, is c. Every event
// that committed moves the checkpoint past it and clears a stall; an event
// whose handler failed stalls the generation there, never skipped: its
// failures are counted (from 1 for an event other than the one it was
// stalled on), and it is tried again after the backoff, at most
// Backoff.MaxMs after now, while the events after it wait. A batch that
// read nothing leaves c as it is, at the head. jitter in [0, 1) comes from
// the caller, so the decision stays deterministic.
func AfterBatch(c Checkpoint, b Batch, p Policy, now int64, jitter float64) (Next, error) {
	if b.Applied < 0 || b.Applied > len(b.Seqs) {
		return Next{}, printf.Errorf("%d of %d events committed: %w", b.Applied, len(b.Seqs), ErrOutOfOrder)
	}
	last := c.Seq
	for _, seq := range b.Seqs {
		if seq <= last {
			return Next{}, printf.Errorf("event %d read after %d: %w", seq, last, ErrOutOfOrder)
		}
		last = seq
	}
	if len(b.Seqs) == 0 {
		return Next{Checkpoint: c, AtHead: true}, nil
	}
	next := Next{Checkpoint: c}
	if b.Applied > 0 {
		next.Checkpoint, next.Advanced = Checkpoint{Seq: b.Seqs[b.Applied-1]}, true
	}
	if b.Applied == len(b.Seqs) {
		next.AtHead = len(b.Seqs) < p.Batch && !b.Cut
		return next, nil
	}
	failed := b.Seqs[b.Applied]
	failures := int64(1)
	if c.Stalled() && c.ErrorSeq == failed {
		failures = c.Failures + 1
	}
	next.Failed, next.Failures, next.ErrorSeq, next.Error = true, failures, failed, b.Error
	next.RetryAt = now + p.Backoff.Delay(failures, jitter)
	return next, nil
}
