package bench_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/cmd/stile/internal/bench"
	"github.com/stile-run/stile/host"
)

// floor measures the cheapest request there is (GET /status) through a
// host: what every request costs before it does any work of its own.
func floor(b *testing.B, m *host.Manager) {
	d := bench.InProcess{M: m}
	ctx := context.Background()
	status, _, err := d.Do(ctx, api.RouteCreateTenant, nil) // the tenant exists once created
	require.NoError(b, err)
	require.Equal(b, 201, status)
	b.ResetTimer()
	for range b.N {
		if _, _, err := d.Do(ctx, api.RouteStatus, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRequestFloorNative(b *testing.B)        { floor(b, nativeManager(b)) }
func BenchmarkRequestFloorWazero(b *testing.B)        { floor(b, wazeroManager(b, true)) }
func BenchmarkRequestFloorWazeroNoGuard(b *testing.B) { floor(b, wazeroManager(b, false)) }
