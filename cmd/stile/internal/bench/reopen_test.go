package bench_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/wazerohost"
	"github.com/stile-run/stile/internal/wasmbuild"
	"github.com/stile-run/stile/stiletest"
)

// BenchmarkReopenWazero reports ns/op of a request to a tenant whose
// instance was closed: with at most 2 instances open, each request goes to
// the next of 50 existing tenants, so every one reopens its tenant (new
// instance, SQLite connection, startup checks) before it is served: a
// read of the job list, or an enqueue.
func BenchmarkReopenWazero(b *testing.B) {
	ctx := context.Background()
	f, err := wazerohost.New(ctx, wazerohost.Config{Wasm: stiletest.BuildWasm(b, wasmbuild.DefaultPackage),
		Logger: slog.New(slog.DiscardHandler), CacheDir: filepath.Join(os.TempDir(), "stile-bench-cache")})
	require.NoError(b, err)
	m, err := host.NewManager(host.Config{Factory: f, DataDir: b.TempDir(), Logger: slog.New(slog.DiscardHandler), MaxOpen: 2})
	require.NoError(b, err)
	b.Cleanup(func() { m.Close() })
	const tenants = 50
	call := func(i int, method string, body []byte) {
		name := fmt.Sprintf("tenant-%02d", i%tenants)
		query := ""
		if method == "GET" {
			query = "limit=10" // an enqueue takes no query parameters
		}
		resp, err := m.Do(ctx, name, do.Request{Kind: do.KindAPI, Method: method, Path: api.RouteListJobs.Path(name), Query: query, Body: body})
		require.NoError(b, err)
		require.Less(b, resp.Status, 300, string(resp.Body))
	}
	for i := range tenants {
		call(i, "POST", []byte(`{"kind":"echo","args":{}}`))
	}
	b.Run("list", func(b *testing.B) {
		for i := range b.N {
			call(i, "GET", nil)
		}
	})
	b.Run("enqueue", func(b *testing.B) {
		for i := range b.N {
			call(i, "POST", []byte(`{"kind":"echo","args":{}}`))
		}
	})
}
