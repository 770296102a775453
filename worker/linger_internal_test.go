package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

// A pushed drain lingers for its push's linger, within its budget, and
// lingering drains hold at most half of the worker's slots.
func TestLingerForKeepsWithinTheBudgetAndTheSlots(t *testing.T) {
	t.Parallel()
	w, err := New(Config{URL: "http://127.0.0.1:1", Concurrency: 8})
	require.NoError(t, err)
	p := api.PushRequest{Tenant: "acme", ID: "p1", LingerMs: 1000}

	require.Zero(t, w.lingerFor(api.PushRequest{Tenant: "acme", LingerMs: 1000}, Budget{}), "no push, no linger")
	require.Zero(t, w.lingerFor(api.PushRequest{Tenant: "acme", ID: "p1"}, Budget{}), "a push without a linger ends at once")
	require.Equal(t, time.Second, w.lingerFor(p, Budget{}))
	require.Equal(t, time.Second, w.lingerFor(p, Budget{}))
	require.Zero(t, w.lingerFor(p, Budget{}), "two lingering drains hold half of 8 slots")
	w.lingering.Add(-2)

	near := Budget{Until: time.Now().Add(1200 * time.Millisecond), Reserve: time.Second}
	d := w.lingerFor(p, near)
	require.Positive(t, d)
	require.LessOrEqual(t, d, 200*time.Millisecond, "the linger ends before the budget's reserve")
	w.lingering.Add(-1)
	require.Zero(t, w.lingerFor(p, Budget{Until: time.Now().Add(time.Second), Reserve: time.Second}), "no time left")
	require.Zero(t, w.lingerFor(p, Budget{Subrequests: 10, Used: func() int64 { return 7 }}), "no requests left for the claim and a job")
	require.Zero(t, w.lingering.Load(), "a refused linger does not count")
}
