package usage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

func TestMarkRoundTripsAndRefusesWhatIsNotOne(t *testing.T) {
	for _, mode := range []Mode{Keep, Tail, Flush} {
		m := Mark{Gen: "ab12", Requests: 3, Alarms: 1, Read: 40, Written: 12, Micro: 900, Mode: mode}
		got, ok := ParseMark(m.String())
		require.True(t, ok)
		require.Equal(t, m, got)
	}
	for _, bad := range []string{"", "ab12", "ab12,1,2,3,4,5", ",1,2,3,4,5,keep", "g,1,2,3,4,-5,keep", "g,1,2,x,4,5,tail", "g,1,2,3,4,5,6", "g,1,2,3,4,5,keep,1"} {
		_, ok := ParseMark(bad)
		require.False(t, ok, bad)
	}
}

func TestSinceCountsOnlyWhatGrewOnTheSameInstance(t *testing.T) {
	mark := Mark{Gen: "a", Requests: 10, Alarms: 2, Read: 100, Written: 30, Micro: 5000}
	cur := Mark{Gen: "a", Requests: 12, Alarms: 2, Read: 130, Written: 33, Micro: 5200}
	require.Equal(t, api.Usage{Requests: 2, RowsRead: 30, RowsWritten: 3, ModuleMicros: 200}, Since(mark, cur))
	require.Equal(t, api.Usage{}, Since(mark, mark), "a total handed in again adds nothing")
	require.Equal(t, api.Usage{}, Since(cur, mark), "a call that began before the record counts nothing again")
	other := Mark{Gen: "b", Requests: 1, Read: 4, Written: 1}
	require.Equal(t, api.Usage{Requests: 1, RowsRead: 4, RowsWritten: 1}, Since(mark, other), "a new instance counts from zero")
	require.Equal(t, api.Usage{}, Since(mark, Mark{}), "a host that counts nothing")
}

func TestDueWaitsItsHostsTimeOrADayChange(t *testing.T) {
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC).UnixMilli()
	var p Pending
	held := api.Usage{Requests: 1}
	require.False(t, Due(p, held, Flush, at, true, 0), "nothing pending")
	p.Saw(api.Usage{}, at)
	require.Zero(t, p.Since, "nothing seen")
	p.Saw(held, at)
	require.Equal(t, at, p.Since)
	p.Saw(api.Usage{Requests: 2}, at+5)
	require.Equal(t, at, p.Since, "the first sighting stays")
	for mode, wait := range map[Mode]time.Duration{Keep: FlushEvery, Tail: TailEvery} {
		require.False(t, Due(p, held, mode, at+wait.Milliseconds()-1, false, at-1), mode)
		require.True(t, Due(p, held, mode, at+wait.Milliseconds(), false, at-1), mode)
	}
	require.Less(t, TailEvery, 10*time.Second, "under the time an idle Durable Object may leave memory")
	require.True(t, Due(p, held, Flush, at+1, false, at-1), "the host asks")
	require.True(t, Due(p, held, Tail, at+1, true, 0), "an alarm records a pending request's tail")
	require.True(t, Due(p, held, Tail, at+1, true, at+1-TailEvery.Milliseconds()), "after a quiet spell")
	require.False(t, Due(p, held, Tail, at+1, true, at+2-TailEvery.Milliseconds()),
		"but at most once per interval: a busy tenant's alarms (a projection's, after each append) leave it")
	require.False(t, Due(p, api.Usage{Alarms: 1}, Tail, at+1, true, 0), "nor only an alarm's own cost")
	require.False(t, Due(p, held, Keep, at+1, true, 0), "nor for a host that keeps its count")

	late := time.Date(2026, 12, 3, 23, 59, 59, 0, time.UTC).UnixMilli()
	q := Pending{Since: late}
	require.True(t, Due(q, held, Keep, late+1000, false, late), "a new UTC day records yesterday's at once")
}

func TestAlarmAtOnlyForPendingRequestsOfATailHost(t *testing.T) {
	p := Pending{Since: 1000}
	require.Equal(t, 1000+TailEvery.Milliseconds(), AlarmAt(p, api.Usage{Requests: 1}, Tail))
	require.Zero(t, AlarmAt(p, api.Usage{Requests: 1}, Keep), "a host that keeps its count needs no alarm")
	require.Zero(t, AlarmAt(p, api.Usage{Alarms: 1, RowsWritten: 5}, Tail), "an alarm's own cost waits for the next request")
	require.Zero(t, AlarmAt(Pending{}, api.Usage{Requests: 1}, Tail))
}

func TestPushesArePending(t *testing.T) {
	var p Pending
	p.Pushed(0, 5)
	require.Zero(t, p.Since)
	p.Pushed(2, 7)
	require.Equal(t, int64(7), p.Since)
	require.Equal(t, api.Usage{Requests: 1, Pushes: 2}, p.Add(api.Usage{Requests: 1}))
}

func TestRefusalPastEitherFigureUntilTheDayEnds(t *testing.T) {
	now := time.Date(2026, 12, 3, 23, 0, 0, 0, time.UTC).UnixMilli()
	b := api.Budget{RowsWrittenPerDay: 100, RequestsPerDay: 10}
	_, _, ok := Refusal("acme", b, api.Usage{Requests: 10, RowsWritten: 99}, now)
	require.False(t, ok, "the tenth request is within a budget of ten")
	e, retry, ok := Refusal("acme", b, api.Usage{Requests: 11, RowsWritten: 5}, now)
	require.True(t, ok)
	require.Equal(t, int64(3600), retry)
	require.Equal(t, api.CodeBudgetExceeded, e.Code)
	require.Equal(t, 429, e.Status)
	require.Contains(t, e.Message, "requests_per_day 10; 11 used today")
	require.Contains(t, e.Message, "2026-12-04T00:00:00Z")
	e, _, ok = Refusal("acme", b, api.Usage{Requests: 2, RowsWritten: 100}, now)
	require.True(t, ok)
	require.Contains(t, e.Message, "rows_written_per_day 100")
	_, _, ok = Refusal("acme", api.Budget{}, api.Usage{Requests: 1 << 40, RowsWritten: 1 << 40}, now)
	require.False(t, ok, "0 is no limit")
}

func TestDays(t *testing.T) {
	at := time.Date(2026, 12, 31, 23, 59, 59, 999_000_000, time.UTC).UnixMilli()
	require.Equal(t, "2026-12-31", Day(at))
	require.Equal(t, "2027-01-01", Day(at+1))
	require.Equal(t, at+1, DayEnd(at))
	require.Equal(t, "2026-11-01", AddDays("2026-12-01", -30))
	for _, bad := range []string{"2026-13-01", "2026-02-29", "2026-1-01", "0000-01-01", "2026-01-3a", "2026/01/01", ""} {
		require.ErrorContains(t, ParseDay(bad), "is not a UTC date", bad)
	}
	require.NoError(t, ParseDay("2028-02-29"))
	require.Equal(t, "1969-12-31", Day(-1))
	require.Equal(t, "0001-01-01", AddDays("0001-01-02", -1))
	require.Equal(t, "2000-03-01", AddDays("2000-02-28", 2), "2000 is a leap year")
}

// Day agrees with package time for every day of four centuries and more.
func TestDayAgreesWithTime(t *testing.T) {
	start := time.Date(1899, 12, 25, 0, 0, 0, 0, time.UTC)
	for i := range 160_000 {
		at := start.AddDate(0, 0, i)
		want := at.Format("2006-01-02")
		ms := at.UnixMilli() + int64(i%86_400_000)
		require.Equal(t, want, Day(ms))
		require.Equal(t, at.AddDate(0, 0, 1).UnixMilli(), DayEnd(ms))
		require.NoError(t, ParseDay(want))
		if i%997 == 0 {
			require.Equal(t, at.AddDate(0, 0, 400).Format("2006-01-02"), AddDays(want, 400))
		}
	}
}
