package host_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/stiletest"
)

// BenchmarkRetentionMonths drives a steady flow of jobs through one tenant
// under a controlled clock, each iteration one simulated day of 480 jobs
// (one every three minutes, some failing to dead), and reports what the
// tenant stores at the end and at most: with retention the size levels off
// after a week (dead jobs are kept seven days), while the tenant that keeps
// everything grows with every day. Run it over months: go test ./host
// -run XXX -bench RetentionMonths -benchtime 90x.
func BenchmarkRetentionMonths(b *testing.B) {
	b.Run("defaults", func(b *testing.B) { retentionMonths(b, false) })
	b.Run("kept-forever", func(b *testing.B) { retentionMonths(b, true) })
}

func retentionMonths(b *testing.B, forever bool) {
	ctx := context.Background()
	hh := stiletest.New(b, stiletest.Config{App: testapp.App()})
	ten := hh.Tenant("steady")
	if forever {
		_, err := ten.SetRetention(ctx, api.Retention{})
		require.NoError(b, err)
	}
	var maxRows, maxBytes int64
	b.ResetTimer()
	for day := 0; day < b.N; day++ {
		for i := 0; i < 480; i++ {
			_, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: []byte(`{"order":"ord_0123456789","amount":1250}`)})
			require.NoError(b, err)
			resp, err := ten.Claim(ctx, api.ClaimRequest{Worker: "w", Limit: 1})
			require.NoError(b, err)
			for _, c := range resp.Jobs {
				r := api.ReportRequest{Claim: api.Claim{Worker: "w", Attempt: c.Attempt, LeaseToken: c.LeaseToken},
					Outcome: api.OutcomeCompleted, Output: []byte(`{"charge":"ch_0123456789"}`)}
				if i%50 == 0 {
					r = api.ReportRequest{Claim: r.Claim, Outcome: api.OutcomeFailed, Error: "card declined", Final: true}
				}
				_, err := ten.Report(ctx, c.ID, r)
				require.NoError(b, err)
			}
			hh.Advance(3 * time.Minute)
		}
		st, err := ten.Storage(ctx)
		require.NoError(b, err)
		rows := int64(0)
		for _, k := range st.Kinds {
			rows += k.Rows
		}
		maxRows, maxBytes = max(maxRows, rows), max(maxBytes, st.CountedBytes)
		if day == b.N-1 {
			b.ReportMetric(float64(rows), "rows_end")
			b.ReportMetric(float64(st.CountedBytes), "counted_bytes_end")
			b.ReportMetric(float64(st.DatabaseBytes), "db_bytes_end")
		}
	}
	b.ReportMetric(float64(maxRows), "rows_max")
	b.ReportMetric(float64(maxBytes), "counted_bytes_max")
	b.ReportMetric(float64(b.N*480), "jobs_total")
}
