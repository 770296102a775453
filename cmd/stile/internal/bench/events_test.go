package bench_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/cmd/stile/internal/bench"
	"github.com/stile-run/stile/host"
)

// appendEvents reports ns/op per event appended, batch per request.
func appendEvents(b *testing.B, m *host.Manager, batch int) {
	d := bench.InProcess{M: m}
	_, err := bench.Append(context.Background(), d, 100, batch) // warm up
	require.NoError(b, err)
	b.ResetTimer()
	_, err = bench.Append(context.Background(), d, b.N, batch)
	require.NoError(b, err)
}

// settle reports ns per delivery claimed and settled (the appends before
// are not counted).
func settle(b *testing.B, m *host.Manager, batch int) {
	d := bench.InProcess{M: m}
	took, err := bench.Settle(context.Background(), d, b.N, batch)
	require.NoError(b, err)
	b.ReportMetric(float64(took.Nanoseconds())/float64(b.N), "ns/settled")
}

func BenchmarkAppendNative(b *testing.B)      { appendEvents(b, nativeManager(b), 1) }
func BenchmarkAppendWazero(b *testing.B)      { appendEvents(b, wazeroManager(b, true), 1) }
func BenchmarkAppendBatchWazero(b *testing.B) { appendEvents(b, wazeroManager(b, true), 100) }
func BenchmarkSettleNative(b *testing.B)      { settle(b, nativeManager(b), 1) }
func BenchmarkSettleWazero(b *testing.B)      { settle(b, wazeroManager(b, true), 1) }
func BenchmarkSettleBatchWazero(b *testing.B) { settle(b, wazeroManager(b, true), 100) }
