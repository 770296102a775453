package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
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
	w.Handle("echo", func(context.Context, *worker.Job) (any, error) { return nil, nil })
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
