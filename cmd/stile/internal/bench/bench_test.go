package bench_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/cmd/stile/defaultapp/app"
	"github.com/stile-run/stile/cmd/stile/internal/bench"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/wazerohost"
	"github.com/stile-run/stile/internal/wasmbuild"
	"github.com/stile-run/stile/stiletest"
)

// nativeManager runs the default module in-process.
func nativeManager(b *testing.B) *host.Manager {
	return stiletest.New(b, stiletest.Config{App: app.App()}).Manager()
}

// wazeroManager runs the default module under wazero, with or without the
// runaway-call guard.
func wazeroManager(b *testing.B, guard bool) *host.Manager {
	f, err := wazerohost.New(context.Background(), wazerohost.Config{Wasm: stiletest.BuildWasm(b, wasmbuild.DefaultPackage),
		Logger: slog.New(slog.DiscardHandler), CacheDir: filepath.Join(os.TempDir(), "stile-bench-cache"), NoRunawayGuard: !guard})
	require.NoError(b, err)
	return stiletest.New(b, stiletest.Config{Factory: f}).Manager()
}

// cycle reports ns/op per job through enqueue, claim, report.
func cycle(b *testing.B, m *host.Manager, batch int) {
	ctx := context.Background()
	d := bench.InProcess{M: m}
	_, err := bench.Cycle(ctx, d, 100, batch) // warm up
	require.NoError(b, err)
	b.ResetTimer()
	_, err = bench.Cycle(ctx, d, b.N, batch)
	require.NoError(b, err)
}

func BenchmarkCycleNative(b *testing.B)        { cycle(b, nativeManager(b), 1) }
func BenchmarkCycleWazero(b *testing.B)        { cycle(b, wazeroManager(b, true), 1) }
func BenchmarkCycleWazeroNoGuard(b *testing.B) { cycle(b, wazeroManager(b, false), 1) }
func BenchmarkBatchNative(b *testing.B)        { cycle(b, nativeManager(b), 100) }
func BenchmarkBatchWazero(b *testing.B)        { cycle(b, wazeroManager(b, true), 100) }

func BenchmarkBatchWazeroNoGuard(b *testing.B) { cycle(b, wazeroManager(b, false), 100) }
