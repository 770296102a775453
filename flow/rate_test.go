package flow_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
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

// decodeBySplitting is Decode as it was first written (split the text,
// parse each number): the one-pass Decode must agree with it on any text.
func decodeBySplitting(s string) (flow.Window, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > 2*flow.MaxEntries {
		return nil, flow.ErrWindow
	}
	w := make(flow.Window, 0, len(parts))
	for _, p := range parts {
		at, n, ok := strings.Cut(p, ":")
		a, aerr := strconv.ParseInt(at, 10, 64)
		c, cerr := strconv.ParseInt(n, 10, 64)
		if !ok || aerr != nil || cerr != nil || c < 1 || len(w) > 0 && a <= w[len(w)-1].At {
			return nil, flow.ErrWindow
		}
		w = append(w, flow.Starts{At: a, N: c})
	}
	return w, nil
}

// TestDecodeAgreesWithSplitting: windows Encode wrote, and the same texts
// cut, spliced and with bytes changed, decode as splitting and parsing
// each number decodes them.
func TestDecodeAgreesWithSplitting(t *testing.T) {
	same := func(s string) {
		t.Helper()
		want, werr := decodeBySplitting(s)
		got, err := flow.Decode(s)
		if werr != nil {
			require.ErrorIs(t, err, flow.ErrWindow, "%q", s)
			return
		}
		require.NoError(t, err, "%q", s)
		require.Equal(t, want, got, "%q", s)
	}
	for _, s := range []string{"", "0:1", "-5:1", "+5:+1", "1:1,2:2", "9223372036854775807:1", "-9223372036854775808:1",
		"9223372036854775808:1", "-9223372036854775809:1", "99999999999999999999:1", "20000000000000000000:1", "1:184467440737095516170", "1:9223372036854775807", "1::1", "1:1,,2:1",
		",1:1", "1:1,", "1:1:1", " 1:1", "1:1 ", "1:-1", "1:0", "-:1", "1:+", "٣:1"} {
		same(s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0123456789:,-+ x"
	for range 20_000 {
		var w flow.Window
		at := rng.Int64N(1<<50) - 1<<49
		for range rng.IntN(8) {
			at += 1 + rng.Int64N(1000)
			w = append(w, flow.Starts{At: at, N: 1 + rng.Int64N(500)})
		}
		b := []byte(w.Encode())
		same(string(b))
		back, err := flow.Decode(string(b))
		require.NoError(t, err)
		require.Equal(t, w, back, "a window decodes as it was encoded")
		if len(b) > 0 {
			switch rng.IntN(3) {
			case 0:
				b[rng.IntN(len(b))] = alphabet[rng.IntN(len(alphabet))]
			case 1:
				b = b[:rng.IntN(len(b))]
			case 2:
				i := rng.IntN(len(b))
				b = append(b[:i:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[i:]...)...)
			}
			same(string(b))
		}
	}
}
