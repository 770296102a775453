package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host"
)

// TenantsResult is what many tenants in one process cost.
type TenantsResult struct {
	Tenants, Requests int
	// After touching every tenant once, and after the spread requests.
	Touched, Spread host.Stats
	// RSS of the process at the end of each phase and at its peak.
	TouchedRSS, SpreadRSS, PeakRSS int64
	// First holds the latency of each tenant's first request (creating
	// its database); Reopen of each spread request that found its
	// tenant closed; Warm of those that found it open. Sorted.
	First, Reopen, Warm []time.Duration
}

// Tenants touches n tenants once each (one enqueue), then sends requests
// more, each to a tenant drawn at random (an enqueue or a read of the
// job list), one at a time, through the manager in-process.
func Tenants(ctx context.Context, m *host.Manager, n, requests int, seed uint64) (TenantsResult, error) {
	r := TenantsResult{Tenants: n, Requests: requests}
	name := func(i int) string { return fmt.Sprintf("tenant-%04d", i) }
	type request struct {
		route api.Route
		query string
		body  []byte
	}
	enqueue := request{route: api.RouteEnqueue, body: []byte(`{"kind":"echo","args":{}}`)}
	list := request{route: api.RouteListJobs, query: "limit=10"}
	call := func(i int, r request) (time.Duration, error) {
		req := do.Request{Kind: do.KindAPI, Method: r.route.Method, Path: r.route.Path(name(i)), Query: r.query, Body: r.body}
		start := time.Now()
		resp, err := m.Do(ctx, name(i), req)
		d := time.Since(start)
		if err != nil {
			return d, fmt.Errorf("%s %s: %w", req.Method, req.Path, err)
		}
		if resp.Status >= 300 {
			return d, fmt.Errorf("%s %s: %d %s", req.Method, req.Path, resp.Status, resp.Body)
		}
		return d, nil
	}
	for i := range n {
		d, err := call(i, enqueue)
		if err != nil {
			return r, err
		}
		r.First = append(r.First, d)
	}
	r.Touched, r.TouchedRSS = m.Stats(), rss()
	rng := rand.New(rand.NewPCG(seed, seed))
	for k := range requests {
		i := rng.IntN(n)
		was := m.IsOpen(name(i))
		req := enqueue
		if k%2 == 1 {
			req = list
		}
		d, err := call(i, req)
		if err != nil {
			return r, err
		}
		if was {
			r.Warm = append(r.Warm, d)
		} else {
			r.Reopen = append(r.Reopen, d)
		}
	}
	r.Spread, r.SpreadRSS, r.PeakRSS = m.Stats(), rss(), peakRSS()
	for _, l := range [][]time.Duration{r.First, r.Reopen, r.Warm} {
		slices.Sort(l)
	}
	return r, nil
}

// rss is the process's resident set now (Linux; 0 elsewhere).
func rss() int64 { return procStatus("VmRSS:") }

// peakRSS is the process's largest resident set so far (Linux).
func peakRSS() int64 { return procStatus("VmHWM:") }

func procStatus(field string) int64 {
	if runtime.GOOS != "linux" {
		return 0
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
