package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/cmd/stile/benchhandlers"
	"github.com/stile-run/stile/host/dosql"
	"github.com/stile-run/stile/worker"
)

// DrainConfig is one drain measurement: the worker library draining a
// backlog of no-op jobs over HTTP, as a user's worker would.
type DrainConfig struct {
	URL, Token  string
	Tenants     []string
	Jobs        int // per tenant
	Concurrency int
	// SingleReports sends one report per request (worker.Config).
	SingleReports bool
}

// DrainResult is what a drain took.
type DrainResult struct {
	Jobs       int
	D          time.Duration
	Requests   int64         // the worker's HTTP requests
	Statements int64         // SQL calls the process's tenant databases answered (0 for workerd)
	CPU        time.Duration // the process's CPU time, server and worker
}

// Drain enqueues the backlog (not timed), then times a worker draining
// every tenant at once until its claims find nothing.
func Drain(ctx context.Context, c DrainConfig) (DrainResult, error) {
	cl := client.New(c.URL, c.Token, nil)
	for _, t := range c.Tenants {
		for left := c.Jobs; left > 0; {
			n := min(left, api.MaxBatchJobs)
			rs := make([]api.EnqueueRequest, n)
			for i := range rs {
				rs[i] = api.EnqueueRequest{Kind: "echo"}
			}
			if _, err := cl.Tenant(t).EnqueueBatch(ctx, rs); err != nil {
				return DrainResult{}, fmt.Errorf("enqueue the backlog of %s: %w", t, err)
			}
			left -= n
		}
	}
	w, err := worker.New(worker.Config{URL: c.URL, Token: c.Token, Concurrency: c.Concurrency, ID: "bench-drain",
		SingleReports: c.SingleReports})
	if err != nil {
		return DrainResult{}, err
	}
	w.Handle("echo", benchhandlers.Noop)
	stmts, cpu := dosql.Statements(), cpuTime()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(c.Tenants))
	ran := make([]int, len(c.Tenants))
	for i, t := range c.Tenants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := w.Drain(ctx, api.PushRequest{Tenant: t}, worker.Budget{})
			ran[i], errs[i] = res.Jobs, err
		}()
	}
	wg.Wait()
	r := DrainResult{D: time.Since(start), Requests: w.Requests(), Statements: dosql.Statements() - stmts, CPU: cpuTime() - cpu}
	for i, err := range errs {
		if err != nil {
			return r, fmt.Errorf("drain %s: %w", c.Tenants[i], err)
		}
		r.Jobs += ran[i]
	}
	if want := c.Jobs * len(c.Tenants); r.Jobs != want {
		return r, fmt.Errorf("the drain ran %d jobs of %d", r.Jobs, want)
	}
	return r, nil
}

// WorkerLatency runs the worker library (Run, long-polling one tenant)
// while warm+n no-op jobs are enqueued one at a time, one every `every`,
// and returns the time of each of the last n from its enqueue to its
// completion as the enqueuer sees it (client.Wait returning), sorted. The
// warm-up runs on the same worker: a worker stopped while its claim is
// held can leave the next job claimed by no one until its lease ends.
func WorkerLatency(ctx context.Context, c DrainConfig, warm, n int, every time.Duration) ([]time.Duration, error) {
	if len(c.Tenants) != 1 {
		return nil, fmt.Errorf("the latency measurement needs one tenant, not %d", len(c.Tenants))
	}
	w, err := worker.New(worker.Config{URL: c.URL, Token: c.Token, Concurrency: c.Concurrency, ID: "bench-latency",
		Tenants: c.Tenants, SingleReports: c.SingleReports})
	if err != nil {
		return nil, err
	}
	w.Handle("echo", benchhandlers.Noop)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(wctx) }()

	ten := client.New(c.URL, c.Token, nil).Tenant(c.Tenants[0])
	lat := make([]time.Duration, warm+n)
	errs := make([]error, warm+n)
	var wg sync.WaitGroup
	for i := range warm + n {
		t0 := time.Now()
		j, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "echo"})
		if err != nil {
			return nil, fmt.Errorf("enqueue job %d: %w", i, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, err := ten.Wait(ctx, j.ID)
			lat[i] = time.Since(t0)
			if err == nil && done.State != "completed" {
				err = fmt.Errorf("job %s ended %s", j.ID, done.State)
			}
			errs[i] = err
		}()
		time.Sleep(every)
	}
	wg.Wait()
	stop()
	if err := <-ran; err != nil {
		return nil, fmt.Errorf("the worker stopped: %w", err)
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	lat = lat[warm:]
	slices.Sort(lat)
	return lat, nil
}
