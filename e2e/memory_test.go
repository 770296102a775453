package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/stiletest"
)

// TestMemoryBoundClosesIdleTenants: under wazero each instance reports its
// memory; with a bound of three instances' worth, touching eight tenants
// keeps about three open, closes the least recently used idle ones, and
// every tenant still has its data when it is opened again.
func TestMemoryBoundClosesIdleTenants(t *testing.T) {
	t.Parallel()
	enqueue := func(m *host.Manager, tenant string) api.Job {
		t.Helper()
		body, _ := json.Marshal(api.EnqueueRequest{Kind: "test.echo"})
		resp, err := m.Do(context.Background(), tenant, do.Request{Kind: do.KindAPI, Method: "POST", Path: "/v1/t/" + tenant + "/jobs", Body: body})
		require.NoError(t, err)
		require.Equal(t, 201, resp.Status, string(resp.Body))
		var j api.Job
		require.NoError(t, json.Unmarshal(resp.Body, &j))
		return j
	}
	// One instance's memory, measured.
	probe := stiletest.New(t, stiletest.Config{Package: testTenant}).Manager()
	enqueue(probe, "probe")
	one := probe.Stats().Memory
	require.Positive(t, one, "a wazero instance reports its memory")

	m := stiletest.New(t, stiletest.Config{Package: testTenant, MaxMemory: 3*one + one/2}).Manager()
	for i := range 8 {
		enqueue(m, fmt.Sprintf("mem-%d", i))
		st := m.Stats()
		require.LessOrEqual(t, st.Memory, 3*one+one/2+one/4, "the open instances stay near the bound")
		require.LessOrEqual(t, st.Open, 4)
	}
	st := m.Stats()
	require.GreaterOrEqual(t, st.Evictions, int64(4), "idle tenants were closed")
	require.Equal(t, int64(8), st.Opens)
	require.True(t, m.IsOpen("mem-7"), "the most recent stays open")
	require.False(t, m.IsOpen("mem-0"), "the least recently used was closed")
	j := enqueue(m, "mem-0")
	require.Equal(t, "2", j.ID, "a reopened tenant has its data")
	require.Equal(t, int64(9), m.Stats().Opens)
}
