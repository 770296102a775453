package host_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/stiletest"
)

// An idle tenant is woken by its alarm alone, and at the edge each wake
// finds a new instance (an object leaves memory seconds after its last
// request): its retention still runs when the row comes due, not a slack
// later at every wake.
func TestRetentionRunsForATenantReloadedAtEveryAlarm(t *testing.T) {
	t.Parallel()
	h := newHarness(t, stiletest.Config{})
	ctx := context.Background()
	ten := h.Tenant("acme")
	job, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: []byte(`{}`)})
	require.NoError(t, err)
	resp, err := ten.Claim(ctx, api.ClaimRequest{Worker: "w", Limit: 1})
	require.NoError(t, err)
	require.Len(t, resp.Jobs, 1)
	c := resp.Jobs[0]
	_, err = ten.Report(ctx, c.ID, api.ReportRequest{Claim: api.Claim{Worker: "w", Attempt: c.Attempt, LeaseToken: c.LeaseToken},
		Outcome: api.OutcomeCompleted})
	require.NoError(t, err)
	finished := h.Now()

	day, slack := 24*time.Hour, time.Hour // the defaults: a completed job a day, looks an hour apart
	for h.Now().Before(finished.Add(day + 2*slack)) {
		h.Manager().Evict("acme")
		h.Advance(5 * time.Minute)
	}
	h.Manager().Evict("acme")
	_, err = ten.Job(ctx, job.ID)
	require.Error(t, err, "the completed job is gone within its day and the slack")
	var e *api.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, api.CodeNotFound, e.Code)
}
