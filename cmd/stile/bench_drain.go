package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stile-run/stile/cmd/stile/internal/bench"
	"github.com/stile-run/stile/host"
)

// drainConfig is one drain measurement: a host behind loopback HTTP, how
// many tenants drain at once, and how the worker reports.
type drainConfig struct {
	name    string
	open    func() (*host.Manager, error)
	tenants int
	single  bool
}

// benchDrain times the worker library draining a backlog of no-op jobs,
// as a user's worker does (the backlog split over the tenants), runs
// times each, and prints the median run of each.
func benchDrain(ctx context.Context, jobs, concurrency, runs int, cs []drainConfig) error {
	fmt.Printf("drain: the worker library, %d handlers, draining %d no-op jobs over loopback HTTP (median of %d runs)\n", concurrency, jobs, runs)
	tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  host\tjobs/s\trequests/job\tstatements/job\tcores\truns (jobs/s)\t")
	for _, c := range cs {
		var rs []bench.DrainResult
		for range runs {
			r, err := drainOnce(ctx, c, jobs, concurrency)
			if err != nil {
				return fmt.Errorf("drain %s: %w", c.name, err)
			}
			rs = append(rs, r)
		}
		m, all := medianRun(rs)
		fmt.Fprintf(tw, "  %s\t%s\t%.3f\t%.1f\t%.2f\t%s\t\n", c.name, bench.Rate(m.Jobs, m.D), float64(m.Requests)/float64(m.Jobs),
			float64(m.Statements)/float64(m.Jobs), m.CPU.Seconds()/m.D.Seconds(), all)
	}
	tw.Flush()
	fmt.Println()
	return nil
}

func drainOnce(ctx context.Context, c drainConfig, jobs, concurrency int) (bench.DrainResult, error) {
	m, err := c.open()
	if err != nil {
		return bench.DrainResult{}, err
	}
	defer m.Close()
	h, stop, err := bench.Serve(m, benchToken)
	if err != nil {
		return bench.DrainResult{}, err
	}
	defer stop()
	tenants := make([]string, c.tenants)
	for i := range tenants {
		tenants[i] = fmt.Sprintf("drain-%d", i)
	}
	return bench.Drain(ctx, bench.DrainConfig{URL: h.C.BaseURL(), Token: benchToken, Tenants: tenants,
		Jobs: jobs / c.tenants, Concurrency: concurrency, SingleReports: c.single})
}

// drainLatency is the light-load figure beside the drain: enqueue →
// completed through the worker library at rate jobs/s, batched and one
// report per request, in alternating rounds on fresh hosts (so a noisy
// minute does not fall on one of them), pooled per mode.
func drainLatency(ctx context.Context, open func() (*host.Manager, error), jobs, rate, concurrency int) error {
	const rounds = 3
	fmt.Printf("latency enqueue → completed, stile dev, the worker library long-polling, %d jobs at %d/s, %d handlers, %d alternating rounds\n",
		jobs, rate, concurrency, rounds)
	tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  reports\tp50\tp90\tp99\tmax\t")
	var lat [2][]time.Duration
	for range rounds {
		for mode, single := range []bool{false, true} {
			l, err := latencyOnce(ctx, open, max(1, jobs/rounds), rate, concurrency, single)
			if err != nil {
				return err
			}
			lat[mode] = append(lat[mode], l...)
		}
	}
	for mode, name := range []string{"batched", "one per request"} {
		l := lat[mode]
		slices.Sort(l)
		r := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", name, r(bench.Percentile(l, 50)), r(bench.Percentile(l, 90)),
			r(bench.Percentile(l, 99)), r(l[len(l)-1]))
	}
	tw.Flush()
	fmt.Println()
	return nil
}

func latencyOnce(ctx context.Context, open func() (*host.Manager, error), jobs, rate, concurrency int, single bool) ([]time.Duration, error) {
	m, err := open()
	if err != nil {
		return nil, err
	}
	defer m.Close()
	h, stop, err := bench.Serve(m, benchToken)
	if err != nil {
		return nil, err
	}
	defer stop()
	c := bench.DrainConfig{URL: h.C.BaseURL(), Token: benchToken, Tenants: []string{"latency"}, Concurrency: concurrency, SingleReports: single}
	return bench.WorkerLatency(ctx, c, 20, jobs, time.Second/time.Duration(rate))
}

// drainWorkerd is the drain against one Durable Object in workerd
// (Miniflare), a fresh tenant per run: the worker library over loopback
// HTTP, batched and one report per request.
func drainWorkerd(ctx context.Context, url string, jobs, concurrency, runs int) error {
	fmt.Printf("  drain: the worker library, %d handlers, %d no-op jobs of one tenant (median of %d runs)\n", concurrency, jobs, runs)
	tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "    reports\tjobs/s\trequests/job\tcores\truns (jobs/s)\t")
	run := 0
	for _, single := range []bool{false, true} {
		var rs []bench.DrainResult
		for range runs {
			run++
			r, err := bench.Drain(ctx, bench.DrainConfig{URL: url, Token: benchToken, Tenants: []string{fmt.Sprintf("drain-%d", run)},
				Jobs: jobs, Concurrency: concurrency, SingleReports: single})
			if err != nil {
				return fmt.Errorf("workerd drain: %w", err)
			}
			rs = append(rs, r)
		}
		m, all := medianRun(rs)
		name := "batched"
		if single {
			name = "one per request"
		}
		fmt.Fprintf(tw, "    %s\t%s\t%.3f\t%.2f\t%s\t\n", name, bench.Rate(m.Jobs, m.D), float64(m.Requests)/float64(m.Jobs),
			m.CPU.Seconds()/m.D.Seconds(), all)
	}
	tw.Flush()
	fmt.Println("    (cores: this process, the worker; workerd's own CPU is not counted)")
	fmt.Println()
	return nil
}

// medianRun returns the median of the runs by rate, and every run's rate,
// slowest first.
func medianRun(rs []bench.DrainResult) (bench.DrainResult, string) {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b bench.DrainResult) int { return int(b.D - a.D) })
	rates := make([]string, len(rs))
	for i, r := range rs {
		rates[i] = bench.Rate(r.Jobs, r.D)
	}
	return rs[len(rs)/2], strings.Join(rates, " ")
}
