package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"text/tabwriter"

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
		slices.SortFunc(rs, func(a, b bench.DrainResult) int { return int(a.D - b.D) })
		m := rs[len(rs)/2]
		all := ""
		for i := range rs {
			if i > 0 {
				all += " "
			}
			all += bench.Rate(rs[i].Jobs, rs[len(rs)-1-i].D)
		}
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
	h, stop, err := bench.Serve(m, "bench-token")
	if err != nil {
		return bench.DrainResult{}, err
	}
	defer stop()
	tenants := make([]string, c.tenants)
	for i := range tenants {
		tenants[i] = fmt.Sprintf("drain-%d", i)
	}
	return bench.Drain(ctx, bench.DrainConfig{URL: h.C.BaseURL(), Token: "bench-token", Tenants: tenants,
		Jobs: jobs / c.tenants, Concurrency: concurrency, SingleReports: c.single})
}
