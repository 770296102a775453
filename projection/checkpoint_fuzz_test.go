package projection_test

import (
	"errors"
	"testing"

	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/projection"
)

// FuzzAfterBatch checks the batch decision's invariants over arbitrary
// checkpoints and batches:
//   - a batch whose events do not follow the checkpoint in log order (or
//     that committed more than it read) is ErrOutOfOrder, and any other is
//     decided;
//   - the checkpoint never goes backwards, and only ever lands on the
//     checkpoint or on the last event that committed;
//   - an event that failed stalls the generation on it, never skipped: its
//     failures are counted on from the stall on that same event, from one
//     otherwise, and its retry is after now and at most MaxMs later;
//   - a batch that committed everything clears the stall, and is at the
//     head only when it read fewer than its count and was not cut;
//   - the same inputs give the same decision.
//
// Run longer with: go test ./projection -run=^$ -fuzz=FuzzAfterBatch -fuzztime=60s
func FuzzAfterBatch(f *testing.F) {
	f.Add(int64(5), true, int64(2), int64(7), []byte{2, 1, 4}, false, 2, 3, int64(1_000_000), 0.5, int64(100), int64(250))
	f.Add(int64(0), false, int64(0), int64(0), []byte{1, 1}, true, 2, 2, int64(1), 0.0, int64(1), int64(1))
	f.Add(int64(9), true, int64(1), int64(10), []byte{1}, false, 0, 100, int64(50), 0.99, int64(1000), int64(3_600_000))
	f.Add(int64(9), false, int64(0), int64(0), []byte{0, 3}, false, 1, 5, int64(50), 0.1, int64(10), int64(20))
	f.Fuzz(func(t *testing.T, seq int64, stalled bool, failures, errorSeq int64, gaps []byte, cut bool,
		applied, batch int, now int64, jitter float64, baseMs, maxMs int64) {
		if seq < 0 || seq > 1<<40 || failures < 0 || failures > 1<<20 || now < 1 || now > 1<<50 ||
			baseMs < 1 || maxMs < baseMs || maxMs > 1<<30 || batch < 1 || len(gaps) > 1000 {
			return
		}
		c := projection.Checkpoint{Seq: seq}
		if stalled {
			c.Failures, c.RetryAt, c.ErrorSeq, c.Error = failures+1, now, errorSeq, "before"
		}
		b := projection.Batch{Cut: cut, Applied: applied, Error: "now"}
		inOrder := true
		last := seq
		for _, g := range gaps { // a gap of 0 repeats an event, 255 goes back
			s := last + int64(g)
			if g == 255 {
				s = last - 1
			}
			inOrder = inOrder && s > last
			b.Seqs = append(b.Seqs, s)
			last = s
		}
		p := projection.Policy{Batch: batch, Backoff: fence.Backoff{BaseMs: baseMs, MaxMs: maxMs}}

		n, err := projection.AfterBatch(c, b, p, now, jitter)
		again, againErr := projection.AfterBatch(c, b, p, now, jitter)
		if n != again || (err == nil) != (againErr == nil) {
			t.Fatalf("the same inputs decided %+v (%v), then %+v (%v)", n, err, again, againErr)
		}
		switch {
		case !inOrder || applied < 0 || applied > len(b.Seqs):
			if !errors.Is(err, projection.ErrOutOfOrder) {
				t.Fatalf("batch %+v after %d decided: %v", b, seq, err)
			}
			return
		case err != nil:
			t.Fatalf("a batch that follows its checkpoint was refused: %v", err)
		}

		if n.Seq < seq {
			t.Fatalf("checkpoint went back from %d to %d", seq, n.Seq)
		}
		if n.Advanced != (applied > 0) || (n.Advanced && n.Seq != b.Seqs[applied-1]) || (!n.Advanced && n.Seq != seq) {
			t.Fatalf("committed %d of %v after %d: checkpoint %d, advanced %v", applied, b.Seqs, seq, n.Seq, n.Advanced)
		}
		if n.Failed != (applied < len(b.Seqs)) {
			t.Fatalf("committed %d of %d events, failed %v", applied, len(b.Seqs), n.Failed)
		}
		switch {
		case n.Failed:
			want := int64(1)
			if stalled && errorSeq == b.Seqs[applied] {
				want = c.Failures + 1
			}
			if !n.Stalled() || n.ErrorSeq != b.Seqs[applied] || n.Failures != want || n.Error != b.Error {
				t.Fatalf("failure of event %d from %+v recorded as %+v", b.Seqs[applied], c, n)
			}
			if n.RetryAt <= now || n.RetryAt > now+maxMs {
				t.Fatalf("retry at %d outside (%d, %d]", n.RetryAt, now, now+maxMs)
			}
			if n.AtHead {
				t.Fatal("a stalled batch is at the head")
			}
		case len(b.Seqs) == 0:
			if n.Checkpoint != c || !n.AtHead {
				t.Fatalf("a batch of nothing moved %+v to %+v", c, n)
			}
		default:
			if n.Stalled() || n.Failures != 0 || n.Error != "" || n.ErrorSeq != 0 {
				t.Fatalf("a batch that committed everything left a stall: %+v", n)
			}
			if n.AtHead != (len(b.Seqs) < batch && !cut) {
				t.Fatalf("read %d of %d (cut %v): at head %v", len(b.Seqs), batch, cut, n.AtHead)
			}
		}
	})
}
