package flow_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/flow"
)

func TestAllowanceCountsTheStartsOfTheLastPeriod(t *testing.T) {
	r := flow.Rate{Limit: 3, PeriodMs: 1000}
	var w flow.Window
	require.EqualValues(t, 3, flow.Allowance(w, r, 0))
	w = flow.Take(w, r, 100, 2)
	w = flow.Take(w, r, 600, 1)
	require.EqualValues(t, 0, flow.Allowance(w, r, 600))
	require.EqualValues(t, 1100, flow.Next(w, r, 600), "the two starts at 100 leave the window (100, 1100] at 1100")
	require.EqualValues(t, 0, flow.Allowance(w, r, 1099))
	require.EqualValues(t, 2, flow.Allowance(w, r, 1100))
	require.EqualValues(t, 3, flow.Allowance(w, r, 1600))
	require.EqualValues(t, 1600, flow.Next(w, r, 1600), "a key with room starts now")
}

func TestNextWaitsForAsManyStartsAsMustLeave(t *testing.T) {
	r := flow.Rate{Limit: 2, PeriodMs: 1000}
	w := flow.Take(nil, r, 0, 1)
	w = flow.Take(w, r, 10, 1)
	w = flow.Take(w, r, 20, 1) // over the limit: a stale attempt's start still counts
	require.EqualValues(t, 1010, flow.Next(w, r, 30), "two starts must leave for one more: the second leaves at 1010")
}

// TestNoWindowEverHoldsMoreThanTheLimit: starts taken as Allowance allows,
// at random times and in random numbers, never exceed the limit in any
// window of the period, and Next is the first millisecond that allows one.
func TestNoWindowEverHoldsMoreThanTheLimit(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		r := flow.Rate{Limit: 1 + rng.Int64N(20), PeriodMs: 1 + rng.Int64N(5000)}
		var w flow.Window
		var starts []int64
		now := rng.Int64N(1 << 40)
		for range 300 {
			now += rng.Int64N(r.PeriodMs/3 + 2)
			a := flow.Allowance(w, r, now)
			if a == 0 {
				next := flow.Next(w, r, now)
				require.Greater(t, next, now, "seed %d", seed)
				require.EqualValues(t, 0, flow.Allowance(w, r, next-1), "seed %d: Next is the first time a start fits", seed)
				require.Positive(t, flow.Allowance(w, r, next), "seed %d", seed)
				continue
			}
			n := 1 + rng.Int64N(a)
			w = flow.Take(w, r, now, n)
			for range n {
				starts = append(starts, now)
			}
			require.LessOrEqual(t, len(w), flow.MaxEntries+2)
			back, err := flow.Decode(w.Encode())
			require.NoError(t, err)
			require.Equal(t, w, back)
		}
		for i := range starts {
			in := 0
			for j := i; j < len(starts) && starts[j] < starts[i]+r.PeriodMs; j++ {
				in++
			}
			require.LessOrEqual(t, int64(in), r.Limit, "seed %d: %d starts in the window from %d", seed, in, starts[i])
		}
	}
}

func TestAWindowStaysSmallWhateverTheLimit(t *testing.T) {
	r := flow.Rate{Limit: flow.MaxLimit, PeriodMs: flow.MaxPeriodMs}
	var w flow.Window
	for now := int64(0); now < flow.MaxPeriodMs; now += 100 {
		w = flow.Take(w, r, now, 1)
	}
	require.LessOrEqual(t, len(w), flow.MaxEntries+2)
	require.EqualValues(t, flow.MaxPeriodMs/100, flow.MaxLimit-flow.Allowance(w, r, flow.MaxPeriodMs-1))
}

func TestDecodeRefusesWhatEncodeNeverWrites(t *testing.T) {
	for _, s := range []string{"x", "1:0", "1:2,1:3", "2:1,1:1", "1:", ":1", "1:2,"} {
		_, err := flow.Decode(s)
		require.ErrorIs(t, err, flow.ErrWindow, s)
	}
	w, err := flow.Decode("")
	require.NoError(t, err)
	require.Empty(t, w)
}

func TestRateProblemsNameTheBound(t *testing.T) {
	require.Empty(t, flow.Rate{Limit: 200, PeriodMs: 1000}.Problem())
	require.Equal(t, "limit 0 is outside 1-1000000", flow.Rate{Limit: 0, PeriodMs: 1000}.Problem())
	require.Contains(t, flow.Rate{Limit: 1, PeriodMs: 0}.Problem(), "period_ms 0 is outside")
}

func TestADebouncedJobRunsAtTheEndOfTheLastWindowBoundByItsMaxWait(t *testing.T) {
	d := flow.Debounce{Key: "k", WindowMs: 100, MaxWaitMs: 250, Keep: flow.KeepLast}
	runAt, until := d.Open(1000)
	require.EqualValues(t, 1100, runAt)
	require.EqualValues(t, 1250, until)
	runAt = d.Collapse(runAt, until, 1050)
	require.EqualValues(t, 1150, runAt, "each enqueue starts a new window")
	runAt = d.Collapse(runAt, until, 1200)
	require.EqualValues(t, 1250, runAt, "a busy key never postpones its job past the max wait")
	_, until = flow.Debounce{WindowMs: 100, Keep: flow.KeepAll}.Open(1000)
	require.Zero(t, until, "no max wait: no bound")
	require.EqualValues(t, 5100, flow.Debounce{WindowMs: 100}.Collapse(1100, 0, 5000))
}

func TestDebounceProblemsNameTheField(t *testing.T) {
	require.Empty(t, flow.Debounce{WindowMs: 10, Keep: flow.KeepAll}.Problem())
	require.Contains(t, flow.Debounce{WindowMs: 0, Keep: flow.KeepAll}.Problem(), "window_ms 0")
	require.Contains(t, flow.Debounce{WindowMs: 10, MaxWaitMs: 5, Keep: flow.KeepAll}.Problem(), "max_wait_ms 5")
	require.Contains(t, flow.Debounce{WindowMs: 10, Keep: "most"}.Problem(), `keep "most"`)
}
