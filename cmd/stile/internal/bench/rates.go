package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/cmd/stile/benchhandlers"
	"github.com/stile-run/stile/worker"
)

// RatesConfig is one run of the rate-limit measurement: the worker
// library (Run, long-polling one tenant, as `stile work --tenant` does)
// working through a backlog of no-op jobs, Unlimited of them without a
// key and PerKey under each of Keys rate keys of Limit starts per Period,
// enqueued interleaved before the worker starts.
type RatesConfig struct {
	URL, Token   string
	Tenant       string
	Keys, PerKey int
	Limit        int64
	Period       time.Duration
	Unlimited    int
	Concurrency  int
}

// RateKey names the i-th rate key of the measurement.
func RateKey(i int) string { return "rate-" + strconv.Itoa(i) }

// KeyStarts is one rate key's starts in a run.
type KeyStarts struct {
	Key string
	// Starts are the claim times of every attempt of the key's jobs (Unix
	// ms, the server's record: what the limit governs), sorted.
	Starts []int64
	// Started is the key's own count of its starts (GET /rates/{key}).
	Started int64
}

// RatesResult is what a run did, by the server's times (Unix ms).
type RatesResult struct {
	Keys []KeyStarts
	// First is the run's first start; UnlimitedEnd the time the last job
	// without a key finished; End the time the last job finished.
	First, UnlimitedEnd, End int64
	Unlimited                int
	// UnlimitedStarts are the claim times of the jobs without a key,
	// sorted.
	UnlimitedStarts []int64
}

// UnlimitedRate is the rate the jobs without a key drained at: from the
// run's first start to the last of them finishing (0 without any).
func (r RatesResult) UnlimitedRate() float64 {
	if r.Unlimited == 0 {
		return 0
	}
	return float64(r.Unlimited) / (float64(max(r.UnlimitedEnd-r.First, 1)) / 1000)
}

// RatedMeanwhile counts the rated starts while the jobs without a key
// drained (up to the last of them finishing): the worker's other work
// then.
func (r RatesResult) RatedMeanwhile() int {
	n := 0
	for _, k := range r.Keys {
		for _, s := range k.Starts {
			if s <= r.UnlimitedEnd {
				n++
			}
		}
	}
	return n
}

// Rates enqueues the run's backlog (not timed), starts a worker, waits
// until every job completed, and reads each job's attempts. An error if a
// job did not complete.
func Rates(ctx context.Context, c RatesConfig) (RatesResult, error) {
	cl := client.New(c.URL, c.Token, nil)
	ten := cl.Tenant(c.Tenant)
	if _, err := ten.Create(ctx); err != nil {
		return RatesResult{}, err
	}
	for i := range c.Keys {
		if _, err := ten.SetRate(ctx, RateKey(i), c.Limit, c.Period); err != nil {
			return RatesResult{}, err
		}
	}
	// The backlog, rated jobs spread evenly among the others (their keys
	// in turn), so that claims meet both from the start.
	rated, total := c.Keys*c.PerKey, c.Keys*c.PerKey+c.Unlimited
	if total == 0 {
		return RatesResult{}, errors.New("the rates measurement has no jobs to run")
	}
	reqs := make([]api.EnqueueRequest, total)
	placed := 0
	for i := range reqs {
		reqs[i] = api.EnqueueRequest{Kind: Kind}
		if placed*total < (i+1)*rated {
			reqs[i].RateKey = RateKey(placed % c.Keys)
			placed++
		}
	}
	ids := make([]string, 0, total)
	for batch := range slices.Chunk(reqs, api.MaxBatchJobs) {
		js, err := ten.EnqueueBatch(ctx, batch)
		if err != nil {
			return RatesResult{}, fmt.Errorf("enqueue the backlog: %w", err)
		}
		for _, j := range js {
			ids = append(ids, j.ID)
		}
	}

	w, err := worker.New(worker.Config{URL: c.URL, Token: c.Token, Concurrency: c.Concurrency, ID: "bench-rates",
		Tenants: []string{c.Tenant}})
	if err != nil {
		return RatesResult{}, err
	}
	// The handler counts its runs: the run waits on that, not on the
	// tenant (a held GET /jobs/{id} is answered again at every change of
	// the tenant, a poll is a request: either would take the tenant's time
	// from the claims measured).
	var handled atomic.Int64
	all := make(chan struct{})
	w.Handle(Kind, func(ctx context.Context, j *worker.Job) (any, error) {
		if handled.Add(1) == int64(total) {
			close(all)
		}
		return benchhandlers.Noop(ctx, j)
	})
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(wctx) }()

	// The keys need PerKey/Limit periods; the rest is slack.
	bound := 2*time.Minute + time.Duration(c.PerKey)*c.Period/time.Duration(max(c.Limit, 1))
	dctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	select {
	case <-all:
	case <-dctx.Done():
		return RatesResult{}, fmt.Errorf("%d jobs of %d ran in %s", handled.Load(), total, bound)
	}
	// Every job ran: read them, waiting for the reports still on their way.
	var wg sync.WaitGroup
	jobs := make([]api.Job, total)
	jerrs := make([]error, total)
	const readers = 8
	for r := range readers {
		wg.Go(func() {
			for i := r; i < total; i += readers {
				jobs[i], jerrs[i] = ten.Wait(dctx, ids[i])
			}
		})
	}
	wg.Wait()
	stop()
	if err := <-ran; err != nil {
		return RatesResult{}, fmt.Errorf("the worker stopped: %w", err)
	}
	if err := errors.Join(jerrs...); err != nil {
		return RatesResult{}, err
	}

	res := RatesResult{Unlimited: c.Unlimited, Keys: make([]KeyStarts, c.Keys)}
	byKey := map[string]*KeyStarts{}
	for i := range c.Keys {
		k := RateKey(i)
		rt, err := ten.Rate(ctx, k)
		if err != nil {
			return RatesResult{}, err
		}
		res.Keys[i] = KeyStarts{Key: k, Started: rt.Started}
		byKey[k] = &res.Keys[i]
	}
	for i, j := range jobs {
		if j.FinishedAt == nil || len(j.Attempts) == 0 {
			return RatesResult{}, fmt.Errorf("job %s is %s with %d attempts", j.ID, j.State, len(j.Attempts))
		}
		if j.RateKey != reqs[i].RateKey {
			return RatesResult{}, fmt.Errorf("job %s has rate key %q, enqueued with %q", j.ID, j.RateKey, reqs[i].RateKey)
		}
		finished := j.FinishedAt.UnixMilli()
		res.End = max(res.End, finished)
		if j.RateKey == "" {
			res.UnlimitedEnd = max(res.UnlimitedEnd, finished)
		}
		for _, a := range j.Attempts {
			at := a.ClaimedAt.UnixMilli()
			if res.First == 0 || at < res.First {
				res.First = at
			}
			if k := byKey[j.RateKey]; k != nil {
				k.Starts = append(k.Starts, at)
			} else {
				res.UnlimitedStarts = append(res.UnlimitedStarts, at)
			}
		}
	}
	for i := range res.Keys {
		slices.Sort(res.Keys[i].Starts)
	}
	slices.Sort(res.UnlimitedStarts)
	return res, nil
}

// MaxInWindow is the most starts (sorted Unix ms) in any window of
// periodMs: those in (t - periodMs, t] for some t, as package flow counts
// them.
func MaxInWindow(starts []int64, periodMs int64) int {
	best, lo := 0, 0
	for hi, t := range starts {
		for starts[lo] <= t-periodMs {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// PerPeriod counts the starts (sorted Unix ms) in each whole period from
// the first start, up to the last period that ends by the last start:
// the periods the key had work to start throughout.
func PerPeriod(starts []int64, periodMs int64) []int {
	if len(starts) == 0 {
		return nil
	}
	first := starts[0]
	out := make([]int, (starts[len(starts)-1]-first)/periodMs)
	for _, t := range starts {
		if k := (t - first) / periodMs; k < int64(len(out)) {
			out[k]++
		}
	}
	return out
}
