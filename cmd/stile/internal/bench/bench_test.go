package bench_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stile-run/stile/internal/wasmbuild"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/cmd/stile/defaultapp/app"
	"github.com/stile-run/stile/cmd/stile/internal/bench"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/native"
	"github.com/stile-run/stile/host/wazerohost"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var (
	wasmOnce sync.Once
	wasm     []byte
	wasmErr  error
)

func defaultWasm(b testing.TB) []byte {
	wasmOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stile-bench-wasm-")
		if err != nil {
			wasmErr = err
			return
		}
		p := filepath.Join(dir, "tenant.wasm")
		if wasmErr = wasmbuild.BuildWasm(context.Background(), "../../../..", wasmbuild.DefaultPackage, p); wasmErr == nil {
			wasm, wasmErr = os.ReadFile(p)
		}
	})
	require.NoError(b, wasmErr)
	return wasm
}

func manager(b *testing.B, f host.Factory) *host.Manager {
	m, err := host.NewManager(host.Config{Factory: f, DataDir: b.TempDir(), Logger: quiet})
	require.NoError(b, err)
	b.Cleanup(func() { m.Close() })
	return m
}

func nativeManager(b *testing.B) *host.Manager {
	f, err := native.New(native.Config{App: app.App(), Logger: quiet})
	require.NoError(b, err)
	return manager(b, f)
}

func wazeroManager(b *testing.B, guard bool) *host.Manager {
	f, err := wazerohost.New(context.Background(), wazerohost.Config{Wasm: defaultWasm(b), Logger: quiet,
		CacheDir: filepath.Join(os.TempDir(), "stile-bench-cache"), NoCloseOnContextDone: !guard})
	require.NoError(b, err)
	return manager(b, f)
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
