package host_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql"
	"github.com/stile-run/stile/stiletest"
)

// A tenant's usage is recorded exactly once and outlives the process: the
// module records what waited 30 s in a request's transaction, the
// manager asks it to record the rest when it closes, and a new process
// (a new count) adds to what was recorded, never counting a request
// twice, though the tenant's engine was evicted in between.
func TestUsageIsRecordedOnceAndOutlivesTheProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHarness(t, stiletest.Config{DataDir: dir})
	m := h.Manager()
	for range 3 {
		require.Equal(t, 201, call(t, m, "acme", "POST", "jobs", api.EnqueueRequest{Kind: "test.echo"}).Status)
	}
	// An engine closed while it holds counts records them first: the
	// instance's memory goes with it.
	require.True(t, m.Evict("acme"))
	require.Equal(t, int64(3), recordedRequests(t, filepath.Join(dir, "tenants", "acme.sqlite")))
	page, err := m.Directory().List(context.Background(), api.TenantsQuery{})
	require.NoError(t, err)
	require.Len(t, page.Tenants, 1)
	require.NotNil(t, page.Tenants[0].Usage, "the directory hears what a tenant recorded")
	require.Equal(t, int64(3), page.Tenants[0].Usage.Requests)
	require.Equal(t, h.Now().UTC().Format("2006-01-02"), page.Tenants[0].Usage.Day)
	// Two more tenants fill the two engines the harness keeps open; acme
	// opening again evicts the least recently used (globex), whose count
	// is recorded as its engine closes.
	require.Equal(t, 201, call(t, m, "globex", "POST", "jobs", api.EnqueueRequest{Kind: "test.echo"}).Status)
	require.Equal(t, 201, call(t, m, "initech", "POST", "jobs", api.EnqueueRequest{Kind: "test.echo"}).Status)
	require.Equal(t, 0, h.Advance(31*time.Second), "a host that keeps its count sets no alarm to record it")
	require.Equal(t, 200, call(t, m, "acme", "GET", "status", nil).Status)   // records the first four
	require.Equal(t, 200, call(t, m, "globex", "GET", "status", nil).Status) // opens once its eviction ended
	require.Equal(t, int64(1), recordedRequests(t, filepath.Join(dir, "tenants", "globex.sqlite")), "the evicted engine's enqueue")
	require.Equal(t, 201, call(t, m, "acme", "POST", "jobs", api.EnqueueRequest{Kind: "test.echo"}).Status)
	u := usageOf(t, call(t, m, "acme", "GET", "usage", nil).Body)
	require.Equal(t, int64(6), u.Total.Requests, "%+v", u)
	require.NoError(t, h.Close()) // records the last two

	h2 := newHarness(t, stiletest.Config{DataDir: dir, Now: h.Now()})
	u = usageOf(t, call(t, h2.Manager(), "acme", "GET", "usage", nil).Body)
	require.Len(t, u.Days, 1)
	require.Equal(t, h.Now().UTC().Format("2006-01-02"), u.Days[0].Day)
	require.Equal(t, int64(7), u.Total.Requests, "six recorded by the first process, and this read: %+v", u)
	require.Zero(t, u.Total.Alarms)
	require.Positive(t, u.Total.RowsWritten)
	require.Positive(t, u.Total.ModuleMicros, "the Go hosts time the module")
}

// recordedRequests reads the requests a tenant's database recorded, on
// every day.
func recordedRequests(t *testing.T, path string) int64 {
	t.Helper()
	db, err := dosql.Open(path)
	require.NoError(t, err)
	defer db.Close()
	params, err := do.EncodeParams(nil)
	require.NoError(t, err)
	rows, err := db.Query(`SELECT COALESCE(SUM(requests), 0) FROM stile_usage`, params)
	require.NoError(t, err)
	r, err := do.DecodeRows(rows)
	require.NoError(t, err)
	require.True(t, r.Next())
	return r.Int(0)
}

func usageOf(t *testing.T, body []byte) api.UsageResponse {
	t.Helper()
	var u api.UsageResponse
	require.NoError(t, json.Unmarshal(body, &u), string(body))
	return u
}

// A tenant refused for its budget before midnight takes new work after it,
// though only refused requests came in between and nothing recorded the
// day before: what was pending then is that day's.
func TestABudgetRefusesUntilTheDayEndsAndNoLonger(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 23, 59, 0, 0, time.UTC)
	h := newHarness(t, stiletest.Config{Now: start})
	m := h.Manager()
	require.Equal(t, 201, call(t, m, "acme", "POST", "jobs", api.EnqueueRequest{Kind: "test.echo"}).Status)
	require.Equal(t, 200, call(t, m, "acme", "PUT", "budget", api.Budget{RequestsPerDay: 2}).Status)
	refused := call(t, m, "acme", "POST", "jobs", api.EnqueueRequest{Kind: "test.echo"})
	require.Equal(t, 429, refused.Status, string(refused.Body))
	require.Equal(t, "60", refused.Headers.Get("retry-after"), "a minute to midnight")
	h.Advance(time.Minute)
	require.Equal(t, 201, call(t, m, "acme", "POST", "jobs", api.EnqueueRequest{Kind: "test.echo"}).Status, "a new UTC day")
	u := usageOf(t, call(t, m, "acme", "GET", "usage", nil).Body)
	require.Len(t, u.Days, 2, "%+v", u)
	// The request that records what was pending goes with it: the day
	// before holds the enqueue, the budget, the refusal and the first
	// enqueue after midnight.
	require.Equal(t, int64(4), u.Days[0].Requests, "%+v", u)
	require.Equal(t, int64(1), u.Days[1].Requests, "today: this read")
}
