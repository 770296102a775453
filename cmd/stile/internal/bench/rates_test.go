package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/cmd/stile/internal/bench"
	"github.com/stile-run/stile/internal/wasmbuild"
	"github.com/stile-run/stile/stiletest"
)

// TestRatesHoldTheirLimits runs a small rate-limit measurement on the
// bench's host (the default module under wazero, its alarms on the wall
// clock) and checks what no noise can excuse: every job ran and
// completed, each key started each of its jobs once, counted them as its
// jobs' attempts say, and never started more than its limit in any window
// of its period. Nothing is timed.
func TestRatesHoldTheirLimits(t *testing.T) {
	t.Parallel()
	h := stiletest.New(t, stiletest.Config{Package: wasmbuild.DefaultPackage, RealClock: true})
	const keys, perKey, limit, unlimited = 2, 60, 25, 100
	period := 500 * time.Millisecond
	r, err := bench.Rates(context.Background(), bench.RatesConfig{URL: h.Client().BaseURL(), Token: h.Token(), Tenant: "rates",
		Keys: keys, PerKey: perKey, Limit: limit, Period: period, Unlimited: unlimited, Concurrency: 10})
	require.NoError(t, err)
	require.Len(t, r.Keys, keys)
	for _, k := range r.Keys {
		require.Len(t, k.Starts, perKey, "%s: one start per job", k.Key)
		require.EqualValues(t, perKey, k.Started, "%s counted its starts", k.Key)
		require.LessOrEqual(t, bench.MaxInWindow(k.Starts, period.Milliseconds()), limit, "%s: starts %v", k.Key, k.Starts)
		for _, n := range bench.PerPeriod(k.Starts, period.Milliseconds()) {
			require.LessOrEqual(t, n, limit, k.Key)
		}
		require.GreaterOrEqual(t, k.Starts[perKey-1]-k.Starts[0], int64(perKey/limit)*period.Milliseconds(),
			"%s: %d jobs at %d per %s need that long", k.Key, perKey, limit, period)
	}
	require.Len(t, r.UnlimitedStarts, unlimited)
	require.LessOrEqual(t, r.First, r.UnlimitedStarts[0])
	require.GreaterOrEqual(t, r.End, r.UnlimitedEnd)
	require.Positive(t, r.UnlimitedRate())
}

// MaxInWindow counts a window as package flow does, (t - period, t]: a
// start exactly one period after another is in a window of its own.
func TestMaxInWindowCountsAsTheLimitDoes(t *testing.T) {
	require.Equal(t, 0, bench.MaxInWindow(nil, 1000))
	require.Equal(t, 3, bench.MaxInWindow([]int64{0, 0, 999, 1999}, 1000), "0, 0 and 999 share (−1, 999]")
	require.Equal(t, 1, bench.MaxInWindow([]int64{0, 1000, 2000}, 1000), "starts a period apart never share a window")
	require.Equal(t, 2, bench.MaxInWindow([]int64{0, 1000, 1999}, 1000), "1000 and 1999 share (999, 1999]")
}

// PerPeriod counts whole periods from the first start up to the last
// start, and leaves out the last, partial one.
func TestPerPeriodCountsWholePeriods(t *testing.T) {
	require.Nil(t, bench.PerPeriod(nil, 1000))
	require.Empty(t, bench.PerPeriod([]int64{5, 900}, 1000), "no whole period before the last start")
	require.Equal(t, []int{2, 1}, bench.PerPeriod([]int64{100, 200, 1100, 2100, 2500}, 1000))
	require.Equal(t, []int{1}, bench.PerPeriod([]int64{0, 1000}, 1000), "a start one period after the first is in the next")
}
