package e2e_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/stiletest"
)

// TestAlarmFollowsCommittedState drives random enqueues (now and later),
// claims, heartbeats, reports, failures and the passing of time, and after
// every request requires that the alarm the module gave its host equals the
// earliest due time in storage (GET /status reads it afresh), so no work is
// ever left waiting for an alarm that was not set.
func TestAlarmFollowsCommittedState(t *testing.T) {
	t.Parallel()
	t.Run("native", func(t *testing.T) { alarmModel(t, newInProcess(t, stiletest.Config{App: testapp.App()}, nil), 1500) })
	t.Run("wazero", func(t *testing.T) { alarmModel(t, newInProcess(t, stiletest.Config{Package: testTenant}, nil), 400) })
}

func alarmModel(t *testing.T, p *inProcess, steps int) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	ctx := context.Background()
	ten := p.cl.Tenant("alarm")
	_, err := ten.Create(ctx)
	require.NoError(t, err)
	held := map[string]api.Claim{}
	check := func(step int, what string) {
		st, err := ten.Status(ctx)
		require.NoError(t, err)
		want := int64(0)
		if st.AlarmAt != nil {
			want = st.AlarmAt.UnixMilli()
		}
		require.Equal(t, want, p.manager.AlarmAt("alarm"), "seed %d step %d (%s): the alarm must equal the earliest due time", seed, step, what)
	}
	for step := 0; step < steps; step++ {
		var what string
		switch op := rng.IntN(10); {
		case op < 3:
			r := api.EnqueueRequest{Kind: "test.fast"}
			if rng.IntN(2) == 0 {
				at := time.UnixMilli(p.clock.Now()).Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
				r.RunAt = &at
			}
			_, err := ten.Enqueue(ctx, r)
			require.NoError(t, err)
			what = "enqueue"
		case op < 5:
			resp, err := ten.Claim(ctx, api.ClaimRequest{Worker: "m", Limit: 1 + rng.IntN(3)})
			require.NoError(t, err)
			for _, c := range resp.Jobs {
				held[c.ID] = api.Claim{Worker: "m", Attempt: c.Attempt, LeaseToken: c.LeaseToken}
			}
			what = fmt.Sprintf("claim %d", len(resp.Jobs))
		case op < 8 && len(held) > 0:
			for id, c := range held {
				switch rng.IntN(3) {
				case 0:
					_, err := ten.Heartbeat(ctx, id, c)
					_ = err // may be refused when the lease lapsed
					what = "heartbeat"
				case 1:
					_, _ = ten.Report(ctx, id, api.ReportRequest{Claim: c, Outcome: api.OutcomeCompleted})
					delete(held, id)
					what = "complete"
				default:
					_, _ = ten.Report(ctx, id, api.ReportRequest{Claim: c, Outcome: api.OutcomeFailed, Error: "x"})
					delete(held, id)
					what = "fail"
				}
				break
			}
		default:
			p.advance(t, time.Duration(rng.IntN(1500))*time.Millisecond)
			what = "advance"
		}
		check(step, what)
	}
}
