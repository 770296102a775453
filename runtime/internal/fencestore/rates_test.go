package fencestore_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/flow"
	"github.com/stile-run/stile/host/dosql/dosqltest"
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

// TestAClaimTakesTheFirstJobsItMay: on random backlogs of jobs without a
// key, under concurrency keys and under rate keys, in two queues, many of
// them sharing a priority and run_at (enqueued in batches), each claim
// takes exactly the jobs a claim reading every range whole would: the
// first in the claim order that the free slots and the keys' room allow,
// however the claim cuts the ranges it reads. (Not jobs under both kinds
// of key: a rate key's range is read up to the key's room, and a job of it
// whose concurrency key fills up during the claim is passed over with the
// key's next jobs unread, so such a claim may take fewer than it could.)
func TestAClaimTakesTheFirstJobsItMay(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 11))
		f := newJobs(t)
		limits := map[string]int{"c1": 2, "c2": 5}
		rates := map[string]flow.Rate{"r1": {Limit: 3, PeriodMs: 500}, "r2": {Limit: 8, PeriodMs: 1000}, "r3": {Limit: 1, PeriodMs: 200}}
		f.s.Limits, f.s.Rates = limits, rates

		type model struct {
			id, priority, runAt int64
			queue, key, rate    string
			claimed             bool
		}
		var jobs []*model
		starts := map[string][]int64{} // the rate keys' starts
		running := map[string]int{}    // the concurrency keys' claimed jobs
		now := t0
		for round := range 40 {
			if round < 15 || rng.IntN(3) == 0 { // a batch, one run_at for all its jobs
				var batch []fencestore.NewJob
				for range 1 + rng.IntN(20) {
					j := in([]string{"default", "other"}[rng.IntN(2)], "x", rng.IntN(3), "")
					j.LeaseMs, j.TimeoutMs = 600_000, 600_000
					j.RunAt = now // as the API enqueues it; some due earlier, as a retry or a run_at would be
					if rng.IntN(4) == 0 {
						j.RunAt -= rng.Int64N(2000)
					}
					switch rng.IntN(6) {
					case 0, 1:
						j.ConcurrencyKey = []string{"c1", "c2"}[rng.IntN(2)]
					case 2, 3, 4:
						j.RateKey = []string{"r1", "r2", "r3"}[rng.IntN(3)]
					}
					batch = append(batch, j)
				}
				for i, e := range f.enqueue(now, batch...) {
					jobs = append(jobs, &model{id: e.ID, priority: int64(batch[i].Priority), runAt: e.RunAt, queue: batch[i].Queue,
						key: batch[i].ConcurrencyKey, rate: batch[i].RateKey})
				}
			}
			// What the claim may take, in the claim order.
			limit := 1 + rng.IntN(12)
			slices.SortFunc(jobs, func(a, b *model) int {
				return cmp.Or(cmp.Compare(a.priority, b.priority), cmp.Compare(a.runAt, b.runAt), cmp.Compare(a.id, b.id))
			})
			taken, started := map[string]int{}, map[string]int64{}
			var want []int64
			for _, j := range jobs {
				if len(want) == limit {
					break
				}
				if j.claimed || j.key != "" && running[j.key]+taken[j.key] >= limits[j.key] {
					continue
				}
				if j.rate != "" {
					in := int64(0)
					for _, at := range starts[j.rate] {
						if at > now-rates[j.rate].PeriodMs {
							in++
						}
					}
					if in+started[j.rate] >= rates[j.rate].Limit {
						continue
					}
				}
				taken[j.key]++
				started[j.rate]++
				want = append(want, j.id)
			}

			var got []int64
			for _, j := range f.claim(now, "w", limit, api.AnyQueue) {
				got = append(got, j.ID)
			}
			require.ElementsMatch(t, want, got, "seed %d round %d: claim of %d at %d", seed, round, limit, now)
			for _, j := range jobs {
				if slices.Contains(got, j.id) {
					j.claimed = true
					running[j.key]++
					if j.rate != "" {
						starts[j.rate] = append(starts[j.rate], now)
					}
				}
			}
			now += rng.Int64N(300)
		}
	}
}

// BenchmarkClaimBesideOpenRateKeys claims 100 jobs at a time from a
// backlog whose jobs alternate between no key and ten rate keys with room
// to spare, enqueued a few milliseconds apart: the claim reads each key's
// range only up to the hundredth job without a key.
func BenchmarkClaimBesideOpenRateKeys(b *testing.B) {
	db := dosqltest.Open(b)
	s := fencestore.New(db, nil)
	s.Rates = map[string]flow.Rate{}
	for k := range 10 {
		s.Rates[fmt.Sprint("r", k)] = flow.Rate{Limit: flow.MaxLimit, PeriodMs: 1000}
	}
	n := b.N*200 + 1000
	for i := 0; i < n; i += 20 {
		var batch []fencestore.NewJob
		for j := i; j < i+20; j++ {
			nj := in("default", "x", 0, "")
			nj.LeaseMs, nj.TimeoutMs, nj.RunAt = 600_000, 600_000, t0-int64(n-i)/4
			if j%2 == 1 {
				nj.RateKey = fmt.Sprint("r", j/2%10)
			}
			batch = append(batch, nj)
		}
		require.NoError(b, db.Tx(func() error { _, err := s.Enqueue(t0-int64(n-i)/4, batch); return err }))
	}
	b.ResetTimer()
	for i := range b.N {
		require.NoError(b, db.Tx(func() error {
			got, _, err := s.Claim(t0+int64(i), fencestore.ClaimRequest{Worker: "w", Queues: []string{"default"}, Limit: 100})
			if err == nil && len(got) != 100 {
				err = fmt.Errorf("claimed %d jobs", len(got))
			}
			return err
		}))
	}
}
