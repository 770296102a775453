package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stile-run/stile/internal/wasmbuild"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/cmd/stile/defaultapp/app"
	"github.com/stile-run/stile/cmd/stile/internal/bench"
	"github.com/stile-run/stile/cmd/stile/internal/bench/benchapp"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/native"
	"github.com/stile-run/stile/host/wazerohost"
	"github.com/stile-run/stile/host/workerd"
)

func runBench(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	jobs := fs.Int("jobs", 20000, "jobs per measurement")
	batch := fs.Int("batch", 100, "jobs per request in the batched measurements")
	latJobs := fs.Int("latency-jobs", 300, "jobs in the latency measurement")
	latRate := fs.Int("latency-rate", 100, "jobs/s enqueued in the latency measurement (light load)")
	depth := fs.Int("depth", 1_000_000, "ready jobs in the deep queue of the claim measurement")
	events := fs.Int("events", 20000, "events per measurement of the event log and reactions")
	rebuildEvents := fs.Int("rebuild-events", 1_000_000, "events in the log of the projection rebuild measurement")
	applyEvents := fs.Int("apply-events", 100_000, "events per measurement of projection batches")
	only := fs.String("only", "", "comma-separated parts to run: jobs, drain, tenants, depth, events, projections, latency, workerd, rows, commands, pushed, edge, rates (default: all)")
	commandsN := fs.Int("commands", 50, "commands per history in the commands measurement")
	commandHistory := fs.Int("command-history", 10_000, "events of the longest aggregate in the commands measurement (also 1 and a tenth of it)")
	rowsOps := fs.Int("rows-ops", 100, "operations of each kind in the rows measurement")
	rowsHistory := fs.Int("rows-history", 1000, "events of the long aggregate in the rows measurement")
	drainJobs := fs.Int("drain-jobs", 20000, "no-op jobs in the worker's backlog in the drain measurement")
	drainConc := fs.Int("drain-concurrency", 100, "handlers of the worker in the drain measurement")
	drainRuns := fs.Int("drain-runs", 3, "runs of each drain measurement (the median is printed)")
	tenantsN := fs.Int("tenants", 1000, "tenants touched in the tenants measurement")
	tenantReqs := fs.Int("tenant-requests", 10000, "requests spread over the tenants in the tenants measurement")
	maxMemory := fs.String("max-memory", "768MiB", "bound on the open instances' memory in the tenants measurement (as stile dev --max-memory)")
	maxOpen := fs.Int("max-open", 0, "bound on open instances in the tenants measurement (0: none, only --max-memory)")
	edgeBacklog := fs.Int("edge-backlog", 2000, "jobs in the edge executor's backlog measurement (and in the worker library's drain beside it)")
	edgeRuns := fs.Int("edge-runs", 3, "runs of the edge executor's backlog measurement, alternated with the worker library's (the median is printed)")
	edgeJobs := fs.Int("edge-latency-jobs", 100, "jobs in the edge executor's light-load measurement")
	edgeRate := fs.Int("edge-latency-rate", 100, "jobs/s enqueued in the edge executor's light-load measurement")
	pushedJobs := fs.Int("pushed-jobs", 200, "jobs per round of the pushed light-load measurement (at --latency-rate)")
	pushedKept := fs.Int("pushed-kept", 100_000, "completed jobs kept by the tenant of the pushed measurement's history case")
	pushedRounds := fs.Int("pushed-rounds", 3, "rounds of the pushed light-load measurement, its cases alternated")
	pushedBehind := fs.Int("pushed-behind", 100, "jobs enqueued behind a slow job in the pushed and edge measurements")
	rateKeys := fs.Int("rate-keys", 10, "rate keys in the rates measurement")
	rateJobs := fs.Int("rate-jobs", 1000, "jobs per rate key in the rates measurement")
	rateLimit := fs.Int64("rate-limit", 200, "starts per period of each rate key in the rates measurement")
	ratePeriod := fs.Duration("rate-period", time.Second, "the period of each rate key in the rates measurement (whole milliseconds)")
	rateUnlimited := fs.Int("rate-unlimited", 10000, "jobs without a rate key in the rates measurement (alone, and beside the rated ones)")
	rateRuns := fs.Int("rate-runs", 3, "pairs of runs of the rates measurement (without and with the rated jobs, alternated)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof reads it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	part := func(name string) bool { return *only == "" || slices.Contains(strings.Split(*only, ","), name) }
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir, err := os.MkdirTemp("", "stile-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	wasmPath := filepath.Join(dir, "tenant.wasm")
	if err := wasmbuild.BuildDeploy(ctx, ".", wasmbuild.DefaultPackage, wasmPath); err != nil {
		return err
	}
	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		return err
	}
	fmt.Printf("stile bench: %s, %d CPUs, %s/%s\n", goruntime.Version(), goruntime.NumCPU(), goruntime.GOOS, goruntime.GOARCH)
	fmt.Printf("tenant.wasm (default module, as stile build makes it): %d bytes, %d bytes gzip -9 (%.2f MB)\n\n", len(wasm), wasmbuild.GzipSize(wasm), float64(wasmbuild.GzipSize(wasm))/1e6)

	// hosts: each measurement gets a fresh manager over fresh files.
	n := new(int)
	newManager := func(factory host.Factory, maxMemory int64) (*host.Manager, error) {
		*n++
		return host.NewManager(host.Config{Factory: factory, DataDir: filepath.Join(dir, fmt.Sprint(*n)), Logger: quiet, MaxMemory: maxMemory})
	}
	devBound, err := parseBytes(defaultMaxMemory)
	if err != nil {
		return err
	}
	nativeHost := func() (*host.Manager, error) {
		f, err := native.New(native.Config{App: app.App(), Logger: quiet})
		if err != nil {
			return nil, err
		}
		return newManager(f, 0)
	}
	wazeroBound := func(guard bool, maxMemory int64) func() (*host.Manager, error) {
		return func() (*host.Manager, error) {
			f, err := wazerohost.New(ctx, wazerohost.Config{Wasm: wasm, CacheDir: cacheDir(dir), Logger: quiet, NoRunawayGuard: !guard})
			if err != nil {
				return nil, err
			}
			return newManager(f, maxMemory)
		}
	}
	wazeroHost := func(guard bool) func() (*host.Manager, error) { return wazeroBound(guard, 0) }
	// devHost is stile dev as it runs by default: under wazero, with its
	// bound on open instances' memory (so each call is measured).
	devHost := func(guard bool) func() (*host.Manager, error) { return wazeroBound(guard, devBound) }
	type result struct {
		name string
		d    time.Duration
		reqs int
	}
	measure := func(name string, open func() (*host.Manager, error), overHTTP bool, jobs, batch int) (result, error) {
		m, err := open()
		if err != nil {
			return result{}, err
		}
		defer m.Close()
		var d bench.Driver = bench.InProcess{M: m}
		if overHTTP {
			h, stop, err := bench.Serve(m, benchToken)
			if err != nil {
				return result{}, err
			}
			defer stop()
			d = h
		}
		// Warm up: the instance, the statement cache, the connection.
		if _, err := bench.Cycle(ctx, d, min(200, jobs), batch); err != nil {
			return result{}, fmt.Errorf("%s: %w", name, err)
		}
		took, err := bench.Cycle(ctx, d, jobs, batch)
		if err != nil {
			return result{}, fmt.Errorf("%s: %w", name, err)
		}
		return result{name: name, d: took, reqs: 3 * ((jobs + batch - 1) / batch)}, nil
	}
	print := func(title string, jobs int, rs []result) {
		fmt.Println(title)
		tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  host\tjobs/s\tµs/job\tµs/request\tvs native\t")
		base := rs[0].d
		for _, r := range rs {
			fmt.Fprintf(tw, "  %s\t%s\t%.1f\t%.1f\t%.2f×\t\n", r.name, bench.Rate(jobs, r.d),
				float64(r.d.Microseconds())/float64(jobs), float64(r.d.Microseconds())/float64(r.reqs), float64(r.d)/float64(base))
		}
		tw.Flush()
		fmt.Println()
	}

	type config = benchConfig
	run := func(cs []config, jobs, batch int) ([]result, error) {
		var rs []result
		for _, c := range cs {
			r, err := measure(c.name, c.open, c.http, jobs, batch)
			if err != nil {
				return nil, err
			}
			rs = append(rs, r)
		}
		return rs, nil
	}
	if part("jobs") {
		rs, err := run([]config{
			{"native, in-process", nativeHost, false},
			{"wazero, in-process", wazeroHost(true), false},
			{"wazero, no runaway guard", wazeroHost(false), false},
			{"native, loopback HTTP", nativeHost, true},
			{"wazero, loopback HTTP", wazeroHost(true), true},
		}, *jobs, 1)
		if err != nil {
			return err
		}
		print(fmt.Sprintf("full job cycle, one job per request (enqueue, claim, report: 3 requests per job), %d jobs", *jobs), *jobs, rs)

		bjobs := *jobs * 5
		rs, err = run([]config{
			{"native, in-process", nativeHost, false},
			{"wazero, in-process", wazeroHost(true), false},
			{"wazero, no runaway guard", wazeroHost(false), false},
			{"wazero, loopback HTTP", wazeroHost(true), true},
		}, bjobs, *batch)
		if err != nil {
			return err
		}
		print(fmt.Sprintf("batched, %d jobs per request, %d jobs", *batch, bjobs), bjobs, rs)
	}

	if part("drain") {
		if err := benchDrain(ctx, *drainJobs, *drainConc, *drainRuns, []drainConfig{
			{"stile dev (wazero), batched reports", devHost(true), 1, false},
			{"stile dev, one report per request", devHost(true), 1, true},
			{"stile dev, no runaway guard", devHost(false), 1, false},
			{"native host, batched reports", nativeHost, 1, false},
			{"native host, one report per request", nativeHost, 1, true},
			{"stile dev, 4 tenants at once", devHost(true), 4, false},
		}); err != nil {
			return err
		}
		if err := drainLatency(ctx, devHost(true), *latJobs, *latRate, *drainConc); err != nil {
			return err
		}
	}

	if part("tenants") {
		limit, err := parseBytes(*maxMemory)
		if err != nil {
			return fmt.Errorf("--max-memory: %w", err)
		}
		if err := benchTenants(ctx, wasm, dir, *tenantsN, *tenantReqs, limit, *maxOpen, quiet); err != nil {
			return err
		}
	}

	if part("depth") {
		if err := benchDepth(ctx, *depth, "native, in-process", nativeHost, n, dir); err != nil {
			return err
		}
		if err := benchDepth(ctx, *depth, "wazero, in-process", wazeroHost(true), n, dir); err != nil {
			return err
		}
	}

	if part("events") {
		if err := benchEvents(ctx, *events, *batch, []config{
			{"native, in-process", nativeHost, false},
			{"wazero, in-process", wazeroHost(true), false},
			{"wazero, loopback HTTP", wazeroHost(true), true},
		}); err != nil {
			return err
		}
	}

	if part("projections") {
		if err := benchProjections(ctx, dir, *applyEvents, *rebuildEvents, n, quiet); err != nil {
			return err
		}
	}

	if part("latency") {
		m, err := wazeroHost(true)()
		if err != nil {
			return err
		}
		defer m.Close()
		h, stop, err := bench.Serve(m, benchToken)
		if err != nil {
			return err
		}
		defer stop()
		if err := latency(ctx, "wazero over loopback HTTP", h, *latJobs, *latRate); err != nil {
			return err
		}
	}
	if part("workerd") {
		if err := benchWorkerd(ctx, dir, wasm, *jobs/4, *batch, *events/4, *latJobs, *latRate, *drainJobs, *drainConc, *drainRuns); err != nil {
			return err
		}
	}
	if part("rows") {
		if err := benchRows(ctx, dir, wasm, *rowsOps, *rowsHistory); err != nil {
			return err
		}
	}
	if part("commands") {
		histories := []int{1, max(1, *commandHistory/10), *commandHistory}
		if err := benchCommands(ctx, dir, wasm, devHost(true), *commandsN, histories); err != nil {
			return err
		}
	}
	if part("pushed") {
		// stile dev --handlers: wazero with stile dev's memory bound, and a
		// pusher.
		open := func(p host.Pusher) (*host.Manager, string, error) {
			f, err := wazerohost.New(ctx, wazerohost.Config{Wasm: wasm, CacheDir: cacheDir(dir), Logger: quiet})
			if err != nil {
				return nil, "", err
			}
			*n++
			data := filepath.Join(dir, fmt.Sprint(*n))
			m, err := host.NewManager(host.Config{Factory: f, DataDir: data, Logger: quiet, MaxMemory: devBound, Pusher: p,
				ScheduleAlarms: true})
			return m, data, err
		}
		if err := benchPushed(ctx, dir, open, pushedConfig{jobs: *pushedJobs, rate: *latRate, kept: *pushedKept,
			rounds: *pushedRounds, behind: *pushedBehind}); err != nil {
			return err
		}
	}
	if part("rates") {
		// stile dev as it runs: wazero with its memory bound, and its
		// alarms, which wake the held claims when a key opens.
		open := func() (*host.Manager, error) {
			f, err := wazerohost.New(ctx, wazerohost.Config{Wasm: wasm, CacheDir: cacheDir(dir), Logger: quiet})
			if err != nil {
				return nil, err
			}
			*n++
			return host.NewManager(host.Config{Factory: f, DataDir: filepath.Join(dir, fmt.Sprint(*n)), Logger: quiet,
				MaxMemory: devBound, ScheduleAlarms: true})
		}
		if err := benchRates(ctx, open, ratesConfig{keys: *rateKeys, perKey: *rateJobs, limit: *rateLimit, period: *ratePeriod,
			unlimited: *rateUnlimited, concurrency: *drainConc, runs: *rateRuns}); err != nil {
			return err
		}
	}
	if part("edge") {
		return benchEdge(ctx, dir, wasm, *edgeJobs, *edgeRate, *edgeBacklog, *edgeRuns, *drainConc, *pushedBehind)
	}
	return nil
}

// benchConfig is one host a measurement runs on.
type benchConfig = struct {
	name string
	open func() (*host.Manager, error)
	http bool
}

// benchEvents measures the event log and reactions per host: events
// appended one and batch per request, and deliveries to the default
// module's log policy claimed and settled one and batch per request.
func benchEvents(ctx context.Context, n, batch int, cs []benchConfig) error {
	fmt.Printf("event log and reactions, %d events per measurement (one tenant)\n", n)
	tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  host\tappended/s, 1 per request\tappended/s, %d per request\tsettled/s, 1 per claim and settle\tsettled/s, %d per request\t\n", batch, batch)
	for _, c := range cs {
		m, err := c.open()
		if err != nil {
			return err
		}
		var d bench.Driver = bench.InProcess{M: m}
		if c.http {
			h, stop, err := bench.Serve(m, benchToken)
			if err != nil {
				m.Close()
				return err
			}
			defer stop()
			d = h
		}
		figures, err := eventFigures(ctx, d, n, batch)
		m.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", c.name, figures[0], figures[1], figures[2], figures[3])
	}
	tw.Flush()
	fmt.Println()
	return nil
}

// eventFigures runs the four event measurements on d.
func eventFigures(ctx context.Context, d bench.Driver, n, batch int) ([4]string, error) {
	var out [4]string
	if _, err := bench.Append(ctx, d, 200, 1); err != nil { // warm up
		return out, err
	}
	for i, m := range []struct {
		f     func(context.Context, bench.Driver, int, int) (time.Duration, error)
		batch int
	}{{bench.Append, 1}, {bench.Append, batch}, {bench.Settle, 1}, {bench.Settle, batch}} {
		took, err := m.f(ctx, d, n, m.batch)
		if err != nil {
			return out, err
		}
		out[i] = bench.Rate(n, took)
	}
	return out, nil
}

func latency(ctx context.Context, where string, d bench.Driver, jobs, rate int) error {
	lat, err := bench.Latency(ctx, d, jobs, time.Second/time.Duration(rate))
	if err != nil {
		return err
	}
	fmt.Printf("latency enqueue → completed, %s, a long-polling worker, %d jobs at %d/s\n", where, jobs, rate)
	fmt.Printf("  p50 %s   p90 %s   p99 %s   max %s\n\n", bench.Percentile(lat, 50).Round(10*time.Microsecond),
		bench.Percentile(lat, 90).Round(10*time.Microsecond), bench.Percentile(lat, 99).Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond))
	return nil
}

// startWorkerd starts the module in workerd from a bundle of its own under
// dir, for the part name; nil (and a line saying so) when Node.js is
// missing, so the part is skipped.
func startWorkerd(dir, name string, wasm []byte) (*workerd.Server, error) {
	bundleDir := filepath.Join(dir, name)
	if err := workerd.WriteWorker(bundleDir, wasm); err != nil {
		return nil, err
	}
	srv, err := workerd.Start(workerd.Options{Bundle: bundleDir, Token: benchToken})
	if errors.Is(err, workerd.ErrNoNode) {
		fmt.Printf("%s: skipped, %v\n", name, err)
		return nil, nil
	}
	return srv, err
}

// benchWorkerd measures the same module in real workerd (Miniflare 4): the
// Durable Object's own path, V8 instead of wazero.
func benchWorkerd(ctx context.Context, dir string, wasm []byte, jobs, batch, events, latJobs, latRate, drainJobs, drainConc, drainRuns int) error {
	srv, err := startWorkerd(dir, "workerd", wasm)
	if srv == nil || err != nil {
		return err
	}
	defer srv.Close()
	d := bench.HTTP{C: client.New(srv.URL, benchToken, &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}})}
	if _, err := bench.Cycle(ctx, d, 200, 1); err != nil { // warm up the object
		return fmt.Errorf("workerd: %w", err)
	}
	fmt.Printf("workerd (Miniflare 4, loopback HTTP, one Durable Object)\n")
	took, err := bench.Cycle(ctx, d, jobs, 1)
	if err != nil {
		return fmt.Errorf("workerd: %w", err)
	}
	fmt.Printf("  one job per request: %s jobs/s (%.0f µs/job, %d jobs)\n", bench.Rate(jobs, took), float64(took.Microseconds())/float64(jobs), jobs)
	bjobs := jobs * 5
	took, err = bench.Cycle(ctx, d, bjobs, batch)
	if err != nil {
		return fmt.Errorf("workerd: %w", err)
	}
	fmt.Printf("  %d jobs per request: %s jobs/s (%.0f µs/job, %d jobs)\n", batch, bench.Rate(bjobs, took), float64(took.Microseconds())/float64(bjobs), bjobs)
	figures, err := eventFigures(ctx, d, events, batch)
	if err != nil {
		return fmt.Errorf("workerd: %w", err)
	}
	fmt.Printf("  events appended/s: %s one per request, %s %d per request (%d events)\n", figures[0], figures[1], batch, events)
	fmt.Printf("  reactions settled/s: %s one per claim and settle, %s %d per request\n\n", figures[2], figures[3], batch)
	if err := latency(ctx, "workerd", d, latJobs, latRate); err != nil {
		return err
	}
	return drainWorkerd(ctx, srv.URL, drainJobs, drainConc, drainRuns)
}

// benchDepth measures one-job claims against a shallow queue, a deep one,
// and a deep backlog behind a full concurrency key (which a claim must not
// read).
func benchDepth(ctx context.Context, depth int, name string, open func() (*host.Manager, error), n *int, dir string) error {
	m, err := open()
	if err != nil {
		return err
	}
	defer m.Close()
	data := filepath.Join(dir, fmt.Sprint(*n))
	d := bench.InProcess{M: m}
	if _, err := bench.Cycle(ctx, d, 10, 1); err != nil { // creates the tenant
		return err
	}
	zero := int64(0)
	if status, b, err := d.Do(ctx, api.RouteSetLimit, mustJSON(api.SetLimitRequest{Slots: &zero}), "blocked"); err != nil || status != 200 {
		return fmt.Errorf("set limit: %d %s %v", status, b, err)
	}
	const claims = 1000
	fills := []struct {
		label        string
		queue        string
		jobs, behind int
	}{
		{fmt.Sprintf("queue of %s ready jobs", commas(claims+claims)), "shallow", claims + claims, 0},
		{fmt.Sprintf("queue of %s ready jobs", commas(depth)), "deep", depth, 0},
		{fmt.Sprintf("%s jobs behind a full concurrency key, %s free", commas(depth), commas(claims+claims)), "keyed", claims + claims, depth},
	}
	fmt.Printf("claim latency, one job per claim, %s (%d claims each)\n", name, claims)
	for _, f := range fills {
		started := time.Now()
		if f.behind > 0 {
			if err := bench.Fill(data, bench.Tenant, f.behind, f.queue, "blocked"); err != nil {
				return err
			}
		}
		if err := bench.Fill(data, bench.Tenant, f.jobs, f.queue, ""); err != nil {
			return err
		}
		filled := time.Since(started)
		lat, err := bench.ClaimLatencies(ctx, d, f.queue, claims)
		if err != nil {
			return err
		}
		fmt.Printf("  %-62s p50 %-9s p99 %-9s (filled in %s)\n", f.label, bench.Percentile(lat, 50).Round(time.Microsecond),
			bench.Percentile(lat, 99).Round(time.Microsecond), filled.Round(10*time.Millisecond))
	}
	fmt.Println()
	return nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// benchProjections measures the projections of the bench's own module
// (tally100 and tally1000: one upsert per event, batches of 100 and 1000): events
// applied per second by a rebuild of a log of apply events, and the time
// to rebuild from a log of rebuild events.
func benchProjections(ctx context.Context, dir string, apply, rebuild int, n *int, quiet *slog.Logger) error {
	wasmPath := filepath.Join(dir, "benchapp.wasm")
	if err := wasmbuild.BuildWasm(ctx, ".", "./cmd/stile/internal/bench/benchapp/tenant", wasmPath); err != nil {
		return err
	}
	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		return err
	}
	hosts := []struct {
		name    string
		factory func() (host.Factory, error)
	}{
		{"native, in-process", func() (host.Factory, error) { return native.New(native.Config{App: benchapp.App(), Logger: quiet}) }},
		{"wazero, in-process", func() (host.Factory, error) {
			return wazerohost.New(ctx, wazerohost.Config{Wasm: wasm, CacheDir: cacheDir(dir), Logger: quiet})
		}},
	}
	fmt.Printf("projections (the bench module: one upsert per event), rebuilt from the log\n")
	tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  host\tapplied/s, batches of 100\tapplied/s, batches of 1000\trebuild of %s events (batches of 1000)\t\n", commas(rebuild))
	for _, h := range hosts {
		f, err := h.factory()
		if err != nil {
			return err
		}
		*n++
		data := filepath.Join(dir, fmt.Sprint(*n))
		m, err := host.NewManager(host.Config{Factory: f, DataDir: data, Logger: quiet})
		if err != nil {
			return err
		}
		d := bench.InProcess{M: m}
		fire := func() int { return m.FireDue(ctx) }
		if err := call0(ctx, d); err != nil { // creates the tenant
			m.Close()
			return err
		}
		var cells [3]string
		for i, c := range []struct {
			events     int
			projection string
		}{{apply, benchapp.Tally100}, {0, benchapp.Tally1000}, {rebuild - apply, benchapp.Tally1000}} {
			if c.events > 0 {
				if err := bench.FillEvents(data, bench.Tenant, c.events, benchapp.Tallied); err != nil {
					m.Close()
					return err
				}
			}
			took, err := bench.Rebuild(ctx, d, c.projection, fire)
			if err != nil {
				m.Close()
				return fmt.Errorf("%s: %w", h.name, err)
			}
			if i < 2 {
				cells[i] = bench.Rate(apply, took)
			} else {
				cells[i] = fmt.Sprintf("%s (%s/s)", took.Round(10*time.Millisecond), bench.Rate(rebuild, took))
			}
		}
		m.Close()
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t\n", h.name, cells[0], cells[1], cells[2])
	}
	tw.Flush()
	fmt.Println()
	return nil
}

// call0 creates the bench tenant (PUT /v1/t/{tenant}).
func call0(ctx context.Context, d bench.Driver) error {
	status, b, err := d.Do(ctx, api.RouteCreateTenant, nil)
	if err == nil && status != 200 && status != 201 {
		err = fmt.Errorf("create the bench tenant: %d %s", status, b)
	}
	return err
}

// benchEdge measures the edge executor in workerd: the built-in module
// with its handlers compiled as the edge executor (package benchhandlers:
// echo is the no-op the worker library's drain runs), pushed work by the
// tenant's object through the Worker's own service binding. Times are
// the server's (created, claimed and finished times of the jobs). The
// backlog is drained beside the worker library's batched drain of the same
// backlog, with the same handler, in alternating runs against the same
// deployment, and both figures are printed.
func benchEdge(ctx context.Context, dir string, wasm []byte, latJobs, latRate, backlog, runs, libConcurrency, behind int) error {
	bundleDir := filepath.Join(dir, "edge")
	if err := workerd.WriteWorker(bundleDir, wasm); err != nil {
		return err
	}
	// The built-in handlers, echo a no-op: the handler the worker
	// library's drain runs (package benchhandlers).
	const handlers = "github.com/stile-run/stile/cmd/stile/benchhandlers"
	if err := wasmbuild.BuildExecutor(ctx, ".", handlers, wasmbuild.Edge, filepath.Join(bundleDir, workerd.ExecutorFile)); err != nil {
		return err
	}
	if err := wasmbuild.WriteEdgeAssets(ctx, ".", handlers, bundleDir); err != nil {
		return err
	}
	if err := workerd.WriteEdge(bundleDir); err != nil {
		return err
	}
	// The test entry only measures here: how long each push takes to be
	// accepted, which is what the tenant's object waits.
	if err := workerd.WriteTestEntry(bundleDir); err != nil {
		return err
	}
	srv, err := workerd.Start(workerd.Options{Bundle: bundleDir, Token: benchToken, Entry: workerd.TestEntryFile})
	if errors.Is(err, workerd.ErrNoNode) {
		fmt.Println("edge: skipped,", err)
		return nil
	}
	if err != nil {
		return err
	}
	defer srv.Close()
	cl := client.New(srv.URL, benchToken, &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}})
	fmt.Println("edge executor (workerd via Miniflare 4: the built-in module's handlers with echo a no-op, as in the worker library's drains; GOOS=js under syumai/workers)")
	var script, exe []byte
	for _, f := range []string{workerd.EntryFile, workerd.ABIFile, workerd.ConfigFile, workerd.WasmFile, workerd.EdgeEntryFile,
		workerd.ShimFile, workerd.WasmExecFile, workerd.ExecutorFile} {
		b, err := os.ReadFile(filepath.Join(bundleDir, f))
		if err != nil {
			return err
		}
		script = append(script, b...)
		if f == workerd.ExecutorFile {
			exe = b
		}
	}
	fmt.Printf("  sizes: executor.wasm %d bytes, %d gzip -9; the whole script %d gzip -9 (paid plan limit 10 MB, free 3 MB)\n",
		len(exe), wasmbuild.GzipSize(exe), wasmbuild.GzipSize(script))

	wait := func(ten *client.Tenant, ids []string) ([]api.Job, error) {
		out := make([]api.Job, 0, len(ids))
		deadline := time.Now().Add(2 * time.Minute)
		for _, id := range ids {
			for {
				j, err := ten.Job(ctx, id)
				if err != nil {
					return nil, err
				}
				if j.State == "completed" {
					out = append(out, j)
					break
				}
				if time.Now().After(deadline) {
					return nil, fmt.Errorf("job %s of %s is %s after 2 minutes", id, ten.Name(), j.State)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		return out, nil
	}
	echo := api.EnqueueRequest{Kind: "echo", Args: json.RawMessage(`{}`)}

	// Light load: jobs one after another, pushed (a push lingers for the
	// next job, so a steady trickle is one push, not one per job).
	ten := cl.Tenant("edge-latency")
	l, err := bench.JobLatencies(ctx, ten, latJobs, time.Second/time.Duration(latRate), json.RawMessage(`{}`))
	if err != nil {
		return fmt.Errorf("edge light load: %w", err)
	}
	fmt.Printf("  light load (%d jobs at %d/s): enqueue → handler start p50 %s p99 %s, → finished p50 %s p99 %s (the server's times); → completed as the enqueuer sees it p50 %s p99 %s\n",
		latJobs, latRate, bench.Percentile(l.Start, 50), bench.Percentile(l.Start, 99), bench.Percentile(l.Finish, 50), bench.Percentile(l.Finish, 99),
		bench.Percentile(l.Done, 50).Round(10*time.Microsecond), bench.Percentile(l.Done, 99).Round(10*time.Microsecond))
	var f struct {
		PushMs []int64 `json:"pushMs"`
	}
	if _, b, err := cl.Raw(ctx, "GET", "/__executor_faults", nil, nil); err == nil {
		json.Unmarshal(b, &f)
	}
	if len(f.PushMs) > 0 {
		ms := make([]time.Duration, len(f.PushMs))
		for i, v := range f.PushMs {
			ms[i] = time.Duration(v) * time.Millisecond
		}
		slices.Sort(ms)
		fmt.Printf("  a push, until the executor accepts it (what the object waits; a new Go runtime each): p50 %s p99 %s (%d pushes)\n",
			bench.Percentile(ms, 50), bench.Percentile(ms, 99), len(ms))
	}

	if err := behindASlowJob(ctx, cl.Tenant("edge-behind"), behind, time.Second/time.Duration(latRate)); err != nil {
		return err
	}

	// A backlog, drained by the pushes of one tenant, and the same backlog
	// drained by the worker library (its batched drain, as the workerd
	// part measures it) from a tenant of the same deployment that is never
	// pushed: in alternating runs, so that a noisy minute falls on both.
	var edgeRates, libRates []float64
	var edgeCalls callCounts
	for run := range runs {
		for i := range 2 {
			if (run+i)%2 == 0 {
				rate, calls, err := edgeBacklog(ctx, cl, fmt.Sprintf("edge-backlog-%d", run), backlog)
				if err != nil {
					return err
				}
				edgeRates, edgeCalls = append(edgeRates, rate), edgeCalls.add(calls)
			} else {
				rate, err := libraryBacklog(ctx, srv.URL, fmt.Sprintf("unpushed-backlog-%d", run), backlog, libConcurrency)
				if err != nil {
					return err
				}
				libRates = append(libRates, rate)
			}
		}
	}
	edge, lib := median(edgeRates), median(libRates)
	fmt.Printf("  a backlog of %d jobs, one tenant, median of %d alternating runs: the edge executor %.0f jobs/s (runs %s), the worker library's batched drain (%d handlers) %.0f jobs/s (runs %s): %.2f×\n",
		backlog, runs, edge, rates(edgeRates), libConcurrency, lib, rates(libRates), edge/lib)
	jobs := float64(backlog * runs)
	fmt.Printf("    the edge executor's calls to the object per job: %.3f (claims %.3f, reports %.3f, heartbeats %.3f, ends of pushes %.3f); %.0f jobs per claim, %.1f per report request; %.1f pushes per backlog, at most %d calls in flight in one invocation\n",
		float64(edgeCalls.total())/jobs, float64(edgeCalls.Claim)/jobs, float64(edgeCalls.Report+edgeCalls.Reports)/jobs, float64(edgeCalls.Heartbeat)/jobs,
		float64(edgeCalls.Done)/jobs, jobs/float64(max(edgeCalls.Claim, 1)), jobs/float64(max(edgeCalls.Report+edgeCalls.Reports, 1)),
		float64(edgeCalls.Invocations)/float64(runs), edgeCalls.MaxInFlight)

	// 20 tenants with a job each, one deployment.
	var worst time.Duration
	tenIDs := map[string]string{}
	for i := range 20 {
		name := "edge-many-" + strconv.Itoa(i)
		j, err := cl.Tenant(name).Enqueue(ctx, echo)
		if err != nil {
			return err
		}
		tenIDs[name] = j.ID
	}
	for name, id := range tenIDs {
		js, err := wait(cl.Tenant(name), []string{id})
		if err != nil {
			return err
		}
		worst = max(worst, js[0].Attempts[0].ClaimedAt.Sub(js[0].CreatedAt))
	}
	fmt.Printf("  20 tenants, a job each: the last handler started %s after its enqueue\n\n", worst)
	return nil
}

// benchToken is the secret of the hosts a benchmark starts: strong enough
// for the Worker, which refuses a weak one.
const benchToken = "bench-token-0123456789-abcdefghijklm"
