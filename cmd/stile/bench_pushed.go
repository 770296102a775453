package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/cmd/stile/internal/bench"
	"github.com/stile-run/stile/executor"
	"github.com/stile-run/stile/executor/process"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/internal/wasmbuild"
)

// defaultHandlers is the built-in module's handler package.
const defaultHandlers = "github.com/stile-run/stile/cmd/stile/defaultapp/handlers"

// pushedConfig is the pushed-work measurement's size.
type pushedConfig struct {
	jobs, rate int // light load: jobs per round, at rate per second
	kept       int // completed jobs a tenant keeps
	rounds     int
	behind     int // jobs enqueued behind a slow one
}

// benchPushed measures pushed work as `stile dev --handlers` runs it: the
// built-in module under wazero with stile dev's memory bound, and the
// built-in handlers in an executor process of their own, pushed by the
// tenants. It times a job enqueued while a slow one runs in its tenant,
// and light load pushed against a long-polling worker (the same handlers
// in a process of their own, as `stile work --handlers --tenant` runs
// them, on a host that pushes nothing), each in a fresh tenant and
// in one keeping cfg.kept completed jobs. open opens a host with a pusher
// (nil: none) over a data directory of its own, which it returns.
func benchPushed(ctx context.Context, dir string, open func(host.Pusher) (*host.Manager, string, error), cfg pushedConfig) error {
	bin := filepath.Join(dir, "pushed-executor")
	if err := wasmbuild.BuildExecutor(ctx, ".", defaultHandlers, wasmbuild.Process, bin); err != nil {
		return err
	}
	var remote atomic.Pointer[executor.Remote]
	pushed, pushedDir, err := open(host.PushFunc(func(ctx context.Context, p api.PushRequest) error {
		r := remote.Load()
		if r == nil {
			return fmt.Errorf("the executor is not running yet")
		}
		return r.Push(ctx, p)
	}))
	if err != nil {
		return err
	}
	defer pushed.Close()
	ph, stop, err := bench.Serve(pushed, benchToken)
	if err != nil {
		return err
	}
	defer stop()
	child, err := process.Start(ctx, bin, ph.C.BaseURL(), benchToken, io.Discard)
	if err != nil {
		return err
	}
	defer child.Stop(10 * time.Second)
	remote.Store(&executor.Remote{URL: child.URL, Token: benchToken})

	polled, polledDir, err := open(nil)
	if err != nil {
		return err
	}
	defer polled.Close()
	lh, stop2, err := bench.Serve(polled, benchToken)
	if err != nil {
		return err
	}
	defer stop2()

	fmt.Println("pushed work (stile dev --handlers: the built-in module under wazero, its handlers in an executor process)")
	every := time.Second / time.Duration(cfg.rate)

	if err := behindASlowJob(ctx, ph.C.Tenant("behind"), cfg.behind, every); err != nil {
		return err
	}

	// Light load, alternating the four cases round by round.
	type lightCase struct {
		name   string
		ten    *client.Tenant
		poll   bool
		kept   bool
		starts []time.Duration
		dones  []time.Duration
	}
	cases := []*lightCase{
		{name: "pushed, fresh tenant", ten: ph.C.Tenant("light-fresh")},
		{name: fmt.Sprintf("pushed, %s completed jobs kept", commas(cfg.kept)), ten: ph.C.Tenant("light-kept"), kept: true},
		{name: "long-polling worker, fresh tenant", ten: lh.C.Tenant("light-fresh"), poll: true},
		{name: fmt.Sprintf("long-polling worker, %s kept", commas(cfg.kept)), ten: lh.C.Tenant("light-kept"), poll: true, kept: true},
	}
	for _, c := range cases {
		if _, err := c.ten.Create(ctx); err != nil {
			return err
		}
		if !c.kept {
			continue
		}
		data := pushedDir
		if c.poll {
			data = polledDir
		}
		if err := bench.FillFinished(data, c.ten.Name(), cfg.kept, time.Now().UnixMilli()); err != nil {
			return err
		}
	}
	// The long-polling worker runs the same handlers in a process of its
	// own, as `stile work --handlers` runs them: like the executor.
	wbin := filepath.Join(dir, "long-polling-worker")
	if err := wasmbuild.BuildExecutor(ctx, ".", defaultHandlers, wasmbuild.Worker, wbin); err != nil {
		return err
	}
	wcmd := exec.Command(wbin)
	wcmd.Env = append(os.Environ(), "STILE_URL="+lh.C.BaseURL(), "STILE_TOKEN="+benchToken, "STILE_TENANTS=light-fresh,light-kept")
	if err := wcmd.Start(); err != nil {
		return fmt.Errorf("start the long-polling worker: %w", err)
	}
	defer func() {
		wcmd.Process.Signal(os.Interrupt)
		wcmd.Wait()
	}()
	for round := range cfg.rounds + 1 {
		for _, c := range cases {
			l, err := bench.JobLatencies(ctx, c.ten, cfg.jobs, every, json.RawMessage(`{}`))
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			if round > 0 { // the first round warms up
				c.starts, c.dones = append(c.starts, l.Start...), append(c.dones, l.Done...)
			}
		}
	}
	fmt.Printf("  light load, %d rounds of %d jobs at %d/s each, alternated (start: the server's times; completed: as the enqueuer sees it):\n",
		cfg.rounds, cfg.jobs, cfg.rate)
	tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "    \tenqueue → start p50\tp99\tenqueue → completed p50\tp99\tp50 vs fresh\t")
	for i, c := range cases {
		slices.Sort(c.starts)
		slices.Sort(c.dones)
		base := cases[i&^1].dones // the same mode's fresh tenant
		fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\t%.2f×\t\n", c.name, bench.Percentile(c.starts, 50), bench.Percentile(c.starts, 99),
			bench.Percentile(c.dones, 50).Round(10*time.Microsecond), bench.Percentile(c.dones, 99).Round(10*time.Microsecond),
			float64(bench.Percentile(c.dones, 50))/float64(max(bench.Percentile(base, 50), time.Microsecond)))
	}
	tw.Flush()
	fmt.Printf("    pushed / long-polling, enqueue → completed p50: fresh %.2f×, kept %.2f×\n\n",
		float64(bench.Percentile(cases[0].dones, 50))/float64(max(bench.Percentile(cases[2].dones, 50), time.Microsecond)),
		float64(bench.Percentile(cases[1].dones, 50))/float64(max(bench.Percentile(cases[3].dones, 50), time.Microsecond)))
	return nil
}

// behindASlowJob enqueues a sleep into ten, long enough for n jobs
// enqueued one every every after it starts to start while it runs, and
// prints how long those took to start and to complete.
func behindASlowJob(ctx context.Context, ten *client.Tenant, n int, every time.Duration) error {
	sleepMs := int64(n)*every.Milliseconds() + 3000
	slow, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "sleep", Args: json.RawMessage(fmt.Sprintf(`{"ms":%d}`, sleepMs))})
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		j, err := ten.Job(ctx, slow.ID)
		if err != nil {
			return err
		}
		if j.State == "running" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the slow job did not start in 30 s (%s)", j.State)
		}
	}
	l, err := bench.JobLatencies(ctx, ten, n, every, json.RawMessage(`{}`))
	if err != nil {
		return fmt.Errorf("behind a slow job: %w", err)
	}
	if j, err := ten.Job(ctx, slow.ID); err != nil || j.State != "running" {
		return fmt.Errorf("the slow job ended before the jobs behind it did (%s, %v): make it longer", j.State, err)
	}
	fmt.Printf("  behind a %s job in the same tenant, %d jobs at %s/s: enqueue → start p50 %s p99 %s; → completed p50 %s p99 %s\n",
		time.Duration(sleepMs)*time.Millisecond, n, bench.Rate(1, every), bench.Percentile(l.Start, 50), bench.Percentile(l.Start, 99),
		bench.Percentile(l.Done, 50).Round(10*time.Microsecond), bench.Percentile(l.Done, 99).Round(10*time.Microsecond))
	return nil
}
