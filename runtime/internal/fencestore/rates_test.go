package fencestore_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/flow"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

func rated(queue, key, rate string) fencestore.NewJob {
	j := in(queue, "x", 0, key)
	j.RateKey, j.LeaseMs, j.TimeoutMs = rate, 60_000, 60_000
	return j
}

// A claim takes a rate key's jobs only while the key has room, beside
// unlimited jobs; a job under both keys needs room in both; what is ready
// (for pushes) counts no more than the room; the key closes until its next
// start is allowed, and the alarm is due then.
func TestRateKeysLetNoMoreStartThanTheirLimit(t *testing.T) {
	f := newJobs(t)
	f.s.Limits = map[string]int{"one": 1}
	f.s.Rates = map[string]flow.Rate{"r": {Limit: 2, PeriodMs: 1000}}
	f.enqueue(t0, rated("default", "", "r"), rated("default", "one", "r"), rated("default", "one", "r"),
		rated("default", "", "r"), in("default", "x", 5, ""))

	var total int64
	tx(t, f.db, func() (err error) { total, _, err = f.s.Ready(t0, 1000); return })
	require.EqualValues(t, 3, total, "the unlimited job and the rate key's room of two")

	got := f.claim(t0, "w", 10)
	require.Len(t, got, 3, "two of the key's jobs (one of them under the concurrency key) and the unlimited one")
	keyed := 0
	for _, j := range got {
		if j.ConcurrencyKey == "one" {
			keyed++
		}
	}
	require.Equal(t, 1, keyed, "a job under both keys needs room in both")
	require.Empty(t, f.claim(t0+999, "w", 10), "no room until the first starts leave the window")
	tx(t, f.db, func() (err error) { total, _, err = f.s.Ready(t0+999, 1000); return })
	require.Zero(t, total, "a key without room has nothing ready for a push")

	var at int64
	tx(t, f.db, func() (err error) { at, _, err = f.s.NextDue(); return })
	require.Equal(t, t0+1000, at, "the alarm is due when the key opens (the leases end later)")
	var rt fencestore.Rate
	tx(t, f.db, func() (err error) { rt, _, err = f.s.GetRate("r"); return })
	require.EqualValues(t, 2, rt.Started)
	require.EqualValues(t, 1, rt.Limited)
	require.Equal(t, fencestore.RateFromModule, rt.Source)

	tx(t, f.db, func() error { _, err := f.s.ApplyDue(t0+1000, "alarm", func() float64 { return 0 }); return err })
	require.True(t, f.s.Woke().All, "the key's opening wakes the held claims")
	got = f.claim(t0+1000, "w", 10)
	require.Len(t, got, 1, "the job under the full concurrency key waits for its slot, the other starts")
	require.Empty(t, got[0].ConcurrencyKey)
}

// A tenant's limit overrides the module's default; DELETE goes back to
// it, or removes a key the module does not declare once no job names it.
func TestDeletingARateGoesBackToTheModule(t *testing.T) {
	f := newJobs(t)
	f.s.Rates = map[string]flow.Rate{"r": {Limit: 1, PeriodMs: 1000}}
	tx(t, f.db, func() error {
		_, err := f.s.SetRate(t0, "r", flow.Rate{Limit: 5, PeriodMs: 1000}, fencestore.RateFromTenant)
		return err
	})
	var rt fencestore.Rate
	var removed bool
	tx(t, f.db, func() (err error) { rt, removed, err = f.s.DeleteRate(t0, "r"); return })
	require.False(t, removed)
	require.Equal(t, flow.Rate{Limit: 1, PeriodMs: 1000}, rt.Rate)

	tx(t, f.db, func() error {
		_, err := f.s.SetRate(t0, "own", flow.Rate{Limit: 5, PeriodMs: 1000}, fencestore.RateFromTenant)
		return err
	})
	f.enqueue(t0, rated("default", "", "own"))
	err := f.db.Tx(func() error { _, _, err := f.s.DeleteRate(t0, "own"); return err })
	var refused *api.Error
	require.ErrorAs(t, err, &refused)
	require.Equal(t, api.CodeRateKeyInUse, refused.Code, "a job not finished names the key")
	var ok bool
	tx(t, f.db, func() (err error) { _, ok, err = f.s.GetRate("own"); return })
	require.True(t, ok, "the refused DELETE removed nothing")
}

// Keys without ready jobs take no place among those a claim reads: a busy
// key behind more idle ones than a claim looks at still starts its jobs.
func TestIdleRateKeysDoNotStarveABusyOne(t *testing.T) {
	f := newJobs(t)
	tx(t, f.db, func() error {
		for i := range fencestore.MaxKeysPerClaim + 10 {
			if _, err := f.s.SetRate(t0, fmt.Sprintf("idle%03d", i), flow.Rate{Limit: 5, PeriodMs: 1000}, fencestore.RateFromTenant); err != nil {
				return err
			}
		}
		_, err := f.s.SetRate(t0+1, "busy", flow.Rate{Limit: 5, PeriodMs: 1000}, fencestore.RateFromTenant)
		return err
	})
	f.enqueue(t0+2, rated("default", "", "busy"))
	require.Len(t, f.claim(t0+2, "w", 10), 1)
}

// A debounced job whose time came is no longer collecting, even before a
// request made it ready: the next enqueue of its key makes a new job.
func TestADueDebouncedJobCollectsNoMore(t *testing.T) {
	f := newJobs(t)
	d := func(n int) fencestore.NewJob {
		j := job("x")
		j.Args = []byte(fmt.Sprintf(`{"n":%d}`, n))
		j.Debounce = &flow.Debounce{Key: "d", WindowMs: 100, Keep: flow.KeepAll}
		return j
	}
	first := f.enqueue(t0, d(1))[0]
	again := f.enqueue(t0+500, d(2))[0] // the first is due since t0+100, not promoted
	require.NotEqual(t, first.ID, again.ID)
	require.False(t, again.Existing)
	require.Equal(t, t0+600, again.RunAt)
}
