package cron_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/runtime/internal/cron"
)

var base = time.Date(2026, 11, 30, 10, 15, 30, 0, time.UTC) // a Monday

func next(t *testing.T, expr string, from time.Time) time.Time {
	t.Helper()
	s, err := cron.Parse(expr)
	require.NoError(t, err, expr)
	return s.Next(from)
}

func TestNext(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		want time.Time
	}{
		{"* * * * * *", base.Add(time.Second)},
		{"*/15 * * * * *", base.Add(15 * time.Second)},
		{"0 * * * * *", time.Date(2026, 11, 30, 10, 16, 0, 0, time.UTC)},
		{"* * * * *", time.Date(2026, 11, 30, 10, 16, 0, 0, time.UTC)},
		{"0 30 9 * * mon-fri", time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)},
		{"0 0 0 1 jan *", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"@hourly", time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)},
		{"@daily", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		{"@weekly", time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)},        // Sunday
		{"0 0 12 13 * 5", time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)}, // 13th or a Friday
		{"0 0 0 29 2 *", time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"0 0 0 * * 7", time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)}, // 7 is Sunday
		{"5,10 1-3/2 * * * *", time.Date(2026, 11, 30, 11, 1, 5, 0, time.UTC)},
		{"@every 10s", time.Date(2026, 11, 30, 10, 15, 40, 0, time.UTC)},
		{"@every 1h", time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)},
	} {
		require.Equal(t, tc.want, next(t, tc.expr, base), tc.expr)
	}
	// 29 February after 2096 comes in 2104 (2100 is not a leap year).
	require.Equal(t, time.Date(2104, 2, 29, 0, 0, 0, 0, time.UTC), next(t, "0 0 0 29 2 *", time.Date(2096, 3, 1, 0, 0, 0, 0, time.UTC)))
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{"", "* * *", "60 * * * * *", "* * 24 * * *", "* * * 0 * *", "* * * * 13 *",
		"*/0 * * * * *", "5-1 * * * * *", "x * * * * *", "@every 500ms", "@every soon", "* * * * * * *",
		"*/9223372036854775807 * * * * *", "*/60 * * * * *", "0 0 */32 * * *", "0 0 0 1 */13 *",
		"0 0 0 30 2 *", "0 0 0 31 4,6,9,11 *", "0 0 0 30-31 feb *"} {
		_, err := cron.Parse(expr)
		require.ErrorIs(t, err, cron.ErrSyntax, expr)
	}
	_, err := cron.Parse("0 0 0 30 2 *")
	require.ErrorContains(t, err, "never fires")
	_, err = cron.Parse("*/9223372036854775807 * * * * *")
	require.ErrorContains(t, err, "not a number in 1-59")
	_, err = cron.Parse("0 0 0 30 2 mon")
	require.NoError(t, err, "30 February or any Monday of February: the Mondays fire")
}

// FuzzNext checks Next, which jumps over months, days and hours, against
// stepping second by second with Matches: the first match after t, and
// nothing in between.
func FuzzNext(f *testing.F) {
	f.Add("*/7 3-50/5 * * * *", int64(0))
	f.Add("0 0 12 13 * fri", int64(86400*3))
	f.Add("30 */2 1,5,22 * * sat,sun", int64(123456))
	f.Fuzz(func(t *testing.T, expr string, offset int64) {
		s, err := cron.Parse(expr)
		if err != nil {
			return
		}
		from := base.Add(time.Duration(offset%(400*86400)) * time.Second)
		got := s.Next(from)
		if got.IsZero() {
			return
		}
		if !got.After(from) {
			t.Fatalf("%q: next %v is not after %v", expr, got, from)
		}
		matches := s.Matches
		if !matches(got) {
			t.Fatalf("%q: %v does not match itself", expr, got)
		}
		if got.Sub(from) > 2*time.Hour {
			return // stepping is too slow beyond that; the structure is checked above
		}
		for x := from.Truncate(time.Second).Add(time.Second); x.Before(got); x = x.Add(time.Second) {
			if matches(x) {
				t.Fatalf("%q: %v matches before next %v", expr, x, got)
			}
		}
	})
}
