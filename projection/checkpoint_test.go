package projection_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/projection"
)

// What a batch does to a generation's checkpoint: committed events move it
// and clear a stall, a failing event stalls it there with its failures
// counted and a bounded backoff, and a batch that does not follow the
// checkpoint is refused.
func TestAfterBatch(t *testing.T) {
	t.Parallel()
	const now = 1_000_000
	policy := projection.Policy{Batch: 3, Backoff: fence.Backoff{BaseMs: 100, MaxMs: 250}}
	at5 := projection.Checkpoint{Seq: 5}
	stalledOn7 := projection.Checkpoint{Seq: 5, Failures: 2, RetryAt: now - 1, ErrorSeq: 7, Error: "event 7 (x): boom"}
	for _, tc := range []struct {
		name   string
		c      projection.Checkpoint
		b      projection.Batch
		jitter float64
		want   projection.Next
		err    error
	}{
		{name: "nothing to read: at the head, nothing written", c: at5,
			b:    projection.Batch{},
			want: projection.Next{Checkpoint: at5, AtHead: true}},
		{name: "a stalled generation that reads nothing stays stalled", c: stalledOn7,
			b:    projection.Batch{},
			want: projection.Next{Checkpoint: stalledOn7, AtHead: true}},
		{name: "a full batch advances and reads on", c: at5,
			b:    projection.Batch{Seqs: []int64{7, 8, 12}, Applied: 3},
			want: projection.Next{Checkpoint: projection.Checkpoint{Seq: 12}, Advanced: true}},
		{name: "a short batch reaches the head", c: at5,
			b:    projection.Batch{Seqs: []int64{7, 8}, Applied: 2},
			want: projection.Next{Checkpoint: projection.Checkpoint{Seq: 8}, Advanced: true, AtHead: true}},
		{name: "a batch cut at its bytes reads on", c: at5,
			b:    projection.Batch{Seqs: []int64{7}, Cut: true, Applied: 1},
			want: projection.Next{Checkpoint: projection.Checkpoint{Seq: 7}, Advanced: true}},
		{name: "a retry that succeeds clears the stall", c: stalledOn7,
			b:    projection.Batch{Seqs: []int64{7}, Applied: 1},
			want: projection.Next{Checkpoint: projection.Checkpoint{Seq: 7}, Advanced: true, AtHead: true}},
		{name: "the first failure of an event stalls on it after the base backoff", c: at5,
			b: projection.Batch{Seqs: []int64{7, 8}, Error: "boom"},
			want: projection.Next{Failed: true,
				Checkpoint: projection.Checkpoint{Seq: 5, Failures: 1, RetryAt: now + 100, ErrorSeq: 7, Error: "boom"}}},
		{name: "jitter takes at most a quarter of the backoff", c: at5, jitter: 0.999,
			b: projection.Batch{Seqs: []int64{7}, Error: "boom"},
			want: projection.Next{Failed: true,
				Checkpoint: projection.Checkpoint{Seq: 5, Failures: 1, RetryAt: now + 76, ErrorSeq: 7, Error: "boom"}}},
		{name: "the same event failing again counts on and backs off up to the bound", c: stalledOn7,
			b: projection.Batch{Seqs: []int64{7, 8}, Error: "again"},
			want: projection.Next{Failed: true,
				Checkpoint: projection.Checkpoint{Seq: 5, Failures: 3, RetryAt: now + 250, ErrorSeq: 7, Error: "again"}}},
		{name: "another event failing counts from one", c: stalledOn7,
			b: projection.Batch{Seqs: []int64{9}, Error: "other"},
			want: projection.Next{Failed: true,
				Checkpoint: projection.Checkpoint{Seq: 5, Failures: 1, RetryAt: now + 100, ErrorSeq: 9, Error: "other"}}},
		{name: "a failure mid-batch commits the events before it and stalls on it", c: stalledOn7,
			b: projection.Batch{Seqs: []int64{7, 8, 12}, Applied: 2, Error: "boom"},
			want: projection.Next{Advanced: true, Failed: true,
				Checkpoint: projection.Checkpoint{Seq: 8, Failures: 1, RetryAt: now + 100, ErrorSeq: 12, Error: "boom"}}},
		{name: "an event at the checkpoint", c: at5,
			b: projection.Batch{Seqs: []int64{5, 6}, Applied: 2}, err: projection.ErrOutOfOrder},
		{name: "events out of log order", c: at5,
			b: projection.Batch{Seqs: []int64{7, 6}, Applied: 2}, err: projection.ErrOutOfOrder},
		{name: "an event read twice", c: at5,
			b: projection.Batch{Seqs: []int64{7, 7}, Applied: 1, Error: "x"}, err: projection.ErrOutOfOrder},
		{name: "more committed than read", c: at5,
			b: projection.Batch{Seqs: []int64{7}, Applied: 2}, err: projection.ErrOutOfOrder},
		{name: "fewer than none committed", c: at5,
			b: projection.Batch{Seqs: []int64{7}, Applied: -1}, err: projection.ErrOutOfOrder},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := projection.AfterBatch(tc.c, tc.b, policy, now, tc.jitter)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				require.Equal(t, projection.Next{}, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
