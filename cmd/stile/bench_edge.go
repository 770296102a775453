package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/cmd/stile/internal/bench"
)

// callCounts are the edge executor's calls to the tenants' objects, by
// kind, as the test entry counts them (GET /__executor_faults).
type callCounts struct {
	Claim, Report, Reports, Heartbeat, Done, Other int64
	Invocations                                    int64
	MaxInFlight                                    int64
}

func (c callCounts) total() int64 {
	return c.Claim + c.Report + c.Reports + c.Heartbeat + c.Done + c.Other
}

func (c callCounts) add(d callCounts) callCounts {
	return callCounts{Claim: c.Claim + d.Claim, Report: c.Report + d.Report, Reports: c.Reports + d.Reports,
		Heartbeat: c.Heartbeat + d.Heartbeat, Done: c.Done + d.Done, Other: c.Other + d.Other,
		Invocations: c.Invocations + d.Invocations, MaxInFlight: max(c.MaxInFlight, d.MaxInFlight)}
}

func (c callCounts) sub(d callCounts) callCounts {
	return callCounts{Claim: c.Claim - d.Claim, Report: c.Report - d.Report, Reports: c.Reports - d.Reports,
		Heartbeat: c.Heartbeat - d.Heartbeat, Done: c.Done - d.Done, Other: c.Other - d.Other,
		Invocations: c.Invocations - d.Invocations, MaxInFlight: c.MaxInFlight}
}

// executorCalls reads the test entry's counts of the executor's calls.
func executorCalls(ctx context.Context, cl *client.Client) (callCounts, error) {
	status, b, err := cl.Raw(ctx, "GET", "/__executor_faults", nil, nil)
	if err != nil {
		return callCounts{}, err
	}
	if status != 200 {
		return callCounts{}, fmt.Errorf("GET /__executor_faults: %d %s", status, b)
	}
	var f struct {
		Calls       map[string]int64 `json:"calls"`
		Invocations int64            `json:"invocations"`
		MaxInFlight int64            `json:"maxInFlight"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return callCounts{}, err
	}
	return callCounts{Claim: f.Calls["claim"], Report: f.Calls["report"], Reports: f.Calls["reports"], Heartbeat: f.Calls["heartbeat"],
		Done: f.Calls["done"], Other: f.Calls["other"], Invocations: f.Invocations, MaxInFlight: f.MaxInFlight}, nil
}

// edgeBacklog enqueues n echo jobs (no args, as the worker library's
// drain does; the executor's echo is the same no-op) on a paused queue of
// a fresh tenant (not timed), resumes the queue, which makes the tenant
// push, and times
// the pushes' executors draining it: from the resume to the last job's
// end (the server's time). It returns the rate and the executor's calls
// to the object, counted once its pushes ended.
func edgeBacklog(ctx context.Context, cl *client.Client, tenant string, n int) (float64, callCounts, error) {
	const queue = "backlog"
	ten := cl.Tenant(tenant)
	if _, err := ten.Create(ctx); err != nil {
		return 0, callCounts{}, err
	}
	if _, err := ten.PauseQueue(ctx, queue, true); err != nil {
		return 0, callCounts{}, err
	}
	for left := n; left > 0; {
		reqs := make([]api.EnqueueRequest, min(api.MaxBatchJobs, left))
		for i := range reqs {
			reqs[i] = api.EnqueueRequest{Kind: "echo", Queue: queue}
		}
		if _, err := ten.EnqueueBatch(ctx, reqs); err != nil {
			return 0, callCounts{}, err
		}
		left -= len(reqs)
	}
	before, err := executorCalls(ctx, cl)
	if err != nil {
		return 0, callCounts{}, err
	}
	start := time.Now()
	if _, err := ten.PauseQueue(ctx, queue, false); err != nil {
		return 0, callCounts{}, err
	}
	// Waits with a look every 100 ms at the queue's counts. The rate is
	// the last job's finish, the server's time, so how soon the wait
	// notices costs the figure nothing; each look is a request to the
	// object whose thread the drain runs on, which the library's drain,
	// timed in its own process, never makes (every 20 ms, the looks were
	// about as many requests as the drain's own).
	deadline := time.Now().Add(2 * time.Minute)
	for {
		q, err := ten.Queues(ctx)
		if err != nil {
			return 0, callCounts{}, err
		}
		if !slices.ContainsFunc(q.Queues, func(c api.QueueCounts) bool { return c.Queue == queue && len(c.Counts) > 0 }) {
			break
		}
		if time.Now().After(deadline) {
			return 0, callCounts{}, fmt.Errorf("the backlog of %s is not drained after 2 minutes: %v", tenant, q.Queues)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var last time.Time
	done, after := 0, ""
	for {
		page, err := ten.List(ctx, "completed", queue, "", after, api.MaxList)
		if err != nil {
			return 0, callCounts{}, err
		}
		for _, j := range page.Jobs {
			done++
			if j.FinishedAt != nil && j.FinishedAt.After(last) {
				last = *j.FinishedAt
			}
		}
		if after = page.Next; after == "" {
			break
		}
	}
	if done != n {
		return 0, callCounts{}, fmt.Errorf("%d of the %d jobs of %s completed", done, n, tenant)
	}
	// The calls are counted once the pushes ended (a drain lingers, then
	// ends its push).
	for {
		p, err := ten.Pushes(ctx)
		if err != nil {
			return 0, callCounts{}, err
		}
		if len(p.InFlight) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return 0, callCounts{}, fmt.Errorf("the pushes of %s have not ended after 2 minutes", tenant)
		}
		time.Sleep(50 * time.Millisecond)
	}
	calls, err := executorCalls(ctx, cl)
	if err != nil {
		return 0, callCounts{}, err
	}
	return float64(n) / last.Sub(start).Seconds(), calls.sub(before), nil
}

// libraryBacklog is the worker library's batched drain of n no-op jobs
// (bench.Drain, whose handler is benchhandlers.Noop, as the edge
// executor's) from a tenant the deployment never pushes.
func libraryBacklog(ctx context.Context, url, tenant string, n, concurrency int) (float64, error) {
	r, err := bench.Drain(ctx, bench.DrainConfig{URL: url, Token: benchToken, Tenants: []string{tenant}, Jobs: n, Concurrency: concurrency})
	if err != nil {
		return 0, fmt.Errorf("the worker library's drain: %w", err)
	}
	return float64(r.Jobs) / r.D.Seconds(), nil
}

// median is the median of rates (the mean of the middle two of an even
// count).
func median(rates []float64) float64 {
	if len(rates) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(rates))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// rates prints rates in their order, whole.
func rates(rs []float64) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strings.Join(out, " ")
}
