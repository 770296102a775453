package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/stile-run/stile/cmd/stile/internal/bench"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/wazerohost"
)

// benchTenants measures many tenants in one stile dev process: n tenants
// touched once, then requests spread over them at random, under a bound
// on the open instances' memory as `stile dev --max-memory` sets it.
func benchTenants(ctx context.Context, wasm []byte, dir string, n, requests int, maxMemory int64, maxOpen int, quiet *slog.Logger) error {
	f, err := wazerohost.New(ctx, wazerohost.Config{Wasm: wasm, CacheDir: cacheDir(dir), Logger: quiet})
	if err != nil {
		return err
	}
	if maxOpen <= 0 {
		maxOpen = n // only the memory bound applies
	}
	m, err := host.NewManager(host.Config{Factory: f, DataDir: filepath.Join(dir, "tenants-bench"), Logger: quiet,
		MaxMemory: maxMemory, MaxOpen: maxOpen})
	if err != nil {
		return err
	}
	defer m.Close()
	r, err := bench.Tenants(ctx, m, n, requests, 1)
	if err != nil {
		return fmt.Errorf("tenants: %w", err)
	}
	mib := func(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
	ms := func(l []time.Duration, p float64) string {
		return fmt.Sprintf("%.2f ms", float64(bench.Percentile(l, p).Microseconds())/1000)
	}
	bound := "none"
	if maxMemory > 0 {
		bound = mib(maxMemory)
	}
	fmt.Printf("tenants: %d tenants touched once, then %d requests spread over them at random (stile dev, wazero, in-process), --max-memory %s\n", n, requests, bound)
	fmt.Printf("  after touching each once: RSS %s, %d instances open (%s by their own count), %d evictions\n",
		mib(r.TouchedRSS), r.Touched.Open, mib(r.Touched.Memory), r.Touched.Evictions)
	fmt.Printf("  after the spread requests: RSS %s (peak %s), %d instances open (%s), %d evictions, %d reopenings\n",
		mib(r.SpreadRSS), mib(r.PeakRSS), r.Spread.Open, mib(r.Spread.Memory), r.Spread.Evictions, len(r.Reopen))
	if r.Spread.Open > 0 {
		fmt.Printf("  memory per open instance: %s by its own count\n", mib(r.Spread.Memory/int64(r.Spread.Open)))
	}
	fmt.Printf("  first request of a tenant (creates its database): p50 %s  p99 %s\n", ms(r.First, 50), ms(r.First, 99))
	if len(r.Reopen) > 0 {
		fmt.Printf("  request reopening a closed tenant:                p50 %s  p99 %s  (%d)\n", ms(r.Reopen, 50), ms(r.Reopen, 99), len(r.Reopen))
	}
	if len(r.Warm) > 0 {
		fmt.Printf("  request to an open tenant:                        p50 %s  p99 %s  (%d)\n", ms(r.Warm, 50), ms(r.Warm, 99), len(r.Warm))
	}
	fmt.Println()
	return nil
}
